//! The counted measures of handshake cells (`--measure instructions,memory`):
//! per cell and measure, how counting ended (`counts`), every sample per
//! side (`count_samples`) and the instructions per category
//! (`count_breakdown`); and the wire figures and network results, kept
//! with them ([`super::wire`]). Bulk and tunnel cells keep their counted
//! samples in tables of one shape (sender, receiver): written and read here.

use anyhow::{bail, Context, Result};
use rusqlite::{params, Connection};

use super::{outcome_from_columns, precise_column, Store};
use crate::heap::HeapSample;
use crate::measure::Timed;
use crate::workload::counted::{CategoryCount, Counts, Instructions};
use crate::workload::handshake::CellResult;

impl Store {
    /// Returns true if and only if some cell of run `run_id`, of `kind`,
    /// counted instructions (one query, no cell read).
    pub fn counted_instructions(&self, run_id: i64, kind: super::RunKind) -> Result<bool> {
        use super::RunKind;
        let (counts, cells, only_instructions) = match kind {
            RunKind::Handshake | RunKind::Cost => ("counts", "cells", true),
            RunKind::Speed => ("speed_counts", "speed_cells", false),
            RunKind::Bulk => ("bulk_counts", "bulk_cells", false),
            RunKind::Tunnel => ("tunnel_counts", "tunnel_cells", false),
            RunKind::Capacity | RunKind::Load => return Ok(false),
        };
        let measure = if only_instructions {
            " AND k.measure = 'instructions'"
        } else {
            ""
        };
        Ok(self.connection.query_row(
            &format!(
                "SELECT EXISTS (SELECT 1 FROM {counts} k JOIN {cells} c ON c.id = k.cell_id
                 WHERE c.run_id = ?1{measure})"
            ),
            [run_id],
            |row| row.get(0),
        )?)
    }

    /// Adds a cell's counted measures to the cell stored for it in `run_id`
    /// (by its label and backend), replacing any stored before.
    pub fn save_counts(&mut self, run_id: i64, cell: &CellResult) -> Result<()> {
        super::cells::save_counts(&mut self.connection, run_id, cell)
    }
}

/// Removes a cell's counted measures, wire figures and network results
/// (the caller commits).
pub(super) fn delete_counts(connection: &Connection, cell_id: i64) -> Result<()> {
    super::cells::delete_cell_rows(
        connection,
        &[
            "counts",
            "count_samples",
            "count_breakdown",
            "wire",
            "network",
            "network_samples",
        ],
        cell_id,
    )
}

/// Writes a cell's counted measures (the caller commits).
pub(super) fn write_counts(connection: &Connection, cell_id: i64, counts: &Counts) -> Result<()> {
    let mut status = connection.prepare(
        "INSERT INTO counts (cell_id, measure, status, reason, precise) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    let mut sample = connection.prepare(
        "INSERT INTO count_samples (cell_id, series, seq, client, server) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    if let Some(outcome) = &counts.instructions {
        status.execute(params![
            cell_id,
            "instructions",
            outcome.status(),
            outcome.reason(),
            precise_column(outcome)
        ])?;
        for (seq, Timed { value, .. }) in outcome.samples().iter().enumerate() {
            sample.execute(params![
                cell_id,
                "instructions",
                seq as i64,
                value.client as i64,
                value.server as i64
            ])?;
        }
    }
    if let Some(outcome) = &counts.memory {
        status.execute(params![
            cell_id,
            "memory",
            outcome.status(),
            outcome.reason(),
            precise_column(outcome)
        ])?;
        for (seq, Timed { value, .. }) in outcome.samples().iter().enumerate() {
            for (series, client, server) in [
                (
                    "peak_heap_bytes",
                    value.client_peak_bytes,
                    value.server_peak_bytes,
                ),
                (
                    "retained_bytes",
                    value.client_retained_bytes,
                    value.server_retained_bytes,
                ),
            ] {
                sample.execute(params![
                    cell_id,
                    series,
                    seq as i64,
                    client as i64,
                    server as i64
                ])?;
            }
        }
    }
    let mut category = connection.prepare(
        "INSERT INTO count_breakdown (cell_id, side, category, instructions) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for count in &counts.breakdown {
        category.execute(params![
            cell_id,
            count.side,
            count.category,
            count.instructions
        ])?;
    }
    super::wire::write_wire(connection, cell_id, counts.wire.as_ref(), &counts.network)
}

