//! OpenSSL 3.6's own QUIC: what its handshakes share over memory
//! ([`super::quic_memory`]: a client connection and a server listener in
//! one thread over a `BIO_new_bio_dgram_pair` whose ends carry addresses,
//! as OpenSSL's own tests set it up) and over loopback UDP sockets in two
//! threads ([`super::quic_udp`]): the contexts, the calls into OpenSSL's
//! QUIC and the handshaker. The listener accepts without address
//! validation (no Retry). A resumed scenario's client keeps the session
//! (the ticket the server sent after the previous handshake) and offers
//! it in the next. The server's QUIC functions are not in openssl-sys:
//! they are declared here and resolve against the libssl already linked.
//! The contexts, the wire and the library calls the drivers make are
//! public (hidden) so that the QUIC overhead bench's plain loop makes the
//! same calls without tlslab's bookkeeping.

use std::ffi::{c_int, c_long, c_uchar, c_uint, c_void};
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use foreign_types::{ForeignType, ForeignTypeRef};
use openssl::ssl::{
    select_next_proto, AlpnError, Ssl, SslContext, SslContextBuilder, SslMethod, SslSession,
    SslSessionCacheMode, SslSessionRef, SslVerifyMode,
};
use openssl_sys as ffi;

use super::{negotiated, openssl_group_name, trust_store, use_chain};
use crate::backend::{CpuReadings, HandshakeSample, Handshaker};
use crate::certs::{Credentials, SERVER_NAME};
use crate::scenario::{HandshakeScenario, Resumption, TlsVersion, Transport};

extern "C" {
    fn OSSL_QUIC_server_method() -> *const ffi::SSL_METHOD;
    fn SSL_new_listener(ctx: *mut ffi::SSL_CTX, flags: u64) -> *mut ffi::SSL;
    fn SSL_listen(ssl: *mut ffi::SSL) -> c_int;
    fn SSL_accept_connection(ssl: *mut ffi::SSL, flags: u64) -> *mut ffi::SSL;
    fn SSL_set_fd(ssl: *mut ffi::SSL, fd: c_int) -> c_int;
    fn SSL_SESSION_is_resumable(session: *const ffi::SSL_SESSION) -> c_int;
    fn SSL_SESSION_dup(session: *const ffi::SSL_SESSION) -> *mut ffi::SSL_SESSION;
    fn BIO_ADDR_new() -> *mut ffi::BIO_ADDR;
    fn BIO_ADDR_free(address: *mut ffi::BIO_ADDR);
    fn BIO_ADDR_rawmake(
        address: *mut ffi::BIO_ADDR,
        family: c_int,
        host: *const c_void,
        host_len: usize,
        port: u16,
    ) -> c_int;
}

/// The listener answers every client without a Retry.
const SSL_LISTENER_FLAG_NO_VALIDATE: u64 = 1 << 1;
/// `SSL_accept_connection` returns at once when no connection waits.
const SSL_ACCEPT_CONNECTION_NO_BLOCK: u64 = 1;
const BIO_CTRL_PENDING: c_int = 10;
const BIO_CTRL_DGRAM_SET_CAPS: c_int = 87;
const BIO_CTRL_DGRAM_SET0_LOCAL_ADDR: c_int = 94;
const BIO_DGRAM_CAP_HANDLES_DST_ADDR: c_long = 1 << 1;

/// tlslab's ALPN protocol in wire form (length-prefixed).
const ALPN_WIRE: &[u8] = b"\x06tlslab";

/// What `--mtu` does to OpenSSL's QUIC, said under every table with its
/// rows: OpenSSL 3.6 builds every packet for a maximum datagram payload of
/// 1,200 bytes, fixed in its code (`QUIC_MIN_INITIAL_DGRAM_LEN`, also the
/// `max_udp_payload_size` it announces), with no call to change it and no
/// path MTU discovery.
pub const DATAGRAM_SIZE_NOTE: &str = "openssl QUIC rows: OpenSSL 3.6 sends QUIC datagrams of at most 1,200 bytes whatever --mtu says (a size fixed in its code, QUIC's minimum, with no setting and no path MTU discovery): --mtu bounds them without enlarging them, and its client pads its Initial to 1,200 bytes, not to the MTU.";

/// The most turns a handshake may take before it counts as stalled.
pub(super) const MAX_ROUNDS: usize = 64;

