//! The compare view: two stored runs of one kind row by row on the rows
//! they share (both medians, their ratio with a 95% interval and a
//! verdict), and apart the rows only one run has.
//!
//! Two runs share no rounds, so the same-round pairs the other views use
//! for ratios do not exist here: the ratio of the two medians gets the
//! conservative interval of [`stats::median_ratio`] (an unpaired,
//! distribution-free interval), and the verdict follows from it.

use serde::Serialize;

pub mod kind;
pub use kind::Kind;

use super::markup::format_us;
use super::{Column, Columns, Document, Table};
use crate::backend::LibraryInfo;
use crate::host::HostInfo;
use crate::measure::CellStatus;
use crate::scenario::{Measure, Subject};
use crate::stats::{self, MedianRatio};
use crate::store::RunKind;

/// One row of a stored run, reduced to what a comparison needs.
#[derive(Debug, Clone)]
pub struct Cell {
    /// What the row measured; `None` for a load run's server, which a
    /// run names in words only (a server the user runs has no kind).
    pub subject: Option<Subject>,
    /// The row's subject as the tables write it (a load run's server in
    /// words).
    pub name: String,
    /// The scenario's stable label.
    pub label: String,
    /// The scenario as short cells, one per [`Kind::axis_headers`].
    pub axes: Vec<String>,
    pub status: CellStatus,
    pub reason: Option<String>,
    /// Each sample's cost (time per handshake, operation or byte; lower is better).
    pub costs: Vec<f64>,
    /// True when `costs` are samples the test applies to; false when they
    /// hold one figure without a distribution (a load run's p99), which is
    /// compared without a verdict.
    pub tested: bool,
}

/// What the rows of a `run` kind measure on `measure`, asked of the
/// kind's view: `None` for a kind compare cannot read (capacity) or a
/// figure the kind's rows do not have.
pub fn kind_of(run: RunKind, measure: Measure) -> Option<Kind> {
    match run {
        RunKind::Handshake => Some(super::handshake::compared(measure)),
        RunKind::Speed => super::speed::compared(measure),
        RunKind::Tunnel => super::tunnel::compared(measure),
        RunKind::Bulk => super::bulk::compared(measure),
        RunKind::Cost => super::cost::compared(measure),
        RunKind::Load => super::load::compared(measure),
        RunKind::Capacity => None,
    }
}

/// A stored run ready to compare.
#[derive(Debug, Clone)]
pub struct Run {
    pub id: i64,
    pub started_at: String,
    pub status: crate::store::RunStatus,
    pub host: HostInfo,
    pub libraries: Vec<LibraryInfo>,
    pub cells: Vec<Cell>,
    /// Figures of the run with no distribution to test (a load run's plan
    /// and achieved rates), as (name, value): shown side by side.
    pub figures: Vec<(String, String)>,
}

/// What the comparison says of one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The whole interval of B / A is below 1.
    Faster,
    /// The whole interval of B / A is above 1.
    Slower,
    /// The interval holds 1.
    NoSignificantDifference,
    /// A side has too few samples for a 95% interval (fewer than seven).
    TooFewSamples,
    /// A side was not measured (unsupported or failed).
    NotCompared,
    /// One figure per run, without a distribution: no test applies.
    NotTested,
}

impl Verdict {
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoSignificantDifference => "no significant difference",
            Verdict::TooFewSamples => "too few samples",
            Verdict::NotCompared => "not compared",
            Verdict::NotTested => "not tested (one figure)",
        }
    }
}

/// A row both runs have.
#[derive(Debug, Clone, Serialize)]
pub struct ComparedRow {
    /// Run A's row's subject as drawn; exported as `backend_a`.
    #[serde(rename = "backend_a")]
    pub name_a: String,
    /// Run B's; exported as `backend_b`.
    #[serde(rename = "backend_b")]
    pub name_b: String,
    pub label: String,
    #[serde(skip)]
    pub axes: Vec<String>,
    pub status_a: CellStatus,
    pub status_b: CellStatus,
    pub reason: Option<String>,
    /// B's median cost over A's (above 1: B is slower).
    pub ratio: Option<MedianRatio>,
    pub verdict: Verdict,
    /// True if and only if B is significantly slower and its ratio exceeds
    /// 1 + the threshold: the row fails the gate.
    pub beyond_threshold: bool,
}

