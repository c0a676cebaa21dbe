//! The breakdown table: per cell and side, each category's share of the
//! side's instructions per handshake (`--breakdown`), as callgrind counted them.

use super::table::millions;
use super::{axis_cells, AXIS_HEADERS};
use crate::report::{ColumnKind, Table};
use crate::workload::handshake::CellResult;
use crate::workload::perf::ProfileCategory;

/// The short headers of the breakdown's categories, in
/// [`ProfileCategory::ALL`]'s order (the kernel is never counted in user space).
const CATEGORY_HEADERS: [(ProfileCategory, &str); 10] = [
    (ProfileCategory::PublicKey, "pubkey"),
    (ProfileCategory::Hashing, "hash"),
    (ProfileCategory::Symmetric, "sym"),
    (ProfileCategory::Random, "rand"),
    (ProfileCategory::Certificates, "x509"),
    (ProfileCategory::TlsStateMachine, "tls"),
    (ProfileCategory::OpensslPlumbing, "plumb"),
    (ProfileCategory::MemoryLibc, "libc"),
    (ProfileCategory::HttpTlslab, "tlslab"),
    (ProfileCategory::Other, "other"),
];

/// Where each side's instructions go: per cell and side, each category's
/// share of the side's instructions, and the side's total (`None` when no
/// cell has a breakdown). `cost --breakdown --measure instructions` shows
/// it beside its model.
pub fn breakdown_table(cells: &[CellResult]) -> Option<Table> {
    let counted: Vec<&CellResult> = cells
        .iter()
        .filter(|c| !c.counts.breakdown.is_empty())
        .collect();
    if counted.is_empty() {
        return None;
    }
    let mut headers = vec!["backend"];
    headers.extend(AXIS_HEADERS);
    headers.push("side");
    headers.extend(CATEGORY_HEADERS.map(|(_, h)| h));
    headers.push("M instr");
    let axes = 1 + AXIS_HEADERS.len();
    let mut numeric = vec![false; axes + 1];
    numeric.extend([true; CATEGORY_HEADERS.len() + 1]);
    // On a narrow terminal the categories that hold little of a
    // handshake's instructions (random numbers, symmetric ciphers,
    // tlslab's own code, other) go first, and the table says so.
    let mut priority = vec![0; headers.len()];
    for (i, (category, _)) in CATEGORY_HEADERS.iter().enumerate() {
        if matches!(
            category,
            ProfileCategory::Random
                | ProfileCategory::Symmetric
                | ProfileCategory::HttpTlslab
                | ProfileCategory::Other
        ) {
            priority[axes + 1 + i] = 1;
        }
    }
    let mut table = Table::new(&headers, &numeric)
        .priorities(&priority)
        .mark(&(0..axes).collect::<Vec<_>>(), ColumnKind::Axis)
        .titled("Where the instructions go (% of each side's instructions per handshake)");
    for row in counted {
        for side in ["client", "server"] {
            let of_side = |category: ProfileCategory| -> f64 {
                row.counts
                    .breakdown
                    .iter()
                    .filter(|c| {
                        c.side == side && ProfileCategory::from_label(&c.category) == Some(category)
                    })
                    .map(|c| c.instructions)
                    .sum()
            };
            let total: f64 = CATEGORY_HEADERS.iter().map(|(c, _)| of_side(*c)).sum();
            if total <= 0.0 {
                continue;
            }
            let mut cells = vec![row.subject.to_string()];
            cells.extend(axis_cells(&row.scenario));
            cells.push(side.to_string());
            cells.extend(
                CATEGORY_HEADERS
                    .iter()
                    .map(|(category, _)| format!("{:.1}", of_side(*category) / total * 100.0)),
            );
            cells.push(millions(total));
            table.rows.push(cells);
        }
    }
    table.notes.push("pubkey: public key (big numbers, RSA, elliptic curves, X25519/X448, DH, ML-KEM, ML-DSA); hash: hashing and KDF; sym: symmetric ciphers; rand: random numbers; x509: certificates and ASN.1; tls: the TLS state machine (libssl, rustls, dimpl); plumb: the rest of the library (provider and algorithm look-ups, BIO, error stack, wrappers); libc: allocation, memcpy and the rest of libc and Rust's core; tlslab: tlslab's own code inside the turns (the memory transport); other: unnamed code. Each function's own instructions, as callgrind counted them, sorted by its name and object; the categories of a side add up to its total (M instr, the mean per handshake).".to_string());
    Some(table)
}
