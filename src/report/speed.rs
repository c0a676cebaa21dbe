//! Reports for `tlslab speed`: ops/s and µs per operation for asymmetric
//! rows, MB/s per buffer size for symmetric rows, like `openssl speed`.

use serde::Serialize;

use super::compare::kind::Kind;
use super::markup::format_us;
use super::records::{number, SummaryColumns};
use super::{axis_headers, Axis, Column, Columns, Document, Table};
use crate::backend::LibraryInfo;
use crate::host::HostInfo;
use crate::measure::{self, Outcome, Timed};
use crate::scenario::speed::SpeedRow;
use crate::scenario::{Measure, Named, Subject};
use crate::stats::{self, Summary};
use crate::workload::speed::{SpeedCell, SpeedSample};

/// One speed row with its statistics.
#[derive(Debug, Clone, Serialize)]
pub struct SpeedReportRow {
    pub label: String,
    /// The backend measured; exported as `backend`.
    #[serde(rename = "backend")]
    pub subject: Subject,
    pub row: SpeedRow,
    pub status: crate::measure::CellStatus,
    pub reason: Option<String>,
    /// Time per operation, nanoseconds.
    pub ns_per_op: Option<Summary>,
    /// Operations per second (from the median).
    pub ops_per_second: Option<f64>,
    /// Megabytes (10^6 bytes) per second, for symmetric rows (from the median).
    pub megabytes_per_second: Option<f64>,
    pub precise: bool,
    /// Operations per sample.
    pub batch: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<Timed<SpeedSample>>,
    /// Instructions per operation, counted under valgrind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions_per_op: Option<Summary>,
    /// Why counting did not give a figure, when it was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counted_reason: Option<String>,
}

pub fn build_rows(cells: &[SpeedCell]) -> Vec<SpeedReportRow> {
    cells
        .iter()
        .map(|cell| {
            let mut row = SpeedReportRow {
                label: cell.row.label(),
                subject: cell.subject,
                row: cell.row,
                status: crate::measure::CellStatus::Measured,
                reason: None,
                ns_per_op: None,
                ops_per_second: None,
                megabytes_per_second: None,
                precise: false,
                batch: cell.batch,
                samples: Vec::new(),
                instructions_per_op: cell
                    .counted
                    .as_ref()
                    .and_then(|c| stats::summarize(&c.per_operation())),
                counted_reason: cell.counted.as_ref().and_then(|c| {
                    c.outcome
                        .reason()
                        .map(|r| format!("{}: {r}", c.outcome.status()))
                }),
            };
            match &cell.outcome {
                Outcome::Measured {
                    samples, precise, ..
                } => {
                    let ns_per_op: Vec<f64> = samples.iter().map(|s| s.value.ns_per_op).collect();
                    let summary = stats::summarize(&ns_per_op);
                    row.ops_per_second = summary.map(|s| 1e9 / s.median);
                    row.megabytes_per_second = summary
                        .zip(cell.row.size_bytes)
                        .map(|(s, size)| size as f64 * 1e3 / s.median);
                    row.ns_per_op = summary;
                    row.precise = *precise;
                    row.samples = samples.clone();
                }
                Outcome::Unsupported { reason } => {
                    row.status = crate::measure::CellStatus::Unsupported;
                    row.reason = Some(reason.clone());
                }
                Outcome::Failed { reason } => {
                    row.status = crate::measure::CellStatus::Failed;
                    row.reason = Some(reason.clone());
                }
            }
            row
        })
        .collect()
}

/// A row's algorithm.
fn algorithm(row: &SpeedRow) -> String {
    row.primitive.name().to_string()
}

/// A row's operation.
fn operation(row: &SpeedRow) -> String {
    row.operation.id().to_string()
}

/// A buffer row's size in bytes; empty for an asymmetric row.
fn size(row: &SpeedRow) -> String {
    row.size_bytes.map(|s| s.to_string()).unwrap_or_default()
}

/// A row's axes as `compare` shows them, each with its cell (the speed
/// tables draw the size as a figure).
pub(crate) const AXES: [Axis<SpeedRow>; 3] = [
    Axis {
        header: "algorithm",
        cell: algorithm,
    },
    Axis {
        header: "operation",
        cell: operation,
    },
    Axis {
        header: "bytes",
        cell: size,
    },
];

/// What a speed run's rows measure in `compare`: the time per operation,
/// or the instructions counted per operation.
pub fn compared(measure: Measure) -> Option<Kind> {
    let kind = Kind::rows("speed", "backend", axis_headers(&AXES).to_vec());
    match measure {
        Measure::Time => Some(kind.on_time("µs/op", "the time per operation", 1e-3)),
        Measure::Instructions => Some(kind.on_counts(
            "k instr/op",
            "the instructions per operation, counted under valgrind",
            1e-3,
        )),
        Measure::Memory => None,
    }
}

/// The columns both speed tables start with: the backend and the row.
fn leading<'a>() -> Columns<'a, SpeedReportRow> {
    Columns::new()
        .with(Column::axis("backend"), |r: &SpeedReportRow| {
            r.subject.to_string()
        })
        .with(Column::text("algorithm"), |r| algorithm(&r.row))
        .with(Column::text("operation"), |r| operation(&r.row))
        .with(Column::number("bytes"), |r| size(&r.row))
}

