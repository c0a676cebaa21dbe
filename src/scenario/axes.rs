//! The typed axes of a handshake scenario: protocol version (TLS, DTLS or QUIC),
//! key exchange group, certificate key type, bulk cipher of the suite and
//! resumption mode, each with its stable id and its security notes.

use super::names::{deserialize_by_id, serialize_by_id, Named};

serialize_by_id!(TlsVersion, Group, CertKind, Aead, Resumption);
deserialize_by_id!(TlsVersion, Group, CertKind, Aead, Resumption);

/// A protocol version: TLS over a byte stream, DTLS or QUIC over datagrams.
/// DTLS 1.2 is TLS 1.2's handshake made to survive datagrams (RFC 6347):
/// every rule of TLS 1.2 about groups, suites and resumption applies to it;
/// DTLS 1.3 (RFC 9147) is TLS 1.3's handshake over datagrams in the same way.
/// QUIC (RFC 9000, 9001) carries TLS 1.3's handshake in its own packets:
/// TLS 1.3's rules for groups, certificates, suites and resumption, an
/// ALPN protocol required, datagrams of at least 1,200 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TlsVersion {
    Tls12,
    Tls13,
    Dtls12,
    Dtls13,
    Quic,
}

/// The smallest datagram QUIC allows a path to carry, in bytes of UDP
/// payload (RFC 9000 §14: a client's Initial is padded to it).
pub const QUIC_MIN_MTU_BYTES: u16 = 1200;

/// The ALPN protocol tlslab's QUIC client offers and its server accepts.
pub const TLSLAB_ALPN: &str = "tlslab";

impl Named for TlsVersion {
    const KIND: &'static str = "TLS version";
    const ALL: &'static [Self] = &[
        TlsVersion::Tls12,
        TlsVersion::Tls13,
        TlsVersion::Dtls12,
        TlsVersion::Dtls13,
        TlsVersion::Quic,
    ];

    fn id(self) -> &'static str {
        match self {
            TlsVersion::Tls12 => "1.2",
            TlsVersion::Tls13 => "1.3",
            TlsVersion::Dtls12 => "dtls1.2",
            TlsVersion::Dtls13 => "dtls1.3",
            TlsVersion::Quic => "quic",
        }
    }

    fn aliases(self) -> &'static [&'static str] {
        match self {
            TlsVersion::Tls12 => &["tls1.2", "tls12", "12"],
            TlsVersion::Tls13 => &["tls1.3", "tls13", "13"],
            TlsVersion::Dtls12 => &["dtls12", "dtls"],
            TlsVersion::Dtls13 => &["dtls13"],
            TlsVersion::Quic => &[],
        }
    }
}

impl TlsVersion {
    /// The name as the protocol spells it ("TLSv1.2", "DTLSv1.2", "QUIC":
    /// QUIC version 1, TLS 1.3 inside).
    pub fn protocol_name(self) -> &'static str {
        match self {
            TlsVersion::Tls12 => "TLSv1.2",
            TlsVersion::Tls13 => "TLSv1.3",
            TlsVersion::Dtls12 => "DTLSv1.2",
            TlsVersion::Dtls13 => "DTLSv1.3",
            TlsVersion::Quic => "QUIC",
        }
    }

    /// The name for tables ("TLS 1.2", "DTLS 1.2").
    pub fn display(self) -> &'static str {
        match self {
            TlsVersion::Tls12 => "TLS 1.2",
            TlsVersion::Tls13 => "TLS 1.3",
            TlsVersion::Dtls12 => "DTLS 1.2",
            TlsVersion::Dtls13 => "DTLS 1.3",
            TlsVersion::Quic => "QUIC",
        }
    }

    /// The TLS version whose handshake rules this version follows: DTLS 1.2
    /// has the groups, suites, signatures and resumption modes of TLS 1.2,
    /// DTLS 1.3 and QUIC those of TLS 1.3.
    pub fn tls_rules(self) -> TlsVersion {
        match self {
            TlsVersion::Dtls12 => TlsVersion::Tls12,
            TlsVersion::Dtls13 | TlsVersion::Quic => TlsVersion::Tls13,
            tls => tls,
        }
    }

    /// True if and only if the version runs over datagrams (DTLS, QUIC).
    pub fn is_datagram(self) -> bool {
        matches!(
            self,
            TlsVersion::Dtls12 | TlsVersion::Dtls13 | TlsVersion::Quic
        )
    }

    /// True if and only if the version is DTLS (1.2 or 1.3).
    pub fn is_dtls(self) -> bool {
        matches!(self, TlsVersion::Dtls12 | TlsVersion::Dtls13)
    }

    /// The ALPN protocol a handshake of this version must negotiate: QUIC
    /// requires one (RFC 9001 §8.1), so tlslab offers and checks its own;
    /// TLS and DTLS rows offer none.
    pub fn required_alpn(self) -> Option<&'static str> {
        (self == TlsVersion::Quic).then_some(TLSLAB_ALPN)
    }
}

