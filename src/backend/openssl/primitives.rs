//! OpenSSL's primitives through its EVP interface (as `openssl speed -evp`
//! and the TLS stack call them).

use std::ffi::{c_char, CString};
use std::ptr;

use anyhow::{anyhow, bail, Result};
use foreign_types::ForeignType;
use openssl::cipher::{Cipher, CipherRef};
use openssl::cipher_ctx::CipherCtx;
use openssl::hash::{hash, MessageDigest};
use openssl::md::{Md, MdRef};
use openssl::pkey::{Id, PKey, Private};
use openssl::pkey_ctx::PkeyCtx;
use openssl::rsa::Padding;
use openssl::sign::{Signer, Verifier};

use crate::backend::{PreparedOperation, PrimitiveBackend, Unsupported};
use crate::certs;
use crate::scenario::speed::{
    pattern, Family, Operation, Primitive, SpeedRow, SIGNED_MESSAGE_BYTES,
};
use crate::scenario::Named;

extern "C" {
    fn OSSL_PARAM_construct_utf8_string(
        key: *const c_char,
        buf: *mut c_char,
        bsize: usize,
    ) -> openssl_sys::OSSL_PARAM;
}

/// OpenSSL as a source of primitives.
pub struct OpensslPrimitives;

impl PrimitiveBackend for OpensslPrimitives {
    fn id(&self) -> &'static str {
        "openssl"
    }

    fn prepare(&self, row: &SpeedRow) -> Result<PreparedOperation, Unsupported> {
        let size = row.size_bytes.unwrap_or(0);
        Ok(match row.primitive.family() {
            Family::Signature => signature(row.primitive, row.operation)?,
            Family::KeyExchange | Family::Kem => key_exchange(row.primitive, row.operation)?,
            Family::Cipher => cipher(row.primitive, size)?,
            Family::Hash => {
                let md = digest(row.primitive);
                let data = pattern(size);
                Box::new(move || {
                    std::hint::black_box(hash(md, &data)?);
                    Ok(())
                })
            }
            Family::Mac => mac(row.primitive, size)?,
        })
    }
}

/// The digest TLS pairs with a signature key (none for EdDSA and ML-DSA).
fn signature_digest(primitive: Primitive) -> Option<&'static MdRef> {
    match primitive {
        Primitive::Rsa2048 | Primitive::Rsa3072 | Primitive::Rsa4096 | Primitive::EcdsaP256 => {
            Some(Md::sha256())
        }
        Primitive::EcdsaP384 => Some(Md::sha384()),
        Primitive::EcdsaP521 => Some(Md::sha512()),
        _ => None,
    }
}

fn message_digest(md: &MdRef) -> MessageDigest {
    MessageDigest::from_nid(md.type_()).expect("known digest")
}

/// Sign or verify a TLS-sized message: hash it, then the private or public
/// key operation (RSA with PSS padding, as TLS 1.3 does).
fn signature(primitive: Primitive, operation: Operation) -> Result<PreparedOperation, Unsupported> {
    let kind = primitive.cert_kind().expect("signature primitive");
    if !certs::openssl_supports_key(kind) {
        return Err(Unsupported::new(format!(
            "this OpenSSL has no {} keys",
            primitive.id()
        )));
    }
    let key = certs::generate_key(kind)?;
    let message = pattern(SIGNED_MESSAGE_BYTES);
    let is_rsa = key.id() == Id::RSA;
    match signature_digest(primitive) {
        Some(md) => {
            let mut sign_ctx = PkeyCtx::new(&key).map_err(anyhow::Error::from)?;
            sign_ctx.sign_init().map_err(anyhow::Error::from)?;
            sign_ctx.set_signature_md(md).map_err(anyhow::Error::from)?;
            if is_rsa {
                sign_ctx
                    .set_rsa_padding(Padding::PKCS1_PSS)
                    .map_err(anyhow::Error::from)?;
                sign_ctx
                    .set_rsa_pss_saltlen(openssl::sign::RsaPssSaltlen::DIGEST_LENGTH)
                    .map_err(anyhow::Error::from)?;
            }
            let digest = message_digest(md);
            let mut signature = vec![0u8; key.size()];
            let hashed = hash(digest, &message).map_err(anyhow::Error::from)?;
            let length = sign_ctx
                .sign(&hashed, Some(&mut signature))
                .map_err(anyhow::Error::from)?;
            signature.truncate(length);
            match operation {
                Operation::Sign => {
                    let mut out = vec![0u8; key.size()];
                    Ok(Box::new(move || {
                        let hashed = hash(digest, &message)?;
                        sign_ctx.sign(&hashed, Some(&mut out))?;
                        Ok(())
                    }))
                }
                _ => {
                    let mut verify_ctx = PkeyCtx::new(&key).map_err(anyhow::Error::from)?;
                    verify_ctx.verify_init().map_err(anyhow::Error::from)?;
                    verify_ctx
                        .set_signature_md(md)
                        .map_err(anyhow::Error::from)?;
                    if is_rsa {
                        verify_ctx
                            .set_rsa_padding(Padding::PKCS1_PSS)
                            .map_err(anyhow::Error::from)?;
                        verify_ctx
                            .set_rsa_pss_saltlen(openssl::sign::RsaPssSaltlen::DIGEST_LENGTH)
                            .map_err(anyhow::Error::from)?;
                    }
                    Ok(Box::new(move || {
                        let hashed = hash(digest, &message)?;
                        if !verify_ctx.verify(&hashed, &signature)? {
                            bail!("the signature did not verify");
                        }
                        Ok(())
                    }))
                }
            }
        }
        None => {
            // EdDSA and ML-DSA sign the message itself, in one shot.
            let mut signer = Signer::new_without_digest(&key).map_err(anyhow::Error::from)?;
            let signature = signer
                .sign_oneshot_to_vec(&message)
                .map_err(anyhow::Error::from)?;
            match operation {
                Operation::Sign => Ok(Box::new(move || {
                    let mut signer = Signer::new_without_digest(&key)?;
                    std::hint::black_box(signer.sign_oneshot_to_vec(&message)?);
                    Ok(())
                })),
                _ => Ok(Box::new(move || {
                    let mut verifier = Verifier::new_without_digest(&key)?;
                    if !verifier.verify_oneshot(&signature, &message)? {
                        bail!("the signature did not verify");
                    }
                    Ok(())
                })),
            }
        }
    }
}

