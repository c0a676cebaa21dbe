//! TLS libraries behind one small trait. Each backend declares what it
//! supports as data ([`Capabilities`]) and builds a [`Handshaker`] for a
//! scenario; the handshaker drives client and server over memory buffers and
//! times each side.

pub mod mock;
pub mod openssl;
mod pipe;
pub mod rustls;

use std::sync::Arc;

use anyhow::Result;
use serde::Serialize;

use crate::certs::Credentials;
use crate::scenario::{Aead, CertKind, Group, HandshakeScenario, Named, Resumption, TlsVersion};

/// The name and version of the library a backend drives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LibraryInfo {
    pub backend: String,
    pub library: String,
    pub version: String,
}

/// What a backend can do, as data: the matrix is filtered by these lists.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Capabilities {
    pub versions: Vec<TlsVersion>,
    /// Key exchanges usable with TLS 1.2 (including RSA key transport).
    pub groups_tls12: Vec<Group>,
    /// Key exchange groups usable with TLS 1.3.
    pub groups_tls13: Vec<Group>,
    pub certs: Vec<CertKind>,
    pub aeads: Vec<Aead>,
    pub resumptions: Vec<Resumption>,
    pub mutual: bool,
    /// True if and only if the backend reports the server's signature scheme,
    /// so it can be checked.
    pub reports_signature_scheme: bool,
}

impl Capabilities {
    /// Why this backend cannot run a scenario, or `None` if it can.
    pub fn unsupported_reason(
        &self,
        backend: &str,
        scenario: &HandshakeScenario,
    ) -> Option<String> {
        let version = scenario.version;
        if !self.versions.contains(&version) {
            return Some(format!("{backend} does not support TLS {}", version.id()));
        }
        let groups = match version {
            TlsVersion::Tls12 => &self.groups_tls12,
            TlsVersion::Tls13 => &self.groups_tls13,
        };
        if !groups.contains(&scenario.group) {
            return Some(format!(
                "{backend} has no {} key exchange in TLS {}",
                scenario.group.id(),
                version.id()
            ));
        }
        if !self.certs.contains(&scenario.cert) {
            return Some(format!(
                "{backend} cannot use {} certificates",
                scenario.cert.id()
            ));
        }
        if !self.aeads.contains(&scenario.aead) {
            return Some(format!("{backend} has no {} suite", scenario.aead.id()));
        }
        if !self.resumptions.contains(&scenario.resumption) {
            return Some(format!(
                "{backend} does not support {} resumption",
                scenario.resumption.id()
            ));
        }
        if scenario.mutual && !self.mutual {
            return Some(format!("{backend} does not support mutual TLS"));
        }
        None
    }
}

/// What one handshake negotiated, as reported by the client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Negotiated {
    /// "TLSv1.2" or "TLSv1.3".
    pub version: String,
    /// The IANA name of the suite.
    pub suite: String,
    /// The key exchange group id (see [`Group`]), `rsa` for key transport, or
    /// `None` if the handshake had no key exchange (TLS 1.2 resumption).
    pub group: Option<String>,
    /// The server's signature scheme (RFC 8446 name), `None` if the server did not sign.
    pub signature: Option<String>,
    pub resumed: bool,
}

/// The time each side of one handshake spent and what it negotiated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandshakeSample {
    /// Time inside the client library's calls (client and server run on one
    /// thread, so this is the client's CPU time).
    pub client_ns: u64,
    /// Time inside the server library's calls.
    pub server_ns: u64,
    /// Time from creating the client connection to both sides being done.
    pub wall_ns: u64,
    pub negotiated: Negotiated,
}

/// Drives complete handshakes for one scenario, client and server in this thread.
pub trait Handshaker {
    /// Runs one handshake and returns its times and negotiated parameters.
    fn handshake(&mut self) -> Result<HandshakeSample>;
}

/// A TLS library that can run handshake scenarios.
pub trait Backend: Send + Sync {
    /// The stable id used on the command line and in the database ("openssl").
    fn id(&self) -> &'static str;

    fn library(&self) -> LibraryInfo;

    fn capabilities(&self) -> &Capabilities;

    /// Builds a handshaker for a scenario this backend supports. For resumed
    /// scenarios it has already done the first, full handshake.
    fn handshaker(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
    ) -> Result<Box<dyn Handshaker>>;

    /// Why this backend cannot run a scenario, or `None` if it can.
    fn unsupported_reason(&self, scenario: &HandshakeScenario) -> Option<String> {
        self.capabilities().unsupported_reason(self.id(), scenario)
    }
}

/// The ids of the real backends, in the order they are listed.
pub const BACKEND_IDS: &[&str] = &["openssl", "rustls-aws-lc", "rustls-ring"];

/// The backend with this id. `mock` is accepted for testing the pipeline but
/// is never listed.
pub fn backend_by_id(id: &str) -> Result<Arc<dyn Backend>, crate::scenario::UnknownName> {
    match id.trim().to_ascii_lowercase().as_str() {
        "openssl" => Ok(Arc::new(openssl::OpensslBackend::new())),
        "rustls-aws-lc" | "rustls-aws-lc-rs" | "aws-lc-rs" => {
            Ok(Arc::new(rustls::RustlsBackend::aws_lc_rs()))
        }
        "rustls-ring" | "ring" => Ok(Arc::new(rustls::RustlsBackend::ring())),
        "mock" => Ok(Arc::new(mock::MockBackend::default())),
        _ => Err(crate::scenario::UnknownName {
            kind: "backend",
            given: id.trim().to_string(),
            valid: BACKEND_IDS.to_vec(),
        }),
    }
}

/// Parses a comma-separated backend list; `all` means every real backend.
pub fn backends_from_list(
    list: &str,
) -> Result<Vec<Arc<dyn Backend>>, crate::scenario::UnknownName> {
    let mut ids: Vec<&str> = Vec::new();
    for id in list.split(',').map(str::trim).filter(|id| !id.is_empty()) {
        if id.eq_ignore_ascii_case("all") {
            ids.extend(BACKEND_IDS);
        } else {
            ids.push(id);
        }
    }
    let mut backends: Vec<Arc<dyn Backend>> = Vec::new();
    for id in ids {
        let backend = backend_by_id(id)?;
        if !backends.iter().any(|b| b.id() == backend.id()) {
            backends.push(backend);
        }
    }
    Ok(backends)
}

/// Maps a library's group name to our id, keeping unknown names as they are.
pub(crate) fn canonical_group(name: &str) -> String {
    crate::scenario::parse_name::<Group>(name)
        .map(|group| group.id().to_string())
        .unwrap_or_else(|_| name.to_string())
}

/// The time an expression takes, added to `total_ns`.
macro_rules! timed {
    ($total_ns:expr, $body:expr) => {{
        let start = std::time::Instant::now();
        let value = $body;
        $total_ns += start.elapsed().as_nanos() as u64;
        value
    }};
}
pub(crate) use timed;
