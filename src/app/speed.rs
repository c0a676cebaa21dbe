//! `tlslab speed`: rows x backends (x CPU feature sets), every row sampled
//! in interleaved rounds, stored as it finishes, reported like `openssl speed`.

use std::process::Command as Process;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::session::{
    check_exports, chosen_backends, empty_shard, finish, interrupt_flag, open_store, run_info,
    usage, Bar, SamplingDefaults, Shard, EXIT_INTERRUPTED,
};
use crate::backend::Backend;
use crate::certs::CertCache;
use crate::cli::{MeasureArgs, SpeedArgs};
use crate::host::HostInfo;
use crate::measure::{self, Outcome, SamplingOptions};
use crate::scenario::speed::{expand, Primitive, SpeedRow, DEFAULT_SIZES};
use crate::scenario::{parse_list, Measure, Named};
use crate::store::Store;
use crate::workload::counted::{count_instructions, CountOptions, CountedWork, Work};
use crate::workload::speed::{counted_operations, CountedOperations, PreparedRow, SpeedCell};

/// Sampling defaults of `speed`.
pub(crate) const DEFAULTS: SamplingDefaults = SamplingDefaults {
    precision: "2%",
    max_time_s: 0.5,
    min_samples: 5,
    warmup_s: 0.05,
    // Each sample is already a batch of about 2 ms.
    max_total_s: None,
    slice: Duration::ZERO,
};

/// The environment that clears OpenSSL's and aws-lc's CPU capability vector,
/// so they fall back to their generic code.
pub(crate) const GENERIC_CPU_ENV: (&str, &str) = ("OPENSSL_ia32cap", "0x0:0x0");

/// A set of CPU features to measure with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CpuFeatures {
    Native,
    Generic,
}

pub(crate) fn cpu_feature_list(list: &str) -> Result<Vec<CpuFeatures>> {
    let mut sets = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let set = match name {
            "native" => CpuFeatures::Native,
            "generic" => CpuFeatures::Generic,
            other => {
                return Err(usage(format!(
                    "unknown CPU feature set '{other}'; valid CPU feature sets: native, generic"
                )))
            }
        };
        if !sets.contains(&set) {
            sets.push(set);
        }
    }
    if sets.is_empty() {
        return Err(usage("the CPU feature list is empty"));
    }
    Ok(sets)
}

fn sizes(list: &str) -> Result<Vec<usize>> {
    let mut sizes = Vec::new();
    for text in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match text.parse::<usize>() {
            Ok(size) if (1..=1 << 24).contains(&size) => {
                if !sizes.contains(&size) {
                    sizes.push(size);
                }
            }
            _ => {
                return Err(usage(format!(
                    "--size takes byte counts from 1 to 16777216, got '{text}'"
                )))
            }
        }
    }
    Ok(sizes)
}

