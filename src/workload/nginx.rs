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
//! [`NginxBackend`] makes this a backend of the handshake matrix: one nginx
//! per scenario, all of them running while the interleaved sampler goes
//! round after round.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use openssl::pkey::PKey;
use openssl::x509::X509;

use crate::backend::openssl::remote::RemoteClient;
use crate::backend::openssl::{
    certificate_curve, dhe_parameters, openssl_group_name, tls12_cipher_name, OpensslBackend,
};
use crate::backend::{
    Backend, Capabilities, HandshakeSample, Handshaker, LibraryInfo, PrimitiveBackend, SideTime,
};
use crate::certs::Credentials;
use crate::scenario::{
    Group, HandshakeScenario, KxKind, Named, Resumption, SignatureFamily, TlsVersion,
};

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
    let binary = nginx_binary().context(
        "nginx is not installed (Debian: apt-get install nginx-light; or set TLSLAB_NGINX)",
    )?;
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

/// What nginx serves besides the handshake: generated pages of given
/// sizes at `/page_SIZE` (bytes cycling through the alphabet, so a client
/// can check them), over connections kept open for many requests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Site {
    pub page_sizes: Vec<usize>,
    /// Lets clients resume: a shared session cache (TLS 1.2 session ids)
    /// and session tickets (TLS 1.2 and 1.3). Off, every handshake is full.
    pub session_resumption: bool,
}

/// The content of a generated page: `size` bytes of a repeating pattern.
pub fn page_bytes(size: usize) -> Vec<u8> {
    (0..size).map(|i| b'a' + (i % 26) as u8).collect()
}

/// One running nginx: master and one worker, serving one scenario.
pub struct Nginx {
    master: Child,
    worker: u32,
    address: SocketAddr,
    /// The prefix directory: configuration, certificates, logs, pid file.
    dir: tempfile::TempDir,
}

impl Nginx {
    /// Writes the configuration for `scenario` and starts nginx on a free
    /// loopback port; returns once its worker accepts connections.
    pub fn start(scenario: &HandshakeScenario, credentials: &Credentials) -> Result<Self> {
        Self::serving(scenario, credentials, &Site::default())
    }

    /// As [`Nginx::start`], serving `site`'s pages as well.
    pub fn serving(
        scenario: &HandshakeScenario,
        credentials: &Credentials,
        site: &Site,
    ) -> Result<Self> {
        let binary = nginx_binary().context(
            "nginx is not installed (Debian: apt-get install nginx-light; or set TLSLAB_NGINX)",
        )?;
        crate::child::remove_leftovers();
        let dir = crate::child::scratch_dir("nginx").context("creating nginx's directory")?;
        let port = free_port()?;
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        write_files(dir.path(), scenario, credentials, address, site)?;
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
        let started = Instant::now();
        loop {
            if let Some(status) = master.try_wait()? {
                bail!(
                    "nginx exited at start ({status}): {}",
                    error_log_tail(dir.path())
                );
            }
            if TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_ok() {
                break;
            }
            if started.elapsed() > START_TIMEOUT {
                let _ = master.kill();
                let _ = master.wait();
                bail!(
                    "nginx did not listen on {address} within {}s: {}",
                    START_TIMEOUT.as_secs(),
                    error_log_tail(dir.path())
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // The master listens before it forks its worker (and before that it
        // sets up shared memory, such as a session cache): wait for it.
        let mut workers = children_of(master.id());
        while workers.is_empty() && started.elapsed() <= START_TIMEOUT {
            std::thread::sleep(Duration::from_millis(10));
            workers = children_of(master.id());
        }
        let worker = match workers.first() {
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
            dir,
        })
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    pub fn master_pid(&self) -> u32 {
        self.master.id()
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn worker_pid(&self) -> u32 {
        self.worker
    }

    /// The worker's time on the CPU so far, in nanoseconds.
    pub fn worker_cpu_ns(&self) -> Result<u64> {
        process_cpu_ns(self.worker)
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM is nginx's fast shutdown; its worker goes with it.
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.master.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.master.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.master.kill();
        let _ = self.master.wait();
        // SAFETY: as above, for a worker left behind.
        unsafe { libc::kill(self.worker as libc::pid_t, libc::SIGKILL) };
    }
}

/// A free loopback port (bound, then released for nginx to take).
fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("finding a free loopback port")?;
    Ok(listener.local_addr()?.port())
}

/// The pids of a process's children, from /proc.
pub fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut children: Vec<u32> = entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| parent_of(pid) == Some(parent))
        .collect();
    children.sort_unstable();
    children
}

fn parent_of(pid: u32) -> Option<u32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: fields after it.
    let after = &stat[stat.rfind(')')? + 2..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// A process's time on the CPU (its main thread), in nanoseconds, from
/// the first field of /proc/PID/schedstat.
pub fn process_cpu_ns(pid: u32) -> Result<u64> {
    let path = format!("/proc/{pid}/schedstat");
    let text = fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    text.split_whitespace()
        .next()
        .and_then(|field| field.parse().ok())
        .with_context(|| format!("unreadable {path}: {text:?}"))
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
        TlsVersion::Tls13 | TlsVersion::Dtls13 => {
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

/// The handshake matrix against nginx: the server is nginx (one per
/// scenario, started on first use and stopped when the backend drops), the
/// client is tlslab's OpenSSL.
pub struct NginxBackend {
    client: OpensslBackend,
    capabilities: Capabilities,
    versions: (String, String),
    servers: Mutex<HashMap<String, Arc<Nginx>>>,
}

impl NginxBackend {
    /// Fails with a clear message if nginx is missing.
    pub fn new() -> Result<Self> {
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
        Ok(Self {
            client,
            capabilities,
            versions,
            servers: Mutex::new(HashMap::new()),
        })
    }

    /// Every nginx this backend has running: (master pid, directory).
    pub fn running(&self) -> Vec<(u32, PathBuf)> {
        let servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        servers
            .values()
            .map(|s| (s.master_pid(), s.dir().to_path_buf()))
            .collect()
    }

    fn server_for(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
    ) -> Result<Arc<Nginx>> {
        let key = format!("{}/{}", scenario.label(), credentials.kind.id());
        let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(server) = servers.get(&key) {
            return Ok(Arc::clone(server));
        }
        let server = Arc::new(Nginx::start(scenario, credentials)?);
        servers.insert(key, Arc::clone(&server));
        Ok(server)
    }
}

impl Backend for NginxBackend {
    fn id(&self) -> &'static str {
        "nginx"
    }

    fn library(&self) -> LibraryInfo {
        static DESCRIPTION: OnceLock<String> = OnceLock::new();
        let client = self.client.library();
        LibraryInfo {
            backend: self.id().to_string(),
            library: "nginx".to_string(),
            version: DESCRIPTION
                .get_or_init(|| {
                    format!(
                        "{} on OpenSSL {}, client OpenSSL {}",
                        self.versions.0, self.versions.1, client.version
                    )
                })
                .clone(),
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
        self.capabilities.unsupported_reason(self.id(), scenario)
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
        Ok(Box::new(NginxHandshaker { client, server }))
    }

    fn primitives(&self) -> Box<dyn PrimitiveBackend> {
        self.client.primitives()
    }
}

struct NginxHandshaker {
    client: RemoteClient,
    server: Arc<Nginx>,
}

impl Handshaker for NginxHandshaker {
    /// The client's side as timed in its thread; the server's side as the
    /// worker's time on the CPU from before the connect to after nginx
    /// closed the connection (its wall time inside calls is not known:
    /// both fields hold the CPU time).
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
