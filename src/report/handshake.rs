//! The handshake view: per row the handshakes per second, each side's CPU
//! time, the wall time with the interval of its median, and the ratio to
//! the baseline row taken from same-round pairs; and, when a run has both,
//! TLS rows beside their DTLS twins ([`tls_vs_dtls`]); the handshake on
//! the wire and over networks ([`wire`]).

pub mod tls_vs_dtls;
pub mod wire;

use serde::Serialize;

use super::markup::format_us;
use super::{ColumnKind, Document, Table};
use crate::backend::{LibraryInfo, Negotiated};
use crate::heap::HeapSample;
use crate::host::HostInfo;
use crate::measure::{self, Round, Timed};
use crate::scenario::{HandshakeScenario, KxKind, SignatureFamily};
use crate::stats::{self, Drift, PairedRatio, RoundValues, Summary};
use crate::workload::counted::{CategoryCount, Instructions};
use crate::workload::handshake::{CellResult, Sample};
use crate::workload::perf::Category;

/// One row of a report: a cell with its statistics.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub label: String,
    pub scenario: HandshakeScenario,
    pub backend: String,
    pub description: String,
    pub status: crate::measure::CellStatus,
    pub reason: Option<String>,
    pub negotiated: Option<Negotiated>,
    pub sample_count: usize,
    /// Rounds the samples were taken in.
    pub rounds: usize,
    /// True if and only if sampling stopped because the precision was reached.
    pub precise: bool,
    /// Handshakes per second on one core: 1 / mean wall time.
    pub handshakes_per_second: Option<f64>,
    /// Wall time per handshake, microseconds.
    pub wall_us: Option<Summary>,
    /// The client thread's CPU time inside its calls, microseconds.
    pub client_cpu_us: Option<Summary>,
    /// The server thread's CPU time inside its calls, microseconds.
    pub server_cpu_us: Option<Summary>,
    /// Wall-clock time inside the client's calls, microseconds.
    pub client_call_us: Option<Summary>,
    /// Wall-clock time inside the server's calls, microseconds.
    pub server_call_us: Option<Summary>,
    /// CPU time (client + server) relative to the baseline row, from
    /// same-round pairs.
    pub ratio_to_baseline: Option<PairedRatio>,
    /// Why a measured row has no ratio although the run has a baseline:
    /// "no baseline row on BACKEND" (a row is only divided by its own
    /// backend's baseline row, never by another library's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_note: Option<String>,
    pub weak: bool,
    pub security_notes: Vec<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<Timed<Sample>>,
    /// Instructions per handshake per side (`--measure instructions`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<CountedFigures>,
    /// Heap bytes per side (`--measure memory`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryFigures>,
    /// Per side and category, instructions per handshake (`--breakdown`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub breakdown: Vec<CategoryCount>,
    /// The handshake on the wire.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wire: Option<wire::WireFigures>,
    /// Per network profile, the model and what a link measured.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<wire::NetworkFigures>,
}

/// A row's instructions per handshake, counted under valgrind.
#[derive(Debug, Clone, Serialize)]
pub struct CountedFigures {
    pub status: crate::measure::CellStatus,
    pub reason: Option<String>,
    pub client: Option<Summary>,
    pub server: Option<Summary>,
    /// Client plus server.
    pub total: Option<Summary>,
    /// (max − min) / median of the handshakes' totals.
    pub spread: Option<f64>,
    /// True if and only if the handshakes' totals spread by at most
    /// [`REPEATABLE_SPREAD`]: the count is a property of the row.
    pub repeatable: bool,
    /// Client plus server relative to the baseline row: the median of the
    /// ratios of same-numbered handshakes.
    pub ratio_to_baseline: Option<PairedRatio>,
    pub samples: Vec<Instructions>,
}

/// How far the counts of a row's handshakes may spread and still be one
/// figure: a few random bits (RSA blinding, ECDSA nonces, DH exponents)
/// move a count by hundredths of a percent; rejection sampling (ML-DSA
/// signing) by tens of percent.
pub const REPEATABLE_SPREAD: f64 = 0.01;

/// A row's heap bytes per side, medians over its handshakes.
#[derive(Debug, Clone, Serialize)]
pub struct MemoryFigures {
    pub status: crate::measure::CellStatus,
    pub reason: Option<String>,
    pub client_peak_heap_bytes: Option<f64>,
    pub server_peak_heap_bytes: Option<f64>,
    pub client_retained_bytes: Option<f64>,
    pub server_retained_bytes: Option<f64>,
    pub samples: Vec<HeapSample>,
}

fn micros(samples: &[Timed<Sample>], pick: fn(&Sample) -> u64) -> Option<Summary> {
    let values: Vec<f64> = samples
        .iter()
        .map(|s| pick(&s.value) as f64 / 1000.0)
        .collect();
    stats::summarize(&values)
}

