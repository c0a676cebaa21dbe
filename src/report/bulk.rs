//! The bulk view: per row each side's CPU milliseconds per MB and MB/s (the
//! sender encrypts, the receiver decrypts), both sides together with the
//! interval of the median, and the row's cost against the no-crypto row of
//! its write size from same-round pairs, as a ratio and as the share of the
//! cost that is cryptography.

use serde::Serialize;

use super::compare::kind::Kind;
use super::records::{number, SummaryColumns};
use super::{axis_headers, Axis, Column, ColumnKind, Columns, Document, Table};
use crate::backend::{LibraryInfo, Negotiated};
use crate::host::HostInfo;
use crate::measure::{self, Timed};
use crate::scenario::bulk::{BulkScenario, Channel};
use crate::scenario::{Measure, Subject};
use crate::stats::{self, Drift, PairedRatio, Summary};
use crate::workload::bulk::{BulkCell, BulkSample};
use crate::workload::counted::Instructions;

/// One bulk row with its statistics.
#[derive(Debug, Clone, Serialize)]
pub struct BulkRow {
    pub label: String,
    /// The backend, or no library; exported as `backend`.
    #[serde(rename = "backend")]
    pub subject: Subject,
    pub scenario: BulkScenario,
    pub status: crate::measure::CellStatus,
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
    /// Instructions per byte, counted under valgrind (`--measure instructions`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<BulkCounted>,
}

/// A bulk row's instructions per application byte, each side's.
#[derive(Debug, Clone, Serialize)]
pub struct BulkCounted {
    pub status: crate::measure::CellStatus,
    pub reason: Option<String>,
    /// The sender's instructions per byte (protect and put on the pipe).
    pub sender_per_byte: Option<Summary>,
    /// The receiver's instructions per byte (take off the pipe and open).
    pub receiver_per_byte: Option<Summary>,
    /// (max − min) / median of the samples' totals.
    pub spread: Option<f64>,
    /// Both sides' instructions over the no-crypto row's of the same write
    /// size (medians).
    pub ratio_to_plain: Option<f64>,
    /// Each sample's instructions for the cell's bytes, sender as client.
    pub samples: Vec<Instructions>,
}

/// A cell's counted instructions as figures per byte.
fn counted(cell: &BulkCell) -> Option<BulkCounted> {
    let outcome = cell.instructions.as_ref()?;
    let samples: Vec<Instructions> = outcome.samples().iter().map(|t| t.value).collect();
    let bytes = cell.counted_bytes.max(1) as f64;
    let per_byte = |pick: fn(&Instructions) -> u64| {
        stats::summarize(
            &samples
                .iter()
                .map(|s| pick(s) as f64 / bytes)
                .collect::<Vec<_>>(),
        )
    };
    let total = per_byte(|s| s.client + s.server);
    Some(BulkCounted {
        status: outcome.status(),
        reason: outcome.reason().map(String::from),
        sender_per_byte: per_byte(|s| s.client),
        receiver_per_byte: per_byte(|s| s.server),
        spread: total.map(|t| (t.max - t.min) / t.median),
        ratio_to_plain: None,
        samples,
    })
}

fn summary(samples: &[Timed<BulkSample>], pick: fn(&BulkSample) -> f64) -> Option<Summary> {
    stats::summarize(&samples.iter().map(|s| pick(&s.value)).collect::<Vec<_>>())
}

