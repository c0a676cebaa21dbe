//! DTLS handshakes over the in-memory datagram channel: DTLS 1.2 on
//! OpenSSL and DTLS 1.2 and 1.3 on dimpl, verified per group family, suite
//! and mode, the server's cookie exchange seen on the wire, fragmentation
//! held to the MTU, lost and reordered datagrams, and the rows that say why
//! they cannot run.

use tlslab::backend::dimpl::trace_handshake as dimpl_trace;
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
        run.stderr().contains(
            "unknown TLS version 'dtls9'; valid TLS versions: 1.2, 1.3, dtls1.2, dtls1.3"
        ),
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

fn dimpl() -> std::sync::Arc<dyn Backend> {
    backend_by_id("dimpl").unwrap()
}

#[test]
fn dimpl_verified_dtls13_handshake_per_group() {
    for group in [Group::X25519, Group::P256, Group::P384] {
        assert_measured(
            dimpl().as_ref(),
            &scenario(TlsVersion::Dtls13, group, CertKind::EcdsaP256),
        );
    }
    // DTLS 1.2 too, the other suites, a P-384 certificate, mutual authentication.
    for (version, aead) in [
        (TlsVersion::Dtls12, Aead::Chacha20Poly1305),
        (TlsVersion::Dtls13, Aead::Aes256Gcm),
    ] {
        let mut s = scenario(version, Group::P256, CertKind::EcdsaP384);
        s.aead = aead;
        s.mutual = true;
        assert_measured(dimpl().as_ref(), &s);
    }
}

/// What dimpl does not report is read off the server's datagrams: the
/// checked suite, group and signature scheme came over the wire.
#[test]
fn dimpl_negotiation_is_read_off_the_wire() {
    let cases = [
        (
            TlsVersion::Dtls13,
            Group::X25519,
            "DTLSv1.3",
            "TLS_AES_128_GCM_SHA256",
        ),
        (
            TlsVersion::Dtls12,
            Group::P384,
            "DTLSv1.2",
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        ),
    ];
    for (version, group, version_name, suite) in cases {
        let s = scenario(version, group, CertKind::EcdsaP256);
        let credentials = util::certs().get(s.cert, s.chain_depth).unwrap();
        let trace = dimpl_trace(&s, &credentials, None).unwrap();
        let negotiated = trace.negotiated;
        assert_eq!(negotiated.version, version_name);
        assert_eq!(negotiated.suite, suite);
        assert_eq!(negotiated.group.as_deref(), Some(group.id()));
        assert_eq!(
            negotiated.signature.as_deref(),
            Some("ecdsa_secp256r1_sha256")
        );
        assert_eq!(trace.timeouts, 0);
        // The cookie exchange: the client says hello twice.
        let client = plaintext_types(&trace.client_datagrams);
        assert_eq!(&client[..2], &[CLIENT_HELLO, CLIENT_HELLO], "{client:?}");
    }
}

/// The types of the epoch-0 handshake records that start each datagram.
fn plaintext_types(datagrams: &[Vec<u8>]) -> Vec<u8> {
    datagrams
        .iter()
        .filter(|d| d.len() > 13 && d[0] == 22 && d[3..5] == [0, 0])
        .map(|d| d[13])
        .collect()
}

#[test]
fn dimpl_fragments_handshake_messages_to_a_small_mtu() {
    for (version, mtu) in [(TlsVersion::Dtls12, 64), (TlsVersion::Dtls13, 200)] {
        let mut s = scenario(version, Group::P256, CertKind::EcdsaP384);
        s.mtu_bytes = Some(mtu);
        s.mutual = true;
        let credentials = util::certs().get(s.cert, s.chain_depth).unwrap();
        let trace = dimpl_trace(&s, &credentials, None).unwrap();
        let sizes: Vec<usize> = trace
            .server_datagrams
            .iter()
            .chain(&trace.client_datagrams)
            .map(Vec::len)
            .collect();
        assert!(sizes.iter().all(|size| *size <= mtu.into()), "{sizes:?}");
        // The P-384 leaf alone is well over 400 bytes.
        assert!(trace.server_datagrams.len() > 4, "{sizes:?}");
        assert_measured(dimpl().as_ref(), &s);
    }
}

