//! The handshake matrix against a server under test that is a program of
//! its own: [`ServerBackend`] is a backend whose server side is that
//! program (one started per scenario on first use, all of them running
//! while the interleaved sampler goes round after round, stopped when the
//! backend drops) and whose client is tlslab's OpenSSL over TCP. The
//! server's side of a sample is its workers' time on the CPU from before
//! the connect to after the server closed the connection.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use anyhow::Result;

use super::{RunningServer, ServerSetup, ServerUnderTest};
use crate::backend::openssl::remote::RemoteClient;
use crate::backend::openssl::OpensslBackend;
use crate::backend::{
    Backend, Capabilities, HandshakeSample, Handshaker, LibraryInfo, PrimitiveBackend, SideTime,
};
use crate::certs::Credentials;
use crate::scenario::{HandshakeScenario, Named};
use crate::workload::site::Site;

/// The handshake matrix against a server under test: its rows are the
/// server's (`nginx`), its client tlslab's OpenSSL.
pub struct ServerBackend {
    server: Arc<dyn ServerUnderTest>,
    client: OpensslBackend,
    /// The servers started so far, by scenario and certificate.
    running: Mutex<HashMap<String, Arc<dyn RunningServer>>>,
}

impl ServerBackend {
    pub fn new(server: Arc<dyn ServerUnderTest>) -> Self {
        Self {
            server,
            client: OpensslBackend::new(),
            running: Mutex::new(HashMap::new()),
        }
    }

    /// The server for `scenario`, started on first use.
    fn server_for(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
    ) -> Result<Arc<dyn RunningServer>> {
        let key = format!("{}/{}", scenario.label(), credentials.kind.id());
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(server) = running.get(&key) {
            return Ok(Arc::clone(server));
        }
        let server: Arc<dyn RunningServer> = Arc::from(self.server.start(&ServerSetup {
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
        self.server.kind().id()
    }

    fn library(&self) -> LibraryInfo {
        self.server.library()
    }

    fn capabilities(&self) -> &Capabilities {
        self.server.capabilities()
    }

    /// The server's reason, else the client's.
    fn unsupported_reason(&self, scenario: &HandshakeScenario) -> Option<String> {
        self.server
            .unsupported_reason(scenario)
            .or_else(|| self.client.unsupported_reason(scenario))
    }

    fn handshaker(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
    ) -> Result<Box<dyn Handshaker>> {
        let server = self.server_for(scenario, credentials)?;
        let mut client = RemoteClient::new(scenario, credentials, server.address())?;
        if scenario.resumption.is_on() {
            // The first, full handshake leaves the session the samples resume.
            client.handshake()?;
        }
        Ok(Box::new(ServerHandshaker { client, server }))
    }

    fn primitives(&self) -> Box<dyn PrimitiveBackend> {
        self.client.primitives()
    }
}

/// One scenario's handshakes with its running server.
struct ServerHandshaker {
    client: RemoteClient,
    server: Arc<dyn RunningServer>,
}

impl Handshaker for ServerHandshaker {
    /// The client's side as timed in its thread; the server's side as its
    /// workers' time on the CPU from before the connect to after the
    /// server closed the connection (its wall time inside calls is not
    /// known: both fields hold the CPU time).
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