/// How a group establishes the shared secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KxKind {
    /// TLS 1.2 RSA key transport: the client encrypts the premaster secret.
    RsaKeyTransport,
    /// Finite-field Diffie-Hellman with a group of this many bits.
    Ffdh { bits: u32 },
    /// Elliptic-curve Diffie-Hellman.
    Ecdh,
    /// A key encapsulation mechanism (ML-KEM), alone or in a hybrid.
    Kem,
}

/// A key exchange: a named group, or RSA key transport (TLS 1.2 only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Group {
    RsaKeyTransport,
    /// RFC 2409 Oakley group 2 (1024-bit MODP), TLS 1.2 DHE only.
    Dhe1024,
    /// RFC 3526 MODP groups, TLS 1.2 DHE.
    Dhe2048,
    Dhe3072,
    Dhe4096,
    /// RFC 7919 named groups, TLS 1.3.
    Ffdhe2048,
    Ffdhe3072,
    Ffdhe4096,
    Ffdhe6144,
    Ffdhe8192,
    P256,
    P384,
    P521,
    X25519,
    X448,
    X25519Mlkem768,
    Secp256r1Mlkem768,
    Mlkem512,
    Mlkem768,
    Mlkem1024,
}

impl Named for Group {
    const KIND: &'static str = "group";
    const ALL: &'static [Self] = &[
        Group::RsaKeyTransport,
        Group::Dhe1024,
        Group::Dhe2048,
        Group::Dhe3072,
        Group::Dhe4096,
        Group::Ffdhe2048,
        Group::Ffdhe3072,
        Group::Ffdhe4096,
        Group::Ffdhe6144,
        Group::Ffdhe8192,
        Group::P256,
        Group::P384,
        Group::P521,
        Group::X25519,
        Group::X448,
        Group::X25519Mlkem768,
        Group::Secp256r1Mlkem768,
        Group::Mlkem512,
        Group::Mlkem768,
        Group::Mlkem1024,
    ];

    fn id(self) -> &'static str {
        match self {
            Group::RsaKeyTransport => "rsa",
            Group::Dhe1024 => "dhe1024",
            Group::Dhe2048 => "dhe2048",
            Group::Dhe3072 => "dhe3072",
            Group::Dhe4096 => "dhe4096",
            Group::Ffdhe2048 => "ffdhe2048",
            Group::Ffdhe3072 => "ffdhe3072",
            Group::Ffdhe4096 => "ffdhe4096",
            Group::Ffdhe6144 => "ffdhe6144",
            Group::Ffdhe8192 => "ffdhe8192",
            Group::P256 => "p256",
            Group::P384 => "p384",
            Group::P521 => "p521",
            Group::X25519 => "x25519",
            Group::X448 => "x448",
            Group::X25519Mlkem768 => "x25519mlkem768",
            Group::Secp256r1Mlkem768 => "secp256r1mlkem768",
            Group::Mlkem512 => "mlkem512",
            Group::Mlkem768 => "mlkem768",
            Group::Mlkem1024 => "mlkem1024",
        }
    }

    fn aliases(self) -> &'static [&'static str] {
        match self {
            Group::RsaKeyTransport => &["rsa-kx", "rsa_key_transport"],
            // `ecdh_p256` is speed's name of the same key exchange.
            Group::P256 => &["secp256r1", "prime256v1", "ecdh_p256"],
            Group::P384 => &["secp384r1", "ecdh_p384"],
            Group::P521 => &["secp521r1", "ecdh_p521"],
            Group::Mlkem512 => &["ml-kem-512"],
            Group::Mlkem768 => &["ml-kem-768"],
            Group::Mlkem1024 => &["ml-kem-1024"],
            _ => &[],
        }
    }
}

