//! The axes of a tunnel scenario: data-channel cipher, HMAC digest,
//! compression and payload, each with its stable id, the spellings OpenVPN
//! and OpenSSL accept, and its security notes.

use std::sync::OnceLock;

use crate::scenario::names::{deserialize_by_id, serialize_by_id, Named};

serialize_by_id!(Cipher, Digest, Compression, Payload);
deserialize_by_id!(Cipher, Digest, Compression, Payload);

/// A data-channel cipher: a CBC cipher (authenticated by the HMAC digest), an
/// AEAD cipher (its own tag), or `none` (the HMAC alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cipher {
    None,
    BfCbc,
    Cast5Cbc,
    DesCbc,
    DesxCbc,
    DesEdeCbc,
    DesEde3Cbc,
    Rc2Cbc,
    Rc2_40Cbc,
    Rc2_64Cbc,
    SeedCbc,
    Camellia128Cbc,
    Camellia192Cbc,
    Camellia256Cbc,
    Aes128Cbc,
    Aes192Cbc,
    Aes256Cbc,
    Aes128Gcm,
    Aes256Gcm,
    Chacha20Poly1305,
}

/// How a cipher protects a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CipherMode {
    /// No encryption (the HMAC still authenticates).
    Plain,
    /// CBC with a random IV, then an HMAC over IV and ciphertext.
    Cbc,
    /// An AEAD: nonce from the packet id, tag in the packet.
    Aead,
}

impl Named for Cipher {
    const KIND: &'static str = "cipher";
    const ALL: &'static [Self] = &[
        Cipher::None,
        Cipher::BfCbc,
        Cipher::Cast5Cbc,
        Cipher::DesCbc,
        Cipher::DesxCbc,
        Cipher::DesEdeCbc,
        Cipher::DesEde3Cbc,
        Cipher::Rc2Cbc,
        Cipher::Rc2_40Cbc,
        Cipher::Rc2_64Cbc,
        Cipher::SeedCbc,
        Cipher::Camellia128Cbc,
        Cipher::Camellia192Cbc,
        Cipher::Camellia256Cbc,
        Cipher::Aes128Cbc,
        Cipher::Aes192Cbc,
        Cipher::Aes256Cbc,
        Cipher::Aes128Gcm,
        Cipher::Aes256Gcm,
        Cipher::Chacha20Poly1305,
    ];

    fn id(self) -> &'static str {
        match self {
            Cipher::None => "none",
            Cipher::BfCbc => "bf-cbc",
            Cipher::Cast5Cbc => "cast5-cbc",
            Cipher::DesCbc => "des-cbc",
            Cipher::DesxCbc => "desx-cbc",
            Cipher::DesEdeCbc => "des-ede-cbc",
            Cipher::DesEde3Cbc => "des-ede3-cbc",
            Cipher::Rc2Cbc => "rc2-cbc",
            Cipher::Rc2_40Cbc => "rc2-40-cbc",
            Cipher::Rc2_64Cbc => "rc2-64-cbc",
            Cipher::SeedCbc => "seed-cbc",
            Cipher::Camellia128Cbc => "camellia-128-cbc",
            Cipher::Camellia192Cbc => "camellia-192-cbc",
            Cipher::Camellia256Cbc => "camellia-256-cbc",
            Cipher::Aes128Cbc => "aes-128-cbc",
            Cipher::Aes192Cbc => "aes-192-cbc",
            Cipher::Aes256Cbc => "aes-256-cbc",
            Cipher::Aes128Gcm => "aes-128-gcm",
            Cipher::Aes256Gcm => "aes-256-gcm",
            Cipher::Chacha20Poly1305 => "chacha20-poly1305",
        }
    }

    fn aliases(self) -> &'static [&'static str] {
        match self {
            Cipher::BfCbc => &["bf", "blowfish"],
            Cipher::Cast5Cbc => &["cast-cbc", "cast5"],
            Cipher::DesCbc => &["des"],
            Cipher::DesxCbc => &["desx"],
            Cipher::DesEde3Cbc => &["des3", "3des"],
            Cipher::Rc2Cbc => &["rc2"],
            Cipher::SeedCbc => &["seed"],
            Cipher::Aes128Cbc => &["aes128"],
            Cipher::Aes192Cbc => &["aes192"],
            Cipher::Aes256Cbc => &["aes256"],
            Cipher::Camellia128Cbc => &["camellia128"],
            Cipher::Camellia192Cbc => &["camellia192"],
            Cipher::Camellia256Cbc => &["camellia256"],
            Cipher::Aes128Gcm => &["aes128gcm"],
            Cipher::Aes256Gcm => &["aes256gcm"],
            Cipher::Chacha20Poly1305 => &["chacha20poly1305"],
            _ => &[],
        }
    }
}

