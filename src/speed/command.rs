//! The `tlslab speed` command: rows x backends (x CPU feature sets), stored
//! cell by cell, reported like `openssl speed`.

use std::process::Command as Process;
use std::sync::atomic::Ordering;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use super::{expand, measure_row, Primitive, SpeedCell, SpeedOutcome, SpeedRow, DEFAULT_SIZES};
use crate::cli::SpeedArgs;
use crate::commands::{
    check_exports, interrupt_flag, open_store, seconds, usage, Bar, EXIT_INTERRUPTED,
};
use crate::host::HostInfo;
use crate::measure::SamplingOptions;
use crate::report::markup::Style;
use crate::report::speed::{build_rows, render, render_csv, SpeedReportRow};
use crate::report::Format;
use crate::scenario::{parse_list, Named};
use crate::store::RunInfo;

/// The environment that clears OpenSSL's and aws-lc's CPU capability vector,
/// so they fall back to their generic code.
const GENERIC_CPU_ENV: (&str, &str) = ("OPENSSL_ia32cap", "0x0:0x0");

/// A set of CPU features to measure with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CpuFeatures {
    Native,
    Generic,
}

fn cpu_feature_list(list: &str) -> Result<Vec<CpuFeatures>> {
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

fn backend_ids(list: &str) -> Result<Vec<&'static str>> {
    let mut ids = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if name.eq_ignore_ascii_case("all") {
            ids.extend(crate::backend::BACKEND_IDS);
            continue;
        }
        let backend = super::backend_by_id(name).map_err(usage)?;
        ids.push(backend.id());
    }
    ids.dedup();
    if ids.is_empty() {
        return Err(usage("the backend list is empty"));
    }
    Ok(ids)
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

#[derive(Serialize)]
struct SpeedExport<'a> {
    tool_version: &'a str,
    run_id: Option<i64>,
    complete: bool,
    host: &'a HostInfo,
    libraries: &'a [crate::backend::LibraryInfo],
    rows: &'a [SpeedReportRow],
}

pub fn run(args: &SpeedArgs) -> Result<i32> {
    let primitives: Vec<Primitive> = if args.algorithm.trim().eq_ignore_ascii_case("all") {
        Primitive::ALL.to_vec()
    } else {
        parse_list(&args.algorithm).map_err(usage)?
    };
    let sizes = if args.size.trim().is_empty() {
        DEFAULT_SIZES.to_vec()
    } else {
        sizes(&args.size)?
    };
    let rows = expand(&primitives, &sizes);
    if rows.is_empty() {
        return Err(usage("no algorithm to measure"));
    }
    let backends = backend_ids(&args.backend)?;
    let feature_sets = cpu_feature_list(&args.cpu_features)?;
    let options = SamplingOptions {
        precision: crate::commands::parse_precision(&args.precision)?,
        max_time: seconds("max-time", args.max_time)?,
        min_samples: args.min_samples.max(2),
        warmup: seconds("warmup", args.warmup)?,
    };
    check_exports(&args.exports)?;
    let mut store = open_store(&args.database)?;
    let host = HostInfo::current();
    let libraries: Vec<_> = backends
        .iter()
        .map(|id| {
            crate::backend::backend_by_id(id)
                .expect("known backend")
                .library()
        })
        .collect();
    let run_id = store.begin_run(&RunInfo {
        kind: "speed".to_string(),
        tool_version: crate::TOOL_VERSION.to_string(),
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
        options_json: serde_json::json!({
            "backends": backends,
            "algorithms": primitives.iter().map(|p| p.id()).collect::<Vec<_>>(),
            "sizes": sizes,
            "cpu_features": args.cpu_features,
            "sampling": options,
        })
        .to_string(),
        host: host.clone(),
        libraries: libraries.clone(),
    })?;

    let interrupt = interrupt_flag();
    let mut cells: Vec<SpeedCell> = Vec::new();
    let mut interrupted = false;
    if feature_sets.contains(&CpuFeatures::Native) {
        let bar = Bar::new(
            rows.len() * backends.len(),
            args.quiet || args.emit_cells.is_some(),
        );
        'rows: for row in &rows {
            for id in &backends {
                let backend = super::backend_by_id(id).expect("known backend");
                bar.0.set_message(format!("{id} {}", row.label()));
                let outcome = match measure_row(backend.as_ref(), row, &options, &interrupt) {
                    Ok(outcome) => outcome,
                    Err(_) => {
                        interrupted = true;
                        break 'rows;
                    }
                };
                let cell = SpeedCell {
                    backend: id.to_string(),
                    row: *row,
                    outcome,
                };
                store.save_speed_cell(run_id, &cell)?;
                cells.push(cell);
                bar.0.inc(1);
            }
        }
        bar.0.finish_and_clear();
    }
    if !interrupted && feature_sets.contains(&CpuFeatures::Generic) {
        let generic = generic_cells(args, &backends, &rows)?;
        for cell in generic {
            store.save_speed_cell(run_id, &cell)?;
            cells.push(cell);
        }
        interrupted = interrupt.load(Ordering::SeqCst);
    }
    store.finish_run(run_id, !interrupted)?;

    if let Some(path) = &args.emit_cells {
        std::fs::write(path, serde_json::to_string(&cells)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
        return Ok(if interrupted { EXIT_INTERRUPTED } else { 0 });
    }
    let report_rows = build_rows(&cells);
    print!("{}", render(&report_rows, Style::Terminal));
    let export = SpeedExport {
        tool_version: crate::TOOL_VERSION,
        run_id: store.path().map(|_| run_id),
        complete: !interrupted,
        host: &host,
        libraries: &libraries,
        rows: &report_rows,
    };
    args.exports.write_each(|format| {
        Ok(match format {
            Format::Json => serde_json::to_string_pretty(&export)? + "\n",
            Format::Csv => render_csv(&report_rows),
            _ => render(&report_rows, Style::Markdown),
        })
    })?;
    if let Some(path) = store.path() {
        eprintln!("results stored as run {run_id} in {}", path.display());
    }
    if interrupted {
        eprintln!("interrupted: {} finished rows kept", cells.len());
        return Ok(EXIT_INTERRUPTED);
    }
    Ok(0)
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
        let output_file = tempfile_path();
        let mut child = Process::new(std::env::current_exe()?);
        child
            .args(["speed", "--no-db", "-q", "--cpu-features", "native"])
            .args(["--backend", &maskable.join(",")])
            .args(["--algorithm", &args.algorithm])
            .args(["--size", &args.size])
            .args(["--precision", &args.precision])
            .args(["--max-time", &args.max_time.to_string()])
            .args(["--min-samples", &args.min_samples.to_string()])
            .args(["--warmup", &args.warmup.to_string()])
            .arg("--emit-cells")
            .arg(&output_file)
            .env(GENERIC_CPU_ENV.0, GENERIC_CPU_ENV.1);
        let status = child
            .status()
            .context("starting the generic-CPU child process")?;
        let text = std::fs::read_to_string(&output_file);
        let _ = std::fs::remove_file(&output_file);
        if !status.success() && text.is_err() {
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
                backend: "rustls-ring (generic)".to_string(),
                row: *row,
                outcome: SpeedOutcome::Unsupported {
                    reason: "ring has no switch to turn its CPU features off".to_string(),
                },
            });
        }
    }
    Ok(cells)
}

fn tempfile_path() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("tlslab-speed-{}.json", std::process::id()))
}
