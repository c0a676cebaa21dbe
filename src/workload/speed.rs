//! What one `speed` sample does: a batch of one prepared primitive
//! operation, sized at preparation to last about two milliseconds, timed as
//! a whole and stored as the time per operation.

use std::time::{Duration, Instant};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::backend::{PreparedOperation, PrimitiveBackend, Unsupported};
use crate::measure::{Outcome, Probe, Sampled};
use crate::scenario::speed::SpeedRow;

/// How long one sample should take.
const SAMPLE_TARGET: Duration = Duration::from_millis(2);

/// One sample: the time per operation over a batch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SpeedSample {
    pub ns_per_op: f64,
}

impl Sampled for SpeedSample {
    fn cost(&self) -> f64 {
        self.ns_per_op
    }
}

/// A speed row on one backend, with its outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpeedCell {
    pub backend: String,
    pub row: SpeedRow,
    /// Operations per sample (0 when not measured).
    pub batch: u64,
    pub outcome: Outcome<SpeedSample>,
}

/// A primitive operation ready to sample, with its calibrated batch.
pub struct PreparedRow {
    operation: PreparedOperation,
    pub batch: u64,
}

impl PreparedRow {
    /// Prepares a row: keys and buffers, then a batch size found by doubling
    /// until a batch takes a fair share of the target.
    pub fn new(backend: &dyn PrimitiveBackend, row: &SpeedRow) -> Result<Self, Unsupported> {
        let mut operation = backend.prepare(row)?;
        let mut batch: u64 = 1;
        loop {
            let start = Instant::now();
            for _ in 0..batch {
                operation()?;
            }
            let elapsed = start.elapsed();
            if elapsed >= SAMPLE_TARGET / 4 || batch >= 1 << 20 {
                let per_op = elapsed.as_secs_f64() / batch as f64;
                batch = ((SAMPLE_TARGET.as_secs_f64() / per_op.max(1e-9)) as u64).clamp(1, 1 << 22);
                break;
            }
            batch *= 2;
        }
        Ok(Self { operation, batch })
    }

    /// One sample: the batch, timed.
    pub fn sample(&mut self) -> Result<SpeedSample> {
        let start = Instant::now();
        for _ in 0..self.batch {
            (self.operation)()?;
        }
        Ok(SpeedSample {
            ns_per_op: start.elapsed().as_nanos() as f64 / self.batch as f64,
        })
    }

    /// The row as a probe for the sampler.
    pub fn probe(&mut self) -> Probe<'_, SpeedSample> {
        Box::new(move || self.sample().map_err(|e| format!("{e:#}")))
    }
}
