//! What `tlslab bulk` measures: a row is a protected channel (protocol
//! version and suite, after a handshake with a fixed group and certificate)
//! or the no-crypto channel, and the size of each application write. The
//! matrix, its stable labels and the study preset live here.

use serde::Serialize;

use super::axes::{Aead, CertKind, Group, TlsVersion};
use super::names::{parse_name, serialize_by_id, Named};
use super::{HandshakeScenario, Transport, DEFAULT_MTU_BYTES};

/// The key exchange of every bulk handshake (the handshake is not counted;
/// it only has to give the suite its keys).
pub const BULK_GROUP: Group = Group::X25519;
/// The certificate of every bulk handshake.
pub const BULK_CERT: CertKind = CertKind::EcdsaP256;
/// The largest write accepted, in bytes.
pub const MAX_WRITE_BYTES: usize = 1 << 20;

/// What protects the bytes of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Channel {
    /// No cryptography: the same writes through the same pipe with the same
    /// copies, framed as records; the baseline the crypto share is taken from.
    Plain,
    /// No cryptography over the datagram channel: each write cut into
    /// datagrams of the default MTU, one record each; the DTLS rows' baseline.
    PlainDatagrams,
    /// A connection of this protocol version (TLS or DTLS) and suite.
    Tls { version: TlsVersion, aead: Aead },
}

impl Channel {
    /// True for the no-crypto channels.
    pub fn is_plain(self) -> bool {
        matches!(self, Channel::Plain | Channel::PlainDatagrams)
    }

    /// "no crypto", "no crypto, datagrams", or the protocol as every
    /// table spells it ("TLS 1.3", "DTLS 1.2").
    pub fn display(self) -> String {
        match self {
            Channel::Plain => "no crypto".to_string(),
            Channel::PlainDatagrams => "no crypto, datagrams".to_string(),
            Channel::Tls { version, .. } => version.display().to_string(),
        }
    }
}

/// One row of `bulk`: a channel, the bytes of each application write and
/// what carries them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BulkScenario {
    pub channel: Channel,
    pub write_bytes: usize,
    /// Memory (sender and receiver in one thread) or loopback TCP (two
    /// threads); part of the label (`_tcp`).
    pub transport: Transport,
}

impl BulkScenario {
    /// The no-crypto row of a write size.
    pub fn plain(write_bytes: usize) -> Self {
        Self {
            channel: Channel::Plain,
            write_bytes,
            transport: Transport::Memory,
        }
    }

    /// The no-crypto row over datagrams of a write size.
    pub fn plain_datagrams(write_bytes: usize) -> Self {
        Self {
            channel: Channel::PlainDatagrams,
            ..Self::plain(write_bytes)
        }
    }

    /// The no-crypto row this row's crypto share is taken against: the same
    /// writes over the same transport, in datagrams for DTLS (over memory)
    /// and over UDP.
    pub fn no_crypto_twin(&self) -> Self {
        let datagrams = match self.channel {
            Channel::Plain => false,
            Channel::PlainDatagrams => true,
            Channel::Tls { version, .. } => version.is_datagram(),
        };
        Self::no_crypto(datagrams, self.write_bytes, self.transport)
    }

    /// The no-crypto row of a write size and transport for rows that use
    /// datagrams (DTLS) or not: UDP always carries datagrams, TCP never.
    fn no_crypto(datagrams: bool, write_bytes: usize, transport: Transport) -> Self {
        let datagrams = match transport {
            Transport::Udp => true,
            Transport::Tcp => false,
            Transport::Memory => datagrams,
        };
        let plain = if datagrams {
            Self::plain_datagrams(write_bytes)
        } else {
            Self::plain(write_bytes)
        };
        plain.over(transport)
    }

    /// This row over `transport`.
    pub fn over(self, transport: Transport) -> Self {
        Self { transport, ..self }
    }

    /// The stable snake_case id: `bulk_1.3_aes128gcm_16384`,
    /// `bulk_plain_16384`, and over TCP `bulk_1.3_aes128gcm_16384_tcp`.
    pub fn label(&self) -> String {
        let suffix = self.transport.label_suffix();
        match self.channel {
            Channel::Plain => format!("bulk_plain_{}{suffix}", self.write_bytes),
            Channel::PlainDatagrams => format!("bulk_plain_dgram_{}{suffix}", self.write_bytes),
            Channel::Tls { version, aead } => {
                format!(
                    "bulk_{}_{}_{}{suffix}",
                    version.id(),
                    aead.id(),
                    self.write_bytes
                )
            }
        }
    }

