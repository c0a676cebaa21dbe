//! What `handshake` adds beside its time and counts: every measured row's
//! handshake traced on the wire, the network model of each row over each
//! `--network` profile, and with `--link` the rows measured over an
//! emulated link; each cell stored again with them.

use anyhow::Result;
use clap::ValueEnum;
use serde::Serialize;

use super::session::usage;
use super::study::Session;
use crate::certs::CertCache;
use crate::cli::{HandshakeArgs, Link};
use crate::scenario::network::{parse_profiles, NetworkProfile};
use crate::scenario::presets::PresetNetwork;
use crate::workload::annotate::model_cells;
use crate::workload::handshake::CellResult;

/// The network part of a run, as stored with its options.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct NetworkPlan {
    pub profiles: Vec<NetworkProfile>,
    pub link: Option<Link>,
    /// Handshakes per row and profile over the link.
    pub link_samples: usize,
}

/// Handshakes per row and profile over a link unless `--runs` says.
pub(crate) const LINK_SAMPLES: usize = 10;

impl NetworkPlan {
    /// The plan from `--network`, `--link` and `--runs` (or a preset's
    /// profiles); `None` without profiles.
    pub(crate) fn from_args(
        args: &HandshakeArgs,
        preset: Option<PresetNetwork>,
    ) -> Result<Option<Self>> {
        let profiles = match (&args.network, preset) {
            (Some(profiles), _) => profiles.0.clone(),
            (None, Some(preset)) => parse_profiles(preset.profiles).map_err(usage)?,
            (None, None) if args.link.is_some() => {
                return Err(usage(
                    "--link measures rows over --network's profiles: give --network too",
                ))
            }
            (None, None) => return Ok(None),
        };
        if args.link == Some(Link::Netem) {
            return Err(usage(
                "--link netem: not built; use --link tun (tlslab's own link, which works where the kernel has no netem)",
            ));
        }
        let mut link = args.link;
        let missing = crate::transport::netns::missing();
        if let (Some(_), Some(missing)) = (link, &missing) {
            return Err(usage(format!(
                "--link tun builds two network namespaces joined by TUN devices; missing: {missing}"
            )));
        }
        // A preset's link where it can be built; the model alone elsewhere.
        if let Some(preset) = preset.filter(|_| link.is_none() && args.network.is_none()) {
            match missing {
                None => {
                    link = Some(Link::from_str(preset.link, true).map_err(|why| {
                        usage(format!("the preset's link '{}': {why}", preset.link))
                    })?)
                }
                Some(missing) => eprintln!(
                    "note: the model alone, no link to measure it over: the tun link needs {missing}"
                ),
            }
        }
        let link_samples = args
            .sampling
            .runs
            .or(preset.map(|p| p.link_samples))
            .unwrap_or(LINK_SAMPLES)
            .max(1);
        Ok(Some(Self {
            profiles,
            link,
            link_samples,
        }))
    }
}

/// Traces every cell on the wire, models it over the plan's profiles,
/// measures it over the plan's link, and stores each cell again.
pub(crate) fn run(
    plan: Option<&NetworkPlan>,
    cells: &mut [CellResult],
    certs: &CertCache,
    session: &mut Session,
) -> Result<()> {
    let bar = session.bar(cells.len());
    bar.0.set_message("tracing the wire");
    let untraced = crate::workload::annotate::trace_cells(cells, certs, &mut |done| {
        bar.0.set_position(done as u64)
    });
    for (index, reason) in untraced {
        let cell = &cells[index];
        bar.println(&format!(
            "no wire trace: {} {}: {reason}",
            cell.subject,
            cell.scenario.label()
        ));
    }
    bar.0.finish_and_clear();
    if let Some(plan) = plan {
        model_cells(cells, &plan.profiles);
        if plan.link.is_some() {
            let bar = super::session::Bar::of(0, session.quiet(), "handshakes over the link");
            let interrupted = crate::workload::link::measure_cells(
                cells,
                &plan.profiles,
                plan.link_samples,
                certs,
                session.interrupt(),
                &|done, total| {
                    bar.0.set_length(total as u64);
                    bar.0.set_position(done as u64);
                },
            )?;
            bar.0.finish_and_clear();
            session.mark_interrupted(interrupted);
        }
    }
    for cell in cells.iter() {
        if cell.counts.wire.is_some() || !cell.counts.network.is_empty() {
            session.save(|store, run_id| store.save_counts(run_id, cell));
        }
    }
    Ok(())
}
