//! QUIC as a value of the protocol axis: a QUIC handshake on every library
//! that declares it reports QUIC, tlslab's ALPN protocol and resumption as
//! rustls negotiated them, and is verified like every handshake; through
//! the command, QUIC rows stand beside TLS 1.3 rows over memory and UDP,
//! and what cannot carry QUIC (TCP, a library without it, an MTU under
//! 1,200 bytes) says why.
//! The shared suite (backends.rs) runs its TLS 1.3 tests over QUIC too.

use tlslab::backend::Backend;
use tlslab::measure::verify;
use tlslab::scenario::{CertKind, Group, Resumption, TlsVersion, Transport};

use crate::backends::scenario;
use crate::each::for_each_backend;
use crate::util::{self, has_row, tlslab};

/// The listed backends that declare QUIC.
fn quic_backends() -> Vec<std::sync::Arc<dyn Backend>> {
    tlslab::backend::listed()
        .filter(|descriptor| {
            (descriptor.capabilities)()
                .versions
                .contains(&TlsVersion::Quic)
        })
        .map(|descriptor| (descriptor.open)())
        .collect()
}

/// The libraries that declare QUIC are these three.
#[test]
fn openssl_and_both_rustls_declare_quic() {
    let ids: Vec<&str> = quic_backends().iter().map(|backend| backend.id()).collect();
    assert_eq!(ids, ["openssl", "rustls-aws-lc", "rustls-ring"]);
}

for_each_backend! {
    /// On every library that declares QUIC; one that does not says why of
    /// its QUIC row (and the test prints a `skipped:` line).
    fn a_quic_handshake_reports_quic_its_alpn_and_resumption_and_is_verified(
        backend: &dyn Backend
    ) {
        let quic = scenario(TlsVersion::Quic, Group::X25519, CertKind::EcdsaP256);
        if !backend.capabilities().versions.contains(&TlsVersion::Quic) {
            let reason = backend.unsupported_reason(&quic);
            assert!(reason.as_ref().is_some_and(|r| !r.is_empty()), "{}", backend.id());
            util::note_skipped(&crate::each::current_test(), &reason.unwrap());
            return;
        }
        for (transport, resumption) in [
            (Transport::Memory, Resumption::Off),
            (Transport::Memory, Resumption::Psk),
            (Transport::Udp, Resumption::Off),
            (Transport::Udp, Resumption::Psk),
        ] {
            let mut quic = scenario(TlsVersion::Quic, Group::X25519, CertKind::EcdsaP256);
            quic.resumption = resumption;
            quic.transport = transport;
            // Every library resumes over memory and UDP alike (issue 24).
            assert_eq!(backend.unsupported_reason(&quic), None, "{}", backend.id());
            let credentials = util::certs()
                .get(quic.cert, quic.chain_depth)
                .expect("certificates");
            let mut handshaker = backend.handshaker(&quic, &credentials).unwrap();
            for _ in 0..2 {
                let sample = handshaker.handshake().unwrap();
                let negotiated = &sample.negotiated;
                let what = format!("{} {transport:?} {resumption:?}", backend.id());
                assert_eq!(negotiated.version, "QUIC", "{what}");
                assert_eq!(negotiated.alpn.as_deref(), Some("tlslab"), "{what}");
                assert_eq!(negotiated.resumed, resumption.is_on(), "{what}");
                assert_eq!(negotiated.group.as_deref(), Some("x25519"), "{what}");
                assert_eq!(negotiated.suite, "TLS_AES_128_GCM_SHA256", "{what}");
                let signed = (!resumption.is_on()).then_some("ecdsa_secp256r1_sha256");
                assert_eq!(negotiated.signature.as_deref(), signed, "{what}");
                // Both sides' CPU, over memory and over UDP alike.
                assert!(sample.client.cpu_ns > 0, "{what}: {sample:?}");
                assert!(sample.server.cpu_ns > 0, "{what}: {sample:?}");
                verify::check(&quic, negotiated, true).unwrap();
                // The same handshake checked as TLS 1.3 is a mismatch.
                let tls = scenario(TlsVersion::Tls13, Group::X25519, CertKind::EcdsaP256);
                let mismatch = verify::check(&tls, negotiated, true).unwrap_err();
                assert_eq!(mismatch.what, "version");
            }
        }
    }
}

/// `handshake` over `transports` with TLS 1.3 and QUIC on rustls-aws-lc,
/// OpenSSL and dimpl (DTLS only): its table.
fn tls_and_quic_over(transports: &str) -> String {
    let run = tlslab(&[
        "handshake",
        "--no-db",
        "--backend",
        "rustls-aws-lc,openssl,dimpl",
        "--protocol",
        "1.3,quic",
        "--group",
        "x25519",
        "--cert",
        "ecdsa_p256",
        "--transport",
        transports,
        "--runs",
        "2",
        "--warmup",
        "0",
    ]);
    run.expect_code(0);
    run.stdout()
}

