//! OpenSSL as the measuring client ([`MeasuringClient`]): its contexts
//! (see [`client_context_trusting`]), its connections over TCP for the
//! load client's loops, its handshakes with a server under test
//! ([`RemoteClient`]) and its probe of what a server accepts.

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{Context, Result};
use foreign_types::ForeignTypeRef;
use openssl::ssl::{ErrorCode, SslContext, SslSession, SslStream};

use super::remote::{client_ssl, handshake_failure, RemoteClient};
use super::{client_context_trusting, OpensslBackend, DESCRIPTOR};
use crate::backend::client::{
    ClientConnection, ClientContext, MeasuringClient, Offer, TlsSession, Trust,
};
use crate::backend::probe::{Attempt, ProbeTarget};
use crate::backend::{
    Backend, BackendId, Capabilities, HandshakeSample, Handshaker, LibraryInfo, SideTime,
};
use crate::certs::Credentials;
use crate::scenario::HandshakeScenario;

extern "C" {
    /// OpenSSL's switch (not bound by openssl-sys) to read all the socket
    /// holds into the record buffer, not one record's header and then its
    /// body: one read per answer instead of two.
    fn SSL_set_read_ahead(ssl: *mut openssl_sys::SSL, yes: libc::c_int);
}

/// tlslab's OpenSSL as the client of `load` and `handshake --server`.
pub struct OpensslClient {
    backend: OpensslBackend,
}

impl OpensslClient {
    pub fn new() -> Self {
        Self {
            backend: OpensslBackend::new(),
        }
    }
}

impl Default for OpensslClient {
    fn default() -> Self {
        Self::new()
    }
}

impl MeasuringClient for OpensslClient {
    fn id(&self) -> BackendId {
        DESCRIPTOR.id
    }

    fn library(&self) -> LibraryInfo {
        LibraryInfo {
            library: format!("{} (client)", DESCRIPTOR.library),
            ..self.backend.library()
        }
    }

    fn capabilities(&self) -> &Capabilities {
        self.backend.capabilities()
    }

    fn context(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
        trust: Trust<'_>,
    ) -> Result<Arc<dyn ClientContext>> {
        Ok(Arc::new(OpensslContext(client_context_trusting(
            scenario,
            credentials,
            trust,
        )?)))
    }

    fn handshaker(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
        address: SocketAddr,
    ) -> Result<Box<dyn Handshaker>> {
        Ok(Box::new(TcpClient(RemoteClient::new(
            scenario,
            credentials,
            address,
        )?)))
    }

    fn probe(&self, target: &ProbeTarget, interrupt: &AtomicBool) -> Result<Vec<Attempt>> {
        super::probe::probe(target, interrupt)
    }
}

/// An OpenSSL client context, shared by a scenario's connections.
struct OpensslContext(SslContext);

impl ClientContext for OpensslContext {
    fn connection(&self, tcp: TcpStream, offer: &Offer<'_>) -> Result<Box<dyn ClientConnection>> {
        let session = offer.session.and_then(TlsSession::get::<SslSession>);
        let mut ssl = client_ssl(&self.0, offer.server_name, session.map(|s| &**s))?;
        ssl.set_alpn_protos(offer.alpn).context("offering ALPN")?;
        if offer.read_ahead {
            // SAFETY: `ssl` is a live SSL object, owned here.
            unsafe { SSL_set_read_ahead(ssl.as_ptr(), 1) };
        }
        Ok(Box::new(OpensslConnection(SslStream::new(ssl, tcp)?)))
    }
}

/// One OpenSSL client connection over TCP.
struct OpensslConnection(SslStream<TcpStream>);

/// Returns true if and only if OpenSSL waits for the socket to be
/// readable or writable.
fn would_block(error: &openssl::ssl::Error) -> bool {
    matches!(error.code(), ErrorCode::WANT_READ | ErrorCode::WANT_WRITE)
}

/// An OpenSSL error as an I/O error: waiting for the socket as
/// WouldBlock, the socket's own error as it is, OpenSSL's in its words.
fn io_error(error: openssl::ssl::Error) -> io::Error {
    if would_block(&error) {
        return io::ErrorKind::WouldBlock.into();
    }
    if error.code() == ErrorCode::SYSCALL && error.io_error().is_none() {
        return io::Error::new(io::ErrorKind::UnexpectedEof, "unexpected EOF");
    }
    error.into_io_error().unwrap_or_else(io::Error::other)
}

impl ClientConnection for OpensslConnection {
    fn tcp(&self) -> &TcpStream {
        self.0.get_ref()
    }

    fn handshake(&mut self) -> std::result::Result<bool, String> {
        match self.0.connect() {
            Ok(()) => Ok(true),
            Err(e) if would_block(&e) => Ok(false),
            Err(e) => Err(handshake_failure(self.0.ssl(), &e)),
        }
    }

    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        match self.0.ssl_read(buffer) {
            Ok(n) => Ok(n),
            Err(e) if e.code() == ErrorCode::ZERO_RETURN => Ok(0),
            Err(e) => Err(io_error(e)),
        }
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.ssl_write(bytes).map_err(io_error)
    }

    fn resumed(&self) -> bool {
        self.0.ssl().session_reused()
    }

    fn alpn_protocol(&self) -> Option<&[u8]> {
        self.0.ssl().selected_alpn_protocol()
    }

    fn session(&self) -> Option<TlsSession> {
        self.0
            .ssl()
            .session()
            .map(|s| TlsSession::new(s.to_owned()))
    }

    fn shutdown(&mut self) {
        let _ = self.0.shutdown();
    }
}

/// tlslab's OpenSSL client over TCP, one handshake per call, the
/// server's side left for the caller to read.
struct TcpClient(RemoteClient);

impl Handshaker for TcpClient {
    fn handshake(&mut self) -> Result<HandshakeSample> {
        let done = self.0.handshake()?;
        Ok(HandshakeSample {
            client: done.client,
            server: SideTime::default(),
            wall_ns: done.wall_ns,
            negotiated: done.negotiated,
            split_unsure: false,
        })
    }
}
