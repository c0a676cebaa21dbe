//! Tunnel reports: rows with throughput statistics per direction, and the
//! five tables of the classic OpenVPN study (effect of compression, ciphers
//! and digests normalised to the fastest, the full ranking, the no-tunnel
//! baseline), as a terminal table, Markdown, CSV or JSON.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use super::markup::Style;
use super::Format;
use crate::backend::LibraryInfo;
use crate::host::HostInfo;
use crate::scenario::names::Named;
use crate::stats::{self, Ratio, Summary};
use crate::tunnel::sampler::{TunnelCell, TunnelOutcome, TunnelSample};
use crate::tunnel::{Compression, Engine, Payload, TunnelScenario};

/// One row: a cell with its statistics. Throughput is payload megabytes
/// (10^6 bytes) per second.
#[derive(Debug, Clone, Serialize)]
pub struct TunnelRow {
    pub label: String,
    pub engine: Engine,
    pub scenario: TunnelScenario,
    pub description: String,
    /// "measured", "unsupported" or "failed".
    pub status: &'static str,
    pub reason: Option<String>,
    pub sample_count: usize,
    pub precise: bool,
    /// Both ends together: in process, payload over sender + receiver time
    /// (one core doing both); OpenVPN, both transfers over their total time.
    pub mb_per_s: Option<Summary>,
    /// In process: the sender's cost. OpenVPN: namespace A to B.
    pub send_mb_per_s: Option<Summary>,
    /// In process: the receiver's cost. OpenVPN: namespace B to A.
    pub receive_mb_per_s: Option<Summary>,
    pub send_packets_per_s: Option<Summary>,
    pub receive_packets_per_s: Option<Summary>,
    /// Median throughput relative to the baseline row (same engine).
    pub ratio_to_baseline: Option<Ratio>,
    pub weak: bool,
    pub security_notes: Vec<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<TunnelSample>,
}

/// Table 1: compressed against uncompressed throughput of the same cipher
/// and digest, summarised over every pair.
#[derive(Debug, Clone, Serialize)]
pub struct CompressionEffect {
    pub engine: Engine,
    pub payload: Payload,
    pub payload_bytes: usize,
    pub compression: Compression,
    pub pairs: usize,
    pub ratio: Summary,
}

/// Tables 2 and 3: one cipher or digest, normalised to the fastest.
#[derive(Debug, Clone, Serialize)]
pub struct Normalised {
    pub engine: Engine,
    pub name: &'static str,
    /// Median over this algorithm's uncompressed rows of their median MB/s.
    pub mb_per_s: f64,
    pub send_mb_per_s: f64,
    pub receive_mb_per_s: f64,
    /// `mb_per_s` over the fastest algorithm's (1.0 for the fastest).
    pub relative: f64,
    pub rows: usize,
    pub weak: bool,
    pub security_notes: Vec<&'static str>,
}

/// Table 5: the no-tunnel baseline against the tunnels.
#[derive(Debug, Clone, Serialize)]
pub struct BaselineComparison {
    pub engine: Engine,
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
    pub rows: Vec<TunnelRow>,
}