impl Group {
    pub fn kind(self) -> KxKind {
        match self {
            Group::RsaKeyTransport => KxKind::RsaKeyTransport,
            Group::Dhe1024 => KxKind::Ffdh { bits: 1024 },
            Group::Dhe2048 | Group::Ffdhe2048 => KxKind::Ffdh { bits: 2048 },
            Group::Dhe3072 | Group::Ffdhe3072 => KxKind::Ffdh { bits: 3072 },
            Group::Dhe4096 | Group::Ffdhe4096 => KxKind::Ffdh { bits: 4096 },
            Group::Ffdhe6144 => KxKind::Ffdh { bits: 6144 },
            Group::Ffdhe8192 => KxKind::Ffdh { bits: 8192 },
            Group::P256 | Group::P384 | Group::P521 | Group::X25519 | Group::X448 => KxKind::Ecdh,
            Group::X25519Mlkem768
            | Group::Secp256r1Mlkem768
            | Group::Mlkem512
            | Group::Mlkem768
            | Group::Mlkem1024 => KxKind::Kem,
        }
    }

    /// A short human label for tables ("ECDHE X25519", "DHE-2048").
    pub fn display(self) -> String {
        match self {
            Group::RsaKeyTransport => "RSA key transport".to_string(),
            Group::Dhe1024 | Group::Dhe2048 | Group::Dhe3072 | Group::Dhe4096 => {
                format!("DHE-{}", self.ffdh_bits().unwrap_or_default())
            }
            Group::P256 => "ECDHE P-256".to_string(),
            Group::P384 => "ECDHE P-384".to_string(),
            Group::P521 => "ECDHE P-521".to_string(),
            Group::X25519 => "ECDHE X25519".to_string(),
            Group::X448 => "ECDHE X448".to_string(),
            Group::X25519Mlkem768 => "X25519MLKEM768".to_string(),
            Group::Secp256r1Mlkem768 => "SecP256r1MLKEM768".to_string(),
            Group::Mlkem512 => "ML-KEM-512".to_string(),
            Group::Mlkem768 => "ML-KEM-768".to_string(),
            Group::Mlkem1024 => "ML-KEM-1024".to_string(),
            Group::Ffdhe2048
            | Group::Ffdhe3072
            | Group::Ffdhe4096
            | Group::Ffdhe6144
            | Group::Ffdhe8192 => self.id().to_string(),
        }
    }

    /// The size of the finite field, for DHE groups.
    pub fn ffdh_bits(self) -> Option<u32> {
        match self.kind() {
            KxKind::Ffdh { bits } => Some(bits),
            _ => None,
        }
    }