impl Cipher {
    /// The 16 CBC ciphers of the classic OpenVPN study.
    pub const CLASSIC: &'static [Cipher] = &[
        Cipher::BfCbc,
        Cipher::Cast5Cbc,
        Cipher::DesCbc,
        Cipher::DesxCbc,
        Cipher::DesEdeCbc,
        Cipher::DesEde3Cbc,
        Cipher::Rc2Cbc,
        Cipher::Rc2_40Cbc,
        Cipher::Rc2_64Cbc,
        Cipher::SeedCbc,
        Cipher::Camellia128Cbc,
        Cipher::Camellia192Cbc,
        Cipher::Camellia256Cbc,
        Cipher::Aes128Cbc,
        Cipher::Aes192Cbc,
        Cipher::Aes256Cbc,
    ];

    /// The name OpenSSL and OpenVPN use (`--cipher`), `None` for no cipher.
    pub fn openssl_name(self) -> Option<&'static str> {
        Some(match self {
            Cipher::None => return None,
            Cipher::BfCbc => "BF-CBC",
            Cipher::Cast5Cbc => "CAST5-CBC",
            Cipher::DesCbc => "DES-CBC",
            Cipher::DesxCbc => "DESX-CBC",
            Cipher::DesEdeCbc => "DES-EDE-CBC",
            Cipher::DesEde3Cbc => "DES-EDE3-CBC",
            Cipher::Rc2Cbc => "RC2-CBC",
            Cipher::Rc2_40Cbc => "RC2-40-CBC",
            Cipher::Rc2_64Cbc => "RC2-64-CBC",
            Cipher::SeedCbc => "SEED-CBC",
            Cipher::Camellia128Cbc => "CAMELLIA-128-CBC",
            Cipher::Camellia192Cbc => "CAMELLIA-192-CBC",
            Cipher::Camellia256Cbc => "CAMELLIA-256-CBC",
            Cipher::Aes128Cbc => "AES-128-CBC",
            Cipher::Aes192Cbc => "AES-192-CBC",
            Cipher::Aes256Cbc => "AES-256-CBC",
            Cipher::Aes128Gcm => "AES-128-GCM",
            Cipher::Aes256Gcm => "AES-256-GCM",
            Cipher::Chacha20Poly1305 => "CHACHA20-POLY1305",
        })
    }

    pub fn mode(self) -> CipherMode {
        match self {
            Cipher::None => CipherMode::Plain,
            Cipher::Aes128Gcm | Cipher::Aes256Gcm | Cipher::Chacha20Poly1305 => CipherMode::Aead,
            _ => CipherMode::Cbc,
        }
    }

    /// True if and only if the cipher encrypts with a 64-bit block.
    pub fn has_64_bit_block(self) -> bool {
        matches!(
            self,
            Cipher::BfCbc
                | Cipher::Cast5Cbc
                | Cipher::DesCbc
                | Cipher::DesxCbc
                | Cipher::DesEdeCbc
                | Cipher::DesEde3Cbc
                | Cipher::Rc2Cbc
                | Cipher::Rc2_40Cbc
                | Cipher::Rc2_64Cbc
        )
    }

    /// Known weaknesses, empty for a cipher with none known.
    pub fn security_notes(self) -> Vec<&'static str> {
        let mut notes = Vec::new();
        match self {
            Cipher::None => notes.push("no encryption: no confidentiality"),
            Cipher::DesCbc => notes.push("56-bit key: brute-forced in hours"),
            Cipher::DesxCbc => notes.push("DESX: DES core, at most ~118-bit key"),
            Cipher::DesEdeCbc => notes.push("two-key 3DES: ~80-bit security"),
            Cipher::DesEde3Cbc => notes.push("3DES: ~112-bit security, deprecated"),
            Cipher::Rc2_40Cbc => notes.push("40-bit export key: brute-forced in seconds"),
            Cipher::Rc2_64Cbc => notes.push("64-bit key: within reach of brute force"),
            Cipher::Rc2Cbc => notes.push("RC2: related-key attacks, legacy"),
            _ => {}
        }
        if self.has_64_bit_block() {
            notes.push("64-bit block: SWEET32 birthday attack after ~32 GB under one key");
        }
        notes
    }

    /// True if and only if the cipher should not be chosen for new tunnels.
    pub fn is_weak(self) -> bool {
        self == Cipher::None || self.has_64_bit_block()
    }
}

