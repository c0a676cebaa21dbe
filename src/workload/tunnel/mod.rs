//! What one tunnel sample is and the engines that take it: one trait
//! ([`engine::TunnelEngine`]) and ONE registry ([`ENGINES`] of static
//! descriptors in the registry's shape, opened by [`EngineId::open`]). An
//! engine is a module here with its descriptor plus its line in the
//! registry (and its name in [`EngineId`]): the in-process data channel
//! ([`inprocess`]), real OpenVPN tunnels between network namespaces
//! ([`openvpn`]), the same in OpenVPN's TLS mode ([`openvpn_tls`]; what
//! the two share is [`openvpn_tunnel`], their set-ups [`openvpn_setup`]),
//! both WireGuard peers in process ([`wireguard`]) and real wireguard-go
//! tunnels between network namespaces ([`wireguard_go`]); a real tunnel's
//! sample is [`transfer`]'s, and what a connection's set-up costs is each
//! engine's too ([`setup`]). `tlslab tunnel` (`app::tunnel`) runs every
//! engine through the trait; the tests run their shared suite over the
//! registry.

pub mod engine;
pub mod inprocess;
pub mod openvpn;
mod openvpn_setup;
pub mod openvpn_tls;
mod openvpn_tunnel;
pub mod setup;
pub mod transfer;
pub mod wireguard;
pub mod wireguard_go;

use serde::Serialize;

pub use engine::{EngineDescriptor, EngineDetails, EngineOptions, EngineRig, TunnelEngine};

use crate::backend::thread_cpu_ns;
use crate::backend::turns::{side_begins, side_ends};
use crate::measure::{Outcome, Sampled};
use crate::scenario::names::Named;
use crate::scenario::tunnel::{EngineId, RowEngine, TunnelScenario};
use crate::scenario::CpuFeatures;
use crate::scenario::Side;
// The file, not `counted` itself: the counted child imports this module.
use crate::workload::counted::values::Instructions;

/// Every engine, in the order of [`EngineId::ALL`]: one line each.
#[rustfmt::skip]
pub static ENGINES: &[&EngineDescriptor] = &[
    &inprocess::DESCRIPTOR,
    &openvpn::DESCRIPTOR,
    &openvpn_tls::DESCRIPTOR,
    &wireguard::DESCRIPTOR,
    &wireguard_go::DESCRIPTOR,
];

impl EngineId {
    /// This engine's descriptor in [`ENGINES`].
    pub fn descriptor(self) -> &'static EngineDescriptor {
        ENGINES
            .iter()
            .copied()
            .find(|descriptor| descriptor.id == self)
            .unwrap_or_else(|| panic!("the engine {} is not in ENGINES", self.id()))
    }

    /// The engine of this name, from [`ENGINES`].
    pub fn open(self) -> &'static dyn TunnelEngine {
        (self.descriptor().open)()
    }
}

/// One sample of a tunnel row. A packet engine (in process) takes a batch
/// of packets through the sender and then the receiver, and times each
/// end on the thread's CPU clock; a transfer engine (a real tunnel, its
/// work in two daemons) sends one transfer each way, times each on the
/// wall clock and reads the daemons' CPU time ([`transfer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TunnelSample {
    /// Packets in the batch, or 0 for a transfer (a byte stream, each way).
    pub packets: u64,
    /// Payload bytes carried each way.
    pub payload_bytes: u64,
    /// A batch: the sender's time to compress, encrypt and authenticate
    /// it. A transfer: the wall time of the one from namespace A to B.
    pub send_ns: u64,
    /// A batch: the receiver's time to verify, decrypt, decompress and
    /// check it. A transfer: the wall time of the one from B to A.
    pub receive_ns: u64,
    /// A batch: the thread's CPU time while sending. A transfer: the CPU
    /// time of the tunnel daemon at the sending end of each way (A's from
    /// A to B, B's from B to A), added: it carried `2 × payload_bytes`.
    /// 0 for a transfer without a daemon (the no-tunnel row, or a sample
    /// stored before tlslab read the daemons' CPU).
    pub send_cpu_ns: u64,
    /// A batch: the thread's CPU time while receiving. A transfer: the
    /// receiving ends' daemons' CPU time, as `send_cpu_ns`.
    pub receive_cpu_ns: u64,
}

impl TunnelSample {
    /// Wall time through both ends (or both ways).
    pub fn total_ns(&self) -> u64 {
        self.send_ns + self.receive_ns
    }

