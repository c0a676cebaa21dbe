//! Rows measured over an emulated link: per profile, a link between two
//! namespaces ([`crate::transport::link`]), tlslab's own server started
//! in the far one (`tlslab serve --handshakes`, its control on standard
//! input and output, killed with tlslab), and every row's handshakes run
//! from the near one in interleaved rounds, each from the client's
//! connect() until its library is done, the server's CPU as it reports it.

use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};

use crate::backend::{backend_by_id, Backend};
use crate::certs::CertCache;
use crate::measure::{Outcome, Timed};
use crate::scenario::network::NetworkProfile;
use crate::transport::link::{Link, SERVER_ADDRESS};
use crate::workload::handshake::{CellResult, HandshakeProbe};
use crate::workload::network::{LinkSample, NetworkResult};
use crate::workload::remote::{Control, Remote, RemoteBackend};

/// The link's kind, as tables and exports name it.
pub const TUN_LINK: &str = "tun";

/// tlslab's server in the link's far namespace, killed on drop.
pub struct LinkServer {
    child: Child,
}

impl Drop for LinkServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `tlslab serve --handshakes` (the tlslab at `executable`) inside
/// the link's server namespace, its control on its standard input and
/// output; it dies with this thread's process (`PR_SET_PDEATHSIG`), so
/// even kill -9 leaves none.
pub fn start_server(link: &Link, executable: &Path) -> Result<(LinkServer, Arc<Remote>)> {
    let namespace = link.server().fd().as_raw_fd();
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    let mut command = Command::new(executable);
    command
        .args([
            "serve",
            "--handshakes",
            "--control-stdio",
            "--allow-non-loopback",
            "--quiet",
            "--bind",
        ])
        .arg(format!("{SERVER_ADDRESS}:0"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // SAFETY: between fork and exec only async-signal-safe calls (setns,
    // prctl, getppid) on a descriptor the child inherited.
    unsafe {
        use std::os::unix::process::CommandExt;
        command.pre_exec(move || {
            if libc::setns(namespace, libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 || libc::getppid() != parent
            {
                return Err(std::io::Error::other(
                    "tlslab ended while starting its server",
                ));
            }
            Ok(())
        });
    }
    let mut child = command
        .spawn()
        .context("cannot start tlslab's server in the link's namespace")?;
    let (stdout, stdin) = (
        child.stdout.take().expect("piped"),
        child.stdin.take().expect("piped"),
    );
    let server = LinkServer { child };
    let control = Control::new(stdout, stdin, "tlslab's server in the link's far namespace");
    let remote = Remote::greet(control, SERVER_ADDRESS.into())?;
    Ok((server, remote))
}

/// Measures every traced cell over each profile's link, `samples`
/// handshakes each, in rounds; sets each cell's network result's link and
/// measured outcome. `progress` is told (handshakes done, of all).
/// Returns true if Ctrl-C stopped it.
pub fn measure_cells(
    cells: &mut [CellResult],
    profiles: &[NetworkProfile],
    samples: usize,
    certs: &CertCache,
    interrupt: &AtomicBool,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<bool> {
    let traced: Vec<usize> = (0..cells.len())
        .filter(|&i| cells[i].counts.wire.is_some())
        .collect();
    let total = traced.len() * profiles.len() * samples;
    let mut done = 0;
    for profile in profiles {
        if interrupt.load(Ordering::SeqCst) {
            return Ok(true);
        }
        let rows: Vec<(String, crate::scenario::HandshakeScenario)> = traced
            .iter()
            .map(|&i| (cells[i].subject.name(), cells[i].scenario))
            .collect();
        // The running image, even if its file was replaced since it started.
        let executable = Path::new("/proc/self/exe");
        let measured = Link::open(profile)
            .with_context(|| format!("building the link of --network {}", profile.label))
            .and_then(|link| {
                let (server, remote) = start_server(&link, executable)?;
                let outcomes = link.client().run(|| {
                    measure_rows(&rows, &remote, samples, certs, interrupt, &mut |_| {
                        done += 1;
                        progress(done, total)
                    })
                });
                remote.close();
                drop(server);
                outcomes
            });
        // A link that could not be built fails its rows, saying why; the
        // other profiles still run.
        let outcomes = measured.unwrap_or_else(|error| {
            let reason = format!("{error:#}");
            rows.iter()
                .map(|_| Outcome::Failed {
                    reason: reason.clone(),
                })
                .collect()
        });
        for (&i, outcome) in traced.iter().zip(outcomes) {
            let network = &mut cells[i].counts.network;
            let result = match network
                .iter_mut()
                .find(|r| r.profile.label == profile.label)
            {
                Some(result) => result,
                None => {
                    network.push(NetworkResult {
                        profile: profile.clone(),
                        model: None,
                        link: None,
                        measured: None,
                    });
                    network.last_mut().expect("pushed")
                }
            };
            result.link = Some(TUN_LINK.to_string());
            result.measured = Some(outcome);
        }
    }
    Ok(interrupt.load(Ordering::SeqCst))
}

/// The rows' handshakes with `remote`, from this thread (in the client's
/// namespace), `samples` each in interleaved rounds.
fn measure_rows(
    rows: &[(String, crate::scenario::HandshakeScenario)],
    remote: &Arc<Remote>,
    samples: usize,
    certs: &CertCache,
    interrupt: &AtomicBool,
    tick: &mut dyn FnMut(usize),
) -> Result<Vec<Outcome<LinkSample>>> {
    let mut outcomes: Vec<Outcome<LinkSample>> = Vec::new();
    let mut probes: Vec<Option<HandshakeProbe>> = Vec::new();
    for (backend, scenario) in rows {
        let local: Arc<dyn Backend> = backend_by_id(backend)
            .map_err(|e| anyhow::anyhow!("{e}"))
            .context("a traced row's backend")?;
        let over_link = RemoteBackend::new(local, Arc::clone(remote));
        match HandshakeProbe::prepare(&over_link, scenario, certs) {
            Ok((mut probe, _)) => {
                probe.apportion_unsure_splits();
                probes.push(Some(probe));
                outcomes.push(Outcome::Measured {
                    samples: Vec::new(),
                    precise: false,
                    note: None,
                });
            }
            Err(outcome) => {
                probes.push(None);
                outcomes.push(outcome.without_samples());
            }
        }
    }
    for round in 0..samples as u32 {
        for (probe, outcome) in probes.iter_mut().zip(outcomes.iter_mut()) {
            if interrupt.load(Ordering::SeqCst) {
                return Ok(outcomes);
            }
            let Some(running) = probe else {
                tick(1);
                continue;
            };
            match running.handshake() {
                Ok((sample, _)) => {
                    if let Outcome::Measured { samples, .. } = outcome {
                        samples.push(Timed {
                            round,
                            value: LinkSample {
                                latency_ns: sample.wall_ns,
                                client_cpu_ns: sample.client_cpu_ns,
                                server_cpu_ns: sample.server_cpu_ns,
                            },
                        });
                    }
                }
                Err(reason) => {
                    *outcome = Outcome::Failed { reason };
                    *probe = None;
                }
            }
            tick(1);
        }
    }
    Ok(outcomes)
}
