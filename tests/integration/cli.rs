//! The command line: bad input, exports, the report command and Ctrl-C.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util::{cert_dir, has_row, tlslab};

#[test]
fn list_shows_every_backend_and_preset() {
    let run = tlslab(&["list"]);
    run.expect_code(0);
    let out = run.stdout();
    for needle in [
        "openssl: OpenSSL 3.",
        "rustls-aws-lc: rustls 0.23",
        "rustls-ring: rustls 0.23",
        "dimpl: dimpl 0.8",
        "dtls1.2, dtls1.3",
        "kex-matrix",
        "x25519mlkem768",
        "mldsa65",
        "transports:   memory, tcp, udp",
        "servers under test",
        "  embedded ",
        "tunnel engines",
    ] {
        assert!(out.contains(needle), "missing {needle}:\n{out}");
    }
    // Each engine on a line of its own, with what runs it or what is missing.
    let engine_line = |id: &str| {
        out.lines()
            .find(|line| line.split_whitespace().next() == Some(id))
            .unwrap_or_else(|| panic!("no line for the engine {id}:\n{out}"))
            .to_string()
    };
    assert!(
        engine_line("wireguard").contains("boringtun 0.7.1"),
        "{out}"
    );
    let wireguard_go = engine_line("wireguard-go");
    assert!(
        wireguard_go.contains("wireguard-go 0.0.") || wireguard_go.contains("not here: "),
        "{wireguard_go}"
    );
}

#[test]
fn unknown_names_list_the_valid_ones() {
    let cases: [(&[&str], &str); 5] = [
        (
            &["--group", "x9999"],
            "unknown group 'x9999'; valid groups: rsa, dhe1024",
        ),
        (
            &["--cert", "dsa1024"],
            "unknown certificate 'dsa1024'; valid certificates: rsa2048",
        ),
        (
            &["--suite", "rc4"],
            "unknown suite 'rc4'; valid suites: aes-128-gcm, aes-256-gcm, chacha20-poly1305",
        ),
        (
            &["--backend", "gnutls"],
            "unknown backend 'gnutls'; valid backends: openssl, rustls-aws-lc, rustls-ring",
        ),
        (
            &["--preset", "nope"],
            "unknown preset 'nope'; valid presets: kex-matrix",
        ),
    ];
    for (args, message) in cases {
        let mut all = vec!["handshake", "--no-db"];
        all.extend_from_slice(args);
        let run = tlslab(&all);
        run.expect_code(2);
        assert!(run.stderr().contains(message), "{}", run.stderr());
    }
}

#[test]
fn contradictory_options_are_refused() {
    let run = tlslab(&["handshake", "--no-db", "--tls", "1.3", "--group", "rsa"]);
    run.expect_code(2);
    assert!(
        run.stderr().contains("contradictory options"),
        "{}",
        run.stderr()
    );
    assert!(
        run.stderr().contains("no RSA key transport"),
        "{}",
        run.stderr()
    );

    let run = tlslab(&[
        "handshake",
        "--no-db",
        "--tls",
        "1.2",
        "--resumption",
        "psk",
    ]);
    run.expect_code(2);
    assert!(
        run.stderr().contains("PSK resumption is TLS 1.3"),
        "{}",
        run.stderr()
    );
}

#[test]
fn an_unwritable_database_fails_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, "x").unwrap();
    let db = file.join("results.sqlite");
    let started = std::time::Instant::now();
    let run = tlslab(&[
        "handshake",
        "--backend",
        "openssl",
        "--db",
        db.to_str().unwrap(),
    ]);
    // A store that cannot be opened is an error of the run (1), not of usage (2).
    run.expect_code(1);
    assert!(run.stderr().contains("cannot"), "{}", run.stderr());
    assert!(run.stdout().is_empty(), "nothing may run: {}", run.stdout());
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_baseline_outside_the_matrix_is_refused() {
    let run = tlslab(&[
        "handshake",
        "--no-db",
        "--backend",
        "mock",
        "--baseline",
        "handshake_1.2_rsa_rsa2048_aes128gcm",
    ]);
    run.expect_code(2);
    assert!(
        run.stderr().contains("is not a row of this matrix"),
        "{}",
        run.stderr()
    );
}

