//! A real server under test: Debian's nginx, started by tlslab on loopback
//! with a configuration generated for one handshake scenario (certificate
//! chain, protocol, suite, groups, DH parameters, the scenario's
//! resumption mode (no session cache or tickets unless it or a [`Site`]
//! asks for them), the client's certificate for mutual TLS), one worker
//! process, stopped when tlslab is done with it (on success, failure and
//! Ctrl-C alike: the process is killed when its handle drops). It runs in
//! a process group of its own, so a terminal's Ctrl-C reaches tlslab and
//! not nginx, and gets SIGTERM if tlslab is killed ([`crate::child`]); its
//! directory is named after tlslab's process, so a later run removes what
//! a killed one left. tlslab's OpenSSL client handshakes with it over TCP; the
//! server's CPU per handshake is read from its worker's scheduler
//! statistics (`/proc/PID/schedstat`, nanoseconds on the CPU, the kernel's
//! share of its TCP work included).
//!
//! [`NginxServer`] is its [`ServerUnderTest`]: what its OpenSSL lacks (ML-KEM
//! and ML-DSA before 3.5, DTLS), its versions for provenance.

use std::fmt::Write as _;
use std::fs;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use openssl::pkey::PKey;
use openssl::x509::X509;

use super::{
    RunningServer, ServerDescriptor, ServerOptions, ServerSetup, ServerUnderTest, Workers,
};
use crate::backend::openssl::{
    certificate_curve, dhe_parameters, openssl_group_name, tls12_cipher_name, OpensslBackend,
};
use crate::backend::{Backend, Capabilities, LibraryInfo};
use crate::certs::Credentials;
use crate::scenario::{
    Group, HandshakeScenario, KxKind, Named, Resumption, ServerKind, SignatureFamily, TlsVersion,
};
use crate::workload::process::{
    free_port, process_cpu_ns, terminate, wait_for_children, wait_listening,
};
use crate::workload::serve::ServerStats;
use crate::workload::site::{page_bytes, Site};

/// nginx in the registry of servers under test.
pub const DESCRIPTOR: ServerDescriptor = ServerDescriptor {
    kind: ServerKind::Nginx,
    in_process: false,
    missing: || {
        nginx_binary()
            .is_none()
            .then(|| "nginx is not installed".to_string())
    },
    install: "apt-get install nginx-light",
    open: NginxServer::open,
};

/// What nginx is missing, and how to get it.
const NOT_INSTALLED: &str =
    "nginx is not installed (Debian: apt-get install nginx-light; or set TLSLAB_NGINX)";

/// Why nginx's samples are not put in symbol categories.
const STRIPPED: &str = "nginx runs on Debian's libcrypto.so.3, which is stripped of its internal symbols: perf names only its exported functions there, so a split per symbol category would mislead; the split per shared object above stands (for categories, run the embedded server: --server embedded --backend openssl)";

/// How long nginx may take to start listening.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the nginx binary is: `TLSLAB_NGINX` if set, else the first `nginx`
/// on the PATH or in /usr/sbin.
pub fn nginx_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("TLSLAB_NGINX") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin")])
        .map(|dir| dir.join("nginx"))
        .find(|candidate| candidate.is_file())
}

/// The command that runs nginx: with `TLSLAB_NGINX_OPENSSL` set to a
/// directory holding libssl.so.3 and libcrypto.so.3 (such as
/// `scripts/build-openssl.sh --shared` builds from tlslab's own OpenSSL
/// source), nginx loads those instead of the system's: OpenSSL 3 keeps its
/// binary interface across minor versions.
fn nginx_command(binary: &Path) -> Command {
    let mut command = Command::new(binary);
    if let Some(libraries) = std::env::var_os("TLSLAB_NGINX_OPENSSL") {
        command.env("LD_LIBRARY_PATH", libraries);
    }
    command
}

