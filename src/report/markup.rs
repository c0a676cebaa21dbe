//! The terminal table and Markdown share one layout: the same columns, cells
//! and alignment, drawn with spaces or with pipes.

use super::Column;

/// How a grid is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Terminal,
    Markdown,
}

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

pub(crate) fn width(text: &str) -> usize {
    text.chars().count()
}

pub(crate) fn pad(text: &str, to: usize, right: bool) -> String {
    let fill = " ".repeat(to.saturating_sub(width(text)));
    if right {
        format!("{fill}{text}")
    } else {
        format!("{text}{fill}")
    }
}

/// Draws a grid of cells under the columns' headers, as aligned text or
/// Markdown, each column aligned as it says.
pub fn grid(columns: &[Column], rows: &[Vec<String>], style: Style) -> String {
    let widths: Vec<usize> = (0..columns.len())
        .map(|i| {
            rows.iter()
                .map(|r| width(&r[i]))
                .chain([width(&columns[i].header)])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |values: &[String]| -> String {
        let padded: Vec<String> = values
            .iter()
            .enumerate()
            .map(|(i, v)| pad(v, widths[i], columns[i].is_numeric()))
            .collect();
        match style {
            Style::Terminal => padded.join("  ").trim_end().to_string(),
            Style::Markdown => format!("| {} |", padded.join(" | ")),
        }
    };
    let mut out = line(&columns.iter().map(|c| c.header.clone()).collect::<Vec<_>>());
    out.push('\n');
    let rule: Vec<String> = widths
        .iter()
        .enumerate()
        .map(|(i, w)| match style {
            Style::Terminal => "─".repeat(*w),
            Style::Markdown if columns[i].is_numeric() => {
                format!("{}:", "-".repeat(w.saturating_sub(1).max(2)))
            }
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
