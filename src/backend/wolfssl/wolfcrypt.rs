//! wolfCrypt's primitives as owned Rust values, for `speed`: its random
//! generator, AES (GCM and CBC), ChaCha20-Poly1305, SHA-2, ECC (ECDSA and
//! ECDH), RSA-PSS, X25519 and ML-KEM, each made by wolfCrypt's allocating
//! constructor and freed on drop. Every unsafe call into wolfCrypt is in
//! this file (the TLS layer's are in `connection.rs`). wolfssl-sys binds
//! only part of wolfCrypt (its bindgen reads the AES, ChaCha20-Poly1305,
//! random and hash headers), so the ECC, RSA, Curve25519 and ML-KEM calls
//! are declared here by hand from the headers of the wolfSSL 5.9.4 it
//! bundles; their keys are opaque (never sized on the Rust side).

use std::ffi::{c_int, c_void};
use std::ptr;

use anyhow::{bail, Result};
use wolfssl_sys as sys;

/// An ML-KEM key, opaque: only wolfCrypt allocates and reads it.
#[repr(C)]
struct MlKemKeyOpaque {
    _private: [u8; 0],
}

extern "C" {
    fn wc_ecc_key_new(heap: *mut c_void) -> *mut sys::ecc_key;
    fn wc_ecc_key_free(key: *mut sys::ecc_key);
    fn wc_ecc_make_key_ex(
        rng: *mut sys::WC_RNG,
        key_bytes: c_int,
        key: *mut sys::ecc_key,
        curve_id: c_int,
    ) -> c_int;
    fn wc_ecc_set_rng(key: *mut sys::ecc_key, rng: *mut sys::WC_RNG) -> c_int;
    fn wc_ecc_sign_hash(
        hash: *const u8,
        hash_len: u32,
        signature: *mut u8,
        signature_len: *mut u32,
        rng: *mut sys::WC_RNG,
        key: *mut sys::ecc_key,
    ) -> c_int;
    fn wc_ecc_verify_hash(
        signature: *const u8,
        signature_len: u32,
        hash: *const u8,
        hash_len: u32,
        verified: *mut c_int,
        key: *mut sys::ecc_key,
    ) -> c_int;
    fn wc_ecc_shared_secret(
        private_key: *mut sys::ecc_key,
        public_key: *mut sys::ecc_key,
        out: *mut u8,
        out_len: *mut u32,
    ) -> c_int;
    fn wc_ecc_export_x963(key: *mut sys::ecc_key, out: *mut u8, out_len: *mut u32) -> c_int;
    fn wc_ecc_import_x963_ex(
        input: *const u8,
        input_len: u32,
        key: *mut sys::ecc_key,
        curve_id: c_int,
    ) -> c_int;

    fn wc_NewRsaKey(heap: *mut c_void, device: c_int, result: *mut c_int) -> *mut sys::RsaKey;
    fn wc_DeleteRsaKey(key: *mut sys::RsaKey, key_pointer: *mut *mut sys::RsaKey) -> c_int;
    fn wc_RsaPrivateKeyDecode(
        input: *const u8,
        index: *mut u32,
        key: *mut sys::RsaKey,
        input_len: u32,
    ) -> c_int;
    fn wc_RsaSetRNG(key: *mut sys::RsaKey, rng: *mut sys::WC_RNG) -> c_int;
    fn wc_RsaEncryptSize(key: *const sys::RsaKey) -> c_int;
    fn wc_RsaPSS_Sign(
        digest: *const u8,
        digest_len: u32,
        out: *mut u8,
        out_len: u32,
        hash: sys::wc_HashType,
        mgf: c_int,
        key: *mut sys::RsaKey,
        rng: *mut sys::WC_RNG,
    ) -> c_int;
    fn wc_RsaPSS_VerifyCheck(
        signature: *const u8,
        signature_len: u32,
        out: *mut u8,
        out_len: u32,
        digest: *const u8,
        digest_len: u32,
        hash: sys::wc_HashType,
        mgf: c_int,
        key: *mut sys::RsaKey,
    ) -> c_int;

    fn wc_curve25519_new(
        heap: *mut c_void,
        device: c_int,
        result: *mut c_int,
    ) -> *mut sys::curve25519_key;
    fn wc_curve25519_delete(
        key: *mut sys::curve25519_key,
        key_pointer: *mut *mut sys::curve25519_key,
    ) -> c_int;
    fn wc_curve25519_make_key(
        rng: *mut sys::WC_RNG,
        key_bytes: c_int,
        key: *mut sys::curve25519_key,
    ) -> c_int;
    fn wc_curve25519_shared_secret(
        private_key: *mut sys::curve25519_key,
        public_key: *mut sys::curve25519_key,
        out: *mut u8,
        out_len: *mut u32,
    ) -> c_int;
    fn wc_curve25519_export_public_ex(
        key: *mut sys::curve25519_key,
        out: *mut u8,
        out_len: *mut u32,
        endian: c_int,
    ) -> c_int;
    fn wc_curve25519_import_public_ex(
        input: *const u8,
        input_len: u32,
        key: *mut sys::curve25519_key,
        endian: c_int,
    ) -> c_int;
    fn wc_curve25519_check_public(public: *const u8, public_len: u32, endian: c_int) -> c_int;

    fn wc_MlKemKey_New(kind: c_int, heap: *mut c_void, device: c_int) -> *mut MlKemKeyOpaque;
    fn wc_MlKemKey_Delete(key: *mut MlKemKeyOpaque, key_pointer: *mut *mut MlKemKeyOpaque)
        -> c_int;
    fn wc_MlKemKey_MakeKey(key: *mut MlKemKeyOpaque, rng: *mut sys::WC_RNG) -> c_int;
    fn wc_MlKemKey_CipherTextSize(key: *mut MlKemKeyOpaque, len: *mut u32) -> c_int;
    fn wc_MlKemKey_SharedSecretSize(key: *mut MlKemKeyOpaque, len: *mut u32) -> c_int;
    fn wc_MlKemKey_PublicKeySize(key: *mut MlKemKeyOpaque, len: *mut u32) -> c_int;
    fn wc_MlKemKey_EncodePublicKey(key: *mut MlKemKeyOpaque, out: *mut u8, len: u32) -> c_int;
    fn wc_MlKemKey_DecodePublicKey(key: *mut MlKemKeyOpaque, input: *const u8, len: u32) -> c_int;
    fn wc_MlKemKey_Encapsulate(
        key: *mut MlKemKeyOpaque,
        ciphertext: *mut u8,
        secret: *mut u8,
        rng: *mut sys::WC_RNG,
    ) -> c_int;
    fn wc_MlKemKey_Decapsulate(
        key: *mut MlKemKeyOpaque,
        secret: *mut u8,
        ciphertext: *const u8,
        ciphertext_len: u32,
    ) -> c_int;
}

