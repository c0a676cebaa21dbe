//! What to measure: a handshake scenario is one point of the matrix (version,
//! group, certificate, cipher, resumption, mutual authentication, chain
//! depth, and for DTLS the datagram MTU). This module owns the stable scenario ids, the protocol rules that
//! make a combination meaningless, matrix expansion and presets.

/// The chain depths a scenario may ask for: a root and a leaf at least,
/// at most six intermediates between them.
pub const CHAIN_DEPTHS: std::ops::RangeInclusive<u8> = 2..=8;

pub mod axes;
pub mod backend;
pub mod baseline;
pub mod bulk;
pub mod cpu;
pub mod measure;
pub mod names;
pub mod network;
pub mod offer;
pub mod operations;
pub mod presets;
pub mod server;
pub mod shard;
pub mod side;
pub mod speed;
pub mod subject;
pub mod transport;
pub mod tunnel;
pub mod tunnel_axes;
pub mod wall_clock;

use serde::Serialize;

pub use axes::{Aead, CertKind, Group, KxKind, Resumption, SignatureFamily, TlsVersion};
pub use backend::{BackendChoice, BackendId, BackendList};
pub use cpu::CpuFeatures;
pub use measure::Measure;
pub use names::{distinct, parse_list, parse_name, Named, UnknownName};
pub use offer::ServerOffer;
pub use server::ServerKind;
pub use shard::Shard;
pub use side::Side;
pub use subject::{RowBackend, Subject, SubjectKind};
pub use transport::Transport;
pub use wall_clock::WallClock;

/// The number of certificates in the default chain: root -> intermediate -> leaf.
pub const DEFAULT_CHAIN_DEPTH: u8 = 3;

/// The largest datagram a DTLS handshake may send unless `--mtu` says
/// otherwise, in bytes of UDP payload: an Ethernet path (1500) less IP and
/// UDP headers with room for a tunnel.
pub const DEFAULT_MTU_BYTES: u16 = 1400;

/// The largest UDP payload over IPv4: the upper bound of `--mtu`.
pub const MAX_MTU_BYTES: u16 = 65_507;

/// One handshake configuration to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HandshakeScenario {
    pub version: TlsVersion,
    pub group: Group,
    pub cert: CertKind,
    pub aead: Aead,
    pub resumption: Resumption,
    pub mutual: bool,
    /// Certificates from root to leaf inclusive (2 = root signs the leaf).
    pub chain_depth: u8,
    /// The largest datagram either side may send, in bytes (UDP payload):
    /// `Some` for DTLS and QUIC, `None` for TLS over a byte stream.
    pub mtu_bytes: Option<u16>,
    /// What carries the bytes: memory (one thread) or a loopback socket
    /// (two threads); part of the label (`_tcp`, `_udp`).
    pub transport: Transport,
}

impl HandshakeScenario {
    /// A full handshake of `version`, `group` and `cert` with everything
    /// else at its default: AES-128-GCM, no resumption, the server alone
    /// authenticated, the default chain, the default MTU for DTLS, over
    /// memory.
    pub fn full(version: TlsVersion, group: Group, cert: CertKind) -> Self {
        Self {
            version,
            group,
            cert,
            aead: Aead::Aes128Gcm,
            resumption: Resumption::Off,
            mutual: false,
            chain_depth: DEFAULT_CHAIN_DEPTH,
            mtu_bytes: Self::mtu_for(version, DEFAULT_MTU_BYTES),
            transport: Transport::Memory,
        }
    }

    /// The datagram MTU for a version: the given one for DTLS and QUIC,
    /// none for TLS.
    pub fn mtu_for(version: TlsVersion, mtu_bytes: u16) -> Option<u16> {
        version.is_datagram().then_some(mtu_bytes)
    }

