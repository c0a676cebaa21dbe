//! What DTLS 1.2 adds to OpenSSL's handshakes: the server's stateless
//! cookie exchange (HelloVerifyRequest, RFC 6347 §4.2.1), the MTU each side
//! fragments its handshake messages to, and a traced handshake that shows
//! the datagrams on the wire (for tests and inspection). The handshake
//! itself is the TLS one in the parent module, run over the datagram
//! channel of [`crate::transport::datagram`].

use std::sync::{Arc, OnceLock};

use anyhow::{bail, Result};
use foreign_types::ForeignTypeRef;
use openssl::ex_data::Index;
use openssl::pkey::PKey;
use openssl::sign::Signer;
use openssl::ssl::{Ssl, SslContextBuilder, SslMethod, SslOptions, SslRef, SslStream};

use super::OpensslHandshaker;
use crate::backend::Negotiated;
use crate::certs::Credentials;
use crate::scenario::{HandshakeScenario, SignatureFamily};
use crate::transport::datagram::{DatagramPipe, Fault};

/// The handshake message type of a HelloVerifyRequest (RFC 6347).
pub const HELLO_VERIFY_REQUEST: u8 = 3;

/// What a real server binds a cookie to is the client's address; over the
/// in-memory channel every client has this one, over UDP its socket
/// address is set on the connection ([`set_peer_address`]).
const PEER_ADDRESS: &[u8] = b"in-memory client";

/// Where a server connection keeps its client's address for the cookie.
fn peer_index() -> Index<Ssl, Vec<u8>> {
    static INDEX: OnceLock<Index<Ssl, Vec<u8>>> = OnceLock::new();
    *INDEX.get_or_init(|| Ssl::new_ex_index().expect("an ex_data index for the peer address"))
}

/// Binds this server connection's cookies to the client's socket address.
pub(super) fn set_peer_address(ssl: &mut SslRef, peer: std::net::SocketAddr) {
    ssl.set_ex_data(peer_index(), peer.to_string().into_bytes());
}

/// The address the cookie of this connection is bound to.
fn peer_address(ssl: &SslRef) -> &[u8] {
    ssl.ex_data(peer_index())
        .map(Vec::as_slice)
        .unwrap_or(PEER_ADDRESS)
}

/// Makes the server answer a ClientHello without a valid cookie with a
/// HelloVerifyRequest, as a DTLS server must to keep spoofed clients from
/// using it as an amplifier: the cookie is an HMAC-SHA256, under a secret
/// of this context, of the client's address.
pub(super) fn require_cookies(ctx: &mut SslContextBuilder) -> Result<()> {
    let mut secret = [0u8; 32];
    openssl::rand::rand_bytes(&mut secret)?;
    let secret = Arc::new(PKey::hmac(&secret)?);
    let generating = Arc::clone(&secret);
    ctx.set_cookie_generate_cb(move |ssl, out| {
        let cookie = cookie(&generating, peer_address(ssl))?;
        out[..cookie.len()].copy_from_slice(&cookie);
        Ok(cookie.len())
    });
    ctx.set_cookie_verify_cb(move |ssl, given| {
        cookie(&secret, peer_address(ssl)).is_ok_and(|expected| {
            expected.len() == given.len() && openssl::memcmp::eq(&expected, given)
        })
    });
    ctx.set_options(SslOptions::COOKIE_EXCHANGE);
    Ok(())
}

fn cookie(
    secret: &PKey<openssl::pkey::Private>,
    peer: &[u8],
) -> Result<Vec<u8>, openssl::error::ErrorStack> {
    let mut signer = Signer::new(openssl::hash::MessageDigest::sha256(), secret)?;
    signer.update(peer)?;
    signer.sign_to_vec()
}

/// Holds a DTLS connection to datagrams of at most `mtu_bytes` (its
/// context must have `SslOptions::NO_QUERY_MTU`, so OpenSSL does not ask
/// the channel instead).
/// `DTLS_CTRL_GET_TIMEOUT` and `DTLS_CTRL_HANDLE_TIMEOUT` (the macros
/// `DTLSv1_get_timeout` and `DTLSv1_handle_timeout`).
const DTLS_CTRL_GET_TIMEOUT: libc::c_int = 73;
const DTLS_CTRL_HANDLE_TIMEOUT: libc::c_int = 74;

/// How long until the connection's retransmission timer is due, if one
/// runs (zero when it is due).
pub(super) fn timer(ssl: &SslRef) -> Option<std::time::Duration> {
    let mut left = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    // SAFETY: the control writes one timeval.
    let running = unsafe {
        openssl_sys::SSL_ctrl(
            ssl.as_ptr(),
            DTLS_CTRL_GET_TIMEOUT,
            0,
            (&mut left as *mut libc::timeval).cast(),
        )
    };
    (running > 0).then(|| {
        std::time::Duration::from_secs(left.tv_sec.max(0) as u64)
            + std::time::Duration::from_micros(left.tv_usec.max(0) as u64)
    })
}

