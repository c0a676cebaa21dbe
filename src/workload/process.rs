//! The processes a server under test or a tunnel daemon runs as, seen
//! from outside: a free loopback port to give it, waiting until it
//! listens, its children (the workers of a master), its time on the CPU
//! (one thread's, or the whole process's), and stopping it (SIGTERM, then
//! SIGKILL). Everything here reads /proc or uses plain signals, so it
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

/// The largest PID Linux gives (`PID_MAX_LIMIT` on 64-bit machines).
const PID_MAX_LIMIT: u32 = 1 << 22;

/// A whole process's time on the CPU, in nanoseconds: every thread's,
/// living and ended, user and system (the kernel's work in its system
/// calls), but not its children's. This is the utime + stime of
/// /proc/PID/stat, read through the process's CPU clock
/// (`clock_getcpuclockid`) because /proc counts in clock ticks (10 ms),
/// too coarse for a transfer of a few megabytes; /proc is the fallback.
/// A multi-threaded daemon (wireguard-go) needs this, not
/// [`process_cpu_ns`], which reads one thread.
pub fn process_cpu_time_ns(pid: u32) -> Result<u64> {
    // The clock's id holds the PID shifted by 3 bits: a PID beyond Linux's
    // limit (2^22) would wrap, and 0 is this process.
    if pid == 0 || pid > PID_MAX_LIMIT {
        bail!("no process has the PID {pid}");
    }
    let mut clock: libc::clockid_t = 0;
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: both pointers are to live locals of the types asked for.
    let read = unsafe {
        libc::clock_getcpuclockid(pid as libc::pid_t, &mut clock) == 0
            && libc::clock_gettime(clock, &mut time) == 0
    };
    if read {
        return Ok(time.tv_sec as u64 * 1_000_000_000 + time.tv_nsec as u64);
    }
    stat_cpu_time_ns(pid)
}

/// A process's utime + stime from /proc/PID/stat, in nanoseconds (to the
/// clock tick, 10 ms).
pub fn stat_cpu_time_ns(pid: u32) -> Result<u64> {
    let path = format!("/proc/{pid}/stat");
    let stat = fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    let ticks = stat_cpu_ticks(&stat).with_context(|| format!("unreadable {path}: {stat:?}"))?;
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Ok(ticks * 1_000_000_000 / per_second)
}

/// utime + stime (the 14th and 15th fields) of a /proc/PID/stat line, in
/// clock ticks.
fn stat_cpu_ticks(stat: &str) -> Option<u64> {
    // The command name is in parentheses and may hold spaces: the fields
    // after it start with the third, the state.
    let mut after = stat
        .get(stat.rfind(')')? + 2..)?
        .split_whitespace()
        .skip(11);
    let user: u64 = after.next()?.parse().ok()?;
    let system: u64 = after.next()?.parse().ok()?;
    Some(user + system)
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

    #[test]
    fn a_busy_process_cpu_time_counts_every_thread_and_agrees_with_proc() {
        // The fields after a command name with spaces and parentheses.
        let line = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 17 0 0 20 0 3 0 99";
        assert_eq!(stat_cpu_ticks(line), Some(267));
        // This process, spinning on two threads one after the other.
        let me = std::process::id();
        let before = process_cpu_time_ns(me).unwrap();
        // Spins until the thread has had `millis` of CPU time (not of wall
        // time: the machine may be loaded).
        let spin = |millis: u64| {
            let start = crate::backend::thread_cpu_ns();
            let mut x = 0u64;
            while crate::backend::thread_cpu_ns() - start < millis * 1_000_000 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        };
        // A thread that ends before the second reading still counts.
        std::thread::spawn(move || spin(120)).join().unwrap();
        spin(120);
        let after = process_cpu_time_ns(me).unwrap();
        assert!(
            after - before >= 240_000_000,
            "{} ns for 240 ms of spinning",
            after - before
        );
        // /proc counts the same time, to the tick.
        let from_proc = stat_cpu_time_ns(me).unwrap();
        let precise = process_cpu_time_ns(me).unwrap();
        assert!(
            from_proc.abs_diff(precise) < 50_000_000,
            "/proc {from_proc} ns, clock {precise} ns"
        );
        let mut ended = std::process::Command::new("true").spawn().unwrap();
        let ended_pid = ended.id();
        ended.wait().unwrap();
        assert!(process_cpu_time_ns(ended_pid).is_err());
        assert!(process_cpu_time_ns(0).is_err());
        assert!(process_cpu_time_ns(u32::MAX / 2).is_err());
    }
}
