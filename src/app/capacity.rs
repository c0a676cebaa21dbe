//! `tlslab handshake --capacity`: how many new handshakes per second the
//! machine's cores give. Every row of the matrix is prepared (unsupported
//! and failing rows say why), the primitives `cost`'s model charges are
//! sampled, then per row 1, 2, ... N threads handshake at once for a fixed
//! window, cut into slices taken in alternating order of thread counts so
//! that the machine's drift falls on all of them alike; each row is stored
//! as it finishes and reported beside the
//! model's one-core figure times the threads.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;

use super::cost::{backend_costs, primitive_costs, primitive_options};
use super::handshake::matrix_from;
use super::serve::cores;
use super::session::{
    check_exports, chosen_backends, finish, interrupt_flag, open_store, run_info, usage, Bar,
    SamplingDefaults,
};
use crate::backend::rustls::instrument::Side;
use crate::backend::Backend;
use crate::certs::CertCache;
use crate::cli::HandshakeArgs;
use crate::host::HostInfo;
use crate::model::model_side;
use crate::report::capacity::CapacityReport;
use crate::scenario::presets::Preset;
use crate::scenario::{parse_name, HandshakeMatrix, HandshakeScenario, Named};
use crate::workload::capacity::{run_step, CapacityCell, Step, StepTimes};
use crate::workload::handshake::HandshakeProbe;

/// Slices each thread count's window is cut into, taken in alternating order.
const ROUNDS: u32 = 4;

