//! The rows of `tlslab speed` on wolfCrypt, wolfSSL's own crypto, through
//! the calls its TLS layer makes (`wolfcrypt.rs` holds them): AES-GCM,
//! ChaCha20-Poly1305 and AES-CBC over one buffer, SHA-2, RSA-PSS and ECDSA
//! signatures over a hashed TLS-sized message, ECDH and X25519 with the
//! peer's share imported and checked as a handshake does, and ML-KEM.
//! What the bundled build lacks (Ed25519, Ed448, ML-DSA, X448) or wolfCrypt
//! gives its callers no way to hold (finite-field DH keys, HMAC states)
//! is a row that says why.

use anyhow::bail;

use super::wolfcrypt::{self, Aes, Curve, Digest, EccKey, MlKem, MlKemKey, Rng, RsaKey, X25519Key};
use super::DESCRIPTOR;
use crate::backend::{PreparedOperation, PrimitiveBackend, Unsupported};
use crate::scenario::speed::{
    pattern, Family, Operation, Primitive, SpeedRow, SIGNED_MESSAGE_BYTES,
};
use crate::scenario::Named;

/// wolfCrypt as a source of primitives.
pub(super) struct WolfsslPrimitives;

impl PrimitiveBackend for WolfsslPrimitives {
    fn id(&self) -> &'static str {
        DESCRIPTOR.name()
    }

    fn prepare(&self, row: &SpeedRow) -> Result<PreparedOperation, Unsupported> {
        wolfcrypt::init();
        let size = row.size_bytes.unwrap_or(0);
        match row.primitive.family() {
            Family::Cipher => cipher(row.primitive, size),
            Family::Hash => {
                let digest = digest_of(row.primitive);
                let data = pattern(size);
                let mut out = [0u8; 64];
                Ok(Box::new(move || digest.hash(&data, &mut out)))
            }
            Family::Mac => Err(Unsupported::new(
                "wolfCrypt's HMAC state (Hmac) has no allocating constructor and wolfssl-sys does \
                 not bind its type, so tlslab cannot hold one; the suites' HMAC cost is in the \
                 aes-128-cbc-sha256 bulk rows",
            )),
            Family::Signature => signature(row.primitive, row.operation),
            Family::KeyExchange => key_exchange(row.primitive, row.operation),
            Family::Kem => kem(row.primitive, row.operation),
        }
    }
}

/// The SHA-2 digest of a hash row, or the one TLS pairs with a signature key.
fn digest_of(primitive: Primitive) -> Digest {
    match primitive {
        Primitive::Sha384 | Primitive::HmacSha384 | Primitive::EcdsaP384 => Digest::Sha384,
        Primitive::Sha512 | Primitive::EcdsaP521 => Digest::Sha512,
        _ => Digest::Sha256,
    }
}

/// Encrypts (and for AEADs authenticates) one buffer with a fresh nonce;
/// CBC pads it as TLS and OpenSSL's row do (a whole block when aligned).
fn cipher(primitive: Primitive, size: usize) -> Result<PreparedOperation, Unsupported> {
    let input = pattern(size);
    let mut output = vec![0u8; size + 16];
    let mut tag = [0u8; wolfcrypt::TAG_BYTES];
    let mut nonce = [0u8; 12];
    let mut counter = 0u64;
    let mut next_nonce = move || {
        counter += 1;
        nonce[4..].copy_from_slice(&counter.to_be_bytes());
        nonce
    };
    Ok(match primitive {
        Primitive::Aes128Gcm | Primitive::Aes256Gcm => {
            let key_bytes = if primitive == Primitive::Aes128Gcm {
                16
            } else {
                32
            };
            let mut aes = Aes::gcm(&pattern(key_bytes))?;
            Box::new(move || aes.gcm_encrypt(&input, &mut output, &next_nonce(), &mut tag))
        }
        Primitive::Chacha20Poly1305 => {
            let key: [u8; 32] = pattern(32).try_into().expect("32 bytes");
            Box::new(move || {
                wolfcrypt::chacha20_poly1305_encrypt(
                    &key,
                    &next_nonce(),
                    &input,
                    &mut output,
                    &mut tag,
                )
            })
        }
        Primitive::Aes128Cbc | Primitive::Aes256Cbc => {
            let key_bytes = if primitive == Primitive::Aes128Cbc {
                16
            } else {
                32
            };
            let mut aes = Aes::cbc(&pattern(key_bytes))?;
            let padding = 16 - size % 16;
            let mut padded = input;
            padded.resize(size + padding, padding as u8 - 1);
            let mut iv = [0u8; 16];
            Box::new(move || {
                iv[4..].copy_from_slice(&next_nonce());
                aes.cbc_encrypt(&padded, &mut output, &iv)
            })
        }
        other => unreachable!("{} is not a cipher", other.id()),
    })
}

