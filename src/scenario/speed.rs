//! The rows of `tlslab speed`: each cryptographic primitive a handshake or
//! a record layer uses, its operations, and the buffer sizes of symmetric
//! rows. One row is (primitive, operation, buffer size).

use serde::{Deserialize, Serialize};

use crate::scenario::names::{deserialize_by_id, serialize_by_id, Named};

/// A cryptographic primitive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Primitive {
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
    EcdhP256,
    EcdhP384,
    EcdhP521,
    X25519,
    X448,
    Ffdhe2048,
    Ffdhe3072,
    Ffdhe4096,
    Ffdhe6144,
    Ffdhe8192,
    MlKem512,
    MlKem768,
    MlKem1024,
    X25519MlKem768,
    Aes128Gcm,
    Aes256Gcm,
    Chacha20Poly1305,
    Aes128Cbc,
    Aes256Cbc,
    Sha256,
    Sha384,
    Sha512,
    HmacSha256,
    HmacSha384,
}

serialize_by_id!(Primitive, Operation);
deserialize_by_id!(Primitive, Operation);

/// What family a primitive belongs to, which decides its operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Signature,
    KeyExchange,
    Kem,
    Cipher,
    Hash,
    Mac,
}

impl Named for Primitive {
    const KIND: &'static str = "algorithm";
    const ALL: &'static [Self] = &[
        Primitive::Rsa2048,
        Primitive::Rsa3072,
        Primitive::Rsa4096,
        Primitive::EcdsaP256,
        Primitive::EcdsaP384,
        Primitive::EcdsaP521,
        Primitive::Ed25519,
        Primitive::Ed448,
        Primitive::MlDsa44,
        Primitive::MlDsa65,
        Primitive::MlDsa87,
        Primitive::EcdhP256,
        Primitive::EcdhP384,
        Primitive::EcdhP521,
        Primitive::X25519,
        Primitive::X448,
        Primitive::Ffdhe2048,
        Primitive::Ffdhe3072,
        Primitive::Ffdhe4096,
        Primitive::Ffdhe6144,
        Primitive::Ffdhe8192,
        Primitive::MlKem512,
        Primitive::MlKem768,
        Primitive::MlKem1024,
        Primitive::X25519MlKem768,
        Primitive::Aes128Gcm,
        Primitive::Aes256Gcm,
        Primitive::Chacha20Poly1305,
        Primitive::Aes128Cbc,
        Primitive::Aes256Cbc,
        Primitive::Sha256,
        Primitive::Sha384,
        Primitive::Sha512,
        Primitive::HmacSha256,
        Primitive::HmacSha384,
    ];

    fn id(self) -> &'static str {
        match self {
            Primitive::Rsa2048 => "rsa2048",
            Primitive::Rsa3072 => "rsa3072",
            Primitive::Rsa4096 => "rsa4096",
            Primitive::EcdsaP256 => "ecdsa_p256",
            Primitive::EcdsaP384 => "ecdsa_p384",
            Primitive::EcdsaP521 => "ecdsa_p521",
            Primitive::Ed25519 => "ed25519",
            Primitive::Ed448 => "ed448",
            Primitive::MlDsa44 => "mldsa44",
            Primitive::MlDsa65 => "mldsa65",
            Primitive::MlDsa87 => "mldsa87",
            Primitive::EcdhP256 => "ecdh_p256",
            Primitive::EcdhP384 => "ecdh_p384",
            Primitive::EcdhP521 => "ecdh_p521",
            Primitive::X25519 => "x25519",
            Primitive::X448 => "x448",
            Primitive::Ffdhe2048 => "ffdhe2048",
            Primitive::Ffdhe3072 => "ffdhe3072",
            Primitive::Ffdhe4096 => "ffdhe4096",
            Primitive::Ffdhe6144 => "ffdhe6144",
            Primitive::Ffdhe8192 => "ffdhe8192",
            Primitive::MlKem512 => "mlkem512",
            Primitive::MlKem768 => "mlkem768",
            Primitive::MlKem1024 => "mlkem1024",
            Primitive::X25519MlKem768 => "x25519mlkem768",
            Primitive::Aes128Gcm => "aes128gcm",
            Primitive::Aes256Gcm => "aes256gcm",
            Primitive::Chacha20Poly1305 => "chacha20poly1305",
            Primitive::Aes128Cbc => "aes128cbc",
            Primitive::Aes256Cbc => "aes256cbc",
            Primitive::Sha256 => "sha256",
            Primitive::Sha384 => "sha384",
            Primitive::Sha512 => "sha512",
            Primitive::HmacSha256 => "hmac_sha256",
            Primitive::HmacSha384 => "hmac_sha384",
        }
    }

    /// The spelling of the same thing in the other commands: `p256` as
    /// `handshake --group` spells the key exchange, `aes-128-gcm` as every
    /// table spells the cipher; the id stays in labels and the database.
    fn name(self) -> &'static str {
        match self {
            Primitive::EcdhP256 => "p256",
            Primitive::EcdhP384 => "p384",
            Primitive::EcdhP521 => "p521",
            Primitive::Aes128Gcm => "aes-128-gcm",
            Primitive::Aes256Gcm => "aes-256-gcm",
            Primitive::Chacha20Poly1305 => "chacha20-poly1305",
            Primitive::Aes128Cbc => "aes-128-cbc",
            Primitive::Aes256Cbc => "aes-256-cbc",
            other => other.id(),
        }
    }

    fn aliases(self) -> &'static [&'static str] {
        match self {
            Primitive::EcdsaP256 => &["ecdsap256"],
            Primitive::EcdsaP384 => &["ecdsap384"],
            Primitive::EcdsaP521 => &["ecdsap521"],
            Primitive::EcdhP256 => &["secp256r1", "prime256v1"],
            Primitive::EcdhP384 => &["secp384r1"],
            Primitive::EcdhP521 => &["secp521r1"],
            Primitive::Chacha20Poly1305 => &["chacha20"],
            _ => &[],
        }
    }
}

