//! The embedded HTTPS server on loopback at tiny rates: `load --server
//! embedded` on every backend (counts add up, bodies are checked, the
//! server's threads' CPU is known and, on rustls, the counted categories
//! fit inside it), `serve` answering a client of the test's own and
//! stopping by itself (after its duration, SIGINT or SIGTERM), the root
//! it prints, and bad options refused. [`hostile`] has the clients that
//! try to starve or break it, [`http2`] nghttp2's h2load and an idle
//! client over HTTP/2, [`h2spec`] the HTTP/2 conformance suite.

mod h2spec;
mod hostile;
mod http2;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use openssl::ssl::{SslConnector, SslMethod, SslStream};
use openssl::x509::X509;
use tlslab::scenario::CertKind;
use tlslab::workload::site::page_bytes;

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
        (vec!["serve", "--workers", "0"], 2, "--threads"),
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
        (
            vec!["load", "--server", "lighttpd"],
            2,
            "nginx, apache, haproxy, caddy, embedded",
        ),
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

/// A client that connects and never says hello; the server still stops on
/// time and says so.
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
        // A client that never sent a byte made no handshake.
        assert!(
            has_row(&stdout, &["connections closed before a byte came", "1"]),
            "{backend}: {stdout}"
        );
        assert!(
            has_row(&stdout, &["failed handshakes", "0"]),
            "{backend}: {stdout}"
        );
    }
}

/// A `tlslab serve` process of a test: where it listens and the root file
/// it said clients trust. Killed if the test ends before it stops.
pub(super) struct Served {
    child: Option<Child>,
    pub address: SocketAddr,
    pub root_pem: PathBuf,
    stderr: Arc<Mutex<String>>,
}

/// How a [`Served`] process ended.
pub(super) struct Ended {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Served {
    /// Starts `tlslab serve` with `args` (and the tests' certificate
    /// directory; on any free loopback port unless `--bind` is given) and
    /// waits for the lines saying where it listens and which root to trust.
    pub fn start(args: &[&str]) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tlslab"));
        command
            .arg("serve")
            .args(args)
            .args(["--cert-dir", cert_dir().to_str().unwrap()]);
        if !args.contains(&"--bind") {
            command.args(["--bind", "127.0.0.1:0"]);
        }
        let mut child = command
            .env_remove("COLUMNS")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let (lines, started) = std::sync::mpsc::channel();
        let reader = BufReader::new(child.stderr.take().unwrap());
        let kept = Arc::clone(&stderr);
        std::thread::spawn(move || {
            for line in reader.lines().map_while(Result::ok) {
                kept.lock().unwrap().push_str(&format!("{line}\n"));
                let _ = lines.send(line);
            }
        });
        let mut served = Self {
            child: Some(child),
            address: SocketAddr::from(([127, 0, 0, 1], 0)),
            root_pem: PathBuf::new(),
            stderr,
        };
        let mut address = None;
        // The root's line follows the address's at once; a server without
        // it (an older tlslab) serves the default chain's root.
        served.root_pem = cert_dir().join("ecdsa_p256_depth3").join("root.pem");
        let mut patience = Duration::from_secs(60);
        while let Ok(line) = started.recv_timeout(patience) {
            if let Some(rest) = line.strip_prefix("serving https://") {
                address = rest.split("/page_SIZE").next().map(|a| a.parse().unwrap());
                patience = Duration::from_secs(2);
            }
            if let Some((_, rest)) = line.split_once("--cacert ") {
                served.root_pem = PathBuf::from(rest.split(' ').next().unwrap());
                break;
            }
        }
        served.address = address.unwrap_or_else(|| {
            panic!(
                "serve {args:?} did not say where it listens:\n{}",
                served.stderr.lock().unwrap()
            )
        });
        served
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().unwrap().id() as i32
    }

    /// The most memory the process has had resident so far, in kB (VmHWM).
    pub fn peak_rss_kb(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }

    /// Sends SIGTERM and waits for the process to end.
    pub fn terminate(self) -> Ended {
        // SAFETY: a signal to the child this test started and still owns.
        unsafe { libc::kill(self.pid(), libc::SIGTERM) };
        self.wait()
    }

