//! The tunnel's record table: one line per row with every statistic (CSV).

use super::TunnelReport;
use crate::report::records::{number, SummaryColumns};
use crate::report::Table;
use crate::scenario::names::Named;
use crate::stats::Summary;

/// Each series' rates, to three decimals.
const RATE_COLUMNS: SummaryColumns = SummaryColumns {
    with_p99: false,
    interval: "ci95",
    unit: "",
    decimals: 3,
};

/// One line per row with every statistic.
pub fn records(report: &TunnelReport) -> Table {
    let series = [
        "mb_per_s",
        "send_mb_per_s",
        "receive_mb_per_s",
        "send_packets_per_s",
        "receive_packets_per_s",
        "send_cpu_ms_per_mb",
        "receive_cpu_ms_per_mb",
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
        header.extend(RATE_COLUMNS.headers(name));
    }
    header.extend(["ratio_to_baseline", "weak", "security_notes"].map(String::from));
    // Counted under valgrind (`--measure instructions`): empty otherwise.
    header.extend(
        [
            "instructions_status",
            "instructions_reason",
            "counted_packets",
            "counted_payload_bytes",
            "send_instructions_per_mb_median",
            "receive_instructions_per_mb_median",
            "total_instructions_per_mb_median",
            "total_instructions_per_mb_min",
            "total_instructions_per_mb_max",
            "instructions_spread",
            "instructions_ratio_to_baseline",
            "instructions_samples",
        ]
        .map(String::from),
    );
    let mut table = Table::records(header);
    for row in &report.rows {
        let s = &row.scenario;
        let mut fields: Vec<String> = vec![
            row.label.clone(),
            row.engine.to_string(),
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
            row.send_cpu_ms_per_mb,
            row.receive_cpu_ms_per_mb,
        ] {
            fields.extend(RATE_COLUMNS.fields(summary.as_ref()));
        }
        fields.push(number(row.ratio_to_baseline.map(|r| r.value), 3));
        fields.push(row.weak.to_string());
        fields.push(row.security_notes.join("; "));
        let counted = row.instructions.as_ref();
        let median = |pick: fn(&super::TunnelCounted) -> Option<Summary>| {
            counted
                .and_then(pick)
                .map(|s| format!("{:.0}", s.median))
                .unwrap_or_default()
        };
        let total = counted.and_then(|c| c.total_per_mb);
        fields.extend([
            counted.map(|c| c.status.to_string()).unwrap_or_default(),
            counted.and_then(|c| c.reason.clone()).unwrap_or_default(),
            counted.map(|c| c.packets.to_string()).unwrap_or_default(),
            counted
                .map(|c| c.payload_bytes.to_string())
                .unwrap_or_default(),
            median(|c| c.send_per_mb),
            median(|c| c.receive_per_mb),
            median(|c| c.total_per_mb),
            total.map(|s| format!("{:.0}", s.min)).unwrap_or_default(),
            total.map(|s| format!("{:.0}", s.max)).unwrap_or_default(),
            counted
                .and_then(|c| c.spread)
                .map(|s| format!("{s:.6}"))
                .unwrap_or_default(),
            number(counted.and_then(|c| c.ratio_to_baseline), 3),
            counted
                .map(|c| c.samples.len().to_string())
                .unwrap_or_default(),
        ]);
        table.rows.push(fields);
    }
    table
}