#[test]
fn exports_and_report_agree_through_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let run = tlslab(&[
        "handshake",
        "--backend",
        "mock",
        "--tls",
        "1.2,1.3",
        "--group",
        "rsa,x25519,x448",
        "--cert",
        "rsa2048",
        "--min-samples",
        "5",
        "--max-time",
        "0",
        "--warmup",
        "0",
        "--db",
        &path("db.sqlite"),
        "--cert-dir",
        cert_dir().to_str().unwrap(),
        "--export-json",
        &path("run.json"),
        "--export-csv",
        &path("run.csv"),
        "--export-markdown",
        &path("run.md"),
    ]);
    run.expect_code(0);
    let table = run.stdout();
    assert!(
        has_row(&table, &["mock", "1.2", "RSA key transport", "RSA-2048"]),
        "{table}"
    );
    assert!(
        table.contains("unsupported: mock has no x448 key exchange in TLS 1.2"),
        "{table}"
    );
    assert!(table.contains("no forward secrecy"), "{table}");

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path("run.json")).unwrap()).unwrap();
    assert_eq!(json["rows"].as_array().unwrap().len(), 6);
    assert_eq!(json["baseline"], "handshake_1.2_rsa_rsa2048_aes128gcm");
    assert!(json["host"]["cpu_model"].is_string());
    let csv = std::fs::read_to_string(path("run.csv")).unwrap();
    assert_eq!(csv.lines().count(), 7);
    assert!(std::fs::read_to_string(path("run.md"))
        .unwrap()
        .contains("| backend"));

    // The stored run renders to the same CSV.
    let report = tlslab(&[
        "report",
        "--db",
        &path("db.sqlite"),
        "--export-csv",
        &path("again.csv"),
    ]);
    report.expect_code(0);
    assert!(
        report.stdout().contains("(complete)"),
        "{}",
        report.stdout()
    );
    assert_eq!(std::fs::read_to_string(path("again.csv")).unwrap(), csv);
}

/// Ctrl-C stops the run, keeps every cell with the samples it had in the
/// database and marks the run incomplete. The signal is real (the process
/// sends SIGINT to itself after its third round), so the test does not
/// depend on timing.
#[test]
fn ctrl_c_keeps_finished_cells() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args([
            "handshake",
            "--backend",
            "openssl",
            "--tls",
            "1.3",
            "--group",
            "x25519,p256",
            "--cert",
            "ecdsa_p256",
            "--runs",
            "1000",
            "--warmup",
            "0",
            "--db",
            db.to_str().unwrap(),
            "--cert-dir",
            cert_dir().to_str().unwrap(),
        ])
        .env("TLSLAB_TEST_SIGINT_AFTER_ROUNDS", "3")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The run interrupts itself after round 3; a SIGINT from here only if
    // it has not ended long after (a SIGINT at a fixed time once came
    // before round 3 on a loaded machine and left one sample a cell).
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: sending a signal to our own child process (reaped only below).
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");

    let report = tlslab(&["report", "--db", db.to_str().unwrap()]);
    report.expect_code(0);
    let out = report.stdout();
    assert!(out.contains("(incomplete)"), "{out}");
    // The interrupted run's rounds were stored with their readings of
    // other work, and the report reads them back.
    if cfg!(target_os = "linux") {
        assert!(out.contains("Other work on this machine"), "{out}");
    }
    assert!(
        has_row(&out, &["1.3", "ECDHE X25519", "ECDSA P-256"]),
        "{out}"
    );
    assert!(
        has_row(&out, &["1.3", "ECDHE P-256", "ECDSA P-256"]),
        "{out}"
    );
    // Three rounds of one handshake each: three samples per cell, kept.
    let csv = dir.path().join("again.csv");
    tlslab(&[
        "report",
        "--db",
        db.to_str().unwrap(),
        "--export-csv",
        csv.to_str().unwrap(),
    ])
    .expect_code(0);
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(lines.len(), 2, "{text}");
    for line in lines {
        assert!(
            line.contains(",3,3,false,"),
            "3 samples in 3 rounds, not precise: {line}"
        );
    }
}

