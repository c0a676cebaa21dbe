//! `tlslab tunnel --setup`: each engine's connection set-up, of each kind
//! it measures, sampled one at a time through its
//! [`TunnelEngine::prepare_setup`] (an engine that has none is a row
//! saying why), each cell stored as it ends. The run's sampling options apply to each engine's set-up as to
//! a row.
//!
//! [`TunnelEngine::prepare_setup`]: crate::workload::tunnel::TunnelEngine::prepare_setup

use std::sync::atomic::Ordering;

use anyhow::Result;

use super::study::Session;
use crate::measure::{self, SamplingOptions};
use crate::scenario::tunnel::EngineId;
use crate::workload::tunnel::setup::{SetupCell, SetupOutcome, SetupProbe, SetupSample};

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

/// Samples the set-up of each of `engines` in turn and stores each cell;
/// Ctrl-C keeps the cells (and the samples) taken before it.
pub(super) fn measure_setups(
    engines: &[EngineId],
    sampling: &SamplingOptions,
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
        };
        session.save(|store, run_id| store.save_tunnel_setup(run_id, &cell));
        cells.push(cell);
        if interrupted {
            session.mark_interrupted(true);
            break;
        }
    }
    Ok(cells)
}