/// Rows in a stable order (write size, no-crypto row first, version, suite,
/// backend) with their ratio to the no-crypto row of their write size.
pub fn build_rows(cells: &[BulkCell]) -> Vec<BulkRow> {
    let mut cells = cells.to_vec();
    let rank = super::backend_rank;
    cells.sort_by(|a, b| {
        let key = |c: &BulkCell| {
            (
                c.scenario.write_bytes,
                c.scenario.transport,
                c.scenario.channel,
                rank(c.subject),
            )
        };
        key(a)
            .cmp(&key(b))
            .then_with(|| a.subject.name().cmp(&b.subject.name()))
    });
    let plain_rounds = |of: &BulkScenario| {
        let plain = of.no_crypto_twin();
        cells
            .iter()
            .find(|c| c.scenario == plain && !c.samples().is_empty())
            .map(|c| stats::round_medians(&measure::costs(c.samples())))
    };
    let rows = cells
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
                subject: cell.subject,
                scenario: cell.scenario,
                status: cell.outcome.status(),
                reason: cell.outcome.stored_reason().map(String::from),
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
                instructions: counted(cell),
            }
        })
        .collect();
    with_counted_ratios(rows)
}

/// Sets each counted row's ratio to the no-crypto row of its write size.
fn with_counted_ratios(mut rows: Vec<BulkRow>) -> Vec<BulkRow> {
    {
        let total = |row: &BulkRow| {
            let counted = row.instructions.as_ref()?;
            Some(counted.sender_per_byte?.median + counted.receiver_per_byte?.median)
        };
        let plains: Vec<(BulkScenario, f64)> = rows
            .iter()
            .filter(|r| r.scenario.channel.is_plain())
            .filter_map(|r| Some((r.scenario, total(r)?)))
            .collect();
        for row in &mut rows {
            let plain = row.scenario.no_crypto_twin();
            let base = plains.iter().find(|(s, _)| *s == plain).map(|(_, t)| *t);
            if let (Some(own), Some(base)) = (total(row), base) {
                if !row.scenario.channel.is_plain() {
                    row.instructions.as_mut().expect("counted").ratio_to_plain = Some(own / base);
                }
            }
        }
    }
    rows
}

/// A scenario's protocol, and the transport when not memory.
fn protocol(scenario: &BulkScenario) -> String {
    scenario.channel.display() + &scenario.transport.over_suffix()
}

/// A scenario's suite.
fn suite(scenario: &BulkScenario) -> String {
    scenario.suite_name().to_string()
}

/// A scenario's bytes per write.
fn write_bytes(scenario: &BulkScenario) -> String {
    scenario.write_bytes.to_string()
}

