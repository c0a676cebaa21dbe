//! The tunnel tables: tunnel scenarios, cells per engine, and every raw
//! sample (a batch of packets, or one transfer each way). Each finished
//! cell is committed on its own, like handshake cells.

use anyhow::{Context, Result};
use rusqlite::params;

use super::Store;
use crate::scenario::names::Named;
use crate::tunnel::sampler::{TunnelCell, TunnelOutcome, TunnelSample};
use crate::tunnel::TunnelScenario;

pub(super) const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS tunnel_scenarios (
    id TEXT PRIMARY KEY,
    baseline INTEGER NOT NULL,
    cipher TEXT NOT NULL,
    digest TEXT NOT NULL,
    compression TEXT NOT NULL,
    payload TEXT NOT NULL,
    payload_bytes INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tunnel_cells (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs (id),
    scenario_id TEXT NOT NULL REFERENCES tunnel_scenarios (id),
    engine TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('measured', 'unsupported', 'failed')),
    reason TEXT,
    precise INTEGER,
    weak INTEGER NOT NULL,
    security_notes TEXT NOT NULL,
    sample_count INTEGER NOT NULL,
    finished_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (run_id, scenario_id, engine)
);
CREATE TABLE IF NOT EXISTS tunnel_samples (
    cell_id INTEGER NOT NULL REFERENCES tunnel_cells (id),
    seq INTEGER NOT NULL,
    packets INTEGER NOT NULL,
    payload_bytes INTEGER NOT NULL,
    send_ns INTEGER NOT NULL,
    receive_ns INTEGER NOT NULL,
    PRIMARY KEY (cell_id, seq)
) WITHOUT ROWID;
"#;

impl Store {
    /// Commits one finished tunnel cell with all its samples.
    pub fn save_tunnel_cell(&mut self, run_id: i64, cell: &TunnelCell) -> Result<()> {
        let tx = self.connection.transaction()?;
        let s = &cell.scenario;
        let label = s.label();
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
        let (status, reason, precise) = match &cell.outcome {
            TunnelOutcome::Measured { precise, .. } => ("measured", None, Some(*precise)),
            TunnelOutcome::Unsupported { reason } => ("unsupported", Some(reason.as_str()), None),
            TunnelOutcome::Failed { reason } => ("failed", Some(reason.as_str()), None),
        };
        tx.execute(
            "INSERT INTO tunnel_cells (run_id, scenario_id, engine, status, reason, precise, weak,
             security_notes, sample_count) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                run_id,
                label,
                cell.engine.id(),
                status,
                reason,
                precise,
                s.is_weak(),
                s.security_notes().join("; "),
                cell.samples().len() as i64
            ],
        )?;
        let cell_id = tx.last_insert_rowid();
        {
            let mut insert = tx.prepare(
                "INSERT INTO tunnel_samples (cell_id, seq, packets, payload_bytes, send_ns, receive_ns)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for (seq, sample) in cell.samples().iter().enumerate() {
                insert.execute(params![
                    cell_id,
                    seq as i64,
                    sample.packets as i64,
                    sample.payload_bytes as i64,
                    sample.send_ns as i64,
                    sample.receive_ns as i64
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Reads back every tunnel cell of a run, in the order they finished.
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
            "SELECT packets, payload_bytes, send_ns, receive_ns FROM tunnel_samples
             WHERE cell_id = ?1 ORDER BY seq",
        )?;
        let mut cells = Vec::with_capacity(rows.len());
        for (cell_id, label, engine, status, reason, precise) in rows {
            let scenario = TunnelScenario::from_label(&label)
                .with_context(|| format!("unreadable tunnel scenario '{label}'"))?;
            let outcome = match status.as_str() {
                "measured" => TunnelOutcome::Measured {
                    samples: samples_query
                        .query_map([cell_id], |r| {
                            Ok(TunnelSample {
                                packets: r.get::<_, i64>(0)? as u64,
                                payload_bytes: r.get::<_, i64>(1)? as u64,
                                send_ns: r.get::<_, i64>(2)? as u64,
                                receive_ns: r.get::<_, i64>(3)? as u64,
                            })
                        })?
                        .collect::<Result<Vec<_>, _>>()?,
                    precise: precise.unwrap_or(false),
                },
                "unsupported" => TunnelOutcome::Unsupported {
                    reason: reason.unwrap_or_default(),
                },
                _ => TunnelOutcome::Failed {
                    reason: reason.unwrap_or_default(),
                },
            };
            cells.push(TunnelCell {
                engine: crate::scenario::names::parse_name(&engine)?,
                scenario,
                outcome,
            });
        }
        Ok(cells)
    }

    /// The kind of a run ("handshake", "tunnel"), if the run exists.
    pub fn run_kind(&self, run_id: i64) -> Result<Option<String>> {
        use rusqlite::OptionalExtension;
        Ok(self
            .connection
            .query_row("SELECT kind FROM runs WHERE id = ?1", [run_id], |row| {
                row.get(0)
            })
            .optional()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::LibraryInfo;
    use crate::host::HostInfo;
    use crate::store::RunInfo;
    use crate::tunnel::{Cipher, Compression, Digest, Engine, Payload};

    #[test]
    fn tunnel_cells_round_trip() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .begin_run(&RunInfo {
                kind: "tunnel".into(),
                tool_version: "test".into(),
                command_line: "tlslab tunnel".into(),
                options_json: "{}".into(),
                host: HostInfo::current(),
                libraries: vec![LibraryInfo {
                    backend: "openssl".into(),
                    library: "OpenSSL".into(),
                    version: "3".into(),
                }],
            })
            .unwrap();
        let measured = TunnelCell {
            engine: Engine::Inprocess,
            scenario: TunnelScenario {
                baseline: false,
                cipher: Cipher::BfCbc,
                digest: Digest::Md4,
                compression: Compression::Lz4,
                payload: Payload::Zero,
                payload_bytes: 1400,
            },
            outcome: TunnelOutcome::Measured {
                samples: vec![TunnelSample {
                    packets: 8,
                    payload_bytes: 11_200,
                    send_ns: 1_000,
                    receive_ns: 900,
                }],
                precise: true,
            },
        };
        let unsupported = TunnelCell {
            engine: Engine::Openvpn,
            scenario: TunnelScenario::baseline(Payload::Random, 64),
            outcome: TunnelOutcome::Unsupported {
                reason: "no openvpn".into(),
            },
        };
        store.save_tunnel_cell(run, &measured).unwrap();
        store.save_tunnel_cell(run, &unsupported).unwrap();
        assert_eq!(
            store.load_tunnel_cells(run).unwrap(),
            vec![measured, unsupported]
        );
        assert_eq!(store.run_kind(run).unwrap().as_deref(), Some("tunnel"));
    }
}
