//! Storage of `tlslab speed` rows: one cell per (backend, primitive,
//! operation, size) with every sample's time per operation.

use anyhow::Result;
use rusqlite::params;

use super::Store;
use crate::scenario::Named;
use crate::speed::{SpeedCell, SpeedOutcome};

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
