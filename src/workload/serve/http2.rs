//! The HTTP/2 phase of an embedded server's connection, once ALPN chose
//! `h2`: nghttp2's server session ([`crate::workload::h2::ServerSession`])
//! reads the frames TLS decrypted, each complete request is answered as
//! HTTP/1.1 answers it ([`http::route`]: the generated page, 404, 405;
//! 431 past [`MAX_HEAD_BYTES`] of header fields), many streams at once,
//! and the frames nghttp2 makes go out through TLS in bounded batches
//! ([`OUTPUT_BYTES`]; a page is read from the static pattern as nghttp2
//! asks for it, within the client's flow-control windows).
//!
//! Deadlines, as for HTTP/1.1: the first request keeps the handshake's
//! deadline; while streams are open, each write taken pushes the send
//! deadline back ([`Limits::send_timeout`]); once none is, the connection
//! may idle for [`Limits::keep_alive_timeout`] (frames that open no stream,
//! PINGs included, do not push it back), after which it gets a GOAWAY and
//! is closed. A response is counted once its last byte is handed to TLS.

use std::io::ErrorKind;
use std::time::Instant;

use super::http::{self, page_slice, Status, MAX_HEAD_BYTES};
use super::{Limits, ServerStats};
use crate::backend::ServerSession as TlsSession;
use crate::workload::h2::{Finished, ServerSession};

/// The most streams a client may have open at once on one connection
/// (nginx's `http2_max_concurrent_streams` is 128, Apache's 100).
const MAX_CONCURRENT_STREAMS: u32 = 128;
/// The most frame bytes taken from nghttp2 at once, before TLS has sent
/// them: what a busy connection holds besides TLS's own buffers.
const OUTPUT_BYTES: usize = 32 * 1024;

/// How an HTTP/2 turn ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Waiting for the socket (or the deadline).
    Waiting,
    /// It wrote its share of the turn and has more at once.
    Again,
    /// The session is over (a GOAWAY either way, all sent): close cleanly.
    Over,
    /// The client closed the connection: close in turn.
    ClientClosed,
    /// TLS or the client's framing failed: drop the connection.
    Failed,
}

/// One connection's HTTP/2 session and the frames on their way out.
pub struct Http2 {
    session: ServerSession,
    /// Frames to send, and how many of their bytes TLS has taken (a write
    /// after WouldBlock passes the same bytes again, as OpenSSL wants).
    out: Vec<u8>,
    written: usize,
    /// Responses whose last frame is in `out`: counted once it is sent.
    sending: Vec<Finished>,
    /// A stream was open (or frames were left) after the last turn.
    busy: bool,
}

impl Http2 {
    /// A new session; its SETTINGS go out on the first turn.
    pub fn new() -> Result<Self, String> {
        Ok(Self {
            session: ServerSession::new(MAX_CONCURRENT_STREAMS, MAX_HEAD_BYTES, page_slice)?,
            out: Vec::new(),
            written: 0,
            sending: Vec::new(),
            busy: false,
        })
    }

    /// Returns true if and only if a stream is open or frames wait to go
    /// out: an expired deadline then means the client stopped reading.
    pub fn busy(&self) -> bool {
        self.busy
    }

