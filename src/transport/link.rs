//! An emulated link between two network namespaces, for kernels without
//! `tc netem`: each namespace has a TUN device, and a thread of tlslab's
//! moves every IP packet from one device to the other as the profile says
//! — dropped with the profile's loss, queued behind the packets before it
//! at the bottleneck's rate, then held for half the round trip. The
//! kernels on both ends are real: TCP's handshake, congestion window and
//! retransmission timers, and the DTLS libraries' timers, are theirs. The
//! namespaces have no names (see [`super::netns`]), the devices close with
//! tlslab: nothing outlives the process. The link keeps counters and a
//! log of what crossed it, to check the wire figures and the model.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::Serialize;

use super::netns::Namespace;
use crate::scenario::network::NetworkProfile;

/// The client's end of the link (namespace A).
pub const CLIENT_ADDRESS: Ipv4Addr = Ipv4Addr::new(10, 233, 0, 1);
/// The server's end (namespace B).
pub const SERVER_ADDRESS: Ipv4Addr = Ipv4Addr::new(10, 233, 0, 2);
/// The devices' MTU: an Ethernet path's.
pub const LINK_MTU_BYTES: usize = 1500;

/// Links opened by this process, for unique device names.
static OPENED: AtomicU32 = AtomicU32::new(0);

/// `TUNSETIFF`: _IOW('T', 202, int).
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;

/// Opens a TUN device named `name` in the calling thread's namespace.
fn open_tun(name: &str) -> Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/net/tun")
        .context("cannot open /dev/net/tun")?;
    #[repr(C)]
    struct InterfaceRequest {
        name: [libc::c_char; libc::IFNAMSIZ],
        flags: libc::c_short,
        padding: [u8; 22],
    }
    let mut request = InterfaceRequest {
        name: [0; libc::IFNAMSIZ],
        flags: (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short,
        padding: [0; 22],
    };
    for (slot, byte) in request.name.iter_mut().zip(name.bytes()) {
        *slot = byte as libc::c_char;
    }
    // SAFETY: TUNSETIFF reads an ifreq of this layout from a live TUN fd.
    if unsafe { libc::ioctl(file.as_raw_fd(), TUNSETIFF, &mut request) } != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("cannot create the TUN device {name}"));
    }
    // SAFETY: fcntl on a live descriptor.
    unsafe {
        let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
    Ok(file)
}

/// One packet that crossed the link (or was dropped on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Crossing {
    /// When it reached the link, from the link's start.
    pub at: Duration,
    /// From the client's side (A) to the server's (B).
    pub to_server: bool,
    /// IP protocol: 6 TCP, 17 UDP.
    pub protocol: u8,
    /// TCP flags (SYN 0x02, FIN 0x01, RST 0x04), 0 for UDP.
    pub flags: u8,
    /// The IP packet's length.
    pub ip_bytes: usize,
    /// TCP or UDP payload bytes.
    pub payload: usize,
    pub dropped: bool,
}

