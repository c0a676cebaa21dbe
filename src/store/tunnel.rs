//! The tunnel tables: tunnel scenarios, cells per engine, and every raw
//! sample (a batch of packets, or one transfer each way) with its round;
//! and a cell's counted instructions (`tunnel_counts`,
//! `tunnel_count_samples`). The samples are committed round by round as
//! they are taken, each cell's end when it stops.

use anyhow::{Context, Result};
use rusqlite::{params, OptionalExtension};

use super::counts::{read_side_samples, write_side_samples};
use super::{outcome_from_columns, precise_column, Store};
use crate::measure::Timed;
use crate::scenario::tunnel::TunnelScenario;
use crate::scenario::{parse_name, Named};
use crate::workload::tunnel::{CountedTransfer, TunnelCell, TunnelSample};

impl Store {
    /// Commits one finished tunnel cell with all its samples: the samples
    /// its rounds stored already ([`Store::save_tunnel_samples`]) stay,
    /// the rest are added, and its end is set. A cell that ended without
    /// being measured keeps no sample.
    pub fn save_tunnel_cell(&mut self, run_id: i64, cell: &TunnelCell) -> Result<()> {
        let tx = self.connection.transaction()?;
        let (cell_id, stored) = tunnel_cell_row(&tx, run_id, cell)?;
        let samples = cell.samples();
        if samples.len() < stored {
            tx.execute("DELETE FROM tunnel_samples WHERE cell_id = ?1", [cell_id])?;
            insert_tunnel_samples(&tx, cell_id, 0, samples)?;
        } else {
            insert_tunnel_samples(&tx, cell_id, stored, &samples[stored..])?;
        }
        tx.execute(
            "UPDATE tunnel_cells SET status = ?2, reason = ?3, precise = ?4, sample_count = ?5,
             finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
             WHERE id = ?1",
            params![
                cell_id,
                cell.outcome.status(),
                cell.outcome.reason(),
                precise_column(&cell.outcome),
                samples.len() as i64
            ],
        )?;
        delete_tunnel_counts(&tx, cell_id)?;
        write_tunnel_counts(&tx, cell_id, cell)?;
        tx.commit()?;
        Ok(())
    }