/// Builds report rows. The ratio of each row is to the baseline row of the
/// same backend, from the rounds both were sampled in; a backend without a
/// measured baseline row has no ratios, and its rows say so.
pub fn build_rows(cells: &[CellResult], baseline: Option<&str>) -> Vec<Row> {
    rows_paired(cells, &with_baselines(cells, baseline), baseline)
}

/// The rows, with their ratios from `paired` (as [`with_baselines`] gives
/// it) and, for counted rows, from the instructions' pairs. A row counted
/// and not timed has its instructions' ratio as its ratio to the baseline.
fn rows_paired(cells: &[CellResult], paired: &[Paired], baseline: Option<&str>) -> Vec<Row> {
    let mut rows: Vec<Row> = cells.iter().map(row_of).collect();
    for (row, (cell, base)) in rows.iter_mut().zip(paired) {
        if let Some(base) = base {
            row.ratio_to_baseline = stats::paired_ratio(cell, base);
        }
    }
    let counted = pair_with_baselines(cells, baseline, instruction_series);
    for (row, (own, base)) in rows.iter_mut().zip(&counted) {
        let Some(figures) = row.instructions.as_mut() else {
            continue;
        };
        figures.ratio_to_baseline = base
            .as_ref()
            .and_then(|base| stats::paired_ratio(own, base));
        if row.sample_count == 0 {
            row.ratio_to_baseline = figures.ratio_to_baseline;
        }
    }
    if baseline.is_some() {
        for (row, ((timed, timed_base), (counted, counted_base))) in
            rows.iter_mut().zip(paired.iter().zip(&counted))
        {
            let unpaired =
                |own: &RoundValues, base: &Option<RoundValues>| !own.is_empty() && base.is_none();
            if unpaired(timed, timed_base) || unpaired(counted, counted_base) {
                row.ratio_note = Some(format!("no baseline row on {}", row.backend));
            }
        }
    }
    rows
}

/// A cell's instructions per handshake, numbered by handshake.
fn instruction_series(cell: &CellResult) -> RoundValues {
    cell.counts
        .instructions
        .as_ref()
        .map(|outcome| measure::costs(outcome.samples()))
        .unwrap_or_default()
}

/// A cell's round medians, and its baseline's if it is paired with one.
type Paired = (RoundValues, Option<RoundValues>);

/// Per cell, its round medians and, when it is measured and its backend
/// has a measured baseline row, that row's. Without a baseline, nothing.
fn with_baselines(cells: &[CellResult], baseline: Option<&str>) -> Vec<Paired> {
    pair_with_baselines(cells, baseline, |cell| {
        stats::round_medians(&measure::costs(cell.samples()))
    })
}

/// Per cell, its `series` and, when it has one and a baseline is named,
/// its baseline's (as [`with_baselines`] pairs them).
fn pair_with_baselines(
    cells: &[CellResult],
    baseline: Option<&str>,
    medians: impl Fn(&CellResult) -> RoundValues,
) -> Vec<Paired> {
    let Some(baseline) = baseline else {
        return vec![(Vec::new(), None); cells.len()];
    };
    let all: Vec<RoundValues> = cells.iter().map(medians).collect();
    let mut by_backend: std::collections::HashMap<&str, &RoundValues> = Default::default();
    for (cell, values) in cells.iter().zip(&all) {
        if cell.scenario.label() == baseline && !values.is_empty() {
            by_backend.entry(cell.backend.as_str()).or_insert(values);
        }
    }
    cells
        .iter()
        .zip(&all)
        .map(|(cell, own)| {
            let base = (!own.is_empty())
                .then(|| by_backend.get(cell.backend.as_str()).copied())
                .flatten()
                .cloned();
            (own.clone(), base)
        })
        .collect()
}

/// Whether other work on the machine moved the ratios to the baseline
/// (see [`stats::other_work`]); `None` without per-round readings.
fn other_work(
    cells: &[CellResult],
    baseline: Option<&str>,
    rounds: &[Round],
    paired: &[Paired],
) -> Option<stats::OtherWork> {
    let loads: Vec<(u32, f64)> = rounds
        .iter()
        .filter_map(|r| r.others_cpu.map(|cpu| (r.index, cpu)))
        .collect();
    // Every cell but the baseline rows themselves.
    let pairs: Vec<(RoundValues, RoundValues)> = cells
        .iter()
        .zip(paired)
        .filter(|(cell, _)| Some(cell.scenario.label().as_str()) != baseline)
        .filter_map(|(_, (own, base))| base.clone().map(|base| (own.clone(), base)))
        .collect();
    stats::other_work(&loads, &pairs)
}

