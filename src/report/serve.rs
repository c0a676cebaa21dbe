//! The embedded server's view: what it served, its threads' CPU per
//! request and per handshake, and where that CPU went (counted on rustls).
//! `tlslab serve` prints it when it stops; `tlslab load --server embedded`
//! adds its tables to the load view.

use serde_json::json;

use super::{Column, Document, Table};
use crate::scenario::Subject;
use crate::workload::serve::ServerStats;

fn micros_per(ns: u64, count: u64) -> String {
    if count == 0 {
        "—".to_string()
    } else {
        format!("{:.1}", ns as f64 / 1000.0 / count as f64)
    }
}

/// The server's counts and CPU, one row per measure.
pub fn summary_table(stats: &ServerStats, title: String) -> Table {
    let mut table =
        Table::new(vec![Column::text("measure"), Column::number("value")]).titled(title);
    let rows: Vec<(&str, String)> = vec![
        ("worker threads", stats.workers.to_string()),
        (
            "connections (most at once / limit)",
            format!(
                "{} ({} / {})",
                stats.connections, stats.most_connections, stats.connection_limit
            ),
        ),
        (
            "connections closed before a byte came",
            stats.silent_connections.to_string(),
        ),
        ("requests answered with a page", stats.requests.to_string()),
        (
            "requests refused (bad path, method or head)",
            stats.refused_requests.to_string(),
        ),
        (
            "request heads not complete in time (408)",
            stats.timed_out_requests.to_string(),
        ),
        (
            "handshakes (resumed)",
            format!("{} ({})", stats.handshakes, stats.resumed),
        ),
        ("failed handshakes", stats.failed_handshakes.to_string()),
        (
            "page bytes sent (MB)",
            format!("{:.2}", stats.body_bytes as f64 / 1e6),
        ),
        (
            "server threads' CPU (ms)",
            format!("{:.1}", stats.cpu_ns as f64 / 1e6),
        ),
        (
            "server CPU per request (µs)",
            micros_per(stats.cpu_ns, stats.requests),
        ),
        (
            "server CPU per handshake (µs)",
            micros_per(stats.cpu_ns, stats.handshakes),
        ),
    ];
    for (name, value) in rows {
        table.rows.push(vec![name.to_string(), value]);
    }
    if let Some(failure) = &stats.first_failure {
        table
            .notes
            .push(format!("first failed handshake: {failure}"));
    }
    table
}

/// Where the server's CPU went, per category (rustls: counted), or a line
/// saying why there is no breakdown.
pub fn breakdown_table(stats: &ServerStats, backend: Subject) -> Table {
    let mut table = Table::new(vec![
        Column::text("category"),
        Column::number("µs per request"),
        Column::number("share of server CPU"),
    ])
    .titled(format!("Where the server's CPU went ({backend}, counted)"));
    match stats.breakdown() {
        Some(shares) => {
            for share in shares {
                table.rows.push(vec![
                    share.name,
                    micros_per(share.ns, stats.requests),
                    if stats.cpu_ns == 0 {
                        "—".to_string()
                    } else {
                        format!("{:.1}%", share.ns as f64 / stats.cpu_ns as f64 * 100.0)
                    },
                ]);
            }
            table.notes.push(
                "Every crypto call of the server's rustls provider timed on the worker threads (exclusive times, as cost --breakdown counts them); rest of TLS: rustls's own calls less that crypto; HTTP: tlslab's request parsing and response building (over HTTP/2, nghttp2's framing too); rest: the threads' CPU time (the total) less all of these — the kernel's socket work, accepting, the event loop.".to_string(),
            );
        }
        None => {
            table.empty = Some(format!(
                "No counted breakdown: {backend} is not instrumented (only the rustls backends count their crypto calls); see the perf profile, if asked for."
            ));
        }
    }
    table
}

/// The server's figures as JSON.
pub fn data(stats: &ServerStats, backend: Subject) -> serde_json::Value {
    json!({
        "backend": backend,
        "stats": stats,
        "breakdown": stats.breakdown(),
    })
}

/// What `tlslab serve` prints when it stops.
pub fn document(
    heading: String,
    scenario: &str,
    backend: Subject,
    stats: &ServerStats,
) -> Document {
    let summary = summary_table(
        stats,
        format!(
            "Embedded server: {scenario} on {backend}, {:.1} s",
            stats.elapsed.as_secs_f64()
        ),
    );
    let breakdown = breakdown_table(stats, backend);
    let mut records = Table::records(["category", "ns"]);
    for share in stats.breakdown().unwrap_or_default() {
        records.rows.push(vec![share.name, share.ns.to_string()]);
    }
    Document {
        heading,
        tables: vec![summary, breakdown],
        records,
        data: json!({ "scenario": scenario, "server": data(stats, backend) }),
        footer: Vec::new(),
        figures: Vec::new(),
    }
}
