//! The event-driven client of `load`: a few threads (one by default), each
//! an epoll loop driving its share of the clients' nonblocking connections
//! through the measuring client ([`crate::backend::client`]), in place of
//! one blocking thread per client. Blocking threads cost a context switch
//! per read and write, and on a machine of few cores that CPU is taken
//! from the server under test.
//!
//! The plan means what it means for the blocking client: each loop releases
//! its share of the due requests at their due times whatever the server
//! does; a released request waits for a free client (one connection, one
//! request at a time) and that wait counts in its latency; phases are timed
//! apart; the body is checked byte for byte as it arrives; errors are
//! counted by kind; and a step that makes no progress for [`IO_TIMEOUT`]
//! fails as timed out. A request still waiting for a free client when the
//! plan ends is never started, one under way [`GRACE`] after it fails as
//! timed out, and Ctrl-C ends the loops at once, so the run ends by itself
//! about a second after its plan.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};

use super::head::ResponseHead;
use super::{
    micros, request_head, Done, Driven, Endpoint, ErrorKind, Finished, HttpVersion, Latencies,
    Mode, Plan, Schedule, Stop,
};
#[cfg(doc)]
use super::{GRACE, IO_TIMEOUT};
use crate::backend::client::{ClientConnection, Offer, TlsSession};
use crate::backend::thread_cpu_ns;
pub(in crate::workload::load) use epoll::connect_nonblocking;
use epoll::Epoll;

mod epoll;
mod multiplexed;

pub use multiplexed::not_h2;

/// The ALPN list an HTTP/1.1 connection offers, as h2load's `--h1` does.
pub(super) const ALPN_HTTP1: &[u8] = b"\x08http/1.1";

/// Why a request failed, and the message shown for it.
type Failure = (ErrorKind, String);

/// The longest a loop sleeps without looking at the interrupt flag and
/// the steps' timeouts.
const LONGEST_WAIT: Duration = Duration::from_millis(50);

/// How often a loop looks for steps that made no progress for
/// [`IO_TIMEOUT`] and requests past the deadline.
const STALLS_EVERY: Duration = Duration::from_millis(10);

/// Runs the plan's `due` requests (offsets from `start`) on `loops` event
/// loops, the clients and requests shared out evenly among them; returns
/// what the loops did.
pub(super) fn drive(
    plan: &Plan,
    endpoint: &Endpoint,
    due: Schedule,
    start: Instant,
    loops: usize,
    stop: Stop<'_>,
) -> Result<Driven> {
    let clients = plan.clients.max(1);
    let loops = loops.clamp(1, clients);
    std::thread::scope(|scope| {
        let threads: Vec<_> = (0..loops)
            .map(|index| {
                let share = EventLoop {
                    plan,
                    endpoint,
                    due: Due::new(due, start, index, loops),
                    finished: RefCell::new(Finished::new(start)),
                    stop,
                };
                let clients = clients / loops + usize::from(index < clients % loops);
                scope.spawn(move || match plan.http {
                    HttpVersion::Http1_1 => share.run(clients),
                    HttpVersion::Http2 => share.run_multiplexed(clients),
                })
            })
            .collect();
        let mut driven = Driven::new(start);
        for thread in threads {
            driven.add(
                thread
                    .join()
                    .map_err(|_| anyhow!("an event loop panicked"))??,
            );
        }
        Ok(driven)
    })
}

/// One loop's share of the run.
struct EventLoop<'a> {
    plan: &'a Plan,
    endpoint: &'a Endpoint,
    /// The loop's requests' due times, in order.
    due: Due,
    /// The tally of the requests that finished.
    finished: RefCell<Finished>,
    stop: Stop<'a>,
}

/// A loop's share of the plan: every `every`th request from `first`,
/// each due time worked out once, when the one before it was released.
#[derive(Clone, Copy)]
struct Due {
    schedule: Schedule,
    start: Instant,
    every: usize,
    /// The plan's index of the loop's next request, and when it is due
    /// (`None` once none is left).
    next: usize,
    next_at: Option<Instant>,
}

