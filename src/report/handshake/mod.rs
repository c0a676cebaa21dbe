//! The handshake view: per row the handshakes per second, each side's CPU
//! time, the wall time with the interval of its median, and the ratio to
//! the baseline row taken from same-round pairs ([`rows`]), drawn as the
//! table a person reads ([`table`]), where the instructions go
//! ([`breakdown`]) and one record per row ([`csv`]); and, when a run has
//! both, TLS rows beside their DTLS twins ([`tls_vs_dtls`]); the handshake
//! on the wire and over networks ([`wire`]).

mod breakdown;
mod csv;
mod rows;
mod table;
pub mod tls_vs_dtls;
pub mod wire;

pub use breakdown::breakdown_table;
pub use rows::{build_rows, drift, CountedFigures, MemoryFigures, Row, REPEATABLE_SPREAD};
pub(crate) use table::{axis_cells, AXES, AXIS_HEADERS};

use super::compare::kind::Kind;
use super::Document;
use crate::backend::LibraryInfo;
use crate::host::HostInfo;
use crate::measure::Round;
use crate::scenario::Measure;
use crate::workload::handshake::CellResult;
use rows::{other_work, rows_paired, with_baselines};
use table::ratio_text;

/// What a handshake run's rows measure in `compare`: both sides' CPU
/// time, instructions or peak heap bytes per handshake.
pub fn compared(measure: Measure) -> Kind {
    let kind = Kind::rows("handshake", "backend", AXIS_HEADERS.to_vec());
    match measure {
        Measure::Time => kind.on_time(
            "CPU µs",
            "both sides' CPU time per handshake (client + server)",
            1e-3,
        ),
        Measure::Instructions => kind.on_counts(
            "M instr",
            "both sides' instructions per handshake (client + server), counted under valgrind",
            1e-6,
        ),
        Measure::Memory => kind.on_counts(
            "peak KiB",
            "both sides' peak heap bytes per handshake (client + server)",
            1.0 / 1024.0,
        ),
    }
}

/// Puts cells in one order for a live run and for the same run read back
/// from the store (which keeps cells in the order they finished): the
/// scenario's axes in their declared order, then the backend.
pub fn sort_cells(cells: &mut [CellResult]) {
    let rank = super::backend_rank;
    cells.sort_by(|a, b| {
        (a.scenario, rank(a.subject), a.subject.name()).cmp(&(
            b.scenario,
            rank(b.subject),
            b.subject.name(),
        ))
    });
}

/// A finished (or interrupted) handshake run, ready to export.
pub struct HandshakeReport<'a> {
    pub run_id: Option<i64>,
    pub complete: bool,
    pub baseline: Option<&'a str>,
    pub host: &'a HostInfo,
    pub libraries: &'a [LibraryInfo],
    pub seed: Option<u64>,
    pub precision: Option<f64>,
    pub cells: &'a [CellResult],
    /// The run's rounds (empty when not known): other processes' CPU use
    /// per round.
    pub rounds: &'a [Round],
    /// The valgrind that counted instructions, if any did.
    pub counted_with: Option<&'a str>,
    /// Show the wire table (`--wire`); the exports have the figures always.
    pub show_wire: bool,
    /// Where the server ran when not in this process (`--remote`): its
    /// address and host, said under the table.
    pub server_elsewhere: Option<&'a str>,
}

impl HandshakeReport<'_> {
    pub fn document(&self) -> Document {
        let mut cells = self.cells.to_vec();
        sort_cells(&mut cells);
        let paired = with_baselines(&cells, self.baseline);
        let rows = rows_paired(&cells, &paired, self.baseline);
        let drift = drift(&cells);
        let dtls_pairs = tls_vs_dtls::pairs(&cells);
        let other_work = other_work(&cells, self.baseline, self.rounds, &paired);
        let data = super::json_with(
            super::provenance_json(
                self.run_id,
                self.complete,
                self.host,
                self.libraries,
                self.seed,
                drift.as_ref(),
            ),
            serde_json::json!({
                "baseline": self.baseline,
                "rows": rows,
                "tls_vs_dtls": dtls_pairs,
                "other_work": other_work,
                "round_times": self.rounds,
            }),
        );
        let mut tables = vec![table::table(&rows, self.baseline, self.counted_with)];
        if let Some(server) = self.server_elsewhere {
            let notes = &mut tables[0].notes;
            notes.retain(|note| !note.starts_with("TCP, UDP rows:"));
            notes.push(format!("Server elsewhere: `tlslab serve --handshakes` at {server}. Its CPU per handshake is its thread's from taking the connection to the end of its handshake, as it reported it; the client's CPU and wall time run from its connect() (TCP's handshake included) until its library was done, over the network between them."));
        }
        tables.extend(breakdown_table(&cells));
        if self.show_wire {
            tables.extend(wire::wire_table(&rows));
        }
        tables.extend(wire::network_table(&rows));
        tables.extend(tls_vs_dtls::table(&dtls_pairs, &cells));
        Document {
            heading: super::heading(self.host, self.libraries),
            tables,
            records: csv::records(&rows),
            data,
            footer: {
                let mut notes = super::run_notes(drift.as_ref(), self.precision, self.complete);
                notes.extend(other_work.as_ref().map(super::other_work_note));
                notes
            },
            figures: super::plot::handshake_figures(&rows, self.baseline),
        }
    }
}
