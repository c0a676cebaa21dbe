//! Fitting a terminal table to a width. Each step keeps every figure a
//! person needs and moves the rest where it still reads:
//!
//! 1. an axis column with the same value in every row is said once above
//!    the table ("Every row: protocol TLS 1.3, suite aes-128-gcm");
//! 2. notes become numbered footnotes under the table, one per distinct
//!    text, shared by every row that has it (short ones such as "WEAK"
//!    stay); a notes column without a note goes;
//! 3. headers wrap onto several lines at their spaces;
//! 4. columns drop out by priority, the highest number first (0 never
//!    drops), and the table says which; a text column that fits when
//!    wrapped to 24 characters or more wraps instead;
//! 5. text columns narrow and their cells wrap over several lines;
//! 6. as a last resort a line still too long is cut with "…".
//!
//! Markdown, CSV, JSON and a table without a width keep every field.

use super::markup::{pad, width as text_width};
use super::{ColumnKind, Table};

/// Spaces between two columns.
const GAP: usize = 2;
/// A note this short stays in its cell ("WEAK"); longer ones become footnotes.
const INLINE_NOTE_CHARS: usize = 8;
/// The narrowest a droppable text column is wrapped to rather than dropped.
const WRAPPED_TEXT_WIDTH: usize = 24;
/// The narrowest a text column is made before lines are cut.
const MIN_TEXT_WIDTH: usize = 6;

/// The parts of a word that a line may end between: after each hyphen
/// or underscore ("chacha20-", "poly1305"; "client_", "exchange").
fn hyphen_parts(word: &str) -> impl Iterator<Item = &str> {
    word.split_inclusive(['-', '_'])
}

/// The widest part of `text` that cannot be wrapped further without
/// breaking a word: its longest word, or with `at_hyphens` its longest
/// hyphen-joined part.
fn longest_unbreakable(text: &str, at_hyphens: bool) -> usize {
    text.split(' ')
        .map(|word| {
            if at_hyphens {
                hyphen_parts(word).map(text_width).max().unwrap_or(0)
            } else {
                text_width(word)
            }
        })
        .max()
        .unwrap_or(0)
}

