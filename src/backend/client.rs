//! The measuring client as a role a backend may play: the client that
//! `load` drives against a server and that `handshake --server` times
//! against a server under test. A backend that can be that client says so
//! through [`Backend::measuring_client`]; [`measuring_client`] opens the
//! role by backend id, [`DEFAULT_CLIENT`] unless told otherwise, so a later
//! library build can be the client without the load or handshake code
//! naming it. The role's connections are nonblocking-friendly: every call
//! that must wait for the socket says so ([`std::io::ErrorKind::WouldBlock`],
//! or `Ok(false)` for the handshake) and is called again when it is ready.

use std::any::Any;
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{anyhow, Result};

use super::probe::{Attempt, ProbeTarget};
use super::{BackendId, Capabilities, Handshaker, LibraryInfo};
use crate::certs::Credentials;
use crate::scenario::{HandshakeScenario, Named};

/// The backend whose client measures unless another is named: its rows
/// name it as the client they used.
pub const DEFAULT_CLIENT: BackendId = BackendId::Openssl;

/// Whose certificates a client trusts.
#[derive(Debug, Clone, Copy)]
pub enum Trust<'a> {
    /// tlslab's test root: tlslab's servers and the nginx it starts.
    TestRoot,
    /// Someone else's server: the system's roots and the test root.
    SystemAndTestRoot,
    /// Only the certificates of this PEM file.
    File(&'a std::path::Path),
}

/// A backend's client, measuring a server in another thread or process.
pub trait MeasuringClient: Send + Sync {
    /// The backend this client is.
    fn id(&self) -> BackendId;

    /// What rows name as their client: the library, marked as the client
    /// ("OpenSSL (client)"), and its version.
    fn library(&self) -> LibraryInfo;

    /// What the client can offer: the matrix against a server under test
    /// is the server's table less what the client lacks.
    fn capabilities(&self) -> &Capabilities;

    /// The client's configuration for `scenario`'s connections (its
    /// version, group, suite, client certificate for mutual rows),
    /// trusting `trust`'s certificates.
    fn context(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
        trust: Trust<'_>,
    ) -> Result<Arc<dyn ClientContext>>;

    /// Handshakes of `scenario` with a server at `address` over TCP, each
    /// a new connection verified against the test chain (resuming the
    /// last one's session in resumed rows), with the client's time alone:
    /// the sample's server side is zero, for the caller to read the
    /// server's.
    fn handshaker(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
        address: SocketAddr,
    ) -> Result<Box<dyn Handshaker>>;

    /// What the server at `target` accepts: each version, then each group
    /// and suite the client knows, one short handshake per try; stops
    /// early (with the tries made) when `interrupt` is set.
    fn probe(&self, target: &ProbeTarget, interrupt: &AtomicBool) -> Result<Vec<Attempt>>;
}

/// One scenario's client configuration, shared by all its connections.
pub trait ClientContext: Send + Sync {
    /// A client connection over `tcp` (connected or its connect under
    /// way), its handshake not begun.
    fn connection(&self, tcp: TcpStream, offer: &Offer<'_>) -> Result<Box<dyn ClientConnection>>;
}

/// What a new connection offers and checks.
pub struct Offer<'a> {
    /// Sent as SNI (a host name) and checked against the server's
    /// certificate (a host name or an IP address).
    pub server_name: &'a str,
    /// A session from an earlier connection of the same context, offered
    /// for resumption.
    pub session: Option<&'a TlsSession>,
    /// The ALPN list in its wire form (`b"\x08http/1.1"`).
    pub alpn: &'a [u8],
    /// Read all the socket holds at once, not one record at a time, where
    /// the library can (one read per answer in an event loop).
    pub read_ahead: bool,
}

/// A session a connection left, to offer on a later connection of the
/// same context; only the library that made it can read it.
pub struct TlsSession(Box<dyn Any + Send + Sync>);

impl TlsSession {
    pub fn new<T: Any + Send + Sync>(session: T) -> Self {
        Self(Box::new(session))
    }

    /// The library's own session, if it is a `T`.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.0.downcast_ref()
    }
}

/// The client's side of one TLS connection over TCP, blocking or not.
pub trait ClientConnection: Send {
    /// The TCP connection, to watch it and to see whether its connect is done.
    fn tcp(&self) -> &TcpStream;

    /// Moves the handshake on: Ok(true) once it is complete, Ok(false)
    /// while it waits for the socket, or why it failed in words (a
    /// certificate the client could not verify says so, and the likely
    /// cause).
    fn handshake(&mut self) -> std::result::Result<bool, String>;

    /// Reads plaintext: Ok(0) once the server has closed the connection
    /// cleanly (close_notify), [`io::ErrorKind::WouldBlock`] while it waits
    /// for the socket, [`io::ErrorKind::UnexpectedEof`] when the
    /// connection ended without close_notify.
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize>;

    /// Hands plaintext to the library: how many bytes it took, or
    /// [`io::ErrorKind::WouldBlock`]; a call after that must pass the same
    /// bytes.
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize>;

    /// True if and only if the handshake resumed a session.
    fn resumed(&self) -> bool;

    /// The protocol ALPN chose, once the handshake is complete.
    fn alpn_protocol(&self) -> Option<&[u8]>;

    /// The session to offer on a later connection (read after the answer:
    /// a TLS 1.3 ticket arrives after the handshake).
    fn session(&self) -> Option<TlsSession>;

    /// Sends close_notify, best effort.
    fn shutdown(&mut self);
}

/// The measuring client of backend `id`, or why it cannot be one: the
/// backends that can are named.
pub fn measuring_client(id: BackendId) -> Result<Arc<dyn MeasuringClient>> {
    if let Some(client) = id.open().measuring_client() {
        return Ok(client);
    }
    let clients: Vec<&str> = super::listed()
        .filter(|d| (d.open)().measuring_client().is_some())
        .map(|d| d.name())
        .collect();
    Err(anyhow!(
        "{} cannot be the measuring client (the client of load and handshake --server): {} can",
        id.id(),
        clients.join(", ")
    ))
}

/// The measuring client a command asked for (`--client-backend`), else
/// [`DEFAULT_CLIENT`]'s.
pub fn chosen_client(id: Option<BackendId>) -> Result<Arc<dyn MeasuringClient>> {
    measuring_client(id.unwrap_or(DEFAULT_CLIENT))
}

/// The measuring client of [`DEFAULT_CLIENT`].
pub fn default_client() -> Arc<dyn MeasuringClient> {
    measuring_client(DEFAULT_CLIENT).expect("the default client is a measuring client")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_client_is_a_measuring_client_and_names_itself() {
        let client = default_client();
        assert_eq!(client.id(), DEFAULT_CLIENT);
        let library = client.library();
        assert_eq!(
            library.subject,
            crate::scenario::Subject::library(DEFAULT_CLIENT)
        );
        assert!(
            library.library.ends_with(" (client)"),
            "{}",
            library.library
        );
    }

    #[test]
    fn a_backend_that_cannot_be_the_client_is_refused_naming_those_that_can() {
        let error = measuring_client(BackendId::RustlsRing)
            .err()
            .expect("refused");
        let message = format!("{error:#}");
        assert!(
            message.starts_with("rustls-ring cannot be the measuring client"),
            "{message}"
        );
        assert!(
            message.ends_with(&format!("{} can", DEFAULT_CLIENT.id())),
            "{message}"
        );
    }
}
