//! The wireguard-go engine: a real userspace WireGuard tunnel between the
//! two namespaces of a [`Lab`], one `wireguard-go -f IFACE` in each (Go's
//! WireGuard over a TUN device), one tunnel per row, and the transfer of
//! [`super::transfer`] through it as the sample, with each daemon's CPU
//! time; the same transfer over the bare veth link is the no-tunnel row.
//!
//! The tunnel is 10.233.0.1 (A) <-> 10.233.0.2 (B) over the lab's link,
//! keyed with a fresh X25519 key pair per side and run (made in process,
//! as `wg genkey` would), configured with `wg set` and `ip` inside each
//! namespace. wireguard-go's control sockets are in one directory for
//! every namespace (/var/run/wireguard/IFACE.sock), so each interface is
//! named for tlslab's process and its side
//! ([`crate::child::wireguard_interface_name`]). A row's daemons are
//! stopped when its sample is dropped (on success, failure and Ctrl-C;
//! they remove their sockets), and are tied to tlslab: if it is killed
//! they get SIGKILL from the kernel, their interfaces go with the
//! namespaces, and the next run removes the sockets they left
//! ([`crate::child::remove_leftovers`]).
//!
//! WireGuard's cryptography is fixed (ChaCha20-Poly1305, no HMAC digest,
//! no compression): every other cell is a row that says why, as for the
//! in-process WireGuard engine.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use base64::Engine as _;
use boringtun::x25519::{PublicKey, StaticSecret};

use super::engine::{EngineDescriptor, EngineDetails, EngineOptions, EngineRig, TunnelEngine};
use super::transfer::{self, TransferRoute, MAX_SEGMENT_BYTES};
use super::wireguard::WireguardEngine;
use super::{TunnelOutcome, TunnelSample};
use crate::backend::{CpuMasking, LibraryInfo};
use crate::measure::{Outcome, Probe};
use crate::scenario::tunnel::{Cipher, Compression, Digest, EngineId, TunnelScenario};
use crate::transport::lab::{self, Lab, LINK_A, LINK_B};
use crate::transport::netns::Namespace;

const TUNNEL_A: Ipv4Addr = Ipv4Addr::new(10, 233, 0, 1);
const TUNNEL_B: Ipv4Addr = Ipv4Addr::new(10, 233, 0, 2);
/// WireGuard's usual port, on each side's link address.
const WIREGUARD_PORT: u16 = 51820;
/// The tunnel's MTU: the lab link's 1500 bytes less WireGuard's IPv4, UDP
/// and data-message headers (20 + 8 + 32), so a row's largest segment
/// ([`MAX_SEGMENT_BYTES`] and 40 bytes of headers) fits one packet.
const TUNNEL_MTU: usize = 1440;
/// How long a tunnel may take to come up.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(15);
/// Bytes sent through a new tunnel before its first sample: the Noise
/// handshake happens on the first packet and is not a sample's.
const FIRST_TRANSFER_BYTES: u64 = 64 * 1024;
/// wireguard-go's refusal to start beside a kernel WireGuard, lifted: the
/// kernel here has none, and a userspace tunnel is what is measured.
const USERSPACE_CONSENT: &str = "WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD";

/// The word in the names of its scratch directories (the daemons' keys).
const SCRATCH: &str = "wireguard";

/// Why wireguard-go's rows cannot be counted under valgrind.
const UNCOUNTABLE: &str = "wireguard-go's work runs in its own processes (two wireguard-go daemons and the kernel between network namespaces), which tlslab cannot count per side under valgrind; the wireguard engine's rows (boringtun in process) are counted";

/// The wireguard-go engine in the registry of tunnel engines.
pub static DESCRIPTOR: EngineDescriptor = EngineDescriptor {
    id: EngineId::WireguardGo,
    library: "wireguard-go",
    listed: true,
    programs: &["wireguard-go", "wg", "ip"],
    scratch: Some(SCRATCH),
    install: "apt-get install wireguard-go wireguard-tools iproute2 (as root)",
    uncountable: Some(UNCOUNTABLE),
    details: EngineDetails {
        about: "a real userspace WireGuard tunnel between network namespaces; root only",
        open: || &WireguardGoEngine,
    },
};

