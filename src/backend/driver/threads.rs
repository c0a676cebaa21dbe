//! The two threads of a handshake run over a socket: the server's side
//! on a long-lived thread, the client's on the caller's, each timing its
//! own work by its thread's CPU clock (user and kernel time, so the socket
//! calls' kernel share is in it) and the wall clock. Every socket driver
//! ([`super::stream`], the datagram ones) runs its two sides here.

use std::cell::RefCell;
use std::sync::mpsc;
use std::time::Instant;

use anyhow::{anyhow, Result};

use crate::backend::{thread_cpu_ns, SideTime};

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
