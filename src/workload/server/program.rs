//! What every server under test that is a program on OpenSSL shares
//! (nginx, Apache httpd, HAProxy): finding its binary, the files of its
//! directory (the test chain, the client roots, DH parameters, the site's
//! pages), the TLS settings a scenario asks for in OpenSSL's words, what an
//! OpenSSL before 3.5 cannot serve, starting it tied to tlslab and waiting
//! until it listens, its workers' CPU, and stopping it. Each server keeps
//! only its own configuration syntax and how it reads its versions.

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

use super::{RunningServer, ServerSetup, ServerUnderTest, Workers};
use crate::backend::client::{self, MeasuringClient};
use crate::backend::openssl::{
    certificate_curve, dhe_parameters, openssl_group_name, tls12_cipher_name, OpensslBackend,
};
use crate::backend::{Backend, Capabilities, LibraryInfo};
use crate::certs::Credentials;
use crate::scenario::{
    Group, HandshakeScenario, KxKind, Named, Resumption, ServerKind, SignatureFamily, TlsVersion,
};
use crate::workload::process::{
    free_port, tasks_cpu_ns, terminate, wait_for_children, wait_listening,
};
use crate::workload::serve::ServerStats;
use crate::workload::site::{page_bytes, Site};

/// How long a server may take to start listening (and to fork its
/// workers).
pub const START_TIMEOUT: Duration = Duration::from_secs(10);

/// Where a server's binary is: the environment variable `override_var` if
/// set (none if it names no file: the server is then not installed, as far
/// as tlslab is told, and its rows say so), else the first `name` on the
/// PATH or in /usr/sbin.
pub fn find_binary(override_var: &str, name: &str) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(override_var) {
        let path = PathBuf::from(path);
        return path.is_file().then_some(path);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin")])
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// What `binary ARGUMENT` prints on standard output (how a program says
/// its version).
pub fn program_output(binary: &Path, argument: &str) -> Result<String> {
    let output = Command::new(binary)
        .arg(argument)
        .output()
        .with_context(|| format!("running {} {argument}", binary.display()))?;
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The first word after the first of `prefixes` that begins a line of
/// `text` (tried in order), or "unknown": a version in a program's output.
pub fn word_after(text: &str, prefixes: &[&str]) -> String {
    prefixes
        .iter()
        .find_map(|prefix| text.lines().find_map(|line| line.strip_prefix(prefix)))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or("unknown")
        .to_string()
}

/// The last three lines of a server's log, joined, for a message saying
/// why it did not start.
pub fn log_tail(log: &Path) -> String {
    let text = fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().rev().take(3).collect();
    if lines.is_empty() {
        "no message in its error log".to_string()
    } else {
        lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
    }
}

/// A certificate chain in DER, as PEM (leaf first).
pub fn pem_chain(chain: &[Vec<u8>]) -> Result<Vec<u8>> {
    let mut pem = Vec::new();
    for der in chain {
        pem.extend(X509::from_der(der)?.to_pem()?);
    }
    Ok(pem)
}

/// The server's private key, as PKCS#8 PEM.
pub fn key_pem(credentials: &Credentials) -> Result<Vec<u8>> {
    let key = PKey::private_key_from_pkcs8(&credentials.server.key_pkcs8_der)?;
    Ok(key.private_key_to_pem_pkcs8()?)
}

/// Writes the site's pages to `dir/www/page_SIZE`, the directory and the
/// pages readable by all: a server's workers run as another user than
/// tlslab (root) and must reach them.
pub fn write_pages(dir: &Path, site: &Site) -> Result<()> {
    fs::create_dir_all(dir.join("www"))?;
    for path in [dir.to_path_buf(), dir.join("www")] {
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755))?;
    }
    for &size in &site.page_sizes {
        fs::write(page_path(dir, size), page_bytes(size))?;
    }
    Ok(())
}

/// Where [`write_pages`] wrote the page of `size` bytes.
pub fn page_path(dir: &Path, size: usize) -> PathBuf {
    dir.join("www").join(format!("page_{size}"))
}

