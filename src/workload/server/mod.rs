//! Servers under test: a server that tlslab starts on loopback for one
//! scenario (its own directory, a generated configuration, the test chain),
//! measures, and stops whatever happens. Each kind of server is one
//! implementation of [`ServerUnderTest`] (what it is, what it cannot
//! serve and why, how to start it) whose [`RunningServer`] handle gives
//! its address, its workers and their CPU, and stops it (on drop too);
//! [`SERVERS`] registers each kind once, with what is known of it before
//! anything runs ([`ServerDescriptor`]). `handshake --server` measures a
//! program through [`ServerBackend`], `load --server` loads either; neither
//! names a kind.
//!
//! A new server is a module here implementing the two traits with its
//! static descriptor, its line in [`SERVERS`] (and `pub mod` here), and
//! its name in `scenario::ServerKind`; help text, `tlslab list` and the
//! integration tests that run per server pick it up from the registry.

pub mod apache;
pub mod caddy;
pub mod embedded;
mod handshakes;
pub mod haproxy;
pub mod nginx;
pub mod program;

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Result;

use crate::backend::{BackendId, Capabilities, LibraryInfo};
use crate::certs::Credentials;
use crate::registry::Descriptor;
use crate::scenario::{HandshakeScenario, ServerKind};
use crate::workload::serve::ServerStats;
use crate::workload::site::Site;

pub use handshakes::ServerBackend;

/// Every server under test, each registered once: the one place that maps
/// a [`ServerKind`] to its implementation.
pub static SERVERS: &[&ServerDescriptor] = &[
    &nginx::DESCRIPTOR,
    &apache::DESCRIPTOR,
    &haproxy::DESCRIPTOR,
    &caddy::DESCRIPTOR,
    &embedded::DESCRIPTOR,
];

/// The registered server of `kind`.
pub fn descriptor(kind: ServerKind) -> &'static ServerDescriptor {
    SERVERS
        .iter()
        .copied()
        .find(|descriptor| descriptor.id == kind)
        .expect("every server kind is registered in SERVERS")
}

/// What tlslab knows of a kind of server before it runs anything: enough
/// to check a command line (does it take a backend, can its handshakes be
/// counted) whether or not the server is installed here; the registry's
/// one shape ([`crate::registry::Descriptor`]) with a server's details.
pub type ServerDescriptor = Descriptor<ServerKind, ServerDetails>;

/// What only a server's descriptor holds.
pub struct ServerDetails {
    /// True if and only if the server runs in tlslab's process on one of
    /// tlslab's backends (the embedded server): `handshake` then measures
    /// the backends themselves, both sides in process, and `--backend` and
    /// `--threads` configure it. False for a program of its own on its own
    /// TLS library, which tlslab's OpenSSL handshakes with over TCP.
    pub in_process: bool,
    /// The backend whose server handshake stands for a program's in a
    /// counted load (`load --measure time,instructions` counts a server
    /// handshake in tlslab's process): the library the program runs on, or
    /// `None` for the embedded server (which counts its own backend) and
    /// for a program on a library tlslab does not run (Caddy's Go).
    pub counted_on: Option<BackendId>,
    /// Why the server cannot run here (its program is missing), or `None`;
    /// the descriptor's `install` says how to install it.
    pub missing: fn() -> Option<String>,
    /// Opens it: finds the program and reads its versions (failing with
    /// how to install it), or sets tlslab's own server up on `options`.
    pub open: fn(&ServerOptions) -> Result<Arc<dyn ServerUnderTest>>,
}

/// How tlslab configures a server of its own; a program, whose
/// configuration is generated from the scenario, ignores them.
#[derive(Debug, Clone, Copy, Default)]
pub struct ServerOptions {
    /// The backend whose TLS an in-process server runs.
    pub backend: Option<BackendId>,
    /// An in-process server's worker threads (0: one).
    pub threads: usize,
}

/// What a server is started for: one scenario, on the test chain, serving
/// a site.
#[derive(Clone, Copy)]
pub struct ServerSetup<'a> {
    pub scenario: &'a HandshakeScenario,
    pub credentials: &'a Credentials,
    pub site: &'a Site,
}

/// A kind of server, opened: its provenance, what it can and cannot
/// serve, and how to start it for one scenario.
pub trait ServerUnderTest: Send + Sync {
    /// Which server this is.
    fn kind(&self) -> ServerKind;

    /// The server, its TLS library and their versions, as a run records
    /// them (for a program, with the version of tlslab's client beside it).
    fn library(&self) -> LibraryInfo;

    /// What it can serve, in a backend's tables (the matrix is filtered by
    /// them).
    fn capabilities(&self) -> &Capabilities;

    /// Why it cannot serve `scenario` (a protocol, group or certificate
    /// its TLS library lacks, a resumption mode or mutual TLS it cannot
    /// configure), or `None`: the reason a row gives.
    fn unsupported_reason(&self, scenario: &HandshakeScenario) -> Option<String>;

    /// The ALPN protocol under which it serves QUIC (HTTP/3's `h3`): a
    /// QUIC client must offer it and the handshake must agree on it.
    /// `None` for a server that serves no QUIC to a client of tlslab's
    /// other than its own.
    fn quic_alpn(&self) -> Option<&'static str> {
        None
    }

    /// The tlslab backend whose TLS it runs (an in-process server), or
    /// `None` for a program on its own library.
    fn backend(&self) -> Option<BackendId> {
        None
    }

    /// `Ok` if perf's symbols inside its TLS library can be put in
    /// categories (public key, hashing, ...), else why not.
    fn symbol_categories(&self) -> Result<(), String>;

    /// Starts it for `setup` on a free loopback port, in a directory of
    /// its own, and returns once it accepts connections.
    fn start(&self, setup: &ServerSetup<'_>) -> Result<Box<dyn RunningServer>>;
}

/// What does a running server's work: what perf samples.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Workers {
    /// Worker processes (of a program).
    Processes(Vec<u32>),
    /// Threads of tlslab's process, by kernel thread id.
    Threads(Vec<u32>),
}

/// A server started for a scenario, serving until it is stopped or
/// dropped (on errors and Ctrl-C alike: nothing is left running).
pub trait RunningServer: Send + Sync {
    /// Where it listens.
    fn address(&self) -> SocketAddr;

    /// What it is, in words ("nginx 1.22.1 on OpenSSL 3.0.19, ...").
    fn description(&self) -> String;

    /// Its workers, for a profiler.
    fn workers(&self) -> Workers;

    /// Its workers' time on the CPU so far, in nanoseconds (the kernel's
    /// share of their TCP work included).
    fn worker_cpu_ns(&self) -> Result<u64>;

    /// What it counted since it started or since the last call, without
    /// stopping it, for a server that counts (the embedded server), else
    /// `None`: a load of several HTTP versions takes each one's figures.
    fn take_stats(&mut self) -> Result<Option<ServerStats>> {
        Ok(None)
    }

    /// Stops it; what it counted while it served (since the last
    /// [`RunningServer::take_stats`]), for a server that counts (the
    /// embedded server), else `None`.
    fn stop(self: Box<Self>) -> Result<Option<ServerStats>>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Named;

    #[test]
    fn every_server_kind_is_registered_once() {
        for kind in ServerKind::ALL {
            let found = SERVERS.iter().filter(|d| d.id == *kind).count();
            assert_eq!(found, 1, "{}", kind.id());
        }
        assert_eq!(SERVERS.len(), ServerKind::ALL.len());
    }
}
