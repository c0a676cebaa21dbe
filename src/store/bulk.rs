//! The bulk tables: bulk scenarios, cells per backend (the no-crypto rows
//! under the backend `none`) with what the handshake negotiated, and every
//! raw sample with each side's time and its round. The samples are
//! committed round by round as they are taken, each cell's end when it
//! stops.

use anyhow::{Context, Result};
use rusqlite::types::Value;
use rusqlite::{params, Connection, OptionalExtension};

use super::cells::{self, Columns, SampledCell};
use super::counts::{read_side_samples, write_side_samples};
use super::{outcome_from_columns, precise_column, Store};
use crate::backend::Negotiated;
use crate::measure::{Outcome, Timed};
use crate::scenario::bulk::BulkScenario;
use crate::workload::bulk::{BulkCell, BulkSample};
use crate::workload::counted::Instructions;

impl Store {
    /// Commits one finished bulk cell with all its samples: the samples
    /// its rounds stored already ([`Store::save_bulk_samples`]) stay, the
    /// rest are added, and its end is set. A cell that ended without being
    /// measured keeps no sample.
    pub fn save_bulk_cell(&mut self, run_id: i64, cell: &BulkCell) -> Result<()> {
        cells::save_end(&mut self.connection, run_id, cell)
    }

    /// Commits one round's samples of bulk cells still sampling, in one
    /// transaction ([`cells::save_round`]).
    pub fn save_bulk_samples(
        &mut self,
        run_id: i64,
        taken: &[(&BulkCell, &[Timed<BulkSample>])],
    ) -> Result<()> {
        cells::save_round(&mut self.connection, run_id, taken)
    }

    /// Adds a bulk cell's counted instructions to the cell stored for it
    /// in `run_id` (by its label and backend), replacing any stored before.
    pub fn save_bulk_counts(&mut self, run_id: i64, cell: &BulkCell) -> Result<()> {
        cells::save_counts(&mut self.connection, run_id, cell)
    }

    /// Reads back every bulk cell of a run, in the order they were first stored.
    pub fn load_bulk_cells(&self, run_id: i64) -> Result<Vec<BulkCell>> {
        let mut statement = self.connection.prepare(
            "SELECT id, scenario_id, backend, status, reason, negotiated_version,
                    negotiated_suite, sample_bytes, precise, subject_kind
             FROM bulk_cells WHERE run_id = ?1 ORDER BY id",
        )?;
        let rows = statement
            .query_map([run_id], |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, String>(3)?,
                    row.get::<_, Option<String>>(4)?,
                    row.get::<_, Option<String>>(5)?,
                    row.get::<_, Option<String>>(6)?,
                    row.get::<_, i64>(7)?,
                    row.get::<_, Option<bool>>(8)?,
                    row.get::<_, String>(9)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        let mut samples_query = self.connection.prepare(
            "SELECT round, bytes, writes, sender_ns, receiver_ns, sender_cpu_ns, receiver_cpu_ns
             FROM bulk_samples WHERE cell_id = ?1 ORDER BY seq",
        )?;
        let mut cells = Vec::with_capacity(rows.len());
        for row in rows {
            let (
                cell_id,
                label,
                backend,
                status,
                reason,
                version,
                suite,
                sample_bytes,
                precise,
                kind,
            ) = row;
            let scenario = BulkScenario::from_label(&label)
                .with_context(|| format!("unreadable bulk scenario '{label}'"))?;
            let outcome = outcome_from_columns(&status, reason, precise, || {
                Ok(samples_query
                    .query_map([cell_id], |r| {
                        let number = |i: usize| r.get::<_, i64>(i).map(|v| v as u64);
                        Ok(Timed {
                            round: r.get(0)?,
                            value: BulkSample {
                                bytes: number(1)?,
                                writes: number(2)?,
                                sender_ns: number(3)?,
                                receiver_ns: number(4)?,
                                sender_cpu_ns: number(5)?,
                                receiver_cpu_ns: number(6)?,
                            },
                        })
                    })?
                    .collect::<Result<Vec<_>, _>>()?)
            })?;
            // Only the version and suite are kept; the handshake's group and
            // signature are fixed for every bulk row.
            let negotiated = version.map(|version| Negotiated {
                version,
                suite: suite.unwrap_or_default(),
                group: None,
                signature: None,
                resumed: false,
                alpn: None,
                early_data: false,
            });
            cells.push(BulkCell {
                subject: cells::read_subject(&kind, &backend)?,
                scenario,
                negotiated,
                sample_bytes: sample_bytes as u64,
                outcome,
                counted_bytes: 0,
                instructions: None,
            });
            let cell = cells.last_mut().expect("just pushed");
            if let Some((outcome, counted_bytes)) = self.load_bulk_counts(cell_id)? {
                cell.instructions = Some(outcome);
                // Stored before schema 11: the cell's own bytes per sample
                // (right for a run that counted and did not time).
                cell.counted_bytes = counted_bytes.unwrap_or(cell.sample_bytes);
            }
        }
        Ok(cells)
    }

    /// A bulk cell's counted instructions, if it was counted, and the
    /// bytes per counted sample (`None` when stored before schema 11).
    fn load_bulk_counts(
        &self,
        cell_id: i64,
    ) -> Result<Option<(Outcome<Instructions>, Option<u64>)>> {
        let ended = self
            .connection
            .query_row(
                "SELECT status, reason, precise, sample_bytes FROM bulk_counts WHERE cell_id = ?1",
                [cell_id],
                |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, Option<String>>(1)?,
                        row.get::<_, Option<bool>>(2)?,
                        row.get::<_, Option<i64>>(3)?,
                    ))
                },
            )
            .optional()?;
        let Some((status, reason, precise, sample_bytes)) = ended else {
            return Ok(None);
        };
        let outcome = outcome_from_columns(&status, reason, precise, || {
            read_side_samples(&self.connection, "bulk_count_samples", cell_id)
        })?;
        Ok(Some((outcome, sample_bytes.map(|b| b as u64))))
    }
}