/// QUIC handshakes of one scenario on OpenSSL: the two contexts, the
/// transport, and for a resumed scenario the session to offer next.
pub(super) struct OpensslQuicHandshaker {
    pub(super) client: SslContext,
    pub(super) server: SslContext,
    /// Memory (a BIO pair, one thread) or UDP (loopback sockets, two threads).
    transport: Transport,
    /// True if and only if every handshake resumes the session the one
    /// before it left.
    pub(super) resume: bool,
    /// The client's session from the last handshake, with the server's
    /// ticket in it (resumed scenarios only).
    pub(super) session: Option<SslSession>,
    pub(super) cpu_readings: CpuReadings,
}

impl OpensslQuicHandshaker {
    /// The contexts of a scenario; for a resumed scenario the first, full
    /// handshake is done, so the client has a ticket to resume with.
    pub(super) fn new(scenario: &HandshakeScenario, credentials: &Credentials) -> Result<Self> {
        let (client, server) = quic_contexts(scenario, credentials)?;
        let mut handshaker = Self {
            client,
            server,
            transport: scenario.transport,
            resume: scenario.resumption.is_on(),
            session: None,
            cpu_readings: CpuReadings::EveryTurn,
        };
        if handshaker.resume {
            handshaker
                .handshake()
                .context("the full handshake before the resumed ones")?;
        }
        Ok(handshaker)
    }

    /// Keeps the client's session for the next handshake (resumed
    /// scenarios only); fails if it holds no ticket to resume with.
    pub(super) fn keep_session(&mut self, client: &Ssl) -> Result<()> {
        if !self.resume {
            return Ok(());
        }
        let session = client
            .session()
            .filter(|session| resumable(session))
            .ok_or_else(|| {
                anyhow!("the QUIC client holds no resumable session: no ticket from the server reached it")
            })?;
        // A copy, not a reference: freeing a QUIC connection that was not
        // shut down marks its session not resumable (TLS's
        // `SSL_set_shutdown`, which tlslab's TLS rows use against this, is
        // a no-op on QUIC objects).
        // SAFETY: a live session, copied into a new one this takes over.
        let copy = unsafe { SSL_SESSION_dup(session.as_ptr()) };
        if copy.is_null() {
            bail!(
                "SSL_SESSION_dup failed: {}",
                openssl::error::ErrorStack::get()
            );
        }
        // SAFETY: the new session is owned here from now on.
        self.session = Some(unsafe { SslSession::from_ptr(copy) });
        Ok(())
    }
}

/// True if and only if `session` can be resumed (a TLS 1.3 client's
/// session is, once a ticket has arrived in it).
fn resumable(session: &SslSessionRef) -> bool {
    // SAFETY: a live session.
    unsafe { SSL_SESSION_is_resumable(session.as_ptr()) == 1 }
}

/// True if and only if `client` holds a session with the server's ticket.
#[doc(hidden)]
pub fn has_ticket(client: &Ssl) -> bool {
    client.session().is_some_and(resumable)
}

/// The client's and the server's QUIC contexts of a scenario: its suite,
/// group and certificates, tlslab's ALPN, no session cache; the server
/// sends one ticket after each handshake when the scenario resumes
/// (`psk`), none otherwise. Public (hidden) for the QUIC overhead bench's
/// plain loop.
#[doc(hidden)]
pub fn quic_contexts(
    scenario: &HandshakeScenario,
    credentials: &Credentials,
) -> Result<(SslContext, SslContext)> {
    // SAFETY: the QUIC methods are static tables of the linked libssl.
    let client_method = unsafe { SslMethod::from_ptr(ffi::OSSL_QUIC_client_method()) };
    let server_method = unsafe { SslMethod::from_ptr(OSSL_QUIC_server_method()) };
    let mut client = quic_context(client_method, scenario)?;
    client.set_verify(SslVerifyMode::PEER);
    client.set_cert_store(trust_store(credentials)?);
    client.set_session_cache_mode(SslSessionCacheMode::OFF);
    client
        .set_alpn_protos(ALPN_WIRE)
        .context("the client's ALPN")?;
    if scenario.mutual {
        use_chain(&mut client, &credentials.client)?;
    }
    let mut server = quic_context(server_method, scenario)?;
    use_chain(&mut server, &credentials.server)?;
    server.set_alpn_select_callback(|_, offered| {
        select_next_proto(ALPN_WIRE, offered).ok_or(AlpnError::ALERT_FATAL)
    });
    match scenario.resumption {
        Resumption::Off => server.set_num_tickets(0)?,
        Resumption::Psk => {
            server.set_session_id_context(b"tlslab")?;
            server.set_num_tickets(1)?;
        }
        other => bail!(
            "QUIC resumes with psk (TLS 1.3), not {}",
            crate::scenario::Named::id(other)
        ),
    }
    if scenario.mutual {
        server.set_verify(SslVerifyMode::PEER | SslVerifyMode::FAIL_IF_NO_PEER_CERT);
        server.set_cert_store(trust_store(credentials)?);
    }
    Ok((client.build(), server.build()))
}

