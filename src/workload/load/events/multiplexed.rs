//! The HTTP/2 event loop of `load`: the same open model as the HTTP/1.1
//! loop in the parent module (requests released at their due times, a
//! released request waiting for a free client, that wait counted), but a
//! client's connection negotiates `h2` by ALPN and carries up to
//! [`Plan::streams`] requests at once as HTTP/2 streams (h2load's `-m`),
//! framed by nghttp2 ([`crate::workload::h2`]). A connection whose server
//! chose another protocol fails its requests as handshake errors naming
//! the protocol it chose.
//!
//! Phases: connect and handshake once per connection, connect from the
//! start of the request that opened it, the handshake until the client's
//! library is done with it (its own last flight included); first byte from
//! the moment a request's HEADERS frame was handed to TLS to its answer's
//! HEADERS; transfer from there to the stream's end. Each phase ends at an
//! instant taken once the call that saw it end has returned, so in
//! new-connection mode a request's phases add up to its service time
//! (less the loop's own work between them). In new-connection and
//! resumed modes each connection carries one request and is closed after
//! it, as for HTTP/1.1. A stream the server refused unprocessed (a GOAWAY
//! below it, `REFUSED_STREAM`) is sent again on a new connection; every
//! body is checked byte for byte as it arrives.

use std::io;
use std::time::Instant;

use anyhow::{Context, Result};

use super::super::{micros, Driven, ErrorKind, Latencies, Mode};
use super::{check_body, would_block, Epoll, EventLoop, Failure};
use super::{LONGEST_WAIT, STALLS_EVERY};
use crate::backend::client::{ClientConnection, TlsSession};
use crate::backend::thread_cpu_ns;
use crate::workload::h2::{ClientSession, Received, StreamEvent, REFUSED_STREAM};
#[cfg(doc)]
use crate::workload::load::Plan;

/// The ALPN list an HTTP/2 connection offers: `h2` alone, so a server
/// that does not speak it says so by choosing nothing (or failing).
const ALPN_H2: &[u8] = b"\x02h2";

/// One client: one connection at a time, several requests on it.
#[derive(Default)]
struct Client {
    connection: Option<Connection>,
    /// The session to offer on the next connection (resumed mode).
    session: Option<TlsSession>,
    /// Requests taken but not yet sent: the connection is still being set
    /// up, or a refused stream waits for the next one.
    queued: Vec<Request>,
}

/// A connection and the streams in flight on it.
struct Connection {
    stream: Box<dyn ClientConnection>,
    state: State,
    /// When the current setup step began: connect at [`setup_began`],
    /// the handshake when TCP connected.
    phase_began: Instant,
    /// When it last moved on; no progress for [`super::super::IO_TIMEOUT`]
    /// fails its requests.
    progress: Instant,
    /// Frames to send, and how many of their bytes TLS has taken.
    out: Vec<u8>,
    written: usize,
    /// The requests in flight by stream id.
    streams: InFlight,
    /// The connection resumed a session.
    resumed: bool,
    /// nghttp2's session, once ALPN chose h2.
    session: Option<Box<ClientSession>>,
}

enum State {
    Connecting,
    Handshaking,
    /// ALPN chose h2: [`Connection::session`] frames the requests.
    Open,
}

/// What one turn of an open connection came to.
enum Turn {
    /// Bytes were read: another turn may read more.
    Again,
    /// It waits for its socket.
    Blocked,
    /// The connection is over: the server ended it, or its one request is
    /// done (new-connection and resumed modes).
    Over,
}

/// A request in flight.
struct Request {
    due: Instant,
    /// When a client took it.
    began: Instant,
    /// When its HEADERS frame was handed to TLS (its first byte's phase
    /// starts there); `None` until then.
    sent: Option<Instant>,
    /// When its answer's HEADERS arrived.
    head_at: Option<Instant>,
    /// The body's length as the head gave it, if it did.
    length: Option<usize>,
    /// Body bytes arrived and checked.
    received: usize,
}

/// A request that ended, with how.
type Ended = (Request, bool, std::result::Result<u64, Failure>);

/// The requests in flight on a connection, by stream id: a few (the
/// streams per connection), so a list searched in order beats hashing.
#[derive(Default)]
struct InFlight(Vec<(i32, Request)>);

impl InFlight {
    fn insert(&mut self, stream: i32, request: Request) {
        self.0.push((stream, request));
    }

