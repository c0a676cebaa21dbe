//! How `tlslab tunnel` samples its rows (`app::tunnel` plans the run and
//! reports it): the rows of every engine that interleaves readied at once
//! and sampled in ONE set of interleaved rounds, each cell and each
//! round's samples stored as they end; the rows of the other engines (a
//! real tunnel each) one at a time. Ctrl-C keeps every finished row and
//! the samples of rows under way.

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};

use super::session::Bar;
use super::study::{Session, StoringOutcomes};
use crate::measure::{self, Outcome, Probe, SamplingOptions};
use crate::scenario::names::Named;
use crate::scenario::tunnel::{EngineId, TunnelScenario};
use crate::workload::tunnel::{
    EngineOptions, EngineRig, TunnelCell, TunnelEngine, TunnelOutcome, TunnelSample,
};

/// A row readied by its engine, or the outcome that says why it cannot run.
fn ready<'rig>(
    engine: &dyn TunnelEngine,
    rig: &'rig dyn EngineRig,
    scenario: &TunnelScenario,
    interrupt: &'rig AtomicBool,
) -> Result<Probe<'rig, TunnelSample>, TunnelOutcome> {
    if let Some(reason) = engine.unsupported_reason(scenario) {
        return Err(Outcome::Unsupported { reason });
    }
    rig.prepare(scenario, interrupt)
}

/// The rows of every engine in `engines` (each of which interleaves)
/// readied at once, one rig per engine kept for the run, and sampled in
/// ONE set of interleaved rounds; each cell stored as it finishes, each
/// round's samples as the round ends.
pub(super) fn sample_interleaved(
    engines: &[EngineId],
    options: &EngineOptions,
    scenarios: &[TunnelScenario],
    sampling: &SamplingOptions,
    session: &mut Session,
    bar: &Bar,
) -> Result<Vec<TunnelCell>> {
    if engines.is_empty() {
        return Ok(Vec::new());
    }
    let rigs = engines
        .iter()
        .map(|&id| {
            let engine = id.open();
            let rig = engine
                .start(options)
                .with_context(|| format!("starting the {} engine", id.id()))?;
            Ok((engine, rig))
        })
        .collect::<Result<Vec<_>>>()?;
    let interrupt = std::sync::Arc::clone(session.interrupt());
    let mut cells = Vec::new();
    let mut probes = Vec::new();
    let mut probe_cell = Vec::new();
    'engines: for (engine, rig) in &rigs {
        for scenario in scenarios {
            let mut cell = TunnelCell {
                engine: engine.id(),
                scenario: *scenario,
                outcome: Outcome::Measured {
                    samples: Vec::new(),
                    precise: false,
                },
                counted: None,
            };
            match ready(*engine, rig.as_ref(), scenario, &interrupt) {
                Ok(probe) => {
                    probe_cell.push(cells.len());
                    probes.push(probe);
                }
                // Ctrl-C while readying: the sampler stops at once.
                Err(_) if interrupt.load(Ordering::Relaxed) => break 'engines,
                Err(outcome) => {
                    cell.outcome = outcome;
                    session.save(|store, run_id| store.save_tunnel_cell(run_id, &cell));
                }
            }
            cells.push(cell);
        }
    }
    let already = cells.len() - probes.len();
    let run = measure::sample(
        probes,
        measure::Pairing::None,
        sampling,
        &interrupt,
        &mut StoringOutcomes {
            cells: &mut cells,
            probe_cell: &probe_cell,
            session,
            bar,
            already,
            label: |cell| format!("{} {}", cell.engine.id(), cell.scenario.label()),
            outcome: |cell| &mut cell.outcome,
            save: |store, run_id, cell| store.save_tunnel_cell(run_id, cell),
            save_samples: |store, run_id, taken| store.save_tunnel_samples(run_id, taken),
            store_rounds: true,
        },
    )?;
    session.save(|store, run_id| store.save_rounds(run_id, &run.rounds));
    session.mark_interrupted(run.interrupted);
    Ok(cells)
}

/// The rounds of a row sampled on its own: nothing to store until the row
/// ends, but the test hook that stops a run after a known round is called.
struct RowRounds;

impl measure::Observer<TunnelSample> for RowRounds {
    fn cell_finished(&mut self, _: usize, _: &TunnelOutcome) -> Result<()> {
        Ok(())
    }

    fn round_finished(&mut self, round: u32, _active: usize, _finished: usize) {
        super::session::sigint_after_round(round);
    }
}

/// An engine's rows one at a time (readied, sampled, torn down), each
/// stored as it ends; a row Ctrl-C stops keeps the samples it had, a row
/// it stops before its first sample is left out.
pub(super) fn sample_row_by_row(
    engine: &dyn TunnelEngine,
    rig: &dyn EngineRig,
    scenarios: &[TunnelScenario],
    sampling: &SamplingOptions,
    session: &mut Session,
    bar: &Bar,
) -> Result<Vec<TunnelCell>> {
    let interrupt = std::sync::Arc::clone(session.interrupt());
    let mut cells = Vec::new();
    for scenario in scenarios {
        if interrupt.load(Ordering::Relaxed) {
            session.mark_interrupted(true);
            return Ok(cells);
        }
        let name = format!("{} {}", engine.id().id(), scenario.label());
        bar.0.set_message(name.clone());
        let (outcome, interrupted) = match ready(engine, rig, scenario, &interrupt) {
            Err(_) if interrupt.load(Ordering::Relaxed) => {
                session.mark_interrupted(true);
                return Ok(cells);
            }
            Err(outcome) => (outcome, false),
            Ok(probe) => {
                let run = measure::sample(
                    vec![probe],
                    measure::Pairing::None,
                    sampling,
                    &interrupt,
                    &mut RowRounds,
                )?;
                let outcome = run.outcomes.into_iter().next().expect("one cell");
                if run.interrupted && outcome.samples().is_empty() {
                    session.mark_interrupted(true);
                    return Ok(cells);
                }
                (outcome, run.interrupted)
            }
        };
        let cell = TunnelCell {
            engine: engine.id(),
            scenario: *scenario,
            outcome,
            counted: None,
        };
        bar.failed(&name, &cell.outcome);
        session.save(|store, run_id| store.save_tunnel_cell(run_id, &cell));
        cells.push(cell);
        bar.0.inc(1);
        if interrupted {
            session.mark_interrupted(true);
            return Ok(cells);
        }
    }
    Ok(cells)
}
