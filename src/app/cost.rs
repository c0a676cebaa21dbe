//! `tlslab cost`: the handshakes of the matrix sampled in interleaved rounds,
//! the primitives the model needs sampled the same way, the model beside the
//! measurement, and with `--breakdown` where each side's time goes.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;

use super::session::{
    check_exports, chosen_backends, empty_shard, finish, interrupt_flag, open_store, run_info,
    usage, Bar, SamplingDefaults, Shard,
};
use crate::backend::rustls::instrument::Side;
use crate::backend::Backend;
use crate::certs::CertCache;
use crate::cli::{CostArgs, MeasureArgs};
use crate::host::HostInfo;
use crate::measure::{self, Outcome, SamplingOptions};
use crate::model::{counted_breakdown, counts, model_side, modelled_breakdown, Breakdown};
use crate::report::cost::ScenarioCost;
use crate::report::Document;
use crate::scenario::presets::CostPreset;
use crate::scenario::speed::SpeedRow;
use crate::scenario::{
    parse_name, Aead, CertKind, Group, HandshakeMatrix, HandshakeScenario, Measure, Named,
    Resumption, TlsVersion, DEFAULT_CHAIN_DEPTH, DEFAULT_MTU_BYTES,
};
use crate::stats;
use crate::store::{Store, StoredRun};
use crate::workload::counted::{count_instructions, CountOptions, CountedWork, Work};
use crate::workload::handshake::{run_matrix, CellResult};
use crate::workload::speed::{PreparedRow, SpeedCell};

/// Sampling defaults of `cost`.
pub(crate) const DEFAULTS: SamplingDefaults = SamplingDefaults {
    precision: "2%",
    max_time_s: 2.0,
    min_samples: 20,
    warmup_s: 0.2,
    max_total_s: None,
    slice: Duration::from_millis(3),
};

fn matrix(args: &CostArgs, preset: Option<CostPreset>) -> Result<HandshakeMatrix> {
    let matrix = match preset {
        Some(preset) => preset.matrix(),
        None => HandshakeMatrix {
            versions: vec![TlsVersion::Tls13],
            groups: vec![Group::X25519],
            certs: vec![CertKind::EcdsaP256, CertKind::Rsa2048],
            aeads: vec![Aead::Aes128Gcm],
            resumptions: vec![Resumption::Off],
            mutual: vec![false],
            chain_depth: DEFAULT_CHAIN_DEPTH,
            mtu_bytes: DEFAULT_MTU_BYTES,
            transports: vec![crate::scenario::Transport::Memory],
        },
    };
    let matrix = args.axes.apply(matrix)?;
    matrix.validate().map_err(usage)?;
    Ok(matrix)
}

