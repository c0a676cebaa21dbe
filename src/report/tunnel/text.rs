//! The five tables drawn as a terminal table or Markdown (one grid
//! drawer, two styles, as the handshake table shares `markup`).

use super::{median_of, TunnelReport, TunnelRow};
use crate::report::markup::{grid, Style};
use crate::scenario::names::Named;
use crate::tunnel::Engine;

/// Throughput with a precision that suits its size.
fn format_rate(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

fn heading(text: &str, style: Style) -> String {
    match style {
        Style::Terminal => format!("\n{text}\n\n"),
        Style::Markdown => format!("\n## {text}\n\n"),
    }
}

fn notes_of(weak: bool, notes: &[&'static str]) -> String {
    let mut all: Vec<&str> = Vec::new();
    if weak {
        all.push("WEAK");
    }
    all.extend(notes.iter().copied());
    all.join("; ")
}

/// Draws the five tables.
pub fn render(report: &TunnelReport, style: Style) -> String {
    let libraries: Vec<String> = report
        .libraries
        .iter()
        .map(|l| format!("{}: {} {}", l.backend, l.library, l.version))
        .collect();
    let mut out = format!(
        "{}{} ({} cores); {}\n",
        if style == Style::Markdown {
            "Host: "
        } else {
            ""
        },
        report.host.cpu_model,
        report.host.cores,
        libraries.join("; ")
    );

    out.push_str(&heading(
        "1. Effect of compression (throughput with compression / without, same cipher and digest)",
        style,
    ));
    let rows: Vec<Vec<String>> = report
        .compression_effect
        .iter()
        .map(|c| {
            vec![
                c.engine.id().to_string(),
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
    if rows.is_empty() {
        out.push_str("(no compressed and uncompressed pairs measured)\n");
    } else {
        out.push_str(&grid(
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
            &rows,
            style,
        ));
    }

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
        out.push_str(&heading(title, style));
        let rows: Vec<Vec<String>> = table
            .iter()
            .map(|n| {
                vec![
                    n.engine.id().to_string(),
                    n.name.to_string(),
                    format!("{:.3}", n.relative),
                    format_rate(n.mb_per_s),
                    format_rate(n.send_mb_per_s),
                    format_rate(n.receive_mb_per_s),
                    n.rows.to_string(),
                    notes_of(n.weak, &n.security_notes),
                ]
            })
            .collect();
        if rows.is_empty() {
            out.push_str("(nothing measured)\n");
        } else {
            out.push_str(&grid(
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
                &rows,
                style,
            ));
        }
    }

    out.push_str(&heading(
        "4. Ranking of every combination (fastest first)",
        style,
    ));
    out.push_str(&ranking(report, style));

    out.push_str(&heading("5. No tunnel against the tunnels", style));
    let rows: Vec<Vec<String>> = report
        .baselines
        .iter()
        .map(|b| {
            vec![
                b.engine.id().to_string(),
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
    if rows.is_empty() {
        out.push_str("(no baseline row measured; it is added unless --no-baseline-row)\n");
    } else {
        out.push_str(&grid(
            &[
                "engine",
                "payload",
                "no tunnel MB/s",
                "fastest tunnel (MB/s)",
                "slowest tunnel (MB/s)",
                "no tunnel × fastest",
            ],
            &[false, false, true, false, false, true],
            &rows,
            style,
        ));
    }
    out.push_str(
        "\nMB/s: payload megabytes per second. In process: one core doing both ends \
         (send = compress, encrypt, authenticate; receive = verify, decrypt, decompress, check).\n\
         OpenVPN: a transfer through the tunnel between two network namespaces (send = A to B, receive = B to A).\n",
    );
    if let Some(baseline) = &report.baseline {
        out.push_str(&format!(
            "× baseline: median MB/s relative to {baseline}.\n"
        ));
    }
    if !report.complete {
        out.push_str("\nThis run is incomplete: it was interrupted; the rows above are every cell it finished.\n");
    }
    out
}

/// Table 4: the first engine's rows by throughput, with the other engine's
/// figure for the same row beside it; then rows that were not measured.
fn ranking(report: &TunnelReport, style: Style) -> String {
    let primary = report.rows.first().map(|r| r.engine);
    let other: Option<Engine> = report
        .rows
        .iter()
        .map(|r| r.engine)
        .find(|e| Some(*e) != primary);
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
        let mut cells = vec![
            (rank + 1).to_string(),
            row.engine.id().to_string(),
            row.description.clone(),
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
            row.sample_count.to_string(),
            row.ratio_to_baseline
                .map(|r| format!("{:.3}", r.value))
                .unwrap_or_else(dash),
        ];
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
    let other_header = other.map(|e| format!("{} MB/s (× baseline)", e.id()));
    let mut headers = vec![
        "rank",
        "engine",
        "scenario",
        "MB/s (median ±95% CI)",
        "send MB/s",
        "receive MB/s",
        "send packets/s",
        "n",
        "× baseline",
    ];
    let mut numeric = vec![true, false, false, true, true, true, true, true, true];
    if let Some(header) = &other_header {
        headers.push(header);
        numeric.push(true);
    }
    headers.push("notes");
    numeric.push(false);
    let mut out = grid(&headers, &numeric, &rows, style);
    let unmeasured: Vec<String> = report
        .rows
        .iter()
        .filter(|r| r.status != "measured")
        .map(|r| {
            format!(
                "{} {}: {} ({})",
                r.engine.id(),
                r.description,
                r.status,
                r.reason.as_deref().unwrap_or("")
            )
        })
        .collect();
    if !unmeasured.is_empty() {
        out.push_str("\nNot measured:\n");
        for line in unmeasured {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out
}
