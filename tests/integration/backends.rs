//! The same real-handshake tests for every backend of the registry (tiny
//! sample counts): a library gets them with its registration line. A test
//! written for TLS runs on a DTLS-only library over the DTLS version with
//! the same rules, where that library declares the rest of the scenario;
//! a test written for TLS 1.3 runs over QUIC too on every library that
//! declares QUIC (TLS 1.3 inside QUIC, the same rules). Each test is one
//! `#[test]` per backend (`backends::mutual_tls::dimpl`, see
//! [`crate::each`]), and each fails if it measured nothing.

use tlslab::backend::{Backend, BackendId, HandshakeSample};
use tlslab::measure::verify;
use tlslab::scenario::{
    Aead, CertKind, Group, HandshakeScenario, KxKind, Named, Resumption, TlsVersion,
    DEFAULT_MTU_BYTES,
};

use crate::each::for_each_backend;
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

/// The versions a suite test written for TLS `version` runs on `backend`:
/// the one [`version_on`] gives, and QUIC beside TLS 1.3 where the backend
/// declares QUIC.
fn versions_on(backend: &dyn Backend, version: TlsVersion) -> Vec<TlsVersion> {
    let mut versions: Vec<TlsVersion> = version_on(backend, version).into_iter().collect();
    let quic = backend.capabilities().versions.contains(&TlsVersion::Quic);
    if version == TlsVersion::Tls13 && quic {
        versions.push(TlsVersion::Quic);
    }
    versions
}

/// `written` as `version`, with the datagram MTU that version takes.
fn as_version(written: HandshakeScenario, version: TlsVersion) -> HandshakeScenario {
    HandshakeScenario {
        version,
        mtu_bytes: HandshakeScenario::mtu_for(version, DEFAULT_MTU_BYTES),
        ..written
    }
}

/// The version a suite test written for TLS `version` runs on `backend`:
/// that version if the backend speaks it, else the DTLS version with the
/// same rules if the backend speaks that instead (dimpl), else `None`.
fn version_on(backend: &dyn Backend, version: TlsVersion) -> Option<TlsVersion> {
    let versions = &backend.capabilities().versions;
    if versions.contains(&version) {
        return Some(version);
    }
    let datagram = match version {
        TlsVersion::Tls12 => TlsVersion::Dtls12,
        TlsVersion::Tls13 => TlsVersion::Dtls13,
        _ => return None,
    };
    versions.contains(&datagram).then_some(datagram)
}

/// The scenarios a suite test written as `written` runs on `backend`: as
/// written when the backend speaks its version (and then it must be
/// measured); for TLS 1.3, its QUIC twin where the backend declares QUIC
/// and gives no reason against the twin (OpenSSL's QUIC resumes nothing
/// yet; tests/integration/quic.rs holds each QUIC library to what it
/// runs); on a DTLS-only backend, its DTLS twin when the backend declares
/// the rest of it; none when there is nothing to run.
fn cases(backend: &dyn Backend, written: HandshakeScenario) -> Vec<HandshakeScenario> {
    versions_on(backend, written.version)
        .into_iter()
        .filter_map(|version| {
            if version == written.version {
                // What a backend does not declare it says why, and it is
                // not run: wolfSSL's bundled build has no session tickets
                // and no Ed25519. What it declares it must run.
                if let Some(reason) = backend.unsupported_reason(&written) {
                    assert!(!reason.is_empty(), "{}: {}", backend.id(), written.label());
                    return None;
                }
                return Some(written);
            }
            let twin = as_version(written, version);
            let declared =
                twin.protocol_conflict().is_none() && backend.unsupported_reason(&twin).is_none();
            declared.then_some(twin)
        })
        .collect()
}

/// Measures on `backend` each of the scenarios written, as it runs them
/// (see [`cases`]). A backend that runs none of them must say why of each
/// (dimpl resumes nothing): then the test prints a `skipped:` line with
/// those reasons; it cannot pass having measured nothing unseen.
fn on_backend(backend: &dyn Backend, written: impl IntoIterator<Item = HandshakeScenario>) {
    let written: Vec<HandshakeScenario> = written.into_iter().collect();
    let mut ran = 0;
    for written in &written {
        for s in cases(backend, *written) {
            assert_measured(backend, &s);
            ran += 1;
        }
    }
    if ran == 0 {
        let reasons: Vec<String> = written
            .iter()
            .flat_map(|written| reasons_against(backend, *written))
            .collect();
        skipped_with_reasons(backend, &reasons);
    }
}

/// Why `backend` runs none of [`cases`] for `written`: each twin's reason
/// (the protocol's, or the backend's own), or that it speaks neither the
/// version nor its DTLS twin. Panics if a twin it does not run has no
/// reason.
fn reasons_against(backend: &dyn Backend, written: HandshakeScenario) -> Vec<String> {
    let versions = versions_on(backend, written.version);
    if versions.is_empty() {
        return vec![format!(
            "{} speaks neither {} nor its datagram twin",
            backend.id(),
            written.version.id()
        )];
    }
    versions
        .into_iter()
        .map(|version| {
            let twin = as_version(written, version);
            twin.protocol_conflict()
                .or_else(|| backend.unsupported_reason(&twin))
                .unwrap_or_else(|| panic!("{} runs {} unseen", backend.id(), twin.label()))
        })
        .collect()
}