    /// The scenario a label names, if it names one.
    pub fn from_label(label: &str) -> Option<Self> {
        let transport = Transport::from_label(label);
        let rest = Transport::strip_suffix(label).strip_prefix("bulk_")?;
        let (head, size) = rest.rsplit_once('_')?;
        let write_bytes = size.parse().ok()?;
        let channel = if head == "plain" {
            Channel::Plain
        } else if head == "plain_dgram" {
            Channel::PlainDatagrams
        } else {
            let (version, aead) = head.split_once('_')?;
            Channel::Tls {
                version: parse_name(version).ok()?,
                aead: parse_name(aead).ok()?,
            }
        };
        Some(Self {
            channel,
            write_bytes,
            transport,
        })
    }

    /// The handshake that sets up a protected row (`None` for the plain row).
    pub fn handshake(&self) -> Option<HandshakeScenario> {
        match self.channel {
            Channel::Plain | Channel::PlainDatagrams => None,
            // DTLS rows run at the default MTU: each write is cut into
            // records that fit it.
            Channel::Tls { version, aead } => Some(HandshakeScenario {
                aead,
                transport: self.transport,
                ..HandshakeScenario::full(version, BULK_GROUP, BULK_CERT)
            }),
        }
    }

    /// The protocol id ("1.3", or "none" for the plain row).
    pub fn protocol_id(&self) -> &'static str {
        match self.channel {
            Channel::Plain | Channel::PlainDatagrams => "none",
            Channel::Tls { version, .. } => version.id(),
        }
    }

    /// The suite id ("aes128gcm", or "none" for the plain row).
    pub fn suite_id(&self) -> &'static str {
        match self.channel {
            Channel::Plain | Channel::PlainDatagrams => "none",
            Channel::Tls { aead, .. } => aead.id(),
        }
    }

    /// The suite as tables spell it ("aes-128-gcm", or "none").
    pub fn suite_name(&self) -> &'static str {
        match self.channel {
            Channel::Plain | Channel::PlainDatagrams => "none",
            Channel::Tls { aead, .. } => aead.name(),
        }
    }

    /// Known weaknesses of the row's protection, shown beside the figures.
    pub fn security_notes(&self) -> Vec<&'static str> {
        match self.channel {
            Channel::Plain | Channel::PlainDatagrams => vec!["no protection (the baseline)"],
            Channel::Tls { aead, .. } => aead.security_notes(),
        }
    }

    /// A readable one-line description for tables.
    pub fn describe(&self) -> String {
        let text = match self.channel {
            Channel::Plain => format!("no crypto, {} B writes", self.write_bytes),
            Channel::PlainDatagrams => format!(
                "no crypto, {} B writes in {DEFAULT_MTU_BYTES}-byte datagrams",
                self.write_bytes
            ),
            Channel::Tls { version, aead } => {
                format!(
                    "{} {}, {} B writes",
                    version.display(),
                    aead.name(),
                    self.write_bytes
                )
            }
        };
        text + &self.transport.over_suffix()
    }
}

impl Serialize for BulkScenario {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("BulkScenario", 6)?;
        s.serialize_field("label", &self.label())?;
        s.serialize_field("tls_version", self.protocol_id())?;
        s.serialize_field("suite", self.suite_id())?;
        s.serialize_field(
            "suite_name",
            &self.handshake().map(|h| h.suite_name()).unwrap_or("none"),
        )?;
        s.serialize_field("write_bytes", &self.write_bytes)?;
        s.serialize_field("transport", &self.transport)?;
        s.end()
    }
}

/// The axes of a bulk matrix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BulkMatrix {
    pub versions: Vec<TlsVersion>,
    pub aeads: Vec<Aead>,
    pub write_sizes: Vec<usize>,
    /// Add the no-crypto row of each write size.
    pub with_plain: bool,
    /// What carries the rows: memory, loopback TCP, or both.
    pub transports: Vec<Transport>,
}

