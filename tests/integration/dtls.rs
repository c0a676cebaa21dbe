//! DTLS 1.2 handshakes on OpenSSL over the in-memory datagram channel:
//! verified per group family, suite and mode, the server's cookie exchange
//! seen on the wire, fragmentation held to the MTU, and the rows that say
//! why they cannot run.

use tlslab::backend::openssl::dtls::{trace_handshake, HELLO_VERIFY_REQUEST};
use tlslab::backend::{backend_by_id, Backend};
use tlslab::scenario::{Aead, CertKind, Group, Named, Resumption, TlsVersion};
use tlslab::transport::datagram::Fault;

use crate::backends::{assert_measured, scenario};
use crate::util::{self, tlslab};

/// ClientHello's handshake message type.
const CLIENT_HELLO: u8 = 1;
/// ServerHello's handshake message type.
const SERVER_HELLO: u8 = 2;

fn openssl() -> std::sync::Arc<dyn Backend> {
    backend_by_id("openssl").unwrap()
}

#[test]
fn a_verified_handshake_per_group_family() {
    let cases = [
        (Group::RsaKeyTransport, CertKind::Rsa2048),
        (Group::Dhe2048, CertKind::Rsa2048),
        (Group::P256, CertKind::EcdsaP256),
        (Group::P384, CertKind::Rsa2048),
        (Group::X25519, CertKind::EcdsaP256),
        (Group::X448, CertKind::EcdsaP521),
    ];
    for (group, cert) in cases {
        assert_measured(
            openssl().as_ref(),
            &scenario(TlsVersion::Dtls12, group, cert),
        );
    }
}

#[test]
fn every_suite_resumption_mode_and_mutual_auth() {
    let backend = openssl();
    for aead in Aead::ALL {
        for (group, cert) in [
            (Group::P256, CertKind::EcdsaP256),
            (Group::Dhe2048, CertKind::Rsa2048),
        ] {
            let mut s = scenario(TlsVersion::Dtls12, group, cert);
            s.aead = *aead;
            if s.protocol_conflict().is_none() {
                assert_measured(backend.as_ref(), &s);
            }
        }
    }
    for resumption in [Resumption::SessionId, Resumption::Ticket] {
        let mut s = scenario(TlsVersion::Dtls12, Group::X25519, CertKind::EcdsaP256);
        s.resumption = resumption;
        assert_measured(backend.as_ref(), &s);
    }
    let mut s = scenario(TlsVersion::Dtls12, Group::P256, CertKind::Rsa2048);
    s.mutual = true;
    assert_measured(backend.as_ref(), &s);
}

/// The server answers the first ClientHello with a HelloVerifyRequest and
/// the ServerHello follows only the second one, carrying the cookie.
#[test]
fn the_server_does_the_cookie_exchange() {
    let s = scenario(TlsVersion::Dtls12, Group::P256, CertKind::EcdsaP256);
    let credentials = util::certs().get(s.cert, s.chain_depth).unwrap();
    let trace = trace_handshake(&s, &credentials, None).unwrap();
    assert_eq!(trace.negotiated.version, "DTLSv1.2");
    let server = trace.server_handshake_types();
    assert_eq!(server.first(), Some(&HELLO_VERIFY_REQUEST), "{server:?}");
    assert_eq!(
        server
            .iter()
            .filter(|t| **t == HELLO_VERIFY_REQUEST)
            .count(),
        1
    );
    assert_eq!(server.get(1), Some(&SERVER_HELLO), "{server:?}");
    let client = trace.client_handshake_types();
    assert_eq!(&client[..2], &[CLIENT_HELLO, CLIENT_HELLO], "{client:?}");
}

/// At a small MTU every datagram fits it, and the certificate chain is
/// carried in many fragments.
#[test]
fn handshake_messages_are_fragmented_to_the_mtu() {
    let mut s = scenario(TlsVersion::Dtls12, Group::P256, CertKind::Rsa4096);
    s.mtu_bytes = Some(300);
    let credentials = util::certs().get(s.cert, s.chain_depth).unwrap();
    let trace = trace_handshake(&s, &credentials, None).unwrap();
    let sizes: Vec<usize> = trace.server_datagrams.iter().map(Vec::len).collect();
    assert!(sizes.iter().all(|size| *size <= 300), "{sizes:?}");
    // A chain of three RSA-4096 certificates is well over 3 kB.
    assert!(sizes.len() > 10, "{sizes:?}");
    assert_measured(openssl().as_ref(), &s);
}