/// Prints that the running test measured nothing on `backend`, for
/// `reasons` (which must be some, each said): a fact of what the backend
/// declares, not a missing tool, so it does not fail under `CI`.
fn skipped_with_reasons(backend: &dyn Backend, reasons: &[String]) {
    assert!(
        !reasons.is_empty() && reasons.iter().all(|reason| !reason.is_empty()),
        "{} ran nothing and says not why",
        backend.id()
    );
    let mut reasons = reasons.to_vec();
    reasons.dedup();
    util::note_skipped(
        &crate::each::current_test(),
        &format!(
            "{} declares none of it: {}",
            backend.id(),
            reasons.join("; ")
        ),
    );
}

for_each_backend! {
    fn tls13_x25519_with_ecdsa_and_rsa(backend: &dyn Backend) {
        on_backend(
            backend,
            [CertKind::EcdsaP256, CertKind::Rsa2048]
                .map(|cert| scenario(TlsVersion::Tls13, Group::X25519, cert)),
        );
    }

    fn tls12_ecdhe_with_ecdsa_and_rsa(backend: &dyn Backend) {
        on_backend(
            backend,
            [CertKind::EcdsaP256, CertKind::Rsa2048]
                .map(|cert| scenario(TlsVersion::Tls12, Group::X25519, cert)),
        );
    }

    /// Every suite the protocol defines is measured, or the backend says it
    /// has none (rustls has no CBC).
    fn every_suite(backend: &dyn Backend) {
        let mut measured = 0;
        for written in [TlsVersion::Tls12, TlsVersion::Tls13] {
            for version in versions_on(backend, written) {
                for aead in Aead::ALL {
                    let mut s =
                        as_version(scenario(written, Group::P256, CertKind::EcdsaP256), version);
                    s.aead = *aead;
                    if s.protocol_conflict().is_some() {
                        continue;
                    }
                    if backend.capabilities().aeads.contains(aead) {
                        assert_measured(backend, &s);
                        measured += 1;
                    } else {
                        let reason = backend.unsupported_reason(&s).unwrap_or_default();
                        assert!(reason.contains(aead.name()), "{}: {reason}", backend.id());
                    }
                }
            }
        }
        assert!(measured > 0, "{} measured no suite", backend.id());
    }

    fn resumption_modes(backend: &dyn Backend) {
        let modes = [
            (TlsVersion::Tls12, Resumption::SessionId),
            (TlsVersion::Tls12, Resumption::Ticket),
            (TlsVersion::Tls13, Resumption::Psk),
            // Over QUIC where the library sends early data; elsewhere a reason.
            (TlsVersion::Tls13, Resumption::ZeroRtt),
        ];
        on_backend(
            backend,
            modes.map(|(version, resumption)| {
                let mut s = scenario(version, Group::X25519, CertKind::EcdsaP256);
                s.resumption = resumption;
                s
            }),
        );
    }

    fn mutual_tls(backend: &dyn Backend) {
        on_backend(
            backend,
            [TlsVersion::Tls12, TlsVersion::Tls13].map(|version| {
                let mut s = scenario(version, Group::X25519, CertKind::EcdsaP256);
                s.mutual = true;
                s
            }),
        );
    }

    fn chain_depths(backend: &dyn Backend) {
        on_backend(
            backend,
            [2, 5].map(|depth| {
                let mut s = scenario(TlsVersion::Tls13, Group::X25519, CertKind::Ed25519);
                s.chain_depth = depth;
                s
            }),
        );
    }

    /// The capabilities a backend declares are true: every group and
    /// certificate it lists completes a verified handshake.
    fn every_declared_group_and_certificate(backend: &dyn Backend) {
        let caps = backend.capabilities().clone();
        let mut ran = 0;
        let mut measure = |written: HandshakeScenario| {
            let cases = cases(backend, written);
            assert!(
                !cases.is_empty(),
                "{} declares what it cannot run: {}",
                backend.id(),
                written.label()
            );
            for s in cases {
                assert_measured(backend, &s);
                ran += 1;
            }
        };
        for group in &caps.groups_tls12 {
            measure(scenario(TlsVersion::Tls12, *group, cert_for(*group)));
        }
        for group in &caps.groups_tls13 {
            measure(scenario(TlsVersion::Tls13, *group, CertKind::EcdsaP256));
        }
        for cert in &caps.certs {
            measure(scenario(TlsVersion::Tls13, Group::X25519, *cert));
        }
        assert!(ran > 0, "{} ran none of its declared groups", backend.id());
    }

    /// A handshake that negotiates another group than the scenario asked
    /// for fails the cell and is never counted.
    fn a_wrongly_negotiated_group_is_rejected(backend: &dyn Backend) {
        let built = scenario(TlsVersion::Tls13, Group::P256, CertKind::EcdsaP256);
        let asked = scenario(TlsVersion::Tls13, Group::X25519, CertKind::EcdsaP256);
        let mut checked = 0;
        for (built, asked) in cases(backend, built).into_iter().zip(cases(backend, asked)) {
            match measure_as(backend, &built, &asked) {
                Err(reason) => {
                    assert_eq!(reason, "wrong group: asked for x25519, negotiated p256")
                }
                Ok(samples) => panic!("{}: a mismatch was counted: {samples:?}", backend.id()),
            }
            checked += 1;
        }
        if checked == 0 {
            let reasons: Vec<String> = [built, asked]
                .into_iter()
                .filter(|written| cases(backend, *written).is_empty())
                .flat_map(|written| reasons_against(backend, written))
                .collect();
            skipped_with_reasons(backend, &reasons);
        }
    }

    /// A wrongly negotiated certificate type is caught too.
    fn a_wrong_signature_scheme_is_rejected(backend: &dyn Backend) {
        // A backend that cannot report the server's signature scheme (wolfSSL
        // without its OpenSSL layer) is not held to it.
        if !backend.capabilities().reports_signature_scheme {
            let reason = format!("{} does not report the signature scheme", backend.id());
            skipped_with_reasons(backend, &[reason]);
            return;
        }
        let built = scenario(TlsVersion::Tls13, Group::X25519, CertKind::Rsa2048);
        let asked = scenario(TlsVersion::Tls13, Group::X25519, CertKind::EcdsaP256);
        let mut checked = 0;
        for (built, asked) in cases(backend, built).into_iter().zip(cases(backend, asked)) {
            match measure_as(backend, &built, &asked) {
                Err(reason) => assert!(reason.starts_with("wrong"), "{reason}"),
                Ok(samples) => panic!("{}: a mismatch was counted: {samples:?}", backend.id()),
            }
            checked += 1;
        }
        if checked == 0 {
            let reasons: Vec<String> = [built, asked]
                .into_iter()
                .filter(|written| cases(backend, *written).is_empty())
                .flat_map(|written| reasons_against(backend, written))
                .collect();
            skipped_with_reasons(backend, &reasons);
        }
    }
}

