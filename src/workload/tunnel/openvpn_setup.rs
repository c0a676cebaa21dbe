//! The connection set-up samples of the OpenVPN engines, over a tunnel's
//! two processes in a lab of their own (IPv6 off, so the link carries the
//! tunnel's packets only), each process's CPU read from
//! /proc/PID/schedstat and the bytes and frames counted on the veth link:
//!
//! - a new tunnel ([`prepare_connect`]): both processes started, timed
//!   until both say the tunnel is up — whole processes, start-up and all;
//!   then a short transfer through the tunnel checks that it carries data;
//! - a renegotiation ([`prepare_renegotiation`], TLS mode only): one tunnel
//!   kept up whose client renegotiates every second (`--reneg-sec 1`: a
//!   new TLS handshake with certificates and new data-channel keys); a
//!   sample is each process's CPU from the end of one renegotiation to
//!   the end of the next. Between renegotiations an idle OpenVPN spends
//!   nothing measurable (its CPU time did not move in the checks made
//!   here), so this is the handshake without the process start-up.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use super::openvpn_tunnel::{log_tail, start_tunnel, End, Keying, Tunnel, TUNNEL_B};
use super::setup::{SetupOutcome, SetupProbe, SetupSample};
use super::transfer::transfer_data;
use crate::measure::Outcome;
use crate::scenario::tunnel::TunnelScenario;
use crate::transport::lab::{self, Lab, LinkCounters};
use crate::workload::process::process_cpu_ns;

/// What OpenVPN logs at the end of each TLS handshake of its control channel.
const HANDSHAKE_DONE: &str = "Control Channel:";

/// What an OpenVPN set-up is given: a lab of its own and a scratch
/// directory with the keying `make` writes into it.
struct SetupLab<K> {
    lab: Lab,
    directory: tempfile::TempDir,
    keying: K,
}

impl<K: Keying> SetupLab<K> {
    fn create(make: impl FnOnce(&Path) -> Result<K>) -> Result<Self> {
        crate::child::remove_leftovers();
        let lab = Lab::create().context("setting up the namespaces")?;
        // Best effort: without IPv6 in the kernel there is nothing to turn off.
        let _ = lab.without_ipv6();
        let directory = crate::child::scratch_dir(super::openvpn_tunnel::SCRATCH)
            .context("cannot create a temporary directory")?;
        let keying = make(directory.path())?;
        Ok(Self {
            lab,
            directory,
            keying,
        })
    }

    /// A tunnel for `scenario`, up.
    fn start(&self, scenario: &TunnelScenario, interrupt: &AtomicBool) -> Result<Tunnel> {
        start_tunnel(
            &self.lab,
            self.directory.path(),
            &self.keying,
            scenario,
            interrupt,
        )
    }

    /// Checks that the tunnel carries data: 64 KiB through it from A to B.
    fn transfer(&self, scenario: &TunnelScenario, interrupt: &AtomicBool) -> Result<()> {
        let data = transfer_data(scenario.payload);
        lab::transfer(
            self.lab.a(),
            (self.lab.b(), TUNNEL_B),
            &data,
            1400,
            64 * 1024,
            interrupt,
        )
        .context("a transfer through the tunnel")?;
        Ok(())
    }
}

/// Each process's CPU and the link's counters at one moment.
#[derive(Debug, Clone, Copy)]
struct Reading {
    initiator_cpu_ns: u64,
    responder_cpu_ns: u64,
    link: LinkCounters,
    at: Instant,
}

impl Reading {
    fn take(lab: &Lab, tunnel: &Tunnel) -> Result<Self> {
        Ok(Self {
            initiator_cpu_ns: process_cpu_ns(tunnel.process(End::A).id())?,
            responder_cpu_ns: process_cpu_ns(tunnel.process(End::B).id())?,
            link: lab.link_counters()?,
            at: Instant::now(),
        })
    }

    /// What was spent from `earlier` to this reading.
    fn since(&self, earlier: &Reading) -> SetupSample {
        let link = self.link.since(&earlier.link);
        SetupSample {
            initiator_cpu_ns: self
                .initiator_cpu_ns
                .saturating_sub(earlier.initiator_cpu_ns),
            responder_cpu_ns: self
                .responder_cpu_ns
                .saturating_sub(earlier.responder_cpu_ns),
            wall_ns: (self.at - earlier.at).as_nanos() as u64,
            bytes_to_responder: link.sent_bytes,
            bytes_to_initiator: link.received_bytes,
            messages_to_responder: link.sent_frames,
            messages_to_initiator: link.received_frames,
        }
    }
}

fn failed(error: anyhow::Error) -> SetupOutcome {
    Outcome::Failed {
        reason: format!("{error:#}"),
    }
}

