//! wolfSSL's objects as owned Rust values: a context ([`Context`], one
//! per side and scenario: version, suite, groups, certificates,
//! resumption) and a connection ([`Connection`]) whose I/O goes through
//! callbacks to one end of tlslab's memory pipe or datagram channel, so
//! both sides run in one thread and no socket is involved. Every unsafe
//! call into wolfssl-sys is in this file.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::io::{ErrorKind, Read, Write};
use std::sync::Once;

use anyhow::{bail, Context as _, Result};
use wolfssl_sys as sys;

use crate::certs::{CertChain, Credentials, SERVER_NAME};
use crate::scenario::{Group, HandshakeScenario, KxKind, Named, Resumption, Side, TlsVersion};
use crate::transport::datagram::DatagramEnd;
use crate::transport::memory::PipeEnd;

/// wolfSSL's success return.
const SUCCESS: c_int = 1;
/// `WOLFSSL_FILETYPE_ASN1`: DER input.
const FILETYPE_DER: c_int = 2;
/// `WOLFSSL_ERROR_WANT_READ` and `WOLFSSL_ERROR_WANT_WRITE`.
const WANT_READ: c_int = 2;
const WANT_WRITE: c_int = 3;
/// The I/O callbacks' answers: nothing to read yet, and a failure.
const IO_WANT_READ: c_int = -2;
const IO_ERROR: c_int = -1;
const IO_CONNECTION_CLOSED: c_int = -5;
/// `WOLFSSL_VERIFY_PEER` and `WOLFSSL_VERIFY_FAIL_IF_NO_PEER_CERT`.
const VERIFY_PEER: c_int = 1;
const VERIFY_FAIL_IF_NO_PEER_CERT: c_int = 2;

/// Initialises the library once per process.
fn init() {
    static INIT: Once = Once::new();
    // SAFETY: wolfSSL_Init has no preconditions and is called once.
    INIT.call_once(|| unsafe {
        sys::wolfSSL_Init();
    });
}

/// The version of the linked wolfSSL, as it reports it ("5.9.4").
pub(super) fn library_version() -> String {
    // SAFETY: a static string.
    unsafe { CStr::from_ptr(sys::wolfSSL_lib_version()) }
        .to_string_lossy()
        .into_owned()
}

/// A wolfSSL context for one side of one scenario.
pub(super) struct Context {
    ctx: *mut sys::WOLFSSL_CTX,
    side: Side,
    datagram: bool,
    mtu_bytes: Option<u16>,
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: the context was made by wolfSSL_CTX_new and is freed once;
        // connections keep their own reference.
        unsafe { sys::wolfSSL_CTX_free(self.ctx) };
    }
}

/// The method for a version and side.
fn method(version: TlsVersion, side: Side) -> Result<*mut sys::WOLFSSL_METHOD> {
    // SAFETY: the method constructors allocate a method the context takes over.
    let method = unsafe {
        match (version, side) {
            (TlsVersion::Tls12, Side::Client) => sys::wolfTLSv1_2_client_method(),
            (TlsVersion::Tls12, Side::Server) => sys::wolfTLSv1_2_server_method(),
            (TlsVersion::Tls13, Side::Client) => sys::wolfTLSv1_3_client_method(),
            (TlsVersion::Tls13, Side::Server) => sys::wolfTLSv1_3_server_method(),
            (TlsVersion::Dtls12, Side::Client) => sys::wolfDTLSv1_2_client_method(),
            (TlsVersion::Dtls12, Side::Server) => sys::wolfDTLSv1_2_server_method(),
            (TlsVersion::Dtls13, Side::Client) => sys::wolfDTLSv1_3_client_method(),
            (TlsVersion::Dtls13, Side::Server) => sys::wolfDTLSv1_3_server_method(),
            (TlsVersion::Quic, _) => bail!("wolfssl has no QUIC in tlslab"),
        }
    };
    if method.is_null() {
        bail!("wolfSSL has no method for {}", version.display());
    }
    Ok(method)
}

/// Fails with `what` unless wolfSSL answered success.
fn check(answer: c_int, what: &str) -> Result<()> {
    if answer != SUCCESS {
        bail!("wolfSSL refused {what} ({})", error_text(answer));
    }
    Ok(())
}

