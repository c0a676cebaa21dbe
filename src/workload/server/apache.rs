//! A real server under test: Debian's Apache httpd 2.4 (the seeds' own
//! server), started by tlslab on loopback in a directory of its own with a
//! configuration generated for one handshake scenario: its own ServerRoot,
//! PidFile, `Mutex file:DIR`, DefaultRuntimeDir and ErrorLog, the modules
//! it needs loaded by hand (mpm_event, ssl, socache_shmcb, authz_core, and
//! http2 for `Protocols h2 http/1.1`: HTTP/2 by ALPN), the
//! test chain, protocol, suite, groups and DH parameters of the row, the
//! row's resumption mode (a shmcb session cache, tickets, or neither),
//! the client's certificate for mutual TLS, and the site's pages.
//!
//! Apache refuses to serve as root: its parent (root) reads the key and
//! binds the port, then one child process runs as www-data with a pool of
//! threads (the event MPM: `ServerLimit 1`, so the server's CPU is that
//! child's threads'). The key stays readable by root only; the child
//! reaches the pages, which are readable by all, like nginx's worker. As
//! nginx, it runs in a process group of its own and gets SIGTERM (its
//! immediate stop, children with it) when tlslab stops it or dies
//! ([`crate::child`]).

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use anyhow::{Context, Result};

use super::program::{
    find_binary, key_pem, linked_openssl_version, openssl_settings, pem_chain, prepare,
    program_output, word_after, write_client_roots, write_pages, Launch, OpensslProgram,
    ProgramKind, RunningProgram, Sessions, WorkerLayout,
};
use super::{ServerDescriptor, ServerDetails, ServerOptions, ServerSetup, ServerUnderTest};
use crate::scenario::{BackendId, ServerKind};

/// Apache httpd in the registry of servers under test.
pub static DESCRIPTOR: ServerDescriptor = ServerDescriptor {
    id: ServerKind::Apache,
    library: "Apache httpd",
    listed: true,
    programs: &["apache2"],
    scratch: Some("apache"),
    install: "apt-get install apache2",
    uncountable: None,
    details: ServerDetails {
        in_process: false,
        counted_on: Some(BackendId::Openssl),
        missing: || {
            apache_binary()
                .is_none()
                .then(|| "apache2 is not installed".to_string())
        },
        open,
    },
};

/// What Apache is missing, and how to get it.
const NOT_INSTALLED: &str =
    "Apache httpd is not installed (Debian: apt-get install apache2; or set TLSLAB_APACHE)";

/// Why Apache's samples are not put in symbol categories.
const STRIPPED: &str = "Apache's mod_ssl runs on Debian's libcrypto.so.3, which is stripped of its internal symbols: perf names only its exported functions there, so a split per symbol category would mislead; the split per shared object above stands (for categories, run the embedded server: --server embedded --backend openssl)";

/// Where Debian keeps Apache's modules.
const MODULES: &str = "/usr/lib/apache2/modules";

/// The worker threads of Apache's one child process: as many as `load`'s
/// default clients, so no connection waits for a thread.
const THREADS: usize = 64;

/// Where the apache2 binary is: `TLSLAB_APACHE` if set, else the first
/// `apache2` on the PATH or in /usr/sbin.
pub fn apache_binary() -> Option<PathBuf> {
    find_binary("TLSLAB_APACHE", "apache2")
}

/// Apache's version from `apache2 -v` ("2.4.71") and the OpenSSL its
/// mod_ssl links ("3.0.19"), or why they cannot be read.
pub fn apache_versions() -> Result<(String, String)> {
    let binary = apache_binary().context(NOT_INSTALLED)?;
    let version = word_after(
        &program_output(&binary, "-v")?,
        &["Server version: Apache/"],
    );
    let openssl = linked_openssl_version(&Path::new(MODULES).join("mod_ssl.so"))
        .unwrap_or_else(|| "unknown".to_string());
    Ok((version, openssl))
}

/// Writes the configuration for `setup` and starts Apache on a free
/// loopback port; returns once its child accepts connections.
fn start_apache(setup: &ServerSetup<'_>, description: String) -> Result<RunningProgram> {
    let binary = apache_binary().context(NOT_INSTALLED)?;
    let (dir, address) = prepare(&DESCRIPTOR)?;
    let config = write_files(dir.path(), setup, address)?;
    let mut command = Command::new(&binary);
    command.arg("-f").arg(config).arg("-DFOREGROUND");
    let log = dir.path().join("error.log");
    RunningProgram::start(Launch {
        name: "apache2",
        command,
        dir,
        address,
        log,
        // A configuration error goes to standard error, not the error log.
        stderr_is_log: true,
        workers: WorkerLayout::ForkedChildren,
        tie: crate::child::Tie::Server,
        description,
    })
}