impl Due {
    fn new(schedule: Schedule, start: Instant, first: usize, every: usize) -> Self {
        let mut due = Self {
            schedule,
            start,
            every,
            next: first,
            next_at: None,
        };
        due.next_at = due.at(first);
        due
    }

    fn at(&self, index: usize) -> Option<Instant> {
        (index < self.schedule.len()).then(|| self.start + self.schedule.at(index))
    }

    /// The next request's due time, if one is left and it is due by `now`:
    /// it is then released (the next one comes up).
    fn release_by(&mut self, now: Instant) -> Option<Instant> {
        let at = self.next_at.filter(|at| *at <= now)?;
        self.next += self.every;
        self.next_at = self.at(self.next);
        Some(at)
    }

    /// When the next request is due, if one is left.
    fn next(&self) -> Option<Instant> {
        self.next_at
    }

    /// No request is released any more (the plan has ended).
    fn stop(&mut self) {
        self.next_at = None;
    }
}

/// One client: at most one connection, at most one request on it.
#[derive(Default)]
struct Client {
    /// The connection: in use by `request`, or kept between requests in
    /// keep-alive mode.
    stream: Option<Box<dyn ClientConnection>>,
    /// The session to offer on the next connection (resumed mode).
    session: Option<TlsSession>,
    request: Option<Request>,
}

/// A request in flight.
struct Request {
    due: Instant,
    /// When a client took it.
    began: Instant,
    /// When its current phase began (connecting, handshake, request
    /// written, first byte read).
    phase_began: Instant,
    /// When it last moved on; a step with no progress for [`IO_TIMEOUT`]
    /// fails.
    progress: Instant,
    step: Step,
    /// The connection resumed a session.
    resumed: bool,
    /// The response's head as it arrives.
    head: Vec<u8>,
    /// The body's length, from the head's Content-Length.
    length: usize,
    /// The server keeps the connection after this answer (its head said so).
    server_keeps: bool,
}

/// Where a request is.
#[derive(Clone, Copy)]
enum Step {
    Connecting,
    Handshaking,
    /// Writing the request; this many bytes of it are written.
    Writing(usize),
    ReadingHead,
    /// Reading the body; this many bytes of it have arrived and matched.
    ReadingBody(usize),
}

/// What moving a request on came to.
enum Outcome {
    /// It waits for its socket.
    Waiting,
    /// Answered with a checked body of this many bytes.
    Answered(u64),
}