/// The wireguard-go engine, as registered.
pub struct WireguardGoEngine;

impl TunnelEngine for WireguardGoEngine {
    fn id(&self) -> EngineId {
        EngineId::WireguardGo
    }

    /// Root, `ip`, `/dev/net/tun`, `wireguard-go` and `wg`;
    /// wireguard-go's version.
    fn preflight(&self) -> Result<LibraryInfo, String> {
        let mut missing = Vec::new();
        if let Some(lab) = crate::transport::netns::missing() {
            missing.push(lab);
        }
        let version = match Command::new("wireguard-go").arg("--version").output() {
            Ok(output) => String::from_utf8_lossy(&output.stdout)
                .split_whitespace()
                .nth(1)
                .map_or("unknown", |version| version.trim_start_matches('v'))
                .to_string(),
            Err(_) => {
                missing.push(
                    "the `wireguard-go` binary (Debian: apt-get install wireguard-go)".to_string(),
                );
                String::new()
            }
        };
        if Command::new("wg").arg("--version").output().is_err() {
            missing.push("the `wg` command (Debian: apt-get install wireguard-tools)".to_string());
        }
        if !missing.is_empty() {
            return Err(missing.join("; "));
        }
        Ok(LibraryInfo {
            subject: crate::scenario::Subject::engine(EngineId::WireguardGo),
            library: "wireguard-go".to_string(),
            version,
        })
    }

    fn cipher_unsupported(&self, cipher: Cipher) -> Option<String> {
        WireguardEngine.cipher_unsupported(cipher)
    }

    fn digest_unsupported(&self, digest: Digest) -> Option<String> {
        WireguardEngine.digest_unsupported(digest)
    }

    fn compression_unsupported(&self, compression: Compression) -> Option<String> {
        WireguardEngine.compression_unsupported(compression)
    }

    /// A tunnel row whose segments would not fit the tunnel's MTU.
    fn row_unsupported(&self, scenario: &TunnelScenario) -> Option<String> {
        (!scenario.baseline && scenario.payload_bytes > MAX_SEGMENT_BYTES).then(|| {
            format!(
                "{} bytes per packet do not fit the tunnel: its MTU is {TUNNEL_MTU} bytes (the link's 1500 less 60 of WireGuard's headers), {MAX_SEGMENT_BYTES} of them a TCP segment's payload",
                scenario.payload_bytes
            )
        })
    }

    /// wireguard-go is Go: its ChaCha20-Poly1305 (golang.org/x/crypto)
    /// picks its code from the CPU's features, which no variable of
    /// OpenSSL's masks.
    fn cpu_masking(&self) -> CpuMasking {
        CpuMasking::Impossible(
            "wireguard-go's ChaCha20-Poly1305 is Go's (golang.org/x/crypto), and tlslab has no switch to turn its CPU features off",
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
            crate::child::scratch_dir(SCRATCH).context("cannot create a temporary directory")?;
        let secrets = [new_secret()?, new_secret()?];
        for (secret, side) in secrets.iter().zip(["a", "b"]) {
            write_private_key(&directory.path().join(format!("{side}.key")), secret)?;
        }
        Ok(Box::new(WireguardGoRig {
            lab,
            public_keys: secrets.map(|secret| PublicKey::from(&secret)),
            directory,
            transfer_bytes: options.transfer_bytes,
        }))
    }
}

/// The lab and the two sides' keys every row's tunnel uses.
struct WireguardGoRig {
    lab: Lab,
    /// A's and B's public keys; the private keys are in `directory`
    /// (`a.key`, `b.key`), as `wg set` reads them.
    public_keys: [PublicKey; 2],
    directory: tempfile::TempDir,
    transfer_bytes: u64,
}

impl EngineRig for WireguardGoRig {
    fn prepare<'rig>(
        &'rig self,
        scenario: &TunnelScenario,
        interrupt: &'rig AtomicBool,
    ) -> Result<Probe<'rig, TunnelSample>, TunnelOutcome> {
        let data = transfer::transfer_data(scenario.payload);
        let mss = transfer::segment_bytes(scenario.payload_bytes);
        let (tunnel, route) = if scenario.baseline {
            let route = TransferRoute {
                lab: &self.lab,
                address_a: LINK_A,
                address_b: LINK_B,
                daemons: None,
            };
            (None, route)
        } else {
            let tunnel = self
                .start_tunnel(interrupt)
                .map_err(|error| Outcome::Failed {
                    reason: format!("{error:#}"),
                })?;
            let route = TransferRoute {
                lab: &self.lab,
                address_a: TUNNEL_A,
                address_b: TUNNEL_B,
                daemons: Some(tunnel.pids()),
            };
            (Some(tunnel), route)
        };
        let transfer_bytes = self.transfer_bytes;
        Ok(Box::new(move || {
            // The tunnel lives as long as the row's sample.
            let _tunnel = &tunnel;
            transfer::timed_transfers(&route, &data, mss, transfer_bytes, interrupt)
        }))
    }
}