    /// Why the group cannot be used with this protocol version, if it cannot.
    pub fn protocol_conflict(self, version: TlsVersion) -> Option<&'static str> {
        match (version.tls_rules(), self) {
            (TlsVersion::Tls13, Group::RsaKeyTransport) => {
                Some("TLS 1.3 has no RSA key transport (every key exchange is ephemeral)")
            }
            (
                TlsVersion::Tls13,
                Group::Dhe1024 | Group::Dhe2048 | Group::Dhe3072 | Group::Dhe4096,
            ) => Some("TLS 1.3 uses the RFC 7919 groups (ffdhe2048..ffdhe8192), not server-chosen DHE parameters"),
            (
                TlsVersion::Tls12,
                Group::Ffdhe2048
                | Group::Ffdhe3072
                | Group::Ffdhe4096
                | Group::Ffdhe6144
                | Group::Ffdhe8192,
            ) => Some("the ffdhe groups are TLS 1.3 groups here; use dhe2048/dhe3072/dhe4096 for TLS 1.2 DHE"),
            (TlsVersion::Tls12, group) if group.kind() == KxKind::Kem => {
                Some("ML-KEM and hybrid groups exist only in TLS 1.3")
            }
            _ => None,
        }
    }

    /// Approximate classical security in bits (NIST SP 800-57 equivalences).
    pub fn security_bits(self) -> u32 {
        match self {
            Group::RsaKeyTransport => 112,
            Group::Dhe1024 => 80,
            Group::Dhe2048 | Group::Ffdhe2048 => 112,
            Group::Dhe3072 | Group::Ffdhe3072 | Group::P256 | Group::X25519 => 128,
            Group::Dhe4096 | Group::Ffdhe4096 => 152,
            Group::Ffdhe6144 => 176,
            Group::Ffdhe8192 => 192,
            Group::P384 => 192,
            Group::X448 => 224,
            Group::P521 => 256,
            Group::X25519Mlkem768 | Group::Secp256r1Mlkem768 | Group::Mlkem768 => 192,
            Group::Mlkem512 => 128,
            Group::Mlkem1024 => 256,
        }
    }

    /// Known weaknesses, shown beside the figures.
    pub fn security_notes(self) -> Vec<&'static str> {
        let mut notes = Vec::new();
        match self {
            Group::RsaKeyTransport => notes.push("no forward secrecy"),
            Group::Dhe1024 => notes.push("1024-bit DH: about 80-bit security (Logjam), weak"),
            _ => {}
        }
        if self.kind() != KxKind::Kem {
            notes.push("not quantum-safe");
        }
        notes
    }

    /// True if and only if the group is below today's minimum and needs the
    /// library's security level lowered to be measured.
    pub fn is_weak(self) -> bool {
        self.security_bits() < 112
    }
}

/// The key type of the certificate chain (every certificate in the chain uses it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CertKind {
    Rsa2048,
    Rsa3072,
    Rsa4096,
    EcdsaP256,
    EcdsaP384,
    EcdsaP521,
    Ed25519,
    Ed448,
    MlDsa44,
    MlDsa65,
    MlDsa87,
}

/// The signature family a certificate key signs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignatureFamily {
    Rsa,
    Ecdsa,
    EdDsa,
    MlDsa,
}

impl Named for CertKind {
    const KIND: &'static str = "certificate";
    const ALL: &'static [Self] = &[
        CertKind::Rsa2048,
        CertKind::Rsa3072,
        CertKind::Rsa4096,
        CertKind::EcdsaP256,
        CertKind::EcdsaP384,
        CertKind::EcdsaP521,
        CertKind::Ed25519,
        CertKind::Ed448,
        CertKind::MlDsa44,
        CertKind::MlDsa65,
        CertKind::MlDsa87,
    ];

    fn id(self) -> &'static str {
        match self {
            CertKind::Rsa2048 => "rsa2048",
            CertKind::Rsa3072 => "rsa3072",
            CertKind::Rsa4096 => "rsa4096",
            CertKind::EcdsaP256 => "ecdsa_p256",
            CertKind::EcdsaP384 => "ecdsa_p384",
            CertKind::EcdsaP521 => "ecdsa_p521",
            CertKind::Ed25519 => "ed25519",
            CertKind::Ed448 => "ed448",
            CertKind::MlDsa44 => "mldsa44",
            CertKind::MlDsa65 => "mldsa65",
            CertKind::MlDsa87 => "mldsa87",
        }
    }

    fn aliases(self) -> &'static [&'static str] {
        match self {
            CertKind::Rsa2048 => &["rsa"],
            CertKind::EcdsaP256 => &["ecdsa", "p256", "ecdsap256"],
            CertKind::EcdsaP384 => &["p384", "ecdsap384"],
            CertKind::EcdsaP521 => &["p521", "ecdsap521"],
            CertKind::MlDsa44 => &["ml-dsa-44"],
            CertKind::MlDsa65 => &["ml-dsa-65"],
            CertKind::MlDsa87 => &["ml-dsa-87"],
            _ => &[],
        }
    }
}

