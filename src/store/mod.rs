//! The SQLite store: runs, hosts, library versions, scenarios, cells with
//! their negotiated parameters, and every raw sample. Each finished cell is
//! committed on its own, so an interrupted run keeps what it finished; a run
//! is `incomplete` until it is marked `complete` at its end.

mod speed;
mod tunnel;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use rusqlite::{params, Connection, OptionalExtension};

use crate::backend::{LibraryInfo, Negotiated};
use crate::host::HostInfo;
use crate::measure::{CellOutcome, CellResult, Sample};
use crate::scenario::{parse_name, HandshakeScenario, Named};

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS hosts (
    id INTEGER PRIMARY KEY,
    hostname TEXT NOT NULL,
    cpu_model TEXT NOT NULL,
    cpu_flags TEXT NOT NULL,
    cores INTEGER NOT NULL,
    kernel TEXT NOT NULL,
    os TEXT NOT NULL,
    UNIQUE (hostname, cpu_model, cpu_flags, cores, kernel, os)
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    started_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    finished_at TEXT,
    status TEXT NOT NULL CHECK (status IN ('incomplete', 'complete')),
    kind TEXT NOT NULL,
    tool_version TEXT NOT NULL,
    command_line TEXT NOT NULL,
    options_json TEXT NOT NULL,
    host_id INTEGER NOT NULL REFERENCES hosts (id)
);
CREATE TABLE IF NOT EXISTS libraries (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    backend TEXT NOT NULL,
    library TEXT NOT NULL,
    version TEXT NOT NULL,
    PRIMARY KEY (run_id, backend)
);
CREATE TABLE IF NOT EXISTS scenarios (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    tls_version TEXT NOT NULL,
    kx_group TEXT NOT NULL,
    cert TEXT NOT NULL,
    aead TEXT NOT NULL,
    resumption TEXT NOT NULL,
    mutual INTEGER NOT NULL,
    chain_depth INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS cells (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs (id),
    scenario_id TEXT NOT NULL REFERENCES scenarios (id),
    backend TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('measured', 'unsupported', 'failed')),
    reason TEXT,
    negotiated_version TEXT,
    negotiated_suite TEXT,
    negotiated_group TEXT,
    negotiated_signature TEXT,
    resumed INTEGER,
    precise INTEGER,
    weak INTEGER NOT NULL,
    security_notes TEXT NOT NULL,
    sample_count INTEGER NOT NULL,
    finished_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    UNIQUE (run_id, scenario_id, backend)
);
CREATE TABLE IF NOT EXISTS samples (
    cell_id INTEGER NOT NULL REFERENCES cells (id),
    seq INTEGER NOT NULL,
    wall_ns INTEGER NOT NULL,
    client_ns INTEGER NOT NULL,
    server_ns INTEGER NOT NULL,
    PRIMARY KEY (cell_id, seq)
) WITHOUT ROWID;
"#;

/// What describes a run before it starts.
#[derive(Debug, Clone)]
pub struct RunInfo {
    /// "handshake" (later also "tunnel", "speed"...).
    pub kind: String,
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
    /// "handshake", "speed", "cost"...
    pub kind: String,
    pub status: String,
    pub started_at: String,
    pub options_json: String,
    pub host: HostInfo,
    pub libraries: Vec<LibraryInfo>,
    pub cells: Vec<CellResult>,
}

/// An open result database.
pub struct Store {
    connection: Connection,
    path: Option<PathBuf>,
}

impl Store {
    /// The default database: `tlslab/tlslab.sqlite` in the user's data directory.
    pub fn default_path() -> PathBuf {
        dirs::data_dir()
            .unwrap_or_else(std::env::temp_dir)
            .join("tlslab")
            .join("tlslab.sqlite")
    }

