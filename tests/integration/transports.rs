//! The socket transports on loopback: a verified handshake per transport
//! and backend (dimpl's DTLS over UDP too), every registered backend over
//! the transports it declares and a row saying why over the others, DTLS
//! over UDP with the server's cookie exchange on the wire, bulk data over TCP checked byte for byte, a socket that cannot
//! open failing its row with the kernel's reason, and transport labels
//! that come back from the store and show in `tlslab report`.

use std::net::{TcpListener, UdpSocket};
use std::process::Command;

use tlslab::backend::openssl::dtls::{trace_udp_handshake, HELLO_VERIFY_REQUEST};
use tlslab::backend::{backend_by_id, Backend};
use tlslab::measure::Outcome;
use tlslab::scenario::bulk::{BulkScenario, Channel};
use tlslab::scenario::{
    Aead, CertKind, Group, HandshakeScenario, Named, Resumption, TlsVersion, Transport,
};
use tlslab::transport::LOOPBACK_PORT_ENV;
use tlslab::workload::bulk::BulkProbe;

use crate::backends::{assert_measured, measure_as, scenario};
use crate::each::for_each_backend;
use crate::util::{self, has_row, tlslab};

/// The registered backends that speak TLS over TCP (dimpl is DTLS only).
fn tls_backends() -> Vec<&'static str> {
    tlslab::backend::listed()
        .filter(|descriptor| {
            let caps = (descriptor.capabilities)();
            caps.transports.contains(&Transport::Tcp) && caps.versions.contains(&TlsVersion::Tls13)
        })
        .map(|descriptor| descriptor.name())
        .collect()
}

fn over(mut s: HandshakeScenario, transport: Transport) -> HandshakeScenario {
    s.transport = transport;
    s
}

/// Three verified handshakes; each side took CPU time in its own thread,
/// and neither side's share outlasts the handshake.
fn assert_measured_over_socket(backend: &dyn Backend, s: &HandshakeScenario) {
    assert!(s.protocol_conflict().is_none(), "{}", s.label());
    assert!(backend.unsupported_reason(s).is_none(), "{}", s.label());
    let samples =
        measure_as(backend, s, s).unwrap_or_else(|e| panic!("{} {}: {e}", backend.id(), s.label()));
    for sample in samples {
        let (client, server) = (sample.client, sample.server);
        assert!(client.cpu_ns > 0 && server.cpu_ns > 0, "{sample:?}");
        // Two threads: the sides overlap in time, each inside the whole.
        assert!(client.wall_ns <= sample.wall_ns, "{sample:?}");
        assert!(server.wall_ns <= sample.wall_ns + 1_000_000, "{sample:?}");
        assert_eq!(sample.negotiated.resumed, s.resumption.is_on());
    }
}

/// At least OpenSSL and both rustls speak TLS over TCP.
#[test]
fn three_backends_or_more_speak_tls_over_tcp() {
    let ids = tls_backends();
    assert!(ids.len() >= 3, "{ids:?}");
}

for_each_backend! {
    /// TLS 1.2 and 1.3 over TCP, and TLS 1.3 resumed, on every backend that
    /// speaks TLS over TCP; one that does not says why (dimpl: DTLS only),
    /// and the test prints a `skipped:` line.
    fn a_verified_tls_handshake_over_tcp_per_backend(backend: &dyn Backend) {
        let tls13 = over(
            scenario(TlsVersion::Tls13, Group::X25519, CertKind::EcdsaP256),
            Transport::Tcp,
        );
        if !tls_backends().contains(&backend.id()) {
            let reason = backend.unsupported_reason(&tls13);
            assert!(reason.as_ref().is_some_and(|r| !r.is_empty()), "{}", backend.id());
            util::note_skipped(&crate::each::current_test(), &reason.unwrap());
            return;
        }
        for version in [TlsVersion::Tls12, TlsVersion::Tls13] {
            let s = over(
                scenario(version, Group::X25519, CertKind::EcdsaP256),
                Transport::Tcp,
            );
            assert_eq!(s.label().rsplit('_').next(), Some("tcp"));
            assert_measured_over_socket(backend, &s);
        }
        // Resumption reads the session tickets after each handshake.
        let mut resumed = tls13;
        resumed.resumption = Resumption::Psk;
        assert_measured_over_socket(backend, &resumed);
    }
}

