//! The counted view of tunnel rows (`tunnel --measure instructions`):
//! each end's instructions per MB of payload, their spread and their ratio
//! to the baseline row, and the table that shows them beside (or instead
//! of) the five time tables.

use serde::Serialize;

use super::axes::AXES;
use super::{TunnelReport, TunnelRow};
use crate::report::{Column, Columns, Table};
use crate::stats::{self, Summary};
use crate::workload::counted::Instructions;
use crate::workload::tunnel::TunnelCell;

/// A tunnel row's instructions per megabyte (10^6 bytes) of payload, each
/// side's and both ends', counted under valgrind.
#[derive(Debug, Clone, Serialize)]
pub struct TunnelCounted {
    pub status: crate::measure::CellStatus,
    pub reason: Option<String>,
    /// Packets per sample.
    pub packets: u64,
    /// Payload bytes per sample.
    pub payload_bytes: u64,
    /// The sender's instructions per MB (compress, encrypt, authenticate).
    pub send_per_mb: Option<Summary>,
    /// The receiver's instructions per MB (verify, decrypt, decompress, check).
    pub receive_per_mb: Option<Summary>,
    /// Both ends' instructions per MB.
    pub total_per_mb: Option<Summary>,
    /// (max − min) / median of the samples' totals.
    pub spread: Option<f64>,
    /// Both ends' instructions per MB over the baseline row's (same
    /// engine; medians): the counted twin of `ratio_to_baseline`, in
    /// instructions rather than throughput (above 1: more work per byte).
    pub ratio_to_baseline: Option<f64>,
    /// Each sample's instructions for `payload_bytes`, the sender as client.
    pub samples: Vec<Instructions>,
}

/// A cell's counted instructions as figures per MB.
pub(super) fn counted(cell: &TunnelCell) -> Option<TunnelCounted> {
    let counted = cell.counted.as_ref()?;
    let outcome = &counted.outcome;
    let total = stats::summarize(&counted.per_mb(|s| s.client + s.server));
    Some(TunnelCounted {
        status: outcome.status(),
        reason: outcome.reason().map(String::from),
        packets: counted.packets,
        payload_bytes: counted.payload_bytes,
        send_per_mb: stats::summarize(&counted.per_mb(|s| s.client)),
        receive_per_mb: stats::summarize(&counted.per_mb(|s| s.server)),
        spread: total.map(|t| (t.max - t.min) / t.median),
        total_per_mb: total,
        ratio_to_baseline: None,
        samples: outcome.samples().iter().map(|t| t.value).collect(),
    })
}

/// Sets each counted row's ratio to its baseline's count: `baseline` (a
/// label) of the same engine, or else the no-tunnel row with the same
/// payload and size.
pub(super) fn with_counted_ratios(rows: &mut [TunnelRow], baseline: Option<&str>) {
    let total = |row: &TunnelRow| Some(row.instructions.as_ref()?.total_per_mb?.median);
    let bases: Vec<Option<f64>> = rows
        .iter()
        .map(|row| {
            let base = rows.iter().find(|base| {
                base.engine == row.engine
                    && match baseline {
                        Some(label) => base.label == label,
                        None => {
                            base.scenario.baseline
                                && base.scenario.payload == row.scenario.payload
                                && base.scenario.payload_bytes == row.scenario.payload_bytes
                        }
                    }
            })?;
            total(base)
        })
        .collect();
    for (row, base) in rows.iter_mut().zip(bases) {
        if let (Some(own), Some(base)) = (total(row), base) {
            row.instructions
                .as_mut()
                .expect("counted")
                .ratio_to_baseline = Some(own / base);
        }
    }
}

/// Instructions in millions per MB with a precision that suits their size.
fn millions(instructions_per_mb: f64) -> String {
    let value = instructions_per_mb / 1e6;
    if value >= 100.0 {
        format!("{value:.1}")
    } else if value >= 10.0 {
        format!("{value:.2}")
    } else {
        format!("{value:.3}")
    }
}

/// A row's counts differ between samples by more than this share of
/// their median: "instructions vary".
const VARY_SHARE: f64 = 0.01;

/// A counted row's counts.
fn counts_of(row: &TunnelRow) -> &TunnelCounted {
    row.instructions.as_ref().expect("counted rows")
}

