//! The processes tlslab starts and the files and namespaces they need,
//! made so that nothing outlives tlslab for long, even when it is killed
//! with SIGKILL (which no handler sees).
//!
//! - A child is tied to tlslab: the kernel sends it a signal when tlslab
//!   dies (`PR_SET_PDEATHSIG`). That signal fires when the *thread* that
//!   forked the child ends, not the process, so every tied child is
//!   spawned from one thread that lives as long as the process.
//! - A server (nginx, OpenVPN, perf) runs in a process group of its own, so
//!   a Ctrl-C typed in the terminal (SIGINT to the whole foreground group)
//!   reaches tlslab only; tlslab then stops it in order, after it has read
//!   what it needs from it.
//! - A scratch directory or file and a named network namespace carry their
//!   owner in their name: `tlslab-KIND-PID-START-…`, START being the
//!   owner's start time in clock ticks since boot (`/proc/PID/stat`), so a
//!   reused PID is not taken for the owner. [`remove_leftovers`], called by
//!   the commands that make such things, removes those whose owner is gone.
//! - A WireGuard interface (wireguard-go's) is named `twgPIDSIDEN`, too
//!   short for a start time (15 bytes at most); its control socket in
//!   /var/run/wireguard, which every namespace shares, outlives a
//!   wireguard-go that was killed. [`remove_leftovers`] removes a socket
//!   nobody listens on whose owner PID runs no process.

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, OnceLock};
use std::time::Duration;

/// Where named network namespaces are (`ip netns add NAME`).
const NETNS_DIR: &str = "/run/netns";

/// Where wireguard-go puts each interface's control socket, `IFACE.sock`:
/// one directory for every network namespace.
pub const WIREGUARD_SOCKET_DIR: &str = "/var/run/wireguard";

/// How every WireGuard interface tlslab makes is named: this, the owner's
/// PID, the side (`a` or `b`), a number.
const WIREGUARD_INTERFACE_PREFIX: &str = "twg";

/// A process's start time, in clock ticks since boot (the 22nd field of
/// /proc/PID/stat), or None if there is no such process.
pub fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: the fields
    // after it start with the third, the state.
    let after = stat.get(stat.rfind(')')? + 2..)?;
    after.split_whitespace().nth(19)?.parse().ok()
}

/// This process's owner tag, `PID-START`, as names of its scratch
/// directories and namespaces carry it.
pub fn owner_tag() -> String {
    static TAG: OnceLock<String> = OnceLock::new();
    TAG.get_or_init(|| {
        let pid = std::process::id();
        format!("{pid}-{}", start_ticks(pid).unwrap_or(0))
    })
    .clone()
}

/// Returns true if and only if the process with this PID and start time
/// still runs (a zombie, dead but not yet reaped, does not).
pub fn owner_alive(pid: u32, start: u64) -> bool {
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rfind(')')
            .and_then(|end| stat.get(end + 2..))
            .is_some_and(|after| after.starts_with('Z'))
    });
    !zombie && start_ticks(pid) == Some(start)
}

/// A scratch directory in the temporary directory, named
/// `tlslab-KIND-PID-START-XXXXXX` (KIND: letters only), removed when it drops.
pub fn scratch_dir(kind: &str) -> io::Result<tempfile::TempDir> {
    debug_assert!(kind.chars().all(|c| c.is_ascii_alphabetic()));
    tempfile::Builder::new()
        .prefix(&format!("tlslab-{kind}-{}-", owner_tag()))
        .tempdir()
}

/// A path for a scratch file in the temporary directory,
/// `tlslab-KIND-PID-START.EXTENSION` (one per process and kind).
pub fn scratch_file(kind: &str, extension: &str) -> PathBuf {
    std::env::temp_dir().join(format!("tlslab-{kind}-{}.{extension}", owner_tag()))
}

/// The owner (PID, start time) in a name made by [`scratch_dir`],
/// [`scratch_file`] or [`namespace_name`]: `tlslab-WORD-PID-START…` with
/// WORD letters only, or `tlslab-PID-START-…` for a namespace.
fn tagged_owner(name: &str) -> Option<(u32, u64)> {
    let rest = name.strip_prefix("tlslab-")?;
    let rest = match rest.split_once('-') {
        Some((kind, after))
            if !kind.is_empty() && kind.chars().all(|c| c.is_ascii_alphabetic()) =>
        {
            after
        }
        _ => rest,
    };
    let mut parts = rest.splitn(3, ['-', '.']);
    let pid = parts.next()?.parse().ok()?;
    let start = parts.next()?.parse().ok()?;
    Some((pid, start))
}

/// A network namespace's name for this process: `tlslab-PID-START-SUFFIX`.
pub fn namespace_name(suffix: &str) -> String {
    format!("tlslab-{}-{suffix}", owner_tag())
}

