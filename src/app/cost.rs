//! `tlslab cost`: the handshakes of the matrix sampled in interleaved rounds,
//! the primitives the model needs sampled the same way, the model beside the
//! measurement, and with `--breakdown` where each side's time goes.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;

use super::session::{checked_measures, chosen_backends, usage, Bar, SamplingDefaults};
use super::study::{self, Outputs, Plan, RunView, Session, StoringCells, Study};
use crate::backend::{Backend, LibraryInfo};
use crate::certs::CertCache;
use crate::cli::CostArgs;
use crate::measure::SamplingOptions;
use crate::model::primitives::{backend_costs, charged_rows, primitive_options, PrimitiveCosts};
use crate::model::{model_side, modelled_breakdown, Breakdown};
use crate::report::cost::ScenarioCost;
use crate::report::Document;
use crate::scenario::presets::CostPreset;
use crate::scenario::speed::SpeedRow;
use crate::scenario::Shard;
use crate::scenario::Side;
use crate::scenario::{CertKind, HandshakeMatrix, HandshakeScenario, Measure, Named};
use crate::stats;
use crate::store::{RunKind, Store, StoredRun};
use crate::workload::breakdown::counted_breakdown;
use crate::workload::counted::{count_instructions, CountOptions, CountedWork, Work};
use crate::workload::handshake::{run_matrix, CellResult};
use crate::workload::speed::SpeedCell;

/// Sampling defaults of `cost`.
pub(crate) const DEFAULTS: SamplingDefaults = SamplingDefaults {
    precision: crate::cli::Percent::new(2.0),
    max_time_s: 2.0,
    min_samples: 20,
    warmup_s: 0.2,
    max_total_s: None,
    slice: Duration::from_millis(3),
};

fn matrix(args: &CostArgs, preset: Option<CostPreset>) -> Result<HandshakeMatrix> {
    let matrix = match preset {
        Some(preset) => preset.matrix(),
        // handshake's default matrix, the ECDSA row first.
        None => HandshakeMatrix {
            certs: vec![CertKind::EcdsaP256, CertKind::Rsa2048],
            ..super::axes::default_matrix()
        },
    };
    let matrix = args.axes.apply(matrix);
    matrix.validate().map_err(usage)?;
    Ok(matrix)
}

/// Runs `tlslab cost` and returns the exit code.
pub fn run(args: &CostArgs) -> Result<i32> {
    study::run::<CostStudy>(args)
}

/// A cost run as planned from its command line, and what its measuring
/// found beside the cells: each row's model, the primitives' costs.
pub(crate) struct CostStudy {
    preset: Option<CostPreset>,
    matrix: HandshakeMatrix,
    scenarios: Vec<HandshakeScenario>,
    backends: Vec<Arc<dyn Backend>>,
    sampling: SamplingOptions,
    breakdown: bool,
    shard: Option<Shard>,
    measures: Vec<Measure>,
    valgrind: Option<String>,
    count_options: CountOptions,
    cert_dir: Option<std::path::PathBuf>,
    /// Each row's model beside its measurement, in the order `report` shows them.
    results: Vec<ScenarioCost>,
    primitive_ns: PrimitiveCosts,
}

impl Study for CostStudy {
    type Args = CostArgs;
    type Cell = CellResult;
    const KIND: RunKind = RunKind::Cost;

    fn plan(args: &CostArgs) -> Result<Plan<Self>> {
        let preset = args.preset;
        let matrix = matrix(args, preset)?;
        let default_backends: &[&str] = match preset {
            Some(CostPreset::RsaVsEcdsa) => &["openssl"],
            None => &["openssl", "rustls-aws-lc"],
        };
        let backends: Vec<Arc<dyn Backend>> = chosen_backends(
            args.backend.as_ref(),
            Some(default_backends),
            Some(&matrix.versions),
        )?;
        let sampling = args.sampling.options(DEFAULTS)?;
        let (measures, valgrind) = checked_measures(args.measure.as_deref(), false)?;
        if measures.contains(&Measure::Memory) || !measures.contains(&Measure::Time) {
            return Err(usage(
                "cost models time: --measure takes time and instructions (time,instructions); memory is handshake's",
            ));
        }
        let shard = args.shard.shard;
        let scenarios = Shard::filter(shard, matrix.expand(), |s| s.label(), |_| false);
        if let (Some(shard), true) = (shard, scenarios.is_empty()) {
            return Ok(Plan::EmptyShard(shard));
        }
        Ok(Plan::Run(Self {
            preset,
            matrix,
            scenarios,
            backends,
            sampling,
            breakdown: args.breakdown,
            shard,
            measures,
            valgrind,
            count_options: args.sampling.count_options(args.breakdown),
            cert_dir: args.cert_dir.clone(),
            results: Vec::new(),
            primitive_ns: PrimitiveCosts::new(),
        }))
    }