/// Splits text into lines of at most `width` characters at its spaces; a
/// word longer than the width is cut after a hyphen or an underscore if it
/// has one that fits ("chacha20-" / "poly1305"), and only else broken.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let mut word: Vec<char> = word.chars().collect();
        while word.len() > width {
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            let cut = word[..width]
                .iter()
                .rposition(|&c| c == '-' || c == '_')
                .map_or(width, |hyphen| hyphen + 1);
            lines.push(word.drain(..cut).collect());
        }
        let word: String = word.into_iter().collect();
        if line.is_empty() {
            line = word;
        } else if text_width(&line) + 1 + text_width(&word) <= width {
            line.push(' ');
            line.push_str(&word);
        } else {
            lines.push(std::mem::replace(&mut line, word));
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// A line of prose wrapped to `width`; its leading spaces, or a leading
/// footnote number such as `[3] `, indent the lines that follow.
pub fn wrap_line(line: &str, width: usize) -> Vec<String> {
    if text_width(line) <= width {
        return vec![line.to_string()];
    }
    let body = line.trim_start();
    let mut indent = text_width(line) - text_width(body);
    if body.starts_with('[') {
        if let Some(end) = body.find("] ") {
            indent += text_width(&body[..end + 2]);
        }
    }
    let indent = indent.min(width / 2);
    let (first, rest) = line.split_at(
        line.char_indices()
            .nth(indent)
            .map_or(line.len(), |(i, _)| i),
    );
    wrap(rest, width - indent)
        .into_iter()
        .enumerate()
        .map(|(i, text)| {
            if i == 0 {
                format!("{first}{text}")
            } else {
                format!("{}{text}", " ".repeat(indent))
            }
        })
        .collect()
}

/// A notes cell with its long notes replaced by footnote numbers, adding
/// each new text to `footnotes`.
fn footnoted(cell: &str, footnotes: &mut Vec<String>) -> String {
    let mut inline: Vec<&str> = Vec::new();
    let mut numbers: Vec<usize> = Vec::new();
    for note in cell.split("; ").map(str::trim).filter(|n| !n.is_empty()) {
        if text_width(note) <= INLINE_NOTE_CHARS {
            inline.push(note);
            continue;
        }
        let number = match footnotes.iter().position(|f| f == note) {
            Some(i) => i + 1,
            None => {
                footnotes.push(note.to_string());
                footnotes.len()
            }
        };
        if !numbers.contains(&number) {
            numbers.push(number);
        }
    }
    numbers.sort_unstable();
    let mut cell = inline.join(" ");
    if !numbers.is_empty() {
        let numbers: Vec<String> = numbers.iter().map(usize::to_string).collect();
        if !cell.is_empty() {
            cell.push(' ');
        }
        cell.push_str(&format!("[{}]", numbers.join(",")));
    }
    cell
}

/// The width of a set of columns drawn side by side.
fn total(widths: &[usize], shown: &[usize]) -> usize {
    let sum: usize = shown.iter().map(|&c| widths[c]).sum();
    sum + GAP * shown.len().saturating_sub(1)
}

/// A line cut to `width` characters, ending in "…" when cut.
fn cut(line: String, width: usize) -> String {
    if text_width(&line) <= width {
        return line;
    }
    let mut kept: String = line.chars().take(width.saturating_sub(1)).collect();
    kept.push('…');
    kept
}

/// The table drawn within `width` columns: what is said once above it, the
/// grid, the footnotes, what was left out and the table's notes.
pub fn fitted(table: &Table, width: usize) -> String {
    let mut fitting = Fitting {
        table,
        width,
        rows: table.rows.clone(),
        shown: (0..table.columns.len()).collect(),
        widths: Vec::new(),
    };
    let every_row = fitting.fold_constant_axes();
    fitting.hide_empty_notes_columns();
    let footnotes = fitting.footnote_notes();
    fitting.widths = fitting.natural_widths();
    let dropped = fitting.drop_or_wrap_columns();
    fitting.narrow_text_columns();

    let mut out = String::new();
    if !every_row.is_empty() {
        for line in wrap_line(&format!("Every row: {}.", every_row.join(", ")), width) {
            out.push_str(&line);
            out.push('\n');
        }
        out.push('\n');
    }
    fitting.draw_grid(&mut out);
    let mut below: Vec<String> = footnotes
        .iter()
        .enumerate()
        .map(|(i, text)| format!("[{}] {text}", i + 1))
        .collect();
    if !dropped.is_empty() {
        below.push(format!(
            "Not shown at {width} columns: {} (--wide or an export shows every column).",
            dropped.join(", ")
        ));
    }
    below.extend(table.notes.iter().cloned());
    if !below.is_empty() {
        out.push('\n');
        for line in below {
            for wrapped in wrap_line(&line, width) {
                out.push_str(&cut(wrapped, width));
                out.push('\n');
            }
        }
    }
    out
}

/// A table being fitted to a width, one step of the module's list per
/// method, in order.
struct Fitting<'t> {
    table: &'t Table,
    /// The terminal's width in characters.
    width: usize,
    /// The table's rows, notes cells footnoted.
    rows: Vec<Vec<String>>,
    /// The columns still drawn, in the table's order.
    shown: Vec<usize>,
    /// Each column's width in characters (indexed by column, shown or not).
    widths: Vec<usize>,
}