/// wolfSSL's text for an error code.
fn error_text(code: c_int) -> String {
    let mut text = [0 as c_char; 80];
    // SAFETY: the buffer is 80 bytes, as wolfSSL_ERR_error_string_n is told.
    unsafe {
        sys::wolfSSL_ERR_error_string_n(code as _, text.as_mut_ptr(), text.len() as _);
        CStr::from_ptr(text.as_ptr()).to_string_lossy().into_owned()
    }
}

/// The IANA code point of a key exchange group, as wolfSSL's groups take it.
pub(super) fn group_code(group: Group) -> Option<c_int> {
    Some(match group {
        Group::P256 => 23,
        Group::P384 => 24,
        Group::P521 => 25,
        Group::X25519 => 29,
        Group::Ffdhe2048 => 256,
        Group::Ffdhe3072 => 257,
        Group::Ffdhe4096 => 258,
        Group::Mlkem512 => 512,
        Group::Mlkem768 => 513,
        Group::Mlkem1024 => 514,
        Group::Secp256r1Mlkem768 => 4587,
        Group::X25519Mlkem768 => 4588,
        _ => return None,
    })
}

/// The curve of an ECDSA certificate, as a group code point.
fn certificate_curve(scenario: &HandshakeScenario) -> Option<c_int> {
    use crate::scenario::CertKind;
    match scenario.cert {
        CertKind::EcdsaP256 => group_code(Group::P256),
        CertKind::EcdsaP384 => group_code(Group::P384),
        CertKind::EcdsaP521 => group_code(Group::P521),
        _ => None,
    }
}

/// A chain as PEM, leaf first (wolfSSL reads a chain buffer as PEM).
fn chain_pem(chain: &CertChain) -> String {
    use base64::Engine as _;
    let mut pem = String::new();
    for der in &chain.chain_der {
        let body = base64::engine::general_purpose::STANDARD.encode(der);
        pem.push_str("-----BEGIN CERTIFICATE-----\n");
        for line in body.as_bytes().chunks(64) {
            pem.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
            pem.push('\n');
        }
        pem.push_str("-----END CERTIFICATE-----\n");
    }
    pem
}

/// The RFC 3526 (RFC 2409 for 1024 bits) prime of a TLS 1.2 DHE group.
fn dhe_prime(group: Group) -> Result<Option<Vec<u8>>> {
    use openssl::bn::BigNum;
    let prime = match group {
        Group::Dhe1024 => BigNum::get_rfc2409_prime_1024()?,
        Group::Dhe2048 => BigNum::get_rfc3526_prime_2048()?,
        Group::Dhe3072 => BigNum::get_rfc3526_prime_3072()?,
        Group::Dhe4096 => BigNum::get_rfc3526_prime_4096()?,
        _ => return Ok(None),
    };
    Ok(Some(prime.to_vec()))
}

impl Context {
    /// The context of `side` for `scenario`: its one version, suite and
    /// group, its chain (the server's, or the client's for mutual
    /// authentication), the root it trusts, its resumption.
    pub(super) fn new(
        scenario: &HandshakeScenario,
        credentials: &Credentials,
        side: Side,
    ) -> Result<Self> {
        init();
        // SAFETY: wolfSSL_CTX_new takes over the method; null is checked.
        let ctx = unsafe { sys::wolfSSL_CTX_new(method(scenario.version, side)?) };
        if ctx.is_null() {
            bail!("wolfSSL_CTX_new failed");
        }
        let context = Context {
            ctx,
            side,
            datagram: scenario.version.is_datagram(),
            mtu_bytes: scenario.mtu_bytes,
        };
        context.configure(scenario, credentials)?;
        Ok(context)
    }