    /// Waits for the process to end by itself.
    pub fn wait(mut self) -> Ended {
        let output = self.child.take().unwrap().wait_with_output().unwrap();
        // The reader thread sees the end of stderr once the process is gone.
        std::thread::sleep(Duration::from_millis(50));
        Ended {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: self.stderr.lock().unwrap().clone(),
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A TLS client trusting only the certificates of `root_pem`.
pub(super) fn connect(address: SocketAddr, root_pem: &Path) -> SslStream<TcpStream> {
    let tcp = TcpStream::connect_timeout(&address, Duration::from_secs(5)).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut connector = SslConnector::builder(SslMethod::tls()).unwrap();
    connector.set_ca_file(root_pem).unwrap();
    connector
        .build()
        .connect(tlslab::certs::SERVER_NAME, tcp)
        .unwrap()
}

/// Reads one response to `request` on `tls`: its head and body.
pub(super) fn exchange(tls: &mut SslStream<TcpStream>, request: &[u8]) -> (String, Vec<u8>) {
    tls.write_all(request).unwrap();
    read_response(tls)
}

/// Reads one response: its head, and a body of its Content-Length.
pub(super) fn read_response(tls: &mut SslStream<TcpStream>) -> (String, Vec<u8>) {
    let mut received = Vec::new();
    let mut chunk = [0u8; 16384];
    let end = loop {
        if let Some(end) = received.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        let read = tls.read(&mut chunk).unwrap();
        assert!(read > 0, "the connection closed before a response head");
        received.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&received[..end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .map_or(0, |v| v.trim().parse().unwrap());
    let mut body = received[end + 4..].to_vec();
    while body.len() < length {
        let read = tls.read(&mut chunk).unwrap();
        assert!(read > 0, "the connection closed inside a body");
        body.extend_from_slice(&chunk[..read]);
    }
    (head, body)
}

#[test]
fn serve_prints_the_root_clients_trust_and_load_target_works_against_it() {
    let served = Served::start(&["--backend", "rustls-ring", "--duration", "60"]);
    assert!(
        served.root_pem.extension().is_some_and(|e| e == "pem")
            && served.root_pem.starts_with(cert_dir()),
        "{}",
        served.root_pem.display()
    );
    // A client trusting that file alone gets the page.
    let mut tls = connect(served.address, &served.root_pem);
    let (head, body) = exchange(
        &mut tls,
        b"GET /page_1000 HTTP/1.1\r\nHost: tlslab.test\r\n\r\n",
    );
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(body, page_bytes(1000));
    // The load example of serve's help, on this server's port.
    let help = tlslab(&["serve", "--help"]).stdout();
    assert!(
        help.contains("tlslab load --target 127.0.0.1:8443 --rate 50 --duration 5"),
        "{help}"
    );
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("load.json");
    let target = served.address.to_string();
    tlslab(&[
        "load",
        "--target",
        &target,
        "--rate",
        "20",
        "--duration",
        "1",
        "--no-db",
        "-q",
        "--cert-dir",
        cert_dir().to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
    ])
    .expect_code(0);
    assert_eq!(json_of(&json)["answered"], 20);
    let ended = served.terminate();
    assert_eq!(ended.code, Some(0), "{}", ended.stderr);
}

#[test]
fn sigterm_stops_serve_with_its_report_as_sigint_does() {
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let served = Served::start(&["--backend", "openssl", "--duration", "60"]);
        let started = Instant::now();
        // SAFETY: a signal to the child this test started.
        unsafe { libc::kill(served.pid(), signal) };
        let ended = served.wait();
        assert_eq!(ended.code, Some(0), "signal {signal}: {}", ended.stderr);
        assert!(
            has_row(&ended.stdout, &["requests answered with a page", "0"]),
            "signal {signal}: {}",
            ended.stdout
        );
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}

#[test]
fn serve_binds_a_host_name_that_resolves_to_loopback() {
    let served = Served::start(&["--bind", "localhost:0", "--duration", "60"]);
    assert!(served.address.ip().is_loopback(), "{}", served.address);
    let mut tls = connect(served.address, &served.root_pem);
    let (head, _) = exchange(
        &mut tls,
        b"GET /page_10 HTTP/1.1\r\nHost: tlslab.test\r\nConnection: close\r\n\r\n",
    );
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    served.terminate();
}

/// The signature algorithms a test client offers decide which of the
/// server's certificates it gets; returns the leaf's key type.
fn leaf_key_with_sigalgs(served: &Served, sigalgs: &str) -> openssl::pkey::Id {
    let tcp = TcpStream::connect(served.address).unwrap();
    let mut connector = SslConnector::builder(SslMethod::tls()).unwrap();
    connector.set_ca_file(&served.root_pem).unwrap();
    connector.set_sigalgs_list(sigalgs).unwrap();
    let tls = connector
        .build()
        .connect(tlslab::certs::SERVER_NAME, tcp)
        .unwrap();
    let leaf = tls.ssl().peer_certificate().unwrap();
    leaf.public_key().unwrap().id()
}

/// With no axis given, serve offers TLS 1.3 and 1.2, three groups, an
/// ECDSA and an RSA certificate and three suites, as its help says, so
/// clients of every kind connect; typing the help's default list works.
#[test]
fn serve_offers_every_value_of_its_lists() {
    for backend in ["openssl", "rustls-aws-lc"] {
        for args in [
            vec!["--backend", backend],
            vec![
                "--backend",
                backend,
                "--tls",
                "1.3,1.2",
                "--group",
                "x25519,p256,p384",
                "--cert",
                "ecdsa_p256,rsa2048",
                "--suite",
                "aes128gcm,aes256gcm,chacha20poly1305",
            ],
        ] {
            let served = Served::start(&args);
            let dir = tempfile::tempdir().unwrap();
            let json = dir.path().join("probe.json");
            let target = served.address.to_string();
            tlslab(&[
                "load",
                "--target",
                &target,
                "--probe-only",
                "-q",
                "--cert-dir",
                cert_dir().to_str().unwrap(),
                "--export-json",
                json.to_str().unwrap(),
            ])
            .expect_code(0);
            let probe = json_of(&json);
            let accepted = &probe["accepted"];
            let has = |axis: &str, value: &str| {
                accepted[axis]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|v| v.as_str() == Some(value))
            };
            for (axis, value) in [
                ("versions", "TLS 1.3"),
                ("versions", "TLS 1.2"),
                ("groups", "x25519"),
                ("groups", "p256"),
                ("groups", "p384"),
                ("suites", "TLS_AES_128_GCM_SHA256"),
                ("suites", "TLS_AES_256_GCM_SHA384"),
                ("suites", "TLS_CHACHA20_POLY1305_SHA256"),
            ] {
                assert!(has(axis, value), "{backend} {args:?}: {value}: {probe}");
            }
            // Each client gets the certificate its signature algorithms
            // allow, and the printed roots verify both.
            assert_eq!(
                leaf_key_with_sigalgs(&served, "ECDSA+SHA256:RSA-PSS+SHA256"),
                openssl::pkey::Id::EC,
                "{backend}"
            );
            assert_eq!(
                leaf_key_with_sigalgs(&served, "RSA-PSS+SHA256:RSA+SHA256"),
                openssl::pkey::Id::RSA,
                "{backend}"
            );
            let ended = served.terminate();
            assert_eq!(ended.code, Some(0), "{}", ended.stderr);
        }
    }
}

#[test]
fn an_offer_value_no_handshake_can_use_is_refused_with_its_reason() {
    let dir = cert_dir();
    let dir = dir.to_str().unwrap();
    for (args, expected) in [
        (vec!["--tls", "1.3", "--group", "rsa"], "--group rsa"),
        (vec!["--tls", "1.3", "--suite", "aes128cbc_sha"], "--suite"),
        (
            vec![
                "--backend",
                "rustls-ring",
                "--group",
                "x25519,x25519mlkem768",
            ],
            "x25519mlkem768",
        ),
        (
            vec!["--backend", "openssl", "--cert", "ecdsa_p256,ecdsa_p384"],
            "one certificate per key type",
        ),
        (vec!["--tls", ""], "for '--tls <LIST>': an empty value"),
    ] {
        let mut args = [vec!["serve"], args, vec!["--cert-dir", dir]].concat();
        args.extend(["--duration", "1"]);
        let run = tlslab(&args);
        run.expect_code(2);
        assert!(
            run.stderr().contains(expected),
            "{args:?}: {}",
            run.stderr()
        );
    }
}