/// A row one run has and the other does not.
#[derive(Debug, Clone, Serialize)]
pub struct LoneRow {
    pub run_id: i64,
    /// Its subject as drawn; exported as `backend`.
    #[serde(rename = "backend")]
    pub name: String,
    pub label: String,
    #[serde(skip)]
    pub axes: Vec<String>,
    pub status: CellStatus,
}

/// Two runs compared.
#[derive(Debug, Clone)]
pub struct Comparison {
    pub kind: Kind,
    pub a: Run,
    pub b: Run,
    pub threshold: f64,
    /// True when rows were matched by scenario alone, across two backends.
    pub across_backends: bool,
    pub rows: Vec<ComparedRow>,
    pub lone: Vec<LoneRow>,
}

/// A host as a title names it: its name, and "emulated" when the binary
/// ran under qemu-user (its CPU model says so).
fn host_name(host: &HostInfo) -> String {
    if host.cpu_model.contains("[emulated:") {
        format!("{}, emulated", host.hostname)
    } else {
        host.hostname.clone()
    }
}

/// The backends of a run, in order of first appearance.
fn backends(run: &Run) -> Vec<&str> {
    let mut seen: Vec<&str> = Vec::new();
    for cell in &run.cells {
        if !seen.contains(&cell.name.as_str()) {
            seen.push(&cell.name);
        }
    }
    seen
}

/// The verdict of a ratio: significant only when the interval, of at least
/// 95% coverage, excludes 1.
fn verdict_of(ratio: &MedianRatio) -> Verdict {
    if ratio.coverage < 0.95 {
        Verdict::TooFewSamples
    } else if ratio.ci95.low > 1.0 {
        Verdict::Slower
    } else if ratio.ci95.high < 1.0 {
        Verdict::Faster
    } else {
        Verdict::NoSignificantDifference
    }
}

/// Compares run B with run A row by row. Rows match on backend and
/// scenario; when none match that way and each run has one backend (a run
/// per library), they match on the scenario alone.
pub fn compare(kind: Kind, a: Run, b: Run, threshold: f64) -> Comparison {
    let same_row =
        |x: &Cell, y: &Cell| x.subject == y.subject && x.name == y.name && x.label == y.label;
    let shares_any = a
        .cells
        .iter()
        .any(|x| b.cells.iter().any(|y| same_row(x, y)));
    let across_backends = !shares_any && backends(&a).len() == 1 && backends(&b).len() == 1;
    let matches = |x: &Cell, y: &Cell| {
        if across_backends {
            x.label == y.label
        } else {
            same_row(x, y)
        }
    };
    let mut rows = Vec::new();
    let mut lone = Vec::new();
    for x in &a.cells {
        let Some(y) = b.cells.iter().find(|y| matches(x, y)) else {
            lone.push(LoneRow {
                run_id: a.id,
                name: x.name.clone(),
                label: x.label.clone(),
                axes: x.axes.clone(),
                status: x.status,
            });
            continue;
        };
        let ratio = if kind.counted {
            stats::counted_ratio(&y.costs, &x.costs)
        } else {
            stats::median_ratio(&y.costs, &x.costs)
        };
        let verdict = match &ratio {
            None => Verdict::NotCompared,
            Some(_) if !(x.tested && y.tested) => Verdict::NotTested,
            Some(ratio) => verdict_of(ratio),
        };
        let why = |c: &Cell| {
            let reason = c.reason.as_deref().map(|r| format!(": {r}"));
            format!("{}{}", c.status, reason.unwrap_or_default())
        };
        let reason: Vec<String> = if x.status != CellStatus::Measured
            && (&x.status, &x.reason) == (&y.status, &y.reason)
        {
            vec![why(x)]
        } else {
            [(a.id, x), (b.id, y)]
                .iter()
                .filter(|(_, c)| c.status != CellStatus::Measured)
                .map(|(id, c)| format!("run {id}: {}", why(c)))
                .collect()
        };
        rows.push(ComparedRow {
            name_a: x.name.clone(),
            name_b: y.name.clone(),
            label: x.label.clone(),
            axes: x.axes.clone(),
            status_a: x.status,
            status_b: y.status,
            reason: (!reason.is_empty()).then(|| reason.join("; ")),
            beyond_threshold: verdict == Verdict::Slower
                && ratio.is_some_and(|r| r.value > 1.0 + threshold),
            ratio,
            verdict,
        });
    }
    for y in &b.cells {
        if !a.cells.iter().any(|x| matches(x, y)) {
            lone.push(LoneRow {
                run_id: b.id,
                name: y.name.clone(),
                label: y.label.clone(),
                axes: y.axes.clone(),
                status: y.status,
            });
        }
    }
    Comparison {
        kind,
        a,
        b,
        threshold,
        across_backends,
        rows,
        lone,
    }
}

