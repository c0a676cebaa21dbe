//! How `tlslab tunnel` samples its rows (`app::tunnel` plans the run and
//! reports it): the rows of every engine that interleaves readied at once
//! and sampled in ONE set of interleaved rounds, each cell and each
//! round's samples stored as they end; the rows of the other engines (a
//! real tunnel each) one at a time, each with its share of what is left
//! of the run's budget ([`RowBudget`]). Ctrl-C keeps every finished row
//! and the samples of rows under way. With `--cpu-features generic`, the
//! rows again in a generic-CPU child process ([`generic_cells`]); and the
//! order the report reads the rows in ([`in_run_order`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

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

/// The run's budget (`--max-total-time`) as the rows taken one at a time
/// (real tunnels) share it: a budget of their own, as long as the run's,
/// from when the first of them starts (the interleaved rows, before them,
/// cannot starve them), each row getting what is left over the rows still
/// to come, but at least its own `--max-time` and [`MIN_ROW_BUDGET`]. A
/// run with real engines can so take twice its budget and more. Without a budget, each row samples as
/// `--max-time` and the precision say. (Before, each real tunnel's row got
/// the whole budget: `--preset vpn-compare` with two real engines ran
/// nearly 10 minutes on an 80 s budget.)
/// The least budget a row taken one at a time gets: a real tunnel's
/// warm-up and first sample are each a whole transfer, which took 1-3 s
/// for 2 MB through OpenVPN with 64-byte packets on the loaded test VM.
const MIN_ROW_BUDGET: Duration = Duration::from_secs(5);

pub(super) struct RowBudget {
    deadline: Option<Instant>,
    rows_left: usize,
}

impl RowBudget {
    /// The budget of `rows` rows taken one at a time, the first of them
    /// starting at `started`.
    pub(super) fn new(sampling: &SamplingOptions, started: Instant, rows: usize) -> Self {
        Self {
            deadline: sampling.max_total_time.map(|budget| started + budget),
            rows_left: rows,
        }
    }

    /// The sampling options of the next row.
    fn next_row(&mut self, sampling: &SamplingOptions) -> SamplingOptions {
        let mut options = *sampling;
        if let Some(deadline) = self.deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            let share = left / self.rows_left.max(1) as u32;
            options.max_total_time = Some(share.max(sampling.max_time).max(MIN_ROW_BUDGET));
        }
        self.rows_left = self.rows_left.saturating_sub(1);
        options
    }
}

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
                    note: None,
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
    budget: &mut RowBudget,
    session: &mut Session,
    bar: &Bar,
) -> Result<Vec<TunnelCell>> {
    let interrupt = std::sync::Arc::clone(session.interrupt());
    let mut cells = Vec::new();
    for scenario in scenarios {
        let sampling = budget.next_row(sampling);
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
                    &sampling,
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
            child.no_setup = true;
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

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::RowBudget;
    use crate::measure::SamplingOptions;

    #[test]
    fn rows_taken_one_at_a_time_share_what_is_left_of_the_runs_budget() {
        let sampling = SamplingOptions {
            max_time: Duration::from_millis(100),
            max_total_time: Some(Duration::from_secs(60)),
            ..SamplingOptions::default()
        };
        // A third of the budget already spent (by earlier rows): 40 s left
        // for 4 rows.
        let started = Instant::now() - Duration::from_secs(20);
        let mut budget = RowBudget::new(&sampling, started, 4);
        let share = budget.next_row(&sampling).max_total_time.unwrap();
        assert!(
            share <= Duration::from_secs(10) && share > Duration::from_millis(9900),
            "{share:?}"
        );
        // Past the deadline, a row still gets the least budget of a row.
        let late = RowBudget::new(&sampling, started - Duration::from_secs(60), 2)
            .next_row(&sampling)
            .max_total_time;
        assert_eq!(late, Some(super::MIN_ROW_BUDGET));
        // Without a run budget, rows sample as before.
        let unbounded = SamplingOptions {
            max_total_time: None,
            ..sampling
        };
        let options = RowBudget::new(&unbounded, started, 3).next_row(&unbounded);
        assert_eq!(options, unbounded);
    }
}