impl CertKind {
    pub fn family(self) -> SignatureFamily {
        match self {
            CertKind::Rsa2048 | CertKind::Rsa3072 | CertKind::Rsa4096 => SignatureFamily::Rsa,
            CertKind::EcdsaP256 | CertKind::EcdsaP384 | CertKind::EcdsaP521 => {
                SignatureFamily::Ecdsa
            }
            CertKind::Ed25519 | CertKind::Ed448 => SignatureFamily::EdDsa,
            CertKind::MlDsa44 | CertKind::MlDsa65 | CertKind::MlDsa87 => SignatureFamily::MlDsa,
        }
    }

    /// A short human label for tables ("RSA-2048", "ECDSA P-256").
    pub fn display(self) -> &'static str {
        match self {
            CertKind::Rsa2048 => "RSA-2048",
            CertKind::Rsa3072 => "RSA-3072",
            CertKind::Rsa4096 => "RSA-4096",
            CertKind::EcdsaP256 => "ECDSA P-256",
            CertKind::EcdsaP384 => "ECDSA P-384",
            CertKind::EcdsaP521 => "ECDSA P-521",
            CertKind::Ed25519 => "Ed25519",
            CertKind::Ed448 => "Ed448",
            CertKind::MlDsa44 => "ML-DSA-44",
            CertKind::MlDsa65 => "ML-DSA-65",
            CertKind::MlDsa87 => "ML-DSA-87",
        }
    }

    /// Signature scheme names (RFC 8446 spelling) a server with this key may
    /// negotiate. In TLS 1.3 ECDSA schemes are bound to the curve; in TLS 1.2
    /// any ECDSA hash may be used with any curve.
    pub fn acceptable_schemes(self, version: TlsVersion) -> &'static [&'static str] {
        const RSA: &[&str] = &[
            "rsa_pss_rsae_sha256",
            "rsa_pss_rsae_sha384",
            "rsa_pss_rsae_sha512",
            "rsa_pkcs1_sha256",
            "rsa_pkcs1_sha384",
            "rsa_pkcs1_sha512",
        ];
        const RSA13: &[&str] = &[
            "rsa_pss_rsae_sha256",
            "rsa_pss_rsae_sha384",
            "rsa_pss_rsae_sha512",
        ];
        const ECDSA12: &[&str] = &[
            "ecdsa_secp256r1_sha256",
            "ecdsa_secp384r1_sha384",
            "ecdsa_secp521r1_sha512",
        ];
        match (self.family(), version.tls_rules()) {
            (SignatureFamily::Rsa, TlsVersion::Tls12) => RSA,
            (SignatureFamily::Rsa, TlsVersion::Tls13) => RSA13,
            (SignatureFamily::Ecdsa, TlsVersion::Tls12) => ECDSA12,
            _ => match self {
                CertKind::EcdsaP256 => &["ecdsa_secp256r1_sha256"],
                CertKind::EcdsaP384 => &["ecdsa_secp384r1_sha384"],
                CertKind::EcdsaP521 => &["ecdsa_secp521r1_sha512"],
                CertKind::Ed25519 => &["ed25519"],
                CertKind::Ed448 => &["ed448"],
                CertKind::MlDsa44 => &["mldsa44"],
                CertKind::MlDsa65 => &["mldsa65"],
                CertKind::MlDsa87 => &["mldsa87"],
                _ => &[],
            },
        }
    }

    /// Known weaknesses, shown beside the figures.
    pub fn security_notes(self) -> Vec<&'static str> {
        match self.family() {
            SignatureFamily::MlDsa => vec![],
            _ => vec!["signature not quantum-safe"],
        }
    }
}

