//! The neutral table every view renders through: typed columns, each a
//! header, an alignment, a priority on a narrow terminal and a part in
//! fitting ([`Column`]), declared once per view beside the function that
//! draws its cell ([`Columns`]); a scenario's axes as columns of their own
//! ([`Axis`]), shared by a view's tables and by `compare` and `recommend`;
//! and the rows of text cells that every exporter draws ([`Table`]).

/// How a column's cells line up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Align {
    /// Names, settings and notes.
    #[default]
    Left,
    /// Figures.
    Right,
}

/// What a column is, for fitting a table to the terminal's width.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ColumnKind {
    /// A figure or a name, drawn as it is.
    #[default]
    Value,
    /// One axis of the scenario (TLS version, group, cipher...): when every
    /// row has the same value the column is said once above the table.
    Axis,
    /// Notes separated by "; ": long ones become numbered footnotes under
    /// the table, one per distinct text, shared by every row that has it.
    Notes,
}

/// One column of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub header: String,
    pub align: Align,
    /// Which goes first when the table is wider than the terminal: 0 never
    /// drops, then the highest number drops first.
    pub priority: u8,
    pub kind: ColumnKind,
}

impl Column {
    /// A column of text (names, settings), left-aligned, that never drops.
    pub fn text(header: impl Into<String>) -> Self {
        Self {
            header: header.into(),
            align: Align::Left,
            priority: 0,
            kind: ColumnKind::Value,
        }
    }

    /// A column of figures, right-aligned, that never drops.
    pub fn number(header: impl Into<String>) -> Self {
        Self {
            align: Align::Right,
            ..Self::text(header)
        }
    }

    /// A text column that is one axis of the scenario ([`ColumnKind::Axis`]).
    pub fn axis(header: impl Into<String>) -> Self {
        Self::text(header).kind(ColumnKind::Axis)
    }

    /// A text column of notes ([`ColumnKind::Notes`]).
    pub fn notes(header: impl Into<String>) -> Self {
        Self::text(header).kind(ColumnKind::Notes)
    }

    /// This column with `priority` on a narrow terminal (see [`Column::priority`]).
    pub fn priority(mut self, priority: u8) -> Self {
        self.priority = priority;
        self
    }

    /// This column with `kind` (see [`ColumnKind`]).
    pub fn kind(mut self, kind: ColumnKind) -> Self {
        self.kind = kind;
        self
    }

    /// Returns true if and only if the column's cells are right-aligned.
    pub fn is_numeric(&self) -> bool {
        self.align == Align::Right
    }
}

/// One axis of a scenario `S` as a column: its header and how a
/// scenario's cell reads. A view declares its scenario's axes once, as a
/// list of these; its tables, `compare` and `recommend` read that list.
pub struct Axis<S> {
    pub header: &'static str,
    pub cell: fn(&S) -> String,
}

/// The headers of `axes`, in their order.
pub const fn axis_headers<S, const N: usize>(axes: &[Axis<S>; N]) -> [&'static str; N] {
    let mut headers = [""; N];
    let mut i = 0;
    while i < N {
        headers[i] = axes[i].header;
        i += 1;
    }
    headers
}

/// A scenario's cells, one per axis of `axes`.
pub fn axis_cells<S>(axes: &[Axis<S>], scenario: &S) -> Vec<String> {
    axes.iter().map(|axis| (axis.cell)(scenario)).collect()
}

/// The function that draws a column's cell from a row.
type Cell<'a, R> = Box<dyn Fn(&R) -> String + 'a>;

/// A table's columns over rows of type `R`: each column declared once,
/// with the function that draws its cell, so that adding a column is one
/// line and no list of headers, alignments or priorities is kept in step
/// with another.
pub struct Columns<'a, R> {
    columns: Vec<(Column, Cell<'a, R>)>,
}

impl<R> Default for Columns<'_, R> {
    fn default() -> Self {
        Self {
            columns: Vec::new(),
        }
    }
}

impl<'a, R> Columns<'a, R> {
    pub fn new() -> Self {
        Self::default()
    }

