//! Ratios a user reads (issue 18, items 10 and 11): `report` shows a stored
//! run's ratios exactly as the run printed them, for every kind of run that
//! has ratios, whatever order its cells were stored in; and each backend's
//! rows are divided by that backend's own baseline row, never by another
//! library's.

use std::collections::BTreeMap;
use std::path::Path;

use rusqlite::Connection;
use serde_json::Value;

use crate::merge::path_text;
use crate::util::{cert_dir, has_row, tlslab};

/// Every figure of a JSON export that is a ratio or rests on a chosen row,
/// by its path in the document: ratios, baselines, scaling, what the model
/// explains, figures relative to the fastest.
fn ratios(value: &Value) -> BTreeMap<String, Value> {
    fn walk(value: &Value, path: String, found: &mut BTreeMap<String, Value>) {
        match value {
            Value::Object(map) => {
                for (key, value) in map {
                    let path = format!("{path}/{key}");
                    let relative = ["ratio", "baseline", "scaling", "explained", "relative"]
                        .iter()
                        .any(|word| key.contains(word));
                    if relative {
                        found.insert(path.clone(), value.clone());
                    }
                    walk(value, path, found);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, format!("{path}/{i}"), found);
                }
            }
            _ => {}
        }
    }
    let mut found = BTreeMap::new();
    walk(value, String::new(), &mut found);
    found
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Runs `args` storing into `db` and exporting JSON, then `report` of the
/// run it stored; returns both documents.
fn live_and_reported(dir: &Path, db: &Path, run_id: i64, args: &[&str]) -> (Value, Value) {
    let live = dir.join(format!("live-{run_id}.json"));
    let reported = dir.join(format!("reported-{run_id}.json"));
    let (db_text, live_text, cert_text) = (path_text(db), path_text(&live), path_text(&cert_dir()));
    let mut all = args.to_vec();
    all.extend_from_slice(&["-q", "--db", &db_text, "--export-json", &live_text]);
    if args[0] != "tunnel" {
        all.extend_from_slice(&["--cert-dir", &cert_text]);
    }
    tlslab(&all).expect_code(0);
    let run_text = run_id.to_string();
    tlslab(&[
        "report",
        "--db",
        &db_text,
        "--run",
        &run_text,
        "--export-json",
        &path_text(&reported),
    ])
    .expect_code(0);
    (read_json(&live), read_json(&reported))
}

/// Returns true if and only if some figure found is a number.
fn any_number(found: &BTreeMap<String, Value>) -> bool {
    fn number(value: &Value) -> bool {
        match value {
            Value::Number(_) => true,
            Value::Object(map) => map.values().any(number),
            Value::Array(items) => items.iter().any(number),
            _ => false,
        }
    }
    found.values().any(number)
}

/// Issue 18 item 10: every kind of run that shows ratios (handshake,
/// tunnel, bulk, cost and capacity runs) exports the same ratios live and
/// from the store. The handshake run samples adaptively, so its cells are
/// stored in the order they stop rather than the matrix's.
#[test]
fn report_exports_the_ratios_the_run_exported_for_every_kind() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let kinds: [&[&str]; 5] = [
        &[
            "handshake",
            "--backend",
            "mock",
            "--tls",
            "1.2,1.3",
            "--group",
            "x448,x25519,p256",
            "--precision",
            "5%",
            "--max-time",
            "0.05",
            "--min-samples",
            "3",
            "--warmup",
            "0",
        ],
        &[
            "tunnel",
            "--cipher",
            "aes-128-gcm,bf-cbc",
            "--digest",
            "sha1",
            "--runs",
            "3",
            "--warmup",
            "0",
        ],
        &[
            "bulk",
            "--backend",
            "mock",
            "--suite",
            "aes128gcm,chacha20poly1305",
            "--size",
            "64,1024",
            "--runs",
            "3",
            "--warmup",
            "0",
        ],
        &[
            "cost",
            "--backend",
            "mock",
            "--max-time",
            "0",
            "--min-samples",
            "3",
            "--warmup",
            "0",
        ],
        &[
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
            "2",
            "--max-time",
            "0.1",
            "--warmup",
            "0",
        ],
    ];
    for (i, args) in kinds.iter().enumerate() {
        let (live, reported) = live_and_reported(dir.path(), &db, i as i64 + 1, args);
        let (live, reported) = (ratios(&live), ratios(&reported));
        assert!(any_number(&live), "{args:?}: no ratio found in {live:?}");
        assert_eq!(live, reported, "{args:?}");
    }
}