    /// Commits one round's samples of tunnel cells still sampling, in one
    /// transaction: each (cell, the samples it took in the round) adds its
    /// samples after those stored before, its cell stored at its first
    /// round as still sampling ([`tunnel_cell_row`]).
    pub fn save_tunnel_samples(
        &mut self,
        run_id: i64,
        taken: &[(&TunnelCell, &[Timed<TunnelSample>])],
    ) -> Result<()> {
        let tx = self.connection.transaction()?;
        for (cell, samples) in taken {
            let (cell_id, stored) = tunnel_cell_row(&tx, run_id, cell)?;
            insert_tunnel_samples(&tx, cell_id, stored, samples)?;
            tx.execute(
                "UPDATE tunnel_cells SET sample_count = ?2 WHERE id = ?1",
                params![cell_id, (stored + samples.len()) as i64],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Adds a tunnel cell's counted instructions to the cell stored for it
    /// in `run_id` (by its label and engine), replacing any stored before.
    pub fn save_tunnel_counts(&mut self, run_id: i64, cell: &TunnelCell) -> Result<()> {
        let tx = self.connection.transaction()?;
        let cell_id: i64 = tx
            .query_row(
                "SELECT id FROM tunnel_cells WHERE run_id = ?1 AND scenario_id = ?2 AND engine = ?3",
                params![run_id, cell.scenario.label(), cell.engine.id()],
                |row| row.get(0),
            )
            .with_context(|| {
                format!(
                    "run {run_id} has no tunnel cell {} on {}",
                    cell.scenario.label(),
                    cell.engine.id()
                )
            })?;
        delete_tunnel_counts(&tx, cell_id)?;
        write_tunnel_counts(&tx, cell_id, cell)?;
        tx.commit()?;
        Ok(())
    }

    /// Reads back every tunnel cell of a run, in the order they were first stored.
    pub fn load_tunnel_cells(&self, run_id: i64) -> Result<Vec<TunnelCell>> {
        let mut statement = self.connection.prepare(
            "SELECT id, scenario_id, engine, status, reason, precise FROM tunnel_cells
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
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        let mut samples_query = self.connection.prepare(
            "SELECT round, packets, payload_bytes, send_ns, receive_ns, send_cpu_ns, receive_cpu_ns
             FROM tunnel_samples
             WHERE cell_id = ?1 ORDER BY seq",
        )?;
        let mut cells = Vec::with_capacity(rows.len());
        for (cell_id, label, engine, status, reason, precise) in rows {
            let scenario = TunnelScenario::from_label(&label)
                .with_context(|| format!("unreadable tunnel scenario '{label}'"))?;
            let outcome = outcome_from_columns(&status, reason, precise, || {
                Ok(samples_query
                    .query_map([cell_id], |r| {
                        let send_ns = r.get::<_, i64>(3)? as u64;
                        let receive_ns = r.get::<_, i64>(4)? as u64;
                        Ok(Timed {
                            round: r.get(0)?,
                            value: TunnelSample {
                                packets: r.get::<_, i64>(1)? as u64,
                                payload_bytes: r.get::<_, i64>(2)? as u64,
                                send_ns,
                                receive_ns,
                                // Written before version 2: wall time only.
                                send_cpu_ns: r
                                    .get::<_, Option<i64>>(5)?
                                    .map_or(send_ns, |v| v as u64),
                                receive_cpu_ns: r
                                    .get::<_, Option<i64>>(6)?
                                    .map_or(receive_ns, |v| v as u64),
                            },
                        })
                    })?
                    .collect::<Result<Vec<_>, _>>()?)
            })?;
            cells.push(TunnelCell {
                engine: parse_name(&engine)?,
                scenario,
                outcome,
                counted: self.load_tunnel_counts(cell_id)?,
            });
        }
        Ok(cells)
    }

    /// A tunnel cell's counted instructions, if it was counted.
    fn load_tunnel_counts(&self, cell_id: i64) -> Result<Option<CountedTransfer>> {
        let ended = self
            .connection
            .query_row(
                "SELECT status, reason, precise, packets, payload_bytes FROM tunnel_counts
                 WHERE cell_id = ?1",
                [cell_id],
                |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, Option<String>>(1)?,
                        row.get::<_, Option<bool>>(2)?,
                        row.get::<_, i64>(3)?,
                        row.get::<_, i64>(4)?,
                    ))
                },
            )
            .optional()?;
        let Some((status, reason, precise, packets, payload_bytes)) = ended else {
            return Ok(None);
        };
        let outcome = outcome_from_columns(&status, reason, precise, || {
            read_side_samples(&self.connection, "tunnel_count_samples", cell_id)
        })?;
        Ok(Some(CountedTransfer {
            packets: packets as u64,
            payload_bytes: payload_bytes as u64,
            outcome,
        }))
    }
}

/// The id of a tunnel cell's row in `run_id` and how many samples it
/// holds; a cell not stored yet is stored now (its scenario too), as
/// sampling: measured, no sample yet, and `precise` NULL until it stops
/// (it reads back as not precise). The caller commits.
fn tunnel_cell_row(
    tx: &rusqlite::Connection,
    run_id: i64,
    cell: &TunnelCell,
) -> Result<(i64, usize)> {
    let s = &cell.scenario;
    let label = s.label();
    let stored = tx
        .query_row(
            "SELECT id, sample_count FROM tunnel_cells
             WHERE run_id = ?1 AND scenario_id = ?2 AND engine = ?3",
            params![run_id, label, cell.engine.id()],
            |row| Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)? as usize)),
        )
        .optional()?;
    if let Some(stored) = stored {
        return Ok(stored);
    }
    tx.execute(
        "INSERT OR IGNORE INTO tunnel_scenarios
         (id, baseline, cipher, digest, compression, payload, payload_bytes)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            label,
            s.baseline,
            s.cipher.id(),
            s.digest.id(),
            s.compression.id(),
            s.payload.id(),
            s.payload_bytes as i64
        ],
    )?;
    tx.execute(
        "INSERT INTO tunnel_cells (run_id, scenario_id, engine, status, reason, precise, weak,
         security_notes, sample_count) VALUES (?1, ?2, ?3, 'measured', NULL, NULL, ?4, ?5, 0)",
        params![
            run_id,
            label,
            cell.engine.id(),
            s.is_weak(),
            s.security_notes().join("; "),
        ],
    )?;
    Ok((tx.last_insert_rowid(), 0))
}