#[test]
fn quic_rows_stand_beside_tls_and_what_cannot_carry_quic_says_why() {
    let table = tls_and_quic_over("memory");
    for backend in ["rustls-aws-lc", "openssl"] {
        for protocol in ["TLS 1.3", "QUIC"] {
            let row = table
                .lines()
                .find(|line| has_row(line, &[backend, protocol, "X25519"]))
                .unwrap_or_else(|| panic!("no {backend} {protocol} row: {table}"));
            assert!(!row.contains("unsupported"), "{table}");
            assert!(!row.contains("failed"), "{table}");
        }
    }
    // OpenSSL picks its own datagram size; the table says so.
    assert!(
        table.contains("openssl QUIC rows: OpenSSL 3.6 sends QUIC datagrams of at most 1,200 bytes whatever --mtu says"),
        "{table}"
    );
    assert!(
        has_row(
            &table,
            &[
                "dimpl",
                "QUIC",
                "dimpl has no QUIC in tlslab (QUIC runs on openssl, rustls-aws-lc, rustls-ring)"
            ]
        ),
        "{table}"
    );
    // TCP carries TLS 1.3; QUIC over it is a row with the conflict's reason.
    let table = tls_and_quic_over("tcp");
    assert!(
        has_row(
            &table,
            &[
                "rustls-aws-lc",
                "QUIC",
                "TCP",
                "QUIC runs over datagrams, not over TCP"
            ]
        ),
        "{table}"
    );
    let tls = table
        .lines()
        .find(|line| has_row(line, &["rustls-aws-lc", "TLS 1.3", "TCP"]))
        .unwrap_or_else(|| panic!("no TLS 1.3 row over TCP: {table}"));
    assert!(!tls.contains("unsupported"), "{table}");
    // UDP carries QUIC (each side in its own thread) on every library
    // that has QUIC, not TLS.
    let table = tls_and_quic_over("udp");
    for backend in ["rustls-aws-lc", "openssl"] {
        let quic = table
            .lines()
            .find(|line| has_row(line, &[backend, "QUIC", "UDP"]))
            .unwrap_or_else(|| panic!("no {backend} QUIC row over UDP: {table}"));
        assert!(!quic.contains("unsupported"), "{table}");
        assert!(!quic.contains("failed"), "{table}");
    }
    assert!(
        has_row(
            &table,
            &["rustls-aws-lc", "TLS 1.3", "UDP", "TLS needs a byte stream"]
        ),
        "{table}"
    );
}

#[test]
fn an_mtu_under_quics_minimum_is_refused_saying_why() {
    let run = tlslab(&[
        "handshake",
        "--no-db",
        "--backend",
        "rustls-ring",
        "--tls",
        "quic",
        "--mtu",
        "1199",
        "--runs",
        "2",
    ]);
    run.expect_code(2);
    assert!(
        run.stderr()
            .contains("QUIC needs datagrams of at least 1200 bytes (RFC 9000 §14), --mtu is 1199"),
        "{}",
        run.stderr()
    );
}

/// Issue 24 item 2: `--preset quic-vs-tcp` sets each QUIC row against its
/// TLS 1.3 twin on the same library (`--baseline protocol=1.3`, kept
/// with the run); a protocol no row runs, or none at all, is a usage error.
#[test]
fn quic_vs_tcp_sets_each_quic_row_against_its_tls_twin() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("quic.json");
    let run = tlslab(&[
        "handshake",
        "--no-db",
        "--preset",
        "quic-vs-tcp",
        "--backend",
        "rustls-ring,rustls-aws-lc",
        "--group",
        "x25519",
        "--cert",
        "ecdsa_p256",
        "--runs",
        "5",
        "--warmup",
        "0",
        "--export-json",
        json.to_str().unwrap(),
    ]);
    run.expect_code(0);
    assert!(
        run.stdout().contains("relative to the same row in TLS 1.3"),
        "{}",
        run.stdout()
    );
    let document: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(document["baseline"], "protocol=1.3");
    let rows = document["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{rows:?}");
    for row in rows {
        let ratio = row["ratio_to_baseline"]["value"].as_f64().unwrap();
        if row["label"].as_str().unwrap().starts_with("handshake_1.3_") {
            assert_eq!(ratio, 1.0, "{row}");
        } else {
            // QUIC's packets, acknowledgements and transport parameters
            // on top of the same TLS 1.3 handshake.
            assert!(ratio > 1.0, "{row}");
        }
    }

    for (baseline, says) in [
        ("protocol=1.4", "unknown TLS version '1.4'"),
        (
            "protocol=dtls1.2",
            "names DTLS 1.2, which no row of this matrix runs",
        ),
    ] {
        let run = tlslab(&[
            "handshake",
            "--no-db",
            "--backend",
            "rustls-ring",
            "--tls",
            "1.3,quic",
            "--baseline",
            baseline,
            "--runs",
            "2",
        ]);
        run.expect_code(2);
        assert!(run.stderr().contains(says), "{}", run.stderr());
    }
}

/// A QUIC side run apart (over the emulated link or `--remote`): quinn's
/// on both rustls providers; OpenSSL's says it runs in process only.
#[test]
fn quic_sides_apart_on_quinn_and_openssl_says_why_not() {
    use tlslab::scenario::Side;
    let quic = scenario(TlsVersion::Quic, Group::X25519, CertKind::EcdsaP256);
    let credentials = util::certs()
        .get(quic.cert, quic.chain_depth)
        .expect("certificates");
    for backend in quic_backends() {
        let apart = backend.apart(&quic, &credentials, Side::Client);
        match backend.id() {
            "openssl" => {
                let error = format!("{:#}", apart.err().expect("OpenSSL's QUIC is not apart"));
                assert!(
                    error.contains(
                        "runs in process only so far (over memory or loopback UDP), not apart"
                    ),
                    "{error}"
                );
            }
            id => assert!(apart.is_ok(), "{id}"),
        }
    }
}
