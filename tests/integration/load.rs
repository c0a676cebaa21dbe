//! `tlslab load` on loopback at tiny rates against servers of the tests'
//! own: one that stalls on purpose, whose queueing must show in the
//! latencies counted from each request's due time, a target serving its own
//! page, a silent one; and its options. Its runs on every server under test
//! tlslab starts are in [`crate::servers`].

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use openssl::pkey::PKey;
use openssl::ssl::{SslAcceptor, SslMethod};
use openssl::x509::X509;
use tlslab::scenario::CertKind;
use tlslab::workload::site::page_bytes;

use crate::plots::svg_texts;
use crate::util::{cert_dir, certs, tlslab};

fn json_of(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Ctrl-C during a load run: the requests that finished are reported and
/// stored, the run is marked incomplete, and the exit status is 130.
#[test]
fn ctrl_c_keeps_a_load_run_marked_incomplete() {
    let (port, stop) = stalling_server(1000, usize::MAX, Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let target = format!("127.0.0.1:{port}");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args([
            "load",
            "--target",
            &target,
            "--rate",
            "20",
            "--duration",
            "30",
            "--size",
            "1000",
            "--clients",
            "1",
            "-q",
            "--cert-dir",
            cert_dir().to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2_500));
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let output = child.wait_with_output().unwrap();
    stop.store(true, Ordering::Relaxed);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    let report = tlslab(&["report", "--db", db.to_str().unwrap()]);
    report.expect_code(0);
    let shown = report.stdout();
    assert!(
        shown.contains("load run 1") && shown.contains("(incomplete)"),
        "{shown}"
    );
    assert!(shown.contains("interrupted"), "{shown}");
    let connection = rusqlite::Connection::open(&db).unwrap();
    let (offered, answered, interrupted): (i64, i64, bool) = connection
        .query_row(
            "SELECT offered, answered, interrupted FROM load_summaries WHERE run_id = 1",
            [],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .unwrap();
    assert!(interrupted);
    assert!(
        answered > 0 && answered < offered,
        "{answered} of {offered}"
    );
}

/// A TLS server on tlslab's test chain that answers `/page_SIZE` and
/// sleeps `stall` before answering request number `stall_at`.
fn stalling_server(size: usize, stall_at: usize, stall: Duration) -> (u16, Arc<AtomicBool>) {
    serving(page_bytes(size), stall_at, stall)
}

/// A TLS server on tlslab's test chain, one connection at a time, that
/// answers every request with `body` (keeping the connection open when the
/// request asks to) and sleeps `stall` before answering request number
/// `stall_at`.
fn serving(body: Vec<u8>, stall_at: usize, stall: Duration) -> (u16, Arc<AtomicBool>) {
    let credentials = certs().get(CertKind::EcdsaP256, 3).unwrap();
    let mut acceptor = SslAcceptor::mozilla_intermediate_v5(SslMethod::tls()).unwrap();
    let chain = &credentials.server.chain_der;
    acceptor
        .set_certificate(&X509::from_der(&chain[0]).unwrap())
        .unwrap();
    for der in &chain[1..] {
        acceptor
            .add_extra_chain_cert(X509::from_der(der).unwrap())
            .unwrap();
    }
    acceptor
        .set_private_key(&PKey::private_key_from_pkcs8(&credentials.server.key_pkcs8_der).unwrap())
        .unwrap();
    let acceptor = Arc::new(acceptor.build());
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = Arc::clone(&stop);
    let served = Arc::new(AtomicUsize::new(0));
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        while !stopping.load(Ordering::Relaxed) {
            let Ok((tcp, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            };
            tcp.set_nonblocking(false).unwrap();
            // The head and the body go out as two writes: without this,
            // Nagle's algorithm holds the body until the client's delayed
            // ACK (40 ms), and a plan's requests wait behind it.
            tcp.set_nodelay(true).unwrap();
            let Ok(mut tls) = acceptor.accept(tcp) else {
                continue;
            };
            loop {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && tls.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                if head.is_empty() {
                    break;
                }
                if served.fetch_add(1, Ordering::Relaxed) == stall_at {
                    std::thread::sleep(stall);
                }
                let keep = String::from_utf8_lossy(&head).contains("Connection: keep-alive");
                let _ = tls.write_all(
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: {}\r\n\r\n",
                        body.len(),
                        if keep { "keep-alive" } else { "close" }
                    )
                    .as_bytes(),
                );
                let _ = tls.write_all(&body);
                if !keep {
                    let _ = tls.shutdown();
                    break;
                }
            }
        }
    });
    (port, stop)
}

#[test]
fn a_stalling_server_shows_its_queue_in_the_latencies() {
    let stall = Duration::from_millis(400);
    let (port, stop) = stalling_server(1000, 5, stall);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("stall.json");
    // One client, 50 requests/s: the stall delays the ~20 requests due
    // during it, which a closed-loop tool would simply not send (2 s: time
    // to catch up before the plan ends, when requests still waiting for
    // the client are not started).
    let target = format!("127.0.0.1:{port}");
    tlslab(&[
        "load",
        "--no-db",
        "--target",
        &target,
        // The probe's handshakes would count as requests of this server.
        "--no-probe",
        "--rate",
        "50",
        "--duration",
        "2",
        "--size",
        "1000",
        "--clients",
        "1",
        "-q",
        "--cert-dir",
        cert_dir().to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
    ])
    .expect_code(0);
    stop.store(true, Ordering::Relaxed);
    let run = json_of(&json);
    assert_eq!(run["answered"], 100);
    let percentile = |phase: &str, p: f64| -> f64 {
        run["latencies"][phase]["percentiles_us"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["percentile"].as_f64() == Some(p))
            .unwrap()["us"]
            .as_f64()
            .unwrap()
    };
    // The stalled request itself takes the stall.
    assert!(percentile("service (start to end)", 100.0) >= 390_000.0);
    // Only one request was slow to serve, but many waited behind it: the
    // latency from the due time sees them, the service time does not.
    assert!(percentile("service (start to end)", 90.0) < 100_000.0);
    assert!(
        percentile("total (due to end)", 90.0) > 100_000.0,
        "{}",
        run["latencies"]
    );
    assert!(run["server_cpu_ns"].is_null());
}

/// Someone else's server: with --path any page is requested and its body
/// counted, not compared; the server's certificate is checked for
/// --server-name against --ca-file's certificates (or the system's roots
/// and the test root), so a wrong name or a foreign root fails every
/// handshake. Both clients (event loop in keep-alive, threads otherwise).
#[test]
fn a_target_serving_its_own_page_is_loaded_with_its_name_and_roots() {
    let page = b"<html>someone else's page</html>".to_vec();
    let (port, stop) = serving(page.clone(), usize::MAX, Duration::ZERO);
    let target = format!("127.0.0.1:{port}");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let write_root = |kind: CertKind, name: &str| {
        let root = X509::from_der(&certs().get(kind, 3).unwrap().root_der).unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, root.to_pem().unwrap()).unwrap();
        path
    };
    let own_root = write_root(CertKind::EcdsaP256, "own.pem");
    let foreign_root = write_root(CertKind::Rsa2048, "foreign.pem");
    let cert_dir = cert_dir();
    let load = |mode: &str, extra: &[&str]| {
        let mut args = vec![
            "load",
            "--no-db",
            "--target",
            &target,
            "--no-probe",
            "--path",
            "/index.html",
            "--mode",
            mode,
            "--rate",
            "20",
            "--duration",
            "0.5",
            // The test server takes one connection at a time.
            "--clients",
            "1",
            "-q",
            "--cert-dir",
            cert_dir.to_str().unwrap(),
            "--export-json",
            json.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let run = tlslab(&args);
        (run.output.status.code(), json_of(&json))
    };
    let own = own_root.to_str().unwrap();
    for mode in ["keepalive", "new"] {
        for extra in [
            &[][..],
            &["--ca-file", own],
            &["--server-name", "tlslab.test"],
        ] {
            let (code, run) = load(mode, extra);
            assert_eq!(code, Some(0), "{mode} {extra:?}: {run}");
            assert_eq!(run["sent"], 10, "{mode} {extra:?}: {run}");
            assert_eq!(run["answered"], 10, "{mode} {extra:?}: {run}");
            assert_eq!(run["payload_bytes_checked"], 10 * page.len(), "{run}");
        }
        let foreign = foreign_root.to_str().unwrap();
        for extra in [
            &["--ca-file", foreign][..],
            &["--server-name", "other.example"],
        ] {
            let (code, run) = load(mode, extra);
            assert_eq!(code, Some(1), "{mode} {extra:?}: {run}");
            assert_eq!(run["answered"], 0, "{mode} {extra:?}: {run}");
            assert_eq!(run["errors"][0]["kind"], "Handshake", "{run}");
        }
    }
    // The same as a URL: its path is the page.
    let url = format!("https://127.0.0.1:{port}/index.html");
    let run = tlslab(&[
        "load",
        "--no-db",
        "--target",
        &url,
        "--no-probe",
        "--mode",
        "keepalive",
        "--rate",
        "20",
        "--duration",
        "0.5",
        "--clients",
        "1",
        "-q",
        "--cert-dir",
        cert_dir.to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
    ]);
    run.expect_code(0);
    let run = json_of(&json);
    assert_eq!(run["answered"], 10, "{run}");
    assert_eq!(run["plan"]["path"], "/index.html", "{run}");
    assert_eq!(run["payload_bytes_checked"], 10 * page.len(), "{run}");
    stop.store(true, Ordering::Relaxed);
    let refused = tlslab(&["load", "--path", "/index.html"]);
    refused.expect_code(2);
    assert!(
        refused.stderr().contains("--target"),
        "{}",
        refused.stderr()
    );
}

/// Issue 10: load latency percentiles against offered rate. A ramp on the
/// embedded server offers 15 then 30 requests in its two seconds; each
/// second's latencies are stored, drawn as one line per percentile, and
/// drawn again the same from the store.
#[test]
fn latency_against_offered_rate_is_stored_and_drawn_per_percentile() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let live = dir.path().join("live");
    tlslab(&[
        "load",
        "--db",
        db.to_str().unwrap(),
        "--plot",
        live.to_str().unwrap(),
        "--server",
        "embedded",
        "--backend",
        "openssl",
        "--workers",
        "1",
        "--rate",
        "30",
        "--ramp",
        "1",
        "--duration",
        "2",
        "--size",
        "1000",
        "--clients",
        "2",
        "-q",
        "--cert-dir",
        cert_dir().to_str().unwrap(),
    ])
    .expect_code(0);
    let connection = rusqlite::Connection::open(&db).unwrap();
    // Every second answered, so none of its percentiles is NULL.
    let seconds: Vec<[i64; 5]> = connection
        .prepare(
            "SELECT second, offered, answered, p50_us, p99_us FROM load_intervals
             WHERE run_id = 1 ORDER BY second",
        )
        .unwrap()
        .query_map([], |row| {
            Ok([
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get(4)?,
            ])
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(seconds.len(), 2, "{seconds:?}");
    assert_eq!((seconds[0][1], seconds[1][1]), (15, 30), "{seconds:?}");
    for [_, offered, answered, p50, p99] in &seconds {
        assert_eq!(answered, offered, "{seconds:?}");
        assert!(*p50 > 0 && p99 >= p50, "{seconds:?}");
    }

    let chart = std::fs::read_to_string(live.join("load_latency_rate.svg")).unwrap();
    for colour in ["#1F77B4", "#FF7F0E", "#2CA02C"] {
        let lines = chart
            .split("<polyline")
            .skip(1)
            .filter(|l| l[..l.find('>').unwrap()].contains(&format!("stroke=\"{colour}\"")))
            .count();
        assert_eq!(lines, 1, "{colour}: {chart}");
    }
    let texts = svg_texts(&chart);
    for expected in ["offered rate (req/s)", "p50", "p90", "p99"] {
        assert!(
            texts.iter().any(|t| t == expected),
            "no '{expected}' in {texts:?}"
        );
    }
    assert!(
        texts.iter().any(|t| t.starts_with("latency (ms)")),
        "{texts:?}"
    );
    let again = dir.path().join("again");
    let db = db.to_str().unwrap();
    tlslab(&["report", "--db", db, "--plot", again.to_str().unwrap()]).expect_code(0);
    assert_eq!(
        std::fs::read_to_string(again.join("load_latency_rate.svg")).unwrap(),
        chart
    );
}

/// The event-loop client (`--event-loops`, the default in keepalive mode)
/// in each connection mode, one client at 50 requests/s against a server
/// that stalls once: every request sent is answered, every body checked,
/// and the stall's queue shows in the latencies counted from the due time.
#[test]
fn the_event_loop_client_adds_up_and_shows_a_stall() {
    for (mode, handshakes) in [("keepalive", 1), ("new", 100), ("resume", 100)] {
        let (port, stop) = stalling_server(1000, 5, Duration::from_millis(400));
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("events.json");
        let target = format!("127.0.0.1:{port}");
        tlslab(&[
            "load",
            "--no-db",
            "--target",
            &target,
            // The probe's handshakes would count as requests of this server.
            "--no-probe",
            "--mode",
            mode,
            "--event-loops",
            "1",
            "--rate",
            "50",
            "--duration",
            "2",
            "--size",
            "1000",
            "--clients",
            "1",
            "-q",
            "--cert-dir",
            cert_dir().to_str().unwrap(),
            "--export-json",
            json.to_str().unwrap(),
        ])
        .expect_code(0);
        stop.store(true, Ordering::Relaxed);
        let run = json_of(&json);
        assert_eq!(run["sent"], 100, "{mode}");
        assert_eq!(run["answered"], 100, "{mode}: {}", run["errors"]);
        assert_eq!(run["payload_bytes_checked"], 100 * 1000, "{mode}");
        assert_eq!(run["handshakes"], handshakes, "{mode}");
        if mode == "resume" {
            assert_eq!(run["resumed_handshakes"], 99, "{mode}");
        }
        let percentile = |phase: &str, p: f64| -> f64 {
            run["latencies"][phase]["percentiles_us"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["percentile"].as_f64() == Some(p))
                .unwrap()["us"]
                .as_f64()
                .unwrap()
        };
        assert!(
            percentile("service (start to end)", 100.0) >= 390_000.0,
            "{mode}"
        );
        assert!(
            percentile("service (start to end)", 90.0) < 100_000.0,
            "{mode}"
        );
        assert!(
            percentile("total (due to end)", 90.0) > 100_000.0,
            "{mode}: {}",
            run["latencies"]
        );
    }
}

/// The event-loop client checks each body byte for byte: a page with one
/// byte changed fails every request as a body error, and the requests sent
/// add up to the answered and the failed.
#[test]
fn the_event_loop_client_counts_a_wrong_body() {
    let mut page = page_bytes(1000);
    page[500] ^= 1;
    let (port, stop) = serving(page, usize::MAX, Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("body.json");
    let target = format!("127.0.0.1:{port}");
    tlslab(&[
        "load",
        "--no-db",
        "--target",
        &target,
        "--no-probe",
        "--mode",
        "keepalive",
        "--rate",
        "20",
        "--duration",
        "0.5",
        "--size",
        "1000",
        "--clients",
        "2",
        "-q",
        "--cert-dir",
        cert_dir().to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
    ])
    // Failed requests make a non-zero exit, after the report.
    .expect_code(1);
    stop.store(true, Ordering::Relaxed);
    let run = json_of(&json);
    assert_eq!(run["sent"], 10);
    assert_eq!(run["answered"], 0);
    assert_eq!(
        run["errors"],
        serde_json::json!([{"kind": "Body", "count": 10}]),
        "{run}"
    );
    assert_eq!(run["payload_bytes_checked"], 0);
}

#[test]
fn bad_load_options_are_usage_errors() {
    for (args, expected) in [
        (vec!["load", "--rate", "0"], "--rate"),
        (vec!["load", "--ramp", "20", "--duration", "10"], "--ramp"),
        (vec!["load", "--size", "big"], "--size"),
        (
            vec!["load", "--mode", "pipelined"],
            "[possible values: new, keepalive]",
        ),
        (vec!["load", "--target", "192.0.2.1:443"], "loopback"),
        // --cert takes a list (issue 26); a name in it that is none lists
        // the valid ones.
        (
            vec!["load", "--cert", "rsa2048,rsa1024"],
            "valid certificates: rsa2048",
        ),
        (vec!["load", "--preset", "apache"], "apache-study"),
        (vec!["load", "--http", "3"], "[possible values: 1.1, 2]"),
        (
            vec!["load", "--http", "2", "--streams", "4"],
            "--mode keepalive",
        ),
        (
            vec!["load", "--mode", "keepalive", "--streams", "4"],
            "add --http 2",
        ),
        (
            vec!["load", "--http", "1.1,2", "--event-loops", "0"],
            "run on event loops",
        ),
    ] {
        let run = tlslab(&args);
        run.expect_code(2);
        assert!(
            run.stderr().contains(expected),
            "{args:?}: {}",
            run.stderr()
        );
    }
}

/// A TCP listener that accepts connections and never answers: a silent
/// server. Returns its port, and a flag that stops it.
fn silent_server() -> (u16, Arc<AtomicBool>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = Arc::clone(&stop);
    std::thread::spawn(move || {
        let mut held = Vec::new();
        while !stopping.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((tcp, _)) => held.push(tcp),
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    });
    (port, stop)
}

/// Issue 18 item 3: a run ends about a second after --duration however
/// far the clients are behind: requests still waiting for a free client
/// when the plan ends are never started (and said so), whatever the
/// rate, on both clients.
#[test]
fn a_load_run_ends_about_a_second_after_its_duration() {
    for (rate, duration, event_loops) in
        [("10000", 2.0, "0"), ("1e12", 1.0, "0"), ("1e12", 1.0, "1")]
    {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("load.json");
        let duration_text = duration.to_string();
        let started = std::time::Instant::now();
        let run = tlslab(&[
            "load",
            "--server",
            "embedded",
            "--rate",
            rate,
            "--duration",
            &duration_text,
            "--clients",
            "8",
            "--event-loops",
            event_loops,
            "--no-db",
            "-q",
            "--cert-dir",
            cert_dir().to_str().unwrap(),
            "--export-json",
            json.to_str().unwrap(),
        ]);
        let wall_s = started.elapsed().as_secs_f64();
        run.expect_code(0);
        let result = json_of(&json);
        let elapsed_s = result["elapsed_s"].as_f64().unwrap();
        let case = format!("--rate {rate} --duration {duration} --event-loops {event_loops}");
        assert!(
            elapsed_s < duration + 1.5,
            "{case}: the load took {elapsed_s} s"
        );
        assert!(wall_s < duration + 4.0, "{case}: tlslab took {wall_s} s");
        let (offered, sent) = (
            result["offered"].as_u64().unwrap(),
            result["sent"].as_u64().unwrap(),
        );
        assert!(sent > 0 && sent < offered, "{case}: {sent} of {offered}");
        assert_eq!(result["answered"].as_u64(), Some(sent), "{case}");
        assert!(
            run.stdout().contains("were never started"),
            "{case}: {}",
            run.stdout()
        );
    }
}

/// Issue 18 item 3: a server that accepts and never answers cannot hold a
/// run past its end: each request under way fails as timed out a second
/// after the plan, on both clients.
#[test]
fn a_silent_server_cannot_hold_a_run_past_its_end() {
    let (port, stop) = silent_server();
    let target = format!("127.0.0.1:{port}");
    for event_loops in ["0", "1"] {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("silent.json");
        let started = std::time::Instant::now();
        let run = tlslab(&[
            "load",
            "--target",
            &target,
            "--no-probe",
            "--rate",
            "20",
            "--duration",
            "1",
            "--clients",
            "4",
            "--event-loops",
            event_loops,
            "--no-db",
            "-q",
            "--cert-dir",
            cert_dir().to_str().unwrap(),
            "--export-json",
            json.to_str().unwrap(),
        ]);
        let wall_s = started.elapsed().as_secs_f64();
        run.expect_code(1);
        assert!(wall_s < 3.0, "--event-loops {event_loops}: {wall_s} s");
        let result = json_of(&json);
        assert_eq!(result["answered"], 0);
        assert_eq!(
            result["errors"],
            serde_json::json!([{"kind": "Timeout", "count": 4}]),
            "--event-loops {event_loops}: the four clients' requests: {result}"
        );
    }
    stop.store(true, Ordering::Relaxed);
}

/// Issue 18 item 3: Ctrl-C ends a load at once, even with every client
/// waiting on a silent server: exit 130, within about a second.
#[test]
fn ctrl_c_ends_a_load_on_a_silent_server_at_once() {
    let (port, stop) = silent_server();
    let target = format!("127.0.0.1:{port}");
    for event_loops in ["0", "1"] {
        let mut job = crate::util::Job::start(
            &[
                "load",
                "--target",
                &target,
                "--no-probe",
                "--rate",
                "20",
                "--duration",
                "60",
                "--clients",
                "4",
                "--event-loops",
                event_loops,
                "--no-db",
                "--cert-dir",
                cert_dir().to_str().unwrap(),
            ],
            &[],
        );
        job.wait_for_line("loading", Duration::from_secs(30));
        // Every client is under way, waiting for an answer.
        std::thread::sleep(Duration::from_millis(500));
        let interrupted = std::time::Instant::now();
        job.signal(libc::SIGINT);
        let (status, stderr) = job.finish(Duration::from_secs(30));
        let took_s = interrupted.elapsed().as_secs_f64();
        assert_eq!(status.code(), Some(130), "{stderr}");
        assert!(
            took_s < 2.0,
            "--event-loops {event_loops}: {took_s} s after Ctrl-C"
        );
    }
    stop.store(true, Ordering::Relaxed);
}

/// Issue 18 item 4: thread counts are bounded; beyond the bound the
/// command is refused before anything starts, saying what to use instead.
#[test]
fn thread_counts_are_bounded() {
    for (args, expected) in [
        (vec!["load", "--clients", "100000"], "--event-loops"),
        (vec!["load", "--event-loops", "100000"], "at most 256"),
        (
            vec!["load", "--server", "embedded", "--threads", "100000"],
            "at most 256",
        ),
        (
            vec!["serve", "--workers", "100000", "--duration", "1"],
            "at most 256",
        ),
    ] {
        let started = std::time::Instant::now();
        let run = tlslab(&args);
        run.expect_code(2);
        assert!(
            run.stderr().contains(expected),
            "{args:?}: {}",
            run.stderr()
        );
        assert!(started.elapsed() < Duration::from_secs(5), "{args:?}");
    }
}

/// Issue 18 item 6: without --perf, a load run makes no perf directory
/// (checked while it runs, and after Ctrl-C ends it).
#[test]
fn a_load_without_perf_makes_no_perf_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let perf_directories = || {
        std::fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("tlslab-perf-"))
            .count()
    };
    let mut job = crate::util::Job::start(
        &[
            "load",
            "--server",
            "embedded",
            "--rate",
            "20",
            "--duration",
            "30",
            "--clients",
            "2",
            "--no-db",
            "--cert-dir",
            cert_dir().to_str().unwrap(),
        ],
        &[("TMPDIR", tmp.path().as_os_str())],
    );
    job.wait_for_line("loading", Duration::from_secs(30));
    assert_eq!(perf_directories(), 0);
    job.signal(libc::SIGINT);
    let (status, stderr) = job.finish(Duration::from_secs(10));
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert_eq!(perf_directories(), 0);
}