/// nginx's version and the OpenSSL it runs with, from `nginx -V`
/// ("1.22.1", "3.0.19"), or why they cannot be read.
pub fn nginx_versions() -> Result<(String, String)> {
    let binary = nginx_binary().context(NOT_INSTALLED)?;
    let output = nginx_command(&binary)
        .arg("-V")
        .output()
        .with_context(|| format!("running {} -V", binary.display()))?;
    // nginx prints its version information on stderr.
    let text = String::from_utf8_lossy(&output.stderr).into_owned();
    let version = text
        .lines()
        .find_map(|l| l.strip_prefix("nginx version: nginx/"))
        .unwrap_or("unknown")
        .trim()
        .to_string();
    let openssl = text
        .split("running with OpenSSL ")
        .nth(1)
        .or_else(|| text.split("built with OpenSSL ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or("unknown")
        .to_string();
    Ok((version, openssl))
}

/// One running nginx: master and one worker, serving one scenario.
pub struct Nginx {
    master: Child,
    worker: u32,
    address: SocketAddr,
    /// The prefix directory: configuration, certificates, logs, pid file
    /// (removed when the server drops).
    _dir: tempfile::TempDir,
    /// What it is, in words.
    description: String,
}

impl Nginx {
    /// Writes the configuration for `setup` and starts nginx on a free
    /// loopback port; returns once its worker accepts connections.
    pub fn start(setup: &ServerSetup<'_>, description: String) -> Result<Self> {
        let binary = nginx_binary().context(NOT_INSTALLED)?;
        crate::child::remove_leftovers();
        let dir = crate::child::scratch_dir("nginx").context("creating nginx's directory")?;
        let port = free_port()?;
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        write_files(
            dir.path(),
            setup.scenario,
            setup.credentials,
            address,
            setup.site,
        )?;
        let mut command = nginx_command(&binary);
        command
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(dir.path().join("nginx.conf"))
            .arg("-e")
            .arg(dir.path().join("error.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // In a process group of its own (a terminal's Ctrl-C stops tlslab,
        // which then stops nginx) and sent SIGTERM if tlslab dies.
        let mut master = crate::child::spawn_tied(command, crate::child::Tie::Server)
            .with_context(|| format!("starting {}", binary.display()))?;
        wait_listening(&mut master, "nginx", address, START_TIMEOUT, || {
            error_log_tail(dir.path())
        })?;
        // The master listens before it forks its worker (and before that it
        // sets up shared memory, such as a session cache): wait for it.
        let worker = match wait_for_children(master.id(), START_TIMEOUT).first() {
            Some(&worker) => worker,
            None => {
                let _ = master.kill();
                let _ = master.wait();
                bail!("nginx started without a worker process");
            }
        };
        Ok(Self {
            master,
            worker,
            address,
            _dir: dir,
            description,
        })
    }
}

impl RunningServer for Nginx {
    fn address(&self) -> SocketAddr {
        self.address
    }

    fn description(&self) -> String {
        self.description.clone()
    }

    fn workers(&self) -> Workers {
        Workers::Processes(vec![self.worker])
    }

    fn worker_cpu_ns(&self) -> Result<u64> {
        process_cpu_ns(self.worker)
    }

    /// nginx counts nothing tlslab reads: it stops when dropped.
    fn stop(self: Box<Self>) -> Result<Option<ServerStats>> {
        Ok(None)
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM is nginx's fast shutdown; its worker goes with it.
        terminate(&mut self.master, &[self.worker], Duration::from_secs(3));
    }
}

fn error_log_tail(dir: &Path) -> String {
    let log = fs::read_to_string(dir.join("error.log")).unwrap_or_default();
    let lines: Vec<&str> = log.lines().rev().take(3).collect();
    if lines.is_empty() {
        "no message in its error log".to_string()
    } else {
        lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
    }
}

fn pem_chain(chain: &[Vec<u8>]) -> Result<Vec<u8>> {
    let mut pem = Vec::new();
    for der in chain {
        pem.extend(X509::from_der(der)?.to_pem()?);
    }
    Ok(pem)
}

/// The configuration and the files it names.
fn write_files(
    dir: &Path,
    scenario: &HandshakeScenario,
    credentials: &Credentials,
    address: SocketAddr,
    site: &Site,
) -> Result<()> {
    // nginx's worker runs as nobody when tlslab runs as root: it must be
    // able to reach the pages (the key is read by the master, before).
    fs::create_dir_all(dir.join("www"))?;
    for path in [dir.to_path_buf(), dir.join("www")] {
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755))?;
    }
    for &size in &site.page_sizes {
        fs::write(
            dir.join("www").join(format!("page_{size}")),
            page_bytes(size),
        )?;
    }
    fs::write(
        dir.join("chain.pem"),
        pem_chain(&credentials.server.chain_der)?,
    )?;
    let key = PKey::private_key_from_pkcs8(&credentials.server.key_pkcs8_der)?;
    fs::write(dir.join("key.pem"), key.private_key_to_pem_pkcs8()?)?;
    fs::create_dir_all(dir.join("logs"))?;
    let mut tls = String::new();
    let protocol = match scenario.version {
        TlsVersion::Tls12 => "TLSv1.2",
        TlsVersion::Tls13 => "TLSv1.3",
        TlsVersion::Dtls12 | TlsVersion::Dtls13 => bail!("nginx serves TLS over TCP, not DTLS"),
        TlsVersion::Quic => bail!("nginx serves TLS over TCP here, not QUIC"),
    };
    writeln!(tls, "        ssl_protocols {protocol};")?;
    // Weak rows are measured with the security level lowered for this
    // server only, as in process.
    let level = if scenario.is_weak() {
        ":@SECLEVEL=0"
    } else {
        ""
    };
    match scenario.version {
        TlsVersion::Tls12 | TlsVersion::Dtls12 => writeln!(
            tls,
            "        ssl_ciphers {}{level};",
            tls12_cipher_name(scenario)?
        )?,
        TlsVersion::Tls13 | TlsVersion::Dtls13 | TlsVersion::Quic => {
            writeln!(tls, "        ssl_ciphers DEFAULT{level};")?;
            writeln!(
                tls,
                "        ssl_conf_command Ciphersuites {};",
                scenario.suite_name()
            )?;
        }
    }
    if let Some(name) = openssl_group_name(scenario.group) {
        let groups = match (scenario.version, certificate_curve(scenario.cert)) {
            // As in process: in TLS 1.2 an ECDSA certificate's curve must be listed too.
            (TlsVersion::Tls12, Some(curve)) if curve != name => format!("{name}:{curve}"),
            _ => name.to_string(),
        };
        writeln!(tls, "        ssl_ecdh_curve {groups};")?;
    }
    if let Some(parameters) = dhe_parameters(scenario.group)? {
        fs::write(dir.join("dhparam.pem"), parameters.params_to_pem()?)?;
        writeln!(tls, "        ssl_dhparam dhparam.pem;")?;
    }
    let sessions = match (scenario.resumption, site.session_resumption) {
        (Resumption::Off, false) => {
            "        ssl_session_cache off;\n        ssl_session_tickets off;\n"
        }
        (Resumption::Off, true) => {
            "        ssl_session_cache shared:tlslab:10m;\n        ssl_session_tickets on;\n"
        }
        // Each mode on its own, as in process: a TLS 1.2 session id from
        // the server's cache, a TLS 1.2 ticket or a TLS 1.3 ticket (PSK)
        // with no cache behind it.
        (Resumption::SessionId, _) => {
            "        ssl_session_cache shared:tlslab:10m;\n        ssl_session_tickets off;\n"
        }
        (Resumption::Ticket | Resumption::Psk, _) => {
            "        ssl_session_cache off;\n        ssl_session_tickets on;\n"
        }
    };
    if scenario.mutual {
        // The client must present a certificate that chains to the test root.
        fs::write(
            dir.join("clients.pem"),
            X509::from_der(&credentials.root_der)?.to_pem()?,
        )?;
        writeln!(tls, "        ssl_client_certificate clients.pem;")?;
        writeln!(tls, "        ssl_verify_client on;")?;
        writeln!(tls, "        ssl_verify_depth 4;")?;
    }
    let config = format!(
        "daemon off;
master_process on;
worker_processes 1;
pid nginx.pid;
error_log error.log warn;
events {{
    worker_connections 256;
}}
http {{
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 60s;
    client_body_temp_path logs/body;
    proxy_temp_path logs/proxy;
    fastcgi_temp_path logs/fastcgi;
    uwsgi_temp_path logs/uwsgi;
    scgi_temp_path logs/scgi;
    server {{
        listen {address} ssl;
        ssl_certificate chain.pem;
        ssl_certificate_key key.pem;
{sessions}{tls}        root www;
        location = / {{
            return 200 \"tlslab\\n\";
        }}
    }}
}}
"
    );
    fs::write(dir.join("nginx.conf"), config)?;
    Ok(())
}

/// Whether an OpenSSL version ("3.0.19", "3.6.3") has ML-KEM and ML-DSA
/// (3.5 and later).
fn has_post_quantum(openssl_version: &str) -> bool {
    let mut parts = openssl_version
        .split('.')
        .map(|part| part.parse::<u32>().unwrap_or(0));
    let major = parts.next().unwrap_or(0);
    let minor = parts.next().unwrap_or(0);
    (major, minor) >= (3, 5)
}

/// nginx as a server under test: its versions, and what its OpenSSL
/// serves (tlslab's OpenSSL's table, less what an OpenSSL before 3.5 lacks).
pub struct NginxServer {
    /// nginx's version and its OpenSSL's ("1.22.1", "3.0.19").
    versions: (String, String),
    capabilities: Capabilities,
    /// The version of tlslab's OpenSSL, nginx's client.
    client_version: String,
}

impl NginxServer {
    /// Fails with a clear message if nginx is missing.
    fn open(_: &ServerOptions) -> Result<Arc<dyn ServerUnderTest>> {
        let versions = nginx_versions()?;
        let client = OpensslBackend::new();
        let mut capabilities = client.capabilities().clone();
        // What the server's OpenSSL lacks before 3.5 (3.0 on Debian 12).
        if !has_post_quantum(&versions.1) {
            let classical = |g: &Group| g.kind() != KxKind::Kem;
            capabilities.groups_tls12.retain(classical);
            capabilities.groups_tls13.retain(classical);
            capabilities
                .certs
                .retain(|c| c.family() != SignatureFamily::MlDsa);
        }
        Ok(Arc::new(Self {
            versions,
            capabilities,
            client_version: client.library().version,
        }))
    }
}

impl ServerUnderTest for NginxServer {
    fn kind(&self) -> ServerKind {
        ServerKind::Nginx
    }

    fn library(&self) -> LibraryInfo {
        LibraryInfo {
            backend: self.kind().id().to_string(),
            library: "nginx".to_string(),
            version: format!(
                "{} on OpenSSL {}, client OpenSSL {}",
                self.versions.0, self.versions.1, self.client_version
            ),
        }
    }

    fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    fn unsupported_reason(&self, scenario: &HandshakeScenario) -> Option<String> {
        if scenario.version.is_datagram() {
            return Some("nginx serves TLS over TCP, not DTLS".to_string());
        }
        if scenario.group.kind() == KxKind::Kem && !has_post_quantum(&self.versions.1) {
            return Some(format!(
                "nginx's OpenSSL {} has no {} key exchange",
                self.versions.1,
                scenario.group.id()
            ));
        }
        if scenario.cert.family() == SignatureFamily::MlDsa && !has_post_quantum(&self.versions.1) {
            return Some(format!(
                "nginx's OpenSSL {} cannot use {} certificates",
                self.versions.1,
                scenario.cert.id()
            ));
        }
        self.capabilities
            .unsupported_reason(self.kind().id(), scenario)
    }

    fn symbol_categories(&self) -> Result<(), String> {
        Err(STRIPPED.to_string())
    }

    fn start(&self, setup: &ServerSetup<'_>) -> Result<Box<dyn RunningServer>> {
        let description = format!("nginx {}", self.library().version);
        Ok(Box::new(Nginx::start(setup, description)?))
    }
}

#[cfg(test)]
mod tests {
    use super::has_post_quantum;

    #[test]
    fn post_quantum_rows_need_openssl_3_5() {
        assert!(!has_post_quantum("3.0.19"));
        assert!(!has_post_quantum("unknown"));
        assert!(has_post_quantum("3.5.0"));
        assert!(has_post_quantum("3.6.3"));
        assert!(has_post_quantum("4.0.0"));
    }
}
