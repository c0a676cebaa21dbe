//! Issue 17: counted measures. Heap bytes per side are counted exactly (the
//! mock's known allocations come out to the byte), instructions per side
//! under valgrind (the mock's known 1:3 work, real libraries' both sides),
//! a stored counted run reads back as it was shown, and what cannot be
//! counted says why.

use std::path::Path;
use std::process::Command;

use tlslab::backend::mock::{
    MOCK_CLIENT_KEPT_BYTES, MOCK_CLIENT_SCRATCH_BYTES, MOCK_SERVER_KEPT_BYTES,
};

use tlslab::scenario::names::Named;
use tlslab::scenario::tunnel::TunnelScenario;
use tlslab::workload::tunnel::{TunnelEngine, ENGINES};

use crate::util::{cert_dir, has_row, skip_without, tlslab, Run};

fn json_of(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Skips (or, in CI, fails) without valgrind.
pub(crate) fn skip_without_valgrind(test: &str) -> bool {
    let missing = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_err()
        .then(|| "valgrind is not installed".to_string());
    skip_without(missing, test, "apt-get install valgrind")
}

/// A handshake run with the certificates of the test cache.
fn handshake(args: &[&str]) -> Run {
    let certs = cert_dir();
    let mut all = vec![
        "handshake",
        "--quiet",
        "--cert-dir",
        certs.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    tlslab(&all)
}

#[test]
fn the_mocks_known_allocations_are_counted_to_the_byte() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    handshake(&[
        "--backend",
        "mock",
        "--tls",
        "1.2,1.3",
        "--group",
        "x25519",
        "--cert",
        "ecdsa_p256",
        "--measure",
        "memory",
        "--runs",
        "3",
        "--no-db",
        "--export-json",
        json.to_str().unwrap(),
    ])
    .expect_code(0);
    let rows = json_of(&json)["rows"].as_array().unwrap().clone();
    assert_eq!(rows.len(), 2);
    for row in rows {
        let memory = &row["memory"];
        let figure = |name: &str| memory[name].as_f64().unwrap() as usize;
        assert_eq!(
            figure("client_peak_heap_bytes"),
            MOCK_CLIENT_KEPT_BYTES + MOCK_CLIENT_SCRATCH_BYTES,
            "{memory}"
        );
        assert_eq!(figure("client_retained_bytes"), MOCK_CLIENT_KEPT_BYTES);
        assert_eq!(figure("server_peak_heap_bytes"), MOCK_SERVER_KEPT_BYTES);
        assert_eq!(figure("server_retained_bytes"), MOCK_SERVER_KEPT_BYTES);
        assert_eq!(memory["samples"].as_array().unwrap().len(), 3);
        // Memory alone: no time was measured.
        assert!(row.get("samples").is_none(), "{row}");
    }
}

#[test]
fn real_libraries_keep_heap_bytes_on_both_sides() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    handshake(&[
        "--backend",
        "openssl,rustls-aws-lc,rustls-ring",
        "--tls",
        "1.3",
        "--group",
        "x25519",
        "--cert",
        "ecdsa_p256",
        "--measure",
        "memory",
        "--runs",
        "2",
        "--no-db",
        "--export-json",
        json.to_str().unwrap(),
    ])
    .expect_code(0);
    for row in json_of(&json)["rows"].as_array().unwrap() {
        let memory = &row["memory"];
        for side in ["client", "server"] {
            let peak = memory[format!("{side}_peak_heap_bytes")].as_f64().unwrap();
            let kept = memory[format!("{side}_retained_bytes")].as_f64().unwrap();
            // A connection holds at least its keys and buffers, and never
            // more than it held at its peak.
            assert!(
                kept > 1_000.0 && kept <= peak,
                "{}: {memory}",
                row["backend"]
            );
            assert!(peak < 10_000_000.0, "{}: {memory}", row["backend"]);
        }
    }
}

