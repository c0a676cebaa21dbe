//! How every kind of sampled cell (handshake, bulk, tunnel, speed) is kept
//! as it is taken, written once: a cell's row is made at its first round
//! (measured, no sample yet, `precise` NULL, so a run killed then reads it
//! back as not precise), each round's samples are appended after those
//! stored before in one transaction, and the cell's end sets its status,
//! adds the samples not stored yet (a cell that ended without being
//! measured keeps none) and replaces its counts. Each kind says only what
//! differs, by implementing [`SampledCell`]: its tables, the key of its
//! row, its own columns, a sample's columns and how its counts are written.

use anyhow::{anyhow, Result};
use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension};

use super::precise_column;
use crate::measure::{Outcome, Timed};
use crate::scenario::{Subject, SubjectKind};

/// The subject a stored row names: its `subject_kind` and its name (the
/// `backend` column), as [`Subject::name`] wrote them.
pub(super) fn read_subject(kind: &str, name: &str) -> Result<Subject> {
    let kind = SubjectKind::from_id(kind)
        .ok_or_else(|| anyhow!("a stored row's subject has the unknown kind '{kind}'"))?;
    Subject::parse(kind, name).map_err(|error| anyhow!("a stored row's subject: {error}"))
}

/// Named values of a row's columns, as they are written.
pub(super) type Columns = Vec<(&'static str, Value)>;

/// A kind of cell whose samples the store keeps round by round.
pub(super) trait SampledCell {
    /// One sample of the cell.
    type Sample;
    /// The table of this kind's cells.
    const CELLS: &'static str;
    /// The table of their samples (`cell_id`, `seq`, `round`, then
    /// [`Self::SAMPLE_COLUMNS`]).
    const SAMPLES: &'static str;
    /// The two columns that, with the run, find a cell's row: its
    /// scenario's and its backend's (or engine's).
    const KEY_COLUMNS: [&'static str; 2];
    /// What a person calls it in an error ("bulk cell").
    const NAME: &'static str;
    /// The columns of a sample in [`Self::SAMPLES`] after its round.
    const SAMPLE_COLUMNS: &'static [&'static str];

    /// The values of [`Self::KEY_COLUMNS`].
    fn key(&self) -> [String; 2];
    /// How the cell ended, or what it has so far.
    fn outcome(&self) -> &Outcome<Self::Sample>;
    /// Stores its scenario in its kind's table of scenarios, if the kind
    /// has one, before its row refers to it (the caller commits).
    fn save_scenario(&self, _tx: &Connection) -> Result<()> {
        Ok(())
    }
    /// Its own columns written when its row is made and left as they are.
    fn first_columns(&self) -> Columns;
    /// Its own columns written when its row is made and again at its end
    /// (what its run found: what was negotiated, a batch, bytes per sample).
    fn end_columns(&self) -> Columns;
    /// A sample's values of [`Self::SAMPLE_COLUMNS`], in their order.
    fn sample_values(sample: &Self::Sample) -> Vec<Value>;
    /// Replaces its counted measures with those it carries (the caller commits).
    fn replace_counts(&self, tx: &Connection, cell_id: i64) -> Result<()>;
    /// Returns true if and only if its end leaves the counts stored for it
    /// before alone instead of replacing them.
    fn end_keeps_stored_counts(&self) -> bool {
        false
    }
}

/// Commits one round's samples of cells still sampling, in one
/// transaction: each (cell, the samples it took in the round) adds its
/// samples after those stored before, its cell stored at its first round
/// as still sampling ([`cell_row`]).
pub(super) fn save_round<C: SampledCell>(
    connection: &mut Connection,
    run_id: i64,
    taken: &[(&C, &[Timed<C::Sample>])],
) -> Result<()> {
    let tx = connection.transaction()?;
    for (cell, samples) in taken {
        let (cell_id, stored) = cell_row(&tx, run_id, *cell)?;
        insert_samples::<C>(&tx, cell_id, stored, samples)?;
        tx.execute(
            &format!("UPDATE {} SET sample_count = ?2 WHERE id = ?1", C::CELLS),
            params![cell_id, (stored + samples.len()) as i64],
        )?;
    }
    tx.commit()?;
    Ok(())
}

/// Commits one finished cell with all its samples: the samples its rounds
/// stored already ([`save_round`]) stay, the rest are added, its end
/// (status, reason, precision, its own end columns) is set and its counts
/// replaced. A cell that ended without being measured keeps no sample.
pub(super) fn save_end<C: SampledCell>(
    connection: &mut Connection,
    run_id: i64,
    cell: &C,
) -> Result<()> {
    let tx = connection.transaction()?;
    let (cell_id, stored) = cell_row(&tx, run_id, cell)?;
    let outcome = cell.outcome();
    let samples = outcome.samples();
    if samples.len() < stored {
        delete_cell_rows(&tx, &[C::SAMPLES], cell_id)?;
        insert_samples::<C>(&tx, cell_id, 0, samples)?;
    } else {
        insert_samples::<C>(&tx, cell_id, stored, &samples[stored..])?;
    }
    let own = cell.end_columns();
    let assignments: String = own
        .iter()
        .enumerate()
        .map(|(i, (column, _))| format!(", {column} = ?{}", i + 6))
        .collect();
    let values = [
        Value::from(cell_id),
        Value::from(outcome.status().id().to_string()),
        Value::from(outcome.stored_reason().map(str::to_string)),
        Value::from(precise_column(outcome)),
        Value::from(samples.len() as i64),
    ]
    .into_iter()
    .chain(own.into_iter().map(|(_, value)| value));
    tx.execute(
        &format!(
            "UPDATE {} SET status = ?2, reason = ?3, precise = ?4, sample_count = ?5,
             finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'){assignments}
             WHERE id = ?1",
            C::CELLS
        ),
        params_from_iter(values),
    )?;
    if !cell.end_keeps_stored_counts() {
        cell.replace_counts(&tx, cell_id)?;
    }
    tx.commit()?;
    Ok(())
}

/// Replaces the counted measures of the cell stored for `cell` in
/// `run_id` (by its key) with those it carries; an error if the run has
/// no such cell.
pub(super) fn save_counts<C: SampledCell>(
    connection: &mut Connection,
    run_id: i64,
    cell: &C,
) -> Result<()> {
    let tx = connection.transaction()?;
    let Some((cell_id, _)) = stored_row(&tx, run_id, cell)? else {
        let [scenario, backend] = cell.key();
        return Err(anyhow!(
            "run {run_id} has no {} {scenario} on {backend} to add counts to",
            C::NAME
        ));
    };
    cell.replace_counts(&tx, cell_id)?;
    tx.commit()?;
    Ok(())
}

/// Removes a cell's rows from each of `tables` (the caller commits).
pub(super) fn delete_cell_rows(
    connection: &Connection,
    tables: &[&str],
    cell_id: i64,
) -> Result<()> {
    for table in tables {
        connection.execute(
            &format!("DELETE FROM {table} WHERE cell_id = ?1"),
            [cell_id],
        )?;
    }
    Ok(())
}

/// The id of the row stored for `cell` in `run_id` and how many samples
/// it holds, if it has one.
fn stored_row<C: SampledCell>(
    tx: &Connection,
    run_id: i64,
    cell: &C,
) -> Result<Option<(i64, usize)>> {
    let [scenario_column, backend_column] = C::KEY_COLUMNS;
    let [scenario, backend] = cell.key();
    Ok(tx
        .query_row(
            &format!(
                "SELECT id, sample_count FROM {}
                 WHERE run_id = ?1 AND {scenario_column} = ?2 AND {backend_column} = ?3",
                C::CELLS
            ),
            params![run_id, scenario, backend],
            |row| Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)? as usize)),
        )
        .optional()?)
}

