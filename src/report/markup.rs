//! The terminal table and Markdown share one layout: the same columns, cells
//! and alignment, drawn with spaces or with pipes.

use super::{Report, Row};

/// How a grid is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Terminal,
    Markdown,
}

const HEADERS: [&str; 11] = [
    "backend",
    "scenario",
    "handshakes/s",
    "client µs",
    "server µs",
    "wall µs (median ±95% CI)",
    "p99 µs",
    "n",
    "× baseline",
    "quantum-safe",
    "notes",
];
/// Columns whose cells are right-aligned (numbers).
const NUMERIC: [bool; 11] = [
    false, false, true, true, true, true, true, true, true, false, false,
];

/// Microseconds with a precision that suits their size.
pub fn format_us(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

fn cells(row: &Row) -> Vec<String> {
    let mut notes: Vec<String> = Vec::new();
    match row.status {
        "measured" => {}
        status => notes.push(format!(
            "{status}: {}",
            row.reason.clone().unwrap_or_default()
        )),
    }
    if row.weak {
        notes.push("WEAK".to_string());
    }
    if row.status == "measured" && !row.precise {
        notes.push("precision not reached in time".to_string());
    }
    notes.extend(
        row.security_notes
            .iter()
            .filter(|n| !n.contains("quantum-safe"))
            .map(|n| n.to_string()),
    );
    let quantum_safe = match (
        row.scenario.group.kind() == crate::scenario::KxKind::Kem,
        row.scenario.cert.family() == crate::scenario::SignatureFamily::MlDsa,
    ) {
        (true, true) => "kx + signature",
        (true, false) => "kx",
        (false, true) => "signature",
        (false, false) => "no",
    };
    let dash = || "—".to_string();
    let wall = row.wall_us.map(|w| {
        let spread = w.median_ci95.relative_half_width(w.median) * 100.0;
        format!("{} ±{spread:.1}%", format_us(w.median))
    });
    vec![
        row.backend.clone(),
        row.description.clone(),
        row.handshakes_per_second
            .map(|h| format!("{h:.0}"))
            .unwrap_or_else(dash),
        row.client_us
            .map(|s| format_us(s.median))
            .unwrap_or_else(dash),
        row.server_us
            .map(|s| format_us(s.median))
            .unwrap_or_else(dash),
        wall.unwrap_or_else(dash),
        row.wall_us.map(|s| format_us(s.p99)).unwrap_or_else(dash),
        if row.sample_count > 0 {
            row.sample_count.to_string()
        } else {
            dash()
        },
        row.ratio_to_baseline
            .map(|r| format!("{:.2}", r.value))
            .unwrap_or_else(dash),
        quantum_safe.to_string(),
        notes.join("; "),
    ]
}

fn width(text: &str) -> usize {
    text.chars().count()
}

fn pad(text: &str, to: usize, right: bool) -> String {
    let fill = " ".repeat(to.saturating_sub(width(text)));
    if right {
        format!("{fill}{text}")
    } else {
        format!("{text}{fill}")
    }
}

/// Draws a grid of cells with a header row, as aligned text or Markdown.
pub fn grid(headers: &[&str], numeric: &[bool], rows: &[Vec<String>], style: Style) -> String {
    let widths: Vec<usize> = (0..headers.len())
        .map(|i| {
            rows.iter()
                .map(|r| width(&r[i]))
                .chain([width(headers[i])])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |values: &[String]| -> String {
        let padded: Vec<String> = values
            .iter()
            .enumerate()
            .map(|(i, v)| pad(v, widths[i], numeric[i]))
            .collect();
        match style {
            Style::Terminal => padded.join("  ").trim_end().to_string(),
            Style::Markdown => format!("| {} |", padded.join(" | ")),
        }
    };
    let mut out = line(&headers.iter().map(|h| h.to_string()).collect::<Vec<_>>());
    out.push('\n');
    let rule: Vec<String> = widths
        .iter()
        .enumerate()
        .map(|(i, w)| match style {
            Style::Terminal => "─".repeat(*w),
            Style::Markdown if numeric[i] => format!("{}:", "-".repeat(w.saturating_sub(1).max(2))),
            Style::Markdown => "-".repeat((*w).max(3)),
        })
        .collect();
    out.push_str(&match style {
        Style::Terminal => rule.join("  "),
        Style::Markdown => format!("| {} |", rule.join(" | ")),
    });
    out.push('\n');
    for row in rows {
        out.push_str(&line(row));
        out.push('\n');
    }
    out
}

/// Draws the report's rows, with a short heading.
pub fn render(report: &Report, style: Style) -> String {
    let rows: Vec<Vec<String>> = report.rows.iter().map(cells).collect();
    let mut out = String::new();
    let libraries: Vec<String> = report
        .libraries
        .iter()
        .map(|l| format!("{}: {} {}", l.backend, l.library, l.version))
        .collect();
    let heading = format!(
        "{} ({} cores); {}",
        report.host.cpu_model,
        report.host.cores,
        libraries.join("; ")
    );
    match style {
        Style::Terminal => out.push_str(&format!("{heading}\n\n")),
        Style::Markdown => out.push_str(&format!("Host: {heading}\n\n")),
    }
    out.push_str(&grid(&HEADERS, &NUMERIC, &rows, style));
    if let Some(baseline) = &report.baseline {
        out.push_str(&format!(
            "\n× baseline: median wall time relative to {baseline}.\n"
        ));
    }
    if !report.complete {
        out.push_str("\nThis run is incomplete: it was interrupted; the rows above are every cell it finished.\n");
    }
    out
}