#[test]
fn the_mocks_sides_are_counted_apart_under_valgrind() {
    if skip_without_valgrind("the_mocks_sides_are_counted_apart_under_valgrind") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let db = dir.path().join("db.sqlite");
    let run = handshake(&[
        "--backend",
        "mock",
        "--tls",
        "1.3",
        "--group",
        "x25519,p256",
        "--cert",
        "ecdsa_p256",
        "--measure",
        "time,instructions",
        "--runs",
        "3",
        "--db",
        db.to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
    ]);
    run.expect_code(0);
    let rows = json_of(&json)["rows"].as_array().unwrap().clone();
    for row in &rows {
        let counted = &row["instructions"];
        let median = |side: &str| counted[side]["median"].as_f64().unwrap();
        // The server's turn does three times the client's work.
        let ratio = median("server") / median("client");
        assert!((2.5..3.5).contains(&ratio), "{ratio}: {counted}");
        assert_eq!(counted["samples"].as_array().unwrap().len(), 3);
        assert!(counted["repeatable"].as_bool().unwrap(), "{counted}");
        // Time was measured too, in the same run.
        assert_eq!(row["samples"].as_array().unwrap().len(), 3, "{row}");
    }
    // Both ratios side by side, and the report of the stored run shows
    // the same table.
    let shown = run.stdout();
    assert!(shown.contains("× baseline (instructions)"), "{shown}");
    assert!(shown.contains("× baseline (CPU time)"), "{shown}");
    assert!(shown.contains("valgrind-"), "{shown}");
    let report = tlslab(&["report", "--db", db.to_str().unwrap()]);
    report.expect_code(0);
    let table = |text: &str| {
        text.lines()
            .filter(|l| l.starts_with("mock"))
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(table(&report.stdout()), table(&shown));
}

#[test]
fn real_libraries_are_counted_on_both_sides() {
    if skip_without_valgrind("real_libraries_are_counted_on_both_sides") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let run = handshake(&[
        "--backend",
        "openssl,rustls-ring",
        "--tls",
        "1.3",
        "--group",
        "x25519",
        "--cert",
        "ecdsa_p256",
        "--measure",
        "instructions",
        "--breakdown",
        "--runs",
        "2",
        "--no-db",
        "--export-json",
        json.to_str().unwrap(),
    ]);
    run.expect_code(0);
    for row in json_of(&json)["rows"].as_array().unwrap() {
        let counted = &row["instructions"];
        for side in ["client", "server"] {
            let median = counted[side]["median"].as_f64().unwrap();
            // An X25519 + ECDSA P-256 handshake is millions of
            // instructions per side, not thousands, not billions.
            assert!(
                (300_000.0..50_000_000.0).contains(&median),
                "{} {side}: {counted}",
                row["backend"]
            );
            // Its categories add up to its total.
            let categories: f64 = row["breakdown"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["side"] == side)
                .map(|c| c["instructions"].as_f64().unwrap())
                .sum();
            let mean = counted[side]["mean"].as_f64().unwrap();
            assert!(
                (categories - mean).abs() <= mean * 0.001,
                "{side}: {categories} against {mean}"
            );
            let public_key = row["breakdown"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["side"] == side && c["category"] == "public key")
                .map(|c| c["instructions"].as_f64().unwrap())
                .unwrap_or(0.0);
            assert!(public_key > mean * 0.2, "{side}: {}", row["breakdown"]);
        }
    }
    assert!(
        run.stdout().contains("Where the instructions go"),
        "{}",
        run.stdout()
    );
}

#[test]
fn what_cannot_be_counted_says_why() {
    // Unknown measures list the valid ones.
    let run = handshake(&["--measure", "cycles"]);
    run.expect_code(2);
    assert!(
        run.stderr().contains("time, instructions, memory"),
        "{}",
        run.stderr()
    );
    // The breakdown counts instructions.
    let run = handshake(&["--breakdown"]);
    run.expect_code(2);
    assert!(run.stderr().contains("--measure instructions"));
    // nginx's side is another process.
    let run = handshake(&["--server", "nginx", "--measure", "memory"]);
    run.expect_code(2);
    assert!(run.stderr().contains("--measure time"), "{}", run.stderr());
    // Without valgrind, instructions cannot be counted: exit 2, how to install it.
    let empty = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args(["handshake", "--measure", "instructions", "--no-db"])
        .env("PATH", empty.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("apt-get install valgrind"), "{stderr}");
    // Rows over a socket are timed, not counted: a row that says so.
    let run = handshake(&[
        "--backend",
        "openssl",
        "--tls",
        "1.3",
        "--group",
        "x25519",
        "--cert",
        "ecdsa_p256",
        "--transport",
        "tcp",
        "--measure",
        "memory",
        "--no-db",
    ]);
    run.expect_code(0);
    assert!(
        has_row(&run.stdout(), &["openssl", "counted over memory only"]),
        "{}",
        run.stdout()
    );
}

/// A counted run of one library.
fn counted_run(db: &Path, backend: &str, group: &str) {
    handshake(&[
        "--backend",
        backend,
        "--tls",
        "1.3",
        "--group",
        group,
        "--cert",
        "ecdsa_p256",
        "--measure",
        "instructions",
        "--runs",
        "2",
        "--db",
        db.to_str().unwrap(),
    ])
    .expect_code(0);
}

#[test]
fn compare_gates_on_counts_and_fails_when_nothing_was_compared() {
    if skip_without_valgrind("compare_gates_on_counts_and_fails_when_nothing_was_compared") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let db_text = db.to_str().unwrap();
    counted_run(&db, "rustls-ring", "x25519"); // run 1
    counted_run(&db, "rustls-ring", "x25519"); // run 2
    counted_run(&db, "openssl", "x25519"); // run 3
    counted_run(&db, "rustls-ring", "p256"); // run 4
                                             // The same build counted twice: nothing moved, on counts, at 0.5%.
    let same = tlslab(&["compare", "1", "2", "--db", db_text]);
    same.expect_code(0);
    assert!(same.stdout().contains("M instr"), "{}", same.stdout());
    assert!(same.stdout().contains("0.5%"), "{}", same.stdout());
    // OpenSSL's handshake executes more instructions than ring's: a
    // regression the gate catches (rows matched across one-library runs).
    let worse = tlslab(&["compare", "1", "3", "--db", db_text]);
    worse.expect_code(1);
    assert!(worse.stdout().contains("SLOWER"), "{}", worse.stdout());
    // Runs that share no row compared nothing: the gate does not pass.
    let nothing = tlslab(&["compare", "1", "4", "--db", db_text]);
    nothing.expect_code(1);
    assert!(
        nothing.stderr().contains("no row was compared"),
        "{}",
        nothing.stderr()
    );
    // Time was not measured in these runs: compared on time, nothing is.
    let on_time = tlslab(&["compare", "1", "2", "--db", db_text, "--measure", "time"]);
    on_time.expect_code(1);
}

#[test]
fn bulk_counts_each_sides_instructions_per_byte() {
    if skip_without_valgrind("bulk_counts_each_sides_instructions_per_byte") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let certs = cert_dir();
    let run = tlslab(&[
        "bulk",
        "--backend",
        "openssl",
        "--tls",
        "1.3",
        "--suite",
        "aes128gcm",
        "--size",
        "16384",
        "--measure",
        "instructions",
        "--runs",
        "2",
        "--quiet",
        "--no-db",
        "--cert-dir",
        certs.to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
    ]);
    run.expect_code(0);
    let text = run.stdout();
    assert!(text.contains("send instr/B"), "{text}");
    // Counted and not timed: the time table is left out.
    assert!(!text.contains("send ms/MB"), "{text}");
    let rows = json_of(&json)["rows"].as_array().unwrap().clone();
    let protected = rows.iter().find(|r| r["backend"] == "openssl").unwrap();
    let plain = rows.iter().find(|r| r["backend"] == "none").unwrap();
    let per_byte = |row: &serde_json::Value, side: &str| {
        row["instructions"][format!("{side}_per_byte")]["median"]
            .as_f64()
            .unwrap()
    };
    for side in ["sender", "receiver"] {
        // Encrypting and decrypting cost more than copying, and far less
        // than a hundred instructions a byte.
        assert!(
            per_byte(protected, side) > per_byte(plain, side),
            "{side}: {protected}"
        );
        assert!(per_byte(protected, side) < 100.0, "{side}: {protected}");
    }
    // Timed too, the per-byte counts are the same: the counted samples
    // carry their own bytes, not the timed samples' (regression).
    let both_json = dir.path().join("both.json");
    tlslab(&[
        "bulk",
        "--backend",
        "openssl",
        "--tls",
        "1.3",
        "--suite",
        "aes128gcm",
        "--size",
        "16384",
        "--measure",
        "time,instructions",
        "--runs",
        "2",
        "--max-time",
        "0",
        "--quiet",
        "--no-db",
        "--cert-dir",
        certs.to_str().unwrap(),
        "--export-json",
        both_json.to_str().unwrap(),
    ])
    .expect_code(0);
    for row in json_of(&both_json)["rows"].as_array().unwrap() {
        let alone = rows
            .iter()
            .find(|r| r["backend"] == row["backend"])
            .unwrap();
        for side in ["sender", "receiver"] {
            let (timed, counted) = (per_byte(row, side), per_byte(alone, side));
            assert!(
                (timed - counted).abs() <= counted * 0.01,
                "{side}: {timed} against {counted}: {row}"
            );
        }
    }
    // Memory is counted per handshake, not per byte.
    let refused = tlslab(&["bulk", "--measure", "memory", "--no-db"]);
    refused.expect_code(2);
    assert!(
        refused.stderr().contains("per handshake"),
        "{}",
        refused.stderr()
    );
}

#[test]
fn speed_counts_instructions_per_operation_and_report_reads_them_back() {
    if skip_without_valgrind("speed_counts_instructions_per_operation_and_report_reads_them_back") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let run = tlslab(&[
        "speed",
        "--backend",
        "openssl",
        "--algorithm",
        "ecdsa_p256,aes128gcm",
        "--size",
        "1024,16384",
        "--measure",
        "instructions",
        "--runs",
        "2",
        "--quiet",
        "--db",
        db.to_str().unwrap(),
    ]);
    run.expect_code(0);
    let text = run.stdout();
    assert!(text.contains("instr/op"), "{text}");
    // Encrypting 16 KiB takes more instructions than 1 KiB, and fewer per byte.
    let per_op = |bytes: &str| -> f64 {
        text.lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.len() > 4 && f[1] == "aes-128-gcm" && f[3] == bytes)
            .and_then(|f| f[4].parse().ok())
            .unwrap_or_else(|| panic!("no {bytes}-byte row: {text}"))
    };
    let (small, large) = (per_op("1024"), per_op("16384"));
    assert!(large > small * 2.0, "{small} {large}");
    assert!(large / 16384.0 < small / 1024.0, "{small} {large}");
    let report = tlslab(&["report", "--db", db.to_str().unwrap()]);
    report.expect_code(0);
    assert_eq!(
        report
            .stdout()
            .lines()
            .filter(|l| l.starts_with("openssl"))
            .collect::<Vec<_>>(),
        text.lines()
            .filter(|l| l.starts_with("openssl"))
            .collect::<Vec<_>>()
    );
}