pub fn run(args: &CostArgs) -> Result<i32> {
    let preset = args
        .preset
        .as_deref()
        .map(parse_name::<CostPreset>)
        .transpose()
        .map_err(usage)?;
    let matrix = matrix(args, preset)?;
    let default_backends: &[&str] = match preset {
        Some(CostPreset::RsaVsEcdsa) => &["openssl"],
        None => &["openssl", "rustls-aws-lc"],
    };
    let backends: Vec<Arc<dyn Backend>> = chosen_backends(
        args.backend.as_deref(),
        Some(default_backends),
        Some(&matrix.versions),
    )?;
    let options = args.sampling.options(DEFAULTS)?;
    let (measures, valgrind) = MeasureArgs {
        measure: args.measure.clone(),
        breakdown: false,
    }
    .checked()?;
    if measures.contains(&Measure::Memory) || !measures.contains(&Measure::Time) {
        return Err(usage(
            "cost models time: --measure takes time and instructions (time,instructions); memory is handshake's",
        ));
    }
    let shard = args.shard.shard()?;
    let scenarios = Shard::filter(shard, matrix.expand(), |s| s.label(), |_| false);
    if let (Some(shard), true) = (shard, scenarios.is_empty()) {
        return empty_shard(shard);
    }
    let primitive_options = primitive_options(&options);
    check_exports(&args.exports)?;
    let mut store = open_store(&args.database)?;
    let host = HostInfo::current();
    let libraries: Vec<_> = backends.iter().map(|b| b.library()).collect();
    let run_id = store.begin_run(&run_info(
        crate::store::RunKind::Cost,
        serde_json::json!({
            "preset": preset.map(Named::id),
            "backends": backends.iter().map(|b| b.id()).collect::<Vec<_>>(),
            "matrix": matrix,
            "sampling": options,
            "breakdown": args.breakdown,
            "shard": shard,
            "measures": measures,
            "valgrind": valgrind,
        })
        .to_string(),
        &host,
        &libraries,
    ))?;

    let certs = CertCache::new(args.cert_dir.clone().unwrap_or_else(CertCache::default_dir));
    let interrupt = interrupt_flag();
    let bar = Bar::new(scenarios.len() * backends.len(), args.quiet);
    let handshakes = run_matrix(
        &scenarios,
        &backends,
        &certs,
        &options,
        None,
        &interrupt,
        &mut super::handshake::Storing {
            store: &mut store,
            run_id,
            bar: &bar,
        },
    )?;
    bar.0.finish_and_clear();
    store.save_rounds(run_id, &handshakes.rounds)?;
    let mut interrupted = handshakes.interrupted;

    let primitive_ns = if interrupted {
        BTreeMap::new()
    } else {
        let measured: Vec<(String, HandshakeScenario)> = handshakes
            .cells
            .iter()
            .filter(|c| !c.samples().is_empty())
            .map(|c| (c.backend.clone(), c.scenario))
            .collect();
        let (costs, stopped) = primitive_costs(
            &measured,
            &backends,
            &primitive_options,
            &interrupt,
            &mut store,
            run_id,
        )?;
        interrupted = stopped;
        costs
    };

    let mut results = Vec::new();
    // In the order `report` shows them again.
    let mut in_order = handshakes.cells.clone();
    crate::report::handshake::sort_cells(&mut in_order);
    for cell in &in_order {
        let backend = backends
            .iter()
            .find(|b| b.id() == cell.backend)
            .expect("cells come from these backends");
        let mut result = scenario_cost(cell, backend.id(), &primitive_ns);
        if args.breakdown && result.reason.is_none() && !interrupted {
            let credentials = certs.get(cell.scenario.cert, cell.scenario.chain_depth)?;
            result.breakdown = breakdown(
                backend.as_ref(),
                &cell.scenario,
                &credentials,
                &options,
                &interrupt,
                &result,
            )?;
        }
        results.push(result);
    }
    let mut handshakes = handshakes;
    if measures.contains(&Measure::Instructions) && !interrupted {
        interrupted = count_cells(
            &mut handshakes.cells,
            &backends,
            &certs,
            args,
            &interrupt,
            (&mut store, run_id),
        )?;
    }
    store.finish_run(run_id, !interrupted)?;

    let mut document = crate::report::cost::document(
        &results,
        args.breakdown,
        store.path().map(|_| run_id),
        !interrupted,
        &host,
        &libraries,
        primitive_costs_json(&primitive_ns),
    );
    document
        .tables
        .extend(crate::report::handshake::breakdown_table(&handshakes.cells));
    args.display.print(&document)?;
    args.exports.write(&document)?;
    let failed = handshakes
        .cells
        .iter()
        .filter(|c| c.outcome.status() == crate::measure::CellStatus::Failed)
        .count();
    Ok(finish(
        &store,
        run_id,
        interrupted,
        handshakes.cells.len(),
        failed,
    ))
}

/// Counts each measured handshake's instructions per side under valgrind
/// (with `--breakdown`, per category too) and stores them with its cell.
/// Returns true if Ctrl-C stopped it.
fn count_cells(
    cells: &mut [CellResult],
    backends: &[Arc<dyn Backend>],
    certs: &CertCache,
    args: &CostArgs,
    interrupt: &AtomicBool,
    (store, run_id): (&mut Store, i64),
) -> Result<bool> {
    let measured: Vec<usize> = (0..cells.len())
        .filter(|&i| !cells[i].samples().is_empty())
        .collect();
    let work: Vec<CountedWork> = measured
        .iter()
        .map(|&i| {
            let backend = backends
                .iter()
                .find(|b| b.id() == cells[i].backend)
                .cloned();
            (
                Work::Handshake {
                    scenario: cells[i].scenario,
                },
                backend,
            )
        })
        .collect();
    let options = CountOptions {
        samples: args
            .sampling
            .runs
            .unwrap_or(super::handshake::COUNTED_SAMPLES),
        jobs: crate::host::available_cores(),
        breakdown: args.breakdown,
    };
    let bar = Bar::counting(work.len() * options.samples, args.quiet);
    let counted = count_instructions(&work, certs, &options, interrupt, &|done| {
        bar.0.set_position(done as u64)
    })?;
    bar.0.finish_and_clear();
    for (i, cell) in measured.into_iter().zip(counted) {
        cells[i].counts.instructions = Some(cell.outcome);
        cells[i].counts.breakdown = cell.breakdown;
        store.save_counts(run_id, &cells[i])?;
    }
    Ok(interrupt.load(std::sync::atomic::Ordering::SeqCst))
}