impl WireguardGoRig {
    /// Starts the row's two wireguard-go daemons, one in each namespace,
    /// configures them, and sends a first transfer through the tunnel (its
    /// handshake).
    fn start_tunnel(&self, interrupt: &AtomicBool) -> Result<Tunnel> {
        let mut tunnel = Tunnel {
            daemons: Vec::new(),
        };
        // Each side: its namespace, its tunnel address, its peer's link
        // and tunnel addresses.
        let sides = [
            ('a', self.lab.a(), TUNNEL_A, LINK_B, TUNNEL_B),
            ('b', self.lab.b(), TUNNEL_B, LINK_A, TUNNEL_A),
        ];
        for (index, (side, namespace, ..)) in sides.iter().enumerate() {
            let interface = crate::child::wireguard_interface_name(*side);
            let log = self
                .directory
                .path()
                .join(format!("wireguard-go-{side}.log"));
            let daemon = start_daemon(namespace, &interface, &log)?;
            tunnel.daemons.push(daemon);
            tunnel.daemons[index].wait_until_listening(interrupt)?;
        }
        for (index, (side, namespace, address, peer_link, peer_address)) in sides.iter().enumerate()
        {
            let interface = &tunnel.daemons[index].interface;
            let peer_key = base64::engine::general_purpose::STANDARD
                .encode(self.public_keys[1 - index].as_bytes());
            let key_file = self.directory.path().join(format!("{side}.key"));
            let mut wg = Command::new("wg");
            wg.args(["set", interface, "listen-port", &WIREGUARD_PORT.to_string()])
                .arg("private-key")
                .arg(&key_file)
                .args(["peer", &peer_key, "allowed-ips"])
                .arg(format!("{peer_address}/32"))
                .arg("endpoint")
                .arg(format!("{peer_link}:{WIREGUARD_PORT}"));
            run_inside(namespace, wg).context("configuring WireGuard with `wg set`")?;
            namespace.ip(&["addr", "add", &format!("{address}/24"), "dev", interface])?;
            namespace.ip(&[
                "link",
                "set",
                interface,
                "mtu",
                &TUNNEL_MTU.to_string(),
                "up",
            ])?;
        }
        let data = transfer::transfer_data(crate::scenario::tunnel::Payload::Zero);
        lab::transfer(
            self.lab.a(),
            (self.lab.b(), TUNNEL_B),
            &data,
            MAX_SEGMENT_BYTES as i32,
            FIRST_TRANSFER_BYTES,
            interrupt,
        )
        .with_context(|| {
            format!(
                "the first transfer through the tunnel: {}",
                tunnel.daemons[0].log_tail()
            )
        })?;
        Ok(tunnel)
    }
}

/// Starts `wireguard-go -f INTERFACE` inside `namespace`, tied to tlslab,
/// its output to `log`.
fn start_daemon(namespace: &Namespace, interface: &str, log: &Path) -> Result<Daemon> {
    let output =
        std::fs::File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
    let mut command = Command::new("wireguard-go");
    command
        .args(["-f", interface])
        .env(USERSPACE_CONSENT, "1")
        .env("LOG_LEVEL", "error")
        .stdin(Stdio::null())
        .stdout(output.try_clone()?)
        .stderr(output);
    namespace.enter_on_exec(&mut command);
    let child = crate::child::spawn_tied(command, crate::child::Tie::Disposable)
        .context("cannot start wireguard-go")?;
    Ok(Daemon {
        child,
        interface: interface.to_string(),
        socket: Path::new(crate::child::WIREGUARD_SOCKET_DIR).join(format!("{interface}.sock")),
        log: log.to_path_buf(),
    })
}

