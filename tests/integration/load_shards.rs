//! `load --shard I/N --start-at TIME` and `tlslab merge`: two shards against
//! one server (nginx when installed, else `tlslab serve`; started here on
//! loopback and stopped by its PID) join into one load run whose request count is the shards' sum and
//! whose percentiles are those of every request (the shards' histogram
//! buckets added); merging again changes nothing; shards of different
//! loads are refused; a start already passed sends nothing. The same on a
//! real Slurm cluster is in [`crate::slurm`]; the shards here run as the
//! Kubernetes recipe's pods would (its script, on this machine).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;
use rusqlite::Connection;

use tlslab::scenario::{CertKind, Group, HandshakeScenario, ServerKind, TlsVersion};
use tlslab::workload::server::{descriptor, RunningServer, ServerOptions, ServerSetup};
use tlslab::workload::site::Site;

use crate::merge::path_text;
use crate::util::{cert_dir, certs, nginx_lock, tlslab, Job};

/// One server on loopback answering `/page_1000` with tlslab's page on the
/// test chain (TLS 1.3, X25519, ECDSA P-256, as `load` asks by default):
/// nginx, started through its server-under-test trait, when it is
/// installed, else `tlslab serve`. Stopped by its PID when dropped.
pub(crate) struct ServedPage {
    server: Served,
    pub address: String,
}

enum Served {
    /// nginx, with the lock the nginx tests share.
    Nginx {
        running: Option<Box<dyn RunningServer>>,
        _lock: std::sync::MutexGuard<'static, ()>,
    },
    Serve(Job),
}

impl ServedPage {
    pub(crate) fn start() -> ServedPage {
        if tlslab::workload::server::nginx::nginx_binary().is_some() {
            let lock = nginx_lock();
            let nginx = (descriptor(ServerKind::Nginx).open)(&ServerOptions::default())
                .expect("nginx opens");
            let scenario =
                HandshakeScenario::full(TlsVersion::Tls13, Group::X25519, CertKind::EcdsaP256);
            let credentials = certs().get(scenario.cert, scenario.chain_depth).unwrap();
            let running = nginx
                .start(&ServerSetup {
                    scenario: &scenario,
                    credentials: &credentials,
                    site: &Site {
                        page_sizes: vec![1000],
                        session_resumption: false,
                    },
                })
                .unwrap_or_else(|e| panic!("nginx: {e:#}"));
            let address = running.address().to_string();
            return ServedPage {
                server: Served::Nginx {
                    running: Some(running),
                    _lock: lock,
                },
                address,
            };
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let address = format!("127.0.0.1:{port}");
        let mut job = Job::start(
            &[
                "serve",
                "--bind",
                &address,
                "--duration",
                "300",
                "--cert-dir",
                &path_text(&cert_dir()),
            ],
            &[],
        );
        job.wait_for_line("serving https://", Duration::from_secs(60));
        ServedPage {
            server: Served::Serve(job),
            address,
        }
    }

    /// Which server it is.
    pub(crate) fn name(&self) -> &'static str {
        match self.server {
            Served::Nginx { .. } => "nginx",
            Served::Serve(_) => "tlslab serve",
        }
    }
}

impl Drop for ServedPage {
    fn drop(&mut self) {
        match &mut self.server {
            Served::Nginx { running, .. } => {
                if let Some(running) = running.take() {
                    running.stop().expect("nginx stops");
                }
            }
            Served::Serve(job) => {
                job.signal(libc::SIGTERM);
                let _ = job.finish(Duration::from_secs(20));
            }
        }
    }
}

/// A common start this many seconds from now, in Unix seconds.
pub(crate) fn start_in(seconds: u64) -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    (now.as_secs() + seconds).to_string()
}

/// What a joined load run holds, for the assertions and the report.
#[derive(Debug)]
pub(crate) struct JoinedLoad {
    pub run: i64,
    /// Each shard's answered requests, in shard order.
    pub answered_per_shard: Vec<i64>,
    pub answered: i64,
    /// The joined run's total latency p50 and p99, µs.
    pub total_p50_us: i64,
    pub total_p99_us: i64,
}

