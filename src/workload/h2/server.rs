//! The server side of HTTP/2, as the embedded server uses it: one server
//! session of nghttp2 per connection, driven sans-IO. The bytes TLS
//! decrypted go in with [`ServerSession::receive`], which returns the
//! requests that are complete (method and path); the caller answers each
//! with [`ServerSession::respond`] (a status and a body length), and the
//! frames to send come out of [`ServerSession::output`], the body's bytes
//! read from a [`BodySource`] as nghttp2 asks for them, so no body is ever
//! held whole. nghttp2 keeps to the client's flow-control windows (a
//! stream whose window is spent waits for the client's WINDOW_UPDATE),
//! refuses streams beyond the session's limit and checks the requests'
//! header fields (HTTP messaging); a stream whose last frame went out, or
//! that the client reset, comes back as [`Finished`].
//!
//! nghttp2 forgets a stream once it is closed, so it ignores the frames a
//! client sends on it; RFC 9113 §5.1 wants an error for DATA or HEADERS
//! on a stream the client closed (its END_STREAM answered, or its
//! RST_STREAM), §5.1.1 for a new stream below one already opened, and
//! §6.3 for a PRIORITY frame on stream 0, §6.9.1 for a stream's window past
//! 2^31-1 (a stream error, where nghttp2 ends the connection), and h2spec
//! for a stream that depends on itself. The session checks these itself
//! before nghttp2 reads each frame ([`on_begin_frame`], and [`Framing`]:
//! the bytes go to nghttp2 a frame at a time), keeping the last
//! [`CLOSED_STREAMS_KEPT`] streams the client closed; a stream the server
//! reset is not among them (§5.1: frames may still be in flight, and are
//! ignored).

use std::collections::{HashMap, HashSet, VecDeque};
use std::ffi::{c_int, c_void};
use std::ptr;

use libnghttp2_sys as ffi;

use super::{check, field};

/// Where a body's bytes come from: bytes `offset..offset + length` of it,
/// or fewer (at least one); the same bytes for the same arguments.
pub type BodySource = fn(offset: usize, length: usize) -> &'static [u8];

/// A request whose header block (and body, if any) has all arrived.
#[derive(Debug, PartialEq, Eq)]
pub struct Request {
    pub stream: i32,
    /// `:method` and `:path` (nghttp2 refuses a request without them).
    pub method: String,
    pub path: String,
    /// Its header fields took more than the session's bound: answer 431.
    pub too_large: bool,
}

/// A stream that is over: the status and body length it was answered
/// with, and whether all of it went out (the last frame was handed over
/// for sending with END_STREAM, no reset).
#[derive(Debug, PartialEq, Eq)]
pub struct Finished {
    pub stream: i32,
    /// 0 when it was never answered.
    pub status: u16,
    pub body_bytes: usize,
    pub complete: bool,
}

/// How many of the streams the client closed a session remembers, to
/// answer a frame on one with an error (older ones are ignored, as
/// nghttp2 ignores them).
const CLOSED_STREAMS_KEPT: usize = 1024;

/// One stream's request and response as they go.
#[derive(Default)]
struct Stream {
    method: String,
    path: String,
    header_bytes: usize,
    too_large: bool,
    /// Handed to the caller as a [`Request`].
    requested: bool,
    status: u16,
    body_bytes: usize,
    body_sent: usize,
}

/// What the callbacks read and write.
struct State {
    streams: HashMap<i32, Stream>,
    requests: Vec<Request>,
    finished: Vec<Finished>,
    body: BodySource,
    /// The most bytes a request's header fields may take (names, values
    /// and 32 bytes each, as SETTINGS_MAX_HEADER_LIST_SIZE counts them).
    max_header_bytes: usize,
    /// The highest stream the client opened.
    last_client_stream: i32,
    /// Streams the client reset, until they close.
    reset_by_client: HashSet<i32>,
    /// The last streams the client closed (END_STREAM or RST_STREAM).
    closed: RecentStreams,
    /// The last streams the server reset: frames on them are ignored.
    reset_by_server: RecentStreams,
}

/// The last [`CLOSED_STREAMS_KEPT`] streams of a kind.
#[derive(Default)]
struct RecentStreams {
    order: VecDeque<i32>,
    set: HashSet<i32>,
}

impl RecentStreams {
    fn insert(&mut self, stream: i32) {
        if self.set.insert(stream) {
            self.order.push_back(stream);
        }
        if self.order.len() > CLOSED_STREAMS_KEPT {
            if let Some(oldest) = self.order.pop_front() {
                self.set.remove(&oldest);
            }
        }
    }