    fn configure(&self, scenario: &HandshakeScenario, credentials: &Credentials) -> Result<()> {
        let ctx = self.ctx;
        let suite = CString::new(scenario.suite_name())?;
        // SAFETY: every call below gets this live context and buffers that
        // outlive the call (wolfSSL copies what it keeps).
        unsafe {
            check(
                sys::wolfSSL_CTX_set_cipher_list(ctx, suite.as_ptr()),
                &format!("the suite {}", scenario.suite_name()),
            )?;
            // A TLS 1.2 DHE row lists P-256 only: a client that lists an
            // RFC 7919 group gets that group's prime from wolfSSL's server
            // instead of the row's RFC 3526 one.
            let listed = match scenario.group.kind() {
                KxKind::Ffdh { .. } if scenario.version.tls_rules() == TlsVersion::Tls12 => {
                    group_code(Group::P256)
                }
                _ => group_code(scenario.group),
            };
            if let Some(code) = listed {
                let mut groups = vec![code];
                if scenario.version.tls_rules() == TlsVersion::Tls12 {
                    // A TLS 1.2 peer may only use an ECDSA certificate on a
                    // curve the other side lists (RFC 4492).
                    groups.extend(certificate_curve(scenario).filter(|c| *c != code));
                }
                check(
                    sys::wolfSSL_CTX_set_groups(ctx, groups.as_mut_ptr(), groups.len() as c_int),
                    &format!("the group {}", Named::id(scenario.group)),
                )?;
            }
            check(
                sys::wolfSSL_CTX_load_verify_buffer(
                    ctx,
                    credentials.root_der.as_ptr(),
                    credentials.root_der.len() as _,
                    FILETYPE_DER,
                ),
                "the root certificate",
            )?;
            let own = match self.side {
                Side::Server => Some(&credentials.server),
                Side::Client => scenario.mutual.then_some(&credentials.client),
            };
            if let Some(chain) = own {
                let pem = chain_pem(chain);
                check(
                    sys::wolfSSL_CTX_use_certificate_chain_buffer(
                        ctx,
                        pem.as_ptr(),
                        pem.len() as _,
                    ),
                    "the certificate chain",
                )?;
                check(
                    sys::wolfSSL_CTX_use_PrivateKey_buffer(
                        ctx,
                        chain.key_pkcs8_der.as_ptr(),
                        chain.key_pkcs8_der.len() as _,
                        FILETYPE_DER,
                    ),
                    "the private key",
                )?;
            }
            let verify = match (self.side, scenario.mutual) {
                (Side::Client, _) => VERIFY_PEER,
                (Side::Server, true) => VERIFY_PEER | VERIFY_FAIL_IF_NO_PEER_CERT,
                (Side::Server, false) => 0,
            };
            sys::wolfSSL_CTX_set_verify(ctx, verify, None);
            if self.side == Side::Server {
                // wolfSSL's TLS 1.2 server picks the listed curve of its
                // ephemeral key size (32 bytes unless told): the row's.
                let ephemeral_bytes = match scenario.group {
                    Group::P384 => Some(48),
                    Group::P521 => Some(66),
                    _ => None,
                };
                if let Some(bytes) = ephemeral_bytes {
                    check(
                        sys::wolfSSL_CTX_SetTmpEC_DHE_Sz(ctx, bytes),
                        "the ECDHE key size",
                    )?;
                }
                if let Some(prime) = dhe_prime(scenario.group)? {
                    let generator = [2u8];
                    check(
                        sys::wolfSSL_CTX_SetTmpDH(
                            ctx,
                            prime.as_ptr(),
                            prime.len() as c_int,
                            generator.as_ptr(),
                            1,
                        ),
                        "the DHE parameters",
                    )?;
                }
            }
            self.configure_resumption(scenario)?;
            sys::wolfSSL_CTX_SetIORecv(ctx, Some(receive));
            sys::wolfSSL_CTX_SetIOSend(ctx, Some(send));
            if self.datagram && self.side == Side::Server {
                sys::wolfSSL_CTX_SetGenCookie(ctx, Some(cookie));
            }
        }
        Ok(())
    }

