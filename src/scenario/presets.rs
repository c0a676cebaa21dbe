//! Named matrices that reproduce the reference studies with one command,
//! for every command, as data: `tlslab list` reads them from [`all`].

use super::axes::{Aead, CertKind, Group, Resumption, TlsVersion};
use super::names::{deserialize_by_id, serialize_by_id, Named};
use super::tunnel::{Cipher, Compression, Digest, EngineId, Payload, TunnelMatrix};
use super::{HandshakeMatrix, HandshakeScenario, DEFAULT_CHAIN_DEPTH, DEFAULT_MTU_BYTES};

/// A named handshake matrix with its default backends and baseline row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// The classic key-exchange study: TLS 1.2, AES-128-GCM, RSA key transport,
    /// DHE 1024..4096 and ECDHE P-256/384/521, X25519, X448, each with an
    /// RSA-2048 and an ECDSA P-256 certificate.
    KexMatrix,
    /// TLS 1.3 key exchange groups, classical and post-quantum, with the
    /// common certificate types.
    Tls13Matrix,
    /// The post-quantum migration: classical against ML-KEM key exchange and
    /// ML-DSA certificates in TLS 1.3.
    PostQuantum,
    /// The DTLS 1.2 handshake study: FFDH-2048 with RSA-2048, ECDH P-256
    /// with RSA-2048 and with ECDSA P-256, AES-128-GCM, each side's CPU.
    DtlsStudy,
    /// The post-quantum matrix over three networks: per row the bytes on
    /// the wire, the network model and the handshakes over an emulated
    /// link (wan, mobile, satellite), the rows whose flight costs an extra
    /// round trip called out.
    PqNetwork,
    /// TLS 1.3 inside QUIC against TLS 1.3 over a byte stream, on every
    /// library with QUIC: classical and post-quantum key exchange and
    /// certificates, each QUIC row set against its TLS 1.3 twin.
    QuicVsTcp,
    /// quic-vs-tcp's matrix on quinn over pq-network's networks: TLS 1.3
    /// over TCP and QUIC side by side on the wire, in the model and over
    /// the emulated link, for ECDSA and ML-DSA chains.
    QuicNetwork,
}

serialize_by_id!(Preset);
deserialize_by_id!(Preset);

/// A preset's networks: the profiles, the link (measured where it can be
/// built) and the handshakes per row and profile over it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PresetNetwork {
    pub profiles: &'static str,
    pub link: &'static str,
    pub link_samples: usize,
}

impl Named for Preset {
    const KIND: &'static str = "preset";
    const ALL: &'static [Self] = &[
        Preset::KexMatrix,
        Preset::Tls13Matrix,
        Preset::PostQuantum,
        Preset::DtlsStudy,
        Preset::PqNetwork,
        Preset::QuicVsTcp,
        Preset::QuicNetwork,
    ];

    fn id(self) -> &'static str {
        match self {
            Preset::KexMatrix => "kex-matrix",
            Preset::Tls13Matrix => "tls13-matrix",
            Preset::PostQuantum => "post-quantum",
            Preset::DtlsStudy => "dtls-study",
            Preset::PqNetwork => "pq-network",
            Preset::QuicVsTcp => "quic-vs-tcp",
            Preset::QuicNetwork => "quic-network",
        }
    }
}

