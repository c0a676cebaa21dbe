//! A rustls crypto provider that wraps another and counts and times every
//! call a handshake makes into it (key exchange, signing, verification,
//! hashing and key derivation, record protection, random numbers), per side.
//! Times are exclusive: a call made from inside another counted call (a key
//! exchange inside the TLS 1.2 PRF) is charged to its own category only.

use std::cell::{Cell, RefCell};
use std::time::Instant;

use crate::scenario::operations::{Category, CountedOp};
use crate::scenario::Side;
use rustls::crypto::cipher::{
    AeadKey, InboundOpaqueMessage, InboundPlainMessage, Iv, KeyBlockShape, MessageDecrypter,
    MessageEncrypter, OutboundOpaqueMessage, OutboundPlainMessage, Tls12AeadAlgorithm,
    Tls13AeadAlgorithm, UnsupportedOperationError,
};
use rustls::crypto::hash::{Context, Hash, HashAlgorithm, Output};
use rustls::crypto::tls13::{Hkdf, HkdfExpander, OkmBlock, OutputLengthError};
use rustls::crypto::{
    ActiveKeyExchange, CryptoProvider, KeyProvider, SecureRandom, SharedSecret, SupportedKxGroup,
    WebPkiSupportedAlgorithms,
};
use rustls::pki_types::{
    AlgorithmIdentifier, InvalidSignature, PrivateKeyDer, SignatureVerificationAlgorithm,
};
use rustls::sign::{Signer, SigningKey};
use rustls::{CipherSuiteCommon, ConnectionTrafficSecrets, Error, NamedGroup, SignatureAlgorithm};
use rustls::{SignatureScheme, SupportedCipherSuite, Tls13CipherSuite};
use serde::Serialize;

/// Counts and exclusive times per side and category, and counts per operation.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Tally {
    pub category_ns: std::collections::BTreeMap<(Side, Category), u64>,
    pub category_calls: std::collections::BTreeMap<(Side, Category), u64>,
    pub ops: std::collections::BTreeMap<(Side, CountedOp), u64>,
}

const SIDES: usize = 2;
const CATEGORIES: usize = Category::ALL.len();
const OPS: usize = CountedOp::RsaKeyTransport as usize + 1;

/// The thread's running counters: plain arrays, so counting stays cheap.
#[derive(Clone, Copy)]
struct Counters {
    category_ns: [[u64; CATEGORIES]; SIDES],
    category_calls: [[u64; CATEGORIES]; SIDES],
    ops: [[u64; OPS]; SIDES],
}

const EMPTY: Counters = Counters {
    category_ns: [[0; CATEGORIES]; SIDES],
    category_calls: [[0; CATEGORIES]; SIDES],
    ops: [[0; OPS]; SIDES],
};

/// Every counted operation, in declaration order.
const ALL_OPS: [CountedOp; OPS] = [
    CountedOp::KxExchange,
    CountedOp::Sign,
    CountedOp::VerifyChainSignature,
    CountedOp::VerifyHandshakeSignature,
    CountedOp::HkdfExtract,
    CountedOp::HkdfExpand,
    CountedOp::Hmac,
    CountedOp::Prf,
    CountedOp::HashOneShot,
    CountedOp::HashContext,
    CountedOp::RecordEncrypt,
    CountedOp::RecordDecrypt,
    CountedOp::RandomFill,
    CountedOp::RsaKeyTransport,
];

thread_local! {
    static SIDE: Cell<Side> = const { Cell::new(Side::Client) };
    static IN_HANDSHAKE_SIGNATURE: Cell<bool> = const { Cell::new(false) };
    static CHILD_NS: Cell<u64> = const { Cell::new(0) };
    static COUNTERS: RefCell<Counters> = const { RefCell::new(EMPTY) };
}

/// Says which side's code runs next on this thread.
pub fn set_side(side: Side) {
    SIDE.with(|s| s.set(side));
}

/// Takes the tally of this thread, leaving an empty one.
pub fn take_tally() -> Tally {
    let counters = COUNTERS.with(|c| std::mem::replace(&mut *c.borrow_mut(), EMPTY));
    let mut tally = Tally::default();
    for (s, side) in [Side::Client, Side::Server].into_iter().enumerate() {
        for (c, category) in Category::ALL.into_iter().enumerate() {
            if counters.category_calls[s][c] > 0 {
                tally
                    .category_ns
                    .insert((side, category), counters.category_ns[s][c]);
                tally
                    .category_calls
                    .insert((side, category), counters.category_calls[s][c]);
            }
        }
        for (o, op) in ALL_OPS.into_iter().enumerate() {
            if counters.ops[s][o] > 0 {
                tally.ops.insert((side, op), counters.ops[s][o]);
            }
        }
    }
    tally
}

