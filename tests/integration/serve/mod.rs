//! The embedded HTTPS server on loopback at tiny rates: `load --server
//! embedded` on every backend (counts add up, bodies are checked, the
//! server's threads' CPU is known and, on rustls, the counted categories
//! fit inside it), `serve` answering a client of the test's own and
//! stopping by itself, and bad options refused.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use openssl::ssl::{SslConnector, SslMethod};
use openssl::x509::X509;
use tlslab::scenario::CertKind;
use tlslab::workload::nginx::page_bytes;

use crate::util::{cert_dir, certs, has_row, tlslab};

fn json_of(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// 20 requests of 20 kB in one second on the embedded server of `backend`.
fn a_small_load_on_the_embedded_server_adds_up(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("load.json");
    let run = tlslab(&[
        "load",
        "--no-db",
        "--server",
        "embedded",
        "--backend",
        backend,
        "--rate",
        "20",
        "--duration",
        "1",
        "--size",
        "20k",
        "--clients",
        "4",
        "--workers",
        "2",
        "-q",
        "--cert-dir",
        cert_dir().to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
    ]);
    run.expect_code(0);
    assert!(
        run.stdout().contains("The embedded server"),
        "{}",
        run.stdout()
    );
    let load = json_of(&json);
    let errors: u64 = load["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["count"].as_u64().unwrap())
        .sum();
    assert_eq!(load["offered"], 20);
    assert_eq!(load["sent"], 20);
    assert_eq!(load["answered"].as_u64().unwrap() + errors, 20);
    assert_eq!(load["answered"], 20, "{}", load["errors"]);
    assert_eq!(load["payload_bytes_checked"], 20 * 20_000);
    let server = &load["embedded_server"];
    assert_eq!(server["backend"], backend);
    let stats = &server["stats"];
    assert_eq!(stats["requests"], 20);
    assert_eq!(stats["handshakes"], 20);
    assert_eq!(stats["failed_handshakes"], 0);
    let cpu_ns = stats["cpu_ns"].as_u64().unwrap();
    assert!(cpu_ns > 0);
    assert_eq!(load["server_cpu_ns"].as_u64(), Some(cpu_ns));
    if backend == "openssl" {
        assert!(server["breakdown"].is_null(), "{server}");
        return;
    }
    // Counted crypto per category, [name, ns] pairs, within the threads' CPU.
    let counted: Vec<(String, u64)> = stats["counted_ns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|pair| {
            (
                pair[0].as_str().unwrap().to_string(),
                pair[1].as_u64().unwrap(),
            )
        })
        .collect();
    let ns = |name: &str| counted.iter().find(|(n, _)| n == name).unwrap().1;
    for category in [
        "key_exchange",
        "signing",
        "hashing_and_kdf",
        "record_protection",
        "random",
    ] {
        assert!(ns(category) > 0, "{category}: {counted:?}");
    }
    let crypto_ns: u64 = counted.iter().map(|(_, ns)| ns).sum();
    assert!(
        crypto_ns <= cpu_ns,
        "{crypto_ns} ns counted, {cpu_ns} ns CPU"
    );
    let shares = server["breakdown"].as_array().unwrap();
    let names: Vec<&str> = shares.iter().map(|s| s["name"].as_str().unwrap()).collect();
    for name in ["key exchange", "record protection", "rest of TLS", "HTTP"] {
        assert!(names.contains(&name), "{names:?}");
    }
}

macro_rules! per_backend {
    ($($test:ident => $backend:literal),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                a_small_load_on_the_embedded_server_adds_up($backend);
            }
        )*
    };
}

per_backend! {
    a_small_load_on_the_embedded_openssl_server_adds_up => "openssl",
    a_small_load_on_the_embedded_rustls_aws_lc_server_adds_up => "rustls-aws-lc",
    a_small_load_on_the_embedded_rustls_ring_server_adds_up => "rustls-ring",
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn serve_answers_a_client_and_stops_by_itself_with_its_report() {
    // The chain exists before the server reads it, so both use the same.
    let credentials = certs().get(CertKind::EcdsaP256, 3).unwrap();
    let port = free_port();
    let bind = format!("127.0.0.1:{port}");
    let started = Instant::now();
    let server = Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args([
            "serve",
            "--backend",
            "rustls-ring",
            "--bind",
            &bind,
            "--duration",
            "3",
            "--workers",
            "1",
            "--cert-dir",
            cert_dir().to_str().unwrap(),
        ])
        .env_remove("COLUMNS")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let address: SocketAddr = bind.parse().unwrap();
    let tcp = loop {
        match TcpStream::connect_timeout(&address, Duration::from_millis(200)) {
            Ok(tcp) => break tcp,
            Err(_) if started.elapsed() < Duration::from_secs(3) => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(error) => panic!("the server did not listen on {bind}: {error}"),
        }
    };
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut connector = SslConnector::builder(SslMethod::tls()).unwrap();
    connector
        .cert_store_mut()
        .add_cert(X509::from_der(&credentials.root_der).unwrap())
        .unwrap();
    let mut tls = connector
        .build()
        .connect(tlslab::certs::SERVER_NAME, tcp)
        .unwrap();
    tls.write_all(b"GET /page_1000 HTTP/1.1\r\nHost: tlslab.test\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let _ = tls.read_to_end(&mut answer);
    let end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&answer[..end]);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("Content-Length: 1000"), "{head}");
    assert_eq!(&answer[end + 4..], &page_bytes(1000)[..]);

    let output = server.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the server stopped after {:?}",
        started.elapsed()
    );
    assert!(
        stderr.contains(&format!("serving https://{bind}/page_SIZE")),
        "{stderr}"
    );
    assert!(
        has_row(&stdout, &["requests answered with a page", "1"]),
        "{stdout}"
    );
    assert!(
        has_row(&stdout, &["handshakes (resumed)", "1 (0)"]),
        "{stdout}"
    );
    assert!(has_row(&stdout, &["key exchange"]), "{stdout}");
    // The port is free again: the server let it go when it stopped.
    TcpListener::bind(address).unwrap();
}