    fn get_mut(&mut self, stream: i32) -> Option<&mut Request> {
        self.0
            .iter_mut()
            .find(|(id, _)| *id == stream)
            .map(|(_, request)| request)
    }

    fn remove(&mut self, stream: i32) -> Option<Request> {
        let at = self.0.iter().position(|(id, _)| *id == stream)?;
        Some(self.0.swap_remove(at).1)
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn requests_mut(&mut self) -> impl Iterator<Item = &mut Request> {
        self.0.iter_mut().map(|(_, request)| request)
    }

    fn into_requests(self) -> impl Iterator<Item = Request> {
        self.0.into_iter().map(|(_, request)| request)
    }
}

/// A loop's buffers, reused by every read: TLS's plaintext, and what
/// nghttp2 made of it.
struct Buffers {
    chunk: Vec<u8>,
    received: Received,
}

/// Where the events of one read go: the page bodies are checked against,
/// the loop's latencies, the requests that ended; and when the read's call
/// returned, the instant every event of it happened.
struct Arrival<'a> {
    page: Option<&'a [u8]>,
    latencies: &'a mut Latencies,
    ended: &'a mut Vec<Ended>,
    now: Instant,
}

impl EventLoop<'_> {
    /// The HTTP/2 counterpart of `run`: releases the loop's requests at
    /// their due times to its `clients`, each holding up to `streams`
    /// requests at once in keep-alive mode (one otherwise).
    pub(super) fn run_multiplexed(self, clients: usize) -> Result<Driven> {
        let cpu_start = thread_cpu_ns();
        let epoll = Epoll::new().context("creating an epoll instance")?;
        let mut latencies = Latencies::new();
        let mut clients: Vec<Client> = (0..clients).map(|_| Client::default()).collect();
        let per_client = if self.plan.mode == Mode::KeepAlive {
            self.plan.streams.max(1)
        } else {
            1
        };
        // One entry per request a client can take now.
        let mut free: Vec<usize> = (0..clients.len())
            .rev()
            .flat_map(|index| std::iter::repeat_n(index, per_client))
            .collect();
        let capacity = free.len();
        let mut waiting = std::collections::VecDeque::new();
        let mut due = self.due;
        // Reused every turn: the clients given requests, the requests ended.
        let mut touched: Vec<usize> = Vec::new();
        let mut ended: Vec<Ended> = Vec::new();
        let mut stalls_checked = Instant::now();
        let mut started = 0;
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
        let mut buffers = Buffers {
            chunk: vec![0u8; 64 * 1024],
            received: Received::default(),
        };
        loop {
            let now = Instant::now();
            if self.stop.interrupted() {
                break;
            }
            if now >= self.stop.end {
                due.stop();
                waiting.clear();
            }
            while let Some(at) = due.release_by(now) {
                waiting.push_back(at);
            }
            touched.clear();
            while !waiting.is_empty() {
                let Some(index) = free.pop() else {
                    break;
                };
                let due = waiting.pop_front().expect("not empty");
                started += 1;
                clients[index].queued.push(Request {
                    due,
                    began: now,
                    sent: None,
                    head_at: None,
                    length: None,
                    received: 0,
                });
                touched.push(index);
            }
            touched.dedup();
            for &index in &touched {
                self.step(
                    &mut clients[index],
                    index,
                    &epoll,
                    &mut buffers,
                    &mut latencies,
                    &mut ended,
                );
                self.settle_all(&mut ended, index, &mut free, &mut latencies);
            }
            if due.next().is_none() && waiting.is_empty() && free.len() == capacity {
                break;
            }
            let mut wait = LONGEST_WAIT;
            if let Some(at) = due.next().filter(|_| waiting.is_empty()) {
                wait = wait.min(at.saturating_duration_since(Instant::now()));
            }
            let ready = epoll.wait(&mut events, wait).context("waiting on epoll")?;
            for event in &events[..ready] {
                let index = event.u64 as usize;
                if clients[index].connection.is_none() {
                    continue;
                }
                self.step(
                    &mut clients[index],
                    index,
                    &epoll,
                    &mut buffers,
                    &mut latencies,
                    &mut ended,
                );
                self.settle_all(&mut ended, index, &mut free, &mut latencies);
            }
            // Connections past the deadline or stalled fail their requests
            // (looked for every few milliseconds: a step may stall for
            // seconds, and the run may go on a second past its end).
            let now = Instant::now();
            if !self.stop.interrupted() && now.duration_since(stalls_checked) >= STALLS_EVERY {
                stalls_checked = now;
                for (index, client) in clients.iter_mut().enumerate() {
                    let stalled = client
                        .connection
                        .as_ref()
                        .filter(|c| !c.streams.is_empty() || !client.queued.is_empty())
                        .and_then(|c| self.stop.reason_at(c.progress, now));
                    if let Some(failure) = stalled {
                        let mut failed = fail_connection(client, failure);
                        self.settle_all(&mut failed, index, &mut free, &mut latencies);
                    }
                }
            }
        }
        Ok(self.driven(started, latencies, cpu_start))
    }

    /// Records each ended request and gives its client's slot back.
    fn settle_all(
        &self,
        ended: &mut Vec<Ended>,
        index: usize,
        free: &mut Vec<usize>,
        latencies: &mut Latencies,
    ) {
        if ended.is_empty() {
            return;
        }
        let end = Instant::now();
        for (request, resumed, result) in ended.drain(..) {
            if result.is_ok() {
                let _ = latencies.total.record(micros(end - request.due));
                let _ = latencies.service.record(micros(end - request.began));
            }
            self.finished.borrow_mut().record(super::super::Done {
                due: request.due,
                end,
                resumed,
                result,
            });
            free.push(index);
        }
    }

    /// Moves a client on as far as its socket allows: opens a connection
    /// for queued requests, sets it up, sends, reads and hands nghttp2's
    /// events to the requests. Adds the requests that ended to `ended`.
    fn step(
        &self,
        client: &mut Client,
        index: usize,
        epoll: &Epoll,
        buffers: &mut Buffers,
        latencies: &mut Latencies,
        ended: &mut Vec<Ended>,
    ) {
        if client.connection.is_none() && !client.queued.is_empty() {
            match self.open(client, index, epoll) {
                Ok(connection) => client.connection = Some(connection),
                Err(failure) => return ended.extend(fail_connection(client, failure)),
            }
        }
        match self.advance_connection(client, buffers, latencies, ended) {
            Ok(true) => {}
            Ok(false) => {
                // Closed by the server (GOAWAY) or done with: what is left
                // in flight fails, refused streams go again on a new one.
                if let Some(connection) = client.connection.take() {
                    let why = connection
                        .session
                        .as_ref()
                        .and_then(|session| session.ended().map(str::to_string))
                        .unwrap_or_else(|| "the server ended the HTTP/2 connection".to_string());
                    for request in connection.streams.into_requests() {
                        ended.push((
                            request,
                            connection.resumed,
                            Err((ErrorKind::Io, why.clone())),
                        ));
                    }
                }
                if !client.queued.is_empty() {
                    self.step(client, index, epoll, buffers, latencies, ended);
                }
            }
            Err(failure) => ended.extend(fail_connection(client, failure)),
        }
    }

    /// A new nonblocking connection offering `h2` (and the client's
    /// session in resumed mode), watched by `epoll` as `index`.
    fn open(
        &self,
        client: &Client,
        index: usize,
        epoll: &Epoll,
    ) -> std::result::Result<Connection, Failure> {
        let stream = self.open_tls(index, epoll, client.session.as_ref(), (ALPN_H2, "h2"))?;
        let now = Instant::now();
        Ok(Connection {
            stream,
            state: State::Connecting,
            phase_began: setup_began(&client.queued, now),
            progress: now,
            out: Vec::new(),
            written: 0,
            streams: InFlight::default(),
            resumed: false,
            session: None,
        })
    }

    /// Moves the client's connection on until its socket would block;
    /// returns false once the connection is over (the server ended it, or
    /// its one request is done in new-connection and resumed modes).
    fn advance_connection(
        &self,
        client: &mut Client,
        buffers: &mut Buffers,
        latencies: &mut Latencies,
        ended: &mut Vec<Ended>,
    ) -> std::result::Result<bool, Failure> {
        let Some(connection) = client.connection.as_mut() else {
            return Ok(true);
        };
        loop {
            match connection.state {
                State::Connecting => {
                    let tcp = connection.stream.tcp();
                    if let Some(error) = tcp.take_error().ok().flatten() {
                        return Err((ErrorKind::Connect, format!("connect: {error}")));
                    }
                    match tcp.peer_addr() {
                        Ok(_) => {
                            let connected = Instant::now();
                            let _ = latencies
                                .connect
                                .record(micros(connected - connection.phase_began));
                            connection.phase_began = connected;
                            connection.state = State::Handshaking;
                        }
                        Err(e) if e.kind() == io::ErrorKind::NotConnected => return Ok(true),
                        Err(e) => return Err((ErrorKind::Connect, format!("connect: {e}"))),
                    }
                }
                State::Handshaking => match connection.stream.handshake() {
                    Ok(true) => {
                        // After the call: it may have read the server's
                        // flight, checked it and sent the client's own.
                        let done = Instant::now();
                        let _ = latencies
                            .handshake
                            .record(micros(done - connection.phase_began));
                        connection.resumed = connection.stream.resumed();
                        let chosen = connection.stream.alpn_protocol();
                        if chosen != Some(b"h2".as_slice()) {
                            return Err((ErrorKind::Handshake, not_h2(chosen)));
                        }
                        connection.session = Some(Box::new(
                            ClientSession::new().map_err(|e| (ErrorKind::Io, e))?,
                        ));
                        connection.state = State::Open;
                    }
                    Ok(false) => return Ok(true),
                    Err(failure) => return Err((ErrorKind::Handshake, failure)),
                },
                State::Open => {
                    match self.exchange(
                        connection,
                        &mut client.queued,
                        buffers,
                        latencies,
                        ended,
                    )? {
                        Turn::Again => {}
                        Turn::Blocked => return Ok(true),
                        Turn::Over => {
                            if self.plan.mode == Mode::Resume {
                                // Read after the answer: a TLS 1.3 ticket
                                // arrives after the handshake.
                                client.session = connection.stream.session();
                            }
                            connection.stream.shutdown();
                            return Ok(false);
                        }
                    }
                }
            }
        }
    }

    /// One turn of an open connection: hands the queued requests to
    /// nghttp2, its frames to TLS, and what TLS has read back to nghttp2,
    /// whose events end requests (or queue refused ones again).
    fn exchange(
        &self,
        connection: &mut Connection,
        queued: &mut Vec<Request>,
        buffers: &mut Buffers,
        latencies: &mut Latencies,
        ended: &mut Vec<Ended>,
    ) -> std::result::Result<Turn, Failure> {
        let now = Instant::now();
        let Some(session) = connection.session.as_mut() else {
            return Err((ErrorKind::Io, "no HTTP/2 session".to_string()));
        };
        if connection.streams.is_empty() && !queued.is_empty() {
            // An idle connection takes work: its clock starts now.
            connection.progress = now;
        }
        for mut request in queued.drain(..) {
            let id = session
                .submit_get(&self.endpoint.server_name, &self.plan.path)
                .map_err(|e| (ErrorKind::Io, e))?;
            request.sent = None;
            connection.streams.insert(id, request);
        }
        session
            .output(&mut connection.out)
            .map_err(|e| (ErrorKind::Io, e))?;
        while connection.written < connection.out.len() {
            match connection
                .stream
                .write(&connection.out[connection.written..])
            {
                Ok(n) => {
                    connection.written += n;
                    connection.progress = now;
                }
                Err(e) if would_block(&e) => break,
                Err(e) => return Err((ErrorKind::Io, format!("writing to the server: {e}"))),
            }
        }
        if connection.written == connection.out.len() {
            connection.out.clear();
            connection.written = 0;
            // Every HEADERS frame submitted so far is in TLS's hands.
            let handed = Instant::now();
            for request in connection.streams.requests_mut() {
                request.sent.get_or_insert(handed);
            }
        }
        let n = match connection.stream.read(&mut buffers.chunk) {
            Ok(n) => n,
            Err(e) if would_block(&e) => {
                let open = session.open();
                return Ok(if open && self.wanted(connection) {
                    Turn::Blocked
                } else {
                    Turn::Over
                });
            }
            Err(e) => return Err((ErrorKind::Io, format!("reading from the server: {e}"))),
        };
        if n == 0 {
            return Err((
                ErrorKind::Io,
                "the server closed the connection".to_string(),
            ));
        }
        connection.progress = now;
        let Buffers { chunk, received } = buffers;
        session
            .receive(&chunk[..n], received)
            .map_err(|e| (ErrorKind::Io, e))?;
        let mut arrival = Arrival {
            page: self.endpoint.check_body.then_some(&self.plan.body[..]),
            latencies,
            ended,
            now: Instant::now(),
        };
        for event in received.events.drain(..) {
            let data = match &event {
                StreamEvent::Data { bytes, .. } => &received.body[bytes.clone()],
                _ => &[],
            };
            handle(event, data, connection, queued, &mut arrival);
        }
        Ok(if self.wanted(connection) {
            Turn::Again
        } else {
            Turn::Over
        })
    }

    /// Returns true if and only if the connection is still wanted: always
    /// in keep-alive mode; otherwise while its one request is under way.
    fn wanted(&self, connection: &Connection) -> bool {
        self.plan.mode == Mode::KeepAlive || !connection.streams.is_empty()
    }
}

