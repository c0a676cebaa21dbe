//! 0-RTT (`--resumption 0rtt`, issue 24 item 1): QUIC handshakes on quinn
//! with both rustls providers, over memory and over loopback UDP, resume
//! with a ticket, carry a request in 0-RTT packets that the server reads
//! inside the handshake, and are verified as resumed with early data
//! accepted; OpenSSL's QUIC, TLS 1.3 over streams and TLS 1.2 say why; a
//! matrix in which no row can send early data is refused (exit 2) saying
//! why.

use tlslab::backend::Backend;
use tlslab::measure::verify;
use tlslab::scenario::{BackendId, CertKind, Group, Named, Resumption, TlsVersion, Transport};

use crate::backends::scenario;
use crate::util::{self, has_row, tlslab};

fn open(id: BackendId) -> std::sync::Arc<dyn Backend> {
    (id.descriptor().open)()
}

#[test]
fn zero_rtt_quic_handshakes_on_both_rustls_providers_have_their_early_data_accepted() {
    for transport in [Transport::Memory, Transport::Udp] {
        zero_rtt_handshakes_over(transport);
    }
}

/// Three 0-RTT handshakes over `transport` on each rustls provider, each
/// verified resumed with its early data accepted.
fn zero_rtt_handshakes_over(transport: Transport) {
    let mut zero_rtt = scenario(TlsVersion::Quic, Group::X25519, CertKind::EcdsaP256);
    zero_rtt.resumption = Resumption::ZeroRtt;
    zero_rtt.transport = transport;
    let credentials = util::certs()
        .get(zero_rtt.cert, zero_rtt.chain_depth)
        .expect("certificates");
    for id in [BackendId::RustlsAwsLc, BackendId::RustlsRing] {
        let backend = open(id);
        let what = format!("{} {transport:?}", id.id());
        assert_eq!(backend.unsupported_reason(&zero_rtt), None, "{what}");
        let mut handshaker = backend.handshaker(&zero_rtt, &credentials).unwrap();
        for _ in 0..3 {
            let sample = handshaker.handshake().unwrap();
            let negotiated = &sample.negotiated;
            assert!(negotiated.resumed, "{what}: {negotiated:?}");
            assert!(negotiated.early_data, "{what}: {negotiated:?}");
            // Resumed: the server signs nothing.
            assert_eq!(negotiated.signature, None);
            assert!(sample.client.cpu_ns > 0 && sample.server.cpu_ns > 0);
            verify::check(&zero_rtt, negotiated, true).unwrap();
            // The same sample is no psk row: early data is checked too.
            let mut psk = zero_rtt;
            psk.resumption = Resumption::Psk;
            assert_eq!(
                verify::check(&psk, negotiated, true).unwrap_err().what,
                "early data"
            );
        }
    }
}

#[test]
fn where_zero_rtt_cannot_run_the_row_says_why() {
    let mut quic = scenario(TlsVersion::Quic, Group::X25519, CertKind::EcdsaP256);
    quic.resumption = Resumption::ZeroRtt;
    let mut tls = quic;
    tls.version = TlsVersion::Tls13;
    tls.mtu_bytes = None;
    let reason = |id: BackendId, s| open(id).unsupported_reason(s).unwrap_or_default();
    let openssl = reason(BackendId::Openssl, &quic);
    assert!(openssl.contains("'s QUIC has no 0-RTT"), "{openssl}");
    for id in [
        BackendId::Openssl,
        BackendId::RustlsAwsLc,
        BackendId::RustlsRing,
    ] {
        let why = reason(id, &tls);
        assert!(
            why.starts_with("0-RTT over TLS 1.3 is not built on"),
            "{}: {why}",
            id.id()
        );
    }
    // QUIC over UDP sockets resumes and sends early data as over memory.
    let mut udp = quic;
    udp.transport = Transport::Udp;
    for id in [BackendId::RustlsAwsLc, BackendId::RustlsRing] {
        assert_eq!(open(id).unsupported_reason(&udp), None, "{}", id.id());
    }
}

