//! The primitives of rustls' crypto providers (aws-lc-rs, ring), measured
//! through the provider interface rustls itself calls in a handshake: key
//! exchange groups, the key provider's signers, the WebPKI verification
//! algorithms, the suites' AEAD, hash and HMAC.

use anyhow::{anyhow, Context, Result};
use rustls::crypto::cipher::{OutboundChunks, OutboundPlainMessage};
use rustls::crypto::tls13::OkmBlock;
use rustls::crypto::{CryptoProvider, SupportedKxGroup};
use rustls::{ContentType, ProtocolVersion, SignatureScheme, SupportedCipherSuite};
use rustls_pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer, SignatureVerificationAlgorithm};

use crate::backend::{PreparedOperation, PrimitiveBackend, Unsupported};
use crate::scenario::speed::{
    pattern, Family, Operation, Primitive, SpeedRow, SIGNED_MESSAGE_BYTES,
};
use crate::scenario::{CertKind, Named};

/// rustls with one crypto provider as a source of primitives.
pub struct RustlsPrimitives {
    aws_lc: bool,
}

impl RustlsPrimitives {
    pub fn aws_lc_rs() -> Self {
        Self { aws_lc: true }
    }

    pub fn ring() -> Self {
        Self { aws_lc: false }
    }

    fn provider(&self) -> CryptoProvider {
        if self.aws_lc {
            rustls::crypto::aws_lc_rs::default_provider()
        } else {
            rustls::crypto::ring::default_provider()
        }
    }

    fn all_groups(&self) -> &'static [&'static dyn SupportedKxGroup] {
        if self.aws_lc {
            rustls::crypto::aws_lc_rs::ALL_KX_GROUPS
        } else {
            rustls::crypto::ring::ALL_KX_GROUPS
        }
    }

    fn name(&self) -> &'static str {
        if self.aws_lc {
            "rustls-aws-lc"
        } else {
            "rustls-ring"
        }
    }
}

impl PrimitiveBackend for RustlsPrimitives {
    fn id(&self) -> &'static str {
        self.name()
    }

    fn prepare(&self, row: &SpeedRow) -> Result<PreparedOperation, Unsupported> {
        let provider = self.provider();
        let size = row.size_bytes.unwrap_or(0);
        match row.primitive.family() {
            Family::Signature => signature(&provider, self.name(), row.primitive, row.operation),
            Family::KeyExchange | Family::Kem => self.key_exchange(row.primitive, row.operation),
            Family::Cipher => cipher(&provider, self.name(), row.primitive, size),
            Family::Hash => {
                let suite = tls13_suite(&provider, row.primitive, self.name())?;
                let data = pattern(size);
                Ok(Box::new(move || {
                    std::hint::black_box(suite.common.hash_provider.hash(&data));
                    Ok(())
                }))
            }
            Family::Mac => {
                let suite = tls13_suite(&provider, row.primitive, self.name())?;
                let key = OkmBlock::new(&pattern(suite.common.hash_provider.output_len()));
                let data = pattern(size);
                Ok(Box::new(move || {
                    std::hint::black_box(suite.hkdf_provider.hmac_sign(&key, &data));
                    Ok(())
                }))
            }
        }
    }
}

/// The TLS 1.3 signature scheme rustls uses for a certificate key type.
pub fn tls13_scheme(kind: CertKind) -> SignatureScheme {
    match kind {
        CertKind::Rsa2048 | CertKind::Rsa3072 | CertKind::Rsa4096 => {
            SignatureScheme::RSA_PSS_SHA256
        }
        CertKind::EcdsaP256 => SignatureScheme::ECDSA_NISTP256_SHA256,
        CertKind::EcdsaP384 => SignatureScheme::ECDSA_NISTP384_SHA384,
        CertKind::EcdsaP521 => SignatureScheme::ECDSA_NISTP521_SHA512,
        CertKind::Ed25519 => SignatureScheme::ED25519,
        CertKind::Ed448 => SignatureScheme::ED448,
        CertKind::MlDsa44 => SignatureScheme::ML_DSA_44,
        CertKind::MlDsa65 => SignatureScheme::ML_DSA_65,
        CertKind::MlDsa87 => SignatureScheme::ML_DSA_87,
    }
}

