//! What one bulk sample does: a fixed amount of application data through an
//! established pair ([`BulkPair`]), in writes of the row's size, the
//! sender's and the receiver's calls timed apart by the thread's CPU clock,
//! every byte checked on arrival. The handshake happened before and is
//! never counted.
//!
//! The data goes in chunks of up to [`CHUNK_BYTES`]: the sender makes every
//! write of a chunk, then the receiver reads the chunk back, so the pipe and
//! the buffers stay in the cache and the clocks are read three times per
//! chunk rather than per write (the thread's CPU clock is a system call).
//! The content check and the stamping of the next chunk happen between
//! the timed stretches and are charged to neither side.

use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use crate::backend::plain::PlainPair;
use crate::backend::plain::{plain_pair_over_tcp, plain_pair_over_udp};
use crate::backend::turns::{side_begins, side_ends};
use crate::backend::{thread_cpu_ns, Backend, BulkPair, Negotiated, Unsupported};
use crate::certs::{CertCache, Credentials};
use crate::measure::{verify, Outcome, Probe, Sampled, Timed};
use crate::scenario::bulk::{BulkScenario, Channel};
use crate::scenario::Side;
use crate::scenario::{HandshakeScenario, Subject, Transport, DEFAULT_MTU_BYTES};
use crate::workload::counted::values::Instructions;

/// The most bytes the sender writes before the receiver reads them back.
pub const CHUNK_BYTES: usize = 256 * 1024;
/// Bounds of the data per sample, whatever the write size.
pub const MIN_SAMPLE_BYTES: usize = 16 * 1024;
pub const MAX_SAMPLE_BYTES: usize = 4 * 1024 * 1024;
/// Writes in the first, sizing sample: enough for small writes to last
/// about a millisecond or two, where a write costs about a microsecond.
const WRITES_PER_SAMPLE: usize = 2048;
/// How long a sample of both sides' CPU time should last, in nanoseconds.
const TARGET_SAMPLE_NS: f64 = 2e6;

/// One sample: a fixed amount of data from the sender to the receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BulkSample {
    /// Application bytes carried (and checked).
    pub bytes: u64,
    /// Application writes they were sent in.
    pub writes: u64,
    /// Wall-clock time inside the sender's calls.
    pub sender_ns: u64,
    /// Wall-clock time inside the receiver's calls.
    pub receiver_ns: u64,
    /// The thread's CPU time inside the sender's calls (protect and put on the pipe).
    pub sender_cpu_ns: u64,
    /// The thread's CPU time inside the receiver's calls (take off the pipe and open).
    pub receiver_cpu_ns: u64,
}

impl BulkSample {
    /// The sender's CPU nanoseconds per byte (equal to its milliseconds per MB).
    pub fn sender_ns_per_byte(&self) -> f64 {
        self.sender_cpu_ns as f64 / self.bytes.max(1) as f64
    }

    /// The receiver's CPU nanoseconds per byte.
    pub fn receiver_ns_per_byte(&self) -> f64 {
        self.receiver_cpu_ns as f64 / self.bytes.max(1) as f64
    }
}

impl Sampled for BulkSample {
    /// Both sides' CPU nanoseconds per byte.
    fn cost(&self) -> f64 {
        (self.sender_cpu_ns + self.receiver_cpu_ns) as f64 / self.bytes.max(1) as f64
    }
}

/// One (scenario, backend) pair and its outcome; the no-crypto rows'
/// subject is [`Subject::Plain`] (written "none").
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BulkCell {
    /// The backend measured, or no library; exported as `backend`.
    #[serde(rename = "backend")]
    pub subject: Subject,
    pub scenario: BulkScenario,
    /// What the handshake negotiated (checked before sampling).
    pub negotiated: Option<Negotiated>,
    /// Application bytes per sample.
    pub sample_bytes: u64,
    /// The timed samples (none when time was not measured).
    pub outcome: Outcome<BulkSample>,
    /// Instructions per sample of `counted_bytes` bytes, the sender's as
    /// the client's and the receiver's as the server's (`--measure
    /// instructions`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<Outcome<Instructions>>,
    /// Application bytes per counted sample (0 when not counted): the
    /// counted samples carry a fixed amount, the timed ones an amount
    /// sized by time.
    pub counted_bytes: u64,
}

impl BulkCell {
    pub fn samples(&self) -> &[Timed<BulkSample>] {
        self.outcome.samples()
    }
}

/// How much data one sample carries and how it is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizing {
    pub write_bytes: usize,
    /// Bytes between the sender's and the receiver's turns: whole writes.
    pub chunk_bytes: usize,
    pub chunks: usize,
}