/// A reusable key generation context for an algorithm, optionally with a group.
struct Keygen {
    ctx: *mut openssl_sys::EVP_PKEY_CTX,
}

impl Keygen {
    fn new(algorithm: &str, group: Option<&str>) -> Result<Self> {
        let algorithm_name = CString::new(algorithm)?;
        // SAFETY: pointers are checked; the context is owned by `Keygen` and
        // freed in Drop; the parameter array lives across the call that reads it.
        unsafe {
            let ctx = openssl_sys::EVP_PKEY_CTX_new_from_name(
                ptr::null_mut(),
                algorithm_name.as_ptr(),
                ptr::null(),
            );
            if ctx.is_null() {
                bail!("this OpenSSL has no {algorithm} keys");
            }
            let keygen = Keygen { ctx };
            if openssl_sys::EVP_PKEY_keygen_init(ctx) <= 0 {
                bail!(
                    "{algorithm} key generation: {}",
                    openssl::error::ErrorStack::get()
                );
            }
            if let Some(group) = group {
                let key = CString::new("group")?;
                let value = CString::new(group)?;
                let params = [
                    OSSL_PARAM_construct_utf8_string(
                        key.as_ptr(),
                        value.as_ptr() as *mut c_char,
                        0,
                    ),
                    openssl_sys::OSSL_PARAM_construct_end(),
                ];
                if openssl_sys::EVP_PKEY_CTX_set_params(ctx, params.as_ptr()) <= 0 {
                    bail!(
                        "{algorithm} group {group}: {}",
                        openssl::error::ErrorStack::get()
                    );
                }
            }
            Ok(keygen)
        }
    }

    fn generate(&mut self) -> Result<PKey<Private>> {
        let mut key: *mut openssl_sys::EVP_PKEY = ptr::null_mut();
        // SAFETY: the context is valid; ownership of the new key passes to PKey.
        unsafe {
            if openssl_sys::EVP_PKEY_generate(self.ctx, &mut key) <= 0 || key.is_null() {
                return Err(anyhow!(
                    "key generation failed: {}",
                    openssl::error::ErrorStack::get()
                ));
            }
            Ok(PKey::from_ptr(key))
        }
    }
}

impl Drop for Keygen {
    fn drop(&mut self) {
        // SAFETY: the context was created by EVP_PKEY_CTX_new_from_name.
        unsafe { openssl_sys::EVP_PKEY_CTX_free(self.ctx) }
    }
}

