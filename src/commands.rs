//! What each subcommand does: turn options into a matrix, run it, store and
//! report. Errors in the options are [`UsageError`]s (exit code 2) and are
//! found before anything runs.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

use crate::backend::{backends_from_list, Backend, BACKEND_IDS};
use crate::certs::CertCache;
use crate::cli::{Cli, Command, DatabaseArgs, ExportArgs, HandshakeArgs, MutualArg, ReportArgs};
use crate::host::HostInfo;
use crate::measure::{run_matrix, CellResult, Progress, SamplingOptions};
use crate::report::{self, Format, Report};
use crate::scenario::presets::Preset;
use crate::scenario::{
    parse_list, parse_name, Aead, CertKind, Group, HandshakeMatrix, HandshakeScenario, Named,
    Resumption, TlsVersion, DEFAULT_CHAIN_DEPTH,
};
use crate::store::{RunInfo, Store};

/// The exit code of a run stopped by Ctrl-C (128 + SIGINT).
pub const EXIT_INTERRUPTED: i32 = 130;

/// An error in the command line: exit code 2, reported before anything runs.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

pub(crate) fn usage(error: impl std::fmt::Display) -> anyhow::Error {
    UsageError(error.to_string()).into()
}

/// The exit code for an error: 2 for bad options, 1 for everything else.
pub fn exit_code(error: &anyhow::Error) -> i32 {
    if error.downcast_ref::<UsageError>().is_some() {
        2
    } else {
        1
    }
}

/// Runs a parsed command line and returns the exit code.
pub fn run(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Handshake(args) => handshake(&args),
        Command::Speed(args) => crate::speed::command::run(&args),
        Command::Cost(args) => crate::cost::command::run(&args),
        Command::List => {
            print!("{}", list());
            Ok(0)
        }
        Command::Report(args) => show_report(&args),
        Command::Tunnel(args) => crate::tunnel::command::run(&args),
    }
}

/// The options of a handshake run, as stored with the run.
#[derive(Debug, Serialize)]
struct StoredOptions<'a> {
    preset: Option<&'static str>,
    backends: Vec<&'static str>,
    matrix: &'a HandshakeMatrix,
    sampling: &'a SamplingOptions,
    baseline: Option<&'a str>,
}

fn default_matrix() -> HandshakeMatrix {
    HandshakeMatrix {
        versions: vec![TlsVersion::Tls13],
        groups: vec![Group::X25519],
        certs: vec![CertKind::Rsa2048, CertKind::EcdsaP256],
        aeads: vec![Aead::Aes128Gcm],
        resumptions: vec![Resumption::Off],
        mutual: vec![false],
        chain_depth: DEFAULT_CHAIN_DEPTH,
    }
}

/// Builds the matrix from a preset and the axis options that override it.
fn matrix_from(args: &HandshakeArgs, preset: Option<Preset>) -> Result<HandshakeMatrix> {
    let mut matrix = args
        .axes
        .apply(preset.map(Preset::matrix).unwrap_or_else(default_matrix))?;
    if let Some(mutual) = args.mutual {
        matrix.mutual = match mutual {
            MutualArg::Off => vec![false],
            MutualArg::On => vec![true],
            MutualArg::Both => vec![false, true],
        };
    }
    matrix.validate().map_err(usage)?;
    Ok(matrix)
}

impl crate::cli::AxisArgs {
    /// The matrix with every axis given on the command line replaced.
    pub(crate) fn apply(&self, mut matrix: HandshakeMatrix) -> Result<HandshakeMatrix> {
        if let Some(list) = &self.tls {
            matrix.versions = parse_list(list).map_err(usage)?;
        }
        if let Some(list) = &self.group {
            matrix.groups = parse_list(list).map_err(usage)?;
        }
        if let Some(list) = &self.cert {
            matrix.certs = parse_list(list).map_err(usage)?;
        }
        if let Some(list) = &self.suite {
            matrix.aeads = parse_list(list).map_err(usage)?;
        }
        if let Some(list) = &self.resumption {
            matrix.resumptions = parse_list(list).map_err(usage)?;
        }
        if let Some(depth) = self.chain_depth {
            matrix.chain_depth = depth;
        }
        Ok(matrix)
    }
}

