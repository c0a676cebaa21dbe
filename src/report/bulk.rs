//! The bulk view: per row each side's CPU milliseconds per MB and MB/s (the
//! sender encrypts, the receiver decrypts), both sides together with the
//! interval of the median, and the row's cost against the no-crypto row of
//! its write size from same-round pairs, as a ratio and as the share of the
//! cost that is cryptography.

use serde::Serialize;

use super::{Document, Table};
use crate::backend::{LibraryInfo, Negotiated};
use crate::host::HostInfo;
use crate::measure::{self, Timed};
use crate::scenario::bulk::{BulkScenario, Channel};
use crate::stats::{self, Drift, PairedRatio, Summary};
use crate::workload::bulk::{BulkCell, BulkSample};

/// One bulk row with its statistics.
#[derive(Debug, Clone, Serialize)]
pub struct BulkRow {
    pub label: String,
    pub backend: String,
    pub scenario: BulkScenario,
    pub status: &'static str,
    pub reason: Option<String>,
    pub negotiated: Option<Negotiated>,
    pub sample_count: usize,
    /// Application bytes per sample.
    pub sample_bytes: u64,
    pub precise: bool,
    /// The sender's CPU milliseconds per MB (10^6 bytes) = ns per byte.
    pub sender_ms_per_mb: Option<Summary>,
    /// The receiver's CPU milliseconds per MB.
    pub receiver_ms_per_mb: Option<Summary>,
    /// Both sides' CPU milliseconds per MB.
    pub total_ms_per_mb: Option<Summary>,
    /// MB per CPU second of the sender, from its median.
    pub sender_mb_per_s: Option<f64>,
    /// MB per CPU second of the receiver, from its median.
    pub receiver_mb_per_s: Option<f64>,
    /// Both sides' cost over the no-crypto row's of the same write size,
    /// from same-round pairs.
    pub ratio_to_plain: Option<PairedRatio>,
    /// 1 - 1 / ratio_to_plain: the part of the row's cost that the
    /// cryptography (and the library's record layer) adds.
    pub crypto_share: Option<f64>,
    pub security_notes: Vec<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<Timed<BulkSample>>,
}

fn summary(samples: &[Timed<BulkSample>], pick: fn(&BulkSample) -> f64) -> Option<Summary> {
    stats::summarize(&samples.iter().map(|s| pick(&s.value)).collect::<Vec<_>>())
}

/// Rows in a stable order (write size, no-crypto row first, version, suite,
/// backend) with their ratio to the no-crypto row of their write size.
pub fn build_rows(cells: &[BulkCell]) -> Vec<BulkRow> {
    let mut cells = cells.to_vec();
    let rank = |backend: &str| {
        crate::backend::BACKEND_IDS
            .iter()
            .position(|id| *id == backend)
            .unwrap_or(usize::MAX)
    };
    cells.sort_by(|a, b| {
        let key = |c: &BulkCell| {
            (
                c.scenario.write_bytes,
                c.scenario.transport,
                c.scenario.channel,
                rank(&c.backend),
            )
        };
        key(a).cmp(&key(b)).then_with(|| a.backend.cmp(&b.backend))
    });
    let plain_rounds = |of: &BulkScenario| {
        let plain = of.no_crypto_twin();
        cells
            .iter()
            .find(|c| c.scenario == plain && !c.samples().is_empty())
            .map(|c| stats::round_medians(&measure::costs(c.samples())))
    };
    cells
        .iter()
        .map(|cell| {
            let samples = cell.samples();
            let sender = summary(samples, BulkSample::sender_ns_per_byte);
            let receiver = summary(samples, BulkSample::receiver_ns_per_byte);
            let ratio = match (cell.scenario.channel, samples.is_empty()) {
                (Channel::Tls { .. }, false) => plain_rounds(&cell.scenario).and_then(|base| {
                    stats::paired_ratio(&stats::round_medians(&measure::costs(samples)), &base)
                }),
                _ => None,
            };
            BulkRow {
                label: cell.scenario.label(),
                backend: cell.backend.clone(),
                scenario: cell.scenario,
                status: cell.outcome.status(),
                reason: cell.outcome.reason().map(String::from),
                negotiated: cell.negotiated.clone(),
                sample_count: samples.len(),
                sample_bytes: cell.sample_bytes,
                precise: cell.outcome.precise(),
                sender_mb_per_s: sender.map(|s| 1e3 / s.median),
                receiver_mb_per_s: receiver.map(|s| 1e3 / s.median),
                sender_ms_per_mb: sender,
                receiver_ms_per_mb: receiver,
                total_ms_per_mb: summary(samples, |s| {
                    use crate::measure::Sampled;
                    s.cost()
                }),
                crypto_share: ratio.as_ref().map(|r| 1.0 - 1.0 / r.value),
                ratio_to_plain: ratio,
                security_notes: cell.scenario.security_notes(),
                samples: samples.to_vec(),
            }
        })
        .collect()
}

