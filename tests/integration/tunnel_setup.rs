//! `tlslab tunnel --setup` (issue 25 item 2): each engine's connection
//! set-up in a table of its own, stored with the run and shown by
//! `report` — WireGuard's handshake in process (always), OpenVPN's TLS
//! mode (a new tunnel and a renegotiation) and its static-key start-up
//! through real processes (as root with openvpn, else a skip line), and an
//! engine without one saying why.

use tlslab::scenario::names::Named;
use tlslab::scenario::tunnel::EngineId;

use crate::each::for_each_engine;
use crate::tunnel::{assert_nothing_left, tlslab_in};
use crate::util::{has_row, skip_without, tlslab};

/// The set-up row of an exported run of an engine and kind.
fn setup_row<'a>(json: &'a serde_json::Value, engine: &str, kind: &str) -> &'a serde_json::Value {
    json["setup"]
        .as_array()
        .unwrap_or_else(|| panic!("no set-up rows: {json}"))
        .iter()
        .find(|row| row["engine"] == engine && row["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} set-up row for {engine}: {json}"))
}

#[test]
fn the_set_up_table_has_wireguards_handshake_per_side_and_says_why_inprocess_has_none() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let json_path = dir.path().join("out.json");
    let run = tlslab(&[
        "tunnel",
        "--engine",
        "wireguard,inprocess",
        "--cipher",
        "chacha20-poly1305",
        "--no-baseline-row",
        "--setup",
        "--max-time",
        "0",
        "--min-samples",
        "3",
        "--warmup",
        "0",
        "-q",
        "--db",
        db.to_str().unwrap(),
        "--export-json",
        json_path.to_str().unwrap(),
    ]);
    run.expect_code(0);
    let out = run.stdout();
    assert!(out.contains("Connection set-up"), "{out}");
    assert!(
        has_row(
            &out,
            &["wireguard", "connect", "276", "92", "3 / 1", "in process"]
        ),
        "{out}"
    );
    assert!(has_row(&out, &["inprocess", "no control channel"]), "{out}");

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let wireguard = setup_row(&json, "wireguard", "connect");
    assert_eq!(wireguard["status"], "measured", "{wireguard}");
    assert!(
        wireguard["sample_count"].as_u64().unwrap() >= 3,
        "{wireguard}"
    );
    for side in ["initiator_cpu_us", "responder_cpu_us"] {
        assert!(
            wireguard[side]["median"].as_f64().unwrap() > 0.0,
            "{side}: {wireguard}"
        );
    }
    // Initiation 148 + keepalive 32 + first data 64 + 32; response 92.
    assert_eq!(wireguard["bytes_to_responder"], 276.0, "{wireguard}");
    assert_eq!(wireguard["bytes_to_initiator"], 92.0, "{wireguard}");
    let inprocess = setup_row(&json, "inprocess", "connect");
    assert_eq!(inprocess["status"], "unsupported", "{inprocess}");

    // Stored with the run: `report` shows the same table.
    let report = tlslab(&["report", "--db", db.to_str().unwrap()]);
    report.expect_code(0);
    let shown = report.stdout();
    assert!(
        has_row(&shown, &["wireguard", "276", "92", "3 / 1"]),
        "{shown}"
    );
    assert!(
        has_row(&shown, &["inprocess", "no control channel"]),
        "{shown}"
    );
}

