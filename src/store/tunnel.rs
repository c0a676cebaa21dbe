//! The tunnel tables: tunnel scenarios, cells per engine, and every raw
//! sample (a batch of packets, or one transfer each way) with its round;
//! and a cell's counted instructions (`tunnel_counts`,
//! `tunnel_count_samples`). The samples are committed round by round as
//! they are taken, each cell's end when it stops. A cell measured without
//! CPU features has its engine written "inprocess (generic)".

use anyhow::{Context, Result};
use rusqlite::types::Value;
use rusqlite::{params, Connection, OptionalExtension};

use super::cells::{self, Columns, SampledCell};
use super::counts::{read_side_samples, write_side_samples};
use super::{outcome_from_columns, precise_column, Store};
use crate::measure::{Outcome, Timed};
use crate::scenario::tunnel::{RowEngine, TunnelScenario};
use crate::scenario::Named;
use crate::workload::tunnel::{CountedTransfer, TunnelCell, TunnelSample};

/// A stored sample's CPU time of each end, from its columns. A batch
/// written before version 2 has none: its wall time stands in (the thread
/// was not preempted much in a millisecond). A transfer's is its daemons';
/// one written before tlslab read them has none (NULL) or its wall time in
/// these columns (exactly equal, as no measured CPU time is): 0, not
/// measured.
fn stored_cpu_ns(
    packets: u64,
    wall_ns: (u64, u64),
    cpu_ns: (Option<i64>, Option<i64>),
) -> (u64, u64) {
    let cpu_ns = (cpu_ns.0.map(|v| v as u64), cpu_ns.1.map(|v| v as u64));
    if packets > 0 {
        return (cpu_ns.0.unwrap_or(wall_ns.0), cpu_ns.1.unwrap_or(wall_ns.1));
    }
    match cpu_ns {
        (Some(send), Some(receive)) if (send, receive) != wall_ns => (send, receive),
        _ => (0, 0),
    }
}

impl Store {
    /// Commits one finished tunnel cell with all its samples: the samples
    /// its rounds stored already ([`Store::save_tunnel_samples`]) stay,
    /// the rest are added, and its end is set. A cell that ended without
    /// being measured keeps no sample.
    pub fn save_tunnel_cell(&mut self, run_id: i64, cell: &TunnelCell) -> Result<()> {
        cells::save_end(&mut self.connection, run_id, cell)
    }

    /// Commits one round's samples of tunnel cells still sampling, in one
    /// transaction ([`cells::save_round`]).
    pub fn save_tunnel_samples(
        &mut self,
        run_id: i64,
        taken: &[(&TunnelCell, &[Timed<TunnelSample>])],
    ) -> Result<()> {
        cells::save_round(&mut self.connection, run_id, taken)
    }

