//! What every command shares: usage errors and exit codes, the sampling
//! options with each command's defaults, the store and the run's
//! provenance, Ctrl-C, the progress bar and the export files.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::backend::LibraryInfo;
pub(crate) use crate::cli::usage::{usage, UsageError};
use crate::cli::{
    DatabaseArgs, DisplayArgs, ExportArgs, MeasureArgs, Percent, SamplingArgs, Seconds,
};
use crate::host::HostInfo;
use crate::measure::{fresh_seed, SamplingOptions};
use crate::report::{Document, Format};
use crate::scenario::{distinct, BackendList, Measure, Shard};
use crate::store::{RunInfo, RunKind, Store};
use crate::workload::counted::{CountOptions, COUNTED_SAMPLES};

/// The exit code of a run stopped by Ctrl-C (128 + SIGINT).
pub const EXIT_INTERRUPTED: i32 = 130;
/// The exit code of a run in which a cell failed (a verification mismatch,
/// a handshake error): the figures of the other cells are still reported.
pub const EXIT_CELL_FAILED: i32 = 1;
/// The exit code of bad options.
pub const EXIT_USAGE: i32 = 2;

/// A stored run with nothing to show (a load run stopped before its load
/// ended stores no results): `report` of several runs leaves it out.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NoResults(pub String);

/// The exit code for an error: 2 for bad options, 1 for everything else
/// (a store that cannot be opened or written, a failed child process...).
pub fn exit_code(error: &anyhow::Error) -> i32 {
    if error.downcast_ref::<UsageError>().is_some() {
        EXIT_USAGE
    } else {
        1
    }
}

/// A number of seconds from the command line or a command's defaults
/// (the parser of [`Seconds`] has refused negatives and NaN): zero allowed
/// only where `zero_ok`.
pub(crate) fn seconds(name: &str, value: f64, zero_ok: bool) -> Result<Duration> {
    if !value.is_finite() || value < 0.0 || (value == 0.0 && !zero_ok) {
        let rule = if zero_ok {
            "zero or more"
        } else {
            "more than zero"
        };
        return Err(usage(format!(
            "--{name} must be a number of seconds, {rule}, got {value}"
        )));
    }
    Ok(Duration::from_secs_f64(value))
}

/// A command's sampling defaults, used where the options say nothing.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SamplingDefaults {
    pub precision: Percent,
    pub max_time_s: f64,
    pub min_samples: usize,
    pub warmup_s: f64,
    /// The whole run's budget, in seconds (`--max-total-time`), if any.
    pub max_total_s: Option<f64>,
    /// About how long one cell's batch in one round lasts.
    pub slice: Duration,
}

impl SamplingArgs {
    /// How counted measures take their samples: `--runs` (else
    /// [`COUNTED_SAMPLES`]) per cell, a child per core.
    pub(crate) fn count_options(&self, breakdown: bool) -> CountOptions {
        CountOptions {
            samples: self.runs.unwrap_or(COUNTED_SAMPLES),
            jobs: crate::host::available_cores(),
            breakdown,
        }
    }

    /// The sampling options, each from the command line (whose bounds
    /// clap has checked: `cli::values`) or the command's defaults.
    pub(crate) fn options(&self, defaults: SamplingDefaults) -> Result<SamplingOptions> {
        let max_total_time = self
            .max_total_time
            .map(Seconds::duration)
            .or(defaults.max_total_s.map(Duration::from_secs_f64));
        Ok(SamplingOptions {
            precision: self.precision.unwrap_or(defaults.precision).fraction(),
            // Zero means "the minimum samples and no more".
            max_time: self.max_time.map_or(
                Duration::from_secs_f64(defaults.max_time_s),
                Seconds::duration,
            ),
            max_total_time,
            min_samples: self.min_samples.unwrap_or(defaults.min_samples),
            runs: self.runs,
            warmup: self.warmup.map_or(
                Duration::from_secs_f64(defaults.warmup_s),
                Seconds::duration,
            ),
            seed: self.seed.unwrap_or_else(fresh_seed),
            slice: defaults.slice,
        })
    }
}

/// The backends a command runs on: those named on the command line, else
/// its preset's, else all of them; `all` keeps the backends that run at
/// least one of `protocols` (when the command has protocols). A usage
/// error when none does.
pub(crate) fn chosen_backends(
    named: Option<&BackendList>,
    preset: Option<&[&str]>,
    protocols: Option<&[crate::scenario::TlsVersion]>,
) -> Result<Vec<std::sync::Arc<dyn crate::backend::Backend>>> {
    let list = match (named, preset) {
        (Some(named), _) => named.clone(),
        (None, Some(ids)) => BackendList::named(ids.iter().copied()).map_err(usage)?,
        (None, None) => BackendList::all(),
    };
    let backends = crate::backend::backends_running(&list, protocols);
    if backends.is_empty() {
        let asked: Vec<&str> = protocols
            .unwrap_or_default()
            .iter()
            .map(|v| crate::scenario::Named::id(*v))
            .collect();
        return Err(usage(format!(
            "no backend runs {}; name one with --backend",
            asked.join(", ")
        )));
    }
    Ok(backends)
}

