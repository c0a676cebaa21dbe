//! The tunnel's record table: one line per row with every statistic (CSV).

use super::TunnelReport;
use crate::report::Table;
use crate::scenario::names::Named;
use crate::stats::Summary;

/// One line per row with every statistic.
pub fn records(report: &TunnelReport) -> Table {
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
    let mut table = Table {
        headers: header,
        ..Table::default()
    };
    let number = |v: Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_default();
    for row in &report.rows {
        let s = &row.scenario;
        let mut fields: Vec<String> = vec![
            row.label.clone(),
            row.engine.id().to_string(),
            row.status.to_string(),
            row.reason.clone().unwrap_or_default(),
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
        fields.push(row.security_notes.join("; "));
        table.rows.push(fields);
    }
    table
}