/// The drift of the machine over a bulk run, from every measured cell.
pub fn drift(cells: &[BulkCell]) -> Option<Drift> {
    let per_cell: Vec<Vec<(u32, f64)>> = cells
        .iter()
        .filter(|c| !c.samples().is_empty())
        .map(|c| stats::round_medians(&measure::costs(c.samples())))
        .collect();
    stats::drift(&per_cell)
}

/// Milliseconds per MB with a precision that suits their size.
fn ms(value: f64) -> String {
    if value >= 10.0 {
        format!("{value:.1}")
    } else if value >= 1.0 {
        format!("{value:.2}")
    } else {
        format!("{value:.3}")
    }
}

fn table(rows: &[BulkRow]) -> Table {
    let mut table = Table::new(
        &[
            "backend",
            "protocol",
            "suite",
            "write B",
            "send ms/MB",
            "recv ms/MB",
            "send MB/s",
            "recv MB/s",
            "both ms/MB (±95% CI)",
            "× no crypto",
            "crypto share",
            "n",
            "notes",
        ],
        &[
            false, false, false, true, true, true, true, true, true, true, true, true, false,
        ],
    );
    let dash = || "—".to_string();
    for row in rows {
        let median = |s: Option<Summary>| s.map(|s| ms(s.median)).unwrap_or_else(dash);
        let both = row.total_ms_per_mb.map(|s| {
            let spread = s.median_ci95.relative_half_width(s.median) * 100.0;
            format!("{} ±{spread:.1}%", ms(s.median))
        });
        let ratio = row.ratio_to_plain.as_ref().map(|r| {
            let spread = r.ci95.relative_half_width(r.value) * 100.0;
            if spread.is_finite() && r.coverage >= 0.95 {
                format!("{:.2} ±{spread:.1}%", r.value)
            } else {
                format!("{:.2}", r.value)
            }
        });
        let mut notes = Vec::new();
        if let Some(reason) = &row.reason {
            notes.push(format!("{}: {reason}", row.status));
        }
        if row.status == "measured" && !row.precise {
            notes.push("precision not reached".to_string());
        }
        if row.status != "unsupported" && !row.scenario.channel.is_plain() {
            notes.extend(row.security_notes.iter().map(|n| n.to_string()));
        }
        table.rows.push(vec![
            row.backend.clone(),
            row.scenario.channel.protocol_name() + &row.scenario.transport.over_suffix(),
            row.scenario.suite_id().to_string(),
            row.scenario.write_bytes.to_string(),
            median(row.sender_ms_per_mb),
            median(row.receiver_ms_per_mb),
            row.sender_mb_per_s
                .map(|m| format!("{m:.0}"))
                .unwrap_or_else(dash),
            row.receiver_mb_per_s
                .map(|m| format!("{m:.0}"))
                .unwrap_or_else(dash),
            both.unwrap_or_else(dash),
            ratio.unwrap_or_else(dash),
            row.crypto_share
                .map(|s| format!("{:.0}%", s * 100.0))
                .unwrap_or_else(dash),
            if row.sample_count > 0 {
                row.sample_count.to_string()
            } else {
                dash()
            },
            notes.join("; "),
        ]);
    }
    table.notes.push("send/recv: the thread's CPU time inside the sender's calls (protect, put on the pipe) and the receiver's (take off the pipe, open), per MB (10^6 bytes) of application data, median over samples; MB/s per CPU second of that side. The handshake is not counted.".to_string());
    table.notes.push("× no crypto: both sides' CPU time over that of the no-crypto row of the same write size (the same writes through the same pipe with the same copies; for DTLS rows, the same writes in datagrams of the same MTU), median of same-round ratios; crypto share = 1 - 1/ratio.".to_string());
    table
}

