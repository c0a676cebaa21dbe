//! The price of DTLS: every DTLS 1.2 row beside the TLS 1.2 row of the same
//! backend, group, certificate, suite and mode, with the ratio of their CPU
//! cost (client + server) from same-round pairs. What the difference pays
//! for: the cookie round trip (a second ClientHello and a
//! HelloVerifyRequest), the longer record header, and handshake messages
//! fragmented to the MTU.

use serde::Serialize;

use super::super::markup::format_us;
use super::super::Table;
use super::ratio_text;
use crate::measure;
use crate::scenario::{HandshakeScenario, TlsVersion, Transport};
use crate::stats::{self, PairedRatio, Summary};
use crate::workload::handshake::CellResult;

/// One TLS 1.2 row and the DTLS 1.2 row that differs from it only in the protocol.
#[derive(Debug, Clone, Serialize)]
pub struct Pair {
    pub backend: String,
    pub tls_label: String,
    pub dtls_label: String,
    /// CPU time per handshake, client + server, microseconds.
    pub tls_cpu_us: Summary,
    pub dtls_cpu_us: Summary,
    /// DTLS cost over TLS cost, the median of same-round ratios.
    pub ratio: Option<PairedRatio>,
}

/// The TLS 1.2 scenario a DTLS 1.2 scenario is compared with: over
/// memory its memory twin, over UDP its twin over TCP.
fn tls_twin(dtls: &HandshakeScenario) -> HandshakeScenario {
    HandshakeScenario {
        version: TlsVersion::Tls12,
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

/// Every measured DTLS 1.2 cell with its measured TLS 1.2 twin, in the
/// order of the cells.
pub fn pairs(cells: &[CellResult]) -> Vec<Pair> {
    cells
        .iter()
        .filter(|c| c.scenario.version == TlsVersion::Dtls12)
        .filter_map(|dtls| {
            let twin = tls_twin(&dtls.scenario);
            let tls = cells
                .iter()
                .find(|c| c.backend == dtls.backend && c.scenario == twin)?;
            let rounds = |cell: &CellResult| stats::round_medians(&measure::costs(cell.samples()));
            Some(Pair {
                backend: dtls.backend.clone(),
                tls_label: tls.scenario.label(),
                dtls_label: dtls.scenario.label(),
                tls_cpu_us: cpu_us(tls)?,
                dtls_cpu_us: cpu_us(dtls)?,
                ratio: stats::paired_ratio(&rounds(dtls), &rounds(tls)),
            })
        })
        .collect()
}

/// A difference in microseconds with its sign.
fn signed_us(value: f64) -> String {
    let sign = if value < 0.0 { "-" } else { "+" };
    format!("{sign}{}", format_us(value.abs()))
}

/// The table, or `None` when the run has no TLS 1.2 and DTLS 1.2 rows to pair.
pub fn table(pairs: &[Pair], cells: &[CellResult]) -> Option<Table> {
    if pairs.is_empty() {
        return None;
    }
    let mut table = Table::new(
        &[
            "backend",
            "group, certificate, suite",
            "TLS 1.2 CPU µs",
            "DTLS 1.2 CPU µs",
            "DTLS − TLS µs",
            "DTLS / TLS (±95% CI)",
        ],
        &[false, false, true, true, true, true],
    )
    .titled("TLS 1.2 against DTLS 1.2: the price of DTLS");
    for pair in pairs {
        let scenario = cells
            .iter()
            .find(|c| c.scenario.label() == pair.dtls_label)
            .map(|c| c.scenario.describe())
            .unwrap_or_default();
        table.rows.push(vec![
            pair.backend.clone(),
            scenario
                .trim_start_matches(TlsVersion::Dtls12.display())
                .trim()
                .to_string(),
            format_us(pair.tls_cpu_us.median),
            format_us(pair.dtls_cpu_us.median),
            signed_us(pair.dtls_cpu_us.median - pair.tls_cpu_us.median),
            pair.ratio
                .as_ref()
                .map(ratio_text)
                .unwrap_or_else(|| "—".to_string()),
        ]);
    }
    table.notes.push("CPU: client + server thread CPU time per handshake, median. DTLS / TLS: the median of same-round ratios. DTLS pays for the cookie round trip (HelloVerifyRequest and a second ClientHello), a 13-byte record header and handshake messages fragmented to the MTU.".to_string());
    Some(table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{Outcome, Timed};
    use crate::scenario::{Aead, CertKind, Group, Resumption, DEFAULT_MTU_BYTES};
    use crate::workload::handshake::Sample;

    fn cell(version: TlsVersion, cost_ns: &[u64]) -> CellResult {
        CellResult {
            backend: "openssl".into(),
            scenario: HandshakeScenario {
                version,
                group: Group::P256,
                cert: CertKind::EcdsaP256,
                aead: Aead::Aes128Gcm,
                resumption: Resumption::Off,
                mutual: false,
                chain_depth: 3,
                mtu_bytes: HandshakeScenario::mtu_for(version, DEFAULT_MTU_BYTES),
                transport: crate::scenario::Transport::Memory,
            },
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
        assert_eq!(table.rows[0][1], "ECDHE P-256 ECDSA P-256 aes128gcm");
        assert_eq!(table.rows[0][4], "+0.75");
        assert!(table.rows[0][5].starts_with("1.50"), "{:?}", table.rows[0]);
    }

    #[test]
    fn no_table_without_both_protocols() {
        let cells = vec![cell(TlsVersion::Dtls12, &[1500])];
        assert!(pairs(&cells).is_empty());
        assert!(table(&[], &cells).is_none());
    }
}
