//! The processes a server under test runs as, seen from outside: a free
//! loopback port to give it, waiting until it listens, its children (the
//! workers of a master), its time on the CPU, and stopping it (SIGTERM,
//! then SIGKILL). Everything here reads /proc or uses plain signals, so it
//! serves any program, not one server.

use std::fs;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Child;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// A free loopback port (bound, then released for a server to take).
pub fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("finding a free loopback port")?;
    Ok(listener.local_addr()?.port())
}

/// Waits until `address` accepts TCP connections, for at most `timeout`;
/// fails if `child` exits first or the time runs out (then `child` is
/// killed), with `why` (such as the tail of its error log) in the message.
/// `name` is the program's, for the message.
pub fn wait_listening(
    child: &mut Child,
    name: &str,
    address: SocketAddr,
    timeout: Duration,
    why: impl Fn() -> String,
) -> Result<()> {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            bail!("{name} exited at start ({status}): {}", why());
        }
        if TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if started.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "{name} did not listen on {address} within {}s: {}",
                timeout.as_secs(),
                why()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The children of `parent` once it has forked at least one, for at most
/// `timeout` (a master listens before it forks its workers); empty if it
/// forked none in time.
pub fn wait_for_children(parent: u32, timeout: Duration) -> Vec<u32> {
    let started = Instant::now();
    let mut children = children_of(parent);
    while children.is_empty() && started.elapsed() <= timeout {
        std::thread::sleep(Duration::from_millis(10));
        children = children_of(parent);
    }
    children
}

/// Stops `child` and what it left: SIGTERM (a server's fast shutdown, its
/// workers going with it), up to `grace` for it to exit, then SIGKILL to
/// it and to `workers` left behind.
pub fn terminate(child: &mut Child, workers: &[u32], grace: Duration) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
    for &worker in workers {
        // SAFETY: as above, for a worker left behind.
        unsafe { libc::kill(worker as libc::pid_t, libc::SIGKILL) };
    }
}

/// The pids of a process's children, from /proc.
pub fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut children: Vec<u32> = entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| parent_of(pid) == Some(parent))
        .collect();
    children.sort_unstable();
    children
}

/// A process's parent, from /proc/PID/stat.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: fields after it.
    let after = &stat[stat.rfind(')')? + 2..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// A process's time on the CPU (its main thread; for a thread id, that
/// thread's), in nanoseconds, from the first field of /proc/PID/schedstat.
pub fn process_cpu_ns(pid: u32) -> Result<u64> {
    process_cpu_ns_of(&format!("/proc/{pid}/schedstat"))
}

/// A process's time on the CPU summed over all its threads, in
/// nanoseconds, from /proc/PID/task/*/schedstat (a threaded server's
/// workers are threads of one process; threads that ended are not
/// counted, so it serves servers whose threads live as long as they do).
pub fn tasks_cpu_ns(pid: u32) -> Result<u64> {
    let tasks = format!("/proc/{pid}/task");
    let entries = fs::read_dir(&tasks).with_context(|| format!("reading {tasks}"))?;
    let mut total = 0;
    for entry in entries.flatten() {
        if let Some(thread) = entry
            .file_name()
            .to_str()
            .and_then(|t| t.parse::<u32>().ok())
        {
            // A thread that ended since the listing is skipped.
            if let Ok(ns) = process_cpu_ns_of(&format!("{tasks}/{thread}/schedstat")) {
                total += ns;
            }
        }
    }
    Ok(total)
}

fn process_cpu_ns_of(path: &str) -> Result<u64> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    text.split_whitespace()
        .next()
        .and_then(|field| field.parse().ok())
        .with_context(|| format!("unreadable {path}: {text:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_is_found_under_its_parent_and_its_cpu_is_read() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let me = std::process::id();
        assert!(children_of(me).contains(&child.id()));
        assert!(process_cpu_ns(me).unwrap() > 0);
        let main_thread = process_cpu_ns(me).unwrap();
        assert!(tasks_cpu_ns(me).unwrap() >= main_thread);
        terminate(&mut child, &[], Duration::from_secs(1));
        assert!(child.try_wait().unwrap().is_some());
        assert!(free_port().unwrap() > 0);
    }
}
