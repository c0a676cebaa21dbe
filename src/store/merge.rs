//! Merging result databases: every run of another tlslab database copied
//! into this one with its host record, libraries, rounds, scenarios, cells
//! and samples of every kind, under new ids. A run is identified by its
//! content (host, start time, kind, command line and options, which hold
//! its `--shard`), so a run already present is skipped and merging the same
//! file twice changes nothing. The input file is only read.

use std::path::Path;

use anyhow::{bail, Context, Result};
use rusqlite::{params, OptionalExtension, Transaction};

use super::Store;

/// The tables holding a run's cells, each with the tables of its samples.
const CELL_TABLES: &[(&str, &[&str])] = &[
    (
        "cells",
        &[
            "samples",
            "counts",
            "count_samples",
            "count_breakdown",
            "wire",
            "network",
            "network_samples",
        ],
    ),
    (
        "speed_cells",
        &["speed_samples", "speed_counts", "speed_count_samples"],
    ),
    (
        "tunnel_cells",
        &["tunnel_samples", "tunnel_counts", "tunnel_count_samples"],
    ),
    (
        "bulk_cells",
        &["bulk_samples", "bulk_counts", "bulk_count_samples"],
    ),
    ("capacity_cells", &["capacity_steps"]),
    (
        "tunnel_setup_cells",
        &["tunnel_setup_samples", "tunnel_setup_count_samples"],
    ),
];

/// The tables of scenarios, keyed by their stable label.
const SCENARIO_TABLES: &[&str] = &["scenarios", "tunnel_scenarios", "bulk_scenarios"];

/// The tables keyed by a run only (no id of their own), `load`'s results
/// among them.
const RUN_TABLES: &[&str] = &[
    "libraries",
    "rounds",
    "load_summaries",
    "load_errors",
    "load_phases",
    "load_histograms",
    "load_seconds",
    "load_intervals",
    "load_profile",
];

/// What a merge of one file did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeSummary {
    /// The new ids in this database of the runs copied, in the input's order.
    pub copied: Vec<i64>,
    /// Runs of the input already in this database.
    pub skipped: usize,
}