/// `INVALID_DEVID`: no crypto device, wolfCrypt's software code.
const NO_DEVICE: c_int = sys::INVALID_DEVID;
/// `EC25519_LITTLE_ENDIAN`, the byte order TLS sends X25519 shares in.
const LITTLE_ENDIAN: c_int = 0;
/// The AEAD tag length of every suite.
pub(super) const TAG_BYTES: usize = 16;

/// Fails with `what` and wolfCrypt's code unless it answered 0.
fn check(answer: c_int, what: &str) -> Result<()> {
    if answer != 0 {
        bail!("wolfCrypt refused {what} (error {answer})");
    }
    Ok(())
}

/// Initialises wolfCrypt once per process.
pub(super) fn init() {
    static INIT: std::sync::Once = std::sync::Once::new();
    // SAFETY: wolfCrypt_Init has no preconditions and is called once.
    INIT.call_once(|| unsafe {
        sys::wolfCrypt_Init();
    });
}

/// wolfCrypt's random generator (its SHA-256 DRBG).
pub(super) struct Rng(*mut sys::WC_RNG);

impl Rng {
    pub(super) fn new() -> Result<Self> {
        init();
        // SAFETY: no nonce, default heap; null is checked.
        let rng = unsafe { sys::wc_rng_new(ptr::null_mut(), 0, ptr::null_mut()) };
        if rng.is_null() {
            bail!("wolfCrypt could not start its random generator");
        }
        Ok(Self(rng))
    }
}

