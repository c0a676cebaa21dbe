//! The five tables of the classic study as neutral tables, and table 6
//! (engines side by side, [`super::fastest`]) when two engines ran.

use super::axes::{axis_cells, AXIS_HEADERS};
use super::format::{format_rate, notes_of};
use super::{median_of, TunnelReport, TunnelRow};
use crate::report::{ColumnKind, Table};
use crate::scenario::names::Named;
use crate::scenario::tunnel::RowEngine;
use crate::scenario::CpuFeatures;

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

/// The five tables of the timed study.
fn timed_tables(report: &TunnelReport) -> Vec<Table> {
    let mut tables = Vec::new();
    let rows: Vec<Vec<String>> = report
        .compression_effect
        .iter()
        .map(|c| {
            vec![
                c.engine.to_string(),
                format!("{} {} B", c.payload.id(), c.payload_bytes),
                c.compression.id().to_string(),
                c.pairs.to_string(),
                format!("{:.3}", c.ratio.mean),
                format!("{:.3}", c.ratio.stdev),
                format!("{:.3}", c.ratio.median),
                format!("{:.3}", c.ratio.min),
                format!("{:.3}", c.ratio.max),
            ]
        })
        .collect();
    let mut table = Table::new(
        &[
            "engine",
            "payload",
            "compression",
            "pairs",
            "avg",
            "stdev",
            "median",
            "min",
            "max",
        ],
        &[false, false, false, true, true, true, true, true, true],
    )
    .priorities(&[0, 0, 0, 2, 1, 2, 0, 1, 1])
    .mark(&[0], ColumnKind::Axis)
    .titled(
        "1. Effect of compression (throughput with compression / without, same cipher and digest)",
    );
    table.rows = rows;
    table.empty = Some("no compressed and uncompressed pairs measured".to_string());
    tables.push(table);

    for (title, table) in [
        (
            "2. Ciphers normalised to the fastest (uncompressed rows)",
            &report.ciphers,
        ),
        (
            "3. Digests normalised to the fastest (uncompressed CBC and MAC-only rows)",
            &report.digests,
        ),
    ] {
        let rows: Vec<Vec<String>> = table
            .iter()
            .map(|n| {
                vec![
                    n.engine.to_string(),
                    n.name.to_string(),
                    // No same-round pair with the fastest (rows of two
                    // shards combined): no ratio.
                    if n.relative.is_finite() {
                        format!("{:.3}", n.relative)
                    } else {
                        "—".to_string()
                    },
                    format_rate(n.mb_per_s),
                    format_rate(n.send_mb_per_s),
                    format_rate(n.receive_mb_per_s),
                    n.rows.to_string(),
                    notes_of(n.weak, &n.security_notes),
                ]
            })
            .collect();
        let mut drawn = Table::new(
            &[
                "engine",
                "name",
                "× fastest",
                "MB/s",
                "send MB/s",
                "receive MB/s",
                "rows",
                "security",
            ],
            &[false, false, true, true, true, true, true, false],
        )
        .priorities(&[0, 0, 0, 0, 1, 1, 2, 0])
        .mark(&[0], ColumnKind::Axis)
        .mark(&[7], ColumnKind::Notes)
        .titled(title);
        drawn.rows = rows;
        drawn.empty = Some("nothing measured".to_string());
        drawn.notes.push("× fastest: each of the algorithm's rows against the fastest algorithm's row with the same other settings (an AEAD has no digest: then the same compression and payload), as the median of same-round throughput ratios; then the median over those pairs.".to_string());
        tables.push(drawn);
    }

    tables.push(ranking(report));
    let rows: Vec<Vec<String>> = report
        .baselines
        .iter()
        .map(|b| {
            vec![
                b.engine.to_string(),
                format!("{} {} B", b.payload.id(), b.payload_bytes),
                format_rate(b.baseline_mb_per_s),
                format!(
                    "{} ({})",
                    b.fastest_tunnel,
                    format_rate(b.fastest_tunnel_mb_per_s)
                ),
                format!(
                    "{} ({})",
                    b.slowest_tunnel,
                    format_rate(b.slowest_tunnel_mb_per_s)
                ),
                format!("{:.1}", b.baseline_over_fastest),
            ]
        })
        .collect();
    let mut table = Table::new(
        &[
            "engine",
            "payload",
            "no tunnel MB/s",
            "fastest tunnel (MB/s)",
            "slowest tunnel (MB/s)",
            "no tunnel × fastest",
        ],
        &[false, false, true, false, false, true],
    )
    .mark(&[0], ColumnKind::Axis)
    .titled("5. No tunnel against the tunnels");
    table.rows = rows;
    table.empty =
        Some("no baseline row measured; it is added unless --no-baseline-row".to_string());
    table.notes.push("MB/s: payload megabytes per second. In process: per second of the thread's CPU time (CLOCK_THREAD_CPUTIME_ID), one core doing both ends (send = compress, encrypt, authenticate; receive = verify, decrypt, decompress, check).".to_string());
    table.notes.push("Real tunnels (openvpn, wireguard-go): a TCP transfer each way through the tunnel between two network namespaces, per second of wall time (send = A to B, receive = B to A).".to_string());
    table.notes.push("CPU ms/MB (the ranking): CPU milliseconds per MB of payload at the sending and at the receiving end. In process: the thread's CPU time. Real tunnels: the tunnel daemon's process (all its threads, user and system time, the kernel's work in its system calls) at the sending and the receiving end of each transfer; not the transfer's own TCP ends, nor kernel work done outside the daemons; none for the no-tunnel row.".to_string());
    table.notes.push(format!(
        "× baseline: throughput relative to {}, the median of same-round ratios; in-process rows are sampled in interleaved rounds, real tunnels' rows one tunnel at a time.",
        report.baseline.as_deref().unwrap_or("the no-tunnel row of the same payload")
    ));
    tables.push(table);
    tables.extend(super::fastest::table(&report.versus_fastest));
    tables
}