/// Reads an IPv4 packet's protocol, TCP flags and payload length.
fn parse(packet: &[u8]) -> Option<(u8, u8, usize)> {
    if packet.len() < 20 || packet[0] >> 4 != 4 {
        return None;
    }
    let header = usize::from(packet[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([packet[2], packet[3]])).min(packet.len());
    let protocol = packet[9];
    let transport = packet.get(header..total)?;
    match protocol {
        6 if transport.len() >= 20 => {
            let offset = usize::from(transport[12] >> 4) * 4;
            Some((6, transport[13], transport.len().saturating_sub(offset)))
        }
        17 if transport.len() >= 8 => Some((17, 0, transport.len() - 8)),
        _ => Some((protocol, 0, 0)),
    }
}

/// A small fast random generator for losses (xorshift64*).
struct Random(u64);

impl Random {
    fn chance(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Packets in flight one way: when each is due at the far end.
#[derive(Default)]
struct Queue {
    packets: VecDeque<(Instant, Vec<u8>)>,
    /// When the bottleneck has sent the last packet queued.
    free_at: Option<Instant>,
}

/// The thread that moves packets.
struct Mover {
    devices: [File; 2],
    profile: NetworkProfile,
    stop: Arc<AtomicBool>,
    log: Arc<Mutex<Vec<Crossing>>>,
    started: Instant,
    random: Random,
}

impl Mover {
    fn run(mut self) {
        // Wake-ups a few microseconds late rather than the default 50.
        // SAFETY: prctl on this thread.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1u64, 0, 0, 0) };
        let one_way = Duration::from_secs_f64(self.profile.rtt_ms / 2e3);
        let mut queues = [Queue::default(), Queue::default()];
        let mut buffer = vec![0u8; 65_536];
        while !self.stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            let due = queues
                .iter()
                .filter_map(|q| q.packets.front().map(|(at, _)| *at))
                .min();
            let wait = due
                .map_or(Duration::from_millis(20), |due| {
                    due.saturating_duration_since(now)
                })
                .min(Duration::from_millis(20));
            let mut fds = [0, 1].map(|i| libc::pollfd {
                fd: self.devices[i].as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
            let timeout = libc::timespec {
                tv_sec: wait.as_secs() as libc::time_t,
                tv_nsec: wait.subsec_nanos() as libc::c_long,
            };
            // SAFETY: two valid pollfds and a timespec for the call.
            unsafe { libc::ppoll(fds.as_mut_ptr(), 2, &timeout, std::ptr::null()) };
            for from in 0..2 {
                if fds[from].revents == 0 {
                    continue;
                }
                while let Ok(length) = self.devices[from].read(&mut buffer) {
                    self.arrived(from, &buffer[..length], &mut queues[from], one_way);
                }
            }
            let now = Instant::now();
            for (from, queue) in queues.iter_mut().enumerate() {
                while queue.packets.front().is_some_and(|(due, _)| *due <= now) {
                    let (_, packet) = queue.packets.pop_front().expect("checked");
                    let _ = self.devices[1 - from].write(&packet);
                }
            }
        }
    }

    /// A packet from device `from`: logged, dropped or queued.
    fn arrived(&mut self, from: usize, packet: &[u8], queue: &mut Queue, one_way: Duration) {
        let now = Instant::now();
        let Some((protocol, flags, payload)) = parse(packet) else {
            return; // not IPv4 (an IPv6 router solicitation): not part of the lab
        };
        let dropped = self.profile.loss > 0.0 && self.random.chance() < self.profile.loss;
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Crossing {
                at: now - self.started,
                to_server: from == 0,
                protocol,
                flags,
                ip_bytes: packet.len(),
                payload,
                dropped,
            });
        if dropped {
            return;
        }
        let sent = queue.free_at.map_or(now, |free| free.max(now))
            + Duration::from_secs_f64(self.profile.serialization_s(packet.len()));
        queue.free_at = Some(sent);
        queue.packets.push_back((sent + one_way, packet.to_vec()));
    }
}

/// Two namespaces joined by an emulated link, removed on drop.
pub struct Link {
    pub profile: NetworkProfile,
    client: Namespace,
    server: Namespace,
    stop: Arc<AtomicBool>,
    mover: Option<JoinHandle<()>>,
    log: Arc<Mutex<Vec<Crossing>>>,
}

impl Link {
    /// Builds the namespaces, their devices and the link of `profile`.
    pub fn open(profile: &NetworkProfile) -> Result<Self> {
        if let Some(missing) = super::netns::missing() {
            bail!("the tun link cannot be built; missing: {missing}");
        }
        let (client, server) = (Namespace::new()?, Namespace::new()?);
        let index = OPENED.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let mut devices = Vec::new();
        for (namespace, side, address) in [
            (&client, 'a', CLIENT_ADDRESS),
            (&server, 'b', SERVER_ADDRESS),
        ] {
            // tlslab's PID in the name: `ip link` inside says whose it is.
            let name = format!("tlw{pid}{side}{index}");
            let name = &name[..name.len().min(libc::IFNAMSIZ - 1)];
            devices.push(namespace.run(|| open_tun(name))?);
            let subnet = format!("{address}/30");
            namespace.ip(&["link", "set", "lo", "up"])?;
            namespace.ip(&["addr", "add", &subnet, "dev", name])?;
            namespace.ip(&[
                "link",
                "set",
                name,
                "mtu",
                &LINK_MTU_BYTES.to_string(),
                "up",
            ])?;
            if profile.initcwnd != crate::scenario::network::DEFAULT_INITCWND {
                let route = format!("{}/30", Ipv4Addr::new(10, 233, 0, 0));
                namespace.ip(&[
                    "route",
                    "replace",
                    &route,
                    "dev",
                    name,
                    "src",
                    &address.to_string(),
                    "initcwnd",
                    &profile.initcwnd.to_string(),
                ])?;
            }
        }
        let stop = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(Vec::new()));
        let server_device = devices.pop().expect("two devices");
        let client_device = devices.pop().expect("two devices");
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0x9e37_79b9, |d| d.as_nanos() as u64)
            | 1;
        let mover = Mover {
            devices: [client_device, server_device],
            profile: profile.clone(),
            stop: Arc::clone(&stop),
            log: Arc::clone(&log),
            started: Instant::now(),
            random: Random(seed),
        };
        let mover = std::thread::Builder::new()
            .name("tlslab-link".into())
            .spawn(move || mover.run())
            .context("cannot start the link's thread")?;
        Ok(Self {
            profile: profile.clone(),
            client,
            server,
            stop,
            mover: Some(mover),
            log,
        })
    }

    /// The client's namespace (A).
    pub fn client(&self) -> &Namespace {
        &self.client
    }

    /// The server's namespace (B).
    pub fn server(&self) -> &Namespace {
        &self.server
    }

    /// What crossed the link since the last call (or its start).
    pub fn take_log(&self) -> Vec<Crossing> {
        std::mem::take(&mut *self.log.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(mover) = self.mover.take() {
            let _ = mover.join();
        }
        // The devices close with the thread's files, the namespaces with
        // their descriptors.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_are_read_as_ipv4_tcp_and_udp() {
        let mut tcp = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, 6, 0, 0];
        tcp.extend_from_slice(&[10, 233, 0, 1, 10, 233, 0, 2]);
        let mut segment = vec![0u8; 32];
        segment[12] = 8 << 4; // 32-byte header (timestamps)
        segment[13] = 0x18; // PSH, ACK
        tcp.extend_from_slice(&segment);
        tcp.extend_from_slice(&[7u8; 100]);
        let total = tcp.len() as u16;
        tcp[2..4].copy_from_slice(&total.to_be_bytes());
        assert_eq!(parse(&tcp), Some((6, 0x18, 100)));
        let mut udp = tcp[..20].to_vec();
        udp[9] = 17;
        udp.extend_from_slice(&[0u8; 8]);
        udp.extend_from_slice(&[1u8; 50]);
        let total = udp.len() as u16;
        udp[2..4].copy_from_slice(&total.to_be_bytes());
        assert_eq!(parse(&udp), Some((17, 0, 50)));
        assert_eq!(parse(&[0x60; 40]), None);
    }

    #[test]
    fn losses_come_at_their_rate() {
        let mut random = Random(12345);
        let lost = (0..100_000).filter(|_| random.chance() < 0.01).count();
        assert!((900..1100).contains(&lost), "{lost}");
    }
}
