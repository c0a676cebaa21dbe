//! What every backend shares over the socket transports: the two sides of
//! a handshake run in two threads (the server's a long-lived one), each
//! timing its own work by its
//! thread's CPU clock (user and kernel time, so the socket calls' kernel
//! share is in it) and the wall clock; and the established pair of
//! `bulk`, whose sender and receiver run in two threads too.

use std::cell::RefCell;
use std::io::{Read, Write};
use std::sync::mpsc;
use std::time::Instant;

use anyhow::{anyhow, Result};

use super::{thread_cpu_ns, BulkPair, Negotiated, SideTime};

/// Both sides of one handshake over a socket and what each cost.
pub struct Sides<C, S> {
    pub client: C,
    pub server: S,
    pub client_time: SideTime,
    pub server_time: SideTime,
    /// From the earlier side's start to the later side being done.
    pub wall_ns: u64,
}

/// A job for the server side's thread.
type Job = Box<dyn FnOnce() + Send>;

thread_local! {
    /// The thread that runs the server sides of this thread's handshakes.
    static SERVER_THREAD: RefCell<Option<mpsc::Sender<Job>>> = const { RefCell::new(None) };
}

/// Runs `job` on this thread's server thread, started on first use and
/// kept while this thread lives: the server side then runs warm, as a
/// long-lived server's thread does (a fresh thread per handshake would
/// charge the server for setting up its thread state in the libraries,
/// such as OpenSSL's per-thread random generators, and a cold allocator
/// cache, every time).
fn on_server_thread(job: Job) -> Result<()> {
    SERVER_THREAD.with(|slot| {
        let mut slot = slot.borrow_mut();
        let job = match slot.as_ref() {
            Some(sender) => match sender.send(job) {
                Ok(()) => return Ok(()),
                Err(mpsc::SendError(job)) => job,
            },
            None => job,
        };
        let (sender, jobs) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("tlslab-server".into())
            .spawn(move || {
                for job in jobs {
                    // A panicking side fails its handshake, not the thread.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                }
            })
            .map_err(|error| anyhow!("cannot start the server thread: {error}"))?;
        sender
            .send(job)
            .map_err(|_| anyhow!("the server thread stopped"))?;
        *slot = Some(sender);
        Ok(())
    })
}

/// Runs `server` on the server thread and `client` in this one; each
/// side's time runs from its own start to its return. The client does not
/// wait for the server thread to wake before it connects: its first flight
/// waits in the socket (the listener's backlog, the UDP socket's buffer)
/// as it would for a server blocked in `accept`, so the server thread's
/// wake-up overlaps the client's work instead of adding to every
/// handshake. A side that fails makes the whole handshake fail, with the
/// client's error first (the server's is usually the consequence).
pub fn run_sides<C, S>(
    client: impl FnOnce() -> Result<C>,
    server: impl FnOnce() -> Result<S> + Send + 'static,
) -> Result<Sides<C, S>>
where
    S: Send + 'static,
{
    fn timed() -> impl FnOnce() -> (SideTime, Instant, Instant) {
        let (wall, cpu_ns) = (Instant::now(), thread_cpu_ns());
        move || {
            let time = SideTime {
                wall_ns: wall.elapsed().as_nanos() as u64,
                cpu_ns: thread_cpu_ns().saturating_sub(cpu_ns),
            };
            (time, wall, Instant::now())
        }
    }
    let (finished, server_outcome) = mpsc::channel();
    on_server_thread(Box::new(move || {
        let done = timed();
        let result = server();
        let _ = finished.send((result, done()));
    }))?;
    let done = timed();
    let client_result = client();
    let (client_time, client_start, client_end) = done();
    let (server_result, (server_time, server_start, server_end)) =
        await_server(&server_outcome).map_err(|_| anyhow!("the server side panicked"))?;
    let client = client_result.map_err(|e| e.context("client"))?;
    let server = server_result.map_err(|e| e.context("server"))?;
    Ok(Sides {
        client,
        server,
        client_time,
        server_time,
        wall_ns: (client_end.max(server_end) - client_start.min(server_start)).as_nanos() as u64,
    })
}

/// How long the client's thread polls for the server's outcome before it
/// sleeps on it.
const POLL_SERVER_FOR: std::time::Duration = std::time::Duration::from_micros(200);

/// The server side's outcome. The client is done first in most handshakes
/// and the server a few tens of microseconds later (in TLS 1.3 it still
/// reads the client's Finished): polling for that long, outside both
/// sides' timed stretches, spares each handshake a sleep and a wake-up of
/// this thread, a latency the measured libraries do not cause.
fn await_server<T>(outcome: &mpsc::Receiver<T>) -> Result<T, mpsc::RecvError> {
    let start = Instant::now();
    loop {
        match outcome.try_recv() {
            Ok(value) => return Ok(value),
            Err(mpsc::TryRecvError::Disconnected) => return Err(mpsc::RecvError),
            Err(mpsc::TryRecvError::Empty) if start.elapsed() < POLL_SERVER_FOR => {
                std::hint::spin_loop()
            }
            Err(mpsc::TryRecvError::Empty) => return outcome.recv(),
        }
    }
}

/// An established connection over a loopback socket: the client's end
/// writes application data, the server's end reads it, each in its own
/// thread ([`BulkPair::ends`]).
pub struct SocketBulkPair {
    negotiated: Option<Negotiated>,
    sender: Box<dyn Write + Send>,
    receiver: Box<dyn Read + Send>,
}

impl SocketBulkPair {
    pub fn new(
        negotiated: Option<Negotiated>,
        sender: Box<dyn Write + Send>,
        receiver: Box<dyn Read + Send>,
    ) -> Self {
        Self {
            negotiated,
            sender,
            receiver,
        }
    }
}

impl BulkPair for SocketBulkPair {
    fn negotiated(&self) -> Option<&Negotiated> {
        self.negotiated.as_ref()
    }

    fn send(&mut self, data: &[u8]) -> Result<()> {
        Ok(self.sender.write_all(data)?)
    }

    /// Blocks until `out` is full: the sender must run in another thread
    /// (see [`BulkPair::ends`]).
    fn receive(&mut self, out: &mut [u8]) -> Result<usize> {
        self.receiver.read_exact(out)?;
        Ok(out.len())
    }

    fn ends(&mut self) -> Option<(&mut (dyn Write + Send), &mut (dyn Read + Send))> {
        Some((&mut *self.sender, &mut *self.receiver))
    }
}

/// A writer that hands its inner writer at most `most` bytes per call: a
/// DTLS application cuts its writes into records that fit a datagram.
pub struct CutWrites<W> {
    pub inner: W,
    pub most: usize,
}

impl<W: Write> Write for CutWrites<W> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.inner.write(&data[..data.len().min(self.most)])
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A reader of application data over UDP whose timed-out reads say that a
/// datagram was lost.
pub struct LossExplained<R>(pub R);

impl<R: Read> Read for LossExplained<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        self.0
            .read(out)
            .map_err(crate::transport::udp::explain_lost_datagram)
    }
}

