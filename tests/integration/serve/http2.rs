//! `tlslab serve` over HTTP/2: against a client tlslab did not write,
//! nghttp2's h2load (`-m`: streams at once per connection), on each kind
//! of backend the server runs on, every answer 200 with the whole page, the
//! server's own count matching, an unknown path 404 as for HTTP/1.1; and a
//! client that makes one request and then sends only PINGs, which do not
//! keep its session open past the keep-alive timeout: it gets a GOAWAY and
//! the close.

use std::io::{Read, Write};
use std::process::Command;
use std::time::{Duration, Instant};

use openssl::ssl::{SslConnector, SslMethod};

use super::Served;
use crate::util::{has_row, skip_without};

/// h2load's output for `args`, which must have run to its summary.
fn h2load(args: &[&str]) -> String {
    let output = Command::new("h2load").args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "h2load {args:?}: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn h2load_gets_every_page_over_http2_from_serve() {
    let test = "h2load_gets_every_page_over_http2_from_serve";
    let missing = Command::new("h2load")
        .arg("--version")
        .output()
        .is_err()
        .then(|| "h2load is not installed".to_string());
    if skip_without(missing, test, "apt-get install nghttp2-client") {
        return;
    }
    for backend in ["openssl", "rustls-aws-lc"] {
        let served = Served::start(&["--backend", backend, "--duration", "60", "--threads", "2"]);
        let base = format!("https://{}", served.address);
        // 200 pages of 20 kB: 4 connections, 8 streams at once on each.
        let pages = h2load(&[
            "-n",
            "200",
            "-c",
            "4",
            "-m",
            "8",
            &format!("{base}/page_20000"),
        ]);
        for expected in [
            "Application protocol: h2",
            "requests: 200 total, 200 started, 200 done, 200 succeeded, 0 failed, 0 errored, 0 timeout",
            "status codes: 200 2xx, 0 3xx, 0 4xx, 0 5xx",
            "(4000000) data",
        ] {
            assert!(pages.contains(expected), "{backend}: {expected:?}\n{pages}");
        }
        let missing = h2load(&["-n", "3", "-c", "1", &format!("{base}/index.html")]);
        assert!(
            missing.contains("status codes: 0 2xx, 0 3xx, 3 4xx, 0 5xx"),
            "{backend}: {missing}"
        );
        let ended = served.terminate();
        assert_eq!(ended.code, Some(0), "{backend}: {}", ended.stderr);
        for (row, count) in [
            ("requests answered with a page", "200"),
            ("requests refused (bad path, method or head)", "3"),
        ] {
            assert!(
                has_row(&ended.stdout, &[row, count]),
                "{backend}: {row}\n{}",
                ended.stdout
            );
        }
        assert!(
            has_row(&ended.stdout, &["failed handshakes", "0"]),
            "{backend}: {}",
            ended.stdout
        );
    }
}

/// The frame types of an HTTP/2 byte stream from the server (each frame a
/// 9-byte header: length, type, flags, stream).
fn frame_types(mut bytes: &[u8]) -> Vec<u8> {
    let mut types = Vec::new();
    while bytes.len() >= 9 {
        let length = u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]) as usize;
        types.push(bytes[3]);
        bytes = &bytes[(9 + length).min(bytes.len())..];
    }
    types
}

#[test]
fn an_idle_http2_session_gets_a_goaway_at_the_keep_alive_timeout_pings_or_not() {
    const HEADERS: u8 = 1;
    const SETTINGS: u8 = 4;
    const PING: u8 = 6;
    const GOAWAY: u8 = 7;
    for backend in ["openssl", "rustls-ring"] {
        let served = Served::start(&[
            "--backend",
            backend,
            "--duration",
            "30",
            "--keep-alive-timeout",
            "1",
            "--header-timeout",
            "30",
        ]);
        let tcp = std::net::TcpStream::connect(served.address).unwrap();
        let mut connector = SslConnector::builder(SslMethod::tls()).unwrap();
        connector.set_ca_file(&served.root_pem).unwrap();
        connector.set_alpn_protos(b"\x02h2\x08http/1.1").unwrap();
        let mut tls = connector
            .build()
            .connect(tlslab::certs::SERVER_NAME, tcp)
            .unwrap();
        assert_eq!(tls.ssl().selected_alpn_protocol(), Some(&b"h2"[..]));
        let started = Instant::now();
        // The preface, empty SETTINGS and one request (HEADERS, stream 1,
        // END_STREAM and END_HEADERS: GET https / from HPACK's static
        // table and :authority tlslab.test, answered 404), then a PING
        // every 200 ms.
        tls.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
            .unwrap();
        tls.write_all(b"\0\0\x10\x01\x05\0\0\0\x01\x82\x87\x84\x01\x0btlslab.test")
            .unwrap();
        tls.get_ref()
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut received = Vec::new();
        let mut chunk = [0u8; 4096];
        let closed = loop {
            assert!(
                started.elapsed() < Duration::from_secs(8),
                "{backend}: still open after {:?}: frames {:?}",
                started.elapsed(),
                frame_types(&received)
            );
            match tls.read(&mut chunk) {
                Ok(0) => break started.elapsed(),
                Ok(read) => received.extend_from_slice(&chunk[..read]),
                Err(error)
                    if matches!(
                        error.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    // A PING that meets the closed connection fails;
                    // the GOAWAY sent before the close may still wait
                    // to be read, so reading goes on until it ends.
                    let ping = b"\0\0\x08\x06\0\0\0\0\0tlslab!!";
                    let _ = tls.write_all(ping);
                }
                Err(_) => break started.elapsed(),
            }
        };
        let types = frame_types(&received);
        assert_eq!(types.first(), Some(&SETTINGS), "{backend}: {types:?}");
        assert!(types.contains(&HEADERS), "{backend}: no answer: {types:?}");
        assert!(
            types.contains(&PING),
            "{backend}: the PINGs were not answered: {types:?}"
        );
        assert_eq!(types.last(), Some(&GOAWAY), "{backend}: {types:?}");
        assert!(
            closed < Duration::from_secs(4),
            "{backend}: PINGs kept the idle session open for {closed:?}"
        );
        let ended = served.terminate();
        assert_eq!(ended.code, Some(0), "{backend}: {}", ended.stderr);
    }
}