/// Writes the test root as the only CA a client certificate may chain to
/// (mutual TLS) to `dir/clients.pem`, and returns its path.
pub fn write_client_roots(dir: &Path, credentials: &Credentials) -> Result<PathBuf> {
    let path = dir.join("clients.pem");
    fs::write(&path, X509::from_der(&credentials.root_der)?.to_pem()?)?;
    Ok(path)
}

/// A scenario's TLS settings in OpenSSL's words, which every server on
/// OpenSSL takes in its own syntax.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpensslSettings {
    /// "TLSv1.2" or "TLSv1.3".
    pub protocol: &'static str,
    /// The TLS 1.2 cipher list (the scenario's suite, or DEFAULT for TLS
    /// 1.3), with `:@SECLEVEL=0` for a weak row: a weak row is measured
    /// with the security level lowered for this server only, as in process.
    pub ciphers: String,
    /// The TLS 1.3 suite, for TLS 1.3.
    pub ciphersuites: Option<String>,
    /// The groups, colon-separated (in TLS 1.2, an ECDSA certificate's
    /// curve too); `None` for a group OpenSSL does not name (FFDHE in TLS
    /// 1.2 takes DH parameters instead).
    pub groups: Option<String>,
    /// The DH parameters file written for a DHE row.
    pub dh_parameters: Option<PathBuf>,
}

/// The TLS settings of `scenario`, writing its DH parameters (if any) to
/// `dir/dhparam.pem`; `server` names the server in the error for DTLS and QUIC.
pub fn openssl_settings(
    dir: &Path,
    scenario: &HandshakeScenario,
    server: &str,
) -> Result<OpensslSettings> {
    let protocol = match scenario.version {
        TlsVersion::Tls12 => "TLSv1.2",
        TlsVersion::Tls13 => "TLSv1.3",
        TlsVersion::Dtls12 | TlsVersion::Dtls13 => {
            bail!("{server} serves TLS over TCP, not DTLS")
        }
        TlsVersion::Quic => bail!("{server} serves TLS over TCP here, not QUIC"),
    };
    let level = if scenario.is_weak() {
        ":@SECLEVEL=0"
    } else {
        ""
    };
    let (ciphers, ciphersuites) = match scenario.version {
        TlsVersion::Tls12 | TlsVersion::Dtls12 => {
            (format!("{}{level}", tls12_cipher_name(scenario)?), None)
        }
        TlsVersion::Tls13 | TlsVersion::Dtls13 | TlsVersion::Quic => (
            format!("DEFAULT{level}"),
            Some(scenario.suite_name().to_string()),
        ),
    };
    let groups = openssl_group_name(scenario.group).map(|name| {
        match (scenario.version, certificate_curve(scenario.cert)) {
            // As in process: in TLS 1.2 an ECDSA certificate's curve must be listed too.
            (TlsVersion::Tls12, Some(curve)) if curve != name => format!("{name}:{curve}"),
            _ => name.to_string(),
        }
    });
    let dh_parameters = match dhe_parameters(scenario.group)? {
        Some(parameters) => {
            let path = dir.join("dhparam.pem");
            fs::write(&path, parameters.params_to_pem()?)?;
            Some(path)
        }
        None => None,
    };
    Ok(OpensslSettings {
        protocol,
        ciphers,
        ciphersuites,
        groups,
        dh_parameters,
    })
}

/// How a server keeps sessions for a scenario and a site: a session cache
/// (TLS 1.2 session ids) and session tickets (TLS 1.2 tickets, TLS 1.3 PSK).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sessions {
    pub cache: bool,
    pub tickets: bool,
}

impl Sessions {
    /// Neither unless the scenario's resumption mode or the site asks for
    /// them; each mode on its own, as in process: a TLS 1.2 session id
    /// from the server's cache, a TLS 1.2 ticket or a TLS 1.3 ticket (PSK)
    /// with no cache behind it.
    pub fn for_setup(scenario: &HandshakeScenario, site: &Site) -> Self {
        let (cache, tickets) = match (scenario.resumption, site.session_resumption) {
            (Resumption::Off, false) => (false, false),
            (Resumption::Off, true) => (true, true),
            (Resumption::SessionId, _) => (true, false),
            (Resumption::Ticket | Resumption::Psk | Resumption::ZeroRtt, _) => (false, true),
        };
        Self { cache, tickets }
    }
}