/// Signs or verifies a TLS-sized message: hash it, then the private or
/// public key operation (RSA with PSS padding, as TLS 1.3 does).
fn signature(primitive: Primitive, operation: Operation) -> Result<PreparedOperation, Unsupported> {
    let digest = digest_of(primitive);
    let message = pattern(SIGNED_MESSAGE_BYTES);
    let mut rng = Rng::new()?;
    let curve = match primitive {
        Primitive::EcdsaP256 => Curve::P256,
        Primitive::EcdsaP384 => Curve::P384,
        Primitive::EcdsaP521 => Curve::P521,
        Primitive::Rsa2048 | Primitive::Rsa3072 | Primitive::Rsa4096 => {
            let kind = primitive.cert_kind().expect("a signature primitive");
            let key = crate::certs::generate_key(kind)?;
            let der = key
                .rsa()
                .and_then(|rsa| rsa.private_key_to_der())
                .map_err(anyhow::Error::from)?;
            let mut key = RsaKey::from_pkcs1_der(&der)?;
            let signed = key.pss_sign(&digest.digest(&message)?, digest, &mut rng)?;
            return Ok(match operation {
                Operation::Sign => Box::new(move || {
                    let hashed = digest.digest(&message)?;
                    std::hint::black_box(key.pss_sign(&hashed, digest, &mut rng)?);
                    Ok(())
                }),
                _ => Box::new(move || {
                    let hashed = digest.digest(&message)?;
                    if !key.pss_verify(&signed, &hashed, digest) {
                        bail!("the signature did not verify");
                    }
                    Ok(())
                }),
            });
        }
        Primitive::Ed25519 | Primitive::Ed448 => {
            return Err(Unsupported::new(format!(
                "the wolfSSL that wolfssl-sys builds has no {} (configured without --enable-{})",
                primitive.id(),
                primitive.id()
            )))
        }
        _ => {
            return Err(Unsupported::new(format!(
                "the wolfSSL that wolfssl-sys builds has no {} (configured with \
                 --disable-dilithium)",
                primitive.id()
            )))
        }
    };
    let mut key = EccKey::generate(&mut rng, curve)?;
    let signed = key.sign_digest(&digest.digest(&message)?, &mut rng)?;
    Ok(match operation {
        Operation::Sign => Box::new(move || {
            let hashed = digest.digest(&message)?;
            std::hint::black_box(key.sign_digest(&hashed, &mut rng)?);
            Ok(())
        }),
        _ => Box::new(move || {
            let hashed = digest.digest(&message)?;
            if !key.verify_digest(&signed, &hashed)? {
                bail!("the signature did not verify");
            }
            Ok(())
        }),
    })
}

/// ECDH and X25519: an ephemeral key pair (and its share), the secret
/// from fixed keys, or one side's whole exchange (its key pair and share,
/// the peer's share imported and checked, the secret).
fn key_exchange(
    primitive: Primitive,
    operation: Operation,
) -> Result<PreparedOperation, Unsupported> {
    let mut rng = Rng::new()?;
    let curve = match primitive {
        Primitive::EcdhP256 => Curve::P256,
        Primitive::EcdhP384 => Curve::P384,
        Primitive::EcdhP521 => Curve::P521,
        Primitive::X25519 => return x25519(operation, rng),
        Primitive::X448 => {
            return Err(Unsupported::new(
                "the wolfSSL that wolfssl-sys builds has no X448 (configured without \
                 --enable-curve448)",
            ))
        }
        _ => {
            return Err(Unsupported::new(format!(
                "wolfCrypt allocates no DhKey for its caller (no constructor) and wolfssl-sys \
                 does not bind the type, so tlslab cannot hold a {} key; its cost is in the \
                 handshake rows (dhe2048, ffdhe2048)",
                primitive.id()
            )))
        }
    };
    let peer_point = EccKey::generate(&mut rng, curve)?.public_point()?;
    let mut secret = [0u8; 66];
    Ok(match operation {
        Operation::Keygen => Box::new(move || {
            let key = EccKey::generate(&mut rng, curve)?;
            std::hint::black_box(key.public_point()?);
            Ok(())
        }),
        Operation::Derive => {
            let mut own = EccKey::generate(&mut rng, curve)?;
            let mut peer = EccKey::from_public(&peer_point, curve)?;
            Box::new(move || {
                own.shared_secret(&mut peer, &mut rng, &mut secret)?;
                Ok(())
            })
        }
        Operation::ClientExchange | Operation::ServerExchange => Box::new(move || {
            let mut own = EccKey::generate(&mut rng, curve)?;
            std::hint::black_box(own.public_point()?);
            let mut peer = EccKey::from_public(&peer_point, curve)?;
            own.shared_secret(&mut peer, &mut rng, &mut secret)?;
            Ok(())
        }),
        other => return Err(no_operation(primitive, other)),
    })
}