/// A tiny counted tunnel matrix on `engines`, with `measure`, stored in
/// `db` and exported as JSON to `json`.
fn counted_tunnel(engines: &str, measure: &str, db: &Path, json: &Path) -> Run {
    let run = tlslab(&[
        "tunnel",
        "--engine",
        engines,
        "--cipher",
        "aes-128-gcm,aes-128-cbc,chacha20-poly1305",
        "--digest",
        "sha1",
        "--measure",
        measure,
        "--runs",
        "2",
        "--max-time",
        "0",
        "--warmup",
        "0",
        "--quiet",
        "--db",
        db.to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
    ]);
    run.expect_code(0);
    run
}

/// Every registered engine: counted alone, an engine that cannot be
/// counted is not even started (it need not be able to run here) and its
/// rows say why, as do the rows a countable engine does not run; timed and
/// counted, every engine that can run here. Each countable engine's
/// counts repeat across the two runs.
#[test]
fn tunnel_counts_each_ends_instructions_per_mb_and_openvpn_says_why_not() {
    const TEST: &str = "tunnel_counts_each_ends_instructions_per_mb_and_openvpn_says_why_not";
    if skip_without_valgrind(TEST) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let (first_json, second_json) = (dir.path().join("1.json"), dir.path().join("2.json"));
    let every_engine: Vec<&str> = ENGINES.iter().map(|e| e.name()).collect();
    let counted = counted_tunnel(&every_engine.join(","), "instructions", &db, &first_json);
    let text = counted.stdout();
    assert!(text.contains("send M instr/MB"), "{text}");
    assert!(!text.contains("4. Ranking"), "counted only: {text}");
    assert!(
        has_row(&text, &["openvpn", "aes-128-cbc", "its own processes"]),
        "{text}"
    );
    let runs_row = |engine: &dyn TunnelEngine, row: &serde_json::Value| {
        let label = row["label"].as_str().unwrap();
        engine
            .unsupported_reason(&TunnelScenario::from_label(label).unwrap())
            .is_none()
    };
    for engine in ENGINES.iter().map(|descriptor| (descriptor.open)()) {
        let rows = json_of(&first_json)["rows"].as_array().unwrap().clone();
        for row in rows.iter().filter(|r| r["engine"] == engine.id().id()) {
            let label = row["label"].as_str().unwrap();
            let unsupported =
                engine.unsupported_reason(&TunnelScenario::from_label(label).unwrap());
            match engine.uncountable().map(String::from).or(unsupported) {
                Some(reason) => {
                    assert_eq!(row["instructions"]["status"], "unsupported", "{row}");
                    assert_eq!(row["instructions"]["reason"], reason.as_str(), "{row}");
                }
                None => assert_eq!(row["instructions"]["status"], "measured", "{row}"),
            }
        }
    }
    let runnable: Vec<&str> = crate::tunnel::runnable_engines(TEST)
        .iter()
        .map(|e| e.id().id())
        .collect();
    let both = counted_tunnel(&runnable.join(","), "time,instructions", &db, &second_json);
    assert!(both.stdout().contains("4. Ranking"), "{}", both.stdout());
    assert!(
        both.stdout().contains("send M instr/MB"),
        "{}",
        both.stdout()
    );

    let rows = |path: &Path| json_of(path)["rows"].as_array().unwrap().clone();
    let per_mb = |row: &serde_json::Value, figure: &str| {
        row["instructions"][figure]["median"]
            .as_f64()
            .unwrap_or_else(|| panic!("{figure}: {row}"))
    };
    for engine in ENGINES
        .iter()
        .filter(|e| e.uncountable.is_none())
        .map(|descriptor| (descriptor.open)())
    {
        let id = engine.id().id();
        // The rows the engine runs, of each run.
        let counted = |path: &Path| -> Vec<serde_json::Value> {
            rows(path)
                .into_iter()
                .filter(|r| r["engine"] == id && runs_row(engine, r))
                .collect()
        };
        let (first, second) = (counted(&first_json), counted(&second_json));
        assert_eq!(first.len(), second.len(), "{id}");
        assert!(
            first.len() >= 2,
            "{id}: a tunnel row beside the baseline: {first:?}"
        );
        let baseline = first
            .iter()
            .find(|r| r["scenario"]["baseline"] == true)
            .unwrap_or_else(|| panic!("{id}: no baseline: {first:?}"));
        for (row, again) in first.iter().zip(&second) {
            assert_eq!(row["label"], again["label"]);
            assert_eq!(row["instructions"]["samples"].as_array().unwrap().len(), 2);
            // The same work counted twice, in two processes: the same count.
            let (once, twice) = (per_mb(row, "total_per_mb"), per_mb(again, "total_per_mb"));
            assert!(
                (once - twice).abs() <= once * 0.005,
                "{id}: {once} {twice}: {row}"
            );
            if row != baseline {
                // Protecting and unprotecting cost more than copying, on each end.
                for side in ["send_per_mb", "receive_per_mb"] {
                    assert!(
                        per_mb(row, side) > per_mb(baseline, side),
                        "{id}: {side}: {row}"
                    );
                }
                assert!(row["instructions"]["ratio_to_baseline"].as_f64().unwrap() > 1.0);
            }
        }
        // Time was measured beside the counts in the second run.
        assert!(second.iter().all(|r| r["sample_count"].as_u64() >= Some(2)));
    }
    // The in-process engine runs every row of the matrix: the baseline and three ciphers.
    let inprocess_rows = rows(&first_json)
        .iter()
        .filter(|r| r["engine"] == "inprocess")
        .count();
    assert_eq!(inprocess_rows, 4);
    for row in rows(&first_json)
        .iter()
        .filter(|r| r["engine"] == "openvpn")
    {
        assert_eq!(row["instructions"]["status"], "unsupported", "{row}");
    }

    // The stored run reads back as it was shown.
    let report = tlslab(&["report", "--db", db.to_str().unwrap(), "--run", "1"]);
    report.expect_code(0);
    let lines = |text: &str| {
        text.lines()
            .filter(|l| every_engine.iter().any(|id| l.starts_with(id)))
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(lines(&report.stdout()), lines(&text));

    // recommend ranks the counted run on both ends' instructions per MB;
    // the OpenVPN rows were not counted.
    let recommended = tlslab(&["recommend", "--db", db.to_str().unwrap(), "--run", "1"]);
    recommended.expect_code(0);
    let shown = recommended.stdout();
    assert!(shown.contains("M instr/MB"), "{shown}");
    assert!(shown.contains("Ranked on instructions"), "{shown}");
    assert!(has_row(&shown, &["openvpn", "not measured"]), "{shown}");

    // Memory is counted per handshake, not per byte.
    let refused = tlslab(&["tunnel", "--measure", "memory", "--no-db"]);
    refused.expect_code(2);
    assert!(
        refused.stderr().contains("per handshake"),
        "{}",
        refused.stderr()
    );
}

/// Runs a counted command `args` into `db`.
fn counted_into(db: &Path, args: &[&str]) {
    let certs = cert_dir();
    let mut all = args.to_vec();
    all.extend([
        "--measure",
        "instructions",
        "--runs",
        "2",
        "--quiet",
        "--db",
        db.to_str().unwrap(),
    ]);
    if args[0] == "bulk" {
        all.extend(["--cert-dir", certs.to_str().unwrap()]);
    }
    tlslab(&all).expect_code(0);
}

#[test]
fn compare_gates_bulk_and_speed_runs_on_their_counts() {
    if skip_without_valgrind("compare_gates_bulk_and_speed_runs_on_their_counts") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let db_text = db.to_str().unwrap();
    let bulk = [
        "bulk",
        "--backend",
        "openssl",
        "--tls",
        "1.3",
        "--suite",
        "aes128gcm",
        "--size",
        "16384",
    ];
    let speed = [
        "speed",
        "--backend",
        "openssl",
        "--algorithm",
        "aes128gcm",
        "--size",
        "1024",
    ];
    counted_into(&db, &bulk); // run 1
    counted_into(&db, &bulk); // run 2
    counted_into(&db, &speed); // run 3
    counted_into(&db, &speed); // run 4

    // The same counts twice: nothing moved, on counts, at 0.5%.
    let same = tlslab(&["compare", "1", "2", "--db", db_text]);
    same.expect_code(0);
    assert!(same.stdout().contains("instr/B"), "{}", same.stdout());
    assert!(same.stdout().contains("0.5%"), "{}", same.stdout());
    let same = tlslab(&["compare", "3", "4", "--db", db_text]);
    same.expect_code(0);
    assert!(same.stdout().contains("k instr/op"), "{}", same.stdout());

    // A change that makes one row's sender execute 1% more instructions,
    // and one speed row's operation: the gate fails and names the row.
    let connection = rusqlite::Connection::open(&db).unwrap();
    let doctored = connection
        .execute(
            "UPDATE bulk_count_samples SET sender = sender * 101 / 100
             WHERE cell_id IN (SELECT id FROM bulk_cells WHERE run_id = 2 AND backend = 'openssl')",
            [],
        )
        .unwrap();
    assert_eq!(doctored, 2);
    connection
        .execute(
            "UPDATE speed_count_samples SET instructions = instructions * 101 / 100
             WHERE cell_id IN (SELECT id FROM speed_cells WHERE run_id = 4)",
            [],
        )
        .unwrap();
    drop(connection);
    let worse = tlslab(&["compare", "1", "2", "--db", db_text]);
    worse.expect_code(1);
    assert!(
        has_row(
            &worse.stdout(),
            &["openssl", "aes-128-gcm", "16384", "sender", "SLOWER"]
        ),
        "{}",
        worse.stdout()
    );
    // The receiver did not move.
    assert!(
        !has_row(&worse.stdout(), &["receiver", "SLOWER"]),
        "{}",
        worse.stdout()
    );
    assert!(
        worse.stderr().contains("sender on openssl"),
        "{}",
        worse.stderr()
    );
    let worse = tlslab(&["compare", "3", "4", "--db", db_text]);
    worse.expect_code(1);
    assert!(
        has_row(
            &worse.stdout(),
            &["openssl", "aes-128-gcm", "1024", "SLOWER"]
        ),
        "{}",
        worse.stdout()
    );
    // Memory is a handshake's figure.
    let refused = tlslab(&["compare", "1", "2", "--db", db_text, "--measure", "memory"]);
    refused.expect_code(2);
}

#[test]
fn recommend_ranks_a_counted_run_on_instructions() {
    if skip_without_valgrind("recommend_ranks_a_counted_run_on_instructions") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let db_text = db.to_str().unwrap();
    let shown = dir.path().join("handshake.json");
    handshake(&[
        "--backend",
        "mock",
        "--tls",
        "1.3",
        "--group",
        "x25519,p256",
        "--cert",
        "ecdsa_p256",
        "--measure",
        "time,instructions",
        "--runs",
        "3",
        "--warmup",
        "0",
        "--db",
        db_text,
        "--export-json",
        shown.to_str().unwrap(),
    ])
    .expect_code(0);
    let counted: std::collections::BTreeMap<String, serde_json::Value> = json_of(&shown)["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["label"].as_str().unwrap().to_string(),
                r["instructions"].clone(),
            )
        })
        .collect();
    let recommend = |extra: &[&str]| {
        let json = dir.path().join("recommend.json");
        let mut args = vec![
            "recommend",
            "--db",
            db_text,
            "--export-json",
            json.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let run = tlslab(&args);
        run.expect_code(0);
        (run.stdout(), json_of(&json))
    };
    // A counted run is ranked on its counts by default, and says so.
    for (role, side) in [("server", "server"), ("client", "client")] {
        let (text, json) = recommend(&["--role", role]);
        assert!(text.contains(&format!("{role} M instr")), "{text}");
        assert!(text.contains("Ranked on instructions"), "{text}");
        assert_eq!(json["measure"], "instructions");
        for row in json["rows"].as_array().unwrap() {
            let median = counted[row["label"].as_str().unwrap()][side]["median"]
                .as_f64()
                .unwrap();
            assert_eq!(row["cost"].as_f64().unwrap(), median, "{row}");
        }
    }
    // On time when asked.
    let (text, json) = recommend(&["--measure", "time"]);
    assert!(text.contains("server CPU µs"), "{text}");
    assert_eq!(json["measure"], "time");
    // A run that counted nothing cannot be ranked on counts.
    handshake(&[
        "--backend",
        "mock",
        "--tls",
        "1.3",
        "--group",
        "x25519",
        "--cert",
        "ecdsa_p256",
        "--runs",
        "3",
        "--warmup",
        "0",
        "--db",
        db_text,
    ])
    .expect_code(0);
    let refused = tlslab(&["recommend", "--db", db_text, "--measure", "instructions"]);
    refused.expect_code(2);
    assert!(
        refused.stderr().contains("counted no instructions"),
        "{}",
        refused.stderr()
    );
    let (text, _) = recommend(&[]);
    assert!(text.contains("Ranked on time"), "{text}");
}

