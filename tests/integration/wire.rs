//! The handshake on the wire, on the real libraries: the post-quantum key
//! shares' bytes, round trips per protocol, DTLS datagrams and fragments
//! at the MTU.

use tlslab::backend::backend_by_id;
use tlslab::scenario::{CertKind, Group, HandshakeScenario, TlsVersion, DEFAULT_MTU_BYTES};
use tlslab::workload::annotate::trace_cell;
use tlslab::workload::wire::Wire;

use crate::util;

fn traced(backend: &str, scenario: &HandshakeScenario) -> Wire {
    let backend = backend_by_id(backend).unwrap();
    trace_cell(backend.as_ref(), scenario, util::certs())
        .unwrap_or_else(|e| panic!("{} {}: {e}", backend.id(), scenario.label()))
}

fn full(version: TlsVersion, group: Group, cert: CertKind) -> HandshakeScenario {
    HandshakeScenario::full(version, group, cert)
}

/// X25519MLKEM768's key shares: the ML-KEM-768 encapsulation key (1,184
/// bytes) beside the client's X25519 share, the ciphertext (1,088) beside
/// the server's; within a few bytes of framing (the hybrid's extension
/// headers, an ECDSA signature's DER length).
#[test]
fn x25519mlkem768_adds_1184_client_and_1088_server_bytes_on_openssl_and_rustls() {
    for backend in ["openssl", "rustls-aws-lc"] {
        let classic = traced(
            backend,
            &full(TlsVersion::Tls13, Group::X25519, CertKind::EcdsaP256),
        );
        let hybrid = traced(
            backend,
            &full(
                TlsVersion::Tls13,
                Group::X25519Mlkem768,
                CertKind::EcdsaP256,
            ),
        );
        let client = hybrid.client_bytes as i64 - classic.client_bytes as i64;
        let server = hybrid.server_bytes as i64 - classic.server_bytes as i64;
        assert!((client - 1_184).abs() <= 8, "{backend}: client +{client}");
        assert!((server - 1_088).abs() <= 8, "{backend}: server +{server}");
        assert_eq!(hybrid.round_trips, classic.round_trips, "{backend}");
    }
}

/// Until the client can send application data: TLS 1.3 one round trip,
/// TLS 1.2 two (one resumed), DTLS 1.2 three (its cookie exchange first);
/// and a chain of ML-DSA-65 certificates passes ten segments at the MSS.
#[test]
fn round_trips_per_protocol_and_segments_of_a_large_chain() {
    for backend in ["openssl", "rustls-aws-lc", "rustls-ring"] {
        let tls13 = traced(
            backend,
            &full(TlsVersion::Tls13, Group::X25519, CertKind::EcdsaP256),
        );
        assert_eq!(tls13.round_trips, Some(1.0), "{backend}");
        assert_eq!(tls13.server_round_trips, Some(1.5), "{backend}");
        let tls12 = traced(
            backend,
            &full(TlsVersion::Tls12, Group::X25519, CertKind::EcdsaP256),
        );
        assert_eq!(tls12.round_trips, Some(2.0), "{backend}");
        let mut resumed = full(TlsVersion::Tls12, Group::X25519, CertKind::EcdsaP256);
        resumed.resumption = tlslab::scenario::Resumption::SessionId;
        assert_eq!(
            traced(backend, &resumed).round_trips,
            Some(1.0),
            "{backend}"
        );
        assert!(!tls13.datagrams && tls13.segments().is_some());
    }
    for backend in ["openssl", "dimpl"] {
        let dtls12 = traced(
            backend,
            &full(TlsVersion::Dtls12, Group::P256, CertKind::EcdsaP256),
        );
        assert_eq!(dtls12.round_trips, Some(3.0), "{backend}");
        assert!(dtls12.datagrams && dtls12.segments().is_none());
    }
    let mldsa = traced(
        "openssl",
        &full(TlsVersion::Tls13, Group::X25519, CertKind::MlDsa65),
    );
    assert!(mldsa.server_packets > 10, "{mldsa:?}");
    assert_eq!(
        mldsa.server_packets as u64,
        mldsa
            .server_bytes
            .div_ceil(tlslab::transport::tap::MSS_BYTES as u64)
    );
}

