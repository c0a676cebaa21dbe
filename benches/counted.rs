//! Are tlslab's counted instructions the library's own? For one OpenSSL and
//! one rustls row (TLS 1.3, X25519, ECDSA P-256 chain of 3), this counts
//! with callgrind the whole process of the overhead bench's plain loop
//! (the library driven directly over a byte pipe, nothing else) for 10 and
//! for 60 handshakes: the difference over 50 is one handshake's
//! instructions, setup and exit excluded. Then `tlslab handshake --measure
//! instructions` counts the same row, each side apart. It prints both and
//! their ratio (tlslab's client + server over the plain loop's handshake).
//!
//! Run: `cargo bench --bench counted` (needs valgrind).

use std::path::Path;
use std::process::Command;

use tlslab::certs::CertCache;
use tlslab::scenario::CertKind;

mod common;
use common::openssl_contexts;
use common::plain::{openssl_plain_handshake, rustls_configs, rustls_plain_handshake};

/// The rows: tlslab's backend id.
const BACKENDS: [&str; 2] = ["openssl", "rustls-aws-lc"];

/// Handshakes of the short and the long plain run.
const SHORT: usize = 10;
const LONG: usize = 60;

/// The plain loop itself, when the bench runs itself under callgrind.
fn plain(backend: &str, handshakes: usize, cert_dir: &Path) {
    let credentials = CertCache::new(cert_dir)
        .get(CertKind::EcdsaP256, 3)
        .expect("the test chain");
    match backend {
        "openssl" => {
            let (client, server) = openssl_contexts(&credentials);
            for _ in 0..handshakes {
                openssl_plain_handshake(&client, &server);
            }
        }
        _ => {
            let (client, server) =
                rustls_configs(rustls::crypto::aws_lc_rs::default_provider(), &credentials);
            for _ in 0..handshakes {
                rustls_plain_handshake(&client, &server);
            }
        }
    }
}

/// Every instruction of a plain run of `handshakes`, counted by callgrind.
fn whole_process(backend: &str, handshakes: usize, cert_dir: &Path) -> u64 {
    let scratch = tempfile::tempdir().unwrap();
    let profile = scratch.path().join("profile");
    let status = Command::new("valgrind")
        .args(["--tool=callgrind", "--quiet"])
        .arg(format!("--callgrind-out-file={}", profile.display()))
        .arg(std::env::current_exe().unwrap())
        .args(["plain", backend, &handshakes.to_string()])
        .arg(cert_dir)
        .status()
        .expect("valgrind runs (apt-get install valgrind)");
    assert!(status.success(), "the plain loop under callgrind failed");
    let text = std::fs::read_to_string(&profile).unwrap();
    text.lines()
        .find_map(|l| {
            l.strip_prefix("totals:")
                .or_else(|| l.strip_prefix("summary:"))
        })
        .and_then(|n| n.trim().parse().ok())
        .expect("a total in the profile")
}

/// tlslab's client and server instructions per handshake (medians).
fn counted(backend: &str, cert_dir: &Path) -> (f64, f64) {
    let scratch = tempfile::tempdir().unwrap();
    let json = scratch.path().join("out.json");
    let status = Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args([
            "handshake",
            "--backend",
            backend,
            "--tls",
            "1.3",
            "--group",
            "x25519",
            "--cert",
            "ecdsa_p256",
            "--measure",
            "instructions",
            "--no-db",
            "--quiet",
        ])
        .arg("--cert-dir")
        .arg(cert_dir)
        .arg("--export-json")
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "tlslab's counted run failed");
    let data: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let instructions = &data["rows"][0]["instructions"];
    let median = |side: &str| instructions[side]["median"].as_f64().unwrap();
    (median("client"), median("server"))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("plain") {
        plain(&args[1], args[2].parse().unwrap(), Path::new(&args[3]));
        return;
    }
    let cert_dir = CertCache::default_dir();
    println!(
        "{:<15} {:>14} {:>14} {:>14} {:>10}",
        "backend", "plain M/hs", "tlslab client", "tlslab server", "ratio"
    );
    for backend in BACKENDS {
        let short = whole_process(backend, SHORT, &cert_dir);
        let long = whole_process(backend, LONG, &cert_dir);
        let per_handshake = (long - short) as f64 / (LONG - SHORT) as f64;
        let (client, server) = counted(backend, &cert_dir);
        println!(
            "{backend:<15} {:>14.3} {:>14.3} {:>14.3} {:>10.4}",
            per_handshake / 1e6,
            client / 1e6,
            server / 1e6,
            (client + server) / per_handshake
        );
    }
}
