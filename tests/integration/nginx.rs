//! What is nginx's own in handshakes against it (Debian's package; required
//! in CI): the rows its OpenSSL can and cannot serve (DHE, an ECDSA
//! certificate with DHE), each resumption mode and mutual TLS configured on
//! it, every nginx tlslab started gone when it exits. What every server
//! does (start, stop, signals, a row, a load) is in [`crate::servers`].

use std::path::Path;
use std::process::Command;

use crate::util::{cert_dir, nginx_lock, skip_without_nginx, Run};

/// nginx processes started by tlslab (their prefix is a tlslab-nginx- directory).
/// tlslab run with its temporary directory (where it puts nginx's prefix)
/// in `tmp`, so that this test's nginx processes can be told from those of
/// other runs on the same machine.
fn tlslab_in(tmp: &Path, args: &[&str]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args(args)
        .env("TMPDIR", tmp)
        .env_remove("COLUMNS")
        .output()
        .expect("the tlslab binary runs");
    Run {
        output,
        command: format!("tlslab {}", args.join(" ")),
    }
}

/// nginx processes whose prefix is under `tmp`.
fn our_nginx_processes(tmp: &Path) -> Vec<String> {
    let tmp = tmp.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains("nginx") && cmdline.contains(&tmp) {
            found.push(cmdline);
        }
    }
    found
}

#[test]
fn the_matrix_runs_against_nginx_and_stops_it() {
    let _one = nginx_lock();
    if skip_without_nginx("the_matrix_runs_against_nginx_and_stops_it") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let json = dir.path().join("nginx.json");
    tlslab_in(
        tmp.path(),
        &[
            "handshake",
            "--server",
            "nginx",
            "--tls",
            "1.2,1.3",
            "--group",
            "x25519,dhe2048",
            "--cert",
            "ecdsa_p256,rsa2048",
            "--runs",
            "3",
            "--warmup",
            "0",
            "--no-db",
            "-q",
            "--cert-dir",
            cert_dir().to_str().unwrap(),
            "--export-json",
            json.to_str().unwrap(),
        ],
    )
    .expect_code(0);
    let run: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let rows = run["rows"].as_array().unwrap();
    let row = |label: &str| {
        rows.iter()
            .find(|r| r["label"] == label)
            .unwrap_or_else(|| panic!("no row {label}"))
    };
    for label in [
        "handshake_1.2_x25519_ecdsa_p256_aes128gcm",
        "handshake_1.2_dhe2048_rsa2048_aes128gcm",
        "handshake_1.3_x25519_rsa2048_aes128gcm",
    ] {
        let measured = row(label);
        assert_eq!(measured["status"], "measured", "{measured}");
        assert_eq!(measured["backend"], "nginx");
        assert_eq!(measured["sample_count"], 3);
        assert!(measured["server_cpu_us"]["median"].as_f64().unwrap() > 0.0);
        assert!(measured["client_cpu_us"]["median"].as_f64().unwrap() > 0.0);
    }
    assert_eq!(
        row("handshake_1.2_x25519_ecdsa_p256_aes128gcm")["negotiated"]["suite"],
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"
    );
    assert_eq!(
        row("handshake_1.2_dhe2048_ecdsa_p256_aes128gcm")["status"],
        "unsupported"
    );
    assert!(run["libraries"][0]["version"]
        .as_str()
        .unwrap()
        .contains("on OpenSSL"));
    assert_eq!(our_nginx_processes(tmp.path()), Vec::<String>::new());
}

/// Resumed and mutual-TLS rows against nginx: each mode configured on
/// nginx as in process, every resumed sample verified as resumed, every
/// mutual row measured with nginx requiring the client's certificate.
#[test]
fn nginx_resumes_sessions_and_requires_client_certificates() {
    let _one = nginx_lock();
    if skip_without_nginx("nginx_resumes_sessions_and_requires_client_certificates") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let json = dir.path().join("nginx.json");
    tlslab_in(
        tmp.path(),
        &[
            "handshake",
            "--server",
            "nginx",
            "--tls",
            "1.2,1.3",
            "--group",
            "x25519",
            "--cert",
            "ecdsa_p256",
            "--resumption",
            "off,session_id,ticket,psk",
            "--mutual",
            "both",
            "--runs",
            "3",
            "--warmup",
            "0",
            "--no-db",
            "-q",
            "--cert-dir",
            cert_dir().to_str().unwrap(),
            "--export-json",
            json.to_str().unwrap(),
        ],
    )
    .expect_code(0);
    let run: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let rows = run["rows"].as_array().unwrap();
    let measured: Vec<&serde_json::Value> =
        rows.iter().filter(|r| r["status"] == "measured").collect();
    // TLS 1.2: off, session_id, ticket; TLS 1.3: off, psk; each with and without mTLS.
    assert_eq!(measured.len(), 10, "{rows:#?}");
    for row in &measured {
        let label = row["label"].as_str().unwrap();
        let resumed = label.contains("_resume_");
        assert_eq!(row["negotiated"]["resumed"], resumed, "{label}");
        assert_eq!(row["sample_count"], 3, "{label}");
        assert!(row["server_cpu_us"]["median"].as_f64().unwrap() > 0.0);
    }
    for label in [
        "handshake_1.2_x25519_ecdsa_p256_aes128gcm_resume_session_id_mutual",
        "handshake_1.3_x25519_ecdsa_p256_aes128gcm_resume_psk",
        "handshake_1.3_x25519_ecdsa_p256_aes128gcm_mutual",
    ] {
        assert!(
            measured.iter().any(|r| r["label"] == label),
            "no measured row {label}"
        );
    }
    assert_eq!(our_nginx_processes(tmp.path()), Vec::<String>::new());
}
