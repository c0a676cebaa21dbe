//! The capacity view (`handshake --capacity`): per backend and scenario,
//! one line per thread count with the handshakes per second measured, how
//! well they scale, the server's CPU per handshake and the capacity it
//! implies, beside `cost`'s one-core model times the threads.

use super::handshake::AXES;
use super::markup::format_us;
use super::{Column, Columns, Document, Table};
use crate::backend::LibraryInfo;
use crate::host::HostInfo;
use crate::workload::capacity::{CapacityCell, Step};

/// A capacity run, as the command prints it and `report` shows it again.
pub struct CapacityReport<'a> {
    pub run_id: Option<i64>,
    pub complete: bool,
    pub host: &'a HostInfo,
    pub libraries: &'a [LibraryInfo],
    pub cells: &'a [CapacityCell],
    /// The 1-minute load average when the run started, if known.
    pub load_average: Option<f64>,
}

/// The model's handshakes per second on the cores a step counts.
fn modelled(cell: &CapacityCell, step: &Step, cores: usize) -> Option<f64> {
    cell.modelled_capacity_per_core()
        .map(|per_core| per_core * step.capacity_cores(cores) as f64)
}

/// What a row with more threads than the machine has cores says.
fn beyond_cores(step: &Step, cores: usize) -> Option<String> {
    (step.threads > cores).then(|| {
        format!(
            "{} threads on {cores} cores: the capacity counts {cores} cores",
            step.threads
        )
    })
}

fn rate(value: Option<f64>) -> String {
    value
        .map(|v| format!("{v:.0}"))
        .unwrap_or_else(|| "—".to_string())
}