impl Drop for Rng {
    fn drop(&mut self) {
        // SAFETY: made by wc_rng_new, freed once.
        unsafe { sys::wc_rng_free(self.0) }
    }
}

/// An AES key schedule (wolfCrypt's `Aes`, allocated by wolfCrypt: with
/// its bit-sliced tables it is about 120 KB).
pub(super) struct Aes(*mut sys::Aes);

impl Aes {
    fn new() -> Result<Self> {
        let mut result: c_int = 0;
        // SAFETY: default heap, no device; null is checked.
        let aes = unsafe { sys::wc_AesNew(ptr::null_mut(), NO_DEVICE, &mut result) };
        if aes.is_null() {
            bail!("wolfCrypt could not allocate an AES key (error {result})");
        }
        Ok(Self(aes))
    }

    /// An AES-GCM key.
    pub(super) fn gcm(key: &[u8]) -> Result<Self> {
        let aes = Self::new()?;
        // SAFETY: a live Aes; the key is `key.len()` bytes.
        check(
            unsafe { sys::wc_AesGcmSetKey(aes.0, key.as_ptr(), key.len() as u32) },
            "the AES-GCM key",
        )?;
        Ok(aes)
    }

    /// An AES-CBC encryption key.
    pub(super) fn cbc(key: &[u8]) -> Result<Self> {
        let aes = Self::new()?;
        let iv = [0u8; 16];
        // SAFETY: a live Aes; the key is `key.len()` bytes, the IV 16.
        check(
            unsafe {
                sys::wc_AesSetKey(
                    aes.0,
                    key.as_ptr(),
                    key.len() as u32,
                    iv.as_ptr(),
                    sys::AES_ENCRYPTION as c_int,
                )
            },
            "the AES-CBC key",
        )?;
        Ok(aes)
    }

    /// Encrypts `input` into `output` (as long) under a 12-byte nonce and
    /// writes the tag.
    pub(super) fn gcm_encrypt(
        &mut self,
        input: &[u8],
        output: &mut [u8],
        nonce: &[u8; 12],
        tag: &mut [u8; TAG_BYTES],
    ) -> Result<()> {
        assert!(output.len() >= input.len());
        // SAFETY: a live GCM key; every buffer is as long as its length says.
        check(
            unsafe {
                sys::wc_AesGcmEncrypt(
                    self.0,
                    output.as_mut_ptr(),
                    input.as_ptr(),
                    input.len() as u32,
                    nonce.as_ptr(),
                    nonce.len() as u32,
                    tag.as_mut_ptr(),
                    TAG_BYTES as u32,
                    ptr::null(),
                    0,
                )
            },
            "an AES-GCM encryption",
        )
    }

    /// Encrypts `input` (whole blocks) into `output` (as long) from `iv`.
    pub(super) fn cbc_encrypt(
        &mut self,
        input: &[u8],
        output: &mut [u8],
        iv: &[u8; 16],
    ) -> Result<()> {
        assert!(output.len() >= input.len() && input.len() % 16 == 0);
        // SAFETY: a live CBC key; the buffers are as long as said.
        unsafe {
            check(sys::wc_AesSetIV(self.0, iv.as_ptr()), "the AES-CBC IV")?;
            check(
                sys::wc_AesCbcEncrypt(
                    self.0,
                    output.as_mut_ptr(),
                    input.as_ptr(),
                    input.len() as u32,
                ),
                "an AES-CBC encryption",
            )
        }
    }
}