    /// The MTU a stored label names (`_mtu1200`), or the default for a DTLS
    /// label without one; `None` for TLS. The store keeps the MTU in the
    /// label only (the scenario id), so this is how it comes back.
    pub fn mtu_from_label(version: TlsVersion, label: &str) -> Option<u16> {
        if !version.is_datagram() {
            return None;
        }
        let given = Transport::strip_suffix(label)
            .rsplit_once("_mtu")
            .and_then(|(_, digits)| digits.parse::<u16>().ok());
        Some(given.unwrap_or(DEFAULT_MTU_BYTES))
    }

    /// The stable snake_case id, the key of this scenario in the database and exports.
    pub fn label(&self) -> String {
        let mut label = format!(
            "handshake_{}_{}_{}_{}",
            self.version.id(),
            self.group.id(),
            self.cert.id(),
            self.aead.id()
        );
        if self.resumption.is_on() {
            label.push_str("_resume_");
            label.push_str(self.resumption.id());
        }
        if self.mutual {
            label.push_str("_mutual");
        }
        if self.chain_depth != DEFAULT_CHAIN_DEPTH {
            label.push_str(&format!("_chain{}", self.chain_depth));
        }
        if let Some(mtu) = self.mtu_bytes.filter(|mtu| *mtu != DEFAULT_MTU_BYTES) {
            label.push_str(&format!("_mtu{mtu}"));
        }
        label.push_str(self.transport.label_suffix());
        label
    }

    /// Why the protocol itself does not allow this combination, if it does not.
    pub fn protocol_conflict(&self) -> Option<String> {
        if let Some(reason) = self.group.protocol_conflict(self.version) {
            return Some(reason.to_string());
        }
        if let Some(reason) = self.resumption.protocol_conflict(self.version) {
            return Some(reason.to_string());
        }
        if let Some(reason) = self.aead.protocol_conflict(self.version) {
            return Some(reason.to_string());
        }
        if let Some(reason) = self.transport.conflict(self.version) {
            return Some(reason.to_string());
        }
        if let Some(mtu) = self
            .mtu_bytes
            .filter(|mtu| self.version == TlsVersion::Quic && *mtu < axes::QUIC_MIN_MTU_BYTES)
        {
            return Some(format!(
                "QUIC needs datagrams of at least {} bytes (RFC 9000 §14), --mtu is {mtu}",
                axes::QUIC_MIN_MTU_BYTES
            ));
        }
        let tls12 = self.version.tls_rules() == TlsVersion::Tls12;
        let family = self.cert.family();
        if self.group == Group::RsaKeyTransport && family != SignatureFamily::Rsa {
            return Some("RSA key transport needs an RSA certificate".to_string());
        }
        if self.version.tls_rules() == TlsVersion::Tls13 && !self.aead.is_aead() {
            return Some("TLS 1.3 has AEAD suites only (no CBC)".into());
        }
        if self.group == Group::RsaKeyTransport && self.aead == Aead::Chacha20Poly1305 {
            return Some(
                "TLS 1.2 defines no ChaCha20-Poly1305 suite with RSA key transport".into(),
            );
        }
        if tls12 && self.group.ffdh_bits().is_some() && family != SignatureFamily::Rsa {
            return Some(
                "TLS 1.2 defines DHE suites only with RSA authentication (no DHE-ECDSA)".into(),
            );
        }
        if tls12 && family == SignatureFamily::MlDsa {
            return Some("ML-DSA signatures are defined for TLS 1.3 only".into());
        }
        let ecdhe = self.group.kind() == KxKind::Ecdh;
        if ecdhe && self.aead == Aead::Aes256CbcSha256 {
            return Some(
                "TLS 1.2 defines ECDHE AES-256-CBC with SHA-384, not SHA-256 (use aes256cbc_sha384)"
                    .into(),
            );
        }
        if !ecdhe && self.aead == Aead::Aes256CbcSha384 {
            return Some(
                "TLS 1.2 defines AES-256-CBC with SHA-384 only for ECDHE (use aes256cbc_sha256)"
                    .into(),
            );
        }
        None
    }

