//! What a handshake's crypto calls are, as the counted provider, the cost
//! model and the breakdown name them: the [`Category`] a call's time goes
//! to, and the [`CountedOp`] the model predicts per handshake and side.
//! Vocabulary, not a library's: any backend that counts its calls (today
//! the rustls providers) reports in these words.

use serde::Serialize;

/// Where handshake time goes.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    KeyExchange,
    Signing,
    Verification,
    HashingAndKdf,
    RecordProtection,
    Random,
    /// Certificate parsing and path building (verification minus the signature checks).
    Certificates,
}

impl Category {
    pub const ALL: [Category; 7] = [
        Category::KeyExchange,
        Category::Signing,
        Category::Verification,
        Category::HashingAndKdf,
        Category::RecordProtection,
        Category::Random,
        Category::Certificates,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Category::KeyExchange => "key exchange",
            Category::Signing => "signing",
            Category::Verification => "verification",
            Category::HashingAndKdf => "hashing/KDF",
            Category::RecordProtection => "record protection",
            Category::Random => "random numbers",
            Category::Certificates => "certificate parsing",
        }
    }
}

/// A counted operation, the unit the cost model predicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CountedOp {
    /// One side's ephemeral key exchange: a key share generated and completed
    /// (or, on a TLS 1.3 server, generated and completed in one call).
    KxExchange,
    Sign,
    /// A signature checked while verifying a certificate chain.
    VerifyChainSignature,
    /// The peer's handshake signature (CertificateVerify / ServerKeyExchange).
    VerifyHandshakeSignature,
    HkdfExtract,
    HkdfExpand,
    Hmac,
    Prf,
    HashOneShot,
    HashContext,
    RecordEncrypt,
    RecordDecrypt,
    RandomFill,
    /// TLS 1.2 RSA key transport: the client encrypts the premaster secret to
    /// the server's key, the server decrypts it (modelled, not counted: rustls
    /// has no RSA key transport).
    RsaKeyTransport,
}

impl CountedOp {
    /// A short human name.
    pub fn name(self) -> &'static str {
        match self {
            CountedOp::KxExchange => "key exchange",
            CountedOp::Sign => "sign",
            CountedOp::VerifyChainSignature => "verify (chain)",
            CountedOp::VerifyHandshakeSignature => "verify (handshake)",
            CountedOp::HkdfExtract => "HKDF-Extract",
            CountedOp::HkdfExpand => "HKDF-Expand",
            CountedOp::Hmac => "HMAC",
            CountedOp::Prf => "TLS 1.2 PRF",
            CountedOp::HashOneShot => "hash",
            CountedOp::HashContext => "transcript hash",
            CountedOp::RecordEncrypt => "record encrypt",
            CountedOp::RecordDecrypt => "record decrypt",
            CountedOp::RandomFill => "random",
            CountedOp::RsaKeyTransport => "RSA key transport",
        }
    }
}