impl BulkMatrix {
    /// Per write size and transport: its no-crypto row first, then every
    /// version and suite.
    pub fn expand(&self) -> Vec<BulkScenario> {
        let mut rows = Vec::new();
        for &write_bytes in &self.write_sizes {
            for &transport in &self.transports {
                if self.with_plain {
                    // Every row's no-crypto twin, once.
                    let mut twins: Vec<BulkScenario> = self
                        .versions
                        .iter()
                        .map(|v| BulkScenario::no_crypto(v.is_datagram(), write_bytes, transport))
                        .collect();
                    twins.sort();
                    twins.dedup();
                    rows.extend(twins);
                }
                for &version in &self.versions {
                    for &aead in &self.aeads {
                        rows.push(BulkScenario {
                            channel: Channel::Tls { version, aead },
                            write_bytes,
                            transport,
                        });
                    }
                }
            }
        }
        rows
    }

    /// Checks that every axis has values and every size is in range.
    pub fn validate(&self) -> Result<(), String> {
        if self.versions.is_empty() {
            return Err("the TLS version list is empty".into());
        }
        if self.aeads.is_empty() {
            return Err("the suite list is empty".into());
        }
        if self.write_sizes.is_empty() {
            return Err("the size list is empty".into());
        }
        if self.transports.is_empty() {
            return Err("the transport list is empty".into());
        }
        if self.transports.contains(&Transport::Udp)
            && !self.versions.iter().any(|v| v.is_datagram())
        {
            return Err("--transport udp carries DTLS: add dtls1.2 or dtls1.3 to --tls".into());
        }
        if let Some(bad) = self
            .write_sizes
            .iter()
            .find(|&&s| s == 0 || s > MAX_WRITE_BYTES)
        {
            return Err(format!(
                "--size takes bytes per write from 1 to {MAX_WRITE_BYTES}, got {bad}"
            ));
        }
        Ok(())
    }
}

/// Parses a list of write sizes in bytes ("64,1024,16384"), dropping repeats.
pub fn parse_sizes(list: &str) -> Result<Vec<usize>, String> {
    let mut sizes = Vec::new();
    for text in list.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let size: usize = text.parse().map_err(|_| {
            format!("--size takes bytes per write such as 64,1024,16384, got '{text}'")
        })?;
        if !sizes.contains(&size) {
            sizes.push(size);
        }
    }
    Ok(sizes)
}

/// Named bulk studies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BulkPreset {
    /// The payload half of the DTLS 1.2 study: AES-GCM, ChaCha20-Poly1305
    /// and AES-CBC with HMAC over DTLS 1.2 and, for the price of DTLS, over
    /// TLS 1.2 (OpenSSL); the AEADs over DTLS 1.2 and 1.3 on dimpl.
    DtlsStudy,
}

serialize_by_id!(BulkPreset);

impl Named for BulkPreset {
    const KIND: &'static str = "bulk preset";
    const ALL: &'static [Self] = &[BulkPreset::DtlsStudy];

    fn id(self) -> &'static str {
        "dtls-study"
    }
}

impl BulkPreset {
    pub fn description(self) -> &'static str {
        "payload cost per side of AES-128-CBC+HMAC-SHA256, AES-128-GCM and ChaCha20-Poly1305 over DTLS 1.2 and TLS 1.2 (OpenSSL), and of the two AEADs over DTLS 1.2 and 1.3 (dimpl), 1 KiB and 16 KiB writes"
    }

    /// The backend ids the matrix runs on unless `--backend` says otherwise.
    pub fn default_backends(self) -> &'static [&'static str] {
        &["openssl"]
    }

    /// Rows the preset adds on backends of their own unless `--backend` or
    /// `--tls` says otherwise: DTLS 1.2 and 1.3 on dimpl (OpenSSL 3.6 has
    /// no DTLS 1.3), with the study's AEADs (dimpl has no CBC suites). They
    /// share the matrix's no-crypto rows.
    pub fn companions(self) -> Vec<(&'static [&'static str], BulkMatrix)> {
        let matrix = self.matrix();
        vec![(
            &["dimpl"],
            BulkMatrix {
                versions: vec![TlsVersion::Dtls12, TlsVersion::Dtls13],
                aeads: matrix.aeads.into_iter().filter(|a| a.is_aead()).collect(),
                with_plain: false,
                ..self.matrix()
            },
        )]
    }

    pub fn matrix(self) -> BulkMatrix {
        BulkMatrix {
            versions: vec![TlsVersion::Tls12, TlsVersion::Dtls12],
            aeads: study_suites(),
            write_sizes: vec![1024, 16384],
            with_plain: true,
            transports: vec![Transport::Memory],
        }
    }

    /// The run's time budget in seconds unless `--max-total-time` says otherwise.
    pub fn budget_s(self) -> f64 {
        40.0
    }
}