/// A new WireGuard interface name for one side (`a` or `b`) of a tunnel
/// of this process, `twgPIDSIDEN`: its control socket's name is unique on
/// the machine (the sockets of every namespace share one directory), and
/// says whose it is. At most 15 bytes, as Linux allows.
pub fn wireguard_interface_name(side: char) -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    debug_assert!(matches!(side, 'a' | 'b'));
    let number = NEXT.fetch_add(1, Ordering::Relaxed) % 10_000;
    format!(
        "{WIREGUARD_INTERFACE_PREFIX}{}{side}{number}",
        std::process::id()
    )
}

/// The prefix of every WireGuard interface (and socket) name of the
/// process `pid`'s tunnels on `side`.
pub fn wireguard_interface_prefix(pid: u32, side: char) -> String {
    format!("{WIREGUARD_INTERFACE_PREFIX}{pid}{side}")
}

/// The owner PID of a WireGuard control socket named by
/// [`wireguard_interface_name`] (`twgPIDSIDEN.sock`).
fn wireguard_socket_owner(name: &str) -> Option<u32> {
    let rest = name
        .strip_prefix(WIREGUARD_INTERFACE_PREFIX)?
        .strip_suffix(".sock")?;
    let digits = rest.find(|c: char| !c.is_ascii_digit())?;
    let (pid, after) = rest.split_at(digits);
    let number = after.strip_prefix(['a', 'b'])?;
    (!number.is_empty() && number.chars().all(|c| c.is_ascii_digit())).then_some(())?;
    pid.parse().ok()
}

/// Returns true if and only if nothing listens on the Unix socket at `path`
/// (its process is gone; a live wireguard-go answers).
fn nobody_listens(path: &Path) -> bool {
    matches!(
        std::os::unix::net::UnixStream::connect(path),
        Err(error) if error.kind() == io::ErrorKind::ConnectionRefused
    )
}

/// The owner of a namespace named by an older tlslab, `tlslab-PID-a` or
/// `tlslab-PID-b` (no start time): its PID.
fn legacy_namespace_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("tlslab-")?;
    let (pid, side) = rest.split_once('-')?;
    matches!(side, "a" | "b").then_some(())?;
    pid.parse().ok()
}

/// Returns true if and only if a process with this PID runs tlslab
/// (by its command name).
fn is_tlslab(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|comm| comm.trim() == "tlslab")
}

/// What [`remove_leftovers`] removed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Removed {
    /// Scratch directories and files, in the temporary directory.
    pub paths: Vec<PathBuf>,
    /// Named network namespaces.
    pub namespaces: Vec<String>,
    /// WireGuard control sockets (wireguard-go's, killed with tlslab).
    pub sockets: Vec<PathBuf>,
}

/// Removes, once per process, what tlslab runs that are gone (killed, or
/// crashed) left behind: tagged scratch directories and files in the
/// temporary directory, named network namespaces (after killing the
/// processes still in them, an older tlslab's OpenVPN) and wireguard-go's
/// control sockets. Things of runs still going are left alone. Says on
/// standard error what it removed.
pub fn remove_leftovers() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let removed = remove_leftovers_in(
            &std::env::temp_dir(),
            Path::new(NETNS_DIR),
            Path::new(WIREGUARD_SOCKET_DIR),
        );
        let count = removed.paths.len() + removed.namespaces.len() + removed.sockets.len();
        if count > 0 {
            let mut names: Vec<String> = removed
                .paths
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            names.extend(removed.namespaces.iter().map(|n| format!("namespace {n}")));
            names.extend(removed.sockets.iter().map(|p| p.display().to_string()));
            eprintln!(
                "removed {count} leftover(s) of tlslab runs that ended without cleaning up: {}",
                names.join(", ")
            );
        }
    });
}

/// [`remove_leftovers`] in `temp`, the namespaces of `netns` and the
/// WireGuard sockets of `wireguard`, each time.
pub fn remove_leftovers_in(temp: &Path, netns: &Path, wireguard: &Path) -> Removed {
    let mut removed = Removed::default();
    for entry in std::fs::read_dir(temp).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((pid, start)) = tagged_owner(&name) else {
            continue;
        };
        if owner_alive(pid, start) {
            continue;
        }
        let path = entry.path();
        let gone = match entry.file_type() {
            Ok(kind) if kind.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
        if gone.is_ok() {
            removed.paths.push(path);
        }
    }
    for entry in std::fs::read_dir(netns).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let stale = match (tagged_owner(&name), legacy_namespace_owner(&name)) {
            (_, Some(pid)) => !is_tlslab(pid),
            (Some((pid, start)), None) => !owner_alive(pid, start),
            (None, None) => false,
        };
        if stale && remove_namespace(&name) {
            removed.namespaces.push(name);
        }
    }
    for entry in std::fs::read_dir(wireguard).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = wireguard_socket_owner(&name) else {
            continue;
        };
        // A PID that runs a process may be a run starting its tunnel (the
        // socket bound, not yet listening): left alone.
        let path = entry.path();
        let stale = !Path::new(&format!("/proc/{pid}")).exists() && nobody_listens(&path);
        if stale && std::fs::remove_file(&path).is_ok() {
            removed.sockets.push(path);
        }
    }
    removed
}

