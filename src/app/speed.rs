//! `tlslab speed`: rows x backends (x CPU feature sets), every row sampled
//! in interleaved rounds, each round's samples stored as the round ends,
//! reported like `openssl speed`. Its sampling also serves the primitives
//! `cost`'s model charges.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;

use super::generic;
use super::session::{chosen_backends, time_or_instructions, usage, Bar, SamplingDefaults};
use super::study::{self, Outputs, Plan, RunView, Session, StoringOutcomes, Study};
use crate::backend::{Backend, LibraryInfo};
use crate::certs::CertCache;
use crate::cli::{Algorithm, ExportArgs, GenericPlan, Size, SpeedArgs};
use crate::measure::{self, Outcome, Round, SamplingOptions};
use crate::report::Document;
use crate::scenario::speed::{expand, Primitive, SpeedRow};
use crate::scenario::Shard;
use crate::scenario::{distinct, BackendList, CpuFeatures, Measure, Named};
use crate::store::{RunKind, Store, StoredRun};
use crate::workload::counted::{count_instructions, CountOptions, CountedWork, Work};
use crate::workload::speed::{counted_operations, CountedOperations, PreparedRow, SpeedCell};

/// Sampling defaults of `speed`.
pub(crate) const DEFAULTS: SamplingDefaults = SamplingDefaults {
    precision: crate::cli::Percent::new(2.0),
    max_time_s: 0.5,
    min_samples: 5,
    warmup_s: 0.05,
    // Each sample is already a batch of about 2 ms.
    max_total_s: None,
    slice: Duration::ZERO,
};

/// The sizes of `--size`, each once, every one from 1 byte to 16 MiB.
fn sizes(asked: &[Size]) -> Result<Vec<usize>> {
    let sizes: Vec<usize> = distinct(asked).into_iter().map(Size::bytes).collect();
    if let Some(bad) = sizes
        .iter()
        .find(|size| !(1..=MAX_SIZE_BYTES).contains(*size))
    {
        return Err(usage(format!(
            "--size takes byte counts from 1 to {MAX_SIZE_BYTES}, got {bad}"
        )));
    }
    Ok(sizes)
}

/// The largest buffer `speed --size` takes: 16 MiB.
const MAX_SIZE_BYTES: usize = 1 << 24;

/// Runs `tlslab speed` and returns the exit code.
pub fn run(args: &SpeedArgs) -> Result<i32> {
    study::run::<SpeedStudy>(args)
}

/// A speed run as planned from its command line.
pub(crate) struct SpeedStudy {
    primitives: Vec<Primitive>,
    sizes: Vec<usize>,
    rows: Vec<SpeedRow>,
    backends: Vec<Arc<dyn Backend>>,
    feature_sets: Vec<CpuFeatures>,
    sampling: SamplingOptions,
    shard: Option<Shard>,
    measures: Vec<Measure>,
    valgrind: Option<String>,
    count_options: CountOptions,
    /// The parsed command line, handed to the generic-CPU child.
    args: SpeedArgs,
}

impl Study for SpeedStudy {
    type Args = SpeedArgs;
    type Cell = SpeedCell;
    const KIND: RunKind = RunKind::Speed;

    fn plan(args: &SpeedArgs) -> Result<Plan<Self>> {
        let primitives: Vec<Primitive> = if args.algorithm.contains(&Algorithm::All) {
            Primitive::ALL.to_vec()
        } else {
            let named: Vec<Primitive> = args
                .algorithm
                .iter()
                .filter_map(|algorithm| match algorithm {
                    Algorithm::One(primitive) => Some(*primitive),
                    Algorithm::All => None,
                })
                .collect();
            distinct(&named)
        };
        let sizes = sizes(&args.size)?;
        let rows = expand(&primitives, &sizes);
        if rows.is_empty() {
            return Err(usage("no algorithm to measure"));
        }
        let shard = args.shard.shard;
        let rows = Shard::filter(shard, rows, |row| row.label(), |_| false);
        if let (Some(shard), true) = (shard, rows.is_empty()) {
            return Ok(Plan::EmptyShard(shard));
        }
        let backends = chosen_backends(Some(&args.backend), None, None)?;
        let feature_sets = distinct(&args.cpu_features);
        let sampling = args.sampling.options(DEFAULTS)?;
        let (measures, valgrind) = time_or_instructions(args.measure.as_deref(), "speed")?;
        if measures.contains(&Measure::Instructions) && feature_sets.contains(&CpuFeatures::Generic)
        {
            return Err(usage(
                "--cpu-features generic is timed only; leave --measure at time for it",
            ));
        }
        Ok(Plan::Run(Self {
            primitives,
            sizes,
            rows,
            backends,
            feature_sets,
            sampling,
            shard,
            measures,
            valgrind,
            count_options: args.sampling.count_options(false),
            args: args.clone(),
        }))
    }