#[test]
fn the_apache_study_shows_a_counted_server_handshake_beside_perfs_categories() {
    if skip_without_valgrind(
        "the_apache_study_shows_a_counted_server_handshake_beside_perfs_categories",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let json = dir.path().join("load.json");
    let certs = cert_dir();
    let load = |extra: &[&str]| {
        let mut args = vec![
            "load",
            "--preset",
            "apache-study",
            "--rate",
            "20",
            "--ramp",
            "0",
            "--duration",
            "1",
            "--clients",
            "2",
            "--workers",
            "1",
            "--quiet",
            "--cert-dir",
            certs.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        tlslab(&args)
    };
    let run = load(&[
        "--measure",
        "time,instructions",
        "--db",
        db.to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
    ]);
    run.expect_code(0);
    let shown = run.stdout();
    assert!(shown.contains("handshake M instr (counted)"), "{shown}");
    let counted = &json_of(&json)["counted_server_handshake"];
    let total = counted["server_instructions"].as_f64().unwrap();
    // A TLS 1.2 RSA-2048 server handshake: millions of instructions.
    assert!((1e6..1e8).contains(&total), "{counted}");
    let categories = counted["categories"].as_array().unwrap();
    assert!(categories.len() >= 5, "{counted}");
    let sum: f64 = categories
        .iter()
        .map(|c| c["instructions"].as_f64().unwrap())
        .sum();
    assert!((sum - total).abs() <= total * 0.01, "{sum} against {total}");
    // The RSA private-key operation is most of the server's handshake.
    let largest = categories
        .iter()
        .max_by(|a, b| {
            let n = |c: &serde_json::Value| c["instructions"].as_f64().unwrap();
            n(a).total_cmp(&n(b))
        })
        .unwrap();
    assert_eq!(largest["category"], "public key", "{counted}");
    assert!(has_row(&shown, &["public key", "%"]), "{shown}");
    // The stored run shows the same table.
    let report = tlslab(&["report", "--db", db.to_str().unwrap()]);
    report.expect_code(0);
    let public_key = |text: &str| {
        text.lines()
            .find(|l| l.starts_with("public key"))
            .map(String::from)
    };
    assert_eq!(public_key(&report.stdout()), public_key(&shown));

    // Instructions come beside time; memory is not a load's; a --target
    // server's library is not known.
    for refused in [
        load(&["--measure", "instructions", "--no-db"]),
        load(&["--measure", "time,memory", "--no-db"]),
        tlslab(&[
            "load",
            "--target",
            "127.0.0.1:9",
            "--measure",
            "time,instructions",
            "--no-db",
        ]),
    ] {
        refused.expect_code(2);
    }
}