/// Kills the processes in a named namespace and deletes it; returns true
/// if and only if it is gone.
fn remove_namespace(name: &str) -> bool {
    if let Ok(output) = Command::new("ip").args(["netns", "pids", name]).output() {
        for pid in String::from_utf8_lossy(&output.stdout)
            .split_whitespace()
            .filter_map(|p| p.parse::<libc::pid_t>().ok())
        {
            // SAFETY: kill(2) on a process in a namespace of a tlslab run
            // that is gone (its OpenVPN, orphaned).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
    Command::new("ip")
        .args(["netns", "del", name])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// A request to the spawning thread: a command, and where to send its child.
type SpawnRequest = (Command, mpsc::SyncSender<io::Result<Child>>);

/// The thread every tied child is forked from: it lives as long as the
/// process (its channel is never closed), so a child's parent-death
/// signal fires when tlslab ends, not when some worker thread does.
fn spawner() -> &'static mpsc::Sender<SpawnRequest> {
    static SPAWNER: OnceLock<mpsc::Sender<SpawnRequest>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (requests, incoming) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("tlslab-spawner".to_string())
            .spawn(move || {
                for (mut command, reply) in incoming {
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("starting the thread that spawns children");
        requests
    })
}

/// How a child is tied to tlslab.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tie {
    /// A server: in a process group of its own (a terminal's Ctrl-C does
    /// not reach it; tlslab stops it), SIGTERM when tlslab dies (nginx
    /// shuts down, taking its workers with it).
    Server,
    /// A server that keeps nothing an orderly stop would save (OpenVPN:
    /// its device and addresses go with its namespace): in a process group
    /// of its own, as a server, but SIGKILL when tlslab dies. OpenVPN can
    /// lose a SIGTERM that arrives while it is still initialising (one kept
    /// running after a killed tlslab in CI and here, one run in three), and
    /// the death signal comes only once.
    Disposable,
    /// A worker of tlslab's own (tlslab again, valgrind): in tlslab's
    /// process group (a terminal's Ctrl-C reaches it, and it stops as
    /// tlslab does), SIGKILL when tlslab dies.
    Worker,
}

/// Spawns `command` tied to tlslab as `tie` says (see the module's notes).
pub fn spawn_tied(mut command: Command, tie: Tie) -> io::Result<Child> {
    use std::os::unix::process::CommandExt;
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    let signal = match tie {
        Tie::Server => {
            command.process_group(0);
            libc::SIGTERM
        }
        Tie::Disposable => {
            command.process_group(0);
            libc::SIGKILL
        }
        Tie::Worker => libc::SIGKILL,
    };
    // SAFETY: between fork and exec only async-signal-safe calls (prctl,
    // getppid); no allocation.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, signal) != 0 {
                return Err(io::Error::last_os_error());
            }
            // tlslab may have died before the prctl: then no signal comes.
            if libc::getppid() != parent {
                return Err(io::Error::other("tlslab ended while starting a child"));
            }
            Ok(())
        });
    }
    let (reply, child) = mpsc::sync_channel(1);
    spawner()
        .send((command, reply))
        .map_err(|_| io::Error::other("the thread that spawns children is gone"))?;
    child
        .recv()
        .map_err(|_| io::Error::other("the thread that spawns children is gone"))?
}

