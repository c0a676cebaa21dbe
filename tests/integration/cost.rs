//! Speed and cost: primitives do real work, the model's operation counts
//! equal what a wrapped rustls provider counts in real handshakes, and the
//! breakdown adds up.

use std::sync::atomic::AtomicBool;
use std::time::Duration;
use tlslab::backend::rustls::RustlsBackend;
use tlslab::backend::Backend;
use tlslab::measure::SamplingOptions;
use tlslab::model::counts as model;
use tlslab::scenario::operations::CountedOp;
use tlslab::scenario::speed::{self, Operation, Primitive, SpeedRow};
use tlslab::scenario::Side;
use tlslab::scenario::{CertKind, Group, HandshakeScenario, Named, Resumption, TlsVersion};
use tlslab::workload::breakdown::counted_breakdown;
use tlslab::workload::speed::PreparedRow;

use crate::backends::scenario;
use crate::util::{self, tlslab};

fn few_handshakes() -> SamplingOptions {
    SamplingOptions {
        precision: 0.99,
        max_time: Duration::ZERO,
        min_samples: 2,
        warmup: Duration::ZERO,
        slice: Duration::ZERO,
        ..SamplingOptions::default()
    }
}

/// The operations the model predicts, as the wrapped provider counts them.
const MODELLED: [CountedOp; 8] = [
    CountedOp::KxExchange,
    CountedOp::Sign,
    CountedOp::VerifyChainSignature,
    CountedOp::VerifyHandshakeSignature,
    CountedOp::HkdfExtract,
    CountedOp::HkdfExpand,
    CountedOp::Hmac,
    CountedOp::Prf,
];

fn assert_model_matches(backend: &RustlsBackend, scenario: &HandshakeScenario) {
    let credentials = util::certs()
        .get(scenario.cert, scenario.chain_depth)
        .unwrap();
    let (_, counted, _) = counted_breakdown(
        backend,
        scenario,
        &credentials,
        &few_handshakes(),
        &AtomicBool::new(false),
    )
    .unwrap_or_else(|e| panic!("{} {}: {e:#}", backend.id(), scenario.label()));
    for side in [Side::Client, Side::Server] {
        let modelled = model::operation_counts(scenario, side);
        for op in MODELLED {
            let expected = modelled
                .iter()
                .find(|(o, _)| *o == op)
                .map_or(0, |(_, n)| *n) as f64;
            let real = counted.get(&(side, op)).copied().unwrap_or(0.0);
            assert_eq!(
                real,
                expected,
                "{} {} {side:?} {op:?}: the model says {expected}, the provider counted {real}",
                backend.id(),
                scenario.label()
            );
        }
    }
}

/// Every rustls scenario the model covers: each supported group and
/// certificate, both versions, every resumption mode, two chain depths.
#[test]
fn model_counts_equal_wrapped_provider_counts() {
    for backend in [
        RustlsBackend::aws_lc_rs().instrumented(),
        RustlsBackend::ring().instrumented(),
    ] {
        let caps = backend.capabilities().clone();
        let mut scenarios = Vec::new();
        for (version, groups) in [
            (TlsVersion::Tls12, &caps.groups_tls12),
            (TlsVersion::Tls13, &caps.groups_tls13),
        ] {
            for group in groups {
                scenarios.push(scenario(version, *group, CertKind::EcdsaP256));
            }
            for cert in &caps.certs {
                if version == TlsVersion::Tls12
                    && cert.family() == tlslab::scenario::SignatureFamily::MlDsa
                {
                    continue;
                }
                scenarios.push(scenario(version, Group::X25519, *cert));
            }
        }
        for (version, resumption) in [
            (TlsVersion::Tls12, Resumption::SessionId),
            (TlsVersion::Tls12, Resumption::Ticket),
            (TlsVersion::Tls13, Resumption::Psk),
        ] {
            let mut s = scenario(version, Group::X25519, CertKind::EcdsaP256);
            s.resumption = resumption;
            scenarios.push(s);
        }
        for version in [TlsVersion::Tls12, TlsVersion::Tls13] {
            let mut mutual = scenario(version, Group::X25519, CertKind::EcdsaP256);
            mutual.mutual = true;
            scenarios.push(mutual);
        }
        let mut deep = scenario(TlsVersion::Tls13, Group::P256, CertKind::Ed25519);
        deep.chain_depth = 5;
        scenarios.push(deep);
        for s in &scenarios {
            assert_model_matches(&backend, s);
        }
    }
}