/// Table 4: the first engine's rows by throughput, with another engine's
/// figure for the same row beside it (the same engine's without CPU
/// features when those were measured, else the next engine's); then rows
/// that were not measured.
fn ranking(report: &TunnelReport) -> Table {
    let primary = report.rows.first().map(|r| r.engine);
    let generic_twin = primary.map(|primary| RowEngine {
        cpu_features: CpuFeatures::Generic,
        ..primary
    });
    let engines = || report.rows.iter().map(|r| r.engine);
    let other: Option<RowEngine> = engines()
        .find(|e| Some(*e) == generic_twin && Some(*e) != primary)
        .or_else(|| engines().find(|e| Some(*e) != primary));
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
    let dash = || "—".to_string();
    let mut rows = Vec::new();
    for (rank, row) in measured.iter().enumerate() {
        let total = row.mb_per_s.expect("measured rows have a summary");
        let spread = total.median_ci95.relative_half_width(total.median) * 100.0;
        let mut notes: Vec<String> = Vec::new();
        if !row.precise {
            notes.push("precision not reached in time".to_string());
        }
        notes.push(notes_of(row.weak, &row.security_notes));
        let mut cells = vec![(rank + 1).to_string(), row.engine.to_string()];
        cells.extend(axis_cells(&row.scenario));
        cells.extend([
            format!("{} ±{spread:.1}%", format_rate(total.median)),
            row.send_mb_per_s
                .map(|s| format_rate(s.median))
                .unwrap_or_else(dash),
            row.receive_mb_per_s
                .map(|s| format_rate(s.median))
                .unwrap_or_else(dash),
            row.send_packets_per_s
                .map(|s| format!("{:.0}", s.median))
                .unwrap_or_else(dash),
            match (row.send_cpu_ms_per_mb, row.receive_cpu_ms_per_mb) {
                (Some(send), Some(receive)) => format!(
                    "{} / {}",
                    format_rate(send.median),
                    format_rate(receive.median)
                ),
                _ => dash(),
            },
            row.sample_count.to_string(),
            row.ratio_to_baseline
                .map(|r| format!("{:.3}", r.value))
                .unwrap_or_else(dash),
        ]);
        if let Some(other) = other {
            let twin = report
                .rows
                .iter()
                .find(|r| r.engine == other && r.label == row.label);
            cells.push(match twin {
                Some(twin) => match (twin.mb_per_s, twin.ratio_to_baseline) {
                    (Some(s), Some(r)) => format!("{} (×{:.3})", format_rate(s.median), r.value),
                    (Some(s), None) => format_rate(s.median),
                    _ => twin.status.to_string(),
                },
                None => dash(),
            });
        }
        cells.push(
            notes
                .into_iter()
                .filter(|n| !n.is_empty())
                .collect::<Vec<_>>()
                .join("; "),
        );
        rows.push(cells);
    }
    let other_header = other.map(|e| format!("{e} MB/s (× baseline)"));
    let mut headers = vec!["rank", "engine"];
    headers.extend(AXIS_HEADERS);
    headers.extend([
        "MB/s (median ±95% CI)",
        "send MB/s",
        "receive MB/s",
        "send packets/s",
        "CPU ms/MB send / receive",
        "n",
        "× baseline",
    ]);
    let mut numeric = vec![true, false];
    numeric.extend([false; AXIS_HEADERS.len()]);
    numeric.extend([true, true, true, true, true, true, true]);
    let mut priority = vec![0; 2 + AXIS_HEADERS.len()];
    priority.extend([0, 1, 1, 3, 1, 2, 0]);
    if let Some(header) = &other_header {
        headers.push(header);
        numeric.push(true);
        priority.push(1);
    }
    headers.push("notes");
    numeric.push(false);
    priority.push(0);
    let mut table = Table::new(&headers, &numeric)
        .priorities(&priority)
        .mark(
            &(1..2 + AXIS_HEADERS.len()).collect::<Vec<_>>(),
            ColumnKind::Axis,
        )
        .mark(&[headers.len() - 1], ColumnKind::Notes)
        .titled("4. Ranking of every combination (fastest first)");
    table.rows = rows;
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
