//! The cost charts: the model beside the measured time per side, and where
//! each side's time goes, stacked by category.

use super::{Bar, Figure, Layout};
use crate::report::cost::ScenarioCost;
use crate::scenario::operations::Category;
use crate::scenario::Side;

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Client => "client",
        Side::Server => "server",
    }
}

fn label(result: &ScenarioCost, one_backend: bool, side: &str) -> String {
    let scenario = super::row_label(&result.subject.name(), &result.description, one_backend);
    format!("{scenario} · {side}")
}

/// The charts of a cost report.
pub fn figures(results: &[ScenarioCost]) -> Vec<Figure> {
    let one_backend = results.windows(2).all(|w| w[0].subject == w[1].subject);
    let mut model_bars = Vec::new();
    for result in results {
        if result.sides.is_empty() {
            model_bars.push(Bar::missing(
                super::row_label(&result.subject.name(), &result.description, one_backend),
                2,
                result.reason.clone().unwrap_or_default(),
            ));
        }
        for side in &result.sides {
            model_bars.push(Bar::new(
                label(result, one_backend, side_name(side.side)),
                vec![
                    Some(side.modelled_ns / 1e3),
                    side.measured_ns.map(|ns| ns / 1e3),
                ],
            ));
        }
    }
    let mut figures = vec![Figure {
        id: "cost_model".to_string(),
        title: "Cost per handshake: the model beside the measurement".to_string(),
        axis: "time per handshake (µs)".to_string(),
        series: vec!["modelled".to_string(), "measured".to_string()],
        layout: Layout::Grouped,
        bars: model_bars,
        reference: None,
        notes: vec![
            "modelled: counted operations × primitive costs measured on this machine; measured: median time inside the side's library calls.".to_string(),
        ],
    }];
    let breakdown_bars: Vec<Bar> = results
        .iter()
        .flat_map(|result| {
            result.breakdown.iter().map(move |b| {
                let mut values: Vec<Option<f64>> =
                    b.categories.iter().map(|(_, ns)| Some(ns / 1e3)).collect();
                values.push(Some(b.other_ns / 1e3));
                Bar::new(
                    label(
                        result,
                        one_backend,
                        &format!("{} ({})", side_name(b.side), b.method),
                    ),
                    values,
                )
            })
        })
        .collect();
    if !breakdown_bars.is_empty() {
        let mut series: Vec<String> = Category::ALL.iter().map(|c| c.name().to_string()).collect();
        series.push("other".to_string());
        figures.push(Figure {
            id: "cost_breakdown".to_string(),
            title: "Where each side's handshake time goes".to_string(),
            axis: "time per handshake (µs), stacked by category".to_string(),
            series,
            layout: Layout::Stacked,
            bars: breakdown_bars,
            reference: None,
            notes: vec![
                "counted: every crypto provider call timed inside real handshakes (rustls); modelled: counted operations × primitive costs, the rest as other (OpenSSL).".to_string(),
            ],
        });
    }
    figures
}