impl Drop for Aes {
    fn drop(&mut self) {
        // SAFETY: made by wc_AesNew, freed once.
        unsafe { sys::wc_AesDelete(self.0, ptr::null_mut()) };
    }
}

/// ChaCha20-Poly1305 (RFC 8439) in one call, as wolfSSL's record layer
/// calls it.
pub(super) fn chacha20_poly1305_encrypt(
    key: &[u8; 32],
    nonce: &[u8; 12],
    input: &[u8],
    output: &mut [u8],
    tag: &mut [u8; TAG_BYTES],
) -> Result<()> {
    assert!(output.len() >= input.len());
    // SAFETY: the buffers are as long as said; no additional data.
    check(
        unsafe {
            sys::wc_ChaCha20Poly1305_Encrypt(
                key.as_ptr(),
                nonce.as_ptr(),
                ptr::null(),
                0,
                input.as_ptr(),
                input.len() as u32,
                output.as_mut_ptr(),
                tag.as_mut_ptr(),
            )
        },
        "a ChaCha20-Poly1305 encryption",
    )
}

/// A SHA-2 digest wolfCrypt computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Digest {
    Sha256,
    Sha384,
    Sha512,
}

impl Digest {
    pub(super) fn bytes(self) -> usize {
        match self {
            Digest::Sha256 => 32,
            Digest::Sha384 => 48,
            Digest::Sha512 => 64,
        }
    }

    /// wolfCrypt's `enum wc_HashType` value, for RSA-PSS.
    fn hash_type(self) -> sys::wc_HashType {
        match self {
            Digest::Sha256 => sys::wc_HashType_WC_HASH_TYPE_SHA256,
            Digest::Sha384 => sys::wc_HashType_WC_HASH_TYPE_SHA384,
            Digest::Sha512 => sys::wc_HashType_WC_HASH_TYPE_SHA512,
        }
    }

    /// The MGF1 of the same hash (`WC_MGF1SHA256`...), for RSA-PSS.
    fn mgf1(self) -> c_int {
        match self {
            Digest::Sha256 => 1,
            Digest::Sha384 => 2,
            Digest::Sha512 => 3,
        }
    }

    /// The digest of `data` into `out` (at least [`Digest::bytes`] long):
    /// initialise, update, finish, as a one-shot hash does.
    pub(super) fn hash(self, data: &[u8], out: &mut [u8]) -> Result<()> {
        assert!(out.len() >= self.bytes());
        // SAFETY: the state is zeroed plain data that Init* sets up and
        // Free releases; `out` holds the digest.
        unsafe {
            match self {
                Digest::Sha256 => {
                    let mut state: sys::wc_Sha256 = std::mem::zeroed();
                    check(sys::wc_InitSha256(&mut state), "SHA-256")?;
                    let updated =
                        sys::wc_Sha256Update(&mut state, data.as_ptr(), data.len() as u32);
                    let finished = sys::wc_Sha256Final(&mut state, out.as_mut_ptr());
                    sys::wc_Sha256Free(&mut state);
                    check(updated, "SHA-256")?;
                    check(finished, "SHA-256")
                }
                Digest::Sha384 | Digest::Sha512 => {
                    let mut state: sys::wc_Sha512 = std::mem::zeroed();
                    let (init, update, finish, free): (
                        unsafe extern "C" fn(*mut sys::wc_Sha512) -> c_int,
                        unsafe extern "C" fn(*mut sys::wc_Sha512, *const u8, u32) -> c_int,
                        unsafe extern "C" fn(*mut sys::wc_Sha512, *mut u8) -> c_int,
                        unsafe extern "C" fn(*mut sys::wc_Sha512),
                    ) = if self == Digest::Sha384 {
                        (
                            sys::wc_InitSha384,
                            sys::wc_Sha384Update,
                            sys::wc_Sha384Final,
                            sys::wc_Sha384Free,
                        )
                    } else {
                        (
                            sys::wc_InitSha512,
                            sys::wc_Sha512Update,
                            sys::wc_Sha512Final,
                            sys::wc_Sha512Free,
                        )
                    };
                    check(init(&mut state), "SHA-512")?;
                    let updated = update(&mut state, data.as_ptr(), data.len() as u32);
                    let finished = finish(&mut state, out.as_mut_ptr());
                    free(&mut state);
                    check(updated, "SHA-512")?;
                    check(finished, "SHA-512")
                }
            }
        }
    }

