//! The in-process engine: both ends of a real data channel
//! ([`crate::backend::openssl::data_channel`]) in this process, over memory
//! buffers. A sample is a batch of packets (about a millisecond of work),
//! the sender's time and the receiver's taken apart; every row of the
//! matrix can be ready at once, so rows are sampled in interleaved rounds.
//! Under valgrind (`--measure instructions`) a batch is counted: the
//! sender's protect as the client's turn, the receiver's unprotect as the
//! server's ([`crate::backend::turns`]).

use std::sync::atomic::AtomicBool;

use anyhow::Result;

use super::engine::{
    CountedSample, EngineDescriptor, EngineDetails, EngineOptions, EngineRig, TunnelEngine,
};
use super::setup::{SetupKind, SetupOutcome, SetupProbe};
use super::{timed_batch, TunnelOutcome, TunnelSample, DISTINCT_PAYLOADS};
use crate::backend::openssl::data_channel::{self, Receiver, Sender};
use crate::backend::{CpuMasking, LibraryInfo};
use crate::measure::{Outcome, Probe};
use crate::scenario::tunnel::{EngineId, TunnelScenario};

/// The inprocess engine in the registry of tunnel engines.
pub static DESCRIPTOR: EngineDescriptor = EngineDescriptor {
    id: EngineId::Inprocess,
    library: "OpenSSL",
    listed: true,
    programs: &[],
    scratch: None,
    install: "",
    uncountable: None,
    details: EngineDetails {
        about: "OpenVPN's data channel, both ends in this process",
        open: || &InprocessEngine,
    },
};

/// The in-process engine, as registered.
pub struct InprocessEngine;

impl TunnelEngine for InprocessEngine {
    fn id(&self) -> EngineId {
        EngineId::Inprocess
    }

    fn preflight(&self) -> Result<LibraryInfo, String> {
        Ok(LibraryInfo {
            subject: crate::scenario::Subject::engine(EngineId::Inprocess),
            library: "OpenSSL".to_string(),
            version: openssl::version::version()
                .trim_start_matches("OpenSSL ")
                .to_string(),
        })
    }

    /// Ciphers and digests this OpenSSL build lacks (SHA-0), and LZO
    /// without the `lzo` feature.
    fn row_unsupported(&self, scenario: &TunnelScenario) -> Option<String> {
        data_channel::unsupported_reason(scenario)
    }

    /// Its cryptography is the vendored OpenSSL's EVP: masked as the
    /// openssl backend's descriptor says (its capability mask).
    fn cpu_masking(&self) -> CpuMasking {
        crate::backend::openssl::DESCRIPTOR.cpu_masking
    }

    fn prepare_counted(
        &self,
        scenario: &TunnelScenario,
        packets: u64,
    ) -> Result<CountedSample, TunnelOutcome> {
        let mut probe = InprocessProbe::prepare(scenario)?;
        // One uncounted batch of the counted size: every packet's buffer
        // is allocated before counting.
        probe
            .run_packets(packets)
            .map_err(|reason| Outcome::Failed { reason })?;
        Ok(Box::new(move || probe.run_packets(packets).map(drop)))
    }

    fn interleaves_rows(&self) -> bool {
        true
    }

    fn start(&self, _options: &EngineOptions) -> Result<Box<dyn EngineRig>> {
        // Legacy ciphers and digests (Blowfish, CAST5, MD4...) come from
        // OpenSSL's legacy provider.
        crate::backend::openssl::load_legacy_provider();
        Ok(Box::new(InprocessRig))
    }

    fn prepare_setup<'a>(
        &self,
        _kind: SetupKind,
        _interrupt: &'a AtomicBool,
    ) -> Result<SetupProbe<'a>, SetupOutcome> {
        Err(Outcome::Unsupported {
            reason: "no control channel: the in-process engine runs OpenVPN's data channel only, its keys set directly (the openvpn-tls engine measures OpenVPN's TLS handshake)".to_string(),
        })
    }
}

/// Nothing is shared between in-process rows: each has its own channel.
struct InprocessRig;

impl EngineRig for InprocessRig {
    fn prepare<'rig>(
        &'rig self,
        scenario: &TunnelScenario,
        _interrupt: &'rig AtomicBool,
    ) -> Result<Probe<'rig, TunnelSample>, TunnelOutcome> {
        let mut probe = InprocessProbe::prepare(scenario)?;
        Ok(Box::new(move || probe.batcher.run(probe.batch)))
    }
}

/// How long one in-process batch should take, so timer overhead stays negligible.
const TARGET_BATCH_NS: u64 = 1_000_000;

/// Packets through an in-process sender and receiver, batch by batch.
struct Batcher {
    sender: Sender,
    receiver: Receiver,
    payloads: Vec<Vec<u8>>,
    packets: Vec<Vec<u8>>,
    next_payload: usize,
}

impl Batcher {
    fn new(scenario: &TunnelScenario) -> Result<Self> {
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
        let payload_bytes = batch * self.payloads[0].len();
        let sample = timed_batch(
            self,
            batch,
            payload_bytes,
            |batcher| {
                batcher
                    .packets
                    .iter_mut()
                    .enumerate()
                    .try_for_each(|(i, packet)| {
                        let payload = &batcher.payloads[(first + i) % DISTINCT_PAYLOADS];
                        batcher
                            .sender
                            .seal(payload, packet)
                            .map_err(|e| format!("sending: {e:#}"))
                    })
            },
            |batcher| {
                batcher
                    .packets
                    .iter()
                    .enumerate()
                    .try_for_each(|(i, packet)| {
                        batcher
                            .receiver
                            .open(packet)
                            .map_err(|e| format!("receiving: {e}"))?;
                        let expected = &batcher.payloads[(first + i) % DISTINCT_PAYLOADS];
                        if batcher.receiver.payload() != expected.as_slice() {
                            return Err(
                                "the received payload differs from the one sent".to_string()
                            );
                        }
                        Ok(())
                    })
            },
        )?;
        self.next_payload = (first + batch) % DISTINCT_PAYLOADS;
        Ok(sample)
    }
}

/// An in-process row ready to sample: its channel and a batch size.
struct InprocessProbe {
    batcher: Batcher,
    batch: usize,
}

impl InprocessProbe {
    /// Builds the channel and sizes the batch so one sample takes about
    /// `TARGET_BATCH_NS`; or the outcome that says why it cannot run.
    fn prepare(scenario: &TunnelScenario) -> Result<Self, TunnelOutcome> {
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

    /// One batch of exactly `packets` packets, every payload checked (a
    /// counted sample: no work decided by time).
    fn run_packets(&mut self, packets: u64) -> Result<TunnelSample, String> {
        self.batcher.run(packets as usize)
    }
}

/// Sends `count` packets of a scenario through a fresh channel and checks
/// every payload comes back intact; for tests and `--check`.
pub fn round_trip(scenario: &TunnelScenario, count: usize) -> Result<()> {
    let mut batcher = Batcher::new(scenario)?;
    batcher.run(count).map_err(anyhow::Error::msg)?;
    Ok(())
}