/// Applies one of nghttp2's events (a Data event's bytes in `data`) to
/// the request of its stream.
fn handle(
    event: StreamEvent,
    data: &[u8],
    connection: &mut Connection,
    queued: &mut Vec<Request>,
    arrival: &mut Arrival,
) {
    let Arrival {
        page,
        latencies,
        ended,
        now,
    } = arrival;
    let (page, now) = (*page, *now);
    let resumed = connection.resumed;
    let mut fail = |stream: i32, failure: Failure, connection: &mut Connection| {
        if let Some(request) = connection.streams.remove(stream) {
            ended.push((request, resumed, Err(failure)));
        }
    };
    match event {
        StreamEvent::Head {
            stream,
            status,
            content_length,
        } => {
            let Some(request) = connection.streams.get_mut(stream) else {
                return;
            };
            if let Some(sent) = request.sent {
                let _ = latencies.first_byte.record(micros(now - sent));
            }
            request.head_at = Some(now);
            request.length = content_length;
            if status != 200 {
                fail(
                    stream,
                    (ErrorKind::Status, format!("HTTP status {status}")),
                    connection,
                );
            } else if let Some((length, page)) = content_length.zip(page) {
                if length != page.len() {
                    fail(
                        stream,
                        (
                            ErrorKind::Body,
                            format!("Content-Length {length}, expected {}", page.len()),
                        ),
                        connection,
                    );
                }
            }
        }
        StreamEvent::Data { stream, .. } => {
            let Some(request) = connection.streams.get_mut(stream) else {
                return;
            };
            let limit = page.map_or(request.length.unwrap_or(usize::MAX), <[u8]>::len);
            match check_body(page, limit, request.received, data) {
                Ok(received) => request.received = received,
                Err(failure) => fail(stream, failure, connection),
            }
        }
        StreamEvent::Closed { stream, error_code } => {
            let Some(request) = connection.streams.remove(stream) else {
                return;
            };
            let result = match (request.head_at, error_code) {
                (None, REFUSED_STREAM) => {
                    // Never processed: sent again on the next connection.
                    queued.push(request);
                    return;
                }
                (Some(head_at), 0) => {
                    let expected = page.map(<[u8]>::len).or(request.length);
                    match expected {
                        Some(length) if length != request.received => Err((
                            ErrorKind::Body,
                            format!("body ended after {} bytes", request.received),
                        )),
                        _ => {
                            let _ = latencies.transfer.record(micros(now - head_at));
                            Ok(request.received as u64)
                        }
                    }
                }
                (_, code) => Err((
                    ErrorKind::Io,
                    format!("the server reset the stream (HTTP/2 error code {code})"),
                )),
            };
            ended.push((request, resumed, result));
        }
    }
}