/// Sampling defaults of `handshake --capacity`: `max_time` is each step's
/// window and `warmup` its warm-up; the rest serve the model's primitives.
const DEFAULTS: SamplingDefaults = SamplingDefaults {
    precision: "2%",
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

pub(crate) fn run(args: &HandshakeArgs) -> Result<i32> {
    let preset = args
        .preset
        .as_deref()
        .map(parse_name::<Preset>)
        .transpose()
        .map_err(usage)?;
    let matrix = matrix_from(args, preset)?;
    let backends = chosen_backends(
        args.backend.as_deref(),
        preset.map(|p| p.default_backends()),
        Some(&matrix.versions),
    )?;
    let threads = args.threads.unwrap_or_else(cores);
    if threads == 0 {
        return Err(usage("--threads must be at least 1"));
    }
    let options = args.sampling.options(DEFAULTS)?;
    if options.max_time.is_zero() {
        return Err(usage(
            "--max-time is each thread count's window with --capacity: more than zero seconds",
        ));
    }
    let times = StepTimes {
        warmup: options.warmup,
        window: options.max_time,
    };
    let scenarios = matrix.expand();
    check_exports(&args.exports)?;
    let mut store = open_store(&args.database)?;
    let host = HostInfo::current();
    let libraries: Vec<_> = backends.iter().map(|b| b.library()).collect();
    let stored = StoredOptions {
        preset: preset.map(Named::id),
        backends: backends.iter().map(|b| b.id()).collect(),
        matrix: &matrix,
        threads,
        times,
        max_total_time: options.max_total_time,
        load_average: load_average(),
    };
    let run_id = store.begin_run(&run_info(
        crate::store::RunKind::Capacity,
        serde_json::to_string(&stored)?,
        &host,
        &libraries,
    ))?;
    let started = Instant::now();
    let certs = CertCache::new(args.cert_dir.clone().unwrap_or_else(CertCache::default_dir));
    let interrupt = interrupt_flag();
    let bar = Bar::new(scenarios.len() * backends.len(), args.quiet);

    // Each row once on this thread: why it cannot run (a cell at once), or
    // a first verified handshake (a cell to measure).
    let mut rows: Vec<(Arc<dyn Backend>, HandshakeScenario, Option<CapacityCell>)> = Vec::new();
    for scenario in &scenarios {
        for backend in &backends {
            let not_runnable = HandshakeProbe::prepare(backend.as_ref(), scenario, &certs)
                .err()
                .map(|outcome| {
                    bar.failed(&format!("{} {}", backend.id(), scenario.label()), &outcome);
                    CapacityCell {
                        backend: backend.id().to_string(),
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

    bar.0.set_message("the model's primitives");
    let pairs: Vec<(String, HandshakeScenario)> = rows
        .iter()
        .filter(|(_, _, not_runnable)| not_runnable.is_none())
        .map(|(backend, scenario, _)| (backend.id().to_string(), *scenario))
        .collect();
    let (primitive_ns, mut interrupted) = primitive_costs(
        &pairs,
        &backends,
        &primitive_options(&options),
        &interrupt,
        &mut store,
        run_id,
    )?;

    // Row by row in the matrix's order, each stored as it finishes; a row
    // that cannot run is stored when its turn comes.
    let mut cells = Vec::new();
    let mut out_of_time = false;
    for (backend, scenario, not_runnable) in rows {
        if let Some(cell) = not_runnable {
            store.save_capacity_cell(run_id, &cell)?;
            cells.push(cell);
            bar.0.inc(1);
            continue;
        }
        if interrupted || out_of_time {
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
            backend: backend.id().to_string(),
            scenario,
            status: crate::measure::CellStatus::Measured,
            reason: None,
            modelled_server_ns: (modelled > 0.0).then_some(modelled),
            steps: Vec::new(),
        };
        // The window of each thread count is cut into ROUNDS slices taken
        // in alternating order (1..N, then N..1, ...), so that a drift of
        // the machine's speed falls on every thread count alike; a step is
        // the sum of its slices.
        let slice = StepTimes {
            warmup: times.warmup,
            window: times.window / ROUNDS,
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
                    cell.backend,
                    scenario.label(),
                    if count == 1 { "" } else { "s" },
                    round + 1
                ));
                match run_step(
                    backend.as_ref(),
                    &scenario,
                    &certs,
                    count,
                    slice,
                    &interrupt,
                ) {
                    Ok(Some(step)) => {
                        let sum = &mut steps[count - 1];
                        *sum = Some(sum.map_or(step, |sum| sum.plus(&step)));
                    }
                    Ok(None) => {
                        interrupted = true;
                        break 'rounds;
                    }
                    Err(reason) => {
                        cell.status = crate::measure::CellStatus::Failed;
                        cell.reason = Some(format!("with {count} threads: {reason}"));
                        bar.println(&format!(
                            "failed: {} {}: {reason}",
                            cell.backend,
                            scenario.label()
                        ));
                        break 'rounds;
                    }
                }
                if options
                    .max_total_time
                    .is_some_and(|budget| started.elapsed() >= budget)
                {
                    out_of_time = true;
                    break 'rounds;
                }
            }
        }
        cell.steps = steps.into_iter().flatten().collect();
        store.save_capacity_cell(run_id, &cell)?;
        cells.push(cell);
        bar.0.inc(1);
    }
    bar.0.finish_and_clear();
    interrupted |= interrupt.load(Ordering::SeqCst);
    store.finish_run(run_id, !interrupted)?;

    let mut document = CapacityReport {
        run_id: store.path().map(|_| run_id),
        complete: !interrupted,
        host: &host,
        libraries: &libraries,
        cells: &cells,
        load_average: stored.load_average,
    }
    .document();
    if out_of_time {
        document.footer.push(format!(
            "--max-total-time ran out: the last row stopped at the thread count it had reached, and {} row(s) did not run.",
            scenarios.len() * backends.len() - cells.len()
        ));
    }
    args.display.print(&document)?;
    args.exports.write(&document)?;
    let failed = cells
        .iter()
        .filter(|c| c.status == crate::measure::CellStatus::Failed)
        .count();
    Ok(finish(&store, run_id, interrupted, cells.len(), failed))
}

/// A stored capacity run, by the view that printed it.
pub(crate) fn stored_document(
    store: &crate::store::Store,
    run: &crate::store::StoredRun,
) -> Result<crate::report::Document> {
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