/// Parses "1%", "0.5%" or "1" (percent) into a fraction.
pub(crate) fn parse_precision(text: &str) -> Result<f64> {
    let number = text.trim().trim_end_matches('%').trim();
    let percent: f64 = number.parse().map_err(|_| {
        usage(format!(
            "--precision must be a percentage such as 1% or 0.5%, got '{text}'"
        ))
    })?;
    if !(percent > 0.0 && percent < 100.0) {
        return Err(usage(format!(
            "--precision must be between 0% and 100%, got '{text}'"
        )));
    }
    Ok(percent / 100.0)
}

pub(crate) fn seconds(name: &str, value: f64) -> Result<Duration> {
    if !(value.is_finite() && value >= 0.0) {
        return Err(usage(format!(
            "--{name} must be a number of seconds, got {value}"
        )));
    }
    Ok(Duration::from_secs_f64(value))
}

pub(crate) fn open_store(database: &DatabaseArgs) -> Result<Store> {
    if database.no_db {
        return Store::open_in_memory();
    }
    let path = database.db.clone().unwrap_or_else(Store::default_path);
    Store::open(&path).map_err(|e| usage(format!("{e:#}")))
}

/// Checks, before anything runs, that each export file can be created.
pub(crate) fn check_exports(exports: &ExportArgs) -> Result<()> {
    for path in [
        &exports.export_json,
        &exports.export_csv,
        &exports.export_markdown,
    ]
    .into_iter()
    .flatten()
    {
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !parent.is_dir() {
            return Err(usage(format!(
                "cannot write {}: the directory {} does not exist",
                path.display(),
                parent.display()
            )));
        }
    }
    Ok(())
}

impl ExportArgs {
    /// Writes each export asked for, with the text `render` gives for its format.
    pub(crate) fn write_each(
        &self,
        mut render: impl FnMut(Format) -> Result<String>,
    ) -> Result<()> {
        let targets = [
            (&self.export_json, Format::Json),
            (&self.export_csv, Format::Csv),
            (&self.export_markdown, Format::Markdown),
        ];
        for (path, format) in targets {
            if let Some(path) = path {
                std::fs::write(path, render(format)?)
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
        }
        Ok(())
    }
}

fn write_exports(report: &Report, exports: &ExportArgs) -> Result<()> {
    exports.write_each(|format| report::render(report, format))
}

/// The flag Ctrl-C sets; the handler is installed once per process.
pub(crate) fn interrupt_flag() -> Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    let flag = FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let for_handler = Arc::clone(&flag);
        // Without a handler Ctrl-C still stops the run; only the report is lost.
        let _ = ctrlc::set_handler(move || for_handler.store(true, Ordering::SeqCst));
        flag
    });
    flag.store(false, Ordering::SeqCst);
    Arc::clone(flag)
}

/// A progress bar with ETA on standard error, hidden when not on a terminal.
pub(crate) struct Bar(pub(crate) ProgressBar);

impl Bar {
    pub(crate) fn new(total: usize, quiet: bool) -> Self {
        let target = if quiet || !std::io::stderr().is_terminal() {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        };
        let bar = ProgressBar::with_draw_target(Some(total as u64), target);
        bar.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30.cyan/blue}] {pos}/{len} cells, ETA {eta} {wide_msg}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        Self(bar)
    }
}

impl Progress for Bar {
    fn cell_started(&mut self, _: usize, _: usize, backend: &str, scenario: &HandshakeScenario) {
        self.0
            .set_message(format!("{backend} {}", scenario.label()));
    }

    fn cell_finished(&mut self, done: usize, _: usize, cell: &CellResult) {
        if let crate::measure::CellOutcome::Failed { reason } = &cell.outcome {
            self.0.suspend(|| {
                eprintln!(
                    "failed: {} {}: {reason}",
                    cell.backend,
                    cell.scenario.label()
                )
            });
        }
        self.0.set_position(done as u64);
    }
}