fn summarize_by(samples: &[TunnelSample], value: impl Fn(&TunnelSample) -> f64) -> Option<Summary> {
    let values: Vec<f64> = samples
        .iter()
        .map(value)
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
        engine: cell.engine,
        scenario: *scenario,
        description: scenario.describe(),
        status: "measured",
        reason: None,
        sample_count: 0,
        precise: false,
        mb_per_s: None,
        send_mb_per_s: None,
        receive_mb_per_s: None,
        send_packets_per_s: None,
        receive_packets_per_s: None,
        ratio_to_baseline: None,
        weak: scenario.is_weak(),
        security_notes: scenario.security_notes(),
        samples: Vec::new(),
    };
    match &cell.outcome {
        TunnelOutcome::Measured { samples, precise } => {
            // OpenVPN samples move the payload each way; in process one
            // payload passes through both ends.
            let ways = if cell.engine == Engine::Openvpn { 2 } else { 1 };
            row.sample_count = samples.len();
            row.precise = *precise;
            row.mb_per_s =
                summarize_by(samples, |s| mb_per_s(ways * s.payload_bytes, s.total_ns()));
            row.send_mb_per_s = summarize_by(samples, |s| mb_per_s(s.payload_bytes, s.send_ns));
            row.receive_mb_per_s =
                summarize_by(samples, |s| mb_per_s(s.payload_bytes, s.receive_ns));
            if cell.engine == Engine::Inprocess {
                row.send_packets_per_s = summarize_by(samples, |s| {
                    s.packets as f64 / s.send_ns.max(1) as f64 * 1e9
                });
                row.receive_packets_per_s = summarize_by(samples, |s| {
                    s.packets as f64 / s.receive_ns.max(1) as f64 * 1e9
                });
            }
            row.samples = samples.clone();
        }
        TunnelOutcome::Unsupported { reason } => {
            row.status = "unsupported";
            row.reason = Some(reason.clone());
        }
        TunnelOutcome::Failed { reason } => {
            row.status = "failed";
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
}

/// Builds the rows and the five tables. Each row's ratio is to `baseline`
/// (a label) of the same engine, or else to the no-tunnel row with the same
/// payload and size.
pub fn build(cells: &[TunnelCell], baseline: Option<&str>) -> TunnelTables {
    let mut rows: Vec<TunnelRow> = cells.iter().map(row_of).collect();
    let bases: Vec<Option<Summary>> = rows
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
                .and_then(|base| base.mb_per_s)
        })
        .collect();
    for (row, base) in rows.iter_mut().zip(bases) {
        if let (Some(value), Some(base)) = (row.mb_per_s, base) {
            row.ratio_to_baseline = Some(stats::ratio_of_medians(&value, &base));
        }
    }
    let compression = compression_effect(&rows);
    let ciphers = normalised(&rows, |s| {
        (s.cipher.id(), s.cipher.is_weak(), s.cipher.security_notes())
    });
    let digests = normalised(
        &rows
            .iter()
            .filter(|r| r.scenario.cipher.mode() != crate::tunnel::CipherMode::Aead)
            .cloned()
            .collect::<Vec<_>>(),
        |s| (s.digest.id(), s.digest.is_weak(), s.digest.security_notes()),
    );
    let baselines = baseline_comparison(&rows);
    TunnelTables {
        rows,
        compression_effect: compression,
        ciphers,
        digests,
        baselines,
    }
}

fn median_of(row: &TunnelRow) -> Option<f64> {
    row.mb_per_s.map(|s| s.median)
}

fn tunnel_rows(rows: &[TunnelRow]) -> impl Iterator<Item = &TunnelRow> {
    rows.iter()
        .filter(|r| !r.scenario.baseline && r.mb_per_s.is_some())
}

