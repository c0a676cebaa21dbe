//! The five tables of the classic study as neutral tables, and table 6
//! (engines side by side, [`super::fastest`]) when two engines ran.

use super::axes::AXES;
use super::format::{format_rate, notes_of};
use super::{
    median_of, BaselineComparison, CompressionEffect, Normalised, TunnelReport, TunnelRow,
};
use crate::report::{Column, Columns, Table};
use crate::scenario::names::Named;
use crate::scenario::tunnel::{Payload, RowEngine};
use crate::scenario::CpuFeatures;
use crate::stats::Summary;

/// The five tables, and the counted table when rows were counted; a run
/// that counted and did not time shows its counts only.
pub fn tables(report: &TunnelReport) -> Vec<Table> {
    let counted = super::counted::table(report);
    let timed = report.rows.iter().any(|r| r.sample_count > 0) || counted.is_none();
    let mut tables = if timed {
        timed_tables(report)
    } else {
        Vec::new()
    };
    tables.extend(counted);
    tables
}

/// The five tables of the timed study, and table 6.
fn timed_tables(report: &TunnelReport) -> Vec<Table> {
    let mut tables = vec![compression_table(report)];
    for (title, rows) in [
        (
            "2. Ciphers normalised to the fastest (uncompressed rows)",
            &report.ciphers,
        ),
        (
            "3. Digests normalised to the fastest (uncompressed CBC and MAC-only rows)",
            &report.digests,
        ),
    ] {
        tables.push(normalised_table(title, rows));
    }
    tables.push(ranking(report));
    tables.push(baseline_table(report));
    tables.extend(super::fastest::table(&report.versus_fastest));
    tables
}

/// A payload and its size, as tables 1 and 5 say it.
fn payload(payload: Payload, bytes: usize) -> String {
    format!("{} {bytes} B", payload.id())
}

/// Table 1: the effect of compression.
fn compression_table(report: &TunnelReport) -> Table {
    let ratio =
        |pick: fn(&Summary) -> f64| move |c: &CompressionEffect| format!("{:.3}", pick(&c.ratio));
    let mut table = Columns::new()
        .with(Column::axis("engine"), |c: &CompressionEffect| c.engine.to_string())
        .with(Column::text("payload"), |c| payload(c.payload, c.payload_bytes))
        .with(Column::text("compression"), |c| c.compression.id().to_string())
        .with(Column::number("pairs").priority(2), |c| c.pairs.to_string())
        .with(Column::number("avg").priority(1), ratio(|r| r.mean))
        .with(Column::number("stdev").priority(2), ratio(|r| r.stdev))
        .with(Column::number("median"), ratio(|r| r.median))
        .with(Column::number("min").priority(1), ratio(|r| r.min))
        .with(Column::number("max").priority(1), ratio(|r| r.max))
        .table(&report.compression_effect)
        .titled(
            "1. Effect of compression (throughput with compression / without, same cipher and digest)",
        );
    table.empty = Some("no compressed and uncompressed pairs measured".to_string());
    table
}

/// Tables 2 and 3: ciphers or digests normalised to the fastest.
fn normalised_table(title: &str, rows: &[Normalised]) -> Table {
    let mut table = Columns::new()
        .with(Column::axis("engine"), |n: &Normalised| {
            n.engine.to_string()
        })
        .with(Column::text("name"), |n| n.name.to_string())
        .with(Column::number("× fastest"), |n| {
            // No same-round pair with the fastest (rows of two shards
            // combined): no ratio.
            if n.relative.is_finite() {
                format!("{:.3}", n.relative)
            } else {
                "—".to_string()
            }
        })
        .with(Column::number("MB/s"), |n| format_rate(n.mb_per_s))
        .with(Column::number("send MB/s").priority(1), |n| {
            format_rate(n.send_mb_per_s)
        })
        .with(Column::number("receive MB/s").priority(1), |n| {
            format_rate(n.receive_mb_per_s)
        })
        .with(Column::number("rows").priority(2), |n| n.rows.to_string())
        .with(Column::notes("security"), |n| {
            notes_of(n.weak, &n.security_notes)
        })
        .table(rows)
        .titled(title);
    table.empty = Some("nothing measured".to_string());
    table.notes.push("× fastest: each of the algorithm's rows against the fastest algorithm's row with the same other settings (an AEAD has no digest: then the same compression and payload), as the median of same-round throughput ratios; then the median over those pairs.".to_string());
    table
}

