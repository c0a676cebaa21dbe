//! Checks that a handshake negotiated what its scenario asked for. A
//! mismatch fails the cell; it is never counted as a sample.

use crate::backend::Negotiated;
use crate::scenario::{Group, HandshakeScenario, Named, TlsVersion};

/// A negotiated parameter that differs from what the scenario asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("wrong {what}: asked for {asked}, negotiated {negotiated}")]
pub struct Mismatch {
    pub what: &'static str,
    pub asked: String,
    pub negotiated: String,
}

fn mismatch(
    what: &'static str,
    asked: impl Into<String>,
    negotiated: impl Into<String>,
) -> Mismatch {
    Mismatch {
        what,
        asked: asked.into(),
        negotiated: negotiated.into(),
    }
}

fn or_none(value: &Option<String>) -> String {
    value.clone().unwrap_or_else(|| "none".to_string())
}

/// The group id a handshake of this scenario must report, `None` where the
/// handshake has no key exchange (TLS 1.2 and DTLS 1.2 resumption).
pub fn expected_group(scenario: &HandshakeScenario) -> Option<&'static str> {
    if scenario.version.tls_rules() == TlsVersion::Tls12 && scenario.resumption.is_on() {
        None
    } else {
        Some(scenario.group.id())
    }
}

/// True if and only if the server signs in a handshake of this scenario.
pub fn server_signs(scenario: &HandshakeScenario) -> bool {
    !scenario.resumption.is_on() && scenario.group != Group::RsaKeyTransport
}

/// Compares what was negotiated with the scenario: version, suite,
/// resumption, early data (0-RTT accepted or not), ALPN protocol (QUIC's), group and server signature scheme
/// (if the backend reports it).
pub fn check(
    scenario: &HandshakeScenario,
    negotiated: &Negotiated,
    check_signature: bool,
) -> Result<(), Mismatch> {
    check_with_alpn(
        scenario,
        negotiated,
        check_signature,
        scenario.version.required_alpn(),
    )
}

