//! The handshake matrix against a server under test that is a program of
//! its own: [`ServerBackend`] is a backend whose server side is that
//! program (one started per scenario on first use, all of them running
//! while the interleaved sampler goes round after round, stopped when the
//! backend drops) and whose client is tlslab's: the measuring client
//! ([`crate::backend::client`], OpenSSL by default) over TCP for TLS rows, for QUIC rows the QUIC client of the backend chosen (quinn on
//! rustls) over UDP, offering the server's own ALPN protocol (`h3`), which
//! every handshake must then agree on. The server's side of a sample is its
//! workers' time on the CPU from before the connect to after the server
//! closed the connection (TLS) or confirmed the handshake (QUIC). A server
//! that cannot be opened here (not installed, its version unreadable) is
//! still a [`ServerBackend`]: its rows say why instead of stopping the run,
//! so a list of servers measures the others.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, Result};

use super::{RunningServer, ServerDescriptor, ServerOptions, ServerSetup, ServerUnderTest};
use crate::backend::client::MeasuringClient;
use crate::backend::{
    Backend, Capabilities, HandshakeSample, Handshaker, LibraryInfo, PrimitiveBackend, SideTime,
};
use crate::certs::Credentials;
use crate::scenario::{HandshakeScenario, Named, TlsVersion};
use crate::workload::site::Site;

/// The handshake matrix against a server under test: its rows are the
/// server's (`nginx`), its TLS rows' client tlslab's measuring client.
pub struct ServerBackend {
    descriptor: &'static ServerDescriptor,
    /// The server opened, or why it could not be.
    server: Result<Arc<dyn ServerUnderTest>, Unopened>,
    /// The client of TLS rows.
    client: Arc<dyn MeasuringClient>,
    /// The backend whose QUIC client handshakes with the server's QUIC.
    quic_client: Arc<dyn Backend>,
    /// The servers started so far, by scenario and certificate.
    running: Mutex<HashMap<String, Arc<dyn RunningServer>>>,
}

/// Why a server could not be opened, and whether that is because its
/// program is missing here.
struct Unopened {
    /// The error's text: for a missing program, how to install it.
    reason: String,
    /// True if and only if the program is not installed: its rows are
    /// unsupported here, as a backend's rows it cannot do. Otherwise
    /// (installed, but it would not say its version) they fail.
    missing: bool,
}

impl ServerBackend {
    /// The program `descriptor` registers, opened (finding it and reading
    /// its versions); one that cannot be opened gives rows saying why. Its
    /// TLS rows' client is `client`, its QUIC rows' `quic_client`'s.
    pub fn open(
        descriptor: &'static ServerDescriptor,
        client: Arc<dyn MeasuringClient>,
        quic_client: Arc<dyn Backend>,
    ) -> Self {
        let server = (descriptor.open)(&ServerOptions::default()).map_err(|error| Unopened {
            reason: format!("{error:#}"),
            missing: (descriptor.missing)().is_some(),
        });
        Self {
            descriptor,
            server,
            client,
            quic_client,
            running: Mutex::new(HashMap::new()),
        }
    }

    /// The server opened, else why not (as an error).
    fn opened(&self) -> Result<&Arc<dyn ServerUnderTest>> {
        self.server
            .as_ref()
            .map_err(|unopened| anyhow!("{}", unopened.reason))
    }

    /// The server for `scenario`, started on first use.
    fn server_for(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
    ) -> Result<Arc<dyn RunningServer>> {
        let opened = self.opened()?;
        let key = format!("{}/{}", scenario.label(), credentials.kind.id());
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(server) = running.get(&key) {
            return Ok(Arc::clone(server));
        }
        let server: Arc<dyn RunningServer> = Arc::from(opened.start(&ServerSetup {
            scenario,
            credentials,
            site: &Site::default(),
        })?);
        running.insert(key, Arc::clone(&server));
        Ok(server)
    }
}

