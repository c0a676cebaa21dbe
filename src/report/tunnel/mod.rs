//! Tunnel reports: rows with throughput statistics per direction, and the
//! five tables of the classic OpenVPN study (effect of compression, ciphers
//! and digests normalised to the fastest, the full ranking, the no-tunnel
//! baseline), as a terminal table, Markdown, CSV or JSON; and the
//! engines' connection set-up ([`setup`]; not in the CSV, whose records
//! are the rows).

use std::collections::BTreeMap;

use serde::Serialize;

use super::Document;

mod axes;
mod counted;
mod csv;
mod fastest;
mod format;
mod setup;
mod text;
use crate::backend::LibraryInfo;
use crate::host::HostInfo;
use crate::measure::{self, Outcome, Timed};
use crate::scenario::names::Named;
use crate::scenario::tunnel::{Cipher, Compression, Digest, Payload, RowEngine, TunnelScenario};
use crate::scenario::CpuFeatures;
use crate::stats::{self, Drift, PairedRatio, Summary};
use crate::workload::tunnel::{TunnelCell, TunnelSample};
pub use axes::compared;
pub(crate) use axes::{axis_cells, AXIS_HEADERS};
pub use counted::TunnelCounted;
pub use fastest::VersusFastest;
pub use setup::{rows as setup_rows, SetupRow};

/// One row: a cell with its statistics. Throughput is payload megabytes
/// (10^6 bytes) per second.
#[derive(Debug, Clone, Serialize)]
pub struct TunnelRow {
    pub label: String,
    pub engine: RowEngine,
    pub scenario: TunnelScenario,
    pub description: String,
    pub status: crate::measure::CellStatus,
    pub reason: Option<String>,
    pub sample_count: usize,
    pub precise: bool,
    /// Both ends together: in process, payload over sender + receiver CPU
    /// time (one core doing both); a real tunnel, both transfers over
    /// their total wall time.
    pub mb_per_s: Option<Summary>,
    /// In process: per second of the sender's CPU time. A real tunnel:
    /// the transfer from namespace A to B, per second of wall time.
    pub send_mb_per_s: Option<Summary>,
    /// In process: per second of the receiver's CPU time. A real tunnel:
    /// the transfer from B to A, per second of wall time.
    pub receive_mb_per_s: Option<Summary>,
    /// CPU milliseconds per MB of payload at the sending end: in process
    /// the thread's, a real tunnel the tunnel daemon's (its process, all
    /// threads, user and system); none for a real no-tunnel row.
    pub send_cpu_ms_per_mb: Option<Summary>,
    /// CPU milliseconds per MB of payload at the receiving end, as
    /// `send_cpu_ms_per_mb`.
    pub receive_cpu_ms_per_mb: Option<Summary>,
    pub send_packets_per_s: Option<Summary>,
    pub receive_packets_per_s: Option<Summary>,
    /// Throughput relative to the baseline row (same engine), from same-round pairs.
    pub ratio_to_baseline: Option<PairedRatio>,
    pub weak: bool,
    pub security_notes: Vec<&'static str>,
    /// Per round, the median cost in ns per payload byte (for paired ratios).
    #[serde(skip)]
    pub round_costs: Vec<(u32, f64)>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<Timed<TunnelSample>>,
    /// Instructions per MB of payload, counted under valgrind
    /// (`--measure instructions`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<TunnelCounted>,
}

/// Table 1: compressed against uncompressed throughput of the same cipher
/// and digest, summarised over every pair.
#[derive(Debug, Clone, Serialize)]
pub struct CompressionEffect {
    pub engine: RowEngine,
    pub payload: Payload,
    pub payload_bytes: usize,
    pub compression: Compression,
    pub pairs: usize,
    pub ratio: Summary,
}

/// Tables 2 and 3: one cipher or digest, normalised to the fastest.
#[derive(Debug, Clone, Serialize)]
pub struct Normalised {
    pub engine: RowEngine,
    pub name: &'static str,
    /// Median over this algorithm's uncompressed rows of their median MB/s.
    pub mb_per_s: f64,
    pub send_mb_per_s: f64,
    pub receive_mb_per_s: f64,
    /// Throughput over the fastest algorithm's (1.0 for the fastest): the
    /// median over rounds of the same-round ratio of the group medians.
    pub relative: f64,
    pub rows: usize,
    pub weak: bool,
    pub security_notes: Vec<&'static str>,
}

