//! What the OpenVPN engines share ([`super::openvpn`] with a static key,
//! [`super::openvpn_tls`] in TLS mode): a tunnel's two processes between
//! the two namespaces of a [`Lab`], keyed by a [`Keying`] (the arguments
//! that key the data channel), the rig of their rows, and what they can
//! and cannot run. A row's sample is a fixed-size TCP transfer through
//! the tunnel each way, with each OpenVPN process's CPU time
//! ([`super::transfer`]).
//!
//! The tunnel is 10.232.0.1 (A) <-> 10.232.0.2 (B) over the lab's link.
//! OpenVPN runs inside the lab's namespaces without naming them: it enters
//! its namespace between fork and exec, so it needs no `ip netns exec`
//! and nothing is left in /run/netns. Its processes are stopped when the
//! row's sample is dropped (on success, failure and Ctrl-C), and are tied
//! to tlslab: if tlslab is killed they get SIGKILL from the kernel. The
//! scratch directory (the key, the logs) carries tlslab's process in its
//! name; the next run removes it if tlslab was killed ([`crate::child`]).

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::engine::{EngineOptions, EngineRig};
use super::transfer::{self, TransferRoute};
use super::{TunnelOutcome, TunnelSample};
use crate::backend::{CpuMasking, LibraryInfo};
use crate::measure::{Outcome, Probe};
use crate::scenario::tunnel::{Compression, Digest, EngineId, TunnelScenario};
use crate::transport::lab::{Lab, LINK_A, LINK_B};

pub(super) const TUNNEL_A: Ipv4Addr = Ipv4Addr::new(10, 232, 0, 1);
pub(super) const TUNNEL_B: Ipv4Addr = Ipv4Addr::new(10, 232, 0, 2);
const OPENVPN_PORT: u16 = 1194;
/// How long a tunnel may take to come up.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(15);

/// Why OpenVPN's set-up cannot be counted under valgrind.
pub(super) const SETUP_UNCOUNTABLE: &str = "OpenVPN's set-up runs in two openvpn processes, which tlslab cannot count per side under valgrind; WireGuard's in-process set-up is counted";

/// The word in the names of the OpenVPN engines' scratch directories (their
/// keys and configurations).
pub(super) const SCRATCH: &str = "openvpn";

/// Why OpenVPN rows cannot be counted under valgrind.
pub(super) const UNCOUNTABLE: &str = "OpenVPN's work runs in its own processes (two openvpn daemons and the kernel between network namespaces), which tlslab cannot count per side under valgrind; the inprocess engine's rows are counted";

/// Whether the OpenVPN daemons' CPU features can be masked: an openvpn
/// built on OpenSSL (Debian's: libcrypto 3.0) reads `OPENSSL_ia32cap` at
/// start as the vendored OpenSSL does, and the daemons inherit tlslab's
/// environment; one built on another library (mbed TLS) has no such
/// switch. Its `--version` names the library ("[SSL (OpenSSL)]"); asked
/// once per process.
pub(super) fn cpu_masking() -> CpuMasking {
    static MASKING: OnceLock<CpuMasking> = OnceLock::new();
    *MASKING.get_or_init(|| match Command::new("openvpn").arg("--version").output() {
        Ok(output) if !String::from_utf8_lossy(&output.stdout).contains("OpenSSL") => {
            CpuMasking::Impossible("this openvpn is not built on OpenSSL, whose capability mask (OPENSSL_ia32cap) tlslab clears; it has no switch tlslab knows to turn its CPU features off")
        }
        // Missing, the engine's preflight says so.
        _ => CpuMasking::OPENSSL_CAPABILITY_VECTOR,
    })
}

/// Root, `ip`, `/dev/net/tun` and `openvpn`; OpenVPN's version, as the
/// provenance of engine `id`.
pub(super) fn preflight(id: EngineId) -> Result<LibraryInfo, String> {
    let mut missing = Vec::new();
    if let Some(lab) = crate::transport::netns::missing() {
        missing.push(lab);
    }
    let version = match Command::new("openvpn").arg("--version").output() {
        Ok(output) => String::from_utf8_lossy(&output.stdout)
            .lines()
            .next()
            .and_then(|line| line.split_whitespace().nth(1))
            .unwrap_or("unknown")
            .to_string(),
        Err(_) => {
            missing.push("the `openvpn` binary (Debian: apt-get install openvpn)".to_string());
            String::new()
        }
    };
    if !missing.is_empty() {
        return Err(missing.join("; "));
    }
    Ok(LibraryInfo {
        subject: crate::scenario::Subject::engine(id),
        library: "OpenVPN".to_string(),
        version,
    })
}

