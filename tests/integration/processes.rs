//! Processes and signals (issue 18): a terminal's Ctrl-C reaches tlslab
//! and not the servers it started, the children tlslab starts die with it
//! even when it is killed with SIGKILL, SIGTERM stops them as Ctrl-C
//! does, and what a killed run left behind (directories, namespaces) is
//! removed by the next run that makes its own.

use std::path::Path;
use std::time::Duration;

use tlslab::scenario::names::Named;
use tlslab::scenario::tunnel::EngineId;

use crate::util::{
    cert_dir, children_mentioning, nginx_lock, processes_mentioning, skip_without_nginx, wait_gone,
    Job,
};

/// The entries of `dir` whose names start with `prefix`.
fn entries_starting(dir: &Path, prefix: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(prefix))
        .collect()
}

/// Waits until `find` returns something; panics after `timeout`.
fn wait_for<T>(what: &str, timeout: Duration, mut find: impl FnMut() -> Vec<T>) -> Vec<T> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let found = find();
        if !found.is_empty() {
            return found;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no {what} within {timeout:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Issue 18 item 1: Ctrl-C in a terminal goes to the whole foreground
/// process group. nginx, in a group of its own, goes on serving until
/// tlslab stops it, so the load's finished requests and nginx's CPU are
/// kept: exit 130, the run stored as interrupted.
#[test]
fn ctrl_c_in_the_terminal_keeps_a_load_on_nginx() {
    let _one = nginx_lock();
    if skip_without_nginx("ctrl_c_in_the_terminal_keeps_a_load_on_nginx") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let mut job = Job::start(
        &[
            "load",
            "--server",
            "nginx",
            "--rate",
            "50",
            "--duration",
            "30",
            "--clients",
            "4",
            "--cert-dir",
            cert_dir().to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
        ],
        &[("TMPDIR", tmp.path().as_os_str())],
    );
    job.wait_for_line("loading nginx", Duration::from_secs(60));
    // Some requests finish first.
    std::thread::sleep(Duration::from_millis(1500));
    job.signal_group(libc::SIGINT);
    let (status, stderr) = job.finish(Duration::from_secs(15));
    assert_eq!(status.code(), Some(130), "{stderr}");
    let connection = rusqlite::Connection::open(&db).unwrap();
    let (answered, interrupted, server_cpu_ns): (i64, bool, Option<i64>) = connection
        .query_row(
            "SELECT answered, interrupted, server_cpu_ns FROM load_summaries WHERE run_id = 1",
            [],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .unwrap();
    assert!(interrupted);
    assert!(answered > 10, "{answered} answered: {stderr}");
    assert!(server_cpu_ns.is_some_and(|ns| ns > 0), "{stderr}");
    assert_eq!(
        processes_mentioning(tmp.path().to_str().unwrap()),
        Vec::<u32>::new()
    );
}

/// Issue 18 item 2: kill -9 of a run against nginx leaves no nginx
/// running (the kernel stops it with tlslab), and the next run that starts
/// nginx removes the directory the killed run left.
#[test]
fn kill_9_leaves_no_nginx_and_the_next_run_removes_its_directory() {
    let _one = nginx_lock();
    if skip_without_nginx("kill_9_leaves_no_nginx_and_the_next_run_removes_its_directory") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let env = [("TMPDIR", tmp.path().as_os_str())];
    let certs = cert_dir();
    let handshake = |runs: &'static str| {
        vec![
            "handshake",
            "--server",
            "nginx",
            "--tls",
            "1.3",
            "--group",
            "x25519",
            "--cert",
            "ecdsa_p256",
            "--runs",
            runs,
            "--warmup",
            "0",
            "--no-db",
            "-q",
            "--cert-dir",
            certs.to_str().unwrap(),
        ]
    };
    let mut killed = Job::start(&handshake("100000"), &env);
    let tmp_text = tmp.path().to_str().unwrap().to_string();
    // The master (its command line names its directory), and its worker
    // once it has forked it.
    let nginx = wait_for("nginx worker", Duration::from_secs(60), || {
        let masters = processes_mentioning(&tmp_text);
        let mut found = masters.clone();
        for master in masters {
            found.extend(tlslab::workload::process::children_of(master));
        }
        if found.len() >= 2 {
            found
        } else {
            Vec::new()
        }
    });
    killed.signal(libc::SIGKILL);
    killed.finish(Duration::from_secs(5));
    assert_eq!(
        wait_gone(&nginx, Duration::from_secs(5)),
        Vec::<u32>::new(),
        "nginx outlived the tlslab killed with SIGKILL"
    );
    let left = entries_starting(tmp.path(), "tlslab-nginx-");
    assert_eq!(left.len(), 1, "{left:?}");

    let mut next = Job::start(&handshake("2"), &env);
    let (status, stderr) = next.finish(Duration::from_secs(60));
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stderr.contains(&left[0]), "says what it removed: {stderr}");
    assert_eq!(
        entries_starting(tmp.path(), "tlslab-"),
        Vec::<String>::new()
    );
}

/// Issue 18 item 2: the `--cpu-features generic` child (tlslab again)
/// dies with its parent killed with SIGKILL, and stops when SIGTERM stops
/// the parent (as `timeout` or a CI cancellation sends it, to the parent
/// alone): exit 130, the child's samples kept, and no child left.
#[test]
fn kill_9_or_sigterm_stops_the_generic_cpu_child() {
    for signal in [libc::SIGKILL, libc::SIGTERM] {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("parent.sqlite");
        let mut parent = Job::start(
            &[
                "handshake",
                "--backend",
                "openssl",
                "--cpu-features",
                "generic",
                "--tls",
                "1.3",
                "--group",
                "x25519",
                "--cert",
                "ecdsa_p256",
                "--runs",
                "1000000",
                "--warmup",
                "0",
                "-q",
                "--db",
                db.to_str().unwrap(),
                "--cert-dir",
                cert_dir().to_str().unwrap(),
            ],
            &[("TMPDIR", tmp.path().as_os_str())],
        );
        let pid = parent.pid() as u32;
        let child = wait_for("generic child", Duration::from_secs(60), || {
            children_mentioning(pid, "generic-child")
        });
        // The child runs its parent's parsed command, read from its plan:
        // the scratch database is there.
        let arguments = std::fs::read(format!("/proc/{}/cmdline", child[0])).unwrap();
        let arguments: Vec<String> = String::from_utf8_lossy(&arguments)
            .split('\0')
            .map(String::from)
            .collect();
        let plan = &arguments[arguments.iter().position(|a| a == "generic-child").unwrap() + 1];
        let plan: serde_json::Value =
            serde_json::from_slice(&std::fs::read(plan).unwrap()).unwrap();
        let child_db = plan["handshake"]["database"]["db"]
            .as_str()
            .unwrap()
            .to_string();
        // The child has begun its run in its database (and handles Ctrl-C
        // from there on).
        wait_for("the child's run", Duration::from_secs(30), || {
            let runs = rusqlite::Connection::open(&child_db)
                .ok()
                .and_then(|connection| {
                    connection
                        .query_row("SELECT count(*) FROM runs", [], |row| row.get::<_, i64>(0))
                        .ok()
                });
            runs.filter(|&n| n > 0).into_iter().collect()
        });
        std::thread::sleep(Duration::from_millis(300));
        parent.signal(signal);
        let (status, stderr) = parent.finish(Duration::from_secs(20));
        assert_eq!(
            wait_gone(&child, Duration::from_secs(5)),
            Vec::<u32>::new(),
            "the generic child outlived its parent (signal {signal})"
        );
        if signal == libc::SIGTERM {
            assert_eq!(status.code(), Some(130), "{stderr}");
            let connection = rusqlite::Connection::open(&db).unwrap();
            let samples: i64 = connection
                .query_row(
                    "SELECT sample_count FROM cells WHERE backend = 'openssl (generic)'",
                    [],
                    |row| row.get(0),
                )
                .unwrap();
            assert!(samples > 0, "{stderr}");
            assert_eq!(
                entries_starting(tmp.path(), "tlslab-generic-"),
                Vec::<String>::new()
            );
        }
    }
}

/// The network namespace a process is in (`net:[INODE]`), if it runs.
fn network_namespace_of(pid: u32) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/ns/net"))
        .ok()
        .map(|link| link.to_string_lossy().into_owned())
}

