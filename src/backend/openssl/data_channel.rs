//! The in-process data channel: a sender that compresses, encrypts and
//! authenticates packets, and a receiver that verifies, decrypts,
//! decompresses and rejects replays, laid out as OpenVPN's data channel.
//!
//! Packet layouts (`||` is concatenation):
//! - CBC cipher (static-key mode): `HMAC(IV || C) || IV || C`, where
//!   `C = CBC(packet id || time || [framing byte] || payload)`; encrypt then MAC.
//! - cipher `none`: `HMAC(P) || P`, with `P = packet id || time || [framing] || payload`.
//! - AEAD cipher: `packet id || tag || C`, nonce = packet id || 8 implicit IV
//!   bytes, the packet id authenticated as associated data.
//! - baseline: the payload copied, nothing else.
//!
//! Compression puts one framing byte in front of the payload as OpenVPN does:
//! 0xFA for "sent uncompressed" (when compressing would not shrink it), 0x66
//! for LZO and 0x69 for LZ4.

use anyhow::{anyhow, Context, Result};
use foreign_types::ForeignTypeRef;
use openssl::cipher::Cipher as OpensslCipher;
use openssl::cipher_ctx::CipherCtx;
use openssl::md::{Md, MdRef};
use openssl::md_ctx::MdCtx;

use crate::scenario::tunnel::{CipherMode, Compression, TunnelScenario};

/// Why a packet was rejected by the receiver.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PacketError {
    #[error("packet authentication failed")]
    Authentication,
    #[error("packet too short")]
    Truncated,
    #[error("decryption failed (bad padding)")]
    Decryption,
    #[error("replayed packet id {0}")]
    Replay(u32),
    #[error("decompression failed")]
    Decompression,
    #[error("unknown compression framing byte {0:#04x}")]
    Framing(u8),
}

const NO_COMPRESS_BYTE: u8 = 0xFA;
#[cfg_attr(not(feature = "lzo"), allow(dead_code))]
const LZO_COMPRESS_BYTE: u8 = 0x66;
const LZ4_COMPRESS_BYTE: u8 = 0x69;
const PACKET_ID_BYTES: usize = 4;
/// Static-key mode uses the long packet id form: id and a timestamp.
const TIME_BYTES: usize = 4;
const AEAD_TAG_BYTES: usize = 16;
const IMPLICIT_IV_BYTES: usize = 8;

/// An HMAC (RFC 2104) with the keyed inner and outer digest states computed
/// once, as OpenVPN keeps its HMAC context between packets.
struct Hmac {
    inner: MdCtx,
    outer: MdCtx,
    work: MdCtx,
    size: usize,
    inner_digest: [u8; 64],
}

impl Hmac {
    fn new(md: &MdRef, key: &[u8]) -> Result<Self> {
        let block = md.block_size();
        let mut padded = vec![0u8; block];
        if key.len() > block {
            let mut ctx = MdCtx::new()?;
            ctx.digest_init(md)?;
            ctx.digest_update(key)?;
            ctx.digest_final(&mut padded[..md.size()])?;
        } else {
            padded[..key.len()].copy_from_slice(key);
        }
        let keyed = |pad: u8| -> Result<MdCtx> {
            let block: Vec<u8> = padded.iter().map(|b| b ^ pad).collect();
            let mut ctx = MdCtx::new()?;
            ctx.digest_init(md)?;
            ctx.digest_update(&block)?;
            Ok(ctx)
        };
        Ok(Self {
            inner: keyed(0x36)?,
            outer: keyed(0x5c)?,
            work: MdCtx::new()?,
            size: md.size(),
            inner_digest: [0; 64],
        })
    }

    fn restart_from(work: &mut MdCtx, state: &MdCtx) -> Result<()> {
        // SAFETY: both pointers are valid, initialised EVP_MD_CTX objects
        // owned by `self`; EVP_MD_CTX_copy_ex copies state into work.
        let copied = unsafe { openssl_sys::EVP_MD_CTX_copy_ex(work.as_ptr(), state.as_ptr()) };
        if copied != 1 {
            return Err(openssl::error::ErrorStack::get().into());
        }
        Ok(())
    }

    /// Writes the HMAC of `data` into `out` (`out.len()` = the digest size).
    fn compute(&mut self, data: &[u8], out: &mut [u8]) -> Result<()> {
        Self::restart_from(&mut self.work, &self.inner)?;
        self.work.digest_update(data)?;
        self.work
            .digest_final(&mut self.inner_digest[..self.size])?;
        Self::restart_from(&mut self.work, &self.outer)?;
        self.work.digest_update(&self.inner_digest[..self.size])?;
        self.work.digest_final(out)?;
        Ok(())
    }
}