/// A row of `compare`: a scenario and one side of it ("sender", "receiver").
pub(crate) type Sided = (BulkScenario, &'static str);

/// A row's axes as `compare` shows them, a row per side, each with its
/// cell (the bulk tables draw the write size as a figure).
pub(crate) const COMPARED_AXES: [Axis<Sided>; 4] = [
    Axis {
        header: "protocol",
        cell: |(s, _)| protocol(s),
    },
    Axis {
        header: "suite",
        cell: |(s, _)| suite(s),
    },
    Axis {
        header: "write B",
        cell: |(s, _)| write_bytes(s),
    },
    Axis {
        header: "side",
        cell: |(_, side)| side.to_string(),
    },
];

/// What a bulk run's rows measure in `compare`: one side's CPU time per
/// MB, or its instructions per byte, a row per side.
pub fn compared(measure: Measure) -> Option<Kind> {
    let kind = Kind::rows("bulk", "backend", axis_headers(&COMPARED_AXES).to_vec());
    match measure {
        Measure::Time => Some(kind.on_time(
            "CPU ms/MB",
            "one side's CPU time per MB (10^6 bytes) of application data (sender: protect and write; receiver: read and open), a row per side",
            1.0,
        )),
        Measure::Instructions => Some(kind.on_counts(
            "instr/B",
            "one side's instructions per byte of application data (sender: protect and write; receiver: read and open), counted under valgrind, a row per side",
            1.0,
        )),
        Measure::Memory => None,
    }
}

/// The columns both bulk tables start with: the backend and the
/// scenario, each an axis.
fn leading<'a>() -> Columns<'a, BulkRow> {
    Columns::new()
        .with(Column::axis("backend"), |r: &BulkRow| r.subject.to_string())
        .with(Column::axis("protocol"), |r| protocol(&r.scenario))
        .with(Column::axis("suite"), |r| suite(&r.scenario))
        .with(Column::number("write B").kind(ColumnKind::Axis), |r| {
            write_bytes(&r.scenario)
        })
}

/// A counted row's figures.
fn counted_of(row: &BulkRow) -> &BulkCounted {
    row.instructions.as_ref().expect("counted rows only")
}

/// The counted instructions per byte beside each row, when counted.
fn counted_table(rows: &[BulkRow], counted_with: Option<&str>) -> Option<Table> {
    if rows.iter().all(|r| r.instructions.is_none()) {
        return None;
    }
    let dash = || "—".to_string();
    let median = move |s: Option<Summary>| s.map(|s| ms(s.median)).unwrap_or_else(dash);
    // On a narrow terminal the spread and the count go first; the axes,
    // each side's count and the ratio stay.
    let mut table = leading()
        .with(Column::number("send instr/B"), move |r| {
            median(counted_of(r).sender_per_byte)
        })
        .with(Column::number("recv instr/B"), move |r| {
            median(counted_of(r).receiver_per_byte)
        })
        .with(Column::number("spread").priority(2), |r| {
            counted_of(r)
                .spread
                .map(|s| format!("{:.2}%", s * 100.0))
                .unwrap_or_else(dash)
        })
        .with(Column::number("× no crypto"), |r| {
            counted_of(r)
                .ratio_to_plain
                .map(|r| format!("{r:.2}"))
                .unwrap_or_else(dash)
        })
        .with(Column::number("n").priority(1), |r| {
            match counted_of(r).samples.len() {
                0 => dash(),
                n => n.to_string(),
            }
        })
        .with(Column::notes("notes"), |r| {
            let counted = counted_of(r);
            counted
                .reason
                .as_ref()
                .map(|reason| format!("{}: {reason}", counted.status))
                .unwrap_or_default()
        })
        .table(rows.iter().filter(|r| r.instructions.is_some()))
        .titled("Instructions per byte of application data (counted under valgrind)");
    table.notes.push(format!(
        "send/recv instr/B: instructions executed inside the sender's calls (protect, put on the pipe) and the receiver's (take off the pipe, open) per byte of application data, counted under {}'s callgrind (median of the samples; each sample one row's bytes per sample). Counts repeat on any machine, but say nothing of cache misses or stalls; under valgrind the libraries see no AVX-512. × no crypto: both sides' instructions over the no-crypto row's of the same write size.",
        counted_with.unwrap_or("valgrind")
    ));
    Some(table)
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
    let dash = || "—".to_string();
    let median = move |s: Option<Summary>| s.map(|s| ms(s.median)).unwrap_or_else(dash);
    let rate = move |m: Option<f64>| m.map(|m| format!("{m:.0}")).unwrap_or_else(dash);
    // On a narrow terminal the sample count goes first, then the rates,
    // the crypto share (it follows from the ratio) and each side's cost;
    // the axes, both sides' cost with its interval and the ratio stay.
    let mut table = leading()
        .with(Column::number("send ms/MB").priority(2), move |r| {
            median(r.sender_ms_per_mb)
        })
        .with(Column::number("recv ms/MB").priority(2), move |r| {
            median(r.receiver_ms_per_mb)
        })
        .with(Column::number("send MB/s").priority(4), move |r| {
            rate(r.sender_mb_per_s)
        })
        .with(Column::number("recv MB/s").priority(4), move |r| {
            rate(r.receiver_mb_per_s)
        })
        .with(Column::number("both ms/MB (±95% CI)"), |r| {
            r.total_ms_per_mb
                .map(|s| {
                    let spread = s.median_ci95.relative_half_width(s.median) * 100.0;
                    format!("{} ±{spread:.1}%", ms(s.median))
                })
                .unwrap_or_else(dash)
        })
        .with(Column::number("× no crypto"), |r| {
            r.ratio_to_plain
                .as_ref()
                .map(|r| {
                    let spread = r.ci95.relative_half_width(r.value) * 100.0;
                    if spread.is_finite() && r.coverage >= 0.95 {
                        format!("{:.2} ±{spread:.1}%", r.value)
                    } else {
                        format!("{:.2}", r.value)
                    }
                })
                .unwrap_or_else(dash)
        })
        .with(Column::number("crypto share").priority(3), |r| {
            r.crypto_share
                .map(|s| format!("{:.0}%", s * 100.0))
                .unwrap_or_else(dash)
        })
        .with(Column::number("n").priority(5), |r| {
            if r.sample_count > 0 {
                r.sample_count.to_string()
            } else {
                dash()
            }
        })
        .with(Column::notes("notes"), notes)
        .table(rows);
    table.notes.push("send/recv: the thread's CPU time inside the sender's calls (protect, put on the pipe) and the receiver's (take off the pipe, open), per MB (10^6 bytes) of application data, median over samples; MB/s per CPU second of that side. The handshake is not counted.".to_string());
    table.notes.push("× no crypto: both sides' CPU time over that of the no-crypto row of the same write size (the same writes through the same pipe with the same copies; for DTLS and QUIC rows, the same writes in datagrams of the same MTU), median of same-round ratios; crypto share = 1 - 1/ratio.".to_string());
    table
}

/// A row's notes: why it is not measured, an imprecise row, the suite's
/// security notes.
fn notes(row: &BulkRow) -> String {
    let mut notes = Vec::new();
    let measured = row.status == crate::measure::CellStatus::Measured;
    match &row.reason {
        // A measured row's reason is its note (the budget was short).
        Some(note) if measured => notes.push(note.clone()),
        Some(reason) => notes.push(format!("{}: {reason}", row.status)),
        None if measured && !row.precise => notes.push("precision not reached".to_string()),
        None => {}
    }
    if row.status != crate::measure::CellStatus::Unsupported && !row.scenario.channel.is_plain() {
        notes.extend(row.security_notes.iter().map(|n| n.to_string()));
    }
    notes.join("; ")
}

/// Each side's milliseconds per MB, to four decimals.
const COST_COLUMNS: SummaryColumns = SummaryColumns {
    with_p99: false,
    interval: "median_ci",
    unit: "_ms_per_mb",
    decimals: 4,
};

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
        headers.extend(COST_COLUMNS.headers(side));
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
    let mut table = Table::records(headers);
    for row in rows {
        let negotiated = row.negotiated.as_ref();
        let mut fields = vec![
            row.label.clone(),
            row.subject.to_string(),
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
            number(row.sender_mb_per_s, 4),
            number(row.receiver_mb_per_s, 4),
        ];
        for summary in [
            row.sender_ms_per_mb,
            row.receiver_ms_per_mb,
            row.total_ms_per_mb,
        ] {
            fields.extend(COST_COLUMNS.fields(summary.as_ref()));
        }
        let ratio = row.ratio_to_plain.as_ref();
        fields.extend([
            number(ratio.map(|r| r.value), 4),
            number(ratio.map(|r| r.ci95.low), 4),
            number(ratio.map(|r| r.ci95.high), 4),
            ratio.map(|r| r.pairs.to_string()).unwrap_or_default(),
            number(row.crypto_share, 4),
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
    /// The valgrind that counted instructions, if any did.
    pub counted_with: Option<&'a str>,
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
            tables: {
                // A run that counted and did not time shows its counts only.
                let timed = rows.iter().any(|r| r.sample_count > 0)
                    || rows.iter().all(|r| r.instructions.is_none());
                let mut tables = Vec::new();
                if timed {
                    tables.push(table(&rows));
                }
                tables.extend(counted_table(&rows, self.counted_with));
                tables
            },
            records: records(&rows),
            data,
            footer: super::run_notes(drift.as_ref(), self.precision, self.complete),
            figures: super::plot::bulk_figures(&rows),
        }
    }
}
