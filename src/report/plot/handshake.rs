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
    let one_backend = rows.windows(2).all(|w| w[0].backend == w[1].backend);
    let label = |row: &Row| row_label(&row.backend, &row.description, one_backend);
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
    if let Some(baseline) = baseline {
        if rows.iter().any(|r| r.ratio_to_baseline.is_some()) {
            let bars = rows
                .iter()
                .map(|row| match &row.ratio_to_baseline {
                    Some(ratio) => Bar {
                        intervals: vec![Some((ratio.ci95.low, ratio.ci95.high))],
                        weak: row.weak,
                        ..Bar::new(label(row), vec![Some(ratio.value)])
                    },
                    None => missing(row, label(row), 1),
                })
                .collect();
            figures.push(Figure {
                id: "handshake_ratio".to_string(),
                title: format!("Handshake CPU time (client + server) relative to {baseline}"),
                axis: "× baseline (CPU time ratio, same-round pairs)".to_string(),
                series: vec!["× baseline".to_string()],
                layout: Layout::Grouped,
                bars,
                reference: Some((1.0, "baseline = 1".to_string())),
                notes: vec![
                    "Bars: the median of same-round ratios to the baseline row; whiskers: the 95% interval of that median.".to_string(),
                ],
            });
        }
    }
    figures
}