/// Opens the store the options name. A store that cannot be opened (a
/// corrupt file, a full disk, another tool's database) is an error of the
/// run, exit code 1, not a usage error.
pub(crate) fn open_store(database: &DatabaseArgs) -> Result<Store> {
    if database.no_db {
        return Store::open_in_memory();
    }
    let path = database.db.clone().unwrap_or_else(Store::default_path);
    Store::open(&path)
}

/// Checks, before anything runs, that an output file can be created: its
/// directory exists.
pub(crate) fn check_output(path: &Path) -> Result<()> {
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
    Ok(())
}

/// Checks, before anything runs, that each export file can be created and
/// that the plot directory is a directory or can be made one.
pub(crate) fn check_exports(exports: &ExportArgs) -> Result<()> {
    for path in [
        &exports.export_json,
        &exports.export_csv,
        &exports.export_markdown,
    ]
    .into_iter()
    .flatten()
    {
        check_output(path)?;
    }
    if let Some(dir) = &exports.plot {
        if dir.exists() && !dir.is_dir() {
            return Err(usage(format!(
                "--plot takes a directory, and {} is a file",
                dir.display()
            )));
        }
        if !dir.exists() {
            check_output(dir)?;
        }
    }
    Ok(())
}

impl ExportArgs {
    /// Writes each export asked for from one document.
    pub(crate) fn write(&self, document: &Document) -> Result<()> {
        let targets = [
            (&self.export_json, Format::Json),
            (&self.export_csv, Format::Csv),
            (&self.export_markdown, Format::Markdown),
        ];
        for (path, format) in targets {
            if let Some(path) = path {
                std::fs::write(path, document.render(format)?)
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
        }
        self.write_plots(document, "")
    }

    /// Draws the document's charts into the plot directory, if one was
    /// named, each file's name starting with `prefix`.
    pub(crate) fn write_plots(&self, document: &Document, prefix: &str) -> Result<()> {
        if let Some(dir) = &self.plot {
            let written = crate::report::plot::write_dir(dir, prefix, &document.figures)?;
            eprintln!("{} chart files written to {}", written.len(), dir.display());
        }
        Ok(())
    }
}

/// The width a terminal table is fitted to, or `None` for every column on
/// one line. `--wide` gives `None`; else `COLUMNS` when set to a positive
/// number (so `COLUMNS=80 tlslab ... | less` fits too); else, when standard
/// output is a terminal, the terminal's width (80 if it cannot be read);
/// else (piped or redirected) `None`, so a file keeps every field.
pub(crate) fn table_width(wide: bool) -> Option<usize> {
    if wide {
        return None;
    }
    if let Some(columns) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|c| *c > 0)
    {
        return Some(columns);
    }
    if !std::io::stdout().is_terminal() {
        return None;
    }
    Some(terminal_columns().unwrap_or(80))
}

/// The terminal's width in columns, from the TIOCGWINSZ ioctl on standard output.
fn terminal_columns() -> Option<usize> {
    // SAFETY: an all-zero winsize is a valid value of this plain C struct.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes one winsize into the struct passed, which we own.
    let status = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) };
    (status == 0 && size.ws_col > 0).then_some(usize::from(size.ws_col))
}

impl DisplayArgs {
    /// Prints the document's terminal table, fitted as [`table_width`] says.
    pub(crate) fn print(&self, document: &Document) -> Result<()> {
        print!("{}", document.render_terminal(table_width(self.wide))?);
        Ok(())
    }

    /// Prints a line of prose, wrapped as the table beside it is.
    pub(crate) fn print_line(&self, line: &str) {
        match table_width(self.wide) {
            Some(width) => crate::report::fit::wrap_line(line, width)
                .iter()
                .for_each(|wrapped| println!("{wrapped}")),
            None => println!("{line}"),
        }
    }
}

