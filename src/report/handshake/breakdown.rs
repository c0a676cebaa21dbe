//! The breakdown table: per cell and side, each category's share of the
//! side's instructions per handshake (`--breakdown`), as callgrind counted them.

use super::table::millions;
use super::table::AXES;
use crate::report::{Column, Columns, Table};
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

/// One line of the breakdown: a cell's side and its instructions.
struct Line<'c> {
    cell: &'c CellResult,
    side: &'static str,
    /// The side's instructions in every category of [`CATEGORY_HEADERS`].
    total: f64,
}

impl<'c> Line<'c> {
    fn new(cell: &'c CellResult, side: &'static str) -> Self {
        let mut line = Self {
            cell,
            side,
            total: 0.0,
        };
        line.total = CATEGORY_HEADERS.iter().map(|(c, _)| line.of(*c)).sum();
        line
    }

    /// The side's instructions in `category`.
    fn of(&self, category: ProfileCategory) -> f64 {
        self.cell
            .counts
            .breakdown
            .iter()
            .filter(|c| {
                c.side == self.side && ProfileCategory::from_label(&c.category) == Some(category)
            })
            .map(|c| c.instructions)
            .sum()
    }
}

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
    let lines: Vec<Line> = counted
        .iter()
        .flat_map(|cell| ["client", "server"].map(|side| Line::new(cell, side)))
        .filter(|line| line.total > 0.0)
        .collect();
    let mut columns = Columns::new()
        .with(Column::axis("backend"), |l: &Line| {
            l.cell.subject.to_string()
        })
        .with_axes(&AXES, |l| &l.cell.scenario)
        .with(Column::text("side"), |l| l.side.to_string());
    for (category, header) in CATEGORY_HEADERS {
        // On a narrow terminal the categories that hold little of a
        // handshake's instructions (random numbers, symmetric ciphers,
        // tlslab's own code, other) go first, and the table says so.
        let small = matches!(
            category,
            ProfileCategory::Random
                | ProfileCategory::Symmetric
                | ProfileCategory::HttpTlslab
                | ProfileCategory::Other
        );
        columns.push(Column::number(header).priority(u8::from(small)), move |l| {
            format!("{:.1}", l.of(category) / l.total * 100.0)
        });
    }
    let mut table = columns
        .with(Column::number("M instr"), |l| millions(l.total))
        .table(&lines)
        .titled("Where the instructions go (% of each side's instructions per handshake)");
    table.notes.push("pubkey: public key (big numbers, RSA, elliptic curves, X25519/X448, DH, ML-KEM, ML-DSA); hash: hashing and KDF; sym: symmetric ciphers; rand: random numbers; x509: certificates and ASN.1; tls: the TLS state machine (libssl, rustls, dimpl); plumb: the rest of the library (provider and algorithm look-ups, BIO, error stack, wrappers); libc: allocation, memcpy and the rest of libc and Rust's core; tlslab: tlslab's own code inside the turns (the memory transport); other: unnamed code. Each function's own instructions, as callgrind counted them, sorted by its name and object; the categories of a side add up to its total (M instr, the mean per handshake).".to_string());
    Some(table)
}
