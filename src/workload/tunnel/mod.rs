//! What one tunnel sample does: in process, a batch of packets through a
//! real data channel (both ends here, the sender's and the receiver's time
//! apart); with OpenVPN ([`super::openvpn`]), one transfer each way. In
//! process, a batch can also be counted under valgrind
//! (`--measure instructions`): the sender's protect as the client's turn,
//! the receiver's unprotect as the server's ([`crate::backend::turns`]).

use serde::Serialize;

use crate::backend::openssl::data_channel::{self, Receiver, Sender};
use crate::backend::thread_cpu_ns;
use crate::backend::turns::{side_begins, side_ends, Turn};
use crate::measure::{Outcome, Probe, Sampled};
use crate::scenario::tunnel::{Engine, TunnelScenario};
use crate::workload::counted::Instructions;
use std::time::Instant;

/// One sample: a batch of packets (in process) or one transfer each way (OpenVPN).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TunnelSample {
    /// Packets in the batch (in process) or 0 (OpenVPN: a byte stream).
    pub packets: u64,
    /// Payload bytes carried each way.
    pub payload_bytes: u64,
    /// In process: the sender's time to compress, encrypt and authenticate
    /// the batch. OpenVPN: the transfer from namespace A to B.
    pub send_ns: u64,
    /// In process: the receiver's time to verify, decrypt, decompress and
    /// check the batch. OpenVPN: the transfer from namespace B to A.
    pub receive_ns: u64,
    /// In process: the thread's CPU time while sending. OpenVPN: the
    /// transfer's wall time (the tunnel's work is in other processes).
    pub send_cpu_ns: u64,
    /// In process: the thread's CPU time while receiving. OpenVPN: as
    /// `receive_ns`.
    pub receive_cpu_ns: u64,
}

impl TunnelSample {
    /// Wall time through both ends (or both ways).
    pub fn total_ns(&self) -> u64 {
        self.send_ns + self.receive_ns
    }

    /// CPU time through both ends (OpenVPN: wall time both ways).
    pub fn total_cpu_ns(&self) -> u64 {
        self.send_cpu_ns + self.receive_cpu_ns
    }
}

impl Sampled for TunnelSample {
    /// CPU nanoseconds per payload byte (through both ends, or both ways):
    /// unlike wall time, it does not stretch when the thread is preempted.
    fn cost(&self) -> f64 {
        self.total_cpu_ns() as f64 / self.payload_bytes.max(1) as f64
    }
}

/// The outcome of one tunnel cell.
pub type TunnelOutcome = Outcome<TunnelSample>;

/// One (scenario, engine) pair and its outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TunnelCell {
    pub engine: Engine,
    pub scenario: TunnelScenario,
    pub outcome: TunnelOutcome,
    /// Instructions counted under valgrind (`--measure instructions`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counted: Option<CountedTransfer>,
}

impl TunnelCell {
    pub fn samples(&self) -> &[crate::measure::Timed<TunnelSample>] {
        self.outcome.samples()
    }
}

/// A tunnel row's counted instructions: each sample carries `packets`
/// packets, `payload_bytes` of payload in all, through the sender (its
/// count the client's of an [`Instructions`]) and the receiver (the
/// server's).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CountedTransfer {
    pub packets: u64,
    pub payload_bytes: u64,
    pub outcome: Outcome<Instructions>,
}

impl CountedTransfer {
    /// Instructions per megabyte (10^6 bytes) of payload, one value per
    /// sample, of the side `pick` reads.
    pub fn per_mb(&self, pick: fn(&Instructions) -> u64) -> Vec<f64> {
        self.outcome
            .samples()
            .iter()
            .map(|s| pick(&s.value) as f64 * 1e6 / self.payload_bytes.max(1) as f64)
            .collect()
    }
}

/// Payload bytes a counted sample carries at least: enough packets that
/// the per-packet bookkeeping is spread thin, few enough that valgrind
/// counts a row in a second or two.
pub const COUNTED_PAYLOAD_BYTES: usize = 256 * 1024;

/// The most packets a counted sample carries (tiny packets are counted on
/// less payload).
pub const MAX_COUNTED_PACKETS: u64 = 4096;

/// Packets per counted sample of a scenario: [`COUNTED_PAYLOAD_BYTES`] of
/// payload (at most [`MAX_COUNTED_PACKETS`]), rounded up to whole rounds
/// of the distinct payloads so every sample carries the same packets (a
/// compressor's work depends on them).
pub fn counted_packets(scenario: &TunnelScenario) -> u64 {
    let packets = COUNTED_PAYLOAD_BYTES.div_ceil(scenario.payload_bytes.max(1));
    let rounds = packets.div_ceil(DISTINCT_PAYLOADS).max(1) as u64;
    (rounds * DISTINCT_PAYLOADS as u64).min(MAX_COUNTED_PACKETS)
}

/// Why an engine's rows cannot be counted, if they cannot.
pub fn uncountable(engine: Engine) -> Option<&'static str> {
    match engine {
        Engine::Inprocess => None,
        Engine::Openvpn => Some(
            "OpenVPN's work runs in its own processes (two openvpn daemons and the kernel between network namespaces), which tlslab cannot count per side under valgrind; the inprocess engine's rows are counted",
        ),
    }
}

