//! Tunnel samplers: warm-up, then samples until the 95% interval of the
//! median is within the requested precision or the time budget is spent,
//! as the handshake sampler does. One in-process sample is a batch of
//! packets, with the sender's and the receiver's time measured apart.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde::Serialize;

use super::channel::{self, Receiver, Sender};
use super::{Engine, TunnelScenario};
use crate::measure::{Interrupted, SamplingOptions};
use crate::stats;

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
}

impl TunnelSample {
    pub fn total_ns(&self) -> u64 {
        self.send_ns + self.receive_ns
    }
}

/// What happened to one cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum TunnelOutcome {
    Measured {
        samples: Vec<TunnelSample>,
        /// True if and only if sampling stopped because the precision was reached.
        precise: bool,
    },
    Unsupported {
        reason: String,
    },
    Failed {
        reason: String,
    },
}

/// One (scenario, engine) pair and its outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TunnelCell {
    pub engine: Engine,
    pub scenario: TunnelScenario,
    pub outcome: TunnelOutcome,
}

impl TunnelCell {
    pub fn samples(&self) -> &[TunnelSample] {
        match &self.outcome {
            TunnelOutcome::Measured { samples, .. } => samples,
            _ => &[],
        }
    }
}

/// How long one in-process batch should take, so timer overhead stays negligible.
const TARGET_BATCH_NS: u64 = 1_000_000;
/// Distinct payloads cycled through, so consecutive packets differ.
const DISTINCT_PAYLOADS: usize = 16;

/// Runs `one` (warm-up first, then samples) until precise or out of time.
/// `one` fails with a reason, which makes the cell failed.
pub fn sample_until(
    options: &SamplingOptions,
    warmup_runs: usize,
    interrupt: &AtomicBool,
    mut one: impl FnMut() -> Result<TunnelSample, String>,
) -> Result<TunnelOutcome, Interrupted> {
    let warmup_start = Instant::now();
    let mut warmups = 0;
    while warmups < warmup_runs || warmup_start.elapsed() < options.warmup {
        if interrupt.load(Ordering::Relaxed) {
            return Err(Interrupted);
        }
        if let Err(reason) = one() {
            return Ok(TunnelOutcome::Failed { reason });
        }
        warmups += 1;
    }
    let mut samples = Vec::new();
    let mut totals = Vec::new();
    let mut next_check = options.min_samples.max(2);
    let start = Instant::now();
    let precise = loop {
        if interrupt.load(Ordering::Relaxed) {
            return Err(Interrupted);
        }
        let sample = match one() {
            Ok(sample) => sample,
            Err(reason) => return Ok(TunnelOutcome::Failed { reason }),
        };
        samples.push(sample);
        totals.push(sample.total_ns() as f64);
        let count = samples.len();
        if count < options.min_samples.max(1) {
            continue;
        }
        if count >= next_check {
            next_check = count + (count / 10).max(10);
            if stats::median_precision(&totals) <= options.precision {
                break true;
            }
        }
        if start.elapsed() >= options.max_time {
            break stats::median_precision(&totals) <= options.precision;
        }
    };
    Ok(TunnelOutcome::Measured { samples, precise })
}

/// Packets through an in-process sender and receiver, batch by batch.
struct Batcher {
    sender: Sender,
    receiver: Receiver,
    payloads: Vec<Vec<u8>>,
    packets: Vec<Vec<u8>>,
    next_payload: usize,
}

impl Batcher {
    fn new(scenario: &TunnelScenario) -> anyhow::Result<Self> {
        let (sender, receiver) = channel::pair(scenario)?;
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
        let start = Instant::now();
        for (i, packet) in self.packets.iter_mut().enumerate() {
            let payload = &self.payloads[(first + i) % DISTINCT_PAYLOADS];
            self.sender
                .seal(payload, packet)
                .map_err(|e| format!("sending: {e:#}"))?;
        }
        let sent = Instant::now();
        for (i, packet) in self.packets.iter().enumerate() {
            self.receiver
                .open(packet)
                .map_err(|e| format!("receiving: {e}"))?;
            let expected = &self.payloads[(first + i) % DISTINCT_PAYLOADS];
            if self.receiver.payload() != expected.as_slice() {
                return Err("the received payload differs from the one sent".to_string());
            }
        }
        let received = Instant::now();
        self.next_payload = (first + batch) % DISTINCT_PAYLOADS;
        Ok(TunnelSample {
            packets: batch as u64,
            payload_bytes: (batch * self.payloads[0].len()) as u64,
            send_ns: (sent - start).as_nanos() as u64,
            receive_ns: (received - sent).as_nanos() as u64,
        })
    }
}

/// Measures one scenario with the in-process data channel.
pub fn sample_inprocess(
    scenario: &TunnelScenario,
    options: &SamplingOptions,
    interrupt: &AtomicBool,
) -> Result<TunnelOutcome, Interrupted> {
    if let Some(reason) = scenario.unsupported_reason() {
        return Ok(TunnelOutcome::Unsupported { reason });
    }
    let mut batcher = match Batcher::new(scenario) {
        Ok(batcher) => batcher,
        Err(error) => {
            return Ok(TunnelOutcome::Failed {
                reason: format!("{error:#}"),
            })
        }
    };
    // Calibrate the batch so one sample takes about TARGET_BATCH_NS.
    let probe = match batcher.run(8) {
        Ok(sample) => sample,
        Err(reason) => return Ok(TunnelOutcome::Failed { reason }),
    };
    let per_packet_ns = (probe.total_ns() / 8).max(1);
    let batch = (TARGET_BATCH_NS / per_packet_ns).clamp(4, 4096) as usize;
    sample_until(options, 2, interrupt, || batcher.run(batch))
}

/// Sends `count` packets of a scenario through a fresh channel and checks
/// every payload comes back intact; for tests and `--check`.
pub fn round_trip(scenario: &TunnelScenario, count: usize) -> anyhow::Result<()> {
    let mut batcher = Batcher::new(scenario)?;
    batcher.run(count).map_err(anyhow::Error::msg)?;
    Ok(())
}