/// The configuration and the files it names; returns the configuration's
/// path.
fn write_files(
    dir: &Path,
    setup: &ServerSetup<'_>,
    address: std::net::SocketAddr,
) -> Result<PathBuf> {
    let ServerSetup {
        scenario,
        credentials,
        site,
    } = *setup;
    write_pages(dir, site)?;
    let settings = openssl_settings(dir, scenario, "Apache httpd")?;
    let mut chain = pem_chain(&credentials.server.chain_der)?;
    if let Some(parameters) = &settings.dh_parameters {
        // mod_ssl takes DH parameters appended to the first certificate
        // file (SSLOpenSSLConfCmd DHParameters is overridden by its own).
        chain.extend(fs::read(parameters)?);
    }
    fs::write(dir.join("chain.pem"), chain)?;
    // Read by Apache's parent, as root, before its child drops to www-data.
    fs::write(dir.join("key.pem"), key_pem(credentials)?)?;
    let root = dir.display();
    let mut tls = String::new();
    writeln!(tls, "SSLProtocol -all +{}", settings.protocol)?;
    writeln!(tls, "SSLCipherSuite {}", settings.ciphers)?;
    if let Some(suites) = &settings.ciphersuites {
        writeln!(tls, "SSLCipherSuite TLSv1.3 {suites}")?;
    }
    if let Some(groups) = &settings.groups {
        writeln!(tls, "SSLOpenSSLConfCmd Groups {groups}")?;
    }
    let sessions = Sessions::for_setup(scenario, site);
    if sessions.cache {
        writeln!(tls, "SSLSessionCache shmcb:{root}/session_cache(1024000)")?;
    } else {
        writeln!(tls, "SSLSessionCache none")?;
    }
    writeln!(
        tls,
        "SSLSessionTickets {}",
        if sessions.tickets { "on" } else { "off" }
    )?;
    if scenario.mutual {
        // The client must present a certificate that chains to the test root.
        let roots = write_client_roots(dir, credentials)?;
        writeln!(tls, "SSLCACertificateFile {}", roots.display())?;
        writeln!(tls, "SSLVerifyClient require")?;
        writeln!(tls, "SSLVerifyDepth 4")?;
    }
    let modules: String = [
        ("mpm_event_module", "mod_mpm_event.so"),
        ("authz_core_module", "mod_authz_core.so"),
        ("socache_shmcb_module", "mod_socache_shmcb.so"),
        ("ssl_module", "mod_ssl.so"),
        ("http2_module", "mod_http2.so"),
    ]
    .iter()
    .map(|(name, file)| format!("LoadModule {name} {MODULES}/{file}\n"))
    .collect();
    let config = format!(
        "ServerRoot {root}
PidFile {root}/apache.pid
DefaultRuntimeDir {root}
Mutex file:{root} default
ErrorLog {root}/error.log
LogLevel warn
{modules}User www-data
Group www-data
ServerName localhost
Listen {address} https
Protocols h2 http/1.1
StartServers 1
ServerLimit 1
ThreadsPerChild {THREADS}
MaxRequestWorkers {THREADS}
MinSpareThreads 1
MaxSpareThreads {THREADS}
MaxConnectionsPerChild 0
KeepAlive On
MaxKeepAliveRequests 0
KeepAliveTimeout 60
DocumentRoot {root}/www
<Directory {root}/www>
    Require all granted
</Directory>
SSLEngine on
SSLCertificateFile {root}/chain.pem
SSLCertificateKeyFile {root}/key.pem
{tls}"
    );
    let path = dir.join("apache.conf");
    fs::write(&path, config)?;
    Ok(path)
}

/// Fails with a clear message if Apache httpd is missing.
fn open(_: &ServerOptions) -> Result<Arc<dyn ServerUnderTest>> {
    let program = ProgramKind {
        kind: ServerKind::Apache,
        name: DESCRIPTOR.library,
        start: start_apache,
        no_categories: STRIPPED,
    };
    Ok(OpensslProgram::open(program, apache_versions()?))
}