/// When the setup of a connection opened at `now` for `queued` began: at
/// the start of the earliest request never sent before (in new-connection
/// and resumed modes the connection's one request, so that its connect
/// phase counts from its start as its service time does), or `now` for
/// requests sent again after a refusal.
fn setup_began(queued: &[Request], now: Instant) -> Instant {
    queued
        .iter()
        .filter(|request| request.sent.is_none())
        .map(|request| request.began)
        .min()
        .unwrap_or(now)
}

/// Every request of the client's connection and queue fails with
/// `failure`; the connection is dropped.
fn fail_connection(client: &mut Client, failure: Failure) -> Vec<Ended> {
    let connection = client.connection.take();
    let resumed = connection.as_ref().is_some_and(|c| c.resumed);
    connection
        .into_iter()
        .flat_map(|c| c.streams.into_requests())
        .chain(client.queued.drain(..))
        .map(|request| (request, resumed, Err(failure.clone())))
        .collect()
}

/// Why a connection cannot carry HTTP/2: the protocol its server chose.
pub fn not_h2(chosen: Option<&[u8]>) -> String {
    match chosen {
        Some(protocol) => format!(
            "the server chose ALPN {:?}, not h2: it does not speak HTTP/2 here",
            String::from_utf8_lossy(protocol)
        ),
        None => "the server chose no ALPN protocol (offered: h2): it does not speak HTTP/2 here"
            .to_string(),
    }
}