/// The processes in one of these network namespaces.
fn processes_in(namespaces: &[String]) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
        .filter(|&pid| network_namespace_of(pid).is_some_and(|n| namespaces.contains(&n)))
        .collect()
}

/// The processes left in `namespaces` once those still running have had
/// `timeout` to go (a command tlslab had started inside, such as `ip`,
/// ends by itself), each with its command line, for the message.
fn left_in(namespaces: &[String], timeout: Duration) -> Vec<String> {
    let left = wait_gone(&processes_in(namespaces), timeout);
    left.iter()
        .map(|pid| {
            let command = std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                .unwrap_or_default();
            format!("{pid} {command}")
        })
        .collect()
}

/// True unless connecting to the WireGuard control socket `name` is
/// refused: a process still listens on it.
fn someone_listens(name: &str) -> bool {
    let path = Path::new(tlslab::child::WIREGUARD_SOCKET_DIR).join(name);
    !matches!(
        std::os::unix::net::UnixStream::connect(path),
        Err(error) if error.kind() == std::io::ErrorKind::ConnectionRefused
    )
}

/// Issue 18 item 2, issues 23 and 25: kill -9 during a tunnel through a
/// real engine (OpenVPN with a static key and in TLS mode, wireguard-go) leaves no daemon running and no
/// namespace (they have no names: nothing holds them once tlslab and its
/// daemons are gone; the tunnels' interfaces are inside them), and the
/// next run removes the killed run's key directory and the control
/// sockets its wireguard-go daemons left.
///
/// One test per real engine (a row it runs, kept here; its daemon's
/// command name, the prefix of its scratch directory and its install hint
/// are its descriptor's), so each fails alone; one that cannot run here
/// skips visibly (failing under `CI`).
mod kill_9_leaves_no_tunnel_daemon_and_no_namespace {
    use tlslab::scenario::tunnel::EngineId;
    use tlslab::workload::tunnel::ENGINES;