/// Marks the calls made by `f` as checking the peer's handshake signature.
pub fn in_handshake_signature<T>(f: impl FnOnce() -> T) -> T {
    IN_HANDSHAKE_SIGNATURE.with(|flag| flag.set(true));
    let value = f();
    IN_HANDSHAKE_SIGNATURE.with(|flag| flag.set(false));
    value
}

/// Runs `f`, charging its exclusive time to `category` and counting `op`.
pub fn record<T>(category: Category, op: Option<CountedOp>, f: impl FnOnce() -> T) -> T {
    let saved = CHILD_NS.with(|c| c.replace(0));
    let start = Instant::now();
    let value = f();
    let total = start.elapsed().as_nanos() as u64;
    let children = CHILD_NS.with(|c| c.replace(saved + total));
    let side = SIDE.with(Cell::get) as usize;
    COUNTERS.with(|c| {
        let mut counters = c.borrow_mut();
        counters.category_ns[side][category as usize] += total.saturating_sub(children);
        counters.category_calls[side][category as usize] += 1;
        if let Some(op) = op {
            counters.ops[side][op as usize] += 1;
        }
    });
    value
}

fn leak<T>(value: T) -> &'static T {
    Box::leak(Box::new(value))
}

/// Wraps every part of a provider that a handshake calls.
pub fn instrument(provider: CryptoProvider) -> CryptoProvider {
    let kx_groups = provider
        .kx_groups
        .iter()
        .map(|g| leak(CountedGroup(*g)) as &'static dyn SupportedKxGroup)
        .collect();
    let cipher_suites = provider
        .cipher_suites
        .iter()
        .map(|s| instrument_suite(*s))
        .collect();
    let algorithms = provider.signature_verification_algorithms;
    let wrap = |algs: &'static [&'static dyn SignatureVerificationAlgorithm]| -> &'static [&'static dyn SignatureVerificationAlgorithm] {
        Box::leak(
            algs.iter()
                .map(|a| leak(CountedVerify(*a)) as &'static dyn SignatureVerificationAlgorithm)
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        )
    };
    let mapping: Vec<(
        SignatureScheme,
        &'static [&'static dyn SignatureVerificationAlgorithm],
    )> = algorithms
        .mapping
        .iter()
        .map(|(scheme, algs)| (*scheme, wrap(algs)))
        .collect();
    CryptoProvider {
        cipher_suites,
        kx_groups,
        signature_verification_algorithms: WebPkiSupportedAlgorithms {
            all: wrap(algorithms.all),
            mapping: Box::leak(mapping.into_boxed_slice()),
        },
        secure_random: leak(CountedRandom(provider.secure_random)),
        key_provider: leak(CountedKeyProvider(provider.key_provider)),
    }
}

fn instrument_suite(suite: SupportedCipherSuite) -> SupportedCipherSuite {
    match suite {
        SupportedCipherSuite::Tls13(inner) => SupportedCipherSuite::Tls13(leak(Tls13CipherSuite {
            common: CipherSuiteCommon {
                hash_provider: leak(CountedHash(inner.common.hash_provider)),
                ..inner.common
            },
            hkdf_provider: leak(CountedHkdf(inner.hkdf_provider)),
            aead_alg: leak(CountedTls13Aead(inner.aead_alg)),
            quic: inner.quic,
        })),
        SupportedCipherSuite::Tls12(inner) => {
            SupportedCipherSuite::Tls12(leak(rustls::Tls12CipherSuite {
                common: CipherSuiteCommon {
                    hash_provider: leak(CountedHash(inner.common.hash_provider)),
                    ..inner.common
                },
                prf_provider: leak(CountedPrf(inner.prf_provider)),
                aead_alg: leak(CountedTls12Aead(inner.aead_alg)),
                ..*inner
            }))
        }
    }
}

