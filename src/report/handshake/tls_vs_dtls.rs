//! The price of DTLS: every DTLS row beside the TLS row of the same
//! version rules (1.2 with 1.2, 1.3 with 1.3), group, certificate, suite
//! and mode, with the ratio of their CPU cost (client + server) from
//! same-round pairs. A DTLS row pairs with the TLS row of its own backend;
//! a backend without TLS (dimpl, the DTLS 1.3 of this tool) pairs with the
//! TLS row of every other backend in the run, and the table says which
//! library each side is. What the difference pays for: the cookie round
//! trip (a second ClientHello after a HelloVerifyRequest, or in 1.3 a
//! HelloRetryRequest), the longer record header, and handshake messages
//! fragmented to the MTU; across libraries, the libraries as well.

use serde::Serialize;

use super::super::markup::format_us;
use super::super::{Column, Columns, Table};
use super::ratio_text;
use crate::measure;
use crate::scenario::{HandshakeScenario, Subject, TlsVersion, Transport};
use crate::stats::{self, PairedRatio, Summary};
use crate::workload::handshake::CellResult;

/// One TLS row and the DTLS row that differs from it only in the protocol
/// (and, across libraries, in the backend).
#[derive(Debug, Clone, Serialize)]
pub struct Pair {
    pub tls_backend: Subject,
    pub dtls_backend: Subject,
    pub tls_label: String,
    pub dtls_label: String,
    /// CPU time per handshake, client + server, microseconds.
    pub tls_cpu_us: Summary,
    pub dtls_cpu_us: Summary,
    /// DTLS cost over TLS cost, the median of same-round ratios.
    pub ratio: Option<PairedRatio>,
}

/// The TLS scenario a DTLS scenario is compared with: TLS 1.2 for DTLS
/// 1.2, TLS 1.3 for DTLS 1.3; over memory its memory twin, over UDP its
/// twin over TCP.
fn tls_twin(dtls: &HandshakeScenario) -> HandshakeScenario {
    HandshakeScenario {
        version: dtls.version.tls_rules(),
        mtu_bytes: None,
        transport: match dtls.transport {
            Transport::Udp => Transport::Tcp,
            other => other,
        },
        ..*dtls
    }
}

fn cpu_us(cell: &CellResult) -> Option<Summary> {
    let values: Vec<f64> = measure::costs(cell.samples())
        .iter()
        .map(|(_, cost_ns)| cost_ns / 1000.0)
        .collect();
    stats::summarize(&values)
}

/// Every measured DTLS cell with its measured TLS twin on the same
/// backend, or, for a backend without one, on each other backend; in the
/// order of the cells.
pub fn pairs(cells: &[CellResult]) -> Vec<Pair> {
    let measured = |cell: &&CellResult| !cell.samples().is_empty();
    let rounds = |cell: &CellResult| stats::round_medians(&measure::costs(cell.samples()));
    let mut pairs = Vec::new();
    for dtls in cells
        .iter()
        .filter(|c| c.scenario.version.is_dtls())
        .filter(measured)
    {
        let twin = tls_twin(&dtls.scenario);
        let twins: Vec<&CellResult> = cells
            .iter()
            .filter(|c| c.scenario == twin)
            .filter(measured)
            .collect();
        let own: Vec<&CellResult> = twins
            .iter()
            .copied()
            .filter(|c| c.subject == dtls.subject)
            .collect();
        let partners = if own.is_empty() {
            twins
                .into_iter()
                // Generic rows (a child process run without CPU
                // features) pair only among themselves.
                .filter(|c| c.subject.cpu_features() == dtls.subject.cpu_features())
                .collect()
        } else {
            own
        };
        for tls in partners {
            let (Some(tls_cpu_us), Some(dtls_cpu_us)) = (cpu_us(tls), cpu_us(dtls)) else {
                continue;
            };
            pairs.push(Pair {
                tls_backend: tls.subject,
                dtls_backend: dtls.subject,
                tls_label: tls.scenario.label(),
                dtls_label: dtls.scenario.label(),
                tls_cpu_us,
                dtls_cpu_us,
                ratio: stats::paired_ratio(&rounds(dtls), &rounds(tls)),
            });
        }
    }
    pairs
}

