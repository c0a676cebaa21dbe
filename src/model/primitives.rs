//! The primitives the cost model charges: which rows a handshake needs
//! (from its counted operations), how long their sampling may take, and
//! their median costs per operation as the model reads them. The rows are
//! sampled as `speed` samples them, by the command (`cost`, `--capacity`),
//! so every round is stored as it ends.

use crate::measure::SamplingOptions;
use crate::model::counts;
use crate::scenario::speed::SpeedRow;
use crate::scenario::HandshakeScenario;
use crate::scenario::Side;
use std::collections::BTreeMap;
use std::time::Duration;

/// Median nanoseconds per operation, by backend id and primitive row.
pub type PrimitiveCosts = BTreeMap<(String, SpeedRow), f64>;

/// The sampling options of the primitives the model charges, from the
/// command's own: shorter, as each is a batch of one operation.
pub fn primitive_options(options: &SamplingOptions) -> SamplingOptions {
    SamplingOptions {
        max_time: options.max_time.min(Duration::from_millis(500)),
        min_samples: options.min_samples.min(6),
        warmup: Duration::from_millis(20),
        slice: Duration::ZERO,
        ..*options
    }
}

/// The primitive rows the model charges these (backend id, scenario)
/// pairs with: each (backend id, row) once, in the order first needed.
pub fn charged_rows(pairs: &[(String, HandshakeScenario)]) -> Vec<(String, SpeedRow)> {
    let mut wanted: Vec<(String, SpeedRow)> = Vec::new();
    for (backend, scenario) in pairs {
        for side in [Side::Client, Side::Server] {
            for (operation, _) in counts::operation_counts(scenario, side) {
                if let Some((row, _)) = counts::cost_row(scenario, side, operation) {
                    let key = (backend.clone(), row);
                    if !wanted.contains(&key) {
                        wanted.push(key);
                    }
                }
            }
        }
    }
    wanted
}

/// One backend's primitive costs, by row.
pub fn backend_costs(primitive_ns: &PrimitiveCosts, backend: &str) -> BTreeMap<SpeedRow, f64> {
    primitive_ns
        .iter()
        .filter(|((id, _), _)| id == backend)
        .map(|((_, row), ns)| (*row, *ns))
        .collect()
}