    #[test]
    fn openvpn() {
        super::kill_9_during(EngineId::Openvpn, "aes-128-cbc", "sha1");
    }

    #[test]
    fn openvpn_tls() {
        super::kill_9_during(EngineId::OpenvpnTls, "aes-128-gcm", "none");
    }

    #[test]
    fn wireguard_go() {
        super::kill_9_during(EngineId::WireguardGo, "chacha20-poly1305", "none");
    }

    /// Every engine whose descriptor starts programs has its test above.
    #[test]
    fn every_engine_that_starts_daemons_has_its_test_here() {
        let daemons: Vec<EngineId> = ENGINES
            .iter()
            .filter(|descriptor| !descriptor.programs.is_empty())
            .map(|descriptor| descriptor.id)
            .collect();
        assert_eq!(
            daemons,
            [
                EngineId::Openvpn,
                EngineId::OpenvpnTls,
                EngineId::WireguardGo
            ],
            "an engine that starts daemons needs its kill -9 test here"
        );
    }
}

/// [`kill_9_during_a_tunnel`] for `engine` on the row of `cipher` and
/// `digest`, or a visible skip where it cannot run here.
fn kill_9_during(engine: EngineId, cipher: &str, digest: &str) {
    let descriptor = engine.descriptor();
    let id = engine.id();
    let test = format!(
        "processes::kill_9_leaves_no_tunnel_daemon_and_no_namespace::{}",
        id.replace('-', "_")
    );
    if crate::util::skip_without(engine.open().preflight().err(), &test, descriptor.install) {
        return;
    }
    let scratch = descriptor
        .scratch_prefix()
        .expect("an engine that starts daemons has a scratch directory");
    kill_9_during_a_tunnel(id, descriptor.programs[0], cipher, digest, &scratch);
}

/// Every program a library, server or engine starts (its descriptor's
/// `programs`) is one that scripts/fresh-machine-test.sh hides, so the
/// fresh-machine pass finds none of them.
#[test]
fn the_fresh_machine_script_hides_every_program_a_descriptor_starts() {
    let script = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fresh-machine-test.sh"),
    )
    .unwrap();
    let list = script
        .split_once("HIDDEN_PROGRAMS=(")
        .and_then(|(_, after)| after.split_once("\n)"))
        .expect("the script's HIDDEN_PROGRAMS=( ... ) list")
        .0;
    let hidden: Vec<&str> = list
        .lines()
        .map(|line| line.split('#').next().unwrap())
        .flat_map(str::split_whitespace)
        .collect();
    assert!(hidden.contains(&"nginx"), "{hidden:?}");
    let started = tlslab::backend::REGISTRY
        .iter()
        .flat_map(|d| d.programs.iter().map(move |p| (d.name(), *p)))
        .chain(
            tlslab::workload::server::SERVERS
                .iter()
                .flat_map(|d| d.programs.iter().map(move |p| (d.name(), *p))),
        )
        .chain(
            tlslab::workload::tunnel::ENGINES
                .iter()
                .flat_map(|d| d.programs.iter().map(move |p| (d.name(), *p))),
        );
    let mut checked = 0;
    for (owner, program) in started {
        assert!(
            hidden.contains(&program),
            "{owner} starts {program}, which scripts/fresh-machine-test.sh does not hide"
        );
        checked += 1;
    }
    assert!(
        checked >= 4,
        "the descriptors start programs: {checked} found"
    );
}

