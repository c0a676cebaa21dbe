//! The tunnel's record table: one line per row with every statistic (CSV).

use super::{TunnelCounted, TunnelReport, TunnelRow};
use crate::report::records::{number, SummaryColumns};
use crate::report::{Column, Columns, Table};
use crate::scenario::names::Named;
use crate::stats::Summary;

/// Each series' rates, to three decimals.
const RATE_COLUMNS: SummaryColumns = SummaryColumns {
    with_p99: false,
    interval: "ci95",
    unit: "",
    decimals: 3,
};

/// A rate series: its name in the headers and how a row gives it.
type Series = (&'static str, fn(&TunnelRow) -> Option<Summary>);

/// A row's rate series.
const SERIES: [Series; 7] = [
    ("mb_per_s", |r| r.mb_per_s),
    ("send_mb_per_s", |r| r.send_mb_per_s),
    ("receive_mb_per_s", |r| r.receive_mb_per_s),
    ("send_packets_per_s", |r| r.send_packets_per_s),
    ("receive_packets_per_s", |r| r.receive_packets_per_s),
    ("send_cpu_ms_per_mb", |r| r.send_cpu_ms_per_mb),
    ("receive_cpu_ms_per_mb", |r| r.receive_cpu_ms_per_mb),
];

/// One line per row with every statistic.
pub fn records(report: &TunnelReport) -> Table {
    let mut columns = Columns::new()
        .with(Column::text("label"), |r: &TunnelRow| r.label.clone())
        .with(Column::text("engine"), |r| r.engine.to_string())
        .with(Column::text("status"), |r| r.status.to_string())
        .with(Column::text("reason"), |r| {
            r.reason.clone().unwrap_or_default()
        })
        .with(Column::text("baseline"), |r| {
            r.scenario.baseline.to_string()
        })
        .with(Column::text("cipher"), |r| {
            r.scenario.cipher.id().to_string()
        })
        .with(Column::text("digest"), |r| {
            r.scenario.digest.id().to_string()
        })
        .with(Column::text("compression"), |r| {
            r.scenario.compression.id().to_string()
        })
        .with(Column::text("payload"), |r| {
            r.scenario.payload.id().to_string()
        })
        .with(Column::text("payload_bytes"), |r| {
            r.scenario.payload_bytes.to_string()
        })
        .with(Column::text("samples"), |r| r.sample_count.to_string())
        .with(Column::text("precise"), |r| r.precise.to_string());
    for (name, summary) in SERIES {
        columns = columns.with_all(RATE_COLUMNS.columns(name, summary));
    }
    columns
        .with(Column::text("ratio_to_baseline"), |r| {
            number(r.ratio_to_baseline.map(|r| r.value), 3)
        })
        .with(Column::text("weak"), |r| r.weak.to_string())
        .with(Column::text("security_notes"), |r| {
            r.security_notes.join("; ")
        })
        .with_all(counted_columns())
        .table(&report.rows)
}

/// A counted figure of a row, empty when the row was not counted.
fn counted(cell: fn(&TunnelCounted) -> String) -> impl Fn(&TunnelRow) -> String {
    move |r| r.instructions.as_ref().map(cell).unwrap_or_default()
}

/// A statistic of a summary of instructions, to the unit; empty without one.
fn of(summary: Option<Summary>, pick: fn(&Summary) -> f64) -> String {
    summary
        .map(|s| format!("{:.0}", pick(&s)))
        .unwrap_or_default()
}

/// The counted columns (`--measure instructions`): empty without a count.
fn counted_columns<'a>() -> Columns<'a, TunnelRow> {
    Columns::new()
        .with(
            Column::text("instructions_status"),
            counted(|c| c.status.to_string()),
        )
        .with(
            Column::text("instructions_reason"),
            counted(|c| c.reason.clone().unwrap_or_default()),
        )
        .with(
            Column::text("counted_packets"),
            counted(|c| c.packets.to_string()),
        )
        .with(
            Column::text("counted_payload_bytes"),
            counted(|c| c.payload_bytes.to_string()),
        )
        .with(
            Column::text("send_instructions_per_mb_median"),
            counted(|c| of(c.send_per_mb, |s| s.median)),
        )
        .with(
            Column::text("receive_instructions_per_mb_median"),
            counted(|c| of(c.receive_per_mb, |s| s.median)),
        )
        .with(
            Column::text("total_instructions_per_mb_median"),
            counted(|c| of(c.total_per_mb, |s| s.median)),
        )
        .with(
            Column::text("total_instructions_per_mb_min"),
            counted(|c| of(c.total_per_mb, |s| s.min)),
        )
        .with(
            Column::text("total_instructions_per_mb_max"),
            counted(|c| of(c.total_per_mb, |s| s.max)),
        )
        .with(
            Column::text("instructions_spread"),
            counted(|c| c.spread.map(|s| format!("{s:.6}")).unwrap_or_default()),
        )
        .with(
            Column::text("instructions_ratio_to_baseline"),
            counted(|c| number(c.ratio_to_baseline, 3)),
        )
        .with(
            Column::text("instructions_samples"),
            counted(|c| c.samples.len().to_string()),
        )
}