    fn outputs(args: &SpeedArgs) -> Outputs<'_> {
        Outputs::of(&args.output, args.quiet)
    }

    fn options_json(&self) -> Result<String> {
        Ok(serde_json::json!({
            "backends": self.backends.iter().map(|b| b.id()).collect::<Vec<_>>(),
            "algorithms": self.primitives.iter().map(|p| p.id()).collect::<Vec<_>>(),
            "sizes": self.sizes,
            "cpu_features": generic::feature_list(&self.feature_sets),
            "sampling": self.sampling,
            "shard": self.shard,
            "measures": self.measures,
            "valgrind": self.valgrind,
        })
        .to_string())
    }

    fn libraries(&self) -> Vec<LibraryInfo> {
        self.backends.iter().map(|b| b.library()).collect()
    }

    fn measure(&mut self, session: &mut Session) -> Result<Vec<SpeedCell>> {
        let mut cells: Vec<SpeedCell> = Vec::new();
        if self.measures.contains(&Measure::Time)
            && self.feature_sets.contains(&CpuFeatures::Native)
        {
            cells = measure_rows(&self.backends, &self.rows, &self.sampling, session)?;
        }
        if !session.interrupted() && self.measures.contains(&Measure::Instructions) {
            count_rows(
                &self.backends,
                &self.rows,
                &self.count_options,
                session,
                &mut cells,
            )?;
        }
        if !session.interrupted() && self.feature_sets.contains(&CpuFeatures::Generic) {
            let backend_ids: Vec<&'static str> = self.backends.iter().map(|b| b.id()).collect();
            for cell in generic_cells(&self.args, &backend_ids, &self.rows, session)? {
                session.save(|store, run_id| store.save_speed_cell(run_id, &cell));
                cells.push(cell);
            }
        }
        Ok(cells)
    }

    fn document(&self, run: &RunView<'_>, cells: &[SpeedCell]) -> Result<Document> {
        Ok(crate::report::speed::document(
            cells,
            run.run_id,
            run.complete,
            run.host,
            run.libraries,
            Some(self.sampling.seed),
            self.valgrind.as_deref(),
        ))
    }

    fn failed(cell: &SpeedCell) -> bool {
        cell.outcome.status() == crate::measure::CellStatus::Failed
    }

    fn stored_document(store: &Store, run: &StoredRun, _: Option<String>) -> Result<Document> {
        let sampling = super::session::stored_sampling(&run.options_json);
        Ok(crate::report::speed::document(
            &store.load_speed_cells(run.id)?,
            Some(run.id),
            run.status.is_complete(),
            &run.host,
            &run.libraries,
            sampling.seed,
            sampling.valgrind.as_deref(),
        ))
    }
}

/// Samples every row on every backend (rows by backend, in order) and
/// stores the run's rounds; see [`sample_cells`].
fn measure_rows(
    backends: &[Arc<dyn Backend>],
    rows: &[SpeedRow],
    options: &SamplingOptions,
    session: &mut Session,
) -> Result<Vec<SpeedCell>> {
    let planned: Vec<(Arc<dyn Backend>, SpeedRow)> = rows
        .iter()
        .flat_map(|row| backends.iter().map(move |b| (Arc::clone(b), *row)))
        .collect();
    let bar = session.bar(planned.len());
    let sampled = sample_cells(&planned, options, session, &bar, true)?;
    bar.0.finish_and_clear();
    session.save(|store, run_id| store.save_rounds(run_id, &sampled.rounds));
    session.mark_interrupted(sampled.interrupted);
    Ok(sampled.cells)
}

/// Speed cells sampled in interleaved rounds, and how the sampling ended.
pub(super) struct SampledCells {
    /// One cell per (backend, row) pair, in the order planned.
    pub cells: Vec<SpeedCell>,
    pub rounds: Vec<Round>,
    /// Ctrl-C stopped the sampling.
    pub interrupted: bool,
}

