//! The tunnel engines' connection set-up (`tunnel --setup`): one cell per
//! engine, kind and run in `tunnel_setup_cells` (how it ended, what a sample
//! covers) and its samples in `tunnel_setup_samples`. A set-up cell is
//! stored once, when it ends: it is sampled on its own, not in rounds
//! shared with other cells.

use anyhow::{Context, Result};
use rusqlite::params;

use super::counts::{read_side_samples, write_side_samples};
use super::{outcome_from_columns, precise_column, Store};
use crate::measure::Timed;
use crate::scenario::{parse_name, Named};
use crate::workload::tunnel::setup::{SetupCell, SetupKind, SetupSample};

impl Store {
    /// Commits one engine's finished set-up cell with its samples,
    /// replacing one stored before for the same engine and kind in `run_id`.
    pub fn save_tunnel_setup(&mut self, run_id: i64, cell: &SetupCell) -> Result<()> {
        let tx = self.connection.transaction()?;
        tx.execute(
            "DELETE FROM tunnel_setup_count_samples WHERE cell_id IN
             (SELECT id FROM tunnel_setup_cells WHERE run_id = ?1 AND engine = ?2 AND kind = ?3)",
            params![run_id, cell.engine.id(), cell.kind.id()],
        )?;
        tx.execute(
            "DELETE FROM tunnel_setup_samples WHERE cell_id IN
             (SELECT id FROM tunnel_setup_cells WHERE run_id = ?1 AND engine = ?2 AND kind = ?3)",
            params![run_id, cell.engine.id(), cell.kind.id()],
        )?;
        tx.execute(
            "DELETE FROM tunnel_setup_cells WHERE run_id = ?1 AND engine = ?2 AND kind = ?3",
            params![run_id, cell.engine.id(), cell.kind.id()],
        )?;
        let outcome = &cell.outcome;
        let samples = outcome.samples();
        tx.execute(
            "INSERT INTO tunnel_setup_cells
             (run_id, engine, kind, status, reason, precise, covers, sample_count,
              counted_status, counted_reason, counted_precise)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                run_id,
                cell.engine.id(),
                cell.kind.id(),
                outcome.status().id(),
                outcome.stored_reason(),
                precise_column(outcome),
                cell.covers,
                samples.len() as i64,
                cell.counted.as_ref().map(|c| c.status().id()),
                cell.counted.as_ref().and_then(|c| c.reason()),
                cell.counted.as_ref().and_then(precise_column)
            ],
        )?;
        let cell_id = tx.last_insert_rowid();
        if let Some(counted) = &cell.counted {
            write_side_samples(
                &tx,
                "tunnel_setup_count_samples",
                cell_id,
                counted.samples(),
            )?;
        }
        for (seq, sample) in samples.iter().enumerate() {
            let s = &sample.value;
            tx.execute(
                "INSERT INTO tunnel_setup_samples
                 (cell_id, seq, round, initiator_cpu_ns, responder_cpu_ns, wall_ns,
                  bytes_to_responder, bytes_to_initiator,
                  messages_to_responder, messages_to_initiator)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    cell_id,
                    seq as i64,
                    sample.round,
                    s.initiator_cpu_ns as i64,
                    s.responder_cpu_ns as i64,
                    s.wall_ns as i64,
                    s.bytes_to_responder as i64,
                    s.bytes_to_initiator as i64,
                    s.messages_to_responder as i64,
                    s.messages_to_initiator as i64
                ],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Reads back every set-up cell of a run, in the order they were stored.
    pub fn load_tunnel_setups(&self, run_id: i64) -> Result<Vec<SetupCell>> {
        let mut statement = self.connection.prepare(
            "SELECT id, engine, kind, status, reason, precise, covers,
                    counted_status, counted_reason, counted_precise
             FROM tunnel_setup_cells
             WHERE run_id = ?1 ORDER BY id",
        )?;
        let rows = statement
            .query_map([run_id], |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, String>(3)?,
                    row.get::<_, Option<String>>(4)?,
                    row.get::<_, Option<bool>>(5)?,
                    row.get::<_, String>(6)?,
                    (
                        row.get::<_, Option<String>>(7)?,
                        row.get::<_, Option<String>>(8)?,
                        row.get::<_, Option<bool>>(9)?,
                    ),
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        let mut samples_query = self.connection.prepare(
            "SELECT round, initiator_cpu_ns, responder_cpu_ns, wall_ns,
                    bytes_to_responder, bytes_to_initiator,
                    messages_to_responder, messages_to_initiator
             FROM tunnel_setup_samples WHERE cell_id = ?1 ORDER BY seq",
        )?;
        let mut cells = Vec::with_capacity(rows.len());
        for (cell_id, engine, kind, status, reason, precise, covers, counted) in rows {
            let kind = SetupKind::from_id(&kind)
                .with_context(|| format!("unknown set-up kind '{kind}'"))?;
            let outcome = outcome_from_columns(&status, reason, precise, || {
                Ok(samples_query
                    .query_map([cell_id], |r| {
                        let number = |i: usize| r.get::<_, i64>(i).map(|v| v as u64);
                        Ok(Timed {
                            round: r.get(0)?,
                            value: SetupSample {
                                initiator_cpu_ns: number(1)?,
                                responder_cpu_ns: number(2)?,
                                wall_ns: number(3)?,
                                bytes_to_responder: number(4)?,
                                bytes_to_initiator: number(5)?,
                                messages_to_responder: number(6)?,
                                messages_to_initiator: number(7)?,
                            },
                        })
                    })?
                    .collect::<Result<Vec<_>, _>>()?)
            })?;
            let (counted_status, counted_reason, counted_precise) = counted;
            let counted = counted_status
                .map(|status| {
                    outcome_from_columns(&status, counted_reason, counted_precise, || {
                        read_side_samples(&self.connection, "tunnel_setup_count_samples", cell_id)
                    })
                })
                .transpose()?;
            cells.push(SetupCell {
                engine: parse_name(&engine)?,
                kind,
                covers,
                outcome,
                counted,
            });
        }
        Ok(cells)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::Outcome;
    use crate::scenario::tunnel::EngineId;
    use crate::store::fixtures::run_info;
    use crate::store::RunKind;
    use crate::workload::counted::Instructions;

    #[test]
    fn set_up_cells_round_trip_and_a_second_save_replaces_the_first() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .begin_run(&run_info(RunKind::Tunnel, "tlslab tunnel --setup"))
            .unwrap();
        let sample = |round: u32, cpu: u64| Timed {
            round,
            value: SetupSample {
                initiator_cpu_ns: cpu,
                responder_cpu_ns: cpu + 7,
                wall_ns: 3 * cpu,
                bytes_to_responder: 276,
                bytes_to_initiator: 92,
                messages_to_responder: 3,
                messages_to_initiator: 1,
            },
        };
        let measured = SetupCell {
            engine: EngineId::Wireguard,
            kind: SetupKind::Connect,
            covers: "in process".to_string(),
            outcome: Outcome::Measured {
                samples: vec![sample(0, 100), sample(1, 120)],
                precise: true,
                note: None,
            },
            counted: Some(Outcome::Measured {
                samples: vec![Timed {
                    round: 0,
                    value: Instructions {
                        client: 1_500_000,
                        server: 1_400_000,
                    },
                }],
                precise: true,
                note: None,
            }),
        };
        let unsupported = SetupCell {
            engine: EngineId::Inprocess,
            kind: SetupKind::Connect,
            covers: String::new(),
            outcome: Outcome::Unsupported {
                reason: "no control channel".into(),
            },
            counted: None,
        };
        store.save_tunnel_setup(run, &measured).unwrap();
        store.save_tunnel_setup(run, &unsupported).unwrap();
        assert_eq!(
            store.load_tunnel_setups(run).unwrap(),
            vec![measured.clone(), unsupported.clone()]
        );
        let fewer = SetupCell {
            outcome: Outcome::Measured {
                samples: vec![sample(0, 90)],
                precise: false,
                note: None,
            },
            counted: Some(Outcome::Unsupported {
                reason: "not counted".into(),
            }),
            ..measured
        };
        store.save_tunnel_setup(run, &fewer).unwrap();
        assert_eq!(
            store.load_tunnel_setups(run).unwrap(),
            vec![unsupported, fewer]
        );
    }
}
