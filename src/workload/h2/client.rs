//! The client side of HTTP/2, as `load` uses it: one client session of
//! nghttp2 per connection, driven sans-IO: the bytes OpenSSL decrypted go
//! in with [`ClientSession::receive`], the frames to send come out of
//! [`ClientSession::output`], and what the server said about each stream
//! comes back as [`StreamEvent`]s. nghttp2 owns the framing, HPACK, flow control
//! and the stream states; this module only turns its callbacks into
//! events. Answers' bodies are handed over as they arrive, so the caller
//! checks them byte for byte as for HTTP/1.1.

use std::ffi::{c_int, c_void};
use std::ops::Range;
use std::ptr;

use libnghttp2_sys as ffi;

use super::{check, error_code_text, field};

/// The window the client gives each stream and the connection, as h2load
/// does by default (`-w 30 -W 30`: 2^30 - 1 bytes): flow control never
/// holds an answer back.
const WINDOW_BYTES: u32 = (1 << 30) - 1;

/// What the server said about one stream, in the order it was received.
#[derive(Debug, PartialEq, Eq)]
pub enum StreamEvent {
    /// The answer's head: its `:status` and `content-length`, if it gave one.
    Head {
        stream: i32,
        status: u16,
        content_length: Option<usize>,
    },
    /// Body bytes of the answer: where they are in [`Received::body`].
    Data { stream: i32, bytes: Range<usize> },
    /// The stream ended; `error_code` is 0 when it ended cleanly
    /// (`REFUSED_STREAM`, 7, when the server never took it up).
    Closed { stream: i32, error_code: u32 },
}

/// The HTTP/2 error code of a stream the server did not process (a GOAWAY
/// below its id, or a refusal): the request can be sent again elsewhere.
pub const REFUSED_STREAM: u32 = 7;

/// What one call of [`ClientSession::receive`] read: the events in order,
/// and the body bytes their [`StreamEvent::Data`] point into. The caller
/// keeps one and hands it to every call, so reading answers allocates
/// nothing once it has grown.
#[derive(Debug, Default)]
pub struct Received {
    pub events: Vec<StreamEvent>,
    pub body: Vec<u8>,
}

/// The answers' heads as they are read, field by field.
#[derive(Default)]
struct Receiving {
    /// The caller's [`Received`], lent for the length of a read.
    received: Received,
    /// The head being read: its stream, status and length.
    status: u16,
    content_length: Option<usize>,
    /// A field that could not be read (a bad content-length).
    malformed: Option<String>,
    /// Why the session ended (a GOAWAY sent or received), once it has.
    ended: Option<String>,
}

/// A client session of nghttp2 over one connection.
pub struct ClientSession {
    raw: *mut ffi::nghttp2_session,
    /// Where the callbacks put what they read; boxed so its address holds.
    receiving: Box<Receiving>,
}

// SAFETY: the session is used by one thread at a time (each event loop
// owns its connections); nghttp2 keeps no thread-local state.
unsafe impl Send for ClientSession {}