    /// One kind of resumption and no other: the session cache only for
    /// session ids, its tickets (TLS 1.3 and DTLS 1.3 servers
    /// send them unasked) only for ticket and PSK rows, the client asking
    /// for a TLS 1.2 ticket only on ticket rows. A ticket row's server has
    /// no session cache, so a resumed handshake is one the ticket resumed.
    fn configure_resumption(&self, scenario: &HandshakeScenario) -> Result<()> {
        /// `WOLFSSL_SESS_CACHE_OFF`.
        const SESSION_CACHE_OFF: std::ffi::c_long = 0x0000;
        let server = self.side == Side::Server;
        let tls13 = scenario.version.tls_rules() == TlsVersion::Tls13;
        let tickets = matches!(scenario.resumption, Resumption::Ticket | Resumption::Psk);
        if tickets && !cfg!(wolfssl_session_ticket) {
            bail!("this wolfSSL build has no session tickets");
        }
        if scenario.resumption == Resumption::ZeroRtt {
            bail!("tlslab's wolfSSL driver sends no 0-RTT data");
        }
        // SAFETY: calls on this live context.
        unsafe {
            // wolfSSL's session cache is one table for the process, and
            // clients add their sessions to it too: only session-id rows
            // use it, so other rows' handshakes do not evict theirs.
            if scenario.resumption != Resumption::SessionId {
                sys::wolfSSL_CTX_set_session_cache_mode(self.ctx, SESSION_CACHE_OFF);
            }
            if server && tls13 && !tickets {
                // It answers 0, not WOLFSSL_SUCCESS, when it succeeds.
                let answer = sys::wolfSSL_CTX_no_ticket_TLSv13(self.ctx);
                if answer != 0 {
                    bail!("wolfSSL refused turning TLS 1.3 tickets off ({answer})");
                }
            }
            #[cfg(wolfssl_session_ticket)]
            if !server && scenario.resumption == Resumption::Ticket {
                check(
                    sys::wolfSSL_CTX_UseSessionTicket(self.ctx),
                    "asking for a session ticket",
                )?;
            }
        }
        Ok(())
    }

    /// Puts this server's `session` (back) in wolfSSL's session cache, so
    /// the next client that offers its id resumes it.
    ///
    /// The cache is one small table for the whole process (33 sessions in
    /// 11 rows of 3, a new one pushing out the oldest of its row), and every
    /// full handshake of every session-id row adds two sessions (the
    /// server's and the client's): over a run where other rows' handshakers
    /// are built anew, the session a row resumes falls out of the table and
    /// its next handshake is a full one (issue 27). A real server's cache is
    /// not shared with other servers' rows, so the row's session is put back
    /// before each handshake, outside its timing.
    pub(super) fn keep_in_cache(&self, session: &Session) -> Result<()> {
        // SAFETY: a live context and a session this handshaker holds a
        // reference to; wolfSSL copies it into the cache.
        check(
            unsafe { sys::wolfSSL_CTX_add_session(self.ctx, session.0) },
            "putting the server's session back in the session cache",
        )
    }

    /// A new connection of this context over one end of the memory pipe or
    /// datagram channel.
    pub(super) fn connect(&self, end: Endpoint) -> Result<Connection> {
        // SAFETY: wolfSSL_new takes a reference to the live context.
        let ssl = unsafe { sys::wolfSSL_new(self.ctx) };
        if ssl.is_null() {
            bail!("wolfSSL_new failed");
        }
        // Owned at once, so an error below frees it.
        let mut connection = Connection { ssl, io: None };
        let io = connection.io.insert(Box::new(end));
        let io_pointer: *mut Endpoint = &mut **io;
        // SAFETY: the endpoint is boxed, so its address holds while the
        // connection (which owns the box) lives; the name outlives the call.
        unsafe {
            sys::wolfSSL_SetIOReadCtx(ssl, io_pointer.cast());
            sys::wolfSSL_SetIOWriteCtx(ssl, io_pointer.cast());
            if self.side == Side::Client {
                let name = CString::new(SERVER_NAME)?;
                check(
                    sys::wolfSSL_check_domain_name(ssl, name.as_ptr()),
                    "the server's name",
                )?;
            }
            if let (true, Some(mtu_bytes)) = (self.datagram, self.mtu_bytes) {
                check(sys::wolfSSL_dtls_set_mtu(ssl, mtu_bytes), "the MTU")
                    .context("setting the DTLS MTU")?;
            }
        }
        Ok(connection)
    }
}

/// One end of an in-memory transport that a connection reads and writes.
pub(super) enum Endpoint {
    Stream(PipeEnd),
    Datagram(DatagramEnd),
}

impl Endpoint {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Endpoint::Stream(end) => end.read(buffer),
            Endpoint::Datagram(end) => end.read(buffer),
        }
    }

    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        match self {
            Endpoint::Stream(end) => end.write(bytes),
            Endpoint::Datagram(end) => end.write(bytes),
        }
    }
}