fn row_of(cell: &CellResult) -> Row {
    let scenario = &cell.scenario;
    let samples = cell.samples();
    let wall_us = micros(samples, |s| s.wall_ns);
    let mut rounds: Vec<u32> = samples.iter().map(|s| s.round).collect();
    rounds.dedup();
    Row {
        label: scenario.label(),
        scenario: *scenario,
        backend: cell.backend.clone(),
        description: scenario.describe(),
        status: cell.outcome.status(),
        reason: cell.outcome.reason().map(String::from),
        negotiated: cell.negotiated.clone(),
        sample_count: samples.len(),
        rounds: rounds.len(),
        precise: cell.outcome.precise(),
        handshakes_per_second: wall_us.map(|w| 1e6 / w.mean),
        wall_us,
        client_cpu_us: micros(samples, |s| s.client_cpu_ns),
        server_cpu_us: micros(samples, |s| s.server_cpu_ns),
        client_call_us: micros(samples, |s| s.client_ns),
        server_call_us: micros(samples, |s| s.server_ns),
        ratio_to_baseline: None,
        ratio_note: None,
        weak: scenario.is_weak(),
        security_notes: scenario.security_notes(),
        samples: samples.to_vec(),
        instructions: cell.counts.instructions.as_ref().map(counted_figures),
        memory: cell.counts.memory.as_ref().map(memory_figures),
        breakdown: cell.counts.breakdown.clone(),
        wire: cell.counts.wire.as_ref().map(wire::WireFigures::of),
        network: cell
            .counts
            .network
            .iter()
            .map(wire::NetworkFigures::of)
            .collect(),
    }
}

fn counted_figures(outcome: &measure::Outcome<Instructions>) -> CountedFigures {
    let samples: Vec<Instructions> = outcome.samples().iter().map(|t| t.value).collect();
    let summary = |pick: fn(&Instructions) -> u64| {
        stats::summarize(&samples.iter().map(|s| pick(s) as f64).collect::<Vec<_>>())
    };
    let total = summary(|s| s.client + s.server);
    let spread = total.map(|t| (t.max - t.min) / t.median);
    CountedFigures {
        status: outcome.status(),
        reason: outcome.reason().map(String::from),
        client: summary(|s| s.client),
        server: summary(|s| s.server),
        total,
        spread,
        repeatable: spread.is_some_and(|s| s <= REPEATABLE_SPREAD),
        ratio_to_baseline: None,
        samples,
    }
}

fn memory_figures(outcome: &measure::Outcome<HeapSample>) -> MemoryFigures {
    let samples: Vec<HeapSample> = outcome.samples().iter().map(|t| t.value).collect();
    let median = |pick: fn(&HeapSample) -> u64| {
        stats::median(&samples.iter().map(|s| pick(s) as f64).collect::<Vec<_>>())
    };
    MemoryFigures {
        status: outcome.status(),
        reason: outcome.reason().map(String::from),
        client_peak_heap_bytes: median(|s| s.client_peak_bytes),
        server_peak_heap_bytes: median(|s| s.server_peak_bytes),
        client_retained_bytes: median(|s| s.client_retained_bytes),
        server_retained_bytes: median(|s| s.server_retained_bytes),
        samples,
    }
}

/// The drift of the machine over a handshake run, from every measured cell.
pub fn drift(cells: &[CellResult]) -> Option<Drift> {
    let per_cell: Vec<Vec<(u32, f64)>> = cells
        .iter()
        .filter(|c| !c.samples().is_empty())
        .map(|c| stats::round_medians(&measure::costs(c.samples())))
        .collect();
    stats::drift(&per_cell)
}

fn quantum_safe(scenario: &HandshakeScenario) -> &'static str {
    match (
        scenario.group.kind() == KxKind::Kem,
        scenario.cert.family() == SignatureFamily::MlDsa,
    ) {
        (true, true) => "kx + signature",
        (true, false) => "kx",
        (false, true) => "signature",
        (false, false) => "no",
    }
}

fn notes(row: &Row) -> String {
    let mut notes: Vec<String> = Vec::new();
    if let Some(reason) = &row.reason {
        notes.push(format!("{}: {reason}", row.status));
    }
    for (measure, status, reason) in [
        (
            "instructions",
            row.instructions.as_ref().map(|f| f.status),
            row.instructions.as_ref().and_then(|f| f.reason.as_deref()),
        ),
        (
            "memory",
            row.memory.as_ref().map(|m| m.status),
            row.memory.as_ref().and_then(|m| m.reason.as_deref()),
        ),
    ] {
        // A counted-only row says its reason once, as the row's own.
        if let (Some(status), Some(reason)) = (status, reason) {
            if row.reason.as_deref() != Some(reason) {
                notes.push(format!("{measure} {status}: {reason}"));
            }
        }
    }
    if let Some(figures) = row.instructions.as_ref().filter(|f| !f.repeatable) {
        if let Some(spread) = figures.spread {
            notes.push(format!(
                "instructions vary: handshakes' counts spread {:.1}%",
                spread * 100.0
            ));
        }
    }
    if let Some(note) = &row.ratio_note {
        notes.push(note.clone());
    }
    if row.weak {
        notes.push("WEAK".to_string());
    }
    if row.status == crate::measure::CellStatus::Measured && !row.precise && row.sample_count > 0 {
        notes.push("precision not reached".to_string());
    }
    if let Some(wall) = row.wall_us {
        if wall.median_ci_coverage < 0.95 {
            notes.push(format!(
                "interval covers {:.1}% only (n = {})",
                wall.median_ci_coverage * 100.0,
                wall.count
            ));
        }
    }
    notes.extend(
        row.security_notes
            .iter()
            .filter(|n| !n.contains("quantum-safe"))
            .map(|n| n.to_string()),
    );
    notes.join("; ")
}

