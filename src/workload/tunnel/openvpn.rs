//! The real engine: an OpenVPN static-key point-to-point tunnel between two
//! network namespaces joined by a veth pair, one tunnel per combination, and
//! a fixed-size TCP transfer through it each way; the same transfer over the
//! bare veth link is the no-tunnel baseline.
//!
//! Everything stays inside namespaces this process creates: the veth link
//! carries 10.231.0.0/30, the tunnel 10.232.0.1 <-> 10.232.0.2. The transfer
//! runs in this process: a thread that entered a namespace (setns) opens
//! the socket, and the socket stays in that namespace. Namespaces and
//! OpenVPN processes are removed by `Drop` guards, on success, failure and
//! Ctrl-C alike. If tlslab is killed, OpenVPN gets SIGTERM from the kernel,
//! and the namespaces (`tlslab-PID-START-a`, `-b`) and the key's directory,
//! named after tlslab's process, are removed by the next run that makes
//! its own ([`crate::child`]).

use std::fs::File;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::tunnel::{TunnelOutcome, TunnelSample};
use crate::measure::{self, Interrupted, Outcome, SamplingOptions};
use crate::scenario::tunnel::{CipherMode, Compression, Digest, Payload, TunnelScenario};

const LINK_A: Ipv4Addr = Ipv4Addr::new(10, 231, 0, 1);
const LINK_B: Ipv4Addr = Ipv4Addr::new(10, 231, 0, 2);
const TUNNEL_A: Ipv4Addr = Ipv4Addr::new(10, 232, 0, 1);
const TUNNEL_B: Ipv4Addr = Ipv4Addr::new(10, 232, 0, 2);
const OPENVPN_PORT: u16 = 1194;
/// How long a tunnel may take to come up.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(15);
/// How long one transfer may stall before it fails.
const IO_TIMEOUT: Duration = Duration::from_secs(30);
const WRITE_CHUNK_BYTES: usize = 64 * 1024;
/// How often a blocked transfer checks for Ctrl-C.
const POLL_INTERVAL: Duration = Duration::from_millis(200);

/// Checks that the real engine can run: root, `ip`, `/dev/net/tun` and
/// `openvpn`. Returns OpenVPN's version line, or an error naming what is missing.
pub fn preflight() -> Result<String> {
    let mut missing = Vec::new();
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        missing.push(
            "root privileges (network namespaces need CAP_SYS_ADMIN; run as root)".to_string(),
        );
    }
    if Command::new("ip").arg("-V").output().is_err() {
        missing.push("the `ip` command (Debian: apt-get install iproute2)".to_string());
    }
    if !Path::new("/dev/net/tun").exists() {
        missing.push("/dev/net/tun (load the tun module)".to_string());
    }
    let version = Command::new("openvpn").arg("--version").output();
    let version = match version {
        Ok(output) => {
            let text = String::from_utf8_lossy(&output.stdout).into_owned();
            text.lines()
                .next()
                .and_then(|line| line.split_whitespace().nth(1))
                .unwrap_or("unknown")
                .to_string()
        }
        Err(_) => {
            missing.push("the `openvpn` binary (Debian: apt-get install openvpn)".to_string());
            String::new()
        }
    };
    if !missing.is_empty() {
        bail!(
            "the openvpn engine cannot run; missing: {}",
            missing.join("; ")
        );
    }
    Ok(version)
}

