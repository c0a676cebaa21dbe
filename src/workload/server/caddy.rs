//! A real server under test on another TLS library altogether: Debian's
//! Caddy 2.6, whose TLS is Go's crypto/tls. tlslab starts it on loopback in
//! a directory of its own (its data and configuration homes there too, the
//! admin endpoint off) with a JSON configuration generated for one
//! handshake scenario: the test chain, the protocol, the TLS 1.2 suite
//! (Go's TLS 1.3 suites cannot be chosen: the client offers the row's
//! only), the group, tickets or none, the client's certificate for mutual
//! TLS, and a file server for the site's pages. For a QUIC row it serves
//! HTTP/3 too (quic-go, on the same port over UDP, ALPN `h3`), which
//! tlslab's QUIC client handshakes with: a QUIC peer tlslab did not write.
//!
//! Go's crypto/tls (1.19 in Debian 12) has no DHE or FFDHE, no X448, no
//! ML-KEM, no Ed448 or ML-DSA certificates, and no server-side session
//! cache (it resumes with tickets only): those rows say so. One process
//! with `GOMAXPROCS=1` (as nginx's one worker) does the work; its CPU is
//! all its threads'. As nginx, it runs in a process group of its own and
//! gets SIGTERM (a shutdown whose grace is bounded to one second) when
//! tlslab stops it or dies ([`crate::child`]).

use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use serde_json::json;

use super::program::{
    find_binary, key_pem, pem_chain, prepare, program_output, word_after, write_client_roots,
    write_pages, Launch, RunningProgram, Sessions, WorkerLayout,
};
use super::{
    RunningServer, ServerDescriptor, ServerDetails, ServerOptions, ServerSetup, ServerUnderTest,
};
use crate::backend::client;
use crate::backend::{Capabilities, LibraryInfo};
use crate::scenario::{
    Aead, CertKind, Group, HandshakeScenario, KxKind, Named, Resumption, ServerKind,
    SignatureFamily, TlsVersion,
};
use crate::workload::server::program::client_version;

/// Caddy in the registry of servers under test.
pub static DESCRIPTOR: ServerDescriptor = ServerDescriptor {
    id: ServerKind::Caddy,
    library: "Caddy",
    listed: true,
    programs: &["caddy"],
    scratch: Some("caddy"),
    install: "apt-get install caddy",
    uncountable: None,
    details: ServerDetails {
        in_process: false,
        counted_on: None,
        missing: || {
            caddy_binary()
                .is_none()
                .then(|| "caddy is not installed".to_string())
        },
        open: CaddyServer::open,
    },
};

/// What Caddy is missing, and how to get it.
const NOT_INSTALLED: &str =
    "Caddy is not installed (Debian: apt-get install caddy; or set TLSLAB_CADDY)";

/// The ALPN protocol of HTTP/3 (RFC 9114 §3.1), under which Caddy serves QUIC.
const H3_ALPN: &str = "h3";

/// Why Caddy's samples are not put in symbol categories.
const NO_CATEGORIES: &str = "Caddy's TLS is Go's crypto/tls inside the caddy binary, whose function names tlslab's categories (written for OpenSSL, aws-lc and ring) do not know; the split per shared object above stands";

/// The groups, certificates and TLS 1.2 suites Go's crypto/tls serves.
const GROUPS: &[Group] = &[Group::X25519, Group::P256, Group::P384, Group::P521];
const CERTS: &[CertKind] = &[
    CertKind::Rsa2048,
    CertKind::Rsa3072,
    CertKind::Rsa4096,
    CertKind::EcdsaP256,
    CertKind::EcdsaP384,
    CertKind::EcdsaP521,
    CertKind::Ed25519,
];
const AEADS: &[Aead] = &[
    Aead::Aes128Gcm,
    Aead::Aes256Gcm,
    Aead::Chacha20Poly1305,
    Aead::Aes128CbcSha,
    Aead::Aes256CbcSha,
];

/// Where the caddy binary is: `TLSLAB_CADDY` if set, else the first
/// `caddy` on the PATH or in /usr/sbin.
pub fn caddy_binary() -> Option<PathBuf> {
    find_binary("TLSLAB_CADDY", "caddy")
}

/// Caddy's version from `caddy version` ("2.6.2") and the Go it was built
/// with from `caddy build-info` ("1.19.8"), or why they cannot be read.
pub fn caddy_versions() -> Result<(String, String)> {
    let binary = caddy_binary().context(NOT_INSTALLED)?;
    let version = program_output(&binary, "version")?
        .split_whitespace()
        .next()
        .map(|v| v.trim_start_matches('v').to_string())
        .unwrap_or_else(|| "unknown".to_string());
    let go = word_after(&program_output(&binary, "build-info")?, &["go\tgo"]);
    Ok((version, go))
}