/// How long one in-process batch should take, so timer overhead stays negligible.
const TARGET_BATCH_NS: u64 = 1_000_000;
/// Distinct payloads cycled through, so consecutive packets differ.
const DISTINCT_PAYLOADS: usize = 16;

/// Packets through an in-process sender and receiver, batch by batch.
pub struct Batcher {
    sender: Sender,
    receiver: Receiver,
    payloads: Vec<Vec<u8>>,
    packets: Vec<Vec<u8>>,
    next_payload: usize,
}

impl Batcher {
    fn new(scenario: &TunnelScenario) -> anyhow::Result<Self> {
        let (sender, receiver) = data_channel::pair(scenario)?;
        Ok(Self {
            sender,
            receiver,
            payloads: (0..DISTINCT_PAYLOADS)
                .map(|i| scenario.payload.bytes(i, scenario.payload_bytes))
                .collect(),
            packets: Vec::new(),
            next_payload: 0,
        })
    }

    fn run(&mut self, batch: usize) -> Result<TunnelSample, String> {
        self.packets.resize_with(batch, Vec::new);
        let first = self.next_payload;
        let start_cpu = thread_cpu_ns();
        let start = Instant::now();
        // Counted (under valgrind) as the client's turn; one relaxed load otherwise.
        side_begins(Turn::Client);
        let sealed = self
            .packets
            .iter_mut()
            .enumerate()
            .try_for_each(|(i, packet)| {
                let payload = &self.payloads[(first + i) % DISTINCT_PAYLOADS];
                self.sender
                    .seal(payload, packet)
                    .map_err(|e| format!("sending: {e:#}"))
            });
        side_ends(Turn::Client);
        sealed?;
        let sent = Instant::now();
        let sent_cpu = thread_cpu_ns();
        side_begins(Turn::Server);
        let opened = self.packets.iter().enumerate().try_for_each(|(i, packet)| {
            self.receiver
                .open(packet)
                .map_err(|e| format!("receiving: {e}"))?;
            let expected = &self.payloads[(first + i) % DISTINCT_PAYLOADS];
            if self.receiver.payload() != expected.as_slice() {
                return Err("the received payload differs from the one sent".to_string());
            }
            Ok(())
        });
        side_ends(Turn::Server);
        opened?;
        let received = Instant::now();
        let received_cpu = thread_cpu_ns();
        self.next_payload = (first + batch) % DISTINCT_PAYLOADS;
        Ok(TunnelSample {
            packets: batch as u64,
            payload_bytes: (batch * self.payloads[0].len()) as u64,
            send_ns: (sent - start).as_nanos() as u64,
            receive_ns: (received - sent).as_nanos() as u64,
            send_cpu_ns: sent_cpu.saturating_sub(start_cpu),
            receive_cpu_ns: received_cpu.saturating_sub(sent_cpu),
        })
    }
}

/// An in-process cell ready to sample: its channel and a batch size.
pub struct InprocessProbe {
    batcher: Batcher,
    batch: usize,
}

impl InprocessProbe {
    /// Builds the channel and sizes the batch so one sample takes about
    /// `TARGET_BATCH_NS`; or the outcome that says why it cannot run.
    pub fn prepare(scenario: &TunnelScenario) -> Result<Self, TunnelOutcome> {
        if let Some(reason) = data_channel::unsupported_reason(scenario) {
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

    pub fn probe(&mut self) -> Probe<'_, TunnelSample> {
        Box::new(move || self.batcher.run(self.batch))
    }

    /// One batch of exactly `packets` packets, every payload checked (a
    /// counted sample: no work decided by time).
    pub fn run_packets(&mut self, packets: u64) -> Result<TunnelSample, String> {
        self.batcher.run(packets as usize)
    }
}

/// Sends `count` packets of a scenario through a fresh channel and checks
/// every payload comes back intact; for tests and `--check`.
pub fn round_trip(scenario: &TunnelScenario, count: usize) -> anyhow::Result<()> {
    let mut batcher = Batcher::new(scenario)?;
    batcher.run(count).map_err(anyhow::Error::msg)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::tunnel::Payload;

    #[test]
    fn a_counted_sample_carries_whole_rounds_of_the_payloads() {
        assert_eq!(MAX_COUNTED_PACKETS % DISTINCT_PAYLOADS as u64, 0);
        let tiny = TunnelScenario::baseline(Payload::Random, 1);
        assert_eq!(counted_packets(&tiny), MAX_COUNTED_PACKETS);
        for bytes in [64, 1400, 60_000] {
            let scenario = TunnelScenario::baseline(Payload::Random, bytes);
            let packets = counted_packets(&scenario);
            assert_eq!(packets % DISTINCT_PAYLOADS as u64, 0, "{bytes}");
            assert!(packets as usize * bytes >= COUNTED_PAYLOAD_BYTES, "{bytes}");
            // No more than one round of payloads beyond what is needed.
            assert!(
                (packets as usize - DISTINCT_PAYLOADS) * bytes < COUNTED_PAYLOAD_BYTES,
                "{bytes}"
            );
        }
    }

    #[test]
    fn openvpn_rows_say_why_they_cannot_be_counted() {
        assert_eq!(uncountable(Engine::Inprocess), None);
        let reason = uncountable(Engine::Openvpn).unwrap();
        assert!(reason.contains("its own processes"), "{reason}");
    }
}
