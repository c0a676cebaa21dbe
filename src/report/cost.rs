//! The cost view: the model beside the measurement per side and scenario,
//! and the breakdown of each side's time by category.

use serde::Serialize;

use super::compare::kind::Kind;
use super::markup::format_us;
use super::{axis_headers, Axis, Column, Columns, Document, Table};
use crate::backend::LibraryInfo;
use crate::host::HostInfo;
use crate::model::{Breakdown, SideCost};
use crate::scenario::operations::Category;
use crate::scenario::speed::SpeedRow;
use crate::scenario::{HandshakeScenario, Measure, Side, Subject};

use super::handshake::AXES;

/// One scenario on one backend: the model beside the measurement.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioCost {
    pub label: String,
    pub scenario: HandshakeScenario,
    /// The backend modelled and measured; exported as `backend`.
    #[serde(rename = "backend")]
    pub subject: Subject,
    pub description: String,
    /// Set when the scenario could not be measured.
    pub reason: Option<String>,
    pub sides: Vec<SideCost>,
    /// New handshakes per second one core can serve (measured).
    pub capacity_per_core: Option<f64>,
    /// The same from the model.
    pub modelled_capacity_per_core: Option<f64>,
    pub breakdown: Vec<Breakdown>,
}

/// A row of `compare` over a cost run: one of its handshakes, or an
/// operation of a primitive the model uses.
#[derive(Debug, Clone, Copy)]
pub(crate) enum CostRow {
    Handshake(HandshakeScenario),
    Operation(SpeedRow),
}

/// A row's axes as `compare` shows them, each with its cell.
pub(crate) const COMPARED_AXES: [Axis<CostRow>; 2] = [
    Axis {
        header: "measured",
        cell: |row| {
            match row {
                CostRow::Handshake(_) => "handshake",
                CostRow::Operation(_) => "operation",
            }
            .to_string()
        },
    },
    Axis {
        header: "row",
        cell: |row| match row {
            CostRow::Handshake(scenario) => scenario.describe(),
            CostRow::Operation(operation) => operation.label(),
        },
    },
];

/// What a cost run's rows measure in `compare` (on time only: its
/// operations were not counted).
pub fn compared(measure: Measure) -> Option<Kind> {
    (measure == Measure::Time).then(|| {
        Kind::rows("cost", "backend", axis_headers(&COMPARED_AXES).to_vec()).on_time(
            "µs",
            "on a handshake row both sides' CPU time per handshake, on an operation row the time per operation of a primitive the model uses",
            1e-3,
        )
    })
}

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Client => "client",
        Side::Server => "server",
    }
}

/// The columns of both cost tables that say which result a line is: the
/// backend and the scenario's axes.
fn leading<'a, R: 'a>(result: fn(&R) -> &ScenarioCost) -> Columns<'a, R> {
    Columns::new()
        .with(Column::axis("backend"), move |r: &R| {
            result(r).subject.to_string()
        })
        .with_axes(&AXES, move |r: &R| &result(r).scenario)
}

/// One line of the model table: a result's side, or (`None`) the result
/// that could not be measured.
type ModelLine<'r> = (&'r ScenarioCost, Option<&'r SideCost>);

/// The model beside the measurement, one line per side.
fn model_table(results: &[ScenarioCost]) -> Table {
    let mut lines: Vec<ModelLine> = Vec::new();
    for result in results {
        if result.reason.is_some() && result.sides.is_empty() {
            lines.push((result, None));
        }
        lines.extend(result.sides.iter().map(|side| (result, Some(side))));
    }
    // A line without a side says why in the operations column.
    let side_or = |line: &ModelLine, figure: fn(&ScenarioCost, &SideCost) -> String| {
        line.1.map(|side| figure(line.0, side)).unwrap_or_default()
    };
    let mut table = leading(|line: &ModelLine| line.0)
        .with(Column::text("side"), |line| {
            line.1.map_or("—", |side| side_name(side.side)).to_string()
        })
        .with(
            Column::text("operations per handshake").priority(2),
            |line| match line {
                (_, Some(side)) => side.summary(),
                (result, None) => result.reason.clone().unwrap_or_default(),
            },
        )
        .with(Column::number("modelled µs"), move |line| {
            side_or(line, |_, side| format_us(side.modelled_ns / 1000.0))
        })
        .with(Column::number("measured µs"), move |line| {
            side_or(line, |_, side| {
                side.measured_ns
                    .map(|ns| format_us(ns / 1000.0))
                    .unwrap_or_else(|| "—".into())
            })
        })
        .with(Column::number("explained").priority(1), move |line| {
            side_or(line, |_, side| {
                side.explained()
                    .map(|e| format!("{:.0}%", e * 100.0))
                    .unwrap_or_default()
            })
        })
        .with(Column::number("capacity/core").priority(1), move |line| {
            side_or(line, |result, side| match side.side {
                Side::Server => result
                    .capacity_per_core
                    .map(|c| format!("{c:.0} hs/s"))
                    .unwrap_or_default(),
                Side::Client => String::new(),
            })
        })
        .table(&lines);
    table.notes.push("modelled: counted operations x primitive costs measured now on this machine (tlslab speed);".to_string());
    table.notes.push("measured: median time inside each side's library calls in real handshakes; capacity: 1 / measured server time.".to_string());
    table
}