/// The subjectPublicKey bits of a DER SubjectPublicKeyInfo: what WebPKI
/// hands a verification algorithm.
pub fn spki_public_key(spki: &[u8]) -> Result<&[u8]> {
    // SEQUENCE { SEQUENCE algorithm, BIT STRING subjectPublicKey }
    fn header(der: &[u8]) -> Result<(u8, usize, usize)> {
        let tag = *der.first().context("truncated DER")?;
        let first = *der.get(1).context("truncated DER")? as usize;
        if first < 0x80 {
            return Ok((tag, 2, first));
        }
        let count = first & 0x7f;
        let mut length = 0usize;
        for i in 0..count {
            length = (length << 8) | *der.get(2 + i).context("truncated DER")? as usize;
        }
        Ok((tag, 2 + count, length))
    }
    let (_, outer_header, _) = header(spki)?;
    let body = &spki[outer_header..];
    let (_, algorithm_header, algorithm_length) = header(body)?;
    let rest = &body[algorithm_header + algorithm_length..];
    let (tag, bits_header, bits_length) = header(rest)?;
    if tag != 0x03 || bits_length < 1 {
        return Err(anyhow!("no BIT STRING in the public key info"));
    }
    // Skip the count of unused bits.
    Ok(&rest[bits_header + 1..bits_header + bits_length])
}

fn signature(
    provider: &CryptoProvider,
    backend: &str,
    primitive: Primitive,
    operation: Operation,
) -> Result<PreparedOperation, Unsupported> {
    let kind = primitive.cert_kind().expect("signature primitive");
    let scheme = tls13_scheme(kind);
    let key = crate::certs::generate_key(kind)?;
    let pkcs8 = key.private_key_to_pkcs8().map_err(anyhow::Error::from)?;
    let signing_key = provider
        .key_provider
        .load_private_key(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(pkcs8)))
        .map_err(|e| {
            Unsupported::new(format!(
                "{backend} cannot load {} keys: {e}",
                primitive.id()
            ))
        })?;
    let signer = signing_key
        .choose_scheme(&[scheme])
        .ok_or_else(|| Unsupported::new(format!("{backend} cannot sign with {scheme:?}")))?;
    let message = pattern(SIGNED_MESSAGE_BYTES);
    if operation == Operation::Sign {
        return Ok(Box::new(move || {
            std::hint::black_box(signer.sign(&message)?);
            Ok(())
        }));
    }
    let signature = signer.sign(&message).map_err(anyhow::Error::from)?;
    let spki = key.public_key_to_der().map_err(anyhow::Error::from)?;
    let public_key = spki_public_key(&spki)?.to_vec();
    let algorithm: &'static dyn SignatureVerificationAlgorithm = provider
        .signature_verification_algorithms
        .mapping
        .iter()
        .find(|(s, _)| *s == scheme)
        .and_then(|(_, algorithms)| {
            algorithms.iter().copied().find(|a| {
                a.verify_signature(&public_key, &message, &signature)
                    .is_ok()
            })
        })
        .ok_or_else(|| Unsupported::new(format!("{backend} cannot verify {scheme:?}")))?;
    Ok(Box::new(move || {
        algorithm
            .verify_signature(&public_key, &message, &signature)
            .map_err(|_| anyhow!("the signature did not verify"))
    }))
}

impl RustlsPrimitives {
    fn key_exchange(
        &self,
        primitive: Primitive,
        operation: Operation,
    ) -> Result<PreparedOperation, Unsupported> {
        let wanted = primitive.group().expect("key exchange primitive");
        let group: &'static dyn SupportedKxGroup = self
            .all_groups()
            .iter()
            .copied()
            .find(|g| {
                crate::scenario::parse_name::<crate::scenario::Group>(&format!("{:?}", g.name()))
                    == Ok(wanted)
            })
            .ok_or_else(|| {
                Unsupported::new(format!(
                    "{} has no {} key exchange",
                    self.name(),
                    primitive.id()
                ))
            })?;
        let peer_share = group
            .start()
            .map_err(anyhow::Error::from)?
            .pub_key()
            .to_vec();
        Ok(match operation {
            Operation::Keygen => Box::new(move || {
                std::hint::black_box(group.start()?);
                Ok(())
            }),
            Operation::ClientExchange => {
                // For ML-KEM the server's share is a ciphertext; one made for
                // another key is decapsulated through implicit rejection, which
                // costs the same by design.
                let server_share = group
                    .start_and_complete(&peer_share)
                    .map_err(anyhow::Error::from)?
                    .pub_key;
                Box::new(move || {
                    let active = group.start()?;
                    std::hint::black_box(active.complete(&server_share)?);
                    Ok(())
                })
            }
            Operation::ServerExchange => Box::new(move || {
                std::hint::black_box(group.start_and_complete(&peer_share)?);
                Ok(())
            }),
            Operation::Derive => {
                return Err(Unsupported::new(
                    "rustls' key exchange consumes the key when it derives; see client_exchange",
                ))
            }
            other => {
                return Err(Unsupported::new(format!(
                    "{} has no {} operation",
                    primitive.id(),
                    other.id()
                )))
            }
        })
    }
}