/// The id of a cell's row in `run_id` and how many samples it holds; a
/// cell not stored yet is stored now (its scenario too), as sampling:
/// measured, its own columns, no sample yet, and `precise` NULL until it
/// stops (it reads back as not precise). The caller commits.
fn cell_row<C: SampledCell>(tx: &Connection, run_id: i64, cell: &C) -> Result<(i64, usize)> {
    if let Some(stored) = stored_row(tx, run_id, cell)? {
        return Ok(stored);
    }
    cell.save_scenario(tx)?;
    let [scenario_column, backend_column] = C::KEY_COLUMNS;
    let own: Columns = cell
        .first_columns()
        .into_iter()
        .chain(cell.end_columns())
        .collect();
    let names: String = own
        .iter()
        .map(|(column, _)| format!(", {column}"))
        .collect();
    let places: String = (0..own.len()).map(|i| format!(", ?{}", i + 4)).collect();
    let [scenario, backend] = cell.key();
    let values = [
        Value::from(run_id),
        Value::from(scenario),
        Value::from(backend),
    ]
    .into_iter()
    .chain(own.into_iter().map(|(_, value)| value));
    tx.execute(
        &format!(
            "INSERT INTO {} (run_id, {scenario_column}, {backend_column}, status, reason,
             precise, sample_count{names})
             VALUES (?1, ?2, ?3, 'measured', NULL, NULL, 0{places})",
            C::CELLS
        ),
        params_from_iter(values),
    )?;
    Ok((tx.last_insert_rowid(), 0))
}