fn ratio_text(ratio: &PairedRatio) -> String {
    let spread = ratio.ci95.relative_half_width(ratio.value) * 100.0;
    if spread.is_finite() && ratio.coverage >= 0.95 {
        format!("{:.2} ±{spread:.1}%", ratio.value)
    } else {
        format!("{:.2}", ratio.value)
    }
}

/// The scenario's axes as short columns (so that a table fits a terminal
/// and a constant axis is said once): their headers.
pub(crate) const AXIS_HEADERS: [&str; 7] =
    ["protocol", "kx", "cert", "suite", "resume", "mTLS", "chain"];

/// The scenario's axes as short cells, one per [`AXIS_HEADERS`].
pub(crate) fn axis_cells(scenario: &HandshakeScenario) -> Vec<String> {
    use crate::scenario::Named;
    vec![
        scenario.version.display().to_string(),
        scenario.group.display(),
        scenario.cert.display().to_string(),
        scenario.aead.name().to_string(),
        scenario.resumption.id().to_string(),
        if scenario.mutual { "yes" } else { "no" }.to_string(),
        scenario.chain_depth.to_string(),
    ]
}

/// One column of the table a person reads.
struct Column<'a> {
    header: &'static str,
    numeric: bool,
    /// Which goes first on a narrow terminal (see [`Table::priority`]).
    priority: u8,
    kind: ColumnKind,
    cell: Box<dyn Fn(&Row) -> String + 'a>,
}

impl<'a> Column<'a> {
    fn new(header: &'static str, priority: u8, cell: impl Fn(&Row) -> String + 'a) -> Self {
        Self {
            header,
            numeric: true,
            priority,
            kind: ColumnKind::Value,
            cell: Box::new(cell),
        }
    }

    fn text(mut self) -> Self {
        self.numeric = false;
        self
    }

    fn kind(mut self, kind: ColumnKind) -> Self {
        self.kind = kind;
        self
    }
}

fn dash() -> String {
    "—".to_string()
}

/// Millions, to three figures.
fn millions(value: f64) -> String {
    format_us(value / 1e6)
}

/// Kibibytes, to three figures.
fn kibibytes(value: f64) -> String {
    format_us(value / 1024.0)
}

/// Which measures a table's rows carry.
#[derive(Debug, Clone, Copy)]
struct Measured {
    timed: bool,
    counted: bool,
    memory: bool,
}

impl Measured {
    fn of(rows: &[Row]) -> Self {
        let counted = rows.iter().any(|r| r.instructions.is_some());
        let memory = rows.iter().any(|r| r.memory.is_some());
        Self {
            timed: rows.iter().any(|r| r.sample_count > 0) || !(counted || memory),
            counted,
            memory,
        }
    }
}

/// The time columns: handshakes/s, each side's CPU, the wall time with
/// its interval, p99, n and the ratio.
fn time_columns<'a>(measured: Measured) -> Vec<Column<'a>> {
    let median = |s: Option<Summary>| s.map(|s| format_us(s.median)).unwrap_or_else(dash);
    let ratio_header = if measured.counted {
        "× baseline (CPU time)"
    } else {
        "× baseline (±95% CI)"
    };
    vec![
        Column::new("handshakes/s", 3, |r: &Row| {
            r.handshakes_per_second
                .map(|h| format!("{h:.0}"))
                .unwrap_or_else(dash)
        }),
        Column::new("client CPU µs", 2, move |r: &Row| median(r.client_cpu_us)),
        Column::new("server CPU µs", 2, move |r: &Row| median(r.server_cpu_us)),
        Column::new("wall µs (median ±95% CI)", 0, |r: &Row| {
            r.wall_us
                .map(|w| {
                    let spread = w.median_ci95.relative_half_width(w.median) * 100.0;
                    format!("{} ±{spread:.1}%", format_us(w.median))
                })
                .unwrap_or_else(dash)
        }),
        Column::new("p99 µs", 5, |r: &Row| {
            r.wall_us.map(|s| format_us(s.p99)).unwrap_or_else(dash)
        }),
        Column::new("n", 4, |r: &Row| {
            if r.sample_count > 0 {
                r.sample_count.to_string()
            } else {
                dash()
            }
        }),
        Column::new(ratio_header, 0, |r: &Row| {
            let timed = (r.sample_count > 0).then_some(r.ratio_to_baseline.as_ref());
            timed.flatten().map(ratio_text).unwrap_or_else(dash)
        }),
    ]
}