#[test]
fn an_mtu_too_small_for_the_handshake_is_a_row_saying_why() {
    let mut s = scenario(TlsVersion::Dtls12, Group::P256, CertKind::EcdsaP256);
    s.mtu_bytes = Some(100);
    let reason = openssl().unsupported_reason(&s).unwrap_or_default();
    assert!(
        reason.contains("an MTU of 100 bytes is too small for a DTLS handshake"),
        "{reason}"
    );

    let run = tlslab(&[
        "handshake",
        "--no-db",
        "--quiet",
        "--backend",
        "openssl",
        "--tls",
        "dtls1.2",
        "--group",
        "p256",
        "--cert",
        "ecdsa_p256",
        "--mtu",
        "100",
        "--runs",
        "1",
        "--cert-dir",
        util::cert_dir().to_str().unwrap(),
    ]);
    run.expect_code(0);
    assert!(
        run.stdout().contains("too small for a DTLS handshake"),
        "{}",
        run.stdout()
    );

    let run = tlslab(&["handshake", "--no-db", "--tls", "dtls1.2", "--mtu", "0"]);
    run.expect_code(2);
    assert!(
        run.stderr().contains("the MTU must be between 1 and 65507"),
        "{}",
        run.stderr()
    );
}

#[test]
fn eddsa_certificates_are_a_row_saying_why() {
    let s = scenario(TlsVersion::Dtls12, Group::X25519, CertKind::Ed25519);
    let reason = openssl().unsupported_reason(&s).unwrap_or_default();
    assert!(
        reason.contains("no shared cipher for an EdDSA certificate in DTLS 1.2"),
        "{reason}"
    );
}

#[test]
fn rustls_rows_say_it_has_no_dtls() {
    let s = scenario(TlsVersion::Dtls12, Group::X25519, CertKind::EcdsaP256);
    for id in ["rustls-aws-lc", "rustls-ring"] {
        let reason = backend_by_id(id).unwrap().unsupported_reason(&s);
        assert_eq!(
            reason.as_deref(),
            Some(
                format!("{id} has no DTLS (the library implements TLS over streams only)").as_str()
            )
        );
    }
}

#[test]
fn bad_names_and_suites_the_protocol_cannot_carry() {
    let run = tlslab(&["handshake", "--no-db", "--tls", "dtls9"]);
    run.expect_code(2);
    assert!(
        run.stderr()
            .contains("unknown TLS version 'dtls9'; valid TLS versions: 1.2, 1.3, dtls1.2"),
        "{}",
        run.stderr()
    );

    // CBC in TLS 1.3 is an unsupported row; the same suite in DTLS 1.2 runs.
    let run = tlslab(&[
        "handshake",
        "--no-db",
        "--quiet",
        "--backend",
        "openssl",
        "--tls",
        "1.3,dtls1.2",
        "--group",
        "x25519",
        "--cert",
        "ecdsa_p256",
        "--suite",
        "aes128cbc_sha",
        "--runs",
        "1",
        "--cert-dir",
        util::cert_dir().to_str().unwrap(),
    ]);
    run.expect_code(0);
    let out = run.stdout();
    assert!(
        out.contains("unsupported: TLS 1.3 has AEAD suites only (no CBC with HMAC)"),
        "{out}"
    );
    let dtls_row = out
        .lines()
        .find(|line| line.contains("DTLS 1.2 ECDHE X25519"))
        .unwrap_or_default();
    assert!(
        !dtls_row.contains("unsupported") && !dtls_row.contains("failed"),
        "{out}"
    );
}

/// A reordered fragment of the server's certificate flight is put back in
/// order; a lost HelloVerifyRequest stops the handshake with a reason
/// rather than a hang (DTLS would resend after a second; a measurement does
/// not wait).
#[test]
fn a_reordered_datagram_is_absorbed_and_a_lost_one_is_a_clear_failure() {
    let mut s = scenario(TlsVersion::Dtls12, Group::P256, CertKind::Rsa2048);
    s.mtu_bytes = Some(300);
    let credentials = util::certs().get(s.cert, s.chain_depth).unwrap();
    // 0: ClientHello, 1: HelloVerifyRequest, 2: ClientHello with the
    // cookie, 3..: the server's flight in fragments.
    let trace = trace_handshake(&s, &credentials, Some(Fault::Reorder(4))).unwrap();
    assert_eq!(trace.negotiated.version, "DTLSv1.2");
    let started = std::time::Instant::now();
    let error = trace_handshake(&s, &credentials, Some(Fault::Lose(1))).unwrap_err();
    assert!(
        format!("{error:#}").contains("neither side has anything to read"),
        "{error:#}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}
