//! The estimated security strength of every algorithm tlslab measures, in
//! bits, and a configuration's strength as that of its weakest part, with
//! whether it has forward secrecy and whether a part is flagged weak.
//!
//! The numbers are classical security strengths as NIST SP 800-57 Part 1
//! Rev. 5 (May 2020) gives them: Table 2 for key sizes of finite-field,
//! integer-factorisation and elliptic-curve algorithms (RSA-2048 and
//! DH-2048 112, RSA-3072 and P-256 128, RSA-7680 192, P-384 192, RSA-15360
//! and P-521 256), Table 3 for hash functions in HMAC (SHA-1 128 or more,
//! SHA-224 192, SHA-256 and up 256) and §5.6.1.1 for block ciphers (AES-128
//! 128, 3-key TDEA 112, 2-key TDEA 80). Post-quantum parameter sets are
//! placed at the classical strength of their NIST security category (FIPS
//! 203 and FIPS 204: category 1 and 2 as 128, 3 as 192, 5 as 256). Sizes
//! between two table rows (RSA-4096) get the strength the group axis already
//! uses for the same size of finite-field group (152 for 4096 bits,
//! interpolated, as commonly quoted). Key-exchange groups keep their numbers
//! in [`Group::security_bits`]. Security against a quantum computer is not
//! in these numbers: the rows' security notes say which parts are not
//! quantum-safe.

use crate::scenario::bulk::{BulkScenario, Channel};
use crate::scenario::tunnel::TunnelScenario;
use crate::scenario::tunnel_axes::{Cipher, CipherMode, Digest};
use crate::scenario::{Aead, CertKind, Group, HandshakeScenario};

/// What a configuration offers: its strength in bits (its weakest part's),
/// which part that is, forward secrecy where the notion applies, and
/// whether a part is flagged weak (with the notes that say why).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Strength {
    pub bits: u32,
    /// The part that limits the strength, e.g. "RSA-2048 certificate".
    pub weakest: String,
    /// `None` where the rows say nothing of the key exchange (tunnel data
    /// channels measured with static keys, no-crypto rows).
    pub forward_secrecy: Option<bool>,
    pub weak: bool,
    pub notes: Vec<&'static str>,
}

/// The security strength of a certificate's signatures, in bits.
pub fn cert_bits(cert: CertKind) -> u32 {
    match cert {
        CertKind::Rsa2048 => 112,
        CertKind::Rsa3072 => 128,
        CertKind::Rsa4096 => 152,
        CertKind::EcdsaP256 | CertKind::Ed25519 => 128,
        CertKind::EcdsaP384 => 192,
        CertKind::Ed448 => 224,
        CertKind::EcdsaP521 => 256,
        // FIPS 204: ML-DSA-44 category 2, -65 category 3, -87 category 5.
        CertKind::MlDsa44 => 128,
        CertKind::MlDsa65 => 192,
        CertKind::MlDsa87 => 256,
    }
}

/// The security strength of a TLS record protection (cipher and MAC), in bits.
pub fn aead_bits(aead: Aead) -> u32 {
    match aead {
        // HMAC-SHA1, -SHA256 and -SHA384 are all 128 bits or more (Table 3).
        Aead::Aes128Gcm | Aead::Aes128CbcSha | Aead::Aes128CbcSha256 => 128,
        Aead::Aes256Gcm
        | Aead::Chacha20Poly1305
        | Aead::Aes256CbcSha
        | Aead::Aes256CbcSha256
        | Aead::Aes256CbcSha384 => 256,
    }
}

/// The security strength of a tunnel cipher's key, in bits: 0 for no
/// encryption. Ciphers with a variable key count OpenVPN's default key
/// (128 bits for Blowfish, CAST5 and RC2); their 64-bit block is flagged
/// weak apart (SWEET32).
pub fn cipher_bits(cipher: Cipher) -> u32 {
    match cipher {
        Cipher::None => 0,
        Cipher::Rc2_40Cbc => 40,
        Cipher::DesCbc => 56,
        Cipher::Rc2_64Cbc => 64,
        Cipher::DesEdeCbc => 80,
        Cipher::DesEde3Cbc => 112,
        // DESX: a 184-bit key, but about 118 bits against the known attacks.
        Cipher::DesxCbc => 118,
        Cipher::BfCbc
        | Cipher::Cast5Cbc
        | Cipher::Rc2Cbc
        | Cipher::SeedCbc
        | Cipher::Camellia128Cbc
        | Cipher::Aes128Cbc
        | Cipher::Aes128Gcm => 128,
        Cipher::Camellia192Cbc | Cipher::Aes192Cbc => 192,
        Cipher::Camellia256Cbc
        | Cipher::Aes256Cbc
        | Cipher::Aes256Gcm
        | Cipher::Chacha20Poly1305 => 256,
    }
}

/// The security strength of an HMAC with this digest, in bits: 0 for no
/// HMAC and for digests NIST never approved or withdrew (MD4, MD5, SHA-0),
/// which are flagged weak.
pub fn hmac_bits(digest: Digest) -> u32 {
    match digest {
        Digest::None | Digest::Md4 | Digest::Md5 | Digest::Sha0 => 0,
        // RIPEMD-160 is not in SP 800-57; counted as SHA-1, its peer in size.
        Digest::Sha1 | Digest::Ripemd160 => 128,
        Digest::Sha224 => 192,
        Digest::Sha256
        | Digest::Sha384
        | Digest::Sha512
        | Digest::Whirlpool
        | Digest::Sha3_256
        | Digest::Blake2b512 => 256,
    }
}