fn compression_effect(rows: &[TunnelRow]) -> Vec<CompressionEffect> {
    let mut groups: BTreeMap<(Engine, Payload, usize, Compression), Vec<f64>> = BTreeMap::new();
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

fn normalised(
    rows: &[TunnelRow],
    key: impl Fn(&TunnelScenario) -> (&'static str, bool, Vec<&'static str>),
) -> Vec<Normalised> {
    let mut out = Vec::new();
    let engines: Vec<Engine> = Engine::ALL
        .iter()
        .copied()
        .filter(|e| rows.iter().any(|r| r.engine == *e))
        .collect();
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
        let fastest = entries.iter().map(|e| e.mb_per_s).fold(0.0, f64::max);
        for entry in &mut entries {
            entry.relative = entry.mb_per_s / fastest;
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

/// Throughput with a precision that suits its size.
fn format_rate(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

fn width(text: &str) -> usize {
    text.chars().count()
}

/// Draws one grid; numeric columns are right-aligned.
fn grid(headers: &[&str], numeric: &[bool], rows: &[Vec<String>], style: Style) -> String {
    let widths: Vec<usize> = (0..headers.len())
        .map(|i| {
            rows.iter()
                .map(|r| width(&r[i]))
                .chain([width(headers[i])])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |values: &[String]| -> String {
        let padded: Vec<String> = values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let fill = " ".repeat(widths[i].saturating_sub(width(v)));
                if numeric[i] {
                    format!("{fill}{v}")
                } else {
                    format!("{v}{fill}")
                }
            })
            .collect();
        match style {
            Style::Terminal => padded.join("  ").trim_end().to_string(),
            Style::Markdown => format!("| {} |", padded.join(" | ")),
        }
    };
    let mut out = line(&headers.iter().map(|h| h.to_string()).collect::<Vec<_>>());
    out.push('\n');
    let rule: Vec<String> = widths
        .iter()
        .enumerate()
        .map(|(i, w)| match style {
            Style::Terminal => "─".repeat(*w),
            Style::Markdown if numeric[i] => format!("{}:", "-".repeat(w.saturating_sub(1).max(2))),
            Style::Markdown => "-".repeat((*w).max(3)),
        })
        .collect();
    out.push_str(&match style {
        Style::Terminal => rule.join("  "),
        Style::Markdown => format!("| {} |", rule.join(" | ")),
    });
    out.push('\n');
    for row in rows {
        out.push_str(&line(row));
        out.push('\n');
    }
    out
}

fn heading(text: &str, style: Style) -> String {
    match style {
        Style::Terminal => format!("\n{text}\n\n"),
        Style::Markdown => format!("\n## {text}\n\n"),
    }
}

fn notes_of(weak: bool, notes: &[&'static str]) -> String {
    let mut all: Vec<&str> = Vec::new();
    if weak {
        all.push("WEAK");
    }
    all.extend(notes.iter().copied());
    all.join("; ")
}

/// Draws the five tables.
pub fn render_tables(report: &TunnelReport, style: Style) -> String {
    let libraries: Vec<String> = report
        .libraries
        .iter()
        .map(|l| format!("{}: {} {}", l.backend, l.library, l.version))
        .collect();
    let mut out = format!(
        "{}{} ({} cores); {}\n",
        if style == Style::Markdown {
            "Host: "
        } else {
            ""
        },
        report.host.cpu_model,
        report.host.cores,
        libraries.join("; ")
    );

    out.push_str(&heading(
        "1. Effect of compression (throughput with compression / without, same cipher and digest)",
        style,
    ));
    let rows: Vec<Vec<String>> = report
        .compression_effect
        .iter()
        .map(|c| {
            vec![
                c.engine.id().to_string(),
                format!("{} {} B", c.payload.id(), c.payload_bytes),
                c.compression.id().to_string(),
                c.pairs.to_string(),
                format!("{:.3}", c.ratio.mean),
                format!("{:.3}", c.ratio.stdev),
                format!("{:.3}", c.ratio.median),
                format!("{:.3}", c.ratio.min),
                format!("{:.3}", c.ratio.max),
            ]
        })
        .collect();
    if rows.is_empty() {
        out.push_str("(no compressed and uncompressed pairs measured)\n");
    } else {
        out.push_str(&grid(
            &[
                "engine",
                "payload",
                "compression",
                "pairs",
                "avg",
                "stdev",
                "median",
                "min",
                "max",
            ],
            &[false, false, false, true, true, true, true, true, true],
            &rows,
            style,
        ));
    }

    for (title, table) in [
        (
            "2. Ciphers normalised to the fastest (uncompressed rows)",
            &report.ciphers,
        ),
        (
            "3. Digests normalised to the fastest (uncompressed CBC and MAC-only rows)",
            &report.digests,
        ),
    ] {
        out.push_str(&heading(title, style));
        let rows: Vec<Vec<String>> = table
            .iter()
            .map(|n| {
                vec![
                    n.engine.id().to_string(),
                    n.name.to_string(),
                    format!("{:.3}", n.relative),
                    format_rate(n.mb_per_s),
                    format_rate(n.send_mb_per_s),
                    format_rate(n.receive_mb_per_s),
                    n.rows.to_string(),
                    notes_of(n.weak, &n.security_notes),
                ]
            })
            .collect();
        if rows.is_empty() {
            out.push_str("(nothing measured)\n");
        } else {
            out.push_str(&grid(
                &[
                    "engine",
                    "name",
                    "× fastest",
                    "MB/s",
                    "send MB/s",
                    "receive MB/s",
                    "rows",
                    "security",
                ],
                &[false, false, true, true, true, true, true, false],
                &rows,
                style,
            ));
        }
    }

    out.push_str(&heading(
        "4. Ranking of every combination (fastest first)",
        style,
    ));
    out.push_str(&ranking(report, style));

    out.push_str(&heading("5. No tunnel against the tunnels", style));
    let rows: Vec<Vec<String>> = report
        .baselines
        .iter()
        .map(|b| {
            vec![
                b.engine.id().to_string(),
                format!("{} {} B", b.payload.id(), b.payload_bytes),
                format_rate(b.baseline_mb_per_s),
                format!(
                    "{} ({})",
                    b.fastest_tunnel,
                    format_rate(b.fastest_tunnel_mb_per_s)
                ),
                format!(
                    "{} ({})",
                    b.slowest_tunnel,
                    format_rate(b.slowest_tunnel_mb_per_s)
                ),
                format!("{:.1}", b.baseline_over_fastest),
            ]
        })
        .collect();
    if rows.is_empty() {
        out.push_str("(no baseline row measured; it is added unless --no-baseline-row)\n");
    } else {
        out.push_str(&grid(
            &[
                "engine",
                "payload",
                "no tunnel MB/s",
                "fastest tunnel (MB/s)",
                "slowest tunnel (MB/s)",
                "no tunnel × fastest",
            ],
            &[false, false, true, false, false, true],
            &rows,
            style,
        ));
    }
    out.push_str(
        "\nMB/s: payload megabytes per second. In process: one core doing both ends \
         (send = compress, encrypt, authenticate; receive = verify, decrypt, decompress, check).\n\
         OpenVPN: a transfer through the tunnel between two network namespaces (send = A to B, receive = B to A).\n",
    );
    if let Some(baseline) = &report.baseline {
        out.push_str(&format!(
            "× baseline: median MB/s relative to {baseline}.\n"
        ));
    }
    if !report.complete {
        out.push_str("\nThis run is incomplete: it was interrupted; the rows above are every cell it finished.\n");
    }
    out
}

/// Table 4: the first engine's rows by throughput, with the other engine's
/// figure for the same row beside it; then rows that were not measured.
fn ranking(report: &TunnelReport, style: Style) -> String {
    let primary = report.rows.first().map(|r| r.engine);
    let other: Option<Engine> = report
        .rows
        .iter()
        .map(|r| r.engine)
        .find(|e| Some(*e) != primary);
    let mut measured: Vec<&TunnelRow> = report
        .rows
        .iter()
        .filter(|r| Some(r.engine) == primary && r.mb_per_s.is_some())
        .collect();
    measured.sort_by(|a, b| {
        median_of(b)
            .unwrap_or(0.0)
            .total_cmp(&median_of(a).unwrap_or(0.0))
    });
    let dash = || "—".to_string();
    let mut rows = Vec::new();
    for (rank, row) in measured.iter().enumerate() {
        let total = row.mb_per_s.expect("measured rows have a summary");
        let spread = total.median_ci95.relative_half_width(total.median) * 100.0;
        let mut notes: Vec<String> = Vec::new();
        if !row.precise {
            notes.push("precision not reached in time".to_string());
        }
        notes.push(notes_of(row.weak, &row.security_notes));
        let mut cells = vec![
            (rank + 1).to_string(),
            row.engine.id().to_string(),
            row.description.clone(),
            format!("{} ±{spread:.1}%", format_rate(total.median)),
            row.send_mb_per_s
                .map(|s| format_rate(s.median))
                .unwrap_or_else(dash),
            row.receive_mb_per_s
                .map(|s| format_rate(s.median))
                .unwrap_or_else(dash),
            row.send_packets_per_s
                .map(|s| format!("{:.0}", s.median))
                .unwrap_or_else(dash),
            row.sample_count.to_string(),
            row.ratio_to_baseline
                .map(|r| format!("{:.3}", r.value))
                .unwrap_or_else(dash),
        ];
        if let Some(other) = other {
            let twin = report
                .rows
                .iter()
                .find(|r| r.engine == other && r.label == row.label);
            cells.push(match twin {
                Some(twin) => match (twin.mb_per_s, twin.ratio_to_baseline) {
                    (Some(s), Some(r)) => format!("{} (×{:.3})", format_rate(s.median), r.value),
                    (Some(s), None) => format_rate(s.median),
                    _ => twin.status.to_string(),
                },
                None => dash(),
            });
        }
        cells.push(
            notes
                .into_iter()
                .filter(|n| !n.is_empty())
                .collect::<Vec<_>>()
                .join("; "),
        );
        rows.push(cells);
    }
    let other_header = other.map(|e| format!("{} MB/s (× baseline)", e.id()));
    let mut headers = vec![
        "rank",
        "engine",
        "scenario",
        "MB/s (median ±95% CI)",
        "send MB/s",
        "receive MB/s",
        "send packets/s",
        "n",
        "× baseline",
    ];
    let mut numeric = vec![true, false, false, true, true, true, true, true, true];
    if let Some(header) = &other_header {
        headers.push(header);
        numeric.push(true);
    }
    headers.push("notes");
    numeric.push(false);
    let mut out = grid(&headers, &numeric, &rows, style);
    let unmeasured: Vec<String> = report
        .rows
        .iter()
        .filter(|r| r.status != "measured")
        .map(|r| {
            format!(
                "{} {}: {} ({})",
                r.engine.id(),
                r.description,
                r.status,
                r.reason.as_deref().unwrap_or("")
            )
        })
        .collect();
    if !unmeasured.is_empty() {
        out.push_str("\nNot measured:\n");
        for line in unmeasured {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out
}

fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

/// One line per row with every statistic.
pub fn render_csv(report: &TunnelReport) -> String {
    let series = [
        "mb_per_s",
        "send_mb_per_s",
        "receive_mb_per_s",
        "send_packets_per_s",
        "receive_packets_per_s",
    ];
    let stats = [
        "mean",
        "median",
        "stdev",
        "min",
        "max",
        "ci95_low",
        "ci95_high",
    ];
    let mut header: Vec<String> = [
        "label",
        "engine",
        "status",
        "reason",
        "baseline",
        "cipher",
        "digest",
        "compression",
        "payload",
        "payload_bytes",
        "samples",
        "precise",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for name in series {
        for stat in stats {
            header.push(format!("{name}_{stat}"));
        }
    }
    header.extend(["ratio_to_baseline", "weak", "security_notes"].map(String::from));
    let mut out = header.join(",") + "\n";
    let number = |v: Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_default();
    for row in &report.rows {
        let s = &row.scenario;
        let mut fields: Vec<String> = vec![
            row.label.clone(),
            row.engine.id().to_string(),
            row.status.to_string(),
            quote(row.reason.as_deref().unwrap_or("")),
            s.baseline.to_string(),
            s.cipher.id().to_string(),
            s.digest.id().to_string(),
            s.compression.id().to_string(),
            s.payload.id().to_string(),
            s.payload_bytes.to_string(),
            row.sample_count.to_string(),
            row.precise.to_string(),
        ];
        for summary in [
            row.mb_per_s,
            row.send_mb_per_s,
            row.receive_mb_per_s,
            row.send_packets_per_s,
            row.receive_packets_per_s,
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
        fields.push(number(row.ratio_to_baseline.map(|r| r.value)));
        fields.push(row.weak.to_string());
        fields.push(quote(&row.security_notes.join("; ")));
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

/// Renders a tunnel report in one format.
pub fn render(report: &TunnelReport, format: Format) -> Result<String> {
    Ok(match format {
        Format::Table => render_tables(report, Style::Terminal),
        Format::Markdown => render_tables(report, Style::Markdown),
        Format::Csv => render_csv(report),
        Format::Json => serde_json::to_string_pretty(report)? + "\n",
    })
}

/// Writes a tunnel report to a file in one format.
pub fn export(report: &TunnelReport, format: Format, path: &Path) -> Result<()> {
    let text = render(report, format)?;
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tunnel::{Cipher, Digest};

    fn cell(cipher: Cipher, compression: Compression, send_ns: u64) -> TunnelCell {
        TunnelCell {
            engine: Engine::Inprocess,
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
            outcome: TunnelOutcome::Measured {
                samples: vec![
                    TunnelSample {
                        packets: 1,
                        payload_bytes: 1000,
                        send_ns,
                        receive_ns: send_ns,
                    };
                    3
                ],
                precise: true,
            },
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
        } = build(&cells, None);
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
}
