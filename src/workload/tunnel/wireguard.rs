//! The WireGuard engine: both peers of a WireGuard tunnel in this process
//! (boringtun's `noise::Tunn`), their datagrams passed over memory
//! buffers. A row is readied with one Noise IK handshake (initiation,
//! response, the initiator's keepalive, a first data packet), untimed; a sample is then a
//! batch of IP packets the initiator encapsulates and the responder
//! decapsulates, each end's time taken apart and every packet compared
//! with the one sent. Rows are ready at once and sampled in interleaved
//! rounds, as the in-process engine's are; under valgrind
//! (`--measure instructions`) a batch is counted the same way: the
//! sender's encapsulation as the client's turn, the receiver's
//! decapsulation as the server's ([`crate::backend::turns`]). The
//! handshake itself, timed per side, is the engine's connection set-up
//! ([`setup`], `tunnel --setup`).
//!
//! WireGuard's cryptography is fixed: ChaCha20-Poly1305 (ring's, through
//! boringtun), no HMAC digest, no compression. Every other cell of the
//! matrix is a row that says why. WireGuard carries IP packets (boringtun
//! drops anything else), so the first 20 bytes of every payload are an
//! IPv4 header whose length is the packet's; the no-tunnel row copies the
//! same packets.

use std::net::Ipv4Addr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{Context, Result};
use boringtun::noise::rate_limiter::RateLimiter;
use boringtun::noise::{Tunn, TunnResult};
use boringtun::x25519::{PublicKey, StaticSecret};

mod setup;

use super::engine::{
    CountedSample, EngineDescriptor, EngineDetails, EngineOptions, EngineRig, TunnelEngine,
};
use super::setup::{SetupKind, SetupOutcome, SetupProbe};
use super::{timed_batch, TunnelOutcome, TunnelSample, DISTINCT_PAYLOADS};
use crate::backend::{CpuMasking, LibraryInfo};
use crate::measure::{Outcome, Probe};
use crate::scenario::tunnel::{Cipher, Compression, Digest, EngineId, TunnelScenario};

/// boringtun's version, as Cargo.toml pins it: the run's provenance.
const BORINGTUN_VERSION: &str = "0.7.1";

/// The IPv4 header every tunnelled packet starts with.
const IPV4_HEADER_BYTES: usize = 20;

/// What a WireGuard data message adds to a packet: type, receiver index
/// and counter (16 bytes), and the Poly1305 tag (16). boringtun does not
/// pad the packet to 16 bytes.
const DATA_OVERHEAD_BYTES: usize = 32;

/// The smallest buffer boringtun writes into: a handshake initiation
/// (148 bytes) fits.
const MIN_DATAGRAM_BUFFER_BYTES: usize = 148;

/// How long one batch should take, so timer overhead stays negligible
/// (as the in-process engine's).
const TARGET_BATCH_NS: u64 = 1_000_000;

/// The wireguard engine in the registry of tunnel engines.
pub static DESCRIPTOR: EngineDescriptor = EngineDescriptor {
    id: EngineId::Wireguard,
    library: "boringtun",
    listed: true,
    programs: &[],
    scratch: None,
    install: "",
    uncountable: None,
    details: EngineDetails {
        about:
            "WireGuard's data channel, boringtun's peers in this process; ChaCha20-Poly1305 only",
        open: || &WireguardEngine,
    },
};

/// The WireGuard engine, as registered.
pub struct WireguardEngine;

impl TunnelEngine for WireguardEngine {
    fn id(&self) -> EngineId {
        EngineId::Wireguard
    }

    /// Always runs: boringtun is linked in.
    fn preflight(&self) -> Result<LibraryInfo, String> {
        Ok(LibraryInfo {
            subject: crate::scenario::Subject::engine(EngineId::Wireguard),
            library: "boringtun".to_string(),
            version: BORINGTUN_VERSION.to_string(),
        })
    }

    fn cipher_unsupported(&self, cipher: Cipher) -> Option<String> {
        (cipher != Cipher::Chacha20Poly1305)
            .then(|| "WireGuard's data channel is ChaCha20-Poly1305 only".to_string())
    }

    fn digest_unsupported(&self, digest: Digest) -> Option<String> {
        (digest != Digest::None).then(|| {
            "WireGuard authenticates with ChaCha20-Poly1305's tag, not an HMAC digest".to_string()
        })
    }

    fn compression_unsupported(&self, compression: Compression) -> Option<String> {
        (compression != Compression::None).then(|| "WireGuard has no compression".to_string())
    }

    /// A tunnel row whose packet cannot hold an IPv4 header.
    fn row_unsupported(&self, scenario: &TunnelScenario) -> Option<String> {
        (!scenario.baseline && scenario.payload_bytes < IPV4_HEADER_BYTES).then(|| {
            format!(
                "WireGuard carries IP packets: {} bytes cannot hold a {IPV4_HEADER_BYTES}-byte IPv4 header",
                scenario.payload_bytes
            )
        })
    }