for_each_backend! {
    mock;

    /// Every registered descriptor says of its backend what the backend says
    /// of itself: its id and library, its capabilities (the transports
    /// included), and whether its crypto can be counted apart (the backend
    /// has an instrumented variant, with the same capabilities).
    fn every_descriptor_agrees_with_its_backend(backend: &dyn Backend) {
        let name = backend.id();
        let descriptor = tlslab::backend::descriptor_by_id(name)
            .unwrap_or_else(|| panic!("{name} has no descriptor"));
        assert_descriptor_agrees(descriptor);
        assert!(
            !backend.capabilities().transports.is_empty(),
            "{name} runs over no transport"
        );
    }
}

/// `descriptor` says of its backend what the backend says of itself (see
/// `every_descriptor_agrees_with_its_backend`).
fn assert_descriptor_agrees(descriptor: &tlslab::backend::BackendDescriptor) {
    let backend = (descriptor.open)();
    let name = descriptor.name();
    assert_eq!(backend.id(), name);
    assert_eq!(descriptor.id.open().id(), name);
    assert_eq!(backend.library().library, descriptor.library, "{name}");
    assert_eq!(
        backend.capabilities(),
        (descriptor.capabilities)(),
        "{name}"
    );
    let instrumented = backend.instrumented();
    assert_eq!(
        instrumented.is_some(),
        descriptor.counts_crypto_apart,
        "{name}"
    );
    if let Some(instrumented) = instrumented {
        assert_eq!(
            instrumented.capabilities(),
            backend.capabilities(),
            "{name}"
        );
    }
    assert_eq!(
        tlslab::backend::backend_by_id(name).unwrap().id(),
        name,
        "{name} opens by its id"
    );
    assert_eq!(
        tlslab::backend::BACKEND_IDS.contains(&name),
        descriptor.listed,
        "{name} is listed if and only if its descriptor says so"
    );
}

/// The registry holds one descriptor per backend id, and the listed ids
/// are those of the listed descriptors; a backend not built in (wolfssl
/// without its feature), which has no generated test, runs nothing at all,
/// over no transport, and its descriptor agrees with it too.
#[test]
fn the_registry_lists_its_listed_descriptors() {
    let mut listed = 0;
    for descriptor in tlslab::backend::REGISTRY {
        let backend = (descriptor.open)();
        let caps = backend.capabilities();
        assert!(
            !caps.transports.is_empty() || caps.versions.is_empty(),
            "{} runs over no transport",
            descriptor.name()
        );
        if caps.versions.is_empty() {
            assert_descriptor_agrees(descriptor);
        }
        if descriptor.listed {
            listed += 1;
        }
    }
    assert_eq!(tlslab::backend::BACKEND_IDS.len(), listed);
    assert_eq!(tlslab::backend::REGISTRY.len(), BackendId::ALL.len());
}

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