/// Prepares each (backend, row) pair and samples the prepared ones in
/// interleaved rounds (`speed`, and the primitives `cost`'s model
/// charges). A pair that cannot be prepared is stored at once; the others
/// are stored round by round, each round's samples as it ends (a kill -9
/// keeps every round that ended), and whole as each cell stops. The
/// rounds themselves are stored as each is recorded if and only if
/// `rounds_are_the_runs` (`speed`'s, not those of `cost`'s primitives).
pub(super) fn sample_cells(
    planned: &[(Arc<dyn Backend>, SpeedRow)],
    options: &SamplingOptions,
    session: &mut Session,
    bar: &Bar,
    rounds_are_the_runs: bool,
) -> Result<SampledCells> {
    let mut cells: Vec<SpeedCell> = Vec::new();
    let mut prepared: Vec<PreparedRow> = Vec::new();
    let mut prepared_cell: Vec<usize> = Vec::new();
    for (backend, row) in planned {
        let mut cell = SpeedCell {
            counted: None,
            subject: backend.subject(),
            row: *row,
            batch: 0,
            outcome: Outcome::Measured {
                samples: Vec::new(),
                precise: false,
                note: None,
            },
        };
        match PreparedRow::new(backend.primitives().as_ref(), row) {
            Ok(ready) => {
                cell.batch = ready.batch;
                prepared_cell.push(cells.len());
                prepared.push(ready);
            }
            Err(unsupported) => {
                cell.outcome = Outcome::Unsupported {
                    reason: unsupported.0,
                };
                session.save(|store, run_id| store.save_speed_cell(run_id, &cell));
            }
        }
        cells.push(cell);
    }
    let already = cells.len() - prepared.len();
    let interrupt = Arc::clone(session.interrupt());
    let run = measure::sample(
        prepared.iter_mut().map(PreparedRow::probe).collect(),
        measure::Pairing::None,
        options,
        &interrupt,
        &mut StoringOutcomes {
            cells: &mut cells,
            probe_cell: &prepared_cell,
            session,
            bar,
            already,
            label: |cell| format!("{} {}", cell.subject, cell.row.label()),
            outcome: |cell| &mut cell.outcome,
            save: |store, run_id, cell| store.save_speed_cell(run_id, cell),
            save_samples: |store, run_id, taken| store.save_speed_samples(run_id, taken),
            store_rounds: rounds_are_the_runs,
        },
    )?;
    Ok(SampledCells {
        cells,
        rounds: run.rounds,
        interrupted: run.interrupted,
    })
}

/// Counts every row's instructions per operation on every backend under
/// valgrind and stores them: beside the timed samples of `cells` (rows
/// by backend, in order), or as new cells when time was not measured.
fn count_rows(
    backends: &[Arc<dyn Backend>],
    rows: &[SpeedRow],
    options: &CountOptions,
    session: &mut Session,
    cells: &mut Vec<SpeedCell>,
) -> Result<()> {
    let planned: Vec<(SpeedRow, &std::sync::Arc<dyn Backend>)> = rows
        .iter()
        .flat_map(|row| backends.iter().map(move |b| (*row, b)))
        .collect();
    let work: Vec<CountedWork> = planned
        .iter()
        .map(|(row, backend)| {
            (
                Work::Speed {
                    row: *row,
                    operations: counted_operations(row),
                },
                Some(std::sync::Arc::clone(backend)),
            )
        })
        .collect();
    let bar = Bar::counting(work.len() * options.samples, session.quiet());
    let counted = count_instructions(
        &work,
        &CertCache::new(CertCache::default_dir()),
        options,
        session.interrupt(),
        &|done| bar.0.set_position(done as u64),
    )?;
    bar.0.finish_and_clear();
    let timed = !cells.is_empty();
    for (i, ((row, backend), cell)) in planned.iter().zip(counted).enumerate() {
        let counted = CountedOperations {
            operations: counted_operations(row),
            outcome: cell.outcome,
        };
        if timed {
            cells[i].counted = Some(counted);
            session.save(|store, run_id| store.save_speed_counts(run_id, &cells[i]));
        } else {
            let cell = SpeedCell {
                subject: backend.subject(),
                row: *row,
                batch: counted.operations,
                outcome: counted.outcome.without_samples(),
                counted: Some(counted),
            };
            session.save(|store, run_id| store.save_speed_cell(run_id, &cell));
            cells.push(cell);
        }
    }
    Ok(())
}

/// Measures the rows again in a child process whose libraries see no CPU
/// features ([`generic`]): its own run in a scratch database, read back
/// here. A backend that cannot be told to ignore them (ring, says its
/// descriptor) gets rows that say so.
fn generic_cells(
    args: &SpeedArgs,
    backends: &[&'static str],
    rows: &[SpeedRow],
    session: &Session,
) -> Result<Vec<SpeedCell>> {
    let maskable = generic::maskable(backends);
    let mut cells = Vec::new();
    if !maskable.is_empty() {
        let plan = |database: &std::path::Path| {
            let mut child = args.clone();
            child.cpu_features = vec![CpuFeatures::Native];
            child.output.database = generic::child_database(database);
            child.output.exports = ExportArgs::default();
            child.quiet = true;
            child.backend = BackendList::named(maskable).expect("backends' ids are their names");
            GenericPlan::Speed(Box::new(child))
        };
        let measured = generic::run_child(plan, session, |store| {
            store.load_speed_cells(store.latest_run_id().ok()??).ok()
        })?;
        cells.extend(measured.into_iter().flatten().map(|mut cell| {
            cell.subject = cell.subject.with_cpu_features(CpuFeatures::Generic);
            cell
        }));
    }
    for (backend, reason) in generic::unmaskable(backends) {
        cells.extend(rows.iter().map(|row| SpeedCell {
            counted: None,
            subject: generic::generic_row(backend),
            row: *row,
            batch: 0,
            outcome: Outcome::Unsupported {
                reason: reason.to_string(),
            },
        }));
    }
    Ok(cells)
}
