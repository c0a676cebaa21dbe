//! The C10K figure of `tlslab serve`: a well-behaved client's latency (a
//! new connection, a full handshake and a 1 kB page each time) with no
//! other client, then while IDLE connections that send nothing and
//! TRICKLING clients that send a request head a byte every half second are
//! held open, and the server's resident memory before and during.
//!
//! Then the server's resident memory per established connection: clients
//! that made a full handshake and one keep-alive request and then stay
//! idle, held by the thousand up to KEPT (the C10K figure of connections
//! with their TLS state, beside the idle sockets above that have none).
//!
//! Run: `cargo bench --bench serve_idle` (optionally `-- IDLE TRICKLING
//! REQUESTS BACKEND KEPT`, default 10000 10 50 rustls-aws-lc 10000). The server runs
//! as its own process (the release build of `tlslab serve`, two workers,
//! `--header-timeout 60` so no connection is closed during the run, as
//! nginx's default client_header_timeout); the idle connections are this
//! process's, so both need an open-file limit above IDLE: the soft limit
//! is raised to the hard one, and the bench says so and stops if that is
//! too low.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use openssl::ssl::{SslConnector, SslMethod};

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| !a.starts_with("--"));
    let idle: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let trickling: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10);
    let requests: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(50);
    let backend = args.next().unwrap_or_else(|| "rustls-aws-lc".to_string());
    let kept: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);

    let limit = raise_open_file_limit();
    if limit < idle.max(kept) as u64 + 256 {
        eprintln!(
            "the open-file limit (ulimit -Hn) is {limit}: too low for {idle} idle connections; raise the hard limit (e.g. in /etc/security/limits.conf) or ask for fewer"
        );
        std::process::exit(2);
    }
    let cert_dir = tempfile::tempdir().unwrap();
    let mut server = Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args(["serve", "--backend", &backend, "--bind", "127.0.0.1:0"])
        .args([
            "--workers",
            "2",
            "--header-timeout",
            "600",
            "--keep-alive-timeout",
            "600",
            "--duration",
            "600",
        ])
        .arg("--cert-dir")
        .arg(cert_dir.path())
        .env_remove("COLUMNS")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tlslab serve starts");
    let (address, root) = started(server.stderr.take().unwrap());
    let pid = server.id();

    let rss_start = rss_kb(pid, "VmRSS");
    let alone = latencies(address, &root, requests);

    let began = Instant::now();
    let held: Vec<TcpStream> = (0..idle)
        .map(|_| TcpStream::connect(address).expect("an idle connection"))
        .collect();
    let opened_in = began.elapsed();
    let stop = Arc::new(AtomicBool::new(false));
    let tricklers: Vec<_> = (0..trickling)
        .map(|_| {
            let (root, stop) = (root.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut tls = connect(address, &connector(&root));
                for byte in b"GET /page_1000 HTTP/1.1\r\nX: "
                    .iter()
                    .chain([b'y'; 1000].iter())
                {
                    if stop.load(Ordering::Relaxed) || tls.write_all(&[*byte]).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(500));
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    let rss_held = rss_kb(pid, "VmRSS");
    let beside = latencies(address, &root, requests);
    let rss_peak = rss_kb(pid, "VmHWM");
    stop.store(true, Ordering::Relaxed);
    for trickler in tricklers {
        let _ = trickler.join();
    }
    drop(held);
    std::thread::sleep(Duration::from_secs(1));
    let per_kept = kept_alive(address, &root, kept, pid);
    // SAFETY: a signal to the server this bench started.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
    let output = server.wait_with_output().unwrap();
    let report = String::from_utf8_lossy(&output.stdout);

    println!(
        "tlslab serve --backend {backend} --workers 2: a good client's new connection, handshake and 1 kB page"
    );
    println!("{:<44} {:>8} {:>8} {:>8}", "", "p50 ms", "p90 ms", "max ms");
    print_row("alone", &alone);
    print_row(
        &format!("beside {idle} idle + {trickling} trickling"),
        &beside,
    );
    println!(
        "{idle} idle connections opened in {:.2} s; server RSS {:.1} MB at start, {:.1} MB holding them ({:.2} kB per connection), peak {:.1} MB",
        opened_in.as_secs_f64(),
        rss_start as f64 / 1000.0,
        rss_held as f64 / 1000.0,
        rss_held.saturating_sub(rss_start) as f64 / idle.max(1) as f64,
        rss_peak as f64 / 1000.0
    );
    println!(
        "established keep-alive connections (a full handshake and one 1 kB page each, then idle): server RSS"
    );
    for (held, rss) in &per_kept {
        println!(
            "  {held:>6} held: {:.1} MB, {:.1} kB per connection above the {:.1} MB before",
            *rss as f64 / 1000.0,
            rss.saturating_sub(per_kept[0].1) as f64 / (*held).max(1) as f64,
            per_kept[0].1 as f64 / 1000.0
        );
    }
    for line in report.lines().filter(|l| {
        l.starts_with("connections")
            || l.starts_with("requests answered")
            || l.starts_with("worker")
    }) {
        println!("server: {line}");
    }
}

/// Opens `kept` connections that each make a full handshake and one
/// keep-alive request, then stay idle; returns the server's RSS (kB) with
/// none held and after each thousand (and at `kept`).
fn kept_alive(address: SocketAddr, root: &Path, kept: usize, pid: u32) -> Vec<(usize, u64)> {
    let connector = connector(root);
    let mut held = Vec::with_capacity(kept);
    let mut rss = vec![(0, rss_kb(pid, "VmRSS"))];
    while held.len() < kept {
        let mut tls = connect(address, &connector);
        tls.write_all(b"GET /page_1000 HTTP/1.1\r\nHost: tlslab.test\r\n\r\n")
            .unwrap();
        // The head, then the 1000-byte body; the connection stays open.
        let mut answer = Vec::new();
        let mut buffer = [0u8; 4096];
        loop {
            let n = tls.read(&mut buffer).unwrap();
            assert!(n > 0, "the server closed a kept-alive connection");
            answer.extend_from_slice(&buffer[..n]);
            if let Some(end) = answer.windows(4).position(|w| w == b"\r\n\r\n") {
                if answer.len() >= end + 4 + 1000 {
                    break;
                }
            }
        }
        assert!(answer.starts_with(b"HTTP/1.1 200"), "a kept request failed");
        held.push(tls);
        if held.len() % 1000 == 0 || held.len() == kept {
            std::thread::sleep(Duration::from_millis(300));
            rss.push((held.len(), rss_kb(pid, "VmRSS")));
        }
    }
    rss
}

fn print_row(name: &str, samples: &[f64]) {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
    println!(
        "{name:<44} {:>8.2} {:>8.2} {:>8.2}",
        at(0.5),
        at(0.9),
        at(1.0)
    );
}

/// Waits for serve's start lines: its address and the root to trust.
fn started(stderr: std::process::ChildStderr) -> (SocketAddr, PathBuf) {
    let mut lines = BufReader::new(stderr).lines();
    let mut address = None;
    for line in lines.by_ref().map_while(Result::ok) {
        if let Some(rest) = line.strip_prefix("serving https://") {
            address = rest.split("/page_SIZE").next().and_then(|a| a.parse().ok());
        }
        if let Some((_, rest)) = line.split_once("--cacert ") {
            let root = PathBuf::from(rest.split(' ').next().unwrap());
            // Keep draining stderr so the server never blocks on it.
            std::thread::spawn(move || lines.for_each(drop));
            return (address.expect("serve said where it listens"), root);
        }
    }
    panic!("serve did not start");
}

/// A client context trusting `root` (made once: its making is not timed).
fn connector(root: &Path) -> SslConnector {
    let mut connector = SslConnector::builder(SslMethod::tls()).unwrap();
    connector.set_ca_file(root).unwrap();
    connector.build()
}

fn connect(address: SocketAddr, connector: &SslConnector) -> openssl::ssl::SslStream<TcpStream> {
    let tcp = TcpStream::connect(address).unwrap();
    // Without it the request waits for the ACK of the client's Finished.
    tcp.set_nodelay(true).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    connector.connect(tlslab::certs::SERVER_NAME, tcp).unwrap()
}

/// Milliseconds of `requests` new connections with one GET each.
fn latencies(address: SocketAddr, root: &Path, requests: usize) -> Vec<f64> {
    let connector = connector(root);
    (0..requests)
        .map(|_| {
            let began = Instant::now();
            let mut tls = connect(address, &connector);
            tls.write_all(
                b"GET /page_1000 HTTP/1.1\r\nHost: tlslab.test\r\nConnection: close\r\n\r\n",
            )
            .unwrap();
            let mut answer = Vec::new();
            let _ = tls.read_to_end(&mut answer);
            assert!(answer.starts_with(b"HTTP/1.1 200"), "a good request failed");
            began.elapsed().as_secs_f64() * 1000.0
        })
        .collect()
}

/// Raises the soft open-file limit to the hard one; returns it.
fn raise_open_file_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit on a struct we own.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        limit.rlim_cur = limit.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
    }
    limit.rlim_cur
}

/// A line of /proc/PID/status in kB (VmRSS now, VmHWM the peak).
fn rss_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