    /// The digest of `data` as a vector.
    pub(super) fn digest(self, data: &[u8]) -> Result<Vec<u8>> {
        let mut out = vec![0u8; self.bytes()];
        self.hash(data, &mut out)?;
        Ok(out)
    }
}

/// A NIST curve wolfCrypt knows, by its `ecc_curve_id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Curve {
    P256,
    P384,
    P521,
}

impl Curve {
    fn id(self) -> c_int {
        match self {
            Curve::P256 => 7,
            Curve::P384 => 15,
            Curve::P521 => 16,
        }
    }

    fn key_bytes(self) -> c_int {
        match self {
            Curve::P256 => 32,
            Curve::P384 => 48,
            Curve::P521 => 66,
        }
    }
}

/// An ECC key on one curve (a key pair, or a peer's public key).
pub(super) struct EccKey {
    key: *mut sys::ecc_key,
    curve: Curve,
}

impl Drop for EccKey {
    fn drop(&mut self) {
        // SAFETY: made by wc_ecc_key_new, freed once.
        unsafe { wc_ecc_key_free(self.key) }
    }
}

impl EccKey {
    fn empty(curve: Curve) -> Result<Self> {
        // SAFETY: default heap; null is checked.
        let key = unsafe { wc_ecc_key_new(ptr::null_mut()) };
        if key.is_null() {
            bail!("wolfCrypt could not allocate an ECC key");
        }
        Ok(Self { key, curve })
    }

    /// A new key pair.
    pub(super) fn generate(rng: &mut Rng, curve: Curve) -> Result<Self> {
        let key = Self::empty(curve)?;
        // SAFETY: a live key and generator.
        check(
            unsafe { wc_ecc_make_key_ex(rng.0, curve.key_bytes(), key.key, curve.id()) },
            "an ECC key generation",
        )?;
        Ok(key)
    }

    /// A peer's public key from its uncompressed point (a TLS key share).
    pub(super) fn from_public(point: &[u8], curve: Curve) -> Result<Self> {
        let key = Self::empty(curve)?;
        // SAFETY: a live key; the point is `point.len()` bytes.
        check(
            unsafe {
                wc_ecc_import_x963_ex(point.as_ptr(), point.len() as u32, key.key, curve.id())
            },
            "the peer's ECC point",
        )?;
        Ok(key)
    }

    /// The public key as an uncompressed point (the key share TLS sends).
    pub(super) fn public_point(&self) -> Result<Vec<u8>> {
        let mut point = vec![0u8; 1 + 2 * self.curve.key_bytes() as usize];
        let mut length = point.len() as u32;
        // SAFETY: a live key; the buffer is `length` bytes.
        check(
            unsafe { wc_ecc_export_x963(self.key, point.as_mut_ptr(), &mut length) },
            "exporting an ECC point",
        )?;
        point.truncate(length as usize);
        Ok(point)
    }

