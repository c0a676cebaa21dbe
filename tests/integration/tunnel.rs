//! `tlslab tunnel`: the data channel round trip and tamper detection for
//! every cipher and digest, the command line with exports and the store, and
//! the real OpenVPN engine (as root with openvpn installed; required in CI).

use std::process::{Command, Stdio};

use tlslab::backend::openssl::data_channel::{self as channel, PacketError};
use tlslab::scenario::names::Named;
use tlslab::scenario::tunnel::{Cipher, CipherMode, Compression, Digest, Payload, TunnelScenario};
use tlslab::workload::tunnel::round_trip;

use crate::util::{has_row, tlslab};

fn scenario(cipher: Cipher, digest: Digest, compression: Compression) -> TunnelScenario {
    TunnelScenario {
        baseline: false,
        cipher,
        digest,
        compression,
        payload: Payload::Text,
        payload_bytes: 333,
    }
}

/// The only reasons a combination may be unsupported in this build.
fn expected_unsupported(scenario: &TunnelScenario) -> bool {
    (scenario.digest == Digest::Sha0 && scenario.cipher.mode() != CipherMode::Aead)
        || (scenario.compression == Compression::Lzo && !cfg!(feature = "lzo"))
}

#[test]
fn every_cipher_digest_and_compression_round_trips() {
    let mut measured = 0;
    for &cipher in Cipher::ALL {
        for &digest in Digest::ALL {
            for &compression in Compression::ALL {
                let scenario = scenario(cipher, digest, compression);
                match channel::unsupported_reason(&scenario) {
                    Some(reason) => assert!(
                        expected_unsupported(&scenario),
                        "{}: {reason}",
                        scenario.label()
                    ),
                    None => {
                        round_trip(&scenario, 3)
                            .unwrap_or_else(|e| panic!("{}: {e:#}", scenario.label()));
                        measured += 1;
                    }
                }
            }
        }
    }
    // Every cipher, every digest but SHA-0, with LZ4 and without.
    assert!(
        measured >= 20 * 12 * 2,
        "{measured} combinations round-tripped"
    );
    round_trip(&TunnelScenario::baseline(Payload::Zero, 1400), 3).unwrap();
}

#[test]
fn a_tampered_packet_fails_authentication_for_every_cipher_and_digest() {
    let mut checked = 0;
    for &cipher in Cipher::ALL {
        for &digest in Digest::ALL {
            let scenario = scenario(cipher, digest, Compression::Lz4);
            if channel::unsupported_reason(&scenario).is_some() {
                continue;
            }
            let authenticated = cipher.mode() == CipherMode::Aead || digest != Digest::None;
            if !authenticated {
                assert!(
                    scenario
                        .security_notes()
                        .iter()
                        .any(|n| n.contains("not authenticated")),
                    "{}",
                    scenario.label()
                );
                continue;
            }
            let (mut sender, mut receiver) = channel::pair(&scenario).unwrap();
            let payload = Payload::Text.bytes(0, 333);
            let mut packet = Vec::new();
            for position in [0, 1, 17, 40, usize::MAX] {
                sender.seal(&payload, &mut packet).unwrap();
                let index = position.min(packet.len() - 1);
                packet[index] ^= 0x01;
                assert_eq!(
                    receiver.open(&packet),
                    Err(PacketError::Authentication),
                    "{} with byte {index} flipped",
                    scenario.label()
                );
                // The untouched packet still opens: the failure was the tampering.
                packet[index] ^= 0x01;
                receiver.open(&packet).unwrap();
                assert_eq!(receiver.payload(), payload.as_slice());
            }
            checked += 1;
        }
    }
    assert!(checked >= 16 * 11 + 3, "{checked} pairs checked");
}

