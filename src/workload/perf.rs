//! Where a server process's CPU goes, sampled by Linux `perf` (software
//! clock events, which work in virtual machines where hardware counters do
//! not), attributed per shared object (the library, the program or the
//! kernel) and per symbol category (public-key math, hashing, symmetric
//! ciphers, ...; see [`ProfileCategory`]). A stripped library (Debian's libcrypto)
//! is attributed as a whole; inside it perf sees only its exported
//! functions, so its samples cannot be put in categories.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::LazyLock;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::backend::SymbolPrefixes;

/// A `perf record` attached to one process.
pub struct Recording {
    child: Option<Child>,
    output: PathBuf,
}

/// Starts sampling the processes `pids` into `output`; fails with perf's
/// own message if perf is missing or not allowed here.
pub fn record(pids: &[u32], output: &Path) -> Result<Recording> {
    let list: Vec<String> = pids.iter().map(u32::to_string).collect();
    start(&["-p".to_string(), list.join(",")], output)
}

/// Starts sampling only the threads `tids` (of this or another process)
/// into `output`, as [`record`] does for a whole process.
pub fn record_threads(tids: &[u32], output: &Path) -> Result<Recording> {
    let list: Vec<String> = tids.iter().map(u32::to_string).collect();
    start(&["-t".to_string(), list.join(",")], output)
}

fn start(target: &[String], output: &Path) -> Result<Recording> {
    let mut command = Command::new("perf");
    command
        .args(["record", "-e", "cpu-clock", "-F", "1999", "--quiet", "-o"])
        .arg(output)
        .args(target)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // Out of the terminal's Ctrl-C (tlslab stops it after the run, to
    // keep the profile), and stopped if tlslab is killed.
    let mut child = crate::child::spawn_tied(command, crate::child::Tie::Server)
        .context("perf is not installed (Debian: apt-get install linux-perf)")?;
    // perf refuses at once when it may not attach (perf_event_paranoid).
    std::thread::sleep(Duration::from_millis(300));
    if let Some(status) = child.try_wait()? {
        let mut message = String::new();
        if let Some(mut stderr) = child.stderr.take() {
            use std::io::Read;
            let _ = stderr.read_to_string(&mut message);
        }
        let first = message.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        bail!("perf record exited at once ({status}): {first}");
    }
    Ok(Recording {
        child: Some(child),
        output: output.to_path_buf(),
    })
}

/// What perf saw: the shares of the samples, in percent, largest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// Per shared object.
    pub objects: Vec<(String, f64)>,
    /// Per symbol category (labels of [`ProfileCategory`]), summing to the same
    /// total as `objects`.
    pub categories: Vec<(String, f64)>,
}

impl Recording {
    /// Stops sampling and returns the shares of the samples per shared
    /// object and per symbol category.
    pub fn finish(mut self) -> Result<Profile> {
        if let Some(mut child) = self.child.take() {
            // SAFETY: SIGINT to our own child: perf writes its file and exits.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
            child.wait().context("waiting for perf record")?;
        }
        let report = Command::new("perf")
            .args(["report", "--stdio", "--quiet", "-F", "period,dso,sym", "-i"])
            .arg(&self.output)
            .output()
            .context("running perf report")?;
        if !report.status.success() {
            bail!(
                "perf report failed: {}",
                String::from_utf8_lossy(&report.stderr).trim()
            );
        }
        let symbols = parse_symbol_report(&String::from_utf8_lossy(&report.stdout));
        if symbols.is_empty() {
            bail!("perf recorded no samples of the server");
        }
        Ok(Profile {
            objects: per_object(&symbols),
            categories: per_category(&symbols),
        })
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// One line of `perf report -F period,dso,sym`: a symbol of a shared object
/// and its share of the samples, in percent.
#[derive(Debug, Clone, PartialEq)]
pub struct SymbolShare {
    pub object: String,
    /// The symbol as perf names it (demangled), or its address in hex when
    /// the object has no symbol there.
    pub symbol: String,
    /// perf's mark: true for a kernel symbol (`[k]`).
    pub kernel: bool,
    pub percent: f64,
}

/// Parses `perf report -F period,dso,sym` lines
/// ("    759379500  tlslab   [.] ossl_rsaz_amm52x20_x2_ifma256"), each
/// symbol's share computed from the periods (perf's own percentages are
/// rounded to 0.01% per symbol, which over hundreds of symbols adds up to
/// several percent).
pub fn parse_symbol_report(text: &str) -> Vec<SymbolShare> {
    let periods: Vec<(u64, SymbolShare)> = text
        .lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let period: u64 = fields.next()?.parse().ok()?;
            let object = fields.next()?.to_string();
            let mark = fields.next()?;
            let symbol = fields.collect::<Vec<_>>().join(" ");
            Some((
                period,
                SymbolShare {
                    object,
                    symbol,
                    kernel: mark == "[k]",
                    percent: 0.0,
                },
            ))
        })
        .collect();
    let total: u64 = periods.iter().map(|(period, _)| period).sum();
    periods
        .into_iter()
        .map(|(period, share)| SymbolShare {
            percent: period as f64 / total.max(1) as f64 * 100.0,
            ..share
        })
        .collect()
}

