//! Reports: one view per capability turns stored cells into a neutral
//! [`Document`] (tables of text cells, a record table with every field, and
//! JSON data with the raw samples), and one [`Exporter`] per format draws
//! any document. A view declares each column of its tables once, as a
//! typed [`Column`] beside the function that draws its cell ([`Columns`];
//! a scenario's axes as an [`Axis`] list its tables, `compare` and
//! `recommend` share), and says what its rows measure in `compare`
//! ([`compare::Kind`]). A new capability writes a view, never its own CSV,
//! Markdown or JSON code.

pub mod bulk;
pub mod capacity;
pub mod compare;
pub mod cost;
pub mod fit;
pub mod handshake;
pub mod html;
pub mod load;
pub mod load_servers;
pub mod markup;
pub mod plot;
pub mod probe;
pub mod recommend;
pub(crate) mod records;
pub mod serve;
pub mod speed;
mod table;
pub mod tunnel;

use anyhow::{Context, Result};

use crate::backend::LibraryInfo;
use crate::host::HostInfo;
use crate::stats::Drift;
pub use table::{axis_cells, axis_headers, Align, Axis, Column, ColumnKind, Columns, Table};

/// Where a row's subject stands in the order backends are listed: a
/// listed backend's native rows by its place, every other subject (the
/// mock, a generic-CPU row, a server, the plain rows) after them all, so
/// views sort their rows by it (and then by name).
pub(crate) fn backend_rank(subject: crate::scenario::Subject) -> usize {
    let native = subject.cpu_features() == crate::scenario::CpuFeatures::Native;
    subject
        .backend()
        .filter(|_| native)
        .and_then(|backend| {
            crate::backend::BACKEND_IDS
                .iter()
                .position(|id| *id == crate::scenario::Named::id(backend))
        })
        .unwrap_or(usize::MAX)
}

/// What a view hands the exporters.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// One line on the host and the libraries, drawn first.
    pub heading: String,
    /// The tables a person reads (terminal and Markdown).
    pub tables: Vec<Table>,
    /// One line per row with every field (CSV).
    pub records: Table,
    /// Every row with its statistics and raw samples (JSON).
    pub data: serde_json::Value,
    /// Lines after every table (drift, an incomplete run).
    pub footer: Vec<String>,
    /// The charts (`--plot DIR`, the HTML report).
    pub figures: Vec<plot::Figure>,
}

/// The output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Markdown,
    Csv,
    Json,
}

/// Draws a document in one format.
pub trait Exporter {
    fn export(&self, document: &Document) -> Result<String>;
}

/// Aligned text for a terminal, or Markdown: one layout, two styles. A
/// terminal table with a width is fitted to it (see [`fit`]); without one
/// every column is drawn on one line.
struct Markup {
    style: markup::Style,
    width: Option<usize>,
}