/// `--cpu-features native,generic` runs the matrix again in a child process
/// and shows its rows beside the native ones.
#[test]
fn handshake_generic_cpu_rows_sit_beside_native_ones() {
    let run = tlslab(&[
        "handshake",
        "--no-db",
        "-q",
        "--backend",
        "mock,rustls-ring",
        "--tls",
        "1.3",
        "--group",
        "x25519",
        "--cert",
        "ecdsa_p256",
        "--runs",
        "2",
        "--cpu-features",
        "native,generic",
        "--cert-dir",
        cert_dir().to_str().unwrap(),
    ]);
    run.expect_code(0);
    let out = run.stdout();
    let rows: Vec<&str> = out
        .lines()
        .filter(|line| line.contains("ECDHE X25519"))
        .collect();
    assert_eq!(rows.len(), 4, "{out}");
    assert!(
        rows.iter().any(|row| row.starts_with("mock (generic)")),
        "{out}"
    );
    assert!(
        out.contains("ring has no switch to turn its CPU features off"),
        "{out}"
    );

    let run = tlslab(&["handshake", "--no-db", "--cpu-features", "fast"]);
    run.expect_code(2);
    assert!(
        run.stderr()
            .contains("valid CPU feature sets: native, generic"),
        "{}",
        run.stderr()
    );
}

/// Issue 19 item 3: the generic-CPU child got a command line rebuilt flag
/// by flag, which silently dropped every flag it did not know (--network,
/// --wire, --server, --link); it now runs its parent's parsed arguments,
/// so its rows are modelled over the networks too.
#[test]
fn every_option_reaches_the_generic_cpu_child() {
    let run = tlslab(&[
        "handshake",
        "--no-db",
        "-q",
        "--backend",
        "mock",
        "--tls",
        "1.3",
        "--group",
        "x25519",
        "--cert",
        "ecdsa_p256",
        "--runs",
        "2",
        "--cpu-features",
        "native,generic",
        "--network",
        "wan",
        "--cert-dir",
        cert_dir().to_str().unwrap(),
    ]);
    run.expect_code(0);
    let out = run.stdout();
    let network = &out[out.find("Over the network").expect("the network table")..];
    for backend in ["mock ", "mock (generic) "] {
        assert!(
            network
                .lines()
                .any(|line| line.starts_with(backend) && line.contains(" wan ")),
            "{backend}over wan:\n{out}"
        );
    }

    // speed's child too: its rows beside the native ones, of the asked size.
    let run = tlslab(&[
        "speed",
        "--no-db",
        "-q",
        "--backend",
        "openssl",
        "--algorithm",
        "sha256",
        "--size",
        "1k",
        "--runs",
        "2",
        "--cpu-features",
        "native,generic",
    ]);
    run.expect_code(0);
    let out = run.stdout();
    for backend in ["openssl ", "openssl (generic) "] {
        assert!(
            out.lines()
                .any(|line| line.starts_with(backend) && line.contains(" 1000 ")),
            "{backend}:\n{out}"
        );
    }
}