/// The bulk cipher of the suite (the key exchange and authentication parts of
/// a TLS 1.2 suite follow from the group and the certificate): an AEAD, or
/// AES-CBC with an HMAC (TLS 1.2 and DTLS 1.2 only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Aead {
    Aes128Gcm,
    Aes256Gcm,
    Chacha20Poly1305,
    /// AES-128-CBC with HMAC-SHA1 (`..._WITH_AES_128_CBC_SHA`).
    Aes128CbcSha,
    /// AES-256-CBC with HMAC-SHA1 (`..._WITH_AES_256_CBC_SHA`).
    Aes256CbcSha,
    /// AES-128-CBC with HMAC-SHA256 (`..._WITH_AES_128_CBC_SHA256`).
    Aes128CbcSha256,
    /// AES-256-CBC with HMAC-SHA256: RSA key transport and DHE only.
    Aes256CbcSha256,
    /// AES-256-CBC with HMAC-SHA384: ECDHE only.
    Aes256CbcSha384,
}

impl Named for Aead {
    const KIND: &'static str = "suite";
    const ALL: &'static [Self] = &[
        Aead::Aes128Gcm,
        Aead::Aes256Gcm,
        Aead::Chacha20Poly1305,
        Aead::Aes128CbcSha,
        Aead::Aes256CbcSha,
        Aead::Aes128CbcSha256,
        Aead::Aes256CbcSha256,
        Aead::Aes256CbcSha384,
    ];

    fn id(self) -> &'static str {
        match self {
            Aead::Aes128Gcm => "aes128gcm",
            Aead::Aes256Gcm => "aes256gcm",
            Aead::Chacha20Poly1305 => "chacha20poly1305",
            Aead::Aes128CbcSha => "aes128cbc_sha",
            Aead::Aes256CbcSha => "aes256cbc_sha",
            Aead::Aes128CbcSha256 => "aes128cbc_sha256",
            Aead::Aes256CbcSha256 => "aes256cbc_sha256",
            Aead::Aes256CbcSha384 => "aes256cbc_sha384",
        }
    }

    /// The cipher's spelling in every table (`tunnel`'s and `speed`'s
    /// too); the id stays in labels and the database.
    fn name(self) -> &'static str {
        match self {
            Aead::Aes128Gcm => "aes-128-gcm",
            Aead::Aes256Gcm => "aes-256-gcm",
            Aead::Chacha20Poly1305 => "chacha20-poly1305",
            Aead::Aes128CbcSha => "aes-128-cbc-sha",
            Aead::Aes256CbcSha => "aes-256-cbc-sha",
            Aead::Aes128CbcSha256 => "aes-128-cbc-sha256",
            Aead::Aes256CbcSha256 => "aes-256-cbc-sha256",
            Aead::Aes256CbcSha384 => "aes-256-cbc-sha384",
        }
    }

    fn aliases(self) -> &'static [&'static str] {
        match self {
            Aead::Aes128Gcm => &["TLS_AES_128_GCM_SHA256"],
            Aead::Aes256Gcm => &["TLS_AES_256_GCM_SHA384"],
            Aead::Chacha20Poly1305 => &["chacha20", "TLS_CHACHA20_POLY1305_SHA256"],
            Aead::Aes128CbcSha => &["aes128cbc_sha1", "aes128-sha"],
            Aead::Aes256CbcSha => &["aes256cbc_sha1", "aes256-sha"],
            Aead::Aes128CbcSha256 => &["aes128-sha256"],
            Aead::Aes256CbcSha256 => &["aes256-sha256"],
            Aead::Aes256CbcSha384 => &["aes256-sha384"],
        }
    }
}