/// Why OpenVPN cannot authenticate with `digest`, if it cannot.
pub(super) fn digest_unsupported(digest: Digest) -> Option<String> {
    (digest == Digest::Sha0).then(|| "SHA-0 is not in OpenSSL 3 (OpenVPN's library)".into())
}

/// Why an OpenVPN row cannot compress with `compression`, if it cannot.
pub(super) fn compression_unsupported(compression: Compression) -> Option<String> {
    // OpenVPN could, but the in-process twin could not: keep the rows comparable.
    (compression == Compression::Lzo && !cfg!(feature = "lzo"))
        .then(|| Compression::Lzo.unsupported_reason().map(String::from))
        .flatten()
}

/// One end of a tunnel: A (10.232.0.1, the TLS client, which starts the
/// handshake) or B (10.232.0.2, the TLS server).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    A,
    B,
}

/// How a tunnel's two OpenVPN processes key their data channel.
pub(super) trait Keying: Send + Sync {
    /// Adds `end`'s arguments for a row to the common ones (device,
    /// addresses, cipher and digest are not among them: see
    /// [`Keying::add_cipher`]).
    fn add_arguments(&self, end: End, command: &mut Command);

    /// Adds the arguments that choose the row's cipher and digest.
    fn add_cipher(&self, scenario: &TunnelScenario, command: &mut Command);

    /// Returns true if and only if a side's log says its tunnel is up; an
    /// error if it is up with other than the row asked for.
    fn is_up(&self, _scenario: &TunnelScenario, log: &str) -> Result<bool> {
        Ok(log.contains(READY))
    }
}

/// What OpenVPN logs once its tunnel is up.
pub(super) const READY: &str = "Initialization Sequence Completed";

/// Sets up what an OpenVPN engine's rows share: the lab and a scratch
/// directory, and the keying `make` writes into it.
pub(super) fn start_rig<K: Keying + 'static>(
    options: &EngineOptions,
    make: impl FnOnce(&Path) -> Result<K>,
) -> Result<Box<dyn EngineRig>> {
    crate::child::remove_leftovers();
    let lab = Lab::create().context("setting up the namespaces")?;
    let directory =
        crate::child::scratch_dir(SCRATCH).context("cannot create a temporary directory")?;
    let keying = make(directory.path())?;
    Ok(Box::new(OpenvpnRig {
        lab,
        keying,
        directory,
        transfer_bytes: options.transfer_bytes,
    }))
}

/// The lab and the keying every row's tunnel uses.
struct OpenvpnRig<K> {
    lab: Lab,
    keying: K,
    directory: tempfile::TempDir,
    transfer_bytes: u64,
}

impl<K: Keying> EngineRig for OpenvpnRig<K> {
    fn prepare<'rig>(
        &'rig self,
        scenario: &TunnelScenario,
        interrupt: &'rig AtomicBool,
    ) -> Result<Probe<'rig, TunnelSample>, TunnelOutcome> {
        let data = transfer::transfer_data(scenario.payload);
        let mss = transfer::segment_bytes(scenario.payload_bytes);
        let (tunnel, address_a, address_b) = if scenario.baseline {
            (None, LINK_A, LINK_B)
        } else {
            let tunnel = start_tunnel(
                &self.lab,
                self.directory.path(),
                &self.keying,
                scenario,
                interrupt,
            )
            .map_err(|error| {
                let reason = format!("{error:#}");
                if reason.contains("not supported") || reason.contains("Unsupported") {
                    Outcome::Unsupported { reason }
                } else {
                    Outcome::Failed { reason }
                }
            })?;
            (Some(tunnel), TUNNEL_A, TUNNEL_B)
        };
        let route = TransferRoute {
            lab: &self.lab,
            address_a,
            address_b,
            daemons: tunnel
                .as_ref()
                .map(|tunnel| [tunnel.process(End::A).id(), tunnel.process(End::B).id()]),
        };
        let transfer_bytes = self.transfer_bytes;
        Ok(Box::new(move || {
            // The tunnel lives as long as the row's sample.
            let _tunnel = &tunnel;
            transfer::timed_transfers(&route, &data, mss, transfer_bytes, interrupt)
        }))
    }
}

