//! Charts: each view describes its charts as neutral [`Figure`]s (bars with
//! their intervals, the series, the unit of the value axis, which rows are
//! weak), and one renderer draws any figure as SVG or PNG with the font
//! embedded in the binary, so a chart looks the same on every host.

mod bulk;
mod capacity;
mod cost;
pub(crate) mod draw;
mod handshake;
mod load;
mod speed;
mod tunnel;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

pub use bulk::figures as bulk_figures;
pub use capacity::figures as capacity_figures;
pub use cost::figures as cost_figures;
pub use draw::{png, svg};
pub use handshake::figures as handshake_figures;
pub use load::figures as load_figures;
pub use speed::figures as speed_figures;
pub use tunnel::figures as tunnel_figures;

/// How a figure's series share a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One bar per series, side by side (client beside server).
    Grouped,
    /// The series stacked into one bar (a breakdown adding up to a total).
    Stacked,
    /// Each bar is a point at its [`Bar::x`] and each series a line through
    /// the points in the order of x; the value axis is vertical and
    /// logarithmic when the values span more than a factor of 20.
    Lines {
        /// The horizontal axis' label, with its unit.
        x_axis: &'static str,
    },
}

/// One row of a bar chart, or one point of every line of a line chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub label: String,
    /// Where the point lies on the horizontal axis ([`Layout::Lines`] only).
    pub x: Option<f64>,
    /// One value per series; `None` where the row has none.
    pub values: Vec<Option<f64>>,
    /// The 95% interval of each value (grouped layout), `(low, high)`.
    pub intervals: Vec<Option<(f64, f64)>>,
    /// Drawn as the tables say it: flagged WEAK.
    pub weak: bool,
    /// Said instead of a bar when the row was not measured ("unsupported: ...").
    pub missing: Option<String>,
}

impl Bar {
    /// A row with one value per series and no intervals.
    pub fn new(label: impl Into<String>, values: Vec<Option<f64>>) -> Self {
        let intervals = vec![None; values.len()];
        Self {
            label: label.into(),
            x: None,
            values,
            intervals,
            weak: false,
            missing: None,
        }
    }

    /// A row that was not measured, with the reason.
    pub fn missing(label: impl Into<String>, series: usize, reason: impl Into<String>) -> Self {
        Self {
            missing: Some(reason.into()),
            ..Self::new(label, vec![None; series])
        }
    }
}

/// A horizontal bar chart: rows top to bottom, values along the x axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// A stable snake_case id: the file's stem (`handshake_cpu.svg`) and the
    /// HTML anchor.
    pub id: String,
    pub title: String,
    /// The value axis' label, with its unit.
    pub axis: String,
    /// The series' names, in the legend's order.
    pub series: Vec<String>,
    pub layout: Layout,
    pub bars: Vec<Bar>,
    /// A vertical line (x, label): 1.0 for ratios.
    pub reference: Option<(f64, String)>,
    /// Lines under the chart: what a bar and a whisker are.
    pub notes: Vec<String>,
}

impl Figure {
    /// True if and only if some bar has a value to draw.
    pub fn has_values(&self) -> bool {
        self.bars
            .iter()
            .any(|b| b.values.iter().any(|v| v.is_some_and(f64::is_finite)))
    }
}

/// The note every chart with weak rows carries.
pub(crate) const WEAK_NOTE: &str =
    "WEAK rows (as flagged in the tables) are hatched, outlined in red and labelled WEAK.";

/// "backend · description", or the description alone when every row has
/// one backend.
pub(crate) fn row_label(backend: &str, description: &str, one_backend: bool) -> String {
    if one_backend {
        description.to_string()
    } else {
        format!("{backend} · {description}")
    }
}

/// An SVG document that carries the embedded font itself (a `<style>`
/// right after the opening `<svg …>` tag), for a file viewed on its own.
fn with_font(svg: &str) -> String {
    match svg
        .find("<svg")
        .and_then(|start| svg[start..].find('>').map(|end| start + end + 1))
    {
        Some(at) => format!(
            "{}<defs><style>{}</style></defs>{}",
            &svg[..at],
            draw::font_face(),
            &svg[at..]
        ),
        None => svg.to_string(),
    }
}

