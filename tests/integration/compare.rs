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
    let run = new_run(&mut store, 1, "test: run 1 with one row slowed");
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
            "'fast' is not a percentage",
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
    for row in [
        &["rsa2048", "sign"][..],
        &["aes-128-gcm", "encrypt", "1024"],
    ] {
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

/// Twelve set costs, 1000 to 1110 (times `factor`), one per round.
fn set_costs(factor: f64) -> impl Iterator<Item = (u32, u64)> {
    (0..12u32).map(move |i| (i, ((1000 + 10 * i) as f64 * factor) as u64))
}

/// A new run in `store` like run `like` (same kind, options, host and
/// libraries), begun as `command_line`.
fn new_run(store: &mut Store, like: i64, command_line: &str) -> i64 {
    let first = store.load_run(like).unwrap();
    store
        .begin_run(&RunInfo {
            kind: first.kind,
            tool_version: "test".into(),
            command_line: command_line.into(),
            options_json: first.options_json.clone(),
            host: first.host.clone(),
            libraries: first.libraries.clone(),
        })
        .unwrap()
}

/// Issue 10: bulk runs compare a row per side; the receiver of one row
/// made 20% dearer is the one slower row, and the exit status follows
/// the threshold.
#[test]
fn bulk_runs_compare_per_side_and_flag_the_slowed_side() {
    use tlslab::measure::Timed;
    use tlslab::workload::bulk::BulkSample;

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let db_text = db.to_str().unwrap();
    tlslab(&[
        "bulk",
        "--backend",
        "openssl",
        "--tls",
        "1.3",
        "--suite",
        "aes128gcm,chacha20",
        "--size",
        "1024",
        "--max-time",
        "0",
        "--min-samples",
        "3",
        "--warmup",
        "0",
        "-q",
        "--db",
        db_text,
        "--cert-dir",
        cert_dir().to_str().unwrap(),
    ])
    .expect_code(0);
    // Runs 2 and 3: run 1's rows with set samples; in run 3 the receiver
    // of aes128gcm pays 20% more.
    let mut store = Store::open(&db).unwrap();
    for slowed in [false, true] {
        let run = new_run(&mut store, 1, "test: run 1 with set samples");
        for mut cell in store.load_bulk_cells(1).unwrap() {
            let dearer = slowed && cell.scenario.suite_id() == "aes128gcm";
            if let Outcome::Measured { samples, .. } = &mut cell.outcome {
                let template = samples[0].value;
                *samples = set_costs(1.0)
                    .zip(set_costs(if dearer { 1.2 } else { 1.0 }))
                    .map(|((round, sender), (_, receiver))| Timed {
                        round,
                        value: BulkSample {
                            bytes: 1_000_000,
                            sender_cpu_ns: sender * 1000,
                            receiver_cpu_ns: receiver * 1000,
                            ..template
                        },
                    })
                    .collect();
            }
            store.save_bulk_cell(run, &cell).unwrap();
        }
        store.finish_run(run, true).unwrap();
    }
    let gated = tlslab(&["compare", "2", "3", "--db", db_text, "--threshold", "5%"]);
    gated.expect_code(1);
    let out = gated.stdout();
    assert!(out.contains("Comparing bulk runs"), "{out}");
    assert!(
        has_row(
            &out,
            &[
                "aes-128-gcm",
                "receiver",
                "1.06",
                "1.27",
                "1.200",
                "SLOWER > 5%"
            ]
        ),
        "{out}"
    );
    assert!(
        has_row(
            &out,
            &[
                "aes-128-gcm",
                "sender",
                "1.000",
                "no significant difference"
            ]
        ),
        "{out}"
    );
    assert_eq!(out.matches("SLOWER").count(), 1, "{out}");
    assert_eq!(out.matches("no significant difference").count(), 5, "{out}");
    let lenient = tlslab(&["compare", "2", "3", "--db", db_text, "--threshold", "25%"]);
    lenient.expect_code(0);
    assert!(
        has_row(&lenient.stdout(), &["receiver", "slower"]),
        "{}",
        lenient.stdout()
    );
}

/// Issue 10: cost runs compare their handshakes and the operations their
/// model used; one operation made 20% dearer is the one slower row.
#[test]
fn cost_runs_compare_handshakes_and_operations() {
    use tlslab::measure::Timed;
    use tlslab::workload::speed::SpeedSample;

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let db_text = db.to_str().unwrap();
    tlslab(&[
        "cost",
        "--backend",
        "mock",
        "--max-time",
        "0",
        "--min-samples",
        "3",
        "--warmup",
        "0",
        "-q",
        "--db",
        db_text,
        "--cert-dir",
        cert_dir().to_str().unwrap(),
    ])
    .expect_code(0);
    let mut store = Store::open(&db).unwrap();
    let handshakes = store.load_run(1).unwrap().cells;
    assert!(!handshakes.is_empty());
    for slowed in [false, true] {
        let run = new_run(&mut store, 1, "test: run 1 with set samples");
        for mut cell in handshakes.clone() {
            if let Outcome::Measured { samples, .. } = &mut cell.outcome {
                let template = samples[0].value;
                *samples = set_costs(1.0)
                    .map(|(round, ns)| Timed {
                        round,
                        value: tlslab::workload::handshake::Sample {
                            client_cpu_ns: ns,
                            server_cpu_ns: ns,
                            ..template
                        },
                    })
                    .collect();
            }
            store.save_cell(run, &cell).unwrap();
        }
        for mut cell in store.load_speed_cells(1).unwrap() {
            let dearer = slowed && cell.row.label() == "speed_ecdsa_p256_sign";
            if let Outcome::Measured { samples, .. } = &mut cell.outcome {
                *samples = set_costs(if dearer { 1.2 } else { 1.0 })
                    .map(|(round, ns)| Timed {
                        round,
                        value: SpeedSample {
                            ns_per_op: ns as f64,
                        },
                    })
                    .collect();
            }
            store.save_speed_cell(run, &cell).unwrap();
        }
        store.finish_run(run, true).unwrap();
    }
    let gated = tlslab(&["compare", "2", "3", "--db", db_text, "--threshold", "5%"]);
    gated.expect_code(1);
    let out = gated.stdout();
    assert!(out.contains("Comparing cost runs"), "{out}");
    assert!(
        has_row(
            &out,
            &["operation", "speed_ecdsa_p256_sign", "1.200", "SLOWER > 5%"]
        ),
        "{out}"
    );
    assert!(
        has_row(
            &out,
            &[
                "handshake",
                "ECDSA P-256",
                "1.000",
                "no significant difference"
            ]
        ),
        "{out}"
    );
    assert_eq!(out.matches("SLOWER").count(), 1, "{out}");
    tlslab(&["compare", "2", "3", "--db", db_text, "--threshold", "25%"]).expect_code(0);
}

/// Issue 10: load runs compare each phase's p50 over every request's
/// latency (a slowed handshake is the one slower row), p99 and the rates
/// as figures without a verdict; a load run and a handshake run are
/// refused.
#[test]
fn load_runs_compare_latencies_and_show_rates_without_a_test() {
    use std::time::Duration;
    use tlslab::store::LoadRecord;
    use tlslab::workload::load::{Latencies, LoadResult, Mode, Plan};

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let db_text = db.to_str().unwrap();
    let mut store = Store::open(&db).unwrap();
    for handshake_factor in [1.0, 1.5] {
        let mut latencies = Latencies::new();
        for i in 0..200u64 {
            let us = 1_000 + 5 * i;
            latencies.total.record(us * 3).unwrap();
            latencies
                .handshake
                .record((us as f64 * handshake_factor) as u64)
                .unwrap();
        }
        let record = LoadRecord {
            scenario_id: "handshake_1.3_x25519_ecdsa_p256_aes128gcm".into(),
            scenario: "TLS 1.3 X25519 ECDSA P-256 aes128gcm".into(),
            server: "embedded (openssl)".into(),
            plan: Plan {
                rate: 100.0,
                ramp: Duration::ZERO,
                duration: Duration::from_secs(2),
                path: "/page_1000".into(),
                body: vec![b'a'; 1000],
                mode: Mode::NewConnection,
                clients: 4,
                max_requests: 1000,
                http: tlslab::workload::load::HttpVersion::Http1_1,
                streams: 1,
            },
            result: LoadResult {
                offered: 200,
                sent: 200,
                answered: 200,
                errors: Vec::new(),
                first_error: Vec::new(),
                latencies,
                bytes: 200_000,
                elapsed: Duration::from_secs(2),
                client_cpu_ns: 1_000_000,
                per_second: vec![100, 100],
                intervals: Vec::new(),
                resumed: 0,
                interrupted: false,
            },
            server_cpu_ns: None,
            profile: Err("not asked for".into()),
            categories: Err("not asked for".into()),
            profile_scope: String::new(),
            embedded: None,
            counted: None,
        };
        let run = store
            .begin_run(&crate::util::run_info(
                tlslab::store::RunKind::Load,
                "tlslab load",
                Vec::new(),
            ))
            .unwrap();
        store.save_load(run, &record).unwrap();
        store.finish_run(run, true).unwrap();
    }
    drop(store);
    let gated = tlslab(&["compare", "1", "2", "--db", db_text, "--threshold", "5%"]);
    gated.expect_code(1);
    let out = gated.stdout();
    assert!(out.contains("Comparing load runs"), "{out}");
    assert!(
        has_row(&out, &["handshake", "p50", "1.50", "2.25", "SLOWER > 5%"]),
        "{out}"
    );
    assert!(
        has_row(
            &out,
            &["handshake", "p99", "1.500", "not tested (one figure)"]
        ),
        "{out}"
    );
    assert!(
        has_row(
            &out,
            &["total", "p50", "1.000", "no significant difference"]
        ),
        "{out}"
    );
    assert_eq!(out.matches("SLOWER").count(), 1, "{out}");
    assert!(
        has_row(
            &out,
            &["achieved rate, whole run (answers/s)", "100.0", "100.0"]
        ),
        "{out}"
    );
    assert!(out.contains("not independent"), "{out}");
    tlslab(&["compare", "1", "2", "--db", db_text, "--threshold", "60%"]).expect_code(0);

    tlslab(&[
        "handshake",
        "--backend",
        "mock",
        "--group",
        "x25519",
        "--cert",
        "ecdsa_p256",
        "--runs",
        "3",
        "--warmup",
        "0",
        "-q",
        "--db",
        db_text,
        "--cert-dir",
        cert_dir().to_str().unwrap(),
    ])
    .expect_code(0);
    let mixed = tlslab(&["compare", "1", "3", "--db", db_text]);
    mixed.expect_code(2);
    assert!(
        mixed
            .stderr()
            .contains("run 1 is a load run and run 3 a handshake run"),
        "{}",
        mixed.stderr()
    );
}

/// Issue 27 item 4: two hosts, one table. Run 1 copied as if measured on a
/// Raspberry Pi under emulation, every sample nine times dearer: the
/// comparison names both hosts in its title, says B/A is the cost on B's
/// host against A's, and every row's ratio is 9.
#[test]
fn runs_of_two_hosts_compare_as_the_cost_on_one_host_against_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path());
    let mut store = Store::open(std::path::Path::new(&db)).unwrap();
    let first = store.load_run(1).unwrap();
    let mut host = first.host.clone();
    host.hostname = "raspberrypi".into();
    host.cpu_model
        .push_str(" [emulated: aarch64 binary on x86_64 (qemu-user)]");
    let run = store
        .begin_run(&RunInfo {
            kind: first.kind,
            tool_version: "test".into(),
            command_line: "test: run 1 on another host".into(),
            options_json: first.options_json.clone(),
            host,
            libraries: first.libraries.clone(),
        })
        .unwrap();
    for mut cell in first.cells {
        if let Outcome::Measured { samples, .. } = &mut cell.outcome {
            for sample in samples {
                sample.value.client_cpu_ns *= 9;
                sample.value.server_cpu_ns *= 9;
            }
        }
        store.save_cell(run, &cell).unwrap();
    }
    store.finish_run(run, true).unwrap();
    drop(store);

    let compared = tlslab_at(
        &[
            "compare",
            "1",
            &run.to_string(),
            "--db",
            &db,
            "--threshold",
            "1000%",
        ],
        Some(200),
    );
    compared.expect_code(0);
    let out = compared.stdout();
    assert!(
        out.contains(&format!(
            "B (run {run}, on raspberrypi, emulated) against A (run 1, on "
        )),
        "{out}"
    );
    assert!(out.contains("A and B ran on different hosts"), "{out}");
    assert!(!out.contains("perhaps on different machines"), "{out}");
    let rows = out
        .lines()
        .filter(|l| has_row(l, &["ECDHE", "9.000", "slower"]))
        .count();
    assert_eq!(rows, 4, "{out}");
    // One host against itself keeps the old note.
    let same = tlslab(&["compare", "1", "2", "--db", &db, "--threshold", "30%"]);
    assert!(
        !same.stdout().contains("different hosts"),
        "{}",
        same.stdout()
    );
}
