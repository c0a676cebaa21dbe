//! rustls as the embedded HTTPS server's TLS, over nonblocking sockets.
//! tlslab drives the socket itself (`read_tls`, `write_tls`) and times only
//! rustls's own calls (`process_new_packets`, plaintext in and out), so a
//! connection can tell how long the library worked apart from the kernel's
//! socket I/O; the crypto inside those calls is counted by the instrumented
//! provider.

use std::io::{self, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use rustls::server::{
    ClientHello, NoServerSessionStorage, ResolvesServerCert, ServerSessionMemoryCache,
};
use rustls::sign::CertifiedKey;
use rustls::{HandshakeKind, ServerConfig, ServerConnection, SupportedProtocolVersion};

use super::instrument;
use super::RustlsBackend;
use super::{all_kx_groups, base_provider, our_group, rustls_chain, suite_name, Provider};
use crate::backend::{Backend, ServerSession, TlsAcceptor, SERVER_ALPN};
use crate::certs::Credentials;
use crate::scenario::Side;
use crate::scenario::{HandshakeScenario, Named, Resumption, ServerOffer, TlsVersion};

/// The server configuration of one scenario.
pub struct RustlsAcceptor {
    config: Arc<ServerConfig>,
}

impl RustlsAcceptor {
    pub fn new(
        backend: &RustlsBackend,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
    ) -> Result<Self> {
        let shared = backend
            .server_config(scenario, credentials)
            .context("configuring the rustls server")?;
        // The scenario's configuration is shared with the handshake
        // measurements; the server's protocols go on a copy of its own.
        let mut config = ServerConfig::clone(&shared);
        config.alpn_protocols = server_alpn();
        Ok(Self {
            config: Arc::new(config),
        })
    }

    /// The server of an offer: every version, group, certificate and
    /// suite in it, in its order (the server's preference, not the
    /// client's); of the certificates (`chains`, in the offer's order) the
    /// first the client's signature algorithms allow.
    pub fn offering(
        backend: &RustlsBackend,
        offer: &ServerOffer,
        chains: &[Arc<Credentials>],
    ) -> Result<Self> {
        let mut provider = base_provider(backend.provider);
        provider.kx_groups = offer
            .groups
            .iter()
            .map(|group| {
                all_kx_groups(backend.provider)
                    .iter()
                    .copied()
                    .find(|g| our_group(g.name()) == Some(*group))
                    .ok_or_else(|| anyhow!("{} has no group {}", backend.id(), group.id()))
            })
            .collect::<Result<_>>()?;
        let mut suites = Vec::new();
        for scenario in offer.scenarios() {
            let wanted = scenario.suite_name();
            let suite = provider
                .cipher_suites
                .iter()
                .copied()
                .find(|s| suite_name(*s) == wanted)
                .ok_or_else(|| anyhow!("{} has no suite {wanted}", backend.id()))?;
            if !suites.contains(&suite) {
                suites.push(suite);
            }
        }
        provider.cipher_suites = suites;
        if backend.instrumented {
            provider = instrument::instrument(provider);
        }
        let provider = Arc::new(provider);
        let versions: Vec<&'static SupportedProtocolVersion> = offer
            .versions
            .iter()
            .map(|version| match version {
                TlsVersion::Tls12 => Ok(&rustls::version::TLS12),
                TlsVersion::Tls13 => Ok(&rustls::version::TLS13),
                _ => Err(anyhow!("rustls has no DTLS")),
            })
            .collect::<Result<_>>()?;
        let keys = chains
            .iter()
            .map(|credentials| {
                let (chain, key) = rustls_chain(&credentials.server);
                let key = provider
                    .key_provider
                    .load_private_key(key)
                    .with_context(|| format!("loading the {} key", credentials.kind.id()))?;
                Ok(Arc::new(CertifiedKey::new(chain, key)))
            })
            .collect::<Result<Vec<_>>>()?;
        if keys.is_empty() {
            bail!("the offer has no certificate");
        }
        let mut config = ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(&versions)?
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(FirstAllowed(keys)));
        config.ignore_client_order = true;
        config.alpn_protocols = server_alpn();
        match offer.resumption {
            Resumption::Off => {
                config.session_storage = Arc::new(NoServerSessionStorage {});
                config.send_tls13_tickets = 0;
            }
            Resumption::SessionId => {
                config.session_storage = ServerSessionMemoryCache::new(256);
            }
            Resumption::Ticket | Resumption::Psk | Resumption::ZeroRtt => {
                config.session_storage = Arc::new(NoServerSessionStorage {});
                config.ticketer = match backend.provider {
                    Provider::AwsLcRs => rustls::crypto::aws_lc_rs::Ticketer::new()?,
                    Provider::Ring => rustls::crypto::ring::Ticketer::new()?,
                };
                config.send_tls13_tickets = 1;
            }
        }
        Ok(Self {
            config: Arc::new(config),
        })
    }
}

/// The embedded server's protocols ([`SERVER_ALPN`]): rustls chooses the
/// first of them the client offers, and refuses a client that offers
/// ALPN without any of them (`no_application_protocol`).
fn server_alpn() -> Vec<Vec<u8>> {
    SERVER_ALPN.iter().map(|name| name.to_vec()).collect()
}