/// Writes each figure as `DIR/<prefix><id>.svg` and `.png`, creating DIR,
/// and returns the files written.
pub fn write_dir(dir: &Path, prefix: &str, figures: &[Figure]) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the plot directory {}", dir.display()))?;
    let mut written = Vec::new();
    for figure in figures.iter().filter(|f| f.has_values()) {
        let stem = format!("{prefix}{}", figure.id);
        let svg_path = dir.join(format!("{stem}.svg"));
        std::fs::write(&svg_path, with_font(&svg(figure)?))
            .with_context(|| format!("cannot write {}", svg_path.display()))?;
        let png_path = dir.join(format!("{stem}.png"));
        png(figure, &png_path)?;
        written.push(svg_path);
        written.push(png_path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text of every `<text>` element of an SVG document.
    pub(crate) fn svg_texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|element| {
                let body = &element[element.find('>')? + 1..];
                Some(body[..body.find("</text>")?].trim().to_string())
            })
            .collect()
    }

    /// How many `<rect>` elements are filled with this colour.
    fn rects_filled(svg: &str, colour: &str) -> usize {
        svg.split("<rect")
            .skip(1)
            .filter(|r| r[..r.find('>').unwrap_or(r.len())].contains(&format!("fill=\"{colour}\"")))
            .count()
    }

    fn figure() -> Figure {
        Figure {
            id: "test_cpu".to_string(),
            title: "Handshake CPU time per side".to_string(),
            axis: "CPU time per handshake (µs)".to_string(),
            series: vec!["client CPU".to_string(), "server CPU".to_string()],
            layout: Layout::Grouped,
            bars: vec![
                Bar {
                    intervals: vec![Some((90.0, 110.0)), Some((180.0, 220.0))],
                    ..Bar::new("ECDHE X25519", vec![Some(100.0), Some(200.0)])
                },
                Bar {
                    weak: true,
                    ..Bar::new("DHE-1024", vec![Some(300.0), Some(900.0)])
                },
                Bar::missing("ECDHE X448", 2, "unsupported: no x448"),
            ],
            reference: None,
            notes: vec!["Bars: medians.".to_string()],
        }
    }

    #[test]
    fn the_svg_holds_one_bar_per_value_and_every_label() {
        let svg = svg(&figure()).unwrap();
        // Two measured rows per series, and the legend's swatch.
        assert_eq!(rects_filled(&svg, "#1F77B4"), 3, "{svg}");
        assert_eq!(rects_filled(&svg, "#FF7F0E"), 3, "{svg}");
        let texts = svg_texts(&svg);
        for expected in [
            "Handshake CPU time per side",
            "CPU time per handshake (µs)",
            "client CPU",
            "server CPU",
            "ECDHE X25519",
            "WEAK  DHE-1024",
            "ECDHE X448",
            "unsupported: no x448",
            "900.0",
            WEAK_NOTE,
        ] {
            assert!(
                texts.iter().any(|t| t == expected),
                "no text '{expected}' in {texts:?}"
            );
        }
    }

    #[test]
    fn a_stacked_bar_adds_its_series() {
        let mut figure = figure();
        figure.layout = Layout::Stacked;
        figure.bars.truncate(1);
        let svg = svg(&figure).unwrap();
        assert!(svg_texts(&svg).iter().any(|t| t == "300.0"), "{svg}");
    }

    #[test]
    fn the_png_is_drawn_with_the_embedded_font() {
        let dir = tempfile::tempdir().unwrap();
        let written = write_dir(dir.path(), "run1_", &[figure()]).unwrap();
        assert_eq!(written.len(), 2);
        let png = std::fs::read(dir.path().join("run1_test_cpu.png")).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        // Text drawn: the PNG holds far more than a blank page would.
        assert!(png.len() > 10_000, "{} bytes", png.len());
    }

    #[test]
    fn a_figure_without_values_is_not_written() {
        let mut figure = figure();
        figure.bars = vec![Bar::missing("x", 2, "unsupported")];
        let dir = tempfile::tempdir().unwrap();
        assert!(write_dir(dir.path(), "", &[figure]).unwrap().is_empty());
    }
}