/// Checks the one joined load run in `db`: its counts are its shards'
/// sums, and each phase's stored percentiles equal those of one histogram
/// holding every shard's buckets (every request). Returns its figures.
pub(crate) fn assert_one_joined_load(db: &Path) -> JoinedLoad {
    let connection = Connection::open(db).unwrap();
    let joined: Vec<(i64, String)> = connection
        .prepare("SELECT id, options_json FROM runs WHERE kind = 'load' AND options_json LIKE '%merged_shards%'")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(joined.len(), 1, "one joined load run: {joined:?}");
    let (run, options) = &joined[0];
    let options: serde_json::Value = serde_json::from_str(options).unwrap();
    let shards: Vec<i64> = options["merged_shards"]["shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["run"].as_i64().unwrap())
        .collect();
    let summary = |id: i64| -> (i64, i64, i64) {
        connection
            .query_row(
                "SELECT offered, answered, errors FROM load_summaries WHERE run_id = ?1",
                [id],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
            )
            .unwrap()
    };
    let parts: Vec<(i64, i64, i64)> = shards.iter().map(|id| summary(*id)).collect();
    let whole = summary(*run);
    assert_eq!(
        whole,
        parts.iter().fold((0, 0, 0), |sum, part| (
            sum.0 + part.0,
            sum.1 + part.1,
            sum.2 + part.2
        )),
        "offered, answered and errors are the shards' sums: {parts:?}"
    );
    assert!(whole.1 > 0, "requests were answered");
    let ids = shards
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let mut every_request: BTreeMap<String, Histogram<u64>> = BTreeMap::new();
    let buckets: Vec<(String, i64, i64)> = connection
        .prepare(&format!(
            "SELECT phase, latency_us, count FROM load_histograms WHERE run_id IN ({ids})"
        ))
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (phase, latency_us, count) in buckets {
        every_request
            .entry(phase)
            .or_insert_with(|| Histogram::new_with_bounds(1, 600_000_000, 3).unwrap())
            .record_n(latency_us as u64, count as u64)
            .unwrap();
    }
    let mut total = (0, 0);
    for (phase, histogram) in &every_request {
        let stored: [i64; 6] = connection
            .query_row(
                "SELECT requests, p50_us, p90_us, p99_us, p999_us, max_us FROM load_phases
                 WHERE run_id = ?1 AND phase = ?2",
                rusqlite::params![run, phase],
                |row| {
                    Ok([
                        row.get(0)?,
                        row.get(1)?,
                        row.get(2)?,
                        row.get(3)?,
                        row.get(4)?,
                        row.get(5)?,
                    ])
                },
            )
            .unwrap();
        let expected = [
            histogram.len() as i64,
            histogram.value_at_percentile(50.0) as i64,
            histogram.value_at_percentile(90.0) as i64,
            histogram.value_at_percentile(99.0) as i64,
            histogram.value_at_percentile(99.9) as i64,
            histogram.value_at_percentile(100.0) as i64,
        ];
        assert_eq!(
            stored, expected,
            "{phase}: the joined run's n and percentiles are every request's"
        );
        if phase == "total" {
            total = (stored[1], stored[3]);
        }
    }
    assert!(every_request.contains_key("total"), "{every_request:?}");
    JoinedLoad {
        run: *run,
        answered_per_shard: parts.iter().map(|p| p.1).collect(),
        answered: whole.1,
        total_p50_us: total.0,
        total_p99_us: total.1,
    }
}

/// The pod script of deploy/k8s-load-job.yaml (its container's `args`
/// block), with the volume `/out` replaced by `out`.
fn k8s_pod_script(out: &Path) -> String {
    let yaml = std::fs::read_to_string(manifest()).unwrap();
    let lines: Vec<&str> = yaml.lines().collect();
    let start = lines.iter().position(|l| l.trim() == "- |").unwrap() + 1;
    let indent = lines[start].len() - lines[start].trim_start().len();
    let script: Vec<&str> = lines[start..]
        .iter()
        .take_while(|l| l.len() > indent && l[..indent].trim().is_empty())
        .map(|l| &l[indent..])
        .collect();
    script
        .join("\n")
        .replace("/out/", &format!("{}/", out.display()))
}

fn manifest() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/k8s-load-job.yaml")
}

