//! The handshake view's rows: per cell its statistics (each side's time,
//! instructions, heap bytes, wire figures), its ratio to its backend's
//! baseline row from same-round pairs, and the machine's drift over the run.

use serde::Serialize;

use super::wire;
use crate::backend::Negotiated;
use crate::heap::HeapSample;
use crate::measure::{self, Round, Timed};
use crate::scenario::{baseline, HandshakeScenario, Subject};
use crate::stats::{self, Drift, PairedRatio, RoundValues, Summary};
use crate::workload::counted::{CategoryCount, Instructions};
use crate::workload::handshake::{CellResult, Sample};

/// One row of a report: a cell with its statistics.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub label: String,
    pub scenario: HandshakeScenario,
    /// What the row measured; exported as `backend`, as it always was.
    #[serde(rename = "backend")]
    pub subject: Subject,
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

/// A side's times in microseconds, summarized.
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
pub(super) fn rows_paired(
    cells: &[CellResult],
    paired: &[Paired],
    baseline: Option<&str>,
) -> Vec<Row> {
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
    if let Some(baseline) = baseline {
        let missing = match baseline::twin_protocol(baseline) {
            Some(Ok(version)) => format!("no {} row", version.display()),
            _ => "no baseline row".to_string(),
        };
        for (row, ((timed, timed_base), (counted, counted_base))) in
            rows.iter_mut().zip(paired.iter().zip(&counted))
        {
            let unpaired =
                |own: &RoundValues, base: &Option<RoundValues>| !own.is_empty() && base.is_none();
            if unpaired(timed, timed_base) || unpaired(counted, counted_base) {
                row.ratio_note = Some(format!("{missing} on {}", row.subject));
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
pub(super) type Paired = (RoundValues, Option<RoundValues>);

/// Per cell, its round medians and, when it is measured and its backend
/// has a measured baseline row, that row's. Without a baseline, nothing.
pub(super) fn with_baselines(cells: &[CellResult], baseline: Option<&str>) -> Vec<Paired> {
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
    let mut measured: std::collections::HashMap<(Subject, String), &RoundValues> =
        Default::default();
    for (cell, values) in cells.iter().zip(&all) {
        if !values.is_empty() {
            measured
                .entry((cell.subject, cell.scenario.label()))
                .or_insert(values);
        }
    }
    cells
        .iter()
        .zip(&all)
        .map(|(cell, own)| {
            let key = (
                cell.subject,
                baseline::baseline_label(baseline, &cell.scenario),
            );
            let base = (!own.is_empty())
                .then(|| measured.get(&key).copied())
                .flatten()
                .cloned();
            (own.clone(), base)
        })
        .collect()
}

/// Whether other work on the machine moved the ratios to the baseline
/// (see [`stats::other_work`]); `None` without per-round readings.
pub(super) fn other_work(
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
        .filter(|(cell, _)| !baseline.is_some_and(|b| baseline::is_baseline(b, &cell.scenario)))
        .filter_map(|(_, (own, base))| base.clone().map(|base| (own.clone(), base)))
        .collect();
    stats::other_work(&loads, &pairs)
}

/// A cell's row, before any ratio is taken.
fn row_of(cell: &CellResult) -> Row {
    let scenario = &cell.scenario;
    let samples = cell.samples();
    let wall_us = micros(samples, |s| s.wall_ns);
    let mut rounds: Vec<u32> = samples.iter().map(|s| s.round).collect();
    rounds.dedup();
    Row {
        label: scenario.label(),
        scenario: *scenario,
        subject: cell.subject,
        description: scenario.describe(),
        status: cell.outcome.status(),
        reason: cell.outcome.stored_reason().map(String::from),
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

/// A row's instructions per handshake from the counted cell.
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

/// A row's heap bytes per side from the counted cell.
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