/// Issue 24: resumed QUIC handshakes (`psk`, `0rtt`) over loopback UDP on
/// quinn with both rustls providers are rows that run and pass their
/// verification (a sample that did not resume, or whose 0-RTT request was
/// not read under 0-RTT keys, fails its row), beside OpenSSL's QUIC, which
/// resumes over UDP too and says why it sends no early data.
#[test]
fn resumed_and_zero_rtt_quic_rows_run_over_udp() {
    let run = tlslab(&[
        "handshake",
        "--no-db",
        "--backend",
        "rustls-aws-lc,rustls-ring,openssl",
        "--tls",
        "quic",
        "--group",
        "x25519",
        "--cert",
        "ecdsa_p256",
        "--resumption",
        "psk,0rtt",
        "--transport",
        "udp",
        "--runs",
        "3",
        "--warmup",
        "0",
    ]);
    run.expect_code(0);
    let table = run.stdout();
    let mut rows = vec![("openssl", "psk")];
    for backend in ["rustls-aws-lc", "rustls-ring"] {
        rows.extend([(backend, "psk"), (backend, "0rtt")]);
    }
    for (backend, resumption) in rows {
        let row = table
            .lines()
            .find(|line| has_row(line, &[backend, "QUIC", resumption, "UDP"]))
            .unwrap_or_else(|| panic!("no {backend} {resumption} row over UDP: {table}"));
        assert!(!row.contains("unsupported"), "{table}");
        assert!(!row.contains("failed"), "{table}");
        assert!(!row.contains("memory only"), "{table}");
    }
    assert!(
        has_row(&table, &["openssl", "QUIC", "0rtt", "QUIC has no 0-RTT"]),
        "{table}"
    );
}

#[test]
fn zero_rtt_rows_run_beside_rows_that_say_why() {
    let run = tlslab(&[
        "handshake",
        "--no-db",
        "--backend",
        "rustls-aws-lc,rustls-ring,openssl",
        "--tls",
        "1.3,quic",
        "--group",
        "x25519",
        "--cert",
        "ecdsa_p256",
        "--resumption",
        "early",
        "--runs",
        "3",
        "--warmup",
        "0",
        "--wire",
    ]);
    run.expect_code(0);
    let table = run.stdout();
    // The wire table traces the 0-RTT rows and says what its round trips
    // do not count.
    assert!(
        has_row(
            &table,
            &[
                "rustls-ring",
                "QUIC",
                "0rtt",
                "0-RTT: the request left with the client's first flight"
            ]
        ),
        "{table}"
    );
    for backend in ["rustls-aws-lc", "rustls-ring"] {
        let row = table
            .lines()
            .find(|line| has_row(line, &[backend, "QUIC", "0rtt"]))
            .unwrap_or_else(|| panic!("no {backend} 0-RTT row: {table}"));
        assert!(!row.contains("unsupported"), "{table}");
        assert!(!row.contains("failed"), "{table}");
    }
    assert!(
        has_row(&table, &["openssl", "QUIC", "0rtt", "QUIC has no 0-RTT"]),
        "{table}"
    );
    assert!(
        has_row(
            &table,
            &[
                "openssl",
                "TLS 1.3",
                "0rtt",
                "0-RTT over TLS 1.3 is not built"
            ]
        ),
        "{table}"
    );
}

#[test]
fn zero_rtt_where_no_row_can_send_early_data_is_refused_saying_why() {
    for (args, says) in [
        (
            &["--backend", "openssl", "--tls", "quic"][..],
            "--resumption 0rtt: no row can send 0-RTT data; openssl handshake_quic_",
        ),
        (
            &["--tls", "1.2"][..],
            "0-RTT (early data) is TLS 1.3's; TLS 1.2 has none",
        ),
    ] {
        let mut command = vec![
            "handshake",
            "--no-db",
            "--resumption",
            "0rtt",
            "--runs",
            "2",
        ];
        command.extend_from_slice(args);
        let run = tlslab(&command);
        run.expect_code(2);
        assert!(run.stderr().contains(says), "{args:?}: {}", run.stderr());
    }
    let run = tlslab(&["load", "--resumption", "0rtt", "--rate", "10"]);
    run.expect_code(2);
    assert!(
        run.stderr().contains("load's clients send no early data"),
        "{}",
        run.stderr()
    );
}