/// Median nanoseconds per operation, by backend id and primitive row.
pub(crate) type PrimitiveCosts = BTreeMap<(String, SpeedRow), f64>;

/// The sampling options of the primitives the model charges, from the
/// command's own: shorter, as each is a batch of one operation.
pub(crate) fn primitive_options(options: &SamplingOptions) -> SamplingOptions {
    SamplingOptions {
        max_time: options.max_time.min(Duration::from_millis(500)),
        min_samples: options.min_samples.min(6),
        warmup: Duration::from_millis(20),
        slice: Duration::ZERO,
        ..*options
    }
}

/// The median time per operation of every primitive row the model charges
/// these (backend id, scenario) pairs with, per backend, sampled in
/// interleaved rounds and stored with the run as speed cells.
pub(crate) fn primitive_costs(
    pairs: &[(String, HandshakeScenario)],
    backends: &[Arc<dyn Backend>],
    options: &SamplingOptions,
    interrupt: &AtomicBool,
    store: &mut Store,
    run_id: i64,
) -> Result<(PrimitiveCosts, bool)> {
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
    for cell in &speed_cells {
        store.save_speed_cell(run_id, cell)?;
    }
    Ok((medians(&speed_cells), run.interrupted))
}

/// The median time per operation of each measured primitive row.
fn medians(speed_cells: &[SpeedCell]) -> PrimitiveCosts {
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

/// The primitive costs in the JSON export: "backend/row label" -> ns.
fn primitive_costs_json(primitive_ns: &PrimitiveCosts) -> serde_json::Value {
    serde_json::Value::Object(
        primitive_ns
            .iter()
            .map(|((backend, row), ns)| (format!("{backend}/{}", row.label()), (*ns).into()))
            .collect(),
    )
}

/// One backend's primitive costs, by row.
pub(crate) fn backend_costs(
    primitive_ns: &PrimitiveCosts,
    backend: &str,
) -> BTreeMap<SpeedRow, f64> {
    primitive_ns
        .iter()
        .filter(|((id, _), _)| id == backend)
        .map(|((_, row), ns)| (*row, *ns))
        .collect()
}

/// The model beside the measurement for one cell.
fn scenario_cost(cell: &CellResult, backend: &str, primitive_ns: &PrimitiveCosts) -> ScenarioCost {
    let scenario = &cell.scenario;
    let mut result = ScenarioCost {
        label: scenario.label(),
        scenario: *scenario,
        backend: backend.to_string(),
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
    let costs = backend_costs(primitive_ns, backend);
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

/// A stored cost run as the command showed it: the model recomputed from
/// the primitive costs the run measured and stored, beside its handshakes.
/// The breakdown per category (`--breakdown`) is not stored.
pub(crate) fn stored_document(store: &Store, run: &StoredRun) -> Result<Document> {
    let primitive_ns = medians(&store.load_speed_cells(run.id)?);
    let mut cells = run.cells.clone();
    crate::report::handshake::sort_cells(&mut cells);
    let results: Vec<ScenarioCost> = cells
        .iter()
        .map(|cell| scenario_cost(cell, &cell.backend, &primitive_ns))
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
    let options: serde_json::Value = serde_json::from_str(&run.options_json).unwrap_or_default();
    if options["breakdown"].as_bool() == Some(true) {
        document.footer.push(
            "The run's breakdown of each side's time by category (--breakdown) is computed when the command runs and not stored: run it again to see it.".to_string(),
        );
    }
    Ok(document)
}
