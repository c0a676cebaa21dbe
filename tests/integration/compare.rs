//! `tlslab compare` and `tlslab report --list`: two mock runs with a known
//! slowdown in one row give exactly that row as significantly slower, the
//! exit status follows the threshold, rows of one run only are listed
//! apart, and bad input is a usage error.

use tlslab::measure::Outcome;
use tlslab::store::{RunInfo, Store};

use crate::util::{cert_dir, has_row, tlslab, tlslab_at};

/// The row run 2 makes 20% slower than run 1.
const SLOWED: &str = "handshake_1.3_x25519_ecdsa_p256_aes128gcm";
/// The row run 2 leaves out.
const LEFT_OUT: &str = "handshake_1.3_x25519_rsa2048_aes128gcm";

/// A database with run 1 (a mock handshake run of 12 samples per row),
/// run 2 (the same samples, one row 20% dearer, one row left out) and run
/// 3 (a speed run).
fn database(dir: &std::path::Path) -> String {
    let db = dir.join("db.sqlite");
    let db_text = db.to_str().unwrap().to_string();
    tlslab(&[
        "handshake",
        "--backend",
        "mock",
        "--tls",
        "1.2,1.3",
        "--group",
        "x25519,x448",
        "--cert",
        "rsa2048,ecdsa_p256",
        "--runs",
        "12",
        "--warmup",
        "0",
        "--db",
        &db_text,
        "--cert-dir",
        cert_dir().to_str().unwrap(),
    ])
    .expect_code(0);

    let mut store = Store::open(&db).unwrap();
    let first = store.load_run(1).unwrap();
    let run = store
        .begin_run(&RunInfo {
            kind: first.kind.clone(),
            tool_version: "test".into(),
            command_line: "test: run 1 with one row slowed".into(),
            options_json: first.options_json.clone(),
            host: first.host.clone(),
            libraries: first.libraries.clone(),
        })
        .unwrap();
    assert_eq!(run, 2);
    for mut cell in first.cells {
        let label = cell.scenario.label();
        if label == LEFT_OUT {
            continue;
        }
        if label == SLOWED {
            let Outcome::Measured { samples, .. } = &mut cell.outcome else {
                panic!("{SLOWED} is measured");
            };
            for sample in samples {
                sample.value.client_cpu_ns = sample.value.client_cpu_ns * 6 / 5;
                sample.value.server_cpu_ns = sample.value.server_cpu_ns * 6 / 5;
            }
        }
        store.save_cell(run, &cell).unwrap();
    }
    store.finish_run(run, true).unwrap();

    tlslab(&[
        "speed",
        "--backend",
        "mock",
        "--algorithm",
        "rsa2048",
        "--max-time",
        "0",
        "--min-samples",
        "3",
        "--warmup",
        "0",
        "--db",
        &db_text,
    ])
    .expect_code(0);
    db_text
}

#[test]
fn a_known_slowdown_is_the_one_slower_row_and_the_exit_status_follows_the_threshold() {
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path());
    let csv = dir.path().join("compare.csv");
    let json = dir.path().join("compare.json");

    let run = tlslab(&[
        "compare",
        "1",
        "2",
        "--db",
        &db,
        "--threshold",
        "5%",
        "--export-csv",
        csv.to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
    ]);
    run.expect_code(1);
    let out = run.stdout();
    assert!(out.contains("Test: ratio of medians"), "{out}");
    assert!(
        has_row(
            &out,
            &["1.3", "ECDHE X25519", "ECDSA P-256", "1.200", "SLOWER > 5%"]
        ),
        "{out}"
    );
    let csv = std::fs::read_to_string(csv).unwrap();
    let slower: Vec<&str> = csv.lines().filter(|l| l.contains(",slower,")).collect();
    assert_eq!(slower.len(), 1, "{csv}");
    assert!(
        slower[0].starts_with(SLOWED) && slower[0].contains(",true,"),
        "{csv}"
    );
    // The other measured rows have the very same samples.
    assert_eq!(
        csv.matches(",no significant difference,").count(),
        2,
        "{csv}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let lone = json["only_in_one_run"].as_array().unwrap();
    assert_eq!(lone.len(), 1, "{json}");
    assert_eq!(lone[0]["label"], LEFT_OUT);
    assert_eq!(lone[0]["run_id"], 1);
    assert!(out.contains("Rows only one run has"), "{out}");

    // Beyond a 30% threshold the row is still slower, but the gate passes.
    let run = tlslab(&["compare", "1", "2", "--db", &db, "--threshold", "30%"]);
    run.expect_code(0);
    assert!(
        has_row(&run.stdout(), &["ECDSA P-256", "1.200", "slower"]),
        "{}",
        run.stdout()
    );
    // The reverse comparison: that row is faster.
    let run = tlslab(&["compare", "2", "1", "--db", &db]);
    run.expect_code(0);
    assert!(
        has_row(&run.stdout(), &["ECDSA P-256", "0.833", "faster"]),
        "{}",
        run.stdout()
    );
    // A run against itself: no difference anywhere; a database named with the run.
    let run = tlslab(&["compare", "1", &format!("{db}:1"), "--db", &db]);
    run.expect_code(0);
    let out = run.stdout();
    assert_eq!(
        out.matches("  no significant difference").count(),
        4,
        "{out}"
    );
    assert!(
        !out.contains("  slower") && !out.contains("  faster"),
        "{out}"
    );

    // Fitted to 80 columns like every table.
    let run = tlslab_at(&["compare", "1", "2", "--db", &db], Some(80));
    run.expect_code(1);
    assert!(
        run.stdout().lines().all(|l| l.chars().count() <= 80),
        "{}",
        run.stdout()
    );
}