/// The flag Ctrl-C (SIGINT), SIGTERM and SIGHUP set, once their handler
/// is installed.
static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// The flag Ctrl-C sets; the handler is installed once per process. It
/// also catches SIGTERM and SIGHUP (what `timeout`, CI cancellation and a
/// closed terminal send), so they stop a run as Ctrl-C does: its results
/// kept and reported, exit status 130.
pub(crate) fn interrupt_flag() -> Arc<AtomicBool> {
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

/// For tests: `TLSLAB_TEST_SIGINT_AFTER_ROUNDS=N` makes the process send
/// itself SIGINT when round N has finished, so Ctrl-C is tested at a known
/// point of a run instead of after a guessed sleep. With
/// `TLSLAB_TEST_SIGINT_GROUP` set as well, SIGINT goes to the whole process
/// group, as a terminal's Ctrl-C does (the test starts tlslab in a group
/// of its own).
pub(crate) fn sigint_after_round(round: u32) {
    static AFTER: OnceLock<Option<u32>> = OnceLock::new();
    let after = AFTER.get_or_init(|| {
        std::env::var("TLSLAB_TEST_SIGINT_AFTER_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
    });
    if *after == Some(round + 1) {
        if std::env::var_os("TLSLAB_TEST_SIGINT_GROUP").is_some() {
            // SAFETY: SIGINT to this process's group, which the test made
            // for it; this process handles it (the Ctrl-C handler).
            unsafe { libc::kill(0, libc::SIGINT) };
        } else {
            // SAFETY: raising a signal this process handles (the Ctrl-C handler).
            unsafe { libc::raise(libc::SIGINT) };
        }
        // The handler runs on its own thread: wait until it has set the
        // flag, so the run stops exactly after this round.
        let started = std::time::Instant::now();
        while FLAG.get().is_some_and(|f| !f.load(Ordering::SeqCst))
            && started.elapsed() < Duration::from_secs(5)
        {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// A progress bar with ETA on standard error, hidden when not on a terminal.
pub(crate) struct Bar(pub(crate) ProgressBar);

impl Bar {
    /// Says above the bar why a cell failed (nothing for other outcomes).
    pub(crate) fn failed<S>(&self, what: &str, outcome: &crate::measure::Outcome<S>) {
        if let crate::measure::Outcome::Failed { reason } = outcome {
            self.println(&format!("failed: {what}: {reason}"));
        }
    }

    /// A bar over `total` cells.
    pub(crate) fn new(total: usize, quiet: bool) -> Self {
        Self::of(total, quiet, "cells done")
    }

    /// A bar for counted handshakes (`--measure instructions,memory`).
    pub(crate) fn counting(total: usize, quiet: bool) -> Self {
        Self::of(total, quiet, "counted handshakes")
    }

    /// A bar over `total` of what `unit` names ("handshakes over the link").
    pub(crate) fn of(total: usize, quiet: bool, unit: &str) -> Self {
        let target = if quiet || !std::io::stderr().is_terminal() {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        };
        let bar = ProgressBar::with_draw_target(Some(total as u64), target);
        bar.set_style(
            ProgressStyle::with_template(&format!(
                "{{elapsed_precise}} [{{bar:30.cyan/blue}}] {{pos}}/{{len}} {unit} {{wide_msg}}"
            ))
            .expect("valid template")
            .progress_chars("=> "),
        );
        Self(bar)
    }

    /// A round of the interleaved sampler finished.
    pub(crate) fn round(&self, round: u32, finished: usize) {
        self.0.set_position(finished as u64);
        self.0.set_message(format!("round {}", round + 1));
        sigint_after_round(round);
    }

    /// Prints a line above the bar.
    pub(crate) fn println(&self, line: &str) {
        self.0.suspend(|| eprintln!("{line}"));
    }
}

impl<S> crate::measure::Observer<S> for Bar {
    fn cell_finished(&mut self, _: usize, _: &crate::measure::Outcome<S>) -> Result<()> {
        Ok(())
    }

    fn round_finished(&mut self, round: u32, _active: usize, finished: usize) {
        self.round(round, finished);
    }
}

/// The run's record before it starts: kind, command line, options, host and libraries.
pub(crate) fn run_info(
    kind: RunKind,
    options_json: String,
    host: &HostInfo,
    libraries: &[LibraryInfo],
) -> RunInfo {
    RunInfo {
        kind,
        tool_version: crate::TOOL_VERSION.to_string(),
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
        options_json,
        host: host.clone(),
        libraries: libraries.to_vec(),
    }
}

/// Says where the run was stored and how it ended, and returns the exit
/// code: 130 when interrupted, 1 when a cell failed, else 0.
pub(crate) fn finish(
    store: &Store,
    run_id: i64,
    interrupted: bool,
    kept: &str,
    failed_cells: usize,
) -> i32 {
    if let Some(path) = store.path() {
        eprintln!("results stored as run {run_id} in {}", path.display());
    }
    if interrupted {
        eprintln!("interrupted: {kept}");
        return EXIT_INTERRUPTED;
    }
    if failed_cells > 0 {
        eprintln!("{failed_cells} cell(s) failed (see the notes); exit status {EXIT_CELL_FAILED}");
        return EXIT_CELL_FAILED;
    }
    0
}

/// Says that a shard holds no cell of the matrix (more shards than cells):
/// nothing runs and nothing is stored, and the exit code is 0 so a job
/// runner counts the shard as done.
pub(crate) fn empty_shard(shard: Shard) -> Result<i32> {
    eprintln!("shard {shard} holds no cell of this matrix: nothing to run");
    Ok(0)
}

impl MeasureArgs {
    /// The measures `--measure` asks for (time without it), checked: a
    /// `--breakdown` without instructions and a missing valgrind are usage
    /// errors. Returns them and, when instructions are counted, the
    /// valgrind that counts them.
    pub(crate) fn checked(&self) -> Result<(Vec<Measure>, Option<String>)> {
        checked_measures(self.measure.as_deref(), self.breakdown)
    }
}

/// The measures of a command without `--memory` per handshake (bulk,
/// tunnel, speed): `--measure` checked as [`MeasureArgs::checked`] does,
/// memory refused with a pointer to where it is counted.
pub(crate) fn time_or_instructions(
    asked: Option<&[Measure]>,
    command: &str,
) -> Result<(Vec<Measure>, Option<String>)> {
    let (measures, valgrind) = checked_measures(asked, false)?;
    if measures.contains(&Measure::Memory) {
        return Err(usage(format!(
            "{command} measures time and instructions; memory is counted per handshake (tlslab handshake --measure memory)"
        )));
    }
    Ok((measures, valgrind))
}

/// `--measure` (time without it) and `--breakdown`, checked (see
/// [`MeasureArgs::checked`]).
pub(crate) fn checked_measures(
    asked: Option<&[Measure]>,
    breakdown: bool,
) -> Result<(Vec<Measure>, Option<String>)> {
    let measures: Vec<Measure> = match asked {
        None => vec![Measure::Time],
        Some(list) => distinct(list),
    };
    if breakdown && !measures.contains(&Measure::Instructions) {
        return Err(usage(
            "--breakdown counts instructions: add --measure instructions",
        ));
    }
    if !measures.contains(&Measure::Instructions) {
        return Ok((measures, None));
    }
    if !crate::valgrind::supported() {
        return Err(usage(format!(
            "--measure instructions needs x86-64 or AArch64 (valgrind's client requests); this is {}",
            std::env::consts::ARCH
        )));
    }
    let valgrind = crate::valgrind::installed().map_err(|why| {
        usage(format!(
            "--measure instructions runs tlslab under valgrind, and {why}: {}",
            crate::valgrind::INSTALL_HINT
        ))
    })?;
    Ok((measures, Some(valgrind)))
}

/// What a run's stored options say about its sampling.
pub(crate) struct StoredSampling {
    pub(crate) baseline: Option<String>,
    pub(crate) seed: Option<u64>,
    pub(crate) precision: Option<f64>,
    /// The valgrind that counted instructions, if the run counted them.
    pub(crate) valgrind: Option<String>,
    /// The run asked for the wire table (`--wire`).
    pub(crate) wire: bool,
    /// Where its server ran, if elsewhere (`--remote`).
    pub(crate) remote: Option<String>,
}

/// A server elsewhere, as a table's note says it: its address and host.
pub(crate) fn remote_description(address: &str, host: &crate::host::HostInfo) -> String {
    format!(
        "{address} ({}, {}, {} cores, {})",
        host.hostname, host.cpu_model, host.cores, host.kernel
    )
}

pub(crate) fn stored_sampling(options_json: &str) -> StoredSampling {
    let options: serde_json::Value = serde_json::from_str(options_json).unwrap_or_default();
    StoredSampling {
        baseline: options
            .get("baseline")
            .and_then(|b| b.as_str())
            .map(String::from),
        seed: options.pointer("/sampling/seed").and_then(|s| s.as_u64()),
        precision: options
            .pointer("/sampling/precision")
            .and_then(|p| p.as_f64()),
        valgrind: options
            .get("valgrind")
            .and_then(|v| v.as_str())
            .map(String::from),
        wire: options
            .get("wire")
            .and_then(|w| w.as_bool())
            .unwrap_or(false),
        remote: options.get("remote").and_then(|remote| {
            let host: crate::host::HostInfo =
                serde_json::from_value(remote.get("host")?.clone()).ok()?;
            Some(remote_description(remote.get("address")?.as_str()?, &host))
        }),
    }
}