/// Table 5: the no-tunnel row against the tunnels, with what the
/// throughput and CPU columns of every table mean.
fn baseline_table(report: &TunnelReport) -> Table {
    let mut table = Columns::new()
        .with(Column::axis("engine"), |b: &BaselineComparison| {
            b.engine.to_string()
        })
        .with(Column::text("payload"), |b| {
            payload(b.payload, b.payload_bytes)
        })
        .with(Column::number("no tunnel MB/s"), |b| {
            format_rate(b.baseline_mb_per_s)
        })
        .with(Column::text("fastest tunnel (MB/s)"), |b| {
            format!(
                "{} ({})",
                b.fastest_tunnel,
                format_rate(b.fastest_tunnel_mb_per_s)
            )
        })
        .with(Column::text("slowest tunnel (MB/s)"), |b| {
            format!(
                "{} ({})",
                b.slowest_tunnel,
                format_rate(b.slowest_tunnel_mb_per_s)
            )
        })
        .with(Column::number("no tunnel × fastest"), |b| {
            format!("{:.1}", b.baseline_over_fastest)
        })
        .table(&report.baselines)
        .titled("5. No tunnel against the tunnels");
    table.empty =
        Some("no baseline row measured; it is added unless --no-baseline-row".to_string());
    table.notes.push("MB/s: payload megabytes per second. In process: per second of the thread's CPU time (CLOCK_THREAD_CPUTIME_ID), one core doing both ends (send = compress, encrypt, authenticate; receive = verify, decrypt, decompress, check).".to_string());
    table.notes.push("Real tunnels (openvpn, wireguard-go): a TCP transfer each way through the tunnel between two network namespaces, per second of wall time (send = A to B, receive = B to A).".to_string());
    table.notes.push("CPU ms/MB (the ranking): CPU milliseconds per MB of payload at the sending and at the receiving end. In process: the thread's CPU time. Real tunnels: the tunnel daemon's process (all its threads, user and system time, the kernel's work in its system calls) at the sending and the receiving end of each transfer; not the transfer's own TCP ends, nor kernel work done outside the daemons; none for the no-tunnel row.".to_string());
    table.notes.push(format!(
        "× baseline: throughput relative to {}, the median of same-round ratios; in-process rows are sampled in interleaved rounds, real tunnels' rows one tunnel at a time.",
        report.baseline.as_deref().unwrap_or("the no-tunnel row of the same payload")
    ));
    table
}

/// The engine whose figure table 4 shows beside the first engine's: the
/// first engine without CPU features when those were measured, else the
/// next engine; none when one engine ran.
fn other_engine(report: &TunnelReport) -> Option<RowEngine> {
    let primary = report.rows.first().map(|r| r.engine);
    let generic_twin = primary.map(|primary| RowEngine {
        cpu_features: CpuFeatures::Generic,
        ..primary
    });
    let engines = || report.rows.iter().map(|r| r.engine);
    engines()
        .find(|e| Some(*e) == generic_twin && Some(*e) != primary)
        .or_else(|| engines().find(|e| Some(*e) != primary))
}

/// One line of table 4: a measured row and its rank.
type Ranked<'r> = (usize, &'r TunnelRow);

/// The cell of a figure that is not there.
fn dash() -> String {
    "—".to_string()
}

/// A measured row's figure.
fn figure(summary: Option<Summary>) -> String {
    summary.map_or_else(dash, |s| format_rate(s.median))
}

