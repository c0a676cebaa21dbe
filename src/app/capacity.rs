//! `tlslab handshake --capacity`: how many new handshakes per second the
//! machine's cores give. Every row of the matrix is prepared (unsupported
//! and failing rows say why), the primitives `cost`'s model charges are
//! sampled, then per row 1, 2, ... N threads handshake at once for a fixed
//! window, cut into slices taken in alternating order of thread counts so
//! that the machine's drift falls on all of them alike; each row is stored
//! as it finishes and reported beside the
//! model's one-core figure times the threads.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;

use super::axes::matrix_from;
use super::session::{chosen_backends, usage, Bar, SamplingDefaults};
use super::study::{self, Outputs, Plan, RunView, Session, Study};
use crate::backend::{Backend, LibraryInfo};
use crate::certs::CertCache;
use crate::cli::HandshakeArgs;
use crate::host::available_cores;
use crate::measure::SamplingOptions;
use crate::model::model_side;
use crate::model::primitives::backend_costs;
use crate::report::capacity::CapacityReport;
use crate::report::Document;
use crate::scenario::presets::Preset;
use crate::scenario::Side;
use crate::scenario::{HandshakeMatrix, HandshakeScenario, Named};
use crate::store::{RunKind, Store, StoredRun};
use crate::workload::capacity::{run_step, CapacityCell, Step, StepTimes};
use crate::workload::handshake::HandshakeProbe;

/// Slices each thread count's window is cut into, taken in alternating order.
const ROUNDS: u32 = 4;

/// Sampling defaults of `handshake --capacity`: `max_time` is each step's
/// window and `warmup` its warm-up; the rest serve the model's primitives.
const DEFAULTS: SamplingDefaults = SamplingDefaults {
    precision: crate::cli::Percent::new(2.0),
    max_time_s: 2.0,
    min_samples: 20,
    warmup_s: 0.2,
    max_total_s: None,
    slice: Duration::from_millis(3),
};

/// The options of a capacity run, as stored with the run.
#[derive(Debug, Serialize)]
struct StoredOptions<'a> {
    preset: Option<&'static str>,
    backends: Vec<&'static str>,
    matrix: &'a HandshakeMatrix,
    threads: usize,
    times: StepTimes,
    max_total_time: Option<Duration>,
    /// The 1-minute load average when the run started (Linux).
    load_average: Option<f64>,
}

/// The 1-minute load average from /proc/loadavg, where there is one.
fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Runs `tlslab handshake --capacity` and returns the exit code.
pub(crate) fn run(args: &HandshakeArgs) -> Result<i32> {
    study::run::<CapacityStudy>(args)
}

/// A capacity run as planned from its command line.
pub(crate) struct CapacityStudy {
    preset: Option<Preset>,
    matrix: HandshakeMatrix,
    scenarios: Vec<HandshakeScenario>,
    backends: Vec<Arc<dyn Backend>>,
    threads: usize,
    options: SamplingOptions,
    times: StepTimes,
    load_average: Option<f64>,
    cert_dir: Option<std::path::PathBuf>,
    /// `--max-total-time` ran out before every row ran.
    out_of_time: bool,
}

/// A row of the matrix on one backend, and why it cannot run (as its cell)
/// if it cannot.
type Row = (Arc<dyn Backend>, HandshakeScenario, Option<CapacityCell>);

impl Study for CapacityStudy {
    type Args = HandshakeArgs;
    type Cell = CapacityCell;
    const KIND: RunKind = RunKind::Capacity;

    fn plan(args: &HandshakeArgs) -> Result<Plan<Self>> {
        let preset = args.preset;
        let matrix = matrix_from(args, preset)?;
        let backends = chosen_backends(
            args.backend.as_ref(),
            preset.map(|p| p.default_backends()),
            Some(&matrix.versions),
        )?;
        let threads = args.threads.unwrap_or_else(available_cores);
        let options = args.sampling.options(DEFAULTS)?;
        if options.max_time.is_zero() {
            return Err(usage(
                "--max-time is each thread count's window with --capacity: more than zero seconds",
            ));
        }
        Ok(Plan::Run(Self {
            preset,
            scenarios: matrix.expand(),
            matrix,
            backends,
            threads,
            times: StepTimes {
                warmup: options.warmup,
                window: options.max_time,
            },
            options,
            load_average: load_average(),
            cert_dir: args.cert_dir.clone(),
            out_of_time: false,
        }))
    }