/// Table 5: the no-tunnel baseline against the tunnels.
#[derive(Debug, Clone, Serialize)]
pub struct BaselineComparison {
    pub engine: RowEngine,
    pub payload: Payload,
    pub payload_bytes: usize,
    pub baseline_mb_per_s: f64,
    pub fastest_tunnel: String,
    pub fastest_tunnel_mb_per_s: f64,
    pub slowest_tunnel: String,
    pub slowest_tunnel_mb_per_s: f64,
    /// How many times faster the baseline is than the fastest tunnel.
    pub baseline_over_fastest: f64,
}

/// A finished (or interrupted) tunnel run, ready to export.
#[derive(Debug, Clone, Serialize)]
pub struct TunnelReport {
    pub tool_version: String,
    pub run_id: Option<i64>,
    pub complete: bool,
    pub baseline: Option<String>,
    pub host: HostInfo,
    pub libraries: Vec<LibraryInfo>,
    pub compression_effect: Vec<CompressionEffect>,
    pub ciphers: Vec<Normalised>,
    pub digests: Vec<Normalised>,
    pub baselines: Vec<BaselineComparison>,
    /// Table 6: with rows of two engines or more, each tunnel row against
    /// the fastest of its payload and size.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub versus_fastest: Vec<VersusFastest>,
    pub rows: Vec<TunnelRow>,
    pub seed: Option<u64>,
    pub drift: Option<Drift>,
    /// The valgrind that counted instructions, if any did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valgrind: Option<String>,
    /// Each engine's connection set-up (`--setup`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub setup: Vec<SetupRow>,
}

fn summarize_by(
    samples: &[Timed<TunnelSample>],
    value: impl Fn(&TunnelSample) -> f64,
) -> Option<Summary> {
    let values: Vec<f64> = samples
        .iter()
        .map(|s| value(&s.value))
        .filter(|v| v.is_finite())
        .collect();
    stats::summarize(&values)
}

/// Bytes over nanoseconds is gigabytes per second; times 1000, megabytes.
fn mb_per_s(bytes: u64, nanos: u64) -> f64 {
    bytes as f64 / nanos.max(1) as f64 * 1000.0
}

fn row_of(cell: &TunnelCell) -> TunnelRow {
    let scenario = &cell.scenario;
    let mut row = TunnelRow {
        label: scenario.label(),
        engine: cell.row_engine(),
        scenario: *scenario,
        description: scenario.describe(),
        status: crate::measure::CellStatus::Measured,
        reason: None,
        sample_count: 0,
        precise: false,
        mb_per_s: None,
        send_mb_per_s: None,
        receive_mb_per_s: None,
        send_cpu_ms_per_mb: None,
        receive_cpu_ms_per_mb: None,
        send_packets_per_s: None,
        receive_packets_per_s: None,
        ratio_to_baseline: None,
        weak: scenario.is_weak(),
        security_notes: scenario.security_notes(),
        round_costs: stats::round_medians(&measure::costs(cell.samples())),
        samples: Vec::new(),
        instructions: counted::counted(cell),
    };
    match &cell.outcome {
        Outcome::Measured {
            samples, precise, ..
        } => {
            row.sample_count = samples.len();
            row.precise = *precise;
            row.reason = cell.outcome.note().map(String::from);
            // A batch, per second of the thread's CPU time; a transfer
            // (the payload each way), per second of the transfers' wall
            // time: the CPU time is the daemons', beside it.
            let (total, send, receive): (fn(&TunnelSample) -> u64, _, _) =
                if samples.iter().all(|s| s.value.is_transfer()) {
                    (
                        TunnelSample::total_ns,
                        (|s| s.send_ns) as fn(&TunnelSample) -> u64,
                        (|s| s.receive_ns) as fn(&TunnelSample) -> u64,
                    )
                } else {
                    (
                        TunnelSample::total_cpu_ns,
                        |s| s.send_cpu_ns,
                        |s| s.receive_cpu_ns,
                    )
                };
            row.mb_per_s = summarize_by(samples, |s| mb_per_s(s.bytes_per_end(), total(s)));
            row.send_mb_per_s = summarize_by(samples, |s| mb_per_s(s.payload_bytes, send(s)));
            row.receive_mb_per_s = summarize_by(samples, |s| mb_per_s(s.payload_bytes, receive(s)));
            if samples.iter().all(|s| s.value.has_cpu_time()) {
                // Nanoseconds per byte are milliseconds per megabyte.
                let per_mb =
                    |nanos: u64, s: &TunnelSample| nanos as f64 / s.bytes_per_end().max(1) as f64;
                row.send_cpu_ms_per_mb = summarize_by(samples, |s| per_mb(s.send_cpu_ns, s));
                row.receive_cpu_ms_per_mb = summarize_by(samples, |s| per_mb(s.receive_cpu_ns, s));
            }
            if samples.iter().all(|s| !s.value.is_transfer()) {
                row.send_packets_per_s = summarize_by(samples, |s| {
                    s.packets as f64 / s.send_cpu_ns.max(1) as f64 * 1e9
                });
                row.receive_packets_per_s = summarize_by(samples, |s| {
                    s.packets as f64 / s.receive_cpu_ns.max(1) as f64 * 1e9
                });
            }
            row.samples = samples.clone();
        }
        Outcome::Unsupported { reason } => {
            row.status = crate::measure::CellStatus::Unsupported;
            row.reason = Some(reason.clone());
        }
        Outcome::Failed { reason } => {
            row.status = crate::measure::CellStatus::Failed;
            row.reason = Some(reason.clone());
        }
    }
    row
}

