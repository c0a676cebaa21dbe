//! How `tlslab tunnel` samples its rows (`app::tunnel` plans the run and
//! reports it): the rows of every engine that interleaves readied at once
//! and sampled in ONE set of interleaved rounds, each cell and each
//! round's samples stored as they end; the rows of the other engines (a
//! real tunnel each) one at a time. Ctrl-C keeps every finished row and
//! the samples of rows under way. With `--cpu-features generic`, the rows
//! again in a generic-CPU child process ([`generic_cells`]); and the
//! order the report reads the rows in ([`in_run_order`]).

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};

use super::generic;
use super::session::Bar;
use super::study::{Session, StoringOutcomes};
use crate::cli::{ExportArgs, GenericPlan, TunnelArgs};
use crate::measure::{self, Outcome, Probe, SamplingOptions};
use crate::scenario::names::Named;
use crate::scenario::tunnel::{EngineId, TunnelScenario};
use crate::scenario::CpuFeatures;
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
                cpu_features: CpuFeatures::Native,
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
            cpu_features: CpuFeatures::Native,
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

/// The rows of `engines` again in a child process whose libraries see no
/// CPU features ([`generic`]): the engines whose cryptography can be
/// masked ([`TunnelEngine::cpu_masking`]: the inprocess engine's OpenSSL,
/// the OpenVPN daemons') run there, their rows "<engine> (generic)"; every
/// row of another engine (WireGuard's) says why it cannot be, or why the
/// engine cannot run it at all. The child plans and samples its rows as
/// this run did (its own interleaved rounds: a ratio between a native and
/// a generic row is of medians); the connection set-up stays native.
pub(super) fn generic_cells(
    args: &TunnelArgs,
    engines: &[EngineId],
    scenarios: &[TunnelScenario],
    session: &Session,
) -> Result<Vec<TunnelCell>> {
    let (maskable, unmaskable): (Vec<EngineId>, Vec<EngineId>) = engines
        .iter()
        .partition(|id| generic::impossible_reason(id.open().cpu_masking()).is_none());
    let mut cells = Vec::new();
    if !maskable.is_empty() {
        let plan = |database: &std::path::Path| {
            let mut child = args.clone();
            child.cpu_features = vec![CpuFeatures::Native];
            child.output.database = generic::child_database(database);
            child.output.exports = ExportArgs::default();
            child.quiet = true;
            child.engine = Some(maskable);
            child.setup = false;
            GenericPlan::Tunnel(Box::new(child))
        };
        let measured = generic::run_child(plan, session, |store| {
            store.load_tunnel_cells(store.latest_run_id().ok()??).ok()
        })?;
        cells.extend(measured.into_iter().flatten().map(|cell| TunnelCell {
            cpu_features: CpuFeatures::Generic,
            ..cell
        }));
    }
    for id in unmaskable {
        let engine = id.open();
        let cannot_mask = generic::impossible_reason(engine.cpu_masking()).unwrap_or_default();
        cells.extend(scenarios.iter().map(|scenario| {
            TunnelCell {
                engine: id,
                cpu_features: CpuFeatures::Generic,
                scenario: *scenario,
                outcome: Outcome::Unsupported {
                    reason: engine
                        .unsupported_reason(scenario)
                        .unwrap_or_else(|| cannot_mask.to_string()),
                },
                counted: None,
            }
        }));
    }
    Ok(cells)
}

/// Puts cells in the order the report reads them, live or from the store:
/// the native rows, then the generic-CPU ones; each set by engine in the
/// order `engines` names them (engines it does not name after), each
/// engine's rows in the order they were planned or stored.
pub(super) fn in_run_order(cells: &mut [TunnelCell], engines: &[EngineId]) {
    cells.sort_by_key(|cell| {
        let named = engines.iter().position(|&id| id == cell.engine);
        (cell.cpu_features, named.unwrap_or(usize::MAX))
    });
}

/// The engines a stored run names in its options, in their order (none
/// for a run stored before they were written).
pub(super) fn stored_engines(options_json: &str) -> Vec<EngineId> {
    let options: serde_json::Value = serde_json::from_str(options_json).unwrap_or_default();
    options["engines"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|name| crate::scenario::parse_name(name.as_str()?).ok())
        .collect()
}