    /// The ECDH secret with `peer` into `out`: its length.
    pub(super) fn shared_secret(
        &mut self,
        peer: &mut EccKey,
        rng: &mut Rng,
        out: &mut [u8],
    ) -> Result<usize> {
        let mut length = out.len() as u32;
        // SAFETY: live keys and generator (the timing-resistant multiply
        // blinds with it); `out` is `length` bytes.
        unsafe {
            check(wc_ecc_set_rng(self.key, rng.0), "the ECC key's generator")?;
            check(
                wc_ecc_shared_secret(self.key, peer.key, out.as_mut_ptr(), &mut length),
                "an ECDH derivation",
            )?;
        }
        Ok(length as usize)
    }

    /// An ECDSA signature (DER) of a digest.
    pub(super) fn sign_digest(&mut self, digest: &[u8], rng: &mut Rng) -> Result<Vec<u8>> {
        let mut signature = vec![0u8; 16 + 2 * self.curve.key_bytes() as usize];
        let mut length = signature.len() as u32;
        // SAFETY: live key and generator; buffers as long as said.
        check(
            unsafe {
                wc_ecc_sign_hash(
                    digest.as_ptr(),
                    digest.len() as u32,
                    signature.as_mut_ptr(),
                    &mut length,
                    rng.0,
                    self.key,
                )
            },
            "an ECDSA signature",
        )?;
        signature.truncate(length as usize);
        Ok(signature)
    }

    /// True if and only if `signature` is this key's signature of `digest`.
    pub(super) fn verify_digest(&mut self, signature: &[u8], digest: &[u8]) -> Result<bool> {
        let mut verified: c_int = 0;
        // SAFETY: a live key; buffers as long as said.
        check(
            unsafe {
                wc_ecc_verify_hash(
                    signature.as_ptr(),
                    signature.len() as u32,
                    digest.as_ptr(),
                    digest.len() as u32,
                    &mut verified,
                    self.key,
                )
            },
            "an ECDSA verification",
        )?;
        Ok(verified == 1)
    }
}

/// An RSA private key (which holds its public half).
pub(super) struct RsaKey(*mut sys::RsaKey);

impl Drop for RsaKey {
    fn drop(&mut self) {
        // SAFETY: made by wc_NewRsaKey, freed once.
        unsafe { wc_DeleteRsaKey(self.0, ptr::null_mut()) };
    }
}

impl RsaKey {
    /// A private key from its PKCS#1 DER.
    pub(super) fn from_pkcs1_der(der: &[u8]) -> Result<Self> {
        let mut result: c_int = 0;
        // SAFETY: default heap, no device; null is checked.
        let key = unsafe { wc_NewRsaKey(ptr::null_mut(), NO_DEVICE, &mut result) };
        if key.is_null() {
            bail!("wolfCrypt could not allocate an RSA key (error {result})");
        }
        let key = Self(key);
        let mut index = 0u32;
        // SAFETY: a live key; the DER is `der.len()` bytes.
        check(
            unsafe { wc_RsaPrivateKeyDecode(der.as_ptr(), &mut index, key.0, der.len() as u32) },
            "the RSA private key",
        )?;
        Ok(key)
    }

    fn modulus_bytes(&self) -> usize {
        // SAFETY: a live key.
        unsafe { wc_RsaEncryptSize(self.0) }.max(0) as usize
    }

    /// An RSA-PSS signature of a digest (salt as long as the digest, MGF1
    /// with the same hash: TLS 1.3's rsa_pss_rsae schemes).
    pub(super) fn pss_sign(
        &mut self,
        digest: &[u8],
        hash: Digest,
        rng: &mut Rng,
    ) -> Result<Vec<u8>> {
        let mut signature = vec![0u8; self.modulus_bytes()];
        // SAFETY: live key and generator (blinding); buffers as long as said.
        let length = unsafe {
            check(wc_RsaSetRNG(self.0, rng.0), "the RSA key's generator")?;
            wc_RsaPSS_Sign(
                digest.as_ptr(),
                digest.len() as u32,
                signature.as_mut_ptr(),
                signature.len() as u32,
                hash.hash_type(),
                hash.mgf1(),
                self.0,
                rng.0,
            )
        };
        if length <= 0 {
            bail!("wolfCrypt refused an RSA-PSS signature (error {length})");
        }
        signature.truncate(length as usize);
        Ok(signature)
    }