/// The counted instructions per MB of every counted row (`None` when no
/// row was counted).
pub(super) fn table(report: &TunnelReport) -> Option<Table> {
    let counted: Vec<&TunnelRow> = report
        .rows
        .iter()
        .filter(|r| r.instructions.is_some())
        .collect();
    if counted.is_empty() {
        return None;
    }
    let dash = || "—".to_string();
    let median = move |s: Option<Summary>| s.map_or_else(dash, |s| millions(s.median));
    let mut table = Columns::new()
        .with(Column::axis("engine"), |row: &TunnelRow| {
            row.engine.to_string()
        })
        .with_axes(&AXES, |row| &row.scenario)
        .with(Column::number("send M instr/MB"), move |row| {
            median(counts_of(row).send_per_mb)
        })
        .with(Column::number("recv M instr/MB"), move |row| {
            median(counts_of(row).receive_per_mb)
        })
        .with(Column::number("both M instr/MB"), move |row| {
            median(counts_of(row).total_per_mb)
        })
        .with(Column::number("spread").priority(2), move |row| {
            counts_of(row)
                .spread
                .map_or_else(dash, |s| format!("{:.2}%", s * 100.0))
        })
        .with(Column::number("instr × baseline"), move |row| {
            counts_of(row)
                .ratio_to_baseline
                .map_or_else(dash, |r| format!("{r:.2}"))
        })
        .with(
            Column::number("n").priority(1),
            move |row| match counts_of(row).samples.len() {
                0 => dash(),
                n => n.to_string(),
            },
        )
        .with(Column::notes("notes"), move |row| {
            let counts = counts_of(row);
            let mut notes = Vec::new();
            if let Some(reason) = &counts.reason {
                notes.push(format!("{}: {reason}", counts.status));
            }
            if counts.spread.is_some_and(|s| s > VARY_SHARE) {
                notes.push("instructions vary".to_string());
            }
            if row.weak {
                notes.push("WEAK".to_string());
            }
            notes.join("; ")
        })
        .table(counted.iter().copied())
        .titled("Instructions per MB of payload (counted under valgrind)");
    // The batch sizes the measured rows' samples took.
    let mut packets: Vec<u64> = Vec::new();
    for counts in counted.iter().map(|row| counts_of(row)) {
        if counts.status == crate::measure::CellStatus::Measured
            && !packets.contains(&counts.packets)
        {
            packets.push(counts.packets);
        }
    }
    let packets: Vec<String> = packets.iter().map(u64::to_string).collect();
    table.notes.push(format!(
        "send/recv M instr/MB: millions of instructions executed per MB (10^6 bytes) of payload inside the sender's calls (compress, encrypt, authenticate) and the receiver's (verify, decrypt, decompress, check the payload came back), counted under {}'s callgrind on the engines that run in this process: the median of the samples, each a fixed batch of packets ({} packets, at least 256 KiB of payload or 4096 packets) after a first batch uncounted, every packet verified. Counts repeat on any machine, but say nothing of cache misses or stalls; under valgrind the libraries see no AVX-512.",
        report.valgrind.as_deref().unwrap_or("valgrind"),
        if packets.is_empty() { "—".to_string() } else { packets.join(" or ") }
    ));
    table.notes.push(format!(
        "instr × baseline: both ends' instructions per MB over those of {} (above 1: more work per byte; the time tables' × baseline is throughput, below 1 for a slower row). spread: (max − min) / median of the samples' totals; \"instructions vary\" above {:.0}%.",
        report
            .baseline
            .as_deref()
            .unwrap_or("the no-tunnel row of the same payload"),
        VARY_SHARE * 100.0
    ));
    Some(table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::HostInfo;
    use crate::measure::{Outcome, Timed};
    use crate::scenario::tunnel::{Cipher, Compression, Digest, EngineId, Payload, TunnelScenario};
    use crate::workload::tunnel::CountedTransfer;

    /// A counted-only cell of 1 MB of payload per sample.
    fn cell(scenario: TunnelScenario, samples: &[(u64, u64)]) -> TunnelCell {
        TunnelCell {
            engine: EngineId::Inprocess,
            cpu_features: crate::scenario::CpuFeatures::Native,
            scenario,
            outcome: Outcome::Measured {
                samples: Vec::new(),
                precise: true,
                note: None,
            },
            counted: Some(CountedTransfer {
                packets: 1000,
                payload_bytes: 1_000_000,
                outcome: Outcome::Measured {
                    samples: samples
                        .iter()
                        .enumerate()
                        .map(|(round, &(client, server))| Timed {
                            round: round as u32,
                            value: Instructions { client, server },
                        })
                        .collect(),
                    precise: true,
                    note: None,
                },
            }),
        }
    }

    #[test]
    fn counted_rows_are_per_mb_against_the_baseline_and_say_when_they_vary() {
        let baseline = TunnelScenario::baseline(Payload::Random, 1000);
        let cbc = TunnelScenario {
            baseline: false,
            cipher: Cipher::Aes128Cbc,
            digest: Digest::Sha1,
            compression: Compression::None,
            ..baseline
        };
        let cells = [
            cell(baseline, &[(1_000_000, 1_000_000), (1_000_000, 1_000_000)]),
            cell(cbc, &[(30_000_000, 10_000_000), (30_600_000, 10_000_000)]),
        ];
        let tables = super::super::build(&cells, None);
        let counted = tables.rows[1].instructions.as_ref().unwrap();
        assert_eq!(counted.send_per_mb.unwrap().median, 30_300_000.0);
        assert_eq!(counted.receive_per_mb.unwrap().median, 10_000_000.0);
        assert!((counted.ratio_to_baseline.unwrap() - 40.3 / 2.0).abs() < 1e-9);
        assert!((counted.spread.unwrap() - 0.6 / 40.3).abs() < 1e-9);
        let report = TunnelReport {
            setup: Vec::new(),
            tool_version: String::new(),
            run_id: None,
            complete: true,
            baseline: None,
            host: HostInfo::current(),
            libraries: Vec::new(),
            compression_effect: tables.compression_effect,
            ciphers: tables.ciphers,
            digests: tables.digests,
            baselines: tables.baselines,
            versus_fastest: tables.versus_fastest,
            rows: tables.rows,
            seed: None,
            drift: None,
            valgrind: Some("valgrind-3.19.0".into()),
        };
        // Counted and not timed: the counted table alone.
        let shown = super::super::text::tables(&report);
        assert_eq!(shown.len(), 1);
        let rows = &shown[0].rows;
        assert_eq!(
            rows[1][6..11],
            ["30.30", "10.00", "40.30", "1.49%", "20.15"]
        );
        assert_eq!(rows[1].last().unwrap(), "instructions vary");
        assert_eq!(rows[0].last().unwrap(), "");
    }
}
