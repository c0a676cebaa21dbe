//! The same real-handshake tests for every backend (tiny sample counts).

use tlslab::backend::{Backend, HandshakeSample};
use tlslab::measure::verify;
use tlslab::scenario::{
    Aead, CertKind, Group, HandshakeScenario, KxKind, Named, Resumption, TlsVersion,
};

use crate::util;

pub fn scenario(version: TlsVersion, group: Group, cert: CertKind) -> HandshakeScenario {
    HandshakeScenario::full(version, group, cert)
}

/// Runs three handshakes of `built_for` and checks each against
/// `checked_as`, as every sample is checked; a mismatch is the error.
pub fn measure_as(
    backend: &dyn Backend,
    built_for: &HandshakeScenario,
    checked_as: &HandshakeScenario,
) -> Result<Vec<HandshakeSample>, String> {
    let credentials = util::certs()
        .get(built_for.cert, built_for.chain_depth)
        .expect("certificates");
    let mut handshaker = backend
        .handshaker(built_for, &credentials)
        .unwrap_or_else(|e| panic!("{} {}: {e:#}", backend.id(), built_for.label()));
    (0..3)
        .map(|_| {
            let sample = handshaker.handshake().map_err(|e| format!("{e:#}"))?;
            verify::check(
                checked_as,
                &sample.negotiated,
                backend.capabilities().reports_signature_scheme,
            )
            .map_err(|e| e.to_string())?;
            Ok(sample)
        })
        .collect()
}

/// Asserts that a scenario runs, verifies, and that each sample's sides fit in its wall time.
pub fn assert_measured(backend: &dyn Backend, scenario: &HandshakeScenario) {
    assert!(
        backend.unsupported_reason(scenario).is_none(),
        "{} claims not to support {}",
        backend.id(),
        scenario.label()
    );
    match measure_as(backend, scenario, scenario) {
        Ok(samples) => {
            for sample in &samples {
                let (client, server) = (sample.client, sample.server);
                assert!(client.wall_ns > 0 && server.wall_ns > 0, "{sample:?}");
                assert!(client.cpu_ns > 0 && server.cpu_ns > 0, "{sample:?}");
                assert!(
                    sample.wall_ns >= client.wall_ns + server.wall_ns,
                    "{sample:?}"
                );
                // The thread cannot run much longer than the call lasted
                // (two clocks, read apart, with their own granularity).
                assert!(
                    client.cpu_ns <= client.wall_ns * 11 / 10 + 200_000,
                    "{sample:?}"
                );
                assert!(
                    server.cpu_ns <= server.wall_ns * 11 / 10 + 200_000,
                    "{sample:?}"
                );
                assert_eq!(sample.negotiated.resumed, scenario.resumption.is_on());
            }
        }
        Err(reason) => panic!("{} {}: {reason}", backend.id(), scenario.label()),
    }
}

/// The certificate a key exchange can be measured with in TLS 1.2.
fn cert_for(group: Group) -> CertKind {
    match group.kind() {
        KxKind::RsaKeyTransport | KxKind::Ffdh { .. } => CertKind::Rsa2048,
        _ => CertKind::EcdsaP256,
    }
}