/// Runs the pod script as pod `index` of `shards` would, with tlslab first
/// on PATH, in the background.
fn pod(script: &str, index: usize, shards: usize, env: &[(&str, &str)]) -> std::process::Child {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_tlslab")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    std::process::Command::new("sh")
        .args(["-c", script])
        .env("PATH", path)
        .env("JOB_COMPLETION_INDEX", index.to_string())
        .env("SHARDS", shards.to_string())
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Issue 26: two shards of one load from a common start, run as the
/// Kubernetes recipe's pods 0 and 1 run them (its script, on this
/// machine), join into one run whose request count is the sum and whose
/// percentiles are every request's; merging again changes nothing; a
/// shard of another load (another start) is refused.
#[test]
fn two_shards_of_one_load_merge_into_one_run_with_every_request() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServedPage::start();
    let script = k8s_pod_script(dir.path());
    let start = start_in(4);
    let args = format!(
        "--rate 40 --duration 2 --clients 4 --no-probe --cert-dir {}",
        path_text(&cert_dir())
    );
    let env = [
        ("TLSLAB_TARGET", server.address.as_str()),
        ("TLSLAB_ARGS", args.as_str()),
        ("TLSLAB_START_AT", start.as_str()),
    ];
    let pods: Vec<std::process::Child> = (0..2).map(|k| pod(&script, k, 2, &env)).collect();
    for child in pods {
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "{script}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let db = |name: &str| path_text(&dir.path().join(name));
    let (one, two) = (db("shard-0.sqlite"), db("shard-1.sqlite"));

    let all = dir.path().join("all.sqlite");
    let merge = tlslab(&["merge", &path_text(&all), &one, &two]);
    merge.expect_code(0);
    assert!(
        merge.stderr().contains("joined as load run 3"),
        "{}",
        merge.stderr()
    );
    let joined = assert_one_joined_load(&all);
    assert_eq!(joined.run, 3);
    assert_eq!(joined.answered_per_shard.len(), 2);
    // 40 requests a second for 2 s, 40 per shard.
    assert_eq!(joined.answered, 80, "{joined:?}");
    eprintln!("load shards against {}: {joined:?}", server.name());

    // `report` shows the joined run (the latest) and says what it is.
    let report = tlslab(&["report", "--db", &path_text(&all)]);
    report.expect_code(0);
    assert!(
        report.stdout().contains("One load from 2 shards"),
        "{}",
        report.stdout()
    );
    // Merged again: nothing new.
    let again = tlslab(&["merge", &path_text(&all), &one, &two]);
    again.expect_code(0);
    assert!(
        again.stderr().contains("already joined as run 3"),
        "{}",
        again.stderr()
    );
    assert_one_joined_load(&all);

    // A second shard of another load (another start) cannot join the first.
    let other = db("other.sqlite");
    let later = start_in(2);
    let cert_dir = path_text(&cert_dir());
    tlslab(&[
        "load",
        "--target",
        &server.address,
        "--no-probe",
        "--rate",
        "40",
        "--duration",
        "1",
        "--clients",
        "4",
        "--shard",
        "2/2",
        "--start-at",
        &later,
        "--db",
        &other,
        "-q",
        "--cert-dir",
        &cert_dir,
    ])
    .expect_code(0);
    let mixed = dir.path().join("mixed.sqlite");
    let refused = tlslab(&["merge", &path_text(&mixed), &one, &other]);
    refused.expect_code(2);
    assert!(
        refused.stderr().contains("shards of different loads")
            && refused.stderr().contains("start (--start-at"),
        "{}",
        refused.stderr()
    );
    assert!(!mixed.exists(), "a refused merge writes nothing");
}

/// Kubernetes cannot run here, so the load manifest is checked by a dry
/// parse: an Indexed Job whose SHARDS equals its completions and its
/// parallelism (every shard at once), not retried (a retried pod would
/// find its start passed), the start left to envsubst, and a script that
/// gives pod k shard k+1 of SHARDS in its own file (the script itself runs
/// in `two_shards_of_one_load_merge_into_one_run_with_every_request`).
#[test]
fn the_kubernetes_load_manifest_is_an_indexed_job_with_one_shard_per_pod() {
    use yaml_rust2::YamlLoader;
    let text = std::fs::read_to_string(manifest()).unwrap();
    let documents = YamlLoader::load_from_str(&text).expect("the manifest is YAML");
    let job = &documents[0];
    assert_eq!(job["kind"].as_str(), Some("Job"));
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"].as_str(), Some("Indexed"));
    let completions = spec["completions"].as_i64().expect("completions");
    assert_eq!(spec["parallelism"].as_i64(), Some(completions));
    assert_eq!(spec["backoffLimit"].as_i64(), Some(0));
    let container = &spec["template"]["spec"]["containers"][0];
    let env: BTreeMap<&str, &str> = container["env"]
        .as_vec()
        .expect("env")
        .iter()
        .map(|pair| {
            (
                pair["name"].as_str().unwrap(),
                pair["value"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(env["SHARDS"].parse::<i64>().ok(), Some(completions));
    assert_eq!(env["TLSLAB_START_AT"], "${TLSLAB_START_AT}");
    let script = container["args"][0].as_str().expect("one script");
    for needle in [
        "--shard \"$((JOB_COMPLETION_INDEX + 1))/$SHARDS\"",
        "--db \"/out/shard-$JOB_COMPLETION_INDEX.sqlite\"",
        "exec tlslab load --target \"$TLSLAB_TARGET\"",
    ] {
        assert!(script.contains(needle), "{needle}:\n{script}");
    }
    assert_eq!(
        script.trim_end(),
        k8s_pod_script(Path::new("/out")).trim_end()
    );
}

/// A shard's start already passed, or none given: exit 2, nothing sent
/// (the target's port is closed, so any connection would fail as an error).
#[test]
fn a_shard_whose_start_has_passed_sends_nothing_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let db = path_text(&dir.path().join("late.sqlite"));
    let late = tlslab(&[
        "load",
        "--target",
        "127.0.0.1:9",
        "--no-probe",
        "--rate",
        "10",
        "--duration",
        "1",
        "--shard",
        "1/2",
        "--start-at",
        "2026-01-01T00:00:00Z",
        "--db",
        &db,
    ]);
    late.expect_code(2);
    assert!(
        late.stderr().contains("passed") && late.stderr().contains("sends nothing"),
        "{}",
        late.stderr()
    );
    let none = tlslab(&[
        "load",
        "--target",
        "127.0.0.1:9",
        "--no-probe",
        "--shard",
        "1/2",
        "--no-db",
    ]);
    none.expect_code(2);
    assert!(
        none.stderr().contains("--start-at TIME"),
        "{}",
        none.stderr()
    );
    let bad = tlslab(&["load", "--shard", "1/2", "--start-at", "soon", "--no-db"]);
    bad.expect_code(2);
    assert!(bad.stderr().contains("RFC 3339"), "{}", bad.stderr());
}