    /// These columns and `column`, drawn by `cell`.
    pub fn with(mut self, column: Column, cell: impl Fn(&R) -> String + 'a) -> Self {
        self.push(column, cell);
        self
    }

    /// Adds `column`, drawn by `cell`.
    pub fn push(&mut self, column: Column, cell: impl Fn(&R) -> String + 'a) {
        self.columns.push((column, Box::new(cell)));
    }

    /// These columns and one axis column per axis of `axes`, each cell read
    /// from the row's scenario.
    pub fn with_axes<S: 'a>(
        mut self,
        axes: &[Axis<S>],
        scenario: impl Fn(&R) -> &S + Copy + 'a,
    ) -> Self {
        for axis in axes {
            let cell = axis.cell;
            self.push(Column::axis(axis.header), move |row| cell(scenario(row)));
        }
        self
    }

    /// These columns and the columns of `more` after them.
    pub fn with_all(mut self, more: Columns<'a, R>) -> Self {
        self.columns.extend(more.columns);
        self
    }

    /// The table of `rows`, one line each, a cell per column.
    pub fn table<'r>(&self, rows: impl IntoIterator<Item = &'r R>) -> Table
    where
        R: 'r,
    {
        let mut table = Table::new(self.columns.iter().map(|(c, _)| c.clone()).collect());
        table.rows = rows
            .into_iter()
            .map(|row| self.columns.iter().map(|(_, cell)| cell(row)).collect())
            .collect();
        table
    }
}

/// A table of text cells under typed columns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    /// Drawn above the table (a heading in Markdown).
    pub title: Option<String>,
    pub columns: Vec<Column>,
    /// One cell per column in each row.
    pub rows: Vec<Vec<String>>,
    /// Said instead of the table when it has no rows.
    pub empty: Option<String>,
    /// Lines under the table (what a column means, how an interval was obtained).
    pub notes: Vec<String>,
}

impl Table {
    /// A table with these columns and no rows yet.
    pub fn new(columns: Vec<Column>) -> Self {
        Self {
            columns,
            ..Self::default()
        }
    }

    /// A record table (the CSV): text columns with these headers.
    pub fn records<H: Into<String>>(headers: impl IntoIterator<Item = H>) -> Self {
        Self::new(headers.into_iter().map(Column::text).collect())
    }

    /// The columns' headers, in their order.
    pub fn headers(&self) -> Vec<&str> {
        self.columns.iter().map(|c| c.header.as_str()).collect()
    }

    pub fn titled(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Row {
        name: &'static str,
        scenario: (u8, u8),
        value: f64,
    }

    const AXES: [Axis<(u8, u8)>; 2] = [
        Axis {
            header: "first",
            cell: |s| s.0.to_string(),
        },
        Axis {
            header: "second",
            cell: |s| s.1.to_string(),
        },
    ];

    #[test]
    fn each_column_draws_its_own_cell_in_the_order_declared() {
        let rows = [
            Row {
                name: "a",
                scenario: (1, 2),
                value: 0.5,
            },
            Row {
                name: "b",
                scenario: (3, 4),
                value: 1.25,
            },
        ];
        let table = Columns::new()
            .with(Column::text("name"), |r: &Row| r.name.to_string())
            .with_axes(&AXES, |r| &r.scenario)
            .with(Column::number("value").priority(2), |r| r.value.to_string())
            .with(Column::notes("notes"), |_| String::new())
            .table(&rows);
        assert_eq!(
            table.headers(),
            ["name", "first", "second", "value", "notes"]
        );
        assert_eq!(table.rows[1], ["b", "3", "4", "1.25", ""]);
        let kinds: Vec<ColumnKind> = table.columns.iter().map(|c| c.kind).collect();
        use ColumnKind::{Axis as A, Notes as N, Value as V};
        assert_eq!(kinds, [V, A, A, V, N]);
        let numeric: Vec<bool> = table.columns.iter().map(Column::is_numeric).collect();
        assert_eq!(numeric, [false, false, false, true, false]);
        assert_eq!(table.columns[3].priority, 2);
        assert_eq!(axis_headers(&AXES), ["first", "second"]);
        assert_eq!(axis_cells(&AXES, &(5, 6)), ["5", "6"]);
    }
}
