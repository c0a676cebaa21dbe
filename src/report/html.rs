//! The HTML report: one self-contained file for one or more runs, with each
//! run's provenance, every table (sortable by clicking a header), every
//! chart as inline SVG, the security notes and the raw-sample counts. The
//! CSS and the small script are inline and a Content-Security-Policy forbids
//! every request, so opening the file never touches the network.

use std::collections::BTreeMap;

use anyhow::Result;

use super::{plot, Document, Table};

/// One run's part of the report.
pub struct RunSection<'a> {
    /// The HTML anchor, e.g. `run-3`.
    pub anchor: String,
    /// The section's heading: "Run 3: handshake, started ..., complete".
    pub title: String,
    /// Name and value, one line each: host, CPU, libraries, command line...
    pub provenance: Vec<(String, String)>,
    /// Long values shown folded: every CPU flag, the stored options.
    pub details: Vec<(String, String)>,
    /// Raw samples per stored cell (row name, count), for views whose data
    /// does not carry the samples themselves (cost).
    pub stored_samples: Vec<(String, usize)>,
    pub document: &'a Document,
}

/// Escapes text for HTML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

const STYLE: &str = r#"
body { font-family: "DejaVu Sans", Verdana, sans-serif; margin: 1.5em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 2px solid #1f77b4; padding-bottom: .2em; margin-top: 2em; }
h3 { margin-top: 1.6em; } nav a { margin-right: 1em; }
table { border-collapse: collapse; margin: .5em 0; font-size: .85em; }
th, td { border: 1px solid #ccc; padding: .25em .5em; vertical-align: top; }
th { background: #eef3f8; text-align: left; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th[aria-sort=ascending]::after { content: " ▲"; }
table.sortable th[aria-sort=descending]::after { content: " ▼"; }
td.number { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.weak td { background: #fdecec; }
.scroll { overflow-x: auto; }
p.note, ul.notes { font-size: .85em; color: #444; }
dl.provenance { display: grid; grid-template-columns: max-content auto; gap: .2em 1em; font-size: .9em; }
dl.provenance dt { font-weight: bold; } dl.provenance dd { margin: 0; font-family: monospace; word-break: break-all; }
details { font-size: .85em; margin: .3em 0; } details pre { white-space: pre-wrap; word-break: break-all; }
figure { margin: 1em 0; } figure svg { max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { font-size: .85em; color: #444; }
"#;

/// Sorting by a header, and a self-check the browser test reads: the counts
/// of charts and tables, of resources fetched (none) and of script errors.
const SCRIPT: &str = r##"
(function () {
  function key(cell, numeric) {
    var text = cell.textContent.trim();
    if (!numeric) return text.toLowerCase();
    var value = parseFloat(text.replace(/^[^0-9.+-]*/, ""));
    return isNaN(value) ? null : value;
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var headers = table.querySelectorAll("thead th");
    headers.forEach(function (header, column) {
      header.addEventListener("click", function () {
        var ascending = header.getAttribute("aria-sort") !== "ascending";
        headers.forEach(function (h) { h.removeAttribute("aria-sort"); });
        header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var numeric = header.dataset.numeric === "true";
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = key(a.cells[column], numeric), y = key(b.cells[column], numeric);
          if (x === y) return 0;
          if (x === null) return 1;
          if (y === null) return -1;
          return (x < y ? -1 : 1) * (ascending ? 1 : -1);
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });
  window.addEventListener("load", function () {
    var root = document.documentElement.dataset;
    // For the tests: "#check-sort" sorts the first table by its first
    // numeric column and records whether the rows came out in order.
    if (location.hash === "#check-sort") {
      var header = document.querySelector("table.sortable th[data-numeric=true]");
      if (header) {
        header.click();
        var table = header.closest("table"), column = header.cellIndex;
        var values = Array.prototype.map.call(table.tBodies[0].rows, function (row) {
          return key(row.cells[column], true);
        }).filter(function (v) { return v !== null; });
        var sorted = values.every(function (v, i) { return i === 0 || values[i - 1] <= v; });
        root.sorted = sorted + ":" + values.length;
      }
    }
    root.charts = document.querySelectorAll("figure svg").length;
    root.tables = document.querySelectorAll("table.sortable").length;
    root.resources = performance.getEntriesByType("resource").length;
    root.errors = window.tlslabErrors.length;
    root.status = "ready";
    // Whether the embedded font was loaded from the file (its status).
    document.fonts.ready.then(function () {
      root.font = "missing";
      document.fonts.forEach(function (face) {
        if (face.family.replace(/"/g, "") === "DejaVu Sans") { root.font = face.status; }
      });
    });
  });
})();
"##;

/// Marks script errors before any other script runs.
const ERROR_HOOK: &str = r#"window.tlslabErrors = [];
window.addEventListener("error", function (e) { window.tlslabErrors.push(String(e.message)); });"#;

fn table_html(table: &Table, out: &mut String) {
    if let Some(title) = &table.title {
        out.push_str(&format!("<h4>{}</h4>\n", escape(title)));
    }
    if table.rows.is_empty() {
        if let Some(empty) = &table.empty {
            out.push_str(&format!("<p class=\"note\">({})</p>\n", escape(empty)));
        }
        return;
    }
    let numeric = |i: usize| table.columns.get(i).is_some_and(|c| c.is_numeric());
    out.push_str("<div class=\"scroll\"><table class=\"sortable\">\n<thead><tr>");
    for column in &table.columns {
        out.push_str(&format!(
            "<th data-numeric=\"{}\" title=\"sort\">{}</th>",
            column.is_numeric(),
            escape(&column.header)
        ));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &table.rows {
        let weak = row.iter().any(|cell| cell.contains("WEAK"));
        out.push_str(if weak { "<tr class=\"weak\">" } else { "<tr>" });
        for (i, cell) in row.iter().enumerate() {
            if numeric(i) {
                out.push_str(&format!("<td class=\"number\">{}</td>", escape(cell)));
            } else {
                out.push_str(&format!("<td>{}</td>", escape(cell)));
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
    if !table.notes.is_empty() {
        out.push_str("<ul class=\"notes\">");
        for note in &table.notes {
            out.push_str(&format!("<li>{}</li>", escape(note)));
        }
        out.push_str("</ul>\n");
    }
}

/// An SVG document as an element of the page: no XML declaration and no
/// namespace URL (HTML knows `<svg>`), so the page names no address at all.
fn inline_svg(svg: &str) -> String {
    let body = match svg.find("<svg") {
        Some(start) => &svg[start..],
        None => svg,
    };
    body.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1)
        .replacen(" xmlns:xlink=\"http://www.w3.org/1999/xlink\"", "", 1)
}

/// The name a JSON row goes by: its label or name, with its backend or engine.
fn row_name(object: &serde_json::Map<String, serde_json::Value>) -> String {
    let text = |key: &str| object.get(key).and_then(|v| v.as_str());
    let name = text("label")
        .or_else(|| text("name"))
        .or_else(|| text("description"))
        .unwrap_or("row");
    match text("backend").or_else(|| text("engine")) {
        Some(owner) => format!("{owner} · {name}"),
        None => name.to_string(),
    }
}

/// Every object of the data that has a field `key`, with its row name.
fn objects_with<'a>(
    value: &'a serde_json::Value,
    key: &str,
    out: &mut Vec<&'a serde_json::Map<String, serde_json::Value>>,
) {
    match value {
        serde_json::Value::Object(object) => {
            if object.contains_key(key) {
                out.push(object);
            }
            for child in object.values() {
                objects_with(child, key, out);
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                objects_with(item, key, out);
            }
        }
        _ => {}
    }
}

/// Security notes: each distinct note once, with the rows it applies to.
fn security_html(data: &serde_json::Value, out: &mut String) {
    let mut objects = Vec::new();
    objects_with(data, "security_notes", &mut objects);
    let mut notes: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut weak: Vec<String> = Vec::new();
    for object in objects {
        let name = row_name(object);
        if object.get("weak").and_then(|w| w.as_bool()) == Some(true) && !weak.contains(&name) {
            weak.push(name.clone());
        }
        for note in object["security_notes"].as_array().into_iter().flatten() {
            if let Some(note) = note.as_str() {
                let rows = notes.entry(note.to_string()).or_default();
                if !rows.contains(&name) {
                    rows.push(name.clone());
                }
            }
        }
    }
    out.push_str("<h3>Security notes</h3>\n");
    if notes.is_empty() && weak.is_empty() {
        out.push_str("<p class=\"note\">No row of this run carries a security note.</p>\n");
        return;
    }
    if !weak.is_empty() {
        out.push_str(&format!(
            "<p><strong>{} row(s) flagged WEAK</strong> (highlighted in the tables, hatched in the charts): {}</p>\n",
            weak.len(),
            escape(&shortlist(&weak))
        ));
    }
    out.push_str("<div class=\"scroll\"><table class=\"sortable\"><thead><tr><th data-numeric=\"false\">note</th><th data-numeric=\"true\">rows</th><th data-numeric=\"false\">for example</th></tr></thead>\n<tbody>\n");
    for (note, rows) in &notes {
        out.push_str(&format!(
            "<tr><td>{}</td><td class=\"number\">{}</td><td>{}</td></tr>\n",
            escape(note),
            rows.len(),
            escape(&shortlist(rows))
        ));
    }
    out.push_str("</tbody></table></div>\n");
}

fn shortlist(names: &[String]) -> String {
    const SHOWN: usize = 6;
    let mut text = names
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if names.len() > SHOWN {
        text.push_str(&format!("; and {} more", names.len() - SHOWN));
    }
    text
}

/// How many raw samples each row rests on, from the data's `samples` arrays.
fn samples_html(data: &serde_json::Value, stored: &[(String, usize)], out: &mut String) {
    let mut objects = Vec::new();
    objects_with(data, "samples", &mut objects);
    let mut counts: Vec<(String, usize)> = objects
        .iter()
        .filter_map(|o| Some((row_name(o), o["samples"].as_array()?.len())))
        .collect();
    if counts.is_empty() {
        counts = stored.to_vec();
    }
    out.push_str("<h3>Raw samples</h3>\n");
    if counts.is_empty() {
        out.push_str("<p class=\"note\">No raw samples stored for this run.</p>\n");
        return;
    }
    let total: usize = counts.iter().map(|(_, n)| n).sum();
    out.push_str(&format!(
        "<p>{total} raw samples in {} rows, every one stored; the statistics above are computed from them.</p>\n",
        counts.len()
    ));
    out.push_str("<details><summary>Samples per row</summary><div class=\"scroll\"><table class=\"sortable\"><thead><tr><th data-numeric=\"false\">row</th><th data-numeric=\"true\">samples</th></tr></thead>\n<tbody>\n");
    for (name, count) in &counts {
        out.push_str(&format!(
            "<tr><td>{}</td><td class=\"number\">{count}</td></tr>\n",
            escape(name)
        ));
    }
    out.push_str("</tbody></table></div></details>\n");
}

fn section_html(section: &RunSection, out: &mut String) -> Result<()> {
    let document = section.document;
    out.push_str(&format!(
        "<section id=\"{}\">\n<h2>{}</h2>\n<p>{}</p>\n",
        escape(&section.anchor),
        escape(&section.title),
        escape(&document.heading)
    ));
    out.push_str("<h3>Provenance</h3>\n<dl class=\"provenance\">\n");
    for (name, value) in &section.provenance {
        out.push_str(&format!(
            "<dt>{}</dt><dd>{}</dd>\n",
            escape(name),
            escape(value)
        ));
    }
    out.push_str("</dl>\n");
    for (name, value) in &section.details {
        out.push_str(&format!(
            "<details><summary>{}</summary><pre>{}</pre></details>\n",
            escape(name),
            escape(value)
        ));
    }
    out.push_str("<h3>Tables</h3>\n");
    for table in &document.tables {
        table_html(table, out);
    }
    if !document.footer.is_empty() {
        for line in &document.footer {
            out.push_str(&format!("<p class=\"note\">{}</p>\n", escape(line)));
        }
    }
    let figures: Vec<&plot::Figure> = document.figures.iter().filter(|f| f.has_values()).collect();
    out.push_str("<h3>Charts</h3>\n");
    if figures.is_empty() {
        out.push_str("<p class=\"note\">Nothing measured to chart.</p>\n");
    }
    for figure in figures {
        out.push_str(&format!(
            "<figure id=\"{}-{}\">\n{}\n<figcaption>{}</figcaption>\n</figure>\n",
            escape(&section.anchor),
            escape(&figure.id),
            inline_svg(&plot::svg(figure)?),
            escape(&figure.title)
        ));
    }
    security_html(&document.data, out);
    samples_html(&document.data, &section.stored_samples, out);
    out.push_str("</section>\n");
    Ok(())
}

/// The whole page for these runs.
pub fn page(title: &str, sections: &[RunSection]) -> Result<String> {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    // Nothing may be fetched: no image, style, script, font or connection
    // other than what the file holds.
    out.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; font-src data:\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str(&format!("<title>{}</title>\n", escape(title)));
    out.push_str(&format!("<script>{ERROR_HOOK}</script>\n"));
    // The charts' font, in the file: their text looks the same on every
    // machine, whatever fonts it has.
    out.push_str(&format!(
        "<style>{}\n{STYLE}</style>\n</head>\n<body>\n",
        super::plot::draw::font_face()
    ));
    out.push_str(&format!("<h1>{}</h1>\n", escape(title)));
    out.push_str(&format!(
        "<p>Made by tlslab {}. Click a table's header to sort by that column.</p>\n",
        escape(crate::TOOL_VERSION)
    ));
    if sections.len() > 1 {
        out.push_str("<nav>");
        for section in sections {
            out.push_str(&format!(
                "<a href=\"#{}\">{}</a>",
                escape(&section.anchor),
                escape(&section.title)
            ));
        }
        out.push_str("</nav>\n");
    }
    for section in sections {
        section_html(section, &mut out)?;
    }
    out.push_str(&format!("<script>{SCRIPT}</script>\n</body>\n</html>\n"));
    Ok(out)
}