/// Issue 18 item 12: `--backend all` (the default) gave TLS-only matrices
/// a dimpl row per scenario saying "dimpl implements DTLS only".
#[test]
fn backend_all_keeps_the_backends_that_run_the_asked_protocols() {
    let dir = tempfile::tempdir().unwrap();
    let backends_of = |extra: &[&str]| -> std::collections::BTreeSet<String> {
        let json = dir.path().join("run.json");
        let mut args = vec![
            "handshake",
            "--group",
            "x25519",
            "--cert",
            "ecdsa_p256",
            "--runs",
            "2",
            "--warmup",
            "0",
            "--no-db",
            "-q",
            "--export-json",
            json.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let cert_dir = cert_dir();
        args.extend_from_slice(&["--cert-dir", cert_dir.to_str().unwrap()]);
        tlslab(&args).expect_code(0);
        let data: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        data["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| row["backend"].as_str().unwrap().to_string())
            .collect()
    };
    let tls = ["openssl", "rustls-aws-lc", "rustls-ring"].map(String::from);
    assert_eq!(backends_of(&["--tls", "1.3"]), tls.clone().into());
    assert_eq!(
        backends_of(&["--tls", "1.2,1.3", "--backend", "all"]),
        tls.into()
    );
    // dimpl named on its own stays, with its unsupported rows.
    assert!(backends_of(&["--tls", "1.3", "--backend", "all,dimpl"]).contains("dimpl"));
    // A DTLS matrix keeps the backends that speak DTLS.
    assert_eq!(
        backends_of(&["--tls", "dtls1.2", "--backend", "all"]),
        ["dimpl", "openssl"].map(String::from).into()
    );
}

/// Issue 18 item 15: these ran (and stored an empty run, or changed the
/// value without a word) instead of being refused.
#[test]
fn empty_lists_and_zero_bounds_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let db_text = db.to_str().unwrap();
    for (args, expected) in [
        (
            vec!["cost", "--backend", ""],
            "the backend list is empty; valid backends: all, openssl",
        ),
        (
            vec!["load", "--server", "embedded", "--max-requests", "0"],
            "for '--max-requests <N>': must be at least 1",
        ),
        (
            vec!["handshake", "--backend", "mock", "--min-samples", "0"],
            "for '--min-samples <N>': must be at least 1",
        ),
        (
            vec!["speed", "--min-samples", "0"],
            "for '--min-samples <N>': must be at least 1",
        ),
        (
            vec!["speed", "--size", ""],
            "for '--size <LIST>': an empty size",
        ),
        (
            vec!["speed", "--size", " , "],
            "for '--size <LIST>': an empty size",
        ),
    ] {
        let mut all = args.clone();
        all.extend_from_slice(&["--db", db_text]);
        let run = tlslab(&all);
        run.expect_code(2);
        assert!(
            run.stderr().contains(expected),
            "{args:?}: {}",
            run.stderr()
        );
    }
    assert!(!db.exists(), "nothing may be stored for bad options");
}

/// Issue 18 item 15: `report --baseline nope` printed "relative to nope";
/// `--run 1,1` printed the run twice; one run without results (a killed
/// load run) among several made `--html` write nothing.
#[test]
fn report_checks_its_baseline_shows_each_run_once_and_passes_over_an_empty_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let db_text = db.to_str().unwrap();
    let cert_dir = cert_dir();
    let handshake = [
        "handshake",
        "--backend",
        "mock",
        "--group",
        "x25519,p256",
        "--cert",
        "ecdsa_p256",
        "--runs",
        "2",
        "--warmup",
        "0",
        "-q",
        "--db",
        db_text,
        "--cert-dir",
        cert_dir.to_str().unwrap(),
    ];
    tlslab(&handshake).expect_code(0);
    // What a load run killed before its load ended leaves: its run alone.
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch(
            "INSERT INTO runs (status, kind, tool_version, command_line, options_json, host_id)
             SELECT 'incomplete', 'load', tool_version, 'tlslab load', '{}', host_id
             FROM runs WHERE id = 1;",
        )
        .unwrap();
    tlslab(&handshake).expect_code(0);

    let refused = tlslab(&[
        "report",
        "--db",
        db_text,
        "--run",
        "1",
        "--baseline",
        "nope",
    ]);
    refused.expect_code(2);
    assert!(
        refused.stderr().contains(
            "the baseline 'nope' is not a row of run 1; its rows: \
             handshake_1.3_p256_ecdsa_p256_aes128gcm, handshake_1.3_x25519_ecdsa_p256_aes128gcm"
        ),
        "{}",
        refused.stderr()
    );
    assert!(refused.stdout().is_empty(), "{}", refused.stdout());
    let not_a_ratio = tlslab(&["report", "--db", db_text, "--run", "2", "--baseline", "x"]);
    not_a_ratio.expect_code(2);
    assert!(
        not_a_ratio.stderr().contains("run 2 is a load run"),
        "{}",
        not_a_ratio.stderr()
    );

    let twice = tlslab(&["report", "--db", db_text, "--run", "1,1"]);
    twice.expect_code(0);
    assert_eq!(twice.stdout().matches("handshake run 1 ").count(), 1);

    let html = dir.path().join("runs.html");
    let shown = tlslab(&[
        "report",
        "--db",
        db_text,
        "--run",
        "1,2,3",
        "--html",
        html.to_str().unwrap(),
    ]);
    shown.expect_code(0);
    assert!(
        shown
            .stderr()
            .contains("run 2 is left out: load run 2 stored no results"),
        "{}",
        shown.stderr()
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("run-1") && page.contains("run-3"));
    assert!(!page.contains("run-2"));
    // Alone, the empty run is an error.
    tlslab(&["report", "--db", db_text, "--run", "2"]).expect_code(1);
}
