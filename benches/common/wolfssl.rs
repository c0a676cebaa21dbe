//! The plain loop the overhead bench holds tlslab's wolfSSL handshaker
//! against: wolfSSL's own calls (wolfssl-sys), contexts configured as
//! `src/backend/wolfssl/connection.rs` configures them for a full TLS 1.3
//! handshake (one suite, one group, the test chain, the client verifying
//! the server and its name, no session cache), both ends in one thread
//! over two in-memory byte queues, with no timing, verification or
//! bookkeeping. Only in a build with the feature `wolfssl`.

// The overhead bench uses it; the other benches share `common` without it.
#![allow(dead_code)]

use std::cell::RefCell;
use std::collections::VecDeque;
use std::ffi::{c_char, c_int, c_void, CString};
use std::rc::Rc;

use base64::Engine as _;
use tlslab::certs::{Credentials, SERVER_NAME};
use wolfssl_sys as sys;

/// wolfSSL's success return.
const SUCCESS: c_int = 1;
/// `WOLFSSL_FILETYPE_ASN1`.
const FILETYPE_DER: c_int = 2;
/// `WOLFSSL_ERROR_WANT_READ`.
const WANT_READ: c_int = 2;
/// The receive callback's "nothing to read yet".
const IO_WANT_READ: c_int = -2;
/// `WOLFSSL_VERIFY_PEER`.
const VERIFY_PEER: c_int = 1;
/// The IANA code point of X25519.
const X25519: c_int = 29;

/// One direction's bytes in flight, for each direction.
#[derive(Default)]
struct Wire {
    to_server: VecDeque<u8>,
    to_client: VecDeque<u8>,
}

/// One end of the wire, what a connection's callbacks get as context.
struct End {
    wire: Rc<RefCell<Wire>>,
    client: bool,
}

unsafe extern "C" fn receive(
    _ssl: *mut sys::WOLFSSL,
    buffer: *mut c_char,
    size: c_int,
    context: *mut c_void,
) -> c_int {
    // SAFETY: the context is a live boxed `End`; the buffer holds `size` bytes.
    let (end, buffer) = unsafe {
        (
            &*context.cast::<End>(),
            std::slice::from_raw_parts_mut(buffer.cast::<u8>(), size as usize),
        )
    };
    let mut wire = end.wire.borrow_mut();
    let queue = if end.client {
        &mut wire.to_client
    } else {
        &mut wire.to_server
    };
    if queue.is_empty() {
        return IO_WANT_READ;
    }
    let count = buffer.len().min(queue.len());
    for (slot, byte) in buffer.iter_mut().zip(queue.drain(..count)) {
        *slot = byte;
    }
    count as c_int
}

unsafe extern "C" fn send(
    _ssl: *mut sys::WOLFSSL,
    bytes: *mut c_char,
    size: c_int,
    context: *mut c_void,
) -> c_int {
    // SAFETY: as in `receive`.
    let (end, bytes) = unsafe {
        (
            &*context.cast::<End>(),
            std::slice::from_raw_parts(bytes.cast::<u8>(), size as usize),
        )
    };
    let mut wire = end.wire.borrow_mut();
    let queue = if end.client {
        &mut wire.to_server
    } else {
        &mut wire.to_client
    };
    queue.extend(bytes);
    size
}

/// A client and a server context, freed on drop.
pub struct WolfsslContexts {
    client: *mut sys::WOLFSSL_CTX,
    server: *mut sys::WOLFSSL_CTX,
}

impl Drop for WolfsslContexts {
    fn drop(&mut self) {
        // SAFETY: both made by wolfSSL_CTX_new, freed once.
        unsafe {
            sys::wolfSSL_CTX_free(self.client);
            sys::wolfSSL_CTX_free(self.server);
        }
    }
}

/// A chain as PEM, leaf first.
fn chain_pem(chain_der: &[Vec<u8>]) -> String {
    let mut pem = String::new();
    for der in chain_der {
        let body = base64::engine::general_purpose::STANDARD.encode(der);
        pem.push_str("-----BEGIN CERTIFICATE-----\n");
        for line in body.as_bytes().chunks(64) {
            pem.push_str(std::str::from_utf8(line).unwrap());
            pem.push('\n');
        }
        pem.push_str("-----END CERTIFICATE-----\n");
    }
    pem
}