    /// Returns true if and only if `stream` is among them.
    fn contains(&self, stream: i32) -> bool {
        self.set.contains(&stream)
    }
}

/// A server session of nghttp2 over one connection.
pub struct ServerSession {
    raw: *mut ffi::nghttp2_session,
    /// What the callbacks work on; boxed so its address holds.
    state: Box<State>,
    framing: Framing,
}

/// Where the client's bytes are, frame by frame: nghttp2 drops a DATA
/// frame on a stream it forgot without a callback, so the session reads
/// each frame's header itself and hands nghttp2 the bytes a frame at a
/// time, checking a DATA frame's stream after nghttp2 has read every
/// frame before it.
struct Framing {
    /// Bytes of the client's connection preface still to come.
    preface_left: usize,
    /// The bytes of a frame held back until they are whole: its header,
    /// and for a WINDOW_UPDATE or PRIORITY frame on a stream its payload
    /// ([`ServerSession::small_frame_is_fine`]).
    held: Vec<u8>,
    /// The payload bytes of the frame held (0: only its header is).
    held_payload: usize,
    /// Bytes of the current frame's payload still to come.
    payload_left: usize,
}

impl Default for Framing {
    fn default() -> Self {
        Self {
            preface_left: 24,
            held: Vec::with_capacity(14),
            held_payload: 0,
            payload_left: 0,
        }
    }
}

// SAFETY: the session is used by one thread at a time (each worker owns
// its connections); nghttp2 keeps no thread-local state.
unsafe impl Send for ServerSession {}

