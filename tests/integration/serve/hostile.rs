//! `tlslab serve` against the clients that tried to starve or break it:
//! idle and trickling connections beside a well-behaved client, a head
//! that never ends, huge pages, a huge head, bare LF line ends, a record
//! the server cannot decrypt, a handshake fragment interleaved with data,
//! and a KeyUpdate in the middle of a request.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore};
use tlslab::workload::site::page_bytes;

use super::{connect, exchange, read_response, Served};
use crate::util::has_row;

const GET_PAGE_10: &[u8] = b"GET /page_10 HTTP/1.1\r\nHost: tlslab.test\r\n\r\n";

/// 300 connections that send nothing and 3 that trickle a request head a
/// byte at a time, on 2 workers: a well-behaved client is still answered
/// within a second, every time.
#[test]
fn idle_and_trickling_clients_do_not_starve_a_good_one() {
    let served = Served::start(&["--backend", "rustls-aws-lc", "--workers", "2"]);
    let idle: Vec<TcpStream> = (0..300)
        .map(|_| TcpStream::connect(served.address).unwrap())
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let tricklers: Vec<_> = (0..3)
        .map(|_| {
            let (address, root, stop) = (served.address, served.root_pem.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut tls = connect(address, &root);
                for byte in b"GET /page_10 HTTP/1.1\r\nHost: tlslab.test\r\n"
                    .iter()
                    .cycle()
                {
                    if stop.load(Ordering::Relaxed) || tls.write_all(&[*byte]).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    for _ in 0..3 {
        let began = Instant::now();
        let mut tls = connect(served.address, &served.root_pem);
        let (head, body) = exchange(&mut tls, GET_PAGE_10);
        let took = began.elapsed();
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert_eq!(body, page_bytes(10));
        assert!(
            took < Duration::from_secs(1),
            "a good client waited {took:?} beside 300 idle and 3 trickling ones"
        );
    }
    stop.store(true, Ordering::Relaxed);
    for trickler in tricklers {
        trickler.join().unwrap();
    }
    drop(idle);
    let ended = served.terminate();
    assert!(
        has_row(&ended.stdout, &["requests answered with a page", "3"]),
        "{}",
        ended.stdout
    );
}

/// A head trickled a byte every 200 ms gets one deadline for the whole
/// head (here 1 s), not a new one per byte: 408, then the close.
#[test]
fn a_trickled_request_head_gets_one_deadline_and_a_408() {
    let served = Served::start(&["--backend", "openssl", "--header-timeout", "1"]);
    let began = Instant::now();
    let mut tls = connect(served.address, &served.root_pem);
    tls.get_ref()
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    'trickle: for byte in b"GET /page_10 HTTP/1.1\r\nX: "
        .iter()
        .chain([b'y'; 100].iter())
    {
        let _ = tls.write_all(&[*byte]);
        loop {
            match tls.read(&mut chunk) {
                Ok(0) => break 'trickle,
                Ok(read) => answer.extend_from_slice(&chunk[..read]),
                Err(error)
                    if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
                {
                    break
                }
                Err(_) => break 'trickle,
            }
        }
        assert!(
            began.elapsed() < Duration::from_secs(5),
            "still no answer after {:?} of trickling",
            began.elapsed()
        );
    }
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("Connection: close"), "{answer}");
    let ended = served.terminate();
    assert!(
        has_row(
            &ended.stdout,
            &["request heads not complete in time (408)", "1"]
        ),
        "{}",
        ended.stdout
    );
}

/// Requests for the largest pages, each read in part: the server streams
/// them, so its memory stays small (it once kept every page it made, up to
/// 16 of 100 MB per worker); a page read in full is still exact.
#[test]
fn large_pages_are_streamed_with_bounded_memory() {
    let served = Served::start(&["--backend", "rustls-ring", "--workers", "2"]);
    for size in (99_999_993..=100_000_000).rev() {
        let mut tls = connect(served.address, &served.root_pem);
        let request = format!("GET /page_{size} HTTP/1.1\r\nHost: tlslab.test\r\n\r\n");
        tls.write_all(request.as_bytes()).unwrap();
        let mut first = vec![0u8; 1 << 20];
        tls.read_exact(&mut first).unwrap();
        assert!(first.starts_with(b"HTTP/1.1 200"));
    }
    let mut tls = connect(served.address, &served.root_pem);
    let (head, body) = exchange(
        &mut tls,
        b"GET /page_10000000 HTTP/1.1\r\nHost: tlslab.test\r\n\r\n",
    );
    assert!(head.contains("Content-Length: 10000000"), "{head}");
    assert!(body == page_bytes(10_000_000), "the 10 MB page differs");
    let peak_kb = served.peak_rss_kb();
    assert!(
        peak_kb < 100_000,
        "serve's resident memory peaked at {peak_kb} kB"
    );
    served.terminate();
}

/// A 1 MB request head is answered 431 and the connection closed; the
/// client, still sending, is not reset before it can read the answer.
#[test]
fn a_1_mb_request_head_is_answered_431() {
    let served = Served::start(&["--backend", "rustls-aws-lc"]);
    let mut tls = connect(served.address, &served.root_pem);
    let mut head = b"GET /page_10 HTTP/1.1\r\nX-Long: ".to_vec();
    head.resize(1 << 20, b'a');
    head.extend_from_slice(b"\r\n\r\n");
    let _ = tls.write_all(&head);
    let mut answer = Vec::new();
    let _ = tls.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 431"), "answer: {answer:?}");
    assert!(answer.contains("Connection: close"), "{answer}");
    served.terminate();
}

/// Line ends of a bare LF (RFC 9112 lets a server accept them) are
/// answered at once, not after a wait for a CRLF that never comes.
#[test]
fn a_request_with_bare_lf_line_ends_is_answered_at_once() {
    let served = Served::start(&["--backend", "openssl"]);
    let mut tls = connect(served.address, &served.root_pem);
    tls.get_ref()
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    let (head, body) = exchange(&mut tls, b"GET /page_10 HTTP/1.1\nHost: tlslab.test\n\n");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(body, page_bytes(10));
    served.terminate();
}

/// A rustls client of the test, over its own socket, trusting `root_pem`.
fn rustls_client(
    address: SocketAddr,
    root_pem: &Path,
    tls12: bool,
) -> (ClientConnection, TcpStream) {
    let pem = std::fs::read(root_pem).unwrap();
    let root = openssl::x509::X509::from_pem(&pem)
        .unwrap()
        .to_der()
        .unwrap();
    let mut roots = RootCertStore::empty();
    roots.add(CertificateDer::from(root)).unwrap();
    let versions: &[&rustls::SupportedProtocolVersion] = if tls12 {
        &[&rustls::version::TLS12]
    } else {
        &[&rustls::version::TLS13]
    };
    let config = ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_protocol_versions(versions)
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let mut client = ClientConnection::new(
        Arc::new(config),
        ServerName::try_from(tlslab::certs::SERVER_NAME).unwrap(),
    )
    .unwrap();
    let mut tcp = TcpStream::connect(address).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    while client.is_handshaking() {
        client.complete_io(&mut tcp).unwrap();
    }
    while client.wants_write() {
        client.write_tls(&mut tcp).unwrap();
    }
    (client, tcp)
}

/// The TLS records in `bytes` (type and length), as far as they are whole.
fn records(bytes: &[u8]) -> Vec<(u8, usize)> {
    let mut found = Vec::new();
    let mut rest = bytes;
    while rest.len() >= 5 {
        let length = usize::from(u16::from_be_bytes([rest[3], rest[4]]));
        found.push((rest[0], length));
        rest = &rest[(5 + length).min(rest.len())..];
    }
    found
}

/// A record the server cannot decrypt is a fatal error: the server sends
/// its alert and closes, with nothing after it.
#[test]
fn a_fatal_tls_error_ends_with_the_alert_and_no_close_notify() {
    for backend in ["openssl", "rustls-aws-lc"] {
        for tls12 in [false, true] {
            let version = if tls12 { "1.2" } else { "1.3" };
            let served = Served::start(&["--backend", backend, "--tls", version]);
            let (_client, mut tcp) = rustls_client(served.address, &served.root_pem, tls12);
            // Application data under keys the server does not have.
            let mut bogus = vec![0x17, 0x03, 0x03, 0x00, 0x40];
            bogus.extend_from_slice(&[0x5a; 0x40]);
            tcp.write_all(&bogus).unwrap();
            let mut after = Vec::new();
            let _ = tcp.read_to_end(&mut after);
            let sent = records(&after);
            assert_eq!(
                sent.len(),
                1,
                "{backend} TLS {version}: after the bad record the server sent {sent:?} (one alert expected)"
            );
            if tls12 {
                assert_eq!(sent[0].0, 0x15, "{backend} TLS 1.2: an alert record");
            }
            let ended = served.terminate();
            assert_eq!(ended.code, Some(0), "{}", ended.stderr);
        }
    }
}

/// TLS 1.3 records under a connection's traffic keys (AES-128-GCM), made
/// by the test itself so it can send what no TLS library would.
struct Records {
    key: Vec<u8>,
    iv: Vec<u8>,
    sequence: u64,
}

impl Records {
    fn new((sequence, secrets): (u64, rustls::ConnectionTrafficSecrets)) -> Self {
        let rustls::ConnectionTrafficSecrets::Aes128Gcm { key, iv } = secrets else {
            panic!("the test offers AES-128-GCM only");
        };
        Self {
            key: key.as_ref().to_vec(),
            iv: iv.as_ref().to_vec(),
            sequence,
        }
    }

    fn nonce(&mut self) -> Vec<u8> {
        let mut nonce = self.iv.clone();
        for (byte, count) in nonce[4..].iter_mut().zip(self.sequence.to_be_bytes()) {
            *byte ^= count;
        }
        self.sequence += 1;
        nonce
    }

    /// One record of inner content type `kind`.
    fn seal(&mut self, kind: u8, payload: &[u8]) -> Vec<u8> {
        let mut inner = payload.to_vec();
        inner.push(kind);
        let length = (inner.len() + 16) as u16;
        let mut record = vec![0x17, 0x03, 0x03];
        record.extend_from_slice(&length.to_be_bytes());
        let mut tag = [0u8; 16];
        let nonce = self.nonce();
        let sealed = openssl::symm::encrypt_aead(
            openssl::symm::Cipher::aes_128_gcm(),
            &self.key,
            Some(&nonce),
            &record,
            &inner,
            &mut tag,
        )
        .unwrap();
        record.extend_from_slice(&sealed);
        record.extend_from_slice(&tag);
        record
    }

    /// The inner content type and payload of each record in `bytes`.
    fn open_all(&mut self, bytes: &[u8]) -> Vec<(u8, Vec<u8>)> {
        let mut opened = Vec::new();
        let mut rest = bytes;
        while rest.len() >= 5 {
            let length = usize::from(u16::from_be_bytes([rest[3], rest[4]]));
            let (header, body) = (&rest[..5], &rest[5..5 + length]);
            let (sealed, tag) = body.split_at(length - 16);
            let nonce = self.nonce();
            let mut inner = openssl::symm::decrypt_aead(
                openssl::symm::Cipher::aes_128_gcm(),
                &self.key,
                Some(&nonce),
                header,
                sealed,
                tag,
            )
            .unwrap();
            while inner.last() == Some(&0) {
                inner.pop();
            }
            let kind = inner.pop().unwrap();
            opened.push((kind, inner));
            rest = &rest[5 + length..];
        }
        opened
    }
}

/// A handshake message split over two records with application data
/// between them (a fragmented KeyUpdate, as a conformance suite sends) is
/// a fatal error: the server sends the alert its library queued, if any,
/// and never close_notify (the rustls server sent a warning close_notify,
/// since rustls queues no alert for this error).
#[test]
fn a_handshake_fragment_interleaved_with_data_gets_no_close_notify() {
    for backend in ["rustls-aws-lc", "openssl"] {
        let served = Served::start(&["--backend", backend, "--tls", "1.3"]);
        let pem = std::fs::read(&served.root_pem).unwrap();
        let mut roots = RootCertStore::empty();
        for cert in openssl::x509::X509::stack_from_pem(&pem).unwrap() {
            roots
                .add(CertificateDer::from(cert.to_der().unwrap()))
                .unwrap();
        }
        let mut provider = rustls::crypto::aws_lc_rs::default_provider();
        provider.cipher_suites =
            vec![rustls::crypto::aws_lc_rs::cipher_suite::TLS13_AES_128_GCM_SHA256];
        let mut config = ClientConfig::builder_with_provider(Arc::new(provider))
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.enable_secret_extraction = true;
        let mut client = ClientConnection::new(
            Arc::new(config),
            ServerName::try_from(tlslab::certs::SERVER_NAME).unwrap(),
        )
        .unwrap();
        let mut tcp = TcpStream::connect(served.address).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        while client.is_handshaking() || client.wants_write() {
            client.complete_io(&mut tcp).unwrap();
        }
        let secrets = client.dangerous_extract_secrets().unwrap();
        let (mut out, mut back) = (Records::new(secrets.tx), Records::new(secrets.rx));
        // A KeyUpdate's first two bytes, data, then the rest of it.
        let mut probe = out.seal(0x16, &[0x18, 0x00]);
        probe.extend(out.seal(0x17, b"GET"));
        probe.extend(out.seal(0x16, &[0x00, 0x01, 0x00]));
        tcp.write_all(&probe).unwrap();
        let mut after = Vec::new();
        let _ = tcp.read_to_end(&mut after);
        let sent = back.open_all(&after);
        assert!(
            sent.iter().all(|(kind, payload)| *kind == 0x15 && payload[0] == 2),
            "{backend}: after the interleaved fragment the server sent {sent:?} (only a fatal alert, or nothing, expected)"
        );
        assert!(sent.len() <= 1, "{backend}: {sent:?}");
        let ended = served.terminate();
        assert_eq!(ended.code, Some(0), "{}", ended.stderr);
    }
}

/// A KeyUpdate asking for one in return, sent in the middle of a request:
/// the server's KeyUpdate comes at once, not with the response (the
/// client waits for it before it sends the rest of the request).
#[test]
fn a_key_update_is_answered_before_the_request_is_complete() {
    for backend in ["openssl", "rustls-aws-lc", "rustls-ring"] {
        let served = Served::start(&["--backend", backend, "--tls", "1.3"]);
        let (mut client, mut tcp) = rustls_client(served.address, &served.root_pem, false);
        client
            .writer()
            .write_all(b"GET /page_10 HTTP/1.1\r\nHost: tls")
            .unwrap();
        client.refresh_traffic_keys().unwrap();
        while client.wants_write() {
            client.write_tls(&mut tcp).unwrap();
        }
        tcp.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut reply = [0u8; 1024];
        let read = match tcp.read(&mut reply) {
            Ok(read) => read,
            Err(error) => panic!("{backend}: no KeyUpdate from the server in 2 s ({error})"),
        };
        assert!(read > 0, "{backend}: the server closed the connection");
        client.read_tls(&mut &reply[..read]).unwrap();
        client.process_new_packets().unwrap();
        client
            .writer()
            .write_all(b"lab.test\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut stream = rustls::Stream::new(&mut client, &mut tcp);
        stream.flush().unwrap();
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 200"), "{backend}: {answer}");
        served.terminate();
    }
}

/// Requests pipelined in one write are answered in order.
#[test]
fn pipelined_requests_are_answered_in_order() {
    let served = Served::start(&["--backend", "rustls-ring"]);
    let mut tls = connect(served.address, &served.root_pem);
    tls.write_all(b"GET /page_3 HTTP/1.1\r\n\r\nGET /page_5 HTTP/1.1\r\n\r\n")
        .unwrap();
    let (first, body) = read_response(&mut tls);
    assert!(first.contains("Content-Length: 3"), "{first}");
    assert_eq!(body, page_bytes(3));
    let (second, body) = read_response(&mut tls);
    assert!(second.contains("Content-Length: 5"), "{second}");
    assert_eq!(body, page_bytes(5));
    served.terminate();
}