impl Preset {
    pub fn description(self) -> &'static str {
        match self {
            Preset::KexMatrix => "TLS 1.2 AES-128-GCM: RSA key transport, DHE-1024..4096, ECDHE P-256/P-384/P-521/X25519/X448, each with RSA-2048 and ECDSA P-256 certificates",
            Preset::Tls13Matrix => "TLS 1.3: X25519, P-256, P-384, X25519MLKEM768, ffdhe2048 with RSA-2048, ECDSA P-256 and Ed25519 certificates",
            Preset::PostQuantum => "TLS 1.3: X25519 vs X25519MLKEM768 vs ML-KEM-768, ECDSA P-256 vs ML-DSA-44/65 certificates",
            Preset::DtlsStudy => "DTLS 1.2 AES-128-GCM, 1400-byte MTU: DHE-2048 with RSA-2048, ECDHE P-256 with RSA-2048 and ECDSA P-256 on OpenSSL; DTLS 1.3 ECDHE P-256 with ECDSA P-256 on dimpl (add --tls 1.2,dtls1.2 for the price of DTLS)",
            Preset::PqNetwork => "post-quantum's matrix on OpenSSL over wan, mobile and satellite: bytes on the wire, the network model beside handshakes over an emulated link (root), extra round trips called out",
            Preset::QuicNetwork => "TLS 1.3 over TCP and QUIC on rustls-aws-lc (quinn), X25519 and X25519MLKEM768, ECDSA P-256 and ML-DSA-65, over wan, mobile and satellite: bytes on the wire, the network model beside handshakes over an emulated link (root), the initial window's and the anti-amplification limit's extra round trips called out",
            Preset::QuicVsTcp => "TLS 1.3 in QUIC against TLS 1.3 over a byte stream (as over TCP), both in memory: X25519 and X25519MLKEM768, ECDSA P-256 and ML-DSA-65, on OpenSSL, rustls-aws-lc and rustls-ring; each QUIC row against its TLS 1.3 twin",
        }
    }

    pub fn matrix(self) -> HandshakeMatrix {
        let (versions, groups, certs): (Vec<TlsVersion>, Vec<Group>, Vec<CertKind>) = match self {
            Preset::KexMatrix => (
                vec![TlsVersion::Tls12],
                vec![
                    Group::RsaKeyTransport,
                    Group::Dhe1024,
                    Group::Dhe2048,
                    Group::Dhe3072,
                    Group::Dhe4096,
                    Group::P256,
                    Group::P384,
                    Group::P521,
                    Group::X25519,
                    Group::X448,
                ],
                vec![CertKind::Rsa2048, CertKind::EcdsaP256],
            ),
            Preset::Tls13Matrix => (
                vec![TlsVersion::Tls13],
                vec![
                    Group::X25519,
                    Group::P256,
                    Group::P384,
                    Group::X25519Mlkem768,
                    Group::Ffdhe2048,
                ],
                vec![CertKind::Rsa2048, CertKind::EcdsaP256, CertKind::Ed25519],
            ),
            Preset::QuicVsTcp | Preset::QuicNetwork => (
                vec![TlsVersion::Tls13, TlsVersion::Quic],
                vec![Group::X25519, Group::X25519Mlkem768],
                vec![CertKind::EcdsaP256, CertKind::MlDsa65],
            ),
            Preset::PostQuantum | Preset::PqNetwork => (
                vec![TlsVersion::Tls13],
                vec![Group::X25519, Group::X25519Mlkem768, Group::Mlkem768],
                vec![CertKind::EcdsaP256, CertKind::MlDsa44, CertKind::MlDsa65],
            ),
            // DHE with an ECDSA certificate is no TLS 1.2 suite: that row
            // says so, the other three are the study's.
            Preset::DtlsStudy => (
                vec![TlsVersion::Dtls12],
                vec![Group::Dhe2048, Group::P256],
                vec![CertKind::Rsa2048, CertKind::EcdsaP256],
            ),
        };
        HandshakeMatrix {
            versions,
            groups,
            certs,
            aeads: vec![Aead::Aes128Gcm],
            resumptions: vec![Resumption::Off],
            mutual: vec![false],
            chain_depth: DEFAULT_CHAIN_DEPTH,
            mtu_bytes: DEFAULT_MTU_BYTES,
            transports: vec![crate::scenario::Transport::Memory],
        }
    }

    /// The backend ids the preset runs on unless `--backend` says otherwise.
    pub fn default_backends(self) -> &'static [&'static str] {
        match self {
            Preset::KexMatrix | Preset::DtlsStudy | Preset::PqNetwork => &["openssl"],
            Preset::Tls13Matrix | Preset::PostQuantum => &["openssl", "rustls-aws-lc"],
            Preset::QuicVsTcp => &["openssl", "rustls-aws-lc", "rustls-ring"],
            // OpenSSL's QUIC has no wire trace and cannot run apart yet.
            Preset::QuicNetwork => &["rustls-aws-lc"],
        }
    }

    /// Rows the preset adds beside its matrix on backends of their own,
    /// unless `--backend` or `--tls` says otherwise: a protocol its default
    /// backends lack, run by a library that has it. The DTLS study's DTLS
    /// 1.3 rows run on dimpl (OpenSSL 3.6 has no DTLS 1.3): ECDHE P-256 with
    /// ECDSA P-256, and with RSA-2048 as a row saying dimpl has no RSA
    /// certificates. No FFDH row: DTLS 1.3 has only the ffdhe groups, which
    /// dimpl lacks too.
    pub fn companions(self) -> Vec<Companion> {
        match self {
            Preset::DtlsStudy => {
                let mut companions = vec![Companion {
                    backends: &["dimpl"],
                    matrix: HandshakeMatrix {
                        versions: vec![TlsVersion::Dtls13],
                        groups: vec![Group::P256],
                        ..self.matrix()
                    },
                }];
                if super::backend::WOLFSSL_BUILT_IN {
                    companions.extend(Self::wolfssl_dtls_study());
                }
                companions
            }
            Preset::KexMatrix
            | Preset::Tls13Matrix
            | Preset::PostQuantum
            | Preset::PqNetwork
            | Preset::QuicVsTcp
            | Preset::QuicNetwork => Vec::new(),
        }
    }

    /// The DTLS study on the seeds' own library, wolfSSL (in a build with
    /// it): the study's DTLS 1.2 rows, and DTLS 1.3 with FFDH (ffdhe2048,
    /// DTLS 1.3's finite-field group) and ECDH (P-256), each with RSA-2048
    /// and ECDSA P-256.
    fn wolfssl_dtls_study() -> [Companion; 2] {
        let study = Preset::DtlsStudy.matrix();
        [
            Companion {
                backends: &["wolfssl"],
                matrix: study.clone(),
            },
            Companion {
                backends: &["wolfssl"],
                matrix: HandshakeMatrix {
                    versions: vec![TlsVersion::Dtls13],
                    groups: vec![Group::Ffdhe2048, Group::P256],
                    ..study
                },
            },
        ]
    }

    /// The run's time budget in seconds unless `--max-total-time` says
    /// otherwise: about twice what the preset takes on a quiet 2-core
    /// machine, so a busy machine still gets a run that ends (its rows say
    /// whether they reached the precision). ML-DSA signing times vary by
    /// design (rejection sampling), so post-quantum rows need more samples.
    pub fn budget_s(self) -> f64 {
        match self {
            Preset::KexMatrix => 24.0,
            Preset::Tls13Matrix => 48.0,
            Preset::PostQuantum => 60.0,
            Preset::DtlsStudy => 30.0,
            Preset::PqNetwork => 40.0,
            Preset::QuicVsTcp | Preset::QuicNetwork => 40.0,
        }
    }

    /// The networks the preset runs its rows over, if any.
    pub fn network(self) -> Option<PresetNetwork> {
        matches!(self, Preset::PqNetwork | Preset::QuicNetwork).then_some(PresetNetwork {
            profiles: "wan,mobile,satellite",
            link: "tun",
            link_samples: 8,
        })
    }

    /// What every row is compared with unless `--baseline` says otherwise,
    /// as `--baseline` takes it (see [`super::baseline`]): a row's label,
    /// or for quic-vs-tcp each row's TLS 1.3 twin.
    pub fn baseline_spec(self) -> String {
        match self {
            Preset::QuicVsTcp | Preset::QuicNetwork => {
                format!("{}1.3", super::baseline::PROTOCOL_PREFIX)
            }
            _ => self.baseline().label(),
        }
    }

    /// The first row, or the row every other row is compared with when
    /// the baseline is one row.
    pub fn baseline(self) -> HandshakeScenario {
        let matrix = self.matrix();
        let mut baseline = matrix.expand()[0];
        if self == Preset::KexMatrix {
            baseline.group = Group::RsaKeyTransport;
            baseline.cert = CertKind::Rsa2048;
        }
        baseline
    }
}