/// As [`check`], with `alpn` the ALPN protocol the handshake must agree
/// on: a real server's own (HTTP/3's `h3`) rather than tlslab's.
pub fn check_with_alpn(
    scenario: &HandshakeScenario,
    negotiated: &Negotiated,
    check_signature: bool,
    alpn: Option<&str>,
) -> Result<(), Mismatch> {
    let version = scenario.version.protocol_name();
    if negotiated.version != version {
        return Err(mismatch("version", version, &negotiated.version));
    }
    if negotiated.suite != scenario.suite_name() {
        return Err(mismatch("suite", scenario.suite_name(), &negotiated.suite));
    }
    if negotiated.resumed != scenario.resumption.is_on() {
        let describe = |resumed: bool| {
            if resumed {
                "a resumed handshake"
            } else {
                "a full handshake"
            }
        };
        return Err(mismatch(
            "resumption",
            describe(scenario.resumption.is_on()),
            describe(negotiated.resumed),
        ));
    }
    if negotiated.early_data != scenario.resumption.sends_early_data() {
        let describe = |accepted: bool| {
            if accepted {
                "0-RTT data accepted"
            } else {
                "no 0-RTT data accepted"
            }
        };
        return Err(mismatch(
            "early data",
            describe(scenario.resumption.sends_early_data()),
            describe(negotiated.early_data),
        ));
    }
    if negotiated.alpn.as_deref() != alpn {
        return Err(mismatch(
            "ALPN protocol",
            alpn.unwrap_or("none"),
            or_none(&negotiated.alpn),
        ));
    }
    let group = expected_group(scenario);
    if negotiated.group.as_deref() != group {
        return Err(mismatch(
            "group",
            group.unwrap_or("none"),
            or_none(&negotiated.group),
        ));
    }
    if check_signature {
        let acceptable = scenario.cert.acceptable_schemes(scenario.version);
        let ok = match (&negotiated.signature, server_signs(scenario)) {
            (None, false) => true,
            (Some(scheme), true) => acceptable.contains(&scheme.as_str()),
            _ => false,
        };
        if !ok {
            let asked = if server_signs(scenario) {
                acceptable.join(" or ")
            } else {
                "none".to_string()
            };
            return Err(mismatch(
                "signature scheme",
                asked,
                or_none(&negotiated.signature),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::CertKind;

    fn scenario() -> HandshakeScenario {
        HandshakeScenario::full(TlsVersion::Tls13, Group::X25519, CertKind::EcdsaP256)
    }

    fn good() -> Negotiated {
        Negotiated {
            version: "TLSv1.3".into(),
            suite: "TLS_AES_128_GCM_SHA256".into(),
            group: Some("x25519".into()),
            signature: Some("ecdsa_secp256r1_sha256".into()),
            resumed: false,
            alpn: None,
            early_data: false,
        }
    }

    #[test]
    fn matching_handshake_passes() {
        check(&scenario(), &good(), true).unwrap();
    }

    #[test]
    fn a_quic_handshake_must_agree_on_the_alpn_protocol_asked_for() {
        let quic = HandshakeScenario::full(TlsVersion::Quic, Group::X25519, CertKind::EcdsaP256);
        let mut negotiated = good();
        negotiated.version = "QUIC".into();
        negotiated.alpn = Some("h3".into());
        // A real server's own protocol, where it is the one asked for.
        check_with_alpn(&quic, &negotiated, true, Some("h3")).unwrap();
        // tlslab's, by default.
        let error = check(&quic, &negotiated, true).unwrap_err();
        assert_eq!(
            error.to_string(),
            "wrong ALPN protocol: asked for tlslab, negotiated h3"
        );
    }

    #[test]
    fn wrong_group_names_both() {
        let mut negotiated = good();
        negotiated.group = Some("p256".into());
        let error = check(&scenario(), &negotiated, true).unwrap_err();
        assert_eq!(
            error.to_string(),
            "wrong group: asked for x25519, negotiated p256"
        );
    }

    #[test]
    fn wrong_signature_and_resumption_are_caught() {
        let mut negotiated = good();
        negotiated.signature = Some("rsa_pss_rsae_sha256".into());
        assert_eq!(
            check(&scenario(), &negotiated, true).unwrap_err().what,
            "signature scheme"
        );
        // A backend that cannot report the scheme is not held to it.
        check(&scenario(), &negotiated, false).unwrap();
        let mut negotiated = good();
        negotiated.resumed = true;
        assert_eq!(
            check(&scenario(), &negotiated, true).unwrap_err().what,
            "resumption"
        );
    }

    /// A 0-RTT row is measured only if its early data was accepted: a
    /// resumed handshake whose 0-RTT the server rejected is an error,
    /// never a quiet psk sample.
    #[test]
    fn a_zero_rtt_handshake_must_have_its_early_data_accepted() {
        let mut zero_rtt =
            HandshakeScenario::full(TlsVersion::Quic, Group::X25519, CertKind::EcdsaP256);
        zero_rtt.resumption = crate::scenario::Resumption::ZeroRtt;
        let mut negotiated = good();
        negotiated.version = "QUIC".into();
        negotiated.alpn = Some("tlslab".into());
        negotiated.signature = None;
        negotiated.resumed = true;
        let error = check(&zero_rtt, &negotiated, true).unwrap_err();
        assert_eq!(
            error.to_string(),
            "wrong early data: asked for 0-RTT data accepted, negotiated no 0-RTT data accepted"
        );
        negotiated.early_data = true;
        check(&zero_rtt, &negotiated, true).unwrap();
        // Early data on a psk row is as wrong as none on a 0rtt row.
        let mut psk = zero_rtt;
        psk.resumption = crate::scenario::Resumption::Psk;
        assert_eq!(
            check(&psk, &negotiated, true).unwrap_err().what,
            "early data"
        );
        // And a full handshake cannot pass as 0-RTT.
        negotiated.resumed = false;
        assert_eq!(
            check(&zero_rtt, &negotiated, true).unwrap_err().what,
            "resumption"
        );
    }

    #[test]
    fn a_quic_handshake_must_agree_on_tlslabs_alpn() {
        let quic = HandshakeScenario::full(TlsVersion::Quic, Group::X25519, CertKind::EcdsaP256);
        let mut negotiated = good();
        negotiated.version = "QUIC".into();
        let error = check(&quic, &negotiated, true).unwrap_err();
        assert_eq!(
            error.to_string(),
            "wrong ALPN protocol: asked for tlslab, negotiated none"
        );
        negotiated.alpn = Some("tlslab".into());
        check(&quic, &negotiated, true).unwrap();
        // A TLS row offers no ALPN, so one that reports some is wrong too.
        assert_eq!(
            check(&scenario(), &negotiated, true).unwrap_err().what,
            "version"
        );
        let mut tls = good();
        tls.alpn = Some("tlslab".into());
        assert_eq!(
            check(&scenario(), &tls, true).unwrap_err().what,
            "ALPN protocol"
        );
    }
}
