//! `tlslab tunnel --setup`: each engine's connection set-up, of each kind
//! it measures, sampled one at a time through its
//! [`TunnelEngine::prepare_setup`] (an engine that has none is a row
//! saying why), each cell stored as it ends. The run's sampling options
//! apply to each engine's set-up as to a row. With `--measure
//! instructions` each new-tunnel set-up is counted too, under valgrind,
//! where its engine can be (WireGuard in process).
//!
//! [`TunnelEngine::prepare_setup`]: crate::workload::tunnel::TunnelEngine::prepare_setup

use std::sync::atomic::Ordering;

use anyhow::Result;

use super::session::Bar;
use super::study::Session;
use crate::measure::{self, Outcome, SamplingOptions};
use crate::scenario::tunnel::EngineId;
use crate::workload::counted::{count_instructions, CountOptions, CountedWork, Work};
use crate::workload::tunnel::setup::{SetupCell, SetupKind, SetupOutcome, SetupProbe, SetupSample};

/// Nothing to store per round: a set-up cell is stored when it ends.
struct SetupRounds;

impl measure::Observer<SetupSample> for SetupRounds {
    fn cell_finished(&mut self, _: usize, _: &SetupOutcome) -> Result<()> {
        Ok(())
    }

    fn round_finished(&mut self, round: u32, _active: usize, _finished: usize) {
        super::session::sigint_after_round(round);
    }
}

/// Samples the set-up of each of `engines` in turn and stores each cell,
/// then, with `count`, counts the new-tunnel set-ups under valgrind;
/// Ctrl-C keeps the cells (and the samples) taken before it.
pub(super) fn measure_setups(
    engines: &[EngineId],
    sampling: &SamplingOptions,
    count: Option<&CountOptions>,
    session: &mut Session,
) -> Result<Vec<SetupCell>> {
    let interrupt = std::sync::Arc::clone(session.interrupt());
    let mut cells = Vec::new();
    let planned = engines
        .iter()
        .flat_map(|&id| id.open().setup_kinds().iter().map(move |&kind| (id, kind)));
    for (id, kind) in planned {
        if interrupt.load(Ordering::Relaxed) {
            session.mark_interrupted(true);
            break;
        }
        let (covers, outcome, interrupted) = match id.open().prepare_setup(kind, &interrupt) {
            Err(_) if interrupt.load(Ordering::Relaxed) => {
                session.mark_interrupted(true);
                break;
            }
            Err(outcome) => (String::new(), outcome, false),
            Ok(SetupProbe { covers, probe }) => {
                let run = measure::sample(
                    vec![probe],
                    measure::Pairing::None,
                    sampling,
                    &interrupt,
                    &mut SetupRounds,
                )?;
                let outcome = run.outcomes.into_iter().next().expect("one cell");
                (covers.to_string(), outcome, run.interrupted)
            }
        };
        if interrupted && outcome.samples().is_empty() {
            session.mark_interrupted(true);
            break;
        }
        let cell = SetupCell {
            engine: id,
            kind,
            covers,
            outcome,
            counted: None,
        };
        session.save(|store, run_id| store.save_tunnel_setup(run_id, &cell));
        cells.push(cell);
        if interrupted {
            session.mark_interrupted(true);
            break;
        }
    }
    if let Some(options) = count.filter(|_| !session.interrupted()) {
        count_setups(&mut cells, options, session)?;
    }
    Ok(cells)
}

/// Counts the instructions of each engine's new-tunnel set-up under
/// valgrind (engines that cannot be counted: why not) and stores them
/// with its cell.
fn count_setups(
    cells: &mut [SetupCell],
    options: &CountOptions,
    session: &mut Session,
) -> Result<()> {
    // A set-up that could not be timed is not counted either.
    let connects: Vec<usize> = (0..cells.len())
        .filter(|&i| {
            cells[i].kind == SetupKind::Connect
                && cells[i].outcome.status() == measure::CellStatus::Measured
        })
        .collect();
    let countable: Vec<usize> = connects
        .iter()
        .copied()
        .filter(|&i| cells[i].engine.open().setup_uncountable().is_none())
        .collect();
    let work: Vec<CountedWork> = countable
        .iter()
        .map(|&i| {
            (
                Work::TunnelSetup {
                    engine: cells[i].engine,
                },
                None,
            )
        })
        .collect();
    let bar = Bar::counting(work.len() * options.samples, session.quiet());
    // No certificates: WireGuard's keys are made with its peers.
    let certs = crate::certs::CertCache::new(crate::certs::CertCache::default_dir());
    let counted = count_instructions(&work, &certs, options, session.interrupt(), &|done| {
        bar.0.set_position(done as u64)
    })?;
    bar.0.finish_and_clear();
    let mut counted = countable.into_iter().zip(counted).peekable();
    for i in connects {
        let cell = &mut cells[i];
        cell.counted = Some(match counted.next_if(|(at, _)| *at == i) {
            Some((_, counted)) => counted.outcome,
            None => Outcome::Unsupported {
                reason: cell
                    .engine
                    .open()
                    .setup_uncountable()
                    .unwrap_or("not counted")
                    .to_string(),
            },
        });
        let cell = &*cell;
        session.save(|store, run_id| store.save_tunnel_setup(run_id, cell));
    }
    Ok(())
}