/// Go's name of a TLS 1.2 scenario's suite
/// ("TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"), or `None` for one Go lacks.
fn go_suite_name(scenario: &HandshakeScenario) -> Option<String> {
    let exchange = match (scenario.group, scenario.cert.family()) {
        (Group::RsaKeyTransport, SignatureFamily::Rsa) => "RSA",
        (group, SignatureFamily::Rsa) if GROUPS.contains(&group) => "ECDHE_RSA",
        (group, SignatureFamily::Ecdsa | SignatureFamily::EdDsa) if GROUPS.contains(&group) => {
            "ECDHE_ECDSA"
        }
        _ => return None,
    };
    let cipher = match scenario.aead {
        Aead::Aes128Gcm => "AES_128_GCM_SHA256",
        Aead::Aes256Gcm => "AES_256_GCM_SHA384",
        Aead::Chacha20Poly1305 if exchange != "RSA" => "CHACHA20_POLY1305_SHA256",
        Aead::Aes128CbcSha => "AES_128_CBC_SHA",
        Aead::Aes256CbcSha => "AES_256_CBC_SHA",
        _ => return None,
    };
    Some(format!("TLS_{exchange}_WITH_{cipher}"))
}

/// Caddy's name of a group ("x25519", "secp256r1").
fn go_curve_name(group: Group) -> Option<&'static str> {
    Some(match group {
        Group::X25519 => "x25519",
        Group::P256 => "secp256r1",
        Group::P384 => "secp384r1",
        Group::P521 => "secp521r1",
        _ => return None,
    })
}

/// Writes the configuration for `setup` and starts Caddy on a free
/// loopback port; returns once it accepts connections.
fn start_caddy(setup: &ServerSetup<'_>, description: String) -> Result<RunningProgram> {
    let binary = caddy_binary().context(NOT_INSTALLED)?;
    let (dir, address) = prepare(&DESCRIPTOR)?;
    let config = write_files(dir.path(), setup, address)?;
    let mut command = Command::new(&binary);
    command
        .arg("run")
        .arg("--config")
        .arg(config)
        .env("HOME", dir.path())
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env("GOMAXPROCS", "1");
    let log = dir.path().join("error.log");
    RunningProgram::start(Launch {
        name: "caddy",
        command,
        dir,
        address,
        log,
        // Caddy says why it did not start on standard error.
        stderr_is_log: true,
        workers: WorkerLayout::SingleProcess,
        tie: crate::child::Tie::Server,
        description,
    })
}

/// The configuration and the files it names; returns the configuration's
/// path.
fn write_files(dir: &Path, setup: &ServerSetup<'_>, address: SocketAddr) -> Result<PathBuf> {
    let ServerSetup {
        scenario,
        credentials,
        site,
    } = *setup;
    write_pages(dir, site)?;
    fs::write(
        dir.join("chain.pem"),
        pem_chain(&credentials.server.chain_der)?,
    )?;
    fs::write(dir.join("key.pem"), key_pem(credentials)?)?;
    let protocol = match scenario.version {
        TlsVersion::Tls12 => "tls1.2",
        // QUIC carries TLS 1.3 (RFC 9001).
        TlsVersion::Tls13 | TlsVersion::Quic => "tls1.3",
        TlsVersion::Dtls12 | TlsVersion::Dtls13 => bail!("Caddy serves TLS over TCP, not DTLS"),
    };
    // HTTP/3 listens on the same port over UDP; HTTP/1.1 and HTTP/2 stay
    // on TCP, where tlslab waits for Caddy to listen.
    let http_versions = match scenario.version {
        TlsVersion::Quic => json!(["h1", "h2", "h3"]),
        _ => json!(["h1", "h2"]),
    };
    let mut policy = json!({
        "certificate_selection": {"any_tag": ["tlslab"]},
        "protocol_min": protocol,
        "protocol_max": protocol,
    });
    if scenario.version == TlsVersion::Tls12 {
        let suite = go_suite_name(scenario).context("Go's crypto/tls has no such suite")?;
        policy["cipher_suites"] = json!([suite]);
    }
    if let Some(curve) = go_curve_name(scenario.group) {
        policy["curves"] = json!([curve]);
    }
    if scenario.mutual {
        // The client must present a certificate that chains to the test root.
        let roots = write_client_roots(dir, credentials)?;
        policy["client_authentication"] = json!({
            "trusted_ca_certs_pem_files": [roots],
            "mode": "require_and_verify",
        });
    }
    let www = dir.join("www");
    let pages: Vec<String> = site
        .page_sizes
        .iter()
        .map(|size| format!("/page_{size}"))
        .collect();
    let tickets = Sessions::for_setup(scenario, site).tickets;
    let config = json!({
        "admin": {"disabled": true},
        "logging": {"logs": {"default": {
            "writer": {"output": "file", "filename": dir.join("error.log")},
            "level": "WARN",
        }}},
        "apps": {
            "http": {
                "grace_period": "1s",
                "servers": {"tlslab": {
                    "listen": [address.to_string()],
                    "protocols": http_versions,
                    "automatic_https": {"disable": true},
                    "routes": [{
                        "match": [{"path": pages}],
                        "handle": [{"handler": "file_server", "root": www}],
                    }],
                    "tls_connection_policies": [policy],
                }},
            },
            "tls": {
                "certificates": {"load_files": [{
                    "certificate": dir.join("chain.pem"),
                    "key": dir.join("key.pem"),
                    "tags": ["tlslab"],
                }]},
                "session_tickets": {"disabled": !tickets},
            },
        },
    });
    let path = dir.join("caddy.json");
    fs::write(&path, serde_json::to_vec_pretty(&config)?)?;
    Ok(path)
}

