//! The rows of `tlslab tunnel`: a VPN data channel per cipher, digest,
//! compression, payload and packet size, the engine that runs them, and the
//! matrix. The axes are OpenVPN's; an engine with fixed cryptography runs
//! the rows its own algorithms make and says why not for the rest. The
//! engines themselves (one trait, one registry) are in `workload::tunnel`.

use serde::Serialize;

pub use super::tunnel_axes::{
    Cipher, CipherMode, Compression, Digest, Payload, CLASSIC_DIGEST_NAMES,
};

use crate::scenario::cpu::CpuFeatures;
use crate::scenario::names::{deserialize_by_id, parse_name, serialize_by_id, Named, UnknownName};

/// The default payload per packet: a full Ethernet frame's worth of tunnel payload.
pub const DEFAULT_PAYLOAD_BYTES: usize = 1400;

/// Which engine runs a tunnel's packets: the name of one implementation of
/// `workload::tunnel::TunnelEngine`, which `EngineId::open` (beside the
/// registry in `workload::tunnel`) returns. A new engine adds its variant
/// here, in `ALL` and its name, plus its module and one registry line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EngineId {
    /// Both ends of the data channel in this process, over memory buffers.
    Inprocess,
    /// A real OpenVPN static-key tunnel between two network namespaces.
    Openvpn,
    /// A real OpenVPN tunnel in TLS mode (certificates, negotiated data
    /// cipher) between two network namespaces.
    OpenvpnTls,
    /// Both WireGuard peers (boringtun) in this process, over memory buffers.
    Wireguard,
    /// A real userspace WireGuard tunnel (wireguard-go) between two network
    /// namespaces.
    WireguardGo,
}

serialize_by_id!(EngineId);
deserialize_by_id!(EngineId);

impl Named for EngineId {
    const KIND: &'static str = "engine";
    const ALL: &'static [Self] = &[
        EngineId::Inprocess,
        EngineId::Openvpn,
        EngineId::OpenvpnTls,
        EngineId::Wireguard,
        EngineId::WireguardGo,
    ];

    fn id(self) -> &'static str {
        match self {
            EngineId::Inprocess => "inprocess",
            EngineId::Openvpn => "openvpn",
            EngineId::OpenvpnTls => "openvpn-tls",
            EngineId::Wireguard => "wireguard",
            EngineId::WireguardGo => "wireguard-go",
        }
    }

    fn aliases(self) -> &'static [&'static str] {
        match self {
            EngineId::Inprocess => &["in-process", "memory"],
            EngineId::Openvpn => &["real"],
            EngineId::OpenvpnTls => &["openvpn-tls-mode"],
            EngineId::Wireguard => &[],
            EngineId::WireguardGo => &[],
        }
    }
}

/// The engine a tunnel row names: the engine and the CPU features its
/// libraries were let use (`tunnel --cpu-features`), written "inprocess"
/// or "inprocess (generic)" as a handshake row writes its backend
/// ([`CpuFeatures::row_backend`]): so in the report's engine columns, in
/// the JSON and CSV, and in the store's `engine` column. Ordered by
/// engine, each engine's native rows before its generic ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RowEngine {
    pub engine: EngineId,
    pub cpu_features: CpuFeatures,
}

impl RowEngine {
    /// The engine with every CPU feature the machine has.
    pub fn native(engine: EngineId) -> Self {
        RowEngine {
            engine,
            cpu_features: CpuFeatures::Native,
        }
    }

    /// Its name: "inprocess", "inprocess (generic)".
    pub fn name(self) -> String {
        self.cpu_features.row_backend(self.engine.id())
    }

    /// The row engine a name written by [`RowEngine::name`] stands for.
    pub fn parse(name: &str) -> Result<Self, UnknownName> {
        let (engine, cpu_features) = CpuFeatures::of_row_backend(name);
        Ok(RowEngine {
            engine: parse_name(engine)?,
            cpu_features,
        })
    }
}

impl std::fmt::Display for RowEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

impl Serialize for RowEngine {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.name())
    }
}

/// One row of a tunnel study.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct TunnelScenario {
    /// True for the no-tunnel baseline: copy only in process, the bare link
    /// for OpenVPN. Cipher, digest and compression are then `none`.
    pub baseline: bool,
    pub cipher: Cipher,
    pub digest: Digest,
    pub compression: Compression,
    pub payload: Payload,
    pub payload_bytes: usize,
}