/// wolfSSL contexts as tlslab configures them for a full TLS 1.3 X25519
/// handshake with AES-128-GCM and the credentials' certificate.
pub fn wolfssl_contexts(credentials: &Credentials) -> WolfsslContexts {
    let suite = CString::new("TLS_AES_128_GCM_SHA256").unwrap();
    // SAFETY: each call gets a live context and buffers that outlive it.
    unsafe {
        assert_eq!(sys::wolfSSL_Init(), SUCCESS);
        let make = |method: *mut sys::WOLFSSL_METHOD| {
            let ctx = sys::wolfSSL_CTX_new(method);
            assert!(!ctx.is_null());
            assert_eq!(
                sys::wolfSSL_CTX_set_cipher_list(ctx, suite.as_ptr()),
                SUCCESS
            );
            let mut groups = [X25519];
            assert_eq!(
                sys::wolfSSL_CTX_set_groups(ctx, groups.as_mut_ptr(), 1),
                SUCCESS
            );
            assert_eq!(
                sys::wolfSSL_CTX_load_verify_buffer(
                    ctx,
                    credentials.root_der.as_ptr(),
                    credentials.root_der.len() as _,
                    FILETYPE_DER,
                ),
                SUCCESS
            );
            sys::wolfSSL_CTX_SetIORecv(ctx, Some(receive));
            sys::wolfSSL_CTX_SetIOSend(ctx, Some(send));
            ctx
        };
        let client = make(sys::wolfTLSv1_3_client_method());
        sys::wolfSSL_CTX_set_verify(client, VERIFY_PEER, None);
        let server = make(sys::wolfTLSv1_3_server_method());
        let pem = chain_pem(&credentials.server.chain_der);
        assert_eq!(
            sys::wolfSSL_CTX_use_certificate_chain_buffer(server, pem.as_ptr(), pem.len() as _),
            SUCCESS
        );
        let key = &credentials.server.key_pkcs8_der;
        assert_eq!(
            sys::wolfSSL_CTX_use_PrivateKey_buffer(
                server,
                key.as_ptr(),
                key.len() as _,
                FILETYPE_DER
            ),
            SUCCESS
        );
        sys::wolfSSL_CTX_set_verify(server, 0, None);
        // `WOLFSSL_SESS_CACHE_OFF`.
        sys::wolfSSL_CTX_set_session_cache_mode(server, 0);
        WolfsslContexts { client, server }
    }
}

/// One full handshake, both ends taking turns until both are done and
/// nothing is left in flight (what a server sends after its Finished is
/// read, as tlslab's handshaker reads it).
pub fn wolfssl_plain_handshake(contexts: &WolfsslContexts) {
    let wire = Rc::new(RefCell::new(Wire::default()));
    let name = CString::new(SERVER_NAME).unwrap();
    // SAFETY: the connections are freed below, before the ends they use.
    unsafe {
        let connection = |ctx: *mut sys::WOLFSSL_CTX, end: &mut End| {
            let ssl = sys::wolfSSL_new(ctx);
            assert!(!ssl.is_null());
            let end: *mut End = end;
            sys::wolfSSL_SetIOReadCtx(ssl, end.cast());
            sys::wolfSSL_SetIOWriteCtx(ssl, end.cast());
            ssl
        };
        let mut client_end = Box::new(End {
            wire: wire.clone(),
            client: true,
        });
        let mut server_end = Box::new(End {
            wire: wire.clone(),
            client: false,
        });
        let client = connection(contexts.client, &mut client_end);
        assert_eq!(
            sys::wolfSSL_check_domain_name(client, name.as_ptr()),
            SUCCESS
        );
        let server = connection(contexts.server, &mut server_end);
        let (mut client_done, mut server_done) = (false, false);
        loop {
            for (ssl, done, is_client) in [
                (client, &mut client_done, true),
                (server, &mut server_done, false),
            ] {
                let answer = if !*done {
                    let answer = if is_client {
                        sys::wolfSSL_connect(ssl)
                    } else {
                        sys::wolfSSL_accept(ssl)
                    };
                    *done = answer == SUCCESS;
                    answer
                } else {
                    let mut byte = 0u8;
                    sys::wolfSSL_read(ssl, (&mut byte as *mut u8).cast(), 1)
                };
                if answer != SUCCESS {
                    let error = sys::wolfSSL_get_error(ssl, answer);
                    assert_eq!(error, WANT_READ, "wolfSSL error {error}");
                }
            }
            let wire = wire.borrow();
            if client_done && server_done && wire.to_client.is_empty() && wire.to_server.is_empty()
            {
                break;
            }
        }
        sys::wolfSSL_free(client);
        sys::wolfSSL_free(server);
    }
}
