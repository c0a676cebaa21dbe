//! The tunnel scenario's axes as short columns, shared by every tunnel
//! table (the study's five, the counted one) and by compare and recommend,
//! and what a tunnel run's rows measure in compare.

use crate::report::compare::kind::Kind;
use crate::report::{axis_headers, Axis};
use crate::scenario::names::Named;
use crate::scenario::tunnel::TunnelScenario;
use crate::scenario::Measure;

/// A tunnel axis that the no-tunnel row has not: "—" there.
fn tunnel_only(scenario: &TunnelScenario, id: &'static str) -> String {
    if scenario.baseline { "—" } else { id }.to_string()
}

/// The scenario's axes as short columns, each with its cell.
pub(crate) const AXES: [Axis<TunnelScenario>; 5] = [
    Axis {
        header: "cipher",
        cell: |s| {
            if s.baseline {
                "(no tunnel)".to_string()
            } else {
                s.cipher.id().to_string()
            }
        },
    },
    Axis {
        header: "digest",
        cell: |s| tunnel_only(s, s.digest.id()),
    },
    Axis {
        header: "compression",
        cell: |s| tunnel_only(s, s.compression.id()),
    },
    Axis {
        header: "payload",
        cell: |s| s.payload.id().to_string(),
    },
    Axis {
        header: "bytes",
        cell: |s| s.payload_bytes.to_string(),
    },
];

/// The headers of [`AXES`].
pub(crate) const AXIS_HEADERS: [&str; 5] = axis_headers(&AXES);

/// The scenario's axes as short cells, one per [`AXES`].
pub(crate) fn axis_cells(scenario: &TunnelScenario) -> Vec<String> {
    crate::report::axis_cells(&AXES, scenario)
}

/// What a tunnel run's rows measure in `compare`: both ends' CPU time per
/// byte, or their instructions per MB.
pub fn compared(measure: Measure) -> Option<Kind> {
    let kind = Kind::rows("tunnel", "engine", AXIS_HEADERS.to_vec());
    match measure {
        Measure::Time => Some(kind.on_time(
            "CPU ns/byte",
            "the CPU time per payload byte through both ends (in process) or the transfer's time per byte (OpenVPN)",
            1.0,
        )),
        Measure::Instructions => Some(kind.on_counts(
            "M instr/MB",
            "both ends' instructions per MB (10^6 bytes) of payload (sender: compress, encrypt, authenticate; receiver: verify, decrypt, decompress, check), counted under valgrind on the in-process engine",
            1e-6,
        )),
        Measure::Memory => None,
    }
}
