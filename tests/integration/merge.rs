//! `--shard i/n` and `tlslab merge`: the shards of a mock matrix merged
//! equal the unsharded run cell for cell, merging a shard twice changes
//! nothing, each merged run keeps its host and its shard, and bad shards
//! and bad inputs are refused.

use std::collections::BTreeMap;
use std::path::Path;

use rusqlite::Connection;

use tlslab::scenario::Shard;

use crate::util::{cert_dir, tlslab};

/// The axes of the handshake matrix the tests shard: 12 rows on the mock backend.
const HANDSHAKE: &[&str] = &[
    "handshake",
    "--backend",
    "mock",
    "--tls",
    "1.2,1.3",
    "--group",
    "x25519,x448,p256",
    "--cert",
    "rsa2048,ecdsa_p256",
    "--runs",
    "4",
    "--warmup",
    "0",
    "--seed",
    "7",
];

pub(crate) fn path_text(path: &Path) -> String {
    path.to_str().unwrap().to_string()
}

/// Runs `base` with `extra` and `--db db`, expecting exit status 0.
fn measure(base: &[&str], extra: &[&str], db: &Path) {
    let db = path_text(db);
    let mut args: Vec<&str> = base.to_vec();
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--db", &db, "-q"]);
    let cert_dir = path_text(&cert_dir());
    if base[0] != "tunnel" {
        args.extend_from_slice(&["--cert-dir", &cert_dir]);
    }
    tlslab(&args).expect_code(0);
}

/// Every cell of a database's handshake and tunnel runs that its run's
/// shard owns: (table, backend or engine, label, status) -> sample count,
/// summed over runs (so a cell stored twice shows as twice the samples). A
/// shard also measures the reference rows (baselines) other shards own:
/// those copies are left out, so the shards' cells add up to the matrix.
pub(crate) fn cells(db: &Path) -> BTreeMap<(String, String, String, String), i64> {
    let connection = Connection::open(db).unwrap();
    let mut cells = BTreeMap::new();
    for (table, who) in [
        ("cells", "backend"),
        ("tunnel_cells", "engine"),
        ("bulk_cells", "backend"),
    ] {
        let mut statement = connection
            .prepare(&format!(
                "SELECT c.{who}, c.scenario_id, c.status,
                        (SELECT count(*) FROM {} s WHERE s.cell_id = c.id), r.options_json
                 FROM {table} c JOIN runs r ON r.id = c.run_id",
                table.replace("cells", "samples")
            ))
            .unwrap();
        let rows = statement
            .query_map([], |row| {
                Ok((
                    (
                        table.to_string(),
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, String>(2)?,
                    ),
                    row.get::<_, i64>(3)?,
                    row.get::<_, String>(4)?,
                ))
            })
            .unwrap();
        for row in rows {
            let (key, samples, options) = row.unwrap();
            let options: serde_json::Value = serde_json::from_str(&options).unwrap();
            if let Some(shard) = options["shard"].as_str() {
                if !shard.parse::<Shard>().unwrap().contains(&key.2) {
                    continue;
                }
            }
            *cells.entry(key).or_insert(0) += samples;
        }
    }
    cells
}

/// The number of rows of each table that holds results.
fn counts(db: &Path) -> Vec<(String, i64)> {
    let connection = Connection::open(db).unwrap();
    [
        "hosts",
        "runs",
        "libraries",
        "rounds",
        "scenarios",
        "cells",
        "samples",
        "tunnel_scenarios",
        "tunnel_cells",
        "tunnel_samples",
        "bulk_scenarios",
        "bulk_cells",
        "bulk_samples",
        "load_summaries",
        "load_errors",
        "load_phases",
        "load_histograms",
        "load_seconds",
        "load_profile",
    ]
    .into_iter()
    .map(|table| {
        let count = connection
            .query_row(&format!("SELECT count(*) FROM {table}"), [], |row| {
                row.get(0)
            })
            .unwrap();
        (table.to_string(), count)
    })
    .collect()
}