    /// Adds a tunnel cell's counted instructions to the cell stored for it
    /// in `run_id` (by its label and engine), replacing any stored before.
    pub fn save_tunnel_counts(&mut self, run_id: i64, cell: &TunnelCell) -> Result<()> {
        cells::save_counts(&mut self.connection, run_id, cell)
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
                        let packets = r.get::<_, i64>(1)? as u64;
                        let send_ns = r.get::<_, i64>(3)? as u64;
                        let receive_ns = r.get::<_, i64>(4)? as u64;
                        let (send_cpu_ns, receive_cpu_ns) =
                            stored_cpu_ns(packets, (send_ns, receive_ns), (r.get(5)?, r.get(6)?));
                        Ok(Timed {
                            round: r.get(0)?,
                            value: TunnelSample {
                                packets,
                                payload_bytes: r.get::<_, i64>(2)? as u64,
                                send_ns,
                                receive_ns,
                                send_cpu_ns,
                                receive_cpu_ns,
                            },
                        })
                    })?
                    .collect::<Result<Vec<_>, _>>()?)
            })?;
            let engine = RowEngine::parse(&engine)?;
            cells.push(TunnelCell {
                engine: engine.engine,
                cpu_features: engine.cpu_features,
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

/// A tunnel cell: its row in `tunnel_cells` (its scenario in
/// `tunnel_scenarios`), its samples in `tunnel_samples`, its counted
/// instructions in `tunnel_counts` and `tunnel_count_samples`.
impl SampledCell for TunnelCell {
    type Sample = TunnelSample;
    const CELLS: &'static str = "tunnel_cells";
    const SAMPLES: &'static str = "tunnel_samples";
    const KEY_COLUMNS: [&'static str; 2] = ["scenario_id", "engine"];
    const NAME: &'static str = "tunnel cell";
    const SAMPLE_COLUMNS: &'static [&'static str] = &[
        "packets",
        "payload_bytes",
        "send_ns",
        "receive_ns",
        "send_cpu_ns",
        "receive_cpu_ns",
    ];

    /// A generic-CPU cell's engine is written as its row names it
    /// ("inprocess (generic)"), as a handshake cell's backend is: the
    /// `engine` column tells the two apart without a column of its own.
    fn key(&self) -> [String; 2] {
        [self.scenario.label(), self.row_engine().name()]
    }

    fn outcome(&self) -> &Outcome<TunnelSample> {
        &self.outcome
    }

    fn save_scenario(&self, tx: &Connection) -> Result<()> {
        let s = &self.scenario;
        tx.execute(
            "INSERT OR IGNORE INTO tunnel_scenarios
             (id, baseline, cipher, digest, compression, payload, payload_bytes)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                s.label(),
                s.baseline,
                s.cipher.id(),
                s.digest.id(),
                s.compression.id(),
                s.payload.id(),
                s.payload_bytes as i64
            ],
        )?;
        Ok(())
    }

    fn first_columns(&self) -> Columns {
        vec![
            ("weak", Value::from(self.scenario.is_weak())),
            (
                "security_notes",
                Value::from(self.scenario.security_notes().join("; ")),
            ),
        ]
    }

    fn end_columns(&self) -> Columns {
        Vec::new()
    }

    fn sample_values(sample: &TunnelSample) -> Vec<Value> {
        [
            sample.packets,
            sample.payload_bytes,
            sample.send_ns,
            sample.receive_ns,
            sample.send_cpu_ns,
            sample.receive_cpu_ns,
        ]
        .map(|number| Value::from(number as i64))
        .to_vec()
    }

    fn replace_counts(&self, tx: &Connection, cell_id: i64) -> Result<()> {
        cells::delete_cell_rows(tx, &["tunnel_counts", "tunnel_count_samples"], cell_id)?;
        write_tunnel_counts(tx, cell_id, self)
    }
}

/// Writes a tunnel cell's counted instructions, if it has them (the caller commits).
fn write_tunnel_counts(tx: &Connection, cell_id: i64, cell: &TunnelCell) -> Result<()> {
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
    use crate::scenario::CpuFeatures;
    use crate::store::fixtures::run_info;
    use crate::store::{RunInfo, RunKind};
    use crate::workload::counted::Instructions;

    #[test]
    fn a_transfer_stored_without_its_daemons_cpu_time_has_none() {
        let wall = (5_000, 6_000);
        // A batch: its CPU time, or its wall time before version 2.
        assert_eq!(
            stored_cpu_ns(8, wall, (Some(4_900), Some(5_800))),
            (4_900, 5_800)
        );
        assert_eq!(stored_cpu_ns(8, wall, (None, None)), wall);
        // A transfer: its daemons' CPU time, or none.
        assert_eq!(stored_cpu_ns(0, wall, (Some(700), Some(800))), (700, 800));
        assert_eq!(stored_cpu_ns(0, wall, (Some(5_000), Some(6_000))), (0, 0));
        assert_eq!(stored_cpu_ns(0, wall, (None, None)), (0, 0));
    }

    #[test]
    fn tunnel_cells_round_trip() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .begin_run(&run_info(RunKind::Tunnel, "tlslab tunnel"))
            .unwrap();
        let measured = TunnelCell {
            engine: EngineId::Inprocess,
            cpu_features: CpuFeatures::Native,
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
                note: None,
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
                    note: None,
                },
            }),
        };
        let unsupported = TunnelCell {
            engine: EngineId::Openvpn,
            cpu_features: CpuFeatures::Native,
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
        // The same row measured without CPU features: a cell of its own.
        let generic = TunnelCell {
            cpu_features: CpuFeatures::Generic,
            ..measured.clone()
        };
        store.save_tunnel_cell(run, &measured).unwrap();
        store.save_tunnel_cell(run, &unsupported).unwrap();
        store.save_tunnel_cell(run, &generic).unwrap();
        assert_eq!(
            store.load_tunnel_cells(run).unwrap(),
            vec![measured.clone(), unsupported, generic]
        );
        let engine: String = store
            .connection
            .query_row(
                "SELECT engine FROM tunnel_cells WHERE id = (SELECT max(id) FROM tunnel_cells)",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(engine, "inprocess (generic)");
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