#[test]
fn a_verified_dtls_handshake_over_udp_with_resumption_and_mutual_auth() {
    let openssl = backend_by_id("openssl").unwrap();
    let mut s = over(
        scenario(TlsVersion::Dtls12, Group::P256, CertKind::EcdsaP256),
        Transport::Udp,
    );
    assert_measured_over_socket(openssl.as_ref(), &s);
    s.resumption = Resumption::Ticket;
    assert_measured_over_socket(openssl.as_ref(), &s);
    s.resumption = Resumption::Off;
    s.mutual = true;
    s.mtu_bytes = Some(576);
    assert_measured_over_socket(openssl.as_ref(), &s);
}

/// dimpl over loopback UDP: DTLS 1.2 and 1.3 handshakes, each side in its
/// own thread on its socket, verified like every handshake (mutual
/// authentication at a small MTU too).
#[test]
fn a_verified_dimpl_handshake_over_udp() {
    let dimpl = backend_by_id("dimpl").unwrap();
    for version in [TlsVersion::Dtls12, TlsVersion::Dtls13] {
        let mut s = over(
            scenario(version, Group::P256, CertKind::EcdsaP256),
            Transport::Udp,
        );
        assert_eq!(s.label().rsplit('_').next(), Some("udp"));
        assert_measured_over_socket(dimpl.as_ref(), &s);
        s.mutual = true;
        s.mtu_bytes = Some(576);
        assert_measured_over_socket(dimpl.as_ref(), &s);
    }
}

/// Over real UDP the server still answers the first ClientHello with a
/// HelloVerifyRequest (its cookie bound to the client's socket address),
/// and only the second ClientHello gets a ServerHello.
#[test]
fn dtls_over_udp_does_the_cookie_exchange() {
    let s = over(
        scenario(TlsVersion::Dtls12, Group::X25519, CertKind::EcdsaP256),
        Transport::Udp,
    );
    let credentials = util::certs().get(s.cert, s.chain_depth).unwrap();
    let trace = trace_udp_handshake(&s, &credentials).unwrap();
    assert_eq!(trace.negotiated.version, "DTLSv1.2");
    let server = trace.server_handshake_types();
    assert_eq!(server.first(), Some(&HELLO_VERIFY_REQUEST), "{server:?}");
    assert!(server.contains(&2), "a ServerHello follows: {server:?}");
    let client = trace.client_handshake_types();
    assert_eq!(
        client.iter().filter(|t| **t == 1).count(),
        2,
        "two ClientHellos: {client:?}"
    );
}

