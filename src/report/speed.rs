//! Reports for `tlslab speed`: ops/s and µs per operation for asymmetric
//! rows, MB/s per buffer size for symmetric rows, like `openssl speed`.

use serde::Serialize;

use super::markup::{format_us, grid, Style};
use crate::scenario::Named;
use crate::speed::{SpeedCell, SpeedOutcome, SpeedRow};
use crate::stats::{self, Summary};

/// One speed row with its statistics.
#[derive(Debug, Clone, Serialize)]
pub struct SpeedReportRow {
    pub label: String,
    pub backend: String,
    pub row: SpeedRow,
    pub status: &'static str,
    pub reason: Option<String>,
    /// Time per operation, nanoseconds.
    pub ns_per_op: Option<Summary>,
    /// Operations per second (from the median).
    pub ops_per_second: Option<f64>,
    /// Megabytes (10^6 bytes) per second, for symmetric rows (from the median).
    pub megabytes_per_second: Option<f64>,
    pub precise: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub samples_ns_per_op: Vec<f64>,
}

pub fn build_rows(cells: &[SpeedCell]) -> Vec<SpeedReportRow> {
    cells
        .iter()
        .map(|cell| {
            let mut row = SpeedReportRow {
                label: cell.row.label(),
                backend: cell.backend.clone(),
                row: cell.row,
                status: "measured",
                reason: None,
                ns_per_op: None,
                ops_per_second: None,
                megabytes_per_second: None,
                precise: false,
                samples_ns_per_op: Vec::new(),
            };
            match &cell.outcome {
                SpeedOutcome::Measured {
                    ns_per_op, precise, ..
                } => {
                    let summary = stats::summarize(ns_per_op);
                    row.ops_per_second = summary.map(|s| 1e9 / s.median);
                    row.megabytes_per_second = summary
                        .zip(cell.row.size_bytes)
                        .map(|(s, size)| size as f64 * 1e3 / s.median);
                    row.ns_per_op = summary;
                    row.precise = *precise;
                    row.samples_ns_per_op = ns_per_op.clone();
                }
                SpeedOutcome::Unsupported { reason } => {
                    row.status = "unsupported";
                    row.reason = Some(reason.clone());
                }
                SpeedOutcome::Failed { reason } => {
                    row.status = "failed";
                    row.reason = Some(reason.clone());
                }
            }
            row
        })
        .collect()
}

/// The speed table, as text or Markdown.
pub fn render(rows: &[SpeedReportRow], style: Style) -> String {
    let headers = [
        "backend",
        "algorithm",
        "operation",
        "bytes",
        "ops/s",
        "µs/op",
        "MB/s",
        "±95% CI",
        "n",
        "notes",
    ];
    let numeric = [
        false, false, false, true, true, true, true, true, true, false,
    ];
    let dash = || "—".to_string();
    let lines: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            let spread = row.ns_per_op.map(|s| {
                format!(
                    "{:.1}%",
                    s.median_ci95.relative_half_width(s.median) * 100.0
                )
            });
            let mut notes = Vec::new();
            if let Some(reason) = &row.reason {
                notes.push(format!("{}: {reason}", row.status));
            }
            if row.status == "measured" && !row.precise {
                notes.push("precision not reached in time".to_string());
            }
            vec![
                row.backend.clone(),
                row.row.primitive.id().to_string(),
                row.row.operation.id().to_string(),
                row.row
                    .size_bytes
                    .map(|s| s.to_string())
                    .unwrap_or_default(),
                row.ops_per_second
                    .map(|o| format!("{o:.0}"))
                    .unwrap_or_else(dash),
                row.ns_per_op
                    .map(|s| format_us(s.median / 1000.0))
                    .unwrap_or_else(dash),
                row.megabytes_per_second
                    .map(|m| format!("{m:.1}"))
                    .unwrap_or_default(),
                spread.unwrap_or_else(dash),
                row.ns_per_op
                    .map(|s| s.count.to_string())
                    .unwrap_or_else(dash),
                notes.join("; "),
            ]
        })
        .collect();
    grid(&headers, &numeric, &lines, style)
}

/// One CSV line per row.
pub fn render_csv(rows: &[SpeedReportRow]) -> String {
    let mut out = String::from(
        "label,backend,primitive,operation,size_bytes,status,reason,samples,precise,ops_per_second,megabytes_per_second,ns_per_op_mean,ns_per_op_median,ns_per_op_stdev,ns_per_op_min,ns_per_op_max,ns_per_op_median_ci_low,ns_per_op_median_ci_high\n",
    );
    let number = |v: Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_default();
    for row in rows {
        let s = row.ns_per_op;
        let fields = [
            row.label.clone(),
            row.backend.clone(),
            row.row.primitive.id().to_string(),
            row.row.operation.id().to_string(),
            row.row
                .size_bytes
                .map(|s| s.to_string())
                .unwrap_or_default(),
            row.status.to_string(),
            row.reason.clone().unwrap_or_default(),
            s.map(|s| s.count.to_string()).unwrap_or_default(),
            row.precise.to_string(),
            number(row.ops_per_second),
            number(row.megabytes_per_second),
            number(s.map(|s| s.mean)),
            number(s.map(|s| s.median)),
            number(s.map(|s| s.stdev)),
            number(s.map(|s| s.min)),
            number(s.map(|s| s.max)),
            number(s.map(|s| s.median_ci95.low)),
            number(s.map(|s| s.median_ci95.high)),
        ];
        let quoted: Vec<String> = fields.iter().map(|f| super::csv::quote(f)).collect();
        out.push_str(&quoted.join(","));
        out.push('\n');
    }
    out
}