/// Readies the new-tunnel set-up of an OpenVPN engine keyed by what
/// `make` writes: each sample starts a tunnel for `scenario`, reads both
/// processes' CPU (from their start: whole processes) and the link's
/// counters once both are up, checks that a transfer crosses the tunnel
/// and stops it. A first set-up is tried at once, so an engine that
/// cannot set up says why.
pub(super) fn prepare_connect<'a, K: Keying + 'a>(
    make: impl FnOnce(&Path) -> Result<K>,
    scenario: TunnelScenario,
    covers: &'static str,
    interrupt: &'a AtomicBool,
) -> Result<SetupProbe<'a>, SetupOutcome> {
    let setup = SetupLab::create(make).map_err(failed)?;
    let set_up = move || -> Result<SetupSample> {
        let before = setup.lab.link_counters()?;
        let start = Instant::now();
        let tunnel = setup.start(&scenario, interrupt)?;
        let wall_ns = start.elapsed().as_nanos() as u64;
        let up = Reading::take(&setup.lab, &tunnel)?;
        setup.transfer(&scenario, interrupt)?;
        drop(tunnel);
        let link = up.link.since(&before);
        Ok(SetupSample {
            initiator_cpu_ns: up.initiator_cpu_ns,
            responder_cpu_ns: up.responder_cpu_ns,
            wall_ns,
            bytes_to_responder: link.sent_bytes,
            bytes_to_initiator: link.received_bytes,
            messages_to_responder: link.sent_frames,
            messages_to_initiator: link.received_frames,
        })
    };
    set_up().map_err(failed)?;
    Ok(SetupProbe {
        covers,
        probe: Box::new(move || set_up().map_err(|error| format!("{error:#}"))),
    })
}

/// A TLS keying whose client (A) renegotiates every second.
struct Renegotiating<K>(K);

impl<K: Keying> Keying for Renegotiating<K> {
    fn add_arguments(&self, end: End, command: &mut Command) {
        self.0.add_arguments(end, command);
        if end == End::A {
            command.args(["--reneg-sec", "1"]);
        }
    }

    fn add_cipher(&self, scenario: &TunnelScenario, command: &mut Command) {
        self.0.add_cipher(scenario, command);
    }

    fn is_up(&self, scenario: &TunnelScenario, log: &str) -> Result<bool> {
        self.0.is_up(scenario, log)
    }
}

/// How many TLS handshakes each end's log reports (A's, B's).
fn handshakes(tunnel: &Tunnel) -> (usize, usize) {
    let count = |end: End| {
        std::fs::read_to_string(tunnel.log(end))
            .unwrap_or_default()
            .matches(HANDSHAKE_DONE)
            .count()
    };
    (count(End::A), count(End::B))
}

/// A running tunnel that renegotiates, and the reading at the end of its
/// last renegotiation (with the handshakes counted then).
struct Renegotiations<K> {
    setup: SetupLab<Renegotiating<K>>,
    tunnel: Tunnel,
    last: Option<((usize, usize), Reading)>,
}

impl<K: Keying> Renegotiations<K> {
    /// Waits until both ends logged more handshakes than `after`, and
    /// returns the counts then.
    fn wait_past(
        &mut self,
        after: (usize, usize),
        interrupt: &AtomicBool,
    ) -> Result<(usize, usize)> {
        self.tunnel.wait_until(interrupt, |end, log| {
            let done = log.matches(HANDSHAKE_DONE).count();
            Ok(done > if end == End::A { after.0 } else { after.1 })
        })?;
        Ok(handshakes(&self.tunnel))
    }

    /// One renegotiation: from the end of one (the last sample's, if no
    /// other ended since) to the end of the next.
    fn sample(&mut self, interrupt: &AtomicBool) -> Result<SetupSample> {
        let current = handshakes(&self.tunnel);
        let (counts, start) = match self.last {
            Some((counts, reading)) if counts == current => (counts, reading),
            // The first sample, or one ended unseen: start at the next end.
            _ => {
                let counts = self.wait_past(current, interrupt)?;
                (counts, Reading::take(&self.setup.lab, &self.tunnel)?)
            }
        };
        let ended = self.wait_past(counts, interrupt)?;
        let end = Reading::take(&self.setup.lab, &self.tunnel)?;
        self.last = Some((ended, end));
        if ended != (counts.0 + 1, counts.1 + 1) {
            bail!("more than one renegotiation in a sample ({counts:?} to {ended:?} handshakes)");
        }
        let log = std::fs::read_to_string(self.tunnel.log(End::A)).unwrap_or_default();
        let line = log
            .lines()
            .rev()
            .find(|l| l.contains(HANDSHAKE_DONE))
            .unwrap_or_default();
        if !line.contains("peer certificate") {
            bail!("the renegotiation verified no certificate: {line}");
        }
        Ok(end.since(&start))
    }
}

/// Readies the renegotiation samples of OpenVPN in TLS mode (keyed by what
/// `make` writes): one tunnel for `scenario`, its client renegotiating
/// every second; each sample is one renegotiation, both ends' CPU and the
/// link's bytes from the end of the previous one. The tunnel is checked
/// to carry data once, before sampling.
pub(super) fn prepare_renegotiation<'a, K: Keying + 'a>(
    make: impl FnOnce(&Path) -> Result<K>,
    scenario: TunnelScenario,
    covers: &'static str,
    interrupt: &'a AtomicBool,
) -> Result<SetupProbe<'a>, SetupOutcome> {
    let setup =
        SetupLab::create(|directory| Ok(Renegotiating(make(directory)?))).map_err(failed)?;
    let tunnel = setup.start(&scenario, interrupt).map_err(failed)?;
    setup.transfer(&scenario, interrupt).map_err(failed)?;
    let mut renegotiations = Renegotiations {
        setup,
        tunnel,
        last: None,
    };
    renegotiations
        .sample(interrupt)
        .map_err(|error| failed(error.context(log_tail(renegotiations.tunnel.log(End::A)))))?;
    Ok(SetupProbe {
        covers,
        probe: Box::new(move || {
            renegotiations
                .sample(interrupt)
                .map_err(|error| format!("{error:#}"))
        }),
    })
}