/// Whether an OpenSSL version ("3.0.19", "3.6.3") has ML-KEM and ML-DSA
/// (3.5 and later).
pub fn has_post_quantum(openssl_version: &str) -> bool {
    let mut parts = openssl_version
        .split('.')
        .map(|part| part.parse::<u32>().unwrap_or(0));
    let major = parts.next().unwrap_or(0);
    let minor = parts.next().unwrap_or(0);
    (major, minor) >= (3, 5)
}

/// The version of the libcrypto a binary or module links ("3.0.19"), read
/// from the library's own version text ("OpenSSL 3.0.19 27 Jan 2026"), for
/// a program that does not print it (Apache).
pub fn linked_openssl_version(object: &Path) -> Option<String> {
    let output = Command::new("ldd").arg(object).output().ok()?;
    let listing = String::from_utf8_lossy(&output.stdout).into_owned();
    let library = listing
        .lines()
        .filter(|line| line.contains("libcrypto.so"))
        .find_map(|line| line.split("=> ").nth(1)?.split_whitespace().next())?;
    let bytes = fs::read(library).ok()?;
    let marker = b"OpenSSL 3.";
    bytes
        .windows(marker.len())
        .enumerate()
        .filter(|(_, window)| *window == marker)
        .find_map(|(at, _)| {
            let rest = &bytes[at + "OpenSSL ".len()..];
            let end = rest.iter().position(|&b| b == b' ')?;
            let version = std::str::from_utf8(&rest[..end]).ok()?;
            let well_formed = version.split('.').count() == 3
                && version.split('.').all(|p| p.parse::<u32>().is_ok());
            // The version text goes on with its date ("27 Jan 2026").
            let dated = rest.get(end + 1).is_some_and(u8::is_ascii_digit);
            (well_formed && dated).then(|| version.to_string())
        })
}

/// The measuring client's library and version, as a server's provenance
/// names its client ("OpenSSL 3.6.0").
pub fn client_version(client: &dyn MeasuringClient) -> String {
    format!(
        "{} {}",
        client.id().descriptor().library,
        client.library().version
    )
}

/// A program on OpenSSL as a server under test, opened: its version and its
/// OpenSSL's, what that OpenSSL serves (tlslab's OpenSSL's table, less what
/// an OpenSSL before 3.5 lacks) and the version of tlslab's client.
pub struct OpensslProgram {
    kind: ServerKind,
    /// Starts the program for a setup; given its description.
    start: StartProgram,
    /// Why perf's symbols inside its OpenSSL cannot be put in categories.
    no_categories: &'static str,
    /// The program's name in rows and messages ("nginx", "Apache httpd").
    name: &'static str,
    /// The program's version ("1.22.1").
    pub version: String,
    /// Its OpenSSL's version ("3.0.19").
    pub openssl_version: String,
    capabilities: Capabilities,
    /// The library and version of tlslab's measuring client, the
    /// program's client ("OpenSSL 3.6.0").
    client_version: String,
}