/// Reads a cell's counted measures back.
pub(super) fn read_counts(connection: &Connection, cell_id: i64) -> Result<Counts> {
    let mut statuses = connection.prepare(
        "SELECT measure, status, reason, precise FROM counts WHERE cell_id = ?1 ORDER BY measure",
    )?;
    let rows = statuses
        .query_map([cell_id], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, Option<String>>(2)?,
                row.get::<_, Option<bool>>(3)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let series = |name: &str| -> Result<Vec<(u64, u64)>> {
        let mut query = connection.prepare(
            "SELECT client, server FROM count_samples WHERE cell_id = ?1 AND series = ?2
             ORDER BY seq",
        )?;
        let values = query
            .query_map(params![cell_id, name], |row| {
                Ok((row.get::<_, i64>(0)? as u64, row.get::<_, i64>(1)? as u64))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(values)
    };
    let mut counts = Counts::default();
    for (measure, status, reason, precise) in rows {
        match measure.as_str() {
            "instructions" => {
                counts.instructions = Some(outcome_from_columns(&status, reason, precise, || {
                    Ok(series("instructions")?
                        .into_iter()
                        .enumerate()
                        .map(|(seq, (client, server))| Timed {
                            round: seq as u32,
                            value: Instructions { client, server },
                        })
                        .collect())
                })?)
            }
            "memory" => {
                counts.memory = Some(outcome_from_columns(&status, reason, precise, || {
                    let peaks = series("peak_heap_bytes")?;
                    let kept = series("retained_bytes")?;
                    Ok(peaks
                        .into_iter()
                        .zip(kept)
                        .enumerate()
                        .map(
                            |(seq, ((client_peak, server_peak), (client_kept, server_kept)))| {
                                Timed {
                                    round: seq as u32,
                                    value: HeapSample {
                                        client_peak_bytes: client_peak,
                                        server_peak_bytes: server_peak,
                                        client_retained_bytes: client_kept,
                                        server_retained_bytes: server_kept,
                                    },
                                }
                            },
                        )
                        .collect())
                })?)
            }
            other => bail!("a stored cell has counts of an unknown measure '{other}'"),
        }
    }
    let mut categories = connection.prepare(
        "SELECT side, category, instructions FROM count_breakdown WHERE cell_id = ?1
         ORDER BY side, category",
    )?;
    counts.breakdown = categories
        .query_map([cell_id], |row| {
            Ok(CategoryCount {
                side: row.get(0)?,
                category: row.get(1)?,
                instructions: row.get(2)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()
        .context("reading a cell's breakdown")?;
    (counts.wire, counts.network) = super::wire::read_wire(connection, cell_id)?;
    Ok(counts)
}

/// Writes each counted sample's instructions per side into `table`
/// (`bulk_count_samples` or `tunnel_count_samples`: one row per sample,
/// the sender's and the receiver's; the caller commits).
pub(super) fn write_side_samples(
    connection: &Connection,
    table: &str,
    cell_id: i64,
    samples: &[Timed<Instructions>],
) -> Result<()> {
    let mut insert = connection.prepare(&format!(
        "INSERT INTO {table} (cell_id, seq, sender, receiver) VALUES (?1, ?2, ?3, ?4)"
    ))?;
    for (seq, Timed { value, .. }) in samples.iter().enumerate() {
        insert.execute(params![
            cell_id,
            seq as i64,
            value.client as i64,
            value.server as i64
        ])?;
    }
    Ok(())
}

/// Reads back what [`write_side_samples`] wrote into `table` for a cell,
/// in order, each numbered by its place.
pub(super) fn read_side_samples(
    connection: &Connection,
    table: &str,
    cell_id: i64,
) -> Result<Vec<Timed<Instructions>>> {
    let mut query = connection.prepare(&format!(
        "SELECT seq, sender, receiver FROM {table} WHERE cell_id = ?1 ORDER BY seq"
    ))?;
    let samples = query
        .query_map([cell_id], |r| {
            Ok(Timed {
                round: r.get(0)?,
                value: Instructions {
                    client: r.get::<_, i64>(1)? as u64,
                    server: r.get::<_, i64>(2)? as u64,
                },
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(samples)
}