#[test]
fn shards_of_a_mock_matrix_merged_equal_the_unsharded_run_and_merging_twice_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let tunnel: &[&str] = &[
        "tunnel",
        "--cipher",
        "aes-128-gcm,aes-128-cbc,bf-cbc",
        "--digest",
        "sha1,sha256",
        "--payload",
        "random,zero",
        "--runs",
        "3",
        "--warmup",
        "0",
        "--seed",
        "7",
    ];
    let bulk: &[&str] = &[
        "bulk",
        "--backend",
        "mock",
        "--suite",
        "aes128gcm,aes256gcm,chacha20poly1305",
        "--size",
        "64,1024",
        "--runs",
        "3",
        "--warmup",
        "0",
        "--seed",
        "7",
    ];
    let whole = dir.path().join("whole.sqlite");
    measure(HANDSHAKE, &[], &whole);
    measure(tunnel, &[], &whole);
    measure(bulk, &[], &whole);

    let mut shards = Vec::new();
    for index in 1..=3 {
        let shard = format!("{index}/3");
        let db = dir.path().join(format!("shard-{index}.sqlite"));
        measure(HANDSHAKE, &["--shard", &shard], &db);
        measure(tunnel, &["--shard", &shard], &db);
        measure(bulk, &["--shard", &shard], &db);
        shards.push(db);
    }
    // Each shard holds a part, not the whole, and measures the no-tunnel
    // row every tunnel row is compared with, whichever shard owns it.
    for shard in &shards {
        assert!(cells(shard).len() < cells(&whole).len());
        let baselines: i64 = Connection::open(shard)
            .unwrap()
            .query_row(
                "SELECT count(*) FROM tunnel_cells WHERE scenario_id LIKE 'tunnel_baseline%'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(baselines, 2, "{}", shard.display());
    }

    let all = dir.path().join("all.sqlite");
    let mut args = vec!["merge".to_string(), path_text(&all)];
    args.extend(shards.iter().map(|s| path_text(s)));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let merged = tlslab(&args);
    merged.expect_code(0);
    let shard_runs: i64 = shards.iter().map(|s| counts(s)[1].1).sum();
    assert!(
        merged
            .stderr()
            .contains(&format!("{shard_runs} run(s) merged")),
        "{}",
        merged.stderr()
    );
    assert_eq!(cells(&all), cells(&whole));

    // Each merged run records its shard, and keeps its host.
    let connection = Connection::open(&all).unwrap();
    let mut statement = connection
        .prepare("SELECT options_json FROM runs ORDER BY id")
        .unwrap();
    let options: Vec<String> = statement
        .query_map([], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(options.len() as i64, shard_runs);
    for index in 1..=3 {
        let expected = format!("\"shard\":\"{index}/3\"");
        assert!(options.iter().any(|o| o.contains(&expected)), "{options:?}");
    }
    let hosts: i64 = connection
        .query_row("SELECT count(DISTINCT host_id) FROM runs", [], |row| {
            row.get(0)
        })
        .unwrap();
    assert_eq!(hosts, 1);

    // Merging a shard again, or all of them, changes nothing.
    let before = counts(&all);
    let again = tlslab(&["merge", &path_text(&all), &path_text(&shards[1])]);
    again.expect_code(0);
    assert!(
        again.stderr().contains("0 run(s) merged into"),
        "{}",
        again.stderr()
    );
    let twice = tlslab(&args);
    twice.expect_code(0);
    assert_eq!(counts(&all), before);

    // The merged runs read back as any run does.
    tlslab(&["report", "--db", &path_text(&all), "--run", "1"]).expect_code(0);
}

#[test]
fn a_shard_out_of_range_or_malformed_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    for shard in ["0/3", "4/3", "1/0", "x", "2", "1/3/3"] {
        for command in ["handshake", "speed", "cost", "tunnel", "bulk"] {
            let run = tlslab(&[command, "--shard", shard, "--db", &path_text(&db)]);
            run.expect_code(2);
            assert!(run.stderr().contains("--shard"), "{}", run.stderr());
        }
    }
    assert!(!db.exists(), "nothing may be written for bad options");
}

