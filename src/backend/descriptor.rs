//! What tlslab knows about one TLS library, as one static value per
//! library (in the manner of rustls' `crypto::ring::DEFAULT_PROVIDER`), in
//! the shape every registry shares ([`crate::registry::Descriptor`]):
//! its id, the library's name, what it supports, whether its CPU features
//! can be turned off, how a profiler recognises its code, whether its
//! crypto is counted apart, and how to open it; and [`Capabilities`], what
//! it supports as data. Each library's folder
//! holds its descriptor; the registry in the parent module lists them, so
//! the rest of the crate asks a descriptor instead of matching on ids.

use std::sync::Arc;

use serde::Serialize;

use super::{Backend, BackendId};
use crate::registry::Descriptor;
use crate::scenario::{
    Aead, CertKind, Group, HandshakeScenario, Named, Resumption, TlsVersion, Transport,
};

/// Everything the crate needs to know about one TLS library before (or
/// without) opening it: the registry's one shape ([`Descriptor`]) with a
/// library's details.
pub type BackendDescriptor = Descriptor<BackendId, BackendDetails>;

/// What only a library's descriptor holds.
pub struct BackendDetails {
    /// What it supports: declared as data, or probed once from the library
    /// (OpenSSL's groups and key types depend on its build).
    pub capabilities: fn() -> &'static Capabilities,
    /// Whether `--cpu-features generic` can turn its CPU features off.
    pub cpu_masking: CpuMasking,
    /// How a profile recognises its code (see [`SymbolPrefixes`]).
    pub symbols: SymbolPrefixes,
    /// True if and only if its TLS server can run on an instrumented crypto
    /// provider that counts and times every crypto call per category
    /// ([`Backend::instrumented`]), so a server's crypto is reported apart
    /// from the rest of its work.
    pub counts_crypto_apart: bool,
    /// What a report says under a table holding a row of `scenario` on
    /// this library, about the library itself (OpenSSL's fixed QUIC
    /// datagram size); [`no_notes`] for most.
    pub notes: fn(&HandshakeScenario) -> Vec<&'static str>,
    /// The backend itself.
    pub open: fn() -> Arc<dyn Backend>,
}

/// The notes of a library with nothing to say about its rows.
pub fn no_notes(_: &HandshakeScenario) -> Vec<&'static str> {
    Vec::new()
}

/// What a backend can do, as data: the matrix is filtered by these lists.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Capabilities {
    pub versions: Vec<TlsVersion>,
    /// Key exchanges usable with TLS 1.2 and DTLS 1.2 (including RSA key transport).
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
    /// What can carry its handshakes: the memory pipes, loopback sockets.
    pub transports: Vec<Transport>,
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
            if version.is_dtls() && !self.versions.iter().any(|v| v.is_dtls()) {
                return Some(format!(
                    "{backend} has no DTLS (the library implements TLS over streams only)"
                ));
            }
            if version == TlsVersion::Quic {
                let speakers: Vec<&str> = super::listed()
                    .filter(|d| (d.capabilities)().versions.contains(&TlsVersion::Quic))
                    .map(BackendDescriptor::name)
                    .collect();
                return Some(format!(
                    "{backend} has no QUIC in tlslab (QUIC runs on {})",
                    speakers.join(", ")
                ));
            }
            return Some(format!("{backend} does not support {}", version.display()));
        }
        if !self.transports.contains(&scenario.transport) {
            let spoken: Vec<&str> = self.transports.iter().map(|t| t.display()).collect();
            return Some(format!(
                "{backend} does not run over {} (it runs over {} only)",
                scenario.transport.display(),
                spoken.join(" and ")
            ));
        }
        let groups = match version.tls_rules() {
            TlsVersion::Tls13 => &self.groups_tls13,
            _ => &self.groups_tls12,
        };
        if !groups.contains(&scenario.group) {
            return Some(format!(
                "{backend} has no {} key exchange in {}",
                scenario.group.id(),
                version.display()
            ));
        }
        if !self.certs.contains(&scenario.cert) {
            return Some(format!(
                "{backend} cannot use {} certificates",
                scenario.cert.id()
            ));
        }
        if !self.aeads.contains(&scenario.aead) {
            return Some(format!("{backend} has no {} suite", scenario.aead.name()));
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

/// Whether a library's use of the CPU's features (AES-NI, SHA extensions,
/// vector units) can be switched off for a generic-CPU run, which happens
/// in a child process started with an environment that tells it so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuMasking {
    /// The library reads this environment variable at start and uses none
    /// of the features the value clears (OpenSSL's and aws-lc's
    /// `OPENSSL_ia32cap`).
    Environment {
        variable: &'static str,
        value: &'static str,
    },
    /// The library has no switch: its generic rows are unsupported, for
    /// this reason.
    Impossible(&'static str),
    /// The library uses none of the CPU's features (the mock backend): its
    /// generic rows are measured in the child with nothing to switch off.
    Unused,
}

impl CpuMasking {
    /// OpenSSL's capability vector cleared: OpenSSL and aws-lc fall back to
    /// their generic code.
    pub const OPENSSL_CAPABILITY_VECTOR: CpuMasking = CpuMasking::Environment {
        variable: "OPENSSL_ia32cap",
        value: "0x0:0x0",
    };
}

/// How `perf` and callgrind tell a library's code from the rest, by the
/// names and source paths of its functions. Lists may be empty; repeats
/// across libraries (rustls over two providers) do no harm.
#[derive(Debug, Clone, Copy, Default)]
pub struct SymbolPrefixes {
    /// Rust module paths of its protocol code ("rustls::"): its TLS state
    /// machine.
    pub protocol_paths: &'static [&'static str],
    /// Rust module paths of its crypto crate ("aws_lc_rs::"): what no
    /// category rule placed there is the library's plumbing.
    pub crypto_paths: &'static [&'static str],
    /// Lower-case prefixes its C symbols carry before a version and the
    /// plain name (`aws_lc_0_28_2_`, `ring_core_0_17_14_`), stripped before
    /// the name is read.
    pub versioned_symbol_prefixes: &'static [&'static str],
    /// Fragments of the source paths of its protocol code (OpenSSL's
    /// "/ssl/", "/rustls-0.").
    pub protocol_sources: &'static [&'static str],
    /// Fragments of the source paths of its whole tree ("/aws-lc-sys-"):
    /// what no other rule placed is the library's plumbing.
    pub library_sources: &'static [&'static str],
}