    /// CPU time through both ends (a transfer: both daemons, both ways).
    pub fn total_cpu_ns(&self) -> u64 {
        self.send_cpu_ns + self.receive_cpu_ns
    }

    /// Returns true if and only if the sample is a transfer each way (its
    /// payload moved twice), not a batch of packets through both ends.
    pub fn is_transfer(&self) -> bool {
        self.packets == 0
    }

    /// Payload bytes through each end: a transfer's each way, twice.
    pub fn bytes_per_end(&self) -> u64 {
        if self.is_transfer() {
            2 * self.payload_bytes
        } else {
            self.payload_bytes
        }
    }

    /// Returns true if and only if the sample holds each end's CPU time: a
    /// batch always does, a transfer when it went through daemons whose
    /// CPU time was read.
    pub fn has_cpu_time(&self) -> bool {
        !self.is_transfer() || self.total_cpu_ns() > 0
    }
}

impl Sampled for TunnelSample {
    /// Nanoseconds per payload byte through both ends (or both ways): a
    /// batch's CPU time, which does not stretch when the thread is
    /// preempted; a transfer's wall time, its throughput (the rows of a
    /// real tunnel are compared by how fast the bytes got through).
    fn cost(&self) -> f64 {
        let nanos = if self.is_transfer() {
            self.total_ns()
        } else {
            self.total_cpu_ns()
        };
        nanos as f64 / self.payload_bytes.max(1) as f64
    }
}

/// The outcome of one tunnel cell.
pub type TunnelOutcome = Outcome<TunnelSample>;

/// One (scenario, engine) pair and its outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TunnelCell {
    pub engine: EngineId,
    /// The CPU features the engine's libraries were let use: generic rows
    /// were measured in a child process that masked them
    /// (`tunnel --cpu-features generic`).
    pub cpu_features: CpuFeatures,
    pub scenario: TunnelScenario,
    pub outcome: TunnelOutcome,
    /// Instructions counted under valgrind (`--measure instructions`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counted: Option<CountedTransfer>,
}

impl TunnelCell {
    /// The engine as the cell's row names it: "inprocess", "inprocess (generic)".
    pub fn row_engine(&self) -> RowEngine {
        RowEngine {
            engine: self.engine,
            cpu_features: self.cpu_features,
        }
    }

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

/// Distinct payloads a packet engine cycles through, so consecutive
/// packets differ.
pub const DISTINCT_PAYLOADS: usize = 16;

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

/// One batch of `packets` through an in-process data channel's two ends,
/// each end's wall and CPU time apart: `send` is the sender's part
/// (counted under valgrind as the client's turn), then `receive` the
/// receiver's (the server's turn), each given the channel's `state`;
/// `payload_bytes` is the payload the batch carried. An end's error is
/// the sample's.
pub(super) fn timed_batch<S>(
    state: &mut S,
    packets: usize,
    payload_bytes: usize,
    send: impl FnOnce(&mut S) -> Result<(), String>,
    receive: impl FnOnce(&mut S) -> Result<(), String>,
) -> Result<TunnelSample, String> {
    let start_cpu = thread_cpu_ns();
    let start = std::time::Instant::now();
    // One relaxed load each when not counted.
    side_begins(Side::Client);
    let sent = send(state);
    side_ends(Side::Client);
    sent?;
    let sent = std::time::Instant::now();
    let sent_cpu = thread_cpu_ns();
    side_begins(Side::Server);
    let received = receive(state);
    side_ends(Side::Server);
    received?;
    let received = std::time::Instant::now();
    let received_cpu = thread_cpu_ns();
    Ok(TunnelSample {
        packets: packets as u64,
        payload_bytes: payload_bytes as u64,
        send_ns: (sent - start).as_nanos() as u64,
        receive_ns: (received - sent).as_nanos() as u64,
        send_cpu_ns: sent_cpu.saturating_sub(start_cpu),
        receive_cpu_ns: received_cpu.saturating_sub(sent_cpu),
    })
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
    fn the_registry_holds_every_engine_once_in_the_vocabularys_order() {
        let registered: Vec<EngineId> = ENGINES.iter().map(|descriptor| descriptor.id).collect();
        assert_eq!(registered, EngineId::ALL);
        for &id in EngineId::ALL {
            assert_eq!(id.open().id(), id);
        }
    }

    #[test]
    fn openvpn_rows_say_why_they_cannot_be_counted() {
        assert_eq!(EngineId::Inprocess.open().uncountable(), None);
        let reason = EngineId::Openvpn.open().uncountable().unwrap();
        assert!(reason.contains("its own processes"), "{reason}");
    }
}
