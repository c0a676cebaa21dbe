//! The cost view: the model beside the measurement per side and scenario,
//! and the breakdown of each side's time by category.

use serde::Serialize;

use super::markup::format_us;
use super::{ColumnKind, Document, Table};
use crate::backend::LibraryInfo;
use crate::host::HostInfo;
use crate::model::{Breakdown, SideCost};
use crate::scenario::operations::Category;
use crate::scenario::Side;
use crate::scenario::{HandshakeScenario, Subject};

use super::handshake::{axis_cells, AXIS_HEADERS};

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

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Client => "client",
        Side::Server => "server",
    }
}

/// The model beside the measurement, one line per side.
fn model_table(results: &[ScenarioCost]) -> Table {
    let mut headers = vec!["backend"];
    headers.extend(AXIS_HEADERS);
    headers.extend([
        "side",
        "operations per handshake",
        "modelled µs",
        "measured µs",
        "explained",
        "capacity/core",
    ]);
    let axes = AXIS_HEADERS.len();
    let mut numeric = vec![false; 1 + axes];
    numeric.extend([false, false, true, true, true, true]);
    let mut priority = vec![0; 1 + axes];
    priority.extend([0, 2, 0, 0, 1, 1]);
    let leading = |result: &ScenarioCost| {
        let mut cells = vec![result.subject.to_string()];
        cells.extend(axis_cells(&result.scenario));
        cells
    };
    let mut rows = Vec::new();
    for result in results {
        if let Some(reason) = &result.reason {
            if result.sides.is_empty() {
                let mut row = leading(result);
                row.extend([
                    "—".into(),
                    reason.clone(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                ]);
                rows.push(row);
                continue;
            }
        }
        for side in &result.sides {
            let capacity = match side.side {
                Side::Server => result
                    .capacity_per_core
                    .map(|c| format!("{c:.0} hs/s"))
                    .unwrap_or_default(),
                Side::Client => String::new(),
            };
            let mut row = leading(result);
            row.extend([
                side_name(side.side).to_string(),
                side.summary(),
                format_us(side.modelled_ns / 1000.0),
                side.measured_ns
                    .map(|ns| format_us(ns / 1000.0))
                    .unwrap_or_else(|| "—".into()),
                side.explained()
                    .map(|e| format!("{:.0}%", e * 100.0))
                    .unwrap_or_default(),
                capacity,
            ]);
            rows.push(row);
        }
    }
    let mut table = Table::new(&headers, &numeric)
        .priorities(&priority)
        .mark(&(0..=axes).collect::<Vec<_>>(), ColumnKind::Axis);
    table.rows = rows;
    table.notes.push("modelled: counted operations x primitive costs measured now on this machine (tlslab speed);".to_string());
    table.notes.push("measured: median time inside each side's library calls in real handshakes; capacity: 1 / measured server time.".to_string());
    table
}

/// Where each side's time goes, in µs and share of the total.
fn breakdown_table(results: &[ScenarioCost]) -> Table {
    let mut headers = vec!["backend"];
    headers.extend(AXIS_HEADERS);
    headers.extend(["side", "method"]);
    let axes = AXIS_HEADERS.len();
    headers.extend(Category::ALL.iter().map(|c| c.name()));
    headers.extend(["other", "total µs"]);
    let mut numeric = vec![false; 3 + axes];
    numeric.extend(vec![true; Category::ALL.len() + 2]);
    let mut rows = Vec::new();
    for result in results {
        for b in &result.breakdown {
            let share = |ns: f64| {
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
            let mut row = vec![result.subject.to_string()];
            row.extend(axis_cells(&result.scenario));
            row.extend([side_name(b.side).to_string(), b.method.to_string()]);
            row.extend(b.categories.iter().map(|(_, ns)| share(*ns)));
            row.push(share(b.other_ns));
            row.push(format_us(b.total_ns / 1000.0));
            rows.push(row);
        }
    }
    // Public-key categories and the total stay; the small ones go first.
    let mut priority = vec![0; 2 + axes];
    priority.push(2);
    priority.extend(Category::ALL.iter().map(|c| match c {
        Category::KeyExchange | Category::Signing | Category::Verification => 0,
        Category::HashingAndKdf | Category::Certificates => 1,
        Category::RecordProtection | Category::Random => 2,
    }));
    priority.extend([1, 0]);
    let mut table = Table::new(&headers, &numeric)
        .titled("Where each side's time goes")
        .priorities(&priority)
        .mark(&(0..=axes).collect::<Vec<_>>(), ColumnKind::Axis);
    table.rows = rows;
    table.notes.push("counted: every crypto provider call timed inside real handshakes (rustls; the counting adds its own small cost to the total);".to_string());
    table.notes.push("modelled: counted operations x primitive costs, the rest of the measured time as other (OpenSSL).".to_string());
    table
}

/// One line per side.
fn records(results: &[ScenarioCost]) -> Table {
    let mut table = Table {
        headers: "label,backend,side,reason,operations,modelled_ns,measured_ns,explained,capacity_per_core"
            .split(',')
            .map(String::from)
            .collect(),
        ..Table::default()
    };
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