/// An HMAC digest for the data channel (ignored by AEAD ciphers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Digest {
    None,
    Md4,
    Md5,
    Sha0,
    Sha1,
    Ripemd160,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
    Whirlpool,
    Sha3_256,
    Blake2b512,
}

impl Named for Digest {
    const KIND: &'static str = "digest";
    const ALL: &'static [Self] = &[
        Digest::None,
        Digest::Md4,
        Digest::Md5,
        Digest::Sha0,
        Digest::Sha1,
        Digest::Ripemd160,
        Digest::Sha224,
        Digest::Sha256,
        Digest::Sha384,
        Digest::Sha512,
        Digest::Whirlpool,
        Digest::Sha3_256,
        Digest::Blake2b512,
    ];

    fn id(self) -> &'static str {
        match self {
            Digest::None => "none",
            Digest::Md4 => "md4",
            Digest::Md5 => "md5",
            Digest::Sha0 => "sha0",
            Digest::Sha1 => "sha1",
            Digest::Ripemd160 => "ripemd160",
            Digest::Sha224 => "sha224",
            Digest::Sha256 => "sha256",
            Digest::Sha384 => "sha384",
            Digest::Sha512 => "sha512",
            Digest::Whirlpool => "whirlpool",
            Digest::Sha3_256 => "sha3-256",
            Digest::Blake2b512 => "blake2b-512",
        }
    }

    /// The names OpenVPN lists for the same algorithm (OpenSSL 1.0 signature
    /// names such as RSA-SHA1 and DSA, and OpenSSL 3 spellings).
    fn aliases(self) -> &'static [&'static str] {
        match self {
            Digest::None => &["null"],
            Digest::Md4 => &["rsa-md4"],
            Digest::Md5 => &["rsa-md5"],
            // In OpenSSL 1.0, "SHA" and "RSA-SHA" were SHA-0.
            Digest::Sha0 => &["sha", "rsa-sha"],
            Digest::Sha1 => &[
                "sha-1",
                "rsa-sha1",
                "rsa-sha1-2",
                "dsa",
                "dsa-sha",
                "dsa-sha1",
                "dsa-sha1-old",
                "ecdsa-with-sha1",
            ],
            Digest::Ripemd160 => &["rsa-ripemd160", "ripemd-160", "rmd160"],
            Digest::Sha224 => &["rsa-sha224", "sha2-224", "sha-224"],
            Digest::Sha256 => &["rsa-sha256", "sha2-256", "sha-256"],
            Digest::Sha384 => &["rsa-sha384", "sha2-384", "sha-384"],
            Digest::Sha512 => &["rsa-sha512", "sha2-512", "sha-512"],
            Digest::Whirlpool => &[],
            Digest::Sha3_256 => &["sha3_256"],
            Digest::Blake2b512 => &["blake2b512"],
        }
    }
}