/// Kills tlslab (SIGKILL) while engine `id`'s tunnel runs, and checks what
/// is left and that the next run removes it.
fn kill_9_during_a_tunnel(id: &str, daemon: &str, cipher: &str, digest: &str, scratch: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let env = [("TMPDIR", tmp.path().as_os_str())];
    let tunnel = |runs: &'static str| {
        vec![
            "tunnel",
            "--engine",
            id,
            "--cipher",
            cipher,
            "--digest",
            digest,
            "--no-baseline-row",
            "--transfer-mb",
            "1",
            "--runs",
            runs,
            "--warmup",
            "0",
            "--no-db",
            "-q",
        ]
        .into_iter()
        .map(String::from)
        .collect::<Vec<String>>()
    };
    let killed_args = tunnel("100000");
    let killed_args: Vec<&str> = killed_args.iter().map(String::as_str).collect();
    let mut killed = Job::start(&killed_args, &env);
    let pid = killed.pid() as u32;
    let sockets = || crate::tunnel::wireguard_sockets_of(pid);
    let daemons = wait_for(daemon, Duration::from_secs(60), || {
        if let Ok(Some(status)) = killed.child.try_wait() {
            let (_, stderr) = killed.finish(Duration::from_secs(1));
            panic!("{id}: tlslab ended ({status}) before its daemons ran:\n{stderr}");
        }
        // The daemon itself, once exec'd: a child just forked still
        // carries tlslab's own command line (which names the engine) and
        // the tests' namespace until it enters its own and execs; a CI run
        // once caught one such child here.
        let found: Vec<u32> = children_mentioning(pid, daemon)
            .into_iter()
            .filter(|child| {
                std::fs::read_to_string(format!("/proc/{child}/comm"))
                    .is_ok_and(|comm| comm.trim_end() == daemon)
            })
            .collect();
        // wireguard-go's, once both listen on their sockets (so that the
        // kill leaves them behind).
        let listening = daemon != "wireguard-go" || sockets().len() >= 2;
        if found.len() >= 2 && listening {
            found
        } else {
            Vec::new()
        }
    });
    // Each daemon in a namespace of its own, neither the tests' nor named.
    let mut namespaces: Vec<String> = daemons
        .iter()
        .filter_map(|&pid| network_namespace_of(pid))
        .collect();
    namespaces.sort();
    namespaces.dedup();
    assert_eq!(namespaces.len(), 2, "{id}: {namespaces:?}");
    assert!(!namespaces.contains(&network_namespace_of(std::process::id()).unwrap()));
    let named = std::fs::read_dir("/run/netns")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(&pid.to_string()))
        .count();
    assert_eq!(named, 0, "{id}: tlslab names no namespace");
    killed.signal(libc::SIGKILL);
    killed.finish(Duration::from_secs(5));
    assert_eq!(
        wait_gone(&daemons, Duration::from_secs(5)),
        Vec::<u32>::new(),
        "{daemon} outlived the tlslab killed with SIGKILL"
    );
    assert_eq!(
        left_in(&namespaces, Duration::from_secs(10)),
        Vec::<String>::new(),
        "{id}: nothing is left in the killed run's namespaces"
    );
    assert_eq!(
        entries_starting(tmp.path(), scratch).len(),
        1,
        "{id}: {:?}",
        entries_starting(tmp.path(), "")
    );
    // The killed wireguard-go daemons' sockets stay until a run removes
    // them: this test's next run, or another test's tlslab in the meantime
    // (the killed PID is gone); the unit test
    // `child::tests::only_what_a_gone_process_left_is_removed` covers which.
    // A run leaves a socket someone still listens on alone. A killed
    // wireguard-go whose main thread is already a zombie (gone for
    // `wait_gone`) can hold its listening socket while its other threads
    // exit: a CI run's next run found one still listening. Wait until
    // nobody listens on them before that run.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while sockets().iter().any(|name| someone_listens(name)) {
        assert!(
            std::time::Instant::now() < deadline,
            "{id}: a killed daemon still listens on {:?}",
            sockets()
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let next_args = tunnel("1");
    let next_args: Vec<&str> = next_args.iter().map(String::as_str).collect();
    let mut next = Job::start(&next_args, &env);
    let (status, stderr) = next.finish(Duration::from_secs(120));
    assert_eq!(status.code(), Some(0), "{id}: {stderr}");
    assert_eq!(
        entries_starting(tmp.path(), "tlslab-"),
        Vec::<String>::new(),
        "{id}"
    );
    assert_eq!(sockets(), Vec::<String>::new(), "{id}: {stderr}");
}