    /// True if and only if `signature` is this key's PSS signature of `digest`.
    pub(super) fn pss_verify(&mut self, signature: &[u8], digest: &[u8], hash: Digest) -> bool {
        let mut decoded = vec![0u8; self.modulus_bytes()];
        // SAFETY: a live key; buffers as long as said.
        let answer = unsafe {
            wc_RsaPSS_VerifyCheck(
                signature.as_ptr(),
                signature.len() as u32,
                decoded.as_mut_ptr(),
                decoded.len() as u32,
                digest.as_ptr(),
                digest.len() as u32,
                hash.hash_type(),
                hash.mgf1(),
                self.0,
            )
        };
        answer > 0
    }
}

/// An X25519 key (a key pair, or a peer's public key).
pub(super) struct X25519Key(*mut sys::curve25519_key);

impl Drop for X25519Key {
    fn drop(&mut self) {
        // SAFETY: made by wc_curve25519_new, freed once.
        unsafe { wc_curve25519_delete(self.0, ptr::null_mut()) };
    }
}

impl X25519Key {
    fn empty() -> Result<Self> {
        let mut result: c_int = 0;
        // SAFETY: default heap, no device; null is checked.
        let key = unsafe { wc_curve25519_new(ptr::null_mut(), NO_DEVICE, &mut result) };
        if key.is_null() {
            bail!("wolfCrypt could not allocate an X25519 key (error {result})");
        }
        Ok(Self(key))
    }

    /// A new key pair.
    pub(super) fn generate(rng: &mut Rng) -> Result<Self> {
        let key = Self::empty()?;
        // SAFETY: a live key and generator.
        check(
            unsafe { wc_curve25519_make_key(rng.0, 32, key.0) },
            "an X25519 key generation",
        )?;
        Ok(key)
    }

    /// A peer's public key from its share, checked first as wolfSSL's TLS
    /// layer checks it.
    pub(super) fn from_public(share: &[u8]) -> Result<Self> {
        let key = Self::empty()?;
        // SAFETY: a live key; the share is `share.len()` bytes.
        unsafe {
            check(
                wc_curve25519_check_public(share.as_ptr(), share.len() as u32, LITTLE_ENDIAN),
                "the peer's X25519 share",
            )?;
            check(
                wc_curve25519_import_public_ex(
                    share.as_ptr(),
                    share.len() as u32,
                    key.0,
                    LITTLE_ENDIAN,
                ),
                "the peer's X25519 share",
            )?;
        }
        Ok(key)
    }

    /// The public key as TLS sends it.
    pub(super) fn share(&self) -> Result<[u8; 32]> {
        let mut share = [0u8; 32];
        let mut length = 32u32;
        // SAFETY: a live key; the buffer is 32 bytes.
        check(
            unsafe {
                wc_curve25519_export_public_ex(
                    self.0,
                    share.as_mut_ptr(),
                    &mut length,
                    LITTLE_ENDIAN,
                )
            },
            "exporting an X25519 share",
        )?;
        Ok(share)
    }

    /// The shared secret with `peer`.
    pub(super) fn shared_secret(&mut self, peer: &mut X25519Key) -> Result<[u8; 32]> {
        let mut secret = [0u8; 32];
        let mut length = 32u32;
        // SAFETY: live keys; the buffer is 32 bytes.
        check(
            unsafe {
                wc_curve25519_shared_secret(self.0, peer.0, secret.as_mut_ptr(), &mut length)
            },
            "an X25519 derivation",
        )?;
        Ok(secret)
    }
}

/// An ML-KEM parameter set, by wolfCrypt's type number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MlKem {
    MlKem512 = 0,
    MlKem768 = 1,
    MlKem1024 = 2,
}