fn handshake(args: &HandshakeArgs) -> Result<i32> {
    let preset = args
        .preset
        .as_deref()
        .map(parse_name::<Preset>)
        .transpose()
        .map_err(usage)?;
    let matrix = matrix_from(args, preset)?;
    let backend_list = args.backend.clone().unwrap_or_else(|| {
        preset
            .map(|p| p.default_backends().join(","))
            .unwrap_or_else(|| "all".to_string())
    });
    let backends: Vec<Arc<dyn Backend>> = backends_from_list(&backend_list).map_err(usage)?;
    if backends.is_empty() {
        return Err(usage("the backend list is empty"));
    }
    let scenarios = matrix.expand();
    let baseline = match &args.baseline {
        Some(label) => {
            if !scenarios.iter().any(|s| s.label() == *label) {
                let labels: Vec<String> = scenarios.iter().map(|s| s.label()).collect();
                return Err(usage(format!(
                    "the baseline '{label}' is not a row of this matrix; rows: {}",
                    labels.join(", ")
                )));
            }
            Some(label.clone())
        }
        None => preset
            .map(|p| p.baseline().label())
            .filter(|label| scenarios.iter().any(|s| s.label() == *label)),
    };
    let sampling = SamplingOptions {
        precision: parse_precision(&args.precision)?,
        max_time: seconds("max-time", args.max_time)?,
        min_samples: args.min_samples.max(1),
        warmup: seconds("warmup", args.warmup)?,
    };
    check_exports(&args.exports)?;
    let mut store = open_store(&args.database)?;

    let host = HostInfo::current();
    let libraries: Vec<_> = backends.iter().map(|b| b.library()).collect();
    let options = StoredOptions {
        preset: preset.map(Named::id),
        backends: backends.iter().map(|b| b.id()).collect(),
        matrix: &matrix,
        sampling: &sampling,
        baseline: baseline.as_deref(),
    };
    let run_id = store.begin_run(&RunInfo {
        kind: "handshake".to_string(),
        tool_version: crate::TOOL_VERSION.to_string(),
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
        options_json: serde_json::to_string(&options)?,
        host: host.clone(),
        libraries: libraries.clone(),
    })?;

    let certs = CertCache::new(args.cert_dir.clone().unwrap_or_else(CertCache::default_dir));
    let interrupt = interrupt_flag();
    let mut bar = Bar::new(scenarios.len() * backends.len(), args.quiet);
    let run = run_matrix(
        &scenarios,
        &backends,
        &certs,
        &sampling,
        &mut bar,
        &interrupt,
        &mut |cell| {
            store
                .save_cell(run_id, cell)
                .context("saving a finished cell")
        },
    )?;
    bar.0.finish_and_clear();
    store.finish_run(run_id, !run.interrupted)?;

    let baseline = baseline.or_else(|| first_measured_label(&run.cells));
    let report = Report {
        tool_version: crate::TOOL_VERSION.to_string(),
        run_id: store.path().map(|_| run_id),
        complete: !run.interrupted,
        rows: report::build_rows(&run.cells, baseline.as_deref()),
        baseline,
        host,
        libraries,
    };
    print!("{}", report::render(&report, Format::Table)?);
    write_exports(&report, &args.exports)?;
    if let Some(path) = store.path() {
        eprintln!("results stored as run {run_id} in {}", path.display());
    }
    if run.interrupted {
        eprintln!("interrupted: {} finished cells kept", run.cells.len());
        return Ok(EXIT_INTERRUPTED);
    }
    Ok(0)
}

fn first_measured_label(cells: &[CellResult]) -> Option<String> {
    cells
        .iter()
        .find(|c| !c.samples().is_empty())
        .map(|c| c.scenario.label())
}