impl Markup {
    /// Lines of prose: each wrapped to the width when there is one.
    fn prose(&self, out: &mut String, text: &str) {
        for line in text.lines() {
            match self.width {
                Some(width) => {
                    for wrapped in fit::wrap_line(line, width) {
                        out.push_str(&wrapped);
                        out.push('\n');
                    }
                }
                None => {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
    }
}

impl Exporter for Markup {
    fn export(&self, document: &Document) -> Result<String> {
        let style = self.style;
        let mut out = String::new();
        match style {
            markup::Style::Terminal => self.prose(&mut out, &document.heading),
            markup::Style::Markdown => out.push_str(&format!("Host: {}\n", document.heading)),
        }
        for table in &document.tables {
            match (&table.title, style) {
                (Some(title), markup::Style::Terminal) => {
                    out.push('\n');
                    self.prose(&mut out, title);
                    out.push('\n');
                }
                (Some(title), markup::Style::Markdown) => {
                    out.push_str(&format!("\n## {title}\n\n"))
                }
                (None, _) => out.push('\n'),
            }
            if table.rows.is_empty() {
                if let Some(empty) = &table.empty {
                    self.prose(&mut out, &format!("({empty})"));
                    continue;
                }
            }
            if let (Some(width), markup::Style::Terminal) = (self.width, style) {
                out.push_str(&fit::fitted(table, width));
                continue;
            }
            out.push_str(&markup::grid(&table.columns, &table.rows, style));
            if !table.notes.is_empty() {
                out.push('\n');
                for note in &table.notes {
                    out.push_str(note);
                    out.push('\n');
                }
            }
        }
        if !document.footer.is_empty() {
            out.push('\n');
            for line in &document.footer {
                self.prose(&mut out, line);
            }
        }
        Ok(out)
    }
}

/// The record table as CSV (RFC 4180 quoting, `\n` between records). Every
/// row must have as many fields as the header: a short or long row is an
/// error, never a shifted column.
struct Csv;

impl Exporter for Csv {
    fn export(&self, document: &Document) -> Result<String> {
        let records = &document.records;
        let mut writer = csv::Writer::from_writer(Vec::new());
        writer.write_record(records.headers())?;
        for (index, row) in records.rows.iter().enumerate() {
            writer.write_record(row).with_context(|| {
                format!(
                    "CSV row {} has {} fields, the header {}",
                    index + 1,
                    row.len(),
                    records.columns.len()
                )
            })?;
        }
        let bytes = writer.into_inner().map_err(|e| e.into_error())?;
        Ok(String::from_utf8(bytes)?)
    }
}

/// The data as pretty JSON.
struct Json;

impl Exporter for Json {
    fn export(&self, document: &Document) -> Result<String> {
        Ok(serde_json::to_string_pretty(&document.data)? + "\n")
    }
}

/// The exporter of a format.
pub fn exporter(format: Format) -> Box<dyn Exporter> {
    match format {
        Format::Table => Box::new(Markup {
            style: markup::Style::Terminal,
            width: None,
        }),
        Format::Markdown => Box::new(Markup {
            style: markup::Style::Markdown,
            width: None,
        }),
        Format::Csv => Box::new(Csv),
        Format::Json => Box::new(Json),
    }
}

impl Document {
    pub fn render(&self, format: Format) -> Result<String> {
        exporter(format).export(self)
    }

    /// The terminal table fitted to `width` columns; `None` draws every
    /// column on one line (as [`Format::Table`]).
    pub fn render_terminal(&self, width: Option<usize>) -> Result<String> {
        Markup {
            style: markup::Style::Terminal,
            width,
        }
        .export(self)
    }
}

/// The heading line: the host and each backend's library.
pub fn heading(host: &HostInfo, libraries: &[LibraryInfo]) -> String {
    let libraries: Vec<String> = libraries
        .iter()
        .map(|l| format!("{}: {} {}", l.subject, l.library, l.version))
        .collect();
    format!(
        "{} ({} cores); {}",
        host.cpu_model,
        host.cores,
        libraries.join("; ")
    )
}

/// What the run's drift and completeness say, for the footer.
pub fn run_notes(drift: Option<&Drift>, precision: Option<f64>, complete: bool) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(drift) = drift {
        lines.push(format!(
            "Machine speed during the run: per-round speed index (each cell's cost over its own median, median over the cells) from {:.3} to {:.3} (10th-90th percentile), {:.3} to {:.3} overall, over {} rounds.",
            drift.p10, drift.p90, drift.min, drift.max, drift.rounds
        ));
        if let Some(precision) = precision {
            if drift.spread() > precision {
                lines.push(format!(
                    "warning: the machine's speed moved by {:.1}% during the run, more than the requested precision ({:.1}%): medians of cells taken at different times would not be comparable to that precision; the ratios above come from same-round pairs, which cancel a shared move.",
                    drift.spread() * 100.0,
                    precision * 100.0
                ));
            }
        }
    }
    if !complete {
        lines.push("This run is incomplete: it was interrupted; the rows above are every cell it had, cells still sampling with the samples they had.".to_string());
    }
    lines
}

/// What other work on the machine did to the ratios, for the footer.
pub fn other_work_note(work: &crate::stats::OtherWork) -> String {
    use crate::stats::{BUSY_CPU, QUIET_CPU};
    let mut line = format!(
        "Other work on this machine (other processes' CPU use, from the kernel's 10 ms counts): at least {BUSY_CPU} CPU during {} of {} rounds, under {QUIET_CPU} CPU during {}.",
        work.busy_rounds, work.rounds, work.quiet_rounds
    );
    match (work.median_shift, work.worst_shift) {
        (Some(median), Some(worst)) => line.push_str(&format!(
            " Ratios to the baseline taken from those two sets of rounds differ by {:.1}% for the median row and {:.1}% at most ({} {} with at least {} pairs in each; sampling noise included).",
            median * 100.0,
            worst * 100.0,
            work.ratios,
            if work.ratios == 1 { "row" } else { "rows" },
            crate::stats::MIN_SIDE_PAIRS
        )),
        _ if work.busy_rounds > 0 => line.push_str(&format!(
            " Too few pairs on one side (fewer than {}) to compare the ratios from the two.",
            crate::stats::MIN_SIDE_PAIRS
        )),
        _ => {}
    }
    line
}

/// The provenance every JSON export starts with.
pub fn provenance_json(
    run_id: Option<i64>,
    complete: bool,
    host: &HostInfo,
    libraries: &[LibraryInfo],
    seed: Option<u64>,
    drift: Option<&Drift>,
) -> serde_json::Value {
    serde_json::json!({
        "tool_version": crate::TOOL_VERSION,
        "run_id": run_id,
        "complete": complete,
        "host": host,
        "libraries": libraries,
        "seed": seed,
        "drift": drift,
    })
}

/// Merges the provenance and a view's own fields into one JSON object.
pub fn json_with(
    mut provenance: serde_json::Value,
    fields: serde_json::Value,
) -> serde_json::Value {
    if let (Some(target), serde_json::Value::Object(source)) = (provenance.as_object_mut(), fields)
    {
        target.extend(source);
    }
    provenance
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A document whose record table has these rows under `headers`.
    fn records(headers: &[&str], rows: Vec<Vec<String>>) -> Document {
        let mut records = Table::records(headers.iter().copied());
        records.rows = rows;
        Document {
            heading: String::new(),
            tables: Vec::new(),
            records,
            data: serde_json::Value::Null,
            footer: Vec::new(),
            figures: Vec::new(),
        }
    }

    /// Issue 19: a carriage return was written bare, so a reader split the
    /// record there. Every awkward field comes back whole from a CSV reader.
    #[test]
    fn issue_19_csv_fields_with_breaks_quotes_and_commas_round_trip() {
        let awkward: Vec<String> = [
            "carriage\rreturn",
            "line\nfeed",
            "both\r\nat once",
            "a \"quoted\" word",
            "a, comma",
            "\r\n\",",
            "",
            " padded ",
            "plain",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let headers: Vec<String> = (0..awkward.len()).map(|i| format!("f{i}")).collect();
        let header_refs: Vec<&str> = headers.iter().map(String::as_str).collect();
        let document = records(&header_refs, vec![awkward.clone(), awkward.clone()]);
        let text = document.render(Format::Csv).unwrap();

        let mut reader = csv::ReaderBuilder::new().from_reader(text.as_bytes());
        let read_headers: Vec<String> = reader
            .headers()
            .unwrap()
            .iter()
            .map(str::to_string)
            .collect();
        assert_eq!(read_headers, headers);
        let rows: Vec<Vec<String>> = reader
            .records()
            .map(|record| record.unwrap().iter().map(str::to_string).collect())
            .collect();
        assert_eq!(rows, vec![awkward.clone(), awkward], "{text:?}");
        assert!(text.contains("\"carriage\rreturn\""), "{text:?}");
    }

    #[test]
    fn a_csv_row_of_the_wrong_length_is_an_error() {
        let document = records(&["a", "b"], vec![vec!["1".into()]]);
        let error = document.render(Format::Csv).unwrap_err();
        assert!(
            format!("{error:#}").contains("CSV row 1 has 1 fields, the header 2"),
            "{error:#}"
        );
    }

    #[test]
    fn plain_csv_is_unquoted_with_one_line_per_record() {
        let document = records(&["label", "mean_us"], vec![vec!["x".into(), "1.5".into()]]);
        assert_eq!(
            document.render(Format::Csv).unwrap(),
            "label,mean_us\nx,1.5\n"
        );
    }
}
