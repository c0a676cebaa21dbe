//! What the counting parent and its counted children (`tlslab
//! counted-child`, [`super::child`]) say to each other: the plan a child
//! is given and the line it writes per cell. Both sides import it from
//! here, so neither imports the other.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::backend::Negotiated;
use crate::measure::CellStatus;
use crate::scenario::tunnel::EngineId;
use crate::scenario::HandshakeScenario;

/// The label of the empty dump a child writes before each sample:
/// "tlslab sample CELL SAMPLE".
pub const SAMPLE_LABEL: &str = "tlslab sample";

/// The hidden subcommand a counted child runs.
pub const CHILD_COMMAND: &str = "counted-child";

/// What one counted child is asked to do.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CountPlan {
    pub cert_dir: PathBuf,
    pub cells: Vec<PlannedCount>,
}

/// One cell of a counted child's plan.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlannedCount {
    /// The cell's index in the parent's plan.
    pub index: usize,
    /// The backend's id (`None` for bulk's no-crypto rows and tunnel rows,
    /// which name their engine).
    pub backend: Option<String>,
    pub work: Work,
    pub samples: usize,
}

/// What one counted sample does.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Work {
    /// A complete handshake, each side's turns counted.
    Handshake { scenario: HandshakeScenario },
    /// `bytes` of application data through an established pair of the
    /// bulk row labelled `row`, the sender counted as the client and the
    /// receiver as the server.
    Bulk { row: String, bytes: usize },
    /// `operations` of a primitive row (`speed`), counted as the client.
    Speed {
        row: crate::scenario::speed::SpeedRow,
        operations: u64,
    },
    /// `packets` packets through a data channel of `engine` for the
    /// tunnel row labelled `row`: the sender's protect counted as the
    /// client, the receiver's unprotect (and check) as the server.
    Tunnel {
        engine: EngineId,
        row: String,
        packets: u64,
    },
    /// One connection set-up of `engine` (`tunnel --setup`): the
    /// initiator's steps counted as the client, the responder's as the
    /// server.
    TunnelSetup { engine: EngineId },
}

/// What the child says of one cell.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChildCell {
    pub index: usize,
    pub status: CellStatus,
    pub reason: Option<String>,
    pub negotiated: Option<Negotiated>,
    /// Samples taken and verified.
    pub samples: usize,
}
