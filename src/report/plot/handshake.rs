//! The handshake charts: each side's CPU time per row with the 95% interval
//! of its median, and each row's cost relative to the baseline row.

use super::{row_label, Bar, Figure, Layout};
use crate::report::handshake::Row;
use crate::stats::Summary;

fn interval(summary: &Option<Summary>) -> Option<(f64, f64)> {
    summary.map(|s| (s.median_ci95.low, s.median_ci95.high))
}

fn missing(row: &Row, label: String, series: usize) -> Bar {
    let reason = match &row.reason {
        Some(reason) => format!("{}: {reason}", row.status),
        None => row.status.to_string(),
    };
    Bar::missing(label, series, reason)
}

/// The charts of a handshake report's rows.
pub fn figures(rows: &[Row], baseline: Option<&str>) -> Vec<Figure> {
    let one_backend = rows.windows(2).all(|w| w[0].subject == w[1].subject);
    let label = |row: &Row| row_label(&row.subject.name(), &row.description, one_backend);
    let cpu_bars = rows
        .iter()
        .map(|row| {
            if row.client_cpu_us.is_none() && row.server_cpu_us.is_none() {
                return missing(row, label(row), 2);
            }
            Bar {
                intervals: vec![interval(&row.client_cpu_us), interval(&row.server_cpu_us)],
                weak: row.weak,
                ..Bar::new(
                    label(row),
                    vec![
                        row.client_cpu_us.map(|s| s.median),
                        row.server_cpu_us.map(|s| s.median),
                    ],
                )
            }
        })
        .collect();
    let timed = rows.iter().any(|r| r.sample_count > 0);
    let counted = rows.iter().any(|r| r.instructions.is_some());
    let mut figures = vec![Figure {
        id: "handshake_cpu".to_string(),
        title: "Handshake CPU time per side".to_string(),
        axis: "CPU time per handshake (µs), median".to_string(),
        series: vec!["client CPU".to_string(), "server CPU".to_string()],
        layout: Layout::Grouped,
        bars: cpu_bars,
        reference: None,
        notes: vec![
            "Bars: the median of each side's thread CPU time inside its library calls; whiskers: the 95% interval of the median (order statistics).".to_string(),
        ],
    }];
    if !timed && (counted || rows.iter().any(|r| r.memory.is_some())) {
        figures.clear();
    }
    figures.extend(counted_figures(rows, &label));
    if let Some(baseline) = baseline.map(crate::scenario::baseline::describe) {
        if rows.iter().any(|r| r.ratio_to_baseline.is_some()) {
            let bars = rows
                .iter()
                .map(|row| match &row.ratio_to_baseline {
                    Some(ratio) => Bar {
                        intervals: vec![Some((ratio.ci95.low, ratio.ci95.high))],
                        weak: row.weak,
                        ..Bar::new(label(row), vec![Some(ratio.value)])
                    },
                    None => match &row.ratio_note {
                        Some(note) => Bar::missing(label(row), 1, note.clone()),
                        None => missing(row, label(row), 1),
                    },
                })
                .collect();
            let (title, axis) = if timed {
                (
                    format!("Handshake CPU time (client + server) relative to {baseline}"),
                    "× baseline (CPU time ratio, same-round pairs)".to_string(),
                )
            } else {
                (
                    format!("Handshake instructions (client + server) relative to {baseline}"),
                    "× baseline (instructions, same-numbered handshakes)".to_string(),
                )
            };
            figures.push(Figure {
                id: "handshake_ratio".to_string(),
                title,
                axis,
                series: vec!["× baseline".to_string()],
                layout: Layout::Grouped,
                bars,
                reference: Some((1.0, "baseline = 1".to_string())),
                notes: vec![
                    "Bars: the median of the ratios to the baseline row; whiskers: the 95% interval of that median.".to_string(),
                ],
            });
        }
    }
    figures
}

/// Each side's instructions and heap bytes per handshake, for the rows
/// that counted them.
fn counted_figures(rows: &[Row], label: &dyn Fn(&Row) -> String) -> Vec<Figure> {
    let mut figures = Vec::new();
    if rows.iter().any(|r| r.instructions.is_some()) {
        let bars = rows
            .iter()
            .map(|row| match &row.instructions {
                Some(counted) if counted.total.is_some() => {
                    let millions = |s: &Option<Summary>| s.map(|s| s.median / 1e6);
                    let range = |s: &Option<Summary>| s.map(|s| (s.min / 1e6, s.max / 1e6));
                    Bar {
                        intervals: vec![range(&counted.client), range(&counted.server)],
                        weak: row.weak,
                        ..Bar::new(
                            label(row),
                            vec![millions(&counted.client), millions(&counted.server)],
                        )
                    }
                }
                _ => missing(row, label(row), 2),
            })
            .collect();
        figures.push(Figure {
            id: "handshake_instructions".to_string(),
            title: "Handshake instructions per side (valgrind)".to_string(),
            axis: "instructions per handshake (millions), median".to_string(),
            series: vec!["client".to_string(), "server".to_string()],
            layout: Layout::Grouped,
            bars,
            reference: None,
            notes: vec![
                "Bars: the median of each side's instructions inside its library calls, counted under callgrind; whiskers: the lowest and highest of the handshakes counted.".to_string(),
            ],
        });
    }
    if rows.iter().any(|r| r.memory.is_some()) {
        let bars = rows
            .iter()
            .map(|row| match &row.memory {
                Some(memory) if memory.client_peak_heap_bytes.is_some() => {
                    let kib = |b: Option<f64>| b.map(|b| b / 1024.0);
                    Bar::new(
                        label(row),
                        vec![
                            kib(memory.client_peak_heap_bytes),
                            kib(memory.server_peak_heap_bytes),
                            kib(memory.client_retained_bytes),
                            kib(memory.server_retained_bytes),
                        ],
                    )
                }
                _ => missing(row, label(row), 4),
            })
            .collect();
        figures.push(Figure {
            id: "handshake_memory".to_string(),
            title: "Heap bytes per side of a handshake".to_string(),
            axis: "KiB".to_string(),
            series: vec![
                "client peak".to_string(),
                "server peak".to_string(),
                "client kept".to_string(),
                "server kept".to_string(),
            ],
            layout: Layout::Grouped,
            bars,
            reference: None,
            notes: vec![
                "Peak: the most bytes a side's allocations held at once during the handshake; kept: what they still held once it was done (the established connection).".to_string(),
            ],
        });
    }
    figures
}