impl Aead {
    /// True if and only if the cipher is an AEAD (not CBC with an HMAC).
    pub fn is_aead(self) -> bool {
        matches!(
            self,
            Aead::Aes128Gcm | Aead::Aes256Gcm | Aead::Chacha20Poly1305
        )
    }

    /// Why the cipher cannot be used with this protocol version, if it cannot.
    pub fn protocol_conflict(self, version: TlsVersion) -> Option<&'static str> {
        (version.tls_rules() == TlsVersion::Tls13 && !self.is_aead())
            .then_some("TLS 1.3 has AEAD suites only (no CBC with HMAC)")
    }

    /// Known weaknesses, shown beside the figures.
    pub fn security_notes(self) -> Vec<&'static str> {
        let mut notes = Vec::new();
        if !self.is_aead() {
            notes.push("CBC + HMAC: MAC-then-encrypt unless encrypt-then-MAC is negotiated (padding oracles, Lucky 13)");
        }
        if matches!(self, Aead::Aes128CbcSha | Aead::Aes256CbcSha) {
            notes.push("HMAC-SHA1 (still sound as a MAC; SHA-1 deprecated)");
        }
        notes
    }
}

/// How a handshake is resumed, or `Off` for a full handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Resumption {
    Off,
    /// TLS 1.2 session id (server-side session cache).
    SessionId,
    /// TLS 1.2 session ticket (RFC 5077).
    Ticket,
    /// TLS 1.3 pre-shared key from a session ticket.
    Psk,
    /// TLS 1.3 pre-shared key from a session ticket, with application data
    /// sent in the client's first flight (0-RTT, early data) and accepted
    /// by the server (RFC 8446 §2.3; RFC 9001 §4.6 inside QUIC).
    ZeroRtt,
}

impl Named for Resumption {
    const KIND: &'static str = "resumption mode";
    const ALL: &'static [Self] = &[
        Resumption::Off,
        Resumption::SessionId,
        Resumption::Ticket,
        Resumption::Psk,
        Resumption::ZeroRtt,
    ];

    fn id(self) -> &'static str {
        match self {
            Resumption::Off => "off",
            Resumption::SessionId => "session_id",
            Resumption::Ticket => "ticket",
            Resumption::Psk => "psk",
            Resumption::ZeroRtt => "0rtt",
        }
    }

    fn aliases(self) -> &'static [&'static str] {
        match self {
            Resumption::Off => &["none", "full", "no"],
            Resumption::ZeroRtt => &["early", "early_data", "zero_rtt"],
            _ => &[],
        }
    }
}

impl Resumption {
    /// Why this resumption mode cannot be used with a protocol version.
    pub fn protocol_conflict(self, version: TlsVersion) -> Option<&'static str> {
        match (self, version.tls_rules()) {
            (Resumption::Psk, TlsVersion::Tls12) => {
                Some("PSK resumption is TLS 1.3; TLS 1.2 resumes with session_id or ticket")
            }
            (Resumption::SessionId | Resumption::Ticket, TlsVersion::Tls13) => {
                Some("TLS 1.3 resumes with psk; session_id and ticket are TLS 1.2 modes")
            }
            (Resumption::ZeroRtt, TlsVersion::Tls12) => {
                Some("0-RTT (early data) is TLS 1.3's; TLS 1.2 has none")
            }
            _ => None,
        }
    }

    /// True if and only if the client sends application data in its first
    /// flight (0-RTT) and the server must accept it.
    pub fn sends_early_data(self) -> bool {
        self == Resumption::ZeroRtt
    }

    pub fn is_on(self) -> bool {
        self != Resumption::Off
    }
}