/// wolfSSL's receive callback: reads from the connection's [`Endpoint`].
unsafe extern "C" fn receive(
    _ssl: *mut sys::WOLFSSL,
    buffer: *mut c_char,
    size: c_int,
    context: *mut c_void,
) -> c_int {
    // SAFETY: the context is the connection's boxed endpoint (set in
    // `Context::connect`), the buffer holds `size` bytes.
    let (end, buffer) = unsafe {
        (
            &mut *context.cast::<Endpoint>(),
            std::slice::from_raw_parts_mut(buffer.cast::<u8>(), size.max(0) as usize),
        )
    };
    match end.read(buffer) {
        Ok(0) => IO_CONNECTION_CLOSED,
        Ok(read) => read as c_int,
        Err(error) if error.kind() == ErrorKind::WouldBlock => IO_WANT_READ,
        Err(_) => IO_ERROR,
    }
}

/// wolfSSL's send callback: writes to the connection's [`Endpoint`].
unsafe extern "C" fn send(
    _ssl: *mut sys::WOLFSSL,
    bytes: *mut c_char,
    size: c_int,
    context: *mut c_void,
) -> c_int {
    // SAFETY: as in `receive`; the bytes are `size` long.
    let (end, bytes) = unsafe {
        (
            &mut *context.cast::<Endpoint>(),
            std::slice::from_raw_parts(bytes.cast::<u8>(), size.max(0) as usize),
        )
    };
    match end.write(bytes) {
        Ok(written) => written as c_int,
        Err(_) => IO_ERROR,
    }
}

/// The DTLS server's cookie: what a real server derives from the client's
/// address (wolfSSL's own hashes it with SHA-256). Over the in-memory
/// channel every client has one address, so the cookie is one fixed value
/// of the process; the server still sends it and checks it.
unsafe extern "C" fn cookie(
    _ssl: *mut sys::WOLFSSL,
    buffer: *mut u8,
    size: c_int,
    _context: *mut c_void,
) -> c_int {
    const COOKIE: [u8; 32] = *b"tlslab in-memory client cookie!!";
    let length = COOKIE.len().min(size.max(0) as usize);
    // SAFETY: the buffer holds `size` bytes.
    unsafe { std::ptr::copy_nonoverlapping(COOKIE.as_ptr(), buffer, length) };
    length as c_int
}

/// One side's connection: wolfSSL's object and the end of the transport
/// its callbacks use.
pub(super) struct Connection {
    ssl: *mut sys::WOLFSSL,
    /// The end its callbacks use (boxed: wolfSSL holds its address).
    io: Option<Box<Endpoint>>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        // SAFETY: made by wolfSSL_new, freed once, before its endpoint.
        unsafe { sys::wolfSSL_free(self.ssl) };
    }
}

/// One side's session: the client's, which it resumes, or the server's,
/// which [`Context::keep_in_cache`] puts back in wolfSSL's session cache.
pub(super) struct Session(*mut sys::WOLFSSL_SESSION);

impl Drop for Session {
    fn drop(&mut self) {
        // SAFETY: from wolfSSL_get1_session, which hands out a reference.
        unsafe { sys::wolfSSL_SESSION_free(self.0) };
    }
}

/// The outcome of one step of a connection.
pub(super) enum Progress {
    /// The handshake is done.
    Done,
    /// It waits for the peer.
    Waiting,
}

impl Connection {
    /// Moves the handshake on: `Done` once it completed.
    pub(super) fn handshake(&mut self, side: Side) -> Result<Progress> {
        // SAFETY: a live connection.
        let answer = unsafe {
            match side {
                Side::Client => sys::wolfSSL_connect(self.ssl),
                Side::Server => sys::wolfSSL_accept(self.ssl),
            }
        };
        if answer == SUCCESS {
            return Ok(Progress::Done);
        }
        self.waiting_or_error(answer, "handshake")
    }

    /// After the handshake: reads what the peer sent (session tickets,
    /// DTLS 1.3 acknowledgements); application data is an error.
    pub(super) fn read_post_handshake(&mut self) -> Result<()> {
        let mut byte = [0u8; 1];
        // SAFETY: reads at most one byte into `byte`.
        let answer = unsafe { sys::wolfSSL_read(self.ssl, byte.as_mut_ptr().cast(), 1) };
        if answer > 0 {
            bail!("unexpected application data after the handshake");
        }
        self.waiting_or_error(answer, "reading post-handshake messages")
            .map(|_| ())
    }

