//! Storage of `tlslab speed` rows: one cell per (backend, primitive,
//! operation, size) with its batch and every sample's time per operation
//! and round, the samples stored round by round as they are taken and the
//! cell's end when it stops.

use anyhow::Result;
use rusqlite::types::Value;
use rusqlite::{params, Connection, OptionalExtension};

use super::cells::{self, Columns, SampledCell};
use super::{outcome_from_columns, precise_column, Store};
use crate::measure::{Outcome, Timed};
use crate::scenario::speed::SpeedRow;
use crate::scenario::{parse_name, Named};
use crate::workload::counted::Instructions;
use crate::workload::speed::{CountedOperations, SpeedCell, SpeedSample};

impl Store {
    /// Commits one finished speed cell with all its samples: the samples
    /// its rounds stored already ([`Store::save_speed_samples`]) stay, the
    /// rest are added, and its end (status, reason, precision) is set. A
    /// cell that ended without being measured keeps no sample.
    pub fn save_speed_cell(&mut self, run_id: i64, cell: &SpeedCell) -> Result<()> {
        cells::save_end(&mut self.connection, run_id, cell)
    }

    /// Commits one round's samples of speed cells still sampling, in one
    /// transaction ([`cells::save_round`]). A run killed later keeps them,
    /// and reads back as stopped after that round.
    pub fn save_speed_samples(
        &mut self,
        run_id: i64,
        taken: &[(&SpeedCell, &[Timed<SpeedSample>])],
    ) -> Result<()> {
        cells::save_round(&mut self.connection, run_id, taken)
    }

    /// Adds a speed cell's counted instructions to the cell stored for it
    /// in `run_id` (by its row and backend), replacing any stored before.
    pub fn save_speed_counts(&mut self, run_id: i64, cell: &SpeedCell) -> Result<()> {
        cells::save_counts(&mut self.connection, run_id, cell)
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
                // speed measures libraries only.
                subject: super::cells::read_subject("library", &backend)?,
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

/// A speed cell: its row in `speed_cells` (no table of scenarios: the
/// row's axes are its columns), its samples in `speed_samples`, its
/// counted instructions in `speed_counts` and `speed_count_samples`.
impl SampledCell for SpeedCell {
    type Sample = SpeedSample;
    const CELLS: &'static str = "speed_cells";
    const SAMPLES: &'static str = "speed_samples";
    const KEY_COLUMNS: [&'static str; 2] = ["row_id", "backend"];
    const NAME: &'static str = "speed cell";
    const SAMPLE_COLUMNS: &'static [&'static str] = &["ns_per_op"];

    fn key(&self) -> [String; 2] {
        [self.row.label(), self.subject.name()]
    }

    fn outcome(&self) -> &Outcome<SpeedSample> {
        &self.outcome
    }

    fn first_columns(&self) -> Columns {
        vec![
            (
                "primitive",
                Value::from(self.row.primitive.id().to_string()),
            ),
            (
                "operation",
                Value::from(self.row.operation.id().to_string()),
            ),
            (
                "size_bytes",
                Value::from(self.row.size_bytes.map(|s| s as i64)),
            ),
        ]
    }

    fn end_columns(&self) -> Columns {
        vec![("batch", Value::from(self.batch as i64))]
    }

    fn sample_values(sample: &SpeedSample) -> Vec<Value> {
        vec![Value::from(sample.ns_per_op)]
    }

    fn replace_counts(&self, tx: &Connection, cell_id: i64) -> Result<()> {
        cells::delete_cell_rows(tx, &["speed_counts", "speed_count_samples"], cell_id)?;
        match &self.counted {
            Some(counted) => write_speed_counts(tx, cell_id, counted),
            None => Ok(()),
        }
    }

    /// A speed cell's counts are added after its end
    /// ([`Store::save_speed_counts`]): an end without them keeps them.
    fn end_keeps_stored_counts(&self) -> bool {
        self.counted.is_none()
    }
}

/// Writes a speed cell's counted instructions (the caller commits).
fn write_speed_counts(tx: &Connection, cell_id: i64, counted: &CountedOperations) -> Result<()> {
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

    fn speed_run(store: &mut Store) -> i64 {
        store
            .begin_run(&run_info(RunKind::Speed, "tlslab speed"))
            .unwrap()
    }

    fn sample(round: u32, ns_per_op: f64) -> Timed<SpeedSample> {
        Timed {
            round,
            value: SpeedSample { ns_per_op },
        }
    }

    /// Issue 23 item 4: rounds are stored as they end, the cell's end adds
    /// the rest; a run that never ended reads back with the rounds it had.
    #[test]
    fn speed_samples_are_stored_round_by_round_and_the_end_adds_the_rest() {
        let mut store = Store::open_in_memory().unwrap();
        let run = speed_run(&mut store);
        let sampling = |backend: &str| SpeedCell {
            counted: None,
            subject: crate::scenario::Subject::from_name(backend).unwrap(),
            row: SpeedRow {
                primitive: Primitive::Sha256,
                operation: Operation::Hash,
                size_bytes: Some(64),
            },
            batch: 32,
            outcome: Outcome::Measured {
                samples: Vec::new(),
                precise: false,
                note: None,
            },
        };
        let (a, b) = (sampling("openssl"), sampling("rustls-ring"));
        let all: Vec<_> = (0..4)
            .map(|round| sample(round, 10.0 + round as f64))
            .collect();
        store
            .save_speed_samples(run, &[(&a, &all[0..1]), (&b, &all[0..1])])
            .unwrap();
        store
            .save_speed_samples(run, &[(&a, &all[1..2]), (&b, &all[1..2])])
            .unwrap();
        // Killed here: both cells read back measured, not precise, with two
        // rounds each.
        let kept = store.load_speed_cells(run).unwrap();
        assert_eq!(kept.len(), 2);
        for cell in &kept {
            assert_eq!(cell.batch, 32);
            assert_eq!(
                cell.outcome,
                Outcome::Measured {
                    samples: all[0..2].to_vec(),
                    precise: false,
                    note: None
                }
            );
        }
        // `a` stops precise after four rounds; `b` fails (keeping none).
        let a = SpeedCell {
            outcome: Outcome::Measured {
                samples: all.clone(),
                precise: true,
                note: None,
            },
            ..a
        };
        let b = SpeedCell {
            outcome: Outcome::Failed {
                reason: "broke".into(),
            },
            ..b
        };
        store.save_speed_cell(run, &a).unwrap();
        store.save_speed_cell(run, &b).unwrap();
        assert_eq!(store.load_speed_cells(run).unwrap(), vec![a, b]);
        let rows: i64 = store
            .connection
            .query_row("SELECT count(*) FROM speed_samples", [], |row| row.get(0))
            .unwrap();
        assert_eq!(rows, 4);
    }

    #[test]
    fn speed_cells_round_trip() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .begin_run(&run_info(RunKind::Speed, "tlslab speed"))
            .unwrap();
        let measured = SpeedCell {
            counted: None,
            subject: crate::scenario::Subject::from_name("openssl").unwrap(),
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
                note: None,
            },
        };
        let unsupported = SpeedCell {
            counted: None,
            subject: crate::scenario::Subject::from_name("rustls").unwrap(),
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
            subject: crate::scenario::Subject::from_name("rustls").unwrap(),
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