fn run(command: &mut Command) -> Result<()> {
    let shown = format!("{command:?}");
    let output = command
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {shown}"))?;
    if !output.status.success() {
        bail!(
            "{shown} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

fn ip(args: &[&str]) -> Result<()> {
    run(Command::new("ip").args(args))
}

/// Two namespaces joined by a veth pair, removed on drop.
pub struct Lab {
    namespace_a: String,
    namespace_b: String,
    directory: tempfile::TempDir,
    key_file: PathBuf,
}

impl Lab {
    /// Creates the namespaces, the link and a static key.
    pub fn create() -> Result<Self> {
        crate::child::remove_leftovers();
        let id = std::process::id();
        let directory =
            crate::child::scratch_dir("openvpn").context("cannot create a temporary directory")?;
        let lab = Self {
            namespace_a: crate::child::namespace_name("a"),
            namespace_b: crate::child::namespace_name("b"),
            key_file: directory.path().join("static.key"),
            directory,
        };
        // From here on, Drop removes whatever was created.
        ip(&["netns", "add", &lab.namespace_a])?;
        ip(&["netns", "add", &lab.namespace_b])?;
        let veth_a = format!("tlsa{id}");
        let veth_b = format!("tlsb{id}");
        ip(&[
            "link",
            "add",
            &veth_a,
            "netns",
            &lab.namespace_a,
            "type",
            "veth",
            "peer",
            "name",
            &veth_b,
            "netns",
            &lab.namespace_b,
        ])?;
        for (namespace, device, address) in [
            (&lab.namespace_a, &veth_a, LINK_A),
            (&lab.namespace_b, &veth_b, LINK_B),
        ] {
            ip(&[
                "-n",
                namespace,
                "addr",
                "add",
                &format!("{address}/30"),
                "dev",
                device,
            ])?;
            ip(&["-n", namespace, "link", "set", device, "up"])?;
            ip(&["-n", namespace, "link", "set", "lo", "up"])?;
        }
        write_static_key(&lab.key_file)?;
        Ok(lab)
    }

    /// Measures one scenario: the bare link for the baseline, else a tunnel.
    /// Returns its outcome and whether Ctrl-C stopped it (the samples it
    /// had are kept); `Interrupted` when Ctrl-C came before any sample.
    /// `rounds` is told as the sampler's rounds go.
    pub fn measure(
        &mut self,
        scenario: &TunnelScenario,
        transfer_bytes: u64,
        options: &SamplingOptions,
        interrupt: &AtomicBool,
        rounds: &mut dyn measure::Observer<TunnelSample>,
    ) -> Result<(TunnelOutcome, bool), Interrupted> {
        let data = transfer_data(scenario.payload);
        let mss = scenario.payload_bytes.clamp(88, 1400) as i32;
        if scenario.baseline {
            return self.sample(
                LINK_A,
                LINK_B,
                &data,
                mss,
                transfer_bytes,
                options,
                interrupt,
                rounds,
            );
        }
        if let Some(reason) = unsupported_reason(scenario) {
            return Ok((Outcome::Unsupported { reason }, false));
        }
        let tunnel = match self.start_tunnel(scenario, interrupt) {
            Ok(tunnel) => tunnel,
            Err(error) if interrupt.load(Ordering::Relaxed) => {
                drop(error);
                return Err(Interrupted);
            }
            Err(error) => {
                let reason = format!("{error:#}");
                let outcome = if reason.contains("not supported") || reason.contains("Unsupported")
                {
                    Outcome::Unsupported { reason }
                } else {
                    Outcome::Failed { reason }
                };
                return Ok((outcome, false));
            }
        };
        let outcome = self.sample(
            TUNNEL_A,
            TUNNEL_B,
            &data,
            mss,
            transfer_bytes,
            options,
            interrupt,
            rounds,
        );
        drop(tunnel);
        outcome
    }

    #[allow(clippy::too_many_arguments)]
    fn sample(
        &self,
        address_a: Ipv4Addr,
        address_b: Ipv4Addr,
        data: &[u8],
        mss: i32,
        transfer_bytes: u64,
        options: &SamplingOptions,
        interrupt: &AtomicBool,
        rounds: &mut dyn measure::Observer<TunnelSample>,
    ) -> Result<(TunnelOutcome, bool), Interrupted> {
        // One tunnel at a time: an OpenVPN row is sampled on its own, not
        // interleaved with the others (each needs its own tunnel up).
        let probe = Box::new(|| {
            let forward = transfer(
                (&self.namespace_a, address_a),
                (&self.namespace_b, address_b),
                data,
                mss,
                transfer_bytes,
                interrupt,
            )
            .map_err(|e| format!("transfer A to B: {e:#}"))?;
            let backward = transfer(
                (&self.namespace_b, address_b),
                (&self.namespace_a, address_a),
                data,
                mss,
                transfer_bytes,
                interrupt,
            )
            .map_err(|e| format!("transfer B to A: {e:#}"))?;
            Ok(TunnelSample {
                packets: 0,
                payload_bytes: transfer_bytes,
                send_ns: forward.as_nanos() as u64,
                receive_ns: backward.as_nanos() as u64,
                // The tunnel's work is done by OpenVPN's processes.
                send_cpu_ns: forward.as_nanos() as u64,
                receive_cpu_ns: backward.as_nanos() as u64,
            })
        });
        let run = measure::sample(
            vec![probe],
            measure::Pairing::None,
            options,
            interrupt,
            rounds,
        )
        .map_err(|_| Interrupted)?;
        let outcome = run.outcomes.into_iter().next().expect("one cell");
        if run.interrupted && outcome.samples().is_empty() {
            return Err(Interrupted);
        }
        Ok((outcome, run.interrupted))
    }

    fn start_tunnel(&self, scenario: &TunnelScenario, interrupt: &AtomicBool) -> Result<Tunnel> {
        let mut tunnel = Tunnel {
            processes: Vec::new(),
        };
        let mut logs = Vec::new();
        for (side, namespace, local, remote, tunnel_local, tunnel_remote) in [
            ("a", &self.namespace_a, LINK_A, LINK_B, TUNNEL_A, TUNNEL_B),
            ("b", &self.namespace_b, LINK_B, LINK_A, TUNNEL_B, TUNNEL_A),
        ] {
            let log = self.directory.path().join(format!("openvpn-{side}.log"));
            let _ = std::fs::remove_file(&log);
            let mut command = Command::new("ip");
            command
                .args(["netns", "exec", namespace, "openvpn"])
                .args(["--dev", "tlslab0", "--dev-type", "tun"])
                .arg("--secret")
                .arg(&self.key_file)
                .arg(if side == "a" { "0" } else { "1" })
                .args(["--proto", "udp", "--local"])
                .arg(local.to_string())
                .args(["--remote"])
                .arg(remote.to_string())
                .args(["--port", &OPENVPN_PORT.to_string()])
                .args(["--ifconfig"])
                .arg(tunnel_local.to_string())
                .arg(tunnel_remote.to_string())
                .args(["--providers", "legacy", "default"])
                .args(["--cipher", scenario.cipher.openssl_name().unwrap_or("none")])
                .args(["--auth", scenario.digest.openssl_name().unwrap_or("none")])
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
            // `ip netns exec` execs openvpn in place: the tie holds for it.
            let child = crate::child::spawn_tied(command, crate::child::Tie::Server)
                .context("cannot start openvpn")?;
            tunnel.processes.push(child);
            logs.push(log);
        }
        let start = Instant::now();
        loop {
            let ready = logs.iter().all(|log| {
                std::fs::read_to_string(log)
                    .is_ok_and(|text| text.contains("Initialization Sequence Completed"))
            });
            if ready {
                return Ok(tunnel);
            }
            for (child, log) in tunnel.processes.iter_mut().zip(&logs) {
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
                    log_tail(&logs[0])
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        // Deleting a namespace deletes the veth end in it, and with it the pair.
        for namespace in [&self.namespace_a, &self.namespace_b] {
            let _ = Command::new("ip")
                .args(["netns", "del", namespace])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// The two OpenVPN processes of one tunnel, stopped on drop.
struct Tunnel {
    processes: Vec<Child>,
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        for child in &mut self.processes {
            // SIGTERM by PID first (`ip netns exec` execs openvpn in place),
            // then SIGKILL if it is still there.
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

/// Why OpenVPN's static-key mode cannot run a scenario, if it cannot.
fn unsupported_reason(scenario: &TunnelScenario) -> Option<String> {
    if scenario.cipher.mode() == CipherMode::Aead {
        return Some(format!(
            "OpenVPN offers {} in TLS mode only, not with a static key",
            scenario.cipher.openssl_name().unwrap_or_default()
        ));
    }
    if scenario.digest == Digest::Sha0 {
        return Some("SHA-0 is not in OpenSSL 3 (OpenVPN's library)".to_string());
    }
    if scenario.compression == Compression::Lzo && !cfg!(feature = "lzo") {
        // OpenVPN could, but the in-process twin could not; keep the rows comparable.
        return Compression::Lzo.unsupported_reason().map(String::from);
    }
    None
}

fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().rev().take(3).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
}

/// An OpenVPN static key file: 2048 random bits in the V1 format.
fn write_static_key(path: &Path) -> Result<()> {
    let mut key = [0u8; 256];
    openssl::rand::rand_bytes(&mut key)?;
    let mut text = String::from("-----BEGIN OpenVPN Static key V1-----\n");
    for line in key.chunks(16) {
        for byte in line {
            text.push_str(&format!("{byte:02x}"));
        }
        text.push('\n');
    }
    text.push_str("-----END OpenVPN Static key V1-----\n");
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// 1 MiB of the payload to send over and over.
fn transfer_data(payload: Payload) -> Vec<u8> {
    (0..16)
        .flat_map(|i| payload.bytes(i, WRITE_CHUNK_BYTES))
        .collect()
}

/// Runs `make` on a fresh thread that entered the network namespace
/// `namespace`; sockets it creates stay in that namespace.
fn in_namespace<T: Send>(namespace: &str, make: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    let path = format!("/var/run/netns/{namespace}");
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let file = File::open(&path).with_context(|| format!("cannot open {path}"))?;
                // SAFETY: a valid namespace file descriptor; this thread is
                // ours and ends right after `make`.
                if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    return Err(std::io::Error::last_os_error())
                        .with_context(|| format!("cannot enter the namespace {namespace}"));
                }
                make()
            })
            .join()
            .map_err(|_| anyhow::anyhow!("a namespace thread panicked"))?
    })
}

/// Sends `bytes` from `from` to `to` over TCP and returns the time from the
/// first byte written to the last byte received. Gives up when interrupted
/// or when no byte moves for `IO_TIMEOUT`.
fn transfer(
    from: (&str, Ipv4Addr),
    to: (&str, Ipv4Addr),
    data: &[u8],
    mss: i32,
    bytes: u64,
    interrupt: &AtomicBool,
) -> Result<Duration> {
    let listener = in_namespace(to.0, || {
        let listener = TcpListener::bind(SocketAddr::from((to.1, 0)))?;
        set_mss(&listener, mss)?;
        Ok(listener)
    })?;
    let port = listener.local_addr()?.port();
    let destination = SocketAddr::from((to.1, port));
    let mut stream = in_namespace(from.0, || {
        Ok(TcpStream::connect_timeout(&destination, IO_TIMEOUT)?)
    })?;
    stream.set_write_timeout(Some(POLL_INTERVAL))?;
    let (mut receiver, _) = listener.accept()?;
    receiver.set_read_timeout(Some(POLL_INTERVAL))?;
    // Both ends wake up every POLL_INTERVAL to see whether to give up.
    let check = |last_progress: Instant| -> Result<()> {
        if interrupt.load(Ordering::Relaxed) {
            bail!("interrupted");
        }
        if last_progress.elapsed() > IO_TIMEOUT {
            bail!("no progress for {} s", IO_TIMEOUT.as_secs());
        }
        Ok(())
    };
    let waiting = |error: &std::io::Error| {
        matches!(
            error.kind(),
            std::io::ErrorKind::WouldBlock
                | std::io::ErrorKind::TimedOut
                | std::io::ErrorKind::Interrupted
        )
    };
    std::thread::scope(|scope| {
        let reading = scope.spawn(move || -> Result<Instant> {
            let mut buffer = vec![0u8; WRITE_CHUNK_BYTES];
            let mut received = 0u64;
            let mut last_progress = Instant::now();
            while received < bytes {
                match receiver.read(&mut buffer) {
                    Ok(0) => bail!("the connection closed after {received} of {bytes} bytes"),
                    Ok(n) => {
                        received += n as u64;
                        last_progress = Instant::now();
                    }
                    Err(error) if waiting(&error) => check(last_progress)?,
                    Err(error) => return Err(error.into()),
                }
            }
            Ok(Instant::now())
        });
        let start = Instant::now();
        let mut sent = 0u64;
        let mut last_progress = start;
        let sending = (|| -> Result<()> {
            while sent < bytes {
                let offset = (sent % data.len() as u64) as usize;
                let length = (data.len() - offset).min((bytes - sent) as usize);
                match stream.write(&data[offset..offset + length]) {
                    Ok(n) => {
                        sent += n as u64;
                        last_progress = Instant::now();
                    }
                    Err(error) if waiting(&error) => check(last_progress)?,
                    Err(error) => return Err(error.into()),
                }
            }
            Ok(())
        })();
        if sending.is_err() {
            // Unblocks the reader at once.
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
        let end = reading
            .join()
            .map_err(|_| anyhow::anyhow!("the receiving thread panicked"))?;
        sending?;
        Ok(end? - start)
    })
}

/// Caps the TCP segment size so segments carry the scenario's payload size.
fn set_mss(listener: &TcpListener, mss: i32) -> Result<()> {
    // SAFETY: a valid socket and a pointer to an int of the size passed.
    let result = unsafe {
        libc::setsockopt(
            listener.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_MAXSEG,
            (&mss as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if result != 0 {
        return Err(std::io::Error::last_os_error()).context("cannot set TCP_MAXSEG");
    }
    Ok(())
}