/// Lets OpenSSL resend its last flight if its timer is due; returns true
/// if it did.
pub(super) fn handle_timer(ssl: &SslRef) -> Result<bool> {
    // SAFETY: the control takes no argument.
    let handled = unsafe {
        openssl_sys::SSL_ctrl(
            ssl.as_ptr(),
            DTLS_CTRL_HANDLE_TIMEOUT,
            0,
            std::ptr::null_mut(),
        )
    };
    if handled < 0 {
        bail!("resending a DTLS flight failed");
    }
    Ok(handled > 0)
}

pub(super) fn set_mtu(ssl: &SslRef, mtu_bytes: u16) -> Result<()> {
    // SAFETY: `ssl` is a live DTLS connection with its BIO set (OpenSSL
    // reads the BIO's overhead to check the minimum); SSL_set_mtu only
    // stores the value. `SslStream` offers no `&mut SslRef`, so the
    // pointer is taken from the shared reference (an opaque C object).
    let accepted = unsafe { openssl_sys::SSL_set_mtu(ssl.as_ptr(), mtu_bytes.into()) };
    if accepted <= 0 {
        openssl::error::ErrorStack::get(); // leave no error behind for the handshake
        bail!("OpenSSL refuses a DTLS MTU of {mtu_bytes} bytes");
    }
    Ok(())
}

extern "C" {
    // In libssl since OpenSSL 1.1.1; openssl-sys does not declare it.
    fn DTLS_get_data_mtu(ssl: *const openssl_sys::SSL) -> libc::size_t;
}

/// The most application data one record of an established DTLS connection
/// carries in one datagram of its MTU (its suite's header, explicit nonce
/// or IV, padding, MAC or tag taken off).
pub(super) fn data_mtu(ssl: &SslRef) -> Result<usize> {
    // SAFETY: `ssl` is a live DTLS connection whose handshake is done, so
    // its write cipher and MTU are set; the call only reads them.
    let bytes = unsafe { DTLS_get_data_mtu(ssl.as_ptr()) };
    if bytes == 0 {
        openssl::error::ErrorStack::get();
        bail!("OpenSSL gives no data MTU for this DTLS connection");
    }
    Ok(bytes)
}

/// Why OpenSSL cannot run this DTLS scenario, if it cannot (`None` for TLS).
pub(super) fn unsupported_reason(scenario: &HandshakeScenario) -> Option<String> {
    if !scenario.version.is_dtls() {
        return None;
    }
    let mtu_bytes = scenario.mtu_bytes?;
    if scenario.cert.family() == SignatureFamily::EdDsa {
        // Seen with OpenSSL 3.6: the same row over TLS 1.2 runs.
        return Some(format!(
            "OpenSSL {} finds no shared cipher for an EdDSA certificate in DTLS 1.2 (TLS 1.2 works)",
            openssl_release()
        ));
    }
    mtu_refusal(mtu_bytes)
}

/// The release of the linked OpenSSL ("3.6.0").
pub(super) fn openssl_release() -> &'static str {
    openssl::version::version()
        .trim_start_matches("OpenSSL ")
        .split(' ')
        .next()
        .unwrap_or_default()
}

/// Why OpenSSL cannot run DTLS handshakes at this MTU, if it cannot: its
/// DTLS code has a floor under which it will not fragment.
fn mtu_refusal(mtu_bytes: u16) -> Option<String> {
    let floor = minimum_mtu_bytes();
    (mtu_bytes < floor).then(|| {
        format!(
            "an MTU of {mtu_bytes} bytes is too small for a DTLS handshake: OpenSSL's DTLS needs at least {floor} bytes"
        )
    })
}

/// The smallest MTU OpenSSL's DTLS works with over the datagram channel,
/// found once: `SSL_set_mtu` accepts values a little below the floor its
/// record layer then refuses to write at (208 against 256 with 3.6), so
/// each candidate is tried by a client sending its first ClientHello.
fn minimum_mtu_bytes() -> u16 {
    static FLOOR: std::sync::OnceLock<u16> = std::sync::OnceLock::new();
    *FLOOR.get_or_init(|| {
        let probe = || -> Result<u16> {
            let mut ctx = SslContextBuilder::new(SslMethod::dtls())?;
            ctx.set_options(SslOptions::NO_QUERY_MTU);
            let ctx = ctx.build();
            let writes_a_client_hello = |mtu: u16| -> bool {
                let attempt = || -> Result<bool> {
                    let mut ssl = Ssl::new(&ctx)?;
                    ssl.set_connect_state();
                    let pipe = DatagramPipe::new(mtu);
                    let mut stream = SslStream::new(ssl, pipe.client_end())?;
                    set_mtu(stream.ssl(), mtu)?;
                    let _ = stream.do_handshake(); // waits for the server
                    Ok(pipe.pending_for_server())
                };
                let written = attempt().unwrap_or(false);
                openssl::error::ErrorStack::get(); // leave no error behind
                written
            };
            Ok((1..=1500)
                .find(|mtu| writes_a_client_hello(*mtu))
                .unwrap_or(u16::MAX))
        };
        probe().unwrap_or(0)
    })
}