/// Each shared object's share, largest first.
pub fn per_object(symbols: &[SymbolShare]) -> Vec<(String, f64)> {
    let mut shares: Vec<(String, f64)> = Vec::new();
    for share in symbols {
        match shares
            .iter_mut()
            .find(|(object, _)| *object == share.object)
        {
            Some((_, total)) => *total += share.percent,
            None => shares.push((share.object.clone(), share.percent)),
        }
    }
    shares.sort_by(|a, b| b.1.total_cmp(&a.1));
    shares
}

/// Each category's share, in [`ProfileCategory::ALL`]'s order, empty ones left out.
pub fn per_category(symbols: &[SymbolShare]) -> Vec<(String, f64)> {
    let mut totals = [0.0; ProfileCategory::ALL.len()];
    for share in symbols {
        let category = ProfileCategory::of(share);
        let at = ProfileCategory::ALL.iter().position(|c| *c == category);
        totals[at.unwrap_or(ProfileCategory::ALL.len() - 1)] += share.percent;
    }
    ProfileCategory::ALL
        .iter()
        .zip(totals)
        .filter(|(_, total)| *total > 0.0)
        .map(|(category, total)| (category.label().to_string(), total))
        .collect()
}

/// What a sampled symbol was doing, told by its name: the study's
/// categories (public key, hashing, symmetric, random numbers,
/// certificates) and the rest of a server's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProfileCategory {
    /// Big numbers, RSA, elliptic curves, X25519/X448, DH, ML-KEM, ML-DSA.
    PublicKey,
    /// SHA-1/2/3, MD5, HMAC, the TLS PRF and HKDF.
    Hashing,
    /// AES, GCM, ChaCha20, Poly1305, CBC: record protection.
    Symmetric,
    /// The DRBG and its seeding.
    Random,
    /// X.509 and ASN.1 (DER/PEM) encoding, decoding and checks.
    Certificates,
    /// libssl: the handshake's state machine, messages and records.
    TlsStateMachine,
    /// The rest of libcrypto: provider and algorithm look-ups, BIO, error
    /// stack, locks, OpenSSL's allocator wrappers.
    OpensslPlumbing,
    /// malloc, memcpy and the rest of libc and the dynamic loader.
    MemoryLibc,
    Kernel,
    /// Rust code: tlslab's HTTP server, the standard library, the crates.
    HttpTlslab,
    /// Anything else, unresolved addresses included.
    Other,
}