/// The rows and the tables computed from them.
#[derive(Debug, Clone)]
pub struct TunnelTables {
    pub rows: Vec<TunnelRow>,
    pub compression_effect: Vec<CompressionEffect>,
    pub ciphers: Vec<Normalised>,
    pub digests: Vec<Normalised>,
    pub baselines: Vec<BaselineComparison>,
    pub versus_fastest: Vec<VersusFastest>,
}

/// Builds the rows and the five tables (and table 6, when rows of two
/// engines or more were measured). Each row's ratio is to `baseline`
/// (a label) of the same engine, or else to the no-tunnel row with the same
/// payload and size.
pub fn build(cells: &[TunnelCell], baseline: Option<&str>) -> TunnelTables {
    let mut rows: Vec<TunnelRow> = cells.iter().map(row_of).collect();
    counted::with_counted_ratios(&mut rows, baseline);
    let bases: Vec<Option<Vec<(u32, f64)>>> = rows
        .iter()
        .map(|row| {
            rows.iter()
                .find(|base| {
                    base.engine == row.engine
                        && match baseline {
                            Some(label) => base.label == label,
                            None => {
                                base.scenario.baseline
                                    && base.scenario.payload == row.scenario.payload
                                    && base.scenario.payload_bytes == row.scenario.payload_bytes
                            }
                        }
                })
                .filter(|base| base.mb_per_s.is_some())
                .map(|base| base.round_costs.clone())
        })
        .collect();
    for (row, base) in rows.iter_mut().zip(bases) {
        if let (true, Some(base)) = (row.mb_per_s.is_some(), base) {
            // Costs are time per byte: throughput's ratio is the inverse.
            row.ratio_to_baseline =
                stats::paired_ratio(&row.round_costs, &base).map(|r| r.inverse());
        }
    }
    let compression = compression_effect(&rows);
    let ciphers = normalised(
        &rows,
        |s| (s.cipher.id(), s.cipher.is_weak(), s.cipher.security_notes()),
        |s| TunnelScenario {
            cipher: Cipher::ALL[0],
            ..s
        },
    );
    let digests = normalised(
        &rows
            .iter()
            .filter(|r| r.scenario.cipher.mode() != crate::scenario::tunnel::CipherMode::Aead)
            .cloned()
            .collect::<Vec<_>>(),
        |s| (s.digest.id(), s.digest.is_weak(), s.digest.security_notes()),
        |s| TunnelScenario {
            digest: Digest::ALL[0],
            ..s
        },
    );
    let baselines = baseline_comparison(&rows);
    TunnelTables {
        rows,
        compression_effect: compression,
        ciphers,
        digests,
        baselines,
        versus_fastest: Vec::new(),
    }
    .with_versus_fastest()
}

fn median_of(row: &TunnelRow) -> Option<f64> {
    row.mb_per_s.map(|s| s.median)
}

fn tunnel_rows(rows: &[TunnelRow]) -> impl Iterator<Item = &TunnelRow> {
    rows.iter()
        .filter(|r| !r.scenario.baseline && r.mb_per_s.is_some())
}

