//! What a server offers: several protocol versions, groups, certificates
//! and suites at once, each list in the server's order of preference, as
//! nginx offers its `ssl_protocols`, `ssl_ecdh_curve`, certificates and
//! `ssl_ciphers`; the client's hello picks among them. A list of one value
//! pins the server to one configuration, as a [`HandshakeScenario`] does.

use super::{
    Aead, CertKind, Group, HandshakeScenario, Named, Resumption, TlsVersion, Transport,
    DEFAULT_CHAIN_DEPTH,
};

/// The versions, groups, certificates and suites a server offers, each in
/// its order of preference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerOffer {
    pub versions: Vec<TlsVersion>,
    pub groups: Vec<Group>,
    /// One certificate chain per key type; the first the client's
    /// signature algorithms allow is used.
    pub certs: Vec<CertKind>,
    pub aeads: Vec<Aead>,
    pub resumption: Resumption,
    /// Certificates in each chain, root to leaf inclusive.
    pub chain_depth: u8,
}

impl Default for ServerOffer {
    /// What `tlslab serve` offers unless told otherwise: enough for every
    /// common client (TLS 1.3 and 1.2; X25519, P-256, P-384; an ECDSA and
    /// an RSA certificate; the three AEADs), full handshakes only.
    fn default() -> Self {
        Self {
            versions: vec![TlsVersion::Tls13, TlsVersion::Tls12],
            groups: vec![Group::X25519, Group::P256, Group::P384],
            certs: vec![CertKind::EcdsaP256, CertKind::Rsa2048],
            aeads: vec![Aead::Aes128Gcm, Aead::Aes256Gcm, Aead::Chacha20Poly1305],
            resumption: Resumption::Off,
            chain_depth: DEFAULT_CHAIN_DEPTH,
        }
    }
}

impl ServerOffer {
    /// The offer of exactly one scenario's version, group, certificate and suite.
    pub fn single(scenario: &HandshakeScenario) -> Self {
        Self {
            versions: vec![scenario.version],
            groups: vec![scenario.group],
            certs: vec![scenario.cert],
            aeads: vec![scenario.aead],
            resumption: scenario.resumption,
            chain_depth: scenario.chain_depth,
        }
    }

    /// Every handshake a client could make with this server: each version,
    /// group, certificate and suite that go together, in the order of
    /// preference (suite first, then version, certificate and group), so
    /// the suites of the first scenarios are the ones preferred.
    pub fn scenarios(&self) -> Vec<HandshakeScenario> {
        self.combinations()
            .into_iter()
            .filter(|s| s.protocol_conflict().is_none())
            .collect()
    }

    /// Every combination of the lists, in the order of
    /// [`ServerOffer::scenarios`], those the protocol forbids included.
    pub fn combinations(&self) -> Vec<HandshakeScenario> {
        let mut scenarios = Vec::new();
        for &aead in &self.aeads {
            for &version in &self.versions {
                for &cert in &self.certs {
                    for &group in &self.groups {
                        scenarios.push(HandshakeScenario {
                            version,
                            group,
                            cert,
                            aead,
                            resumption: self.resumption,
                            mutual: false,
                            chain_depth: self.chain_depth,
                            mtu_bytes: None,
                            transport: Transport::Memory,
                        });
                    }
                }
            }
        }
        scenarios
    }

    /// The offer in one line: each list, in order.
    pub fn describe(&self) -> String {
        fn ids<T: Named>(values: &[T]) -> String {
            values
                .iter()
                .map(|v| v.name())
                .collect::<Vec<_>>()
                .join(",")
        }
        let versions: Vec<&str> = self.versions.iter().map(|v| v.display()).collect();
        let mut text = format!(
            "{} {} {} {}",
            versions.join(","),
            ids(&self.groups),
            ids(&self.certs),
            ids(&self.aeads)
        );
        if self.resumption.is_on() {
            text.push_str(&format!(" resume={}", self.resumption.id()));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_offer_expands_to_the_combinations_that_go_together() {
        let offer = ServerOffer {
            versions: vec![TlsVersion::Tls13, TlsVersion::Tls12],
            groups: vec![Group::X25519, Group::RsaKeyTransport],
            certs: vec![CertKind::Rsa2048],
            aeads: vec![Aead::Aes256Gcm, Aead::Aes128CbcSha],
            ..ServerOffer::default()
        };
        let labels: Vec<(TlsVersion, Group, Aead)> = offer
            .scenarios()
            .iter()
            .map(|s| (s.version, s.group, s.aead))
            .collect();
        // No RSA key transport in TLS 1.3, no CBC in TLS 1.3; suites first.
        assert_eq!(
            labels,
            vec![
                (TlsVersion::Tls13, Group::X25519, Aead::Aes256Gcm),
                (TlsVersion::Tls12, Group::X25519, Aead::Aes256Gcm),
                (TlsVersion::Tls12, Group::RsaKeyTransport, Aead::Aes256Gcm),
                (TlsVersion::Tls12, Group::X25519, Aead::Aes128CbcSha),
                (
                    TlsVersion::Tls12,
                    Group::RsaKeyTransport,
                    Aead::Aes128CbcSha
                ),
            ]
        );
    }

    #[test]
    fn a_single_scenario_is_an_offer_of_one_of_each() {
        let scenario = HandshakeScenario::full(TlsVersion::Tls12, Group::P256, CertKind::Rsa2048);
        let offer = ServerOffer::single(&scenario);
        assert_eq!(offer.scenarios().len(), 1);
        assert_eq!(offer.scenarios()[0].suite_name(), scenario.suite_name());
    }
}