/// The algorithm name and group parameter OpenSSL generates a primitive's keys with.
fn keygen_spec(primitive: Primitive) -> (&'static str, Option<&'static str>) {
    match primitive {
        Primitive::EcdhP256 => ("EC", Some("P-256")),
        Primitive::EcdhP384 => ("EC", Some("P-384")),
        Primitive::EcdhP521 => ("EC", Some("P-521")),
        Primitive::X25519 => ("X25519", None),
        Primitive::X448 => ("X448", None),
        Primitive::Ffdhe2048 => ("DH", Some("ffdhe2048")),
        Primitive::Ffdhe3072 => ("DH", Some("ffdhe3072")),
        Primitive::Ffdhe4096 => ("DH", Some("ffdhe4096")),
        Primitive::Ffdhe6144 => ("DH", Some("ffdhe6144")),
        Primitive::Ffdhe8192 => ("DH", Some("ffdhe8192")),
        Primitive::MlKem512 => ("ML-KEM-512", None),
        Primitive::MlKem768 => ("ML-KEM-768", None),
        Primitive::MlKem1024 => ("ML-KEM-1024", None),
        Primitive::X25519MlKem768 => ("X25519MLKEM768", None),
        _ => unreachable!("not a key exchange primitive"),
    }
}

/// Derives the shared secret of `own` with `peer`, validating `peer` first.
fn derive(own: &PKey<Private>, peer: &PKey<Private>, out: &mut [u8]) -> Result<usize> {
    let mut ctx = PkeyCtx::new(own)?;
    ctx.derive_init()?;
    ctx.derive_set_peer(peer)?;
    Ok(ctx.derive(Some(out))?)
}

/// KEM encapsulation to `peer`: (ciphertext, secret length).
fn encapsulate(peer: &PKey<Private>) -> Result<Vec<u8>> {
    // SAFETY: the context comes from PkeyCtx (freed on drop); buffers are
    // sized by the first, length-only call.
    unsafe {
        let ctx = PkeyCtx::new(peer)?;
        if openssl_sys::EVP_PKEY_encapsulate_init(ctx.as_ptr(), ptr::null()) <= 0 {
            bail!("encapsulate init: {}", openssl::error::ErrorStack::get());
        }
        let (mut ct_len, mut secret_len) = (0usize, 0usize);
        if openssl_sys::EVP_PKEY_encapsulate(
            ctx.as_ptr(),
            ptr::null_mut(),
            &mut ct_len,
            ptr::null_mut(),
            &mut secret_len,
        ) <= 0
        {
            bail!("encapsulate: {}", openssl::error::ErrorStack::get());
        }
        let mut ciphertext = vec![0u8; ct_len];
        let mut secret = vec![0u8; secret_len];
        if openssl_sys::EVP_PKEY_encapsulate(
            ctx.as_ptr(),
            ciphertext.as_mut_ptr(),
            &mut ct_len,
            secret.as_mut_ptr(),
            &mut secret_len,
        ) <= 0
        {
            bail!("encapsulate: {}", openssl::error::ErrorStack::get());
        }
        ciphertext.truncate(ct_len);
        Ok(ciphertext)
    }
}

/// KEM decapsulation: the shared secret for a ciphertext.
fn decapsulate(own: &PKey<Private>, ciphertext: &[u8]) -> Result<Vec<u8>> {
    // SAFETY: as in `encapsulate`.
    unsafe {
        let ctx = PkeyCtx::new(own)?;
        if openssl_sys::EVP_PKEY_decapsulate_init(ctx.as_ptr(), ptr::null()) <= 0 {
            bail!("decapsulate init: {}", openssl::error::ErrorStack::get());
        }
        let mut secret_len = 0usize;
        if openssl_sys::EVP_PKEY_decapsulate(
            ctx.as_ptr(),
            ptr::null_mut(),
            &mut secret_len,
            ciphertext.as_ptr(),
            ciphertext.len(),
        ) <= 0
        {
            bail!("decapsulate: {}", openssl::error::ErrorStack::get());
        }
        let mut secret = vec![0u8; secret_len];
        if openssl_sys::EVP_PKEY_decapsulate(
            ctx.as_ptr(),
            secret.as_mut_ptr(),
            &mut secret_len,
            ciphertext.as_ptr(),
            ciphertext.len(),
        ) <= 0
        {
            bail!("decapsulate: {}", openssl::error::ErrorStack::get());
        }
        secret.truncate(secret_len);
        Ok(secret)
    }
}

