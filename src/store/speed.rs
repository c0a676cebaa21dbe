//! Storage of `tlslab speed` rows: one cell per (backend, primitive,
//! operation, size) with its batch and every sample's time per operation
//! and round.

use anyhow::Result;
use rusqlite::{params, OptionalExtension};

use super::{outcome_from_columns, precise_column, Store};
use crate::measure::Timed;
use crate::scenario::speed::SpeedRow;
use crate::scenario::{parse_name, Named};
use crate::workload::counted::Instructions;
use crate::workload::speed::{CountedOperations, SpeedCell, SpeedSample};

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
        if let Some(counted) = &cell.counted {
            write_speed_counts(&tx, cell_id, counted)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Adds a speed cell's counted instructions to the cell stored for it
    /// in `run_id` (by its row and backend), replacing any stored before.
    pub fn save_speed_counts(&mut self, run_id: i64, cell: &SpeedCell) -> Result<()> {
        let tx = self.connection.transaction()?;
        let cell_id: i64 = tx.query_row(
            "SELECT id FROM speed_cells WHERE run_id = ?1 AND row_id = ?2 AND backend = ?3",
            params![run_id, cell.row.label(), cell.backend],
            |row| row.get(0),
        )?;
        tx.execute("DELETE FROM speed_counts WHERE cell_id = ?1", [cell_id])?;
        tx.execute(
            "DELETE FROM speed_count_samples WHERE cell_id = ?1",
            [cell_id],
        )?;
        if let Some(counted) = &cell.counted {
            write_speed_counts(&tx, cell_id, counted)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// A speed cell's counted instructions, if it was counted.
    fn load_speed_counts(&self, cell_id: i64) -> Result<Option<CountedOperations>> {
        let ended = self
            .connection
            .query_row(
                "SELECT status, reason, precise, operations FROM speed_counts WHERE cell_id = ?1",
                [cell_id],
                |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, Option<String>>(1)?,
                        row.get::<_, Option<bool>>(2)?,
                        row.get::<_, i64>(3)?,
                    ))
                },
            )
            .optional()?;
        let Some((status, reason, precise, operations)) = ended else {
            return Ok(None);
        };
        let outcome = outcome_from_columns(&status, reason, precise, || {
            let mut query = self.connection.prepare(
                "SELECT seq, instructions FROM speed_count_samples WHERE cell_id = ?1 ORDER BY seq",
            )?;
            let samples = query
                .query_map([cell_id], |r| {
                    Ok(Timed {
                        round: r.get(0)?,
                        value: Instructions {
                            client: r.get::<_, i64>(1)? as u64,
                            server: 0,
                        },
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(samples)
        })?;
        Ok(Some(CountedOperations {
            operations: operations as u64,
            outcome,
        }))
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
                counted: self.load_speed_counts(id)?,
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

/// Writes a speed cell's counted instructions (the caller commits).
fn write_speed_counts(
    tx: &rusqlite::Connection,
    cell_id: i64,
    counted: &CountedOperations,
) -> Result<()> {
    let outcome = &counted.outcome;
    tx.execute(
        "INSERT INTO speed_counts (cell_id, status, reason, precise, operations)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            cell_id,
            outcome.status(),
            outcome.reason(),
            precise_column(outcome),
            counted.operations as i64
        ],
    )?;
    let mut insert = tx.prepare(
        "INSERT INTO speed_count_samples (cell_id, seq, instructions) VALUES (?1, ?2, ?3)",
    )?;
    for (seq, Timed { value, .. }) in outcome.samples().iter().enumerate() {
        insert.execute(params![cell_id, seq as i64, value.client as i64])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::Outcome;
    use crate::scenario::speed::{Operation, Primitive};
    use crate::store::fixtures::run_info;
    use crate::store::RunKind;

    #[test]
    fn speed_cells_round_trip() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .begin_run(&run_info(RunKind::Speed, "tlslab speed"))
            .unwrap();
        let measured = SpeedCell {
            counted: None,
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
            counted: None,
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
            counted: None,
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