    /// The IANA name of the cipher suite this scenario must negotiate.
    pub fn suite_name(&self) -> &'static str {
        if self.version.tls_rules() == TlsVersion::Tls13 {
            return match self.aead {
                Aead::Aes256Gcm => "TLS_AES_256_GCM_SHA384",
                Aead::Chacha20Poly1305 => "TLS_CHACHA20_POLY1305_SHA256",
                // CBC has no TLS 1.3 suite (a protocol conflict); the name
                // is never negotiated.
                _ => "TLS_AES_128_GCM_SHA256",
            };
        }
        let ecdsa = self.cert.family() != SignatureFamily::Rsa;
        match (self.group.kind(), ecdsa, self.aead) {
            (KxKind::RsaKeyTransport, _, aead) => match aead {
                Aead::Aes128Gcm => "TLS_RSA_WITH_AES_128_GCM_SHA256",
                Aead::Aes128CbcSha => "TLS_RSA_WITH_AES_128_CBC_SHA",
                Aead::Aes256CbcSha => "TLS_RSA_WITH_AES_256_CBC_SHA",
                Aead::Aes128CbcSha256 => "TLS_RSA_WITH_AES_128_CBC_SHA256",
                Aead::Aes256CbcSha256 | Aead::Aes256CbcSha384 => "TLS_RSA_WITH_AES_256_CBC_SHA256",
                _ => "TLS_RSA_WITH_AES_256_GCM_SHA384",
            },
            (KxKind::Ffdh { .. }, _, aead) => match aead {
                Aead::Aes128Gcm => "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256",
                Aead::Aes256Gcm => "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384",
                Aead::Chacha20Poly1305 => "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
                Aead::Aes128CbcSha => "TLS_DHE_RSA_WITH_AES_128_CBC_SHA",
                Aead::Aes256CbcSha => "TLS_DHE_RSA_WITH_AES_256_CBC_SHA",
                Aead::Aes128CbcSha256 => "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256",
                Aead::Aes256CbcSha256 | Aead::Aes256CbcSha384 => {
                    "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256"
                }
            },
            (_, false, aead) => match aead {
                Aead::Aes128Gcm => "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                Aead::Aes256Gcm => "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
                Aead::Chacha20Poly1305 => "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
                Aead::Aes128CbcSha => "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
                Aead::Aes256CbcSha => "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
                Aead::Aes128CbcSha256 => "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
                Aead::Aes256CbcSha256 | Aead::Aes256CbcSha384 => {
                    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384"
                }
            },
            (_, true, aead) => match aead {
                Aead::Aes128Gcm => "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
                Aead::Aes256Gcm => "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
                Aead::Chacha20Poly1305 => "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
                Aead::Aes128CbcSha => "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
                Aead::Aes256CbcSha => "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
                Aead::Aes128CbcSha256 => "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
                Aead::Aes256CbcSha256 | Aead::Aes256CbcSha384 => {
                    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384"
                }
            },
        }
    }

    /// The security notes of every part of the scenario.
    pub fn security_notes(&self) -> Vec<&'static str> {
        let mut notes = self.group.security_notes();
        notes.extend(self.cert.security_notes());
        notes.extend(self.aead.security_notes());
        notes
    }

    /// True if and only if the scenario needs the library's security level
    /// lowered (measured, and flagged as weak).
    pub fn is_weak(&self) -> bool {
        self.group.is_weak()
    }

    /// A readable one-line description for tables.
    pub fn describe(&self) -> String {
        let mut text = format!(
            "{} {} {} {}",
            self.version.display(),
            self.group.display(),
            self.cert.display(),
            self.aead.name()
        );
        if self.resumption.is_on() {
            text.push_str(&format!(" resume={}", self.resumption.id()));
        }
        if self.mutual {
            text.push_str(" mutual");
        }
        if self.chain_depth != DEFAULT_CHAIN_DEPTH {
            text.push_str(&format!(" chain={}", self.chain_depth));
        }
        if let Some(mtu) = self.mtu_bytes.filter(|mtu| *mtu != DEFAULT_MTU_BYTES) {
            text.push_str(&format!(" mtu={mtu}"));
        }
        if self.transport.is_socket() {
            text.push_str(&format!(" over {}", self.transport.display()));
        }
        text
    }
}