pub fn run(args: &SpeedArgs) -> Result<i32> {
    let primitives: Vec<Primitive> = if args.algorithm.trim().eq_ignore_ascii_case("all") {
        Primitive::ALL.to_vec()
    } else {
        parse_list(&args.algorithm).map_err(usage)?
    };
    let sizes = sizes(&args.size)?;
    if sizes.is_empty() {
        return Err(usage(format!(
            "--size is empty; give byte counts from 1 to 16777216 (default: {})",
            DEFAULT_SIZES
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(",")
        )));
    }
    let rows = expand(&primitives, &sizes);
    if rows.is_empty() {
        return Err(usage("no algorithm to measure"));
    }
    let shard = args.shard.shard()?;
    let rows = Shard::filter(shard, rows, |row| row.label(), |_| false);
    if let (Some(shard), true) = (shard, rows.is_empty()) {
        return empty_shard(shard);
    }
    let backends = chosen_backends(Some(&args.backend), None, None)?;
    let backend_ids: Vec<&'static str> = backends.iter().map(|b| b.id()).collect();
    let feature_sets = cpu_feature_list(&args.cpu_features)?;
    let options = args.sampling.options(DEFAULTS)?;
    let (measures, valgrind) = MeasureArgs {
        measure: args.measure.clone(),
        breakdown: false,
    }
    .checked()?;
    if measures.contains(&Measure::Memory) {
        return Err(usage(
            "speed measures time and instructions; memory is counted per handshake (tlslab handshake --measure memory)",
        ));
    }
    if measures.contains(&Measure::Instructions) && feature_sets.contains(&CpuFeatures::Generic) {
        return Err(usage(
            "--cpu-features generic is timed only; leave --measure at time for it",
        ));
    }
    check_exports(&args.exports)?;
    let mut store = open_store(&args.database)?;
    let host = HostInfo::current();
    let libraries: Vec<_> = backends.iter().map(|b| b.library()).collect();
    let run_id = store.begin_run(&run_info(
        crate::store::RunKind::Speed,
        serde_json::json!({
            "backends": backend_ids,
            "algorithms": primitives.iter().map(|p| p.id()).collect::<Vec<_>>(),
            "sizes": sizes,
            "cpu_features": args.cpu_features,
            "sampling": options,
            "shard": shard,
            "measures": measures,
            "valgrind": valgrind,
        })
        .to_string(),
        &host,
        &libraries,
    ))?;

    let mut cells: Vec<SpeedCell> = Vec::new();
    let mut interrupted = false;
    if measures.contains(&Measure::Time) && feature_sets.contains(&CpuFeatures::Native) {
        let quiet = args.quiet || args.emit_cells.is_some();
        let (native, stopped) =
            measure_rows(&backends, &rows, &options, quiet, &mut store, run_id)?;
        cells.extend(native);
        interrupted = stopped;
    }
    if !interrupted && measures.contains(&Measure::Instructions) {
        interrupted = count_rows(&backends, &rows, args, (&mut store, run_id), &mut cells)?;
    }
    if !interrupted && feature_sets.contains(&CpuFeatures::Generic) {
        let generic = generic_cells(args, &backend_ids, &rows)?;
        for cell in generic {
            store.save_speed_cell(run_id, &cell)?;
            cells.push(cell);
        }
        interrupted = interrupt_flag().load(Ordering::SeqCst);
    }
    store.finish_run(run_id, !interrupted)?;

    if let Some(path) = &args.emit_cells {
        std::fs::write(path, serde_json::to_string(&cells)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
        return Ok(if interrupted { EXIT_INTERRUPTED } else { 0 });
    }
    let document = crate::report::speed::document(
        &cells,
        store.path().map(|_| run_id),
        !interrupted,
        &host,
        &libraries,
        Some(options.seed),
        valgrind.as_deref(),
    );
    args.display.print(&document)?;
    args.exports.write(&document)?;
    let failed = cells
        .iter()
        .filter(|c| c.outcome.status() == crate::measure::CellStatus::Failed)
        .count();
    Ok(finish(&store, run_id, interrupted, cells.len(), failed))
}

/// Prepares and samples every row on every backend in interleaved rounds;
/// each cell is stored as it finishes. Returns the cells and whether Ctrl-C
/// stopped the run.
fn measure_rows(
    backends: &[std::sync::Arc<dyn Backend>],
    rows: &[SpeedRow],
    options: &SamplingOptions,
    quiet: bool,
    store: &mut Store,
    run_id: i64,
) -> Result<(Vec<SpeedCell>, bool)> {
    let mut cells: Vec<SpeedCell> = Vec::new();
    let mut prepared: Vec<PreparedRow> = Vec::new();
    let mut prepared_cell: Vec<usize> = Vec::new();
    let primitives: Vec<_> = backends.iter().map(|b| b.primitives()).collect();
    for row in rows {
        for (backend, library) in backends.iter().zip(&primitives) {
            let mut cell = SpeedCell {
                counted: None,
                backend: backend.id().to_string(),
                row: *row,
                batch: 0,
                outcome: Outcome::Measured {
                    samples: Vec::new(),
                    precise: false,
                },
            };
            match PreparedRow::new(library.as_ref(), row) {
                Ok(ready) => {
                    cell.batch = ready.batch;
                    prepared_cell.push(cells.len());
                    prepared.push(ready);
                }
                Err(unsupported) => {
                    cell.outcome = Outcome::Unsupported {
                        reason: unsupported.0,
                    };
                    store.save_speed_cell(run_id, &cell)?;
                }
            }
            cells.push(cell);
        }
    }
    let interrupt = interrupt_flag();
    let mut bar = Bar::new(prepared.len(), quiet);
    let run = measure::sample(
        prepared.iter_mut().map(PreparedRow::probe).collect(),
        measure::Pairing::None,
        options,
        &interrupt,
        &mut bar,
    )?;
    bar.0.finish_and_clear();
    for (index, outcome) in run.outcomes.into_iter().enumerate() {
        let cell = &mut cells[prepared_cell[index]];
        cell.outcome = outcome;
        store.save_speed_cell(run_id, cell)?;
    }
    store.save_rounds(run_id, &run.rounds)?;
    Ok((cells, run.interrupted))
}

/// Counts every row's instructions per operation on every backend under
/// valgrind and stores them: beside the timed samples of `cells` (rows
/// by backend, in order), or as new cells when time was not measured.
/// Returns true if Ctrl-C stopped it.
fn count_rows(
    backends: &[std::sync::Arc<dyn Backend>],
    rows: &[SpeedRow],
    args: &SpeedArgs,
    (store, run_id): (&mut Store, i64),
    cells: &mut Vec<SpeedCell>,
) -> Result<bool> {
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
    let options = CountOptions {
        samples: args
            .sampling
            .runs
            .unwrap_or(super::handshake::COUNTED_SAMPLES),
        jobs: crate::host::available_cores(),
        breakdown: false,
    };
    let interrupt = interrupt_flag();
    let bar = Bar::counting(work.len() * options.samples, args.quiet);
    let counted = count_instructions(
        &work,
        &CertCache::new(CertCache::default_dir()),
        &options,
        &interrupt,
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
            store.save_speed_counts(run_id, &cells[i])?;
        } else {
            let cell = SpeedCell {
                backend: backend.id().to_string(),
                row: *row,
                batch: counted.operations,
                outcome: counted.outcome.without_samples(),
                counted: Some(counted),
            };
            store.save_speed_cell(run_id, &cell)?;
            cells.push(cell);
        }
    }
    Ok(interrupt.load(Ordering::SeqCst))
}