/// The columns of a table, from the latest schema in `main`.
fn columns(tx: &Transaction, table: &str) -> Result<Vec<String>> {
    let mut statement = tx.prepare("SELECT name FROM main.pragma_table_info(?1) ORDER BY cid")?;
    let names = statement
        .query_map([table], |row| row.get(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?;
    Ok(names)
}

/// Copies the rows of `input.table` whose column `from.0` is `from.1`,
/// with the column `set.0` given the value `set.1` and without the `id`
/// column (a fresh one is given); returns the (old id, new id) pairs when
/// the table has ids.
fn copy_rows(
    tx: &Transaction,
    table: &str,
    from: (&str, i64),
    set: (&str, i64),
) -> Result<Vec<(i64, i64)>> {
    let all = columns(tx, table)?;
    let has_id = all.iter().any(|c| c == "id");
    let kept: Vec<&String> = all.iter().filter(|c| *c != "id").collect();
    let names = kept
        .iter()
        .map(|c| format!("\"{c}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let values = kept
        .iter()
        .map(|c| {
            if c.as_str() == set.0 {
                "?2".to_string()
            } else {
                format!("\"{c}\"")
            }
        })
        .collect::<Vec<_>>()
        .join(", ");
    let (key, old) = from;
    if !has_id {
        tx.execute(
            &format!(
                "INSERT INTO main.{table} ({names}) SELECT {values} FROM input.{table}
                 WHERE \"{key}\" = ?1"
            ),
            params![old, set.1],
        )
        .with_context(|| format!("copying {table}"))?;
        return Ok(Vec::new());
    }
    // One row at a time, to learn each new id.
    let old_ids: Vec<i64> = tx
        .prepare(&format!(
            "SELECT id FROM input.{table} WHERE \"{key}\" = ?1 ORDER BY id"
        ))?
        .query_map([old], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut insert = tx.prepare(&format!(
        "INSERT INTO main.{table} ({names}) SELECT {values} FROM input.{table} WHERE id = ?1"
    ))?;
    let mut pairs = Vec::with_capacity(old_ids.len());
    for old_id in old_ids {
        insert
            .execute(params![old_id, set.1])
            .with_context(|| format!("copying {table}"))?;
        pairs.push((old_id, tx.last_insert_rowid()));
    }
    Ok(pairs)
}

/// The id in `main` of the input's run `old`, if an identical run is there:
/// same host, start time, kind, command line and options.
fn existing_run(tx: &Transaction, old: i64) -> Result<Option<i64>> {
    Ok(tx
        .query_row(
            "SELECT m.id FROM input.runs i
             JOIN input.hosts ih ON ih.id = i.host_id
             JOIN main.runs m ON m.started_at = i.started_at AND m.kind = i.kind
                 AND m.command_line = i.command_line AND m.options_json = i.options_json
             JOIN main.hosts mh ON mh.id = m.host_id AND mh.hostname = ih.hostname
                 AND mh.cpu_model = ih.cpu_model AND mh.cpu_flags = ih.cpu_flags
                 AND mh.cores = ih.cores AND mh.kernel = ih.kernel AND mh.os = ih.os
             WHERE i.id = ?1",
            [old],
            |row| row.get(0),
        )
        .optional()?)
}

/// Copies one run of the input and everything that hangs from it; returns its new id.
fn copy_run(tx: &Transaction, old: i64) -> Result<i64> {
    tx.execute(
        "INSERT OR IGNORE INTO main.hosts (hostname, cpu_model, cpu_flags, cores, kernel, os)
         SELECT h.hostname, h.cpu_model, h.cpu_flags, h.cores, h.kernel, h.os
         FROM input.runs r JOIN input.hosts h ON h.id = r.host_id WHERE r.id = ?1",
        [old],
    )?;
    let host_id: i64 = tx.query_row(
        "SELECT mh.id FROM input.runs r JOIN input.hosts ih ON ih.id = r.host_id
         JOIN main.hosts mh ON mh.hostname = ih.hostname AND mh.cpu_model = ih.cpu_model
             AND mh.cpu_flags = ih.cpu_flags AND mh.cores = ih.cores
             AND mh.kernel = ih.kernel AND mh.os = ih.os
         WHERE r.id = ?1",
        [old],
        |row| row.get(0),
    )?;
    let [(_, new)] = copy_rows(tx, "runs", ("id", old), ("host_id", host_id))?[..] else {
        unreachable!("a run id names one run");
    };
    for table in RUN_TABLES {
        copy_rows(tx, table, ("run_id", old), ("run_id", new))?;
    }
    for (cells, sample_tables) in CELL_TABLES {
        for (old_cell, new_cell) in copy_rows(tx, cells, ("run_id", old), ("run_id", new))? {
            for samples in *sample_tables {
                copy_rows(tx, samples, ("cell_id", old_cell), ("cell_id", new_cell))?;
            }
        }
    }
    Ok(new)
}

impl Store {
    /// Checks that `path` is a tlslab database this code can read, without
    /// changing it (for checking every input before a merge writes anything).
    pub fn check_mergeable(path: &Path) -> Result<()> {
        super::readable(path).map(|_| ())
    }

    /// Copies every run of the database at `path` that this one does not
    /// hold yet, with its host record, libraries, rounds, scenarios, cells
    /// and samples, in one transaction; `path` is only read.
    pub fn merge_from(&mut self, path: &Path) -> Result<MergeSummary> {
        if let Some(own) = self.path() {
            if super::same_file(own, path) {
                bail!(
                    "{} is the database being merged into, {} (the same file)",
                    path.display(),
                    own.display()
                );
            }
        }
        let (attach, _scratch) = super::readable(path)?;
        self.connection
            .execute(
                "ATTACH DATABASE ?1 AS input",
                [attach.to_string_lossy().as_ref()],
            )
            .with_context(|| format!("cannot open the database {}", path.display()))?;
        let result = self.merge_attached();
        let detached = self.connection.execute_batch("DETACH DATABASE input");
        let summary = result.with_context(|| format!("merging {}", path.display()))?;
        detached?;
        Ok(summary)
    }

    fn merge_attached(&mut self) -> Result<MergeSummary> {
        let tx = self.connection.transaction()?;
        for table in SCENARIO_TABLES {
            let names = columns(&tx, table)?
                .iter()
                .map(|c| format!("\"{c}\""))
                .collect::<Vec<_>>()
                .join(", ");
            tx.execute(
                &format!(
                    "INSERT OR IGNORE INTO main.{table} ({names}) SELECT {names} FROM input.{table}"
                ),
                [],
            )?;
        }
        let runs: Vec<i64> = tx
            .prepare("SELECT id FROM input.runs ORDER BY id")?
            .query_map([], |row| row.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let mut summary = MergeSummary::default();
        for old in runs {
            if existing_run(&tx, old)?.is_some() {
                summary.skipped += 1;
            } else {
                summary.copied.push(copy_run(&tx, old)?);
            }
        }
        tx.commit()?;
        Ok(summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::schema;
    use rusqlite::Connection;

    fn user_version(path: &Path) -> i64 {
        Connection::open(path)
            .unwrap()
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .unwrap()
    }

    /// A database as the first tlslab wrote it (schema version 0): one run,
    /// one cell, one sample.
    fn version_0_database(path: &Path) {
        let old = Connection::open(path).unwrap();
        old.execute_batch(schema::VERSION_0).unwrap();
        old.execute_batch(
            "INSERT INTO hosts (hostname, cpu_model, cpu_flags, cores, kernel, os)
             VALUES ('old', 'cpu', 'aes', 4, '6.1', 'linux');
             INSERT INTO runs (status, kind, tool_version, command_line, options_json, host_id)
             VALUES ('complete', 'handshake', '0.1', 'tlslab handshake', '{}', 1);
             INSERT INTO scenarios
             (id, kind, tls_version, kx_group, cert, aead, resumption, mutual, chain_depth)
             VALUES ('handshake_1.3_x25519_rsa2048_aes128gcm', 'handshake', '1.3', 'x25519',
                     'rsa2048', 'aes128gcm', 'off', 0, 3);
             INSERT INTO cells (run_id, scenario_id, backend, status, weak, security_notes,
                                sample_count)
             VALUES (1, 'handshake_1.3_x25519_rsa2048_aes128gcm', 'mock', 'measured', 0, '', 1);
             INSERT INTO samples (cell_id, seq, wall_ns, client_ns, server_ns)
             VALUES (1, 0, 10, 4, 5);",
        )
        .unwrap();
    }

    #[test]
    fn an_older_input_is_migrated_in_a_copy_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("old.sqlite");
        version_0_database(&input);
        let before = std::fs::read(&input).unwrap();

        let mut store = Store::open(&dir.path().join("out.sqlite")).unwrap();
        let summary = store.merge_from(&input).unwrap();
        assert_eq!(summary.copied.len(), 1);
        let run = store.load_run(summary.copied[0]).unwrap();
        assert_eq!(run.host.hostname, "old");
        assert_eq!(run.cells.len(), 1);
        assert_eq!(run.cells[0].samples().len(), 1);

        assert_eq!(user_version(&input), 0);
        assert_eq!(std::fs::read(&input).unwrap(), before);
        // Merged again: already present.
        let again = store.merge_from(&input).unwrap();
        assert_eq!((again.copied.len(), again.skipped), (0, 1));
    }

    #[test]
    fn an_empty_file_is_not_a_tlslab_database() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("empty.sqlite");
        std::fs::write(&input, "").unwrap();
        let error = Store::check_mergeable(&input).unwrap_err();
        assert!(
            format!("{error:#}").contains("is not a tlslab database"),
            "{error:#}"
        );
    }
}