fn show_report(args: &ReportArgs) -> Result<i32> {
    let path = args.db.clone().unwrap_or_else(Store::default_path);
    if !path.exists() {
        return Err(usage(format!("there is no database at {}", path.display())));
    }
    check_exports(&args.exports)?;
    let store = Store::open(&path)?;
    let run_id = match args.run {
        Some(id) => id,
        None => store
            .latest_run_id()?
            .ok_or_else(|| usage(format!("the database {} holds no run", path.display())))?,
    };
    if store.run_kind(run_id)?.as_deref() == Some("tunnel") {
        return crate::tunnel::command::show_stored(
            &store,
            run_id,
            args.baseline.clone(),
            &args.exports,
        );
    }
    let run = store.load_run(run_id).map_err(usage)?;
    let stored_baseline = serde_json::from_str::<serde_json::Value>(&run.options_json)
        .ok()
        .and_then(|options| options.get("baseline")?.as_str().map(String::from));
    let baseline = args
        .baseline
        .clone()
        .or(stored_baseline)
        .or_else(|| first_measured_label(&run.cells));
    let report = Report {
        tool_version: crate::TOOL_VERSION.to_string(),
        run_id: Some(run.id),
        complete: run.status == "complete",
        rows: report::build_rows(&run.cells, baseline.as_deref()),
        baseline,
        host: run.host,
        libraries: run.libraries,
    };
    println!(
        "{} run {} started {} ({})\n",
        run.kind, run.id, run.started_at, run.status
    );
    if !report.rows.is_empty() || run.kind == "handshake" {
        print!("{}", report::render(&report, Format::Table)?);
        write_exports(&report, &args.exports)?;
    }
    let speed_cells = store.load_speed_cells(run.id)?;
    if !speed_cells.is_empty() {
        let rows = report::speed::build_rows(&speed_cells);
        if !report.rows.is_empty() {
            println!();
        }
        print!(
            "{}",
            report::speed::render(&rows, report::markup::Style::Terminal)
        );
    }
    Ok(0)
}

/// The text of `tlslab list`: each backend with what it supports, and the presets.
pub fn list() -> String {
    let ids = |values: Vec<&'static str>| values.join(", ");
    let mut out = String::new();
    for id in BACKEND_IDS {
        let backend = crate::backend::backend_by_id(id).expect("listed backends exist");
        let library = backend.library();
        let caps = backend.capabilities();
        out.push_str(&format!("{id}: {} {}\n", library.library, library.version));
        out.push_str(&format!(
            "  versions:     {}\n",
            ids(caps.versions.iter().map(|v| v.id()).collect())
        ));
        out.push_str(&format!(
            "  TLS 1.2 kx:   {}\n",
            ids(caps.groups_tls12.iter().map(|g| g.id()).collect())
        ));
        out.push_str(&format!(
            "  TLS 1.3 kx:   {}\n",
            ids(caps.groups_tls13.iter().map(|g| g.id()).collect())
        ));
        out.push_str(&format!(
            "  certificates: {}\n",
            ids(caps.certs.iter().map(|c| c.id()).collect())
        ));
        out.push_str(&format!(
            "  suites:       {}\n",
            ids(caps.aeads.iter().map(|a| a.id()).collect())
        ));
        out.push_str(&format!(
            "  resumption:   {}\n  mutual TLS:   {}\n\n",
            ids(caps.resumptions.iter().map(|r| r.id()).collect()),
            if caps.mutual { "yes" } else { "no" }
        ));
    }
    out.push_str(&format!(
        "speed algorithms (tlslab speed --algorithm LIST):\n  {}\n\n",
        crate::speed::Primitive::ALL
            .iter()
            .map(|p| p.id())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    out.push_str("cost presets (tlslab cost --preset NAME):\n  rsa-vs-ecdsa   TLS 1.2 RSA key transport, ECDHE-RSA and ECDHE-ECDSA on OpenSSL, per-side model and capacity\n\n");
    out.push_str("tunnel presets (tlslab tunnel --preset NAME):\n  openvpn-classic  16 CBC ciphers x 25 digest names x LZ4 on/off x random/zero payloads, 1400-byte packets, five tables\n\n");
    out.push_str("presets (tlslab handshake --preset NAME):\n");
    for preset in Preset::ALL {
        out.push_str(&format!("  {:<14} {}\n", preset.id(), preset.description()));
    }
    out
}