/// Rows of a preset that run on other backends than its matrix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Companion {
    pub backends: &'static [&'static str],
    pub matrix: HandshakeMatrix,
}

/// Named cost studies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CostPreset {
    /// `openssl speed rsa2048 ecdsap256 ecdhp256` turned into a per-side
    /// model: TLS 1.2 RSA key transport, ECDHE-RSA and ECDHE-ECDSA, the
    /// client verifying an intermediate and a leaf certificate.
    RsaVsEcdsa,
}

serialize_by_id!(CostPreset);

impl Named for CostPreset {
    const KIND: &'static str = "cost preset";
    const ALL: &'static [Self] = &[CostPreset::RsaVsEcdsa];

    fn id(self) -> &'static str {
        "rsa-vs-ecdsa"
    }
}

impl CostPreset {
    pub fn description(self) -> &'static str {
        "TLS 1.2 RSA key transport, ECDHE-RSA and ECDHE-ECDSA on OpenSSL, per-side model and capacity"
    }

    pub fn matrix(self) -> HandshakeMatrix {
        HandshakeMatrix {
            versions: vec![TlsVersion::Tls12],
            groups: vec![Group::RsaKeyTransport, Group::P256],
            certs: vec![CertKind::Rsa2048, CertKind::EcdsaP256],
            aeads: vec![Aead::Aes128Gcm],
            resumptions: vec![Resumption::Off],
            mutual: vec![false],
            chain_depth: DEFAULT_CHAIN_DEPTH,
            mtu_bytes: DEFAULT_MTU_BYTES,
            transports: vec![crate::scenario::Transport::Memory],
        }
    }
}