impl ServerSession {
    /// A new server session whose SETTINGS (at most
    /// `max_concurrent_streams` streams at once, header lists up to
    /// `max_header_bytes`) are queued for [`ServerSession::output`];
    /// bodies are read from `body`.
    pub fn new(
        max_concurrent_streams: u32,
        max_header_bytes: usize,
        body: BodySource,
    ) -> Result<Self, String> {
        let mut state = Box::new(State {
            streams: HashMap::new(),
            requests: Vec::new(),
            finished: Vec::new(),
            body,
            max_header_bytes,
            last_client_stream: 0,
            reset_by_client: HashSet::new(),
            closed: RecentStreams::default(),
            reset_by_server: RecentStreams::default(),
        });
        let mut callbacks = ptr::null_mut();
        let mut raw = ptr::null_mut();
        // SAFETY: plain nghttp2 calls; `callbacks` is freed once the session
        // has copied it; the user data outlives the session (both are
        // owned by the value returned and the session is deleted first).
        unsafe {
            check(ffi::nghttp2_session_callbacks_new(&mut callbacks))?;
            ffi::nghttp2_session_callbacks_set_on_begin_frame_callback(
                callbacks,
                Some(on_begin_frame),
            );
            ffi::nghttp2_session_callbacks_set_on_begin_headers_callback(
                callbacks,
                Some(on_begin_headers),
            );
            ffi::nghttp2_session_callbacks_set_on_header_callback(callbacks, Some(on_header));
            ffi::nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, Some(on_frame));
            ffi::nghttp2_session_callbacks_set_on_frame_send_callback(
                callbacks,
                Some(on_frame_send),
            );
            ffi::nghttp2_session_callbacks_set_on_stream_close_callback(
                callbacks,
                Some(on_stream_close),
            );
            let created = ffi::nghttp2_session_server_new(
                &mut raw,
                callbacks,
                (&mut *state as *mut State).cast(),
            );
            ffi::nghttp2_session_callbacks_del(callbacks);
            check(created)?;
        }
        let session = Self {
            raw,
            state,
            framing: Framing::default(),
        };
        let settings = [
            ffi::nghttp2_settings_entry {
                settings_id: ffi::NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS as i32,
                value: max_concurrent_streams,
            },
            ffi::nghttp2_settings_entry {
                settings_id: ffi::NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE as i32,
                value: u32::try_from(max_header_bytes).unwrap_or(u32::MAX),
            },
        ];
        // SAFETY: a live session; the entries are read during the call.
        unsafe {
            check(ffi::nghttp2_submit_settings(
                session.raw,
                ffi::NGHTTP2_FLAG_NONE as u8,
                settings.as_ptr(),
                settings.len(),
            ))?;
        }
        Ok(session)
    }

    /// Feeds bytes received from the client to the session and returns
    /// the requests they completed.
    pub fn receive(&mut self, bytes: &[u8]) -> Result<Vec<Request>, String> {
        let mut rest = bytes;
        while !rest.is_empty() {
            let framing = &mut self.framing;
            if framing.preface_left > 0 || framing.payload_left > 0 {
                // The preface, or a frame's payload: straight to nghttp2.
                let left = if framing.preface_left > 0 {
                    &mut framing.preface_left
                } else {
                    &mut framing.payload_left
                };
                let piece = (*left).min(rest.len());
                *left -= piece;
                self.feed(&rest[..piece])?;
                rest = &rest[piece..];
                continue;
            }
            // A frame's header (and a held frame's payload) is kept until
            // it is whole.
            let wanted = 9 + framing.held_payload - framing.held.len();
            let piece = wanted.min(rest.len());
            framing.held.extend_from_slice(&rest[..piece]);
            rest = &rest[piece..];
            if framing.held.len() < 9 + framing.held_payload {
                continue;
            }
            let held = std::mem::take(&mut framing.held);
            let length = u32::from_be_bytes([0, held[0], held[1], held[2]]) as usize;
            let kind = u32::from(held[3]);
            let stream =
                (u32::from_be_bytes([held[5], held[6], held[7], held[8]]) & 0x7fff_ffff) as i32;
            let small = matches!(
                (kind, length),
                (ffi::NGHTTP2_WINDOW_UPDATE, 4) | (ffi::NGHTTP2_PRIORITY, 5)
            ) && stream != 0;
            if small && framing.held_payload == 0 {
                // Its payload too, before nghttp2 reads any of it.
                framing.held_payload = length;
                framing.held = held;
                continue;
            }
            framing.held_payload = 0;
            if held.len() == 9 {
                framing.payload_left = length;
                if kind == ffi::NGHTTP2_DATA {
                    self.data_frame_begins(stream);
                }
                self.feed(&held)?;
            } else if self.small_frame_is_fine(kind, stream, &held[9..]) {
                self.feed(&held)?;
            }
        }
        Ok(std::mem::take(&mut self.state.requests))
    }

    /// Hands the client's bytes to nghttp2.
    fn feed(&mut self, bytes: &[u8]) -> Result<(), String> {
        // SAFETY: a live session; the bytes are read during the call, and
        // the callbacks write to `self.state` only.
        unsafe { super::receive(self.raw, bytes) }
    }

    /// Checks a WINDOW_UPDATE or PRIORITY frame on `stream` before nghttp2
    /// reads it; false if it must not (the session answered it): a window
    /// past 2^31-1 resets the stream (FLOW_CONTROL_ERROR, RFC 9113
    /// §6.9.1, where nghttp2 would end the connection), and a stream that
    /// depends on itself ends the connection (PROTOCOL_ERROR: RFC 7540
    /// §5.3.1's stream error, which RFC 9113 §5.4.1 lets be a connection
    /// error; nghttp2 drops PRIORITY frames unread, and the stream may be
    /// idle, where no RST_STREAM may be sent).
    fn small_frame_is_fine(&mut self, kind: u32, stream: i32, payload: &[u8]) -> bool {
        let word =
            u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]) & 0x7fff_ffff;
        if kind == ffi::NGHTTP2_PRIORITY {
            if word as i32 == stream {
                // SAFETY: a live session; queues the GOAWAY.
                unsafe {
                    ffi::nghttp2_session_terminate_session(self.raw, ffi::NGHTTP2_PROTOCOL_ERROR)
                };
                return false;
            }
            return true;
        }
        // SAFETY: a live session.
        let window =
            unsafe { ffi::nghttp2_session_get_stream_remote_window_size(self.raw, stream) };
        if word != 0 && window >= 0 && i64::from(window) + i64::from(word) > i64::from(i32::MAX) {
            // SAFETY: a live session; queues the RST_STREAM.
            unsafe {
                ffi::nghttp2_submit_rst_stream(
                    self.raw,
                    ffi::NGHTTP2_FLAG_NONE as u8,
                    stream,
                    ffi::NGHTTP2_FLOW_CONTROL_ERROR,
                )
            };
            return false;
        }
        true
    }

    /// A DATA frame on `stream` begins: on a stream the client closed
    /// (and nghttp2 forgot) it ends the session with a GOAWAY of
    /// STREAM_CLOSED (RFC 9113 §5.1).
    fn data_frame_begins(&mut self, stream: i32) {
        // SAFETY: a live session.
        let known =
            stream != 0 && unsafe { !ffi::nghttp2_session_find_stream(self.raw, stream).is_null() };
        if !known && self.state.closed.contains(stream) {
            // SAFETY: a live session; queues the GOAWAY.
            unsafe { ffi::nghttp2_session_terminate_session(self.raw, ffi::NGHTTP2_STREAM_CLOSED) };
        }
    }

    /// Answers `stream` with `status` and a body of `body_bytes` (read from
    /// the session's [`BodySource`] as it is sent; none: the HEADERS frame
    /// ends the stream).
    pub fn respond(&mut self, stream: i32, status: u16, body_bytes: usize) -> Result<(), String> {
        let Some(state) = self.state.streams.get_mut(&stream) else {
            // The client reset it meanwhile.
            return Ok(());
        };
        state.status = status;
        state.body_bytes = body_bytes;
        let status = status.to_string();
        let length = body_bytes.to_string();
        let fields = [
            field(":status", &status),
            field("server", "tlslab"),
            field("content-type", "application/octet-stream"),
            field("content-length", &length),
        ];
        let provider = ffi::nghttp2_data_provider2 {
            source: ffi::nghttp2_data_source {
                ptr: ptr::null_mut(),
            },
            read_callback: Some(read_body),
        };
        // SAFETY: a live session; nghttp2 copies the fields and the
        // provider during the call.
        let submitted = unsafe {
            ffi::nghttp2_submit_response2(
                self.raw,
                stream,
                fields.as_ptr(),
                fields.len(),
                if body_bytes > 0 {
                    &provider
                } else {
                    ptr::null()
                },
            )
        };
        check(submitted)
    }

    /// Appends the frames the session has to send (SETTINGS, answers,
    /// acknowledgements, window updates, GOAWAY) to `out`, until it has
    /// none left that the client's windows allow or `out` holds `limit`
    /// bytes.
    pub fn output(&mut self, out: &mut Vec<u8>, limit: usize) -> Result<(), String> {
        // SAFETY: a live session; the callbacks write to `self.state`.
        unsafe { super::output(self.raw, out, limit) }
    }

    /// The streams that are over since the last call.
    pub fn take_finished(&mut self) -> Vec<Finished> {
        std::mem::take(&mut self.state.finished)
    }

    /// The streams open now (requested, or being answered).
    pub fn open_streams(&self) -> usize {
        self.state.streams.len()
    }

    /// Ends the session with a GOAWAY (NO_ERROR), queued for
    /// [`ServerSession::output`]: the client sends no more requests on it.
    pub fn end(&mut self) {
        // SAFETY: a live session. A session already ended refuses, which
        // is what is wanted.
        unsafe { ffi::nghttp2_session_terminate_session(self.raw, ffi::NGHTTP2_NO_ERROR) };
    }

    /// Returns true if and only if the session can still carry streams:
    /// neither side has ended it (GOAWAY, a framing error) with nothing
    /// left to send.
    pub fn open(&self) -> bool {
        // SAFETY: a live session.
        unsafe { super::open(self.raw) }
    }
}