    fn outputs(args: &HandshakeArgs) -> Outputs<'_> {
        Outputs::of(&args.output, args.quiet)
    }

    fn options_json(&self) -> Result<String> {
        Ok(serde_json::to_string(&StoredOptions {
            preset: self.preset.map(Named::id),
            backends: self.backends.iter().map(|b| b.id()).collect(),
            matrix: &self.matrix,
            threads: self.threads,
            times: self.times,
            max_total_time: self.options.max_total_time,
            load_average: self.load_average,
        })?)
    }

    fn libraries(&self) -> Vec<LibraryInfo> {
        self.backends.iter().map(|b| b.library()).collect()
    }

    fn measure(&mut self, session: &mut Session) -> Result<Vec<CapacityCell>> {
        let started = Instant::now();
        let certs = CertCache::new(self.cert_dir.clone().unwrap_or_else(CertCache::default_dir));
        let bar = session.bar(self.scenarios.len() * self.backends.len());
        let rows = self.prepare_rows(&certs, &bar);

        bar.0.set_message("the model's primitives");
        let pairs: Vec<(String, HandshakeScenario)> = rows
            .iter()
            .filter(|(_, _, not_runnable)| not_runnable.is_none())
            .map(|(backend, scenario, _)| (backend.id().to_string(), *scenario))
            .collect();
        let primitive_ns =
            super::cost::model_primitives(&pairs, &self.backends, &self.options, session)?;

        // Row by row in the matrix's order, each stored as it finishes; a
        // row that cannot run is stored when its turn comes.
        let mut cells = Vec::new();
        for (backend, scenario, not_runnable) in rows {
            if let Some(cell) = not_runnable {
                session.save(|store, run_id| store.save_capacity_cell(run_id, &cell));
                cells.push(cell);
                bar.0.inc(1);
                continue;
            }
            if session.interrupted() || self.out_of_time {
                continue;
            }
            let modelled = model_side(
                &scenario,
                Side::Server,
                &backend_costs(&primitive_ns, backend.id()),
                None,
            )
            .modelled_ns;
            let mut cell = CapacityCell {
                subject: backend.subject(),
                scenario,
                status: crate::measure::CellStatus::Measured,
                reason: None,
                modelled_server_ns: (modelled > 0.0).then_some(modelled),
                steps: Vec::new(),
            };
            self.measure_row(backend.as_ref(), &mut cell, &certs, started, session, &bar);
            session.save(|store, run_id| store.save_capacity_cell(run_id, &cell));
            cells.push(cell);
            bar.0.inc(1);
        }
        bar.0.finish_and_clear();
        Ok(cells)
    }

    fn document(&self, run: &RunView<'_>, cells: &[CapacityCell]) -> Result<Document> {
        let mut document = CapacityReport {
            run_id: run.run_id,
            complete: run.complete,
            host: run.host,
            libraries: run.libraries,
            cells,
            load_average: self.load_average,
        }
        .document();
        if self.out_of_time {
            document.footer.push(format!(
                "--max-total-time ran out: the last row stopped at the thread count it had reached, and {} row(s) did not run.",
                self.scenarios.len() * self.backends.len() - cells.len()
            ));
        }
        Ok(document)
    }

    fn failed(cell: &CapacityCell) -> bool {
        cell.status == crate::measure::CellStatus::Failed
    }

    fn stored_document(store: &Store, run: &StoredRun, _: Option<String>) -> Result<Document> {
        Ok(CapacityReport {
            run_id: Some(run.id),
            complete: run.status.is_complete(),
            host: &run.host,
            libraries: &run.libraries,
            cells: &store.load_capacity_cells(run.id)?,
            load_average: serde_json::from_str::<serde_json::Value>(&run.options_json)
                .ok()
                .and_then(|options| options["load_average"].as_f64()),
        }
        .document())
    }
}

impl CapacityStudy {
    /// Each row once on this thread: why it cannot run (a cell at once),
    /// or a first verified handshake (a row to measure).
    fn prepare_rows(&self, certs: &CertCache, bar: &Bar) -> Vec<Row> {
        let mut rows = Vec::new();
        for scenario in &self.scenarios {
            for backend in &self.backends {
                let not_runnable = HandshakeProbe::prepare(backend.as_ref(), scenario, certs)
                    .err()
                    .map(|outcome| {
                        bar.failed(&format!("{} {}", backend.id(), scenario.label()), &outcome);
                        CapacityCell {
                            subject: backend.subject(),
                            scenario: *scenario,
                            status: outcome.status(),
                            reason: outcome.reason().map(String::from),
                            modelled_server_ns: None,
                            steps: Vec::new(),
                        }
                    });
                rows.push((Arc::clone(backend), *scenario, not_runnable));
            }
        }
        rows
    }

    /// Measures one row at 1, 2, ... threads into `cell`'s steps. The
    /// window of each thread count is cut into [`ROUNDS`] slices taken in
    /// alternating order (1..N, then N..1, ...), so that a drift of the
    /// machine's speed falls on every thread count alike; a step is the
    /// sum of its slices. Stops on Ctrl-C, on `--max-total-time`, or when a
    /// step fails (the cell then fails with why).
    fn measure_row(
        &mut self,
        backend: &dyn Backend,
        cell: &mut CapacityCell,
        certs: &CertCache,
        started: Instant,
        session: &mut Session,
        bar: &Bar,
    ) {
        let threads = self.threads;
        let slice = StepTimes {
            warmup: self.times.warmup,
            window: self.times.window / ROUNDS,
        };
        let mut steps: Vec<Option<Step>> = vec![None; threads];
        'rounds: for round in 0..ROUNDS {
            let order: Vec<usize> = if round % 2 == 0 {
                (1..=threads).collect()
            } else {
                (1..=threads).rev().collect()
            };
            for count in order {
                bar.0.set_message(format!(
                    "{} {}: {count} thread{} ({}/{ROUNDS})",
                    cell.subject,
                    cell.scenario.label(),
                    if count == 1 { "" } else { "s" },
                    round + 1
                ));
                match run_step(
                    backend,
                    &cell.scenario,
                    certs,
                    count,
                    slice,
                    session.interrupt(),
                ) {
                    Ok(Some(step)) => {
                        let sum = &mut steps[count - 1];
                        *sum = Some(sum.map_or(step, |sum| sum.plus(&step)));
                    }
                    Ok(None) => {
                        session.mark_interrupted(true);
                        break 'rounds;
                    }
                    Err(reason) => {
                        cell.status = crate::measure::CellStatus::Failed;
                        cell.reason = Some(format!("with {count} threads: {reason}"));
                        bar.println(&format!(
                            "failed: {} {}: {reason}",
                            cell.subject,
                            cell.scenario.label()
                        ));
                        break 'rounds;
                    }
                }
                if self
                    .options
                    .max_total_time
                    .is_some_and(|budget| started.elapsed() >= budget)
                {
                    self.out_of_time = true;
                    break 'rounds;
                }
            }
        }
        cell.steps = steps.into_iter().flatten().collect();
    }
}
