//! What establishing a tunnel costs (`tlslab tunnel --setup`): one sample
//! is one connection set-up, each side's CPU and the bytes and messages
//! each way, taken by the engine itself
//! ([`super::TunnelEngine::prepare_setup`]) for each [`SetupKind`] it
//! measures (a new tunnel; a new handshake on a running one); the engine
//! also says what one of its samples covers (in process: the handshake's
//! calls only; a real tunnel: whole processes from exec to ready, or the
//! processes' CPU across a renegotiation), since the figures of different
//! engines are not the same kind of figure.

use serde::Serialize;

use crate::measure::{Outcome, Probe, Sampled, Timed};
use crate::scenario::tunnel::EngineId;
// The file, not `counted` itself: the counted child imports this module.
use crate::workload::counted::values::Instructions;

/// Which set-up a sample is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SetupKind {
    /// A new tunnel, from nothing to carrying data.
    Connect,
    /// A new handshake (and new data-channel keys) on a running tunnel:
    /// OpenVPN's renegotiation, the handshake without process start-up.
    Renegotiate,
}

impl SetupKind {
    /// Its name in the store and the tables.
    pub fn id(self) -> &'static str {
        match self {
            SetupKind::Connect => "connect",
            SetupKind::Renegotiate => "renegotiate",
        }
    }

    /// The kind of this name, if there is one.
    pub fn from_id(id: &str) -> Option<Self> {
        [SetupKind::Connect, SetupKind::Renegotiate]
            .into_iter()
            .find(|kind| kind.id() == id)
    }
}

/// One connection set-up. The initiator is the side that starts the
/// handshake (WireGuard's initiator, OpenVPN's TLS client, or namespace A
/// for a static key), the responder the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SetupSample {
    /// The initiator's CPU time, in nanoseconds.
    pub initiator_cpu_ns: u64,
    /// The responder's CPU time, in nanoseconds.
    pub responder_cpu_ns: u64,
    /// Wall time from the start to both sides ready.
    pub wall_ns: u64,
    /// Bytes sent from the initiator to the responder (datagrams' bytes
    /// in process; bytes on the link, frame headers included, for a real
    /// tunnel).
    pub bytes_to_responder: u64,
    /// Bytes sent from the responder to the initiator.
    pub bytes_to_initiator: u64,
    /// Messages (datagrams, or frames on the link) from the initiator.
    pub messages_to_responder: u64,
    /// Messages from the responder.
    pub messages_to_initiator: u64,
}

impl SetupSample {
    /// Both sides' CPU time.
    pub fn total_cpu_ns(&self) -> u64 {
        self.initiator_cpu_ns + self.responder_cpu_ns
    }
}

impl Sampled for SetupSample {
    /// Both sides' CPU nanoseconds per set-up.
    fn cost(&self) -> f64 {
        self.total_cpu_ns() as f64
    }
}

/// The outcome of one engine's set-up cell.
pub type SetupOutcome = Outcome<SetupSample>;

/// An engine's set-up, ready to sample: each call of `probe` establishes
/// one tunnel, checks that it works and returns what it cost.
pub struct SetupProbe<'a> {
    /// What one sample covers, in words for the table's notes.
    pub covers: &'static str,
    pub probe: Probe<'a, SetupSample>,
}

/// One engine's connection set-up of one kind and its outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SetupCell {
    pub engine: EngineId,
    pub kind: SetupKind,
    /// What one sample covers (empty when the engine has none).
    pub covers: String,
    pub outcome: SetupOutcome,
    /// Instructions per set-up, counted under valgrind (`--measure
    /// instructions`): the initiator's as the client's, the responder's as
    /// the server's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counted: Option<Outcome<Instructions>>,
}

impl SetupCell {
    pub fn samples(&self) -> &[Timed<SetupSample>] {
        self.outcome.samples()
    }
}
