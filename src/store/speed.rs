//! Storage of `tlslab speed` rows: one cell per (backend, primitive,
//! operation, size) with its batch and every sample's time per operation
//! and round.

use anyhow::Result;
use rusqlite::params;

use super::{outcome_from_columns, precise_column, Store};
use crate::measure::Timed;
use crate::scenario::speed::SpeedRow;
use crate::scenario::{parse_name, Named};
use crate::workload::speed::{SpeedCell, SpeedSample};

impl Store {
    /// Commits one finished speed cell with all its samples.
    pub fn save_speed_cell(&mut self, run_id: i64, cell: &SpeedCell) -> Result<()> {
        let tx = self.connection.transaction()?;
        tx.execute(
            "INSERT INTO speed_cells (run_id, row_id, backend, primitive, operation, size_bytes,
             status, reason, batch, precise, sample_count)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                run_id,
                cell.row.label(),
                cell.backend,
                cell.row.primitive.id(),
                cell.row.operation.id(),
                cell.row.size_bytes.map(|s| s as i64),
                cell.outcome.status(),
                cell.outcome.reason(),
                cell.batch as i64,
                precise_column(&cell.outcome),
                cell.outcome.samples().len() as i64
            ],
        )?;
        let cell_id = tx.last_insert_rowid();
        {
            let mut insert = tx.prepare(
                "INSERT INTO speed_samples (cell_id, seq, round, ns_per_op) VALUES (?1, ?2, ?3, ?4)",
            )?;
            for (seq, Timed { round, value }) in cell.outcome.samples().iter().enumerate() {
                insert.execute(params![cell_id, seq as i64, round, value.ns_per_op])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Reads a run's speed cells back with their samples.
    pub fn load_speed_cells(&self, run_id: i64) -> Result<Vec<SpeedCell>> {
        let mut statement = self.connection.prepare(
            "SELECT id, backend, primitive, operation, size_bytes, status, reason, batch, precise
             FROM speed_cells WHERE run_id = ?1 ORDER BY id",
        )?;
        let mut samples = self.connection.prepare(
            "SELECT round, ns_per_op FROM speed_samples WHERE cell_id = ?1 ORDER BY seq",
        )?;
        let rows = statement.query_map([run_id], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, Option<i64>>(4)?,
                row.get::<_, String>(5)?,
                row.get::<_, Option<String>>(6)?,
                row.get::<_, Option<i64>>(7)?,
                row.get::<_, Option<bool>>(8)?,
            ))
        })?;
        let mut cells = Vec::new();
        for row in rows {
            let (id, backend, primitive, operation, size, status, reason, batch, precise) = row?;
            let outcome = outcome_from_columns(&status, reason, precise, || {
                Ok(samples
                    .query_map([id], |r| {
                        Ok(Timed {
                            round: r.get(0)?,
                            value: SpeedSample {
                                ns_per_op: r.get(1)?,
                            },
                        })
                    })?
                    .collect::<Result<Vec<_>, _>>()?)
            })?;
            cells.push(SpeedCell {
                backend,
                row: SpeedRow {
                    primitive: parse_name(&primitive)?,
                    operation: parse_name(&operation)?,
                    size_bytes: size.map(|s| s as usize),
                },
                // Version 0 left it NULL for cells that were not measured.
                batch: batch.unwrap_or(0) as u64,
                outcome,
            });
        }
        Ok(cells)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::LibraryInfo;
    use crate::host::HostInfo;
    use crate::measure::Outcome;
    use crate::scenario::speed::{Operation, Primitive};
    use crate::store::RunInfo;

    #[test]
    fn speed_cells_round_trip() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .begin_run(&RunInfo {
                kind: "speed".into(),
                tool_version: "test".into(),
                command_line: "tlslab speed".into(),
                options_json: "{}".into(),
                host: HostInfo::current(),
                libraries: vec![LibraryInfo {
                    backend: "openssl".into(),
                    library: "OpenSSL".into(),
                    version: "3".into(),
                }],
            })
            .unwrap();
        let measured = SpeedCell {
            backend: "openssl".into(),
            row: SpeedRow {
                primitive: Primitive::Aes128Gcm,
                operation: Operation::Encrypt,
                size_bytes: Some(16_384),
            },
            batch: 128,
            outcome: Outcome::Measured {
                samples: vec![
                    Timed {
                        round: 1,
                        value: SpeedSample { ns_per_op: 1_234.5 },
                    },
                    Timed {
                        round: 4,
                        value: SpeedSample {
                            ns_per_op: 1_230.25,
                        },
                    },
                ],
                precise: true,
            },
        };
        let unsupported = SpeedCell {
            backend: "rustls".into(),
            row: SpeedRow {
                primitive: Primitive::Ed448,
                operation: Operation::Sign,
                size_bytes: None,
            },
            batch: 0,
            outcome: Outcome::Unsupported {
                reason: "no Ed448".into(),
            },
        };
        let failed = SpeedCell {
            backend: "rustls".into(),
            batch: 0,
            outcome: Outcome::Failed {
                reason: "broke".into(),
            },
            ..measured.clone()
        };
        for cell in [&measured, &unsupported, &failed] {
            store.save_speed_cell(run, cell).unwrap();
        }
        assert_eq!(
            store.load_speed_cells(run).unwrap(),
            vec![measured, unsupported, failed]
        );
        assert_eq!(store.load_speed_cells(run + 1).unwrap(), vec![]);
    }
}