/// Compresses into a framed payload and back.
struct Compressor {
    compression: Compression,
    scratch: Vec<u8>,
    #[cfg(feature = "lzo")]
    lzo: Option<rust_lzo::LZOContext>,
}

impl Compressor {
    fn new(compression: Compression) -> Self {
        Self {
            compression,
            scratch: Vec::new(),
            #[cfg(feature = "lzo")]
            lzo: (compression == Compression::Lzo).then(rust_lzo::LZOContext::new),
        }
    }

    /// Appends the framed payload to `out`.
    fn compress(&mut self, payload: &[u8], out: &mut Vec<u8>) -> Result<()> {
        let framing = match self.compression {
            Compression::None => {
                out.extend_from_slice(payload);
                return Ok(());
            }
            Compression::Lz4 => {
                self.scratch
                    .resize(lz4_flex::block::get_maximum_output_size(payload.len()), 0);
                let length = lz4_flex::block::compress_into(payload, &mut self.scratch)
                    .map_err(|e| anyhow!("LZ4 compression failed: {e}"))?;
                self.scratch.truncate(length);
                LZ4_COMPRESS_BYTE
            }
            Compression::Lzo => self.compress_lzo(payload)?,
        };
        if self.scratch.len() < payload.len() {
            out.push(framing);
            out.extend_from_slice(&self.scratch);
        } else {
            out.push(NO_COMPRESS_BYTE);
            out.extend_from_slice(payload);
        }
        Ok(())
    }

    #[cfg(feature = "lzo")]
    fn compress_lzo(&mut self, payload: &[u8]) -> Result<u8> {
        // LZO writes without bounds checks: the buffer must hold the worst case.
        self.scratch
            .resize(rust_lzo::worst_compress(payload.len()), 0);
        let context = self.lzo.as_mut().expect("an LZO compressor has a context");
        let (compressed, error) = context.compress_to_slice(payload, &mut self.scratch);
        let length = compressed.len();
        if error != rust_lzo::LZOError::OK {
            return Err(anyhow!("LZO compression failed (error {})", error as i32));
        }
        self.scratch.truncate(length);
        Ok(LZO_COMPRESS_BYTE)
    }

    #[cfg(not(feature = "lzo"))]
    fn compress_lzo(&mut self, _: &[u8]) -> Result<u8> {
        Err(anyhow!(Compression::Lzo
            .unsupported_reason()
            .unwrap_or_default()))
    }

    /// Writes the payload of a framed packet body into `out`, which holds
    /// at most `max_bytes` (the receiver's frame size, as OpenVPN's buffers have).
    fn decompress(
        &mut self,
        body: &[u8],
        out: &mut Vec<u8>,
        max_bytes: usize,
    ) -> Result<(), PacketError> {
        out.clear();
        if self.compression == Compression::None {
            out.extend_from_slice(body);
            return Ok(());
        }
        let (&framing, data) = body.split_first().ok_or(PacketError::Truncated)?;
        match framing {
            NO_COMPRESS_BYTE => out.extend_from_slice(data),
            LZ4_COMPRESS_BYTE => {
                out.resize(max_bytes, 0);
                let length = lz4_flex::block::decompress_into(data, out)
                    .map_err(|_| PacketError::Decompression)?;
                out.truncate(length);
            }
            #[cfg(feature = "lzo")]
            LZO_COMPRESS_BYTE => {
                out.resize(max_bytes, 0);
                let (decompressed, error) = rust_lzo::LZOContext::decompress_to_slice(data, out);
                if error != rust_lzo::LZOError::OK {
                    return Err(PacketError::Decompression);
                }
                let length = decompressed.len();
                out.truncate(length);
            }
            other => return Err(PacketError::Framing(other)),
        }
        Ok(())
    }
}

/// Key material of one direction, as a static key file holds it.
struct Keys {
    cipher: [u8; 64],
    hmac: [u8; 64],
    implicit_iv: [u8; IMPLICIT_IV_BYTES],
}

impl Keys {
    fn random() -> Result<Self> {
        let mut keys = Self {
            cipher: [0; 64],
            hmac: [0; 64],
            implicit_iv: [0; IMPLICIT_IV_BYTES],
        };
        openssl::rand::rand_bytes(&mut keys.cipher)?;
        openssl::rand::rand_bytes(&mut keys.hmac)?;
        openssl::rand::rand_bytes(&mut keys.implicit_iv)?;
        Ok(keys)
    }
}