/// Issue 18 item 5: `speed` saves each cell as it finishes, so a run
/// killed with SIGKILL keeps the cells that had finished, with their
/// samples (it stored none before the end). Since issue 23 each round is
/// stored as it ends: a finished cell is one whose precision is set.
#[test]
fn a_killed_speed_run_keeps_the_cells_that_finished() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("speed.sqlite");
    // sha256 at 64 bytes reaches its precision in a fraction of a second;
    // the RSA-4096 signature row goes on to its 90 s budget.
    let mut job = Job::start(
        &[
            "speed",
            "--backend",
            "openssl",
            "--algorithm",
            "sha256,rsa4096",
            "--size",
            "64",
            "--max-time",
            "90",
            "--precision",
            "5%",
            "-q",
            "--db",
            db.to_str().unwrap(),
        ],
        &[],
    );
    let samples = || -> Vec<i64> {
        rusqlite::Connection::open(&db)
            .ok()
            .and_then(|c| {
                c.query_row(
                    "SELECT count(*) FROM speed_samples s JOIN speed_cells c ON c.id = s.cell_id
                     WHERE c.primitive = 'sha256' AND c.precise IS NOT NULL",
                    [],
                    |row| row.get::<_, i64>(0),
                )
                .ok()
            })
            .filter(|n| *n > 0)
            .into_iter()
            .collect()
    };
    // Well before the run ends (its RSA row samples for 90 s): stored as
    // it finished, not at the end. A loaded machine can take sha256 many
    // seconds to its precision (a CI run once took more than 15).
    let stored = wait_for("a finished speed cell", Duration::from_secs(60), samples);
    job.signal(libc::SIGKILL);
    let _ = job.finish(Duration::from_secs(10));
    assert!(
        stored[0] >= 5,
        "the finished cell kept its samples: {stored:?}"
    );
    assert!(!samples().is_empty(), "the samples survive the kill");
}

/// Runs `tlslab ARGS --db DB`, which kills itself with SIGKILL (the test
/// hook) once its round `rounds` is stored, so the test does not depend on
/// timing; checks that it died so and left its run incomplete.
fn run_killed_after_rounds(args: &[&str], db: &Path, rounds: u32, timeout: Duration) {
    use std::os::unix::process::ExitStatusExt;

    let mut args = args.to_vec();
    args.extend(["--db", db.to_str().unwrap()]);
    let rounds = rounds.to_string();
    let hook = [(
        "TLSLAB_TEST_SIGKILL_AFTER_ROUNDS",
        std::ffi::OsStr::new(&rounds),
    )];
    let (status, stderr) = Job::start(&args, &hook).finish(timeout);
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{stderr}");
    let run_status: String = rusqlite::Connection::open(db)
        .unwrap()
        .query_row("SELECT status FROM runs", [], |row| row.get(0))
        .unwrap();
    assert_eq!(run_status, "incomplete");
}

/// A row of a table of cells (`cells`, `speed_cells`) as a person querying
/// the database sees it.
#[derive(Debug)]
struct StoredCell {
    backend: String,
    /// Its scenario's id (a speed cell's row id).
    scenario: String,
    status: String,
    /// NULL while the cell still samples.
    precise: Option<bool>,
    sample_count: i64,
    /// The rounds of its samples, in order: "0,1,2".
    rounds: Option<String>,
}