/// A difference in microseconds with its sign.
fn signed_us(value: f64) -> String {
    let sign = if value < 0.0 { "-" } else { "+" };
    format!("{sign}{}", format_us(value.abs()))
}

/// The table, or `None` when the run has no TLS and DTLS rows to pair.
pub fn table(pairs: &[Pair], cells: &[CellResult]) -> Option<Table> {
    if pairs.is_empty() {
        return None;
    }
    // Each pair with the DTLS row's version and its scenario in words.
    let lines: Vec<(&Pair, TlsVersion, String)> = pairs
        .iter()
        .map(|pair| {
            let cell = cells.iter().find(|c| c.scenario.label() == pair.dtls_label);
            let scenario = cell.map(|c| c.scenario.describe()).unwrap_or_default();
            let version = cell.map_or(TlsVersion::Dtls12, |c| c.scenario.version);
            (pair, version, scenario)
        })
        .collect();
    let mut table = Columns::new()
        .with(
            Column::text("protocols"),
            |(_, version, _): &(&Pair, TlsVersion, String)| {
                format!("{} / {}", version.tls_rules().display(), version.display())
            },
        )
        .with(
            Column::text("group, certificate, suite"),
            |(_, version, scenario)| {
                scenario
                    .trim_start_matches(version.display())
                    .trim()
                    .to_string()
            },
        )
        .with(Column::text("TLS on"), |(pair, _, _)| {
            pair.tls_backend.to_string()
        })
        .with(Column::text("DTLS on"), |(pair, _, _)| {
            pair.dtls_backend.to_string()
        })
        .with(Column::number("TLS CPU µs"), |(pair, _, _)| {
            format_us(pair.tls_cpu_us.median)
        })
        .with(Column::number("DTLS CPU µs"), |(pair, _, _)| {
            format_us(pair.dtls_cpu_us.median)
        })
        .with(Column::number("DTLS − TLS µs"), |(pair, _, _)| {
            signed_us(pair.dtls_cpu_us.median - pair.tls_cpu_us.median)
        })
        .with(Column::number("DTLS / TLS (±95% CI)"), |(pair, _, _)| {
            pair.ratio
                .as_ref()
                .map(ratio_text)
                .unwrap_or_else(|| "—".to_string())
        })
        .table(&lines)
        .titled("TLS against DTLS: the price of DTLS");
    table.notes.push("CPU: client + server thread CPU time per handshake, median. DTLS / TLS: the median of same-round ratios. DTLS pays for the cookie round trip (HelloVerifyRequest and a second ClientHello in 1.2, a HelloRetryRequest in 1.3), a longer record header and handshake messages fragmented to the MTU.".to_string());
    if pairs.iter().any(|p| p.tls_backend != p.dtls_backend) {
        table.notes.push("TLS on / DTLS on: the backend of each side. A DTLS backend without TLS (dimpl) is paired with every other backend's TLS row, so those ratios hold the difference between the libraries too: dimpl and rustls-aws-lc both do their cryptography with aws-lc, OpenSSL with its own libcrypto.".to_string());
    }
    Some(table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{Outcome, Timed};
    use crate::scenario::{CertKind, Group};
    use crate::workload::handshake::Sample;

    fn cell(version: TlsVersion, cost_ns: &[u64]) -> CellResult {
        cell_on("openssl", version, cost_ns)
    }

    fn cell_on(backend: &str, version: TlsVersion, cost_ns: &[u64]) -> CellResult {
        CellResult {
            counts: Default::default(),
            subject: Subject::from_name(backend).unwrap(),
            scenario: HandshakeScenario::full(version, Group::P256, CertKind::EcdsaP256),
            negotiated: None,
            outcome: Outcome::Measured {
                samples: cost_ns
                    .iter()
                    .enumerate()
                    .map(|(round, cost)| Timed {
                        round: round as u32,
                        value: Sample {
                            wall_ns: cost * 2,
                            client_ns: *cost,
                            server_ns: *cost,
                            client_cpu_ns: cost / 2,
                            server_cpu_ns: cost / 2,
                        },
                    })
                    .collect(),
                precise: true,
                note: None,
            },
        }
    }

    #[test]
    fn dtls_rows_pair_with_their_tls_twin() {
        // The machine slows down in the last rounds; the paired ratio does not move.
        let tls = cell(TlsVersion::Tls12, &[1000, 1000, 2000, 2000]);
        let dtls = cell(TlsVersion::Dtls12, &[1500, 1500, 3000, 3000]);
        let other = cell(TlsVersion::Tls13, &[900, 900, 900, 900]);
        let cells = vec![tls, other, dtls];
        let pairs = pairs(&cells);
        assert_eq!(pairs.len(), 1);
        assert_eq!(
            pairs[0].tls_label,
            "handshake_1.2_p256_ecdsa_p256_aes128gcm"
        );
        assert_eq!(
            pairs[0].dtls_label,
            "handshake_dtls1.2_p256_ecdsa_p256_aes128gcm"
        );
        assert_eq!(pairs[0].ratio.as_ref().unwrap().value, 1.5);
        let table = table(&pairs, &cells).unwrap();
        assert_eq!(table.rows[0][0], "TLS 1.2 / DTLS 1.2");
        assert_eq!(table.rows[0][1], "ECDHE P-256 ECDSA P-256 aes-128-gcm");
        assert_eq!(table.rows[0][2..4], ["openssl", "openssl"]);
        assert_eq!(table.rows[0][6], "+0.75");
        assert!(table.rows[0][7].starts_with("1.50"), "{:?}", table.rows[0]);
        assert_eq!(
            table.notes.len(),
            1,
            "no note on libraries for same-backend pairs"
        );
    }

    #[test]
    fn dtls13_on_dimpl_pairs_with_every_tls13_backend() {
        let cells = vec![
            cell_on("openssl", TlsVersion::Tls13, &[1000, 1000, 2000]),
            cell_on("rustls-aws-lc", TlsVersion::Tls13, &[800, 800, 1600]),
            cell_on("openssl", TlsVersion::Dtls13, &[]),
            cell_on("dimpl", TlsVersion::Dtls13, &[1200, 1200, 2400]),
            // A TLS 1.2 row is no twin of a DTLS 1.3 row.
            cell_on("openssl", TlsVersion::Tls12, &[700, 700, 1400]),
        ];
        let pairs = pairs(&cells);
        let sides: Vec<(&str, &str)> = pairs
            .iter()
            .map(|p| (p.tls_backend.id(), p.dtls_backend.id()))
            .collect();
        assert_eq!(sides, [("openssl", "dimpl"), ("rustls-aws-lc", "dimpl")]);
        assert_eq!(
            pairs[1].tls_label,
            "handshake_1.3_p256_ecdsa_p256_aes128gcm"
        );
        assert_eq!(pairs[0].ratio.as_ref().unwrap().value, 1.2);
        assert_eq!(pairs[1].ratio.as_ref().unwrap().value, 1.5);
        let table = table(&pairs, &cells).unwrap();
        assert_eq!(table.rows[1][0], "TLS 1.3 / DTLS 1.3");
        assert_eq!(table.rows[1][2..4], ["rustls-aws-lc", "dimpl"]);
        assert!(table.notes[1].contains("aws-lc"), "{:?}", table.notes);
    }

    #[test]
    fn no_table_without_both_protocols() {
        let cells = vec![cell(TlsVersion::Dtls12, &[1500])];
        assert!(pairs(&cells).is_empty());
        assert!(table(&[], &cells).is_none());
    }
}