    /// boringtun seals and opens its packets with ring's
    /// ChaCha20-Poly1305, which picks its code from the CPU's features
    /// with no run-time switch.
    fn cpu_masking(&self) -> CpuMasking {
        CpuMasking::Impossible(
            "boringtun's ChaCha20-Poly1305 is ring's, and ring has no switch to turn its CPU features off",
        )
    }

    fn prepare_counted(
        &self,
        scenario: &TunnelScenario,
        packets: u64,
    ) -> Result<CountedSample, TunnelOutcome> {
        let mut probe = WireguardProbe::prepare(scenario)?;
        // One uncounted batch of the counted size: every datagram's buffer
        // is allocated before counting.
        probe
            .batcher
            .run(packets as usize)
            .map_err(|reason| Outcome::Failed { reason })?;
        Ok(Box::new(move || {
            probe.batcher.run(packets as usize).map(drop)
        }))
    }

    fn interleaves_rows(&self) -> bool {
        true
    }

    fn start(&self, _options: &EngineOptions) -> Result<Box<dyn EngineRig>> {
        Ok(Box::new(WireguardRig))
    }

    fn setup_uncountable(&self) -> Option<&'static str> {
        None
    }

    fn prepare_counted_setup(&self) -> Result<CountedSample, SetupOutcome> {
        setup::prepare_counted()
    }

    /// One Noise IK handshake and a first data packet between fresh peers,
    /// in process ([`setup`]).
    fn prepare_setup<'a>(
        &self,
        _kind: SetupKind,
        interrupt: &'a AtomicBool,
    ) -> Result<SetupProbe<'a>, SetupOutcome> {
        setup::prepare(interrupt)
    }
}

/// Nothing is shared between WireGuard rows: each has its own two peers.
struct WireguardRig;

impl EngineRig for WireguardRig {
    fn prepare<'rig>(
        &'rig self,
        scenario: &TunnelScenario,
        _interrupt: &'rig AtomicBool,
    ) -> Result<Probe<'rig, TunnelSample>, TunnelOutcome> {
        let mut probe = WireguardProbe::prepare(scenario)?;
        Ok(Box::new(move || probe.batcher.run(probe.batch)))
    }
}

/// A WireGuard row ready to sample: its peers and a batch size.
struct WireguardProbe {
    batcher: Batcher,
    batch: usize,
}

impl WireguardProbe {
    /// Makes the two peers, does their handshake and sizes the batch so
    /// one sample takes about [`TARGET_BATCH_NS`]; or the outcome that says
    /// why the row cannot run.
    fn prepare(scenario: &TunnelScenario) -> Result<Self, TunnelOutcome> {
        if let Some(reason) = WireguardEngine.unsupported_reason(scenario) {
            return Err(Outcome::Unsupported { reason });
        }
        let mut batcher = Batcher::new(scenario).map_err(|error| Outcome::Failed {
            reason: format!("{error:#}"),
        })?;
        let probe = batcher
            .run(8)
            .map_err(|reason| Outcome::Failed { reason })?;
        let per_packet_ns = (probe.total_ns() / 8).max(1);
        let batch = (TARGET_BATCH_NS / per_packet_ns).clamp(4, 4096) as usize;
        Ok(Self { batcher, batch })
    }
}

/// The two ends of a keyed tunnel: the handshake's initiator sends, its
/// responder receives.
struct Peers {
    sender: Tunn,
    receiver: Tunn,
}

impl Peers {
    /// Two peers with fresh static keys, configured for each other and
    /// not yet connected. Each has a rate limiter without a limit:
    /// boringtun's default answers with a cookie instead of a handshake
    /// after 10 handshakes a second, and nothing here should depend on how
    /// fast rows are readied or set-ups sampled.
    fn configured() -> Result<Self> {
        let (sender_secret, receiver_secret) = (static_secret()?, static_secret()?);
        let sender_public = PublicKey::from(&sender_secret);
        let receiver_public = PublicKey::from(&receiver_secret);
        let peer = |secret: StaticSecret, peer_public: PublicKey, index: u32| {
            let limiter = RateLimiter::new(&PublicKey::from(&secret), u64::MAX);
            Tunn::new(
                secret,
                peer_public,
                None,
                None,
                index,
                Some(Arc::new(limiter)),
            )
        };
        Ok(Self {
            sender: peer(sender_secret, receiver_public, 1),
            receiver: peer(receiver_secret, sender_public, 2),
        })
    }

    /// Two peers with their session established: the set-up
    /// ([`setup::establish`]), its figures dropped.
    fn handshaken() -> Result<Self> {
        let mut peers = Self::configured()?;
        setup::establish(&mut peers, None)?;
        Ok(peers)
    }
}