/// Every row of `cells_table` in `db`, with the rounds of its samples in
/// `samples_table`; `scenario_column` names its scenario.
fn stored_cells(
    db: &Path,
    cells_table: &str,
    scenario_column: &str,
    samples_table: &str,
) -> Vec<StoredCell> {
    let connection = rusqlite::Connection::open(db).unwrap();
    let mut query = connection
        .prepare(&format!(
            "SELECT c.backend, c.{scenario_column}, c.status, c.precise, c.sample_count,
                    (SELECT group_concat(s.round, ',') FROM
                        (SELECT round FROM {samples_table} WHERE cell_id = c.id ORDER BY seq) s)
             FROM {cells_table} c ORDER BY c.backend, c.{scenario_column}"
        ))
        .unwrap();
    let cells = query
        .query_map([], |row| {
            Ok(StoredCell {
                backend: row.get(0)?,
                scenario: row.get(1)?,
                status: row.get(2)?,
                precise: row.get(3)?,
                sample_count: row.get(4)?,
                rounds: row.get(5)?,
            })
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    cells
}

/// Checks that each measured cell of `cells` (there are `at_least` or
/// more) holds one sample of each of the rounds 0 to `rounds - 1` and
/// still samples (no precision: none finished); returns how many are.
fn measured_cells_hold_rounds(cells: &[StoredCell], at_least: usize, rounds: u32) -> usize {
    let measured: Vec<_> = cells.iter().filter(|c| c.status == "measured").collect();
    assert!(measured.len() >= at_least, "{cells:#?}");
    let expected = (0..rounds)
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join(",");
    for cell in &measured {
        assert_eq!(
            (cell.rounds.as_deref(), cell.sample_count, cell.precise),
            (Some(expected.as_str()), i64::from(rounds), None),
            "{cell:?}"
        );
    }
    measured.len()
}

/// `tlslab report` of the run in `db`: it reads the run as incomplete.
fn report_of_incomplete_run(db: &Path) -> String {
    let report = crate::util::tlslab(&["report", "--db", db.to_str().unwrap()]);
    report.expect_code(0);
    let out = report.stdout();
    assert!(out.contains("This run is incomplete"), "{out}");
    out
}

/// Issue 23 item 4: `speed` keeps every sample as it is taken. Killed with
/// SIGKILL halfway through its rounds (after round 4 of 8, while every
/// cell still samples and none has finished), the database holds each
/// cell's samples of every round that ended, and `report` reads the run
/// as incomplete.
#[test]
fn a_speed_run_killed_halfway_through_its_rounds_keeps_every_finished_round() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("speed.sqlite");
    run_killed_after_rounds(
        &[
            "speed",
            "--backend",
            "openssl,rustls-ring",
            "--algorithm",
            "sha256,ed448",
            "--size",
            "64",
            "--runs",
            "8",
            "--warmup",
            "0",
            "-q",
        ],
        &db,
        4,
        Duration::from_secs(60),
    );

    let cells = stored_cells(&db, "speed_cells", "row_id", "speed_samples");
    // sha256 on both backends, ed448 signing and verifying on OpenSSL;
    // one sample per round with --runs: rounds 0 to 3.
    measured_cells_hold_rounds(&cells, 4, 4);
    // ring has no Ed448: those rows were stored before sampling began.
    assert!(
        cells.iter().any(|c| c.backend == "rustls-ring"
            && c.scenario.contains("ed448")
            && c.status == "unsupported"),
        "{cells:#?}"
    );

    let out = report_of_incomplete_run(&db);
    assert!(crate::util::has_row(&out, &["openssl", "sha256"]), "{out}");
}

/// Issue 23 item 4: `bulk` and `tunnel` keep their samples round by round
/// too: killed with SIGKILL after round 3 of 6, every cell holds its
/// samples of rounds 0 to 2, and the run reads back as incomplete.
#[test]
fn bulk_and_tunnel_runs_killed_halfway_keep_every_finished_round() {
    let dir = tempfile::tempdir().unwrap();
    let cert_dir = cert_dir();
    let killed = |db: &Path, command: &[&str]| {
        let mut args = command.to_vec();
        args.extend(["--runs", "6", "--warmup", "0", "-q"]);
        run_killed_after_rounds(&args, db, 3, Duration::from_secs(120));
        let store = tlslab::store::Store::open_read_only(db).unwrap();
        let run = store.latest_run_id().unwrap().unwrap();
        (store, run)
    };

    let db = dir.path().join("bulk.sqlite");
    let (store, run) = killed(
        &db,
        &[
            "bulk",
            "--backend",
            "openssl",
            "--suite",
            "aes128gcm",
            "--size",
            "256",
            "--bytes-per-sample",
            "16384",
            "--cert-dir",
            cert_dir.to_str().unwrap(),
        ],
    );
    let cells = store.load_bulk_cells(run).unwrap();
    // The protected row and its no-crypto twin.
    assert_eq!(cells.len(), 2, "{cells:?}");
    for cell in &cells {
        let taken: Vec<u32> = cell.samples().iter().map(|t| t.round).collect();
        assert_eq!(taken, vec![0, 1, 2], "{cell:?}");
    }

    let db = dir.path().join("tunnel.sqlite");
    let (store, run) = killed(
        &db,
        &[
            "tunnel",
            "--cipher",
            "aes-128-cbc,des-cbc",
            "--digest",
            "sha256",
            "--no-baseline-row",
        ],
    );
    let cells = store.load_tunnel_cells(run).unwrap();
    assert_eq!(cells.len(), 2, "{cells:?}");
    for cell in &cells {
        let taken: Vec<u32> = cell.samples().iter().map(|t| t.round).collect();
        assert_eq!(taken, vec![0, 1, 2], "{:?}", cell.scenario);
    }
}

/// Issue 23 item 4: `handshake` keeps every sample as it is taken, as
/// `speed`, `bulk` and `tunnel` do. Killed with SIGKILL halfway through
/// its rounds (the test hook, after round 30 of 60, while every cell still
/// samples), each measured cell holds its samples of rounds 0 to 29, the
/// unsupported cells are there, the rounds' records (other work on the
/// machine) that were final are stored, and `report` reads the run as
/// incomplete and says what other work the machine did.
#[test]
fn a_handshake_run_killed_halfway_through_its_rounds_keeps_every_finished_round() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("handshake.sqlite");
    let cert_dir = cert_dir();
    run_killed_after_rounds(
        &[
            "handshake",
            "--backend",
            "openssl,rustls-ring",
            "--tls",
            "1.3",
            "--group",
            "x25519,x448",
            "--cert",
            "ecdsa_p256,rsa2048",
            "--runs",
            "60",
            "--warmup",
            "0",
            "-q",
            "--cert-dir",
            cert_dir.to_str().unwrap(),
        ],
        &db,
        30,
        Duration::from_secs(120),
    );

    let cells = stored_cells(&db, "cells", "scenario_id", "samples");
    // Every group and certificate on OpenSSL, X25519 on ring; one
    // handshake per round with --runs: rounds 0 to 29.
    let measured = measured_cells_hold_rounds(&cells, 6, 30);
    assert_eq!(measured, 6, "{cells:#?}");
    // ring has no X448: those rows were stored before sampling began.
    let unsupported: Vec<_> = cells
        .iter()
        .filter(|c| c.status == "unsupported")
        .map(|c| (c.backend.as_str(), c.scenario.contains("x448")))
        .collect();
    assert_eq!(
        unsupported,
        vec![("rustls-ring", true), ("rustls-ring", true)],
        "{cells:#?}"
    );
    // The rounds whose record was final: a prefix of rounds 0 to 29, each
    // with other processes' CPU. Four RSA-2048 cells of 30 handshakes take
    // longer than the 50 ms between readings on any machine, so there is one.
    let rounds: Vec<(u32, Option<f64>)> = rusqlite::Connection::open(&db)
        .unwrap()
        .prepare("SELECT round, others_cpu FROM rounds ORDER BY round")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(!rounds.is_empty() && rounds.len() <= 30, "{rounds:?}");
    for (index, (round, others_cpu)) in rounds.iter().enumerate() {
        assert_eq!(*round as usize, index, "{rounds:?}");
        assert!(others_cpu.is_some(), "{rounds:?}");
    }

    let out = report_of_incomplete_run(&db);
    assert!(out.contains("Other work on this machine"), "{out}");
    assert!(crate::util::has_row(&out, &["openssl", "X448"]), "{out}");
}
