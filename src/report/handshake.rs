//! The handshake view: per row the handshakes per second, each side's CPU
//! time, the wall time with the interval of its median, and the ratio to
//! the baseline row taken from same-round pairs; and, when a run has both,
//! TLS rows beside their DTLS twins ([`tls_vs_dtls`]).

pub mod tls_vs_dtls;

use serde::Serialize;

use super::markup::format_us;
use super::{ColumnKind, Document, Table};
use crate::backend::{LibraryInfo, Negotiated};
use crate::host::HostInfo;
use crate::measure::{self, Round, Timed};
use crate::scenario::{HandshakeScenario, KxKind, SignatureFamily};
use crate::stats::{self, Drift, PairedRatio, RoundValues, Summary};
use crate::workload::handshake::{CellResult, Sample};

/// One row of a report: a cell with its statistics.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub label: String,
    pub scenario: HandshakeScenario,
    pub backend: String,
    pub description: String,
    /// "measured", "unsupported" or "failed".
    pub status: &'static str,
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
    pub weak: bool,
    pub security_notes: Vec<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<Timed<Sample>>,
}

fn micros(samples: &[Timed<Sample>], pick: fn(&Sample) -> u64) -> Option<Summary> {
    let values: Vec<f64> = samples
        .iter()
        .map(|s| pick(&s.value) as f64 / 1000.0)
        .collect();
    stats::summarize(&values)
}

/// Builds report rows. The ratio of each row is to the baseline row of the
/// same backend if it has one, else to the first backend's baseline row,
/// from the rounds both were sampled in.
pub fn build_rows(cells: &[CellResult], baseline: Option<&str>) -> Vec<Row> {
    rows_paired(cells, &with_baselines(cells, baseline))
}

/// The rows, with their ratios from `paired` (as [`with_baselines`] gives it).
fn rows_paired(cells: &[CellResult], paired: &[Paired]) -> Vec<Row> {
    let mut rows: Vec<Row> = cells.iter().map(row_of).collect();
    for (row, (cell, base)) in rows.iter_mut().zip(paired) {
        if let Some(base) = base {
            row.ratio_to_baseline = stats::paired_ratio(cell, base);
        }
    }
    rows
}

/// A cell's round medians, and its baseline's if it is paired with one.
type Paired = (RoundValues, Option<RoundValues>);