/// How a program on OpenSSL is started for a setup (its configuration
/// written, the program launched and waited for), given its description.
pub type StartProgram = fn(&ServerSetup<'_>, String) -> Result<RunningProgram>;

/// What makes a program on OpenSSL a server under test beside the
/// versions it reports: its kind, its name in rows and messages, how it
/// starts, why perf cannot put its symbols in categories.
pub struct ProgramKind {
    pub kind: ServerKind,
    pub name: &'static str,
    pub start: StartProgram,
    pub no_categories: &'static str,
}

impl OpensslProgram {
    /// `program` at `version` on OpenSSL `openssl_version`, as a server
    /// under test.
    pub fn open(
        program: ProgramKind,
        (version, openssl_version): (String, String),
    ) -> Arc<dyn ServerUnderTest> {
        Arc::new(Self::new(program, version, openssl_version))
    }

    fn new(program: ProgramKind, version: String, openssl_version: String) -> Self {
        let ProgramKind {
            kind,
            name,
            start,
            no_categories,
        } = program;
        let client = OpensslBackend::new();
        let mut capabilities = client.capabilities().clone();
        // What the server's OpenSSL lacks before 3.5 (3.0 on Debian 12).
        if !has_post_quantum(&openssl_version) {
            let classical = |g: &Group| g.kind() != KxKind::Kem;
            capabilities.groups_tls12.retain(classical);
            capabilities.groups_tls13.retain(classical);
            capabilities
                .certs
                .retain(|c| c.family() != SignatureFamily::MlDsa);
        }
        Self {
            kind,
            start,
            no_categories,
            name,
            version,
            openssl_version,
            capabilities,
            client_version: client_version(&*client::default_client()),
        }
    }

    /// What it is, in words ("nginx 1.22.1 on OpenSSL 3.0.19, client ...").
    pub fn description(&self) -> String {
        format!("{} {}", self.kind.id(), self.library().version)
    }
}

impl ServerUnderTest for OpensslProgram {
    fn kind(&self) -> ServerKind {
        self.kind
    }

    /// The program and its library, as a run records them.
    fn library(&self) -> LibraryInfo {
        LibraryInfo {
            subject: crate::scenario::Subject::Server(self.kind),
            library: self.kind.id().to_string(),
            version: format!(
                "{} on OpenSSL {}, client {}",
                self.version, self.openssl_version, self.client_version
            ),
        }
    }

    fn capabilities(&self) -> &Capabilities {
        &self.capabilities
    }

    /// Why it cannot serve `scenario` (DTLS, post-quantum before OpenSSL
    /// 3.5, what tlslab's OpenSSL lacks), or `None`.
    fn unsupported_reason(&self, scenario: &HandshakeScenario) -> Option<String> {
        let name = self.name;
        let openssl = &self.openssl_version;
        if scenario.version.is_datagram() {
            return Some(format!(
                "{name} serves TLS over TCP, not {}",
                scenario.version.display()
            ));
        }
        if scenario.group.kind() == KxKind::Kem && !has_post_quantum(openssl) {
            return Some(format!(
                "{name}'s OpenSSL {openssl} has no {} key exchange",
                scenario.group.id()
            ));
        }
        if scenario.cert.family() == SignatureFamily::MlDsa && !has_post_quantum(openssl) {
            return Some(format!(
                "{name}'s OpenSSL {openssl} cannot use {} certificates",
                scenario.cert.id()
            ));
        }
        self.capabilities
            .unsupported_reason(self.kind.id(), scenario)
    }

    fn symbol_categories(&self) -> Result<(), String> {
        Err(self.no_categories.to_string())
    }

    fn start(&self, setup: &ServerSetup<'_>) -> Result<Box<dyn RunningServer>> {
        Ok(Box::new((self.start)(setup, self.description())?))
    }
}

/// How a program's workers are found once it listens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerLayout {
    /// A master that forks its workers after it listens (nginx, Apache):
    /// its children.
    ForkedChildren,
    /// One process that does the work itself, on its threads (HAProxy
    /// without master-worker mode).
    SingleProcess,
}

/// How to start a program: its command (arguments and all, output not yet
/// redirected), its directory, where it listens and logs.
pub struct Launch {
    /// The program's name, for messages ("nginx").
    pub name: &'static str,
    pub command: Command,
    /// Its directory (removed when the server drops).
    pub dir: tempfile::TempDir,
    pub address: SocketAddr,
    /// The log whose last lines say why it did not start.
    pub log: PathBuf,
    /// True if and only if the program's standard error goes to `log` too
    /// (a program that says why it did not start there, not in its error
    /// log: HAProxy, Apache's configuration errors); else it is dropped.
    pub stderr_is_log: bool,
    pub workers: WorkerLayout,
    /// How it is tied to tlslab: [`crate::child::Tie::Server`] (SIGTERM
    /// when tlslab dies), unless it loses a SIGTERM during its start.
    pub tie: crate::child::Tie,
    /// What it is, in words.
    pub description: String,
}

/// A scratch directory for the server `descriptor` registers (named by
/// its `scratch` word), after removing what killed runs left, and a free
/// loopback address for it.
pub fn prepare(descriptor: &super::ServerDescriptor) -> Result<(tempfile::TempDir, SocketAddr)> {
    crate::child::remove_leftovers();
    let kind = descriptor.scratch.unwrap_or("server");
    let dir =
        crate::child::scratch_dir(kind).with_context(|| format!("creating {kind}'s directory"))?;
    let address = SocketAddr::from(([127, 0, 0, 1], free_port()?));
    Ok((dir, address))
}