/// A QUIC context of `method` with the scenario's suite and group.
fn quic_context(method: SslMethod, scenario: &HandshakeScenario) -> Result<SslContextBuilder> {
    let mut ctx = SslContextBuilder::new(method).context("a QUIC context")?;
    ctx.set_ciphersuites(scenario.suite_name())?;
    if let Some(name) = openssl_group_name(scenario.group) {
        ctx.set_groups_list(name)?;
    }
    Ok(ctx)
}

/// An IPv4 address and port as OpenSSL takes it (a BIO_ADDR), freed on drop.
pub(super) struct Address(*mut ffi::BIO_ADDR);

impl Address {
    /// 0.0.0.0 port 0: the addresses the BIO pair carries are only labels.
    fn any() -> Result<Self> {
        Self::of(SocketAddr::from(([0, 0, 0, 0], 0)))
    }

    /// `address` (IPv4 only: tlslab's sockets are on 127.0.0.1).
    pub(super) fn of(address: SocketAddr) -> Result<Self> {
        let SocketAddr::V4(address) = address else {
            bail!("OpenSSL's QUIC is given IPv4 addresses only, not {address}");
        };
        let host = address.ip().octets();
        // SAFETY: a new BIO_ADDR, filled from the four bytes of the IPv4
        // address and the port, both in network byte order.
        unsafe {
            let raw = BIO_ADDR_new();
            if raw.is_null() {
                bail!("BIO_ADDR_new failed");
            }
            let port = address.port().to_be();
            if BIO_ADDR_rawmake(raw, libc::AF_INET, host.as_ptr().cast(), 4, port) != 1 {
                BIO_ADDR_free(raw);
                bail!("BIO_ADDR_rawmake failed");
            }
            Ok(Self(raw))
        }
    }
}

impl Drop for Address {
    fn drop(&mut self) {
        // SAFETY: owned here, freed once.
        unsafe { BIO_ADDR_free(self.0) };
    }
}

/// An SSL object made by a QUIC call, freed on drop.
fn owned(ssl: *mut ffi::SSL, what: &str) -> Result<Ssl> {
    if ssl.is_null() {
        bail!("{what} failed: {}", openssl::error::ErrorStack::get());
    }
    // SAFETY: a new SSL object this function takes over.
    Ok(unsafe { Ssl::from_ptr(ssl) })
}

/// True if and only if a datagram waits for `ssl` (a connection or a
/// listener) in its network BIO.
#[doc(hidden)]
pub fn datagram_waiting(ssl: &Ssl) -> bool {
    // SAFETY: a live SSL object; its network BIO lives as long as it.
    unsafe {
        let bio = ffi::SSL_get_rbio(ssl.as_ptr());
        !bio.is_null() && ffi::BIO_ctrl(bio, BIO_CTRL_PENDING, 0, std::ptr::null_mut()) > 0
    }
}

/// Lets `ssl` process what arrived and what is due (`SSL_handle_events`).
#[doc(hidden)]
pub fn handle_events(ssl: &Ssl) {
    // SAFETY: a live SSL object.
    unsafe { ffi::SSL_handle_events(ssl.as_ptr()) };
}

/// The next connection `listener` has accepted, if one has arrived.
#[doc(hidden)]
pub fn accept_connection(listener: &Ssl) -> Result<Option<Ssl>> {
    // SAFETY: a live listener; a new connection is taken over.
    let accepted =
        unsafe { SSL_accept_connection(listener.as_ptr(), SSL_ACCEPT_CONNECTION_NO_BLOCK) };
    if accepted.is_null() {
        return Ok(None);
    }
    owned(accepted, "SSL_accept_connection").map(Some)
}