impl Primitive {
    pub fn family(self) -> Family {
        use Primitive::*;
        match self {
            Rsa2048 | Rsa3072 | Rsa4096 | EcdsaP256 | EcdsaP384 | EcdsaP521 | Ed25519 | Ed448
            | MlDsa44 | MlDsa65 | MlDsa87 => Family::Signature,
            EcdhP256 | EcdhP384 | EcdhP521 | X25519 | X448 | Ffdhe2048 | Ffdhe3072 | Ffdhe4096
            | Ffdhe6144 | Ffdhe8192 => Family::KeyExchange,
            MlKem512 | MlKem768 | MlKem1024 | X25519MlKem768 => Family::Kem,
            Aes128Gcm | Aes256Gcm | Chacha20Poly1305 | Aes128Cbc | Aes256Cbc => Family::Cipher,
            Sha256 | Sha384 | Sha512 => Family::Hash,
            HmacSha256 | HmacSha384 => Family::Mac,
        }
    }

    /// The certificate key type a signature primitive corresponds to.
    pub fn cert_kind(self) -> Option<crate::scenario::CertKind> {
        use crate::scenario::CertKind;
        Some(match self {
            Primitive::Rsa2048 => CertKind::Rsa2048,
            Primitive::Rsa3072 => CertKind::Rsa3072,
            Primitive::Rsa4096 => CertKind::Rsa4096,
            Primitive::EcdsaP256 => CertKind::EcdsaP256,
            Primitive::EcdsaP384 => CertKind::EcdsaP384,
            Primitive::EcdsaP521 => CertKind::EcdsaP521,
            Primitive::Ed25519 => CertKind::Ed25519,
            Primitive::Ed448 => CertKind::Ed448,
            Primitive::MlDsa44 => CertKind::MlDsa44,
            Primitive::MlDsa65 => CertKind::MlDsa65,
            Primitive::MlDsa87 => CertKind::MlDsa87,
            _ => return None,
        })
    }

    /// The TLS group a key exchange or KEM primitive corresponds to.
    pub fn group(self) -> Option<crate::scenario::Group> {
        use crate::scenario::Group;
        Some(match self {
            Primitive::EcdhP256 => Group::P256,
            Primitive::EcdhP384 => Group::P384,
            Primitive::EcdhP521 => Group::P521,
            Primitive::X25519 => Group::X25519,
            Primitive::X448 => Group::X448,
            Primitive::Ffdhe2048 => Group::Ffdhe2048,
            Primitive::Ffdhe3072 => Group::Ffdhe3072,
            Primitive::Ffdhe4096 => Group::Ffdhe4096,
            Primitive::Ffdhe6144 => Group::Ffdhe6144,
            Primitive::Ffdhe8192 => Group::Ffdhe8192,
            Primitive::MlKem512 => Group::Mlkem512,
            Primitive::MlKem768 => Group::Mlkem768,
            Primitive::MlKem1024 => Group::Mlkem1024,
            Primitive::X25519MlKem768 => Group::X25519Mlkem768,
            _ => return None,
        })
    }