/// The instruction columns: each side's millions, their spread, the
/// handshakes counted (when no time column says n) and the ratio.
fn instruction_columns<'a>(measured: Measured) -> Vec<Column<'a>> {
    let side = |pick: fn(&CountedFigures) -> Option<Summary>| {
        move |r: &Row| {
            r.instructions
                .as_ref()
                .and_then(pick)
                .map(|s| millions(s.median))
                .unwrap_or_else(dash)
        }
    };
    let mut columns = vec![
        Column::new("client M instr", 1, side(|f| f.client)),
        Column::new("server M instr", 1, side(|f| f.server)),
        Column::new("spread", 4, |r: &Row| {
            r.instructions
                .as_ref()
                .and_then(|f| f.spread)
                .map(|s| format!("{:.2}%", s * 100.0))
                .unwrap_or_else(dash)
        }),
    ];
    if !measured.timed {
        columns.push(Column::new("n", 4, |r: &Row| {
            r.instructions
                .as_ref()
                .map(|f| f.samples.len())
                .filter(|n| *n > 0)
                .map_or_else(dash, |n| n.to_string())
        }));
    }
    columns.push(Column::new(
        if measured.timed {
            "× baseline (instructions)"
        } else {
            "× baseline (±95% CI)"
        },
        0,
        |r: &Row| {
            r.instructions
                .as_ref()
                .and_then(|f| f.ratio_to_baseline.as_ref())
                .map(ratio_text)
                .unwrap_or_else(dash)
        },
    ));
    columns
}

/// The heap columns: each side's peak and what it keeps, in KiB.
fn memory_columns<'a>() -> Vec<Column<'a>> {
    let figure = |pick: fn(&MemoryFigures) -> Option<f64>| {
        move |r: &Row| {
            r.memory
                .as_ref()
                .and_then(pick)
                .map(kibibytes)
                .unwrap_or_else(dash)
        }
    };
    vec![
        Column::new("client peak KiB", 1, figure(|m| m.client_peak_heap_bytes)),
        Column::new("server peak KiB", 1, figure(|m| m.server_peak_heap_bytes)),
        Column::new("client kept KiB", 2, figure(|m| m.client_retained_bytes)),
        Column::new("server kept KiB", 2, figure(|m| m.server_retained_bytes)),
    ]
}

/// The table a person reads. Narrow terminals drop first p99 and the
/// sample count, then handshakes/s, then the CPU columns; the backend,
/// scenario, wall time, ratio and notes always stay. Counted runs show
/// each side's instructions (and heap bytes) beside or instead of the time.
fn table(rows: &[Row], baseline: Option<&str>, counted_with: Option<&str>) -> Table {
    let measured = Measured::of(rows);
    // The transport is a column only when some row ran over a socket.
    let with_transport = rows.iter().any(|r| r.scenario.transport.is_socket());
    let mut columns = vec![Column::new("backend", 0, |r: &Row| r.backend.clone())
        .text()
        .kind(ColumnKind::Axis)];
    for (i, header) in AXIS_HEADERS.iter().enumerate() {
        columns.push(
            Column::new(header, 0, move |r: &Row| axis_cells(&r.scenario)[i].clone())
                .text()
                .kind(ColumnKind::Axis),
        );
    }
    if with_transport {
        columns.push(
            Column::new("transport", 0, |r: &Row| {
                r.scenario.transport.display().to_string()
            })
            .text()
            .kind(ColumnKind::Axis),
        );
    }
    if measured.timed {
        columns.extend(time_columns(measured));
    }
    if measured.counted {
        columns.extend(instruction_columns(measured));
    }
    if measured.memory {
        columns.extend(memory_columns());
    }
    // Quantum safety follows from the axes: said once when every row shares it.
    columns.push(
        Column::new("quantum-safe", 1, |r: &Row| {
            quantum_safe(&r.scenario).to_string()
        })
        .text()
        .kind(ColumnKind::Axis),
    );
    columns.push(
        Column::new("notes", 0, notes)
            .text()
            .kind(ColumnKind::Notes),
    );
    let headers: Vec<&str> = columns.iter().map(|c| c.header).collect();
    let numeric: Vec<bool> = columns.iter().map(|c| c.numeric).collect();
    let priority: Vec<u8> = columns.iter().map(|c| c.priority).collect();
    let mut table = Table::new(&headers, &numeric).priorities(&priority);
    for kind in [ColumnKind::Axis, ColumnKind::Notes] {
        let marked: Vec<usize> = (0..columns.len())
            .filter(|&i| columns[i].kind == kind)
            .collect();
        table = table.mark(&marked, kind);
    }
    table.rows = rows
        .iter()
        .map(|row| columns.iter().map(|c| (c.cell)(row)).collect())
        .collect();
    table.notes = table_notes(rows, baseline, counted_with, measured, with_transport);
    table
}