impl EventLoop<'_> {
    /// Releases the loop's requests at their due times to its `clients`
    /// until all are done, the plan has ended or Ctrl-C; returns the
    /// requests started, their latencies and the loop's CPU time.
    fn run(self, clients: usize) -> Result<Driven> {
        let cpu_start = thread_cpu_ns();
        let epoll = Epoll::new().context("creating an epoll instance")?;
        let mut latencies = Latencies::new();
        let mut clients: Vec<Client> = (0..clients).map(|_| Client::default()).collect();
        let mut free: Vec<usize> = (0..clients.len()).rev().collect();
        let mut waiting: VecDeque<Instant> = VecDeque::new();
        let mut due = self.due;
        let mut stalls_checked = Instant::now();
        let mut started = 0;
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
        let request = request_head(self.plan, self.endpoint);
        let mut chunk = vec![0u8; 16 * 1024];
        loop {
            let now = Instant::now();
            if self.stop.interrupted() {
                // Requests under way are dropped: neither answered nor failed.
                break;
            }
            if now >= self.stop.end {
                // Requests still waiting for a client are never started.
                due.stop();
                waiting.clear();
            }
            while let Some(at) = due.release_by(now) {
                waiting.push_back(at);
            }
            while !waiting.is_empty() {
                let Some(index) = free.pop() else {
                    break;
                };
                let due = waiting.pop_front().expect("not empty");
                started += 1;
                let client = &mut clients[index];
                let outcome = self.begin(
                    client,
                    index,
                    due,
                    &epoll,
                    (&request, &mut chunk),
                    &mut latencies,
                );
                if self.settle(client, outcome, &mut latencies) {
                    free.push(index);
                }
            }
            if due.next().is_none() && waiting.is_empty() && free.len() == clients.len() {
                break;
            }
            // Sleep until the next request is due, a socket is ready, or
            // it is time to look at the flag and the timeouts.
            let mut wait = LONGEST_WAIT;
            if let Some(at) = due.next().filter(|_| waiting.is_empty()) {
                wait = wait.min(at.saturating_duration_since(Instant::now()));
            }
            let ready = epoll.wait(&mut events, wait).context("waiting on epoll")?;
            for event in &events[..ready] {
                let index = event.u64 as usize;
                let client = &mut clients[index];
                if client.request.is_none() {
                    // Readiness of a kept connection between requests.
                    continue;
                }
                let outcome = self.advance(client, (&request, &mut chunk), &mut latencies);
                if self.settle(client, outcome, &mut latencies) {
                    free.push(index);
                }
            }
            // Requests past the deadline or stalled fail as timed out
            // (after Ctrl-C, the loop's next turn ends the run instead),
            // looked for every few milliseconds.
            let now = Instant::now();
            if now.duration_since(stalls_checked) < STALLS_EVERY {
                continue;
            }
            stalls_checked = now;
            for (index, client) in clients.iter_mut().enumerate() {
                let given_up = client
                    .request
                    .as_ref()
                    .and_then(|r| self.stop.reason_at(r.progress, now))
                    .filter(|_| !self.stop.interrupted());
                if let Some(failure) = given_up {
                    self.settle(client, Err(failure), &mut latencies);
                    free.push(index);
                }
            }
        }
        Ok(self.driven(started, latencies, cpu_start))
    }

    /// What this loop did, once it is over: `started` requests, their
    /// `latencies`, and its CPU time since `cpu_start`.
    fn driven(self, started: usize, latencies: Latencies, cpu_start: u64) -> Driven {
        Driven {
            sent: started,
            latencies,
            client_cpu_ns: thread_cpu_ns().saturating_sub(cpu_start),
            finished: self.finished.into_inner(),
        }
    }

    /// A new nonblocking TLS connection to the endpoint, watched by `epoll`
    /// as `index`, offering ALPN `alpn` (its wire form and its name) and,
    /// in resumed mode, the client's `session`: its TCP connect under way,
    /// its handshake not begun. Both HTTP versions' loops open theirs here.
    pub(super) fn open_tls(
        &self,
        index: usize,
        epoll: &Epoll,
        session: Option<&TlsSession>,
        (alpn, name): (&[u8], &str),
    ) -> std::result::Result<Box<dyn ClientConnection>, Failure> {
        let tcp = connect_nonblocking(self.endpoint.address)
            .map_err(|e| (ErrorKind::Connect, format!("connect: {e}")))?;
        let _ = tcp.set_nodelay(true);
        epoll
            .add(tcp.as_raw_fd(), index)
            .map_err(|e| (ErrorKind::Io, format!("adding a socket to epoll: {e}")))?;
        let offered = match self.plan.mode {
            Mode::Resume => session,
            _ => None,
        };
        let offer = Offer {
            server_name: &self.endpoint.server_name,
            session: offered,
            alpn,
            read_ahead: true,
        };
        self.endpoint.context.connection(tcp, &offer).map_err(|e| {
            (
                ErrorKind::Handshake,
                format!("a connection offering ALPN {name}: {e:#}"),
            )
        })
    }

    /// Starts a request due at `due` on a free client: on its kept
    /// connection, or on a new one (offering the client's session in
    /// resumed mode), and moves it on as far as the socket allows.
    fn begin(
        &self,
        client: &mut Client,
        index: usize,
        due: Instant,
        epoll: &Epoll,
        io: (&str, &mut [u8]),
        latencies: &mut Latencies,
    ) -> std::result::Result<Outcome, Failure> {
        let now = Instant::now();
        let step = if client.stream.is_some() {
            Step::Writing(0)
        } else {
            client.stream = Some(self.open_tls(
                index,
                epoll,
                client.session.as_ref(),
                (ALPN_HTTP1, "http/1.1"),
            )?);
            Step::Connecting
        };
        client.request = Some(Request {
            due,
            began: now,
            phase_began: now,
            progress: now,
            step,
            resumed: false,
            head: Vec::new(),
            length: 0,
            server_keeps: false,
        });
        self.advance(client, io, latencies)
    }

    /// Moves the client's request on until its socket would block, it is
    /// answered, or it fails; `io` is the request's text and a buffer to
    /// read into.
    fn advance(
        &self,
        client: &mut Client,
        (request_text, chunk): (&str, &mut [u8]),
        latencies: &mut Latencies,
    ) -> std::result::Result<Outcome, Failure> {
        let (Some(stream), Some(request)) = (client.stream.as_mut(), client.request.as_mut())
        else {
            return Err((ErrorKind::Io, "no connection".to_string()));
        };
        // The page every body must be, or None when bodies are only counted.
        let page = self.endpoint.check_body.then_some(&self.plan.body[..]);
        loop {
            let now = Instant::now();
            match request.step {
                Step::Connecting => {
                    let tcp = stream.tcp();
                    if let Some(error) = tcp.take_error().ok().flatten() {
                        return Err((ErrorKind::Connect, format!("connect: {error}")));
                    }
                    match tcp.peer_addr() {
                        Ok(_) => {
                            let _ = latencies.connect.record(micros(now - request.phase_began));
                            request.phase_began = now;
                            request.step = Step::Handshaking;
                        }
                        Err(e) if e.kind() == io::ErrorKind::NotConnected => {
                            return Ok(Outcome::Waiting)
                        }
                        Err(e) => return Err((ErrorKind::Connect, format!("connect: {e}"))),
                    }
                }
                Step::Handshaking => match stream.handshake() {
                    Ok(true) => {
                        // After the call, not `now`: it may have read the
                        // server's flight, checked it and sent the client's.
                        let _ = latencies
                            .handshake
                            .record(micros(request.phase_began.elapsed()));
                        request.resumed = stream.resumed();
                        request.step = Step::Writing(0);
                    }
                    Ok(false) => return Ok(Outcome::Waiting),
                    Err(failure) => return Err((ErrorKind::Handshake, failure)),
                },
                Step::Writing(written) => {
                    if written == 0 {
                        request.phase_began = now;
                    }
                    match stream.write(&request_text.as_bytes()[written..]) {
                        Ok(n) if written + n == request_text.len() => {
                            // The answer cannot be there yet: its arrival
                            // will be an edge of its own.
                            request.step = Step::ReadingHead;
                            request.progress = now;
                            return Ok(Outcome::Waiting);
                        }
                        Ok(n) => request.step = Step::Writing(written + n),
                        Err(e) if would_block(&e) => return Ok(Outcome::Waiting),
                        Err(e) => return Err((ErrorKind::Io, format!("writing the request: {e}"))),
                    }
                }
                Step::ReadingHead => {
                    let n = match stream.read(chunk) {
                        Ok(n) => n,
                        Err(e) if would_block(&e) => return Ok(Outcome::Waiting),
                        Err(e) => {
                            return Err((ErrorKind::Io, format!("reading the response: {e}")))
                        }
                    };
                    if n == 0 {
                        return Err((
                            ErrorKind::Io,
                            "connection closed before the response".to_string(),
                        ));
                    }
                    request.head.extend_from_slice(&chunk[..n]);
                    let Some(head) = ResponseHead::parse(&request.head)? else {
                        request.progress = now;
                        continue;
                    };
                    let _ = latencies
                        .first_byte
                        .record(micros(now - request.phase_began));
                    if head.status != 200 {
                        return Err((ErrorKind::Status, format!("HTTP status {}", head.status)));
                    }
                    let length = head.body_bytes()?;
                    if let Some(page) = page.filter(|page| page.len() != length) {
                        return Err((
                            ErrorKind::Body,
                            format!("Content-Length {length}, expected {}", page.len()),
                        ));
                    }
                    request.phase_began = now;
                    request.length = length;
                    request.server_keeps = head.keep_alive;
                    let early = request.head.split_off(head.head_bytes);
                    request.step = Step::ReadingBody(check_body(page, length, 0, &early)?);
                }
                Step::ReadingBody(received) if received == request.length => {
                    let _ = latencies.transfer.record(micros(now - request.phase_began));
                    return Ok(Outcome::Answered(request.length as u64));
                }
                Step::ReadingBody(received) => {
                    let n = match stream.read(chunk) {
                        Ok(n) => n,
                        Err(e) if would_block(&e) => return Ok(Outcome::Waiting),
                        Err(e) => return Err((ErrorKind::Io, format!("reading the body: {e}"))),
                    };
                    if n == 0 {
                        return Err((
                            ErrorKind::Body,
                            format!("body ended after {received} bytes"),
                        ));
                    }
                    request.step =
                        Step::ReadingBody(check_body(page, request.length, received, &chunk[..n])?);
                }
            }
            request.progress = now;
        }
    }

    /// Records a request that was answered or failed, keeping or closing
    /// its connection; returns true if and only if the client is free
    /// again (it was not still waiting on its socket).
    fn settle(
        &self,
        client: &mut Client,
        outcome: std::result::Result<Outcome, Failure>,
        latencies: &mut Latencies,
    ) -> bool {
        let result = match outcome {
            Ok(Outcome::Waiting) => return false,
            Ok(Outcome::Answered(bytes)) => Ok(bytes),
            Err(failure) => Err(failure),
        };
        let end = Instant::now();
        let request = client.request.take();
        let resumed = request.as_ref().is_some_and(|r| r.resumed);
        let server_keeps = request.as_ref().is_some_and(|r| r.server_keeps);
        if let (Ok(_), Some(request)) = (&result, &request) {
            let _ = latencies.total.record(micros(end - request.due));
            let _ = latencies.service.record(micros(end - request.began));
        }
        match (&result, self.plan.mode) {
            // Kept only while the server keeps it too.
            (Ok(_), Mode::KeepAlive) if server_keeps => {}
            (Ok(_), mode) => {
                if let Some(mut stream) = client.stream.take() {
                    if mode == Mode::Resume {
                        // Read after the answer: a TLS 1.3 ticket arrives
                        // after the handshake.
                        client.session = stream.session();
                    }
                    stream.shutdown();
                }
            }
            // A failed connection is not reused.
            (Err(_), _) => client.stream = None,
        }
        self.finished.borrow_mut().record(Done {
            due: request.as_ref().map_or(end, |r| r.due),
            end,
            resumed,
            result,
        });
        true
    }
}

/// Checks the `arrived` bytes of a `length`-byte body against the page
/// (when there is one to check) from offset `received`; returns the new
/// offset.
fn check_body(
    page: Option<&[u8]>,
    length: usize,
    received: usize,
    arrived: &[u8],
) -> std::result::Result<usize, Failure> {
    let end = received + arrived.len();
    if end > length {
        return Err((
            ErrorKind::Body,
            format!("{end} bytes of body, Content-Length {length}"),
        ));
    }
    // A page to check has the body's length (checked with the head).
    if page.is_some_and(|page| page[received..end] != *arrived) {
        return Err((
            ErrorKind::Body,
            "the body differs from the page".to_string(),
        ));
    }
    Ok(end)
}

/// Returns true if and only if the client's library waits for the socket
/// to be readable or writable.
fn would_block(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::WouldBlock
}
