//! The recommend view: the rows of one stored run placed on two axes, cost
//! (lower is better) and estimated security (higher is better). A row is
//! recommended when it clears the floor (security bits, forward secrecy,
//! nothing flagged weak) and no other such row is at least as cheap and at
//! least as strong, and better in one of the two (the Pareto set). Every
//! other row says why it is out: below the floor (which rule), dominated
//! (by which row), or not measured.
//!
//! Costs are told apart only beyond their noise: a row is cheaper than
//! another when its median's 95% interval lies wholly below the other's.
//! Rows whose intervals overlap are tied within noise: equal on cost, so a
//! tie at equal security keeps both in the Pareto set, and a tie with a
//! stronger row puts the weaker one out.

use serde::Serialize;

use super::{heading, Column, Columns, Document, Table};
use crate::backend::LibraryInfo;
use crate::host::HostInfo;
use crate::scenario::Subject;
use crate::security::Strength;
use crate::stats::Interval;

/// One row of the run as recommend reads it.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The backend or engine.
    pub subject: Subject,
    /// The scenario's stable label.
    pub label: String,
    /// The scenario as short cells, one per axis header.
    pub axes: Vec<String>,
    /// What the row's work is, as opposed to its configuration (a tunnel's
    /// payload and packet size, a bulk row's write size): rows compete only
    /// with rows of the same work. Empty for handshakes.
    pub workload: String,
    /// The median cost, `None` when the row was not measured.
    pub cost: Option<f64>,
    /// The 95% interval of the median cost (order statistics; with fewer
    /// than six samples the whole range), `None` when not measured.
    pub interval: Option<Interval>,
    pub samples: usize,
    /// Why the row was not measured ("unsupported: ..."), if it was not.
    pub not_measured: Option<String>,
    pub strength: Strength,
}

/// What a security floor asks of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Floor {
    pub min_bits: u32,
    pub forward_secrecy: bool,
    pub allow_weak: bool,
}

/// Where a row ends up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// In the Pareto set.
    Recommended,
    /// Below the floor: every rule it breaks.
    BelowFloor {
        reasons: Vec<String>,
    },
    /// Another row (its index) is at least as cheap and as strong, and better in one.
    Dominated {
        by: usize,
    },
    NotMeasured {
        reason: String,
    },
}

/// Every rule of the floor a row breaks, empty when it clears the floor.
pub fn floor_breaches(strength: &Strength, floor: &Floor) -> Vec<String> {
    let mut reasons = Vec::new();
    if strength.bits < floor.min_bits {
        reasons.push(format!(
            "{} bits < {} ({})",
            strength.bits, floor.min_bits, strength.weakest
        ));
    }
    if floor.forward_secrecy && strength.forward_secrecy != Some(true) {
        reasons.push(match strength.forward_secrecy {
            Some(false) => "no forward secrecy".to_string(),
            _ => "forward secrecy not known for this row".to_string(),
        });
    }
    if strength.weak && !floor.allow_weak {
        reasons.push("flagged weak".to_string());
    }
    reasons
}

/// How two rows' costs compare, beyond their noise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CostOrder {
    /// The first row's interval lies wholly below the second's.
    Cheaper,
    /// The intervals overlap: the rows cannot be told apart.
    Tied,
    /// The first row's interval lies wholly above the second's.
    Dearer,
}

/// How the cost of `a` compares with the cost of `b` (both measured).
pub fn cost_order(a: &Candidate, b: &Candidate) -> CostOrder {
    let span = |c: &Candidate| {
        let cost = c.cost.unwrap_or(f64::INFINITY);
        c.interval.map_or((cost, cost), |i| (i.low, i.high))
    };
    let ((a_low, a_high), (b_low, b_high)) = (span(a), span(b));
    if a_high < b_low {
        CostOrder::Cheaper
    } else if a_low > b_high {
        CostOrder::Dearer
    } else {
        CostOrder::Tied
    }
}

/// Returns true if and only if `a` dominates `b`: of the same workload, no
/// weaker, not dearer beyond noise, and cheaper beyond noise or stronger.
fn dominates(a: &Candidate, b: &Candidate) -> bool {
    let order = cost_order(a, b);
    a.workload == b.workload
        && a.strength.bits >= b.strength.bits
        && order != CostOrder::Dearer
        && (order == CostOrder::Cheaper || a.strength.bits > b.strength.bits)
}