macro_rules! backend_tests {
    ($module:ident, $id:literal) => {
        mod $module {
            use super::*;
            use std::sync::Arc;

            fn backend() -> Arc<dyn Backend> {
                tlslab::backend::backend_by_id($id).unwrap()
            }

            #[test]
            fn tls13_x25519_with_ecdsa_and_rsa() {
                for cert in [CertKind::EcdsaP256, CertKind::Rsa2048] {
                    assert_measured(
                        backend().as_ref(),
                        &scenario(TlsVersion::Tls13, Group::X25519, cert),
                    );
                }
            }

            #[test]
            fn tls12_ecdhe_with_ecdsa_and_rsa() {
                for cert in [CertKind::EcdsaP256, CertKind::Rsa2048] {
                    assert_measured(
                        backend().as_ref(),
                        &scenario(TlsVersion::Tls12, Group::X25519, cert),
                    );
                }
            }

            /// Every suite the protocol defines is measured, or the
            /// backend says it has none (rustls has no CBC).
            #[test]
            fn every_suite() {
                let backend = backend();
                for version in [TlsVersion::Tls12, TlsVersion::Tls13] {
                    for aead in Aead::ALL {
                        let mut s = scenario(version, Group::P256, CertKind::EcdsaP256);
                        s.aead = *aead;
                        if s.protocol_conflict().is_some() {
                            continue;
                        }
                        if backend.capabilities().aeads.contains(aead) {
                            assert_measured(backend.as_ref(), &s);
                        } else {
                            let reason = backend.unsupported_reason(&s).unwrap_or_default();
                            assert!(reason.contains(aead.name()), "{reason}");
                        }
                    }
                }
            }

            #[test]
            fn resumption_modes() {
                let cases = [
                    (TlsVersion::Tls12, Resumption::SessionId),
                    (TlsVersion::Tls12, Resumption::Ticket),
                    (TlsVersion::Tls13, Resumption::Psk),
                ];
                for (version, resumption) in cases {
                    let mut s = scenario(version, Group::X25519, CertKind::EcdsaP256);
                    s.resumption = resumption;
                    assert_measured(backend().as_ref(), &s);
                }
            }

            #[test]
            fn mutual_tls() {
                for version in [TlsVersion::Tls12, TlsVersion::Tls13] {
                    let mut s = scenario(version, Group::X25519, CertKind::EcdsaP256);
                    s.mutual = true;
                    assert_measured(backend().as_ref(), &s);
                }
            }

            #[test]
            fn chain_depths() {
                for depth in [2, 5] {
                    let mut s = scenario(TlsVersion::Tls13, Group::X25519, CertKind::Ed25519);
                    s.chain_depth = depth;
                    assert_measured(backend().as_ref(), &s);
                }
            }

            /// The capabilities a backend declares are true: every group and
            /// certificate it lists completes a verified handshake.
            #[test]
            fn every_declared_group_and_certificate() {
                let backend = backend();
                let caps = backend.capabilities().clone();
                for group in &caps.groups_tls12 {
                    let s = scenario(TlsVersion::Tls12, *group, cert_for(*group));
                    assert_measured(backend.as_ref(), &s);
                }
                for group in &caps.groups_tls13 {
                    let s = scenario(TlsVersion::Tls13, *group, CertKind::EcdsaP256);
                    assert_measured(backend.as_ref(), &s);
                }
                for cert in &caps.certs {
                    let s = scenario(TlsVersion::Tls13, Group::X25519, *cert);
                    assert_measured(backend.as_ref(), &s);
                }
            }

            /// A handshake that negotiates another group than the scenario
            /// asked for fails the cell and is never counted.
            #[test]
            fn a_wrongly_negotiated_group_is_rejected() {
                let built = scenario(TlsVersion::Tls13, Group::P256, CertKind::EcdsaP256);
                let asked = scenario(TlsVersion::Tls13, Group::X25519, CertKind::EcdsaP256);
                match measure_as(backend().as_ref(), &built, &asked) {
                    Err(reason) => {
                        assert_eq!(reason, "wrong group: asked for x25519, negotiated p256")
                    }
                    Ok(samples) => panic!("a mismatch was counted: {samples:?}"),
                }
            }

            /// A wrongly negotiated certificate type is caught too.
            #[test]
            fn a_wrong_signature_scheme_is_rejected() {
                let built = scenario(TlsVersion::Tls13, Group::X25519, CertKind::Rsa2048);
                let asked = scenario(TlsVersion::Tls13, Group::X25519, CertKind::EcdsaP256);
                match measure_as(backend().as_ref(), &built, &asked) {
                    Err(reason) => assert!(reason.starts_with("wrong"), "{reason}"),
                    Ok(samples) => panic!("a mismatch was counted: {samples:?}"),
                }
            }
        }
    };
}

backend_tests!(openssl, "openssl");
backend_tests!(rustls_aws_lc, "rustls-aws-lc");
backend_tests!(rustls_ring, "rustls-ring");

#[test]
fn unsupported_combinations_say_why() {
    let ring = tlslab::backend::backend_by_id("rustls-ring").unwrap();
    let pq = scenario(TlsVersion::Tls13, Group::X25519, CertKind::MlDsa65);
    assert_eq!(
        ring.unsupported_reason(&pq).as_deref(),
        Some("rustls-ring cannot use mldsa65 certificates")
    );
    let aws = tlslab::backend::backend_by_id("rustls-aws-lc").unwrap();
    let dhe = scenario(TlsVersion::Tls12, Group::Dhe2048, CertKind::Rsa2048);
    assert_eq!(
        aws.unsupported_reason(&dhe).as_deref(),
        Some("rustls-aws-lc has no dhe2048 key exchange in TLS 1.2")
    );
}

/// DHE-1024 is below OpenSSL's default security level: it is measured with
/// the level lowered for that row alone, and flagged as weak.
#[test]
fn weak_rows_are_measured_and_flagged() {
    let openssl = tlslab::backend::backend_by_id("openssl").unwrap();
    let weak = scenario(TlsVersion::Tls12, Group::Dhe1024, CertKind::Rsa2048);
    assert!(weak.is_weak());
    assert_measured(openssl.as_ref(), &weak);
    assert!(!scenario(TlsVersion::Tls12, Group::Dhe2048, CertKind::Rsa2048).is_weak());
}