#[test]
fn unknown_tunnel_names_list_the_valid_ones() {
    let run = tlslab(&["tunnel", "--no-db", "--cipher", "aes-512-cbc"]);
    run.expect_code(2);
    let stderr = run.stderr();
    assert!(stderr.contains("unknown cipher 'aes-512-cbc'"), "{stderr}");
    assert!(
        stderr.contains("bf-cbc") && stderr.contains("chacha20-poly1305"),
        "{stderr}"
    );

    let run = tlslab(&["tunnel", "--no-db", "--digest", "sha-1024"]);
    run.expect_code(2);
    assert!(run.stderr().contains("whirlpool"), "{}", run.stderr());
    tlslab(&["tunnel", "--no-db", "--size", "0"]).expect_code(2);
    tlslab(&["tunnel", "--no-db", "--preset", "nope"]).expect_code(2);
}

#[test]
fn a_tiny_matrix_runs_exports_and_reports_from_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let run = tlslab(&[
        "tunnel",
        "--cipher",
        "aes-128-gcm,bf-cbc,aes-128-cbc",
        "--digest",
        "sha1,RSA-SHA1,md5",
        "--compression",
        "none,lz4",
        "--payload",
        "random,zero",
        "--size",
        "200",
        "--max-time",
        "0",
        "--min-samples",
        "3",
        "--warmup",
        "0",
        "-q",
        "--db",
        &path("db.sqlite"),
        "--export-json",
        &path("out.json"),
        "--export-csv",
        &path("out.csv"),
        "--export-markdown",
        &path("out.md"),
    ]);
    run.expect_code(0);
    let out = run.stdout();
    for heading in [
        "1. Effect of compression",
        "2. Ciphers normalised to the fastest",
        "3. Digests normalised to the fastest",
        "4. Ranking of every combination",
        "5. No tunnel against the tunnels",
    ] {
        assert!(out.contains(heading), "missing {heading}: {out}");
    }
    assert!(out.contains("SWEET32"), "{out}");

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path("out.json")).unwrap()).unwrap();
    let rows = json["rows"].as_array().unwrap();
    // Per payload: baseline + gcm x 2 compressions + 2 CBC x 2 digests x 2 compressions.
    assert_eq!(rows.len(), 2 * (1 + 2 + 8), "{json}");
    assert!(rows.iter().all(|r| r["status"] == "measured"), "{json}");
    assert!(rows
        .iter()
        .any(|r| r["label"] == "tunnel_bf-cbc_sha1_lz4_zero_200"));
    assert_eq!(json["compression_effect"].as_array().unwrap().len(), 2);
    let csv = std::fs::read_to_string(path("out.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + rows.len());
    let markdown = std::fs::read_to_string(path("out.md")).unwrap();
    assert!(markdown.contains("## 4. Ranking"), "{markdown}");

    let report = tlslab(&["report", "--db", &path("db.sqlite")]);
    report.expect_code(0);
    let shown = report.stdout();
    assert!(shown.contains("(complete)"), "{shown}");
    assert!(
        has_row(&shown, &["bf-cbc", "sha1", "lz4", "zero", "200"]),
        "{shown}"
    );
}

/// Ctrl-C stops the run, keeps every cell with the samples it had and
/// marks the run incomplete (a real SIGINT, sent after the fourth round).
#[test]
fn ctrl_c_keeps_finished_tunnel_cells() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let child = Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args([
            "tunnel",
            "--cipher",
            "aes-128-cbc,camellia-128-cbc,seed-cbc,cast5-cbc,des-cbc",
            "--digest",
            "sha256",
            "--no-baseline-row",
            "--runs",
            "1000",
            "--warmup",
            "0",
            "--db",
            db.to_str().unwrap(),
        ])
        .env("TLSLAB_TEST_SIGINT_AFTER_ROUNDS", "4")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");

    let report = tlslab(&["report", "--db", db.to_str().unwrap()]);
    report.expect_code(0);
    let out = report.stdout();
    assert!(out.contains("(incomplete)"), "{out}");
    assert!(has_row(&out, &["aes-128-cbc", "sha256"]), "{out}");
    assert!(has_row(&out, &["des-cbc", "sha256"]), "{out}");
    assert!(out.contains("interrupted"), "{out}");
}

