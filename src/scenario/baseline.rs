//! What a handshake row's ratio is taken against. The baseline is kept as
//! the text the user gave (stored with the run): a row's label, every row
//! divided by that one row of its own backend; or `protocol=VERSION`,
//! every row divided by its twin over that protocol — the same group,
//! certificate and options — so that a QUIC row is set against the same
//! handshake in TLS 1.3 over a byte stream.

use super::names::parse_name;
use super::{HandshakeScenario, TlsVersion, Transport, DEFAULT_MTU_BYTES};

/// How `--baseline protocol=VERSION` begins.
pub const PROTOCOL_PREFIX: &str = "protocol=";

/// The protocol of a `protocol=VERSION` baseline; `None` for a row label,
/// an error naming the valid versions for an unknown one.
pub fn twin_protocol(baseline: &str) -> Option<Result<TlsVersion, String>> {
    let version = baseline.strip_prefix(PROTOCOL_PREFIX)?;
    Some(parse_name::<TlsVersion>(version).map_err(|e| e.to_string()))
}

/// The label of the row `scenario` is divided by under `baseline`: the
/// baseline row itself, or the scenario's twin over the baseline's
/// protocol (over TCP or UDP when the scenario ran over a socket).
pub fn baseline_label(baseline: &str, scenario: &HandshakeScenario) -> String {
    match twin_protocol(baseline) {
        Some(Ok(version)) => twin(scenario, version).label(),
        _ => baseline.to_string(),
    }
}

/// Whether `scenario` is a baseline row under `baseline` (its own ratio
/// is 1 and it is measured in every shard).
pub fn is_baseline(baseline: &str, scenario: &HandshakeScenario) -> bool {
    baseline_label(baseline, scenario) == scenario.label()
}

/// The baseline as the table's notes name it.
pub fn describe(baseline: &str) -> String {
    match twin_protocol(baseline) {
        Some(Ok(version)) => format!("the same row in {}", version.display()),
        _ => baseline.to_string(),
    }
}

/// `scenario` over `version`: a socket transport becomes the one the
/// version runs over, the MTU is kept for datagrams.
fn twin(scenario: &HandshakeScenario, version: TlsVersion) -> HandshakeScenario {
    let transport = match scenario.transport {
        Transport::Memory => Transport::Memory,
        Transport::Tcp | Transport::Udp if version.is_datagram() => Transport::Udp,
        Transport::Tcp | Transport::Udp => Transport::Tcp,
    };
    let mtu = scenario.mtu_bytes.unwrap_or(DEFAULT_MTU_BYTES);
    HandshakeScenario {
        version,
        transport,
        mtu_bytes: HandshakeScenario::mtu_for(version, mtu),
        ..*scenario
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{CertKind, Group};

    #[test]
    fn a_row_label_is_every_rows_baseline() {
        let quic = HandshakeScenario::full(TlsVersion::Quic, Group::X25519, CertKind::EcdsaP256);
        assert_eq!(baseline_label("handshake_x", &quic), "handshake_x");
        assert!(!is_baseline("handshake_x", &quic));
        assert_eq!(describe("handshake_x"), "handshake_x");
    }

    #[test]
    fn a_protocol_baseline_is_each_rows_twin() {
        let quic = HandshakeScenario::full(TlsVersion::Quic, Group::X25519, CertKind::EcdsaP256);
        let tls = HandshakeScenario::full(TlsVersion::Tls13, Group::X25519, CertKind::EcdsaP256);
        assert_eq!(baseline_label("protocol=1.3", &quic), tls.label());
        assert!(is_baseline("protocol=1.3", &tls));
        assert!(!is_baseline("protocol=1.3", &quic));
        let over_udp = HandshakeScenario {
            transport: Transport::Udp,
            ..quic
        };
        let over_tcp = HandshakeScenario {
            transport: Transport::Tcp,
            ..tls
        };
        assert_eq!(baseline_label("protocol=1.3", &over_udp), over_tcp.label());
        assert_eq!(describe("protocol=1.3"), "the same row in TLS 1.3");
        let unknown = twin_protocol("protocol=1.4").unwrap().unwrap_err();
        assert!(unknown.contains("dtls1.2"), "{unknown}");
    }
}