/// Per cell, its round medians and, when it is measured and has one, its
/// baseline's: the baseline row of the same backend if there is one, else
/// the first backend's. Without a baseline, nothing.
fn with_baselines(cells: &[CellResult], baseline: Option<&str>) -> Vec<Paired> {
    let Some(baseline) = baseline else {
        return vec![(Vec::new(), None); cells.len()];
    };
    let medians = |cell: &CellResult| stats::round_medians(&measure::costs(cell.samples()));
    let mut by_backend: std::collections::HashMap<&str, RoundValues> = Default::default();
    let mut first = None;
    for cell in cells {
        if cell.scenario.label() == baseline && !cell.samples().is_empty() {
            let values = medians(cell);
            first.get_or_insert_with(|| values.clone());
            by_backend.entry(cell.backend.as_str()).or_insert(values);
        }
    }
    cells
        .iter()
        .map(|cell| {
            let own = medians(cell);
            let base = (!own.is_empty())
                .then(|| by_backend.get(cell.backend.as_str()).or(first.as_ref()))
                .flatten()
                .cloned();
            (own, base)
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
        weak: scenario.is_weak(),
        security_notes: scenario.security_notes(),
        samples: samples.to_vec(),
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
    if row.weak {
        notes.push("WEAK".to_string());
    }
    if row.status == "measured" && !row.precise {
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
    ["TLS", "kx", "cert", "suite", "resume", "mTLS", "chain"];

/// The scenario's axes as short cells, one per [`AXIS_HEADERS`].
pub(crate) fn axis_cells(scenario: &HandshakeScenario) -> Vec<String> {
    use crate::scenario::Named;
    vec![
        scenario.version.id().to_string(),
        scenario.group.display(),
        scenario.cert.display().to_string(),
        scenario.aead.id().to_string(),
        scenario.resumption.id().to_string(),
        if scenario.mutual { "yes" } else { "no" }.to_string(),
        scenario.chain_depth.to_string(),
    ]
}

/// The table a person reads. Narrow terminals drop first p99 and the
/// sample count, then handshakes/s, then the CPU columns; the backend,
/// scenario, wall time, ratio and notes always stay.
fn table(rows: &[Row], baseline: Option<&str>) -> Table {
    // The transport is a column only when some row ran over a socket.
    let with_transport = rows.iter().any(|r| r.scenario.transport.is_socket());
    let axis_count = AXIS_HEADERS.len() + usize::from(with_transport);
    let mut headers = vec!["backend"];
    headers.extend(AXIS_HEADERS);
    if with_transport {
        headers.push("transport");
    }
    headers.extend([
        "handshakes/s",
        "client CPU µs",
        "server CPU µs",
        "wall µs (median ±95% CI)",
        "p99 µs",
        "n",
        "× baseline (±95% CI)",
        "quantum-safe",
        "notes",
    ]);
    let mut numeric = vec![false; 1 + axis_count];
    numeric.extend([true, true, true, true, true, true, true, false, false]);
    let mut priority = vec![0; 1 + axis_count];
    priority.extend([3, 2, 2, 0, 5, 4, 0, 1, 0]);
    // Quantum safety follows from the axes: said once when every row shares it.
    let mut axes: Vec<usize> = (0..=axis_count).collect();
    axes.push(headers.len() - 2);
    let mut table = Table::new(&headers, &numeric)
        .priorities(&priority)
        .mark(&axes, ColumnKind::Axis)
        .mark(&[headers.len() - 1], ColumnKind::Notes);
    let dash = || "—".to_string();
    let median = |s: Option<Summary>| s.map(|s| format_us(s.median)).unwrap_or_else(dash);
    for row in rows {
        let wall = row.wall_us.map(|w| {
            let spread = w.median_ci95.relative_half_width(w.median) * 100.0;
            format!("{} ±{spread:.1}%", format_us(w.median))
        });
        let mut cells = vec![row.backend.clone()];
        cells.extend(axis_cells(&row.scenario));
        if with_transport {
            cells.push(row.scenario.transport.display().to_string());
        }
        cells.extend([
            row.handshakes_per_second
                .map(|h| format!("{h:.0}"))
                .unwrap_or_else(dash),
            median(row.client_cpu_us),
            median(row.server_cpu_us),
            wall.unwrap_or_else(dash),
            row.wall_us.map(|s| format_us(s.p99)).unwrap_or_else(dash),
            if row.sample_count > 0 {
                row.sample_count.to_string()
            } else {
                dash()
            },
            row.ratio_to_baseline
                .as_ref()
                .map(ratio_text)
                .unwrap_or_else(dash),
            quantum_safe(&row.scenario).to_string(),
            notes(row),
        ]);
        table.rows.push(cells);
    }
    table.notes.push("client/server CPU: the thread's CPU time inside each side's library calls (CLOCK_THREAD_CPUTIME_ID), median. Over memory, where the two sides take turns on one thread, it is the handshake's CPU time split as the wall time inside each side's calls; a handshake during which the thread was preempted is retaken with the clock read at every turn. The exports also hold the wall time inside the calls.".to_string());
    if with_transport {
        table.notes.push("TCP, UDP rows: client and server in two threads over a loopback socket; each side's CPU includes the kernel's work for its socket calls (and for TCP its connect or accept), the wall time runs until the later side is done.".to_string());
    }
    if rows.iter().any(|r| r.backend == "nginx") {
        table.notes.push("nginx rows: the client is tlslab's OpenSSL over TCP on loopback (its CPU from connect to the end of the handshake); the server CPU is nginx's worker process from before the connect to the connection's close (/proc/PID/schedstat), its kernel TCP work included.".to_string());
    }
    if let Some(baseline) = baseline {
        table.notes.push(format!(
            "× baseline: CPU time (client + server) relative to {baseline}, the median of same-round ratios (rounds interleave every cell); ±: the 95% interval of that median from order statistics."
        ));
    }
    table
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
            "weak",
            "security_notes",
        ]
        .map(String::from),
    );
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
            row.weak.to_string(),
            row.security_notes.join("; "),
        ]);
        table.rows.push(fields);
    }
    table
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
}

impl HandshakeReport<'_> {
    pub fn document(&self) -> Document {
        // One order for a live run and for the same run read back from the
        // store (which keeps cells in the order they finished): the
        // scenario's axes in their declared order, then the backend.
        let mut cells = self.cells.to_vec();
        let rank = |backend: &str| {
            crate::backend::BACKEND_IDS
                .iter()
                .position(|id| *id == backend)
                .unwrap_or(usize::MAX)
        };
        cells.sort_by(|a, b| {
            (a.scenario, rank(&a.backend), &a.backend).cmp(&(
                b.scenario,
                rank(&b.backend),
                &b.backend,
            ))
        });
        let paired = with_baselines(&cells, self.baseline);
        let rows = rows_paired(&cells, &paired);
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
        let mut tables = vec![table(&rows, self.baseline)];
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