/// A fresh X25519 static key from OpenSSL's generator.
fn static_secret() -> Result<StaticSecret> {
    let mut bytes = [0u8; 32];
    openssl::rand::rand_bytes(&mut bytes).context("drawing a WireGuard static key")?;
    Ok(StaticSecret::from(bytes))
}

/// What boringtun answered where it should have answered otherwise, in words.
fn unexpected(result: TunnResult<'_>) -> String {
    match result {
        TunnResult::Done => "boringtun gave nothing".to_string(),
        TunnResult::Err(error) => format!("boringtun refused: {error:?}"),
        TunnResult::WriteToNetwork(datagram) => {
            format!("boringtun gave a {}-byte datagram to send", datagram.len())
        }
        TunnResult::WriteToTunnelV4(packet, _) | TunnResult::WriteToTunnelV6(packet, _) => {
            format!("boringtun gave a {}-byte packet", packet.len())
        }
    }
}

/// The payload as the IP packet WireGuard carries: its first
/// [`IPV4_HEADER_BYTES`] an IPv4 header (UDP, 10.233.0.1 to 10.233.0.2)
/// whose total length is the packet's, so the receiver keeps every byte.
/// The header's checksum stays 0: boringtun reads the version, the length
/// and the source only. A payload too short for the header (the no-tunnel
/// row only) is left as it is.
fn ip_packet(mut payload: Vec<u8>) -> Vec<u8> {
    let Ok(total_length) = u16::try_from(payload.len()) else {
        return payload;
    };
    if payload.len() < IPV4_HEADER_BYTES {
        return payload;
    }
    let header = &mut payload[..IPV4_HEADER_BYTES];
    header.fill(0);
    header[0] = 0x45; // version 4, five 32-bit words of header
    header[2..4].copy_from_slice(&total_length.to_be_bytes());
    header[8] = 64; // time to live
    header[9] = 17; // UDP
    header[12..16].copy_from_slice(&Ipv4Addr::new(10, 233, 0, 1).octets());
    header[16..20].copy_from_slice(&Ipv4Addr::new(10, 233, 0, 2).octets());
    payload
}

/// IP packets through a WireGuard sender and receiver (or copied, for the
/// no-tunnel row), batch by batch.
struct Batcher {
    /// `None` for the no-tunnel row: the packets are copied instead.
    peers: Option<Peers>,
    /// The distinct packets sent in turn.
    packets: Vec<Vec<u8>>,
    /// One buffer per packet of the batch, for its datagram.
    datagrams: Vec<Vec<u8>>,
    /// How much of each buffer the datagram fills.
    datagram_bytes: Vec<usize>,
    /// The receiver's buffer for one decapsulated packet.
    received: Vec<u8>,
    next_packet: usize,
}

impl Batcher {
    fn new(scenario: &TunnelScenario) -> Result<Self> {
        let peers = if scenario.baseline {
            None
        } else {
            Some(Peers::handshaken().context("the WireGuard handshake")?)
        };
        let packets: Vec<Vec<u8>> = (0..DISTINCT_PAYLOADS)
            .map(|i| ip_packet(scenario.payload.bytes(i, scenario.payload_bytes)))
            .collect();
        Ok(Self {
            peers,
            packets,
            datagrams: Vec::new(),
            datagram_bytes: Vec::new(),
            received: vec![0; Self::buffer_bytes(scenario.payload_bytes)],
            next_packet: 0,
        })
    }

    /// A buffer big enough for a packet's datagram (and for anything else
    /// boringtun may write).
    fn buffer_bytes(packet_bytes: usize) -> usize {
        (packet_bytes + DATA_OVERHEAD_BYTES).max(MIN_DATAGRAM_BUFFER_BYTES)
    }

    /// One batch of `batch` packets: the sender's and the receiver's time
    /// apart, every packet checked.
    fn run(&mut self, batch: usize) -> Result<TunnelSample, String> {
        let buffer_bytes = Self::buffer_bytes(self.packets[0].len());
        if self.datagrams.len() < batch {
            self.datagrams.resize_with(batch, || vec![0; buffer_bytes]);
            self.datagram_bytes.resize(batch, 0);
        }
        let first = self.next_packet;
        let payload_bytes = batch * self.packets[0].len();
        let sample = timed_batch(
            self,
            batch,
            payload_bytes,
            |batcher| batcher.send(first, batch),
            |batcher| batcher.receive(first, batch),
        )?;
        self.next_packet = (first + batch) % DISTINCT_PAYLOADS;
        Ok(sample)
    }