/// Stores `samples` of a cell as its samples `first`, `first + 1`, ...
/// (the caller commits).
fn insert_samples<C: SampledCell>(
    tx: &Connection,
    cell_id: i64,
    first: usize,
    samples: &[Timed<C::Sample>],
) -> Result<()> {
    let names: String = C::SAMPLE_COLUMNS
        .iter()
        .map(|column| format!(", {column}"))
        .collect();
    let places: String = (0..C::SAMPLE_COLUMNS.len())
        .map(|i| format!(", ?{}", i + 4))
        .collect();
    let mut insert = tx.prepare_cached(&format!(
        "INSERT INTO {} (cell_id, seq, round{names}) VALUES (?1, ?2, ?3{places})",
        C::SAMPLES
    ))?;
    for (seq, Timed { round, value }) in (first..).zip(samples) {
        let values = [
            Value::from(cell_id),
            Value::from(seq as i64),
            Value::from(*round),
        ]
        .into_iter()
        .chain(C::sample_values(value));
        insert.execute(params_from_iter(values))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::measure::Outcome;
    use crate::scenario::speed::{Operation, Primitive, SpeedRow};
    use crate::store::fixtures::run_info;
    use crate::store::{RunKind, Store};
    use crate::workload::speed::{CountedOperations, SpeedCell};

    /// Counts for a cell its run does not hold are refused, naming the
    /// cell, and nothing is stored.
    #[test]
    fn counts_for_a_cell_not_stored_are_refused_naming_it() {
        let mut store = Store::open_in_memory().unwrap();
        let run = store
            .begin_run(&run_info(RunKind::Speed, "tlslab speed"))
            .unwrap();
        let cell = SpeedCell {
            counted: Some(CountedOperations {
                operations: 8,
                outcome: Outcome::Unsupported {
                    reason: "no valgrind".into(),
                },
            }),
            subject: crate::scenario::Subject::from_name("openssl").unwrap(),
            row: SpeedRow {
                primitive: Primitive::Sha256,
                operation: Operation::Hash,
                size_bytes: Some(64),
            },
            batch: 8,
            outcome: Outcome::Unsupported {
                reason: "counted only".into(),
            },
        };
        let error = store.save_speed_counts(run, &cell).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "run {run} has no speed cell {} on openssl to add counts to",
                cell.row.label()
            )
        );
        assert!(!store.counted_instructions(run, RunKind::Speed).unwrap());
        store.save_speed_cell(run, &cell).unwrap();
        assert!(store.counted_instructions(run, RunKind::Speed).unwrap());
    }
}
