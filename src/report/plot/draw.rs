//! Draws a [`Figure`] with plotters, as SVG text or a PNG file. The text
//! of a PNG is drawn with DejaVu Sans, embedded in the binary; an SVG names
//! DejaVu Sans, and the font travels with it as CSS data ([`font_face`]):
//! once in the HTML report for all its charts, in every SVG file alone.

use std::path::Path;
use std::sync::Once;

use anyhow::{anyhow, Result};
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{Bar, Figure, Layout, WEAK_NOTE};

/// DejaVu Sans (Bitstream Vera licence; see assets/fonts/LICENSE-DejaVu.txt).
pub(crate) static FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");
/// The family every chart's text names.
pub(crate) const FAMILY: &str = "DejaVu Sans";

/// A CSS `@font-face` rule carrying the embedded font as base64 data, for
/// SVG text (in the HTML report, once for all its charts, and in every
/// SVG file written alone), so no viewer needs the font installed.
pub(crate) fn font_face() -> &'static str {
    static RULE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    RULE.get_or_init(|| {
        format!(
            "@font-face {{ font-family: \"{FAMILY}\"; src: url(data:font/ttf;base64,{}) format(\"truetype\"); }}",
            to_base64(FONT)
        )
    })
}

/// Standard base64 (RFC 4648, with padding), for the embedded font.
fn to_base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Registers the embedded font once: plotters then needs no system font.
fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The font is compiled in: failing to parse it is a build defect.
        if plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_err() {
            panic!("the embedded font does not parse");
        }
    });
}

/// Chart width in pixels.
const WIDTH_PX: u32 = 1100;
const TITLE_PX: u32 = 30;
const LEGEND_PX: u32 = 24;
const NOTE_LINE_PX: u32 = 17;
const AXIS_PX: u32 = 50;
/// Height of a line chart's plotting area.
const LINES_PX: u32 = 420;
/// Longest row label drawn, in characters (longer ones end in "…").
const LABEL_CHARS: usize = 72;

/// Colours of the series, in order (Tableau 10).
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(214, 39, 40),
];
const WEAK_RED: RGBColor = RGBColor(200, 0, 0);

fn colour(series: usize) -> RGBColor {
    PALETTE[series % PALETTE.len()]
}

fn error(e: impl std::fmt::Debug) -> anyhow::Error {
    anyhow!("drawing a chart: {e:?}")
}

fn shorten(label: &str) -> String {
    if label.chars().count() <= LABEL_CHARS {
        label.to_string()
    } else {
        let kept: String = label.chars().take(LABEL_CHARS - 1).collect();
        format!("{kept}…")
    }
}

fn row_label(figure: &Figure, index: usize) -> String {
    let bar = &figure.bars[index];
    let label = shorten(&bar.label);
    if bar.weak {
        format!("WEAK  {label}")
    } else {
        label
    }
}

/// A value with a precision that suits its size.
pub(crate) fn format_value(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 1000.0 {
        format!("{value:.0}")
    } else if magnitude >= 100.0 {
        format!("{value:.1}")
    } else if magnitude >= 1.0 {
        format!("{value:.2}")
    } else {
        format!("{value:.3}")
    }
}

