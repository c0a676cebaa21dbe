//! The cost model and the breakdown: what a handshake should cost each side
//! from counted operations ([`counts`]) times measured primitive costs,
//! beside what it does cost, and where the time goes. Pure functions over
//! figures measured elsewhere: the primitives are sampled by `speed`'s
//! code (through the command's study), the counted breakdown by
//! `workload::breakdown`.

pub mod counts;
pub mod network;
pub mod primitives;

use std::collections::BTreeMap;

use crate::scenario::operations::{Category, CountedOp};
use crate::scenario::speed::SpeedRow;
use crate::scenario::HandshakeScenario;
use crate::scenario::Side;
use serde::Serialize;

/// One counted operation of a side, with the cost charged for it.
#[derive(Debug, Clone, Serialize)]
pub struct CostedOperation {
    pub operation: CountedOp,
    pub count: u64,
    /// The primitive row it is charged at, if one was measured.
    pub primitive: Option<String>,
    /// Nanoseconds charged per occurrence.
    pub ns_each: Option<f64>,
}

/// One side of a scenario: the model and the measurement.
#[derive(Debug, Clone, Serialize)]
pub struct SideCost {
    pub side: Side,
    pub operations: Vec<CostedOperation>,
    /// The sum of every costed operation.
    pub modelled_ns: f64,
    /// Median time the side spent per handshake in the handshake runner.
    pub measured_ns: Option<f64>,
}

impl SideCost {
    /// The share of the measured time the model explains.
    pub fn explained(&self) -> Option<f64> {
        self.measured_ns.map(|measured| self.modelled_ns / measured)
    }

    /// New handshakes per second one core could do on this side if the
    /// modelled operations were all it did; `None` when nothing was costed.
    pub fn modelled_capacity_per_core(&self) -> Option<f64> {
        (self.modelled_ns > 0.0).then(|| 1e9 / self.modelled_ns)
    }

    /// A compact list of the operations: "1 key exchange, 2 verify (chain)".
    pub fn summary(&self) -> String {
        self.operations
            .iter()
            .filter(|o| {
                !matches!(
                    o.operation,
                    CountedOp::HkdfExtract
                        | CountedOp::HkdfExpand
                        | CountedOp::Hmac
                        | CountedOp::Prf
                )
            })
            .map(|o| format!("{} {}", o.count, o.operation.name()))
            .chain(self.kdf_summary())
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn kdf_summary(&self) -> Option<String> {
        let kdf: Vec<String> = self
            .operations
            .iter()
            .filter(|o| {
                matches!(
                    o.operation,
                    CountedOp::HkdfExtract
                        | CountedOp::HkdfExpand
                        | CountedOp::Hmac
                        | CountedOp::Prf
                )
            })
            .map(|o| format!("{} {}", o.count, o.operation.name()))
            .collect();
        (!kdf.is_empty()).then(|| kdf.join(" + "))
    }
}

/// Costs a side from the model and a table of primitive costs.
pub fn model_side(
    scenario: &HandshakeScenario,
    side: Side,
    primitive_ns: &BTreeMap<SpeedRow, f64>,
    measured_ns: Option<f64>,
) -> SideCost {
    let mut modelled_ns = 0.0;
    let operations = counts::operation_counts(scenario, side)
        .into_iter()
        .map(|(operation, count)| {
            let charged = counts::cost_row(scenario, side, operation);
            let ns_each = charged
                .as_ref()
                .and_then(|(row, factor)| primitive_ns.get(row).map(|ns| ns * factor));
            modelled_ns += ns_each.unwrap_or(0.0) * count as f64;
            CostedOperation {
                operation,
                count,
                primitive: charged.map(|(row, _)| row.label()),
                ns_each,
            }
        })
        .collect();
    SideCost {
        side,
        operations,
        modelled_ns,
        measured_ns,
    }
}

/// Where one side's handshake time goes.
#[derive(Debug, Clone, Serialize)]
pub struct Breakdown {
    pub side: Side,
    /// "counted" (every provider call timed in real handshakes) or
    /// "modelled" (counted operations times primitive costs).
    pub method: &'static str,
    pub total_ns: f64,
    /// Nanoseconds per handshake in each category, in [`Category::ALL`] order.
    pub categories: Vec<(Category, f64)>,
    /// The rest: protocol logic, parsing, allocation, the library's own code.
    pub other_ns: f64,
    pub handshakes: usize,
}

impl Breakdown {
    /// A side's breakdown: `categories` in [`Category::ALL`] order, the
    /// rest of `total_ns` (never below zero) as "other".
    pub fn new(
        side: Side,
        method: &'static str,
        total_ns: f64,
        categories: Vec<(Category, f64)>,
        handshakes: usize,
    ) -> Self {
        let counted: f64 = categories.iter().map(|(_, ns)| ns).sum();
        Self {
            side,
            method,
            total_ns,
            categories,
            other_ns: (total_ns - counted).max(0.0),
            handshakes,
        }
    }

    /// The categories plus the rest, which add up to the total unless the
    /// counted calls alone exceed it.
    pub fn sum_ns(&self) -> f64 {
        self.categories.iter().map(|(_, ns)| ns).sum::<f64>() + self.other_ns
    }
}

/// How often each side performed each counted operation, per handshake.
pub type OpsPerHandshake = BTreeMap<(Side, CountedOp), f64>;

/// Modelled breakdown: the model's operations in their categories, the rest
/// of the measured time as "other".
pub fn modelled_breakdown(cost: &SideCost) -> Option<Breakdown> {
    let measured = cost.measured_ns?;
    let mut categories: BTreeMap<Category, f64> = BTreeMap::new();
    for operation in &cost.operations {
        let category = match operation.operation {
            CountedOp::KxExchange | CountedOp::RsaKeyTransport => Category::KeyExchange,
            CountedOp::Sign => Category::Signing,
            CountedOp::VerifyChainSignature | CountedOp::VerifyHandshakeSignature => {
                Category::Verification
            }
            CountedOp::HkdfExtract | CountedOp::HkdfExpand | CountedOp::Hmac | CountedOp::Prf => {
                Category::HashingAndKdf
            }
            _ => continue,
        };
        *categories.entry(category).or_default() +=
            operation.ns_each.unwrap_or(0.0) * operation.count as f64;
    }
    let categories = Category::ALL
        .iter()
        .map(|c| (*c, categories.get(c).copied().unwrap_or(0.0)))
        .collect();
    Some(Breakdown::new(
        cost.side, "modelled", measured, categories, 0,
    ))
}
