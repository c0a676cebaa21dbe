//! HTTP/2 through nghttp2 (the C library h2load and nghttpd are built on,
//! MIT, built from source by `libnghttp2-sys`), for both ends tlslab
//! speaks it from: the load client ([`ClientSession`]) and the embedded
//! server ([`ServerSession`]). Both are driven sans-IO: the bytes TLS
//! decrypted go in, the frames to send come out, and nghttp2 owns the
//! framing, HPACK, flow control and the stream states; these modules only
//! turn its callbacks into plain values. Nothing here knows about sockets,
//! TLS or pages, so `load` and `serve` import it from beside them.

mod client;
mod server;

use std::ffi::{c_int, CStr};

use libnghttp2_sys as ffi;

pub use client::{ClientSession, Received, StreamEvent, REFUSED_STREAM};
pub use server::{BodySource, Finished, Request, ServerSession};

/// A negative nghttp2 result as an error with its text.
fn check(result: c_int) -> Result<(), String> {
    if result < 0 {
        Err(format!("nghttp2: {}", error_text(result)))
    } else {
        Ok(())
    }
}

/// nghttp2's text of one of its (negative) library error codes.
fn error_text(code: c_int) -> String {
    // SAFETY: nghttp2_strerror returns a static NUL-terminated string.
    unsafe { CStr::from_ptr(ffi::nghttp2_strerror(code)) }
        .to_string_lossy()
        .into_owned()
}

/// An HTTP/2 error code's name (`NO_ERROR`, `PROTOCOL_ERROR`...).
fn error_code_text(code: u32) -> String {
    // SAFETY: nghttp2_http2_strerror returns a static NUL-terminated string.
    unsafe { CStr::from_ptr(ffi::nghttp2_http2_strerror(code)) }
        .to_string_lossy()
        .into_owned()
}

/// A header field pointing at `name` and `value`, which nghttp2 copies
/// during the submitting call.
fn field(name: &str, value: &str) -> ffi::nghttp2_nv {
    ffi::nghttp2_nv {
        name: name.as_ptr().cast_mut(),
        value: value.as_ptr().cast_mut(),
        namelen: name.len(),
        valuelen: value.len(),
        flags: ffi::NGHTTP2_NV_FLAG_NONE as u8,
    }
}

/// Feeds `bytes` received from the peer to the session `raw`.
///
/// # Safety
/// `raw` is a live session whose callbacks' user data is live.
unsafe fn receive(raw: *mut ffi::nghttp2_session, bytes: &[u8]) -> Result<(), String> {
    let read = ffi::nghttp2_session_mem_recv2(raw, bytes.as_ptr(), bytes.len());
    if read < 0 {
        return Err(format!(
            "HTTP/2 framing error: {}",
            error_text(read as c_int)
        ));
    }
    Ok(())
}

/// Appends the frames the session `raw` has to send to `out`, until it
/// has none or `out` holds at least `limit` bytes.
///
/// # Safety
/// `raw` is a live session whose callbacks' user data is live.
unsafe fn output(
    raw: *mut ffi::nghttp2_session,
    out: &mut Vec<u8>,
    limit: usize,
) -> Result<(), String> {
    while out.len() < limit {
        let mut data = std::ptr::null();
        // `data` is valid until the next call.
        let length = ffi::nghttp2_session_mem_send2(raw, &mut data);
        if length < 0 {
            return Err(format!(
                "HTTP/2 framing error: {}",
                error_text(length as c_int)
            ));
        }
        if length == 0 {
            break;
        }
        out.extend_from_slice(std::slice::from_raw_parts(data, length as usize));
    }
    Ok(())
}

/// Returns true if and only if the session `raw` can still carry
/// streams: neither side has ended it (GOAWAY) and it has not failed.
///
/// # Safety
/// `raw` is a live session.
unsafe fn open(raw: *mut ffi::nghttp2_session) -> bool {
    ffi::nghttp2_session_want_read(raw) != 0 || ffi::nghttp2_session_want_write(raw) != 0
}
