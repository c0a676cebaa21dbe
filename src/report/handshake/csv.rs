//! The handshake's record table: one line per row (and per network
//! profile) with every statistic (CSV).

use super::{wire, Row};
use crate::report::records::{number, SummaryColumns};
use crate::report::Table;
use crate::scenario::Named;

/// Each side's time, in microseconds to three decimals, with its p99.
const TIME_COLUMNS: SummaryColumns = SummaryColumns {
    with_p99: true,
    interval: "median_ci",
    unit: "_us",
    decimals: 3,
};

/// The timed series, in the order of [`time_fields`].
const TIME_SERIES: [&str; 5] = [
    "wall",
    "client_cpu",
    "server_cpu",
    "client_call",
    "server_call",
];

/// The headers of [`scenario_fields`].
const SCENARIO_HEADERS: [&str; 19] = [
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
    "transport",
    "negotiated_suite",
    "negotiated_group",
    "negotiated_signature",
    "samples",
    "rounds",
    "precise",
    "handshakes_per_second",
];

/// The headers of [`ratio_fields`].
const RATIO_HEADERS: [&str; 7] = [
    "ratio",
    "ratio_ci_low",
    "ratio_ci_high",
    "ratio_pairs",
    "ratio_note",
    "weak",
    "security_notes",
];

/// One line per row with every statistic; a row measured over network
/// profiles has one line per profile.
pub(super) fn records(rows: &[Row]) -> Table {
    let mut headers: Vec<String> = SCENARIO_HEADERS.map(String::from).to_vec();
    for series in TIME_SERIES {
        headers.extend(TIME_COLUMNS.headers(series));
    }
    headers.extend(RATIO_HEADERS.map(String::from));
    headers.extend(wire::RECORD_HEADERS.map(String::from));
    let mut table = Table::records(headers);
    for row in rows {
        let mut fields = scenario_fields(row);
        fields.extend(time_fields(row));
        fields.extend(ratio_fields(row));
        // One record per network profile, or one without.
        let networks: Vec<Option<&wire::NetworkFigures>> = if row.network.is_empty() {
            vec![None]
        } else {
            row.network.iter().map(Some).collect()
        };
        for network in networks {
            let mut record = fields.clone();
            record.extend(wire::record_fields(row, network));
            table.rows.push(record);
        }
    }
    table
}

/// The row's name, status, axes, what was negotiated and how it was sampled.
fn scenario_fields(row: &Row) -> Vec<String> {
    let negotiated = row.negotiated.as_ref();
    let s = &row.scenario;
    vec![
        row.label.clone(),
        row.subject.to_string(),
        row.status.to_string(),
        row.reason.clone().unwrap_or_default(),
        s.version.id().to_string(),
        s.group.id().to_string(),
        s.cert.id().to_string(),
        s.aead.id().to_string(),
        s.resumption.id().to_string(),
        s.mutual.to_string(),
        s.chain_depth.to_string(),
        s.transport.id().to_string(),
        negotiated.map(|n| n.suite.clone()).unwrap_or_default(),
        negotiated.and_then(|n| n.group.clone()).unwrap_or_default(),
        negotiated
            .and_then(|n| n.signature.clone())
            .unwrap_or_default(),
        row.sample_count.to_string(),
        row.rounds.to_string(),
        row.precise.to_string(),
        number(row.handshakes_per_second, 3),
    ]
}

/// Every statistic of each of [`TIME_SERIES`].
fn time_fields(row: &Row) -> Vec<String> {
    [
        row.wall_us,
        row.client_cpu_us,
        row.server_cpu_us,
        row.client_call_us,
        row.server_call_us,
    ]
    .iter()
    .flat_map(|summary| TIME_COLUMNS.fields(summary.as_ref()))
    .collect()
}

/// The ratio to the baseline with its interval, and the row's security.
fn ratio_fields(row: &Row) -> Vec<String> {
    let ratio = row.ratio_to_baseline.as_ref();
    vec![
        number(ratio.map(|r| r.value), 3),
        number(ratio.map(|r| r.ci95.low), 3),
        number(ratio.map(|r| r.ci95.high), 3),
        ratio.map(|r| r.pairs.to_string()).unwrap_or_default(),
        row.ratio_note.clone().unwrap_or_default(),
        row.weak.to_string(),
        row.security_notes.join("; "),
    ]
}