/// At an MTU smaller than the server's certificate its flight takes more
/// datagrams and its Certificate message comes in fragments; at the default
/// MTU an ECDSA chain fits. The small MTU is the size of the leaf the
/// server sends, taken from the chain this run uses (the message carries
/// the leaf and its headers, so it cannot fit), never a fixed number that
/// holds only for some generated certificate.
#[test]
fn dtls_datagrams_and_fragments_at_the_mtu() {
    let scenario = full(TlsVersion::Dtls12, Group::P256, CertKind::EcdsaP256);
    let credentials = util::certs()
        .get(scenario.cert, scenario.chain_depth)
        .unwrap();
    let chain_bytes: Vec<usize> = credentials.server.chain_der.iter().map(Vec::len).collect();
    let below_the_leaf = u16::try_from(chain_bytes[0]).unwrap();
    for backend in ["openssl", "dimpl"] {
        let at = |mtu: u16| {
            traced(
                backend,
                &HandshakeScenario {
                    mtu_bytes: Some(mtu),
                    ..scenario
                },
            )
        };
        let (wide, narrow) = (at(DEFAULT_MTU_BYTES), at(below_the_leaf));
        assert_eq!(
            wide.fragments,
            Some(0),
            "{backend}: chain {chain_bytes:?} bytes: {wide:?}"
        );
        assert!(
            narrow.fragments.unwrap_or(0) > 0,
            "{backend} at {below_the_leaf} bytes: {narrow:?}"
        );
        assert!(narrow.server_packets > wide.server_packets, "{backend}");
        let datagrams = narrow.datagram_count().unwrap();
        assert_eq!(datagrams, narrow.client_packets + narrow.server_packets);
    }
}