/// The parts both ends share: scenario, cipher context, HMAC, compressor.
struct End {
    scenario: TunnelScenario,
    cipher: Option<CipherCtx>,
    iv_bytes: usize,
    block_bytes: usize,
    hmac: Option<Hmac>,
    mac: [u8; 64],
    compressor: Compressor,
    implicit_iv: [u8; IMPLICIT_IV_BYTES],
    plaintext: Vec<u8>,
}

impl End {
    fn new(scenario: &TunnelScenario, keys: &Keys, encrypt: bool) -> Result<Self> {
        super::load_legacy_provider();
        let mut end = Self {
            scenario: *scenario,
            cipher: None,
            iv_bytes: 0,
            block_bytes: 1,
            hmac: None,
            mac: [0; 64],
            compressor: Compressor::new(scenario.compression),
            implicit_iv: keys.implicit_iv,
            plaintext: Vec::new(),
        };
        if scenario.baseline {
            return Ok(end);
        }
        if let Some(name) = scenario.cipher.openssl_name() {
            let cipher = OpensslCipher::fetch(None, name, None)
                .with_context(|| format!("this OpenSSL build has no cipher {name}"))?;
            let key = &keys.cipher[..cipher.key_length()];
            let mut ctx = CipherCtx::new()?;
            if encrypt {
                ctx.encrypt_init(Some(&cipher), Some(key), None)?;
            } else {
                ctx.decrypt_init(Some(&cipher), Some(key), None)?;
            }
            end.iv_bytes = cipher.iv_length();
            end.block_bytes = cipher.block_size();
            end.cipher = Some(ctx);
        }
        if scenario.cipher.mode() != CipherMode::Aead {
            if let Some(name) = scenario.digest.openssl_name() {
                let md = Md::fetch(None, name, None)
                    .with_context(|| format!("this OpenSSL build has no digest {name}"))?;
                end.hmac = Some(Hmac::new(&md, &keys.hmac[..md.size().max(16)])?);
            }
        }
        Ok(end)
    }

    fn mac_bytes(&self) -> usize {
        self.hmac.as_ref().map_or(0, |h| h.size)
    }
}

/// The sending end: compress, encrypt, authenticate.
pub struct Sender {
    end: End,
    packet_id: u32,
}

/// The receiving end: verify, decrypt, reject replays, decompress.
pub struct Receiver {
    end: End,
    last_packet_id: u32,
    payload: Vec<u8>,
}

/// Why this build cannot run the scenario's data channel in process, if it
/// cannot: a compression left out of the build, or a cipher or digest this
/// OpenSSL lacks. The legacy provider is loaded first, so Blowfish, CAST5,
/// DES, RC2, SEED, MD4 and Whirlpool count wherever it is installed.
pub fn unsupported_reason(scenario: &TunnelScenario) -> Option<String> {
    if scenario.baseline {
        return None;
    }
    if let Some(reason) = scenario.compression.unsupported_reason() {
        return Some(reason.to_string());
    }
    super::load_legacy_provider();
    if let Some(name) = scenario.cipher.openssl_name() {
        if OpensslCipher::fetch(None, name, None).is_err() {
            return Some(format!("this OpenSSL build has no cipher {name}"));
        }
    }
    if scenario.cipher.mode() != CipherMode::Aead {
        if let Some(name) = scenario.digest.openssl_name() {
            if Md::fetch(None, name, None).is_err() {
                return Some(format!("this OpenSSL build has no digest {name}"));
            }
        }
    }
    None
}

/// A connected sender and receiver for a scenario, with fresh random keys.
pub fn pair(scenario: &TunnelScenario) -> Result<(Sender, Receiver)> {
    let keys = Keys::random()?;
    Ok((
        Sender {
            end: End::new(scenario, &keys, true)?,
            packet_id: 0,
        },
        Receiver {
            end: End::new(scenario, &keys, false)?,
            last_packet_id: 0,
            payload: Vec::new(),
        },
    ))
}

fn now_seconds() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as u32)
}

