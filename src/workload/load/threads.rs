//! The blocking client of `load`: one thread per client, one connection
//! each. A free client takes the next request of the plan and waits for
//! its due time, so requests are released lazily and nothing queues up in
//! memory: a request still waiting for a free client when the plan ends is
//! never started (it counts as due, not sent). Every blocking step waits
//! in slices of [`SLICE`], looking in between at Ctrl-C, at the run's
//! deadline (the plan's end plus [`GRACE`](super::GRACE)) and at the
//! step's own [`IO_TIMEOUT`](super::IO_TIMEOUT), so a run ends about a second after its plan whatever
//! the server does, and at once after Ctrl-C.

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};

use super::events::{connect_nonblocking, ALPN_HTTP1};
use super::head::ResponseHead;
use super::{
    kind_of, micros, request_head, Done, Driven, Endpoint, ErrorKind, Finished, Latencies, Mode,
    Plan, Schedule, Stop,
};
use crate::backend::client::{ClientConnection, Offer, TlsSession};
use crate::backend::thread_cpu_ns;

/// The longest a client blocks without looking at Ctrl-C and the deadline.
const SLICE: Duration = Duration::from_millis(50);

/// Why a request failed, and the message shown for it.
type Failure = (ErrorKind, String);

/// Runs the plan's `due` requests (offsets from `start`) on one blocking
/// thread per client; returns what the threads did.
pub(super) fn drive(
    plan: &Plan,
    endpoint: &Endpoint,
    due: Schedule,
    start: Instant,
    stop: Stop<'_>,
) -> Result<Driven> {
    let next = AtomicUsize::new(0);
    let started = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let threads: Vec<_> = (0..plan.clients.max(1))
            .map(|_| {
                let client = Client {
                    plan,
                    endpoint,
                    due,
                    start,
                    next: &next,
                    started: &started,
                    stop,
                };
                scope.spawn(move || client.run())
            })
            .collect();
        let mut driven = Driven::new(start);
        for thread in threads {
            driven.add(
                thread
                    .join()
                    .map_err(|_| anyhow!("a client thread panicked"))?,
            );
        }
        driven.sent = started.load(Ordering::SeqCst);
        Ok(driven)
    })
}

/// One client thread's view of the run.
struct Client<'a> {
    plan: &'a Plan,
    endpoint: &'a Endpoint,
    due: Schedule,
    start: Instant,
    /// The index of the next request a free client takes.
    next: &'a AtomicUsize,
    /// Requests started, all clients together.
    started: &'a AtomicUsize,
    stop: Stop<'a>,
}