/// Runs `command` inside `namespace` to its end; fails with its standard
/// error if it fails.
fn run_inside(namespace: &Namespace, mut command: Command) -> Result<()> {
    namespace.enter_on_exec(&mut command);
    let output = command.stdin(Stdio::null()).output()?;
    if !output.status.success() {
        bail!(
            "{:?} failed ({}): {}",
            command.get_program(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

/// One side's wireguard-go: its process, interface, control socket and log.
struct Daemon {
    child: Child,
    interface: String,
    socket: PathBuf,
    log: PathBuf,
}

impl Daemon {
    /// Waits until the daemon answers on its control socket.
    fn wait_until_listening(&mut self, interrupt: &AtomicBool) -> Result<()> {
        let start = Instant::now();
        loop {
            if std::os::unix::net::UnixStream::connect(&self.socket).is_ok() {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                bail!("wireguard-go exited ({status}): {}", self.log_tail());
            }
            if interrupt.load(Ordering::Relaxed) {
                bail!("interrupted");
            }
            if start.elapsed() > STARTUP_TIMEOUT {
                bail!(
                    "wireguard-go did not open {} within {} s: {}",
                    self.socket.display(),
                    STARTUP_TIMEOUT.as_secs(),
                    self.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The last lines of the daemon's output.
    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().rev().take(3).collect();
        lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
    }
}

/// The two daemons of one tunnel, stopped on drop: SIGTERM (wireguard-go
/// removes its socket and interface), SIGKILL after 3 s, and the socket
/// removed if it is still there.
struct Tunnel {
    daemons: Vec<Daemon>,
}

impl Tunnel {
    /// The daemons' PIDs, A's and B's.
    fn pids(&self) -> [u32; 2] {
        [self.daemons[0].child.id(), self.daemons[1].child.id()]
    }
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        for daemon in &mut self.daemons {
            crate::workload::process::terminate(&mut daemon.child, &[], Duration::from_secs(3));
            let _ = std::fs::remove_file(&daemon.socket);
        }
    }
}

/// A new X25519 private key, from OpenSSL's generator.
fn new_secret() -> Result<StaticSecret> {
    let mut bytes = [0u8; 32];
    openssl::rand::rand_bytes(&mut bytes)?;
    Ok(StaticSecret::from(bytes))
}

/// Writes a private key as `wg` reads it (base64), readable by root only.
fn write_private_key(path: &Path, secret: &StaticSecret) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let text = base64::engine::general_purpose::STANDARD.encode(secret.to_bytes());
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| writeln!(file, "{text}"))
        .with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::tunnel::Payload;

    #[test]
    fn rows_are_wireguards_own_and_fit_the_tunnel_or_say_why() {
        let engine = WireguardGoEngine;
        let row = |cipher, digest, payload_bytes| TunnelScenario {
            baseline: false,
            cipher,
            digest,
            compression: Compression::None,
            payload: Payload::Random,
            payload_bytes,
        };
        let chacha = |bytes| row(Cipher::Chacha20Poly1305, Digest::None, bytes);
        assert_eq!(engine.unsupported_reason(&chacha(1400)), None);
        assert_eq!(engine.unsupported_reason(&chacha(64)), None);
        let too_big = engine.unsupported_reason(&chacha(1401)).unwrap();
        assert!(too_big.contains("MTU is 1440"), "{too_big}");
        let aes = engine.unsupported_reason(&row(Cipher::Aes128Gcm, Digest::None, 1400));
        assert_eq!(aes, WireguardEngine.cipher_unsupported(Cipher::Aes128Gcm));
        assert!(aes.is_some());
        let baseline = TunnelScenario::baseline(Payload::Zero, 9000);
        assert_eq!(engine.unsupported_reason(&baseline), None);
        assert!(engine.uncountable().unwrap().contains("its own processes"));
    }

    #[test]
    fn a_private_key_is_written_as_wg_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.key");
        let secret = new_secret().unwrap();
        write_private_key(&path, &secret).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .unwrap();
        assert_eq!(bytes, secret.to_bytes());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
    }
}
