//! The bulk charts: each side's MB per CPU second against the write size,
//! one bar per backend and suite, one series per write size, with the 95%
//! interval of the median; the no-crypto row is the first bar.

use super::{Bar, Figure, Layout};
use crate::report::bulk::BulkRow;
use crate::scenario::bulk::Channel;
use crate::stats::Summary;

/// A row's name without its write size: "openssl · TLS 1.3 aes128gcm".
fn name(row: &BulkRow, one_backend: bool) -> String {
    let channel = match row.scenario.channel {
        Channel::Plain | Channel::PlainDatagrams => return row.scenario.channel.display(),
        Channel::Tls { version, .. } => {
            format!("{} {}", version.display(), row.scenario.suite_name())
        }
    };
    super::row_label(&row.subject.name(), &channel, one_backend)
}

/// True if and only if the row's protection is CBC with an HMAC, which the
/// tables' notes flag (MAC-then-encrypt, padding oracles).
fn is_weak(row: &BulkRow) -> bool {
    matches!(row.scenario.channel, Channel::Tls { aead, .. } if !aead.is_aead())
}

fn reason(row: &BulkRow) -> String {
    match &row.reason {
        Some(reason) => format!("{}: {reason}", row.status),
        None => row.status.to_string(),
    }
}

/// MB per second from milliseconds per MB, with the interval inverted.
fn rate(summary: Option<Summary>) -> (Option<f64>, Option<(f64, f64)>) {
    match summary {
        Some(s) if s.median > 0.0 => (
            Some(1e3 / s.median),
            (s.median_ci95.low > 0.0).then(|| (1e3 / s.median_ci95.high, 1e3 / s.median_ci95.low)),
        ),
        _ => (None, None),
    }
}

fn side_figure(
    rows: &[BulkRow],
    id: &str,
    side: &str,
    pick: fn(&BulkRow) -> Option<Summary>,
) -> Figure {
    let one_backend = rows
        .iter()
        .filter(|r| !r.scenario.channel.is_plain())
        .map(|r| r.subject)
        .collect::<std::collections::HashSet<_>>()
        .len()
        <= 1;
    let mut sizes: Vec<usize> = rows.iter().map(|r| r.scenario.write_bytes).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut names: Vec<String> = Vec::new();
    for row in rows {
        let name = name(row, one_backend);
        if !names.contains(&name) {
            names.push(name);
        }
    }
    // The no-crypto row first, then the rows in the table's order.
    names.sort_by_key(|n| n != "no crypto");
    let bars = names
        .iter()
        .map(|bar_name| {
            let of_size = |size: usize| {
                rows.iter()
                    .find(|r| r.scenario.write_bytes == size && name(r, one_backend) == *bar_name)
            };
            let rates: Vec<_> = sizes
                .iter()
                .map(|s| of_size(*s).map_or((None, None), |r| rate(pick(r))))
                .collect();
            let weak = sizes.iter().filter_map(|s| of_size(*s)).any(is_weak);
            if rates.iter().all(|(v, _)| v.is_none()) {
                let first = sizes.iter().find_map(|s| of_size(*s));
                return Bar {
                    weak,
                    ..Bar::missing(
                        bar_name.clone(),
                        sizes.len(),
                        first.map(reason).unwrap_or_default(),
                    )
                };
            }
            Bar {
                intervals: rates.iter().map(|(_, i)| *i).collect(),
                weak,
                ..Bar::new(bar_name.clone(), rates.iter().map(|(v, _)| *v).collect())
            }
        })
        .collect();
    let mut notes = vec![format!(
        "Bars: MB (10^6 bytes) of application data per second of the {side}'s CPU time, from the median; whiskers: the 95% interval of the median. The handshake is not counted."
    )];
    if rows.iter().any(is_weak) {
        notes.push(
            "WEAK here: CBC with HMAC (MAC-then-encrypt unless encrypt-then-MAC is negotiated; see the table's notes).".to_string(),
        );
    }
    Figure {
        id: id.to_string(),
        title: format!("Bulk data: the {side}'s throughput per write size"),
        axis: format!("{side} MB/s (per CPU second), median"),
        series: sizes.iter().map(|s| format!("{s} B writes")).collect(),
        layout: Layout::Grouped,
        bars,
        reference: None,
        notes,
    }
}

/// The charts of a bulk report's rows: the sender's (encrypting) and the
/// receiver's (decrypting) throughput.
pub fn figures(rows: &[BulkRow]) -> Vec<Figure> {
    if rows.is_empty() {
        return Vec::new();
    }
    vec![
        side_figure(rows, "bulk_send", "sender", |r| r.sender_ms_per_mb),
        side_figure(rows, "bulk_receive", "receiver", |r| r.receiver_ms_per_mb),
    ]
}