/// The weakest of some named parts.
fn weakest(parts: Vec<(String, u32)>) -> (u32, String) {
    parts
        .into_iter()
        .map(|(name, bits)| (bits, name))
        .min_by_key(|(bits, _)| *bits)
        .unwrap_or((0, String::new()))
}

/// A handshake row: key exchange, certificate and record protection.
pub fn handshake(scenario: &HandshakeScenario) -> Strength {
    let (bits, weakest) = weakest(vec![
        (
            format!("{} key exchange", scenario.group.display()),
            scenario.group.security_bits(),
        ),
        (
            format!("{} certificate", scenario.cert.display()),
            cert_bits(scenario.cert),
        ),
        (
            format!("{} suite", crate::scenario::Named::id(scenario.aead)),
            aead_bits(scenario.aead),
        ),
    ]);
    Strength {
        bits,
        weakest,
        forward_secrecy: Some(scenario.group != Group::RsaKeyTransport),
        weak: scenario.is_weak(),
        notes: scenario.security_notes(),
    }
}

/// A tunnel row: the data channel's cipher and, unless it is an AEAD, its
/// HMAC. The no-tunnel row has no protection (0 bits, weak).
pub fn tunnel(scenario: &TunnelScenario) -> Strength {
    if scenario.baseline {
        return Strength {
            bits: 0,
            weakest: "no tunnel".to_string(),
            forward_secrecy: None,
            weak: true,
            notes: scenario.security_notes(),
        };
    }
    let mut parts = vec![(
        format!("{} cipher", crate::scenario::Named::id(scenario.cipher)),
        cipher_bits(scenario.cipher),
    )];
    if scenario.cipher.mode() != CipherMode::Aead {
        parts.push((
            format!("{} HMAC", crate::scenario::Named::id(scenario.digest)),
            hmac_bits(scenario.digest),
        ));
    }
    let (bits, weakest) = weakest(parts);
    Strength {
        bits,
        weakest,
        forward_secrecy: None,
        weak: scenario.is_weak(),
        notes: scenario.security_notes(),
    }
}

/// A bulk row: its handshake (fixed group and certificate) and suite; the
/// no-crypto row has no protection.
pub fn bulk(scenario: &BulkScenario) -> Strength {
    match (scenario.channel, scenario.handshake()) {
        (Channel::Tls { .. }, Some(handshake_scenario)) => handshake(&handshake_scenario),
        _ => Strength {
            bits: 0,
            weakest: "no encryption".to_string(),
            forward_secrecy: None,
            weak: true,
            notes: scenario.security_notes(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Resumption, TlsVersion, DEFAULT_CHAIN_DEPTH};

    fn row(group: Group, cert: CertKind, aead: Aead) -> HandshakeScenario {
        HandshakeScenario {
            version: TlsVersion::Tls12,
            group,
            cert,
            aead,
            resumption: Resumption::Off,
            mutual: false,
            chain_depth: DEFAULT_CHAIN_DEPTH,
            mtu_bytes: None,
            transport: crate::scenario::Transport::Memory,
        }
    }

    #[test]
    fn a_handshake_is_as_strong_as_its_weakest_part() {
        let s = handshake(&row(Group::X25519, CertKind::Rsa2048, Aead::Aes256Gcm));
        assert_eq!((s.bits, s.weakest.as_str()), (112, "RSA-2048 certificate"));
        assert_eq!(s.forward_secrecy, Some(true));
        let s = handshake(&row(Group::P384, CertKind::EcdsaP384, Aead::Aes128Gcm));
        assert_eq!((s.bits, s.weakest.as_str()), (128, "aes128gcm suite"));
        let s = handshake(&row(Group::Dhe1024, CertKind::Rsa3072, Aead::Aes128Gcm));
        assert_eq!(s.bits, 80);
        assert!(s.weak);
        let s = handshake(&row(
            Group::RsaKeyTransport,
            CertKind::Rsa2048,
            Aead::Aes128Gcm,
        ));
        assert_eq!(s.forward_secrecy, Some(false));
    }

    #[test]
    fn a_tunnel_counts_the_hmac_only_without_an_aead() {
        let scenario = |cipher, digest| TunnelScenario {
            baseline: false,
            cipher,
            digest,
            compression: crate::scenario::tunnel_axes::Compression::None,
            payload: crate::scenario::tunnel_axes::Payload::Random,
            payload_bytes: 1400,
        };
        assert_eq!(tunnel(&scenario(Cipher::Aes128Gcm, Digest::Md5)).bits, 128);
        let cbc = tunnel(&scenario(Cipher::Aes256Cbc, Digest::Sha1));
        assert_eq!((cbc.bits, cbc.weakest.as_str()), (128, "sha1 HMAC"));
        assert!(tunnel(&scenario(Cipher::BfCbc, Digest::Sha256)).weak);
        assert_eq!(tunnel(&scenario(Cipher::DesCbc, Digest::Sha256)).bits, 56);
    }
}
