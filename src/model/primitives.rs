//! The primitives the cost model charges: which rows a handshake needs
//! (from its counted operations), sampled per backend in interleaved rounds
//! as `speed` samples them, and their median cost per operation.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;

use crate::backend::rustls::instrument::Side;
use crate::backend::Backend;
use crate::measure::{self, Outcome, SamplingOptions};
use crate::model::counts;
use crate::scenario::speed::SpeedRow;
use crate::scenario::HandshakeScenario;
use crate::stats;
use crate::workload::speed::{PreparedRow, SpeedCell};

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
/// pairs with, per backend, sampled in interleaved rounds: their cells (a
/// run stores them as speed cells) and whether Ctrl-C stopped the sampling.
pub fn sample_primitives(
    pairs: &[(String, HandshakeScenario)],
    backends: &[Arc<dyn Backend>],
    options: &SamplingOptions,
    interrupt: &AtomicBool,
) -> Result<(Vec<SpeedCell>, bool)> {
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
    let mut speed_cells = Vec::new();
    let mut prepared = Vec::new();
    let mut prepared_cell = Vec::new();
    for (backend_id, row) in &wanted {
        let backend = backends
            .iter()
            .find(|b| b.id() == backend_id)
            .expect("a backend of this run");
        let mut cell = SpeedCell {
            counted: None,
            backend: backend_id.clone(),
            row: *row,
            batch: 0,
            outcome: Outcome::Measured {
                samples: Vec::new(),
                precise: false,
            },
        };
        match PreparedRow::new(backend.primitives().as_ref(), row) {
            Ok(ready) => {
                cell.batch = ready.batch;
                prepared_cell.push(speed_cells.len());
                prepared.push(ready);
            }
            Err(unsupported) => {
                cell.outcome = Outcome::Unsupported {
                    reason: unsupported.0,
                }
            }
        }
        speed_cells.push(cell);
    }
    let run = measure::sample(
        prepared.iter_mut().map(PreparedRow::probe).collect(),
        measure::Pairing::None,
        options,
        interrupt,
        &mut measure::Quietly,
    )?;
    for (index, outcome) in run.outcomes.into_iter().enumerate() {
        speed_cells[prepared_cell[index]].outcome = outcome;
    }
    Ok((speed_cells, run.interrupted))
}

/// The median time per operation of each measured primitive row.
pub fn medians(speed_cells: &[SpeedCell]) -> PrimitiveCosts {
    let mut costs = BTreeMap::new();
    for cell in speed_cells {
        let values: Vec<f64> = cell
            .outcome
            .samples()
            .iter()
            .map(|s| s.value.ns_per_op)
            .collect();
        if let Some(median) = stats::median(&values) {
            costs.insert((cell.backend.clone(), cell.row), median);
        }
    }
    costs
}

/// One backend's primitive costs, by row.
pub fn backend_costs(primitive_ns: &PrimitiveCosts, backend: &str) -> BTreeMap<SpeedRow, f64> {
    primitive_ns
        .iter()
        .filter(|((id, _), _)| id == backend)
        .map(|((_, row), ns)| (*row, *ns))
        .collect()
}