impl ClientSession {
    /// A new client session: its connection preface and SETTINGS (no
    /// server push, the large window) are queued for [`ClientSession::output`].
    pub fn new() -> Result<Self, String> {
        let mut receiving = Box::<Receiving>::default();
        let mut callbacks = ptr::null_mut();
        let mut raw = ptr::null_mut();
        // SAFETY: plain nghttp2 calls; `callbacks` is freed once the session
        // has copied it; the user data outlives the session (both are
        // owned by the value returned and the session is deleted first).
        unsafe {
            check(ffi::nghttp2_session_callbacks_new(&mut callbacks))?;
            ffi::nghttp2_session_callbacks_set_on_header_callback(callbacks, Some(on_header));
            ffi::nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, Some(on_frame));
            ffi::nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, Some(on_send));
            ffi::nghttp2_session_callbacks_set_on_data_chunk_recv_callback(
                callbacks,
                Some(on_data),
            );
            ffi::nghttp2_session_callbacks_set_on_stream_close_callback(
                callbacks,
                Some(on_stream_close),
            );
            let created = ffi::nghttp2_session_client_new(
                &mut raw,
                callbacks,
                (&mut *receiving as *mut Receiving).cast(),
            );
            ffi::nghttp2_session_callbacks_del(callbacks);
            check(created)?;
        }
        let session = Self { raw, receiving };
        let settings = [
            ffi::nghttp2_settings_entry {
                settings_id: ffi::NGHTTP2_SETTINGS_ENABLE_PUSH as i32,
                value: 0,
            },
            ffi::nghttp2_settings_entry {
                settings_id: ffi::NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE as i32,
                value: WINDOW_BYTES,
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
            check(ffi::nghttp2_session_set_local_window_size(
                session.raw,
                ffi::NGHTTP2_FLAG_NONE as u8,
                0,
                WINDOW_BYTES as i32,
            ))?;
        }
        Ok(session)
    }

    /// Queues a GET of `path` on `authority`; returns its stream id.
    pub fn submit_get(&mut self, authority: &str, path: &str) -> Result<i32, String> {
        let fields = [
            field(":method", "GET"),
            field(":scheme", "https"),
            field(":authority", authority),
            field(":path", path),
        ];
        // SAFETY: a live session; nghttp2 copies the fields during the call.
        let stream = unsafe {
            ffi::nghttp2_submit_request(
                self.raw,
                ptr::null(),
                fields.as_ptr(),
                fields.len(),
                ptr::null(),
                ptr::null_mut(),
            )
        };
        check(stream)?;
        Ok(stream)
    }

    /// Feeds bytes received from the server to the session and puts what
    /// they said about the streams in `into` (emptied first).
    pub fn receive(&mut self, bytes: &[u8], into: &mut Received) -> Result<(), String> {
        into.events.clear();
        into.body.clear();
        std::mem::swap(&mut self.receiving.received, into);
        // SAFETY: a live session; `bytes` is read during the call, and the
        // callbacks write to `self.receiving` only.
        let read = unsafe { super::receive(self.raw, bytes) };
        std::mem::swap(&mut self.receiving.received, into);
        read?;
        if let Some(field) = self.receiving.malformed.take() {
            return Err(field);
        }
        Ok(())
    }

    /// Appends the frames the session has to send (the preface, SETTINGS,
    /// requests, acknowledgements, window updates) to `out`.
    pub fn output(&mut self, out: &mut Vec<u8>) -> Result<(), String> {
        // SAFETY: a live session; the callbacks write to `self.receiving`.
        unsafe { super::output(self.raw, out, usize::MAX) }
    }

    /// Why the session ended, if it has: the server's GOAWAY, or the
    /// client's after a framing error from the server.
    pub fn ended(&self) -> Option<&str> {
        self.receiving.ended.as_deref()
    }

    /// Returns true if and only if the session can still carry requests:
    /// neither side has ended it (GOAWAY) and it has not failed.
    pub fn open(&self) -> bool {
        // SAFETY: a live session.
        unsafe { super::open(self.raw) }
    }
}

impl Drop for ClientSession {
    fn drop(&mut self) {
        // SAFETY: the session was created by nghttp2_session_client_new and
        // is deleted once.
        unsafe { ffi::nghttp2_session_del(self.raw) };
    }
}

