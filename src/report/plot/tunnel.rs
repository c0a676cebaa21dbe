//! The tunnel charts: ciphers and digests normalised to the fastest, and
//! the ranking of every combination by throughput with its 95% interval.

use super::{Bar, Figure, Layout};
use crate::report::tunnel::{Normalised, TunnelRow};

fn normalised(id: &str, title: &str, what: &str, entries: &[Normalised]) -> Option<Figure> {
    if entries.is_empty() {
        return None;
    }
    let one_engine = entries.windows(2).all(|w| w[0].engine == w[1].engine);
    let bars = entries
        .iter()
        .map(|n| {
            let label = super::row_label(&n.engine.name(), n.name, one_engine);
            let bar = if n.relative.is_finite() {
                Bar::new(label, vec![Some(n.relative)])
            } else {
                Bar::missing(
                    label,
                    1,
                    format!(
                        "no row with the fastest {what}'s other settings to compare with ({:.1} MB/s)",
                        n.mb_per_s
                    ),
                )
            };
            Bar { weak: n.weak, ..bar }
        })
        .collect();
    Some(Figure {
        id: id.to_string(),
        title: title.to_string(),
        axis: format!("throughput × the fastest {what} (1 = fastest)"),
        series: vec!["× fastest".to_string()],
        layout: Layout::Grouped,
        bars,
        reference: Some((1.0, "fastest = 1".to_string())),
        notes: vec![format!(
            "Each {what}'s rows against the fastest {what}'s rows with the same other settings: the median of same-round throughput ratios (uncompressed rows)."
        )],
    })
}

/// The charts of a tunnel report.
pub fn figures(rows: &[TunnelRow], ciphers: &[Normalised], digests: &[Normalised]) -> Vec<Figure> {
    let mut figures = Vec::new();
    figures.extend(normalised(
        "tunnel_ciphers",
        "Ciphers normalised to the fastest",
        "cipher",
        ciphers,
    ));
    figures.extend(normalised(
        "tunnel_digests",
        "Digests normalised to the fastest",
        "digest",
        digests,
    ));
    let one_engine = rows.windows(2).all(|w| w[0].engine == w[1].engine);
    let mut measured: Vec<_> = rows
        .iter()
        .filter_map(|r| r.mb_per_s.map(|s| (r, s)))
        .collect();
    measured.sort_by(|a, b| b.1.median.total_cmp(&a.1.median));
    if !measured.is_empty() {
        let bars = measured
            .iter()
            .map(|(row, summary)| Bar {
                intervals: vec![Some((summary.median_ci95.low, summary.median_ci95.high))],
                weak: row.weak,
                ..Bar::new(
                    super::row_label(&row.engine.name(), &row.description, one_engine),
                    vec![Some(summary.median)],
                )
            })
            .collect();
        figures.push(Figure {
            id: "tunnel_ranking".to_string(),
            title: "Every combination by throughput (fastest first)".to_string(),
            axis: "payload MB/s (10^6 bytes per second), median".to_string(),
            series: vec!["MB/s".to_string()],
            layout: Layout::Grouped,
            bars,
            reference: None,
            notes: vec!["Bars: the median throughput (in process: per second of CPU time, one core doing both ends); whiskers: the 95% interval of the median.".to_string()],
        });
    }
    figures
}