#[test]
fn merge_refuses_missing_and_foreign_inputs_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.sqlite");
    let out_text = path_text(&out);

    let missing = dir.path().join("missing.sqlite");
    tlslab(&["merge", &out_text, &path_text(&missing)]).expect_code(2);

    let text = dir.path().join("results.csv");
    std::fs::write(&text, "backend,median_ns\nmock,1\n").unwrap();
    let run = tlslab(&["merge", &out_text, &path_text(&text)]);
    run.expect_code(1);
    assert!(
        run.stderr().contains("is not a tlslab database"),
        "{}",
        run.stderr()
    );

    let other = dir.path().join("other.sqlite");
    Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE foo (x INTEGER);")
        .unwrap();
    let run = tlslab(&["merge", &out_text, &path_text(&other)]);
    run.expect_code(1);
    assert!(run.stderr().contains("no `runs` table"), "{}", run.stderr());

    let newer = dir.path().join("newer.sqlite");
    measure(HANDSHAKE, &["--shard", "1/4"], &newer);
    Connection::open(&newer)
        .unwrap()
        .pragma_update(None, "user_version", 99)
        .unwrap();
    let run = tlslab(&["merge", &out_text, &path_text(&newer)]);
    run.expect_code(1);
    assert!(run.stderr().contains("newer tlslab"), "{}", run.stderr());
    assert!(
        !out.exists(),
        "OUT must not be created when an input is refused"
    );

    // OUT named again as an input.
    let good = dir.path().join("good.sqlite");
    measure(HANDSHAKE, &["--shard", "2/4"], &good);
    let run = tlslab(&["merge", &path_text(&good), &path_text(&good)]);
    run.expect_code(2);
}

