//! The connection set-up table of a tunnel run (`tunnel --setup`): per
//! engine, the median CPU each side spends to establish a tunnel, wall
//! time, bytes and messages each way, with the samples it rests on and
//! what one sample covers (in process, or whole processes): those are not
//! the same kind of figure and the table says so row by row.

use serde::Serialize;

use crate::measure::{CellStatus, Outcome, Timed};
use crate::report::{Column, Columns, Table};
use crate::scenario::names::Named;
use crate::scenario::tunnel::EngineId;
use crate::stats::{self, Summary};
use crate::workload::counted::Instructions;
use crate::workload::tunnel::setup::{SetupCell, SetupKind, SetupSample};

/// One engine's set-up with its statistics.
#[derive(Debug, Clone, Serialize)]
pub struct SetupRow {
    pub engine: EngineId,
    pub kind: SetupKind,
    pub status: CellStatus,
    pub reason: Option<String>,
    /// What one sample covers.
    pub covers: String,
    pub sample_count: usize,
    pub precise: bool,
    /// The initiator's CPU per set-up, in microseconds.
    pub initiator_cpu_us: Option<Summary>,
    /// The responder's CPU per set-up, in microseconds.
    pub responder_cpu_us: Option<Summary>,
    /// From the start to both sides ready, in milliseconds.
    pub wall_ms: Option<Summary>,
    /// Medians over the samples.
    pub bytes_to_responder: Option<f64>,
    pub bytes_to_initiator: Option<f64>,
    pub messages_to_responder: Option<f64>,
    pub messages_to_initiator: Option<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<Timed<SetupSample>>,
    /// Counted under valgrind (`--measure instructions`): instructions per
    /// set-up of each side, or why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<SetupInstructions>,
}

/// A set-up's counted instructions.
#[derive(Debug, Clone, Serialize)]
pub struct SetupInstructions {
    pub status: CellStatus,
    pub reason: Option<String>,
    pub initiator: Option<Summary>,
    pub responder: Option<Summary>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<Timed<Instructions>>,
}

/// The instructions of a counted set-up, summarised.
fn instructions_of(counted: &Outcome<Instructions>) -> SetupInstructions {
    let samples = counted.samples();
    let summary = |side: fn(&Instructions) -> u64| {
        let values: Vec<f64> = samples.iter().map(|s| side(&s.value) as f64).collect();
        stats::summarize(&values)
    };
    SetupInstructions {
        status: counted.status(),
        reason: counted.reason().map(str::to_string),
        initiator: summary(|i| i.client),
        responder: summary(|i| i.server),
        samples: samples.to_vec(),
    }
}

/// Summarises one field of every sample.
fn summary_of(
    samples: &[Timed<SetupSample>],
    value: impl Fn(&SetupSample) -> f64,
) -> Option<Summary> {
    let values: Vec<f64> = samples.iter().map(|s| value(&s.value)).collect();
    stats::summarize(&values)
}

/// The rows, one per engine, in the order the cells were taken.
pub fn rows(cells: &[SetupCell]) -> Vec<SetupRow> {
    cells
        .iter()
        .map(|cell| {
            let samples = cell.samples();
            let median = |value: fn(&SetupSample) -> u64| {
                summary_of(samples, |s| value(s) as f64).map(|s| s.median)
            };
            let (reason, precise) = match &cell.outcome {
                Outcome::Measured { precise, .. } => (None, *precise),
                Outcome::Unsupported { reason } | Outcome::Failed { reason } => {
                    (Some(reason.clone()), false)
                }
            };
            SetupRow {
                engine: cell.engine,
                kind: cell.kind,
                status: cell.outcome.status(),
                reason,
                covers: cell.covers.clone(),
                sample_count: samples.len(),
                precise,
                initiator_cpu_us: summary_of(samples, |s| s.initiator_cpu_ns as f64 / 1e3),
                responder_cpu_us: summary_of(samples, |s| s.responder_cpu_ns as f64 / 1e3),
                wall_ms: summary_of(samples, |s| s.wall_ns as f64 / 1e6),
                bytes_to_responder: median(|s| s.bytes_to_responder),
                bytes_to_initiator: median(|s| s.bytes_to_initiator),
                messages_to_responder: median(|s| s.messages_to_responder),
                messages_to_initiator: median(|s| s.messages_to_initiator),
                samples: samples.to_vec(),
                instructions: cell.counted.as_ref().map(instructions_of),
            }
        })
        .collect()
}

/// A median with its 95% interval's half width, in percent.
fn with_spread(summary: &Summary) -> String {
    let spread = summary.median_ci95.relative_half_width(summary.median) * 100.0;
    let median = summary.median;
    let digits = if median >= 100.0 { 0 } else { 1 };
    format!("{median:.digits$} ±{spread:.1}%")
}

/// A set-up row's notes: what a sample covers, or why there is none.
fn notes(row: &SetupRow) -> String {
    let mut notes = Vec::new();
    match row.status {
        CellStatus::Measured => {
            if !row.precise {
                notes.push("precision not reached in time".to_string());
            }
            notes.push(row.covers.clone());
        }
        status => notes.push(format!(
            "{status}: {}",
            row.reason.as_deref().unwrap_or_default()
        )),
    }
    if let Some(reason) = row.instructions.as_ref().and_then(|i| i.reason.as_deref()) {
        notes.push(format!("not counted: {reason}"));
    }
    notes.join("; ")
}