/// Issue 18 item 10: a run without `--baseline` divides by the first row
/// measured in the matrix's order, but `report` took the first in the
/// store's order (the order cells finished in). Here the run's baseline
/// cell is moved to the end of the store, as a cell that finishes last is.
#[test]
fn report_keeps_the_runs_baseline_when_its_cell_was_stored_last() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let live = dir.path().join("live.json");
    tlslab(&[
        "handshake",
        "--backend",
        "mock",
        "--group",
        "x448,x25519,p256",
        "--cert",
        "rsa2048",
        "--runs",
        "3",
        "--warmup",
        "0",
        "-q",
        "--db",
        &path_text(&db),
        "--export-json",
        &path_text(&live),
        "--cert-dir",
        &path_text(&cert_dir()),
    ])
    .expect_code(0);
    let live = read_json(&live);
    // x448 is unsupported on the mock: the first measured row is x25519.
    let baseline = "handshake_1.3_x25519_rsa2048_aes128gcm";
    assert_eq!(live["baseline"], baseline);
    {
        let connection = Connection::open(&db).unwrap();
        let moved: i64 = connection
            .query_row(
                "SELECT id FROM cells WHERE scenario_id = ?1",
                [baseline],
                |row| row.get(0),
            )
            .unwrap();
        connection
            .execute_batch(&format!(
                "PRAGMA foreign_keys = OFF;
                 UPDATE cells SET id = (SELECT max(id) + 1 FROM cells) WHERE id = {moved};
                 UPDATE samples SET cell_id = (SELECT max(id) FROM cells) WHERE cell_id = {moved};"
            ))
            .unwrap();
    }
    let reported = dir.path().join("reported.json");
    let report = tlslab(&[
        "report",
        "--db",
        &path_text(&db),
        "--export-json",
        &path_text(&reported),
    ]);
    report.expect_code(0);
    let reported = read_json(&reported);
    assert_eq!(reported["baseline"], baseline);
    assert_eq!(ratios(&reported), ratios(&live));
    assert!(
        report.stdout().contains(&format!("relative to {baseline}")),
        "{}",
        report.stdout()
    );
}

/// Issue 18 item 11: rustls has no RSA key transport, and its rows were
/// divided by OpenSSL's RSA row without a word.
#[test]
fn a_backend_without_its_baseline_row_has_no_ratio_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let json = dir.path().join("run.json");
    let csv = dir.path().join("run.csv");
    let plots = dir.path().join("plots");
    let run = tlslab(&[
        "handshake",
        "--tls",
        "1.2",
        "--group",
        "rsa,p256",
        "--cert",
        "rsa2048",
        "--backend",
        "openssl,rustls-aws-lc",
        "--runs",
        "3",
        "--warmup",
        "0",
        "--db",
        &path_text(&db),
        "--export-json",
        &path_text(&json),
        "--export-csv",
        &path_text(&csv),
        "--plot",
        &path_text(&plots),
        "--cert-dir",
        &path_text(&cert_dir()),
    ]);
    run.expect_code(0);
    let note = "no baseline row on rustls-aws-lc";
    assert!(
        has_row(&run.stdout(), &["rustls-aws-lc", "ECDHE P-256", note]),
        "{}",
        run.stdout()
    );
    let rows = read_json(&json)["rows"].as_array().unwrap().clone();
    let row = |backend: &str, group: &str| {
        rows.iter()
            .find(|r| r["backend"] == backend && r["label"].as_str().unwrap().contains(group))
            .unwrap_or_else(|| panic!("no {backend} {group} row"))
            .clone()
    };
    let rustls = row("rustls-aws-lc", "_p256_");
    assert!(rustls["ratio_to_baseline"].is_null(), "{rustls}");
    assert_eq!(rustls["ratio_note"], note);
    let openssl = row("openssl", "_p256_");
    assert!(
        openssl["ratio_to_baseline"]["value"].is_number(),
        "{openssl}"
    );
    assert!(openssl.get("ratio_note").is_none(), "{openssl}");
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert!(
        csv.lines()
            .any(|line| line.contains("rustls-aws-lc") && line.contains(note)),
        "{csv}"
    );
    let chart = std::fs::read_to_string(plots.join("handshake_ratio.svg")).unwrap();
    assert!(chart.contains(note));

    // The stored run says the same.
    let report = tlslab(&["report", "--db", &path_text(&db)]);
    report.expect_code(0);
    assert!(
        has_row(&report.stdout(), &["rustls-aws-lc", "ECDHE P-256", note]),
        "{}",
        report.stdout()
    );
}
