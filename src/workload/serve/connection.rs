//! One connection of the embedded server, as a state machine its worker's
//! event loop moves on whenever the socket is ready: waiting for the
//! client's first byte (no TLS state is made before it, so an idle
//! connection costs a descriptor and a few hundred bytes), the handshake,
//! a request head, the response, and the close. Every phase has a
//! deadline that activity never pushes back: the handshake and the first
//! request head share one ([`Limits::head_timeout`], as nginx's
//! `client_header_timeout`), each later head gets its own from its first
//! byte, an idle kept-alive connection closes after
//! [`Limits::keep_alive_timeout`]; a head not complete in time is answered
//! 408. What a connection holds is bounded: at most one head's bytes
//! (431 past [`MAX_HEAD_BYTES`]) and one slice of a page at a time. A
//! connection whose client chose `h2` by ALPN goes from the handshake to
//! [`super::http2`] instead, which has its own rules within the same limits.

use std::io::{ErrorKind, Read};
use std::net::{Shutdown, TcpStream};
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use super::http::{self, page_slice, Parsed, Status, MAX_HEAD_BYTES, PAGE_SLICE_BYTES};
use super::http2::{Http2, Outcome};
use super::{Limits, ServerStats};
use crate::backend::{ServerSession, TlsAcceptor};

/// How long a closing connection waits for the client to read the last
/// response and close, discarding what it still sends (as nginx's
/// lingering close), so the client is not reset before it has read it.
const LINGER: Duration = Duration::from_secs(2);
/// The most bytes one turn writes before other connections get theirs.
const TURN_BYTES: usize = 256 * 1024;

/// What became of a connection after a turn.
#[derive(Debug, PartialEq, Eq)]
pub enum Turn {
    /// It waits for its socket (or its deadline).
    Waiting,
    /// It has more to do at once (it gave way to other connections).
    Again,
    /// It is closed; its owner drops it.
    Closed,
}

/// Where a connection is.
enum Phase {
    /// Accepted; the client has sent nothing yet.
    Silent(TcpStream),
    Handshake,
    /// Waiting for a request head; `started` once its first byte came.
    Head {
        started: bool,
    },
    Respond(Response),
    /// ALPN chose `h2`: an HTTP/2 session carries the requests.
    Http2(Box<Http2>),
    /// The last response is sent and close_notify queued: sending it,
    /// then discarding what the client still sends until it closes.
    Closing {
        shut: bool,
    },
    /// Closed (its socket is dropped with the connection).
    Done,
}

/// A response being sent: its head (with the first slice of its body when
/// both fit in one record), then the page in slices.
struct Response {
    head: Vec<u8>,
    head_sent: usize,
    body_bytes: usize,
    body_sent: usize,
    status: Status,
    keep_alive: bool,
}

impl Response {
    fn new(status: Status, body_bytes: usize, keep_alive: bool) -> Self {
        let mut head = http::response_head(status, body_bytes, keep_alive);
        let first = body_bytes.min(PAGE_SLICE_BYTES.saturating_sub(head.len()));
        head.extend_from_slice(page_slice(0, first));
        Self {
            head,
            head_sent: 0,
            body_bytes,
            body_sent: first,
            status,
            keep_alive,
        }
    }

    /// The bytes to write next, head first (the same ones again until
    /// some are taken), or None when all are sent.
    fn pending(&self) -> Option<&[u8]> {
        if self.head_sent < self.head.len() {
            return Some(&self.head[self.head_sent..]);
        }
        (self.body_sent < self.body_bytes)
            .then(|| page_slice(self.body_sent, self.body_bytes - self.body_sent))
    }

    /// Counts `taken` bytes of what [`Response::pending`] gave as sent.
    fn advance(&mut self, taken: usize) {
        let in_head = (self.head.len() - self.head_sent).min(taken);
        self.head_sent += in_head;
        self.body_sent += taken - in_head;
    }
}

/// One connection and where it is.
pub struct Connection {
    session: Option<Box<dyn ServerSession>>,
    phase: Phase,
    /// When the current phase must be over.
    pub deadline: Instant,
    /// Request bytes received and not yet answered.
    received: Vec<u8>,
    /// Responses sent on this connection.
    answered: u64,
    /// The library's time on this connection already handed over.
    library_ns_taken: u64,
}

impl Connection {
    pub fn new(tcp: TcpStream, now: Instant, limits: &Limits) -> Self {
        Self {
            session: None,
            phase: Phase::Silent(tcp),
            deadline: now + limits.head_timeout,
            received: Vec::new(),
            answered: 0,
            library_ns_taken: 0,
        }
    }