#[test]
fn openvpn_tls_set_up_is_whole_processes_beside_the_static_key_start_up() {
    if skip_without(
        EngineId::Openvpn.open().preflight().err(),
        "openvpn_tls_set_up_is_whole_processes_beside_the_static_key_start_up",
        "run as root; apt-get install openvpn iproute2",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let json_path = dir.path().join("out.json");
    let (run, pid) = tlslab_in(
        tmp.path(),
        &[
            "tunnel",
            "--engine",
            "openvpn,openvpn-tls",
            "--cipher",
            "aes-128-gcm",
            "--no-baseline-row",
            "--setup",
            "--transfer-mb",
            "0.2",
            "--max-time",
            "0",
            "--min-samples",
            "2",
            "--warmup",
            "0",
            "-q",
            "--no-db",
            "--export-json",
            json_path.to_str().unwrap(),
        ],
    );
    run.expect_code(0);
    assert_nothing_left(tmp.path(), pid, "openvpn,openvpn-tls --setup");
    let out = run.stdout();
    assert!(has_row(&out, &["openvpn-tls", "whole processes"]), "{out}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let tls = setup_row(&json, "openvpn-tls", "connect");
    let static_key = setup_row(&json, "openvpn", "connect");
    let renegotiation = setup_row(&json, "openvpn-tls", "renegotiate");
    for row in [tls, static_key, renegotiation] {
        assert_eq!(row["status"], "measured", "{row}");
        assert_eq!(row["sample_count"], 2, "{row}");
        for side in ["initiator_cpu_us", "responder_cpu_us"] {
            assert!(row[side]["median"].as_f64().unwrap() > 0.0, "{side}: {row}");
        }
    }
    // The TLS handshake sends certificates both ways; a static key sends
    // next to nothing before the tunnel is up.
    for way in ["bytes_to_responder", "bytes_to_initiator"] {
        let tls_bytes = tls[way].as_f64().unwrap();
        assert!(tls_bytes > 1000.0, "{way}: {tls}");
        assert!(
            tls_bytes > 2.0 * static_key[way].as_f64().unwrap(),
            "{way}: {json}"
        );
    }
    assert!(
        tls["covers"].as_str().unwrap().contains("TLS handshake"),
        "{tls}"
    );
    assert!(
        static_key["covers"]
            .as_str()
            .unwrap()
            .contains("no handshake"),
        "{static_key}"
    );
}

for_each_engine! {
    /// Every registered engine's set-up, of each kind it measures: measured
    /// with the samples asked for, or unsupported with a reason, never failed.
    fn every_engines_set_up_is_measured_or_says_why(engine: &'static dyn TunnelEngine) {
        let id = engine.id().id();
        let dir = tempfile::tempdir().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let json_path = dir.path().join("out.json");
        let (run, pid) = tlslab_in(
            tmp.path(),
            &[
                "tunnel",
                "--engine",
                id,
                "--cipher",
                "chacha20-poly1305",
                "--no-baseline-row",
                "--setup",
                "--transfer-mb",
                "0.2",
                "--runs",
                "2",
                "--warmup",
                "0",
                "-q",
                "--no-db",
                "--export-json",
                json_path.to_str().unwrap(),
            ],
        );
        run.expect_code(0);
        assert_nothing_left(tmp.path(), pid, id);
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
        let rows = json["setup"].as_array().unwrap();
        assert_eq!(rows.len(), engine.setup_kinds().len(), "{id}: {json}");
        for kind in engine.setup_kinds() {
            let row = setup_row(&json, id, kind.id());
            match row["status"].as_str().unwrap() {
                "measured" => {
                    assert_eq!(row["sample_count"], 2, "{id}: {row}");
                    assert!(
                        row["initiator_cpu_us"]["median"].as_f64().unwrap() > 0.0,
                        "{id}: {row}"
                    );
                    assert!(!row["covers"].as_str().unwrap().is_empty(), "{id}: {row}");
                }
                "unsupported" => {
                    assert!(!row["reason"].as_str().unwrap().is_empty(), "{id}: {row}")
                }
                status => panic!("{id}: set-up {status}: {row}"),
            }
        }
    }
}

/// Under valgrind (`--measure instructions`) WireGuard's set-up is
/// counted per side, the same count every sample, stored and shown again
/// by `report`.
#[test]
fn wireguards_set_up_is_counted_per_side_under_valgrind() {
    if crate::counted::skip_without_valgrind("wireguards_set_up_is_counted_per_side_under_valgrind")
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let json_path = dir.path().join("out.json");
    let run = tlslab(&[
        "tunnel",
        "--engine",
        "wireguard",
        "--cipher",
        "chacha20-poly1305",
        "--no-baseline-row",
        "--setup",
        "--measure",
        "time,instructions",
        "--runs",
        "2",
        "--warmup",
        "0",
        "-q",
        "--db",
        db.to_str().unwrap(),
        "--export-json",
        json_path.to_str().unwrap(),
    ]);
    run.expect_code(0);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let counted = &setup_row(&json, "wireguard", "connect")["instructions"];
    assert_eq!(counted["status"], "measured", "{counted}");
    let samples = counted["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 2, "{counted}");
    for side in ["client", "server"] {
        let first = samples[0][side].as_f64().unwrap();
        // Four X25519 operations and more: well over a million.
        assert!(first > 1e6, "{side}: {counted}");
        let second = samples[1][side].as_f64().unwrap();
        assert!((first - second).abs() / first < 1e-3, "{side}: {counted}");
    }
    let shown = tlslab(&["report", "--db", db.to_str().unwrap()]);
    shown.expect_code(0);
    let median = counted["initiator"]["median"].as_f64().unwrap();
    let text = shown.stdout();
    assert!(
        has_row(&text, &["wireguard", "connect", &format!("{median:.0}")]),
        "{text}"
    );
}