impl Backend for ServerBackend {
    fn id(&self) -> &'static str {
        self.descriptor.id.id()
    }

    fn subject(&self) -> crate::scenario::Subject {
        crate::scenario::Subject::Server(self.descriptor.id)
    }

    /// The server's, or for one that could not be opened its name and
    /// why not, so that the run's provenance says it did not run; for a
    /// server of QUIC, with its QUIC client's library.
    fn library(&self) -> LibraryInfo {
        match &self.server {
            Ok(server) if server.quic_alpn().is_some() => {
                let mut library = server.library();
                let quic = self.quic_client.library();
                library.version = format!(
                    "{}; QUIC client {} {} {}",
                    library.version, quic.subject, quic.library, quic.version
                );
                library
            }
            Ok(server) => server.library(),
            Err(unopened) => LibraryInfo {
                subject: self.subject(),
                library: self.descriptor.id.id().to_string(),
                version: if unopened.missing {
                    "(not installed)".to_string()
                } else {
                    "(could not be opened)".to_string()
                },
            },
        }
    }

    /// The server's; for one not opened, its client's (no row reaches it).
    fn capabilities(&self) -> &Capabilities {
        match &self.server {
            Ok(server) => server.capabilities(),
            Err(_) => self.client.capabilities(),
        }
    }

    /// The server's reason, else the client's; every row of a server that
    /// is not installed gives why (and how to install it).
    fn unsupported_reason(&self, scenario: &HandshakeScenario) -> Option<String> {
        match &self.server {
            Ok(_) if scenario.resumption.sends_early_data() => Some(format!(
                "0-RTT against {} is not built: tlslab's clients send a server under test no early data",
                self.id()
            )),
            Ok(server) => server.unsupported_reason(scenario).or_else(|| {
                if scenario.version == TlsVersion::Quic {
                    self.quic_client.unsupported_reason(scenario)
                } else {
                    self.client
                        .capabilities()
                        .unsupported_reason(self.client.id().id(), scenario)
                }
            }),
            Err(unopened) if unopened.missing => Some(unopened.reason.clone()),
            Err(_) => None,
        }
    }

    fn handshaker(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
    ) -> Result<Box<dyn Handshaker>> {
        let server = self.server_for(scenario, credentials)?;
        let mut client: Box<dyn Handshaker> = match self.alpn(scenario) {
            Some(alpn) if scenario.version == TlsVersion::Quic => {
                self.quic_client
                    .quic_client(scenario, credentials, server.address(), alpn)?
            }
            _ => self
                .client
                .handshaker(scenario, credentials, server.address())?,
        };
        if scenario.resumption.is_on() {
            // The first, full handshake leaves the session the samples resume.
            client.handshake()?;
        }
        Ok(Box::new(ServerHandshaker { client, server }))
    }

    /// For QUIC rows the server's own protocol (`h3`), where it serves
    /// QUIC; tlslab's rules otherwise.
    fn alpn(&self, scenario: &HandshakeScenario) -> Option<&'static str> {
        match &self.server {
            Ok(server) if scenario.version == TlsVersion::Quic => server.quic_alpn(),
            _ => scenario.version.required_alpn(),
        }
    }

    fn primitives(&self) -> Box<dyn PrimitiveBackend> {
        self.client.id().open().primitives()
    }
}

/// One scenario's handshakes with its running server.
struct ServerHandshaker {
    /// The client, whose samples have no server side.
    client: Box<dyn Handshaker>,
    server: Arc<dyn RunningServer>,
}

impl Handshaker for ServerHandshaker {
    /// The client's side as timed in its thread; the server's side as its
    /// workers' time on the CPU from before the connect to after the
    /// server closed the connection or confirmed the QUIC handshake (its
    /// wall time inside calls is not known: both fields hold the CPU time).
    fn handshake(&mut self) -> Result<HandshakeSample> {
        let before = self.server.worker_cpu_ns()?;
        let done = self.client.handshake()?;
        let server_ns = self.server.worker_cpu_ns()?.saturating_sub(before);
        Ok(HandshakeSample {
            client: done.client,
            server: SideTime {
                wall_ns: server_ns,
                cpu_ns: server_ns,
            },
            wall_ns: done.wall_ns,
            negotiated: done.negotiated,
            split_unsure: false,
        })
    }
}