impl Sizing {
    /// The amount of a first sample for a write size: about
    /// [`WRITES_PER_SAMPLE`] writes, within the bounds; or `sample_bytes`.
    pub fn new(write_bytes: usize, sample_bytes: Option<usize>) -> Self {
        let wanted = sample_bytes.unwrap_or_else(|| {
            (write_bytes.saturating_mul(WRITES_PER_SAMPLE))
                .clamp(MIN_SAMPLE_BYTES, MAX_SAMPLE_BYTES)
        });
        let writes_per_chunk = (CHUNK_BYTES.min(wanted) / write_bytes).max(1);
        let chunk_bytes = writes_per_chunk * write_bytes;
        Self {
            write_bytes,
            chunk_bytes,
            chunks: (wanted / chunk_bytes).max(1),
        }
    }

    pub fn sample_bytes(&self) -> usize {
        self.chunk_bytes * self.chunks
    }
}

/// How many samples one pair gives before it is replaced by a fresh one
/// (a new, uncounted handshake). Long runs of small records would
/// otherwise reach a suite's record limit, where a library updates its
/// keys (TLS 1.3) or closes the connection (TLS 1.2); and, as with
/// handshakers, a row is spread over many placements of its buffers.
pub const SAMPLES_PER_PAIR: u32 = 256;

/// What a probe needs to replace its pair.
struct Renewal {
    backend: Arc<dyn Backend>,
    handshake: HandshakeScenario,
    credentials: Arc<Credentials>,
    every: u32,
    since: u32,
}

/// An established pair ready to sample: one call, one checked sample.
pub struct BulkProbe {
    pair: Box<dyn BulkPair>,
    renewal: Option<Renewal>,
    sizing: Sizing,
    /// What the sender writes in a chunk; each write starts with a counter.
    payload: Vec<u8>,
    received: Vec<u8>,
    counter: u64,
}

impl BulkProbe {
    /// Prepares a row: why it cannot run, or a pair whose handshake
    /// negotiated what the row asks for. `backend` is `None` for the
    /// no-crypto row.
    pub fn prepare(
        backend: Option<&dyn Backend>,
        scenario: &BulkScenario,
        certs: &CertCache,
        sample_bytes: Option<usize>,
    ) -> Result<(Self, Option<Negotiated>), Outcome<BulkSample>> {
        let failed = |error: anyhow::Error| Outcome::Failed {
            reason: format!("{error:#}"),
        };
        let pair: Box<dyn BulkPair> = match (backend, scenario.handshake()) {
            (_, None) => match (scenario.channel, scenario.transport) {
                (Channel::PlainDatagrams, Transport::Udp) => {
                    Box::new(plain_pair_over_udp(DEFAULT_MTU_BYTES).map_err(failed)?)
                }
                (Channel::PlainDatagrams, Transport::Memory) => {
                    Box::new(PlainPair::datagrams(DEFAULT_MTU_BYTES))
                }
                (_, Transport::Tcp) => Box::new(plain_pair_over_tcp().map_err(failed)?),
                (_, Transport::Memory) => Box::new(PlainPair::new()),
                (_, Transport::Udp) => {
                    return Err(Outcome::Unsupported {
                        reason: "UDP carries datagrams: its no-crypto row is plain_dgram".into(),
                    })
                }
            },
            (None, Some(_)) => {
                return Err(Outcome::Failed {
                    reason: "a protected row needs a backend".into(),
                })
            }
            (Some(backend), Some(handshake)) => {
                if let Some(reason) = handshake
                    .protocol_conflict()
                    .or_else(|| backend.unsupported_reason(&handshake))
                {
                    return Err(Outcome::Unsupported { reason });
                }
                let credentials = certs
                    .get(handshake.cert, handshake.chain_depth)
                    .map_err(failed)?;
                let pair = backend
                    .bulk_pair(&handshake, &credentials)
                    .map_err(|error| match error.downcast_ref::<Unsupported>() {
                        Some(unsupported) => Outcome::Unsupported {
                            reason: unsupported.to_string(),
                        },
                        None => failed(error),
                    })?;
                let negotiated = pair.negotiated().ok_or_else(|| Outcome::Failed {
                    reason: "the pair reports no handshake".into(),
                })?;
                verify::check(
                    &handshake,
                    negotiated,
                    backend.capabilities().reports_signature_scheme,
                )
                .map_err(|mismatch| Outcome::Failed {
                    reason: mismatch.to_string(),
                })?;
                pair
            }
        };
        let negotiated = pair.negotiated().cloned();
        let write_bytes = scenario.write_bytes;
        let mut probe = Self::with_pair(pair, Sizing::new(write_bytes, sample_bytes));
        // One unrecorded sample proves the channel carries data, and (unless
        // the amount is given) sizes the row's samples to last about
        // TARGET_SAMPLE_NS: a CBC row costs several times an AES-GCM row.
        let first = probe.run().map_err(|reason| Outcome::Failed { reason })?;
        if sample_bytes.is_none() {
            let wanted = (TARGET_SAMPLE_NS / first.cost().max(1e-3)) as usize;
            let sizing = Sizing::new(
                write_bytes,
                Some(wanted.clamp(MIN_SAMPLE_BYTES, MAX_SAMPLE_BYTES)),
            );
            probe = Self::with_pair(probe.pair, sizing);
        }
        Ok((probe, negotiated))
    }