/// What the columns mean and how the ratios were taken.
fn table_notes(
    rows: &[Row],
    baseline: Option<&str>,
    counted_with: Option<&str>,
    measured: Measured,
    with_transport: bool,
) -> Vec<String> {
    let mut notes = Vec::new();
    if measured.timed {
        notes.push("client/server CPU: the thread's CPU time inside each side's library calls (CLOCK_THREAD_CPUTIME_ID), median. Over memory, where the two sides take turns on one thread, it is the handshake's CPU time split as the wall time inside each side's calls; a handshake during which the thread was preempted is retaken with the clock read at every turn. The exports also hold the wall time inside the calls.".to_string());
    }
    if with_transport {
        notes.push("TCP, UDP rows: client and server in two threads over a loopback socket; each side's CPU includes the kernel's work for its socket calls (and for TCP its connect or accept), the wall time runs until the later side is done.".to_string());
    }
    if rows.iter().any(|r| r.backend == "nginx") {
        notes.push("nginx rows: the client is tlslab's OpenSSL over TCP on loopback (its CPU from connect to the end of the handshake); the server CPU is nginx's worker process from before the connect to the connection's close (/proc/PID/schedstat), its kernel TCP work included.".to_string());
    }
    if measured.counted {
        notes.push(format!(
            "client/server M instr: instructions executed inside each side's library calls per handshake, in millions, counted under {}'s callgrind (median of the handshakes counted; setup and tlslab's bookkeeping between turns not counted). Counts repeat on any machine and beside any other work, but say nothing of cache misses, stalls or the clock: a row of fewer instructions can still take longer. Under valgrind the libraries see no AVX-512 (valgrind hides it), so their code paths can differ from a native run. spread: (max − min) / median of the handshakes' totals.",
            counted_with.unwrap_or("valgrind")
        ));
    }
    if measured.memory {
        notes.push("peak/kept KiB: heap bytes each side's allocations held at most during the handshake, and still held once it was done (what an established, idle connection keeps); every malloc of the libraries counted, median of the handshakes counted.".to_string());
    }
    if let Some(baseline) = baseline {
        if measured.timed {
            notes.push(format!(
                "× baseline{}: CPU time (client + server) relative to {baseline}, the median of same-round ratios (rounds interleave every cell); ±: the 95% interval of that median from order statistics.",
                if measured.counted { " (CPU time)" } else { "" }
            ));
        }
        if measured.counted {
            notes.push(format!(
                "× baseline{}: instructions (client + server) relative to {baseline}, the median of the ratios of same-numbered handshakes; ± from six handshakes on.",
                if measured.timed { " (instructions)" } else { "" }
            ));
        }
    }
    notes
}

/// The short headers of the breakdown's categories, in
/// [`Category::ALL`]'s order (the kernel is never counted in user space).
const CATEGORY_HEADERS: [(Category, &str); 10] = [
    (Category::PublicKey, "pubkey"),
    (Category::Hashing, "hash"),
    (Category::Symmetric, "sym"),
    (Category::Random, "rand"),
    (Category::Certificates, "x509"),
    (Category::TlsStateMachine, "tls"),
    (Category::OpensslPlumbing, "plumb"),
    (Category::MemoryLibc, "libc"),
    (Category::HttpTlslab, "tlslab"),
    (Category::Other, "other"),
];