/// Name prefixes per category (lower case, after any leading underscores
/// and an `ossl_` prefix), checked in this order.
const PREFIXES: &[(ProfileCategory, &[&str])] = &[
    (
        ProfileCategory::Hashing,
        &[
            "sha",
            "md5",
            "md4",
            "hmac",
            "kdf",
            "hkdf",
            "tls1_prf",
            "tls13_hkdf",
            "keccak",
            "blake2",
            "ripemd",
            "evp_digest",
            "evp_md",
            "digest",
        ],
    ),
    (
        ProfileCategory::PublicKey,
        &[
            "bn_",
            "rsa",
            "extract_multiplier",
            "ec_",
            "ecp_",
            "ecx",
            "ecdsa",
            "ecdh",
            "ec_gf",
            "x25519",
            "x448",
            "ed25519",
            "ed448",
            "curve25519",
            "curve448",
            "fe51",
            "fe64",
            "fe_",
            "ge_",
            "dh_",
            "ffc_",
            "ml_kem",
            "mlkem",
            "ml_dsa",
            "mldsa",
            "kyber",
            "pqcrystals",
            "dilithium",
            "limbs",
            "fiat_",
            "p256",
            "p384",
            "p521",
            "gfp",
            "beeu",
            "bignum_",
            "nistz256",
            "felem",
            "evp_pkey",
            "pkey",
        ],
    ),
    (
        ProfileCategory::Symmetric,
        &[
            "aes",
            "gcm",
            "ghash",
            "chacha",
            "poly1305",
            "cbc",
            "evp_cipher",
            "evp_encrypt",
            "evp_decrypt",
            "cipher",
            "vpaes",
            "bsaes",
            "crypto_gcm",
            "crypto_ctr",
            "crypto_cbc",
        ],
    ),
    (
        ProfileCategory::Random,
        &[
            "drbg",
            "rand",
            "evp_rand",
            "seed_src",
            "crngt",
            "get_entropy",
        ],
    ),
    (
        ProfileCategory::Certificates,
        &[
            "x509", "asn1", "d2i", "i2d", "pem", "der_", "decoder", "encoder", "ocsp",
        ],
    ),
    (
        ProfileCategory::TlsStateMachine,
        &["ssl", "tls", "dtls", "statem", "wpacket", "packet_"],
    ),
    (
        ProfileCategory::MemoryLibc,
        &[
            "crypto_malloc",
            "crypto_zalloc",
            "crypto_free",
            "crypto_clear_free",
            "crypto_realloc",
            "openssl_cleanse",
            "malloc",
            "free",
            "memcpy",
            "memset",
        ],
    ),
];

