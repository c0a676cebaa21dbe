//! What one `speed` sample does: a batch of one prepared primitive
//! operation, sized at preparation to last about two milliseconds, timed as
//! a whole and stored as the time per operation.

use std::time::{Duration, Instant};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::backend::{PreparedOperation, PrimitiveBackend, Unsupported};
use crate::measure::{Outcome, Probe, Sampled};
use crate::scenario::speed::SpeedRow;
use crate::scenario::Subject;
use crate::workload::counted::values::Instructions;

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
    /// The backend measured (natively or without CPU features); exported
    /// as `backend`, as it always was.
    #[serde(rename = "backend")]
    pub subject: Subject,
    pub row: SpeedRow,
    /// Operations per sample (0 when not measured).
    pub batch: u64,
    /// The timed samples (none when time was not measured).
    pub outcome: Outcome<SpeedSample>,
    /// Instructions counted under valgrind (`--measure instructions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted: Option<CountedOperations>,
}

/// A speed row's counted instructions: each sample is `operations`
/// operations, its count the client's of an [`Instructions`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CountedOperations {
    pub operations: u64,
    pub outcome: Outcome<Instructions>,
}

impl CountedOperations {
    /// Instructions per operation, one value per sample.
    pub fn per_operation(&self) -> Vec<f64> {
        self.outcome
            .samples()
            .iter()
            .map(|s| s.value.client as f64 / self.operations.max(1) as f64)
            .collect()
    }
}

/// Operations per counted sample of a row: a few of a public-key
/// operation (one RSA-4096 signature is a hundred million instructions
/// under valgrind), more of a cipher or a hash over a buffer.
pub fn counted_operations(row: &SpeedRow) -> u64 {
    if row.size_bytes.is_some() {
        16
    } else {
        2
    }
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

    /// Runs the operation `count` times, untimed (counted samples).
    pub fn run(&mut self, count: u64) -> Result<()> {
        for _ in 0..count {
            (self.operation)()?;
        }
        Ok(())
    }

    /// A row prepared without calibrating a batch (counted samples, whose
    /// work must not depend on time).
    pub fn uncalibrated(
        backend: &dyn PrimitiveBackend,
        row: &SpeedRow,
    ) -> Result<Self, Unsupported> {
        Ok(Self {
            operation: backend.prepare(row)?,
            batch: 0,
        })
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
