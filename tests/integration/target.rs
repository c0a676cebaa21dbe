//! `load --target`: someone else's server. The probe of what a server
//! accepts, checked on the embedded server restricted to one version,
//! group and suite; a target off loopback refused, without consent and a
//! rate cap, before any socket is opened (only TEST-NET addresses, which
//! nothing answers, are named; nothing is ever sent off loopback).

use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{cert_dir, tlslab};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_probe_of_the_embedded_server_lists_exactly_what_it_accepts() {
    let port = free_port();
    let bind = format!("127.0.0.1:{port}");
    let mut server = Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args([
            "serve",
            "--backend",
            "openssl",
            "--tls",
            "1.3",
            "--group",
            "x25519",
            "--cert",
            "ecdsa_p256",
            "--suite",
            "aes128gcm",
            "--bind",
            &bind,
            "--duration",
            "20",
            "-q",
            "--cert-dir",
            cert_dir().to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while TcpStream::connect(&bind).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "serve did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("probe.json");
    let run = tlslab(&[
        "load",
        "--target",
        &bind,
        "--probe-only",
        "-q",
        "--export-json",
        json.to_str().unwrap(),
    ]);
    let _ = server.kill();
    let _ = server.wait();
    run.expect_code(0);
    let probe: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let accepted = &probe["accepted"];
    assert_eq!(
        accepted["versions"],
        serde_json::json!(["TLS 1.3"]),
        "{probe}"
    );
    assert_eq!(accepted["groups"], serde_json::json!(["x25519"]), "{probe}");
    assert_eq!(
        accepted["suites"],
        serde_json::json!(["TLS_AES_128_GCM_SHA256"]),
        "{probe}"
    );
    // Refusals are tried, not assumed: TLS 1.2 and the other groups.
    let attempts = probe["attempts"].as_array().unwrap();
    assert!(attempts.len() > 10, "{probe}");
    let certificate = probe["certificate"].as_str().unwrap();
    assert!(certificate.starts_with("ECDSA prime256v1"), "{certificate}");
    let shown = run.stdout();
    assert!(shown.contains("What 127.0.0.1"), "{shown}");
}

/// The refusals, each before anything is sent: run under strace where it
/// can trace, every socket and connect call is seen, and there is none.
#[test]
fn a_target_off_loopback_is_refused_without_a_connection_attempt() {
    let cases: [(&[&str], &str); 5] = [
        (&["--target", "192.0.2.1:443"], "--i-have-permission"),
        (
            &["--target", "192.0.2.1:443", "--i-have-permission"],
            "--max-rate",
        ),
        (
            &["--target", "198.51.100.7:443", "--max-rate", "5"],
            "--i-have-permission",
        ),
        (
            &["--target", "192.0.2.1:443", "--probe-only"],
            "nothing was sent",
        ),
        (
            &[
                "--target",
                "192.0.2.1:443",
                "--i-have-permission",
                "--max-rate",
                "5",
                "--rate",
                "50",
            ],
            "above --max-rate",
        ),
    ];
    let mut traced = !crate::util::skip_without(
        Command::new("strace")
            .arg("-V")
            .output()
            .is_err()
            .then(|| "strace is not installed: the socket calls are not checked".to_string()),
        "a_target_off_loopback_is_refused_without_a_connection_attempt (its socket trace)",
        "apt-get install strace",
    );
    for (args, expected) in cases {
        let mut all = vec!["load"];
        all.extend_from_slice(args);
        let run = tlslab(&all);
        run.expect_code(2);
        assert!(run.stderr().contains(expected), "{all:?}: {}", run.stderr());
        if !traced {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("trace");
        let status = Command::new("strace")
            .args(["-f", "-qq", "-e", "trace=socket,connect", "-o"])
            .arg(&trace)
            .arg(env!("CARGO_BIN_EXE_tlslab"))
            .args(&all)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        let Ok(calls) = std::fs::read_to_string(&trace) else {
            // The refusals above are still checked for every case.
            crate::util::skip_without(
                Some("strace could not trace here: the socket calls are not checked".into()),
                "a_target_off_loopback_is_refused_without_a_connection_attempt (its socket trace)",
                "run where ptrace is allowed (strace -f)",
            );
            traced = false;
            continue;
        };
        assert_eq!(status.code(), Some(2), "{all:?} under strace");
        assert!(
            !calls.contains("socket(") && !calls.contains("connect("),
            "{all:?} opened a socket:\n{calls}"
        );
    }
}

/// Issue 18 item 21: a root with the server's root's name but another key
/// was reported as "EVP_DigestVerifyFinal: provider signature failure";
/// it is a certificate verification failure, on both load drivers.
#[test]
fn a_root_of_the_same_name_but_another_key_is_a_certificate_verification_failure() {
    use openssl::x509::X509;
    let served = crate::serve::Served::start(&["--cert", "ecdsa_p256"]);
    // Another cache generates another chain: the same names, other keys.
    let other = tempfile::tempdir().unwrap();
    let other_root = tlslab::certs::CertCache::new(other.path())
        .root_pem(tlslab::scenario::CertKind::EcdsaP256, 3)
        .unwrap();
    let read = |path: &std::path::Path| X509::from_pem(&std::fs::read(path).unwrap()).unwrap();
    let (theirs, ours) = (read(&served.root_pem), read(&other_root));
    let subject = |cert: &X509| format!("{:?}", cert.subject_name());
    assert_eq!(subject(&theirs), subject(&ours));
    assert_ne!(theirs.to_der().unwrap(), ours.to_der().unwrap());

    let target = served.address.to_string();
    for driver in ["0", "1"] {
        let run = tlslab(&[
            "load",
            "--no-db",
            "--target",
            &target,
            "--ca-file",
            other_root.to_str().unwrap(),
            "--no-probe",
            "--rate",
            "10",
            "--duration",
            "0.3",
            "--clients",
            "1",
            "--event-loops",
            driver,
            "-q",
        ]);
        let shown = run.stdout();
        assert!(
            shown.contains("certificate verification failed: certificate signature failure"),
            "--event-loops {driver}: {shown}"
        );
        assert!(shown.contains("--ca-file"), "{shown}");
        assert!(!shown.contains("EVP_DigestVerifyFinal"), "{shown}");
    }
    // The right root: no error.
    let run = tlslab(&[
        "load",
        "--no-db",
        "--target",
        &target,
        "--ca-file",
        served.root_pem.to_str().unwrap(),
        "--no-probe",
        "--rate",
        "10",
        "--duration",
        "0.3",
        "-q",
    ]);
    assert!(
        crate::util::has_row(&run.stdout(), &["answered / errors", "3 / 0"]),
        "{}",
        run.stdout()
    );
}

/// A TLS server of the test's own that answers every request with the
/// same bytes and closes, for answers the embedded server never gives.
/// It stops (and its thread ends) when dropped.
struct OddServer {
    address: std::net::SocketAddr,
    root_pem: std::path::PathBuf,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl OddServer {
    fn start(answer: &'static [u8]) -> Self {
        use openssl::pkey::PKey;
        use openssl::ssl::{SslAcceptor, SslMethod};
        use openssl::x509::X509;
        use std::io::{Read, Write};
        use std::sync::atomic::Ordering;

        let kind = tlslab::scenario::CertKind::EcdsaP256;
        let credentials = crate::util::certs().get(kind, 3).unwrap();
        let mut acceptor = SslAcceptor::mozilla_intermediate_v5(SslMethod::tls()).unwrap();
        let chain = &credentials.server.chain_der;
        acceptor
            .set_certificate(&X509::from_der(&chain[0]).unwrap())
            .unwrap();
        for intermediate in &chain[1..] {
            acceptor
                .add_extra_chain_cert(X509::from_der(intermediate).unwrap())
                .unwrap();
        }
        let key = PKey::private_key_from_pkcs8(&credentials.server.key_pkcs8_der).unwrap();
        acceptor.set_private_key(&key).unwrap();
        let acceptor = acceptor.build();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            for tcp in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(tcp) = tcp else { continue };
                let _ = tcp.set_read_timeout(Some(Duration::from_secs(5)));
                let Ok(mut tls) = acceptor.accept(tcp) else {
                    continue;
                };
                let mut request = Vec::new();
                let mut chunk = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut chunk) {
                        Ok(n) if n > 0 => request.extend_from_slice(&chunk[..n]),
                        _ => break,
                    }
                }
                let _ = tls.write_all(answer);
                let _ = tls.shutdown();
            }
        });
        Self {
            address,
            root_pem: crate::util::certs().root_pem(kind, 3).unwrap(),
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for OddServer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.address);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Issue 19 item 4: answer heads are parsed with httparse. A server whose
/// heads end their lines with a bare LF (RFC 9112 allows it) and that
/// closes every connection was read as "connection closed before the
/// response"; both drivers now read it, and in keepalive mode a client
/// opens a new connection when the server said `Connection: close`.
#[test]
fn a_server_with_bare_line_feeds_that_closes_each_connection_is_read() {
    let server =
        OddServer::start(b"HTTP/1.1 200 OK\nContent-Length: 5\nConnection: close\n\nhello");
    let target = server.address.to_string();
    for mode in ["new", "keepalive"] {
        for driver in ["0", "1"] {
            let run = tlslab(&[
                "load",
                "--no-db",
                "--target",
                &target,
                "--ca-file",
                server.root_pem.to_str().unwrap(),
                "--no-probe",
                "--path",
                "/",
                "--mode",
                mode,
                "--rate",
                "10",
                "--duration",
                "0.3",
                "--clients",
                "1",
                "--event-loops",
                driver,
                "-q",
            ]);
            assert!(
                crate::util::has_row(&run.stdout(), &["answered / errors", "3 / 0"]),
                "--mode {mode} --event-loops {driver}: {}",
                run.stdout()
            );
        }
    }
}

/// A server that does not speak HTTP/2 (this one chooses no ALPN
/// protocol) ends `load --http 2` with exit status 2 before anything is
/// loaded, naming what it chose. (tlslab's embedded server was the case
/// of this check until it spoke h2.)
#[test]
fn an_http2_load_of_a_server_without_h2_exits_2_naming_its_choice() {
    let server = OddServer::start(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
    let target = server.address.to_string();
    let run = tlslab(&[
        "load",
        "--no-db",
        "--target",
        &target,
        "--ca-file",
        server.root_pem.to_str().unwrap(),
        "--no-probe",
        "--path",
        "/",
        "--http",
        "1.1,2",
        "--rate",
        "10",
        "--duration",
        "0.3",
        "-q",
    ]);
    run.expect_code(2);
    assert!(
        run.stderr().contains("--http 2")
            && run
                .stderr()
                .contains("chose no ALPN protocol (offered: h2)"),
        "{}",
        run.stderr()
    );
    assert!(!run.stdout().contains("answered"), "{}", run.stdout());
}