/// A tick of an axis that ends at `x_max`, with as many decimals as its step needs.
fn tick(value: f64, x_max: f64) -> String {
    if x_max >= 20.0 {
        format!("{value:.0}")
    } else if x_max >= 2.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// Rows drawn per bar: a grouped row gives each series its own band.
fn row_px(figure: &Figure) -> u32 {
    match figure.layout {
        Layout::Grouped => (8 + 13 * figure.series.len() as u32).max(22),
        Layout::Stacked | Layout::Lines { .. } => 24,
    }
}

fn notes(figure: &Figure) -> Vec<String> {
    let mut notes = figure.notes.clone();
    if let Some((_, label)) = &figure.reference {
        notes.push(format!("The vertical line marks {label}."));
    }
    if figure.bars.iter().any(|b| b.weak) {
        notes.push(WEAK_NOTE.to_string());
    }
    notes
}

fn size(figure: &Figure) -> (u32, u32) {
    let legend = if figure.series.len() > 1 {
        LEGEND_PX
    } else {
        0
    };
    let body = match figure.layout {
        Layout::Lines { .. } => LINES_PX,
        _ => row_px(figure) * figure.bars.len().max(1) as u32,
    };
    let height =
        TITLE_PX + legend + 20 + body + AXIS_PX + NOTE_LINE_PX * notes(figure).len() as u32 + 10;
    (WIDTH_PX, height)
}

/// The largest value (or interval end, or stack) to fit on the axis.
fn x_max(figure: &Figure) -> f64 {
    let mut max: f64 = figure.reference.as_ref().map_or(0.0, |r| r.0);
    for bar in &figure.bars {
        let values = bar.values.iter().flatten().filter(|v| v.is_finite());
        match figure.layout {
            Layout::Grouped => {
                for value in values {
                    max = max.max(*value);
                }
                for (_, high) in bar.intervals.iter().flatten() {
                    if high.is_finite() {
                        max = max.max(*high);
                    }
                }
            }
            Layout::Stacked => max = max.max(values.sum()),
            Layout::Lines { .. } => max = values.fold(max, |m, v| m.max(*v)),
        }
    }
    if max > 0.0 {
        // Room for the value written after the longest bar.
        max * 1.18
    } else {
        1.0
    }
}

fn text_style(size: f64, colour: RGBColor, pos: Pos) -> TextStyle<'static> {
    TextStyle {
        font: (FAMILY, size).into_font(),
        color: colour.to_backend_color(),
        pos,
    }
}

/// Draws the figure on an area of `size(figure)`.
fn draw_on<DB: DrawingBackend>(figure: &Figure, root: DrawingArea<DB, Shift>) -> Result<()> {
    register_font();
    root.fill(&WHITE).map_err(error)?;
    let (_, height) = size(figure);
    let notes = notes(figure);
    let notes_px = NOTE_LINE_PX * notes.len() as u32 + 10;
    let legend_px = if figure.series.len() > 1 {
        LEGEND_PX
    } else {
        0
    };
    let (head, rest) = root.split_vertically(TITLE_PX + legend_px);
    let (body, foot) = rest.split_vertically(height - TITLE_PX - legend_px - notes_px);

    let left = Pos::new(HPos::Left, VPos::Center);
    head.draw(&Text::new(
        figure.title.clone(),
        (12, 16),
        text_style(17.0, BLACK, left),
    ))
    .map_err(error)?;
    if figure.series.len() > 1 {
        let mut x = 12;
        for (i, name) in figure.series.iter().enumerate() {
            let y = TITLE_PX as i32 + 10;
            head.draw(&Rectangle::new(
                [(x, y - 6), (x + 14, y + 6)],
                colour(i).filled(),
            ))
            .map_err(error)?;
            head.draw(&Text::new(
                name.clone(),
                (x + 20, y),
                text_style(13.0, BLACK, left),
            ))
            .map_err(error)?;
            x += 40 + 8 * name.chars().count() as i32;
        }
    }
    for (i, line) in notes.iter().enumerate() {
        foot.draw(&Text::new(
            line.clone(),
            (12, 8 + (i as u32 * NOTE_LINE_PX) as i32),
            text_style(12.0, RGBColor(60, 60, 60), left),
        ))
        .map_err(error)?;
    }
    match figure.layout {
        Layout::Lines { x_axis } => {
            let points = points(figure);
            let (low, high) = y_span(&points);
            let axes = (x_axis, figure.axis.clone());
            if high / low > 20.0 {
                let axes = (x_axis, format!("{} (log scale)", figure.axis));
                let y = (low / 1.4..high * 1.4).log_scale();
                draw_lines(figure, &points, axes, &body, y)?;
            } else {
                draw_lines(figure, &points, axes, &body, 0.0..high * 1.15)?;
            }
        }
        Layout::Grouped | Layout::Stacked => draw_bars(figure, &body)?,
    }
    root.present().map_err(error)?;
    Ok(())
}

/// The chart bars are drawn on: values along x, one row per bar along y
/// (row i from the top is centred on y = rows - i - 0.5).
type BarChart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A drawn bar's box in chart coordinates (bottom left, top right), kept
/// to hatch it when it is weak.
type BarBox = ((f64, f64), (f64, f64));