/// An ML-KEM key (a key pair, or a peer's encapsulation key).
pub(super) struct MlKemKey(*mut MlKemKeyOpaque);

impl Drop for MlKemKey {
    fn drop(&mut self) {
        // SAFETY: made by wc_MlKemKey_New, freed once.
        unsafe { wc_MlKemKey_Delete(self.0, ptr::null_mut()) };
    }
}

impl MlKemKey {
    fn empty(kind: MlKem) -> Result<Self> {
        // SAFETY: default heap, no device; null is checked.
        let key = unsafe { wc_MlKemKey_New(kind as c_int, ptr::null_mut(), NO_DEVICE) };
        if key.is_null() {
            bail!("wolfCrypt could not allocate an ML-KEM key");
        }
        Ok(Self(key))
    }

    fn size(
        &self,
        of: unsafe extern "C" fn(*mut MlKemKeyOpaque, *mut u32) -> c_int,
    ) -> Result<usize> {
        let mut length = 0u32;
        // SAFETY: a live key.
        check(unsafe { of(self.0, &mut length) }, "an ML-KEM size")?;
        Ok(length as usize)
    }

    /// A new key pair (the client's share in TLS).
    pub(super) fn generate(kind: MlKem, rng: &mut Rng) -> Result<Self> {
        let key = Self::empty(kind)?;
        // SAFETY: live key and generator.
        check(
            unsafe { wc_MlKemKey_MakeKey(key.0, rng.0) },
            "an ML-KEM key generation",
        )?;
        Ok(key)
    }

    /// The encapsulation key, as the client sends it.
    pub(super) fn public_key(&self) -> Result<Vec<u8>> {
        let mut public = vec![0u8; self.size(wc_MlKemKey_PublicKeySize)?];
        // SAFETY: a live key; the buffer is as long as wolfCrypt said.
        check(
            unsafe {
                wc_MlKemKey_EncodePublicKey(self.0, public.as_mut_ptr(), public.len() as u32)
            },
            "encoding an ML-KEM key",
        )?;
        Ok(public)
    }

    /// A peer's encapsulation key.
    pub(super) fn from_public(kind: MlKem, public: &[u8]) -> Result<Self> {
        let key = Self::empty(kind)?;
        // SAFETY: a live key; the input is `public.len()` bytes.
        check(
            unsafe { wc_MlKemKey_DecodePublicKey(key.0, public.as_ptr(), public.len() as u32) },
            "the peer's ML-KEM key",
        )?;
        Ok(key)
    }

    /// Encapsulates to this key: (ciphertext, shared secret).
    pub(super) fn encapsulate(&mut self, rng: &mut Rng) -> Result<(Vec<u8>, Vec<u8>)> {
        let mut ciphertext = vec![0u8; self.size(wc_MlKemKey_CipherTextSize)?];
        let mut secret = vec![0u8; self.size(wc_MlKemKey_SharedSecretSize)?];
        // SAFETY: live key and generator; buffers as long as wolfCrypt said.
        check(
            unsafe {
                wc_MlKemKey_Encapsulate(self.0, ciphertext.as_mut_ptr(), secret.as_mut_ptr(), rng.0)
            },
            "an ML-KEM encapsulation",
        )?;
        Ok((ciphertext, secret))
    }

    /// The shared secret of a ciphertext made for this key.
    pub(super) fn decapsulate(&mut self, ciphertext: &[u8]) -> Result<Vec<u8>> {
        let mut secret = vec![0u8; self.size(wc_MlKemKey_SharedSecretSize)?];
        // SAFETY: a live key; buffers as long as said.
        check(
            unsafe {
                wc_MlKemKey_Decapsulate(
                    self.0,
                    secret.as_mut_ptr(),
                    ciphertext.as_ptr(),
                    ciphertext.len() as u32,
                )
            },
            "an ML-KEM decapsulation",
        )?;
        Ok(secret)
    }
}