#[test]
fn bad_serve_options_are_refused_clearly() {
    let dir = cert_dir();
    let dir = dir.to_str().unwrap();
    for (args, code, expected) in [
        (vec!["serve", "--backend", "nope"], 2, "valid backends"),
        (vec!["serve", "--backend", "mock"], 2, "no TLS server"),
        (
            vec!["serve", "--bind", "0.0.0.0:8443"],
            2,
            "--allow-non-loopback",
        ),
        (vec!["serve", "--bind", "somewhere"], 2, "ADDRESS:PORT"),
        (vec!["serve", "--workers", "0"], 2, "--workers"),
        (vec!["serve", "--tls", "dtls1.2"], 2, "DTLS"),
        (
            vec![
                "serve",
                "--backend",
                "rustls-ring",
                "--tls",
                "1.2",
                "--group",
                "rsa",
            ],
            2,
            "rsa",
        ),
        (vec!["load", "--server", "apache"], 2, "nginx, embedded"),
        (vec!["load", "--backend", "openssl"], 2, "--server embedded"),
        (
            vec!["load", "--server", "embedded", "--target", "127.0.0.1:1"],
            2,
            "--target",
        ),
    ] {
        let mut args = args;
        args.extend(["--cert-dir", dir]);
        let run = tlslab(&args);
        run.expect_code(code);
        assert!(
            run.stderr().contains(expected),
            "{args:?}: {}",
            run.stderr()
        );
    }
}

#[test]
fn a_port_in_use_is_a_clear_runtime_error() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let bind = taken.local_addr().unwrap().to_string();
    let run = tlslab(&[
        "serve",
        "--bind",
        &bind,
        "--duration",
        "1",
        "--cert-dir",
        cert_dir().to_str().unwrap(),
    ]);
    run.expect_code(1);
    assert!(run.stderr().contains("in use"), "{}", run.stderr());
}

#[test]
fn the_embedded_server_is_profiled_by_its_own_threads_or_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("load.json");
    let run = tlslab(&[
        "load",
        "--no-db",
        "--server",
        "embedded",
        "--backend",
        "openssl",
        "--perf",
        "--rate",
        "20",
        "--duration",
        "1",
        "--clients",
        "2",
        "-q",
        "--cert-dir",
        cert_dir().to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
    ]);
    run.expect_code(0);
    let load = json_of(&json);
    let profile = &load["profile"];
    let categories = &load["symbol_categories"];
    match profile.as_array() {
        Some(shares) => {
            assert!(!shares.is_empty());
            let total: f64 = shares.iter().map(|s| s["percent"].as_f64().unwrap()).sum();
            assert!((95.0..=100.5).contains(&total), "{profile}");
            assert!(
                run.stdout().contains("worker threads only"),
                "{}",
                run.stdout()
            );
            // tlslab's own OpenSSL has its symbols: the study's categories.
            let shares = categories.as_array().unwrap();
            let share = |name: &str| {
                shares
                    .iter()
                    .find(|s| s["category"] == name)
                    .map_or(0.0, |s| s["percent"].as_f64().unwrap())
            };
            assert!(share("public key") > 0.0, "{categories}");
            let total: f64 = shares.iter().map(|s| s["percent"].as_f64().unwrap()).sum();
            assert!((99.9..=100.1).contains(&total), "{categories}");
            assert!(
                run.stdout().contains("Inside the TLS library: public key"),
                "{}",
                run.stdout()
            );
        }
        // Where perf cannot run, the report says why, in both tables.
        None => {
            assert!(
                profile["unavailable"].as_str().unwrap().contains("perf"),
                "{profile}"
            );
            assert_eq!(categories["unavailable"], profile["unavailable"]);
        }
    }
}

/// A client that connects and never says hello holds a worker in its
/// handshake; the server still stops on time and says so.
#[test]
fn a_silent_client_does_not_keep_the_server_running() {
    for backend in ["openssl", "rustls-aws-lc"] {
        let port = free_port();
        let bind = format!("127.0.0.1:{port}");
        let started = Instant::now();
        let server = Command::new(env!("CARGO_BIN_EXE_tlslab"))
            .args([
                "serve",
                "--backend",
                backend,
                "--bind",
                &bind,
                "--duration",
                "1",
                "--workers",
                "1",
                "--cert-dir",
                cert_dir().to_str().unwrap(),
            ])
            .env_remove("COLUMNS")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let address: SocketAddr = bind.parse().unwrap();
        let _silent = loop {
            match TcpStream::connect(address) {
                Ok(tcp) => break tcp,
                Err(_) if started.elapsed() < Duration::from_secs(5) => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Err(error) => panic!("the server did not listen on {bind}: {error}"),
            }
        };
        let output = server.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(0), "{backend}: {stdout}");
        // The handshake waits at most 10 s for a client; stopping must not.
        assert!(
            started.elapsed() < Duration::from_secs(6),
            "{backend}: the server took {:?} to stop",
            started.elapsed()
        );
        assert!(
            has_row(&stdout, &["failed handshakes", "1"]),
            "{backend}: {stdout}"
        );
    }
}
