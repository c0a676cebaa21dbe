//! Runners: warm-up, the sampling loop that stops when the median is precise
//! enough or the time budget is spent, and the matrix runner that turns every
//! (scenario, backend) pair into a finished cell, reporting progress and
//! handing each cell to the caller as soon as it is done.

pub mod verify;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::backend::{Backend, Handshaker, Negotiated};
use crate::certs::CertCache;
use crate::scenario::HandshakeScenario;
use crate::stats;

/// When to stop sampling a cell.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SamplingOptions {
    /// Stop once the 95% interval of the median wall time is within ± this
    /// fraction of the median (0.01 = 1%).
    pub precision: f64,
    /// Stop once this much time went into a cell's samples (after `min_samples`).
    pub max_time: Duration,
    /// Never stop with fewer samples.
    pub min_samples: usize,
    /// Handshakes before sampling, not recorded (at least two).
    pub warmup: Duration,
}

impl Default for SamplingOptions {
    fn default() -> Self {
        Self {
            precision: 0.01,
            max_time: Duration::from_secs(5),
            min_samples: 10,
            warmup: Duration::from_millis(200),
        }
    }
}

/// One measured handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Sample {
    pub wall_ns: u64,
    pub client_ns: u64,
    pub server_ns: u64,
}

/// What happened to one cell of the matrix.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CellOutcome {
    Measured {
        negotiated: Negotiated,
        samples: Vec<Sample>,
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

/// One (scenario, backend) pair and its outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellResult {
    pub backend: String,
    pub scenario: HandshakeScenario,
    pub outcome: CellOutcome,
}

impl CellResult {
    pub fn samples(&self) -> &[Sample] {
        match &self.outcome {
            CellOutcome::Measured { samples, .. } => samples,
            _ => &[],
        }
    }
}

/// The run was interrupted (Ctrl-C); the cell under way is dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("interrupted")]
pub struct Interrupted;

/// Samples one scenario on a prepared handshaker.
pub fn sample_cell(
    handshaker: &mut dyn Handshaker,
    scenario: &HandshakeScenario,
    check_signature: bool,
    options: &SamplingOptions,
    interrupt: &AtomicBool,
) -> Result<CellOutcome, Interrupted> {
    let failed = |reason: String| Ok(CellOutcome::Failed { reason });
    let mut one = || -> Result<crate::backend::HandshakeSample, String> {
        let sample = handshaker.handshake().map_err(|e| format!("{e:#}"))?;
        verify::check(scenario, &sample.negotiated, check_signature).map_err(|e| e.to_string())?;
        Ok(sample)
    };

    let warmup_start = Instant::now();
    let mut warmups = 0;
    while warmups < 2 || warmup_start.elapsed() < options.warmup {
        if interrupt.load(Ordering::Relaxed) {
            return Err(Interrupted);
        }
        if let Err(reason) = one() {
            return failed(reason);
        }
        warmups += 1;
    }

    let mut samples = Vec::new();
    let mut walls = Vec::new();
    let mut negotiated = None;
    let mut next_check = options.min_samples.max(2);
    let start = Instant::now();
    let precise = loop {
        if interrupt.load(Ordering::Relaxed) {
            return Err(Interrupted);
        }
        let sample = match one() {
            Ok(sample) => sample,
            Err(reason) => return failed(reason),
        };
        samples.push(Sample {
            wall_ns: sample.wall_ns,
            client_ns: sample.client_ns,
            server_ns: sample.server_ns,
        });
        walls.push(sample.wall_ns as f64);
        negotiated.get_or_insert(sample.negotiated);
        let count = samples.len();
        if count < options.min_samples.max(1) {
            continue;
        }
        if count >= next_check {
            // Checked at growing intervals so the check stays cheap.
            next_check = count + (count / 10).max(10);
            if stats::median_precision(&walls) <= options.precision {
                break true;
            }
        }
        if start.elapsed() >= options.max_time {
            break stats::median_precision(&walls) <= options.precision;
        }
    };
    Ok(CellOutcome::Measured {
        negotiated: negotiated.expect("at least one sample"),
        samples,
        precise,
    })
}