fn compression_effect(rows: &[TunnelRow]) -> Vec<CompressionEffect> {
    let mut groups: BTreeMap<(RowEngine, Payload, usize, Compression), Vec<f64>> = BTreeMap::new();
    for row in tunnel_rows(rows).filter(|r| r.scenario.compression != Compression::None) {
        let plain = tunnel_rows(rows).find(|p| {
            p.engine == row.engine
                && p.scenario
                    == TunnelScenario {
                        compression: Compression::None,
                        ..row.scenario
                    }
        });
        if let (Some(plain), Some(value)) = (plain.and_then(median_of), median_of(row)) {
            let s = &row.scenario;
            groups
                .entry((row.engine, s.payload, s.payload_bytes, s.compression))
                .or_default()
                .push(value / plain);
        }
    }
    groups
        .into_iter()
        .filter_map(|((engine, payload, payload_bytes, compression), ratios)| {
            Some(CompressionEffect {
                engine,
                payload,
                payload_bytes,
                compression,
                pairs: ratios.len(),
                ratio: stats::summarize(&ratios)?,
            })
        })
        .collect()
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    stats::quantile_sorted(values, 0.5)
}

/// One table of algorithms normalised to the fastest: `key` names a row's
/// algorithm, `neutral` erases it from a scenario (so that two rows that
/// differ only in the algorithm compare equal).
fn normalised(
    rows: &[TunnelRow],
    key: impl Fn(&TunnelScenario) -> (&'static str, bool, Vec<&'static str>),
    neutral: impl Fn(TunnelScenario) -> TunnelScenario,
) -> Vec<Normalised> {
    let mut out = Vec::new();
    let mut engines: Vec<RowEngine> = rows.iter().map(|r| r.engine).collect();
    engines.sort();
    engines.dedup();
    for engine in engines {
        let measured: Vec<&TunnelRow> = tunnel_rows(rows).filter(|r| r.engine == engine).collect();
        // Uncompressed rows isolate the cryptography; use all if there are none.
        let uncompressed: Vec<&TunnelRow> = measured
            .iter()
            .copied()
            .filter(|r| r.scenario.compression == Compression::None)
            .collect();
        let pool = if uncompressed.is_empty() {
            measured
        } else {
            uncompressed
        };
        let mut names: Vec<&'static str> = Vec::new();
        let mut groups: BTreeMap<&'static str, (Vec<&TunnelRow>, bool, Vec<&'static str>)> =
            BTreeMap::new();
        for row in pool {
            let (name, weak, notes) = key(&row.scenario);
            if !names.contains(&name) {
                names.push(name);
            }
            groups
                .entry(name)
                .or_insert((Vec::new(), weak, notes))
                .0
                .push(row);
        }
        let mut entries: Vec<Normalised> = names
            .into_iter()
            .map(|name| {
                let (group, weak, notes) = &groups[name];
                let pick = |f: fn(&TunnelRow) -> Option<Summary>| {
                    median(
                        &mut group
                            .iter()
                            .filter_map(|r| f(r).map(|s| s.median))
                            .collect::<Vec<_>>(),
                    )
                };
                Normalised {
                    engine,
                    name,
                    mb_per_s: pick(|r| r.mb_per_s),
                    send_mb_per_s: pick(|r| r.send_mb_per_s),
                    receive_mb_per_s: pick(|r| r.receive_mb_per_s),
                    relative: 0.0,
                    rows: group.len(),
                    weak: *weak,
                    security_notes: notes.clone(),
                }
            })
            .collect();
        // Each of an algorithm's rows is compared with its partner among
        // the fastest algorithm's rows (the same scenario but for the
        // algorithm), from the rounds both were sampled in; the algorithm's
        // figure is the median over those pairs. Comparing like with like
        // matters: rows stop sampling at different rounds, so a per-round
        // median over an algorithm's rows would mix different rows from one
        // round to the next.
        let fastest = entries
            .iter()
            .max_by(|a, b| a.mb_per_s.total_cmp(&b.mb_per_s))
            .map(|e| &groups[e.name].0);
        for entry in &mut entries {
            let ratios: Vec<f64> = groups[entry.name]
                .0
                .iter()
                .filter_map(|row| {
                    // The same scenario but for the algorithm; failing that
                    // (an AEAD cipher has no digest to match a CBC row's),
                    // the same compression and payload.
                    let loose = |s: TunnelScenario| TunnelScenario {
                        digest: Digest::ALL[0],
                        ..neutral(s)
                    };
                    let fastest = fastest?;
                    let partner = fastest
                        .iter()
                        .find(|f| neutral(f.scenario) == neutral(row.scenario))
                        .or_else(|| {
                            fastest
                                .iter()
                                .find(|f| loose(f.scenario) == loose(row.scenario))
                        })?;
                    // Costs are time per byte: throughput's ratio is the inverse.
                    stats::paired_ratio(&row.round_costs, &partner.round_costs)
                        .map(|r| r.inverse().value)
                })
                .collect();
            entry.relative = stats::median(&ratios).unwrap_or(f64::NAN);
        }
        entries.sort_by(|a, b| b.mb_per_s.total_cmp(&a.mb_per_s));
        out.extend(entries);
    }
    out
}

