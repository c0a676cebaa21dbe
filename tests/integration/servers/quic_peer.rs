//! A QUIC peer tlslab did not write (issue 24, item 5): tlslab's QUIC
//! client (quinn on rustls-aws-lc and on rustls-ring) completes handshakes
//! with Caddy's HTTP/3 (quic-go, Go's crypto/tls), started on loopback by
//! `handshake --server caddy --tls quic`. Each row is verified as every row
//! is (QUIC version 1, TLS 1.3's suite, group, signature scheme,
//! resumption) with the ALPN protocol Caddy speaks, `h3`, which tlslab's
//! own QUIC server never offers; both sides' CPU is measured (Caddy's from
//! its process): the wire is real QUIC. A client that has no QUIC for a
//! server elsewhere (OpenSSL's) and a server without QUIC give rows that
//! say why. Without caddy, a visible skip (a failure under `CI`). And over
//! the registry: every program that serves QUIC does so under its own
//! ALPN protocol, every other says why not.

use std::path::Path;

use serde_json::Value;
use tlslab::scenario::Named;
use tlslab::workload::server::{caddy, ServerOptions};

use super::{leftovers, tlslab_in};
use crate::each::for_each_server;
use crate::util::{cert_dir, nginx_lock, processes_mentioning, skip_without};

/// `handshake --server SERVERS --backend CLIENT --tls quic` over
/// `groups` x `certs` x `resumptions`, three samples a row, run in `tmp`;
/// the exported run.
fn quic_rows(
    tmp: &Path,
    servers: &str,
    client: &str,
    [groups, certs, resumptions]: [&str; 3],
) -> Value {
    let json = tmp.join(format!("{client}.json"));
    let cert_dir = cert_dir();
    tlslab_in(
        tmp,
        &[
            "handshake",
            "--server",
            servers,
            "--backend",
            client,
            "--tls",
            "quic",
            "--group",
            groups,
            "--cert",
            certs,
            "--resumption",
            resumptions,
            "--runs",
            "3",
            "--warmup",
            "0",
            "--no-db",
            "-q",
            "--cert-dir",
            cert_dir.to_str().unwrap(),
            "--export-json",
            json.to_str().unwrap(),
        ],
    )
    .expect_code(0);
    let run = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    std::fs::remove_file(&json).unwrap();
    run
}

#[test]
fn tlslabs_quic_client_completes_verified_handshakes_with_caddys_http3() {
    let _one = nginx_lock();
    let test = "tlslabs_quic_client_completes_verified_handshakes_with_caddys_http3";
    let missing = (caddy::DESCRIPTOR.missing)();
    if skip_without(missing, test, caddy::DESCRIPTOR.install) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    for client in ["rustls-aws-lc", "rustls-ring"] {
        let run = quic_rows(
            tmp.path(),
            "caddy",
            client,
            ["x25519,p256", "ecdsa_p256,rsa2048", "off,psk"],
        );
        let rows = run["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 8, "{client}: {rows:#?}");
        for row in rows {
            let label = row["label"].as_str().unwrap();
            assert_eq!(row["backend"], "caddy", "{label}");
            assert_eq!(row["status"], "measured", "{client} {label}: {row}");
            assert_eq!(row["sample_count"], 3, "{client} {label}");
            let negotiated = &row["negotiated"];
            assert_eq!(negotiated["version"], "QUIC", "{client} {label}");
            assert_eq!(negotiated["alpn"], "h3", "{client} {label}");
            assert_eq!(
                negotiated["suite"], "TLS_AES_128_GCM_SHA256",
                "{client} {label}"
            );
            let group = if label.contains("_x25519_") {
                "x25519"
            } else {
                "p256"
            };
            assert_eq!(negotiated["group"], group, "{client} {label}");
            let resumed = label.contains("_resume_psk");
            assert_eq!(negotiated["resumed"], resumed, "{client} {label}");
            let signature = negotiated["signature"].as_str();
            match (resumed, label.contains("_ecdsa_p256_")) {
                (true, _) => assert_eq!(signature, None, "{client} {label}"),
                (false, true) => {
                    assert_eq!(signature, Some("ecdsa_secp256r1_sha256"), "{label}")
                }
                (false, false) => assert!(
                    signature.is_some_and(|s| s.starts_with("rsa_pss_rsae_")),
                    "{client} {label}: {signature:?}"
                ),
            }
            for side in ["client_cpu_us", "server_cpu_us"] {
                assert!(
                    row[side]["median"].as_f64().unwrap() > 0.0,
                    "{client} {label} {side}: {row}"
                );
            }
        }
        let library = run["libraries"][0]["version"].as_str().unwrap();
        assert!(
            library.contains(&format!("QUIC client {client}")),
            "{client}: {library}"
        );
    }

    // OpenSSL's QUIC runs in process only; nginx serves no QUIC (or is
    // not installed here): rows that say why, the run still exits 0.
    let run = quic_rows(
        tmp.path(),
        "caddy,nginx",
        "openssl",
        ["x25519", "ecdsa_p256,rsa2048", "off"],
    );
    let rows = run["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{rows:#?}");
    for row in rows {
        assert_eq!(row["status"], "unsupported", "{row}");
        let reason = row["reason"].as_str().unwrap();
        if row["backend"] == "caddy" {
            assert!(reason.contains("openssl has no QUIC client"), "{reason}");
        } else {
            assert!(
                reason.contains("not QUIC") || reason.contains("not installed"),
                "{reason}"
            );
        }
    }
    assert_eq!(leftovers(tmp.path()), Vec::<String>::new());
    let tmp_text = tmp.path().to_str().unwrap();
    assert_eq!(processes_mentioning(tmp_text), Vec::<u32>::new());
}

for_each_server! {
    programs;

    /// Every registered program that serves QUIC (its `quic_alpn`) completes a
    /// verified QUIC handshake with tlslab's QUIC client under its own ALPN
    /// protocol, its CPU measured; every other says why its QUIC row cannot
    /// run. tlslab's own server (in process) runs QUIC as a backend does
    /// (quic.rs).
    fn every_server_serves_quic_to_tlslabs_client_or_says_why(
        descriptor: &'static ServerDescriptor
    ) {
        let _one = nginx_lock();
        let tmp = tempfile::tempdir().unwrap();
        let name = descriptor.id.id();
        let server = (descriptor.open)(&ServerOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e:#}"));
        let run = quic_rows(
            tmp.path(),
            name,
            "rustls-aws-lc",
            ["x25519", "ecdsa_p256", "off"],
        );
        let rows = run["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 1, "{name}: {rows:#?}");
        let row = &rows[0];
        match server.quic_alpn() {
            Some(alpn) => {
                assert_eq!(row["status"], "measured", "{name}: {row}");
                assert_eq!(row["negotiated"]["version"], "QUIC", "{name}");
                assert_eq!(row["negotiated"]["alpn"], alpn, "{name}");
                assert!(
                    row["server_cpu_us"]["median"].as_f64().unwrap() > 0.0,
                    "{name}: {row}"
                );
            }
            None => {
                assert_eq!(row["status"], "unsupported", "{name}: {row}");
                let reason = row["reason"].as_str().unwrap();
                assert!(reason.contains("QUIC"), "{name}: {reason}");
            }
        }

        assert_eq!(leftovers(tmp.path()), Vec::<String>::new());
        let tmp_text = tmp.path().to_str().unwrap();
        assert_eq!(processes_mentioning(tmp_text), Vec::<u32>::new());
    }
}