/// Runs a tied worker (tlslab again) to its end, collecting its standard
/// output and error (they must be piped), and sends it SIGINT once when
/// `interrupt` is set: a SIGTERM or a SIGINT sent to tlslab alone stops it
/// too, as a terminal's Ctrl-C (sent to both) does.
pub fn run_worker(mut command: Command, interrupt: &AtomicBool) -> io::Result<Output> {
    use std::io::Read;
    command.stdin(std::process::Stdio::null());
    let mut child = spawn_tied(command, Tie::Worker)?;
    let read_all = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = read_all(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = read_all(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let status = wait_forwarding_interrupt(&mut child, interrupt)?;
    Ok(Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

/// Waits for `child`, sending it SIGINT once when `interrupt` is set.
pub fn wait_forwarding_interrupt(
    child: &mut Child,
    interrupt: &AtomicBool,
) -> io::Result<ExitStatus> {
    let mut forwarded = false;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if !forwarded && interrupt.load(Ordering::SeqCst) {
            // SAFETY: kill(2) on our own child, not yet reaped.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
            forwarded = true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_their_owner() {
        assert_eq!(
            tagged_owner("tlslab-nginx-41-9000-AbC12x"),
            Some((41, 9000))
        );
        assert_eq!(tagged_owner("tlslab-speed-41-9000.json"), Some((41, 9000)));
        assert_eq!(tagged_owner("tlslab-41-9000-a"), Some((41, 9000)));
        // Untagged names (older tlslab, other tools) are not anyone's.
        assert_eq!(tagged_owner("tlslab-nginx-AbC12x"), None);
        assert_eq!(tagged_owner("tlslab-41-a"), None);
        assert_eq!(tagged_owner("other-41-9000"), None);
        assert_eq!(legacy_namespace_owner("tlslab-41-a"), Some(41));
        assert_eq!(legacy_namespace_owner("tlslab-41-9000-a"), None);
        let own = owner_tag();
        let name = format!("tlslab-nginx-{own}-xyz");
        let (pid, start) = tagged_owner(&name).unwrap();
        assert_eq!(pid, std::process::id());
        assert!(owner_alive(pid, start));
        assert!(
            !owner_alive(pid, start + 1),
            "a reused PID is not the owner"
        );
    }

    #[test]
    fn only_what_a_gone_process_left_is_removed() {
        let temp = tempfile::tempdir().unwrap();
        let netns = tempfile::tempdir().unwrap();
        let wireguard = tempfile::tempdir().unwrap();
        // A process that has ended: its PID, and a start time no process has.
        let mut ended = Command::new("true").spawn().unwrap();
        let ended_pid = ended.id();
        ended.wait().unwrap();
        let own = owner_tag();
        let gone = [
            format!("tlslab-nginx-{ended_pid}-12345-aaaaaa"),
            format!("tlslab-nginx-{}-1-bbbbbb", std::process::id()),
        ];
        let kept = [
            format!("tlslab-nginx-{own}-cccccc"),
            "tlslab-nginx-dddddd".to_string(),
            "something-else".to_string(),
        ];
        for name in gone.iter().chain(&kept) {
            std::fs::create_dir(temp.path().join(name)).unwrap();
            std::fs::write(temp.path().join(name).join("nginx.conf"), "").unwrap();
        }
        let file = format!("tlslab-speed-{ended_pid}-12345.json");
        std::fs::write(temp.path().join(&file), "[]").unwrap();
        // WireGuard sockets: a dead one of a gone process; a dead one of a
        // running process (it may be starting), a live one, one not ours.
        let socket = |name: &str, listening: bool| {
            let listener =
                std::os::unix::net::UnixListener::bind(wireguard.path().join(name)).unwrap();
            listening.then_some(listener)
        };
        let me = std::process::id();
        let _dead = socket(&format!("twg{ended_pid}a3.sock"), false);
        let _starting = socket(&format!("twg{me}b0.sock"), false);
        let _live = socket(&format!("twg{ended_pid}b4.sock"), true);
        let _other = socket(&format!("wg{ended_pid}a3.sock"), false);
        let removed = remove_leftovers_in(temp.path(), netns.path(), wireguard.path());
        let mut removed_names: Vec<String> = removed
            .paths
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        removed_names.sort();
        let mut expected: Vec<String> = gone.to_vec();
        expected.push(file);
        expected.sort();
        assert_eq!(removed_names, expected);
        for name in &kept {
            assert!(temp.path().join(name).exists(), "{name} was removed");
        }
        assert!(removed.namespaces.is_empty());
        assert_eq!(
            removed.sockets,
            vec![wireguard.path().join(format!("twg{ended_pid}a3.sock"))]
        );
        for kept in [
            format!("twg{me}b0.sock"),
            format!("twg{ended_pid}b4.sock"),
            format!("wg{ended_pid}a3.sock"),
        ] {
            assert!(wireguard.path().join(&kept).exists(), "{kept} was removed");
        }
    }

    #[test]
    fn wireguard_interfaces_are_named_for_their_owner_within_linuxs_limit() {
        let name = wireguard_interface_name('a');
        assert!(name.len() <= 15, "{name}");
        assert!(name.starts_with(&wireguard_interface_prefix(std::process::id(), 'a')));
        assert_ne!(name, wireguard_interface_name('a'));
        let socket = format!("{name}.sock");
        assert_eq!(wireguard_socket_owner(&socket), Some(std::process::id()));
        assert_eq!(wireguard_socket_owner("twg12b.sock"), None);
        assert_eq!(wireguard_socket_owner("twg12c3.sock"), None);
        assert_eq!(wireguard_socket_owner("wg0.sock"), None);
    }
}