/// Source paths per category, checked in this order: a fragment of the
/// path (lower case), or with `=` the start of the file's own name. The
/// crates are matched by their directory in Cargo's registry.
const SOURCES: &[(ProfileCategory, &[&str])] = &[
    (
        ProfileCategory::Certificates,
        &[
            "/crypto/x509",
            "/wolfcrypt/src/asn",
            "/wolfcrypt/src/coding.c",
            "/crypto/asn1/",
            "/crypto/pem/",
            "/crypto/encode_decode/",
            "/implementations/encode_decode/",
            "/rustls-webpki-",
            "/webpki-",
            "/rustls-pki-types-",
            "/untrusted-",
            "/der-",
        ],
    ),
    (
        ProfileCategory::Random,
        &[
            "/crypto/rand/",
            "/wolfcrypt/src/random.c",
            "/implementations/rands/",
            "/fipsmodule/rand/",
            "/crypto/rand_extra/",
            "/getrandom-",
            "=rand.rs",
        ],
    ),
    (
        ProfileCategory::Hashing,
        &[
            "/crypto/sha/",
            "/wolfcrypt/src/sha",
            "/wolfcrypt/src/hmac.c",
            "/wolfcrypt/src/kdf.c",
            "/wolfcrypt/src/hash.c",
            "/crypto/md5/",
            "/crypto/hmac/",
            "/crypto/kdf/",
            "/crypto/hkdf/",
            "/implementations/kdfs/",
            "/implementations/digests/",
            "/implementations/macs/",
            "/crypto/evp/digest.c",
            "/fipsmodule/sha/",
            "/fipsmodule/hmac/",
            "/fipsmodule/digest/",
            "/fipsmodule/hkdf/",
            "/fipsmodule/tls/",
            "/crypto/fipsmodule/sha",
            "=digest",
            "=hmac",
            "=hkdf",
            "=hash.rs",
            "=prf.rs",
            "=sha",
        ],
    ),
    (
        ProfileCategory::Symmetric,
        &[
            "/crypto/aes/",
            "/wolfcrypt/src/aes",
            "/wolfcrypt/src/chacha",
            "/wolfcrypt/src/poly1305",
            "/crypto/modes/",
            "/crypto/chacha/",
            "/crypto/poly1305/",
            "/implementations/ciphers/",
            "/fipsmodule/aes/",
            "/fipsmodule/modes/",
            "/fipsmodule/cipher/",
            "/crypto/cipher_extra/",
            "/crypto/evp/evp_enc.c",
            "/src/aead/",
            "=aead",
            "=cipher.rs",
        ],
    ),
    (
        ProfileCategory::PublicKey,
        &[
            "/crypto/bn/",
            "/wolfcrypt/src/sp_",
            "/wolfcrypt/src/rsa.c",
            "/wolfcrypt/src/ecc.c",
            "/wolfcrypt/src/dh.c",
            "/wolfcrypt/src/curve25519.c",
            "/wolfcrypt/src/fe_",
            "/wolfcrypt/src/ge_",
            "/wolfcrypt/src/wc_mlkem",
            "/wolfcrypt/src/wolfmath.c",
            "/crypto/ec/",
            "/crypto/rsa/",
            "/crypto/dh/",
            "/crypto/dsa/",
            "/crypto/ffc/",
            "/crypto/ml_kem/",
            "/crypto/ml_dsa/",
            "/crypto/slh_dsa/",
            "/crypto/curve25519/",
            "/crypto/curve448/",
            "/crypto/kyber/",
            "/crypto/dilithium/",
            "/fipsmodule/bn/",
            "/fipsmodule/ec/",
            "/fipsmodule/ecdsa/",
            "/fipsmodule/ecdh/",
            "/fipsmodule/rsa/",
            "/fipsmodule/dh/",
            "/fipsmodule/ml_kem/",
            "/fipsmodule/ml_dsa/",
            "/fipsmodule/curve25519/",
            "/third_party/fiat/",
            "/implementations/keymgmt/",
            "/implementations/exchange/",
            "/implementations/signature/",
            "/implementations/kem/",
            "/src/ec/",
            "/src/rsa/",
            "/src/arithmetic/",
            "/src/bigint",
            "/src/limb",
            "=agreement",
            "=kem.rs",
            "=signature.rs",
            "=ecdsa",
            "=ed25519",
            "=rsa",
            "=kx.rs",
            "=sign.rs",
        ],
    ),
    // And the backends' protocol sources (their descriptors' `protocol_sources`).
    (ProfileCategory::TlsStateMachine, &[]),
    (
        ProfileCategory::HttpTlslab,
        &[
            "/src/transport/",
            "/src/backend/",
            "/src/workload/",
            "/src/heap.rs",
        ],
    ),
    (
        ProfileCategory::MemoryLibc,
        &[
            "/library/alloc/",
            "/library/core/src/ptr",
            "/library/core/src/slice",
            "/csu/",
            "/sysdeps/",
            "/malloc/",
            "/crypto/mem.c",
            "/crypto/mem_clr.c",
        ],
    ),
];

/// What the registered TLS libraries' descriptors say of their symbols
/// ([`SymbolPrefixes`]), every backend's lists joined.
struct LibrarySymbols {
    /// Rust paths of the libraries' protocol code ("rustls::").
    protocol_paths: Vec<&'static str>,
    /// Rust paths of their crypto crates ("aws_lc_rs::").
    crypto_paths: Vec<&'static str>,
    /// C symbol prefixes followed by a version (`aws_lc_0_28_2_`).
    versioned_symbol_prefixes: Vec<&'static str>,
    /// Source-path fragments of their protocol code.
    protocol_sources: Vec<&'static str>,
    /// Their source trees: what no file or name rule placed is the
    /// library's plumbing.
    library_sources: Vec<&'static str>,
}

/// The registered libraries' symbols, read from their descriptors once.
fn library_symbols() -> &'static LibrarySymbols {
    static SYMBOLS: LazyLock<LibrarySymbols> = LazyLock::new(|| {
        let joined = |list: fn(&SymbolPrefixes) -> &'static [&'static str]| {
            let mut joined: Vec<&'static str> = Vec::new();
            for descriptor in crate::backend::REGISTRY {
                for item in list(&descriptor.symbols) {
                    if !joined.contains(item) {
                        joined.push(item);
                    }
                }
            }
            joined
        };
        LibrarySymbols {
            protocol_paths: joined(|s| s.protocol_paths),
            crypto_paths: joined(|s| s.crypto_paths),
            versioned_symbol_prefixes: joined(|s| s.versioned_symbol_prefixes),
            protocol_sources: joined(|s| s.protocol_sources),
            library_sources: joined(|s| s.library_sources),
        }
    });
    &SYMBOLS
}

