//! A handshake cell on the wire and over networks: its wire figures
//! (`wire`), and per network profile the model's answer and what a link
//! measured (`network`, `network_samples`). Written and read with the
//! cell's counted measures.

use anyhow::{Context, Result};
use rusqlite::{params, Connection, OptionalExtension};

use super::outcome_from_columns;
use crate::measure::{Outcome, Timed};
use crate::workload::network::{LinkSample, NetworkResult};
use crate::workload::wire::Wire;

/// Writes a cell's wire figures and network results (the caller commits).
pub(super) fn write_wire(
    connection: &Connection,
    cell_id: i64,
    wire: Option<&Wire>,
    network: &[NetworkResult],
) -> Result<()> {
    if let Some(w) = wire {
        connection.execute(
            "INSERT INTO wire (cell_id, client_bytes, server_bytes, client_records,
             server_records, client_flights, server_flights, round_trips, server_round_trips,
             client_packets, server_packets, datagrams, fragments, handshakes, bytes_spread,
             turns_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
            params![
                cell_id,
                w.client_bytes as i64,
                w.server_bytes as i64,
                w.client_records,
                w.server_records,
                w.client_flights,
                w.server_flights,
                w.round_trips,
                w.server_round_trips,
                w.client_packets,
                w.server_packets,
                w.datagrams,
                w.fragments,
                w.handshakes,
                w.bytes_spread as i64,
                serde_json::to_string(&w.turns)?,
            ],
        )?;
    }
    let mut result = connection.prepare(
        "INSERT INTO network (cell_id, profile, seq, profile_json, model_ms, model_json, link,
         status, reason) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    let mut sample = connection.prepare(
        "INSERT INTO network_samples (cell_id, profile, seq, latency_ns, client_cpu_ns,
         server_cpu_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for (seq, network) in network.iter().enumerate() {
        let label = &network.profile.label;
        let measured = network.measured.as_ref();
        result.execute(params![
            cell_id,
            label,
            seq as i64,
            serde_json::to_string(&network.profile)?,
            network.model.map(|m| m.ms),
            network
                .model
                .map(|m| serde_json::to_string(&m))
                .transpose()?,
            network.link,
            measured.map(|o| o.status()),
            measured.and_then(|o| o.reason()),
        ])?;
        for (seq, Timed { value, .. }) in measured
            .map(|o| o.samples())
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            sample.execute(params![
                cell_id,
                label,
                seq as i64,
                value.latency_ns as i64,
                value.client_cpu_ns as i64,
                value.server_cpu_ns as i64
            ])?;
        }
    }
    Ok(())
}

/// Reads a cell's wire figures and network results back.
pub(super) fn read_wire(
    connection: &Connection,
    cell_id: i64,
) -> Result<(Option<Wire>, Vec<NetworkResult>)> {
    let wire = connection
        .query_row(
            "SELECT client_bytes, server_bytes, client_records, server_records, client_flights,
                    server_flights, round_trips, server_round_trips, client_packets,
                    server_packets, datagrams, fragments, handshakes, bytes_spread, turns_json
             FROM wire WHERE cell_id = ?1",
            [cell_id],
            |row| {
                Ok((
                    Wire {
                        client_bytes: row.get::<_, i64>(0)? as u64,
                        server_bytes: row.get::<_, i64>(1)? as u64,
                        client_records: row.get(2)?,
                        server_records: row.get(3)?,
                        client_flights: row.get(4)?,
                        server_flights: row.get(5)?,
                        round_trips: row.get(6)?,
                        server_round_trips: row.get(7)?,
                        client_packets: row.get(8)?,
                        server_packets: row.get(9)?,
                        datagrams: row.get(10)?,
                        fragments: row.get(11)?,
                        handshakes: row.get(12)?,
                        bytes_spread: row.get::<_, i64>(13)? as u64,
                        turns: Vec::new(),
                    },
                    row.get::<_, String>(14)?,
                ))
            },
        )
        .optional()?
        .map(|(mut wire, turns)| -> Result<Wire> {
            wire.turns = serde_json::from_str(&turns).context("reading a cell's traced turns")?;
            Ok(wire)
        })
        .transpose()?;
    let mut statement = connection.prepare(
        "SELECT profile, profile_json, model_json, link, status, reason FROM network
         WHERE cell_id = ?1 ORDER BY seq",
    )?;
    let rows = statement
        .query_map([cell_id], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, Option<String>>(2)?,
                row.get::<_, Option<String>>(3)?,
                row.get::<_, Option<String>>(4)?,
                row.get::<_, Option<String>>(5)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut samples = connection.prepare(
        "SELECT latency_ns, client_cpu_ns, server_cpu_ns FROM network_samples
         WHERE cell_id = ?1 AND profile = ?2 ORDER BY seq",
    )?;
    let mut network = Vec::new();
    for (label, profile, model, link, status, reason) in rows {
        let measured = status
            .map(|status| -> Result<Outcome<LinkSample>> {
                outcome_from_columns(&status, reason, None, || {
                    Ok(samples
                        .query_map(params![cell_id, label], |row| {
                            Ok(LinkSample {
                                latency_ns: row.get::<_, i64>(0)? as u64,
                                client_cpu_ns: row.get::<_, i64>(1)? as u64,
                                server_cpu_ns: row.get::<_, i64>(2)? as u64,
                            })
                        })?
                        .enumerate()
                        .map(|(seq, value)| {
                            value.map(|value| Timed {
                                round: seq as u32,
                                value,
                            })
                        })
                        .collect::<rusqlite::Result<Vec<_>>>()?)
                })
            })
            .transpose()?;
        network.push(NetworkResult {
            profile: serde_json::from_str(&profile).context("reading a network profile")?,
            model: model
                .map(|m| serde_json::from_str(&m))
                .transpose()
                .context("reading a network model")?,
            link,
            measured,
        });
    }
    Ok((wire, network))
}