#[test]
fn breakdown_categories_add_up_to_the_measured_total() {
    let backend = RustlsBackend::aws_lc_rs().instrumented();
    for cert in [CertKind::EcdsaP256, CertKind::Rsa2048] {
        let s = scenario(TlsVersion::Tls13, Group::X25519, cert);
        let credentials = util::certs().get(cert, 3).unwrap();
        let options = SamplingOptions {
            min_samples: 20,
            ..few_handshakes()
        };
        // The crypto calls take a large share of a side's time (in this
        // debug build, where rustls' own code is unoptimised); but
        // the sides' totals are wall time inside their calls, so on a busy
        // machine a preemption outside the crypto calls pushes the share
        // down (three attempts at 20-21% with a release build beside the
        // tests). The other properties must hold on every attempt.
        let mut crypto_shares = Vec::new();
        for _attempt in 0..3 {
            let (breakdowns, _, wall_ns) = counted_breakdown(
                &backend,
                &s,
                &credentials,
                &options,
                &AtomicBool::new(false),
            )
            .unwrap();
            assert_eq!(breakdowns.len(), 2);
            // The independent total: the wall time of whole handshakes,
            // taken around both sides and the harness, holds both sides'
            // totals (how much of it they fill depends on the machine's load).
            let sides: f64 = breakdowns.iter().map(|b| b.total_ns).sum();
            assert!(
                sides > 0.0 && sides <= wall_ns,
                "sides {sides} ns against a whole handshake of {wall_ns} ns"
            );
            let mut lowest = f64::INFINITY;
            for b in &breakdowns {
                let counted: f64 = b.categories.iter().map(|(_, ns)| ns).sum();
                assert!(counted > 0.0 && counted <= b.total_ns, "{b:?}");
                assert!(
                    (b.sum_ns() - b.total_ns).abs() <= 0.02 * b.total_ns,
                    "{b:?}"
                );
                lowest = lowest.min(counted / b.total_ns);
            }
            crypto_shares.push(lowest);
            if lowest >= 0.15 {
                break;
            }
        }
        assert!(
            crypto_shares.iter().any(|&share| share >= 0.15),
            "the counted crypto calls took under 15% of a side's time in every attempt: {crypto_shares:?}"
        );
    }
}

/// Each backend's primitives do real work: signatures verify, derivations
/// and decapsulations succeed, ciphers and hashes run.
#[test]
fn every_primitive_row_runs_or_says_why() {
    let rows = speed::expand(Primitive::ALL, &[64]);
    for id in ["openssl", "rustls-aws-lc", "rustls-ring"] {
        let backend = tlslab::backend::backend_by_id(id).unwrap().primitives();
        for row in &rows {
            // FFDHE-8192 key generation alone takes a while; its smaller siblings cover it.
            if matches!(row.primitive, Primitive::Ffdhe6144 | Primitive::Ffdhe8192) {
                continue;
            }
            match backend.prepare(row) {
                Ok(mut operation) => {
                    operation().unwrap_or_else(|e| panic!("{id} {}: {e:#}", row.label()));
                    operation().unwrap_or_else(|e| panic!("{id} {}: {e:#}", row.label()));
                }
                Err(reason) => assert!(!reason.0.is_empty(), "{id} {}", row.label()),
            }
        }
    }
    // What must be there on each backend.
    let must = |id: &str, primitive: Primitive, operation: Operation| {
        let backend = tlslab::backend::backend_by_id(id).unwrap().primitives();
        let row = SpeedRow {
            primitive,
            operation,
            size_bytes: None,
        };
        assert!(backend.prepare(&row).is_ok(), "{id} {}", row.label());
    };
    must("openssl", Primitive::MlDsa65, Operation::Sign);
    must("openssl", Primitive::Ffdhe2048, Operation::Derive);
    must(
        "openssl",
        Primitive::X25519MlKem768,
        Operation::ClientExchange,
    );
    must(
        "rustls-aws-lc",
        Primitive::MlKem768,
        Operation::ServerExchange,
    );
    must("rustls-ring", Primitive::Ed25519, Operation::Verify);
}

