//! The SQLite store: runs, hosts, library versions and when each round
//! started; each kind of result in a file of its own (handshake cells with
//! their negotiated parameters and every raw sample in [`handshake`], then
//! [`bulk`], [`tunnel`], [`speed`], [`capacity`], [`load`]). A sampled
//! cell's rounds and its end are committed as they come, the same way for
//! every kind ([`cells`]), so an interrupted run keeps what it finished; a run is `incomplete` until it is marked `complete` at its
//! end. The layout and its migrations are in [`schema`].

mod bulk;
mod capacity;
mod cells;
mod counts;
#[cfg(test)]
mod fixtures;
mod handshake;
mod journal;
mod kind;
mod load;
mod merge;
mod provenance;
mod schema;
mod speed;
mod tunnel;
mod tunnel_setup;
mod wire;

pub use kind::{RunKind, RunStatus};
pub use load::LoadRecord;
pub use merge::MergeSummary;
pub use provenance::RunCommand;
pub use schema::SCHEMA_VERSION;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use rusqlite::{params, Connection, DatabaseName, OpenFlags, OptionalExtension};

use crate::backend::LibraryInfo;
use crate::host::HostInfo;
use crate::measure::{CellStatus, Outcome, Round, Timed};
use crate::workload::handshake::CellResult;
use handshake::{save_scenario, scenario_from_columns};

/// What describes a run before it starts.
#[derive(Debug, Clone)]
pub struct RunInfo {
    pub kind: RunKind,
    pub tool_version: String,
    pub command_line: String,
    pub options_json: String,
    pub host: HostInfo,
    pub libraries: Vec<LibraryInfo>,
}

/// A run read back from the store.
#[derive(Debug, Clone)]
pub struct StoredRun {
    pub id: i64,
    pub kind: RunKind,
    pub status: RunStatus,
    pub started_at: String,
    pub options_json: String,
    /// The label of the row the run's ratios were taken against, as the
    /// run resolved it; `None` when it had none or was stored before
    /// tlslab recorded it.
    pub baseline: Option<String>,
    pub host: HostInfo,
    pub libraries: Vec<LibraryInfo>,
    pub cells: Vec<CellResult>,
}

/// One stored run, as `tlslab report --list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunListing {
    pub id: i64,
    pub started_at: String,
    pub kind: RunKind,
    pub status: RunStatus,
    pub hostname: String,
    pub command_line: String,
    /// The run's options as stored (JSON), which say whether it was a
    /// shard (`report --combine` finds the latest sharded command by them).
    pub options_json: String,
}

/// An open result database.
pub struct Store {
    connection: Connection,
    path: Option<PathBuf>,
    /// Where an older database opened to read was migrated (a copy), kept
    /// as long as the store is open.
    _scratch: Option<tempfile::TempDir>,
}

impl Store {
    /// The default database: `tlslab/tlslab.sqlite` in the user's data directory.
    pub fn default_path() -> PathBuf {
        dirs::data_dir()
            .unwrap_or_else(std::env::temp_dir)
            .join("tlslab")
            .join("tlslab.sqlite")
    }