fn key_exchange(
    primitive: Primitive,
    operation: Operation,
) -> Result<PreparedOperation, Unsupported> {
    let (algorithm, group) = keygen_spec(primitive);
    let mut keygen = Keygen::new(algorithm, group)?;
    let peer = keygen.generate()?;
    let mut secret = vec![0u8; 1024];
    let is_kem = primitive.family() == Family::Kem;
    Ok(match (operation, is_kem) {
        (Operation::Keygen, _) => Box::new(move || {
            std::hint::black_box(keygen.generate()?);
            Ok(())
        }),
        (Operation::Derive, false) => {
            let own = keygen.generate()?;
            let mut ctx = PkeyCtx::new(&own).map_err(anyhow::Error::from)?;
            ctx.derive_init().map_err(anyhow::Error::from)?;
            ctx.derive_set_peer(&peer).map_err(anyhow::Error::from)?;
            Box::new(move || {
                ctx.derive(Some(&mut secret))?;
                Ok(())
            })
        }
        (Operation::ClientExchange | Operation::ServerExchange, false) => Box::new(move || {
            let own = keygen.generate()?;
            derive(&own, &peer, &mut secret)?;
            Ok(())
        }),
        (Operation::ServerExchange, true) => Box::new(move || {
            std::hint::black_box(encapsulate(&peer)?);
            Ok(())
        }),
        (Operation::ClientExchange, true) => {
            // Decapsulate ciphertexts made for keys generated beforehand, and
            // generate one fresh key per exchange, so the cost is keygen + decapsulation.
            let pairs: Vec<(PKey<Private>, Vec<u8>)> = (0..16)
                .map(|_| {
                    let key = keygen.generate()?;
                    let ciphertext = encapsulate(&key)?;
                    Ok((key, ciphertext))
                })
                .collect::<Result<_>>()?;
            let mut next = 0;
            Box::new(move || {
                std::hint::black_box(keygen.generate()?);
                let (key, ciphertext) = &pairs[next % pairs.len()];
                next += 1;
                std::hint::black_box(decapsulate(key, ciphertext)?);
                Ok(())
            })
        }
        (operation, _) => {
            return Err(Unsupported::new(format!(
                "{} has no {} operation",
                primitive.id(),
                operation.id()
            )))
        }
    })
}

fn cipher_of(primitive: Primitive) -> &'static CipherRef {
    match primitive {
        Primitive::Aes128Gcm => Cipher::aes_128_gcm(),
        Primitive::Aes256Gcm => Cipher::aes_256_gcm(),
        Primitive::Chacha20Poly1305 => Cipher::chacha20_poly1305(),
        Primitive::Aes128Cbc => Cipher::aes_128_cbc(),
        _ => Cipher::aes_256_cbc(),
    }
}

/// Encrypts (and for AEADs authenticates) one buffer with a fresh nonce.
fn cipher(primitive: Primitive, size: usize) -> Result<PreparedOperation, Unsupported> {
    let cipher = cipher_of(primitive);
    let key = pattern(cipher.key_length());
    let aead = !matches!(primitive, Primitive::Aes128Cbc | Primitive::Aes256Cbc);
    let mut ctx = CipherCtx::new().map_err(anyhow::Error::from)?;
    ctx.encrypt_init(Some(cipher), Some(&key), None)
        .map_err(anyhow::Error::from)?;
    let input = pattern(size);
    let mut output = vec![0u8; size + cipher.block_size() * 2];
    let mut nonce = vec![0u8; cipher.iv_length()];
    let mut tag = [0u8; 16];
    let mut counter = 0u64;
    Ok(Box::new(move || {
        counter += 1;
        let tail = nonce.len() - 8;
        nonce[tail..].copy_from_slice(&counter.to_be_bytes());
        ctx.encrypt_init(None, None, Some(&nonce))?;
        let written = ctx.cipher_update(&input, Some(&mut output))?;
        ctx.cipher_final(&mut output[written..])?;
        if aead {
            ctx.tag(&mut tag)?;
        }
        Ok(())
    }))
}

fn digest(primitive: Primitive) -> MessageDigest {
    match primitive {
        Primitive::Sha256 | Primitive::HmacSha256 => MessageDigest::sha256(),
        Primitive::Sha384 | Primitive::HmacSha384 => MessageDigest::sha384(),
        _ => MessageDigest::sha512(),
    }
}

/// An HMAC context keyed once and re-initialised for every message, as a
/// TLS stack keeps its keyed contexts (and as `openssl speed -hmac` does).
struct KeyedHmac(*mut openssl_sys::HMAC_CTX);

impl KeyedHmac {
    fn new(md: MessageDigest, key: &[u8]) -> Result<Self> {
        // SAFETY: a fresh context, keyed with a buffer that outlives the call.
        unsafe {
            let ctx = openssl_sys::HMAC_CTX_new();
            if ctx.is_null() {
                bail!("HMAC_CTX_new failed");
            }
            let hmac = Self(ctx);
            if openssl_sys::HMAC_Init_ex(
                ctx,
                key.as_ptr().cast(),
                key.len() as _,
                md.as_ptr(),
                ptr::null_mut(),
            ) != 1
            {
                bail!("HMAC_Init_ex failed");
            }
            Ok(hmac)
        }
    }