/// The bars of a grouped or stacked figure, on the area under its title.
fn draw_bars<DB: DrawingBackend>(figure: &Figure, body: &DrawingArea<DB, Shift>) -> Result<()> {
    let rows = figure.bars.len().max(1);
    let labels: Vec<String> = (0..figure.bars.len())
        .map(|i| row_label(figure, i))
        .collect();
    let label_px = labels
        .iter()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(8, LABEL_CHARS) as u32
        * 7
        + 16;
    let x_max = x_max(figure);
    let mut chart = ChartBuilder::on(body)
        .margin_left(8)
        .margin_right(24)
        .margin_top(6)
        .x_label_area_size(AXIS_PX)
        .y_label_area_size(label_px)
        .build_cartesian_2d(0f64..x_max, 0f64..rows as f64)
        .map_err(error)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc(figure.axis.clone())
        .x_label_formatter(&|x| tick(*x, x_max))
        .label_style((FAMILY, 12))
        .axis_desc_style((FAMILY, 14))
        .max_light_lines(4)
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(215, 215, 215))
        .draw()
        .map_err(error)?;
    draw_row_labels(figure, body, &chart, &labels)?;

    let left = Pos::new(HPos::Left, VPos::Center);
    let mut weak_boxes: Vec<BarBox> = Vec::new();
    for (i, bar) in figure.bars.iter().enumerate() {
        let top = (rows - i) as f64 - 0.12;
        let bottom = (rows - i - 1) as f64 + 0.12;
        if let Some(reason) = &bar.missing {
            chart
                .draw_series([Text::new(
                    shorten(reason),
                    (x_max * 0.005, (top + bottom) / 2.0),
                    text_style(12.0, RGBColor(120, 120, 120), left),
                )])
                .map_err(error)?;
            continue;
        }
        let series = figure.series.len().max(1);
        match figure.layout {
            Layout::Grouped => weak_boxes.extend(draw_grouped_bar(
                &mut chart,
                bar,
                (bottom, top),
                series,
                x_max,
            )?),
            // A line chart is drawn by `draw_lines`, never here.
            Layout::Stacked | Layout::Lines { .. } => {
                weak_boxes.extend(draw_stacked_bar(&mut chart, bar, (bottom, top), x_max)?)
            }
        }
    }
    hatch(&chart, &weak_boxes)?;
    if let Some((x, _)) = &figure.reference {
        let line = ShapeStyle::from(&RGBColor(90, 90, 90)).stroke_width(1);
        chart
            .draw_series([PathElement::new(vec![(*x, 0.0), (*x, rows as f64)], line)])
            .map_err(error)?;
    }
    Ok(())
}

/// Each row's label, right-aligned against the y axis; a weak row's in red.
fn draw_row_labels<DB: DrawingBackend>(
    figure: &Figure,
    body: &DrawingArea<DB, Shift>,
    chart: &BarChart<'_, DB>,
    labels: &[String],
) -> Result<()> {
    let rows = figure.bars.len().max(1);
    let (body_x, body_y) = body.get_base_pixel();
    let label_style = text_style(12.0, BLACK, Pos::new(HPos::Right, VPos::Center));
    let weak_label_style = text_style(12.0, WEAK_RED, Pos::new(HPos::Right, VPos::Center));
    for (i, label) in labels.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(0.0, (rows - i) as f64 - 0.5));
        let style = if figure.bars[i].weak {
            &weak_label_style
        } else {
            &label_style
        };
        body.draw(&Text::new(
            label.clone(),
            (x - body_x - 6, y - body_y),
            style.clone(),
        ))
        .map_err(error)?;
    }
    Ok(())
}

/// The value written after a bar's end.
fn value_style() -> TextStyle<'static> {
    text_style(
        11.0,
        RGBColor(40, 40, 40),
        Pos::new(HPos::Left, VPos::Center),
    )
}

/// The outline of a weak bar.
fn weak_edge() -> ShapeStyle {
    ShapeStyle::from(&WEAK_RED).stroke_width(2)
}

