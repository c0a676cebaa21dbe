//! What the counted measures find for a handshake cell: instructions per
//! side per handshake, each side's instructions per category, heap bytes
//! per side. Kept apart from the counting so a cell can hold them without
//! depending on how they were counted.

use serde::{Deserialize, Serialize};

use crate::heap::HeapSample;
use crate::measure::{Outcome, Sampled};
use crate::scenario::Subject;

/// The instructions one handshake executed, per side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Instructions {
    pub client: u64,
    pub server: u64,
}

/// A handshake's count is both sides' instructions.
impl Sampled for Instructions {
    fn cost(&self) -> f64 {
        (self.client + self.server) as f64
    }
}

/// One side's instructions per handshake in one category (the mean over
/// the samples).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CategoryCount {
    /// "client" or "server".
    pub side: String,
    /// A category's label ([`crate::workload::perf::ProfileCategory`]).
    pub category: String,
    pub instructions: f64,
}

/// What the counted measures found for one cell (see
/// [`crate::workload::counted`]): each is `None` unless it was asked for;
/// and the bytes on the wire, counted too, with what the network model and
/// an emulated link make of them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Counts {
    /// Instructions per side per handshake, one sample per handshake.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<Outcome<Instructions>>,
    /// Per side and category, instructions per handshake.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub breakdown: Vec<CategoryCount>,
    /// Heap bytes per side, one sample per handshake.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<Outcome<HeapSample>>,
    /// The handshake on the wire, traced over memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wire: Option<crate::workload::wire::Wire>,
    /// Per network profile (`--network`): the model and, over a link, the
    /// latencies measured.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<crate::workload::network::NetworkResult>,
}

/// The server side of a scenario's handshake, counted per category: what
/// `load --measure time,instructions` shows beside perf's categories.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerHandshakeCount {
    /// The backend counted in process ("openssl"); stored and exported as
    /// `backend`.
    #[serde(rename = "backend")]
    pub subject: Subject,
    /// Its library and version ("OpenSSL 3.6.3").
    pub library: String,
    /// The valgrind that counted ("valgrind-3.19.0").
    pub valgrind: String,
    /// Handshakes counted.
    pub handshakes: usize,
    /// The server's instructions per handshake (mean).
    pub server_instructions: f64,
    /// Per category label, the server's instructions per handshake (mean);
    /// they add up to `server_instructions`.
    pub categories: Vec<(String, f64)>,
}