/// The user data of a callback.
///
/// # Safety
/// `user_data` is the `Receiving` given to `nghttp2_session_client_new`.
unsafe fn receiving<'a>(user_data: *mut c_void) -> &'a mut Receiving {
    &mut *user_data.cast::<Receiving>()
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
    if (*frame).hd.type_ != ffi::NGHTTP2_HEADERS as u8 {
        return 0;
    }
    let receiving = receiving(user_data);
    let name = std::slice::from_raw_parts(name, name_length);
    let value = std::slice::from_raw_parts(value, value_length);
    let number = || {
        std::str::from_utf8(value)
            .ok()
            .and_then(|text| text.parse::<usize>().ok())
    };
    match name {
        b":status" => receiving.status = number().unwrap_or(0) as u16,
        b"content-length" => match number() {
            Some(length) => receiving.content_length = Some(length),
            None => {
                receiving.malformed = Some(format!(
                    "the answer's content-length {:?} is not a length",
                    String::from_utf8_lossy(value)
                ))
            }
        },
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
    if header.type_ == ffi::NGHTTP2_GOAWAY as u8 {
        receiving(user_data).ended.get_or_insert_with(|| {
            format!(
                "the server ended the HTTP/2 connection (GOAWAY, {})",
                error_code_text((*frame).goaway.error_code)
            )
        });
    }
    if header.type_ == ffi::NGHTTP2_HEADERS as u8
        && (*frame).headers.cat == ffi::NGHTTP2_HCAT_RESPONSE
    {
        let receiving = receiving(user_data);
        let status = std::mem::take(&mut receiving.status);
        let content_length = receiving.content_length.take();
        receiving.received.events.push(StreamEvent::Head {
            stream: header.stream_id,
            status,
            content_length,
        });
    }
    0
}

unsafe extern "C" fn on_send(
    _: *mut ffi::nghttp2_session,
    frame: *const ffi::nghttp2_frame,
    user_data: *mut c_void,
) -> c_int {
    if (*frame).hd.type_ == ffi::NGHTTP2_GOAWAY as u8 {
        let receiving = receiving(user_data);
        receiving.ended.get_or_insert_with(|| {
            format!(
                "the server broke HTTP/2 ({}): tlslab's client ended the connection",
                error_code_text((*frame).goaway.error_code)
            )
        });
    }
    0
}

unsafe extern "C" fn on_data(
    _: *mut ffi::nghttp2_session,
    _: u8,
    stream: i32,
    data: *const u8,
    length: usize,
    user_data: *mut c_void,
) -> c_int {
    let received = &mut receiving(user_data).received;
    let at = received.body.len();
    received
        .body
        .extend_from_slice(std::slice::from_raw_parts(data, length));
    received.events.push(StreamEvent::Data {
        stream,
        bytes: at..at + length,
    });
    0
}

unsafe extern "C" fn on_stream_close(
    _: *mut ffi::nghttp2_session,
    stream: i32,
    error_code: u32,
    user_data: *mut c_void,
) -> c_int {
    receiving(user_data)
        .received
        .events
        .push(StreamEvent::Closed { stream, error_code });
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_session_sends_the_preface_and_a_request() {
        let mut session = ClientSession::new().unwrap();
        let stream = session.submit_get("tlslab.test", "/page_1000").unwrap();
        assert_eq!(stream, 1);
        let mut out = Vec::new();
        session.output(&mut out).unwrap();
        assert!(out.starts_with(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"));
        // Preface, SETTINGS, WINDOW_UPDATE and the request's HEADERS.
        assert!(out.len() > 24 + 9 * 3, "{}", out.len());
        assert!(session.open());
    }

    #[test]
    fn an_http1_answer_ends_the_session_saying_why() {
        let mut session = ClientSession::new().unwrap();
        let mut out = Vec::new();
        session.output(&mut out).unwrap();
        assert_eq!(session.ended(), None);
        // An HTTP/1.1 answer where the server's SETTINGS must come: nghttp2
        // answers with a GOAWAY and the session is over.
        let received = session.receive(
            b"HTTP/1.1 400 Bad Request\r\n\r\n",
            &mut Received::default(),
        );
        out.clear();
        session.output(&mut out).unwrap();
        match received {
            Err(error) => assert!(error.contains("HTTP/2"), "{error}"),
            Ok(_) => {
                let why = session.ended().expect("the session ended");
                assert!(why.contains("broke HTTP/2"), "{why}");
                assert!(!session.open());
            }
        }
    }
}