/// The verdict of every candidate, in their order. Rows compete with the
/// rows of the same workload only; a dominated row names the cheapest
/// recommended row that dominates it, or when none does (being tied within
/// noise is not transitive) the cheapest row that does.
pub fn recommend(candidates: &[Candidate], floor: &Floor) -> Vec<Verdict> {
    let mut verdicts: Vec<Option<Verdict>> = candidates
        .iter()
        .map(|c| match (&c.cost, &c.not_measured) {
            (None, reason) => Some(Verdict::NotMeasured {
                reason: reason.clone().unwrap_or_else(|| "no samples".to_string()),
            }),
            (Some(_), _) => {
                let reasons = floor_breaches(&c.strength, floor);
                (!reasons.is_empty()).then_some(Verdict::BelowFloor { reasons })
            }
        })
        .collect();
    let eligible: Vec<usize> = (0..candidates.len())
        .filter(|&i| verdicts[i].is_none())
        .collect();
    let beats = |j: usize, i: usize| dominates(&candidates[j], &candidates[i]);
    let cost = |i: usize| candidates[i].cost.unwrap_or(f64::INFINITY);
    let pareto: Vec<usize> = eligible
        .iter()
        .copied()
        .filter(|&i| !eligible.iter().any(|&j| beats(j, i)))
        .collect();
    for &i in &eligible {
        verdicts[i] = Some(if pareto.contains(&i) {
            Verdict::Recommended
        } else {
            let cheapest = |rows: &[usize]| {
                rows.iter()
                    .copied()
                    .filter(|&j| beats(j, i))
                    .min_by(|&a, &b| cost(a).total_cmp(&cost(b)))
            };
            let by = cheapest(&pareto)
                .or_else(|| cheapest(&eligible))
                .expect("a dominated row has a dominating row");
            Verdict::Dominated { by }
        });
    }
    verdicts
        .into_iter()
        .map(|v| v.expect("every row judged"))
        .collect()
}

/// What the cost column is.
#[derive(Debug, Clone)]
pub struct CostAxis {
    /// The role, e.g. "server".
    pub role: &'static str,
    /// The column header, e.g. "server CPU µs".
    pub header: &'static str,
    /// The drawn figure per unit of cost (1e-3 for nanoseconds drawn as µs).
    pub scale: f64,
    /// What the cost is, for the notes.
    pub meaning: &'static str,
    /// What the backend column is called ("backend", "engine").
    pub backend_header: &'static str,
    pub axis_headers: Vec<&'static str>,
    /// The figure the rows are ranked on ("time", "instructions").
    pub measure: &'static str,
    /// Why that figure, for the notes ("the run counted instructions;
    /// --measure time ranks on CPU time").
    pub why_measure: String,
}

/// A run's rows judged: everything the document needs.
pub struct Recommendation<'a> {
    pub run_id: i64,
    pub kind: &'a str,
    pub host: &'a HostInfo,
    pub libraries: &'a [LibraryInfo],
    pub axis: CostAxis,
    pub floor: Floor,
    pub candidates: Vec<Candidate>,
    pub verdicts: Vec<Verdict>,
}