impl Drop for ServerSession {
    fn drop(&mut self) {
        // SAFETY: the session was created by nghttp2_session_server_new and
        // is deleted once.
        unsafe { ffi::nghttp2_session_del(self.raw) };
    }
}

/// The user data of a callback.
///
/// # Safety
/// `user_data` is the `State` given to `nghttp2_session_server_new`.
unsafe fn state<'a>(user_data: *mut c_void) -> &'a mut State {
    &mut *user_data.cast::<State>()
}

/// A frame's header has arrived, before nghttp2 reads the frame: the
/// errors nghttp2 does not see (see the module's paragraph) end the
/// session with a GOAWAY of that error (a connection error, which RFC 9113
/// §5.4 allows for a stream error too).
unsafe extern "C" fn on_begin_frame(
    session: *mut ffi::nghttp2_session,
    header: *const ffi::nghttp2_frame_hd,
    user_data: *mut c_void,
) -> c_int {
    let state = state(user_data);
    let header = &*header;
    let stream = header.stream_id;
    let known = stream != 0 && !ffi::nghttp2_session_find_stream(session, stream).is_null();
    let error = match u32::from(header.type_) {
        ffi::NGHTTP2_PRIORITY if stream == 0 => Some(ffi::NGHTTP2_PROTOCOL_ERROR),
        ffi::NGHTTP2_DATA | ffi::NGHTTP2_HEADERS if !known && state.closed.contains(stream) => {
            Some(ffi::NGHTTP2_STREAM_CLOSED)
        }
        // A client's new stream below one it opened (an even id is
        // nghttp2's to refuse), not one the server reset.
        ffi::NGHTTP2_HEADERS
            if !known
                && stream % 2 == 1
                && stream <= state.last_client_stream
                && !state.reset_by_server.contains(stream) =>
        {
            Some(ffi::NGHTTP2_PROTOCOL_ERROR)
        }
        ffi::NGHTTP2_HEADERS => {
            state.last_client_stream = state.last_client_stream.max(stream);
            None
        }
        _ => None,
    };
    if let Some(code) = error {
        // Queues the GOAWAY; nghttp2 then reads no more frames.
        ffi::nghttp2_session_terminate_session(session, code);
    }
    0
}