/// A QUIC listener on one end of a new `BIO_new_bio_dgram_pair`, the other
/// end kept for the client ([`Self::connect`]): what one handshake in
/// memory runs over. Public (hidden) for the QUIC overhead bench.
#[doc(hidden)]
pub struct QuicWire {
    pub listener: Ssl,
    /// The client's end until [`Self::connect`] hands it over, then null.
    client_bio: *mut ffi::BIO,
    /// The address the client sends its first datagram to.
    peer: Address,
}

impl QuicWire {
    /// A listener of `server` (no address validation, non-blocking) on
    /// a new datagram pair whose ends carry addresses.
    pub fn listen(server: &SslContext) -> Result<Self> {
        let (mut client_bio, mut server_bio) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: two new BIOs, each handed to one SSL object below (which
        // frees it); the capabilities and the local address are controls
        // on live BIOs.
        unsafe {
            if ffi::BIO_new_bio_dgram_pair(&mut client_bio, 0, &mut server_bio, 0) != 1 {
                bail!("BIO_new_bio_dgram_pair failed");
            }
            for bio in [client_bio, server_bio] {
                ffi::BIO_ctrl(
                    bio,
                    BIO_CTRL_DGRAM_SET_CAPS,
                    BIO_DGRAM_CAP_HANDLES_DST_ADDR,
                    std::ptr::null_mut(),
                );
            }
            let local = Address::any()?;
            if ffi::BIO_ctrl(
                client_bio,
                BIO_CTRL_DGRAM_SET0_LOCAL_ADDR,
                0,
                local.0.cast(),
            ) == 1
            {
                // The BIO owns it now.
                std::mem::forget(local);
            }
        }
        let peer = Address::any()?;
        let listener = new_listener(server, |listener| {
            // SAFETY: the listener takes the server's BIO.
            unsafe { ffi::SSL_set_bio(listener.as_ptr(), server_bio, server_bio) };
            Ok(())
        })?;
        Ok(Self {
            listener,
            client_bio,
            peer,
        })
    }

    /// The client of `client` on the pair's other end, its first flight
    /// sent. Once per wire.
    pub fn connect(&mut self, client: &SslContext) -> Result<Ssl> {
        self.connect_resuming(client, None)
    }

    /// [`Self::connect`], offering `session` (a ticket) if there is one.
    pub fn connect_resuming(
        &mut self,
        client: &SslContext,
        session: Option<&SslSessionRef>,
    ) -> Result<Ssl> {
        if self.client_bio.is_null() {
            bail!("the QUIC wire's client end is taken");
        }
        let ssl = new_client(client, session)?;
        let bio = std::mem::replace(&mut self.client_bio, std::ptr::null_mut());
        // SAFETY: the client takes its end.
        unsafe { ffi::SSL_set_bio(ssl.as_ptr(), bio, bio) };
        start_client(ssl, &self.peer)
    }
}

/// A new QUIC client connection of `client` for tlslab's server name,
/// offering `session` if there is one; not attached to a network yet.
pub(super) fn new_client(client: &SslContext, session: Option<&SslSessionRef>) -> Result<Ssl> {
    let mut ssl = Ssl::new(client)?;
    ssl.set_hostname(SERVER_NAME)?;
    if let Some(session) = session {
        // SAFETY: the session was made by a client of this same context.
        unsafe { ssl.set_session(session)? };
    }
    Ok(ssl)
}

/// Attaches `ssl` (a connection or a listener) to the UDP socket `fd`.
pub(super) fn attach_socket(ssl: &Ssl, fd: std::os::fd::RawFd) -> Result<()> {
    // SAFETY: a live SSL object; the BIO it makes does not close `fd`.
    if unsafe { SSL_set_fd(ssl.as_ptr(), fd) } != 1 {
        bail!("SSL_set_fd failed: {}", openssl::error::ErrorStack::get());
    }
    Ok(())
}

/// Makes `ssl`, attached to its network, non-blocking, tells it where the
/// server is and sends its first flight.
pub(super) fn start_client(mut ssl: Ssl, peer: &Address) -> Result<Ssl> {
    // SAFETY: a live SSL object; the peer address is copied.
    unsafe {
        if ffi::SSL_set_blocking_mode(ssl.as_ptr(), 0) != 1
            || ffi::SSL_set1_initial_peer_addr(ssl.as_ptr(), peer.0) != 1
        {
            bail!(
                "configuring the QUIC client: {}",
                openssl::error::ErrorStack::get()
            );
        }
    }
    handshake_step(&mut ssl)?;
    Ok(ssl)
}

/// A non-blocking listener of `server` (no address validation) on the
/// network `attach` gives it.
pub(super) fn new_listener(
    server: &SslContext,
    attach: impl FnOnce(&Ssl) -> Result<()>,
) -> Result<Ssl> {
    // SAFETY: a new listener of a live context.
    let listener = owned(
        unsafe { SSL_new_listener(server.as_ptr(), SSL_LISTENER_FLAG_NO_VALIDATE) },
        "SSL_new_listener",
    )?;
    attach(&listener)?;
    // SAFETY: a live listener.
    unsafe {
        if ffi::SSL_set_blocking_mode(listener.as_ptr(), 0) != 1
            || SSL_listen(listener.as_ptr()) != 1
        {
            bail!("SSL_listen failed: {}", openssl::error::ErrorStack::get());
        }
    }
    Ok(listener)
}

impl Drop for QuicWire {
    fn drop(&mut self) {
        if !self.client_bio.is_null() {
            // SAFETY: the client's end, never handed over.
            unsafe { ffi::BIO_free_all(self.client_bio) };
        }
    }
}

/// How long until `ssl`'s next timer is due (zero: due now), `None` if it
/// has none.
#[doc(hidden)]
pub fn event_timeout(ssl: &Ssl) -> Option<Duration> {
    let mut wait = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    let mut infinite: c_int = 0;
    // SAFETY: a live SSL object and two out-parameters.
    let known = unsafe { ffi::SSL_get_event_timeout(ssl.as_ptr(), &mut wait, &mut infinite) } == 1;
    (known && infinite == 0).then(|| {
        Duration::from_secs(wait.tv_sec.max(0) as u64)
            + Duration::from_micros(wait.tv_usec.max(0) as u64)
    })
}

/// True if and only if `ssl`'s event timeout has passed.
#[doc(hidden)]
pub fn timeout_due(ssl: &Ssl) -> bool {
    event_timeout(ssl).is_some_and(|wait| wait.is_zero())
}

/// Moves a handshake on: Ok(true) once it is complete.
#[doc(hidden)]
pub fn handshake_step(ssl: &mut Ssl) -> Result<bool> {
    // SAFETY: a live SSL object.
    let result = unsafe { ffi::SSL_do_handshake(ssl.as_ptr()) };
    if result == 1 {
        return Ok(true);
    }
    // SAFETY: as above, for the result just returned.
    let error = unsafe { ffi::SSL_get_error(ssl.as_ptr(), result) };
    match error {
        ffi::SSL_ERROR_WANT_READ | ffi::SSL_ERROR_WANT_WRITE => Ok(false),
        _ => bail!(
            "QUIC handshake failed (SSL error {error}): {}",
            openssl::error::ErrorStack::get()
        ),
    }
}

/// The ALPN protocol `ssl` agreed on.
fn alpn_selected(ssl: &Ssl) -> Option<String> {
    let mut data: *const c_uchar = std::ptr::null();
    let mut len: c_uint = 0;
    // SAFETY: the selected protocol is owned by the connection and copied at once.
    unsafe {
        ffi::SSL_get0_alpn_selected(ssl.as_ptr(), &mut data, &mut len);
        (!data.is_null()).then(|| {
            String::from_utf8_lossy(std::slice::from_raw_parts(data, len as usize)).into_owned()
        })
    }
}

/// What the client of a QUIC handshake sees as negotiated (OpenSSL's
/// `QUICv1` named `QUIC`), with the ALPN protocol.
pub(super) fn quic_negotiated(client: &Ssl) -> Result<crate::backend::Negotiated> {
    let mut negotiated = negotiated(client)?;
    // OpenSSL names the protocol "QUICv1" (QUIC version 1, TLS 1.3 inside).
    if negotiated.version == "QUICv1" {
        negotiated.version = TlsVersion::Quic.protocol_name().to_string();
    }
    negotiated.alpn = alpn_selected(client);
    Ok(negotiated)
}

impl Handshaker for OpensslQuicHandshaker {
    fn handshake(&mut self) -> Result<HandshakeSample> {
        if crate::transport::tap::recording() {
            bail!("OpenSSL's QUIC datagrams cross a BIO pair or sockets that the wire tap does not see (not traced yet)");
        }
        match self.transport {
            Transport::Udp => self.handshake_over_udp(),
            _ => self.handshake_in_memory(),
        }
    }

    fn read_cpu(&mut self, readings: CpuReadings) {
        self.cpu_readings = readings;
    }
}
