//! The speed charts: MB/s per buffer size for ciphers, hashes and MACs, and
//! µs per operation for public-key rows, each with the 95% interval.

use super::{Bar, Figure, Layout};
use crate::report::speed::SpeedReportRow;
use crate::scenario::Named;

fn name(row: &SpeedReportRow, one_backend: bool) -> String {
    let algorithm = format!("{} {}", row.row.primitive.name(), row.row.operation.id());
    if one_backend {
        algorithm
    } else {
        format!("{} · {algorithm}", row.subject)
    }
}

fn reason(row: &SpeedReportRow) -> String {
    match &row.reason {
        Some(reason) => format!("{}: {reason}", row.status),
        None => row.status.to_string(),
    }
}

/// The charts of a speed report's rows.
pub fn figures(rows: &[SpeedReportRow]) -> Vec<Figure> {
    let one_backend = rows.windows(2).all(|w| w[0].subject == w[1].subject);
    let mut figures = Vec::new();

    // Symmetric rows: one bar per algorithm, one series per buffer size.
    let mut sizes: Vec<usize> = rows.iter().filter_map(|r| r.row.size_bytes).collect();
    sizes.sort_unstable();
    sizes.dedup();
    if !sizes.is_empty() {
        let mut names: Vec<String> = Vec::new();
        for row in rows.iter().filter(|r| r.row.size_bytes.is_some()) {
            let name = name(row, one_backend);
            if !names.contains(&name) {
                names.push(name);
            }
        }
        let bars = names
            .iter()
            .map(|name_of_bar| {
                let of_size = |size: usize| {
                    rows.iter().find(|r| {
                        r.row.size_bytes == Some(size) && name(r, one_backend) == *name_of_bar
                    })
                };
                let values: Vec<Option<f64>> = sizes
                    .iter()
                    .map(|s| of_size(*s).and_then(|r| r.megabytes_per_second))
                    .collect();
                if values.iter().all(Option::is_none) {
                    let first = sizes.iter().find_map(|s| of_size(*s));
                    return Bar::missing(
                        name_of_bar.clone(),
                        sizes.len(),
                        first.map(reason).unwrap_or_default(),
                    );
                }
                // MB/s is size over time: the time's interval, inverted.
                let intervals = sizes
                    .iter()
                    .map(|size| {
                        let summary = of_size(*size)?.ns_per_op?;
                        let rate = |ns: f64| *size as f64 * 1e3 / ns;
                        Some((
                            rate(summary.median_ci95.high),
                            rate(summary.median_ci95.low),
                        ))
                    })
                    .collect();
                Bar {
                    intervals,
                    ..Bar::new(name_of_bar.clone(), values)
                }
            })
            .collect();
        figures.push(Figure {
            id: "speed_throughput".to_string(),
            title: "Symmetric primitives: throughput per buffer size".to_string(),
            axis: "MB/s (10^6 bytes per second), median".to_string(),
            series: sizes.iter().map(|s| format!("{s} B")).collect(),
            layout: Layout::Grouped,
            bars,
            reference: None,
            notes: vec!["Bars: the median rate; whiskers: the 95% interval of the median time per operation, as a rate.".to_string()],
        });
    }

    // Public-key rows: time per operation.
    let asymmetric: Vec<&SpeedReportRow> =
        rows.iter().filter(|r| r.row.size_bytes.is_none()).collect();
    if !asymmetric.is_empty() {
        let bars = asymmetric
            .iter()
            .map(|row| match row.ns_per_op {
                Some(s) => Bar {
                    intervals: vec![Some((s.median_ci95.low / 1e3, s.median_ci95.high / 1e3))],
                    ..Bar::new(name(row, one_backend), vec![Some(s.median / 1e3)])
                },
                None => Bar::missing(name(row, one_backend), 1, reason(row)),
            })
            .collect();
        figures.push(Figure {
            id: "speed_operations".to_string(),
            title: "Public-key operations: time per operation".to_string(),
            axis: "µs per operation, median".to_string(),
            series: vec!["µs/op".to_string()],
            layout: Layout::Grouped,
            bars,
            reference: None,
            notes: vec!["Bars: the median time per operation; whiskers: its 95% interval (order statistics).".to_string()],
        });
    }
    figures
}