    /// The library's time on this connection since the last call, when
    /// the session can tell.
    pub fn take_library_ns(&mut self) -> Option<u64> {
        let total = self.session.as_ref().and_then(|s| s.library_ns())?;
        let since = total.saturating_sub(self.library_ns_taken);
        self.library_ns_taken = total;
        Some(since)
    }

    /// Moves the connection on as far as its socket allows.
    pub fn turn(
        &mut self,
        acceptor: &dyn TlsAcceptor,
        now: Instant,
        limits: &Limits,
        stats: &mut ServerStats,
        chunk: &mut [u8],
    ) -> Turn {
        let mut written = 0;
        loop {
            let step = match self.phase {
                Phase::Silent(_) => self.first_byte(acceptor, stats, chunk),
                Phase::Handshake => self.handshake(stats),
                Phase::Head { started } => self.read_head(started, now, limits, stats, chunk),
                Phase::Respond(_) => self.send_response(&mut written, now, limits, stats),
                Phase::Http2(_) => self.serve_http2(&mut written, now, limits, stats, chunk),
                Phase::Closing { shut } => self.linger(shut, chunk),
                Phase::Done => ControlFlow::Break(Turn::Closed),
            };
            if let ControlFlow::Break(turn) = step {
                return turn;
            }
        }
    }

    /// Silent: once the client's first byte is there (peeked, not read),
    /// makes the TLS session; a client that closes or fails first counts
    /// as silent.
    fn first_byte(
        &mut self,
        acceptor: &dyn TlsAcceptor,
        stats: &mut ServerStats,
        chunk: &mut [u8],
    ) -> ControlFlow<Turn> {
        let Phase::Silent(tcp) = &self.phase else {
            unreachable!("called in the silent phase");
        };
        match tcp.peek(&mut chunk[..1]) {
            Ok(0) => {
                stats.silent_connections += 1;
                ControlFlow::Break(self.drop_now())
            }
            Ok(_) => {
                let Phase::Silent(tcp) = std::mem::replace(&mut self.phase, Phase::Done) else {
                    unreachable!("the phase was just matched");
                };
                match acceptor.session(tcp) {
                    Ok(session) => {
                        self.session = Some(session);
                        self.phase = Phase::Handshake;
                        ControlFlow::Continue(())
                    }
                    Err(error) => {
                        stats.fail_handshake(format!("{error:#}"));
                        ControlFlow::Break(self.drop_now())
                    }
                }
            }
            Err(error) if error.kind() == ErrorKind::WouldBlock => {
                ControlFlow::Break(Turn::Waiting)
            }
            Err(_) => {
                stats.silent_connections += 1;
                ControlFlow::Break(self.drop_now())
            }
        }
    }

    /// Handshake: moves it on; once complete, waits for the first head.
    fn handshake(&mut self, stats: &mut ServerStats) -> ControlFlow<Turn> {
        match self.session().handshake() {
            Ok(true) => {
                stats.handshakes += 1;
                if self.session().resumed() {
                    stats.resumed += 1;
                }
                // The first head keeps the handshake's deadline.
                self.phase = Phase::Head { started: false };
                if self.session().alpn_protocol() == Some(b"h2") {
                    match Http2::new() {
                        Ok(session) => self.phase = Phase::Http2(Box::new(session)),
                        Err(error) => {
                            stats.first_failure.get_or_insert(error);
                            return ControlFlow::Break(self.drop_now());
                        }
                    }
                }
                ControlFlow::Continue(())
            }
            Ok(false) => ControlFlow::Break(Turn::Waiting),
            Err(error) => {
                stats.fail_handshake(format!("TLS handshake failed: {error}"));
                ControlFlow::Break(self.drop_now())
            }
        }
    }