/// The no-crypto pair over loopback UDP: each write cut into datagrams of
/// at most `mtu_bytes`, one record behind a DTLS header each, in two
/// threads like the protected rows.
pub fn plain_pair_over_udp(mtu_bytes: u16) -> Result<SocketBulkPair> {
    let (sender, receiver) = crate::transport::udp::bulk_udp_pair()?;
    Ok(SocketBulkPair::new(
        None,
        Box::new(PlainDatagramWrites {
            socket: sender,
            body_bytes: super::plain::datagram_body_bytes(mtu_bytes),
            record: Vec::new(),
        }),
        Box::new(LossExplained(PlainDatagramReads {
            socket: receiver,
            datagram: vec![0; usize::from(mtu_bytes)],
            body: 0..0,
        })),
    ))
}

struct PlainDatagramWrites {
    socket: crate::transport::udp::Datagrams,
    body_bytes: usize,
    record: Vec<u8>,
}

impl Write for PlainDatagramWrites {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let body = &data[..data.len().min(self.body_bytes)];
        super::plain::frame_datagram(body, &mut self.record);
        self.socket.write_all(&self.record)?;
        Ok(body.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

struct PlainDatagramReads {
    socket: crate::transport::udp::Datagrams,
    datagram: Vec<u8>,
    /// The part of `datagram` not yet handed out.
    body: std::ops::Range<usize>,
}

impl Read for PlainDatagramReads {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.body.is_empty() {
            let length = self.socket.read(&mut self.datagram)?;
            let body = super::plain::datagram_body(&self.datagram[..length])
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
            self.body = length - body.len()..length;
        }
        let moved = self.body.len().min(out.len());
        out[..moved].copy_from_slice(&self.datagram[self.body.start..self.body.start + moved]);
        self.body.start += moved;
        Ok(moved)
    }
}

/// The no-crypto pair over loopback TCP: the application writes go onto
/// the connection as they are, in two threads like the protected rows.
pub fn plain_pair_over_tcp() -> Result<SocketBulkPair> {
    let loopback = crate::transport::tcp::TcpLoopback::open()?;
    let sender = loopback.connect()?;
    let receiver = loopback.accept()?;
    Ok(SocketBulkPair::new(
        None,
        Box::new(sender),
        Box::new(receiver),
    ))
}