impl Client<'_> {
    /// Takes the plan's requests in turn until none is left, the plan has
    /// ended or Ctrl-C; returns what the thread did.
    fn run(self) -> Driven {
        let cpu_start = thread_cpu_ns();
        let mut latencies = Latencies::new();
        let mut finished = Finished::new(self.start);
        let mut kept: Option<Box<dyn ClientConnection>> = None;
        let mut session: Option<TlsSession> = None;
        loop {
            let index = self.next.fetch_add(1, Ordering::SeqCst);
            if index >= self.due.len() {
                break;
            }
            // A request taken after the plan's end is not started.
            if self.stop.interrupted() || Instant::now() >= self.stop.end {
                break;
            }
            let due = self.start + self.due.at(index);
            if !self.wait_until(due) {
                break;
            }
            self.started.fetch_add(1, Ordering::SeqCst);
            let began = Instant::now();
            let mut resumed = false;
            let result = self.request(&mut kept, &mut session, &mut resumed, &mut latencies);
            if result.is_err() && self.stop.interrupted() {
                // Cut short by Ctrl-C: neither answered nor failed.
                break;
            }
            let end = Instant::now();
            if result.is_ok() {
                let _ = latencies.total.record(micros(end - due));
                let _ = latencies.service.record(micros(end - began));
            } else {
                // A failed connection is not reused.
                kept = None;
            }
            finished.record(Done {
                due,
                end,
                resumed,
                result,
            });
        }
        Driven {
            // Counted for all threads together (see `drive`).
            sent: 0,
            latencies,
            client_cpu_ns: thread_cpu_ns().saturating_sub(cpu_start),
            finished,
        }
    }

    /// Sleeps until `due`; returns false if Ctrl-C came first.
    fn wait_until(&self, due: Instant) -> bool {
        loop {
            if self.stop.interrupted() {
                return false;
            }
            let now = Instant::now();
            if now >= due {
                return true;
            }
            std::thread::sleep((due - now).min(SLICE));
        }
    }

    /// One request: a connection if there is none to reuse (offering
    /// `session` in resumed mode, and setting `resumed` if the server took
    /// it), then the request, the answer's headers and its body, checked.
    /// In resumed mode `session` becomes this connection's session.
    fn request(
        &self,
        kept: &mut Option<Box<dyn ClientConnection>>,
        session: &mut Option<TlsSession>,
        resumed: &mut bool,
        latencies: &mut Latencies,
    ) -> std::result::Result<u64, Failure> {
        let (plan, endpoint, stop) = (self.plan, self.endpoint, &self.stop);
        let mut stream = match kept.take() {
            Some(stream) => stream,
            None => {
                let begun = Instant::now();
                let tcp = connect(endpoint.address, stop)?;
                let connected = Instant::now();
                let _ = latencies.connect.record(micros(connected - begun));
                let offered = match plan.mode {
                    Mode::Resume => session.as_ref(),
                    _ => None,
                };
                let stream = handshake(endpoint, tcp, offered, stop)?;
                let _ = latencies.handshake.record(micros(connected.elapsed()));
                *resumed = stream.resumed();
                stream
            }
        };
        let sent = Instant::now();
        write_all(
            stream.as_mut(),
            request_head(plan, endpoint).as_bytes(),
            stop,
        )?;
        let (head, mut body) = read_head(stream.as_mut(), stop)?;
        let first_byte = Instant::now();
        let _ = latencies.first_byte.record(micros(first_byte - sent));
        if head.status != 200 {
            return Err((ErrorKind::Status, format!("HTTP status {}", head.status)));
        }
        let length = head.body_bytes()?;
        if endpoint.check_body && length != plan.body.len() {
            return Err((
                ErrorKind::Body,
                format!("Content-Length {length}, expected {}", plan.body.len()),
            ));
        }
        let mut chunk = [0u8; 16 * 1024];
        while body.len() < length {
            let n = read_some(stream.as_mut(), &mut chunk, stop, "reading the body")?;
            if n == 0 {
                return Err((
                    ErrorKind::Body,
                    format!("body ended after {} bytes", body.len()),
                ));
            }
            body.extend_from_slice(&chunk[..n]);
        }
        if endpoint.check_body && body[..length] != plan.body[..] {
            return Err((
                ErrorKind::Body,
                "the body differs from the page".to_string(),
            ));
        }
        let _ = latencies.transfer.record(micros(first_byte.elapsed()));
        if plan.mode == Mode::Resume {
            // Read after the answer: a TLS 1.3 ticket arrives after the handshake.
            *session = stream.session();
        }
        // Kept only while the server keeps it too.
        if plan.mode == Mode::KeepAlive && head.keep_alive {
            *kept = Some(stream);
        } else {
            stream.shutdown();
        }
        Ok(length as u64)
    }
}