/// One line on a run: its id, date, host and libraries.
fn describe_run(name: &str, run: &Run) -> String {
    let libraries: Vec<String> = run
        .libraries
        .iter()
        .map(|l| format!("{}: {} {}", l.subject, l.library, l.version))
        .collect();
    format!(
        "{name}: run {} started {} ({}) on {} ({}, {} cores); {}",
        run.id,
        run.started_at,
        run.status,
        run.host.hostname,
        run.host.cpu_model,
        run.host.cores,
        libraries.join("; ")
    )
}

impl Comparison {
    /// The rows in which B is significantly slower beyond the threshold.
    pub fn slower_beyond_threshold(&self) -> usize {
        self.rows.iter().filter(|r| r.beyond_threshold).count()
    }

    /// How many shared rows both runs measured, so that a ratio was taken.
    pub fn compared(&self) -> usize {
        self.rows.iter().filter(|r| r.ratio.is_some()).count()
    }

    /// The shared rows that A measured and B failed, by label and backend.
    pub fn failed_in_b(&self) -> Vec<String> {
        self.rows
            .iter()
            .filter(|r| r.status_a == CellStatus::Measured && r.status_b == CellStatus::Failed)
            .map(|r| format!("{} on {}", r.label, r.name_b))
            .collect()
    }

    /// Whether A and B ran on different hosts (another machine, or the
    /// same one under emulation): then B/A is the cost of each row on B's
    /// host relative to A's, the comparison of machines that
    /// docs/devices.md walks through.
    fn across_hosts(&self) -> bool {
        let host = |h: &HostInfo| (h.hostname.clone(), h.cpu_model.clone(), h.cores);
        host(&self.a.host) != host(&self.b.host)
    }

    fn percent(&self) -> String {
        format!("{}%", self.threshold * 100.0)
    }
}

/// A row's ratio with a distribution behind it (not one figure per run).
fn tested(row: &ComparedRow) -> Option<&MedianRatio> {
    row.ratio
        .as_ref()
        .filter(|_| row.verdict != Verdict::NotTested)
}

impl Comparison {
    /// The title of the shared rows' table: which run is B and which A,
    /// and on which hosts when they differ.
    fn shared_title(&self) -> String {
        if self.across_hosts() {
            format!(
                "Rows both runs have: B (run {}, on {}) against A (run {}, on {})",
                self.b.id,
                host_name(&self.b.host),
                self.a.id,
                host_name(&self.a.host)
            )
        } else {
            format!(
                "Rows both runs have: B (run {}) against A (run {})",
                self.b.id, self.a.id
            )
        }
    }