    /// Moves the session on as far as the socket allows: sends what is
    /// pending, takes more frames from nghttp2, reads and answers requests;
    /// gives way once this turn has `written` `turn_bytes`.
    #[allow(clippy::too_many_arguments)]
    pub fn turn(
        &mut self,
        tls: &mut dyn TlsSession,
        deadline: &mut Instant,
        now: Instant,
        limits: &Limits,
        stats: &mut ServerStats,
        chunk: &mut [u8],
        written: &mut usize,
        turn_bytes: usize,
    ) -> Outcome {
        loop {
            if self.written < self.out.len() {
                if *written >= turn_bytes {
                    return Outcome::Again;
                }
                match tls.write(&self.out[self.written..]) {
                    Ok(taken) => {
                        self.written += taken;
                        *written += taken;
                        // Only answers push the deadline back: PING
                        // acknowledgements to an idle client do not.
                        if self.busy {
                            *deadline = now + limits.send_timeout;
                        }
                        continue;
                    }
                    Err(error) if error.kind() == ErrorKind::WouldBlock => return Outcome::Waiting,
                    Err(_) => return Outcome::Failed,
                }
            }
            self.out.clear();
            self.written = 0;
            self.count_sent(stats);
            let began = Instant::now();
            let made = self.session.output(&mut self.out, OUTPUT_BYTES);
            self.sending.extend(self.session.take_finished());
            stats.http_ns += began.elapsed().as_nanos() as u64;
            if made.is_err() {
                return Outcome::Failed;
            }
            if !self.out.is_empty() {
                continue;
            }
            // Streams the client reset come back with no frame to send.
            self.count_sent(stats);
            if !self.session.open() {
                return Outcome::Over;
            }
            self.mark_idle(deadline, now, limits);
            match tls.read(chunk) {
                Ok(0) => return Outcome::ClientClosed,
                Ok(read) => {
                    if !self.answer(&chunk[..read], stats) {
                        return Outcome::Failed;
                    }
                    if self.session.open_streams() > 0 && !self.busy {
                        self.busy = true;
                        *deadline = now + limits.send_timeout;
                    }
                }
                Err(error) if error.kind() == ErrorKind::WouldBlock => return Outcome::Waiting,
                // A fatal TLS error: its alert was sent, nothing follows.
                Err(_) => return Outcome::Failed,
            }
        }
    }

    /// Feeds what the client sent to nghttp2 and answers the requests it
    /// completed; false if the session cannot go on (nghttp2 answers a
    /// client's protocol error with a GOAWAY of its own and goes on; what
    /// it returns as an error, a bad preface or a flood, ends it).
    fn answer(&mut self, received: &[u8], stats: &mut ServerStats) -> bool {
        let began = Instant::now();
        let requests = match self.session.receive(received) {
            Ok(requests) => requests,
            Err(_) => {
                stats.http_ns += began.elapsed().as_nanos() as u64;
                return false;
            }
        };
        for request in requests {
            let (status, body_bytes) = if request.too_large {
                (Status::HeadTooLarge, 0)
            } else {
                match http::route(&request.method, &request.path) {
                    Ok(page_bytes) => (Status::Ok, page_bytes),
                    Err(status) => (status, 0),
                }
            };
            // Refused by nghttp2 only when the stream is already gone.
            let _ = self
                .session
                .respond(request.stream, status.code(), body_bytes);
        }
        stats.http_ns += began.elapsed().as_nanos() as u64;
        true
    }

    /// Counts the responses whose last byte TLS has taken.
    fn count_sent(&mut self, stats: &mut ServerStats) {
        for finished in self.sending.drain(..).filter(|f| f.complete) {
            match finished.status {
                200 => {
                    stats.requests += 1;
                    stats.body_bytes += finished.body_bytes as u64;
                }
                408 => stats.timed_out_requests += 1,
                _ => stats.refused_requests += 1,
            }
        }
    }

    /// With no stream open and nothing to send, the connection idles: its
    /// keep-alive deadline starts when the last stream ended.
    fn mark_idle(&mut self, deadline: &mut Instant, now: Instant, limits: &Limits) {
        if self.busy && self.session.open_streams() == 0 {
            self.busy = false;
            *deadline = now + limits.keep_alive_timeout;
        }
    }

    /// Ends the session before the connection is closed (an idle deadline,
    /// the server stopping): a GOAWAY, sent as far as the socket takes it.
    pub fn end(&mut self, tls: &mut dyn TlsSession) {
        self.session.end();
        if self.written < self.out.len() {
            // Frames are half sent: a GOAWAY cannot come between them.
            return;
        }
        self.out.clear();
        self.written = 0;
        if self.session.output(&mut self.out, OUTPUT_BYTES).is_err() {
            return;
        }
        while self.written < self.out.len() {
            match tls.write(&self.out[self.written..]) {
                Ok(taken) => self.written += taken,
                Err(_) => return,
            }
        }
    }
}