/// Stores `samples` of a tunnel cell as its samples `first`, `first + 1`,
/// ... (the caller commits).
fn insert_tunnel_samples(
    tx: &rusqlite::Connection,
    cell_id: i64,
    first: usize,
    samples: &[Timed<TunnelSample>],
) -> Result<()> {
    let mut insert = tx.prepare_cached(
        "INSERT INTO tunnel_samples (cell_id, seq, round, packets, payload_bytes, send_ns,
         receive_ns, send_cpu_ns, receive_cpu_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    for (seq, Timed { round, value }) in (first..).zip(samples) {
        insert.execute(params![
            cell_id,
            seq as i64,
            round,
            value.packets as i64,
            value.payload_bytes as i64,
            value.send_ns as i64,
            value.receive_ns as i64,
            value.send_cpu_ns as i64,
            value.receive_cpu_ns as i64
        ])?;
    }
    Ok(())
}

/// Removes a tunnel cell's counted instructions (the caller commits).
fn delete_tunnel_counts(tx: &rusqlite::Connection, cell_id: i64) -> Result<()> {
    tx.execute("DELETE FROM tunnel_counts WHERE cell_id = ?1", [cell_id])?;
    tx.execute(
        "DELETE FROM tunnel_count_samples WHERE cell_id = ?1",
        [cell_id],
    )?;
    Ok(())
}

/// Writes a tunnel cell's counted instructions, if it has them (the caller commits).
fn write_tunnel_counts(tx: &rusqlite::Connection, cell_id: i64, cell: &TunnelCell) -> Result<()> {
    let Some(counted) = &cell.counted else {
        return Ok(());
    };
    let outcome = &counted.outcome;
    tx.execute(
        "INSERT INTO tunnel_counts (cell_id, status, reason, precise, packets, payload_bytes)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            cell_id,
            outcome.status(),
            outcome.reason(),
            precise_column(outcome),
            counted.packets as i64,
            counted.payload_bytes as i64
        ],
    )?;
    write_side_samples(tx, "tunnel_count_samples", cell_id, outcome.samples())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::Outcome;
    use crate::scenario::tunnel::{Cipher, Compression, Digest, EngineId, Payload};
    use crate::store::fixtures::run_info;
    use crate::store::{RunInfo, RunKind};
    use crate::workload::counted::Instructions;

    #[test]
    fn tunnel_cells_round_trip() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .begin_run(&run_info(RunKind::Tunnel, "tlslab tunnel"))
            .unwrap();
        let measured = TunnelCell {
            engine: EngineId::Inprocess,
            scenario: TunnelScenario {
                baseline: false,
                cipher: Cipher::BfCbc,
                digest: Digest::Md4,
                compression: Compression::Lz4,
                payload: Payload::Zero,
                payload_bytes: 1400,
            },
            outcome: Outcome::Measured {
                samples: vec![
                    Timed {
                        round: 0,
                        value: TunnelSample {
                            packets: 8,
                            payload_bytes: 11_200,
                            send_ns: 1_000,
                            receive_ns: 900,
                            send_cpu_ns: 990,
                            receive_cpu_ns: 880,
                        },
                    },
                    Timed {
                        round: 3,
                        value: TunnelSample {
                            packets: 8,
                            payload_bytes: 11_200,
                            send_ns: 1_100,
                            receive_ns: 950,
                            send_cpu_ns: 1_050,
                            receive_cpu_ns: 940,
                        },
                    },
                ],
                precise: true,
            },
            counted: Some(CountedTransfer {
                packets: 192,
                payload_bytes: 268_800,
                outcome: Outcome::Measured {
                    samples: vec![Timed {
                        round: 0,
                        value: Instructions {
                            client: 3_100_000,
                            server: 2_900_000,
                        },
                    }],
                    precise: true,
                },
            }),
        };
        let unsupported = TunnelCell {
            engine: EngineId::Openvpn,
            scenario: TunnelScenario::baseline(Payload::Random, 64),
            outcome: Outcome::Unsupported {
                reason: "no openvpn".into(),
            },
            counted: Some(CountedTransfer {
                packets: 4096,
                payload_bytes: 262_144,
                outcome: Outcome::Unsupported {
                    reason: "separate processes".into(),
                },
            }),
        };
        store.save_tunnel_cell(run, &measured).unwrap();
        store.save_tunnel_cell(run, &unsupported).unwrap();
        assert_eq!(
            store.load_tunnel_cells(run).unwrap(),
            vec![measured.clone(), unsupported]
        );
        assert_eq!(
            store.run_kind(run).unwrap(),
            Some(crate::store::RunKind::Tunnel)
        );

        // A sample written before version 2 has no CPU time: its wall time
        // stands in for it.
        store
            .connection
            .execute(
                "UPDATE tunnel_samples SET send_cpu_ns = NULL, receive_cpu_ns = NULL",
                [],
            )
            .unwrap();
        let old = &store.load_tunnel_cells(run).unwrap()[0];
        for (read, written) in old.samples().iter().zip(measured.samples()) {
            assert_eq!(read.value.send_cpu_ns, written.value.send_ns);
            assert_eq!(read.value.receive_cpu_ns, written.value.receive_ns);
        }

        // Counts added to a cell stored timed only (time, then
        // instructions) read back with it.
        let later = store
            .begin_run(&RunInfo {
                libraries: Vec::new(),
                ..run_info(RunKind::Tunnel, "tlslab tunnel --measure time,instructions")
            })
            .unwrap();
        let timed = TunnelCell {
            counted: None,
            ..measured.clone()
        };
        store.save_tunnel_cell(later, &timed).unwrap();
        store.save_tunnel_counts(later, &measured).unwrap();
        store.save_tunnel_counts(later, &measured).unwrap();
        let read = store.load_tunnel_cells(later).unwrap();
        assert_eq!(read[0].counted, measured.counted);
    }
}