/// Returns why the real engine cannot run here, if it cannot: what
/// `tunnel` checks before it starts one (root, openvpn, ip, /dev/net/tun).
pub(crate) fn openvpn_missing() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".to_string());
    }
    if Command::new("openvpn").arg("--version").output().is_err() {
        return Some("openvpn is not installed".to_string());
    }
    if Command::new("ip").arg("-V").output().is_err() {
        return Some("ip (iproute2) is not installed".to_string());
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Some("there is no /dev/net/tun".to_string());
    }
    None
}

/// tlslab's namespaces ("tlslab-PID-a") whose process is gone: left behind.
/// Namespaces of processes still running (another test run on the same
/// machine) are not this test's business.
fn leftover_namespaces() -> Vec<String> {
    let output = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| {
            let pid = name
                .strip_prefix("tlslab-")
                .and_then(|rest| rest.split('-').next());
            pid.is_some_and(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
        })
        .map(String::from)
        .collect()
}

#[test]
fn the_openvpn_engine_measures_real_tunnels_beside_the_in_process_rows() {
    if crate::util::skip_without(
        openvpn_missing(),
        "the_openvpn_engine_measures_real_tunnels_beside_the_in_process_rows",
        "run as root; apt-get install openvpn iproute2",
    ) {
        return;
    }
    let before = leftover_namespaces();
    let dir = tempfile::tempdir().unwrap();
    let json_path = dir.path().join("out.json");
    let run = tlslab(&[
        "tunnel",
        "--engine",
        "inprocess,openvpn",
        "--cipher",
        "aes-128-cbc,bf-cbc,aes-128-gcm",
        "--digest",
        "sha1",
        "--compression",
        "none,lz4",
        "--transfer-mb",
        "2",
        "--min-samples",
        "2",
        "--max-time",
        "0",
        "--warmup",
        "0",
        "--no-db",
        "-q",
        "--export-json",
        json_path.to_str().unwrap(),
    ]);
    run.expect_code(0);
    let out = run.stdout();
    assert!(out.contains("openvpn MB/s"), "{out}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let openvpn: Vec<&serde_json::Value> = json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["engine"] == "openvpn")
        .collect();
    let status = |label: &str| {
        openvpn
            .iter()
            .find(|r| r["label"] == label)
            .map(|r| r["status"].as_str().unwrap().to_string())
    };
    for label in [
        "tunnel_baseline_random_1400",
        "tunnel_aes-128-cbc_sha1_none_random_1400",
        "tunnel_bf-cbc_sha1_lz4_random_1400",
    ] {
        assert_eq!(
            status(label).as_deref(),
            Some("measured"),
            "{label}: {json}"
        );
    }
    assert_eq!(
        status("tunnel_aes-128-gcm_none_none_random_1400").as_deref(),
        Some("unsupported"),
        "static-key OpenVPN has no AEAD: {json}"
    );
    assert_eq!(leftover_namespaces(), before, "namespaces must be removed");
}

/// Issue 18 item 5: Ctrl-C while an OpenVPN row samples keeps the samples
/// it had (the row was dropped before): the run exits 130 and the row is
/// stored measured, with its samples.
#[test]
fn ctrl_c_keeps_the_samples_of_the_openvpn_row_under_way() {
    if crate::util::skip_without(
        openvpn_missing(),
        "ctrl_c_keeps_the_samples_of_the_openvpn_row_under_way",
        "run as root; apt-get install openvpn iproute2",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let output = Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args([
            "tunnel",
            "--engine",
            "openvpn",
            "--cipher",
            "aes-128-cbc",
            "--digest",
            "sha1",
            "--no-baseline-row",
            "--transfer-mb",
            "0.2",
            "--runs",
            "100000",
            "--warmup",
            "0",
            "-q",
            "--db",
            db.to_str().unwrap(),
        ])
        // Ctrl-C after the row's third round: three samples taken.
        .env("TLSLAB_TEST_SIGINT_AFTER_ROUNDS", "3")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    let connection = rusqlite::Connection::open(&db).unwrap();
    let (state, samples): (String, i64) = connection
        .query_row(
            "SELECT status, sample_count FROM tunnel_cells WHERE engine = 'openvpn'",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .expect("the OpenVPN row is stored");
    assert_eq!(state, "measured", "{stderr}");
    assert_eq!(samples, 3, "it kept the samples of its three rounds");
}