/// One line per row with every statistic (CSV).
fn records(rows: &[BulkRow]) -> Table {
    let mut headers: Vec<String> = [
        "label",
        "backend",
        "status",
        "reason",
        "tls_version",
        "suite",
        "write_bytes",
        "negotiated_version",
        "negotiated_suite",
        "samples",
        "sample_bytes",
        "precise",
        "sender_mb_per_s",
        "receiver_mb_per_s",
    ]
    .map(String::from)
    .to_vec();
    for side in ["sender", "receiver", "total"] {
        for statistic in [
            "mean",
            "median",
            "stdev",
            "min",
            "max",
            "median_ci_low",
            "median_ci_high",
        ] {
            headers.push(format!("{side}_{statistic}_ms_per_mb"));
        }
    }
    headers.extend(
        [
            "ratio_to_plain",
            "ratio_ci_low",
            "ratio_ci_high",
            "ratio_pairs",
            "crypto_share",
            "security_notes",
        ]
        .map(String::from),
    );
    let number = |value: Option<f64>| value.map(|v| format!("{v:.4}")).unwrap_or_default();
    let mut table = Table {
        headers,
        ..Table::default()
    };
    for row in rows {
        let negotiated = row.negotiated.as_ref();
        let mut fields = vec![
            row.label.clone(),
            row.backend.clone(),
            row.status.to_string(),
            row.reason.clone().unwrap_or_default(),
            row.scenario.protocol_id().to_string(),
            row.scenario.suite_id().to_string(),
            row.scenario.write_bytes.to_string(),
            negotiated.map(|n| n.version.clone()).unwrap_or_default(),
            negotiated.map(|n| n.suite.clone()).unwrap_or_default(),
            row.sample_count.to_string(),
            row.sample_bytes.to_string(),
            row.precise.to_string(),
            number(row.sender_mb_per_s),
            number(row.receiver_mb_per_s),
        ];
        for summary in [
            row.sender_ms_per_mb,
            row.receiver_ms_per_mb,
            row.total_ms_per_mb,
        ] {
            let pick = |f: fn(&Summary) -> f64| number(summary.as_ref().map(f));
            fields.extend([
                pick(|s| s.mean),
                pick(|s| s.median),
                pick(|s| s.stdev),
                pick(|s| s.min),
                pick(|s| s.max),
                pick(|s| s.median_ci95.low),
                pick(|s| s.median_ci95.high),
            ]);
        }
        let ratio = row.ratio_to_plain.as_ref();
        fields.extend([
            number(ratio.map(|r| r.value)),
            number(ratio.map(|r| r.ci95.low)),
            number(ratio.map(|r| r.ci95.high)),
            ratio.map(|r| r.pairs.to_string()).unwrap_or_default(),
            number(row.crypto_share),
            row.security_notes.join("; "),
        ]);
        table.rows.push(fields);
    }
    table
}

/// A finished (or interrupted) bulk run, ready to export.
pub struct BulkReport<'a> {
    pub run_id: Option<i64>,
    pub complete: bool,
    pub host: &'a HostInfo,
    pub libraries: &'a [LibraryInfo],
    pub seed: Option<u64>,
    pub precision: Option<f64>,
    pub cells: &'a [BulkCell],
}

impl BulkReport<'_> {
    pub fn document(&self) -> Document {
        let rows = build_rows(self.cells);
        let drift = drift(self.cells);
        let data = super::json_with(
            super::provenance_json(
                self.run_id,
                self.complete,
                self.host,
                self.libraries,
                self.seed,
                drift.as_ref(),
            ),
            serde_json::json!({ "rows": rows }),
        );
        Document {
            heading: super::heading(self.host, self.libraries),
            tables: vec![table(&rows)],
            records: records(&rows),
            data,
            footer: super::run_notes(drift.as_ref(), self.precision, self.complete),
            figures: super::plot::bulk_figures(&rows),
        }
    }
}
