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

use super::Store;

/// How long the store waits for a lock, as it was opened.
const OPENED_TIMEOUT: Duration = Duration::from_secs(5);

impl Store {
    /// Cheap commits for the length of a run (see the module's text).
    /// Where write-ahead mode is not to be had at once (a database in
    /// memory, another process in the middle of a write), the journal stays
    /// as it is: the commits are then dearer, never lost.
    pub fn begin_measuring(&mut self) {
        let _ = self.connection.busy_timeout(Duration::ZERO);
        let mode = self
            .connection
            .query_row("PRAGMA journal_mode = WAL", [], |row| {
                row.get::<_, String>(0)
            });
        if mode.is_ok_and(|mode| mode.eq_ignore_ascii_case("wal")) {
            let _ = self.connection.execute_batch("PRAGMA synchronous = NORMAL");
        }
        let _ = self.connection.busy_timeout(OPENED_TIMEOUT);
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
        let _ = self.connection.busy_timeout(OPENED_TIMEOUT);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn journal_mode(store: &Store) -> String {
        store
            .connection
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .unwrap()
    }

    #[test]
    fn a_run_writes_ahead_and_leaves_one_file_at_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        let mut store = Store::open(&path).unwrap();
        store.begin_measuring();
        assert_eq!(journal_mode(&store), "wal");
        store
            .connection
            .execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            .unwrap();
        assert!(dir.path().join("db.sqlite-wal").exists());
        store.end_measuring();
        assert_eq!(journal_mode(&store), "delete");
        assert!(!dir.path().join("db.sqlite-wal").exists());
        drop(store);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, vec!["db.sqlite"]);
    }

    #[test]
    fn a_database_in_memory_keeps_its_journal() {
        let mut store = Store::open_in_memory().unwrap();
        store.begin_measuring();
        assert_eq!(journal_mode(&store), "memory");
        store.end_measuring();
        assert_eq!(journal_mode(&store), "memory");
    }
}