/// The 25 digest names of the classic study (OpenVPN 2 on OpenSSL 1.0 listed
/// each algorithm under several signature names); they resolve to 10 digests.
pub const CLASSIC_DIGEST_NAMES: [&str; 25] = [
    "DSA",
    "DSA-SHA",
    "DSA-SHA1",
    "DSA-SHA1-old",
    "ecdsa-with-SHA1",
    "MD4",
    "MD5",
    "RIPEMD160",
    "RSA-MD4",
    "RSA-MD5",
    "RSA-RIPEMD160",
    "RSA-SHA",
    "RSA-SHA1",
    "RSA-SHA1-2",
    "RSA-SHA224",
    "RSA-SHA256",
    "RSA-SHA384",
    "RSA-SHA512",
    "SHA",
    "SHA1",
    "SHA224",
    "SHA256",
    "SHA384",
    "SHA512",
    "whirlpool",
];

impl Digest {
    /// The name OpenSSL and OpenVPN use (`--auth`), `None` for no HMAC.
    pub fn openssl_name(self) -> Option<&'static str> {
        Some(match self {
            Digest::None => return None,
            Digest::Md4 => "MD4",
            Digest::Md5 => "MD5",
            Digest::Sha0 => "SHA",
            Digest::Sha1 => "SHA1",
            Digest::Ripemd160 => "RIPEMD160",
            Digest::Sha224 => "SHA224",
            Digest::Sha256 => "SHA256",
            Digest::Sha384 => "SHA384",
            Digest::Sha512 => "SHA512",
            Digest::Whirlpool => "whirlpool",
            Digest::Sha3_256 => "SHA3-256",
            Digest::Blake2b512 => "BLAKE2b512",
        })
    }

    /// Known weaknesses, empty for a digest with none known.
    pub fn security_notes(self) -> Vec<&'static str> {
        match self {
            Digest::None => vec!["no HMAC: packets are not authenticated"],
            Digest::Md4 => vec!["MD4 is broken (collisions by hand); HMAC-MD4 is not recommended"],
            Digest::Md5 => vec!["MD5 is broken for collisions; HMAC-MD5 is deprecated"],
            Digest::Sha0 => vec!["SHA-0 was withdrawn in 1995 and is broken"],
            Digest::Sha1 => vec!["SHA-1 collisions are practical (HMAC-SHA1 still holds)"],
            _ => vec![],
        }
    }

    /// True if and only if the digest should not be chosen for new tunnels.
    pub fn is_weak(self) -> bool {
        matches!(
            self,
            Digest::None | Digest::Md4 | Digest::Md5 | Digest::Sha0
        )
    }
}

/// Data-channel compression, with OpenVPN's one framing byte per packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Compression {
    /// No compression and no framing byte.
    None,
    Lz4,
    /// LZO, only with the `lzo` cargo feature (the LZO crates are GPL).
    Lzo,
}

impl Named for Compression {
    const KIND: &'static str = "compression";
    const ALL: &'static [Self] = &[Compression::None, Compression::Lz4, Compression::Lzo];

    fn id(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Lz4 => "lz4",
            Compression::Lzo => "lzo",
        }
    }

    fn aliases(self) -> &'static [&'static str] {
        match self {
            Compression::None => &["off", "no"],
            Compression::Lz4 => &[],
            Compression::Lzo => &["comp-lzo"],
        }
    }
}

impl Compression {
    /// Why this build cannot compress this way, if it cannot.
    pub fn unsupported_reason(self) -> Option<&'static str> {
        match self {
            Compression::Lzo if !cfg!(feature = "lzo") => {
                Some("LZO is not built in: rebuild with `--features lzo` (GPL-licensed rust-lzo)")
            }
            _ => None,
        }
    }

    /// Compression in a tunnel leaks plaintext through packet sizes.
    pub fn security_notes(self) -> Vec<&'static str> {
        match self {
            Compression::None => vec![],
            _ => vec!["compression before encryption leaks content (VORACLE)"],
        }
    }
}