    /// The kind's axes as columns, each cell read from the line's axes
    /// (which its kind's view made, one per header).
    fn axis_columns<'a, R: 'a>(&self, axes: fn(&R) -> &[String]) -> Columns<'a, R> {
        let mut columns = Columns::new();
        for (axis, header) in self.kind.axis_headers.iter().enumerate() {
            columns.push(Column::axis(*header), move |row: &R| {
                axes(row)[axis].clone()
            });
        }
        columns
    }

    fn shared_table(&self) -> Table {
        let mut table = self
            .shared_columns()
            .table(&self.rows)
            .titled(self.shared_title());
        table.empty = Some("the runs share no row".to_string());
        self.shared_notes(&mut table);
        table
    }

    /// The shared rows' columns: the row, both medians, their ratio with
    /// its interval, the sample counts, the verdict and the notes.
    fn shared_columns(&self) -> Columns<'_, ComparedRow> {
        let unit = self.kind.unit;
        let dash = || "—".to_string();
        let figure = |value: f64| format_us(value * self.kind.scale);
        // On a narrow terminal the sample counts go first, then the two
        // medians, then the interval (the verdict says what it showed);
        // the ratio and the verdict stay.
        Columns::new()
            .with(
                Column::axis(self.kind.backend_header),
                |row: &ComparedRow| {
                    if row.name_a == row.name_b {
                        row.name_a.clone()
                    } else {
                        format!("{} / {}", row.name_a, row.name_b)
                    }
                },
            )
            .with_all(self.axis_columns(|row: &ComparedRow| &row.axes))
            .with(
                Column::number(format!("A {unit}")).priority(2),
                move |row| {
                    row.ratio
                        .as_ref()
                        .map(|r| figure(r.denominator_median))
                        .unwrap_or_else(dash)
                },
            )
            .with(
                Column::number(format!("B {unit}")).priority(2),
                move |row| {
                    row.ratio
                        .as_ref()
                        .map(|r| figure(r.numerator_median))
                        .unwrap_or_else(dash)
                },
            )
            .with(Column::number("B/A"), move |row| {
                row.ratio
                    .as_ref()
                    .map(|r| format!("{:.3}", r.value))
                    .unwrap_or_else(dash)
            })
            .with(Column::number("B/A 95% CI").priority(1), move |row| {
                tested(row)
                    .map(|r| format!("{:.3}–{:.3}", r.ci95.low, r.ci95.high))
                    .unwrap_or_else(dash)
            })
            .with(Column::number("n A/B").priority(3), move |row| {
                tested(row)
                    .map(|r| format!("{}/{}", r.denominator_count, r.numerator_count))
                    .unwrap_or_else(dash)
            })
            .with(Column::text("verdict"), |row| {
                if row.beyond_threshold {
                    format!("SLOWER > {}", self.percent())
                } else {
                    row.verdict.text().to_string()
                }
            })
            .with(Column::notes("notes"), |row| {
                row.reason.clone().unwrap_or_default()
            })
    }

    /// What the shared rows' figures and verdicts mean, and how the rows
    /// were matched.
    fn shared_notes(&self, table: &mut Table) {
        table.notes.push(format!(
            "A, B: the median of each run's samples, in {}; a sample's cost is {}. B/A: B's median over A's (above 1: B is slower).",
            self.kind.unit,
            self.kind.cost
        ));
        table.notes.push(if self.kind.counted {
            "Test: counts repeat on any machine, so no order statistics: the interval is the range of every pair, [lowest B / highest A, highest B / lowest A]. Slower or faster when the whole range excludes 1: the code path changed, whatever the number of samples.".to_string()
        } else {
            "Test: ratio of medians with a distribution-free 95% interval for two unpaired runs: each median's exact order-statistic interval at 97.5% (binomial), combined as [low B / high A, high B / low A], which holds with probability at least 95% (Bonferroni). Slower or faster when the interval excludes 1; seven samples per run at least.".to_string()
        });
        table
            .notes
            .extend(self.kind.notes.iter().map(|n| n.to_string()));
        table.notes.push(format!(
            "Gate (--threshold {}): a row fails when it is significantly slower and B/A exceeds {:.3}; the exit status is then 1.",
            self.percent(),
            1.0 + self.threshold
        ));
        if self.across_hosts() {
            table.notes.push("A and B ran on different hosts (see A: and B: above): B/A is how many times each row costs on B's host what it costs on A's. A change of either machine's speed while it ran moves every row alike (within a run, ratios come from same-round pairs; across runs they cannot).".to_string());
        } else if !self.kind.counted {
            table.notes.push("The runs were taken at different times, perhaps on different machines: a change of the machine's speed between them moves every row alike (within a run, ratios come from same-round pairs; across runs they cannot).".to_string());
        }
        if self.across_backends {
            table.notes.push(format!(
                "Rows matched by scenario across backends: {} (A) and {} (B).",
                backends(&self.a).join(", "),
                backends(&self.b).join(", ")
            ));
        }
    }

    fn lone_table(&self) -> Table {
        Columns::new()
            .with(Column::number("run"), |row: &LoneRow| {
                row.run_id.to_string()
            })
            .with(Column::axis(self.kind.backend_header), |row| {
                row.name.clone()
            })
            .with_all(self.axis_columns(|row: &LoneRow| &row.axes))
            .with(Column::text("status"), |row| row.status.to_string())
            .table(&self.lone)
            .titled("Rows only one run has")
    }

    /// The runs' untested figures side by side (None when neither has any).
    fn figures_table(&self) -> Option<Table> {
        if self.a.figures.is_empty() && self.b.figures.is_empty() {
            return None;
        }
        let (a, b) = (
            format!("A (run {})", self.a.id),
            format!("B (run {})", self.b.id),
        );
        // Text columns: a figure may be a scenario as well as a number,
        // and a long one wraps on a narrow terminal.
        let mut table = Table::new(vec![
            Column::text("figure"),
            Column::text(a),
            Column::text(b),
        ])
        .titled("Figures of each run, without a test");
        let mut names: Vec<&str> = self.a.figures.iter().map(|(n, _)| n.as_str()).collect();
        for (name, _) in &self.b.figures {
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
        let value = |run: &Run, name: &str| {
            run.figures
                .iter()
                .find(|(n, _)| n == name)
                .map_or_else(|| "—".to_string(), |(_, v)| v.clone())
        };
        for name in names {
            table.rows.push(vec![
                name.to_string(),
                value(&self.a, name),
                value(&self.b, name),
            ]);
        }
        table.notes.push("One figure per run: no distribution to test, so no verdict, and these figures do not count for the gate. Compare latencies only between runs of the same plan (rate, mode, page, clients).".to_string());
        Some(table)
    }

    /// One line per shared row with every figure (CSV).
    fn records(&self) -> Table {
        let mut table = Table::records(
            "label,backend_a,backend_b,status_a,status_b,median_a,median_b,samples_a,samples_b,ratio,ratio_ci_low,ratio_ci_high,coverage,verdict,beyond_threshold,reason"
                .split(','),
        );
        let number = |v: Option<f64>| v.map(|v| format!("{v:.4}")).unwrap_or_default();
        for row in &self.rows {
            let r = row.ratio.as_ref();
            table.rows.push(vec![
                row.label.clone(),
                row.name_a.clone(),
                row.name_b.clone(),
                row.status_a.to_string(),
                row.status_b.to_string(),
                number(r.map(|r| r.denominator_median)),
                number(r.map(|r| r.numerator_median)),
                r.map(|r| r.denominator_count.to_string())
                    .unwrap_or_default(),
                r.map(|r| r.numerator_count.to_string()).unwrap_or_default(),
                number(r.map(|r| r.value)),
                number(r.map(|r| r.ci95.low)),
                number(r.map(|r| r.ci95.high)),
                number(r.map(|r| r.coverage)),
                row.verdict.text().to_string(),
                row.beyond_threshold.to_string(),
                row.reason.clone().unwrap_or_default(),
            ]);
        }
        table
    }

    pub fn document(&self) -> Document {
        let mut tables = vec![self.shared_table()];
        tables.extend(self.figures_table());
        if !self.lone.is_empty() {
            tables.push(self.lone_table());
        }
        let failing = self.slower_beyond_threshold();
        let footer = vec![if failing > 0 {
            format!(
                "{failing} row(s) of run {} significantly slower than run {} by more than {}: exit status 1.",
                self.b.id,
                self.a.id,
                self.percent()
            )
        } else {
            format!(
                "No row of run {} is significantly slower than run {} by more than {}.",
                self.b.id,
                self.a.id,
                self.percent()
            )
        }];
        let run_json = |run: &Run| {
            serde_json::json!({
                "run_id": run.id,
                "started_at": run.started_at,
                "status": run.status,
                "host": run.host,
                "libraries": run.libraries,
                "figures": run.figures.iter().map(|(n, v)| serde_json::json!({"name": n, "value": v})).collect::<Vec<_>>(),
            })
        };
        Document {
            heading: format!(
                "Comparing {} runs\n{}\n{}",
                self.kind.name,
                describe_run("A", &self.a),
                describe_run("B", &self.b)
            ),
            tables,
            figures: Vec::new(),
            records: self.records(),
            data: serde_json::json!({
                "tool_version": crate::TOOL_VERSION,
                "kind": self.kind.name,
                "a": run_json(&self.a),
                "b": run_json(&self.b),
                "threshold": self.threshold,
                "test": "ratio of medians; 95% interval from each median's exact 97.5% order-statistic interval (Bonferroni)",
                "matched_across_backends": self.across_backends,
                "rows": self.rows,
                "only_in_one_run": self.lone,
                "slower_beyond_threshold": failing,
            }),
            footer,
        }
    }
}