impl Serialize for HandshakeScenario {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("HandshakeScenario", 10)?;
        s.serialize_field("label", &self.label())?;
        s.serialize_field("tls_version", self.version.id())?;
        s.serialize_field("group", self.group.id())?;
        s.serialize_field("cert", self.cert.id())?;
        s.serialize_field("suite", self.suite_name())?;
        s.serialize_field("aead", self.aead.id())?;
        s.serialize_field("resumption", self.resumption.id())?;
        s.serialize_field("mutual", &self.mutual)?;
        s.serialize_field("chain_depth", &self.chain_depth)?;
        s.serialize_field("mtu_bytes", &self.mtu_bytes)?;
        s.serialize_field("transport", &self.transport)?;
        s.end()
    }
}

/// A scenario read back from what [`Serialize`] wrote (its ids; the MTU
/// and the transport from the label).
impl<'de> serde::Deserialize<'de> for HandshakeScenario {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        struct Ids {
            label: String,
            tls_version: String,
            group: String,
            cert: String,
            aead: String,
            resumption: String,
            mutual: bool,
            chain_depth: u8,
        }
        let ids = Ids::deserialize(deserializer)?;
        let bad = |e: UnknownName| serde::de::Error::custom(e.to_string());
        let version: TlsVersion = parse_name(&ids.tls_version).map_err(bad)?;
        Ok(HandshakeScenario {
            version,
            group: parse_name(&ids.group).map_err(bad)?,
            cert: parse_name(&ids.cert).map_err(bad)?,
            aead: parse_name(&ids.aead).map_err(bad)?,
            resumption: parse_name(&ids.resumption).map_err(bad)?,
            mutual: ids.mutual,
            chain_depth: ids.chain_depth,
            mtu_bytes: HandshakeScenario::mtu_from_label(version, &ids.label),
            transport: Transport::from_label(&ids.label),
        })
    }
}

/// The axes of a matrix, each a list of values to combine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HandshakeMatrix {
    pub versions: Vec<TlsVersion>,
    pub groups: Vec<Group>,
    pub certs: Vec<CertKind>,
    pub aeads: Vec<Aead>,
    pub resumptions: Vec<Resumption>,
    pub mutual: Vec<bool>,
    pub chain_depth: u8,
    /// The datagram MTU of DTLS rows, in bytes (TLS rows have none).
    pub mtu_bytes: u16,
    /// What carries each row: memory, or loopback TCP (TLS) and UDP (DTLS).
    pub transports: Vec<Transport>,
}

/// An error in the options that make up a matrix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MatrixError {
    #[error("{0}")]
    UnknownName(#[from] UnknownName),
    #[error("the {axis} list is empty")]
    EmptyAxis { axis: &'static str },
    #[error("contradictory options: {0}")]
    Contradiction(String),
    #[error("chain depth must be between 2 and 8, got {0}")]
    ChainDepth(u8),
    #[error(
        "the MTU must be between 1 and {MAX_MTU_BYTES} bytes (the largest UDP payload), got {0}"
    )]
    Mtu(u16),
}