impl ProfileCategory {
    pub const ALL: &'static [ProfileCategory] = &[
        ProfileCategory::PublicKey,
        ProfileCategory::Hashing,
        ProfileCategory::Symmetric,
        ProfileCategory::Random,
        ProfileCategory::Certificates,
        ProfileCategory::TlsStateMachine,
        ProfileCategory::OpensslPlumbing,
        ProfileCategory::MemoryLibc,
        ProfileCategory::Kernel,
        ProfileCategory::HttpTlslab,
        ProfileCategory::Other,
    ];

    /// The categories of the TLS library's own work (the study's
    /// handshake breakdown, record protection included).
    pub const TLS_LIBRARY: &'static [ProfileCategory] = &[
        ProfileCategory::PublicKey,
        ProfileCategory::Hashing,
        ProfileCategory::Symmetric,
        ProfileCategory::Random,
        ProfileCategory::Certificates,
        ProfileCategory::TlsStateMachine,
        ProfileCategory::OpensslPlumbing,
    ];

    pub fn label(self) -> &'static str {
        match self {
            ProfileCategory::PublicKey => "public key",
            ProfileCategory::Hashing => "hashing and KDF",
            ProfileCategory::Symmetric => "symmetric ciphers",
            ProfileCategory::Random => "random numbers",
            ProfileCategory::Certificates => "certificates and ASN.1",
            ProfileCategory::TlsStateMachine => "TLS state machine",
            ProfileCategory::OpensslPlumbing => "library plumbing",
            ProfileCategory::MemoryLibc => "memory and libc",
            ProfileCategory::Kernel => "kernel",
            ProfileCategory::HttpTlslab => "HTTP and tlslab (Rust)",
            ProfileCategory::Other => "other",
        }
    }

    /// The category a label names, if any (runs stored before the
    /// plumbing of every library was one category said "OpenSSL plumbing").
    pub fn from_label(label: &str) -> Option<ProfileCategory> {
        if label == "OpenSSL plumbing" {
            return Some(ProfileCategory::OpensslPlumbing);
        }
        ProfileCategory::ALL
            .iter()
            .copied()
            .find(|c| c.label() == label)
    }

    /// The category of one sampled symbol.
    pub fn of(share: &SymbolShare) -> ProfileCategory {
        if share.kernel || share.object.starts_with("[kernel") {
            return ProfileCategory::Kernel;
        }
        Self::of_symbol(&share.symbol, &share.object)
    }

    /// The category of a function counted by callgrind: its demangled
    /// name, the source file it was compiled from (when the debug
    /// information says) and the path of the object it is in. The source
    /// file's directory tells the most (OpenSSL's `crypto/bn/`, aws-lc's
    /// `fipsmodule/ec/`, rustls's own sources); the name is the fallback.
    pub fn of_function(function: &str, file: &str, object: &str) -> ProfileCategory {
        if let Some(category) = Self::of_source(file) {
            return category;
        }
        let object = object.rsplit('/').next().unwrap_or(object);
        match Self::of_symbol(function, object) {
            ProfileCategory::Other
                if library_symbols()
                    .library_sources
                    .iter()
                    .any(|dir| file.contains(dir)) =>
            {
                ProfileCategory::OpensslPlumbing
            }
            category => category,
        }
    }

    /// The category of the code in a source file, by its path, when the
    /// path says.
    fn of_source(file: &str) -> Option<ProfileCategory> {
        let path = file.to_ascii_lowercase();
        if path.is_empty() || path == "???" {
            return None;
        }
        let file_name = path.rsplit('/').next().unwrap_or(&path);
        let protocol_sources = library_symbols().protocol_sources.as_slice();
        SOURCES
            .iter()
            .find(|(category, fragments)| {
                let registered = match category {
                    ProfileCategory::TlsStateMachine => protocol_sources,
                    _ => &[],
                };
                fragments.iter().chain(registered).any(|fragment| {
                    if let Some(name) = fragment.strip_prefix('=') {
                        file_name.starts_with(name)
                    } else {
                        path.contains(fragment)
                    }
                })
            })
            .map(|(category, _)| *category)
    }

    /// The category of a user-space symbol in `object` (a file name).
    fn of_symbol(symbol: &str, object: &str) -> ProfileCategory {
        if symbol.starts_with("0x") || symbol.is_empty() || symbol == "???" {
            return ProfileCategory::Other;
        }
        if symbol.contains("::") || symbol.starts_with("_R") || symbol.starts_with("_ZN") {
            return Self::of_rust(symbol);
        }
        let lower = symbol.to_ascii_lowercase();
        // aws-lc's and ring's C and assembly symbols carry a version prefix.
        let unprefixed = strip_version_prefix(&lower);
        let trimmed = unprefixed.trim_start_matches('_');
        let openssl_internal = trimmed.starts_with("ossl_");
        let name = trimmed.strip_prefix("ossl_").unwrap_or(trimmed);
        let found = PREFIXES
            .iter()
            .find(|(_, prefixes)| prefixes.iter().any(|prefix| name.starts_with(prefix)));
        if let Some((category, _)) = found {
            return *category;
        }
        if object.starts_with("libc.") || object.starts_with("ld-linux") {
            return ProfileCategory::MemoryLibc;
        }
        let plumbing = [
            "evp_", "crypto_", "bio", "err_", "openssl_", "obj_", "lh_", "ossl_", "cbb_", "cbs_",
        ];
        if openssl_internal
            || unprefixed.len() != lower.len()
            || plumbing.iter().any(|p| trimmed.starts_with(p))
            || object.starts_with("libcrypto")
        {
            return ProfileCategory::OpensslPlumbing;
        }
        if object.starts_with("libssl") {
            return ProfileCategory::TlsStateMachine;
        }
        ProfileCategory::Other
    }

    /// The category of a Rust function by its path: the TLS libraries'
    /// modules by what they do, tlslab's own code apart.
    fn of_rust(symbol: &str) -> ProfileCategory {
        let path = symbol.to_ascii_lowercase();
        let has = |words: &[&str]| words.iter().any(|w| path.contains(w));
        let libraries = library_symbols();
        if has(&["tlslab::"]) && !has(&libraries.protocol_paths) && !has(&libraries.crypto_paths) {
            return ProfileCategory::HttpTlslab;
        }
        if has(&["webpki", "x509", "pki_types", "::der::", "::pem"]) {
            return ProfileCategory::Certificates;
        }
        if has(&["::rand::", "systemrandom", "getrandom", "::rand_"]) {
            return ProfileCategory::Random;
        }
        if has(&[
            "agreement",
            "::kx",
            "ecdh",
            "x25519",
            "x448",
            "::signature",
            "::sign",
            "rsa",
            "::ec::",
            "ecdsa",
            "ed25519",
            "kem",
            "::pqdsa",
            "::bigint",
            "::arithmetic",
        ]) {
            return ProfileCategory::PublicKey;
        }
        if has(&[
            "hmac",
            "hkdf",
            "digest",
            "sha2",
            "sha1",
            "::hash",
            "prf",
            "transcript",
        ]) {
            return ProfileCategory::Hashing;
        }
        if has(&[
            "aead",
            "aes",
            "gcm",
            "chacha",
            "poly1305",
            "::cipher",
            "encrypter",
            "decrypter",
        ]) {
            return ProfileCategory::Symmetric;
        }
        if has(&libraries.protocol_paths) {
            return ProfileCategory::TlsStateMachine;
        }
        if has(&libraries.crypto_paths) {
            return ProfileCategory::OpensslPlumbing;
        }
        if has(&[
            "alloc::",
            "__rust_alloc",
            "__rdl_",
            "__rust_dealloc",
            "__rust_realloc",
            "core::ptr::",
        ]) {
            return ProfileCategory::MemoryLibc;
        }
        ProfileCategory::Other
    }
}