impl TunnelScenario {
    /// The no-tunnel baseline for a payload and size.
    pub fn baseline(payload: Payload, payload_bytes: usize) -> Self {
        Self {
            baseline: true,
            cipher: Cipher::None,
            digest: Digest::None,
            compression: Compression::None,
            payload,
            payload_bytes,
        }
    }

    /// The stable id: `tunnel_aes-128-cbc_sha1_lz4_random_1400`, or
    /// `tunnel_baseline_random_1400`.
    pub fn label(&self) -> String {
        if self.baseline {
            return format!(
                "tunnel_baseline_{}_{}",
                self.payload.id(),
                self.payload_bytes
            );
        }
        format!(
            "tunnel_{}_{}_{}_{}_{}",
            self.cipher.id(),
            self.digest.id(),
            self.compression.id(),
            self.payload.id(),
            self.payload_bytes
        )
    }

    /// Parses a label back (the inverse of [`Self::label`]).
    pub fn from_label(label: &str) -> Option<Self> {
        let parts: Vec<&str> = label.strip_prefix("tunnel_")?.split('_').collect();
        let size = |text: &str| text.parse::<usize>().ok();
        fn name<T: Named>(text: &str) -> Option<T> {
            crate::scenario::names::parse_name(text).ok()
        }
        match parts.as_slice() {
            ["baseline", payload, bytes] => Some(Self::baseline(name(payload)?, size(bytes)?)),
            [cipher, digest, compression, payload, bytes] => Some(Self {
                baseline: false,
                cipher: name(cipher)?,
                digest: name(digest)?,
                compression: name(compression)?,
                payload: name(payload)?,
                payload_bytes: size(bytes)?,
            }),
            _ => None,
        }
    }

    /// Known weaknesses of the cipher, digest and compression.
    pub fn security_notes(&self) -> Vec<&'static str> {
        if self.baseline {
            return vec!["no tunnel: no protection"];
        }
        let mut notes = self.cipher.security_notes();
        if self.cipher.mode() != CipherMode::Aead {
            notes.extend(self.digest.security_notes());
        }
        notes.extend(self.compression.security_notes());
        notes
    }

    /// True if and only if a part of the scenario should not be chosen for new tunnels.
    pub fn is_weak(&self) -> bool {
        !self.baseline
            && (self.cipher.is_weak()
                || (self.cipher.mode() != CipherMode::Aead && self.digest.is_weak()))
    }

    /// A short readable description for tables.
    pub fn describe(&self) -> String {
        if self.baseline {
            return format!("no tunnel, {} {} B", self.payload.id(), self.payload_bytes);
        }
        format!(
            "{} {} {} {} {} B",
            self.cipher.id(),
            self.digest.id(),
            self.compression.id(),
            self.payload.id(),
            self.payload_bytes
        )
    }
}

/// The axes of a tunnel study; [`TunnelMatrix::expand`] makes the rows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TunnelMatrix {
    pub ciphers: Vec<Cipher>,
    pub digests: Vec<Digest>,
    pub compressions: Vec<Compression>,
    pub payloads: Vec<Payload>,
    pub payload_sizes: Vec<usize>,
    /// Add the no-tunnel baseline row per payload and size.
    pub with_baseline: bool,
}

impl TunnelMatrix {
    /// The classic study: 16 CBC ciphers x the 25 digest names (10 digests)
    /// x compression off/on x random/zero payloads, with the baseline.
    pub fn classic() -> Self {
        let digests = crate::scenario::names::parse_list(&CLASSIC_DIGEST_NAMES.join(","))
            .expect("the classic names are valid");
        Self {
            ciphers: Cipher::CLASSIC.to_vec(),
            digests,
            compressions: vec![Compression::None, Compression::Lz4],
            payloads: vec![Payload::Random, Payload::Zero],
            payload_sizes: vec![DEFAULT_PAYLOAD_BYTES],
            with_baseline: true,
        }
    }