    /// A probe over any established pair.
    pub fn with_pair(pair: Box<dyn BulkPair>, sizing: Sizing) -> Self {
        let mut payload = vec![0u8; sizing.chunk_bytes];
        // Arbitrary bytes (an LCG), so no pattern of the data helps anyone.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for byte in &mut payload {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            *byte = (state >> 56) as u8;
        }
        Self {
            pair,
            renewal: None,
            sizing,
            payload,
            received: vec![0u8; sizing.chunk_bytes],
            counter: 0,
        }
    }

    /// Replaces the pair with a fresh one from `backend` after every
    /// `every` samples taken through [`Self::probe`] (protected rows only).
    pub fn renew_every(
        &mut self,
        every: u32,
        backend: Arc<dyn Backend>,
        scenario: &BulkScenario,
        certs: &CertCache,
    ) -> anyhow::Result<()> {
        if let Some(handshake) = scenario.handshake() {
            self.renewal = Some(Renewal {
                credentials: certs.get(handshake.cert, handshake.chain_depth)?,
                backend,
                handshake,
                every,
                since: 0,
            });
        }
        Ok(())
    }

    /// A new pair if one is due.
    fn renew_if_due(&mut self) -> Result<(), String> {
        let Some(renewal) = self.renewal.as_mut() else {
            return Ok(());
        };
        renewal.since += 1;
        if renewal.since <= renewal.every {
            return Ok(());
        }
        renewal.since = 1;
        self.pair = renewal
            .backend
            .bulk_pair(&renewal.handshake, &renewal.credentials)
            .map_err(|e| format!("rebuilding the pair: {e:#}"))?;
        Ok(())
    }

    pub fn sizing(&self) -> Sizing {
        self.sizing
    }

    fn stamp(&mut self) {
        stamp(
            &mut self.payload,
            self.sizing.write_bytes,
            &mut self.counter,
        );
    }

    /// One sample: every chunk sent, received and checked.
    pub fn run(&mut self) -> Result<BulkSample, String> {
        if self.pair.ends().is_some() {
            return self.run_in_two_threads();
        }
        let Sizing {
            write_bytes,
            chunk_bytes,
            chunks,
        } = self.sizing;
        let mut sample = BulkSample {
            bytes: (chunk_bytes * chunks) as u64,
            writes: (chunk_bytes / write_bytes * chunks) as u64,
            sender_ns: 0,
            receiver_ns: 0,
            sender_cpu_ns: 0,
            receiver_cpu_ns: 0,
        };
        for _ in 0..chunks {
            self.stamp();
            let (wall, cpu) = (Instant::now(), thread_cpu_ns());
            // The sender is counted as the client, the receiver as the
            // server (the counted measures; nothing otherwise).
            side_begins(Side::Client);
            for write in self.payload.chunks(write_bytes) {
                self.pair
                    .send(write)
                    .map_err(|e| format!("sending: {e:#}"))?;
            }
            side_ends(Side::Client);
            let (sent, sent_cpu) = (Instant::now(), thread_cpu_ns());
            side_begins(Side::Server);
            let mut filled = 0;
            while filled < chunk_bytes {
                let read = self
                    .pair
                    .receive(&mut self.received[filled..])
                    .map_err(|e| format!("receiving: {e:#}"))?;
                if read == 0 {
                    return Err(format!(
                        "the receiver got {filled} of the {chunk_bytes} bytes sent"
                    ));
                }
                filled += read;
            }
            side_ends(Side::Server);
            let (received, received_cpu) = (Instant::now(), thread_cpu_ns());
            if self.received != self.payload {
                let at = self
                    .received
                    .iter()
                    .zip(&self.payload)
                    .position(|(a, b)| a != b)
                    .unwrap_or(0);
                return Err(format!(
                    "the received data differs from the data sent (first at byte {at} of a chunk)"
                ));
            }
            sample.sender_ns += (sent - wall).as_nanos() as u64;
            sample.receiver_ns += (received - sent).as_nanos() as u64;
            sample.sender_cpu_ns += sent_cpu.saturating_sub(cpu);
            sample.receiver_cpu_ns += received_cpu.saturating_sub(sent_cpu);
        }
        let mut leftover = [0u8; 1];
        if self
            .pair
            .receive(&mut leftover)
            .map_err(|e| format!("{e:#}"))?
            != 0
        {
            return Err("the receiver got more bytes than were sent".to_string());
        }
        if let Some((sender, receiver)) = self.pair.fixed_ns_per_byte() {
            // The mock: fixed costs with a small deterministic spread.
            let jitter = 1.0 + (self.counter % 7) as f64 / 1000.0;
            let bytes = sample.bytes as f64;
            sample.sender_cpu_ns = (sender * bytes * jitter) as u64;
            sample.receiver_cpu_ns = (receiver * bytes * jitter) as u64;
            sample.sender_ns = sample.sender_cpu_ns;
            sample.receiver_ns = sample.receiver_cpu_ns;
        }
        Ok(sample)
    }

    /// One sample over a socket: the sender writes every chunk in this
    /// thread while the receiver reads and checks them in another, each
    /// timing its own calls by its thread's clocks (a side blocked on the
    /// other costs wall time, not CPU time). The receiver knows what to
    /// expect: the same payload with the same counters.
    fn run_in_two_threads(&mut self) -> Result<BulkSample, String> {
        let Sizing {
            write_bytes,
            chunk_bytes,
            chunks,
        } = self.sizing;
        let Some((sender, receiver)) = self.pair.ends() else {
            return Err("the pair has no ends to run apart".to_string());
        };
        let payload = &mut self.payload;
        let counter = &mut self.counter;
        let mut expected = payload.clone();
        let mut expected_counter = *counter;
        let received = &mut self.received;
        let (sender_time, receiver_result) = std::thread::scope(|scope| {
            let receiving = scope.spawn(move || -> Result<(u64, u64), String> {
                let (mut wall_ns, mut cpu_ns) = (0, 0);
                for _ in 0..chunks {
                    stamp(&mut expected, write_bytes, &mut expected_counter);
                    let (wall, cpu) = (Instant::now(), thread_cpu_ns());
                    receiver
                        .read_exact(received)
                        .map_err(|e| format!("receiving: {e}"))?;
                    wall_ns += wall.elapsed().as_nanos() as u64;
                    cpu_ns += thread_cpu_ns().saturating_sub(cpu);
                    if received[..] != expected[..] {
                        return Err("the received data differs from the data sent".to_string());
                    }
                }
                Ok((wall_ns, cpu_ns))
            });
            let mut sending = || -> Result<(u64, u64), String> {
                let (mut wall_ns, mut cpu_ns) = (0, 0);
                for _ in 0..chunks {
                    stamp(payload, write_bytes, counter);
                    let (wall, cpu) = (Instant::now(), thread_cpu_ns());
                    for write in payload.chunks(write_bytes) {
                        sender
                            .write_all(write)
                            .map_err(|e| format!("sending: {e}"))?;
                    }
                    wall_ns += wall.elapsed().as_nanos() as u64;
                    cpu_ns += thread_cpu_ns().saturating_sub(cpu);
                }
                Ok((wall_ns, cpu_ns))
            };
            let sent = sending();
            let received = receiving
                .join()
                .unwrap_or_else(|_| Err("the receiver thread panicked".to_string()));
            (sent, received)
        });
        // The receiver's error explains a sender's (a closed connection).
        let (receiver_ns, receiver_cpu_ns) = receiver_result?;
        let (sender_ns, sender_cpu_ns) = sender_time?;
        Ok(BulkSample {
            bytes: (chunk_bytes * chunks) as u64,
            writes: (chunk_bytes / write_bytes * chunks) as u64,
            sender_ns,
            receiver_ns,
            sender_cpu_ns,
            receiver_cpu_ns,
        })
    }

    pub fn probe(&mut self) -> Probe<'_, BulkSample> {
        Box::new(move || {
            self.renew_if_due()?;
            self.run()
        })
    }
}