    /// Writes application data; every record goes to the transport.
    pub(super) fn write(&mut self, data: &[u8]) -> Result<()> {
        // SAFETY: wolfSSL reads `data.len()` bytes of `data`.
        let answer =
            unsafe { sys::wolfSSL_write(self.ssl, data.as_ptr().cast(), data.len() as c_int) };
        if answer as usize != data.len() {
            bail!("wolfSSL_write took {answer} of {} bytes", data.len());
        }
        Ok(())
    }

    /// The most application bytes one write can carry: wolfSSL refuses a
    /// DTLS write whose record would not fit one datagram of the MTU.
    pub(super) fn max_write_bytes(&self) -> Result<usize> {
        // SAFETY: a live connection whose handshake is done.
        let most = unsafe { sys::wolfSSL_GetMaxOutputSize(self.ssl) };
        if most <= 0 {
            bail!("wolfSSL_GetMaxOutputSize failed ({})", error_text(most));
        }
        Ok(most as usize)
    }

    /// Reads application data: the bytes read, 0 when nothing waits.
    pub(super) fn read(&mut self, out: &mut [u8]) -> Result<usize> {
        // SAFETY: wolfSSL writes at most `out.len()` bytes into `out`.
        let answer =
            unsafe { sys::wolfSSL_read(self.ssl, out.as_mut_ptr().cast(), out.len() as c_int) };
        if answer > 0 {
            return Ok(answer as usize);
        }
        self.waiting_or_error(answer, "reading").map(|_| 0)
    }

    fn waiting_or_error(&self, answer: c_int, what: &str) -> Result<Progress> {
        // SAFETY: a live connection and the answer of its last call.
        let error = unsafe { sys::wolfSSL_get_error(self.ssl, answer) };
        if error == WANT_READ || error == WANT_WRITE {
            return Ok(Progress::Waiting);
        }
        bail!("{what} failed: {} ({error})", error_text(error))
    }

    /// Resumes `session` on this (client) connection.
    pub(super) fn resume(&mut self, session: &Session) -> Result<()> {
        // SAFETY: a session of a client of the same context.
        check(
            unsafe { sys::wolfSSL_set_session(self.ssl, session.0) },
            "the session to resume",
        )
    }

    /// This connection's session: a client's to resume later, a server's
    /// to keep in the cache.
    pub(super) fn session(&self) -> Option<Session> {
        // SAFETY: a live connection; the session is a new reference.
        let session = unsafe { sys::wolfSSL_get1_session(self.ssl) };
        (!session.is_null()).then_some(Session(session))
    }

    /// The negotiated version ("TLSv1.3", "DTLSv1.2").
    pub(super) fn version(&self) -> String {
        // SAFETY: a static string.
        unsafe { CStr::from_ptr(sys::wolfSSL_get_version(self.ssl)) }
            .to_string_lossy()
            .into_owned()
    }

    /// The IANA name of the negotiated suite.
    pub(super) fn suite(&self) -> String {
        // SAFETY: a live connection; the name is a static string.
        unsafe {
            let code = sys::wolfSSL_get_current_cipher_suite(self.ssl);
            let name = sys::wolfSSL_get_cipher_name_iana_from_suite(
                ((code >> 8) & 0xff) as u8,
                (code & 0xff) as u8,
            );
            if name.is_null() {
                return "none".to_string();
            }
            CStr::from_ptr(name).to_string_lossy().into_owned()
        }
    }

    /// True if and only if the handshake resumed a session.
    pub(super) fn resumed(&self) -> bool {
        // SAFETY: a live connection.
        unsafe { sys::wolfSSL_session_reused(self.ssl) == 1 }
    }

    /// wolfSSL's name of the negotiated ECDHE, FFDHE or ML-KEM group.
    pub(super) fn curve_name(&self) -> Option<String> {
        // SAFETY: a live connection; the name is a static string.
        unsafe {
            let name = sys::wolfSSL_get_curve_name(self.ssl);
            (!name.is_null()).then(|| CStr::from_ptr(name).to_string_lossy().into_owned())
        }
    }

    /// The size of the TLS 1.2 DHE prime, in bits.
    pub(super) fn dhe_bits(&self) -> i32 {
        // SAFETY: a live connection.
        unsafe { sys::wolfSSL_GetDhKey_Sz(self.ssl) }
    }
}