/// Progress of a matrix run, for a progress bar or a log.
pub trait Progress {
    /// A cell is about to start; `done` cells of `total` are finished.
    fn cell_started(
        &mut self,
        done: usize,
        total: usize,
        backend: &str,
        scenario: &HandshakeScenario,
    );
    /// A cell finished.
    fn cell_finished(&mut self, done: usize, total: usize, cell: &CellResult);
}

/// Progress that goes nowhere.
pub struct NoProgress;

impl Progress for NoProgress {
    fn cell_started(&mut self, _: usize, _: usize, _: &str, _: &HandshakeScenario) {}
    fn cell_finished(&mut self, _: usize, _: usize, _: &CellResult) {}
}

/// How a matrix run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixRun {
    pub cells: Vec<CellResult>,
    pub interrupted: bool,
}

/// Runs every scenario on every backend, scenario by scenario. Each finished
/// cell goes to `on_cell` at once (to be stored); an error from `on_cell`
/// stops the run. On interrupt, the cell under way is dropped and every
/// finished cell is kept.
pub fn run_matrix(
    scenarios: &[HandshakeScenario],
    backends: &[Arc<dyn Backend>],
    certs: &CertCache,
    options: &SamplingOptions,
    progress: &mut dyn Progress,
    interrupt: &AtomicBool,
    on_cell: &mut dyn FnMut(&CellResult) -> anyhow::Result<()>,
) -> anyhow::Result<MatrixRun> {
    let total = scenarios.len() * backends.len();
    let mut cells = Vec::with_capacity(total);
    for scenario in scenarios {
        for backend in backends {
            if interrupt.load(Ordering::Relaxed) {
                return Ok(MatrixRun {
                    cells,
                    interrupted: true,
                });
            }
            progress.cell_started(cells.len(), total, backend.id(), scenario);
            let outcome = match measure_one(backend.as_ref(), scenario, certs, options, interrupt) {
                Ok(outcome) => outcome,
                Err(Interrupted) => {
                    return Ok(MatrixRun {
                        cells,
                        interrupted: true,
                    })
                }
            };
            let cell = CellResult {
                backend: backend.id().to_string(),
                scenario: *scenario,
                outcome,
            };
            on_cell(&cell)?;
            cells.push(cell);
            progress.cell_finished(cells.len(), total, cells.last().expect("just pushed"));
        }
    }
    Ok(MatrixRun {
        cells,
        interrupted: false,
    })
}

fn measure_one(
    backend: &dyn Backend,
    scenario: &HandshakeScenario,
    certs: &CertCache,
    options: &SamplingOptions,
    interrupt: &AtomicBool,
) -> Result<CellOutcome, Interrupted> {
    if let Some(reason) = scenario.protocol_conflict() {
        return Ok(CellOutcome::Unsupported { reason });
    }
    if let Some(reason) = backend.unsupported_reason(scenario) {
        return Ok(CellOutcome::Unsupported { reason });
    }
    let credentials = match certs.get(scenario.cert, scenario.chain_depth) {
        Ok(credentials) => credentials,
        Err(error) => {
            return Ok(CellOutcome::Failed {
                reason: format!("{error:#}"),
            })
        }
    };
    let mut handshaker = match backend.handshaker(scenario, &credentials) {
        Ok(handshaker) => handshaker,
        Err(error) => {
            return Ok(CellOutcome::Failed {
                reason: format!("{error:#}"),
            })
        }
    };
    let check_signature = backend.capabilities().reports_signature_scheme;
    sample_cell(
        handshaker.as_mut(),
        scenario,
        check_signature,
        options,
        interrupt,
    )
}