/// Starts a row's two OpenVPN processes, one in each namespace of `lab`
/// (B first, then A once B listens, so A's first packet finds B), and
/// waits until both say the tunnel is up; their logs go to `directory`.
pub(super) fn start_tunnel(
    lab: &Lab,
    directory: &Path,
    keying: &dyn Keying,
    scenario: &TunnelScenario,
    interrupt: &AtomicBool,
) -> Result<Tunnel> {
    let mut tunnel = Tunnel {
        ends: Vec::new(),
        processes: Vec::new(),
        logs: Vec::new(),
    };
    for (end, namespace, local, remote, tunnel_local, tunnel_remote) in [
        (End::B, lab.b(), LINK_B, LINK_A, TUNNEL_B, TUNNEL_A),
        (End::A, lab.a(), LINK_A, LINK_B, TUNNEL_A, TUNNEL_B),
    ] {
        let name = if end == End::A { "a" } else { "b" };
        let log = directory.join(format!("openvpn-{name}.log"));
        let _ = std::fs::remove_file(&log);
        let mut command = Command::new("openvpn");
        command.args(["--dev", "tlslab0", "--dev-type", "tun"]);
        keying.add_arguments(end, &mut command);
        command
            .args(["--proto", "udp", "--local"])
            .arg(local.to_string())
            .args(["--remote"])
            .arg(remote.to_string())
            .args(["--port", &OPENVPN_PORT.to_string()])
            .args(["--ifconfig"])
            .arg(tunnel_local.to_string())
            .arg(tunnel_remote.to_string())
            .args(["--providers", "legacy", "default"]);
        keying.add_cipher(scenario, &mut command);
        command
            .args(["--verb", "3", "--mute-replay-warnings", "--log"])
            .arg(&log);
        match scenario.compression {
            Compression::None => {}
            Compression::Lz4 => {
                command.args(["--allow-compression", "yes", "--compress", "lz4"]);
            }
            Compression::Lzo => {
                command.args(["--allow-compression", "yes", "--compress", "lzo"]);
            }
        }
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        namespace.enter_on_exec(&mut command);
        let child = crate::child::spawn_tied(command, crate::child::Tie::Disposable)
            .context("cannot start openvpn")?;
        tunnel.ends.push(end);
        tunnel.processes.push(child);
        tunnel.logs.push(log);
        if end == End::B {
            tunnel.wait_until(interrupt, |_, log| Ok(log.contains("link local")))?;
        }
    }
    tunnel.wait_until(interrupt, |_, log| keying.is_up(scenario, log))?;
    Ok(tunnel)
}

/// The two OpenVPN processes of one tunnel, stopped on drop.
pub(super) struct Tunnel {
    /// Each process's end, in the order they were started.
    ends: Vec<End>,
    processes: Vec<Child>,
    logs: Vec<PathBuf>,
}

impl Tunnel {
    /// Waits until every started process's log says `ready` (given its
    /// end and its log); fails when one exits, on Ctrl-C, or after
    /// [`STARTUP_TIMEOUT`].
    pub(super) fn wait_until(
        &mut self,
        interrupt: &AtomicBool,
        ready: impl Fn(End, &str) -> Result<bool>,
    ) -> Result<()> {
        let start = Instant::now();
        loop {
            let mut all = true;
            for (&end, log) in self.ends.iter().zip(&self.logs) {
                let text = std::fs::read_to_string(log).unwrap_or_default();
                all &= ready(end, &text)?;
            }
            if all {
                return Ok(());
            }
            for (child, log) in self.processes.iter_mut().zip(&self.logs) {
                if let Ok(Some(status)) = child.try_wait() {
                    bail!("openvpn exited ({status}): {}", log_tail(log));
                }
            }
            if interrupt.load(Ordering::Relaxed) {
                bail!("interrupted");
            }
            if start.elapsed() > STARTUP_TIMEOUT {
                bail!(
                    "the tunnel did not come up within {} s: {}",
                    STARTUP_TIMEOUT.as_secs(),
                    log_tail(self.logs.last().expect("a process started"))
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Where `end` is in the processes started.
    fn index(&self, end: End) -> usize {
        self.ends
            .iter()
            .position(|&started| started == end)
            .expect("both ends started")
    }

    /// The process at `end`.
    pub(super) fn process(&self, end: End) -> &Child {
        &self.processes[self.index(end)]
    }

    /// The log of the process at `end`.
    pub(super) fn log(&self, end: End) -> &Path {
        &self.logs[self.index(end)]
    }
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        for child in &mut self.processes {
            // SIGTERM first, then SIGKILL if it is still there.
            // SAFETY: kill with a PID we spawned and have not reaped yet.
            unsafe {
                libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
            }
            let deadline = Instant::now() + Duration::from_secs(3);
            loop {
                match child.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if Instant::now() > deadline => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        }
    }
}

pub(super) fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().rev().take(3).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
}
