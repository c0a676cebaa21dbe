//! How the database commits while a run measures. Every round of a
//! sampled run is committed as it ends (so a `kill -9` keeps it), which in
//! SQLite's default rollback journal costs two or three flushes to disk
//! per commit: about 20 ms each on the development VM, several times the
//! round itself in a small matrix. For the length of a run the database is
//! therefore put in write-ahead mode with `synchronous = NORMAL`, in which
//! a commit is a write to the `-wal` file beside the database (tens of
//! microseconds) and is as safe against the process being killed; a power
//! loss may lose the last commits, never the file. At the end the database
//! goes back to its rollback journal, leaving one file as before. A run
//! killed before its end leaves the database in write-ahead mode with its
//! `-wal` file, which SQLite reads (and the next run's end folds back).

use std::time::Duration;

use anyhow::Result;

use super::Store;

impl Store {
    /// Cheap commits for the length of a run (see the module's text).
    /// Where write-ahead mode is not to be had (a database in memory), the
    /// journal stays as it is.
    pub fn begin_measuring(&mut self) -> Result<()> {
        let mode: String = self
            .connection
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
        if mode.eq_ignore_ascii_case("wal") {
            self.connection
                .execute_batch("PRAGMA synchronous = NORMAL")?;
        }
        Ok(())
    }

    /// Back to the rollback journal once the run has ended, every commit
    /// folded into the database file and flushed. Another process with the
    /// database open keeps it in write-ahead mode: then it is left so, and
    /// the last run to end folds it back.
    pub fn end_measuring(&mut self) {
        // Not waiting for the other process: it may measure for hours.
        let _ = self.connection.busy_timeout(Duration::ZERO);
        let _ = self
            .connection
            .query_row("PRAGMA journal_mode = DELETE", [], |row| {
                row.get::<_, String>(0)
            });
        let _ = self.connection.execute_batch("PRAGMA synchronous = FULL");
        // As the store was opened with.
        let _ = self.connection.busy_timeout(Duration::from_secs(5));
    }
}