#[test]
fn dimpl_mtu_too_small_is_a_row_saying_why() {
    let mut s = scenario(TlsVersion::Dtls12, Group::P256, CertKind::EcdsaP256);
    s.mtu_bytes = Some(63);
    let reason = dimpl().unsupported_reason(&s).unwrap_or_default();
    assert_eq!(
        reason,
        "an MTU of 63 bytes is too small for a DTLS 1.2 handshake: dimpl needs at least 64 bytes"
    );
    let run = tlslab(&[
        "handshake",
        "--no-db",
        "--quiet",
        "--backend",
        "dimpl",
        "--tls",
        "dtls1.3",
        "--group",
        "p256",
        "--cert",
        "ecdsa_p256",
        "--mtu",
        "199",
        "--runs",
        "1",
        "--cert-dir",
        util::cert_dir().to_str().unwrap(),
    ]);
    run.expect_code(0);
    assert!(
        run.stdout().contains(
            "unsupported: an MTU of 199 bytes is too small for a DTLS 1.3 handshake: dimpl needs at least 200 bytes"
        ),
        "{}",
        run.stdout()
    );
}

#[test]
fn dtls13_rows_say_why_a_backend_cannot_run_them() {
    let s = scenario(TlsVersion::Dtls13, Group::X25519, CertKind::EcdsaP256);
    let reason = openssl().unsupported_reason(&s).unwrap_or_default();
    assert!(
        reason.starts_with("OpenSSL 3.") && reason.ends_with(" has no DTLS 1.3"),
        "{reason}"
    );
    for id in ["rustls-aws-lc", "rustls-ring"] {
        let reason = backend_by_id(id).unwrap().unsupported_reason(&s);
        assert_eq!(
            reason.as_deref(),
            Some(
                format!("{id} has no DTLS (the library implements TLS over streams only)").as_str()
            )
        );
    }
    let reasons = [
        (
            scenario(TlsVersion::Tls13, Group::X25519, CertKind::EcdsaP256),
            "dimpl implements DTLS only (no TLS over streams)",
        ),
        (
            scenario(TlsVersion::Dtls13, Group::X25519, CertKind::Rsa2048),
            "dimpl cannot use rsa2048 certificates",
        ),
        (
            scenario(TlsVersion::Dtls13, Group::X448, CertKind::EcdsaP256),
            "dimpl has no x448 key exchange in DTLS 1.3",
        ),
    ];
    for (s, expected) in reasons {
        assert_eq!(
            dimpl().unsupported_reason(&s).as_deref(),
            Some(expected),
            "{}",
            s.label()
        );
    }
}

/// dimpl resends a flight when its timer fires; tlslab moves the logical
/// clock to that timer instead of waiting for it, so a lost datagram costs
/// a retransmission, not a second, and a reordered one is absorbed.
#[test]
fn dimpl_resends_a_lost_datagram_and_absorbs_a_reordered_one() {
    for version in [TlsVersion::Dtls12, TlsVersion::Dtls13] {
        let mut s = scenario(version, Group::P256, CertKind::EcdsaP256);
        s.mtu_bytes = Some(200);
        let credentials = util::certs().get(s.cert, s.chain_depth).unwrap();
        let started = std::time::Instant::now();
        // 0: ClientHello, 1: the cookie request, 2: ClientHello with the
        // cookie, 3..: the server's flight in fragments.
        for lost in [1, 2, 4] {
            let trace = dimpl_trace(&s, &credentials, Some(Fault::Lose(lost)))
                .unwrap_or_else(|e| panic!("{} losing {lost}: {e:#}", s.label()));
            assert!(trace.timeouts >= 1, "{trace:?}");
            assert_eq!(trace.negotiated.version, version.protocol_name());
        }
        let trace = dimpl_trace(&s, &credentials, Some(Fault::Reorder(4))).unwrap();
        assert_eq!(trace.negotiated.version, version.protocol_name());
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }
}