/// Table 4: the first engine's rows by throughput, with another engine's
/// figure for the same row beside it (the same engine's without CPU
/// features when those were measured, else the next engine's); then rows
/// that were not measured.
fn ranking(report: &TunnelReport) -> Table {
    let primary = report.rows.first().map(|r| r.engine);
    let mut measured: Vec<&TunnelRow> = report
        .rows
        .iter()
        .filter(|r| Some(r.engine) == primary && r.mb_per_s.is_some())
        .collect();
    measured.sort_by(|a, b| {
        median_of(b)
            .unwrap_or(0.0)
            .total_cmp(&median_of(a).unwrap_or(0.0))
    });
    let ranked: Vec<Ranked> = measured
        .into_iter()
        .enumerate()
        .map(|(i, r)| (i + 1, r))
        .collect();
    let mut table = ranking_columns(report, other_engine(report))
        .table(&ranked)
        .titled("4. Ranking of every combination (fastest first)");
    let unmeasured: Vec<String> = report
        .rows
        .iter()
        .filter(|r| r.status != crate::measure::CellStatus::Measured)
        .map(|r| {
            format!(
                "{} {}: {} ({})",
                r.engine,
                r.description,
                r.status,
                r.reason.as_deref().unwrap_or("")
            )
        })
        .collect();
    if !unmeasured.is_empty() {
        table.notes.push("Not measured:".to_string());
        for line in unmeasured {
            table.notes.push(format!("  {line}"));
        }
    }
    table
}

/// Table 4's columns: the rank, the row, its figures, `other`'s figure
/// for the same row when another engine ran, and the notes.
fn ranking_columns<'a>(
    report: &'a TunnelReport,
    other: Option<RowEngine>,
) -> Columns<'a, Ranked<'a>> {
    let mut columns = Columns::new()
        .with(Column::number("rank"), |(rank, _): &Ranked| {
            rank.to_string()
        })
        .with(Column::axis("engine"), |(_, row)| row.engine.to_string())
        .with_axes(&AXES, |(_, row)| &row.scenario)
        .with(Column::number("MB/s (median ±95% CI)"), |(_, row)| {
            let total = row.mb_per_s.expect("measured rows have a summary");
            let spread = total.median_ci95.relative_half_width(total.median) * 100.0;
            format!("{} ±{spread:.1}%", format_rate(total.median))
        })
        .with(Column::number("send MB/s").priority(1), |(_, row)| {
            figure(row.send_mb_per_s)
        })
        .with(Column::number("receive MB/s").priority(1), |(_, row)| {
            figure(row.receive_mb_per_s)
        })
        .with(Column::number("send packets/s").priority(3), |(_, row)| {
            row.send_packets_per_s
                .map(|s| format!("{:.0}", s.median))
                .unwrap_or_else(dash)
        })
        .with(
            Column::number("CPU ms/MB send / receive").priority(1),
            |(_, row)| match (row.send_cpu_ms_per_mb, row.receive_cpu_ms_per_mb) {
                (Some(send), Some(receive)) => format!(
                    "{} / {}",
                    format_rate(send.median),
                    format_rate(receive.median)
                ),
                _ => dash(),
            },
        )
        .with(Column::number("n").priority(2), |(_, row)| {
            row.sample_count.to_string()
        })
        .with(Column::number("× baseline"), |(_, row)| {
            row.ratio_to_baseline
                .map(|r| format!("{:.3}", r.value))
                .unwrap_or_else(dash)
        });
    if let Some(other) = other {
        columns.push(
            Column::number(format!("{other} MB/s (× baseline)")).priority(1),
            move |(_, row)| {
                let twin = report
                    .rows
                    .iter()
                    .find(|r| r.engine == other && r.label == row.label);
                match twin {
                    Some(twin) => match (twin.mb_per_s, twin.ratio_to_baseline) {
                        (Some(s), Some(r)) => {
                            format!("{} (×{:.3})", format_rate(s.median), r.value)
                        }
                        (Some(s), None) => format_rate(s.median),
                        _ => twin.status.to_string(),
                    },
                    None => dash(),
                }
            },
        );
    }
    columns.with(Column::notes("notes"), |(_, row)| {
        let mut notes: Vec<String> = Vec::new();
        match &row.reason {
            // A measured row's reason is its note (the budget was short).
            Some(note) if row.status == crate::measure::CellStatus::Measured => {
                notes.push(note.clone())
            }
            _ if !row.precise => notes.push("precision not reached in time".to_string()),
            _ => {}
        }
        notes.push(notes_of(row.weak, &row.security_notes));
        notes.retain(|n| !n.is_empty());
        notes.join("; ")
    })
}