/// A symbol without a library's version prefix (aws-lc's
/// `aws_lc_0_28_2_`, ring's `ring_core_0_17_14_`: their descriptors say).
fn strip_version_prefix(lower: &str) -> &str {
    for prefix in &library_symbols().versioned_symbol_prefixes {
        if let Some(rest) = lower.strip_prefix(prefix) {
            // The version: digits and underscores.
            let skipped = rest.trim_start_matches(|c: char| c.is_ascii_digit() || c == '_');
            if skipped.len() < rest.len() {
                return skipped;
            }
        }
    }
    lower
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "# comment
      40000  tlslab             [.] ossl_rsaz_amm52x20_x2_ifma256
      10000  tlslab             [.] bn_mul_mont
        8000  tlslab             [.] sha256_block_data_order_avx2
        6000  tlslab             [.] ossl_aes_gcm_encrypt_avx512
        4000  tlslab             [.] aesni_cbc_encrypt
        3000  tlslab             [.] ossl_drbg_generate
        3000  tlslab             [.] ossl_asn1_item_embed_free
        3000  tlslab             [.] tls_process_client_hello
        2000  tlslab             [.] ossl_ht_get
        5000  libc.so.6          [.] __memmove_avx512_unaligned_erms
      12000  [kernel.kallsyms]  [k] clear_page_erms
        3000  tlslab             [.] tlslab::workload::serve::handle
        1000  tlslab             [.] 0x00000000001234
";

    #[test]
    fn a_symbol_report_is_read_per_object() {
        let symbols = parse_symbol_report(REPORT);
        assert_eq!(symbols.len(), 13);
        assert_eq!(symbols[10].symbol, "clear_page_erms");
        assert!(symbols[10].kernel);
        let objects = per_object(&symbols);
        assert_eq!(objects[0], ("tlslab".to_string(), 83.0));
        assert_eq!(objects[1], ("[kernel.kallsyms]".to_string(), 12.0));
        assert_eq!(objects[2], ("libc.so.6".to_string(), 5.0));
    }

    #[test]
    fn symbols_fall_in_the_study_categories() {
        let categories = per_category(&parse_symbol_report(REPORT));
        let share = |label: &str| {
            categories
                .iter()
                .find(|(l, _)| l == label)
                .map_or(0.0, |(_, s)| *s)
        };
        assert_eq!(share("public key"), 50.0);
        assert_eq!(share("hashing and KDF"), 8.0);
        assert_eq!(share("symmetric ciphers"), 10.0);
        assert_eq!(share("random numbers"), 3.0);
        assert_eq!(share("certificates and ASN.1"), 3.0);
        assert_eq!(share("TLS state machine"), 3.0);
        assert_eq!(share("library plumbing"), 2.0);
        assert_eq!(share("memory and libc"), 5.0);
        assert_eq!(share("kernel"), 12.0);
        assert_eq!(share("HTTP and tlslab (Rust)"), 3.0);
        assert_eq!(share("other"), 1.0);
        let total: f64 = categories.iter().map(|(_, s)| s).sum();
        assert!((total - 100.0).abs() < 1e-9, "{total}");
    }

    #[test]
    fn wolfssls_sources_fall_in_their_categories() {
        let out = "/target/release/build/wolfssl-sys-0123/out/wolfssl-src";
        for (function, file, category) in [
            (
                "sp_256_ecc_mulmod_avx2_4",
                "wolfcrypt/src/sp_x86_64.c",
                ProfileCategory::PublicKey,
            ),
            (
                "wc_RsaFunction",
                "wolfcrypt/src/rsa.c",
                ProfileCategory::PublicKey,
            ),
            (
                "wc_DhAgree",
                "wolfcrypt/src/dh.c",
                ProfileCategory::PublicKey,
            ),
            (
                "Transform_Sha256",
                "wolfcrypt/src/sha256.c",
                ProfileCategory::Hashing,
            ),
            (
                "AES_GCM_encrypt_avx2",
                "wolfcrypt/src/aes.c",
                ProfileCategory::Symmetric,
            ),
            (
                "wc_RNG_GenerateBlock",
                "wolfcrypt/src/random.c",
                ProfileCategory::Random,
            ),
            (
                "ParseCertRelative",
                "wolfcrypt/src/asn.c",
                ProfileCategory::Certificates,
            ),
            (
                "DoTls13HandShakeMsg",
                "src/tls13.c",
                ProfileCategory::TlsStateMachine,
            ),
            (
                "wolfSSL_CTX_new",
                "wolfcrypt/src/memory.c",
                ProfileCategory::OpensslPlumbing,
            ),
        ] {
            let file = format!("{out}/{file}");
            assert_eq!(
                ProfileCategory::of_function(function, &file, "tlslab"),
                category,
                "{function}"
            );
        }
    }
}