impl Sender {
    /// Seals one payload into `packet` (cleared first).
    pub fn seal(&mut self, payload: &[u8], packet: &mut Vec<u8>) -> Result<()> {
        packet.clear();
        let end = &mut self.end;
        if end.scenario.baseline {
            packet.extend_from_slice(payload);
            return Ok(());
        }
        self.packet_id = self
            .packet_id
            .checked_add(1)
            .context("packet id space exhausted: a real tunnel would rekey")?;
        let id = self.packet_id.to_be_bytes();
        end.plaintext.clear();
        if end.scenario.cipher.mode() != CipherMode::Aead {
            end.plaintext.extend_from_slice(&id);
            end.plaintext
                .extend_from_slice(&now_seconds().to_be_bytes());
        }
        end.compressor.compress(payload, &mut end.plaintext)?;

        match end.scenario.cipher.mode() {
            CipherMode::Plain => {
                let mac_bytes = end.mac_bytes();
                packet.resize(mac_bytes, 0);
                if let Some(hmac) = &mut end.hmac {
                    hmac.compute(&end.plaintext, &mut packet[..mac_bytes])?;
                }
                packet.extend_from_slice(&end.plaintext);
            }
            CipherMode::Cbc => {
                let mac_bytes = end.mac_bytes();
                let header = mac_bytes + end.iv_bytes;
                packet.resize(header + end.plaintext.len() + 2 * end.block_bytes, 0);
                openssl::rand::rand_bytes(&mut packet[mac_bytes..header])?;
                let ctx = end.cipher.as_mut().expect("a CBC end has a cipher");
                ctx.encrypt_init(None, None, Some(&packet[mac_bytes..header]))?;
                let (_, body) = packet.split_at_mut(header);
                let written = ctx.cipher_update(&end.plaintext, Some(body))?;
                let written = written + ctx.cipher_final(&mut body[written..])?;
                packet.truncate(header + written);
                if let Some(hmac) = &mut end.hmac {
                    let (mac, authenticated) = packet.split_at_mut(mac_bytes);
                    hmac.compute(authenticated, mac)?;
                }
            }
            CipherMode::Aead => {
                let header = PACKET_ID_BYTES + AEAD_TAG_BYTES;
                packet.extend_from_slice(&id);
                packet.resize(header + end.plaintext.len() + end.block_bytes, 0);
                let mut nonce = [0u8; PACKET_ID_BYTES + IMPLICIT_IV_BYTES];
                nonce[..PACKET_ID_BYTES].copy_from_slice(&id);
                nonce[PACKET_ID_BYTES..].copy_from_slice(&end.implicit_iv);
                let ctx = end.cipher.as_mut().expect("an AEAD end has a cipher");
                ctx.encrypt_init(None, None, Some(&nonce))?;
                ctx.cipher_update(&id, None)?;
                let (head, body) = packet.split_at_mut(header);
                let written = ctx.cipher_update(&end.plaintext, Some(body))?;
                let written = written + ctx.cipher_final(&mut body[written..])?;
                ctx.tag(&mut head[PACKET_ID_BYTES..])?;
                packet.truncate(header + written);
            }
        }
        Ok(())
    }
}

impl Receiver {
    /// Opens one packet; on success the payload is in [`Receiver::payload`].
    pub fn open(&mut self, packet: &[u8]) -> Result<(), PacketError> {
        let end = &mut self.end;
        if end.scenario.baseline {
            self.payload.clear();
            self.payload.extend_from_slice(packet);
            return Ok(());
        }
        let mode = end.scenario.cipher.mode();
        let (id, framed): (u32, &[u8]) = match mode {
            CipherMode::Plain | CipherMode::Cbc => {
                let mac_bytes = end.mac_bytes();
                if packet.len() < mac_bytes + end.iv_bytes {
                    return Err(PacketError::Truncated);
                }
                let (mac, authenticated) = packet.split_at(mac_bytes);
                if let Some(hmac) = &mut end.hmac {
                    hmac.compute(authenticated, &mut end.mac[..mac_bytes])
                        .map_err(|_| PacketError::Authentication)?;
                    if !openssl::memcmp::eq(mac, &end.mac[..mac_bytes]) {
                        return Err(PacketError::Authentication);
                    }
                }
                let body: &[u8] = if mode == CipherMode::Plain {
                    authenticated
                } else {
                    let (iv, ciphertext) = authenticated.split_at(end.iv_bytes);
                    let ctx = end.cipher.as_mut().expect("a CBC end has a cipher");
                    end.plaintext.resize(ciphertext.len() + end.block_bytes, 0);
                    let plaintext = &mut end.plaintext;
                    let opened = (|| {
                        ctx.decrypt_init(None, None, Some(iv)).ok()?;
                        let written = ctx.cipher_update(ciphertext, Some(plaintext)).ok()?;
                        let last = ctx.cipher_final(&mut plaintext[written..]).ok()?;
                        Some(written + last)
                    })();
                    let length = opened.ok_or(PacketError::Decryption)?;
                    end.plaintext.truncate(length);
                    &end.plaintext
                };
                let header = PACKET_ID_BYTES + TIME_BYTES;
                if body.len() < header {
                    return Err(PacketError::Truncated);
                }
                let id = u32::from_be_bytes(body[..PACKET_ID_BYTES].try_into().expect("4 bytes"));
                (id, &body[header..])
            }
            CipherMode::Aead => {
                let header = PACKET_ID_BYTES + AEAD_TAG_BYTES;
                if packet.len() < header {
                    return Err(PacketError::Truncated);
                }
                let (id, rest) = packet.split_at(PACKET_ID_BYTES);
                let (tag, ciphertext) = rest.split_at(AEAD_TAG_BYTES);
                let mut nonce = [0u8; PACKET_ID_BYTES + IMPLICIT_IV_BYTES];
                nonce[..PACKET_ID_BYTES].copy_from_slice(id);
                nonce[PACKET_ID_BYTES..].copy_from_slice(&end.implicit_iv);
                let ctx = end.cipher.as_mut().expect("an AEAD end has a cipher");
                end.plaintext.resize(ciphertext.len() + end.block_bytes, 0);
                let plaintext = &mut end.plaintext;
                let opened = (|| {
                    ctx.decrypt_init(None, None, Some(&nonce)).ok()?;
                    ctx.cipher_update(id, None).ok()?;
                    let written = ctx.cipher_update(ciphertext, Some(plaintext)).ok()?;
                    ctx.set_tag(tag).ok()?;
                    let last = ctx.cipher_final(&mut plaintext[written..]).ok()?;
                    Some(written + last)
                })();
                let length = opened.ok_or(PacketError::Authentication)?;
                end.plaintext.truncate(length);
                let id = u32::from_be_bytes(id.try_into().expect("4 bytes"));
                (id, &end.plaintext)
            }
        };
        if id <= self.last_packet_id {
            return Err(PacketError::Replay(id));
        }
        self.last_packet_id = id;
        end.compressor
            .decompress(framed, &mut self.payload, end.scenario.payload_bytes)
    }