impl Fitting<'_> {
    /// The width of one column's widest cell.
    fn cell_width(&self, column: usize) -> usize {
        self.rows
            .iter()
            .map(|r| text_width(&r[column]))
            .max()
            .unwrap_or(0)
    }

    /// The longest part of a column (header included) a line cannot break:
    /// a word, or with `at_hyphens` a part between hyphens and underscores.
    fn longest_in_column(&self, column: usize, at_hyphens: bool) -> usize {
        self.rows
            .iter()
            .map(|r| longest_unbreakable(&r[column], at_hyphens))
            .chain([longest_unbreakable(
                &self.table.columns[column].header,
                at_hyphens,
            )])
            .max()
            .unwrap_or(0)
    }

    /// Step 1: hides each axis column with the same value in every row and
    /// returns them as "header value", to be said above the table. A single
    /// row's axes go there too when the row is wider than the terminal.
    fn fold_constant_axes(&mut self) -> Vec<String> {
        let (table, rows) = (self.table, &self.rows);
        let columns = table.columns.len();
        let too_wide = || {
            let widths: Vec<usize> = (0..columns)
                .map(|c| {
                    self.cell_width(c)
                        .max(longest_unbreakable(&table.columns[c].header, false))
                })
                .collect();
            total(&widths, &self.shown) > self.width
        };
        let mut every_row = Vec::new();
        if rows.len() >= 2 || (rows.len() == 1 && too_wide()) {
            let mut shown = std::mem::take(&mut self.shown);
            shown.retain(|&c| {
                let first = &rows[0][c];
                let constant = rows.iter().all(|r| &r[c] == first);
                if table.columns[c].kind == ColumnKind::Axis && constant {
                    every_row.push(format!("{} {first}", table.columns[c].header));
                    false
                } else {
                    true
                }
            });
            self.shown = shown;
        }
        every_row
    }

    /// A notes column with no note in any row says nothing: hides it.
    fn hide_empty_notes_columns(&mut self) {
        let (table, rows) = (self.table, &self.rows);
        self.shown.retain(|&c| {
            table.columns[c].kind != ColumnKind::Notes || rows.iter().any(|r| !r[c].is_empty())
        });
    }

    /// Step 2: replaces long notes by footnote numbers; returns the
    /// footnotes' texts, numbered from 1 in order.
    fn footnote_notes(&mut self) -> Vec<String> {
        let table = self.table;
        let mut footnotes = Vec::new();
        for row in &mut self.rows {
            for c in
                (0..table.columns.len()).filter(|&c| table.columns[c].kind == ColumnKind::Notes)
            {
                row[c] = footnoted(&row[c], &mut footnotes);
            }
        }
        footnotes
    }

    /// Step 3: each column as wide as its widest cell and header, or, when
    /// that is too wide, as its header's longest word (headers wrap).
    fn natural_widths(&self) -> Vec<usize> {
        let columns = &self.table.columns;
        let widths: Vec<usize> = (0..columns.len())
            .map(|c| self.cell_width(c).max(text_width(&columns[c].header)))
            .collect();
        if total(&widths, &self.shown) <= self.width {
            return widths;
        }
        (0..columns.len())
            .map(|c| {
                self.cell_width(c)
                    .max(longest_unbreakable(&columns[c].header, false))
            })
            .collect()
    }

    /// Step 4: while too wide, drops the column of the highest priority
    /// number (the rightmost of equals; 0 never drops), unless it is text
    /// that narrowing to no less than [`WRAPPED_TEXT_WIDTH`] characters is
    /// enough for: it stays, wrapped. Returns the dropped columns' headers.
    fn drop_or_wrap_columns(&mut self) -> Vec<String> {
        let table = self.table;
        let mut dropped = Vec::new();
        while total(&self.widths, &self.shown) > self.width {
            let Some(position) = self
                .shown
                .iter()
                .enumerate()
                .filter(|(_, &c)| table.columns[c].priority > 0)
                .max_by_key(|(position, &c)| (table.columns[c].priority, *position))
                .map(|(position, _)| position)
            else {
                break;
            };
            let column = self.shown[position];
            let narrowed =
                self.widths[column].saturating_sub(total(&self.widths, &self.shown) - self.width);
            if !table.columns[column].is_numeric()
                && narrowed >= WRAPPED_TEXT_WIDTH.max(self.longest_in_column(column, false))
            {
                self.widths[column] = narrowed;
                break;
            }
            dropped.push(table.columns[self.shown.remove(position)].header.clone());
        }
        dropped
    }

    /// Step 5: text columns narrow, the widest first, down to their longest
    /// word (cells wrap at spaces), then to their longest part between
    /// hyphens and underscores (a name such as "chacha20-poly1305" wraps
    /// after its hyphen), and only then further (words break).
    fn narrow_text_columns(&mut self) {
        let columns = self.table.columns.len();
        for floor in [
            (0..columns)
                .map(|c| self.longest_in_column(c, false).max(MIN_TEXT_WIDTH))
                .collect::<Vec<_>>(),
            (0..columns)
                .map(|c| self.longest_in_column(c, true).max(MIN_TEXT_WIDTH))
                .collect::<Vec<_>>(),
            vec![MIN_TEXT_WIDTH; columns],
        ] {
            while total(&self.widths, &self.shown) > self.width {
                let Some(&widest) = self
                    .shown
                    .iter()
                    .filter(|&&c| !self.table.columns[c].is_numeric() && self.widths[c] > floor[c])
                    .max_by_key(|&&c| self.widths[c])
                else {
                    break;
                };
                self.widths[widest] -= 1;
            }
        }
    }

    /// The headers, a rule and the rows, in the shown columns at their
    /// widths; a line still too long is cut (step 6).
    fn draw_grid(&self, out: &mut String) {
        let headers: Vec<String> = self
            .shown
            .iter()
            .map(|&c| self.table.columns[c].header.clone())
            .collect();
        self.draw_line(&headers, out);
        let rule: Vec<String> = self
            .shown
            .iter()
            .map(|&c| "─".repeat(self.widths[c]))
            .collect();
        out.push_str(&cut(rule.join(&" ".repeat(GAP)), self.width));
        out.push('\n');
        for row in &self.rows {
            let cells: Vec<String> = self.shown.iter().map(|&c| row[c].clone()).collect();
            self.draw_line(&cells, out);
        }
    }

    /// One row of the grid (`cells` of the shown columns), its cells
    /// wrapped to their columns' widths over as many lines as it takes.
    fn draw_line(&self, cells: &[String], out: &mut String) {
        let wrapped: Vec<Vec<String>> = self
            .shown
            .iter()
            .zip(cells)
            .map(|(&c, cell)| wrap(cell, self.widths[c]))
            .collect();
        let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
        for line in 0..height {
            let parts: Vec<String> = self
                .shown
                .iter()
                .zip(&wrapped)
                .map(|(&c, lines)| {
                    let text = lines.get(line).map(String::as_str).unwrap_or("");
                    pad(text, self.widths[c], self.table.columns[c].is_numeric())
                })
                .collect();
            let line = parts.join(&" ".repeat(GAP)).trim_end().to_string();
            out.push_str(&cut(line, self.width));
            out.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Column;

    fn sample() -> Table {
        let mut table = Table::new(vec![
            Column::text("backend"),
            Column::axis("TLS"),
            Column::axis("group"),
            Column::number("wall µs (median ±95% CI)"),
            Column::number("p99 µs").priority(1),
            Column::notes("notes"),
        ]);
        for (group, notes) in [
            ("X25519", "precision not reached"),
            (
                "DHE-1024",
                "WEAK; precision not reached; 1024-bit DH: about 80-bit security (Logjam), weak",
            ),
            ("P-256", ""),
        ] {
            table.rows.push(vec![
                "rustls-aws-lc".into(),
                "1.2".into(),
                group.into(),
                "1117 ±0.0%".into(),
                "1200".into(),
                notes.into(),
            ]);
        }
        table.notes.push("A note under the table that is long enough to need wrapping at a narrow width, as the real ones are.".into());
        table
    }

    #[test]
    fn wrap_breaks_at_spaces_and_breaks_long_words() {
        assert_eq!(wrap("one two three", 7), ["one two", "three"]);
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap("chacha20-poly1305", 10), ["chacha20-", "poly1305"]);
        assert_eq!(wrap("rustls-aws-lc x", 10), ["rustls-", "aws-lc x"]);
        assert_eq!(wrap("client_exchange", 12), ["client_", "exchange"]);
        assert_eq!(wrap("", 4), [""]);
        assert_eq!(
            wrap_line("[12] a footnote that wraps", 14),
            ["[12] a", "     footnote", "     that", "     wraps"]
        );
    }

    #[test]
    fn a_wide_enough_table_keeps_every_column_and_folds_constant_axes() {
        let out = fitted(&sample(), 200);
        assert!(out.starts_with("Every row: TLS 1.2.\n"), "{out}");
        assert!(out.contains("p99 µs"), "{out}");
        assert!(!out.contains("Not shown"), "{out}");
    }

    #[test]
    fn notes_become_shared_numbered_footnotes() {
        let out = fitted(&sample(), 200);
        // Two rows share "precision not reached": one footnote.
        assert_eq!(out.matches("precision not reached").count(), 1, "{out}");
        assert!(out.contains("[1] precision not reached"), "{out}");
        assert!(out.contains("[2] 1024-bit DH"), "{out}");
        assert!(out.contains("WEAK [1,2]"), "{out}");
    }

    #[test]
    fn narrow_tables_drop_by_priority_then_wrap_and_never_pass_the_width() {
        for width in [30, 40, 50, 80] {
            let out = fitted(&sample(), width);
            for line in out.lines() {
                assert!(text_width(line) <= width, "{width}: {line:?}\n{out}");
            }
            if width < 50 {
                continue; // narrower than the key columns: wrapped and cut, still within the width
            }
            for key in ["rustls-aws-lc", "DHE-1024", "X25519", "P-256", "WEAK [1,2]"] {
                assert!(out.contains(key), "{width}: {key}\n{out}");
            }
        }
        let out = fitted(&sample(), 50);
        assert!(out.contains("Not shown at 50 columns: p99 µs"), "{out}");
    }

    #[test]
    fn one_row_too_wide_says_its_axes_above_it() {
        let mut table = sample();
        table.rows.truncate(1);
        let out = fitted(&table, 40);
        assert!(
            out.starts_with("Every row: TLS 1.2, group X25519.\n"),
            "{out}"
        );
        assert!(out.lines().all(|l| text_width(l) <= 40), "{out}");
        // A row that fits keeps its axes in the table.
        assert!(!fitted(&table, 200).contains("Every row"));
    }

    #[test]
    fn names_wrap_after_a_hyphen_before_a_word_breaks() {
        let mut table = Table::new(vec![
            Column::text("backend"),
            Column::text("suite"),
            Column::number("µs"),
        ]);
        for (backend, suite) in [
            ("rustls-aws-lc", "chacha20-poly1305"),
            ("openssl", "aes-128-gcm"),
        ] {
            table
                .rows
                .push(vec![backend.into(), suite.into(), "245".into()]);
        }
        // backend to "rustls-", suite to "chacha20-", and the figure.
        let out = fitted(&table, 7 + 2 + 9 + 2 + 3);
        assert!(out.lines().all(|l| text_width(l) <= 23), "{out}");
        for piece in ["rustls-", "aws-lc", "chacha20-", "poly1305", "openssl"] {
            assert!(
                out.split_whitespace().any(|w| w == piece),
                "{piece}:\n{out}"
            );
        }
    }

    #[test]
    fn a_long_text_column_wraps_where_it_can_and_drops_where_it_cannot() {
        let mut table = Table::new(vec![
            Column::text("name"),
            Column::text("operations").priority(1),
            Column::number("µs"),
        ]);
        table.rows.push(vec![
            "server".into(),
            "1 key exchange, 1 sign, 3 HKDF-Extract + 18 HKDF-Expand + 2 HMAC".into(),
            "245".into(),
        ]);
        let wrapped = fitted(&table, 50);
        assert!(!wrapped.contains("Not shown"), "{wrapped}");
        assert!(wrapped.contains("HKDF-Extract"), "{wrapped}");
        assert!(wrapped.lines().all(|l| text_width(l) <= 50), "{wrapped}");
        let dropped = fitted(&table, 30);
        assert!(
            dropped.contains("Not shown at 30 columns:\noperations (--wide"),
            "{dropped}"
        );
    }
}
