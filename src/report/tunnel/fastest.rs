//! Table 6 of a tunnel report, when rows of two engines or more were
//! measured: per payload and packet size, every engine's tunnel rows side
//! by side, ranked, each against the fastest row of its size (the
//! question "OpenVPN or WireGuard, on this CPU" per packet size). The
//! per-engine tables cannot answer it: their ratios are to rows of the
//! same engine.

use serde::Serialize;

use super::format::{format_rate, notes_of};
use super::{TunnelRow, TunnelTables};
use crate::report::{Column, Columns, Table};
use crate::scenario::names::Named;
use crate::scenario::tunnel::{Cipher, EngineId, Payload, RowEngine};
use crate::stats;

/// One tunnel row against the fastest tunnel row of its payload and size.
#[derive(Debug, Clone, Serialize)]
pub struct VersusFastest {
    pub payload: Payload,
    pub payload_bytes: usize,
    pub engine: RowEngine,
    pub label: String,
    pub cipher: Cipher,
    /// Median payload MB/s, both ends (as the row's `mb_per_s`).
    pub mb_per_s: f64,
    pub send_mb_per_s: Option<f64>,
    pub receive_mb_per_s: Option<f64>,
    /// Throughput over the fastest row's of the same payload and size
    /// (1.0 for the fastest).
    pub relative: f64,
    /// Half the 95% interval of `relative`, relative to it (0.01 = ±1%);
    /// `None` when the two rows share no rounds (then `relative` is the
    /// ratio of their medians).
    pub relative_spread: Option<f64>,
    /// True if and only if `relative` comes from same-round pairs: both
    /// rows were sampled in one set of interleaved rounds.
    pub same_rounds: bool,
    /// Throughput over the same engine's no-tunnel row (its `× baseline`).
    pub ratio_to_baseline: Option<f64>,
    pub weak: bool,
    pub security_notes: Vec<&'static str>,
}

/// Every measured tunnel row against the fastest of its payload and size,
/// fastest first within each size (sizes ascending), when measured tunnel
/// rows of two engines or more are among `rows`; else nothing.
/// `interleaved(engine)` says whether an engine's rows were sampled in the
/// run's shared rounds: a ratio between rows of two such engines with the
/// same CPU features comes from same-round pairs, any other from the two
/// medians (generic-CPU rows are sampled in a child process of their own,
/// after the native ones: their rounds are not the native rows').
pub fn versus_fastest(
    rows: &[TunnelRow],
    interleaved: impl Fn(EngineId) -> bool,
) -> Vec<VersusFastest> {
    let measured: Vec<&TunnelRow> = rows
        .iter()
        .filter(|r| !r.scenario.baseline && r.mb_per_s.is_some())
        .collect();
    let mut engines: Vec<RowEngine> = measured.iter().map(|r| r.engine).collect();
    engines.sort();
    engines.dedup();
    if engines.len() < 2 {
        return Vec::new();
    }
    let mut sizes: Vec<(usize, Payload)> = measured
        .iter()
        .map(|r| (r.scenario.payload_bytes, r.scenario.payload))
        .collect();
    sizes.sort_by_key(|&(bytes, payload)| (bytes, Payload::ALL.iter().position(|&p| p == payload)));
    sizes.dedup();
    let median = |row: &TunnelRow| row.mb_per_s.map_or(0.0, |s| s.median);
    let mut out = Vec::new();
    for (payload_bytes, payload) in sizes {
        let mut group: Vec<&TunnelRow> = measured
            .iter()
            .copied()
            .filter(|r| r.scenario.payload_bytes == payload_bytes && r.scenario.payload == payload)
            .collect();
        group.sort_by(|a, b| median(b).total_cmp(&median(a)));
        let fastest = group[0];
        for row in group {
            let same_rounds = row.engine.cpu_features == fastest.engine.cpu_features
                && interleaved(row.engine.engine)
                && interleaved(fastest.engine.engine);
            let paired = same_rounds
                .then(|| stats::paired_ratio(&row.round_costs, &fastest.round_costs))
                .flatten()
                // Costs are time per byte: throughput's ratio is the inverse.
                .map(|ratio| ratio.inverse());
            out.push(VersusFastest {
                payload,
                payload_bytes,
                engine: row.engine,
                label: row.label.clone(),
                cipher: row.scenario.cipher,
                mb_per_s: median(row),
                send_mb_per_s: row.send_mb_per_s.map(|s| s.median),
                receive_mb_per_s: row.receive_mb_per_s.map(|s| s.median),
                relative: paired.map_or(median(row) / median(fastest), |r| r.value),
                relative_spread: paired
                    .map(|r| r.precision())
                    .filter(|spread| spread.is_finite()),
                same_rounds: paired.is_some(),
                ratio_to_baseline: row.ratio_to_baseline.map(|r| r.value),
                weak: row.weak,
                security_notes: row.security_notes.clone(),
            });
        }
    }
    out
}

