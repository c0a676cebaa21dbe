//! The database's layout and its versions: the latest schema for a new file,
//! the schema as it first landed (version 0), and the migrations that bring
//! an older file up to date. The version is kept in `PRAGMA user_version`.

mod latest;
mod migrations;

#[cfg(test)]
pub(super) use migrations::VERSION_0;

use anyhow::{bail, Context, Result};
use rusqlite::{Connection, ErrorCode, TransactionBehavior};

use latest::LATEST;
use migrations::MIGRATIONS;

/// The schema this tlslab writes. A database with a higher `user_version`
/// was written by a newer tlslab and is refused.
pub const SCHEMA_VERSION: i64 = 13;

/// The columns of tlslab's `runs` table as version 0 made it. No migration
/// has changed them, and no other tool's table is likely to have exactly
/// these: they are how a file is known as a tlslab database.
const RUNS_COLUMNS: &[&str] = &[
    "id",
    "started_at",
    "finished_at",
    "status",
    "kind",
    "tool_version",
    "command_line",
    "options_json",
    "host_id",
];

/// The columns migrations added to `runs` after [`RUNS_COLUMNS`], each
/// with the version that added it.
const RUNS_COLUMNS_ADDED: &[(i64, &str)] = &[(10, "baseline")];

/// The columns of `runs` at a schema version, in order.
fn runs_columns_at(version: i64) -> Vec<&'static str> {
    let added = RUNS_COLUMNS_ADDED
        .iter()
        .filter(|(since, _)| *since <= version)
        .map(|(_, column)| *column);
    RUNS_COLUMNS.iter().copied().chain(added).collect()
}

/// What a database holds before it is touched.
struct Found {
    /// Every table, SQLite's own excepted.
    tables: Vec<String>,
    /// `PRAGMA user_version`.
    version: i64,
    /// The columns of its `runs` table, in order (empty without one).
    runs_columns: Vec<String>,
}

impl Found {
    /// Reads the tables and the version; `name` names the file in errors.
    fn read(connection: &Connection, name: &str) -> Result<Self> {
        let tables = connection
            .prepare(
                "SELECT name FROM sqlite_master
                 WHERE type = 'table' AND name NOT LIKE 'sqlite!_%' ESCAPE '!'
                 ORDER BY name",
            )
            .and_then(|mut statement| {
                statement
                    .query_map([], |row| row.get(0))?
                    .collect::<rusqlite::Result<Vec<String>>>()
            });
        let tables = match tables {
            Ok(tables) => tables,
            Err(error) if error.sqlite_error_code() == Some(ErrorCode::NotADatabase) => {
                bail!("{name} is not a tlslab database (not SQLite)")
            }
            Err(error) => {
                return Err(error).with_context(|| format!("cannot read the database {name}"))
            }
        };
        let version = connection
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .with_context(|| format!("cannot read the schema version of {name}"))?;
        let runs_columns = connection
            .prepare("SELECT name FROM pragma_table_info('runs') ORDER BY cid")
            .and_then(|mut statement| {
                statement
                    .query_map([], |row| row.get(0))?
                    .collect::<rusqlite::Result<Vec<String>>>()
            })
            .with_context(|| format!("cannot read the database {name}"))?;
        Ok(Self {
            tables,
            version,
            runs_columns,
        })
    }

    /// Refuses a database from another tool or from a newer tlslab: a
    /// tlslab database is empty, or its `runs` table has exactly tlslab's
    /// columns for its version.
    fn check(&self, name: &str) -> Result<()> {
        // Tables without `runs` are someone else's, whatever their version says.
        if !self.tables.is_empty() && !self.tables.iter().any(|t| t == "runs") {
            bail!(
                "{name} is not a tlslab database: it has tables ({}) but no `runs` table",
                self.tables.join(", ")
            );
        }
        if self.version < 0 {
            bail!(
                "{name} is not a tlslab database (schema version {})",
                self.version
            );
        }
        // A `runs` table of someone else's: tlslab's has exactly its
        // columns (a newer tlslab's may have more after them).
        if !self.tables.is_empty() {
            let expected = runs_columns_at(self.version.min(SCHEMA_VERSION));
            let found: Vec<&str> = self.runs_columns.iter().map(String::as_str).collect();
            let ours = if self.version > SCHEMA_VERSION {
                found.starts_with(&expected)
            } else {
                found == expected
            };
            if !ours {
                bail!(
                    "{name} is not a tlslab database: its `runs` table has the columns ({}), \
                     not tlslab's ({})",
                    found.join(", "),
                    expected.join(", ")
                );
            }
        }
        if self.version > SCHEMA_VERSION {
            bail!(
                "the database {name} was written by a newer tlslab (schema version {}; \
                 this tlslab knows up to {SCHEMA_VERSION})",
                self.version
            );
        }
        Ok(())
    }

    /// True if and only if the database has tables at the latest version.
    fn is_current(&self) -> bool {
        !self.tables.is_empty() && self.version == SCHEMA_VERSION
    }
}

/// Checks that a database opened read-only is a tlslab database that this
/// tlslab can read (see [`Found::check`]) and returns its schema version;
/// an empty file is refused, as it holds no run.
pub(super) fn check_input(connection: &Connection, name: &str) -> Result<i64> {
    let found = Found::read(connection, name)?;
    found.check(name)?;
    if found.tables.is_empty() {
        bail!("{name} is not a tlslab database (it has no tables)");
    }
    Ok(found.version)
}