/// A bulk cell: its row in `bulk_cells` (its scenario in
/// `bulk_scenarios`), its samples in `bulk_samples`, its counted
/// instructions in `bulk_counts` and `bulk_count_samples`.
impl SampledCell for BulkCell {
    type Sample = BulkSample;
    const CELLS: &'static str = "bulk_cells";
    const SAMPLES: &'static str = "bulk_samples";
    const KEY_COLUMNS: [&'static str; 2] = ["scenario_id", "backend"];
    const NAME: &'static str = "bulk cell";
    const SAMPLE_COLUMNS: &'static [&'static str] = &[
        "bytes",
        "writes",
        "sender_ns",
        "receiver_ns",
        "sender_cpu_ns",
        "receiver_cpu_ns",
    ];

    fn key(&self) -> [String; 2] {
        [self.scenario.label(), self.subject.name()]
    }

    fn outcome(&self) -> &Outcome<BulkSample> {
        &self.outcome
    }

    fn save_scenario(&self, tx: &Connection) -> Result<()> {
        let s = &self.scenario;
        tx.execute(
            "INSERT OR IGNORE INTO bulk_scenarios (id, tls_version, suite, write_bytes)
             VALUES (?1, ?2, ?3, ?4)",
            params![
                s.label(),
                s.protocol_id(),
                s.suite_id(),
                s.write_bytes as i64
            ],
        )?;
        Ok(())
    }

    fn first_columns(&self) -> Columns {
        vec![
            (
                "subject_kind",
                Value::from(self.subject.kind().id().to_string()),
            ),
            (
                "security_notes",
                Value::from(self.scenario.security_notes().join("; ")),
            ),
        ]
    }

    fn end_columns(&self) -> Columns {
        let negotiated = self.negotiated.as_ref();
        vec![
            (
                "negotiated_version",
                Value::from(negotiated.map(|n| n.version.clone())),
            ),
            (
                "negotiated_suite",
                Value::from(negotiated.map(|n| n.suite.clone())),
            ),
            ("sample_bytes", Value::from(self.sample_bytes as i64)),
        ]
    }

    fn sample_values(sample: &BulkSample) -> Vec<Value> {
        [
            sample.bytes,
            sample.writes,
            sample.sender_ns,
            sample.receiver_ns,
            sample.sender_cpu_ns,
            sample.receiver_cpu_ns,
        ]
        .map(|number| Value::from(number as i64))
        .to_vec()
    }

