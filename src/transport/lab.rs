//! The lab of the real VPN engines: two network namespaces joined by a
//! veth pair (10.231.0.1/30 in A, .2 in B), and a timed TCP transfer
//! between them, over the bare link (the no-tunnel row) or over a tunnel
//! an engine set up on top of it.
//!
//! The namespaces are [`super::netns`]'s, held by file descriptor, not
//! named (`ip netns add`): programs run inside one by entering it between
//! fork and exec ([`Namespace::enter_on_exec`]), `ip` reaches one by
//! [`Namespace::path`], and the transfer's sockets are opened by threads
//! that entered it. So nothing is left behind, whatever ends tlslab: on
//! success, failure and Ctrl-C the lab's drop releases the namespaces
//! (the engine stops its programs first, while the lab still holds them);
//! after kill -9 the kernel closes tlslab's descriptors and sends the
//! programs tied to tlslab SIGKILL ([`crate::child::Tie::Disposable`]), and a
//! namespace no process holds is gone, with the veth end in it (and so
//! the pair). Named namespaces an older tlslab left (`tlslab-PID-a`) are
//! still removed by the next run ([`crate::child::remove_leftovers`]).

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::netns::Namespace;

/// Namespace A's end of the veth link.
pub const LINK_A: Ipv4Addr = Ipv4Addr::new(10, 231, 0, 1);
/// Namespace B's end of the veth link.
pub const LINK_B: Ipv4Addr = Ipv4Addr::new(10, 231, 0, 2);

/// How long one transfer may stall before it fails.
const IO_TIMEOUT: Duration = Duration::from_secs(30);
/// How often a blocked transfer checks for Ctrl-C.
const POLL_INTERVAL: Duration = Duration::from_millis(200);
/// The most a transfer writes at once.
pub const WRITE_CHUNK_BYTES: usize = 64 * 1024;

/// Two namespaces joined by a veth pair; dropping it removes both (and
/// the pair).
#[derive(Debug)]
pub struct Lab {
    a: Namespace,
    b: Namespace,
    /// Namespace A's end of the veth pair.
    veth_a: String,
}

/// What crossed namespace A's end of the link, from its `/proc/net/dev`:
/// sent is from A to B, received from B to A (frames with their headers).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkCounters {
    pub sent_bytes: u64,
    pub sent_frames: u64,
    pub received_bytes: u64,
    pub received_frames: u64,
}

impl LinkCounters {
    /// What crossed the link since `earlier`.
    pub fn since(&self, earlier: &LinkCounters) -> LinkCounters {
        LinkCounters {
            sent_bytes: self.sent_bytes.saturating_sub(earlier.sent_bytes),
            sent_frames: self.sent_frames.saturating_sub(earlier.sent_frames),
            received_bytes: self.received_bytes.saturating_sub(earlier.received_bytes),
            received_frames: self.received_frames.saturating_sub(earlier.received_frames),
        }
    }
}

impl Lab {
    /// Builds the namespaces and the link, both ends up, loopback up.
    pub fn create() -> Result<Self> {
        if let Some(missing) = super::netns::missing() {
            bail!("the namespaces cannot be built; missing: {missing}");
        }
        // tlslab's PID in the names: `ip link` inside says whose they are.
        let pid = std::process::id();
        let (veth_a, veth_b) = (format!("tlsa{pid}"), format!("tlsb{pid}"));
        let lab = Self {
            a: Namespace::new()?,
            b: Namespace::new()?,
            veth_a: veth_a.clone(),
        };
        lab.a.ip(&[
            "link",
            "add",
            &veth_a,
            "type",
            "veth",
            "peer",
            "name",
            &veth_b,
            "netns",
            &lab.b.path(),
        ])?;
        for (namespace, device, address) in [(&lab.a, &veth_a, LINK_A), (&lab.b, &veth_b, LINK_B)] {
            namespace.ip(&["addr", "add", &format!("{address}/30"), "dev", device])?;
            namespace.ip(&["link", "set", device, "up"])?;
            namespace.ip(&["link", "set", "lo", "up"])?;
        }
        Ok(lab)
    }

    /// Namespace A (address [`LINK_A`]).
    pub fn a(&self) -> &Namespace {
        &self.a
    }

    /// Namespace B (address [`LINK_B`]).
    pub fn b(&self) -> &Namespace {
        &self.b
    }

    /// What has crossed the link so far, counted at A's end.
    pub fn link_counters(&self) -> Result<LinkCounters> {
        let device = format!("{}:", self.veth_a);
        let table = self
            .a
            .run(|| Ok(std::fs::read_to_string("/proc/thread-self/net/dev")?))?;
        let line = table
            .lines()
            .find(|line| line.trim_start().starts_with(&device))
            .with_context(|| format!("{} is not in namespace A's /proc/net/dev", self.veth_a))?;
        // receive: bytes packets errs drop fifo frame compressed multicast;
        // transmit: bytes packets ...
        let fields: Vec<u64> = line
            .trim_start()
            .trim_start_matches(&device)
            .split_whitespace()
            .map(|field| field.parse().unwrap_or(0))
            .collect();
        if fields.len() < 10 {
            bail!("unreadable /proc/net/dev line: {line}");
        }
        Ok(LinkCounters {
            received_bytes: fields[0],
            received_frames: fields[1],
            sent_bytes: fields[8],
            sent_frames: fields[9],
        })
    }

    /// Turns IPv6 off in both namespaces, so the link carries nothing of
    /// its own (router solicitations, duplicate address detection) beside
    /// what is measured on it.
    pub fn without_ipv6(&self) -> Result<()> {
        for namespace in [&self.a, &self.b] {
            namespace.run(|| {
                for scope in ["all", "default"] {
                    std::fs::write(format!("/proc/sys/net/ipv6/conf/{scope}/disable_ipv6"), "1")?;
                }
                Ok(())
            })?;
        }
        Ok(())
    }
}

/// Sends `bytes` (`data` over and over) over TCP from namespace `from` to
/// `to.1` in namespace `to.0`, segments capped at `mss`, and returns the
/// time from the first byte written to the last byte received. Gives up
/// when `interrupt` is set or when no byte moves for 30 s.
pub fn transfer(
    from: &Namespace,
    to: (&Namespace, Ipv4Addr),
    data: &[u8],
    mss: i32,
    bytes: u64,
    interrupt: &AtomicBool,
) -> Result<Duration> {
    let listener = to.0.run(|| {
        let listener = TcpListener::bind(SocketAddr::from((to.1, 0)))?;
        set_mss(&listener, mss)?;
        Ok(listener)
    })?;
    let port = listener.local_addr()?.port();
    let destination = SocketAddr::from((to.1, port));
    let mut stream = from.run(|| Ok(TcpStream::connect_timeout(&destination, IO_TIMEOUT)?))?;
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

/// Caps the TCP segment size so segments carry the row's payload size.
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