#[test]
fn speed_rows_are_sampled() {
    let row = SpeedRow {
        primitive: Primitive::X25519,
        operation: Operation::Keygen,
        size_bytes: None,
    };
    let backend = tlslab::backend::backend_by_id("openssl")
        .unwrap()
        .primitives();
    let mut prepared = PreparedRow::new(backend.as_ref(), &row).unwrap();
    assert!(prepared.batch >= 1);
    let run = tlslab::measure::sample(
        vec![prepared.probe()],
        tlslab::measure::Pairing::None,
        &few_handshakes(),
        &AtomicBool::new(false),
        &mut tlslab::measure::Quietly,
    )
    .unwrap();
    let samples = run.outcomes[0].samples();
    assert!(samples.len() >= 2, "{:?}", run.outcomes[0]);
    assert!(samples.iter().all(|s| s.value.ns_per_op > 0.0));
}

#[test]
fn speed_and_cost_commands_run() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("speed.json");
    let run = tlslab(&[
        "speed",
        "--no-db",
        "-q",
        "--algorithm",
        "ecdsa_p256,aes128gcm",
        "--size",
        "64",
        "--max-time",
        "0",
        "--min-samples",
        "2",
        "--warmup",
        "0",
        "--export-json",
        json.to_str().unwrap(),
    ]);
    run.expect_code(0);
    assert!(run.stdout().contains("ecdsa_p256"), "{}", run.stdout());
    let parsed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // 2 ECDSA rows + 1 AES-GCM row, on four backends; dimpl's say why
    // they cannot run (it has no primitives of its own).
    let rows = parsed["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 12);
    assert_eq!(
        rows.iter()
            .filter(|row| row.to_string().contains("dimpl exposes no primitives"))
            .count(),
        3
    );

    let run = tlslab(&["speed", "--no-db", "--algorithm", "rsa1024"]);
    run.expect_code(2);
    assert!(
        run.stderr()
            .contains("unknown algorithm 'rsa1024'; valid algorithms: rsa2048"),
        "{}",
        run.stderr()
    );

    let run = tlslab(&[
        "cost",
        "--preset",
        "rsa-vs-ecdsa",
        "--no-db",
        "-q",
        "--breakdown",
        "--max-time",
        "0",
        "--min-samples",
        "3",
        "--warmup",
        "0",
        "--cert-dir",
        util::cert_dir().to_str().unwrap(),
    ]);
    run.expect_code(0);
    let out = run.stdout();
    assert!(
        out.contains("1 RSA key transport, 2 verify (chain)"),
        "{out}"
    );
    assert!(out.contains("capacity/core"), "{out}");
    assert!(out.contains("modelled"), "{out}");
}

/// `speed --backend wolfssl` (in a build with it) measures wolfCrypt's
/// AEADs, digests, signatures, ECDH, X25519 and ML-KEM on tiny budgets,
/// and its rows say why where the bundled build has no such primitive; a
/// build without it refuses the name with the build command.
#[test]
fn wolfssl_speed_runs_on_wolfcrypt_or_says_how_to_build_it() {
    const TEST: &str = "cost::wolfssl_speed_runs_on_wolfcrypt_or_says_how_to_build_it";
    if util::skip_unless_under_test("wolfssl", TEST) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("speed.json");
    let run = tlslab(&[
        "speed",
        "--backend",
        "wolfssl",
        "--no-db",
        "-q",
        "--algorithm",
        "aes128gcm,chacha20poly1305,aes128cbc,sha384,ecdsa_p256,rsa2048,x25519,p256,mlkem768,ed25519,ffdhe2048",
        "--size",
        "64",
        "--max-time",
        "0",
        "--min-samples",
        "2",
        "--warmup",
        "0",
        "--export-json",
        json.to_str().unwrap(),
    ]);
    if util::skip_without_wolfssl(TEST) {
        run.expect_code(2);
        assert!(
            run.stderr().contains("--features wolfssl"),
            "{}",
            run.stderr()
        );
        return;
    }
    run.expect_code(0);
    let parsed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows = parsed["rows"].as_array().unwrap();
    let unsupported = ["ed25519", "ffdhe2048"];
    for row in rows {
        assert_eq!(row["backend"], "wolfssl", "{row}");
        let label = row["label"].as_str().unwrap();
        if unsupported.iter().any(|id| label.contains(id)) {
            assert!(row["reason"].as_str().unwrap().contains("wolf"), "{row}");
        } else {
            assert!(row["ns_per_op"]["median"].as_f64().unwrap() > 0.0, "{row}");
        }
    }
    // 3 ciphers + 1 digest + 2x2 signatures + 2x4 key exchanges + 3 ML-KEM
    // operations + 2 Ed25519 + 4 FFDHE operations.
    assert_eq!(rows.len(), 3 + 1 + 4 + 8 + 3 + 2 + 4, "{}", run.stdout());
}