/// DTLS 1.3 comes from dimpl, TLS 1.3 from the others: the TLS-against-DTLS
/// table pairs dimpl's row with each other backend's TLS 1.3 row and names
/// the backend of each side.
#[test]
fn dimpl_dtls13_pairs_with_tls13_of_another_library() {
    let run = tlslab(&[
        "handshake",
        "--no-db",
        "--quiet",
        "--backend",
        "rustls-aws-lc,dimpl",
        "--tls",
        "1.3,dtls1.3",
        "--group",
        "p256",
        "--cert",
        "ecdsa_p256",
        "--runs",
        "2",
        "--warmup",
        "0",
        "--cert-dir",
        util::cert_dir().to_str().unwrap(),
    ]);
    run.expect_code(0);
    let out = run.stdout();
    assert!(out.contains("TLS against DTLS"), "{out}");
    assert!(
        util::has_row(
            &out,
            &[
                "TLS 1.3 / DTLS 1.3",
                "ECDHE P-256 ECDSA P-256 aes-128-gcm",
                "rustls-aws-lc",
                "dimpl"
            ]
        ),
        "{out}"
    );
}

/// The dtls-study preset adds its DTLS 1.3 rows on dimpl (the RSA row
/// saying why dimpl cannot run it); naming the backends leaves them out.
#[test]
fn dtls_study_preset_has_dtls13_rows_on_dimpl() {
    let cert_dir = util::cert_dir();
    let run_with = |extra: &[&str]| {
        let mut args = vec![
            "handshake",
            "--preset",
            "dtls-study",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--no-db",
            "-q",
            "--cert-dir",
            cert_dir.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let run = tlslab(&args);
        run.expect_code(0);
        run.stdout()
    };
    let out = run_with(&[]);
    let row = |cert: &str| {
        out.lines()
            .find(|l| l.starts_with("dimpl") && l.contains("DTLS 1.3") && l.contains(cert))
            .unwrap_or_else(|| panic!("no dimpl {cert} row:\n{out}"))
    };
    assert!(!row("ECDSA P-256").contains("unsupported"), "{out}");
    assert!(
        row("RSA-2048").contains("unsupported: dimpl cannot use rsa2048"),
        "{out}"
    );
    assert!(!util::has_row(&out, &["dimpl", "DTLS 1.2"]), "{out}");
    let named = run_with(&["--backend", "openssl"]);
    assert!(!named.contains("dimpl"), "{named}");
}

/// wolfSSL (in a build with the `wolfssl` feature) resumes DTLS as it
/// resumes TLS: DTLS 1.2 by session id and by ticket, DTLS 1.3 by PSK, each
/// handshake verified resumed with its suite and, for DTLS 1.3, its group.
#[test]
fn wolfssl_resumes_dtls_by_session_id_ticket_and_psk() {
    const TEST: &str = "dtls::wolfssl_resumes_dtls_by_session_id_ticket_and_psk";
    if crate::util::skip_without_wolfssl(TEST)
        || crate::util::skip_unless_under_test("wolfssl", TEST)
    {
        return;
    }
    let wolfssl = backend_by_id("wolfssl").unwrap();
    let cases = [
        (TlsVersion::Dtls12, Resumption::SessionId),
        (TlsVersion::Dtls12, Resumption::Ticket),
        (TlsVersion::Dtls13, Resumption::Psk),
    ];
    for (version, resumption) in cases {
        let mut s = scenario(version, Group::P256, CertKind::EcdsaP256);
        s.resumption = resumption;
        assert_measured(wolfssl.as_ref(), &s);
    }
}