/// The study's three ciphers, as far as the suite axis has them.
fn study_suites() -> Vec<Aead> {
    let mut suites: Vec<Aead> = ["aes128cbc_sha256", "aes128gcm", "chacha20poly1305"]
        .iter()
        .filter_map(|id| parse_name(id).ok())
        .collect();
    suites.dedup();
    suites
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtls_rows_have_a_no_crypto_row_over_datagrams() {
        let matrix = BulkMatrix {
            versions: vec![TlsVersion::Tls13, TlsVersion::Dtls12],
            aeads: vec![parse_name("aes128gcm").unwrap()],
            write_sizes: vec![1024],
            with_plain: true,
            transports: vec![Transport::Memory],
        };
        let rows = matrix.expand();
        let labels: Vec<String> = rows.iter().map(|r| r.label()).collect();
        assert_eq!(
            labels,
            [
                "bulk_plain_1024",
                "bulk_plain_dgram_1024",
                "bulk_1.3_aes128gcm_1024",
                "bulk_dtls1.2_aes128gcm_1024"
            ]
        );
        for row in &rows {
            assert_eq!(BulkScenario::from_label(&row.label()), Some(*row));
        }
        assert_eq!(rows[2].no_crypto_twin(), rows[0]);
        assert_eq!(rows[3].no_crypto_twin(), rows[1]);
        assert_eq!(rows[1].no_crypto_twin(), rows[1]);
        // Over TCP there are no datagrams.
        let tcp = rows[3].over(Transport::Tcp);
        assert_eq!(tcp.no_crypto_twin(), rows[0].over(Transport::Tcp));
        assert!(rows[1].channel.is_plain() && !rows[3].channel.is_plain());
        assert_eq!(
            rows[3].handshake().unwrap().mtu_bytes,
            Some(DEFAULT_MTU_BYTES)
        );
        assert_eq!(rows[2].handshake().unwrap().mtu_bytes, None);
    }

    #[test]
    fn labels_round_trip() {
        let matrix = BulkMatrix {
            versions: vec![TlsVersion::Tls12, TlsVersion::Tls13],
            aeads: Aead::ALL.to_vec(),
            write_sizes: vec![64, 16384],
            with_plain: true,
            transports: vec![Transport::Memory, Transport::Tcp],
        };
        let rows = matrix.expand();
        assert_eq!(rows.len(), 2 * 2 * (1 + 2 * Aead::ALL.len()));
        assert_eq!(rows[1 + 2 * Aead::ALL.len()].label(), "bulk_plain_64_tcp");
        assert_eq!(rows[0].label(), "bulk_plain_64");
        assert_eq!(rows[1].label(), "bulk_1.2_aes128gcm_64");
        for row in rows {
            assert_eq!(BulkScenario::from_label(&row.label()), Some(row));
        }
    }

    #[test]
    fn dtls_study_adds_the_dtls13_rows_on_dimpl() {
        let companions = BulkPreset::DtlsStudy.companions();
        assert_eq!(companions.len(), 1);
        let (backends, matrix) = &companions[0];
        assert_eq!(*backends, ["dimpl"]);
        matrix.validate().unwrap();
        let labels: Vec<String> = matrix.expand().iter().map(|s| s.label()).collect();
        assert_eq!(
            labels,
            vec![
                "bulk_dtls1.2_aes128gcm_1024",
                "bulk_dtls1.2_chacha20poly1305_1024",
                "bulk_dtls1.3_aes128gcm_1024",
                "bulk_dtls1.3_chacha20poly1305_1024",
                "bulk_dtls1.2_aes128gcm_16384",
                "bulk_dtls1.2_chacha20poly1305_16384",
                "bulk_dtls1.3_aes128gcm_16384",
                "bulk_dtls1.3_chacha20poly1305_16384",
            ]
        );
        assert!(!BulkPreset::DtlsStudy.default_backends().contains(&"dimpl"));
    }

    #[test]
    fn bad_sizes_are_refused() {
        assert!(parse_sizes("64,abc").is_err());
        let mut matrix = BulkPreset::DtlsStudy.matrix();
        matrix.write_sizes = vec![0];
        assert!(matrix.validate().unwrap_err().contains("from 1 to"));
        BulkPreset::DtlsStudy.matrix().validate().unwrap();
    }
}