    /// One MAC over `data` with the key set at creation.
    fn mac(&mut self, data: &[u8], out: &mut [u8; 64]) -> Result<()> {
        let mut length: std::ffi::c_uint = 0;
        // SAFETY: a null key and digest keep the context's key (OpenSSL's
        // documented re-initialisation); `out` holds any digest's output.
        unsafe {
            if openssl_sys::HMAC_Init_ex(self.0, ptr::null(), 0, ptr::null(), ptr::null_mut()) != 1
                || openssl_sys::HMAC_Update(self.0, data.as_ptr(), data.len()) != 1
                || openssl_sys::HMAC_Final(self.0, out.as_mut_ptr(), &mut length) != 1
            {
                bail!("HMAC failed");
            }
        }
        Ok(())
    }
}

impl Drop for KeyedHmac {
    fn drop(&mut self) {
        // SAFETY: the context was made by HMAC_CTX_new and is freed once.
        unsafe { openssl_sys::HMAC_CTX_free(self.0) }
    }
}

fn mac(primitive: Primitive, size: usize) -> Result<PreparedOperation, Unsupported> {
    let md = digest(primitive);
    let mut hmac = KeyedHmac::new(md, &pattern(md.size()))?;
    let data = pattern(size);
    let mut out = [0u8; 64];
    Ok(Box::new(move || {
        hmac.mac(&data, &mut out)?;
        std::hint::black_box(&out);
        Ok(())
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecdh_secrets_match_on_both_sides() {
        let mut keygen = Keygen::new("X25519", None).unwrap();
        let (a, b) = (keygen.generate().unwrap(), keygen.generate().unwrap());
        let (mut s1, mut s2) = ([0u8; 64], [0u8; 64]);
        let n1 = derive(&a, &b, &mut s1).unwrap();
        let n2 = derive(&b, &a, &mut s2).unwrap();
        assert_eq!(&s1[..n1], &s2[..n2]);
        assert_ne!(&s1[..n1], &[0u8; 32][..]);
    }

    #[test]
    fn ffdhe_keys_use_the_named_group() {
        let mut keygen = Keygen::new("DH", Some("ffdhe3072")).unwrap();
        assert_eq!(keygen.generate().unwrap().bits(), 3072);
    }

    #[test]
    fn kem_decapsulates_to_the_encapsulated_secret() {
        let mut keygen = Keygen::new("ML-KEM-768", None).unwrap();
        let key = keygen.generate().unwrap();
        // SAFETY-free path: encapsulate again, keeping the secret this time.
        let ctx = PkeyCtx::new(&key).unwrap();
        let (mut ct, mut secret) = (vec![0u8; 1088], vec![0u8; 32]);
        let (mut ct_len, mut secret_len) = (ct.len(), secret.len());
        unsafe {
            assert!(openssl_sys::EVP_PKEY_encapsulate_init(ctx.as_ptr(), ptr::null()) > 0);
            assert!(
                openssl_sys::EVP_PKEY_encapsulate(
                    ctx.as_ptr(),
                    ct.as_mut_ptr(),
                    &mut ct_len,
                    secret.as_mut_ptr(),
                    &mut secret_len
                ) > 0
            );
        }
        ct.truncate(ct_len);
        secret.truncate(secret_len);
        assert_eq!(decapsulate(&key, &ct).unwrap(), secret);
        let other = keygen.generate().unwrap();
        assert_ne!(
            decapsulate(&other, &ct).unwrap(),
            secret,
            "implicit rejection"
        );
    }

    #[test]
    fn signatures_verify_and_tampering_is_caught() {
        for primitive in [
            Primitive::Rsa2048,
            Primitive::EcdsaP256,
            Primitive::Ed25519,
            Primitive::MlDsa44,
        ] {
            let mut verify = signature(primitive, Operation::Verify).unwrap();
            verify().unwrap_or_else(|e| panic!("{}: {e}", primitive.id()));
            let mut sign = signature(primitive, Operation::Sign).unwrap();
            sign().unwrap();
        }
        let key = certs::generate_key(crate::scenario::CertKind::EcdsaP256).unwrap();
        let mut signer = Signer::new(MessageDigest::sha256(), &key).unwrap();
        let signature = signer.sign_oneshot_to_vec(b"message").unwrap();
        let mut verifier = Verifier::new(MessageDigest::sha256(), &key).unwrap();
        assert!(!verifier.verify_oneshot(&signature, b"massage").unwrap());
    }
}