/// A protocol on the wrong socket is a row that says why, and a matrix
/// with both sockets gives TLS over TCP and DTLS over UDP only.
#[test]
fn each_protocol_goes_over_its_own_socket() {
    let wrong = over(
        scenario(TlsVersion::Tls13, Group::X25519, CertKind::EcdsaP256),
        Transport::Udp,
    );
    assert!(wrong.protocol_conflict().unwrap().contains("byte stream"));
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("rows.json");
    tlslab(&[
        "handshake",
        "--no-db",
        "-q",
        "--backend",
        "openssl",
        "--tls",
        "1.3,dtls1.2",
        "--group",
        "p256",
        "--cert",
        "ecdsa_p256",
        "--transport",
        "tcp,udp",
        "--runs",
        "2",
        "--warmup",
        "0",
        "--export-json",
        json.to_str().unwrap(),
    ])
    .expect_code(0);
    let stdout = std::fs::read_to_string(&json).unwrap();
    assert!(
        stdout.contains("handshake_1.3_p256_ecdsa_p256_aes128gcm_tcp"),
        "{stdout}"
    );
    assert!(
        stdout.contains("handshake_dtls1.2_p256_ecdsa_p256_aes128gcm_udp"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("_1.3_p256_ecdsa_p256_aes128gcm_udp"),
        "{stdout}"
    );
}

for_each_backend! {
    mock;

    /// Every registered backend (the mock's fake included) runs a verified
    /// handshake over each transport it declares, with each version it speaks
    /// that the transport carries, and says why (naming the transport) over
    /// each it does not, or where it declares the transport but not for that
    /// version (OpenSSL's QUIC over UDP).
    fn every_backend_runs_over_the_transports_it_declares_and_says_why_not(
        backend: &dyn Backend
    ) {
        let caps = backend.capabilities().clone();
        let mut measured = 0;
        for transport in Transport::ALL {
            for version in &caps.versions {
                if transport.conflict(*version).is_some() {
                    continue;
                }
                let groups = match version.tls_rules() {
                    TlsVersion::Tls13 => &caps.groups_tls13,
                    _ => &caps.groups_tls12,
                };
                let group = [Group::X25519, Group::P256]
                    .into_iter()
                    .find(|g| groups.contains(g))
                    .unwrap_or(groups[0]);
                let cert = if caps.certs.contains(&CertKind::EcdsaP256) {
                    CertKind::EcdsaP256
                } else {
                    caps.certs[0]
                };
                let s = over(scenario(*version, group, cert), *transport);
                if !caps.transports.contains(transport) || backend.unsupported_reason(&s).is_some()
                {
                    let reason = backend
                        .unsupported_reason(&s)
                        .unwrap_or_else(|| panic!("{} claims {}", backend.id(), s.label()));
                    assert!(
                        reason.contains(transport.display()),
                        "{}: {reason}",
                        s.label()
                    );
                } else if transport.is_socket() {
                    assert_measured_over_socket(backend, &s);
                    measured += 1;
                } else {
                    assert_measured(backend, &s);
                    measured += 1;
                }
            }
        }
        assert!(measured > 0, "{} ran over no transport", backend.id());
    }
}

/// A transport the backend does not speak is a row that says why, and the
/// matrix goes on (the mock's handshakes are computed, not carried: it
/// runs over memory only).
#[test]
fn an_unsupported_transport_is_a_row_with_its_reason() {
    let run = tlslab(&[
        "handshake",
        "--no-db",
        "--backend",
        "mock",
        "--tls",
        "1.3",
        "--group",
        "x25519",
        "--cert",
        "ecdsa_p256",
        "--transport",
        "memory,tcp",
        "--runs",
        "2",
        "--warmup",
        "0",
    ]);
    run.expect_code(0);
    let table = run.stdout();
    assert!(
        has_row(
            &table,
            &["mock", "does not run over TCP (it runs over memory only)"]
        ),
        "{table}"
    );
    let memory = table
        .lines()
        .find(|line| has_row(line, &["mock", "TLS 1.3", "memory"]))
        .unwrap_or_else(|| panic!("no memory row: {table}"));
    assert!(!memory.contains("unsupported"), "{table}");
}

#[test]
fn bulk_over_tcp_carries_every_byte_per_backend_and_without_crypto() {
    let rows: Vec<(Option<&str>, BulkScenario)> = [
        (None, BulkScenario::plain(1000)),
        (
            Some("openssl"),
            BulkScenario {
                channel: Channel::Tls {
                    version: TlsVersion::Tls12,
                    aead: Aead::Aes128CbcSha256,
                },
                write_bytes: 1000,
                transport: Transport::Memory,
            },
        ),
    ]
    .into_iter()
    .chain(tls_backends().into_iter().map(|id| {
        (
            Some(id),
            BulkScenario {
                channel: Channel::Tls {
                    version: TlsVersion::Tls13,
                    aead: Aead::Aes128Gcm,
                },
                write_bytes: 16_384,
                transport: Transport::Memory,
            },
        )
    }))
    .collect();
    for (id, row) in rows {
        two_checked_samples(id, row.over(Transport::Tcp));
    }
}

/// A bulk row (no backend: the no-crypto row) prepared and sampled twice:
/// every byte arrives and is checked, each side has its CPU time.
fn two_checked_samples(id: Option<&str>, row: BulkScenario) {
    let backend = id.map(|id| backend_by_id(id).unwrap());
    let (mut probe, negotiated) =
        BulkProbe::prepare(backend.as_deref(), &row, util::certs(), Some(300_000))
            .unwrap_or_else(|o| panic!("{}: {o:?}", row.label()));
    assert_eq!(negotiated.is_some(), id.is_some(), "{}", row.label());
    for _ in 0..2 {
        let sample = probe
            .run()
            .unwrap_or_else(|e| panic!("{}: {e}", row.label()));
        assert_eq!(sample.bytes, probe.sizing().sample_bytes() as u64);
        assert!(
            sample.sender_cpu_ns > 0 && sample.receiver_cpu_ns > 0,
            "{sample:?}"
        );
    }
}

/// DTLS application data over loopback UDP, on OpenSSL (1.2) and dimpl
/// (1.2 and 1.3), and the no-crypto datagrams row: every byte arrives and
/// is checked, each side has its CPU time.
#[test]
fn bulk_over_udp_carries_every_byte_per_dtls_backend_and_without_crypto() {
    let dtls = |version, aead, write_bytes| BulkScenario {
        channel: Channel::Tls { version, aead },
        write_bytes,
        transport: Transport::Udp,
    };
    let rows = [
        (
            None,
            BulkScenario::plain_datagrams(1000).over(Transport::Udp),
        ),
        (
            Some("openssl"),
            dtls(TlsVersion::Dtls12, Aead::Aes128Gcm, 16_384),
        ),
        (
            Some("openssl"),
            dtls(TlsVersion::Dtls12, Aead::Aes128CbcSha256, 1000),
        ),
        (
            Some("dimpl"),
            dtls(TlsVersion::Dtls12, Aead::Chacha20Poly1305, 16_384),
        ),
        (
            Some("dimpl"),
            dtls(TlsVersion::Dtls13, Aead::Aes128Gcm, 1000),
        ),
    ];
    for (id, row) in rows {
        two_checked_samples(id, row);
    }
    // TLS has no UDP row, and UDP alone is no bulk matrix.
    let tls = BulkScenario {
        channel: Channel::Tls {
            version: TlsVersion::Tls13,
            aead: Aead::Aes128Gcm,
        },
        write_bytes: 1000,
        transport: Transport::Udp,
    };
    let openssl = backend_by_id("openssl").unwrap();
    assert!(matches!(
        BulkProbe::prepare(Some(openssl.as_ref()), &tls, util::certs(), Some(10_000)),
        Err(Outcome::Unsupported { .. })
    ));
}

/// The test hook binds the server to a port this test holds: every row
/// fails with the kernel's reason, and the run goes on to its end.
#[test]
fn a_socket_that_cannot_open_fails_its_row_with_the_reason() {
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    let udp = UdpSocket::bind(tcp.local_addr().unwrap()).unwrap();
    let port = tcp.local_addr().unwrap().port().to_string();
    for (tls, transport, command) in [
        ("1.3", "tcp", "handshake"),
        ("dtls1.2", "udp", "handshake"),
        ("1.3", "tcp", "bulk"),
        ("dtls1.2", "udp", "bulk"),
    ] {
        let mut args = vec![
            command,
            "--no-db",
            "-q",
            "--backend",
            "openssl",
            "--tls",
            tls,
        ];
        args.extend(["--transport", transport, "--runs", "2", "--warmup", "0"]);
        if command == "handshake" {
            args.extend(["--group", "p256", "--cert", "ecdsa_p256"]);
        } else {
            args.extend(["--suite", "aes128gcm", "--size", "1024"]);
        }
        let output = Command::new(env!("CARGO_BIN_EXE_tlslab"))
            .args(&args)
            .env(LOOPBACK_PORT_ENV, &port)
            .env_remove("COLUMNS")
            .output()
            .unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
        );
        assert_eq!(
            output.status.code(),
            Some(1),
            "{args:?}\n{stdout}\n{stderr}"
        );
        let upper = transport.to_uppercase();
        let wanted = format!(
            "cannot {} {upper} 127.0.0.1:{port}",
            if transport == "tcp" {
                "listen on"
            } else {
                "bind"
            }
        );
        assert!(stderr.contains(&wanted), "{args:?}: {stderr}");
        assert!(stderr.contains("in use"), "{args:?}: {stderr}");
    }
    drop((tcp, udp));
}