    /// The operations measured for this primitive.
    pub fn operations(self) -> &'static [Operation] {
        match self.family() {
            Family::Signature => &[Operation::Sign, Operation::Verify],
            Family::KeyExchange => &[
                Operation::Keygen,
                Operation::Derive,
                Operation::ClientExchange,
                Operation::ServerExchange,
            ],
            Family::Kem => &[
                Operation::Keygen,
                Operation::ClientExchange,
                Operation::ServerExchange,
            ],
            Family::Cipher => &[Operation::Encrypt],
            Family::Hash => &[Operation::Hash],
            Family::Mac => &[Operation::Mac],
        }
    }
}

/// One operation of a primitive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
    Sign,
    Verify,
    /// Generating an ephemeral key pair.
    Keygen,
    /// Deriving the shared secret from a fixed key pair and a fixed, already
    /// validated peer key (what `openssl speed ecdhp256` times).
    Derive,
    /// The client's side of an ephemeral exchange: generate a key share, then
    /// complete with the server's share (validate it and derive, or decapsulate).
    ClientExchange,
    /// The server's side: given the client's share, produce its own share and
    /// the secret (generate and derive, or encapsulate).
    ServerExchange,
    /// Encrypt and authenticate one buffer.
    Encrypt,
    Hash,
    Mac,
}

impl Named for Operation {
    const KIND: &'static str = "operation";
    const ALL: &'static [Self] = &[
        Operation::Sign,
        Operation::Verify,
        Operation::Keygen,
        Operation::Derive,
        Operation::ClientExchange,
        Operation::ServerExchange,
        Operation::Encrypt,
        Operation::Hash,
        Operation::Mac,
    ];

    fn id(self) -> &'static str {
        match self {
            Operation::Sign => "sign",
            Operation::Verify => "verify",
            Operation::Keygen => "keygen",
            Operation::Derive => "derive",
            Operation::ClientExchange => "client_exchange",
            Operation::ServerExchange => "server_exchange",
            Operation::Encrypt => "encrypt",
            Operation::Hash => "hash",
            Operation::Mac => "mac",
        }
    }
}

/// The buffer sizes symmetric rows are measured at (as `openssl speed`, plus 1 KiB).
pub const DEFAULT_SIZES: &[usize] = &[16, 64, 256, 1024, 8192, 16384];

/// The message size asymmetric signatures are measured on (about what a
/// TLS 1.3 CertificateVerify signs).
pub const SIGNED_MESSAGE_BYTES: usize = 130;

/// One row of the speed matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SpeedRow {
    pub primitive: Primitive,
    pub operation: Operation,
    /// The buffer size, for symmetric rows.
    pub size_bytes: Option<usize>,
}

impl SpeedRow {
    /// The stable snake_case id: `speed_ecdsa_p256_sign`, `speed_aes128gcm_encrypt_16384`.
    pub fn label(&self) -> String {
        match self.size_bytes {
            Some(size) => format!(
                "speed_{}_{}_{size}",
                self.primitive.id(),
                self.operation.id()
            ),
            None => format!("speed_{}_{}", self.primitive.id(), self.operation.id()),
        }
    }
}

/// Every row for these primitives and symmetric buffer sizes.
pub fn expand(primitives: &[Primitive], sizes: &[usize]) -> Vec<SpeedRow> {
    let mut rows = Vec::new();
    for &primitive in primitives {
        for &operation in primitive.operations() {
            let symmetric = matches!(
                primitive.family(),
                Family::Cipher | Family::Hash | Family::Mac
            );
            if symmetric {
                for &size in sizes {
                    rows.push(SpeedRow {
                        primitive,
                        operation,
                        size_bytes: Some(size),
                    });
                }
            } else {
                rows.push(SpeedRow {
                    primitive,
                    operation,
                    size_bytes: None,
                });
            }
        }
    }
    rows
}

/// Fills a buffer with a repeatable, non-trivial pattern.
pub fn pattern(size: usize) -> Vec<u8> {
    (0..size)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_be_bytes()[0])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_have_stable_labels() {
        let rows = expand(&[Primitive::EcdsaP256, Primitive::Aes128Gcm], &[16, 1024]);
        let labels: Vec<String> = rows.iter().map(SpeedRow::label).collect();
        assert_eq!(
            labels,
            vec![
                "speed_ecdsa_p256_sign",
                "speed_ecdsa_p256_verify",
                "speed_aes128gcm_encrypt_16",
                "speed_aes128gcm_encrypt_1024",
            ]
        );
    }
}