/// Creates the latest schema in an empty database, or migrates an older
/// one, in one transaction; refuses a file that is not a tlslab database
/// or is newer than this code.
pub(super) fn bring_up_to_date(connection: &mut Connection, name: &str) -> Result<()> {
    let found = Found::read(connection, name)?;
    found.check(name)?;
    if found.is_current() {
        return Ok(());
    }
    // Read again under the write lock: another tlslab may have migrated the
    // file in between.
    let tx = connection
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .with_context(|| format!("cannot write to the database {name}"))?;
    let found = Found::read(&tx, name)?;
    found.check(name)?;
    if found.is_current() {
        return Ok(());
    }
    if found.tables.is_empty() {
        tx.execute_batch(LATEST)
            .with_context(|| format!("cannot create the tables in {name}"))?;
    } else {
        for (from, batches) in MIGRATIONS.iter().enumerate().skip(found.version as usize) {
            for batch in batches.iter() {
                tx.execute_batch(batch).with_context(|| {
                    format!(
                        "cannot migrate the database {name} from schema version {from} to {}",
                        from + 1
                    )
                })?;
            }
        }
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.commit()
        .with_context(|| format!("cannot write to the database {name}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every table's columns as SQLite describes them (name, type, not
    /// null, default, primary key position), table by table.
    fn layout(connection: &Connection) -> Vec<(String, Vec<String>)> {
        let tables = Found::read(connection, "test").unwrap().tables;
        tables
            .into_iter()
            .map(|table| {
                let mut statement = connection
                    .prepare(
                        "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?1)",
                    )
                    .unwrap();
                let columns = statement
                    .query_map([&table], |row| {
                        Ok(format!(
                            "{} {} notnull={} default={:?} pk={}",
                            row.get::<_, String>(0)?,
                            row.get::<_, String>(1)?,
                            row.get::<_, i64>(2)?,
                            row.get::<_, Option<String>>(3)?,
                            row.get::<_, i64>(4)?
                        ))
                    })
                    .unwrap()
                    .collect::<rusqlite::Result<Vec<_>>>()
                    .unwrap();
                (table, columns)
            })
            .collect()
    }

    #[test]
    fn a_migrated_database_matches_a_new_one() {
        let mut new = Connection::open_in_memory().unwrap();
        bring_up_to_date(&mut new, "new").unwrap();
        let mut old = Connection::open_in_memory().unwrap();
        old.execute_batch(VERSION_0).unwrap();
        bring_up_to_date(&mut old, "old").unwrap();
        assert_eq!(layout(&old), layout(&new));
        assert!(layout(&new).iter().any(|(table, _)| table == "rounds"));
    }

    /// Version 13: rows stored before it get their subject's kind from
    /// their names (servers, the plain rows, engines), libraries else.
    #[test]
    fn version_13_types_the_subjects_stored_before_it() {
        let mut old = Connection::open_in_memory().unwrap();
        for batches in &MIGRATIONS[..12] {
            for batch in batches.iter() {
                old.execute_batch(batch).unwrap();
            }
        }
        old.pragma_update(None, "user_version", 12).unwrap();
        old.execute_batch(
            "INSERT INTO hosts (hostname, cpu_model, cpu_flags, cores, kernel, os)
                 VALUES ('h', 'c', 'f', 2, 'k', 'o');
             INSERT INTO runs (status, kind, tool_version, command_line, options_json, host_id)
                 VALUES ('complete', 'handshake', 't', 'c', '{}', 1);
             INSERT INTO libraries (run_id, backend, library, version) VALUES
                 (1, 'openssl', 'OpenSSL', '3'), (1, 'nginx', 'nginx', '1'),
                 (1, 'inprocess (generic)', 'OpenSSL', '3'), (1, 'none', 'none', '-');
             INSERT INTO scenarios VALUES ('s', 'handshake', '1.3', 'x25519', 'ecdsa_p256',
                 'aes128gcm', 'off', 0, 3);
             INSERT INTO cells (run_id, scenario_id, backend, status, weak, security_notes,
                 sample_count) VALUES (1, 's', 'nginx', 'measured', 0, '', 0),
                 (1, 's', 'openssl (generic)', 'measured', 0, '', 0);
             INSERT INTO bulk_scenarios VALUES ('b', 'none', 'none', 1024);
             INSERT INTO bulk_cells (run_id, scenario_id, backend, status, sample_bytes,
                 security_notes, sample_count) VALUES (1, 'b', 'none', 'measured', 1, '', 0),
                 (1, 'b', 'openssl', 'measured', 1, '', 0);",
        )
        .unwrap();
        bring_up_to_date(&mut old, "old").unwrap();
        let kinds = |table: &str| -> Vec<(String, String)> {
            let sql = format!("SELECT backend, subject_kind FROM {table} ORDER BY rowid");
            let mut statement = old.prepare(&sql).unwrap();
            let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)));
            rows.unwrap().map(Result::unwrap).collect()
        };
        let pairs = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        assert_eq!(
            kinds("libraries"),
            pairs(&[
                ("openssl", "library"),
                ("nginx", "server"),
                ("inprocess (generic)", "engine"),
                ("none", "plain")
            ])
        );
        assert_eq!(
            kinds("cells"),
            pairs(&[("nginx", "server"), ("openssl (generic)", "library")])
        );
        assert_eq!(
            kinds("bulk_cells"),
            pairs(&[("none", "plain"), ("openssl", "library")])
        );
    }

    #[test]
    fn every_version_below_the_latest_has_a_migration() {
        assert_eq!(MIGRATIONS.len() as i64, SCHEMA_VERSION);
    }
}
