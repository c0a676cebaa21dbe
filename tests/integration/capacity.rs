//! `tlslab handshake --capacity` and `load --threads`: a tiny capacity run
//! on the mock backend through the store, the exports, `report` and
//! `merge`; bad thread counts and options that make no sense with it.

use crate::util::{cert_dir, tlslab};

/// The JSON export's steps of the first measured cell: (threads,
/// handshakes/s, modelled handshakes/s).
fn steps(json: &serde_json::Value) -> Vec<(u64, f64, f64)> {
    let cell = json["cells"]
        .as_array()
        .expect("a cells array")
        .iter()
        .find(|c| c["status"] == "measured")
        .expect("a measured cell");
    cell["steps"]
        .as_array()
        .expect("a steps array")
        .iter()
        .map(|s| {
            (
                s["threads"].as_u64().unwrap(),
                s["handshakes_per_s"].as_f64().unwrap(),
                s["modelled_capacity_per_s"].as_f64().unwrap_or(0.0),
            )
        })
        .collect()
}

#[test]
fn a_tiny_capacity_run_has_a_line_per_thread_count_beside_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("capacity.sqlite");
    let json = dir.path().join("capacity.json");
    let csv = dir.path().join("capacity.csv");
    let run = tlslab(&[
        "handshake",
        "--capacity",
        "--backend",
        "mock",
        "--tls",
        "1.3",
        "--group",
        "x25519,x448",
        "--cert",
        "ecdsa_p256",
        "--threads",
        "2",
        "--max-time",
        "0.2",
        "--warmup",
        "0",
        "-q",
        "--cert-dir",
        cert_dir().to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
        "--export-csv",
        csv.to_str().unwrap(),
    ]);
    run.expect_code(0);
    let table = run.stdout();
    assert!(table.contains("handshakes/s measured"), "{table}");
    assert!(table.contains("model × threads handshakes/s"), "{table}");
    assert!(
        table.contains("unsupported: mock has no x448 key exchange"),
        "{table}"
    );

    let exported: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let measured = steps(&exported);
    assert_eq!(
        measured.iter().map(|s| s.0).collect::<Vec<_>>(),
        [1, 2],
        "{exported:#}"
    );
    for (threads, rate, modelled) in &measured {
        assert!(*rate > 0.0, "{threads} threads: {exported:#}");
        assert!(*modelled > 0.0, "{threads} threads: {exported:#}");
    }
    // The model for two cores is twice the model for one.
    assert!((measured[1].2 / measured[0].2 - 2.0).abs() < 1e-9);
    // The mock's server spends 230-231 µs of CPU per handshake of this row:
    // the capacity it implies on one core is about 4340 handshakes/s.
    let one = &exported["cells"][0]["steps"][0];
    let capacity = one["server_capacity_per_s"].as_f64().unwrap();
    assert!((4_320.0..4_350.0).contains(&capacity), "{one}");

    // A header, two measured lines and the unsupported row.
    let lines = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(lines.lines().count(), 4, "{lines}");

    // Stored: `report` shows the run again with its chart, and `merge`
    // carries it over.
    let charts = dir.path().join("charts");
    let shown = tlslab(&[
        "report",
        "--db",
        db.to_str().unwrap(),
        "--plot",
        charts.to_str().unwrap(),
    ]);
    shown.expect_code(0);
    assert!(
        shown.stdout().contains("capacity run 1"),
        "{}",
        shown.stdout()
    );
    let svg = std::fs::read_to_string(charts.join("capacity.svg")).unwrap();
    assert!(svg.contains("2 threads"), "{svg}");
    let merged = dir.path().join("merged.sqlite");
    tlslab(&["merge", merged.to_str().unwrap(), db.to_str().unwrap()]).expect_code(0);
    let again = dir.path().join("again.json");
    tlslab(&[
        "report",
        "--db",
        merged.to_str().unwrap(),
        "--export-json",
        again.to_str().unwrap(),
    ])
    .expect_code(0);
    let reread: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&again).unwrap()).unwrap();
    assert_eq!(reread["cells"], exported["cells"]);
}