/// A TCP connection to `address`, waited for in slices; blocking from
/// then on, each read and write waiting at most a slice.
fn connect(address: SocketAddr, stop: &Stop<'_>) -> std::result::Result<TcpStream, Failure> {
    let failed = |e: io::Error| (kind_of(&e, ErrorKind::Connect), format!("connect: {e}"));
    let tcp = connect_nonblocking(address).map_err(failed)?;
    let since = Instant::now();
    loop {
        let mut poll = libc::pollfd {
            fd: tcp.as_raw_fd(),
            events: libc::POLLOUT,
            revents: 0,
        };
        // SAFETY: one pollfd, valid for the call.
        let ready = unsafe { libc::poll(&mut poll, 1, SLICE.as_millis() as libc::c_int) };
        if ready < 0 {
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::Interrupted {
                return Err(failed(error));
            }
        } else if ready > 0 {
            break;
        }
        if let Some(failure) = stop.reason(since) {
            return Err(failure);
        }
    }
    if let Some(error) = tcp.take_error().map_err(failed)? {
        return Err(failed(error));
    }
    let setup = |tcp: &TcpStream| -> io::Result<()> {
        tcp.set_nonblocking(false)?;
        tcp.set_nodelay(true)?;
        tcp.set_read_timeout(Some(SLICE))?;
        tcp.set_write_timeout(Some(SLICE))
    };
    setup(&tcp).map_err(failed)?;
    Ok(tcp)
}

/// The client's handshake on `tcp`, offering `session` if given.
fn handshake(
    endpoint: &Endpoint,
    tcp: TcpStream,
    session: Option<&TlsSession>,
    stop: &Stop<'_>,
) -> std::result::Result<Box<dyn ClientConnection>, Failure> {
    let offer = Offer {
        server_name: &endpoint.server_name,
        session,
        alpn: ALPN_HTTP1,
        read_ahead: false,
    };
    let mut stream = endpoint
        .context
        .connection(tcp, &offer)
        .map_err(|e| (ErrorKind::Handshake, format!("TLS handshake failed: {e:#}")))?;
    let since = Instant::now();
    loop {
        match stream.handshake() {
            Ok(true) => return Ok(stream),
            Ok(false) => {
                if let Some(failure) = stop.reason(since) {
                    return Err(failure);
                }
            }
            Err(failure) => return Err((ErrorKind::Handshake, failure)),
        }
    }
}

/// Writes all of `bytes`, a slice at a time.
fn write_all(
    stream: &mut dyn ClientConnection,
    bytes: &[u8],
    stop: &Stop<'_>,
) -> std::result::Result<(), Failure> {
    let mut written = 0;
    let mut since = Instant::now();
    while written < bytes.len() {
        match stream.write(&bytes[written..]) {
            Ok(n) => {
                written += n;
                since = Instant::now();
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if let Some(failure) = stop.reason(since) {
                    return Err(failure);
                }
            }
            Err(e) => return Err((ErrorKind::Io, format!("writing the request: {e}"))),
        }
    }
    Ok(())
}

/// Reads what has arrived (0 at the end of the stream), a slice at a time.
fn read_some(
    stream: &mut dyn ClientConnection,
    buffer: &mut [u8],
    stop: &Stop<'_>,
    what: &str,
) -> std::result::Result<usize, Failure> {
    let since = Instant::now();
    loop {
        match stream.read(buffer) {
            Ok(n) => return Ok(n),
            // A connection ended without close_notify ends the stream here.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                if let Some(failure) = stop.reason(since) {
                    return Err(failure);
                }
            }
            Err(e) => return Err((kind_of(&e, ErrorKind::Io), format!("{what}: {e}"))),
        }
    }
}

/// Reads the answer's head, however many reads it takes; returns it and
/// any body bytes read past it.
fn read_head(
    stream: &mut dyn ClientConnection,
    stop: &Stop<'_>,
) -> std::result::Result<(ResponseHead, Vec<u8>), Failure> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = read_some(stream, &mut chunk, stop, "reading the response")?;
        if n == 0 {
            return Err((
                ErrorKind::Io,
                "connection closed before the response".to_string(),
            ));
        }
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(head) = ResponseHead::parse(&buffer)? {
            let body = buffer.split_off(head.head_bytes);
            return Ok((head, body));
        }
    }
}