/// A named tunnel matrix with its sampling defaults and default engines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TunnelPreset {
    /// The classic OpenVPN study: 16 CBC ciphers x the 25 digest names x
    /// compression off/on x random/zero payloads.
    OpenvpnClassic,
    /// OpenVPN's data channel (AES-128-GCM, AES-256-GCM,
    /// ChaCha20-Poly1305) against WireGuard's per packet size (64, 512,
    /// 1400 bytes), random payload, with the no-tunnel row.
    VpnCompare,
}

serialize_by_id!(TunnelPreset);
deserialize_by_id!(TunnelPreset);

impl Named for TunnelPreset {
    const KIND: &'static str = "tunnel preset";
    const ALL: &'static [Self] = &[TunnelPreset::OpenvpnClassic, TunnelPreset::VpnCompare];

    fn id(self) -> &'static str {
        match self {
            TunnelPreset::OpenvpnClassic => "openvpn-classic",
            TunnelPreset::VpnCompare => "vpn-compare",
        }
    }

    fn aliases(self) -> &'static [&'static str] {
        match self {
            TunnelPreset::OpenvpnClassic => &["classic"],
            TunnelPreset::VpnCompare => &["openvpn-vs-wireguard"],
        }
    }
}

/// The packet sizes of `vpn-compare`: a small packet (a keystroke, a
/// VoIP frame: per-packet work dominates), a middling one, and a full
/// Ethernet frame's payload.
pub const VPN_COMPARE_SIZES_BYTES: [usize; 3] = [64, 512, 1400];