    /// The sender's part: each packet encapsulated into its datagram.
    fn send(&mut self, first: usize, batch: usize) -> Result<(), String> {
        for i in 0..batch {
            let packet = &self.packets[(first + i) % DISTINCT_PAYLOADS];
            let datagram = &mut self.datagrams[i];
            self.datagram_bytes[i] = match &mut self.peers {
                None => {
                    datagram[..packet.len()].copy_from_slice(packet);
                    packet.len()
                }
                Some(peers) => match peers.sender.encapsulate(packet, datagram) {
                    TunnResult::WriteToNetwork(sent) => sent.len(),
                    other => return Err(format!("sending: {}", unexpected(other))),
                },
            };
        }
        Ok(())
    }

    /// The receiver's part: each datagram decapsulated and compared with
    /// the packet sent.
    fn receive(&mut self, first: usize, batch: usize) -> Result<(), String> {
        for i in 0..batch {
            let datagram = &self.datagrams[i][..self.datagram_bytes[i]];
            let received: &[u8] = match &mut self.peers {
                None => {
                    self.received[..datagram.len()].copy_from_slice(datagram);
                    &self.received[..datagram.len()]
                }
                Some(peers) => match peers
                    .receiver
                    .decapsulate(None, datagram, &mut self.received)
                {
                    TunnResult::WriteToTunnelV4(packet, _) => packet,
                    other => return Err(format!("receiving: {}", unexpected(other))),
                },
            };
            if received != self.packets[(first + i) % DISTINCT_PAYLOADS].as_slice() {
                return Err("the received packet differs from the one sent".to_string());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::tunnel::Payload;

    fn row(cipher: Cipher, payload: Payload, payload_bytes: usize) -> TunnelScenario {
        TunnelScenario {
            baseline: false,
            cipher,
            digest: Digest::None,
            compression: Compression::None,
            payload,
            payload_bytes,
        }
    }

    #[test]
    fn packets_cross_the_tunnel_intact_and_grow_by_the_data_message_overhead() {
        for (payload, bytes) in [(Payload::Random, 20), (Payload::Zero, 1400)] {
            let mut batcher = Batcher::new(&row(Cipher::Chacha20Poly1305, payload, bytes)).unwrap();
            let sample = batcher.run(DISTINCT_PAYLOADS + 3).unwrap();
            assert_eq!(sample.packets, (DISTINCT_PAYLOADS + 3) as u64);
            assert_eq!(sample.payload_bytes, sample.packets * bytes as u64);
            assert!(batcher
                .datagram_bytes
                .iter()
                .all(|&sent| sent == bytes + DATA_OVERHEAD_BYTES));
            // Encrypted: the zero payload does not show through.
            let datagram = &batcher.datagrams[0][..batcher.datagram_bytes[0]];
            assert!(!datagram.windows(64).any(|w| w == [0; 64]));
            // A second batch goes on with the same session.
            batcher.run(5).unwrap();
        }
    }

    #[test]
    fn a_tampered_datagram_or_a_different_packet_is_refused() {
        let mut batcher =
            Batcher::new(&row(Cipher::Chacha20Poly1305, Payload::Random, 200)).unwrap();
        batcher.run(4).unwrap();
        let first = batcher.next_packet;
        batcher.send(first, 1).unwrap();
        batcher.datagrams[0][40] ^= 1;
        let error = batcher.receive(first, 1).unwrap_err();
        assert!(error.contains("InvalidAeadTag"), "{error}");
        // A packet that decrypts but is not the one sent is caught too.
        let first = batcher.next_packet;
        batcher.send(first, 1).unwrap();
        batcher.packets[first][100] ^= 1;
        let error = batcher.receive(first, 1).unwrap_err();
        assert!(error.contains("differs"), "{error}");
    }

    #[test]
    fn only_chacha20_poly1305_without_compression_runs_and_the_rest_say_why() {
        let engine = WireguardEngine;
        assert_eq!(
            engine.unsupported_reason(&row(Cipher::Chacha20Poly1305, Payload::Random, 64)),
            None
        );
        let aes = engine
            .unsupported_reason(&row(Cipher::Aes128Gcm, Payload::Random, 64))
            .unwrap();
        assert!(aes.contains("ChaCha20-Poly1305 only"), "{aes}");
        let lz4 = TunnelScenario {
            compression: Compression::Lz4,
            ..row(Cipher::Chacha20Poly1305, Payload::Random, 64)
        };
        assert!(engine
            .unsupported_reason(&lz4)
            .unwrap()
            .contains("no compression"));
        let tiny = engine
            .unsupported_reason(&row(Cipher::Chacha20Poly1305, Payload::Random, 19))
            .unwrap();
        assert!(tiny.contains("IPv4 header"), "{tiny}");
        // The no-tunnel row copies any size.
        let baseline = TunnelScenario::baseline(Payload::Random, 1);
        assert_eq!(engine.unsupported_reason(&baseline), None);
        Batcher::new(&baseline).unwrap().run(4).unwrap();
    }
}