    fn replace_counts(&self, tx: &Connection, cell_id: i64) -> Result<()> {
        cells::delete_cell_rows(tx, &["bulk_counts", "bulk_count_samples"], cell_id)?;
        write_bulk_counts(tx, cell_id, self)
    }
}

/// Writes a bulk cell's counted instructions, if it has them (the caller commits).
fn write_bulk_counts(tx: &Connection, cell_id: i64, cell: &BulkCell) -> Result<()> {
    let Some(counted) = &cell.instructions else {
        return Ok(());
    };
    tx.execute(
        "INSERT INTO bulk_counts (cell_id, status, reason, precise, sample_bytes)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            cell_id,
            counted.status(),
            counted.reason(),
            precise_column(counted),
            cell.counted_bytes as i64
        ],
    )?;
    write_side_samples(tx, "bulk_count_samples", cell_id, counted.samples())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::bulk::Channel;
    use crate::scenario::{Aead, TlsVersion};
    use crate::store::fixtures::run_info;
    use crate::store::RunKind;

    #[test]
    fn bulk_cells_round_trip() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .begin_run(&run_info(RunKind::Bulk, "tlslab bulk"))
            .unwrap();
        let sample = |round: u32, cpu: u64| Timed {
            round,
            value: BulkSample {
                bytes: 1 << 20,
                writes: 64,
                sender_ns: cpu + 10,
                receiver_ns: cpu + 20,
                sender_cpu_ns: cpu,
                receiver_cpu_ns: cpu + 5,
            },
        };
        let measured = BulkCell {
            subject: crate::scenario::Subject::from_name("openssl").unwrap(),
            scenario: BulkScenario {
                channel: Channel::Tls {
                    version: TlsVersion::Tls13,
                    aead: Aead::Chacha20Poly1305,
                },
                write_bytes: 16_384,
                transport: crate::scenario::Transport::Tcp,
            },
            negotiated: Some(Negotiated {
                version: "TLSv1.3".into(),
                suite: "TLS_CHACHA20_POLY1305_SHA256".into(),
                group: None,
                signature: None,
                resumed: false,
                alpn: None,
                early_data: false,
            }),
            sample_bytes: 1 << 20,
            outcome: Outcome::Measured {
                samples: vec![sample(0, 900_000), sample(2, 950_000)],
                precise: true,
                note: None,
            },
            instructions: Some(Outcome::Measured {
                samples: vec![Timed {
                    round: 0,
                    value: Instructions {
                        client: 2_100_000,
                        server: 2_300_000,
                    },
                }],
                precise: true,
                note: None,
            }),
            // Counted on less than the timed samples carried.
            counted_bytes: 1 << 18,
        };
        let plain = BulkCell {
            subject: crate::scenario::Subject::from_name("none").unwrap(),
            scenario: BulkScenario::plain(64),
            negotiated: None,
            sample_bytes: 1 << 17,
            outcome: Outcome::Measured {
                samples: vec![sample(0, 100_000)],
                precise: false,
                note: None,
            },
            instructions: None,
            counted_bytes: 0,
        };
        let unsupported = BulkCell {
            subject: crate::scenario::Subject::from_name("rustls-ring").unwrap(),
            negotiated: None,
            outcome: Outcome::Unsupported {
                reason: "no such suite".into(),
            },
            ..measured.clone()
        };
        for cell in [&measured, &plain, &unsupported] {
            store.save_bulk_cell(run, cell).unwrap();
        }
        assert_eq!(
            store.load_bulk_cells(run).unwrap(),
            vec![measured, plain, unsupported]
        );
        assert_eq!(
            store.run_kind(run).unwrap(),
            Some(crate::store::RunKind::Bulk)
        );

        // Counts stored before schema 11 have no bytes of their own: they
        // were taken on the cell's samples' bytes.
        store
            .connection
            .execute("UPDATE bulk_counts SET sample_bytes = NULL", [])
            .unwrap();
        assert_eq!(
            store.load_bulk_cells(run).unwrap()[0].counted_bytes,
            1 << 20
        );
    }
}