    /// The payload of the last packet opened.
    pub fn payload(&self) -> &[u8] {
        &self.payload
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::tunnel::{Cipher, Digest, Payload};

    fn scenario(cipher: Cipher, digest: Digest, compression: Compression) -> TunnelScenario {
        TunnelScenario {
            baseline: false,
            cipher,
            digest,
            compression,
            payload: Payload::Text,
            payload_bytes: 300,
        }
    }

    #[test]
    fn hmac_matches_openssl() {
        let key = [7u8; 64];
        let data = b"the data channel";
        for (md, digest) in [
            (Md::sha256(), openssl::hash::MessageDigest::sha256()),
            (Md::sha1(), openssl::hash::MessageDigest::sha1()),
        ] {
            let mut hmac = Hmac::new(md, &key).unwrap();
            let mut ours = vec![0u8; md.size()];
            hmac.compute(data, &mut ours).unwrap();
            let pkey = openssl::pkey::PKey::hmac(&key).unwrap();
            let mut signer = openssl::sign::Signer::new(digest, &pkey).unwrap();
            signer.update(data).unwrap();
            assert_eq!(ours, signer.sign_to_vec().unwrap());
        }
    }

    #[test]
    fn replayed_packets_are_rejected() {
        let (mut sender, mut receiver) = pair(&scenario(
            Cipher::Aes128Cbc,
            Digest::Sha1,
            Compression::None,
        ))
        .unwrap();
        let mut packet = Vec::new();
        sender.seal(b"hello", &mut packet).unwrap();
        receiver.open(&packet).unwrap();
        assert_eq!(receiver.payload(), b"hello");
        assert_eq!(receiver.open(&packet), Err(PacketError::Replay(1)));
    }

    #[test]
    fn a_payload_larger_than_the_frame_is_refused() {
        let (mut sender, mut receiver) = pair(&scenario(
            Cipher::Aes128Cbc,
            Digest::Sha256,
            Compression::Lz4,
        ))
        .unwrap();
        let mut packet = Vec::new();
        sender.seal(&[0u8; 5000], &mut packet).unwrap();
        assert_eq!(receiver.open(&packet), Err(PacketError::Decompression));
    }

    #[test]
    fn compression_shrinks_zero_packets() {
        let (mut sender, mut receiver) =
            pair(&scenario(Cipher::Aes128Gcm, Digest::None, Compression::Lz4)).unwrap();
        let zeros = vec![0u8; 300];
        let mut packet = Vec::new();
        sender.seal(&zeros, &mut packet).unwrap();
        assert!(packet.len() < 100, "{} bytes", packet.len());
        receiver.open(&packet).unwrap();
        assert_eq!(receiver.payload(), zeros.as_slice());
    }
}