/// Where each side's time goes, in µs and share of the total.
fn breakdown_table(results: &[ScenarioCost]) -> Table {
    let lines: Vec<(&ScenarioCost, &Breakdown)> = results
        .iter()
        .flat_map(|result| result.breakdown.iter().map(move |b| (result, b)))
        .collect();
    let share = |b: &Breakdown, ns: f64| {
        if ns == 0.0 {
            "—".to_string()
        } else {
            format!(
                "{} ({:.0}%)",
                format_us(ns / 1000.0),
                ns / b.total_ns * 100.0
            )
        }
    };
    let mut columns = leading(|line: &(&ScenarioCost, &Breakdown)| line.0)
        .with(Column::text("side"), |(_, b)| side_name(b.side).to_string())
        .with(Column::text("method").priority(2), |(_, b)| {
            b.method.to_string()
        });
    // Public-key categories and the total stay; the small ones go first.
    for category in Category::ALL {
        let priority = match category {
            Category::KeyExchange | Category::Signing | Category::Verification => 0,
            Category::HashingAndKdf | Category::Certificates => 1,
            Category::RecordProtection | Category::Random => 2,
        };
        columns.push(
            Column::number(category.name()).priority(priority),
            move |(_, b)| {
                let ns = b.categories.iter().find(|(c, _)| *c == category);
                share(b, ns.map_or(0.0, |(_, ns)| *ns))
            },
        );
    }
    let mut table = columns
        .with(Column::number("other").priority(1), move |(_, b)| {
            share(b, b.other_ns)
        })
        .with(Column::number("total µs"), |(_, b)| {
            format_us(b.total_ns / 1000.0)
        })
        .table(&lines)
        .titled("Where each side's time goes");
    table.notes.push("counted: every crypto provider call timed inside real handshakes (rustls; the counting adds its own small cost to the total);".to_string());
    table.notes.push("modelled: counted operations x primitive costs, the rest of the measured time as other (OpenSSL).".to_string());
    table
}

/// One line per side.
fn records(results: &[ScenarioCost]) -> Table {
    let mut table = Table::records(
        "label,backend,side,reason,operations,modelled_ns,measured_ns,explained,capacity_per_core"
            .split(','),
    );
    for result in results {
        for side in &result.sides {
            let fields = [
                result.label.clone(),
                result.subject.to_string(),
                side_name(side.side).to_string(),
                result.reason.clone().unwrap_or_default(),
                side.summary(),
                format!("{:.0}", side.modelled_ns),
                side.measured_ns
                    .map(|ns| format!("{ns:.0}"))
                    .unwrap_or_default(),
                side.explained()
                    .map(|e| format!("{e:.4}"))
                    .unwrap_or_default(),
                if side.side == Side::Server {
                    result
                        .capacity_per_core
                        .map(|c| format!("{c:.1}"))
                        .unwrap_or_default()
                } else {
                    String::new()
                },
            ];
            table.rows.push(fields.to_vec());
        }
    }
    table
}

/// A cost run as a document.
pub fn document(
    results: &[ScenarioCost],
    breakdown: bool,
    run_id: Option<i64>,
    complete: bool,
    host: &HostInfo,
    libraries: &[LibraryInfo],
    primitive_costs_ns: serde_json::Value,
) -> Document {
    let mut tables = vec![model_table(results)];
    if breakdown {
        tables.push(breakdown_table(results));
    }
    Document {
        heading: super::heading(host, libraries),
        tables,
        records: records(results),
        data: super::json_with(
            super::provenance_json(run_id, complete, host, libraries, None, None),
            serde_json::json!({ "scenarios": results, "primitive_costs_ns": primitive_costs_ns }),
        ),
        footer: super::run_notes(None, None, complete),
        figures: super::plot::cost_figures(results),
    }
}