    /// Opens (creating if needed) a database and checks that it can be written.
    pub fn open(path: &Path) -> Result<Self> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create the directory {}", parent.display()))?;
        }
        let connection = Connection::open(path)
            .with_context(|| format!("cannot open the database {}", path.display()))?;
        let store = Self::prepare(connection, Some(path.to_path_buf()))
            .with_context(|| format!("cannot write to the database {}", path.display()))?;
        Ok(store)
    }

    /// A database in memory (for tests and `--no-db`).
    pub fn open_in_memory() -> Result<Self> {
        Self::prepare(Connection::open_in_memory()?, None)
    }

    fn prepare(connection: Connection, path: Option<PathBuf>) -> Result<Self> {
        connection.busy_timeout(std::time::Duration::from_secs(5))?;
        connection.execute_batch("PRAGMA foreign_keys = ON;")?;
        connection.execute_batch(SCHEMA)?;
        connection.execute_batch(speed::SCHEMA)?;
        connection.execute_batch(tunnel::SCHEMA)?;
        // Proves the file is writable now, before anything is measured.
        connection.execute_batch("BEGIN IMMEDIATE; COMMIT;")?;
        Ok(Self { connection, path })
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
                "INSERT INTO libraries (run_id, backend, library, version) VALUES (?1, ?2, ?3, ?4)",
                params![run_id, library.backend, library.library, library.version],
            )?;
        }
        tx.commit()?;
        Ok(run_id)
    }

    /// Commits one finished cell with all its samples.
    pub fn save_cell(&mut self, run_id: i64, cell: &CellResult) -> Result<()> {
        let tx = self.connection.transaction()?;
        let s = &cell.scenario;
        let label = s.label();
        tx.execute(
            "INSERT OR IGNORE INTO scenarios
             (id, kind, tls_version, kx_group, cert, aead, resumption, mutual, chain_depth)
             VALUES (?1, 'handshake', ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                label,
                s.version.id(),
                s.group.id(),
                s.cert.id(),
                s.aead.id(),
                s.resumption.id(),
                s.mutual,
                s.chain_depth
            ],
        )?;
        let (status, reason, negotiated, precise) = match &cell.outcome {
            CellOutcome::Measured {
                negotiated,
                precise,
                ..
            } => ("measured", None, Some(negotiated), Some(*precise)),
            CellOutcome::Unsupported { reason } => {
                ("unsupported", Some(reason.as_str()), None, None)
            }
            CellOutcome::Failed { reason } => ("failed", Some(reason.as_str()), None, None),
        };
        tx.execute(
            "INSERT INTO cells (run_id, scenario_id, backend, status, reason, negotiated_version,
             negotiated_suite, negotiated_group, negotiated_signature, resumed, precise, weak,
             security_notes, sample_count)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            params![
                run_id,
                label,
                cell.backend,
                status,
                reason,
                negotiated.map(|n| n.version.as_str()),
                negotiated.map(|n| n.suite.as_str()),
                negotiated.and_then(|n| n.group.as_deref()),
                negotiated.and_then(|n| n.signature.as_deref()),
                negotiated.map(|n| n.resumed),
                precise,
                s.is_weak(),
                s.security_notes().join("; "),
                cell.samples().len() as i64,
            ],
        )?;
        let cell_id = tx.last_insert_rowid();
        {
            let mut insert = tx.prepare(
                "INSERT INTO samples (cell_id, seq, wall_ns, client_ns, server_ns) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for (seq, sample) in cell.samples().iter().enumerate() {
                insert.execute(params![
                    cell_id,
                    seq as i64,
                    sample.wall_ns as i64,
                    sample.client_ns as i64,
                    sample.server_ns as i64
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Marks a run finished: `complete` only if every cell ran.
    pub fn finish_run(&mut self, run_id: i64, complete: bool) -> Result<()> {
        self.connection.execute(
            "UPDATE runs SET status = ?2, finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?1",
            params![run_id, if complete { "complete" } else { "incomplete" }],
        )?;
        Ok(())
    }

    /// The id of the most recent run, if any.
    pub fn latest_run_id(&self) -> Result<Option<i64>> {
        Ok(self
            .connection
            .query_row("SELECT max(id) FROM runs", [], |row| row.get(0))
            .optional()?
            .flatten())
    }

    /// Reads a run back with every cell and sample.
    pub fn load_run(&self, run_id: i64) -> Result<StoredRun> {
        let run = self
            .connection
            .query_row(
                "SELECT r.status, r.started_at, r.options_json, h.hostname, h.cpu_model, h.cpu_flags,
                        h.cores, h.kernel, h.os, r.kind
                 FROM runs r JOIN hosts h ON h.id = r.host_id WHERE r.id = ?1",
                [run_id],
                |row| {
                    Ok((
                        row.get::<_, String>(0)?,
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
                        row.get::<_, String>(9)?,
                    ))
                },
            )
            .optional()?;
        let Some((status, started_at, options_json, host, kind)) = run else {
            bail!("there is no run {run_id} in this database");
        };
        let mut libraries = Vec::new();
        let mut statement = self.connection.prepare(
            "SELECT backend, library, version FROM libraries WHERE run_id = ?1 ORDER BY rowid",
        )?;
        for library in statement.query_map([run_id], |row| {
            Ok(LibraryInfo {
                backend: row.get(0)?,
                library: row.get(1)?,
                version: row.get(2)?,
            })
        })? {
            libraries.push(library?);
        }
        Ok(StoredRun {
            id: run_id,
            kind,
            status,
            started_at,
            options_json,
            host,
            libraries,
            cells: self.load_cells(run_id)?,
        })
    }

    fn load_cells(&self, run_id: i64) -> Result<Vec<CellResult>> {
        let mut statement = self.connection.prepare(
            "SELECT c.id, c.backend, c.status, c.reason, c.negotiated_version, c.negotiated_suite,
                    c.negotiated_group, c.negotiated_signature, c.resumed, c.precise,
                    s.tls_version, s.kx_group, s.cert, s.aead, s.resumption, s.mutual, s.chain_depth
             FROM cells c JOIN scenarios s ON s.id = c.scenario_id
             WHERE c.run_id = ?1 ORDER BY c.id",
        )?;
        let rows = statement.query_map([run_id], |row| {
            Ok(StoredCellRow {
                cell_id: row.get(0)?,
                backend: row.get(1)?,
                status: row.get(2)?,
                reason: row.get(3)?,
                version: row.get(4)?,
                suite: row.get(5)?,
                group: row.get(6)?,
                signature: row.get(7)?,
                resumed: row.get(8)?,
                precise: row.get(9)?,
                axes: [
                    row.get(10)?,
                    row.get(11)?,
                    row.get(12)?,
                    row.get(13)?,
                    row.get(14)?,
                ],
                mutual: row.get(15)?,
                chain_depth: row.get(16)?,
            })
        })?;
        let mut samples_query = self.connection.prepare(
            "SELECT wall_ns, client_ns, server_ns FROM samples WHERE cell_id = ?1 ORDER BY seq",
        )?;
        let mut cells = Vec::new();
        for row in rows {
            let row = row?;
            let [version, group, cert, aead, resumption] = &row.axes;
            let scenario = HandshakeScenario {
                version: parse_name(version)?,
                group: parse_name(group)?,
                cert: parse_name(cert)?,
                aead: parse_name(aead)?,
                resumption: parse_name(resumption)?,
                mutual: row.mutual,
                chain_depth: row.chain_depth,
            };
            let outcome = match row.status.as_str() {
                "measured" => {
                    let samples = samples_query
                        .query_map([row.cell_id], |r| {
                            Ok(Sample {
                                wall_ns: r.get::<_, i64>(0)? as u64,
                                client_ns: r.get::<_, i64>(1)? as u64,
                                server_ns: r.get::<_, i64>(2)? as u64,
                            })
                        })?
                        .collect::<Result<Vec<_>, _>>()?;
                    CellOutcome::Measured {
                        negotiated: Negotiated {
                            version: row.version.unwrap_or_default(),
                            suite: row.suite.unwrap_or_default(),
                            group: row.group,
                            signature: row.signature,
                            resumed: row.resumed.unwrap_or(false),
                        },
                        samples,
                        precise: row.precise.unwrap_or(false),
                    }
                }
                "unsupported" => CellOutcome::Unsupported {
                    reason: row.reason.unwrap_or_default(),
                },
                _ => CellOutcome::Failed {
                    reason: row.reason.unwrap_or_default(),
                },
            };
            cells.push(CellResult {
                backend: row.backend,
                scenario,
                outcome,
            });
        }
        Ok(cells)
    }
}

struct StoredCellRow {
    cell_id: i64,
    backend: String,
    status: String,
    reason: Option<String>,
    version: Option<String>,
    suite: Option<String>,
    group: Option<String>,
    signature: Option<String>,
    resumed: Option<bool>,
    precise: Option<bool>,
    axes: [String; 5],
    mutual: bool,
    chain_depth: u8,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Aead, CertKind, Group, Resumption, TlsVersion};

    fn run_info() -> RunInfo {
        RunInfo {
            kind: "handshake".into(),
            tool_version: "test".into(),
            command_line: "tlslab handshake".into(),
            options_json: "{}".into(),
            host: HostInfo::current(),
            libraries: vec![LibraryInfo {
                backend: "mock".into(),
                library: "mock".into(),
                version: "0".into(),
            }],
        }
    }

    fn measured_cell() -> CellResult {
        CellResult {
            backend: "mock".into(),
            scenario: HandshakeScenario {
                version: TlsVersion::Tls13,
                group: Group::X25519Mlkem768,
                cert: CertKind::MlDsa65,
                aead: Aead::Chacha20Poly1305,
                resumption: Resumption::Psk,
                mutual: true,
                chain_depth: 4,
            },
            outcome: CellOutcome::Measured {
                negotiated: Negotiated {
                    version: "TLSv1.3".into(),
                    suite: "TLS_CHACHA20_POLY1305_SHA256".into(),
                    group: Some("x25519mlkem768".into()),
                    signature: None,
                    resumed: true,
                },
                samples: vec![
                    Sample {
                        wall_ns: 10,
                        client_ns: 4,
                        server_ns: 5,
                    },
                    Sample {
                        wall_ns: 12,
                        client_ns: 5,
                        server_ns: 6,
                    },
                ],
                precise: false,
            },
        }
    }

    #[test]
    fn a_run_round_trips() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store.begin_run(&run_info()).unwrap();
        let measured = measured_cell();
        let mut unsupported = measured_cell();
        unsupported.scenario.group = Group::X448;
        unsupported.outcome = CellOutcome::Unsupported {
            reason: "no X448".into(),
        };
        store.save_cell(run, &measured).unwrap();
        store.save_cell(run, &unsupported).unwrap();

        let loaded = store.load_run(run).unwrap();
        assert_eq!(loaded.status, "incomplete");
        assert_eq!(loaded.cells, vec![measured, unsupported]);
        assert_eq!(loaded.libraries, run_info().libraries);
        store.finish_run(run, true).unwrap();
        assert_eq!(store.load_run(run).unwrap().status, "complete");
        assert_eq!(store.latest_run_id().unwrap(), Some(run));
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