/// The speed table.
fn table(rows: &[SpeedReportRow]) -> Table {
    let dash = || "—".to_string();
    let mut table = leading()
        .with(Column::number("ops/s"), |row| {
            row.ops_per_second
                .map(|o| format!("{o:.0}"))
                .unwrap_or_else(dash)
        })
        .with(Column::number("µs/op").priority(1), |row| {
            row.ns_per_op
                .map(|s| format_us(s.median / 1000.0))
                .unwrap_or_else(dash)
        })
        .with(Column::number("MB/s"), |row| {
            row.megabytes_per_second
                .map(|m| format!("{m:.1}"))
                .unwrap_or_default()
        })
        .with(Column::number("±95% CI").priority(2), |row| {
            row.ns_per_op
                .map(|s| {
                    format!(
                        "{:.1}%",
                        s.median_ci95.relative_half_width(s.median) * 100.0
                    )
                })
                .unwrap_or_else(dash)
        })
        .with(Column::number("n").priority(3), |row| {
            row.ns_per_op
                .map(|s| s.count.to_string())
                .unwrap_or_else(dash)
        })
        .with(Column::notes("notes"), |row| {
            let mut notes = Vec::new();
            if let Some(reason) = &row.reason {
                notes.push(format!("{}: {reason}", row.status));
            }
            if row.status == crate::measure::CellStatus::Measured && !row.precise {
                notes.push("precision not reached in time".to_string());
            }
            notes.join("; ")
        })
        .table(rows);
    table
        .notes
        .push("Each sample is a batch of operations lasting about 2 ms; rows are sampled in interleaved rounds.".to_string());
    table
}

/// Nanoseconds per operation, to three decimals.
const COST_COLUMNS: SummaryColumns = SummaryColumns {
    with_p99: false,
    interval: "median_ci",
    unit: "",
    decimals: 3,
};

/// One line per row with every statistic.
fn records(rows: &[SpeedReportRow]) -> Table {
    let mut table = Table::records(
        "label,backend,primitive,operation,size_bytes,status,reason,samples,precise,ops_per_second,megabytes_per_second"
            .split(',')
            .map(String::from)
            .chain(COST_COLUMNS.headers("ns_per_op")),
    );
    for row in rows {
        let s = row.ns_per_op;
        let mut fields = vec![
            row.label.clone(),
            row.subject.to_string(),
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
            number(row.ops_per_second, 3),
            number(row.megabytes_per_second, 3),
        ];
        fields.extend(COST_COLUMNS.fields(s.as_ref()));
        table.rows.push(fields);
    }
    table
}

/// A speed run as a document.
pub fn document(
    cells: &[SpeedCell],
    run_id: Option<i64>,
    complete: bool,
    host: &HostInfo,
    libraries: &[LibraryInfo],
    seed: Option<u64>,
    counted_with: Option<&str>,
) -> Document {
    let rows = build_rows(cells);
    let per_cell: Vec<Vec<(u32, f64)>> = cells
        .iter()
        .filter(|c| !c.outcome.samples().is_empty())
        .map(|c| stats::round_medians(&measure::costs(c.outcome.samples())))
        .collect();
    let drift = stats::drift(&per_cell);
    let timed = cells.iter().any(|c| !c.outcome.samples().is_empty())
        || cells.iter().all(|c| c.counted.is_none());
    let mut tables = Vec::new();
    if timed {
        tables.push(table(&rows));
    }
    tables.extend(counted_table(&rows, counted_with));
    Document {
        heading: super::heading(host, libraries),
        tables,
        records: records(&rows),
        data: super::json_with(
            super::provenance_json(run_id, complete, host, libraries, seed, drift.as_ref()),
            serde_json::json!({ "rows": rows }),
        ),
        footer: super::run_notes(drift.as_ref(), None, complete),
        figures: super::plot::speed_figures(&rows),
    }
}

/// Instructions per operation (and per byte for buffer rows), for the
/// rows counted under valgrind.
fn counted_table(rows: &[SpeedReportRow], counted_with: Option<&str>) -> Option<Table> {
    if rows
        .iter()
        .all(|r| r.instructions_per_op.is_none() && r.counted_reason.is_none())
    {
        return None;
    }
    let dash = || "—".to_string();
    let counted = rows
        .iter()
        .filter(|r| r.instructions_per_op.is_some() || r.counted_reason.is_some());
    let mut table = leading()
        .with(Column::number("instr/op"), |row| {
            row.instructions_per_op
                .map(|s| format!("{:.0}", s.median))
                .unwrap_or_else(dash)
        })
        .with(Column::number("instr/B"), |row| {
            row.instructions_per_op
                .zip(row.row.size_bytes)
                .map(|(s, size)| format!("{:.2}", s.median / size as f64))
                .unwrap_or_else(dash)
        })
        .with(Column::number("spread"), |row| {
            row.instructions_per_op
                .map(|s| format!("{:.2}%", (s.max - s.min) / s.median * 100.0))
                .unwrap_or_else(dash)
        })
        .with(Column::number("n"), |row| {
            row.instructions_per_op
                .map_or_else(dash, |s| s.count.to_string())
        })
        .with(Column::text("notes"), |row| {
            row.counted_reason.clone().unwrap_or_default()
        })
        .table(counted)
        .titled("Instructions per operation (counted under valgrind)");
    table.notes.push(format!(
        "instr/op: instructions executed per operation, counted under {}'s callgrind (median of the samples, each a fixed number of operations after one uncounted); instr/B: per byte of the buffer. Counts repeat on any machine but say nothing of the clock; valgrind hides AVX-512 from the libraries.",
        counted_with.unwrap_or("valgrind")
    ));
    Some(table)
}