/// Table 6, or nothing when fewer than two engines' tunnel rows were measured.
pub fn table(tables: &[VersusFastest]) -> Option<Table> {
    if tables.is_empty() {
        return None;
    }
    // Ranked anew within each payload and size.
    let mut ranked: Vec<(usize, &VersusFastest)> = Vec::new();
    for (i, v) in tables.iter().enumerate() {
        let same_size = i > 0
            && (tables[i - 1].payload, tables[i - 1].payload_bytes) == (v.payload, v.payload_bytes);
        let rank = if same_size { ranked[i - 1].0 + 1 } else { 1 };
        ranked.push((rank, v));
    }
    type Ranked<'v> = (usize, &'v VersusFastest);
    let rate = |value: Option<f64>| value.map_or("—".to_string(), format_rate);
    let mut table = Columns::new()
        .with(Column::axis("payload"), |(_, v): &Ranked| {
            format!("{} {} B", v.payload.id(), v.payload_bytes)
        })
        .with(Column::number("rank"), |(rank, _)| rank.to_string())
        .with(Column::axis("engine"), |(_, v)| v.engine.to_string())
        .with(Column::axis("cipher"), |(_, v)| v.cipher.id().to_string())
        .with(Column::number("MB/s"), |(_, v)| format_rate(v.mb_per_s))
        .with(Column::number("send MB/s").priority(1), move |(_, v)| {
            rate(v.send_mb_per_s)
        })
        .with(Column::number("receive MB/s").priority(1), move |(_, v)| {
            rate(v.receive_mb_per_s)
        })
        .with(Column::number("× fastest"), |(rank, v)| {
            match (v.same_rounds, v.relative_spread) {
                // The fastest against itself.
                _ if *rank == 1 => format!("{:.3}", v.relative),
                (true, Some(spread)) => format!("{:.3} ±{:.1}%", v.relative, spread * 100.0),
                (true, None) => format!("{:.3}", v.relative),
                (false, _) => format!("{:.3} (medians)", v.relative),
            }
        })
        .with(Column::number("× no tunnel").priority(1), |(_, v)| {
            v.ratio_to_baseline
                .map_or("—".to_string(), |r| format!("{r:.3}"))
        })
        .with(Column::notes("security"), |(_, v)| {
            notes_of(v.weak, &v.security_notes)
        })
        .table(&ranked)
        .titled("6. Engines side by side per packet size (× fastest tunnel of the size)");
    table.notes.push("× fastest: throughput over the fastest tunnel row of the same payload and size, whatever its engine: the median of same-round ratios (±: its 95% interval) for rows sampled in the same interleaved rounds (every in-process engine's, with the same CPU features: generic rows are sampled in a child process after the native ones), else the ratio of the two medians. × no tunnel: against the same engine's no-tunnel row.".to_string());
    Some(table)
}