/// The provider's TLS 1.3 suite that carries a hash or HMAC primitive.
fn tls13_suite(
    provider: &CryptoProvider,
    primitive: Primitive,
    backend: &str,
) -> Result<&'static rustls::Tls13CipherSuite, Unsupported> {
    let name = match primitive {
        Primitive::Sha256 | Primitive::HmacSha256 | Primitive::Aes128Gcm => {
            "TLS13_AES_128_GCM_SHA256"
        }
        Primitive::Sha384 | Primitive::HmacSha384 | Primitive::Aes256Gcm => {
            "TLS13_AES_256_GCM_SHA384"
        }
        Primitive::Chacha20Poly1305 => "TLS13_CHACHA20_POLY1305_SHA256",
        _ => {
            return Err(Unsupported::new(format!(
                "no {backend} suite uses {}; rustls' providers expose it only through TLS suites",
                primitive.id()
            )))
        }
    };
    provider
        .cipher_suites
        .iter()
        .find_map(|suite| match suite {
            SupportedCipherSuite::Tls13(s) if s.common.suite.as_str() == Some(name) => Some(*s),
            _ => None,
        })
        .ok_or_else(|| Unsupported::new(format!("{backend} has no {name}")))
}

/// Protects one TLS 1.3 application-data record of `size` bytes.
fn cipher(
    provider: &CryptoProvider,
    backend: &str,
    primitive: Primitive,
    size: usize,
) -> Result<PreparedOperation, Unsupported> {
    if matches!(primitive, Primitive::Aes128Cbc | Primitive::Aes256Cbc) {
        return Err(Unsupported::new("rustls has no CBC suites"));
    }
    let suite = tls13_suite(provider, primitive, backend)?;
    let expander = suite.hkdf_provider.extract_from_secret(None, &pattern(32));
    let key = rustls::internal::derive_traffic_key(expander.as_ref(), suite.aead_alg);
    let iv = rustls::internal::derive_traffic_iv(expander.as_ref());
    let mut encrypter = suite.aead_alg.encrypter(key, iv);
    let data = pattern(size);
    let mut sequence = 0u64;
    Ok(Box::new(move || {
        let message = OutboundPlainMessage {
            typ: ContentType::ApplicationData,
            version: ProtocolVersion::TLSv1_2,
            payload: OutboundChunks::Single(&data),
        };
        // Sequence numbers start at 0 and must not repeat, as in a connection.
        std::hint::black_box(encrypter.encrypt(message, sequence)?);
        sequence += 1;
        Ok(())
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kx_secrets_match_on_both_sides() {
        for group in rustls::crypto::aws_lc_rs::ALL_KX_GROUPS {
            let client = group.start().unwrap();
            let server = group.start_and_complete(client.pub_key()).unwrap();
            let client_secret = client.complete(&server.pub_key).unwrap();
            assert_eq!(
                client_secret.secret_bytes(),
                server.secret.secret_bytes(),
                "{:?}",
                group.name()
            );
        }
    }

    #[test]
    fn signatures_verify_through_the_provider() {
        let backend = RustlsPrimitives::aws_lc_rs();
        for primitive in [
            Primitive::Rsa2048,
            Primitive::EcdsaP384,
            Primitive::Ed25519,
            Primitive::MlDsa44,
        ] {
            let row = SpeedRow {
                primitive,
                operation: Operation::Verify,
                size_bytes: None,
            };
            let mut verify = backend
                .prepare(&row)
                .unwrap_or_else(|e| panic!("{}: {e}", primitive.id()));
            verify().unwrap();
        }
        let ring = RustlsPrimitives::ring();
        let row = SpeedRow {
            primitive: Primitive::MlDsa44,
            operation: Operation::Sign,
            size_bytes: None,
        };
        assert!(ring.prepare(&row).is_err());
    }
}