    /// Checks that every axis has a value and sizes are sensible.
    pub fn validate(&self) -> Result<(), String> {
        for (name, empty) in [
            ("--cipher", self.ciphers.is_empty()),
            ("--digest", self.digests.is_empty()),
            ("--compression", self.compressions.is_empty()),
            ("--payload", self.payloads.is_empty()),
            ("--size", self.payload_sizes.is_empty()),
        ] {
            if empty {
                return Err(format!("{name} needs at least one value"));
            }
        }
        if let Some(bad) = self
            .payload_sizes
            .iter()
            .find(|&&size| !(1..=MAX_PAYLOAD_BYTES).contains(&size))
        {
            return Err(format!(
                "--size must be between 1 and {MAX_PAYLOAD_BYTES} bytes, got {bad}"
            ));
        }
        Ok(())
    }

    /// Every row: per size and payload, the baseline first, then each
    /// cipher x digest x compression. AEAD ciphers ignore the digest, so
    /// they get one row per compression with digest `none`.
    pub fn expand(&self) -> Vec<TunnelScenario> {
        let mut rows = Vec::new();
        for &payload_bytes in &self.payload_sizes {
            for &payload in &self.payloads {
                if self.with_baseline {
                    rows.push(TunnelScenario::baseline(payload, payload_bytes));
                }
                for &cipher in &self.ciphers {
                    for &digest in &self.digests {
                        for &compression in &self.compressions {
                            let digest = if cipher.mode() == CipherMode::Aead {
                                Digest::None
                            } else {
                                digest
                            };
                            let row = TunnelScenario {
                                baseline: false,
                                cipher,
                                digest,
                                compression,
                                payload,
                                payload_bytes,
                            };
                            if !rows.contains(&row) {
                                rows.push(row);
                            }
                        }
                    }
                }
            }
        }
        rows
    }
}

/// The largest payload per packet (an OpenVPN packet fits in 64 KiB).
pub const MAX_PAYLOAD_BYTES: usize = 60_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_engine_reads_back_from_its_name() {
        for &engine in EngineId::ALL {
            for &cpu_features in CpuFeatures::ALL {
                let row = RowEngine {
                    engine,
                    cpu_features,
                };
                assert_eq!(RowEngine::parse(&row.name()), Ok(row));
            }
        }
        let generic = RowEngine {
            engine: EngineId::Inprocess,
            cpu_features: CpuFeatures::Generic,
        };
        assert_eq!(generic.to_string(), "inprocess (generic)");
        assert_eq!(RowEngine::native(EngineId::Wireguard).name(), "wireguard");
        assert_eq!(
            serde_json::to_value(generic).unwrap(),
            serde_json::json!("inprocess (generic)")
        );
        assert!(RowEngine::native(EngineId::Inprocess) < generic);
        assert!(generic < RowEngine::native(EngineId::Openvpn));
    }

    #[test]
    fn labels_are_stable_and_parse_back() {
        let scenario = TunnelScenario {
            baseline: false,
            cipher: Cipher::Aes128Cbc,
            digest: Digest::Sha1,
            compression: Compression::Lz4,
            payload: Payload::Random,
            payload_bytes: 1400,
        };
        assert_eq!(scenario.label(), "tunnel_aes-128-cbc_sha1_lz4_random_1400");
        assert_eq!(
            TunnelScenario::from_label(&scenario.label()),
            Some(scenario)
        );
        let baseline = TunnelScenario::baseline(Payload::Zero, 64);
        assert_eq!(baseline.label(), "tunnel_baseline_zero_64");
        assert_eq!(
            TunnelScenario::from_label(&baseline.label()),
            Some(baseline)
        );
    }

    #[test]
    fn the_classic_matrix_has_the_studys_rows() {
        let rows = TunnelMatrix::classic().expand();
        // 16 ciphers x 10 digests x 2 compressions x 2 payloads + 2 baselines.
        assert_eq!(rows.len(), 16 * 10 * 2 * 2 + 2);
    }

    #[test]
    fn aead_ciphers_ignore_the_digest() {
        let matrix = TunnelMatrix {
            ciphers: vec![Cipher::Aes128Gcm],
            digests: vec![Digest::Sha1, Digest::Sha256],
            compressions: vec![Compression::None],
            payloads: vec![Payload::Random],
            payload_sizes: vec![1400],
            with_baseline: false,
        };
        let rows = matrix.expand();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].digest, Digest::None);
    }
}