impl TunnelTables {
    /// Table 6's rows from the built rows: engines that interleave shared
    /// the run's rounds.
    pub(super) fn with_versus_fastest(mut self) -> Self {
        self.versus_fastest = versus_fastest(&self.rows, |engine| engine.open().interleaves_rows());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{Outcome, Timed};
    use crate::scenario::tunnel::{Compression, Digest, TunnelScenario};
    use crate::scenario::CpuFeatures;
    use crate::workload::tunnel::{TunnelCell, TunnelSample};

    fn cell(engine: EngineId, cipher: Cipher, payload_bytes: usize, ns: &[u64]) -> TunnelCell {
        let scenario = if cipher == Cipher::None {
            TunnelScenario::baseline(Payload::Random, payload_bytes)
        } else {
            TunnelScenario {
                baseline: false,
                cipher,
                digest: Digest::None,
                compression: Compression::None,
                payload: Payload::Random,
                payload_bytes,
            }
        };
        let samples = ns
            .iter()
            .enumerate()
            .map(|(round, &ns)| Timed {
                round: round as u32,
                value: TunnelSample {
                    packets: 10,
                    payload_bytes: 10 * payload_bytes as u64,
                    send_ns: ns,
                    receive_ns: ns,
                    send_cpu_ns: ns,
                    receive_cpu_ns: ns,
                },
            })
            .collect();
        TunnelCell {
            engine,
            cpu_features: CpuFeatures::Native,
            scenario,
            outcome: Outcome::Measured {
                samples,
                precise: true,
                note: None,
            },
            counted: None,
        }
    }

    #[test]
    fn rows_of_two_engines_rank_per_size_against_the_fastest_from_the_same_rounds() {
        // Round 2 is twice as slow for every row: same-round ratios cancel it.
        let cells = vec![
            cell(EngineId::Inprocess, Cipher::None, 64, &[100, 100, 200]),
            cell(
                EngineId::Inprocess,
                Cipher::Aes128Gcm,
                64,
                &[1000, 1000, 2000],
            ),
            cell(
                EngineId::Inprocess,
                Cipher::Aes128Gcm,
                1400,
                &[1000, 1000, 2000],
            ),
            cell(
                EngineId::Wireguard,
                Cipher::Chacha20Poly1305,
                64,
                &[500, 500, 1000],
            ),
            cell(
                EngineId::Wireguard,
                Cipher::Chacha20Poly1305,
                1400,
                &[4000, 4000, 8000],
            ),
        ];
        let rows = super::super::build(&cells, None).rows;
        let ranked = versus_fastest(&rows, |_| true);
        let seen: Vec<(usize, EngineId, f64, bool)> = ranked
            .iter()
            .map(|v| (v.payload_bytes, v.engine.engine, v.relative, v.same_rounds))
            .collect();
        assert_eq!(
            seen,
            vec![
                (64, EngineId::Wireguard, 1.0, true),
                (64, EngineId::Inprocess, 0.5, true),
                (1400, EngineId::Inprocess, 1.0, true),
                (1400, EngineId::Wireguard, 0.25, true),
            ]
        );
        assert!((ranked[1].ratio_to_baseline.unwrap() - 0.1).abs() < 1e-9);
        let drawn = table_of(&ranked);
        assert_eq!(drawn.rows.len(), 4);
        assert_eq!(drawn.rows[1][1], "2", "ranked within its size");
        assert_eq!(drawn.rows[2][1], "1", "the next size ranks anew");

        // An engine sampled on its own rounds: the ratio of the medians.
        let apart = versus_fastest(&rows, |engine| engine == EngineId::Inprocess);
        assert!(!apart[1].same_rounds && (apart[1].relative - 0.5).abs() < 1e-9);
        assert!(table_of(&apart).rows[1][7].contains("medians"));

        // One engine: the per-engine tables say it all.
        assert!(versus_fastest(&rows[..3], |_| true).is_empty());
        assert!(table(&[]).is_none());
    }

    /// `tunnel --cpu-features native,generic`: the generic rows rank
    /// beside the native ones as an engine of their own, named so, and
    /// their ratios are of medians (a child process's rounds are not the
    /// parent's), even between engines that interleave.
    #[test]
    fn generic_cpu_rows_rank_beside_the_native_ones_by_their_medians() {
        let native = cell(
            EngineId::Inprocess,
            Cipher::Aes128Gcm,
            1400,
            &[1000, 1000, 2000],
        );
        let generic = TunnelCell {
            cpu_features: CpuFeatures::Generic,
            ..cell(
                EngineId::Inprocess,
                Cipher::Aes128Gcm,
                1400,
                &[8000, 8000, 8000],
            )
        };
        let rows = super::super::build(&[native, generic], None).rows;
        let ranked = versus_fastest(&rows, |_| true);
        let seen: Vec<(String, f64, bool)> = ranked
            .iter()
            .map(|v| (v.engine.to_string(), v.relative, v.same_rounds))
            .collect();
        assert_eq!(
            seen,
            vec![
                ("inprocess".to_string(), 1.0, true),
                ("inprocess (generic)".to_string(), 0.125, false),
            ]
        );
        let drawn = table_of(&ranked);
        assert_eq!(drawn.rows[1][2], "inprocess (generic)");
        assert!(drawn.rows[1][7].contains("medians"), "{:?}", drawn.rows[1]);
    }

    fn table_of(rows: &[VersusFastest]) -> Table {
        table(rows).expect("a table")
    }
}
