//! Storage of `tlslab speed` rows: one cell per (backend, primitive,
//! operation, size) with every sample's time per operation.

use anyhow::Result;
use rusqlite::params;

use super::Store;
use crate::scenario::{parse_name, Named};
use crate::speed::{SpeedCell, SpeedOutcome, SpeedRow};

pub(super) const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS speed_cells (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs (id),
    row_id TEXT NOT NULL,
    backend TEXT NOT NULL,
    primitive TEXT NOT NULL,
    operation TEXT NOT NULL,
    size_bytes INTEGER,
    status TEXT NOT NULL CHECK (status IN ('measured', 'unsupported', 'failed')),
    reason TEXT,
    batch INTEGER,
    precise INTEGER,
    sample_count INTEGER NOT NULL,
    finished_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (run_id, row_id, backend)
);
CREATE TABLE IF NOT EXISTS speed_samples (
    cell_id INTEGER NOT NULL REFERENCES speed_cells (id),
    seq INTEGER NOT NULL,
    ns_per_op REAL NOT NULL,
    PRIMARY KEY (cell_id, seq)
) WITHOUT ROWID;
"#;

impl Store {
    /// Commits one finished speed cell with all its samples.
    pub fn save_speed_cell(&mut self, run_id: i64, cell: &SpeedCell) -> Result<()> {
        let tx = self.connection.transaction()?;
        let (status, reason, batch, precise, samples): (
            &str,
            Option<&str>,
            Option<i64>,
            Option<bool>,
            &[f64],
        ) = match &cell.outcome {
            SpeedOutcome::Measured {
                ns_per_op,
                batch,
                precise,
            } => (
                "measured",
                None,
                Some(*batch as i64),
                Some(*precise),
                ns_per_op,
            ),
            SpeedOutcome::Unsupported { reason } => ("unsupported", Some(reason), None, None, &[]),
            SpeedOutcome::Failed { reason } => ("failed", Some(reason), None, None, &[]),
        };
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
                status,
                reason,
                batch,
                precise,
                samples.len() as i64
            ],
        )?;
        let cell_id = tx.last_insert_rowid();
        {
            let mut insert = tx.prepare(
                "INSERT INTO speed_samples (cell_id, seq, ns_per_op) VALUES (?1, ?2, ?3)",
            )?;
            for (seq, value) in samples.iter().enumerate() {
                insert.execute(params![cell_id, seq as i64, value])?;
            }
        }
        tx.commit()?;
        Ok(())
    }
}

impl Store {
    /// Reads a run's speed cells back with their samples.
    pub fn load_speed_cells(&self, run_id: i64) -> Result<Vec<SpeedCell>> {
        let mut statement = self.connection.prepare(
            "SELECT id, backend, primitive, operation, size_bytes, status, reason, batch, precise
             FROM speed_cells WHERE run_id = ?1 ORDER BY id",
        )?;
        let mut samples = self
            .connection
            .prepare("SELECT ns_per_op FROM speed_samples WHERE cell_id = ?1 ORDER BY seq")?;
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
            let outcome = match status.as_str() {
                "measured" => SpeedOutcome::Measured {
                    ns_per_op: samples
                        .query_map([id], |r| r.get::<_, f64>(0))?
                        .collect::<Result<Vec<_>, _>>()?,
                    batch: batch.unwrap_or(1) as u64,
                    precise: precise.unwrap_or(false),
                },
                "unsupported" => SpeedOutcome::Unsupported {
                    reason: reason.unwrap_or_default(),
                },
                _ => SpeedOutcome::Failed {
                    reason: reason.unwrap_or_default(),
                },
            };
            cells.push(SpeedCell {
                backend,
                row: SpeedRow {
                    primitive: parse_name(&primitive)?,
                    operation: parse_name(&operation)?,
                    size_bytes: size.map(|s| s as usize),
                },
                outcome,
            });
        }
        Ok(cells)
    }
}