#[derive(Debug)]
struct CountedGroup(&'static dyn SupportedKxGroup);

impl SupportedKxGroup for CountedGroup {
    fn start(&self) -> Result<Box<dyn ActiveKeyExchange>, Error> {
        // Generating a share is half of an exchange; the completion counts it.
        let inner = record(Category::KeyExchange, None, || self.0.start())?;
        Ok(Box::new(CountedActive(inner)))
    }

    fn start_and_complete(
        &self,
        peer_pub_key: &[u8],
    ) -> Result<rustls::crypto::CompletedKeyExchange, Error> {
        record(Category::KeyExchange, Some(CountedOp::KxExchange), || {
            self.0.start_and_complete(peer_pub_key)
        })
    }

    fn ffdhe_group(&self) -> Option<rustls::ffdhe_groups::FfdheGroup<'static>> {
        self.0.ffdhe_group()
    }

    fn name(&self) -> NamedGroup {
        self.0.name()
    }

    fn fips(&self) -> bool {
        self.0.fips()
    }

    fn usable_for_version(&self, version: rustls::ProtocolVersion) -> bool {
        self.0.usable_for_version(version)
    }
}

struct CountedActive(Box<dyn ActiveKeyExchange>);

impl ActiveKeyExchange for CountedActive {
    fn complete(self: Box<Self>, peer_pub_key: &[u8]) -> Result<SharedSecret, Error> {
        record(Category::KeyExchange, Some(CountedOp::KxExchange), || {
            self.0.complete(peer_pub_key)
        })
    }

    fn complete_for_tls_version(
        self: Box<Self>,
        peer_pub_key: &[u8],
        tls_version: &rustls::SupportedProtocolVersion,
    ) -> Result<SharedSecret, Error> {
        record(Category::KeyExchange, Some(CountedOp::KxExchange), || {
            self.0.complete_for_tls_version(peer_pub_key, tls_version)
        })
    }

    fn hybrid_component(&self) -> Option<(NamedGroup, &[u8])> {
        self.0.hybrid_component()
    }

    fn complete_hybrid_component(
        self: Box<Self>,
        peer_pub_key: &[u8],
    ) -> Result<SharedSecret, Error> {
        record(Category::KeyExchange, Some(CountedOp::KxExchange), || {
            self.0.complete_hybrid_component(peer_pub_key)
        })
    }

    fn pub_key(&self) -> &[u8] {
        self.0.pub_key()
    }

    fn ffdhe_group(&self) -> Option<rustls::ffdhe_groups::FfdheGroup<'static>> {
        self.0.ffdhe_group()
    }

    fn group(&self) -> NamedGroup {
        self.0.group()
    }
}

#[derive(Debug)]
struct CountedKeyProvider(&'static dyn KeyProvider);

impl KeyProvider for CountedKeyProvider {
    fn load_private_key(
        &self,
        key_der: PrivateKeyDer<'static>,
    ) -> Result<std::sync::Arc<dyn SigningKey>, Error> {
        let inner = self.0.load_private_key(key_der)?;
        Ok(std::sync::Arc::new(CountedSigningKey(inner)))
    }

    fn fips(&self) -> bool {
        self.0.fips()
    }
}

#[derive(Debug)]
struct CountedSigningKey(std::sync::Arc<dyn SigningKey>);

impl SigningKey for CountedSigningKey {
    fn choose_scheme(&self, offered: &[SignatureScheme]) -> Option<Box<dyn Signer>> {
        self.0
            .choose_scheme(offered)
            .map(|signer| Box::new(CountedSigner(signer)) as Box<dyn Signer>)
    }

    fn public_key(&self) -> Option<rustls::pki_types::SubjectPublicKeyInfoDer<'_>> {
        self.0.public_key()
    }

    fn algorithm(&self) -> SignatureAlgorithm {
        self.0.algorithm()
    }
}

#[derive(Debug)]
struct CountedSigner(Box<dyn Signer>);

impl Signer for CountedSigner {
    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, Error> {
        record(Category::Signing, Some(CountedOp::Sign), || {
            self.0.sign(message)
        })
    }

    fn scheme(&self) -> SignatureScheme {
        self.0.scheme()
    }
}