impl HandshakeMatrix {
    /// Every combination of the axes, in a stable order.
    pub fn expand(&self) -> Vec<HandshakeScenario> {
        let mut scenarios = Vec::new();
        for &version in &self.versions {
            for &group in &self.groups {
                for &cert in &self.certs {
                    for &aead in &self.aeads {
                        for &resumption in &self.resumptions {
                            for &mutual in &self.mutual {
                                for &transport in &self.transports_for(version) {
                                    scenarios.push(HandshakeScenario {
                                        version,
                                        group,
                                        cert,
                                        aead,
                                        resumption,
                                        mutual,
                                        chain_depth: self.chain_depth,
                                        mtu_bytes: HandshakeScenario::mtu_for(
                                            version,
                                            self.mtu_bytes,
                                        ),
                                        transport,
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
        scenarios
    }

    /// The transports rows of `version` run over. A socket that cannot
    /// carry the version (UDP for TLS, TCP for DTLS) is left out when
    /// another transport of the list can carry it (`--transport tcp,udp`
    /// with TLS and DTLS rows gives TLS over TCP and DTLS over UDP); when
    /// none can, it stays, as a row that says why.
    fn transports_for(&self, version: TlsVersion) -> Vec<Transport> {
        let fitting: Vec<Transport> = self
            .transports
            .iter()
            .copied()
            .filter(|t| t.conflict(version).is_none())
            .collect();
        if fitting.is_empty() {
            self.transports.clone()
        } else {
            fitting
        }
    }

    /// Checks that the options make sense together: every axis has a value,
    /// and every group and resumption mode can be used with at least one of
    /// the requested versions (a group no requested version allows is a
    /// contradiction, not a row).
    pub fn validate(&self) -> Result<(), MatrixError> {
        let axes: [(&'static str, bool); 7] = [
            ("TLS version", self.versions.is_empty()),
            ("group", self.groups.is_empty()),
            ("certificate", self.certs.is_empty()),
            ("suite", self.aeads.is_empty()),
            ("resumption", self.resumptions.is_empty()),
            ("mutual", self.mutual.is_empty()),
            ("transport", self.transports.is_empty()),
        ];
        if let Some((axis, _)) = axes.iter().find(|(_, empty)| *empty) {
            return Err(MatrixError::EmptyAxis { axis });
        }
        if !CHAIN_DEPTHS.contains(&self.chain_depth) {
            return Err(MatrixError::ChainDepth(self.chain_depth));
        }
        if !(1..=MAX_MTU_BYTES).contains(&self.mtu_bytes) {
            return Err(MatrixError::Mtu(self.mtu_bytes));
        }
        for &group in &self.groups {
            let conflicts: Vec<&str> = self
                .versions
                .iter()
                .filter_map(|&version| group.protocol_conflict(version))
                .collect();
            if conflicts.len() == self.versions.len() {
                return Err(MatrixError::Contradiction(format!(
                    "group {} with TLS {}: {}",
                    group.id(),
                    version_list(&self.versions),
                    conflicts[0]
                )));
            }
        }
        for &resumption in &self.resumptions {
            let conflicts: Vec<&str> = self
                .versions
                .iter()
                .filter_map(|&version| resumption.protocol_conflict(version))
                .collect();
            if conflicts.len() == self.versions.len() {
                return Err(MatrixError::Contradiction(format!(
                    "resumption {} with TLS {}: {}",
                    resumption.id(),
                    version_list(&self.versions),
                    conflicts[0]
                )));
            }
        }
        if self
            .expand()
            .iter()
            .all(|s| s.protocol_conflict().is_some())
        {
            let first = self.expand()[0];
            return Err(MatrixError::Contradiction(format!(
                "no combination can be measured; for example {}: {}",
                first.label(),
                first.protocol_conflict().unwrap_or_default()
            )));
        }
        Ok(())
    }
}

fn version_list(versions: &[TlsVersion]) -> String {
    versions
        .iter()
        .map(|v| v.id())
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix(versions: &str, groups: &str, certs: &str) -> HandshakeMatrix {
        HandshakeMatrix {
            versions: parse_list(versions).unwrap(),
            groups: parse_list(groups).unwrap(),
            certs: parse_list(certs).unwrap(),
            aeads: vec![Aead::Aes128Gcm],
            resumptions: vec![Resumption::Off],
            mutual: vec![false],
            chain_depth: DEFAULT_CHAIN_DEPTH,
            mtu_bytes: DEFAULT_MTU_BYTES,
            transports: vec![crate::scenario::Transport::Memory],
        }
    }

    #[test]
    fn labels_are_stable_snake_case() {
        let scenario = matrix("1.3", "x25519", "ecdsa_p256").expand()[0];
        assert_eq!(
            scenario.label(),
            "handshake_1.3_x25519_ecdsa_p256_aes128gcm"
        );
        let mut resumed = scenario;
        resumed.resumption = Resumption::Psk;
        resumed.mutual = true;
        resumed.chain_depth = 4;
        assert_eq!(
            resumed.label(),
            "handshake_1.3_x25519_ecdsa_p256_aes128gcm_resume_psk_mutual_chain4"
        );
    }

    /// `--resumption 0rtt` (or `early`): a TLS 1.3 resumption that sends
    /// early data, with its own label; TLS 1.2 and DTLS 1.2 have none, so
    /// a matrix of those alone is a contradiction that says why.
    #[test]
    fn zero_rtt_is_a_resumption_mode_of_tls13_rules_only() {
        for name in ["0rtt", "0-RTT", "early", "early_data", "zero_rtt"] {
            assert_eq!(
                parse_name::<Resumption>(name),
                Ok(Resumption::ZeroRtt),
                "{name}"
            );
        }
        assert!(Resumption::ZeroRtt.is_on());
        assert!(Resumption::ZeroRtt.sends_early_data());
        assert!(!Resumption::Psk.sends_early_data());
        for version in [TlsVersion::Tls13, TlsVersion::Quic, TlsVersion::Dtls13] {
            assert_eq!(Resumption::ZeroRtt.protocol_conflict(version), None);
        }
        for version in [TlsVersion::Tls12, TlsVersion::Dtls12] {
            assert_eq!(
                Resumption::ZeroRtt.protocol_conflict(version),
                Some("0-RTT (early data) is TLS 1.3's; TLS 1.2 has none")
            );
        }
        let mut m = matrix("quic", "x25519", "ecdsa_p256");
        m.resumptions = vec![Resumption::ZeroRtt];
        assert_eq!(
            m.expand()[0].label(),
            "handshake_quic_x25519_ecdsa_p256_aes128gcm_resume_0rtt"
        );
        m.versions = parse_list("1.2,dtls1.2").unwrap();
        let error = m.validate().unwrap_err().to_string();
        assert!(
            error.contains("resumption 0rtt with TLS 1.2,dtls1.2: 0-RTT (early data) is TLS 1.3's"),
            "{error}"
        );
    }

    #[test]
    fn dtls_labels_are_distinct_and_carry_a_non_default_mtu() {
        let mut m = matrix("1.2,dtls1.2", "p256", "rsa2048");
        let labels: Vec<_> = m.expand().iter().map(|s| s.label()).collect();
        assert_eq!(
            labels,
            vec![
                "handshake_1.2_p256_rsa2048_aes128gcm",
                "handshake_dtls1.2_p256_rsa2048_aes128gcm"
            ]
        );
        m.mtu_bytes = 576;
        let rows = m.expand();
        assert_eq!(rows[0].mtu_bytes, None, "TLS rows have no MTU");
        assert_eq!(
            rows[1].label(),
            "handshake_dtls1.2_p256_rsa2048_aes128gcm_mtu576"
        );
        let version = rows[1].version;
        assert_eq!(
            HandshakeScenario::mtu_from_label(version, &rows[1].label()),
            Some(576)
        );
        assert_eq!(
            HandshakeScenario::mtu_from_label(version, &labels[1]),
            Some(DEFAULT_MTU_BYTES)
        );
        m.mtu_bytes = 0;
        assert!(m.validate().unwrap_err().to_string().contains("MTU"));
    }

    #[test]
    fn each_protocol_runs_over_the_socket_that_carries_it() {
        let mut m = matrix("1.3,dtls1.2", "p256", "rsa2048");
        m.mtu_bytes = 576;
        m.transports = vec![Transport::Memory, Transport::Tcp, Transport::Udp];
        let labels: Vec<_> = m.expand().iter().map(|s| s.label()).collect();
        assert_eq!(
            labels,
            vec![
                "handshake_1.3_p256_rsa2048_aes128gcm",
                "handshake_1.3_p256_rsa2048_aes128gcm_tcp",
                "handshake_dtls1.2_p256_rsa2048_aes128gcm_mtu576",
                "handshake_dtls1.2_p256_rsa2048_aes128gcm_mtu576_udp",
            ]
        );
        let over_udp = m.expand()[3];
        assert_eq!(
            HandshakeScenario::mtu_from_label(over_udp.version, &over_udp.label()),
            Some(576)
        );
        // Alone, the wrong socket stays as a row that says why.
        m.transports = vec![Transport::Udp];
        let rows = m.expand();
        assert_eq!(rows.len(), 2);
        assert!(rows[0].protocol_conflict().unwrap().contains("byte stream"));
        assert_eq!(rows[1].protocol_conflict(), None);
    }

    #[test]
    fn dtls12_follows_tls12_rules() {
        let rows = matrix("dtls1.2", "dhe2048,ffdhe2048,p256", "rsa2048,ecdsa_p256").expand();
        let measurable: Vec<_> = rows
            .iter()
            .filter(|s| s.protocol_conflict().is_none())
            .map(|s| s.suite_name())
            .collect();
        assert_eq!(
            measurable,
            vec![
                "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256",
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            ]
        );
    }

    #[test]
    fn cbc_suites_are_tls12_only() {
        let mut m = matrix("1.2,1.3", "x25519", "rsa2048");
        m.aeads = parse_list("aes128cbc_sha256,aes256cbc_sha384").unwrap();
        m.validate().unwrap();
        let rows = m.expand();
        let conflicts: Vec<_> = rows.iter().map(|s| s.protocol_conflict()).collect();
        assert_eq!(conflicts[0], None);
        assert_eq!(
            rows[1].suite_name(),
            "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384"
        );
        assert!(conflicts[2]
            .as_deref()
            .unwrap()
            .contains("AEAD suites only"));
        let mut dhe = rows[1];
        dhe.group = Group::Dhe2048;
        assert!(dhe.protocol_conflict().unwrap().contains("only for ECDHE"));
    }

    #[test]
    fn tls13_with_rsa_key_transport_is_a_contradiction() {
        let error = matrix("1.3", "rsa", "rsa2048").validate().unwrap_err();
        assert!(
            error.to_string().contains("no RSA key transport"),
            "{error}"
        );
    }

    #[test]
    fn mixed_versions_make_rows_not_errors() {
        let m = matrix("1.2,1.3", "rsa,x25519", "rsa2048");
        m.validate().unwrap();
        let conflicts: Vec<_> = m
            .expand()
            .into_iter()
            .filter(|s| s.protocol_conflict().is_some())
            .map(|s| s.label())
            .collect();
        assert_eq!(conflicts, vec!["handshake_1.3_rsa_rsa2048_aes128gcm"]);
    }

    #[test]
    fn suite_names_follow_key_exchange_and_certificate() {
        let rows = matrix("1.2", "rsa,dhe2048,p256", "rsa2048,ecdsa_p256").expand();
        let names: Vec<_> = rows
            .iter()
            .filter(|s| s.protocol_conflict().is_none())
            .map(|s| s.suite_name())
            .collect();
        assert_eq!(
            names,
            vec![
                "TLS_RSA_WITH_AES_128_GCM_SHA256",
                "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256",
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            ]
        );
    }
}