impl Recommendation<'_> {
    /// Judges the candidates against the floor.
    pub fn new<'a>(
        run_id: i64,
        kind: &'a str,
        host: &'a HostInfo,
        libraries: &'a [LibraryInfo],
        axis: CostAxis,
        floor: Floor,
        candidates: Vec<Candidate>,
    ) -> Recommendation<'a> {
        let verdicts = recommend(&candidates, &floor);
        Recommendation {
            run_id,
            kind,
            host,
            libraries,
            axis,
            floor,
            candidates,
            verdicts,
        }
    }

    /// Why row `i` is out (empty when it is recommended).
    fn why_out(&self, i: usize) -> String {
        match &self.verdicts[i] {
            Verdict::Recommended => String::new(),
            Verdict::BelowFloor { reasons } => format!("below the floor: {}", reasons.join(", ")),
            Verdict::Dominated { by } => {
                let c = &self.candidates[*by];
                let tied = cost_order(c, &self.candidates[i]) == CostOrder::Tied;
                format!(
                    "dominated by {} {} ({:.1} {}, {} bits){}",
                    c.subject,
                    c.label,
                    c.cost.unwrap_or_default() * self.axis.scale,
                    self.axis.header,
                    c.strength.bits,
                    if tied {
                        "; cost tied within noise, security stronger"
                    } else {
                        ""
                    }
                )
            }
            Verdict::NotMeasured { reason } => format!("not measured: {reason}"),
        }
    }

    /// The other recommended rows of row `i`'s workload whose cost cannot
    /// be told apart from its own.
    fn ties(&self, i: usize) -> Vec<usize> {
        (0..self.candidates.len())
            .filter(|&j| {
                j != i
                    && self.verdicts[j] == Verdict::Recommended
                    && self.candidates[j].workload == self.candidates[i].workload
                    && cost_order(&self.candidates[j], &self.candidates[i]) == CostOrder::Tied
            })
            .collect()
    }

    /// "tied within noise with ..." for a recommended row, naming at most
    /// three rows; empty when it has no tie.
    fn tie_note(&self, i: usize) -> String {
        let ties = self.ties(i);
        if ties.is_empty() {
            return String::new();
        }
        let mut names: Vec<String> = ties
            .iter()
            .take(3)
            .map(|&j| {
                format!(
                    "{} {}",
                    self.candidates[j].subject, self.candidates[j].label
                )
            })
            .collect();
        if ties.len() > 3 {
            names.push(format!("{} more", ties.len() - 3));
        }
        format!("tied within noise with {}", names.join(", "))
    }

    /// The rows in the order a person reads them: recommended first by
    /// cost, then the rest by cost.
    fn order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.candidates.len()).collect();
        order.sort_by(|&a, &b| {
            let rank = |i: usize| u8::from(self.verdicts[i] != Verdict::Recommended);
            let cost = |i: usize| self.candidates[i].cost.unwrap_or(f64::INFINITY);
            rank(a).cmp(&rank(b)).then(cost(a).total_cmp(&cost(b)))
        });
        order
    }

    fn table(&self, recommended: bool) -> Table {
        let title = if recommended {
            format!(
                "Recommended ({} role): not beaten on both {} and security",
                self.axis.role, self.axis.header
            )
        } else {
            "The other rows and why they are out".to_string()
        };
        let shown: Vec<usize> = self
            .order()
            .into_iter()
            .filter(|&i| (self.verdicts[i] == Verdict::Recommended) == recommended)
            .collect();
        let candidate = |i: &usize| &self.candidates[*i];
        let scaled = |v: f64| format!("{:.1}", v * self.axis.scale);
        let mut columns = Columns::new().with(Column::axis(self.axis.backend_header), move |i| {
            candidate(i).subject.to_string()
        });
        for (axis, header) in self.axis.axis_headers.iter().enumerate() {
            columns.push(Column::axis(*header), move |i| {
                candidate(i).axes[axis].clone()
            });
        }
        let mut table = columns
            .with(Column::number(self.axis.header), move |i| {
                candidate(i)
                    .cost
                    .map(scaled)
                    .unwrap_or_else(|| "—".to_string())
            })
            .with(Column::number("95% CI").priority(2), move |i| {
                candidate(i).interval.map_or_else(
                    || "—".to_string(),
                    |i| format!("{}–{}", scaled(i.low), scaled(i.high)),
                )
            })
            .with(Column::number("security bits"), move |i| {
                candidate(i).strength.bits.to_string()
            })
            .with(Column::text("limited by").priority(3), move |i| {
                candidate(i).strength.weakest.clone()
            })
            .with(
                Column::notes(if recommended { "noise" } else { "why out" }),
                move |&i| {
                    if recommended {
                        self.tie_note(i)
                    } else {
                        self.why_out(i)
                    }
                },
            )
            .table(&shown)
            .titled(title);
        table.empty = Some(if recommended {
            "no row clears the floor".to_string()
        } else {
            "every row is recommended".to_string()
        });
        table
    }

    fn records(&self) -> Table {
        let mut table = Table::records(
            "label,backend,cost,cost_ci_low,cost_ci_high,samples,security_bits,limited_by,forward_secrecy,weak,verdict,reason"
                .split(','),
        );
        for (i, (c, verdict)) in self.candidates.iter().zip(&self.verdicts).enumerate() {
            let tag = match verdict {
                Verdict::Recommended => "recommended",
                Verdict::BelowFloor { .. } => "below_floor",
                Verdict::Dominated { .. } => "dominated",
                Verdict::NotMeasured { .. } => "not_measured",
            };
            table.rows.push(vec![
                c.label.clone(),
                c.subject.to_string(),
                c.cost.map(|v| format!("{v:.4}")).unwrap_or_default(),
                c.interval
                    .map(|i| format!("{:.4}", i.low))
                    .unwrap_or_default(),
                c.interval
                    .map(|i| format!("{:.4}", i.high))
                    .unwrap_or_default(),
                c.samples.to_string(),
                c.strength.bits.to_string(),
                c.strength.weakest.clone(),
                c.strength
                    .forward_secrecy
                    .map(|f| f.to_string())
                    .unwrap_or_default(),
                c.strength.weak.to_string(),
                tag.to_string(),
                if *verdict == Verdict::Recommended {
                    self.tie_note(i)
                } else {
                    self.why_out(i)
                },
            ]);
        }
        table
    }

    pub fn document(&self) -> Document {
        let floor = &self.floor;
        let mut rules = vec![format!("at least {} security bits", floor.min_bits)];
        if floor.forward_secrecy {
            rules.push("forward secrecy".to_string());
        }
        if !floor.allow_weak {
            rules.push("nothing flagged weak".to_string());
        }
        let mut recommended = self.table(true);
        recommended.notes.push(format!(
            "Ranked on {}: {}.",
            self.axis.measure, self.axis.why_measure
        ));
        recommended.notes.push(format!(
            "Run {} ({} run). Cost: {}, median. Floor: {}.",
            self.run_id,
            self.kind,
            self.axis.meaning,
            rules.join(", ")
        ));
        recommended.notes.push("Noise: a row is cheaper than another only when the 95% interval of its median (order statistics; with fewer than six samples the whole range) lies wholly below the other's; rows whose intervals overlap are tied within noise and count as equally cheap, so ties at equal security are all recommended. Non-overlapping intervals are a strict test: a difference the same-round ratios of `tlslab report` resolve may still show as a tie here.".to_string());
        recommended.notes.push("Security bits: the classical strength of the row's weakest part (NIST SP 800-57 Part 1 Rev. 5; post-quantum sets at their NIST category), not its resistance to a quantum computer.".to_string());
        let rows: Vec<serde_json::Value> = self
            .candidates
            .iter()
            .zip(&self.verdicts)
            .enumerate()
            .map(|(i, (c, v))| {
                serde_json::json!({
                    "label": c.label,
                    "backend": c.subject,
                    "cost": c.cost,
                    "cost_ci95": c.interval,
                    "tied_within_noise_with": self.ties(i).iter().map(|&j| &self.candidates[j].label).collect::<Vec<_>>(),
                    "samples": c.samples,
                    "security_bits": c.strength.bits,
                    "limited_by": c.strength.weakest,
                    "forward_secrecy": c.strength.forward_secrecy,
                    "weak": c.strength.weak,
                    "verdict": v,
                    "dominated_by": match v {
                        Verdict::Dominated { by } => Some(&self.candidates[*by].label),
                        _ => None,
                    },
                })
            })
            .collect();
        Document {
            heading: heading(self.host, self.libraries),
            tables: vec![recommended, self.table(false)],
            records: self.records(),
            data: serde_json::json!({
                "run_id": self.run_id,
                "kind": self.kind,
                "role": self.axis.role,
                "cost": self.axis.meaning,
                "measure": self.axis.measure,
                "floor": floor,
                "rows": rows,
            }),
            footer: Vec::new(),
            figures: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(label: &str, cost: f64, bits: u32) -> Candidate {
        Candidate {
            subject: Subject::library(crate::scenario::BackendId::Mock),
            label: label.into(),
            axes: vec![label.into()],
            workload: String::new(),
            cost: Some(cost),
            interval: Some(Interval {
                low: cost * 0.99,
                high: cost * 1.01,
            }),
            samples: 10,
            not_measured: None,
            strength: Strength {
                bits,
                weakest: "x".into(),
                forward_secrecy: Some(true),
                weak: false,
                notes: vec![],
            },
        }
    }

    const NO_FLOOR: Floor = Floor {
        min_bits: 0,
        forward_secrecy: false,
        allow_weak: false,
    };

    #[test]
    fn the_pareto_set_and_each_dominated_rows_cheapest_dominator() {
        let rows = vec![
            candidate("cheap", 1.0, 112),
            candidate("strong", 3.0, 192),
            candidate("dear_and_weak", 4.0, 128),
            candidate("middle", 2.0, 128),
            candidate("tie_of_middle", 2.0, 128),
            Candidate {
                workload: "other work".into(),
                ..candidate("other_work", 9.0, 112)
            },
        ];
        let verdicts = recommend(&rows, &NO_FLOOR);
        assert_eq!(
            verdicts,
            vec![
                Verdict::Recommended,
                Verdict::Recommended,
                Verdict::Dominated { by: 3 },
                Verdict::Recommended,
                Verdict::Recommended,
                // Alone in its workload: nothing beats it.
                Verdict::Recommended,
            ]
        );
    }

    #[test]
    fn the_floor_excludes_rows_with_every_reason() {
        let mut weak = candidate("weak", 0.5, 80);
        weak.strength.weak = true;
        weak.strength.forward_secrecy = Some(false);
        let rows = vec![weak, candidate("ok", 2.0, 128)];
        let floor = Floor {
            min_bits: 112,
            forward_secrecy: true,
            allow_weak: false,
        };
        let verdicts = recommend(&rows, &floor);
        let Verdict::BelowFloor { reasons } = &verdicts[0] else {
            panic!("{verdicts:?}");
        };
        assert_eq!(reasons.len(), 3, "{reasons:?}");
        assert!(reasons[0].starts_with("80 bits < 112"));
        assert_eq!(verdicts[1], Verdict::Recommended);
        // Without the floor the cheap row is recommended too.
        let no_floor = Floor {
            allow_weak: true,
            ..NO_FLOOR
        };
        assert_eq!(
            recommend(&rows, &no_floor),
            vec![Verdict::Recommended, Verdict::Recommended]
        );
    }

    /// A row whose median's interval is `low..high`.
    fn noisy(label: &str, cost: f64, (low, high): (f64, f64), bits: u32) -> Candidate {
        Candidate {
            interval: Some(Interval { low, high }),
            ..candidate(label, cost, bits)
        }
    }

    #[test]
    fn rows_whose_intervals_overlap_are_tied_and_both_recommended() {
        let rows = vec![
            noisy("a", 10.0, (9.0, 11.0), 128),
            // Dearer by its median, tied by its interval.
            noisy("b", 10.5, (9.5, 11.5), 128),
            // Dearer beyond noise than both.
            noisy("c", 13.0, (12.0, 14.0), 128),
            // Tied with a on cost, weaker: a beats it.
            noisy("d", 9.8, (9.0, 10.6), 112),
            noisy("e", 14.0, (13.5, 14.5), 192),
        ];
        let verdicts = recommend(&rows, &NO_FLOOR);
        assert_eq!(
            verdicts,
            vec![
                Verdict::Recommended,
                Verdict::Recommended,
                Verdict::Dominated { by: 0 },
                Verdict::Dominated { by: 0 },
                Verdict::Recommended,
            ]
        );
        let host = HostInfo::current();
        let recommendation = Recommendation::new(
            1,
            "handshake",
            &host,
            &[],
            CostAxis {
                role: "server",
                header: "server CPU µs",
                scale: 1.0,
                meaning: "test",
                backend_header: "backend",
                axis_headers: vec!["row"],
                measure: "time",
                why_measure: "the run was timed".to_string(),
            },
            NO_FLOOR,
            rows,
        );
        assert_eq!(recommendation.tie_note(1), "tied within noise with mock a");
        assert_eq!(recommendation.tie_note(4), "");
        assert!(recommendation
            .why_out(3)
            .ends_with("cost tied within noise, security stronger"));
        assert!(!recommendation.why_out(2).contains("tied"));
        let document = recommendation.document();
        let recommended = &document.tables[0];
        let b = recommended.rows.iter().find(|r| r[1] == "b").unwrap();
        assert_eq!(b.last().unwrap(), "tied within noise with mock a");
        assert!(recommended.notes.iter().any(|n| n.starts_with("Noise:")));
    }

    #[test]
    fn a_row_beaten_only_by_a_row_that_is_out_names_it() {
        // b is tied with both a and c; a (stronger) beats b, b (stronger)
        // beats c, but a is dearer than c beyond noise.
        let rows = vec![
            noisy("a", 5.5, (5.0, 6.0), 192),
            noisy("b", 5.5, (1.0, 10.0), 128),
            noisy("c", 2.5, (2.0, 3.0), 112),
        ];
        assert_eq!(
            recommend(&rows, &NO_FLOOR),
            vec![
                Verdict::Recommended,
                Verdict::Dominated { by: 0 },
                Verdict::Dominated { by: 1 },
            ]
        );
    }
}
