//! The OpenVPN engine: a static-key point-to-point tunnel between the two
//! namespaces of a [`Lab`], one tunnel per row, and a fixed-size TCP
//! transfer through it each way as the sample, with each OpenVPN
//! process's CPU time ([`super::transfer`]); the same transfer over the
//! bare veth link is the no-tunnel row.
//!
//! The tunnel is 10.232.0.1 (A) <-> 10.232.0.2 (B) over the lab's link.
//! OpenVPN runs inside the lab's namespaces without naming them: it enters
//! its namespace between fork and exec, so it needs no `ip netns exec`
//! and nothing is left in /run/netns. Its processes are stopped when the
//! row's sample is dropped (on success, failure and Ctrl-C), and are tied
//! to tlslab: if tlslab is killed they get SIGKILL from the kernel. The
//! key's scratch directory carries tlslab's process in its name; the next
//! run removes it if tlslab was killed ([`crate::child`]).

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::engine::{EngineOptions, EngineRig, TunnelEngine};
use super::transfer::{self, TransferRoute};
use super::{TunnelOutcome, TunnelSample};
use crate::backend::LibraryInfo;
use crate::measure::{Outcome, Probe};
use crate::scenario::names::Named;
use crate::scenario::tunnel::{Cipher, CipherMode, Compression, Digest, EngineId, TunnelScenario};
use crate::transport::lab::{Lab, LINK_A, LINK_B};

const TUNNEL_A: Ipv4Addr = Ipv4Addr::new(10, 232, 0, 1);
const TUNNEL_B: Ipv4Addr = Ipv4Addr::new(10, 232, 0, 2);
const OPENVPN_PORT: u16 = 1194;
/// How long a tunnel may take to come up.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(15);

/// The OpenVPN engine, as registered.
pub struct OpenvpnEngine;

impl TunnelEngine for OpenvpnEngine {
    fn id(&self) -> EngineId {
        EngineId::Openvpn
    }

    /// Root, `ip`, `/dev/net/tun` and `openvpn`; OpenVPN's version.
    fn preflight(&self) -> Result<LibraryInfo, String> {
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
            backend: EngineId::Openvpn.id().to_string(),
            library: "OpenVPN".to_string(),
            version,
        })
    }

    fn cipher_unsupported(&self, cipher: Cipher) -> Option<String> {
        (cipher.mode() == CipherMode::Aead).then(|| {
            format!(
                "OpenVPN offers {} in TLS mode only, not with a static key",
                cipher.openssl_name().unwrap_or_default()
            )
        })
    }

    fn digest_unsupported(&self, digest: Digest) -> Option<String> {
        (digest == Digest::Sha0).then(|| "SHA-0 is not in OpenSSL 3 (OpenVPN's library)".into())
    }

    fn compression_unsupported(&self, compression: Compression) -> Option<String> {
        // OpenVPN could, but the in-process twin could not: keep the rows comparable.
        (compression == Compression::Lzo && !cfg!(feature = "lzo"))
            .then(|| Compression::Lzo.unsupported_reason().map(String::from))
            .flatten()
    }

    fn uncountable(&self) -> Option<&'static str> {
        Some(
            "OpenVPN's work runs in its own processes (two openvpn daemons and the kernel between network namespaces), which tlslab cannot count per side under valgrind; the inprocess engine's rows are counted",
        )
    }

    fn interleaves_rows(&self) -> bool {
        // Each row needs its own tunnel up.
        false
    }

    fn start(&self, options: &EngineOptions) -> Result<Box<dyn EngineRig>> {
        crate::child::remove_leftovers();
        let lab = Lab::create().context("setting up the namespaces")?;
        let directory =
            crate::child::scratch_dir("openvpn").context("cannot create a temporary directory")?;
        let key_file = directory.path().join("static.key");
        write_static_key(&key_file)?;
        Ok(Box::new(OpenvpnRig {
            lab,
            key_file,
            directory,
            transfer_bytes: options.transfer_bytes,
        }))
    }
}

/// The lab and the static key every row's tunnel uses.
struct OpenvpnRig {
    lab: Lab,
    key_file: PathBuf,
    directory: tempfile::TempDir,
    transfer_bytes: u64,
}

impl EngineRig for OpenvpnRig {
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
            let tunnel = self.start_tunnel(scenario, interrupt).map_err(|error| {
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
            daemons: tunnel.as_ref().map(|tunnel| {
                let pid = |index: usize| tunnel.processes[index].id();
                [pid(0), pid(1)]
            }),
        };
        let transfer_bytes = self.transfer_bytes;
        Ok(Box::new(move || {
            // The tunnel lives as long as the row's sample.
            let _tunnel = &tunnel;
            transfer::timed_transfers(&route, &data, mss, transfer_bytes, interrupt)
        }))
    }
}

impl OpenvpnRig {
    /// Starts the row's two OpenVPN processes, one in each namespace, and
    /// waits until both say the tunnel is up.
    fn start_tunnel(&self, scenario: &TunnelScenario, interrupt: &AtomicBool) -> Result<Tunnel> {
        let mut tunnel = Tunnel {
            processes: Vec::new(),
        };
        let mut logs = Vec::new();
        for (side, namespace, local, remote, tunnel_local, tunnel_remote) in [
            ("a", self.lab.a(), LINK_A, LINK_B, TUNNEL_A, TUNNEL_B),
            ("b", self.lab.b(), LINK_B, LINK_A, TUNNEL_B, TUNNEL_A),
        ] {
            let log = self.directory.path().join(format!("openvpn-{side}.log"));
            let _ = std::fs::remove_file(&log);
            let mut command = Command::new("openvpn");
            command
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
            namespace.enter_on_exec(&mut command);
            let child = crate::child::spawn_tied(command, crate::child::Tie::Disposable)
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

/// The two OpenVPN processes of one tunnel, stopped on drop.
struct Tunnel {
    processes: Vec<Child>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::tunnel::Payload;

    #[test]
    fn static_key_rows_refuse_aead_ciphers_and_sha0_and_say_why() {
        let engine = OpenvpnEngine;
        let row = |cipher, digest| TunnelScenario {
            baseline: false,
            cipher,
            digest,
            compression: Compression::None,
            payload: Payload::Random,
            payload_bytes: 1400,
        };
        let aead = engine.unsupported_reason(&row(Cipher::Aes128Gcm, Digest::None));
        assert!(aead.is_some_and(|r| r.contains("TLS mode only")));
        let sha0 = engine.unsupported_reason(&row(Cipher::Aes128Cbc, Digest::Sha0));
        assert!(sha0.is_some_and(|r| r.contains("SHA-0")));
        assert_eq!(
            engine.unsupported_reason(&row(Cipher::BfCbc, Digest::Sha1)),
            None
        );
        assert_eq!(
            engine.unsupported_reason(&TunnelScenario::baseline(Payload::Zero, 64)),
            None
        );
    }
}
