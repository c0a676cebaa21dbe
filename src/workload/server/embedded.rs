//! tlslab's embedded HTTPS server ([`crate::workload::serve`]) as a server
//! under test: on one of tlslab's backends, in tlslab's process on worker
//! threads of its own, on a free loopback port. Its threads' CPU is read
//! from the kernel per thread; when stopped it returns what it counted
//! (requests, handshakes, its threads' CPU and, on rustls, the crypto per
//! category).

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result};

use super::{
    RunningServer, ServerDescriptor, ServerDetails, ServerOptions, ServerSetup, ServerUnderTest,
    Workers,
};
use crate::backend::{Backend, BackendId, Capabilities, LibraryInfo};
use crate::scenario::{HandshakeScenario, ServerKind};
use crate::workload::process::process_cpu_ns;
use crate::workload::serve::{Server, ServerStats};

/// The embedded server in the registry of servers under test.
pub static DESCRIPTOR: ServerDescriptor = ServerDescriptor {
    id: ServerKind::Embedded,
    library: "tlslab",
    listed: true,
    programs: &[],
    scratch: None,
    install: "",
    uncountable: None,
    details: ServerDetails {
        in_process: true,
        counted_on: None,
        missing: || None,
        open: EmbeddedServer::open,
    },
};

/// The embedded server on one backend, with its number of workers.
pub struct EmbeddedServer {
    id: BackendId,
    backend: Arc<dyn Backend>,
    threads: usize,
}

impl EmbeddedServer {
    /// The server on `options`' backend; fails without one.
    fn open(options: &ServerOptions) -> Result<Arc<dyn ServerUnderTest>> {
        let id = options
            .backend
            .context("the embedded server runs on one of tlslab's backends: none was given")?;
        Ok(Arc::new(Self {
            id,
            backend: id.open(),
            threads: options.threads.max(1),
        }))
    }
}

impl ServerUnderTest for EmbeddedServer {
    fn kind(&self) -> ServerKind {
        ServerKind::Embedded
    }

    fn library(&self) -> LibraryInfo {
        self.backend.library()
    }

    fn capabilities(&self) -> &Capabilities {
        self.backend.capabilities()
    }

    /// The embedded server speaks HTTP/1.1 and HTTP/2 over TLS on TCP;
    /// within that, what its backend lacks.
    fn unsupported_reason(&self, scenario: &HandshakeScenario) -> Option<String> {
        if scenario.version.is_datagram() {
            return Some(format!(
                "the embedded server serves TLS over TCP, not {}",
                scenario.version.display()
            ));
        }
        self.backend.unsupported_reason(scenario)
    }

    fn backend(&self) -> Option<BackendId> {
        Some(self.id)
    }

    /// The categories read OpenSSL's symbol names: tlslab's own OpenSSL
    /// keeps them; rustls is Rust, whose state machine would read as
    /// tlslab's own code.
    fn symbol_categories(&self) -> Result<(), String> {
        if self.id.descriptor().counts_crypto_apart {
            return Err(format!(
                "the categories read OpenSSL's symbol names; {} counts its crypto per category itself (above)",
                self.backend.id()
            ));
        }
        Ok(())
    }

    /// The embedded server answers every `/page_SIZE` and resumes as the
    /// scenario says: the site needs no setting up.
    fn start(&self, setup: &ServerSetup<'_>) -> Result<Box<dyn RunningServer>> {
        let acceptor = self.backend.acceptor(setup.scenario, setup.credentials)?;
        let server = Server::start(
            acceptor,
            SocketAddr::from(([127, 0, 0, 1], 0)),
            self.threads,
            self.id.descriptor().counts_crypto_apart,
        )?;
        Ok(Box::new(RunningEmbedded {
            server,
            description: format!(
                "tlslab's embedded server on {} ({} workers)",
                self.backend.id(),
                self.threads
            ),
        }))
    }
}

/// The embedded server serving; its workers stop when it drops.
struct RunningEmbedded {
    server: Server,
    description: String,
}

impl RunningServer for RunningEmbedded {
    fn address(&self) -> SocketAddr {
        self.server.address()
    }

    fn description(&self) -> String {
        self.description.clone()
    }

    fn workers(&self) -> Workers {
        Workers::Threads(self.server.thread_ids().to_vec())
    }

    fn worker_cpu_ns(&self) -> Result<u64> {
        self.server
            .thread_ids()
            .iter()
            .map(|&tid| process_cpu_ns(tid))
            .sum()
    }

    fn take_stats(&mut self) -> Result<Option<ServerStats>> {
        self.server
            .take_stats()
            .context("taking the embedded server's figures")
            .map(Some)
    }

    fn stop(self: Box<Self>) -> Result<Option<ServerStats>> {
        self.server
            .stop()
            .context("stopping the embedded server")
            .map(Some)
    }
}