/// The set-up table, or none when the run did not measure set-ups.
pub fn table(rows: &[SetupRow]) -> Option<Table> {
    if rows.is_empty() {
        return None;
    }
    let dash = || "—".to_string();
    let number = move |value: Option<f64>| value.map(|v| format!("{v:.0}")).unwrap_or_else(dash);
    let spread =
        move |summary: &Option<Summary>| summary.as_ref().map(with_spread).unwrap_or_else(dash);
    let mut columns = Columns::new()
        .with(Column::text("engine"), |row: &SetupRow| {
            row.engine.id().to_string()
        })
        .with(Column::text("set-up"), |row| row.kind.id().to_string())
        .with(Column::number("initiator CPU µs"), move |row| {
            spread(&row.initiator_cpu_us)
        })
        .with(Column::number("responder CPU µs"), move |row| {
            spread(&row.responder_cpu_us)
        })
        .with(Column::number("wall ms").priority(1), move |row| {
            row.wall_ms
                .as_ref()
                .map(|s| format!("{:.1}", s.median))
                .unwrap_or_else(dash)
        })
        .with(Column::number("bytes →").priority(1), move |row| {
            number(row.bytes_to_responder)
        })
        .with(Column::number("bytes ←").priority(1), move |row| {
            number(row.bytes_to_initiator)
        })
        .with(
            Column::number("messages → / ←").priority(2),
            move |row| match (row.messages_to_responder, row.messages_to_initiator) {
                (Some(to), Some(from)) => format!("{to:.0} / {from:.0}"),
                _ => dash(),
            },
        )
        .with(Column::number("n").priority(1), |row| {
            row.sample_count.to_string()
        });
    let counted = rows.iter().any(|row| row.instructions.is_some());
    if counted {
        // After the samples, before the notes: the counts per side.
        let count = move |summary: Option<&Option<Summary>>| {
            summary
                .and_then(Option::as_ref)
                .map(|s| format!("{:.0}", s.median))
                .unwrap_or_else(dash)
        };
        columns.push(Column::number("initiator instructions"), move |row| {
            count(row.instructions.as_ref().map(|i| &i.initiator))
        });
        columns.push(Column::number("responder instructions"), move |row| {
            count(row.instructions.as_ref().map(|i| &i.responder))
        });
    }
    let mut table = columns
        .with(Column::notes("notes"), notes)
        .table(rows)
        .titled("Connection set-up (per tunnel: median ±95% CI; → is initiator to responder)");
    table.notes.push(
        "The initiator is WireGuard's handshake initiator, OpenVPN's TLS client, or namespace A for a static key. connect: a new tunnel — in process, the handshake's calls on the thread's CPU clock; for OpenVPN, each openvpn process's whole CPU from exec to ready (/proc/PID/schedstat), start-up included (openvpn, with a static key and no handshake, is that start-up). renegotiate: the processes' CPU across one renegotiation of a running tunnel, the handshake without the start-up.".to_string(),
    );
    if counted {
        table.notes.push(
            "Instructions: per set-up and side, counted under valgrind (the median of the samples), in process only.".to_string(),
        );
    }
    Some(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_up_row_has_medians_per_side_and_says_what_it_covers_or_why_not() {
        let sample = |round: u32, cpu: u64| Timed {
            round,
            value: SetupSample {
                initiator_cpu_ns: cpu,
                responder_cpu_ns: 2 * cpu,
                wall_ns: 4 * cpu,
                bytes_to_responder: 276,
                bytes_to_initiator: 92,
                messages_to_responder: 3,
                messages_to_initiator: 1,
            },
        };
        let cells = [
            SetupCell {
                engine: EngineId::Wireguard,
                kind: SetupKind::Connect,
                covers: "in process: the handshake".into(),
                outcome: Outcome::Measured {
                    samples: vec![sample(0, 100_000), sample(1, 120_000), sample(2, 110_000)],
                    precise: true,
                    note: None,
                },
                counted: None,
            },
            SetupCell {
                engine: EngineId::Inprocess,
                kind: SetupKind::Connect,
                covers: String::new(),
                outcome: Outcome::Unsupported {
                    reason: "no control channel".into(),
                },
                counted: None,
            },
        ];
        let rows = rows(&cells);
        assert_eq!(rows[0].initiator_cpu_us.unwrap().median, 110.0);
        assert_eq!(rows[0].responder_cpu_us.unwrap().median, 220.0);
        assert_eq!(rows[0].bytes_to_responder, Some(276.0));
        let table = table(&rows).unwrap();
        assert_eq!(table.rows[0][0], "wireguard");
        assert_eq!(table.rows[0][1], "connect");
        assert!(table.rows[0][2].starts_with("110"), "{:?}", table.rows[0]);
        assert_eq!(table.rows[0][7], "3 / 1");
        assert!(table.rows[0][9].contains("in process"));
        assert_eq!(table.rows[1][2], "—");
        assert!(table.rows[1][9].contains("unsupported: no control channel"));
        assert!(super::table(&[]).is_none());

        // Counted: two more columns before the notes.
        let counted = SetupCell {
            counted: Some(Outcome::Measured {
                samples: vec![Timed {
                    round: 0,
                    value: Instructions {
                        client: 1_500_000,
                        server: 1_400_000,
                    },
                }],
                precise: true,
                note: None,
            }),
            ..cells[0].clone()
        };
        let table = super::table(&super::rows(&[counted])).unwrap();
        assert_eq!(table.headers()[9], "initiator instructions");
        assert_eq!(table.rows[0][9], "1500000");
        assert_eq!(table.rows[0][10], "1400000");
        assert_eq!(table.headers()[11], "notes");
        assert_eq!(table.columns.len(), table.rows[0].len());
    }
}