#[test]
fn compare_refuses_bad_input_with_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path());
    let missing = dir.path().join("missing.sqlite");
    let cases: [(&[&str], &str); 5] = [
        (&["compare", "1", "9", "--db", &db], "there is no run 9"),
        (
            &["compare", "1", "3", "--db", &db],
            "run 1 is a handshake run and run 3 a speed run",
        ),
        (
            &["compare", "1", "2", "--db", &db, "--threshold", "fast"],
            "--threshold must be a percentage",
        ),
        (&["compare", "1", "two", "--db", &db], "'two' is not a run"),
        (
            &["compare", "1", "2", "--db", missing.to_str().unwrap()],
            "there is no database",
        ),
    ];
    for (args, message) in cases {
        let run = tlslab(args);
        run.expect_code(2);
        assert!(
            run.stderr().contains(message),
            "{message}: {}",
            run.stderr()
        );
    }
    assert!(!missing.exists(), "nothing created for a missing database");
}

#[test]
fn report_list_shows_each_run_on_one_line_within_80_columns() {
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path());
    let run = tlslab_at(&["report", "--list", "--db", &db], Some(80));
    run.expect_code(0);
    let out = run.stdout();
    assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
    for (id, kind) in [("1", "handshake"), ("2", "handshake"), ("3", "speed")] {
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{id} ")))
            .unwrap_or_else(|| panic!("run {id}:\n{out}"));
        assert!(line.contains(kind) && line.contains("complete"), "{line}");
    }
}

/// Speed and tunnel runs compare too, on their own rows and units (real
/// timings here: the threshold is set so high that the gate cannot fail).
#[test]
fn speed_and_tunnel_runs_compare_row_by_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let db = db.to_str().unwrap();
    for _ in 0..2 {
        tlslab(&[
            "speed",
            "--backend",
            "mock",
            "--algorithm",
            "rsa2048,aes128gcm",
            "--size",
            "1024",
            "--max-time",
            "0",
            "--min-samples",
            "8",
            "--warmup",
            "0",
            "--db",
            db,
        ])
        .expect_code(0);
    }
    for cipher in ["aes-128-gcm,bf-cbc", "aes-128-gcm"] {
        tlslab(&[
            "tunnel", "--cipher", cipher, "--digest", "sha1", "--runs", "8", "--warmup", "0",
            "--db", db,
        ])
        .expect_code(0);
    }
    let speed = tlslab(&["compare", "1", "2", "--db", db, "--threshold", "1000%"]);
    speed.expect_code(0);
    let out = speed.stdout();
    assert!(out.contains("Comparing speed runs"), "{out}");
    for row in [&["rsa2048", "sign"][..], &["aes128gcm", "encrypt", "1024"]] {
        assert!(has_row(&out, row), "{row:?}:\n{out}");
    }
    let tunnel = tlslab(&["compare", "3", "4", "--db", db, "--threshold", "1000%"]);
    tunnel.expect_code(0);
    let out = tunnel.stdout();
    assert!(
        has_row(&out, &["engine", "cipher", "digest", "A CPU ns/byte"]),
        "{out}"
    );
    assert!(
        has_row(&out, &["inprocess", "aes-128-gcm", "none", "none"]),
        "{out}"
    );
    assert!(has_row(&out, &["inprocess", "(no tunnel)"]), "{out}");
    // bf-cbc is in run 3 only.
    assert!(
        has_row(&out, &["3", "inprocess", "bf-cbc", "sha1", "measured"]),
        "{out}"
    );
}