/// One row of a grouped figure between `bottom` and `top`: a band per
/// series, each with its interval's whisker and its value written after
/// it; a weak row's bars pale and outlined. Returns the weak bars' boxes.
fn draw_grouped_bar<DB: DrawingBackend>(
    chart: &mut BarChart<'_, DB>,
    bar: &Bar,
    (bottom, top): (f64, f64),
    series: usize,
    x_max: f64,
) -> Result<Vec<BarBox>> {
    let mut weak_boxes = Vec::new();
    let band = (top - bottom) / series as f64;
    for (s, value) in bar.values.iter().enumerate() {
        let Some(value) = value.filter(|v| v.is_finite()) else {
            continue;
        };
        let high = top - band * s as f64;
        let low = high - band * 0.9;
        let middle = (high + low) / 2.0;
        let fill = if bar.weak {
            colour(s).mix(0.45).filled()
        } else {
            colour(s).filled()
        };
        chart
            .draw_series([Rectangle::new([(0.0, low), (value, high)], fill)])
            .map_err(error)?;
        if bar.weak {
            chart
                .draw_series([Rectangle::new([(0.0, low), (value, high)], weak_edge())])
                .map_err(error)?;
            weak_boxes.push(((0.0, low), (value, high)));
        }
        let mut end = value;
        if let Some((from, to)) = bar.intervals.get(s).copied().flatten() {
            if from.is_finite() && to.is_finite() {
                draw_whisker(chart, (from, to), middle, band * 0.25)?;
                end = end.max(to);
            }
        }
        chart
            .draw_series([Text::new(
                format_value(value),
                (end + x_max * 0.008, middle),
                value_style(),
            )])
            .map_err(error)?;
    }
    Ok(weak_boxes)
}

/// An interval from `from` to `to` at height `middle`, with caps `cap` high
/// either side.
fn draw_whisker<DB: DrawingBackend>(
    chart: &mut BarChart<'_, DB>,
    (from, to): (f64, f64),
    middle: f64,
    cap: f64,
) -> Result<()> {
    let whisker = ShapeStyle::from(&BLACK).stroke_width(1);
    chart
        .draw_series([
            PathElement::new(vec![(from, middle), (to, middle)], whisker),
            PathElement::new(vec![(from, middle - cap), (from, middle + cap)], whisker),
            PathElement::new(vec![(to, middle - cap), (to, middle + cap)], whisker),
        ])
        .map_err(error)?;
    Ok(())
}

/// One row of a stacked figure between `bottom` and `top`: the series'
/// parts end to end and the total written after them; a weak row
/// outlined. Returns the weak bar's box.
fn draw_stacked_bar<DB: DrawingBackend>(
    chart: &mut BarChart<'_, DB>,
    bar: &Bar,
    (bottom, top): (f64, f64),
    x_max: f64,
) -> Result<Option<BarBox>> {
    let mut start = 0.0;
    for (s, value) in bar.values.iter().enumerate() {
        let Some(value) = value.filter(|v| v.is_finite() && *v > 0.0) else {
            continue;
        };
        chart
            .draw_series([Rectangle::new(
                [(start, bottom), (start + value, top)],
                colour(s).filled(),
            )])
            .map_err(error)?;
        start += value;
    }
    let mut weak_box = None;
    if bar.weak {
        chart
            .draw_series([Rectangle::new([(0.0, bottom), (start, top)], weak_edge())])
            .map_err(error)?;
        weak_box = Some(((0.0, bottom), (start, top)));
    }
    chart
        .draw_series([Text::new(
            format_value(start),
            (start + x_max * 0.008, (top + bottom) / 2.0),
            value_style(),
        )])
        .map_err(error)?;
    Ok(weak_box)
}

/// Hatches the weak bars' boxes with 45° lines, so they stand out without
/// colour.
fn hatch<DB: DrawingBackend>(chart: &BarChart<'_, DB>, boxes: &[BarBox]) -> Result<()> {
    let area = chart.plotting_area().strip_coord_spec();
    let (base_x, base_y) = chart.plotting_area().get_base_pixel();
    for (corner_a, corner_b) in boxes {
        let (x0, y1) = chart.backend_coord(corner_a);
        let (x1, y0) = chart.backend_coord(corner_b);
        let (x0, x1, y0, y1) = (x0 - base_x, x1 - base_x, y0 - base_y, y1 - base_y);
        let height = y1 - y0;
        let mut start = x0 - height;
        while start < x1 {
            // The 45° line from (start, y1) up to (start + height, y0), clipped to the box.
            let t_from = (x0 - start).max(0);
            let t_to = (x1 - start).min(height);
            if t_from < t_to {
                area.draw(&PathElement::new(
                    vec![(start + t_from, y1 - t_from), (start + t_to, y1 - t_to)],
                    ShapeStyle::from(&WEAK_RED.mix(0.7)).stroke_width(1),
                ))
                .map_err(error)?;
            }
            start += 7;
        }
    }
    Ok(())
}