/// Where each side's instructions go: per cell and side, each category's
/// share of the side's instructions, and the side's total (`None` when no
/// cell has a breakdown). `cost --breakdown --measure instructions` shows
/// it beside its model.
pub fn breakdown_table(cells: &[CellResult]) -> Option<Table> {
    let counted: Vec<&CellResult> = cells
        .iter()
        .filter(|c| !c.counts.breakdown.is_empty())
        .collect();
    if counted.is_empty() {
        return None;
    }
    let mut headers = vec!["backend"];
    headers.extend(AXIS_HEADERS);
    headers.push("side");
    headers.extend(CATEGORY_HEADERS.map(|(_, h)| h));
    headers.push("M instr");
    let axes = 1 + AXIS_HEADERS.len();
    let mut numeric = vec![false; axes + 1];
    numeric.extend([true; CATEGORY_HEADERS.len() + 1]);
    // On a narrow terminal the categories that hold little of a
    // handshake's instructions (random numbers, symmetric ciphers,
    // tlslab's own code, other) go first, and the table says so.
    let mut priority = vec![0; headers.len()];
    for (i, (category, _)) in CATEGORY_HEADERS.iter().enumerate() {
        if matches!(
            category,
            Category::Random | Category::Symmetric | Category::HttpTlslab | Category::Other
        ) {
            priority[axes + 1 + i] = 1;
        }
    }
    let mut table = Table::new(&headers, &numeric)
        .priorities(&priority)
        .mark(&(0..axes).collect::<Vec<_>>(), ColumnKind::Axis)
        .titled("Where the instructions go (% of each side's instructions per handshake)");
    for row in counted {
        for side in ["client", "server"] {
            let of_side = |category: Category| -> f64 {
                row.counts
                    .breakdown
                    .iter()
                    .filter(|c| {
                        c.side == side && Category::from_label(&c.category) == Some(category)
                    })
                    .map(|c| c.instructions)
                    .sum()
            };
            let total: f64 = CATEGORY_HEADERS.iter().map(|(c, _)| of_side(*c)).sum();
            if total <= 0.0 {
                continue;
            }
            let mut cells = vec![row.backend.clone()];
            cells.extend(axis_cells(&row.scenario));
            cells.push(side.to_string());
            cells.extend(
                CATEGORY_HEADERS
                    .iter()
                    .map(|(category, _)| format!("{:.1}", of_side(*category) / total * 100.0)),
            );
            cells.push(millions(total));
            table.rows.push(cells);
        }
    }
    table.notes.push("pubkey: public key (big numbers, RSA, elliptic curves, X25519/X448, DH, ML-KEM, ML-DSA); hash: hashing and KDF; sym: symmetric ciphers; rand: random numbers; x509: certificates and ASN.1; tls: the TLS state machine (libssl, rustls, dimpl); plumb: the rest of the library (provider and algorithm look-ups, BIO, error stack, wrappers); libc: allocation, memcpy and the rest of libc and Rust's core; tlslab: tlslab's own code inside the turns (the memory transport); other: unnamed code. Each function's own instructions, as callgrind counted them, sorted by its name and object; the categories of a side add up to its total (M instr, the mean per handshake).".to_string());
    Some(table)
}

/// One line per row with every statistic (CSV).
fn records(rows: &[Row]) -> Table {
    use crate::scenario::Named;
    let mut headers: Vec<String> = [
        "label",
        "backend",
        "status",
        "reason",
        "tls_version",
        "group",
        "cert",
        "aead",
        "resumption",
        "mutual",
        "chain_depth",
        "transport",
        "negotiated_suite",
        "negotiated_group",
        "negotiated_signature",
        "samples",
        "rounds",
        "precise",
        "handshakes_per_second",
    ]
    .map(String::from)
    .to_vec();
    let sides = [
        "wall",
        "client_cpu",
        "server_cpu",
        "client_call",
        "server_call",
    ];
    let statistics = [
        "mean",
        "median",
        "stdev",
        "min",
        "max",
        "p99",
        "median_ci_low",
        "median_ci_high",
    ];
    for side in sides {
        for statistic in statistics {
            headers.push(format!("{side}_{statistic}_us"));
        }
    }
    headers.extend(
        [
            "ratio",
            "ratio_ci_low",
            "ratio_ci_high",
            "ratio_pairs",
            "ratio_note",
            "weak",
            "security_notes",
        ]
        .map(String::from),
    );
    headers.extend(wire::RECORD_HEADERS.map(String::from));
    let number = |value: Option<f64>| value.map(|v| format!("{v:.3}")).unwrap_or_default();
    let mut table = Table {
        headers,
        ..Table::default()
    };
    for row in rows {
        let negotiated = row.negotiated.as_ref();
        let s = &row.scenario;
        let mut fields = vec![
            row.label.clone(),
            row.backend.clone(),
            row.status.to_string(),
            row.reason.clone().unwrap_or_default(),
            s.version.id().to_string(),
            s.group.id().to_string(),
            s.cert.id().to_string(),
            s.aead.id().to_string(),
            s.resumption.id().to_string(),
            s.mutual.to_string(),
            s.chain_depth.to_string(),
            s.transport.id().to_string(),
            negotiated.map(|n| n.suite.clone()).unwrap_or_default(),
            negotiated.and_then(|n| n.group.clone()).unwrap_or_default(),
            negotiated
                .and_then(|n| n.signature.clone())
                .unwrap_or_default(),
            row.sample_count.to_string(),
            row.rounds.to_string(),
            row.precise.to_string(),
            number(row.handshakes_per_second),
        ];
        for summary in [
            row.wall_us,
            row.client_cpu_us,
            row.server_cpu_us,
            row.client_call_us,
            row.server_call_us,
        ] {
            let pick = |f: fn(&Summary) -> f64| number(summary.as_ref().map(f));
            fields.extend([
                pick(|s| s.mean),
                pick(|s| s.median),
                pick(|s| s.stdev),
                pick(|s| s.min),
                pick(|s| s.max),
                pick(|s| s.p99),
                pick(|s| s.median_ci95.low),
                pick(|s| s.median_ci95.high),
            ]);
        }
        let ratio = row.ratio_to_baseline.as_ref();
        fields.extend([
            number(ratio.map(|r| r.value)),
            number(ratio.map(|r| r.ci95.low)),
            number(ratio.map(|r| r.ci95.high)),
            ratio.map(|r| r.pairs.to_string()).unwrap_or_default(),
            row.ratio_note.clone().unwrap_or_default(),
            row.weak.to_string(),
            row.security_notes.join("; "),
        ]);
        // One record per network profile, or one without.
        let networks: Vec<Option<&wire::NetworkFigures>> = if row.network.is_empty() {
            vec![None]
        } else {
            row.network.iter().map(Some).collect()
        };
        for network in networks {
            let mut record = fields.clone();
            record.extend(wire::record_fields(row, network));
            table.rows.push(record);
        }
    }
    table
}