/// Stored rows keep their transport: the labels come back from the
/// database and `tlslab report` shows the transport column.
#[test]
fn transport_labels_round_trip_through_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    let db = db.to_str().unwrap();
    tlslab(&[
        "handshake",
        "--db",
        db,
        "-q",
        "--backend",
        "openssl",
        "--tls",
        "1.2,dtls1.2",
        "--group",
        "p256",
        "--cert",
        "ecdsa_p256",
        "--transport",
        "memory,tcp,udp",
        "--runs",
        "2",
        "--warmup",
        "0",
    ])
    .expect_code(0);
    tlslab(&[
        "bulk",
        "--db",
        db,
        "-q",
        "--backend",
        "openssl",
        "--tls",
        "1.3",
        "--suite",
        "aes128gcm",
        "--size",
        "1024",
        "--transport",
        "tcp",
        "--runs",
        "2",
        "--warmup",
        "0",
    ])
    .expect_code(0);
    let handshakes = tlslab(&["report", "--db", db, "--run", "1"]);
    handshakes.expect_code(0);
    let table = handshakes.stdout();
    for (version, transport) in [
        ("TLS 1.2", "memory"),
        ("TLS 1.2", "TCP"),
        ("DTLS 1.2", "memory"),
        ("DTLS 1.2", "UDP"),
    ] {
        assert!(
            has_row(&table, &["openssl", version, "P-256", transport]),
            "{version} {transport}:\n{table}"
        );
    }
    // The TLS against DTLS table pairs DTLS over UDP with TLS over TCP.
    assert!(
        has_row(&table, &["DTLS 1.2", "over UDP", "openssl", "openssl"]),
        "{table}"
    );
    let exported = dir.path().join("run1.json");
    tlslab(&[
        "report",
        "--db",
        db,
        "--run",
        "1",
        "--export-json",
        exported.to_str().unwrap(),
    ])
    .expect_code(0);
    let json = std::fs::read_to_string(&exported).unwrap();
    for label in [
        "handshake_1.2_p256_ecdsa_p256_aes128gcm\"",
        "handshake_1.2_p256_ecdsa_p256_aes128gcm_tcp\"",
        "handshake_dtls1.2_p256_ecdsa_p256_aes128gcm_udp\"",
    ] {
        assert!(json.contains(label), "{label}: {json}");
    }
    let bulk = tlslab(&["report", "--db", db, "--run", "2"]);
    bulk.expect_code(0);
    assert!(
        has_row(&bulk.stdout(), &["none", "no crypto over TCP", "1024"]),
        "{}",
        bulk.stdout()
    );
    assert!(
        has_row(
            &bulk.stdout(),
            &["openssl", "TLS 1.3 over TCP", "aes-128-gcm", "1024"]
        ),
        "{}",
        bulk.stdout()
    );
}