/// A line chart's points: (x, the value of each series), in the order of
/// x, without the rows that have no x or were not measured.
fn points(figure: &Figure) -> Vec<(f64, &[Option<f64>])> {
    let mut points: Vec<(f64, &[Option<f64>])> = figure
        .bars
        .iter()
        .filter(|b| b.missing.is_none())
        .filter_map(|b| Some((b.x.filter(|x| x.is_finite())?, b.values.as_slice())))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points
}

/// The smallest and largest positive value of the points (1 and 10 when
/// there is none).
fn y_span(points: &[(f64, &[Option<f64>])]) -> (f64, f64) {
    let values = points
        .iter()
        .flat_map(|(_, values)| values.iter().flatten())
        .filter(|v| v.is_finite() && **v > 0.0);
    let (low, high) = values.fold((f64::INFINITY, 0f64), |(low, high), v| {
        (low.min(*v), high.max(*v))
    });
    if high > 0.0 {
        (low, high)
    } else {
        (1.0, 10.0)
    }
}

/// A line per series through the points, on a vertical axis `y` (linear
/// or logarithmic), each line named at its right end; `axes` are the
/// labels of the horizontal and vertical axes.
fn draw_lines<DB, Y>(
    figure: &Figure,
    points: &[(f64, &[Option<f64>])],
    (x_axis, y_axis): (&str, String),
    body: &DrawingArea<DB, Shift>,
    y: Y,
) -> Result<()>
where
    DB: DrawingBackend,
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let x_max = points.iter().map(|(x, _)| *x).fold(0f64, f64::max);
    let x_max = if x_max > 0.0 { x_max * 1.12 } else { 1.0 };
    let mut chart = ChartBuilder::on(body)
        .margin_left(8)
        .margin_right(24)
        .margin_top(6)
        .x_label_area_size(AXIS_PX)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..x_max, y)
        .map_err(error)?;
    chart
        .configure_mesh()
        .x_desc(x_axis)
        .y_desc(y_axis)
        .x_label_formatter(&|x| tick(*x, x_max))
        .y_label_formatter(&|y| format_value(*y))
        .label_style((FAMILY, 12))
        .axis_desc_style((FAMILY, 14))
        .max_light_lines(4)
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(215, 215, 215))
        .draw()
        .map_err(error)?;
    let label_style = text_style(12.0, BLACK, Pos::new(HPos::Left, VPos::Center));
    for (s, name) in figure.series.iter().enumerate() {
        let line: Vec<(f64, f64)> = points
            .iter()
            .filter_map(|(x, values)| {
                let value = values.get(s).copied().flatten()?;
                (value.is_finite() && value > 0.0).then_some((*x, value))
            })
            .collect();
        let Some(&(last_x, last_y)) = line.last() else {
            continue;
        };
        let style = colour(s).stroke_width(2);
        chart
            .draw_series([PathElement::new(line.clone(), style)])
            .map_err(error)?;
        chart
            .draw_series(
                line.iter()
                    .map(|point| Circle::new(*point, 3, colour(s).filled())),
            )
            .map_err(error)?;
        let (px, py) = chart.backend_coord(&(last_x, last_y));
        let (base_x, base_y) = body.get_base_pixel();
        body.draw(&Text::new(
            name.clone(),
            (px - base_x + 8, py - base_y),
            label_style.clone(),
        ))
        .map_err(error)?;
    }
    Ok(())
}

/// The figure as an SVG document.
pub fn svg(figure: &Figure) -> Result<String> {
    let mut out = String::new();
    {
        let backend = SVGBackend::with_string(&mut out, size(figure));
        draw_on(figure, backend.into_drawing_area())?;
    }
    Ok(out)
}

/// The figure as a PNG file.
pub fn png(figure: &Figure, path: &Path) -> Result<()> {
    let backend = BitMapBackend::new(path, size(figure));
    draw_on(figure, backend.into_drawing_area())
        .map_err(|e| e.context(format!("cannot write {}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::{font_face, to_base64, FONT};

    #[test]
    fn base64_matches_rfc_4648() {
        // The test vectors of RFC 4648, section 10.
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(to_base64(plain.as_bytes()), encoded);
        }
    }

    #[test]
    fn the_css_rule_carries_the_whole_embedded_font() {
        use base64::Engine;
        let rule = font_face();
        let data = rule
            .split("base64,")
            .nth(1)
            .and_then(|rest| rest.split(')').next())
            .expect("a data URL");
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(data)
            .expect("valid base64");
        assert!(
            decoded == FONT,
            "the decoded font differs from the embedded one"
        );
    }
}