/// Writes a fresh counter at the start of every write of the chunk, so
/// each chunk differs from the last and a stale buffer cannot pass.
fn stamp(payload: &mut [u8], write_bytes: usize, counter: &mut u64) {
    for write in payload.chunks_mut(write_bytes) {
        *counter += 1;
        let bytes = counter.to_le_bytes();
        let n = write.len().min(bytes.len());
        write[..n].copy_from_slice(&bytes[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizing_keeps_whole_writes_and_bounds() {
        let small = Sizing::new(64, None);
        assert_eq!(small.sample_bytes(), 64 * WRITES_PER_SAMPLE);
        assert_eq!(small.chunk_bytes % 64, 0);
        let large = Sizing::new(16_384, None);
        assert_eq!(large.sample_bytes(), MAX_SAMPLE_BYTES);
        assert_eq!(large.chunk_bytes, CHUNK_BYTES);
        let odd = Sizing::new(1000, Some(10_000));
        assert_eq!(odd.chunk_bytes, 10_000);
        assert_eq!(odd.chunks, 1);
        let huge = Sizing::new(1 << 20, None);
        assert_eq!(huge.chunk_bytes, 1 << 20);
        assert_eq!(huge.sample_bytes(), 4 << 20);
    }

    /// A pair that corrupts one byte of the `nth` write, or loses it.
    struct Broken {
        inner: PlainPair,
        writes: usize,
        nth: usize,
        lose: bool,
    }

    impl BulkPair for Broken {
        fn negotiated(&self) -> Option<&Negotiated> {
            None
        }

        fn send(&mut self, data: &[u8]) -> anyhow::Result<()> {
            self.writes += 1;
            if self.writes != self.nth {
                return self.inner.send(data);
            }
            if self.lose {
                return Ok(());
            }
            let mut copy = data.to_vec();
            *copy.last_mut().unwrap() ^= 1;
            self.inner.send(&copy)
        }

        fn receive(&mut self, out: &mut [u8]) -> anyhow::Result<usize> {
            self.inner.receive(out)
        }
    }

    #[test]
    fn a_broken_channel_fails_its_row() {
        for (lose, expected) in [(false, "differs"), (true, "got 9900 of the 10000")] {
            let pair = Broken {
                inner: PlainPair::new(),
                writes: 0,
                nth: 150,
                lose,
            };
            let mut probe = BulkProbe::with_pair(Box::new(pair), Sizing::new(100, Some(10_000)));
            probe.run().unwrap();
            let error = probe.run().unwrap_err();
            assert!(error.contains(expected), "{error}");
        }
    }

    /// A writer that flips one bit of every byte after the first `clean` bytes.
    struct Flipping<W> {
        inner: W,
        clean: usize,
    }

    impl<W: std::io::Write> std::io::Write for Flipping<W> {
        fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
            let keep = self.clean.min(data.len());
            self.clean -= keep;
            let mut copy = data.to_vec();
            copy[keep..].iter_mut().for_each(|b| *b ^= 1);
            self.inner.write_all(&copy)?;
            Ok(data.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            self.inner.flush()
        }
    }

    #[test]
    fn a_corrupted_socket_fails_its_row_in_two_threads() {
        let loopback = crate::transport::tcp::TcpLoopback::open().unwrap();
        let sender = Flipping {
            inner: loopback.connect().unwrap(),
            clean: 20_000,
        };
        let receiver = loopback.accept().unwrap();
        let pair =
            crate::backend::socket::SocketBulkPair::new(None, Box::new(sender), Box::new(receiver));
        let mut probe = BulkProbe::with_pair(Box::new(pair), Sizing::new(100, Some(10_000)));
        let sample = probe.run().unwrap();
        assert_eq!(sample.bytes, 10_000);
        assert!(sample.sender_cpu_ns > 0 && sample.receiver_cpu_ns > 0);
        probe.run().unwrap();
        let error = probe.run().unwrap_err();
        assert!(error.contains("differs"), "{error}");
    }

    #[test]
    fn the_plain_pair_carries_checked_samples() {
        let certs = CertCache::new(std::env::temp_dir().join("tlslab-unused"));
        let (mut probe, negotiated) =
            BulkProbe::prepare(None, &BulkScenario::plain(100), &certs, Some(50_000))
                .unwrap_or_else(|o| panic!("{o:?}"));
        assert!(negotiated.is_none());
        let sample = probe.run().unwrap();
        assert_eq!(sample.bytes, 50_000);
        assert_eq!(sample.writes, 500);
        assert!(sample.sender_cpu_ns > 0 && sample.receiver_cpu_ns > 0);
        probe.run().unwrap();
    }
}