/// One running program: its master (or only) process and its workers,
/// serving one scenario until it drops.
pub struct RunningProgram {
    master: Child,
    workers: Vec<u32>,
    address: SocketAddr,
    /// Its directory: configuration, certificates, logs, pid file.
    _dir: tempfile::TempDir,
    description: String,
}

impl RunningProgram {
    /// Starts `launch`'s program in a process group of its own (a
    /// terminal's Ctrl-C stops tlslab, which then stops it) and tied to
    /// tlslab's death; returns once it accepts connections and its
    /// workers are known.
    pub fn start(launch: Launch) -> Result<Self> {
        let Launch {
            name,
            mut command,
            dir,
            address,
            log,
            stderr_is_log,
            workers,
            tie,
            description,
        } = launch;
        let stderr = if stderr_is_log {
            // Appending, as the program may open the same file as its log.
            let file = fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log)
                .with_context(|| format!("creating {}", log.display()))?;
            Stdio::from(file)
        } else {
            Stdio::null()
        };
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        let program = command.get_program().to_string_lossy().into_owned();
        let mut master = crate::child::spawn_tied(command, tie)
            .with_context(|| format!("starting {program}"))?;
        wait_listening(&mut master, name, address, START_TIMEOUT, || log_tail(&log))?;
        let workers = match workers {
            WorkerLayout::SingleProcess => vec![master.id()],
            // A master listens before it forks its workers (and before that
            // it sets up shared memory, such as a session cache): wait.
            WorkerLayout::ForkedChildren => {
                let children = wait_for_children(master.id(), START_TIMEOUT);
                if children.is_empty() {
                    terminate(&mut master, &[], Duration::from_secs(3));
                    bail!("{name} started without a worker process");
                }
                children
            }
        };
        Ok(Self {
            master,
            workers,
            address,
            _dir: dir,
            description,
        })
    }
}

impl RunningServer for RunningProgram {
    fn address(&self) -> SocketAddr {
        self.address
    }

    fn description(&self) -> String {
        self.description.clone()
    }

    fn workers(&self) -> Workers {
        Workers::Processes(self.workers.clone())
    }

    /// Every thread of every worker process.
    fn worker_cpu_ns(&self) -> Result<u64> {
        let mut total = 0;
        for &worker in &self.workers {
            total += tasks_cpu_ns(worker)?;
        }
        Ok(total)
    }

    /// A program counts nothing tlslab reads: it stops when dropped.
    fn stop(self: Box<Self>) -> Result<Option<ServerStats>> {
        Ok(None)
    }
}

impl Drop for RunningProgram {
    fn drop(&mut self) {
        // SIGTERM is each program's fast shutdown; its workers go with it.
        terminate(&mut self.master, &self.workers, Duration::from_secs(3));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn post_quantum_rows_need_openssl_3_5() {
        assert!(!has_post_quantum("3.0.19"));
        assert!(!has_post_quantum("unknown"));
        assert!(has_post_quantum("3.5.0"));
        assert!(has_post_quantum("3.6.3"));
        assert!(has_post_quantum("4.0.0"));
    }

    #[test]
    fn each_resumption_mode_turns_on_only_its_own_store() {
        let mut scenario = HandshakeScenario::full(
            TlsVersion::Tls12,
            Group::X25519,
            crate::scenario::CertKind::EcdsaP256,
        );
        let site = Site::default();
        let off = Sessions::for_setup(&scenario, &site);
        assert_eq!(
            off,
            Sessions {
                cache: false,
                tickets: false
            }
        );
        scenario.resumption = Resumption::SessionId;
        assert_eq!(
            Sessions::for_setup(&scenario, &site),
            Sessions {
                cache: true,
                tickets: false
            }
        );
        scenario.resumption = Resumption::Ticket;
        assert_eq!(
            Sessions::for_setup(&scenario, &site),
            Sessions {
                cache: false,
                tickets: true
            }
        );
    }
}
