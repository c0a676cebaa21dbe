//! A backend with deterministic fake timings, for testing the pipeline
//! (matrix -> sampling -> statistics -> store -> exports) without noise. It
//! performs no cryptography and is never listed as a backend.

use anyhow::Result;

use super::{Backend, Capabilities, HandshakeSample, Handshaker, LibraryInfo, Negotiated};
use crate::certs::Credentials;
use crate::scenario::{
    Aead, CertKind, Group, HandshakeScenario, KxKind, Named, Resumption, TlsVersion,
};

/// The mock backend. It lacks X448 and Ed448 so that matrices get
/// unsupported rows, and can be told to negotiate a wrong group.
#[derive(Debug, Clone)]
pub struct MockBackend {
    capabilities: Capabilities,
    /// If set, every handshake reports this group instead of the one asked for.
    pub wrong_group: Option<Group>,
}

impl Default for MockBackend {
    fn default() -> Self {
        let groups = |version: TlsVersion| -> Vec<Group> {
            Group::ALL
                .iter()
                .copied()
                .filter(|g| *g != Group::X448 && g.protocol_conflict(version).is_none())
                .collect()
        };
        Self {
            capabilities: Capabilities {
                versions: vec![TlsVersion::Tls12, TlsVersion::Tls13],
                groups_tls12: groups(TlsVersion::Tls12),
                groups_tls13: groups(TlsVersion::Tls13),
                certs: CertKind::ALL
                    .iter()
                    .copied()
                    .filter(|c| *c != CertKind::Ed448)
                    .collect(),
                aeads: Aead::ALL.to_vec(),
                resumptions: Resumption::ALL.to_vec(),
                mutual: true,
                reports_signature_scheme: true,
            },
            wrong_group: None,
        }
    }
}

impl MockBackend {
    /// A mock whose handshakes all report `group`, whatever was asked for.
    pub fn negotiating_group(group: Group) -> Self {
        Self {
            wrong_group: Some(group),
            ..Self::default()
        }
    }
}

impl Backend for MockBackend {
    fn id(&self) -> &'static str {
        "mock"
    }

    fn library(&self) -> LibraryInfo {
        LibraryInfo {
            backend: "mock".to_string(),
            library: "mock".to_string(),
            version: "0".to_string(),
        }
    }

    fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    fn handshaker(
        &self,
        scenario: &HandshakeScenario,
        _credentials: &Credentials,
    ) -> Result<Box<dyn Handshaker>> {
        Ok(Box::new(MockHandshaker {
            scenario: *scenario,
            wrong_group: self.wrong_group,
            count: 0,
        }))
    }
}

struct MockHandshaker {
    scenario: HandshakeScenario,
    wrong_group: Option<Group>,
    count: u64,
}

/// Fake but plausible per-side costs: key exchange by its kind and size,
/// signature by certificate family.
fn mock_cost_ns(scenario: &HandshakeScenario) -> (u64, u64) {
    let kx = match scenario.group.kind() {
        KxKind::RsaKeyTransport => 20_000,
        KxKind::Ffdh { bits } => u64::from(bits) * 100,
        KxKind::Ecdh => 50_000,
        KxKind::Kem => 40_000,
    };
    let signature = match scenario.cert.family() {
        crate::scenario::SignatureFamily::Rsa => 600_000,
        _ => 30_000,
    };
    (100_000 + kx + signature / 10, 150_000 + kx + signature)
}

impl Handshaker for MockHandshaker {
    fn handshake(&mut self) -> Result<HandshakeSample> {
        self.count += 1;
        let scenario = &self.scenario;
        let (client, server) = mock_cost_ns(scenario);
        // A small deterministic spread, so statistics have something to do.
        let jitter = (self.count * 7919) % 11 * 100;
        let group = self.wrong_group.unwrap_or(scenario.group);
        let resumed = scenario.resumption.is_on();
        let signed = !resumed && group != Group::RsaKeyTransport;
        Ok(HandshakeSample {
            client_ns: client + jitter,
            server_ns: server + jitter,
            wall_ns: client + server + 2 * jitter + 1_000,
            negotiated: Negotiated {
                version: scenario.version.protocol_name().to_string(),
                suite: scenario.suite_name().to_string(),
                group: (!(resumed && scenario.version == TlsVersion::Tls12))
                    .then(|| group.id().to_string()),
                signature: signed
                    .then(|| scenario.cert.acceptable_schemes(scenario.version)[0].to_string()),
                resumed,
            },
        })
    }
}
