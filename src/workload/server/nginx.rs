//! A real server under test: Debian's nginx, started by tlslab on loopback
//! with a configuration generated for one handshake scenario (certificate
//! chain, protocol, suite, groups, DH parameters, the scenario's
//! resumption mode (no session cache or tickets unless it or a [`Site`]
//! asks for them), the client's certificate for mutual TLS, HTTP/2 beside
//! HTTP/1.1 by ALPN (`listen ... ssl http2`, nginx 1.22's form)), one worker
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
//! As a [`ServerUnderTest`] it is an [`OpensslProgram`]: what its OpenSSL
//! lacks (ML-KEM and ML-DSA before 3.5, DTLS), its versions for provenance.

use std::fmt::Write as _;
use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use anyhow::{Context, Result};

use super::program::{
    find_binary, key_pem, openssl_settings, pem_chain, prepare, write_client_roots, write_pages,
    Launch, OpensslProgram, ProgramKind, RunningProgram, Sessions, WorkerLayout,
};
use super::{ServerDescriptor, ServerDetails, ServerOptions, ServerSetup, ServerUnderTest};
use crate::certs::Credentials;
use crate::scenario::{BackendId, HandshakeScenario, ServerKind};
use crate::workload::site::Site;

/// nginx in the registry of servers under test.
pub static DESCRIPTOR: ServerDescriptor = ServerDescriptor {
    id: ServerKind::Nginx,
    library: "nginx",
    listed: true,
    programs: &["nginx"],
    scratch: Some("nginx"),
    install: "apt-get install nginx-light",
    uncountable: None,
    details: ServerDetails {
        in_process: false,
        counted_on: Some(BackendId::Openssl),
        missing: || {
            nginx_binary()
                .is_none()
                .then(|| "nginx is not installed".to_string())
        },
        open,
    },
};

/// What nginx is missing, and how to get it.
const NOT_INSTALLED: &str =
    "nginx is not installed (Debian: apt-get install nginx-light; or set TLSLAB_NGINX)";

/// Why nginx's samples are not put in symbol categories.
const STRIPPED: &str = "nginx runs on Debian's libcrypto.so.3, which is stripped of its internal symbols: perf names only its exported functions there, so a split per symbol category would mislead; the split per shared object above stands (for categories, run the embedded server: --server embedded --backend openssl)";

/// Where the nginx binary is: `TLSLAB_NGINX` if set, else the first `nginx`
/// on the PATH or in /usr/sbin.
pub fn nginx_binary() -> Option<PathBuf> {
    find_binary("TLSLAB_NGINX", "nginx")
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

/// Writes the configuration for `setup` and starts nginx on a free
/// loopback port; returns once its worker accepts connections.
fn start_nginx(setup: &ServerSetup<'_>, description: String) -> Result<RunningProgram> {
    let binary = nginx_binary().context(NOT_INSTALLED)?;
    let (dir, address) = prepare(&DESCRIPTOR)?;
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
        .arg(dir.path().join("error.log"));
    let log = dir.path().join("error.log");
    RunningProgram::start(Launch {
        name: "nginx",
        command,
        dir,
        address,
        log,
        stderr_is_log: false,
        workers: WorkerLayout::ForkedChildren,
        tie: crate::child::Tie::Server,
        description,
    })
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
    write_pages(dir, site)?;
    fs::write(
        dir.join("chain.pem"),
        pem_chain(&credentials.server.chain_der)?,
    )?;
    fs::write(dir.join("key.pem"), key_pem(credentials)?)?;
    fs::create_dir_all(dir.join("logs"))?;
    let settings = openssl_settings(dir, scenario, "nginx")?;
    let mut tls = String::new();
    writeln!(tls, "        ssl_protocols {};", settings.protocol)?;
    writeln!(tls, "        ssl_ciphers {};", settings.ciphers)?;
    if let Some(suites) = &settings.ciphersuites {
        writeln!(tls, "        ssl_conf_command Ciphersuites {suites};")?;
    }
    if let Some(groups) = &settings.groups {
        writeln!(tls, "        ssl_ecdh_curve {groups};")?;
    }
    if settings.dh_parameters.is_some() {
        writeln!(tls, "        ssl_dhparam dhparam.pem;")?;
    }
    let sessions = Sessions::for_setup(scenario, site);
    let sessions = format!(
        "        ssl_session_cache {};\n        ssl_session_tickets {};\n",
        if sessions.cache {
            "shared:tlslab:10m"
        } else {
            "off"
        },
        if sessions.tickets { "on" } else { "off" }
    );
    if scenario.mutual {
        // The client must present a certificate that chains to the test root.
        write_client_roots(dir, credentials)?;
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
        listen {address} ssl http2;
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

/// Fails with a clear message if nginx is missing.
fn open(_: &ServerOptions) -> Result<Arc<dyn ServerUnderTest>> {
    let program = ProgramKind {
        kind: ServerKind::Nginx,
        name: DESCRIPTOR.library,
        start: start_nginx,
        no_categories: STRIPPED,
    };
    Ok(OpensslProgram::open(program, nginx_versions()?))
}