    /// Opens (creating if needed) a database, brings its schema up to date
    /// and checks that it can be written. Refuses a file that is not a
    /// tlslab database, or that a newer tlslab wrote.
    pub fn open(path: &Path) -> Result<Self> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create the directory {}", parent.display()))?;
        }
        let connection = Connection::open(path)
            .with_context(|| format!("cannot open the database {}", path.display()))?;
        Self::prepare(connection, Some(path.to_path_buf()))
    }

    /// Opens an existing database to read it (for `report`, `compare`,
    /// `recommend`): the file is never written. Refuses a file that is not
    /// a tlslab database or that a newer tlslab wrote; an older one is
    /// migrated in a scratch copy, never in place.
    pub fn open_read_only(path: &Path) -> Result<Self> {
        let (readable, scratch) = readable(path)?;
        let connection = Connection::open_with_flags(&readable, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .with_context(|| format!("cannot open the database {}", path.display()))?;
        connection.busy_timeout(std::time::Duration::from_secs(5))?;
        Ok(Self {
            connection,
            path: Some(path.to_path_buf()),
            _scratch: scratch,
        })
    }

    /// A database in memory (for tests and `--no-db`).
    pub fn open_in_memory() -> Result<Self> {
        Self::prepare(Connection::open_in_memory()?, None)
    }

    fn prepare(mut connection: Connection, path: Option<PathBuf>) -> Result<Self> {
        let name = match &path {
            Some(path) => path.display().to_string(),
            None => "(in memory)".to_string(),
        };
        connection.busy_timeout(std::time::Duration::from_secs(5))?;
        // SQLite opens a file it may not write read-only, and says so only
        // at the first write.
        if connection.is_readonly(DatabaseName::Main)? {
            bail!("cannot write to the database {name}: the file is read-only");
        }
        schema::bring_up_to_date(&mut connection, &name)?;
        connection.execute_batch("PRAGMA foreign_keys = ON;")?;
        // Proves the file is writable now, before anything is measured: a
        // write (rolled back) needs the journal beside the file too.
        connection
            .execute_batch(&format!(
                "BEGIN IMMEDIATE; PRAGMA user_version = {SCHEMA_VERSION}; ROLLBACK;"
            ))
            .with_context(|| format!("cannot write to the database {name}"))?;
        Ok(Self {
            connection,
            path,
            _scratch: None,
        })
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Records a new run (status `incomplete`) and returns its id.
    pub fn begin_run(&mut self, info: &RunInfo) -> Result<i64> {
        let tx = self.connection.transaction()?;
        let host = &info.host;
        tx.execute(
            "INSERT OR IGNORE INTO hosts (hostname, cpu_model, cpu_flags, cores, kernel, os)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                host.hostname,
                host.cpu_model,
                host.cpu_flags,
                host.cores as i64,
                host.kernel,
                host.os
            ],
        )?;
        let host_id: i64 = tx.query_row(
            "SELECT id FROM hosts WHERE hostname = ?1 AND cpu_model = ?2 AND cpu_flags = ?3
             AND cores = ?4 AND kernel = ?5 AND os = ?6",
            params![
                host.hostname,
                host.cpu_model,
                host.cpu_flags,
                host.cores as i64,
                host.kernel,
                host.os
            ],
            |row| row.get(0),
        )?;
        tx.execute(
            "INSERT INTO runs (status, kind, tool_version, command_line, options_json, host_id)
             VALUES ('incomplete', ?1, ?2, ?3, ?4, ?5)",
            params![
                info.kind,
                info.tool_version,
                info.command_line,
                info.options_json,
                host_id
            ],
        )?;
        let run_id = tx.last_insert_rowid();
        for library in &info.libraries {
            tx.execute(
                "INSERT INTO libraries (run_id, backend, subject_kind, library, version)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    run_id,
                    library.subject.name(),
                    library.subject.kind().id(),
                    library.library,
                    library.version
                ],
            )?;
        }
        tx.commit()?;
        Ok(run_id)
    }

    /// Records the row a run's ratios were taken against (its label), so
    /// that `report` shows the ratios the run showed.
    pub fn record_baseline(&mut self, run_id: i64, baseline: Option<&str>) -> Result<()> {
        self.connection.execute(
            "UPDATE runs SET baseline = ?2 WHERE id = ?1",
            params![run_id, baseline],
        )?;
        Ok(())
    }

    /// Marks a run finished: `complete` only if every cell ran.
    pub fn finish_run(&mut self, run_id: i64, complete: bool) -> Result<()> {
        self.connection.execute(
            "UPDATE runs SET status = ?2, finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?1",
            params![
                run_id,
                if complete {
                    RunStatus::Complete
                } else {
                    RunStatus::Incomplete
                }
            ],
        )?;
        Ok(())
    }

    /// Sets when a run started and finished, for a run made of others
    /// (the shards of a load joined by `tlslab merge` start at their
    /// common start and end with the last of them).
    pub fn date_run(&mut self, run_id: i64, started_at: &str, finished_at: &str) -> Result<()> {
        self.connection.execute(
            "UPDATE runs SET started_at = ?2, finished_at = ?3 WHERE id = ?1",
            params![run_id, started_at, finished_at],
        )?;
        Ok(())
    }

    /// Records when each round of a run started. Saving a round again
    /// replaces it, so this may be called more than once for a run (after
    /// each batch of rounds, or once at the end).
    pub fn save_rounds(&mut self, run_id: i64, rounds: &[Round]) -> Result<()> {
        let tx = self.connection.transaction()?;
        {
            let mut insert = tx.prepare(
                "INSERT OR REPLACE INTO rounds (run_id, round, offset_ns, others_cpu)
                 VALUES (?1, ?2, ?3, ?4)",
            )?;
            for round in rounds {
                insert
                    .execute(params![
                        run_id,
                        round.index,
                        round.offset_ns as i64,
                        round.others_cpu
                    ])
                    .with_context(|| format!("cannot save the rounds of run {run_id}"))?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// When each round of a run started, in round order: offsets from the
    /// start of sampling, a moment after the run's `started_at`. Empty for a
    /// run stored before rounds were kept.
    pub fn load_rounds(&self, run_id: i64) -> Result<Vec<Round>> {
        let mut statement = self.connection.prepare(
            "SELECT round, offset_ns, others_cpu FROM rounds WHERE run_id = ?1 ORDER BY round",
        )?;
        let rounds = statement
            .query_map([run_id], |row| {
                Ok(Round {
                    index: row.get(0)?,
                    offset_ns: row.get::<_, i64>(1)? as u64,
                    others_cpu: row.get(2)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rounds)
    }

    /// The id of the most recent run, if any.
    pub fn latest_run_id(&self) -> Result<Option<i64>> {
        Ok(self
            .connection
            .query_row("SELECT max(id) FROM runs", [], |row| row.get(0))
            .optional()?
            .flatten())
    }

    /// The id of the most recent run of one of these kinds, if any.
    pub fn latest_run_of(&self, kinds: &[RunKind]) -> Result<Option<i64>> {
        let mut latest = None;
        for kind in kinds {
            let id: Option<i64> = self.connection.query_row(
                "SELECT max(id) FROM runs WHERE kind = ?1",
                [kind],
                |row| row.get(0),
            )?;
            latest = latest.max(id);
        }
        Ok(latest)
    }

    /// Every stored run, oldest first.
    pub fn list_runs(&self) -> Result<Vec<RunListing>> {
        let mut statement = self.connection.prepare(
            "SELECT r.id, r.started_at, r.kind, r.status, h.hostname, r.command_line, r.options_json
             FROM runs r JOIN hosts h ON h.id = r.host_id ORDER BY r.id",
        )?;
        let runs = statement
            .query_map([], |row| {
                Ok(RunListing {
                    id: row.get(0)?,
                    started_at: row.get(1)?,
                    kind: row.get(2)?,
                    status: row.get(3)?,
                    hostname: row.get(4)?,
                    command_line: row.get(5)?,
                    options_json: row.get(6)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(runs)
    }

    /// The kind of a run, if the run exists.
    pub fn run_kind(&self, run_id: i64) -> Result<Option<RunKind>> {
        Ok(self
            .connection
            .query_row("SELECT kind FROM runs WHERE id = ?1", [run_id], |row| {
                row.get(0)
            })
            .optional()?)
    }

    /// Reads a run back with every cell and sample.
    pub fn load_run(&self, run_id: i64) -> Result<StoredRun> {
        let run = self
            .connection
            .query_row(
                "SELECT r.status, r.started_at, r.options_json, h.hostname, h.cpu_model, h.cpu_flags,
                        h.cores, h.kernel, h.os, r.kind, r.baseline
                 FROM runs r JOIN hosts h ON h.id = r.host_id WHERE r.id = ?1",
                [run_id],
                |row| {
                    Ok((
                        row.get::<_, RunStatus>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, String>(2)?,
                        HostInfo {
                            hostname: row.get(3)?,
                            cpu_model: row.get(4)?,
                            cpu_flags: row.get(5)?,
                            cores: row.get::<_, i64>(6)? as usize,
                            kernel: row.get(7)?,
                            os: row.get(8)?,
                        },
                        row.get::<_, RunKind>(9)?,
                        row.get::<_, Option<String>>(10)?,
                    ))
                },
            )
            .optional()?;
        let Some((status, started_at, options_json, host, kind, baseline)) = run else {
            bail!("there is no run {run_id} in this database");
        };
        let mut libraries = Vec::new();
        let mut statement = self.connection.prepare(
            "SELECT backend, subject_kind, library, version FROM libraries
             WHERE run_id = ?1 ORDER BY rowid",
        )?;
        for library in statement.query_map([run_id], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get(2)?,
                row.get(3)?,
            ))
        })? {
            let (name, kind, library, version) = library?;
            libraries.push(LibraryInfo {
                subject: cells::read_subject(&kind, &name)
                    .with_context(|| format!("run {run_id}'s libraries"))?,
                library,
                version,
            });
        }
        Ok(StoredRun {
            id: run_id,
            kind,
            status,
            started_at,
            options_json,
            baseline,
            host,
            libraries,
            cells: self.load_cells(run_id)?,
        })
    }
}

/// Returns true if and only if both paths name one existing file: the
/// same device and inode, so a hard link or a symbolic link to a file is
/// that file.
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// Opens a tlslab database at `path` to read it: refused if it is not one
/// or a newer tlslab wrote it; an older one is migrated in a scratch copy
/// (kept alive by the returned directory), never in place. Returns the path
/// to read: the file itself, or the copy.
fn readable(path: &Path) -> Result<(PathBuf, Option<tempfile::TempDir>)> {
    if !path.is_file() {
        bail!("{} does not exist or is not a file", path.display());
    }
    let name = path.display().to_string();
    let connection = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .with_context(|| format!("cannot open the database {name}"))?;
    connection.busy_timeout(std::time::Duration::from_secs(5))?;
    let version = schema::check_input(&connection, &name)?;
    if version == schema::SCHEMA_VERSION {
        return Ok((path.to_path_buf(), None));
    }
    let scratch = tempfile::tempdir().context("making a scratch directory")?;
    let copy = scratch.path().join("input.sqlite");
    connection
        .execute("VACUUM INTO ?1", [copy.to_string_lossy()])
        .with_context(|| format!("cannot copy {name} to migrate it"))?;
    let mut migrated = Connection::open(&copy)?;
    schema::bring_up_to_date(&mut migrated, &name)?;
    Ok((copy, Some(scratch)))
}

/// The `precise` column of a cell: set for measured cells only.
fn precise_column<S>(outcome: &Outcome<S>) -> Option<bool> {
    match outcome {
        Outcome::Measured { precise, .. } => Some(*precise),
        Outcome::Unsupported { .. } | Outcome::Failed { .. } => None,
    }
}

/// Rebuilds a cell's outcome from its `status`, `reason` and `precise`
/// columns; `samples` reads a measured cell's samples.
fn outcome_from_columns<S>(
    status: &str,
    reason: Option<String>,
    precise: Option<bool>,
    samples: impl FnOnce() -> Result<Vec<Timed<S>>>,
) -> Result<Outcome<S>> {
    let status = CellStatus::from_id(status)
        .with_context(|| format!("a cell has the unknown status '{status}'"))?;
    Ok(match status {
        CellStatus::Measured => Outcome::Measured {
            samples: samples()?,
            precise: precise.unwrap_or(false),
            note: reason,
        },
        CellStatus::Unsupported => Outcome::Unsupported {
            reason: reason.unwrap_or_default(),
        },
        CellStatus::Failed => Outcome::Failed {
            reason: reason.unwrap_or_default(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::fixtures::{handshake_run_info as run_info, measured_cell, negotiated};
    use super::*;
    use crate::scenario::Named;
    use crate::workload::handshake::Sample;

    fn user_version(path: &Path) -> i64 {
        Connection::open(path)
            .unwrap()
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .unwrap()
    }

    fn tables(path: &Path) -> Vec<String> {
        let connection = Connection::open(path).unwrap();
        let mut statement = connection
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap();
        let names = statement
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<Vec<String>, _>>()
            .unwrap();
        names
    }

    #[test]
    fn rounds_round_trip_and_saving_again_replaces() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store.begin_run(&run_info()).unwrap();
        let other = store.begin_run(&run_info()).unwrap();
        let round = |index: u32, offset_ns| Round {
            index,
            offset_ns,
            others_cpu: (index % 2 == 1).then_some(0.25 * index as f64),
        };
        store
            .save_rounds(
                run,
                &[
                    round(0, 1_000),
                    round(1, 2_000_000),
                    round(2, 5_000_000_000),
                ],
            )
            .unwrap();
        store.save_rounds(other, &[round(0, 7)]).unwrap();
        // Saved again at the end of the run: round 2 is replaced, 3 is new.
        store
            .save_rounds(run, &[round(2, 5_000_000_001), round(3, 9_000_000_000)])
            .unwrap();
        assert_eq!(
            store.load_rounds(run).unwrap(),
            vec![
                round(0, 1_000),
                round(1, 2_000_000),
                round(2, 5_000_000_001),
                round(3, 9_000_000_000)
            ]
        );
        assert_eq!(store.load_rounds(other).unwrap(), vec![round(0, 7)]);
        assert_eq!(store.load_rounds(other + 1).unwrap(), vec![]);
    }

    #[test]
    fn rounds_of_a_missing_run_are_refused() {
        let mut store = Store::open_in_memory().unwrap();
        let round = Round {
            index: 0,
            offset_ns: 1,
            others_cpu: None,
        };
        assert!(store.save_rounds(42, &[round]).is_err());
    }

    #[test]
    fn a_new_file_gets_the_latest_schema_and_keeps_its_runs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested").join("tlslab.sqlite");
        let run = {
            let mut store = Store::open(&path).unwrap();
            assert_eq!(store.path(), Some(path.as_path()));
            let run = store.begin_run(&run_info()).unwrap();
            store.save_cell(run, &measured_cell()).unwrap();
            run
        };
        assert_eq!(user_version(&path), SCHEMA_VERSION);
        let store = Store::open(&path).unwrap();
        assert_eq!(store.load_run(run).unwrap().cells, vec![measured_cell()]);
    }

    #[test]
    fn an_empty_file_gets_the_latest_schema() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.sqlite");
        std::fs::write(&path, "").unwrap();
        Store::open(&path).unwrap();
        assert_eq!(user_version(&path), SCHEMA_VERSION);
        assert!(tables(&path).contains(&"rounds".to_string()));
    }

    #[test]
    fn a_version_0_database_is_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.sqlite");
        let cell = measured_cell();
        let s = &cell.scenario;
        {
            // Written the way the first tlslab wrote it: no user_version.
            let old = Connection::open(&path).unwrap();
            old.execute_batch(schema::VERSION_0).unwrap();
            old.execute(
                "INSERT INTO hosts (hostname, cpu_model, cpu_flags, cores, kernel, os)
                 VALUES ('old', 'cpu', 'aes', 4, '6.1', 'linux')",
                [],
            )
            .unwrap();
            old.execute(
                "INSERT INTO runs (status, kind, tool_version, command_line, options_json, host_id)
                 VALUES ('complete', 'handshake', '0.1', 'tlslab handshake', '{}', 1)",
                [],
            )
            .unwrap();
            old.execute(
                "INSERT INTO scenarios
                 (id, kind, tls_version, kx_group, cert, aead, resumption, mutual, chain_depth)
                 VALUES (?1, 'handshake', ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    s.label(),
                    s.version.id(),
                    s.group.id(),
                    s.cert.id(),
                    s.aead.id(),
                    s.resumption.id(),
                    s.mutual,
                    s.chain_depth
                ],
            )
            .unwrap();
            old.execute(
                "INSERT INTO cells (run_id, scenario_id, backend, status, reason, negotiated_version,
                 negotiated_suite, negotiated_group, negotiated_signature, resumed, precise, weak,
                 security_notes, sample_count)
                 VALUES (1, ?1, 'mock', 'measured', NULL, 'TLSv1.3', 'TLS_CHACHA20_POLY1305_SHA256',
                 'x25519mlkem768', NULL, 1, 1, 0, '', 1)",
                [s.label()],
            )
            .unwrap();
            old.execute(
                "INSERT INTO samples (cell_id, seq, wall_ns, client_ns, server_ns)
                 VALUES (1, 0, 10, 4, 5)",
                [],
            )
            .unwrap();
        }
        assert_eq!(user_version(&path), 0);

        let mut store = Store::open(&path).unwrap();
        assert_eq!(user_version(&path), SCHEMA_VERSION);
        let run = store.load_run(1).unwrap();
        assert_eq!(run.status, RunStatus::Complete);
        assert_eq!(run.host.hostname, "old");
        assert_eq!(
            run.cells,
            vec![CellResult {
                counts: Default::default(),
                subject: crate::scenario::Subject::from_name("mock").unwrap(),
                scenario: *s,
                negotiated: Some(negotiated()),
                outcome: Outcome::Measured {
                    samples: vec![Timed {
                        round: 0,
                        // No CPU times then: they read as the in-call times.
                        value: Sample {
                            wall_ns: 10,
                            client_ns: 4,
                            server_ns: 5,
                            client_cpu_ns: 4,
                            server_cpu_ns: 5,
                        },
                    }],
                    precise: true,
                    note: None,
                },
            }]
        );
        assert_eq!(store.load_rounds(1).unwrap(), vec![]);

        // The migrated file takes new runs with every new column.
        let new_run = store.begin_run(&run_info()).unwrap();
        store.save_cell(new_run, &measured_cell()).unwrap();
        let rounds = [Round {
            index: 0,
            offset_ns: 30,
            others_cpu: Some(1.5),
        }];
        store.save_rounds(new_run, &rounds).unwrap();
        drop(store);
        let store = Store::open(&path).unwrap();
        assert_eq!(
            store.load_run(new_run).unwrap().cells,
            vec![measured_cell()]
        );
        assert_eq!(store.load_rounds(new_run).unwrap(), rounds);
    }

    #[test]
    fn a_database_from_a_newer_tlslab_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("future.sqlite");
        drop(Store::open(&path).unwrap());
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", 99)
            .unwrap();
        let error = Store::open(&path).err().expect("must fail");
        let expected = format!(
            "the database {} was written by a newer tlslab (schema version 99; \
             this tlslab knows up to {SCHEMA_VERSION})",
            path.display()
        );
        assert!(format!("{error:#}").contains(&expected), "{error:#}");
        assert_eq!(user_version(&path), 99);
    }

    #[test]
    fn a_text_file_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.csv");
        let text = "backend,scenario,median_ns\nrustls,handshake_1.3_x25519,81234\n";
        std::fs::write(&path, text).unwrap();
        let error = Store::open(&path).err().expect("must fail");
        let expected = format!("{} is not a tlslab database (not SQLite)", path.display());
        assert!(format!("{error:#}").contains(&expected), "{error:#}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    }

    #[test]
    fn a_database_from_another_tool_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("other.sqlite");
        Connection::open(&path)
            .unwrap()
            .execute_batch("CREATE TABLE foo (x INTEGER);")
            .unwrap();
        let error = Store::open(&path).err().expect("must fail");
        let message = format!("{error:#}");
        assert!(
            message.contains(&format!("{} is not a tlslab database", path.display())),
            "{message}"
        );
        assert!(message.contains("foo"), "{message}");
        assert_eq!(tables(&path), vec!["foo".to_string()]);
        assert_eq!(user_version(&path), 0);
    }

    /// Issue 18 item 8: a `runs` table is not enough to be tlslab's.
    #[test]
    fn a_foreign_runs_table_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jobs.sqlite");
        Connection::open(&path)
            .unwrap()
            .execute_batch("CREATE TABLE runs (id INTEGER PRIMARY KEY, name TEXT);")
            .unwrap();
        let before = std::fs::read(&path).unwrap();
        for error in [
            Store::open(&path).err().expect("must fail"),
            Store::open_read_only(&path).err().expect("must fail"),
        ] {
            let message = format!("{error:#}");
            assert!(
                message.contains(&format!("{} is not a tlslab database", path.display())),
                "{message}"
            );
            assert!(message.contains("(id, name)"), "{message}");
        }
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    /// Issue 18 item 9: SQLite opens a file it may not write read-only and
    /// said so at the first write, naming no file.
    #[test]
    fn a_read_only_file_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.sqlite");
        drop(Store::open(&path).unwrap());
        let read_only =
            Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        let error = Store::prepare(read_only, Some(path.clone()))
            .err()
            .expect("must fail");
        assert_eq!(
            format!("{error:#}"),
            format!(
                "cannot write to the database {}: the file is read-only",
                path.display()
            )
        );
    }

    #[test]
    fn unwritable_path_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, "not a directory").unwrap();
        let error = Store::open(&blocker.join("db.sqlite"))
            .err()
            .expect("must fail");
        assert!(format!("{error:#}").contains("cannot"), "{error:#}");
    }
}
