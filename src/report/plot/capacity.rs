//! The capacity chart: per row and thread count, the handshakes per second
//! measured beside the server capacity they imply and the model's.

use super::{Bar, Figure, Layout};
use crate::workload::capacity::CapacityCell;

/// The charts of a capacity report, run on a machine of `cores`.
pub fn figures(cells: &[CapacityCell], cores: usize) -> Vec<Figure> {
    let one_backend = cells.windows(2).all(|w| w[0].subject == w[1].subject);
    let mut bars = Vec::new();
    for cell in cells {
        let row = super::row_label(&cell.subject.name(), &cell.scenario.describe(), one_backend);
        for step in &cell.steps {
            bars.push(Bar::new(
                format!(
                    "{row} · {} thread{}",
                    step.threads,
                    if step.threads == 1 { "" } else { "s" }
                ),
                vec![
                    Some(step.handshakes_per_second()),
                    step.server_capacity_per_second(cores),
                    cell.modelled_capacity_per_core()
                        .map(|per_core| per_core * step.capacity_cores(cores) as f64),
                ],
            ));
        }
        if let (true, Some(reason)) = (cell.steps.is_empty(), &cell.reason) {
            bars.push(Bar::missing(row, 3, format!("{}: {reason}", cell.status)));
        }
    }
    vec![Figure {
        id: "capacity".to_string(),
        title: "New handshakes per second on 1 to N threads".to_string(),
        axis: "handshakes/s".to_string(),
        series: vec![
            "measured (client and server)".to_string(),
            "server capacity (cores / server CPU)".to_string(),
            "model × cores".to_string(),
        ],
        layout: Layout::Grouped,
        bars,
        reference: None,
        notes: vec![
            "measured: all threads' handshakes (both sides) per second of wall clock; server capacity: the cores counted (one per thread, at most the machine's) / server CPU per handshake; model: cost's one-core model × the same cores.".to_string(),
        ],
    }]
}