#[test]
fn bad_thread_counts_and_capacity_options_are_usage_errors() {
    for (args, expected) in [
        (
            vec!["handshake", "--capacity", "--threads", "0"],
            "for '--threads <N>': must be at least 1",
        ),
        (vec!["handshake", "--threads", "2"], "--capacity"),
        (
            vec!["handshake", "--capacity", "--server", "nginx"],
            "--server",
        ),
        (
            vec!["handshake", "--capacity", "--max-time", "0"],
            "--max-time",
        ),
        (
            vec!["load", "--server", "embedded", "--threads", "0"],
            "for '--threads <N>': must be at least 1",
        ),
        (vec!["load", "--threads", "2"], "add --server embedded"),
    ] {
        let run = tlslab(&args);
        run.expect_code(2);
        assert!(
            run.stderr().contains(expected),
            "{args:?}: {}",
            run.stderr()
        );
    }
}

#[test]
fn max_total_time_stops_a_capacity_run_after_the_step_it_is_in() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("capacity.json");
    let run = tlslab(&[
        "handshake",
        "--capacity",
        "--backend",
        "mock",
        "--group",
        "x25519,p256",
        "--cert",
        "ecdsa_p256",
        "--threads",
        "2",
        "--max-time",
        "0.1",
        "--warmup",
        "0",
        "--max-total-time",
        "0.05",
        "-q",
        "--no-db",
        "--cert-dir",
        cert_dir().to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
    ]);
    run.expect_code(0);
    assert!(
        run.stdout()
            .contains("--max-total-time ran out: the last row stopped at the thread count it had reached, and 1 row(s) did not run."),
        "{}",
        run.stdout()
    );
    let exported: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(steps(&exported).len(), 1, "{exported:#}");
    assert_eq!(exported["cells"].as_array().unwrap().len(), 1);
}

/// Issue 18 item 14: with more threads than cores, "server capacity" was
/// the threads over the server CPU per handshake, as if each thread had a
/// core of its own (55,578 handshakes/s on 2 cores).
#[test]
fn capacity_beyond_the_cores_counts_the_cores() {
    let cores = tlslab::host::HostInfo::current().cores;
    let threads = (cores + 1).to_string();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("capacity.json");
    let run = tlslab(&[
        "handshake",
        "--capacity",
        "--backend",
        "mock",
        "--tls",
        "1.3",
        "--group",
        "x25519",
        "--cert",
        "ecdsa_p256",
        "--threads",
        &threads,
        "--max-time",
        "0.08",
        "--warmup",
        "0",
        "-q",
        "--no-db",
        "--cert-dir",
        cert_dir().to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
    ]);
    run.expect_code(0);
    let exported: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let cell = &exported["cells"][0];
    let steps = cell["steps"].as_array().unwrap();
    assert_eq!(steps.len(), cores + 1, "{exported:#}");
    for step in steps {
        let threads = step["threads"].as_u64().unwrap() as usize;
        let counted = threads.min(cores);
        assert_eq!(step["capacity_cores"], counted, "{step}");
        let cpu_ns = step["server_cpu_ns_per_handshake"].as_f64().unwrap();
        let capacity = step["server_capacity_per_s"].as_f64().unwrap();
        assert!(
            (capacity - counted as f64 * 1e9 / cpu_ns).abs() < 1e-6 * capacity,
            "{step}"
        );
        let per_core = cell["modelled_capacity_per_core"].as_f64().unwrap();
        let modelled = step["modelled_capacity_per_s"].as_f64().unwrap();
        assert!((modelled - counted as f64 * per_core).abs() < 1e-6 * modelled);
    }
    let note = format!(
        "{} threads on {cores} cores: the capacity counts {cores} cores",
        cores + 1
    );
    assert!(run.stdout().contains(&note), "{}", run.stdout());
}