unsafe extern "C" fn on_begin_headers(
    _: *mut ffi::nghttp2_session,
    frame: *const ffi::nghttp2_frame,
    user_data: *mut c_void,
) -> c_int {
    if (*frame).hd.type_ == ffi::NGHTTP2_HEADERS as u8
        && (*frame).headers.cat == ffi::NGHTTP2_HCAT_REQUEST
    {
        state(user_data)
            .streams
            .insert((*frame).hd.stream_id, Stream::default());
    }
    0
}

unsafe extern "C" fn on_header(
    _: *mut ffi::nghttp2_session,
    frame: *const ffi::nghttp2_frame,
    name: *const u8,
    name_length: usize,
    value: *const u8,
    value_length: usize,
    _: u8,
    user_data: *mut c_void,
) -> c_int {
    let state = state(user_data);
    let max_header_bytes = state.max_header_bytes;
    let Some(stream) = state.streams.get_mut(&(*frame).hd.stream_id) else {
        return 0;
    };
    stream.header_bytes += name_length + value_length + 32;
    if stream.header_bytes > max_header_bytes {
        stream.too_large = true;
        return 0;
    }
    let text = || String::from_utf8_lossy(std::slice::from_raw_parts(value, value_length));
    match std::slice::from_raw_parts(name, name_length) {
        b":method" => stream.method = text().into_owned(),
        b":path" => stream.path = text().into_owned(),
        _ => {}
    }
    0
}

unsafe extern "C" fn on_frame(
    _: *mut ffi::nghttp2_session,
    frame: *const ffi::nghttp2_frame,
    user_data: *mut c_void,
) -> c_int {
    let header = (*frame).hd;
    if header.type_ == ffi::NGHTTP2_RST_STREAM as u8 {
        state(user_data).reset_by_client.insert(header.stream_id);
        return 0;
    }
    let ends_stream = header.flags & ffi::NGHTTP2_FLAG_END_STREAM as u8 != 0;
    let carries_request =
        header.type_ == ffi::NGHTTP2_HEADERS as u8 || header.type_ == ffi::NGHTTP2_DATA as u8;
    if !(ends_stream && carries_request) {
        return 0;
    }
    let state = state(user_data);
    if let Some(stream) = state.streams.get_mut(&header.stream_id) {
        if !stream.requested {
            stream.requested = true;
            state.requests.push(Request {
                stream: header.stream_id,
                method: std::mem::take(&mut stream.method),
                path: std::mem::take(&mut stream.path),
                too_large: stream.too_large,
            });
        }
    }
    0
}

/// A frame went out: a RST_STREAM of the server's is remembered (the
/// client's frames on that stream are then ignored, RFC 9113 §5.1).
unsafe extern "C" fn on_frame_send(
    _: *mut ffi::nghttp2_session,
    frame: *const ffi::nghttp2_frame,
    user_data: *mut c_void,
) -> c_int {
    let header = (*frame).hd;
    if header.type_ == ffi::NGHTTP2_RST_STREAM as u8 {
        state(user_data).reset_by_server.insert(header.stream_id);
    }
    0
}

unsafe extern "C" fn on_stream_close(
    _: *mut ffi::nghttp2_session,
    stream_id: i32,
    error_code: u32,
    user_data: *mut c_void,
) -> c_int {
    let state = state(user_data);
    // Closed by the client: its RST_STREAM, or its END_STREAM answered in full.
    let answered = state
        .streams
        .get(&stream_id)
        .is_some_and(|stream| stream.requested && error_code == ffi::NGHTTP2_NO_ERROR);
    if state.reset_by_client.remove(&stream_id) || answered {
        state.closed.insert(stream_id);
    }
    if let Some(stream) = state.streams.remove(&stream_id) {
        state.finished.push(Finished {
            stream: stream_id,
            status: stream.status,
            body_bytes: stream.body_bytes,
            complete: error_code == ffi::NGHTTP2_NO_ERROR
                && stream.status != 0
                && stream.body_sent == stream.body_bytes,
        });
    }
    0
}

