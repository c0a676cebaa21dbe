//! CSV export: one line per cell with every statistic, loadable by any
//! spreadsheet or data frame library.

use super::Report;
use crate::scenario::Named;
use crate::stats::Summary;

pub(crate) fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

fn number(value: Option<f64>) -> String {
    value.map(|v| format!("{v:.3}")).unwrap_or_default()
}

fn summary_fields(summary: Option<Summary>) -> Vec<String> {
    let pick = |f: fn(&Summary) -> f64| number(summary.as_ref().map(f));
    vec![
        pick(|s| s.mean),
        pick(|s| s.median),
        pick(|s| s.stdev),
        pick(|s| s.min),
        pick(|s| s.max),
        pick(|s| s.p99),
        pick(|s| s.median_ci95.low),
        pick(|s| s.median_ci95.high),
    ]
}

pub fn render(report: &Report) -> String {
    let mut header: Vec<String> = [
        "label",
        "backend",
        "status",
        "reason",
        "tls_version",
        "group",
        "cert",
        "aead",
        "resumption",
        "mutual",
        "chain_depth",
        "negotiated_suite",
        "negotiated_group",
        "negotiated_signature",
        "samples",
        "precise",
        "handshakes_per_second",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for side in ["wall", "client", "server"] {
        for stat in [
            "mean",
            "median",
            "stdev",
            "min",
            "max",
            "p99",
            "median_ci_low",
            "median_ci_high",
        ] {
            header.push(format!("{side}_{stat}_us"));
        }
    }
    header.extend(
        [
            "ratio",
            "ratio_ci_low",
            "ratio_ci_high",
            "weak",
            "security_notes",
        ]
        .map(String::from),
    );

    let mut out = header.join(",") + "\n";
    for row in &report.rows {
        let negotiated = row.negotiated.as_ref();
        let s = &row.scenario;
        let mut fields = vec![
            row.label.clone(),
            row.backend.clone(),
            row.status.to_string(),
            row.reason.clone().unwrap_or_default(),
            s.version.id().to_string(),
            s.group.id().to_string(),
            s.cert.id().to_string(),
            s.aead.id().to_string(),
            s.resumption.id().to_string(),
            s.mutual.to_string(),
            s.chain_depth.to_string(),
        ];
        fields.extend([
            negotiated.map(|n| n.suite.clone()).unwrap_or_default(),
            negotiated.and_then(|n| n.group.clone()).unwrap_or_default(),
            negotiated
                .and_then(|n| n.signature.clone())
                .unwrap_or_default(),
            row.sample_count.to_string(),
            row.precise.to_string(),
            number(row.handshakes_per_second),
        ]);
        fields.extend(summary_fields(row.wall_us));
        fields.extend(summary_fields(row.client_us));
        fields.extend(summary_fields(row.server_us));
        fields.extend([
            number(row.ratio_to_baseline.map(|r| r.value)),
            number(row.ratio_to_baseline.map(|r| r.ci95.low)),
            number(row.ratio_to_baseline.map(|r| r.ci95.high)),
            row.weak.to_string(),
            row.security_notes.join("; "),
        ]);
        let quoted: Vec<String> = fields.iter().map(|f| quote(f)).collect();
        out.push_str(&quoted.join(","));
        out.push('\n');
    }
    out
}