/// Of the offered certificates, the first whose key can sign with one of
/// the client's signature algorithms.
#[derive(Debug)]
struct FirstAllowed(Vec<Arc<CertifiedKey>>);

impl ResolvesServerCert for FirstAllowed {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let schemes = hello.signature_schemes();
        self.0
            .iter()
            .find(|key| key.key.choose_scheme(schemes).is_some())
            .cloned()
    }
}

impl TlsAcceptor for RustlsAcceptor {
    fn session(&self, tcp: TcpStream) -> Result<Box<dyn ServerSession>> {
        // Counted calls on this thread belong to the server.
        instrument::set_side(Side::Server);
        let start = Instant::now();
        let connection = ServerConnection::new(Arc::clone(&self.config))?;
        Ok(Box::new(RustlsSession {
            connection,
            tcp,
            library_ns: start.elapsed().as_nanos() as u64,
            failed: false,
        }))
    }

    fn warm_up(&self) {
        let mut bytes = [0u8; 32];
        let _ = self.config.crypto_provider().secure_random.fill(&mut bytes);
    }
}

/// One connection: rustls's state and the socket it drives.
struct RustlsSession {
    connection: ServerConnection,
    tcp: TcpStream,
    library_ns: u64,
    /// rustls reported a fatal error: its alert is the last thing sent.
    failed: bool,
}

impl RustlsSession {
    /// Runs `f` on the connection, its wall time charged to the library.
    fn timed<T>(&mut self, f: impl FnOnce(&mut ServerConnection) -> T) -> T {
        let start = Instant::now();
        let value = f(&mut self.connection);
        self.library_ns += start.elapsed().as_nanos() as u64;
        value
    }

    /// Reads what the socket holds into rustls and processes it; returns
    /// the bytes read (0: the client closed the connection). On a fatal
    /// error the alert rustls queued is sent (best effort) and the error
    /// returned.
    fn receive(&mut self) -> io::Result<usize> {
        let read = self.connection.read_tls(&mut self.tcp)?;
        if read == 0 {
            return Ok(0);
        }
        if let Err(error) = self.timed(|c| c.process_new_packets()) {
            self.failed = true;
            let _ = self.flush();
            return Err(io::Error::new(ErrorKind::InvalidData, error));
        }
        if !self.connection.is_handshaking() {
            // rustls holds a KeyUpdate reply back until the next record it
            // sends; an empty write releases it now.
            let _ = self.timed(|c| c.writer().write(&[]));
        }
        Ok(read)
    }
}

impl ServerSession for RustlsSession {
    fn handshake(&mut self) -> io::Result<bool> {
        loop {
            if !self.flush()? {
                return Ok(false);
            }
            if !self.connection.is_handshaking() {
                return Ok(true);
            }
            match self.receive() {
                Ok(0) => {
                    return Err(io::Error::new(
                        ErrorKind::UnexpectedEof,
                        "the client closed the connection during the handshake",
                    ))
                }
                Ok(_) => {}
                Err(error) if error.kind() == ErrorKind::WouldBlock => return Ok(false),
                Err(error) => return Err(error),
            }
        }
    }

    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.timed(|c| c.reader().read(buffer)) {
                Ok(read) => return Ok(read),
                Err(error) if error.kind() == ErrorKind::WouldBlock => {}
                // The socket closed without close_notify.
                Err(error) if error.kind() == ErrorKind::UnexpectedEof => return Ok(0),
                Err(error) => return Err(error),
            }
            let received = self.receive();
            // After every read: what rustls wants to send goes out now.
            let _ = self.flush();
            if received? == 0 {
                return Ok(0);
            }
        }
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let mut accepted = self.timed(|c| c.writer().write(bytes))?;
        if accepted == 0 && !bytes.is_empty() {
            // rustls's outgoing buffer is full: send it, then try again.
            if !self.flush()? {
                return Err(ErrorKind::WouldBlock.into());
            }
            accepted = self.timed(|c| c.writer().write(bytes))?;
        }
        let _ = self.flush()?;
        if accepted == 0 && !bytes.is_empty() {
            return Err(ErrorKind::WouldBlock.into());
        }
        Ok(accepted)
    }

    fn flush(&mut self) -> io::Result<bool> {
        while self.connection.wants_write() {
            match self.connection.write_tls(&mut self.tcp) {
                Ok(_) => {}
                Err(error) if error.kind() == ErrorKind::WouldBlock => return Ok(false),
                Err(error) => return Err(error),
            }
        }
        Ok(true)
    }

    fn close_notify(&mut self) {
        if !self.failed {
            self.timed(|c| c.send_close_notify());
        }
    }

    fn resumed(&self) -> bool {
        self.connection.handshake_kind() == Some(HandshakeKind::Resumed)
    }

    fn tcp(&self) -> &TcpStream {
        &self.tcp
    }

    fn alpn_protocol(&self) -> Option<&[u8]> {
        self.connection.alpn_protocol()
    }

    fn library_ns(&self) -> Option<u64> {
        Some(self.library_ns)
    }
}