    fn outputs(args: &CostArgs) -> Outputs<'_> {
        Outputs::of(&args.output, args.quiet)
    }

    fn options_json(&self) -> Result<String> {
        Ok(serde_json::json!({
            "preset": self.preset.map(Named::id),
            "backends": self.backends.iter().map(|b| b.id()).collect::<Vec<_>>(),
            "matrix": self.matrix,
            "sampling": self.sampling,
            "breakdown": self.breakdown,
            "shard": self.shard,
            "measures": self.measures,
            "valgrind": self.valgrind,
        })
        .to_string())
    }

    fn libraries(&self) -> Vec<LibraryInfo> {
        self.backends.iter().map(|b| b.library()).collect()
    }

    fn measure(&mut self, session: &mut Session) -> Result<Vec<CellResult>> {
        let certs = CertCache::new(self.cert_dir.clone().unwrap_or_else(CertCache::default_dir));
        let interrupt = Arc::clone(session.interrupt());
        let bar = session.bar(self.scenarios.len() * self.backends.len());
        let handshakes = run_matrix(
            &self.scenarios,
            &self.backends,
            &certs,
            &self.sampling,
            None,
            &interrupt,
            &mut StoringCells { session, bar: &bar },
        )?;
        bar.0.finish_and_clear();
        session.save(|store, run_id| store.save_rounds(run_id, &handshakes.rounds));
        session.mark_interrupted(handshakes.interrupted);
        let mut cells = handshakes.cells;
        if !session.interrupted() {
            let measured: Vec<(String, HandshakeScenario)> = cells
                .iter()
                .filter(|c| !c.samples().is_empty())
                .map(|c| (c.subject.name(), c.scenario))
                .collect();
            self.primitive_ns =
                model_primitives(&measured, &self.backends, &self.sampling, session)?;
        }
        // In the order `report` shows them again.
        let mut in_order = cells.clone();
        crate::report::handshake::sort_cells(&mut in_order);
        for cell in &in_order {
            let backend = self
                .backends
                .iter()
                .find(|b| b.subject() == cell.subject)
                .expect("cells come from these backends");
            let mut result = scenario_cost(cell, &self.primitive_ns);
            if self.breakdown && result.reason.is_none() && !session.interrupted() {
                let credentials = certs.get(cell.scenario.cert, cell.scenario.chain_depth)?;
                result.breakdown = breakdown(
                    backend.as_ref(),
                    &cell.scenario,
                    &credentials,
                    &self.sampling,
                    &interrupt,
                    &result,
                )?;
            }
            self.results.push(result);
        }
        if self.measures.contains(&Measure::Instructions) && !session.interrupted() {
            count_cells(
                &mut cells,
                &self.backends,
                &certs,
                &self.count_options,
                session,
            )?;
        }
        Ok(cells)
    }

    fn document(&self, run: &RunView<'_>, cells: &[CellResult]) -> Result<Document> {
        let mut document = crate::report::cost::document(
            &self.results,
            self.breakdown,
            run.run_id,
            run.complete,
            run.host,
            run.libraries,
            primitive_costs_json(&self.primitive_ns),
        );
        document
            .tables
            .extend(crate::report::handshake::breakdown_table(cells));
        Ok(document)
    }

    fn failed(cell: &CellResult) -> bool {
        cell.outcome.status() == crate::measure::CellStatus::Failed
    }

    /// A stored cost run as the command showed it: the model recomputed
    /// from the primitive costs the run measured and stored, beside its
    /// handshakes. The breakdown per category (`--breakdown`) is not stored.
    fn stored_document(store: &Store, run: &StoredRun, _: Option<String>) -> Result<Document> {
        let primitive_ns = medians(&store.load_speed_cells(run.id)?);
        let mut cells = run.cells.clone();
        crate::report::handshake::sort_cells(&mut cells);
        let results: Vec<ScenarioCost> = cells
            .iter()
            .map(|cell| scenario_cost(cell, &primitive_ns))
            .collect();
        let mut document = crate::report::cost::document(
            &results,
            false,
            Some(run.id),
            run.status.is_complete(),
            &run.host,
            &run.libraries,
            primitive_costs_json(&primitive_ns),
        );
        document
            .tables
            .extend(crate::report::handshake::breakdown_table(&run.cells));
        let options: serde_json::Value =
            serde_json::from_str(&run.options_json).unwrap_or_default();
        if options["breakdown"].as_bool() == Some(true) {
            document.footer.push(
                "The run's breakdown of each side's time by category (--breakdown) is computed when the command runs and not stored: run it again to see it.".to_string(),
            );
        }
        Ok(document)
    }
}