impl CapacityReport<'_> {
    pub fn document(&self) -> Document {
        Document {
            heading: super::heading(self.host, self.libraries),
            tables: vec![self.table()],
            records: self.records(),
            data: super::json_with(
                super::provenance_json(
                    self.run_id,
                    self.complete,
                    self.host,
                    self.libraries,
                    None,
                    None,
                ),
                serde_json::json!({
                    "load_average": self.load_average,
                    "cells": self
                        .cells
                        .iter()
                        .map(|cell| cell_json(cell, self.host.cores))
                        .collect::<Vec<_>>(),
                }),
            ),
            footer: self
                .load_note()
                .into_iter()
                .chain(super::run_notes(None, None, self.complete))
                .collect(),
            figures: super::plot::capacity_figures(self.cells, self.host.cores),
        }
    }

    /// What the machine was doing besides: the measured handshakes/s and
    /// their scaling need idle cores, the CPU-time columns much less.
    fn load_note(&self) -> Option<String> {
        let load = self.load_average?;
        let cores = self.host.cores;
        Some(if load >= 0.5 {
            format!("Load average when the run started: {load:.2} on {cores} cores. Other work shared the cores, so handshakes/s and scaling are below what idle cores give; the server CPU per handshake, and the capacity drawn from it, depend on it much less.")
        } else {
            format!("Load average when the run started: {load:.2} on {cores} cores.")
        })
    }

    /// The table a person reads: the axes, then per thread count the
    /// measured rate, its scaling, the server's CPU and capacity, the model.
    /// Narrow terminals drop the handshake count first, then the server
    /// CPU, the model and the scaling; the measured rate and the capacity stay.
    fn table(&self) -> Table {
        let cores = self.host.cores;
        // A cell's steps, then (`None`) the line saying why it stopped.
        let mut lines: Vec<(&CapacityCell, Option<&Step>)> = Vec::new();
        for cell in self.cells {
            lines.extend(cell.steps.iter().map(|step| (cell, Some(step))));
            if cell.reason.is_some() {
                lines.push((cell, None));
            }
        }
        type Line<'c> = (&'c CapacityCell, Option<&'c Step>);
        let per_step = |figure: fn(&CapacityCell, &Step, usize) -> String| {
            move |(cell, step): &Line| {
                step.map_or_else(|| "—".to_string(), |step| figure(cell, step, cores))
            }
        };
        let mut table = Columns::new()
            .with(Column::axis("backend"), |(cell, _): &Line| {
                cell.subject.to_string()
            })
            .with_axes(&AXES, |(cell, _)| &cell.scenario)
            .with(
                Column::number("threads"),
                per_step(|_, step, _| step.threads.to_string()),
            )
            .with(
                Column::number("handshakes/s measured"),
                per_step(|_, step, _| format!("{:.0}", step.handshakes_per_second())),
            )
            .with(
                Column::number("scaling vs 1 thread").priority(1),
                per_step(|cell, step, _| {
                    cell.scaling_efficiency(step)
                        .map(|e| format!("{:.0}%", e * 100.0))
                        .unwrap_or_else(|| "—".to_string())
                }),
            )
            .with(
                Column::number("server CPU µs per handshake").priority(3),
                per_step(|_, step, _| {
                    step.server_cpu_per_handshake_ns()
                        .map(|ns| format_us(ns / 1000.0))
                        .unwrap_or_else(|| "—".to_string())
                }),
            )
            .with(
                Column::number("server capacity handshakes/s"),
                per_step(|_, step, cores| rate(step.server_capacity_per_second(cores))),
            )
            .with(
                Column::number("model × threads handshakes/s").priority(2),
                per_step(|cell, step, cores| rate(modelled(cell, step, cores))),
            )
            .with(
                Column::number("handshakes counted").priority(4),
                per_step(|_, step, _| step.handshakes.to_string()),
            )
            .with(Column::notes("notes"), move |(cell, step)| match step {
                Some(step) => beyond_cores(step, cores).unwrap_or_default(),
                None => format!(
                    "{}: {}",
                    cell.status,
                    cell.reason.as_deref().unwrap_or_default()
                ),
            })
            .table(&lines)
            .titled("Server capacity: threads handshaking at once");
        table.empty = Some("no row ran".to_string());
        table.notes.push("handshakes/s measured: handshakes that finished inside the window, all threads together, over the window's wall-clock time; each thread does both sides of its handshakes over memory, so this counts client and server work.".to_string());
        table.notes.push("scaling: handshakes/s over threads × the one-thread row's (100%: every thread as fast as one alone).".to_string());
        table.notes.push("server CPU: the thread's CPU time inside the server's calls (the handshake's CPU time split as the wall time inside each side's calls), mean per handshake; server capacity: the threads as cores, at most the machine's cores, / server CPU per handshake: what a server with that many cores could answer, the client's work left out (threads beyond the cores share them and add no capacity).".to_string());
        table.notes.push("model × threads: `tlslab cost`'s one-core model (counted operations × primitive costs measured in this run) times the same cores; it charges the public-key and key-derivation operations only.".to_string());
        let most = self
            .cells
            .iter()
            .flat_map(|c| c.steps.iter().map(|s| s.threads))
            .max()
            .unwrap_or(0);
        if most > cores {
            table.notes.push(format!(
                "This machine has {cores} cores: rows with more threads share them, so their handshakes/s cannot keep scaling, and their capacity counts {cores} cores."
            ));
        }
        table
    }

    /// One line per step (and per cell without steps) with every figure (CSV).
    fn records(&self) -> Table {
        let mut table = Table::records([
            "label",
            "backend",
            "status",
            "reason",
            "threads",
            "handshakes",
            "window_ns",
            "handshakes_per_s",
            "scaling_efficiency",
            "server_cpu_ns_per_handshake",
            "client_cpu_ns_per_handshake",
            "server_capacity_per_s",
            "modelled_server_ns",
            "modelled_capacity_per_s",
            "capacity_cores",
        ]);
        let optional = |value: Option<f64>| value.map(|v| format!("{v:.4}")).unwrap_or_default();
        let cores = self.host.cores;
        for cell in self.cells {
            let fields = |step: Option<&Step>| {
                vec![
                    cell.scenario.label(),
                    cell.subject.to_string(),
                    cell.status.to_string(),
                    cell.reason.clone().unwrap_or_default(),
                    step.map(|s| s.threads.to_string()).unwrap_or_default(),
                    step.map(|s| s.handshakes.to_string()).unwrap_or_default(),
                    step.map(|s| s.window_ns.to_string()).unwrap_or_default(),
                    optional(step.map(Step::handshakes_per_second)),
                    optional(step.and_then(|s| cell.scaling_efficiency(s))),
                    optional(step.and_then(Step::server_cpu_per_handshake_ns)),
                    optional(step.and_then(client_cpu_per_handshake_ns)),
                    optional(step.and_then(|s| s.server_capacity_per_second(cores))),
                    optional(cell.modelled_server_ns),
                    optional(step.and_then(|s| modelled(cell, s, cores))),
                    step.map(|s| s.capacity_cores(cores).to_string())
                        .unwrap_or_default(),
                ]
            };
            if cell.steps.is_empty() {
                table.rows.push(fields(None));
            }
            for step in &cell.steps {
                table.rows.push(fields(Some(step)));
            }
        }
        table
    }
}

fn client_cpu_per_handshake_ns(step: &Step) -> Option<f64> {
    (step.handshakes > 0).then(|| step.client_cpu_ns as f64 / step.handshakes as f64)
}

/// A cell in the JSON export: what was stored and the figures drawn from
/// it on a machine of `cores`.
fn cell_json(cell: &CapacityCell, cores: usize) -> serde_json::Value {
    serde_json::json!({
        "label": cell.scenario.label(),
        "backend": cell.subject,
        "scenario": cell.scenario,
        "status": cell.status,
        "reason": cell.reason,
        "modelled_server_ns": cell.modelled_server_ns,
        "modelled_capacity_per_core": cell.modelled_capacity_per_core(),
        "steps": cell.steps.iter().map(|step| serde_json::json!({
            "threads": step.threads,
            "handshakes": step.handshakes,
            "window_ns": step.window_ns,
            "server_cpu_ns": step.server_cpu_ns,
            "client_cpu_ns": step.client_cpu_ns,
            "handshakes_per_s": step.handshakes_per_second(),
            "scaling_efficiency": cell.scaling_efficiency(step),
            "server_cpu_ns_per_handshake": step.server_cpu_per_handshake_ns(),
            "capacity_cores": step.capacity_cores(cores),
            "server_capacity_per_s": step.server_capacity_per_second(cores),
            "modelled_capacity_per_s": modelled(cell, step, cores),
        })).collect::<Vec<_>>(),
    })
}