/// `--wire --network` on the mock: the wire and network tables, the
/// exports' `wire.*` and `network.*` fields, and a stored run that
/// `report` (and a merged copy) shows again exactly.
#[test]
fn wire_and_network_figures_reach_the_table_the_exports_and_report() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let run = util::tlslab(&[
        "handshake",
        "--backend",
        "mock",
        "--tls",
        "1.2,1.3",
        "--group",
        "x25519,x25519mlkem768",
        "--cert",
        "ecdsa_p256",
        "--runs",
        "3",
        "--wire",
        "--network",
        "wan,rtt=100ms,initcwnd=1",
        "--db",
        &path("db.sqlite"),
        "--cert-dir",
        util::cert_dir().to_str().unwrap(),
        "--export-json",
        &path("run.json"),
        "--export-csv",
        &path("run.csv"),
    ]);
    run.expect_code(0);
    let table = run.stdout();
    for needle in [
        "On the wire (per handshake)",
        "Over the network",
        "RTs on path",
    ] {
        assert!(table.contains(needle), "{needle}:\n{table}");
    }
    // The hybrid key shares on the mock: exactly +1,184 / +1,088.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path("run.json")).unwrap()).unwrap();
    let rows = json["rows"].as_array().unwrap();
    let bytes = |group: &str, side: &str| {
        rows.iter()
            .find(|r| r["scenario"]["group"] == group && r["scenario"]["tls_version"] == "1.3")
            .unwrap()["wire"][side]
            .as_u64()
            .unwrap()
    };
    assert_eq!(
        bytes("x25519mlkem768", "client_bytes") - bytes("x25519", "client_bytes"),
        1_184
    );
    assert_eq!(
        bytes("x25519mlkem768", "server_bytes") - bytes("x25519", "server_bytes"),
        1_088
    );
    // TLS 1.2 against TLS 1.3 over 50 ms: one round trip more.
    let model = |version: &str| {
        rows.iter()
            .find(|r| r["scenario"]["group"] == "x25519" && r["scenario"]["tls_version"] == version)
            .unwrap()["network"][0]["path_round_trips"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(model("1.2") - model("1.3"), 1.0);
    // One CSV record per row and profile (the hybrid has no TLS 1.2 row:
    // one record saying so), with the field names.
    let csv = std::fs::read_to_string(path("run.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    for field in [
        "wire.client_bytes",
        "wire.server_bytes",
        "wire.round_trips",
        "wire.records",
        "wire.segments",
        "wire.datagrams",
        "network.model_ms",
        "network.measured_ms",
    ] {
        assert!(header.split(',').any(|h| h == field), "{field}: {header}");
    }
    assert_eq!(csv.lines().count(), 1 + 3 * 2 + 1);

    // The stored run, and a merged copy of it, give the same CSV.
    for database in ["db.sqlite", "merged.sqlite"] {
        if database == "merged.sqlite" {
            util::tlslab(&["merge", &path("merged.sqlite"), &path("db.sqlite")]).expect_code(0);
        }
        let report = util::tlslab(&[
            "report",
            "--db",
            &path(database),
            "--export-csv",
            &path("again.csv"),
        ]);
        report.expect_code(0);
        assert!(
            report.stdout().contains("On the wire"),
            "{}",
            report.stdout()
        );
        assert_eq!(std::fs::read_to_string(path("again.csv")).unwrap(), csv);
    }
}

/// Impossible profiles and a link without profiles exit 2 naming what is wrong.
#[test]
fn bad_profiles_exit_2_naming_the_field() {
    for (network, named) in [
        ("rtt=-10ms", "rtt=-10ms"),
        ("wan,loss=100%", "loss=100%"),
        ("rtt=50ms,rate=0mbit", "rate=0mbit"),
        ("rtt=50ms,initcwnd=0", "initcwnd=0"),
        ("lunar", "unknown profile 'lunar'"),
    ] {
        let run = util::tlslab(&[
            "handshake",
            "--backend",
            "mock",
            "--no-db",
            "--network",
            network,
        ]);
        run.expect_code(2);
        assert!(run.stderr().contains(named), "{network}: {}", run.stderr());
    }
    let run = util::tlslab(&["handshake", "--backend", "mock", "--no-db", "--link", "tun"]);
    run.expect_code(2);
    assert!(run.stderr().contains("--network"), "{}", run.stderr());
    let run = util::tlslab(&[
        "handshake",
        "--backend",
        "mock",
        "--no-db",
        "--network",
        "wan",
        "--link",
        "carrier-pigeon",
    ]);
    run.expect_code(2);
    assert!(
        run.stderr().contains("[possible values: tun]"),
        "{}",
        run.stderr()
    );
}

/// Issue 24 item 3: QUIC on quinn (both rustls providers) — one round
/// trip with an ECDSA chain, the client's Initial padded to at least
/// 1,200 bytes; an ML-DSA-65 chain is more than three times the client's
/// Initial, so QUIC's anti-amplification limit holds the server's flight
/// until the client answers: one more round trip, which the wire table
/// calls out.
#[test]
fn quics_padded_initial_and_the_anti_amplification_round_trip() {
    for backend in ["rustls-aws-lc", "rustls-ring"] {
        let ecdsa = traced(
            backend,
            &full(TlsVersion::Quic, Group::X25519, CertKind::EcdsaP256),
        );
        assert_eq!(ecdsa.round_trips, Some(1.0), "{backend}: {ecdsa:?}");
        assert!(ecdsa.datagrams, "{backend}");
        let initial = ecdsa
            .turns
            .iter()
            .find(|turn| !turn.writes.is_empty())
            .map(|turn| turn.writes[0])
            .unwrap();
        assert!(initial >= 1_200, "{backend}: Initial of {initial} B");
    }
    // ring has no ML-DSA: aws-lc's provider signs the chain.
    let mldsa = traced(
        "rustls-aws-lc",
        &full(TlsVersion::Quic, Group::X25519, CertKind::MlDsa65),
    );
    assert_eq!(mldsa.round_trips, Some(2.0), "{mldsa:?}");
    let run = util::tlslab(&[
        "handshake",
        "--no-db",
        "--backend",
        "rustls-aws-lc",
        "--tls",
        "quic",
        "--group",
        "x25519",
        "--cert",
        "mldsa65",
        "--wire",
        "--runs",
        "2",
        "--warmup",
        "0",
    ]);
    run.expect_code(0);
    let stdout = run.stdout();
    assert!(
        stdout.contains("+1 round trip: the server's") && stdout.contains("(anti-amplification)"),
        "{stdout}"
    );
}