fn baseline_comparison(rows: &[TunnelRow]) -> Vec<BaselineComparison> {
    let mut out = Vec::new();
    for base in rows.iter().filter(|r| r.scenario.baseline) {
        let Some(base_value) = median_of(base) else {
            continue;
        };
        let tunnels: Vec<&TunnelRow> = tunnel_rows(rows)
            .filter(|r| {
                r.engine == base.engine
                    && r.scenario.payload == base.scenario.payload
                    && r.scenario.payload_bytes == base.scenario.payload_bytes
            })
            .collect();
        let by_speed = |a: &&&TunnelRow, b: &&&TunnelRow| {
            median_of(a)
                .unwrap_or(0.0)
                .total_cmp(&median_of(b).unwrap_or(0.0))
        };
        let (Some(fastest), Some(slowest)) = (
            tunnels.iter().max_by(by_speed),
            tunnels.iter().min_by(by_speed),
        ) else {
            continue;
        };
        let fastest_value = median_of(fastest).unwrap_or(f64::NAN);
        out.push(BaselineComparison {
            engine: base.engine,
            payload: base.scenario.payload,
            payload_bytes: base.scenario.payload_bytes,
            baseline_mb_per_s: base_value,
            fastest_tunnel: fastest.description.clone(),
            fastest_tunnel_mb_per_s: fastest_value,
            slowest_tunnel: slowest.description.clone(),
            slowest_tunnel_mb_per_s: median_of(slowest).unwrap_or(f64::NAN),
            baseline_over_fastest: base_value / fastest_value,
        });
    }
    out
}

impl TunnelReport {
    /// The report as a document for any exporter.
    pub fn document(&self) -> Document {
        let mut data = serde_json::to_value(self).unwrap_or_default();
        if let Some(object) = data.as_object_mut() {
            object.insert(
                "provenance".to_string(),
                super::provenance_json(
                    self.run_id,
                    self.complete,
                    &self.host,
                    &self.libraries,
                    self.seed,
                    self.drift.as_ref(),
                ),
            );
        }
        Document {
            heading: super::heading(&self.host, &self.libraries),
            tables: text::tables(self)
                .into_iter()
                .chain(setup::table(&self.setup))
                .collect(),
            records: csv::records(self),
            data,
            footer: super::run_notes(self.drift.as_ref(), None, self.complete),
            figures: super::plot::tunnel_figures(&self.rows, &self.ciphers, &self.digests),
        }
    }
}