/// The engines of `vpn-compare` when `--engine` does not name them, each
/// run if it can run here; one that cannot (a real tunnel without root or
/// its program) gets rows that say why. A real engine is one more line.
#[rustfmt::skip]
const VPN_COMPARE_ENGINES: &[EngineId] = &[
    EngineId::Inprocess,
    EngineId::Wireguard,
];

impl TunnelPreset {
    pub fn description(self) -> &'static str {
        match self {
            TunnelPreset::OpenvpnClassic => "16 CBC ciphers x 25 digest names x LZ4 on/off x random/zero payloads, 1400-byte packets, five tables",
            TunnelPreset::VpnCompare => "WireGuard (boringtun) against OpenVPN's data channel with AES-128-GCM, AES-256-GCM and ChaCha20-Poly1305, 64/512/1400-byte random packets, the no-tunnel row, every row against the fastest of its size",
        }
    }

    /// The preset's rows.
    pub fn matrix(self) -> TunnelMatrix {
        match self {
            TunnelPreset::OpenvpnClassic => TunnelMatrix::classic(),
            TunnelPreset::VpnCompare => TunnelMatrix {
                ciphers: vec![
                    Cipher::Aes128Gcm,
                    Cipher::Aes256Gcm,
                    Cipher::Chacha20Poly1305,
                ],
                // AEAD rows only: their digest is none.
                digests: vec![Digest::None],
                compressions: vec![Compression::None],
                payloads: vec![Payload::Random],
                payload_sizes: VPN_COMPARE_SIZES_BYTES.to_vec(),
                with_baseline: true,
            },
        }
    }

    /// Whether the preset measures each engine's connection set-up
    /// (`--setup`) unless `--no-setup` says otherwise: vpn-compare does,
    /// as the cost of a tunnel is its set-up as well as its packets.
    pub fn measures_setup(self) -> bool {
        match self {
            TunnelPreset::OpenvpnClassic => false,
            TunnelPreset::VpnCompare => true,
        }
    }

    /// The engines the preset runs when `--engine` does not name them,
    /// each if it can run here (else its rows say why).
    pub fn engines(self) -> &'static [EngineId] {
        match self {
            TunnelPreset::OpenvpnClassic => &[EngineId::Inprocess],
            TunnelPreset::VpnCompare => VPN_COMPARE_ENGINES,
        }
    }
}

/// Named load studies for `tlslab load`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadPreset {
    /// The loaded-HTTPS-server profile: new connections with RSA key
    /// transport, 50 KB pages, ramping to 500 requests per second.
    ApacheStudy,
}

serialize_by_id!(LoadPreset);

impl Named for LoadPreset {
    const KIND: &'static str = "load preset";
    const ALL: &'static [Self] = &[LoadPreset::ApacheStudy];

    fn id(self) -> &'static str {
        "apache-study"
    }
}

/// What a load preset sets: the scenario and the offered load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadSettings {
    pub scenario: HandshakeScenario,
    pub rate: f64,
    pub ramp_s: f64,
    pub duration_s: f64,
    pub size: usize,
    pub keep_alive: bool,
}

impl LoadPreset {
    pub fn description(self) -> &'static str {
        "the embedded OpenSSL server (or --server nginx) under a 15 s ramp to 500 new TLS 1.2 connections/s (RSA key transport, RSA-2048, AES-128-CBC-SHA), 50 KB pages, 30 s, profiled with perf per library and per symbol category"
    }

    /// The embedded server's backend: OpenSSL, whose symbols the profile
    /// puts in categories (the study's server ran on OpenSSL too).
    pub fn server_backend(self) -> crate::scenario::BackendId {
        crate::scenario::BackendId::Openssl
    }

    /// The study used DES-CBC with SHA-1 and RSA key exchange; no current
    /// OpenSSL offers DES in TLS, so the suite is its nearest kin,
    /// AES-128-CBC with HMAC-SHA1.
    pub fn settings(self) -> LoadSettings {
        LoadSettings {
            scenario: HandshakeScenario {
                version: TlsVersion::Tls12,
                group: Group::RsaKeyTransport,
                cert: CertKind::Rsa2048,
                aead: Aead::Aes128CbcSha,
                resumption: Resumption::Off,
                mutual: false,
                chain_depth: DEFAULT_CHAIN_DEPTH,
                mtu_bytes: None,
                transport: crate::scenario::Transport::Memory,
            },
            rate: 500.0,
            ramp_s: 15.0,
            duration_s: 30.0,
            size: 50_000,
            keep_alive: false,
        }
    }
}