/// Caddy as a server under test: its versions and what Go's crypto/tls
/// serves.
pub struct CaddyServer {
    /// Caddy's version and the Go it was built with ("2.6.2", "1.19.8").
    versions: (String, String),
    capabilities: Capabilities,
    /// The library and version of tlslab's measuring client, Caddy's
    /// client ("OpenSSL 3.6.0").
    client_version: String,
}

impl CaddyServer {
    /// Fails with a clear message if Caddy is missing.
    fn open(_: &ServerOptions) -> Result<Arc<dyn ServerUnderTest>> {
        let versions = caddy_versions()?;
        let client = client::default_client();
        let mut capabilities = client.capabilities().clone();
        capabilities
            .versions
            .retain(|v| matches!(v, TlsVersion::Tls12 | TlsVersion::Tls13 | TlsVersion::Quic));
        capabilities
            .groups_tls12
            .retain(|g| *g == Group::RsaKeyTransport || GROUPS.contains(g));
        capabilities.groups_tls13.retain(|g| GROUPS.contains(g));
        capabilities.certs.retain(|c| CERTS.contains(c));
        capabilities.aeads.retain(|a| AEADS.contains(a));
        capabilities
            .resumptions
            .retain(|r| *r != Resumption::SessionId);
        Ok(Arc::new(Self {
            versions,
            capabilities,
            client_version: client_version(&*client),
        }))
    }
}

impl ServerUnderTest for CaddyServer {
    fn kind(&self) -> ServerKind {
        ServerKind::Caddy
    }

    fn library(&self) -> LibraryInfo {
        LibraryInfo {
            subject: crate::scenario::Subject::Server(self.kind()),
            library: self.kind().id().to_string(),
            version: format!(
                "{} on Go {} crypto/tls, client {}",
                self.versions.0, self.versions.1, self.client_version
            ),
        }
    }

    fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    fn unsupported_reason(&self, scenario: &HandshakeScenario) -> Option<String> {
        let go = format!("Caddy's Go {} crypto/tls", self.versions.1);
        if scenario.version.is_dtls() {
            return Some(format!(
                "Caddy serves TLS over TCP and QUIC (HTTP/3), not {}",
                scenario.version.display()
            ));
        }
        let group = scenario.group;
        if matches!(group.kind(), KxKind::Kem) {
            return Some(format!(
                "{go} has no {} key exchange (X25519Kyber768 came in later Go)",
                group.id()
            ));
        }
        if group != Group::RsaKeyTransport && !GROUPS.contains(&group) {
            return Some(format!(
                "{go} has no {} key exchange (no DHE, FFDHE or X448)",
                group.id()
            ));
        }
        if !CERTS.contains(&scenario.cert) {
            return Some(format!(
                "{go} cannot use {} certificates",
                scenario.cert.id()
            ));
        }
        if scenario.resumption == Resumption::SessionId {
            return Some(format!(
                "{go} keeps no session cache: it resumes TLS 1.2 with tickets only"
            ));
        }
        if let Some(reason) = self.capabilities.unsupported_reason("caddy", scenario) {
            return Some(reason);
        }
        if scenario.version == TlsVersion::Tls12 && go_suite_name(scenario).is_none() {
            return Some(format!(
                "{go} has no {} suite for this key exchange",
                scenario.aead.name()
            ));
        }
        None
    }

    /// HTTP/3's: quic-go serves QUIC under `h3` only.
    fn quic_alpn(&self) -> Option<&'static str> {
        Some(H3_ALPN)
    }

    fn symbol_categories(&self) -> Result<(), String> {
        Err(NO_CATEGORIES.to_string())
    }

    fn start(&self, setup: &ServerSetup<'_>) -> Result<Box<dyn RunningServer>> {
        let description = format!("caddy {}", self.library().version);
        Ok(Box::new(start_caddy(setup, description)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_names_its_suites_by_key_exchange_and_certificate() {
        let mut scenario =
            HandshakeScenario::full(TlsVersion::Tls12, Group::X25519, CertKind::EcdsaP256);
        assert_eq!(
            go_suite_name(&scenario).as_deref(),
            Some("TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256")
        );
        scenario =
            HandshakeScenario::full(TlsVersion::Tls12, Group::RsaKeyTransport, CertKind::Rsa2048);
        assert_eq!(
            go_suite_name(&scenario).as_deref(),
            Some("TLS_RSA_WITH_AES_128_GCM_SHA256")
        );
        scenario = HandshakeScenario::full(TlsVersion::Tls12, Group::Dhe2048, CertKind::Rsa2048);
        assert_eq!(go_suite_name(&scenario), None);
        assert_eq!(go_curve_name(Group::P521), Some("secp521r1"));
        assert_eq!(go_curve_name(Group::X448), None);
    }
}