/// Puts cells in one order for a live run and for the same run read back
/// from the store (which keeps cells in the order they finished): the
/// scenario's axes in their declared order, then the backend.
pub fn sort_cells(cells: &mut [CellResult]) {
    let rank = |backend: &str| {
        crate::backend::BACKEND_IDS
            .iter()
            .position(|id| *id == backend)
            .unwrap_or(usize::MAX)
    };
    cells.sort_by(|a, b| {
        (a.scenario, rank(&a.backend), &a.backend).cmp(&(b.scenario, rank(&b.backend), &b.backend))
    });
}

/// A finished (or interrupted) handshake run, ready to export.
pub struct HandshakeReport<'a> {
    pub run_id: Option<i64>,
    pub complete: bool,
    pub baseline: Option<&'a str>,
    pub host: &'a HostInfo,
    pub libraries: &'a [LibraryInfo],
    pub seed: Option<u64>,
    pub precision: Option<f64>,
    pub cells: &'a [CellResult],
    /// The run's rounds (empty when not known): other processes' CPU use
    /// per round.
    pub rounds: &'a [Round],
    /// The valgrind that counted instructions, if any did.
    pub counted_with: Option<&'a str>,
    /// Show the wire table (`--wire`); the exports have the figures always.
    pub show_wire: bool,
    /// Where the server ran when not in this process (`--remote`): its
    /// address and host, said under the table.
    pub server_elsewhere: Option<&'a str>,
}

impl HandshakeReport<'_> {
    pub fn document(&self) -> Document {
        let mut cells = self.cells.to_vec();
        sort_cells(&mut cells);
        let paired = with_baselines(&cells, self.baseline);
        let rows = rows_paired(&cells, &paired, self.baseline);
        let drift = drift(&cells);
        let dtls_pairs = tls_vs_dtls::pairs(&cells);
        let other_work = other_work(&cells, self.baseline, self.rounds, &paired);
        let data = super::json_with(
            super::provenance_json(
                self.run_id,
                self.complete,
                self.host,
                self.libraries,
                self.seed,
                drift.as_ref(),
            ),
            serde_json::json!({
                "baseline": self.baseline,
                "rows": rows,
                "tls_vs_dtls": dtls_pairs,
                "other_work": other_work,
                "round_times": self.rounds,
            }),
        );
        let mut tables = vec![table(&rows, self.baseline, self.counted_with)];
        if let Some(server) = self.server_elsewhere {
            let notes = &mut tables[0].notes;
            notes.retain(|note| !note.starts_with("TCP, UDP rows:"));
            notes.push(format!("Server elsewhere: `tlslab serve --handshakes` at {server}. Its CPU per handshake is its thread's from taking the connection to the end of its handshake, as it reported it; the client's CPU and wall time run from its connect() (TCP's handshake included) until its library was done, over the network between them."));
        }
        tables.extend(breakdown_table(&cells));
        if self.show_wire {
            tables.extend(wire::wire_table(&rows));
        }
        tables.extend(wire::network_table(&rows));
        tables.extend(tls_vs_dtls::table(&dtls_pairs, &cells));
        Document {
            heading: super::heading(self.host, self.libraries),
            tables,
            records: records(&rows),
            data,
            footer: {
                let mut notes = super::run_notes(drift.as_ref(), self.precision, self.complete);
                notes.extend(other_work.as_ref().map(super::other_work_note));
                notes
            },
            figures: super::plot::handshake_figures(&rows, self.baseline),
        }
    }
}
