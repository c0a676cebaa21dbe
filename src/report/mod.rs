//! Turning cells into a report (statistics per row, ratios to a baseline) and
//! the exporters: terminal table, Markdown, CSV and JSON.

mod csv;
pub mod markup;
pub mod speed;
pub mod tunnel;

pub(crate) use csv::quote as csv_quote;

use anyhow::Result;
use serde::Serialize;

use crate::backend::{LibraryInfo, Negotiated};
use crate::host::HostInfo;
use crate::measure::{CellOutcome, CellResult, Sample};
use crate::scenario::HandshakeScenario;
use crate::stats::{self, Ratio, Summary};

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
    /// True if and only if the median reached the requested precision.
    pub precise: bool,
    /// Handshakes per second on one core: 1 / mean wall time.
    pub handshakes_per_second: Option<f64>,
    /// Wall time per handshake, microseconds.
    pub wall_us: Option<Summary>,
    /// Client time per handshake, microseconds.
    pub client_us: Option<Summary>,
    /// Server time per handshake, microseconds.
    pub server_us: Option<Summary>,
    /// Median wall time relative to the baseline row.
    pub ratio_to_baseline: Option<Ratio>,
    pub weak: bool,
    pub security_notes: Vec<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<Sample>,
}

/// A finished (or interrupted) run, ready to export.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub tool_version: String,
    pub run_id: Option<i64>,
    pub complete: bool,
    pub baseline: Option<String>,
    pub host: HostInfo,
    pub libraries: Vec<LibraryInfo>,
    pub rows: Vec<Row>,
}

fn micros(samples: &[Sample], pick: fn(&Sample) -> u64) -> Option<Summary> {
    let values: Vec<f64> = samples.iter().map(|s| pick(s) as f64 / 1000.0).collect();
    stats::summarize(&values)
}

/// Builds report rows. The ratio of each row is to the baseline row of the
/// same backend if it has one, else to the first backend's baseline row.
pub fn build_rows(cells: &[CellResult], baseline: Option<&str>) -> Vec<Row> {
    let mut rows: Vec<Row> = cells.iter().map(row_of).collect();
    if let Some(baseline) = baseline {
        let find = |backend: Option<&str>| {
            rows.iter()
                .find(|r| {
                    r.label == baseline
                        && backend.is_none_or(|b| r.backend == b)
                        && r.wall_us.is_some()
                })
                .and_then(|r| r.wall_us)
        };
        let fallback = find(None);
        let bases: Vec<Option<Summary>> = rows
            .iter()
            .map(|row| find(Some(&row.backend)).or(fallback))
            .collect();
        for (row, base) in rows.iter_mut().zip(bases) {
            if let (Some(wall), Some(base)) = (row.wall_us, base) {
                row.ratio_to_baseline = Some(stats::ratio_of_medians(&wall, &base));
            }
        }
    }
    rows
}

fn row_of(cell: &CellResult) -> Row {
    let scenario = &cell.scenario;
    let mut row = Row {
        label: scenario.label(),
        scenario: *scenario,
        backend: cell.backend.clone(),
        description: scenario.describe(),
        status: "measured",
        reason: None,
        negotiated: None,
        sample_count: 0,
        precise: false,
        handshakes_per_second: None,
        wall_us: None,
        client_us: None,
        server_us: None,
        ratio_to_baseline: None,
        weak: scenario.is_weak(),
        security_notes: scenario.security_notes(),
        samples: Vec::new(),
    };
    match &cell.outcome {
        CellOutcome::Measured {
            negotiated,
            samples,
            precise,
        } => {
            row.negotiated = Some(negotiated.clone());
            row.sample_count = samples.len();
            row.precise = *precise;
            row.wall_us = micros(samples, |s| s.wall_ns);
            row.client_us = micros(samples, |s| s.client_ns);
            row.server_us = micros(samples, |s| s.server_ns);
            row.handshakes_per_second = row.wall_us.map(|w| 1e6 / w.mean);
            row.samples = samples.clone();
        }
        CellOutcome::Unsupported { reason } => {
            row.status = "unsupported";
            row.reason = Some(reason.clone());
        }
        CellOutcome::Failed { reason } => {
            row.status = "failed";
            row.reason = Some(reason.clone());
        }
    }
    row
}

/// The output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Markdown,
    Csv,
    Json,
}

/// Renders a report in one format.
pub fn render(report: &Report, format: Format) -> Result<String> {
    Ok(match format {
        Format::Table => markup::render(report, markup::Style::Terminal),
        Format::Markdown => markup::render(report, markup::Style::Markdown),
        Format::Csv => csv::render(report),
        Format::Json => serde_json::to_string_pretty(report)? + "\n",
    })
}