/// One DTLS handshake with every datagram kept: what was negotiated and
/// what each side sent, in order.
#[derive(Debug, Clone)]
pub struct DtlsTrace {
    pub negotiated: Negotiated,
    pub client_datagrams: Vec<Vec<u8>>,
    pub server_datagrams: Vec<Vec<u8>>,
}

impl DtlsTrace {
    /// The types of the plaintext handshake messages (and fragments) the
    /// server sent, in order: 3 is a HelloVerifyRequest, 2 a ServerHello.
    pub fn server_handshake_types(&self) -> Vec<u8> {
        self.server_datagrams
            .iter()
            .flat_map(|d| plaintext_handshake_types(d))
            .collect()
    }

    /// The types of the plaintext handshake messages (and fragments) the
    /// client sent, in order: 1 is a ClientHello.
    pub fn client_handshake_types(&self) -> Vec<u8> {
        self.client_datagrams
            .iter()
            .flat_map(|d| plaintext_handshake_types(d))
            .collect()
    }
}

/// Runs one OpenSSL DTLS handshake of `scenario` (after the full one, for
/// resumed scenarios) over a channel that keeps every datagram, and does
/// `fault` to one of them if given.
pub fn trace_handshake(
    scenario: &HandshakeScenario,
    credentials: &Credentials,
    fault: Option<Fault>,
) -> Result<DtlsTrace> {
    let Some(mtu_bytes) = scenario.mtu_bytes else {
        bail!("{} is not a DTLS scenario", scenario.label());
    };
    let mut handshaker = OpensslHandshaker::new(scenario, credentials)?;
    let mut pipe = DatagramPipe::traced(mtu_bytes);
    if let Some(fault) = fault {
        pipe = pipe.with_fault(fault);
    }
    let sample = handshaker.handshake_over(&pipe)?;
    Ok(DtlsTrace {
        negotiated: sample.negotiated,
        client_datagrams: pipe.sent_by_client(),
        server_datagrams: pipe.sent_by_server(),
    })
}

/// Runs one OpenSSL DTLS handshake of `scenario` over a pair of loopback
/// UDP sockets, client and server in two threads, keeping every datagram
/// each side sent.
pub fn trace_udp_handshake(
    scenario: &HandshakeScenario,
    credentials: &Credentials,
) -> Result<DtlsTrace> {
    if !scenario.version.is_datagram() {
        bail!("{} is not a DTLS scenario", scenario.label());
    }
    let mut handshaker = OpensslHandshaker::new(scenario, credentials)?;
    let (mut client, mut server) = crate::transport::udp::udp_pair()?;
    let (sent_by_client, sent_by_server) = (client.traced(), server.traced());
    let sides = handshaker.establish_over_udp(client, server)?;
    let sample = handshaker.finish(sides)?;
    let taken = |trace: std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>| {
        std::mem::take(&mut *trace.lock().unwrap_or_else(|e| e.into_inner()))
    };
    Ok(DtlsTrace {
        negotiated: sample.negotiated,
        client_datagrams: taken(sent_by_client),
        server_datagrams: taken(sent_by_server),
    })
}

/// The handshake message types in a datagram's epoch-0 (unencrypted)
/// handshake records: a DTLS record header is 13 bytes (type, version,
/// epoch, sequence number, length), a handshake message starts with its type.
fn plaintext_handshake_types(datagram: &[u8]) -> Vec<u8> {
    const HEADER: usize = 13;
    const HANDSHAKE: u8 = 22;
    let mut types = Vec::new();
    let mut at = 0;
    while at + HEADER <= datagram.len() {
        let record = &datagram[at..];
        let epoch = u16::from_be_bytes([record[3], record[4]]);
        let length = usize::from(u16::from_be_bytes([record[11], record[12]]));
        if record[0] == HANDSHAKE && epoch == 0 && length > 0 && HEADER < record.len() {
            types.push(record[HEADER]);
        }
        at += HEADER + length;
    }
    types
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_walked_to_their_handshake_types() {
        let record = |kind: u8, epoch: u8, body: &[u8]| {
            let mut bytes = vec![kind, 0xfe, 0xfd, 0, epoch, 0, 0, 0, 0, 0, 0];
            bytes.extend((body.len() as u16).to_be_bytes());
            bytes.extend(body);
            bytes
        };
        let mut datagram = record(22, 0, &[2, 0, 0, 1]);
        datagram.extend(record(20, 0, &[1]));
        datagram.extend(record(22, 1, &[20, 9, 9]));
        datagram.extend(record(22, 0, &[HELLO_VERIFY_REQUEST]));
        assert_eq!(
            plaintext_handshake_types(&datagram),
            vec![2, HELLO_VERIFY_REQUEST]
        );
    }
}