/// X25519's operations, as [`key_exchange`]'s.
fn x25519(operation: Operation, mut rng: Rng) -> Result<PreparedOperation, Unsupported> {
    let peer_share = X25519Key::generate(&mut rng)?.share()?;
    Ok(match operation {
        Operation::Keygen => Box::new(move || {
            let key = X25519Key::generate(&mut rng)?;
            std::hint::black_box(key.share()?);
            Ok(())
        }),
        Operation::Derive => {
            let mut own = X25519Key::generate(&mut rng)?;
            let mut peer = X25519Key::from_public(&peer_share)?;
            Box::new(move || {
                std::hint::black_box(own.shared_secret(&mut peer)?);
                Ok(())
            })
        }
        Operation::ClientExchange | Operation::ServerExchange => Box::new(move || {
            let mut own = X25519Key::generate(&mut rng)?;
            std::hint::black_box(own.share()?);
            let mut peer = X25519Key::from_public(&peer_share)?;
            std::hint::black_box(own.shared_secret(&mut peer)?);
            Ok(())
        }),
        other => return Err(no_operation(Primitive::X25519, other)),
    })
}

/// ML-KEM: a key pair, the client's exchange (a key pair, then a
/// decapsulation) or the server's (the client's key decoded, an
/// encapsulation to it).
fn kem(primitive: Primitive, operation: Operation) -> Result<PreparedOperation, Unsupported> {
    let kind = match primitive {
        Primitive::MlKem512 => MlKem::MlKem512,
        Primitive::MlKem768 => MlKem::MlKem768,
        Primitive::MlKem1024 => MlKem::MlKem1024,
        _ => {
            return Err(Unsupported::new(
                "wolfCrypt has no hybrid KEM: wolfSSL's TLS layer runs X25519 and ML-KEM-768 \
                 side by side (see their rows)",
            ))
        }
    };
    let mut rng = Rng::new()?;
    Ok(match operation {
        Operation::Keygen => Box::new(move || {
            let key = MlKemKey::generate(kind, &mut rng)?;
            std::hint::black_box(key.public_key()?);
            Ok(())
        }),
        Operation::ServerExchange => {
            let public = MlKemKey::generate(kind, &mut rng)?.public_key()?;
            Box::new(move || {
                let mut peer = MlKemKey::from_public(kind, &public)?;
                std::hint::black_box(peer.encapsulate(&mut rng)?);
                Ok(())
            })
        }
        Operation::ClientExchange => {
            // Ciphertexts made for keys generated beforehand, and one fresh
            // key pair per exchange: the cost is a key pair + a decapsulation.
            let mut pairs = Vec::new();
            for _ in 0..16 {
                let mut key = MlKemKey::generate(kind, &mut rng)?;
                let (ciphertext, _) = key.encapsulate(&mut rng)?;
                pairs.push((key, ciphertext));
            }
            let mut next = 0;
            Box::new(move || {
                let key = MlKemKey::generate(kind, &mut rng)?;
                std::hint::black_box(key.public_key()?);
                let (key, ciphertext) = &mut pairs[next % 16];
                next += 1;
                std::hint::black_box(key.decapsulate(ciphertext)?);
                Ok(())
            })
        }
        other => return Err(no_operation(primitive, other)),
    })
}