/// nghttp2 asks for up to `length` bytes of a stream's body: copied from
/// the body source, EOF once all are given.
unsafe extern "C" fn read_body(
    _: *mut ffi::nghttp2_session,
    stream_id: i32,
    buffer: *mut u8,
    length: usize,
    flags: *mut u32,
    _: *mut ffi::nghttp2_data_source,
    user_data: *mut c_void,
) -> ffi::nghttp2_ssize {
    let state = state(user_data);
    let body = state.body;
    let Some(stream) = state.streams.get_mut(&stream_id) else {
        return ffi::NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE as ffi::nghttp2_ssize;
    };
    let buffer = std::slice::from_raw_parts_mut(buffer, length);
    let mut filled = 0;
    while filled < length && stream.body_sent < stream.body_bytes {
        let wanted = (length - filled).min(stream.body_bytes - stream.body_sent);
        let bytes = body(stream.body_sent, wanted);
        let taken = bytes.len().min(wanted);
        buffer[filled..filled + taken].copy_from_slice(&bytes[..taken]);
        filled += taken;
        stream.body_sent += taken;
    }
    if stream.body_sent == stream.body_bytes {
        *flags |= ffi::NGHTTP2_DATA_FLAG_EOF;
    }
    filled as ffi::nghttp2_ssize
}

#[cfg(test)]
mod tests {
    use super::super::{ClientSession, Received, StreamEvent};
    use super::*;