/// The drift of the machine over a tunnel run, from every measured cell
/// of the run's own rounds (a generic-CPU child's rounds are its own).
pub fn drift(cells: &[TunnelCell]) -> Option<Drift> {
    let per_cell: Vec<Vec<(u32, f64)>> = cells
        .iter()
        .filter(|c| !c.samples().is_empty() && c.cpu_features == CpuFeatures::Native)
        .map(|c| stats::round_medians(&measure::costs(c.samples())))
        .collect();
    stats::drift(&per_cell)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::tunnel::{Cipher, Digest, EngineId};

    fn cell(cipher: Cipher, compression: Compression, send_ns: u64) -> TunnelCell {
        TunnelCell {
            engine: EngineId::Inprocess,
            cpu_features: CpuFeatures::Native,
            scenario: TunnelScenario {
                baseline: cipher == Cipher::None,
                cipher,
                digest: if cipher == Cipher::None {
                    Digest::None
                } else {
                    Digest::Sha1
                },
                compression,
                payload: Payload::Zero,
                payload_bytes: 1000,
            },
            outcome: Outcome::Measured {
                samples: (0..3)
                    .map(|round| Timed {
                        round,
                        value: TunnelSample {
                            packets: 1,
                            payload_bytes: 1000,
                            send_ns,
                            receive_ns: send_ns,
                            send_cpu_ns: send_ns,
                            receive_cpu_ns: send_ns,
                        },
                    })
                    .collect(),
                precise: true,
                note: None,
            },
            counted: None,
        }
    }

    #[test]
    fn the_tables_normalise_and_compare() {
        let cells = vec![
            cell(Cipher::None, Compression::None, 100),
            cell(Cipher::Aes128Cbc, Compression::None, 1000),
            cell(Cipher::Aes128Cbc, Compression::Lz4, 500),
            cell(Cipher::BfCbc, Compression::None, 2000),
        ];
        let TunnelTables {
            rows,
            compression_effect: compression,
            ciphers,
            digests,
            baselines,
            versus_fastest,
        } = build(&cells, None);
        assert!(versus_fastest.is_empty(), "one engine: no table 6");
        // 1000 bytes over 2000 ns = 500 MB/s.
        assert!((rows[1].mb_per_s.unwrap().median - 500.0).abs() < 1e-9);
        assert!((rows[1].ratio_to_baseline.unwrap().value - 0.1).abs() < 1e-9);
        assert_eq!(compression.len(), 1);
        assert!((compression[0].ratio.median - 2.0).abs() < 1e-9);
        assert_eq!(ciphers[0].name, "aes-128-cbc");
        assert!((ciphers[1].relative - 0.5).abs() < 1e-9);
        assert_eq!(digests.len(), 1);
        // The fastest tunnel is the compressed one: 1000 MB/s against 5000.
        assert!((baselines[0].baseline_over_fastest - 5.0).abs() < 1e-9);
    }

    #[test]
    fn a_real_tunnels_throughput_is_wall_time_and_its_cpu_the_daemons() {
        let transfer = |baseline: bool, cpu_ns: u64| {
            let mut cell = cell(Cipher::Chacha20Poly1305, Compression::None, 0);
            cell.engine = EngineId::WireguardGo;
            cell.scenario.baseline = baseline;
            let sample = TunnelSample {
                packets: 0,
                payload_bytes: 1_000_000,
                // 1 MB each way in 10 ms and 20 ms.
                send_ns: 10_000_000,
                receive_ns: 20_000_000,
                send_cpu_ns: cpu_ns,
                receive_cpu_ns: 2 * cpu_ns,
            };
            cell.outcome = Outcome::Measured {
                samples: (0..3)
                    .map(|round| Timed {
                        round,
                        value: sample,
                    })
                    .collect(),
                precise: true,
                note: None,
            };
            cell
        };
        let rows = build(&[transfer(true, 0), transfer(false, 4_000_000)], None).rows;
        let tunnel = &rows[1];
        // 2 MB in 30 ms of wall time; A to B 1 MB in 10 ms.
        assert!((tunnel.mb_per_s.unwrap().median - 2e6 / 30e6 * 1000.0).abs() < 1e-9);
        assert!((tunnel.send_mb_per_s.unwrap().median - 100.0).abs() < 1e-9);
        // 4 ms of the sending daemons' CPU for 2 MB through them.
        assert!((tunnel.send_cpu_ms_per_mb.unwrap().median - 2.0).abs() < 1e-9);
        assert!((tunnel.receive_cpu_ms_per_mb.unwrap().median - 4.0).abs() < 1e-9);
        // No daemon, no CPU figure.
        assert!(rows[0].mb_per_s.is_some());
        assert!(rows[0].send_cpu_ms_per_mb.is_none());
    }

    #[test]
    fn cbc_ciphers_compare_with_a_faster_aead_that_has_no_digest() {
        let mut gcm = cell(Cipher::Aes128Gcm, Compression::None, 500);
        gcm.scenario.digest = Digest::None;
        let cells = vec![
            gcm,
            cell(Cipher::Aes128Cbc, Compression::None, 1000),
            cell(Cipher::BfCbc, Compression::None, 2000),
        ];
        let ciphers = build(&cells, None).ciphers;
        assert_eq!(ciphers[0].name, "aes-128-gcm");
        assert!((ciphers[1].relative - 0.5).abs() < 1e-9, "{ciphers:?}");
        assert!((ciphers[2].relative - 0.25).abs() < 1e-9, "{ciphers:?}");
    }
}