    /// Head: answers a complete head in what was received (a page, or a
    /// refusal), else reads more, never holding more than one head's
    /// bytes; a later head's deadline starts with its first byte.
    fn read_head(
        &mut self,
        was_started: bool,
        now: Instant,
        limits: &Limits,
        stats: &mut ServerStats,
        chunk: &mut [u8],
    ) -> ControlFlow<Turn> {
        let began = Instant::now();
        let parsed = if self.received.is_empty() {
            Parsed::Incomplete
        } else {
            http::parse(&self.received)
        };
        stats.http_ns += began.elapsed().as_nanos() as u64;
        match parsed {
            Parsed::Page(request, head_bytes) => {
                self.received.drain(..head_bytes);
                self.respond(Status::Ok, request.page_size, request.keep_alive, stats);
                return ControlFlow::Continue(());
            }
            Parsed::Refused(status) => {
                self.received.clear();
                self.respond(status, 0, false, stats);
                return ControlFlow::Continue(());
            }
            Parsed::Incomplete => {}
        }
        let room = (MAX_HEAD_BYTES + 1).saturating_sub(self.received.len());
        let limit = chunk.len().min(room.max(1));
        match self.session().read(&mut chunk[..limit]) {
            Ok(0) => {
                // The client closed: close in turn, best effort.
                self.session().close_notify();
                let _ = self.session().flush();
                ControlFlow::Break(self.drop_now())
            }
            Ok(read) => {
                self.received.extend_from_slice(&chunk[..read]);
                if !was_started {
                    self.phase = Phase::Head { started: true };
                    if self.answered > 0 {
                        self.deadline = now + limits.head_timeout;
                    }
                }
                ControlFlow::Continue(())
            }
            Err(error) if error.kind() == ErrorKind::WouldBlock => {
                ControlFlow::Break(Turn::Waiting)
            }
            // A fatal TLS error: its alert was sent, nothing follows.
            Err(_) => ControlFlow::Break(self.drop_now()),
        }
    }

    /// Respond: writes the response's next bytes, giving way to other
    /// connections once this turn has `written` [`TURN_BYTES`]; each write
    /// taken pushes the send deadline back.
    fn send_response(
        &mut self,
        written: &mut usize,
        now: Instant,
        limits: &Limits,
        stats: &mut ServerStats,
    ) -> ControlFlow<Turn> {
        let Phase::Respond(response) = &mut self.phase else {
            unreachable!("called in the respond phase");
        };
        let Some(bytes) = response.pending() else {
            let (status, body_bytes, keep_alive) =
                (response.status, response.body_bytes, response.keep_alive);
            self.response_sent(status, body_bytes, keep_alive, now, limits, stats);
            return ControlFlow::Continue(());
        };
        if *written >= TURN_BYTES {
            return ControlFlow::Break(Turn::Again);
        }
        let session = self
            .session
            .as_deref_mut()
            .expect("a connection past its first byte has a session");
        match session.write(bytes) {
            Ok(taken) => {
                *written += taken;
                response.advance(taken);
                self.deadline = now + limits.send_timeout;
                ControlFlow::Continue(())
            }
            Err(error) if error.kind() == ErrorKind::WouldBlock => {
                ControlFlow::Break(Turn::Waiting)
            }
            Err(_) => ControlFlow::Break(self.drop_now()),
        }
    }

    /// HTTP/2: moves the session on (see [`Http2::turn`]); a session over
    /// closes cleanly, a client that closed gets close_notify in turn.
    fn serve_http2(
        &mut self,
        written: &mut usize,
        now: Instant,
        limits: &Limits,
        stats: &mut ServerStats,
        chunk: &mut [u8],
    ) -> ControlFlow<Turn> {
        let Phase::Http2(http2) = &mut self.phase else {
            unreachable!("called in the HTTP/2 phase");
        };
        let tls = self
            .session
            .as_deref_mut()
            .expect("a connection past its first byte has a session");
        match http2.turn(
            tls,
            &mut self.deadline,
            now,
            limits,
            stats,
            chunk,
            written,
            TURN_BYTES,
        ) {
            Outcome::Waiting => ControlFlow::Break(Turn::Waiting),
            Outcome::Again => ControlFlow::Break(Turn::Again),
            Outcome::Over => {
                self.close();
                ControlFlow::Continue(())
            }
            Outcome::ClientClosed => {
                self.session().close_notify();
                let _ = self.session().flush();
                ControlFlow::Break(self.drop_now())
            }
            Outcome::Failed => ControlFlow::Break(self.drop_now()),
        }
    }

    /// Ends an HTTP/2 session with a GOAWAY, then close_notify, each as far
    /// as the socket takes them (the connection is dropped next).
    fn end_http2(&mut self) {
        let Phase::Http2(http2) = &mut self.phase else {
            return;
        };
        let tls = self
            .session
            .as_deref_mut()
            .expect("a connection past its first byte has a session");
        http2.end(tls);
        tls.close_notify();
        let _ = tls.flush();
    }

    /// A response is all sent: counts it, then waits for the next head
    /// (kept alive: a head already begun gets the head timeout, none yet the
    /// keep-alive timeout) or closes.
    fn response_sent(
        &mut self,
        status: Status,
        body_bytes: usize,
        keep_alive: bool,
        now: Instant,
        limits: &Limits,
        stats: &mut ServerStats,
    ) {
        self.answered += 1;
        match status {
            Status::Ok => {
                stats.requests += 1;
                stats.body_bytes += body_bytes as u64;
            }
            Status::RequestTimeout => stats.timed_out_requests += 1,
            _ => stats.refused_requests += 1,
        }
        if keep_alive {
            let started = !self.received.is_empty();
            self.phase = Phase::Head { started };
            self.deadline = now
                + if started {
                    limits.head_timeout
                } else {
                    limits.keep_alive_timeout
                };
        } else {
            self.close();
        }
    }