#[derive(Debug)]
struct CountedVerify(&'static dyn SignatureVerificationAlgorithm);

impl SignatureVerificationAlgorithm for CountedVerify {
    fn verify_signature(
        &self,
        public_key: &[u8],
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), InvalidSignature> {
        let op = if IN_HANDSHAKE_SIGNATURE.with(Cell::get) {
            CountedOp::VerifyHandshakeSignature
        } else {
            CountedOp::VerifyChainSignature
        };
        record(Category::Verification, Some(op), || {
            self.0.verify_signature(public_key, message, signature)
        })
    }

    fn public_key_alg_id(&self) -> AlgorithmIdentifier {
        self.0.public_key_alg_id()
    }

    fn signature_alg_id(&self) -> AlgorithmIdentifier {
        self.0.signature_alg_id()
    }

    fn fips(&self) -> bool {
        self.0.fips()
    }
}

#[derive(Debug)]
struct CountedRandom(&'static dyn SecureRandom);

impl SecureRandom for CountedRandom {
    fn fill(&self, buf: &mut [u8]) -> Result<(), rustls::crypto::GetRandomFailed> {
        record(Category::Random, Some(CountedOp::RandomFill), || {
            self.0.fill(buf)
        })
    }

    fn fips(&self) -> bool {
        self.0.fips()
    }
}

struct CountedHash(&'static dyn Hash);

impl Hash for CountedHash {
    fn start(&self) -> Box<dyn Context> {
        let inner = record(
            Category::HashingAndKdf,
            Some(CountedOp::HashContext),
            || self.0.start(),
        );
        Box::new(CountedContext(inner))
    }

    fn hash(&self, data: &[u8]) -> Output {
        record(
            Category::HashingAndKdf,
            Some(CountedOp::HashOneShot),
            || self.0.hash(data),
        )
    }

    fn output_len(&self) -> usize {
        self.0.output_len()
    }

    fn algorithm(&self) -> HashAlgorithm {
        self.0.algorithm()
    }

    fn fips(&self) -> bool {
        self.0.fips()
    }
}

struct CountedContext(Box<dyn Context>);

impl Context for CountedContext {
    fn fork_finish(&self) -> Output {
        record(Category::HashingAndKdf, None, || self.0.fork_finish())
    }

    fn fork(&self) -> Box<dyn Context> {
        Box::new(CountedContext(record(
            Category::HashingAndKdf,
            None,
            || self.0.fork(),
        )))
    }

    fn finish(self: Box<Self>) -> Output {
        record(Category::HashingAndKdf, None, || self.0.finish())
    }

    fn update(&mut self, data: &[u8]) {
        record(Category::HashingAndKdf, None, || self.0.update(data))
    }
}

struct CountedHkdf(&'static dyn Hkdf);

impl Hkdf for CountedHkdf {
    fn extract_from_zero_ikm(&self, salt: Option<&[u8]>) -> Box<dyn HkdfExpander> {
        let inner = record(
            Category::HashingAndKdf,
            Some(CountedOp::HkdfExtract),
            || self.0.extract_from_zero_ikm(salt),
        );
        Box::new(CountedExpander(inner))
    }

    fn extract_from_secret(&self, salt: Option<&[u8]>, secret: &[u8]) -> Box<dyn HkdfExpander> {
        let inner = record(
            Category::HashingAndKdf,
            Some(CountedOp::HkdfExtract),
            || self.0.extract_from_secret(salt, secret),
        );
        Box::new(CountedExpander(inner))
    }

    fn extract_from_kx_shared_secret(
        &self,
        salt: Option<&[u8]>,
        kx: Box<dyn ActiveKeyExchange>,
        peer_pub_key: &[u8],
    ) -> Result<Box<dyn HkdfExpander>, Error> {
        let inner = record(
            Category::HashingAndKdf,
            Some(CountedOp::HkdfExtract),
            || self.0.extract_from_kx_shared_secret(salt, kx, peer_pub_key),
        )?;
        Ok(Box::new(CountedExpander(inner)))
    }

    fn expander_for_okm(&self, okm: &OkmBlock) -> Box<dyn HkdfExpander> {
        Box::new(CountedExpander(record(
            Category::HashingAndKdf,
            None,
            || self.0.expander_for_okm(okm),
        )))
    }

    fn hmac_sign(&self, key: &OkmBlock, message: &[u8]) -> rustls::crypto::hmac::Tag {
        record(Category::HashingAndKdf, Some(CountedOp::Hmac), || {
            self.0.hmac_sign(key, message)
        })
    }

    fn fips(&self) -> bool {
        self.0.fips()
    }
}

struct CountedExpander(Box<dyn HkdfExpander>);

impl HkdfExpander for CountedExpander {
    fn expand_slice(&self, info: &[&[u8]], output: &mut [u8]) -> Result<(), OutputLengthError> {
        record(Category::HashingAndKdf, Some(CountedOp::HkdfExpand), || {
            self.0.expand_slice(info, output)
        })
    }

    fn expand_block(&self, info: &[&[u8]]) -> OkmBlock {
        record(Category::HashingAndKdf, Some(CountedOp::HkdfExpand), || {
            self.0.expand_block(info)
        })
    }

    fn hash_len(&self) -> usize {
        self.0.hash_len()
    }
}

struct CountedPrf(&'static dyn rustls::crypto::tls12::Prf);

impl rustls::crypto::tls12::Prf for CountedPrf {
    fn for_key_exchange(
        &self,
        output: &mut [u8; 48],
        kx: Box<dyn ActiveKeyExchange>,
        peer_pub_key: &[u8],
        label: &[u8],
        seed: &[u8],
    ) -> Result<(), Error> {
        record(Category::HashingAndKdf, Some(CountedOp::Prf), || {
            self.0
                .for_key_exchange(output, kx, peer_pub_key, label, seed)
        })
    }

    fn for_secret(&self, output: &mut [u8], secret: &[u8], label: &[u8], seed: &[u8]) {
        record(Category::HashingAndKdf, Some(CountedOp::Prf), || {
            self.0.for_secret(output, secret, label, seed)
        })
    }

    fn fips(&self) -> bool {
        self.0.fips()
    }
}

struct CountedTls13Aead(&'static dyn Tls13AeadAlgorithm);

impl Tls13AeadAlgorithm for CountedTls13Aead {
    fn encrypter(&self, key: AeadKey, iv: Iv) -> Box<dyn MessageEncrypter> {
        let inner = record(Category::RecordProtection, None, || {
            self.0.encrypter(key, iv)
        });
        Box::new(CountedEncrypter(inner))
    }

    fn decrypter(&self, key: AeadKey, iv: Iv) -> Box<dyn MessageDecrypter> {
        let inner = record(Category::RecordProtection, None, || {
            self.0.decrypter(key, iv)
        });
        Box::new(CountedDecrypter(inner))
    }

    fn key_len(&self) -> usize {
        self.0.key_len()
    }

    fn extract_keys(
        &self,
        key: AeadKey,
        iv: Iv,
    ) -> Result<ConnectionTrafficSecrets, UnsupportedOperationError> {
        self.0.extract_keys(key, iv)
    }

    fn fips(&self) -> bool {
        self.0.fips()
    }
}

/// TLS 1.2 record protection, counted as TLS 1.3's is.
struct CountedTls12Aead(&'static dyn Tls12AeadAlgorithm);

impl Tls12AeadAlgorithm for CountedTls12Aead {
    fn encrypter(&self, key: AeadKey, iv: &[u8], extra: &[u8]) -> Box<dyn MessageEncrypter> {
        let inner = record(Category::RecordProtection, None, || {
            self.0.encrypter(key, iv, extra)
        });
        Box::new(CountedEncrypter(inner))
    }

    fn decrypter(&self, key: AeadKey, iv: &[u8]) -> Box<dyn MessageDecrypter> {
        let inner = record(Category::RecordProtection, None, || {
            self.0.decrypter(key, iv)
        });
        Box::new(CountedDecrypter(inner))
    }

    fn key_block_shape(&self) -> KeyBlockShape {
        self.0.key_block_shape()
    }

    fn extract_keys(
        &self,
        key: AeadKey,
        iv: &[u8],
        explicit: &[u8],
    ) -> Result<ConnectionTrafficSecrets, UnsupportedOperationError> {
        self.0.extract_keys(key, iv, explicit)
    }

    fn fips(&self) -> bool {
        self.0.fips()
    }
}

struct CountedEncrypter(Box<dyn MessageEncrypter>);

impl MessageEncrypter for CountedEncrypter {
    fn encrypt(
        &mut self,
        msg: OutboundPlainMessage<'_>,
        seq: u64,
    ) -> Result<OutboundOpaqueMessage, Error> {
        record(
            Category::RecordProtection,
            Some(CountedOp::RecordEncrypt),
            || self.0.encrypt(msg, seq),
        )
    }

    fn encrypted_payload_len(&self, payload_len: usize) -> usize {
        self.0.encrypted_payload_len(payload_len)
    }
}

struct CountedDecrypter(Box<dyn MessageDecrypter>);

impl MessageDecrypter for CountedDecrypter {
    fn decrypt<'a>(
        &mut self,
        msg: InboundOpaqueMessage<'a>,
        seq: u64,
    ) -> Result<InboundPlainMessage<'a>, Error> {
        record(
            Category::RecordProtection,
            Some(CountedOp::RecordDecrypt),
            || self.0.decrypt(msg, seq),
        )
    }
}