    /// A body of `length` bytes at `offset`: the byte at `i` is `i % 251`,
    /// given 1000 bytes at most at a time.
    fn counting(offset: usize, length: usize) -> &'static [u8] {
        static PATTERN: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
        let pattern = PATTERN.get_or_init(|| (0..2000).map(|i| (i % 251) as u8).collect());
        let start = offset % 251;
        &pattern[start..start + length.min(1000)]
    }

    /// Moves bytes both ways until neither side has any to send; returns
    /// what the client saw, every read's in one.
    fn exchange(client: &mut ClientSession, server: &mut ServerSession) -> Received {
        let mut seen = Received::default();
        let mut read = Received::default();
        loop {
            let mut to_server = Vec::new();
            client.output(&mut to_server).unwrap();
            for request in server.receive(&to_server).unwrap() {
                let (status, length) = match request.path.strip_prefix("/page_") {
                    Some(size) if request.method == "GET" => (200, size.parse().unwrap()),
                    _ => (404, 0),
                };
                server.respond(request.stream, status, length).unwrap();
            }
            let mut to_client = Vec::new();
            server.output(&mut to_client, 64 * 1024).unwrap();
            client.receive(&to_client, &mut read).unwrap();
            let at = seen.body.len();
            seen.body.extend_from_slice(&read.body);
            seen.events
                .extend(read.events.drain(..).map(|event| match event {
                    StreamEvent::Data { stream, bytes } => StreamEvent::Data {
                        stream,
                        bytes: bytes.start + at..bytes.end + at,
                    },
                    other => other,
                }));
            if to_server.is_empty() && to_client.is_empty() {
                return seen;
            }
        }
    }

    #[test]
    fn concurrent_streams_get_their_bodies_and_unknown_paths_404() {
        let mut client = ClientSession::new().unwrap();
        let mut server = ServerSession::new(100, 16 * 1024, counting).unwrap();
        let sizes = [0usize, 1, 70_000, 300_000];
        let mut streams: Vec<(i32, usize)> = sizes
            .iter()
            .map(|&size| {
                let stream = client
                    .submit_get("tlslab.test", &format!("/page_{size}"))
                    .unwrap();
                (stream, size)
            })
            .collect();
        let missing = client.submit_get("tlslab.test", "/index.html").unwrap();
        let seen = exchange(&mut client, &mut server);
        let events = &seen.events;
        streams.sort();
        for (stream, size) in streams {
            let status = events.iter().find_map(|e| match e {
                StreamEvent::Head {
                    stream: s,
                    status,
                    content_length,
                } if *s == stream => Some((*status, *content_length)),
                _ => None,
            });
            assert_eq!(status, Some((200, Some(size))), "stream {stream}");
            let body: Vec<u8> = events
                .iter()
                .filter_map(|e| match e {
                    StreamEvent::Data { stream: s, bytes } if *s == stream => {
                        Some(&seen.body[bytes.clone()])
                    }
                    _ => None,
                })
                .flatten()
                .copied()
                .collect();
            let expected: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
            assert!(body == expected, "stream {stream}: {} bytes", body.len());
            assert!(events.contains(&StreamEvent::Closed {
                stream,
                error_code: 0
            }));
        }
        assert!(events.contains(&StreamEvent::Head {
            stream: missing,
            status: 404,
            content_length: Some(0)
        }));
        let finished = server.take_finished();
        assert_eq!(finished.len(), sizes.len() + 1);
        assert!(finished.iter().all(|f| f.complete), "{finished:?}");
        assert_eq!(server.open_streams(), 0);
        assert!(server.open());
    }

    #[test]
    fn a_body_waits_for_the_clients_window() {
        // A client with the default 64 KiB windows: nghttp2 stops at the
        // window and goes on once the client's WINDOW_UPDATEs come back.
        let mut server = ServerSession::new(100, 16 * 1024, counting).unwrap();
        let mut client_raw = ptr::null_mut();
        // SAFETY: a plain client session without callbacks, driven here.
        unsafe {
            let mut callbacks = ptr::null_mut();
            check(ffi::nghttp2_session_callbacks_new(&mut callbacks)).unwrap();
            check(ffi::nghttp2_session_client_new(
                &mut client_raw,
                callbacks,
                ptr::null_mut(),
            ))
            .unwrap();
            ffi::nghttp2_session_callbacks_del(callbacks);
            check(ffi::nghttp2_submit_settings(client_raw, 0, ptr::null(), 0)).unwrap();
            let fields = [
                field(":method", "GET"),
                field(":scheme", "https"),
                field(":authority", "tlslab.test"),
                field(":path", "/page_200000"),
            ];
            check(ffi::nghttp2_submit_request2(
                client_raw,
                ptr::null(),
                fields.as_ptr(),
                fields.len(),
                ptr::null(),
                ptr::null_mut(),
            ))
            .unwrap();
        }
        let mut to_server = Vec::new();
        // SAFETY: the live client session.
        unsafe { super::super::output(client_raw, &mut to_server, usize::MAX) }.unwrap();
        let request = server.receive(&to_server).unwrap().remove(0);
        server.respond(request.stream, 200, 200_000).unwrap();
        let mut to_client = Vec::new();
        server.output(&mut to_client, usize::MAX).unwrap();
        assert!(
            to_client.len() < 70_000,
            "{} bytes past a 64 KiB window",
            to_client.len()
        );
        assert_eq!(server.open_streams(), 1);
        // The client reads it all (its session sends WINDOW_UPDATEs).
        for _ in 0..100 {
            // SAFETY: the live client session.
            unsafe { super::super::receive(client_raw, &to_client) }.unwrap();
            to_server.clear();
            // SAFETY: the live client session.
            unsafe { super::super::output(client_raw, &mut to_server, usize::MAX) }.unwrap();
            server.receive(&to_server).unwrap();
            to_client.clear();
            server.output(&mut to_client, usize::MAX).unwrap();
            if to_client.is_empty() {
                break;
            }
        }
        // SAFETY: created above, deleted once.
        unsafe { ffi::nghttp2_session_del(client_raw) };
        let finished = server.take_finished();
        assert_eq!(
            finished,
            [Finished {
                stream: 1,
                status: 200,
                body_bytes: 200_000,
                complete: true
            }]
        );
    }

    #[test]
    fn a_request_with_too_many_header_bytes_is_marked() {
        let mut client = ClientSession::new().unwrap();
        let mut server = ServerSession::new(100, 100, counting).unwrap();
        client.submit_get("tlslab.test", &"/x".repeat(40)).unwrap();
        let mut to_server = Vec::new();
        client.output(&mut to_server).unwrap();
        let requests = server.receive(&to_server).unwrap();
        assert_eq!(requests.len(), 1);
        assert!(requests[0].too_large);
    }

    /// The error code of the first frame of `kind` (GOAWAY or RST_STREAM)
    /// among the frames `out` holds.
    fn error_code(kind: u32, mut out: &[u8]) -> Option<u32> {
        while out.len() >= 9 {
            let length = u32::from_be_bytes([0, out[0], out[1], out[2]]) as usize;
            let payload = &out[9..9 + length];
            if u32::from(out[3]) == kind {
                let at = if kind == ffi::NGHTTP2_GOAWAY { 4 } else { 0 };
                return Some(u32::from_be_bytes(payload[at..at + 4].try_into().unwrap()));
            }
            out = &out[9 + length..];
        }
        None
    }

    fn goaway_code(out: &[u8]) -> Option<u32> {
        error_code(ffi::NGHTTP2_GOAWAY, out)
    }

    /// h2spec http2/6.9.1/3 and 5.3.1/2: a stream's window past 2^31-1
    /// resets that stream only; a PRIORITY frame on which a stream depends
    /// on itself ends the session.
    #[test]
    fn a_window_past_the_maximum_resets_the_stream_and_self_dependency_ends_the_session() {
        // A request whose body has not come (GET / without END_STREAM, as
        // h2spec sends it): its stream stays open.
        let mut server = ServerSession::new(100, 16 * 1024, counting).unwrap();
        let mut to_server = Vec::new();
        ClientSession::new()
            .unwrap()
            .output(&mut to_server)
            .unwrap();
        to_server.extend(frame(
            ffi::NGHTTP2_HEADERS as u8,
            0x4,
            1,
            &[&[0x82, 0x87, 0x84, 0x01, 11][..], b"tlslab.test"].concat(),
        ));
        assert_eq!(server.receive(&to_server).unwrap(), []);
        let mut out = Vec::new();
        server.output(&mut out, usize::MAX).unwrap();
        assert_eq!(server.open_streams(), 1);
        // Two increments of 2^31-1, as h2spec sends them: the second passes
        // the maximum whatever the window was.
        let increment = frame(
            ffi::NGHTTP2_WINDOW_UPDATE as u8,
            0,
            1,
            &0x7fff_ffffu32.to_be_bytes(),
        );
        server
            .receive(&[increment.clone(), increment].concat())
            .unwrap();
        out.clear();
        server.output(&mut out, usize::MAX).unwrap();
        assert_eq!(
            error_code(ffi::NGHTTP2_RST_STREAM, &out),
            Some(ffi::NGHTTP2_FLOW_CONTROL_ERROR)
        );
        assert_eq!(goaway_code(&out), None);
        assert!(server.open());

        let mut server = ServerSession::new(100, 16 * 1024, counting).unwrap();
        let mut to_server = Vec::new();
        ClientSession::new()
            .unwrap()
            .output(&mut to_server)
            .unwrap();
        to_server.extend(frame(ffi::NGHTTP2_PRIORITY as u8, 0, 1, &[0, 0, 0, 1, 255]));
        server.receive(&to_server).unwrap();
        let mut out = Vec::new();
        server.output(&mut out, usize::MAX).unwrap();
        assert_eq!(goaway_code(&out), Some(ffi::NGHTTP2_PROTOCOL_ERROR));
    }

    /// A frame of `kind` on `stream` with `payload`, as a client sends it.
    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let length = (payload.len() as u32).to_be_bytes();
        let mut frame = vec![length[1], length[2], length[3], kind, flags];
        frame.extend_from_slice(&stream.to_be_bytes());
        frame.extend_from_slice(payload);
        frame
    }

    /// Issue 33 item 9 (h2spec http2/5.1/11, 5.1.1/2, 6.3/1): the frames
    /// nghttp2 drops or lets through are connection errors: DATA on a
    /// stream the client closed, a new stream below one it opened, a
    /// PRIORITY frame on stream 0.
    #[test]
    fn frames_on_closed_streams_lower_streams_and_priority_on_stream_0_end_the_session() {
        let data_on_closed = frame(ffi::NGHTTP2_DATA as u8, 1, 1, b"test");
        let priority_on_0 = frame(ffi::NGHTTP2_PRIORITY as u8, 0, 0, &[0, 0, 0, 1, 16]);
        for (late, code) in [
            (data_on_closed, ffi::NGHTTP2_STREAM_CLOSED),
            (priority_on_0, ffi::NGHTTP2_PROTOCOL_ERROR),
        ] {
            let mut client = ClientSession::new().unwrap();
            let mut server = ServerSession::new(100, 16 * 1024, counting).unwrap();
            client.submit_get("tlslab.test", "/page_10").unwrap();
            exchange(&mut client, &mut server);
            assert_eq!(server.open_streams(), 0, "stream 1 is answered and closed");
            server.receive(&late).unwrap();
            let mut out = Vec::new();
            server.output(&mut out, usize::MAX).unwrap();
            assert_eq!(goaway_code(&out), Some(code));
        }
        // Streams 3, then 1 again (below the highest the client opened).
        let mut client = ClientSession::new().unwrap();
        let mut server = ServerSession::new(100, 16 * 1024, counting).unwrap();
        client.submit_get("tlslab.test", "/page_10").unwrap();
        client.submit_get("tlslab.test", "/page_10").unwrap();
        exchange(&mut client, &mut server);
        // An empty header block ending the stream, on stream 1 again.
        let again = frame(ffi::NGHTTP2_HEADERS as u8, 0x5, 1, &[0x82]);
        server.receive(&again).unwrap();
        let mut out = Vec::new();
        server.output(&mut out, usize::MAX).unwrap();
        let code = goaway_code(&out);
        assert!(
            code == Some(ffi::NGHTTP2_STREAM_CLOSED) || code == Some(ffi::NGHTTP2_PROTOCOL_ERROR),
            "{code:?}"
        );
    }
}
