//! What one sample of the counted breakdown (`cost --breakdown`) does: a
//! real handshake on an instrumented rustls backend, whose provider calls
//! are timed and tallied per category, averaged per handshake into the
//! model's [`Breakdown`] of each side's time. The sampling lives here, the
//! breakdown itself (a pure figure) in `model`.

use std::sync::atomic::AtomicBool;

use anyhow::Result;

use crate::backend::rustls::instrument;
use crate::backend::Backend;
use crate::certs::Credentials;
use crate::measure::{self, verify, Pairing, Probe, Quietly, SamplingOptions};
use crate::model::{Breakdown, OpsPerHandshake};
use crate::scenario::operations::Category;
use crate::scenario::HandshakeScenario;
use crate::scenario::Side;
use crate::workload::handshake::Sample;

/// Counted breakdown: real handshakes on an instrumented rustls backend,
/// sampled as every cell is, averaged per handshake. Also returns the
/// operation counts per handshake and the mean wall time of a whole
/// handshake (both sides and the harness), an independent check on the
/// sides' totals.
pub fn counted_breakdown(
    backend: &dyn Backend,
    scenario: &HandshakeScenario,
    credentials: &Credentials,
    options: &SamplingOptions,
    interrupt: &AtomicBool,
) -> Result<(Vec<Breakdown>, OpsPerHandshake, f64)> {
    let mut handshaker = backend.handshaker(scenario, credentials)?;
    instrument::take_tally();
    let (mut client_ns, mut server_ns, mut wall_ns, mut handshakes) = (0u64, 0u64, 0u64, 0usize);
    let probe: Probe<Sample> = Box::new(|| {
        let sample = handshaker.handshake().map_err(|e| format!("{e:#}"))?;
        verify::check(scenario, &sample.negotiated, true).map_err(|e| e.to_string())?;
        client_ns += sample.client.wall_ns;
        server_ns += sample.server.wall_ns;
        wall_ns += sample.wall_ns;
        handshakes += 1;
        Ok(Sample {
            wall_ns: sample.wall_ns,
            client_ns: sample.client.wall_ns,
            server_ns: sample.server.wall_ns,
            client_cpu_ns: sample.client.cpu_ns,
            server_cpu_ns: sample.server.cpu_ns,
        })
    });
    let run = measure::sample(vec![probe], Pairing::None, options, interrupt, &mut Quietly)?;
    if let Some(reason) = run.outcomes[0].reason() {
        anyhow::bail!("{reason}");
    }
    let tally = instrument::take_tally();
    let n = handshakes.max(1) as f64;
    let per_side = |side: Side, total: u64| {
        let categories = Category::ALL
            .iter()
            .map(|c| {
                (
                    *c,
                    tally.category_ns.get(&(side, *c)).copied().unwrap_or(0) as f64 / n,
                )
            })
            .collect();
        Breakdown::new(side, "counted", total as f64 / n, categories, handshakes)
    };
    let ops = tally
        .ops
        .iter()
        .map(|(key, count)| (*key, *count as f64 / n))
        .collect();
    Ok((
        vec![
            per_side(Side::Client, client_ns),
            per_side(Side::Server, server_ns),
        ],
        ops,
        wall_ns as f64 / n,
    ))
}