/// The primitives the model charges these (backend id, scenario) pairs
/// with ([`charged_rows`]), sampled as `speed` samples them and stored
/// with the run as speed cells, round by round; their median cost per
/// operation (`cost`, `--capacity`). Their rounds are not the run's: they
/// are not stored.
pub(super) fn model_primitives(
    pairs: &[(String, HandshakeScenario)],
    backends: &[Arc<dyn Backend>],
    sampling: &SamplingOptions,
    session: &mut Session,
) -> Result<PrimitiveCosts> {
    let planned: Vec<(Arc<dyn Backend>, SpeedRow)> = charged_rows(pairs)
        .into_iter()
        .map(|(id, row)| {
            let backend = backends
                .iter()
                .find(|b| b.id() == id)
                .expect("a backend of this run");
            (Arc::clone(backend), row)
        })
        .collect();
    // The command's own bar counts its rows, not these.
    let hidden = Bar::new(planned.len(), true);
    // Not the run's rounds (those are its handshakes'): not stored.
    let sampled = super::speed::sample_cells(
        &planned,
        &primitive_options(sampling),
        session,
        &hidden,
        false,
    )?;
    session.mark_interrupted(sampled.interrupted);
    Ok(medians(&sampled.cells))
}

/// The median time per operation of each measured primitive row.
fn medians(speed_cells: &[SpeedCell]) -> PrimitiveCosts {
    speed_cells
        .iter()
        .filter_map(|cell| {
            let values: Vec<f64> = cell
                .outcome
                .samples()
                .iter()
                .map(|s| s.value.ns_per_op)
                .collect();
            stats::median(&values).map(|median| ((cell.subject.name(), cell.row), median))
        })
        .collect()
}

/// Counts each measured handshake's instructions per side under valgrind
/// (with `--breakdown`, per category too) and stores them with its cell.
fn count_cells(
    cells: &mut [CellResult],
    backends: &[Arc<dyn Backend>],
    certs: &CertCache,
    options: &CountOptions,
    session: &mut Session,
) -> Result<()> {
    let measured: Vec<usize> = (0..cells.len())
        .filter(|&i| !cells[i].samples().is_empty())
        .collect();
    let work: Vec<CountedWork> = measured
        .iter()
        .map(|&i| {
            let backend = backends
                .iter()
                .find(|b| b.subject() == cells[i].subject)
                .cloned();
            (
                Work::Handshake {
                    scenario: cells[i].scenario,
                },
                backend,
            )
        })
        .collect();
    let bar = Bar::counting(work.len() * options.samples, session.quiet());
    let counted = count_instructions(&work, certs, options, session.interrupt(), &|done| {
        bar.0.set_position(done as u64)
    })?;
    bar.0.finish_and_clear();
    for (i, cell) in measured.into_iter().zip(counted) {
        cells[i].counts.instructions = Some(cell.outcome);
        cells[i].counts.breakdown = cell.breakdown;
        session.save(|store, run_id| store.save_counts(run_id, &cells[i]));
    }
    Ok(())
}

/// The primitive costs in the JSON export: "backend/row label" -> ns.
fn primitive_costs_json(primitive_ns: &PrimitiveCosts) -> serde_json::Value {
    serde_json::Value::Object(
        primitive_ns
            .iter()
            .map(|((backend, row), ns)| (format!("{backend}/{}", row.label()), (*ns).into()))
            .collect(),
    )
}

/// The model beside the measurement for one cell.
fn scenario_cost(cell: &CellResult, primitive_ns: &PrimitiveCosts) -> ScenarioCost {
    let scenario = &cell.scenario;
    let backend = cell.subject.name();
    let mut result = ScenarioCost {
        label: scenario.label(),
        scenario: *scenario,
        subject: cell.subject,
        description: scenario.describe(),
        reason: cell
            .outcome
            .reason()
            .map(|reason| format!("{}: {reason}", cell.outcome.status())),
        sides: Vec::new(),
        capacity_per_core: None,
        modelled_capacity_per_core: None,
        breakdown: Vec::new(),
    };
    if cell.outcome.status() == crate::measure::CellStatus::Unsupported {
        return result;
    }
    let measured = |pick: fn(&crate::workload::handshake::Sample) -> u64| -> Option<f64> {
        let values: Vec<f64> = cell
            .samples()
            .iter()
            .map(|s| pick(&s.value) as f64)
            .collect();
        stats::median(&values)
    };
    let costs = backend_costs(primitive_ns, &backend);
    let client = model_side(scenario, Side::Client, &costs, measured(|s| s.client_ns));
    let server = model_side(scenario, Side::Server, &costs, measured(|s| s.server_ns));
    result.capacity_per_core = server.measured_ns.map(|ns| 1e9 / ns);
    result.modelled_capacity_per_core = server.modelled_capacity_per_core();
    result.sides = vec![client, server];
    result
}

/// Counted for a library that can count (an instrumented twin of the
/// backend), modelled otherwise.
fn breakdown(
    backend: &dyn Backend,
    scenario: &HandshakeScenario,
    credentials: &crate::certs::Credentials,
    options: &SamplingOptions,
    interrupt: &AtomicBool,
    result: &ScenarioCost,
) -> Result<Vec<Breakdown>> {
    match backend.instrumented() {
        Some(instrumented) => Ok(counted_breakdown(
            instrumented.as_ref(),
            scenario,
            credentials,
            options,
            interrupt,
        )?
        .0),
        None => Ok(result.sides.iter().filter_map(modelled_breakdown).collect()),
    }
}