/// Runs a shell script with these environment variables and the tlslab
/// binary first on PATH, expecting exit status 0.
fn shell(script: &str, env: &[(&str, String)]) {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_tlslab")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = std::process::Command::new("bash")
        .args(["-c", script])
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{script}\n--- stderr\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The shell script of the Kubernetes manifest's container (its `args`
/// block), with the volume `/out` replaced by `out`.
fn k8s_script(out: &Path) -> String {
    let yaml = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/k8s-indexed-job.yaml"),
    )
    .unwrap();
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

#[test]
fn the_cluster_recipes_give_each_cell_to_exactly_one_shard() {
    let dir = tempfile::tempdir().unwrap();
    let extra = format!(
        "--backend mock --runs 2 --warmup 0 --cert-dir {}",
        cert_dir().display()
    );
    let whole = dir.path().join("whole.sqlite");
    let mut args: Vec<&str> = vec!["handshake", "--preset", "kex-matrix"];
    args.extend(extra.split(' '));
    let whole_text = path_text(&whole);
    args.extend(["--db", &whole_text, "-q"]);
    tlslab(&args).expect_code(0);

    // Kubernetes: JOB_COMPLETION_INDEX from 0, SHARDS = completions.
    let k8s = dir.path().join("k8s");
    std::fs::create_dir(&k8s).unwrap();
    let script = k8s_script(&k8s);
    assert!(script.contains("--shard"), "{script}");
    // Index 1 runs twice, as a retried pod does: its file holds one run.
    for index in [0, 1, 1, 2] {
        shell(
            &script,
            &[
                ("JOB_COMPLETION_INDEX", index.to_string()),
                ("SHARDS", "3".to_string()),
                ("TLSLAB_ARGS", extra.clone()),
            ],
        );
    }
    // Slurm: an array 4-6 (the first index is not 0).
    let slurm = dir.path().join("slurm");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/slurm-array.sh");
    for task in [4, 5, 6, 6] {
        shell(
            &format!("bash {}", script.display()),
            &[
                ("SLURM_ARRAY_TASK_ID", task.to_string()),
                ("SLURM_ARRAY_TASK_COUNT", "3".to_string()),
                ("SLURM_ARRAY_TASK_MIN", "4".to_string()),
                ("TLSLAB_OUT", path_text(&slurm)),
                ("TLSLAB_ARGS", extra.clone()),
            ],
        );
    }
    for (results, names) in [(&k8s, ["0", "1", "2"]), (&slurm, ["4", "5", "6"])] {
        let all = results.join("all.sqlite");
        let mut args = vec!["merge".to_string(), path_text(&all)];
        for name in names {
            let shard = results.join(format!("shard-{name}.sqlite"));
            // A shard with no cell writes no file.
            if shard.exists() {
                args.push(path_text(&shard));
            }
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        tlslab(&args).expect_code(0);
        assert_eq!(cells(&all), cells(&whole), "{}", results.display());
    }
}

#[test]
fn a_load_run_merges_with_its_results_and_only_once() {
    let _one = crate::util::nginx_lock();
    if crate::util::skip_without_nginx("a_load_run_merges_with_its_results_and_only_once") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let shard = dir.path().join("load.sqlite");
    let out = dir.path().join("all.sqlite");
    tlslab(&[
        "load",
        "--rate",
        "10",
        "--duration",
        "1",
        "--clients",
        "2",
        "-q",
        "--cert-dir",
        &path_text(&cert_dir()),
        "--db",
        &path_text(&shard),
    ])
    .expect_code(0);
    tlslab(&["merge", &path_text(&out), &path_text(&shard)]).expect_code(0);
    let merged = counts(&out);
    assert_eq!(merged, counts(&shard), "the load run's rows are all copied");
    let phases = merged.iter().find(|(t, _)| t == "load_phases").unwrap().1;
    assert!(phases > 0);
    tlslab(&["merge", &path_text(&out), &path_text(&shard)]).expect_code(0);
    assert_eq!(
        counts(&out),
        merged,
        "merging the same run twice changes nothing"
    );
    let report = tlslab(&["report", "--db", &path_text(&out)]);
    report.expect_code(0);
    assert!(
        report.stdout().contains("Latency per phase"),
        "{}",
        report.stdout()
    );
}

/// The rows of `tlslab report --db DB EXTRA`, from its JSON export, by label.
pub(crate) fn report_rows(db: &Path, extra: &[&str]) -> BTreeMap<String, serde_json::Value> {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("rows.json");
    let db = path_text(db);
    let json_text = path_text(&json);
    let mut args = vec!["report", "--db", &db];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--export-json", &json_text]);
    tlslab(&args).expect_code(0);
    let data: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    data["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| (row["label"].as_str().unwrap().to_string(), row.clone()))
        .collect()
}

/// Asserts that the rows of `shards` merged shards reported with
/// `--combine` equal the unsharded run's: the same labels, statuses,
/// medians and ratios to the baseline, and the same sample counts but the
/// baseline's, which every shard measured and which is shown once with
/// every shard's samples.
pub(crate) fn assert_combined_rows_equal(
    unsharded: &BTreeMap<String, serde_json::Value>,
    combined: &BTreeMap<String, serde_json::Value>,
    baseline: &str,
    shards: u64,
) {
    assert_eq!(
        unsharded.keys().collect::<Vec<_>>(),
        combined.keys().collect::<Vec<_>>()
    );
    for (label, row) in unsharded {
        let other = &combined[label];
        assert_eq!(row["status"], other["status"], "{label}");
        for field in ["client_cpu_us", "server_cpu_us"] {
            assert_eq!(
                row[field]["median"], other[field]["median"],
                "{label} {field}"
            );
        }
        assert_eq!(
            row["ratio_to_baseline"]["value"], other["ratio_to_baseline"]["value"],
            "{label}"
        );
        let count = row["sample_count"].as_u64().unwrap_or(0);
        let expected = if label == baseline {
            shards * count
        } else {
            count
        };
        assert_eq!(
            other["sample_count"].as_u64().unwrap_or(0),
            expected,
            "{label}"
        );
    }
}

/// Issue 10: `report --combine` over the merged shards of a mock matrix
/// prints one table whose rows equal the unsharded run's: the same
/// medians and ratios to the baseline (paired within each shard), the
/// same sample counts, but the baseline's, which every shard measured and
/// which is shown once with every shard's samples.
#[test]
fn merged_shards_reported_combined_equal_the_unsharded_table() {
    const BASELINE: &str = "handshake_1.3_x25519_ecdsa_p256_aes128gcm";
    let dir = tempfile::tempdir().unwrap();
    let with_baseline: Vec<&str> = HANDSHAKE
        .iter()
        .copied()
        .chain(["--baseline", BASELINE])
        .collect();
    let whole = dir.path().join("whole.sqlite");
    measure(&with_baseline, &[], &whole);
    let all = dir.path().join("all.sqlite");
    let mut merge = vec!["merge".to_string(), path_text(&all)];
    for index in 1..=3 {
        let db = dir.path().join(format!("shard-{index}.sqlite"));
        measure(&with_baseline, &["--shard", &format!("{index}/3")], &db);
        merge.push(path_text(&db));
    }
    let merge: Vec<&str> = merge.iter().map(String::as_str).collect();
    tlslab(&merge).expect_code(0);

    let unsharded = report_rows(&whole, &[]);
    let combined = report_rows(&all, &["--run", "1,2,3", "--combine"]);
    assert_combined_rows_equal(&unsharded, &combined, BASELINE, 3);

    // The table says which shards it combined and that the baseline is pooled.
    let shown = tlslab(&[
        "report",
        "--db",
        &path_text(&all),
        "--run",
        "1,2,3",
        "--combine",
    ]);
    shown.expect_code(0);
    let out = shown.stdout();
    assert!(out.contains("handshake runs 1, 2, 3 combined"), "{out}");
    assert!(
        out.contains("run 1 (shard 1/3), run 2 (shard 2/3), run 3 (shard 3/3)"),
        "{out}"
    );
    assert!(out.contains("measured in 3 runs"), "{out}");
    // Without --combine the shards are shown apart, with a hint.
    let apart = tlslab(&["report", "--db", &path_text(&all), "--run", "1,2,3"]);
    apart.expect_code(0);
    assert!(
        apart.stderr().contains("shards of one command: --combine"),
        "{}",
        apart.stderr()
    );
}

/// Runs of two commands, or of two kinds, do not combine.
#[test]
fn runs_of_different_commands_do_not_combine() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    measure(HANDSHAKE, &["--shard", "1/2"], &db);
    measure(
        HANDSHAKE,
        &[
            "--shard",
            "2/2",
            "--baseline",
            "handshake_1.3_x25519_ecdsa_p256_aes128gcm",
        ],
        &db,
    );
    measure(
        &[
            "tunnel",
            "--cipher",
            "aes-128-gcm",
            "--digest",
            "sha1",
            "--runs",
            "3",
            "--warmup",
            "0",
        ],
        &[],
        &db,
    );
    let db = path_text(&db);
    for (runs, message) in [
        ("1,2", "runs 1 and 2 are not shards of one command"),
        ("1,3", "run 1 is a handshake run and run 3 a tunnel run"),
    ] {
        let run = tlslab(&["report", "--db", &db, "--run", runs, "--combine"]);
        run.expect_code(2);
        assert!(run.stderr().contains(message), "{}", run.stderr());
    }
}

/// Issue 33 item 9: `report --combine` without `--run` reads the latest
/// sharded command's runs (it was a usage error): each shard's newest run,
/// whatever ran after them; a database without a shard says so (exit 2).
#[test]
fn issue_33_combine_without_run_reads_the_latest_sharded_command() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    // Shard 1 twice (runs 1 and 2: the newest counts), shard 2 (run 3),
    // then a run of another command (run 4).
    measure(HANDSHAKE, &["--shard", "1/2"], &db);
    measure(HANDSHAKE, &["--shard", "1/2"], &db);
    measure(HANDSHAKE, &["--shard", "2/2"], &db);
    let tunnel = [
        "tunnel",
        "--cipher",
        "aes-128-gcm",
        "--digest",
        "sha1",
        "--runs",
        "3",
        "--warmup",
        "0",
    ];
    measure(&tunnel, &[], &db);
    let shown = tlslab(&["report", "--db", &path_text(&db), "--combine"]);
    shown.expect_code(0);
    let out = shown.stdout();
    assert!(out.contains("handshake runs 2, 3 combined"), "{out}");
    assert!(
        out.contains("run 2 (shard 1/2), run 3 (shard 2/2)"),
        "{out}"
    );

    let unsharded = dir.path().join("unsharded.sqlite");
    measure(&tunnel, &[], &unsharded);
    let refused = tlslab(&["report", "--db", &path_text(&unsharded), "--combine"]);
    refused.expect_code(2);
    assert!(
        refused.stderr().contains("was run with --shard"),
        "{}",
        refused.stderr()
    );
}

/// Issue 19: an array with a step (`--array=0-4:2`) gives each task the
/// shard of its place in the array, so the merged shards still equal the
/// unsharded run; an array given as a list (`--array=0,1,5`), whose task
/// ids a task cannot place, is refused by every task (exit 2, no file)
/// with a message saying to submit a range. Before, task 4 of `0-4:2`
/// asked for `--shard 5/3` and the merge was silently partial.
#[test]
fn the_slurm_recipe_places_a_stepped_array_and_refuses_a_list() {
    let dir = tempfile::tempdir().unwrap();
    let extra = format!(
        "--backend mock --runs 2 --warmup 0 --cert-dir {}",
        cert_dir().display()
    );
    let whole = dir.path().join("whole.sqlite");
    let mut args: Vec<&str> = vec!["handshake", "--preset", "kex-matrix"];
    args.extend(extra.split(' '));
    let whole_text = path_text(&whole);
    args.extend(["--db", &whole_text, "-q"]);
    tlslab(&args).expect_code(0);

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/slurm-array.sh");
    let task = |out: &Path, id: u32, max: u32, step: u32| {
        let bin_dir = Path::new(env!("CARGO_BIN_EXE_tlslab")).parent().unwrap();
        std::process::Command::new("bash")
            .arg(&script)
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    bin_dir.display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            )
            .env("SLURM_ARRAY_TASK_ID", id.to_string())
            .env("SLURM_ARRAY_TASK_COUNT", "3")
            .env("SLURM_ARRAY_TASK_MIN", "0")
            .env("SLURM_ARRAY_TASK_MAX", max.to_string())
            .env("SLURM_ARRAY_TASK_STEP", step.to_string())
            .env("TLSLAB_OUT", out)
            .env("TLSLAB_ARGS", &extra)
            .output()
            .unwrap()
    };

    // --array=0-4:2: tasks 0, 2, 4 of 3 (what Slurm sets: MIN 0, MAX 4, STEP 2).
    let stepped = dir.path().join("stepped");
    for id in [0, 2, 4] {
        let output = task(&stepped, id, 4, 2);
        assert!(
            output.status.success(),
            "task {id}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let all = stepped.join("all.sqlite");
    let mut merge = vec!["merge".to_string(), path_text(&all)];
    for id in [0, 2, 4] {
        let shard = stepped.join(format!("shard-{id}.sqlite"));
        if shard.exists() {
            merge.push(path_text(&shard));
        }
    }
    let merge: Vec<&str> = merge.iter().map(String::as_str).collect();
    tlslab(&merge).expect_code(0);
    assert_eq!(cells(&all), cells(&whole));

    // --array=0,1,5: Slurm sets MIN 0, MAX 5, STEP 1 for 3 tasks.
    let listed = dir.path().join("listed");
    for id in [0, 1, 5] {
        let output = task(&listed, id, 5, 1);
        assert_eq!(output.status.code(), Some(2), "task {id}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("cannot tell which shard is its")
                && stderr.contains("sbatch --array=0-2"),
            "{stderr}"
        );
        assert!(!listed.join(format!("shard-{id}.sqlite")).exists());
    }
}

/// Kubernetes cannot run here, so the Indexed Job manifest is checked by a
/// dry parse: a Job in Indexed completion mode whose SHARDS equals its
/// completions, with the one container's script giving pod k shard k+1 of
/// SHARDS in its own file (the script itself runs in
/// `the_cluster_recipes_give_each_cell_to_exactly_one_shard`).
#[test]
fn the_kubernetes_manifest_parses_as_an_indexed_job_with_one_shard_per_completion() {
    use yaml_rust2::{Yaml, YamlLoader};
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/k8s-indexed-job.yaml"),
    )
    .unwrap();
    let documents = YamlLoader::load_from_str(&text).expect("the manifest is YAML");
    assert_eq!(documents.len(), 1, "one document");
    let job = &documents[0];
    assert_eq!(job["apiVersion"].as_str(), Some("batch/v1"));
    assert_eq!(job["kind"].as_str(), Some("Job"));
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"].as_str(), Some("Indexed"));
    let completions = spec["completions"].as_i64().expect("completions");
    assert!(completions >= 1);
    assert!(spec["parallelism"].as_i64().unwrap() <= completions);
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"].as_str(), Some("Never"));
    let containers = pod["containers"].as_vec().expect("containers");
    assert_eq!(containers.len(), 1);
    let container = &containers[0];
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
    assert_eq!(
        env["SHARDS"].parse::<i64>().ok(),
        Some(completions),
        "SHARDS must equal completions"
    );
    assert!(env.contains_key("TLSLAB_ARGS"));
    assert_eq!(
        container["command"],
        Yaml::Array(vec![
            Yaml::String("/bin/sh".into()),
            Yaml::String("-c".into())
        ])
    );
    let script = container["args"][0].as_str().expect("one script");
    for needle in [
        "--shard \"$((JOB_COMPLETION_INDEX + 1))/$SHARDS\"",
        "--db \"/out/shard-$JOB_COMPLETION_INDEX.sqlite\"",
        "rm -f \"/out/shard-$JOB_COMPLETION_INDEX.sqlite\"",
        "exec tlslab handshake",
    ] {
        assert!(script.contains(needle), "{needle}:\n{script}");
    }
    // The volume the script writes to is mounted at /out.
    let mounts = container["volumeMounts"].as_vec().expect("volumeMounts");
    assert!(mounts
        .iter()
        .any(|m| m["mountPath"].as_str() == Some("/out")));
    // The parsed script is the one the local run takes from the file.
    assert_eq!(
        script.trim_end(),
        k8s_script(Path::new("/out")).trim_end(),
        "the line-based extraction and the YAML parser read the same script"
    );
}