/// Measures the rows again in a child process whose libraries see no CPU
/// features; ring cannot be told to ignore them, so its rows say so.
fn generic_cells(
    args: &SpeedArgs,
    backends: &[&'static str],
    rows: &[SpeedRow],
) -> Result<Vec<SpeedCell>> {
    let maskable: Vec<&str> = backends
        .iter()
        .copied()
        .filter(|id| *id != "rustls-ring")
        .collect();
    let mut cells = Vec::new();
    if !maskable.is_empty() {
        crate::child::remove_leftovers();
        let output_file = crate::child::scratch_file("speed", "json");
        let mut child = Process::new(std::env::current_exe()?);
        child
            .args(["speed", "--no-db", "-q", "--cpu-features", "native"])
            .args(["--backend", &maskable.join(",")])
            .args(["--algorithm", &args.algorithm])
            .args(["--size", &args.size]);
        let sampling = &args.sampling;
        for (flag, value) in [
            ("--precision", sampling.precision.clone()),
            ("--max-time", sampling.max_time.map(|v| v.to_string())),
            (
                "--max-total-time",
                sampling.max_total_time.map(|v| v.to_string()),
            ),
            ("--min-samples", sampling.min_samples.map(|v| v.to_string())),
            ("--runs", sampling.runs.map(|v| v.to_string())),
            ("--warmup", sampling.warmup.map(|v| v.to_string())),
            ("--seed", sampling.seed.map(|v| v.to_string())),
            ("--shard", args.shard.shard.clone()),
        ] {
            if let Some(value) = value {
                child.args([flag, &value]);
            }
        }
        child
            .arg("--emit-cells")
            .arg(&output_file)
            .env(GENERIC_CPU_ENV.0, GENERIC_CPU_ENV.1);
        // Killed with tlslab; stopped as tlslab is (Ctrl-C, SIGTERM).
        let status = crate::child::spawn_tied(child, crate::child::Tie::Worker)
            .and_then(|mut child| {
                crate::child::wait_forwarding_interrupt(&mut child, &interrupt_flag())
            })
            .context("starting the generic-CPU child process")?;
        let text = std::fs::read_to_string(&output_file);
        let _ = std::fs::remove_file(&output_file);
        if !status.success() && text.is_err() {
            if interrupt_flag().load(Ordering::SeqCst) {
                // Stopped before it wrote its cells: nothing of it to keep.
                return Ok(cells);
            }
            bail!("the generic-CPU child process failed ({status})");
        }
        let measured: Vec<SpeedCell> = serde_json::from_str(&text?)?;
        cells.extend(measured.into_iter().map(|mut cell| {
            cell.backend = format!("{} (generic)", cell.backend);
            cell
        }));
    }
    if backends.contains(&"rustls-ring") {
        for row in rows {
            cells.push(SpeedCell {
                counted: None,
                backend: "rustls-ring (generic)".to_string(),
                row: *row,
                batch: 0,
                outcome: Outcome::Unsupported {
                    reason: "ring has no switch to turn its CPU features off".to_string(),
                },
            });
        }
    }
    Ok(cells)
}