/// One preset of one command, for `tlslab list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PresetEntry {
    pub command: &'static str,
    pub id: &'static str,
    pub description: &'static str,
}

/// Every preset of every command.
pub fn all() -> Vec<PresetEntry> {
    let mut entries: Vec<PresetEntry> = Preset::ALL
        .iter()
        .map(|p| PresetEntry {
            command: "handshake",
            id: p.id(),
            description: p.description(),
        })
        .collect();
    entries.extend(CostPreset::ALL.iter().map(|p| PresetEntry {
        command: "cost",
        id: p.id(),
        description: p.description(),
    }));
    entries.extend(TunnelPreset::ALL.iter().map(|p| PresetEntry {
        command: "tunnel",
        id: p.id(),
        description: p.description(),
    }));
    entries.extend(LoadPreset::ALL.iter().map(|p| PresetEntry {
        command: "load",
        id: p.id(),
        description: p.description(),
    }));
    entries.extend(super::bulk::BulkPreset::ALL.iter().map(|p| PresetEntry {
        command: "bulk",
        id: p.id(),
        description: p.description(),
    }));
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kex_matrix_has_the_classic_rows() {
        let rows = Preset::KexMatrix.matrix().expand();
        assert_eq!(rows.len(), 20);
        let measurable = rows
            .iter()
            .filter(|s| s.protocol_conflict().is_none())
            .count();
        // RSA transport and four DHE sizes only with RSA; five ECDHE groups with both.
        assert_eq!(measurable, 5 + 2 * 5);
        assert_eq!(
            Preset::KexMatrix.baseline().label(),
            "handshake_1.2_rsa_rsa2048_aes128gcm"
        );
    }

    #[test]
    fn the_quic_presets_set_each_quic_row_against_its_tls_twin() {
        for preset in [Preset::QuicVsTcp, Preset::QuicNetwork] {
            let rows = preset.matrix().expand();
            assert_eq!(rows.len(), 8, "{preset:?}");
            let baseline = preset.baseline_spec();
            assert_eq!(baseline, "protocol=1.3");
            for row in rows.iter().filter(|r| r.version == TlsVersion::Quic) {
                let twin = super::super::baseline::baseline_label(&baseline, row);
                assert!(rows.iter().any(|r| r.label() == twin), "{twin}");
            }
        }
        assert!(Preset::QuicVsTcp.network().is_none());
        let network = Preset::QuicNetwork.network().expect("networks");
        assert_eq!(network, Preset::PqNetwork.network().unwrap());
        assert_eq!(Preset::QuicNetwork.default_backends(), ["rustls-aws-lc"]);
    }

    #[test]
    fn dtls_study_has_the_three_rows_and_the_ffdh_baseline() {
        let rows = Preset::DtlsStudy.matrix().expand();
        let measurable: Vec<_> = rows
            .iter()
            .filter(|s| s.protocol_conflict().is_none())
            .map(|s| s.label())
            .collect();
        assert_eq!(
            measurable,
            vec![
                "handshake_dtls1.2_dhe2048_rsa2048_aes128gcm",
                "handshake_dtls1.2_p256_rsa2048_aes128gcm",
                "handshake_dtls1.2_p256_ecdsa_p256_aes128gcm",
            ]
        );
        assert_eq!(Preset::DtlsStudy.baseline().label(), measurable[0]);
    }

    #[test]
    fn dtls_study_adds_the_dtls13_rows_on_dimpl() {
        let companions = Preset::DtlsStudy.companions();
        let wolfssl_rows = if super::super::backend::WOLFSSL_BUILT_IN {
            2
        } else {
            0
        };
        assert_eq!(companions.len(), 1 + wolfssl_rows);
        assert_eq!(companions[0].backends, ["dimpl"]);
        let labels: Vec<String> = companions[0]
            .matrix
            .expand()
            .iter()
            .map(|s| s.label())
            .collect();
        assert_eq!(
            labels,
            vec![
                "handshake_dtls1.3_p256_rsa2048_aes128gcm",
                "handshake_dtls1.3_p256_ecdsa_p256_aes128gcm",
            ]
        );
        // The RSA row says why dimpl cannot run it; the ECDSA row runs.
        let dimpl = crate::backend::backend_by_id("dimpl").unwrap();
        let rows = companions[0].matrix.expand();
        let reason = dimpl.unsupported_reason(&rows[0]).unwrap();
        assert!(reason.contains("rsa2048"), "{reason}");
        assert_eq!(dimpl.unsupported_reason(&rows[1]), None);
        assert!(Preset::KexMatrix.companions().is_empty());
    }

    #[test]
    fn dtls_study_adds_wolfssls_dtls12_and_dtls13_rows_when_it_is_built_in() {
        let on_wolfssl: Vec<String> = Preset::DtlsStudy
            .companions()
            .iter()
            .filter(|companion| companion.backends == ["wolfssl"])
            .flat_map(|companion| companion.matrix.expand())
            .filter(|s| s.protocol_conflict().is_none())
            .map(|s| s.label())
            .collect();
        if !super::super::backend::WOLFSSL_BUILT_IN {
            assert!(on_wolfssl.is_empty(), "{on_wolfssl:?}");
            return;
        }
        assert_eq!(
            on_wolfssl,
            vec![
                "handshake_dtls1.2_dhe2048_rsa2048_aes128gcm",
                "handshake_dtls1.2_p256_rsa2048_aes128gcm",
                "handshake_dtls1.2_p256_ecdsa_p256_aes128gcm",
                "handshake_dtls1.3_ffdhe2048_rsa2048_aes128gcm",
                "handshake_dtls1.3_ffdhe2048_ecdsa_p256_aes128gcm",
                "handshake_dtls1.3_p256_rsa2048_aes128gcm",
                "handshake_dtls1.3_p256_ecdsa_p256_aes128gcm",
            ]
        );
    }

    #[test]
    fn vpn_compare_puts_three_aeads_beside_the_no_tunnel_row_per_packet_size() {
        let rows = TunnelPreset::VpnCompare.matrix().expand();
        let labels: Vec<String> = rows.iter().map(|s| s.label()).collect();
        let mut expected = Vec::new();
        for size in [64, 512, 1400] {
            expected.push(format!("tunnel_baseline_random_{size}"));
            for cipher in ["aes-128-gcm", "aes-256-gcm", "chacha20-poly1305"] {
                expected.push(format!("tunnel_{cipher}_none_none_random_{size}"));
            }
        }
        assert_eq!(labels, expected);
        assert_eq!(
            TunnelPreset::VpnCompare.engines(),
            [EngineId::Inprocess, EngineId::Wireguard]
        );
        assert_eq!(
            TunnelPreset::OpenvpnClassic.engines(),
            [EngineId::Inprocess]
        );
        for preset in TunnelPreset::ALL {
            preset.matrix().validate().unwrap();
        }
    }

    #[test]
    fn every_preset_validates() {
        for preset in Preset::ALL {
            preset.matrix().validate().unwrap();
            for companion in preset.companions() {
                companion.matrix.validate().unwrap();
            }
        }
    }
}