    /// Closing: sends close_notify and shuts the write side once it is
    /// out (`shut`), then discards what the client still sends until it
    /// closes.
    fn linger(&mut self, shut: bool, chunk: &mut [u8]) -> ControlFlow<Turn> {
        if !shut {
            match self.session().flush() {
                Ok(true) => {
                    let _ = self.session().tcp().shutdown(Shutdown::Write);
                    self.phase = Phase::Closing { shut: true };
                }
                Ok(false) => return ControlFlow::Break(Turn::Waiting),
                Err(_) => return ControlFlow::Break(self.drop_now()),
            }
        }
        let mut tcp = self.session().tcp();
        match tcp.read(chunk) {
            Ok(0) => ControlFlow::Break(self.drop_now()),
            Ok(_) => ControlFlow::Continue(()),
            Err(error) if error.kind() == ErrorKind::WouldBlock => {
                ControlFlow::Break(Turn::Waiting)
            }
            Err(_) => ControlFlow::Break(self.drop_now()),
        }
    }

    /// What happens when the deadline has passed.
    pub fn expire(
        &mut self,
        acceptor: &dyn TlsAcceptor,
        now: Instant,
        limits: &Limits,
        stats: &mut ServerStats,
        chunk: &mut [u8],
    ) -> Turn {
        match self.phase {
            Phase::Silent(_) => {
                stats.silent_connections += 1;
                self.drop_now()
            }
            Phase::Handshake => {
                stats.fail_handshake(format!(
                    "TLS handshake abandoned: not complete within {} s of the connection",
                    limits.head_timeout.as_secs_f64()
                ));
                self.drop_now()
            }
            // A head begun and not finished in time: 408, then close.
            Phase::Head { started: true } => {
                self.received.clear();
                self.respond(Status::RequestTimeout, 0, false, stats);
                self.deadline = now + limits.send_timeout;
                self.turn(acceptor, now, limits, stats, chunk)
            }
            // Idle between requests (or after the handshake): close.
            Phase::Head { started: false } => {
                self.session().close_notify();
                let _ = self.session().flush();
                self.drop_now()
            }
            // Idle between streams: GOAWAY and close_notify, then a
            // lingering close, so a PING the client sent meanwhile does
            // not make the kernel reset the connection (and drop the
            // GOAWAY unread) as closing with it unread would.
            Phase::Http2(ref http2) if !http2.busy() => {
                self.end_http2();
                self.phase = Phase::Closing { shut: false };
                self.deadline = now + LINGER;
                self.turn(acceptor, now, limits, stats, chunk)
            }
            // The client stopped reading, or lingers: close.
            Phase::Respond(_) | Phase::Http2(_) | Phase::Closing { .. } | Phase::Done => {
                self.drop_now()
            }
        }
    }

    /// Closes the connection because the server stops: a handshake under
    /// way counts as failed, an idle connection gets close_notify.
    pub fn stop(&mut self, stats: &mut ServerStats) {
        match self.phase {
            Phase::Silent(_) => stats.silent_connections += 1,
            Phase::Handshake => stats.fail_handshake(
                "TLS handshake abandoned: the server stopped before it was complete".to_string(),
            ),
            Phase::Head { .. } => {
                self.session().close_notify();
                let _ = self.session().flush();
            }
            Phase::Http2(_) => self.end_http2(),
            Phase::Respond(_) | Phase::Closing { .. } | Phase::Done => {}
        }
        self.drop_now();
    }

    fn session(&mut self) -> &mut dyn ServerSession {
        self.session
            .as_deref_mut()
            .expect("a connection past its first byte has a session")
    }

    /// Starts the response; the time spent building it is HTTP's.
    fn respond(
        &mut self,
        status: Status,
        body_bytes: usize,
        keep_alive: bool,
        stats: &mut ServerStats,
    ) {
        let began = Instant::now();
        self.phase = Phase::Respond(Response::new(status, body_bytes, keep_alive));
        stats.http_ns += began.elapsed().as_nanos() as u64;
    }

    /// After the last response: close_notify, then a lingering close.
    fn close(&mut self) {
        self.session().close_notify();
        self.phase = Phase::Closing { shut: false };
        self.deadline = Instant::now() + LINGER;
    }

    fn drop_now(&mut self) -> Turn {
        self.phase = Phase::Done;
        Turn::Closed
    }
}