fn no_operation(primitive: Primitive, operation: Operation) -> Unsupported {
    Unsupported::new(format!(
        "{} has no {} operation",
        primitive.id(),
        operation.id()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(primitive: Primitive, operation: Operation, size_bytes: Option<usize>) {
        let row = SpeedRow {
            primitive,
            operation,
            size_bytes,
        };
        let mut operation = WolfsslPrimitives
            .prepare(&row)
            .unwrap_or_else(|e| panic!("{}: {e}", row.label()));
        operation().unwrap_or_else(|e| panic!("{}: {e}", row.label()));
        operation().unwrap_or_else(|e| panic!("{}: {e}", row.label()));
    }

    #[test]
    fn wolfssl_primitives_run_and_say_why_not() {
        for primitive in [
            Primitive::Aes128Gcm,
            Primitive::Aes256Gcm,
            Primitive::Chacha20Poly1305,
            Primitive::Aes128Cbc,
            Primitive::Aes256Cbc,
        ] {
            run(primitive, Operation::Encrypt, Some(1000));
        }
        for primitive in [Primitive::Sha256, Primitive::Sha384, Primitive::Sha512] {
            run(primitive, Operation::Hash, Some(64));
        }
        for primitive in [
            Primitive::Rsa2048,
            Primitive::EcdsaP256,
            Primitive::EcdsaP521,
        ] {
            run(primitive, Operation::Sign, None);
            run(primitive, Operation::Verify, None);
        }
        for primitive in [Primitive::EcdhP256, Primitive::X25519] {
            for &operation in primitive.operations() {
                run(primitive, operation, None);
            }
        }
        for &operation in Primitive::MlKem768.operations() {
            run(Primitive::MlKem768, operation, None);
        }
        for primitive in [Primitive::Ed25519, Primitive::X448, Primitive::Ffdhe2048] {
            let row = SpeedRow {
                primitive,
                operation: primitive.operations()[0],
                size_bytes: None,
            };
            let reason = WolfsslPrimitives.prepare(&row).err().expect("unsupported");
            assert!(reason.0.contains("wolf"), "{reason}");
        }
    }

    #[test]
    fn wolfssl_secrets_agree_and_forged_signatures_fail() {
        wolfcrypt::init();
        let mut rng = Rng::new().unwrap();
        let mut a = EccKey::generate(&mut rng, Curve::P256).unwrap();
        let mut b = EccKey::generate(&mut rng, Curve::P256).unwrap();
        let mut b_public = EccKey::from_public(&b.public_point().unwrap(), Curve::P256).unwrap();
        let mut a_public = EccKey::from_public(&a.public_point().unwrap(), Curve::P256).unwrap();
        let (mut s1, mut s2) = ([0u8; 66], [0u8; 66]);
        let n1 = a.shared_secret(&mut b_public, &mut rng, &mut s1).unwrap();
        let n2 = b.shared_secret(&mut a_public, &mut rng, &mut s2).unwrap();
        assert_eq!((n1, &s1[..n1]), (n2, &s2[..n2]));

        let mut x = X25519Key::generate(&mut rng).unwrap();
        let mut y = X25519Key::generate(&mut rng).unwrap();
        let mut y_public = X25519Key::from_public(&y.share().unwrap()).unwrap();
        let mut x_public = X25519Key::from_public(&x.share().unwrap()).unwrap();
        assert_eq!(
            x.shared_secret(&mut y_public).unwrap(),
            y.shared_secret(&mut x_public).unwrap()
        );

        let mut kem = MlKemKey::generate(MlKem::MlKem768, &mut rng).unwrap();
        let mut peer = MlKemKey::from_public(MlKem::MlKem768, &kem.public_key().unwrap()).unwrap();
        let (ciphertext, secret) = peer.encapsulate(&mut rng).unwrap();
        assert_eq!(kem.decapsulate(&ciphertext).unwrap(), secret);

        let digest = Digest::Sha256.digest(b"message").unwrap();
        let forged = Digest::Sha256.digest(b"massage").unwrap();
        let signature = a.sign_digest(&digest, &mut rng).unwrap();
        assert!(a.verify_digest(&signature, &digest).unwrap());
        assert!(!a.verify_digest(&signature, &forged).unwrap());
        let key = crate::certs::generate_key(crate::scenario::CertKind::Rsa2048).unwrap();
        let mut rsa =
            RsaKey::from_pkcs1_der(&key.rsa().unwrap().private_key_to_der().unwrap()).unwrap();
        let signature = rsa.pss_sign(&digest, Digest::Sha256, &mut rng).unwrap();
        assert!(rsa.pss_verify(&signature, &digest, Digest::Sha256));
        assert!(!rsa.pss_verify(&signature, &forged, Digest::Sha256));
        // wolfCrypt's SHA-256 is SHA-256.
        assert_eq!(
            Digest::Sha256.digest(b"abc").unwrap()[..4],
            [0xba, 0x78, 0x16, 0xbf]
        );
    }
}