/// What the packets carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Payload {
    /// Incompressible bytes.
    Random,
    /// All zero bytes (the best case for compression).
    Zero,
    /// HTML-like text, compressible as real web traffic is.
    Text,
}

impl Named for Payload {
    const KIND: &'static str = "payload";
    const ALL: &'static [Self] = &[Payload::Random, Payload::Zero, Payload::Text];

    fn id(self) -> &'static str {
        match self {
            Payload::Random => "random",
            Payload::Zero => "zero",
            Payload::Text => "text",
        }
    }

    fn aliases(self) -> &'static [&'static str] {
        match self {
            Payload::Random => &["urandom"],
            Payload::Zero => &["zeros", "zeroes"],
            Payload::Text => &["html"],
        }
    }
}

impl Payload {
    /// `length` bytes of this payload; packet `index` selects a different
    /// slice so consecutive packets are not identical.
    pub fn bytes(self, index: usize, length: usize) -> Vec<u8> {
        match self {
            Payload::Zero => vec![0; length],
            Payload::Random => {
                // A xorshift stream: incompressible, reproducible, cheap.
                let mut state =
                    0x9E37_79B9_7F4A_7C15u64 ^ (index as u64).wrapping_mul(0xA24B_AED4_963E_E407);
                (0..length)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        (state >> 24) as u8
                    })
                    .collect()
            }
            Payload::Text => {
                let text = html_text();
                let start = (index * 997) % text.len();
                text.iter()
                    .cycle()
                    .skip(start)
                    .take(length)
                    .copied()
                    .collect()
            }
        }
    }
}

/// About 16 KB of HTML-like text with repetition typical of web pages.
fn html_text() -> &'static [u8] {
    static TEXT: OnceLock<Vec<u8>> = OnceLock::new();
    TEXT.get_or_init(|| {
        let words = [
            "tunnel", "cipher", "packet", "digest", "server", "client", "network", "latency",
            "throughput", "measure", "configuration", "the", "of", "and", "a", "to", "in",
        ];
        let mut text = String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Status</title></head>\n<body>\n");
        let mut state = 7u32;
        let mut item = 0;
        while text.len() < 16 * 1024 {
            item += 1;
            text.push_str(&format!(
                "<div class=\"row\" id=\"item-{item}\"><a href=\"/items/{item}\">Item {item}</a><p>"
            ));
            for _ in 0..12 {
                state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                text.push_str(words[(state >> 16) as usize % words.len()]);
                text.push(' ');
            }
            text.push_str("</p></div>\n");
        }
        text.push_str("</body></html>\n");
        text.into_bytes()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::names::{parse_list, parse_name};

    #[test]
    fn the_classic_digest_names_resolve_to_ten_digests() {
        let digests = parse_list::<Digest>(&CLASSIC_DIGEST_NAMES.join(",")).unwrap();
        assert_eq!(digests.len(), 10, "{digests:?}");
        assert_eq!(parse_name::<Digest>("RSA-SHA1-2"), Ok(Digest::Sha1));
        assert_eq!(parse_name::<Digest>("SHA"), Ok(Digest::Sha0));
    }

    #[test]
    fn weak_ciphers_say_why() {
        assert!(Cipher::BfCbc
            .security_notes()
            .iter()
            .any(|n| n.contains("SWEET32")));
        assert!(Cipher::DesCbc
            .security_notes()
            .iter()
            .any(|n| n.contains("56-bit")));
        assert!(Cipher::Aes128Gcm.security_notes().is_empty());
        assert!(Digest::Md5.is_weak() && !Digest::Sha256.is_weak());
    }

    #[test]
    fn payloads_differ_in_compressibility() {
        let random = Payload::Random.bytes(0, 1400);
        assert_ne!(random, Payload::Random.bytes(1, 1400));
        assert!(Payload::Zero.bytes(0, 1400).iter().all(|&b| b == 0));
        let text = Payload::Text.bytes(3, 1400);
        assert_eq!(text.len(), 1400);
        assert!(text.is_ascii());
    }
}
