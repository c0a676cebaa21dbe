//! A real server under test: Debian's HAProxy 2.6, the TLS terminator in
//! front of everything, started by tlslab on loopback in a directory of
//! its own with a configuration generated for one handshake scenario (the
//! test chain and key in one PEM, protocol, suite, groups, DH parameters,
//! the row's resumption mode, the client's certificate for mutual TLS).
//! It answers without a backend: `http-request return ... file` serves
//! each of the site's pages byte for byte (HAProxy holds such a file in
//! one buffer, so `tune.bufsize` is raised to hold the largest page), and
//! anything else gets a 404.
//!
//! One process with one thread (`nbthread 1`, as nginx's one worker) does
//! the work; the server's CPU is that process's. It runs in the
//! foreground (`-db`, no master-worker mode), in a process group of its
//! own, and gets SIGTERM (its immediate stop) when tlslab stops it or dies
//! ([`crate::child`]).

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use anyhow::{Context, Result};

use super::program::{
    find_binary, key_pem, openssl_settings, page_path, pem_chain, prepare, program_output,
    word_after, write_client_roots, write_pages, Launch, OpensslProgram, ProgramKind,
    RunningProgram, Sessions, WorkerLayout,
};
use super::{ServerDescriptor, ServerDetails, ServerOptions, ServerSetup, ServerUnderTest};
use crate::scenario::{BackendId, ServerKind};

/// HAProxy in the registry of servers under test.
pub static DESCRIPTOR: ServerDescriptor = ServerDescriptor {
    id: ServerKind::Haproxy,
    library: "HAProxy",
    listed: true,
    programs: &["haproxy"],
    scratch: Some("haproxy"),
    install: "apt-get install haproxy",
    uncountable: None,
    details: ServerDetails {
        in_process: false,
        counted_on: Some(BackendId::Openssl),
        missing: || {
            haproxy_binary()
                .is_none()
                .then(|| "haproxy is not installed".to_string())
        },
        open,
    },
};

/// What HAProxy is missing, and how to get it.
const NOT_INSTALLED: &str =
    "HAProxy is not installed (Debian: apt-get install haproxy; or set TLSLAB_HAPROXY)";

/// Why HAProxy's samples are not put in symbol categories.
const STRIPPED: &str = "HAProxy runs on Debian's libcrypto.so.3, which is stripped of its internal symbols: perf names only its exported functions there, so a split per symbol category would mislead; the split per shared object above stands (for categories, run the embedded server: --server embedded --backend openssl)";

/// HAProxy's default buffer: a page served from a file must fit in one,
/// with room for the response's head.
const DEFAULT_BUFFER_BYTES: usize = 16_384;
const HEAD_ROOM_BYTES: usize = 4_096;

/// Where the haproxy binary is: `TLSLAB_HAPROXY` if set, else the first
/// `haproxy` on the PATH or in /usr/sbin.
pub fn haproxy_binary() -> Option<PathBuf> {
    find_binary("TLSLAB_HAPROXY", "haproxy")
}

/// HAProxy's version and the OpenSSL it runs on, from `haproxy -vv`
/// ("2.6.12-1+deb12u4", "3.0.19"), or why they cannot be read.
pub fn haproxy_versions() -> Result<(String, String)> {
    let binary = haproxy_binary().context(NOT_INSTALLED)?;
    let text = program_output(&binary, "-vv")?;
    let version = word_after(&text, &["HAProxy version "]);
    let openssl = word_after(
        &text,
        &[
            "Running on OpenSSL version : OpenSSL ",
            "Built with OpenSSL version : OpenSSL ",
        ],
    );
    Ok((version, openssl))
}

/// Writes the configuration for `setup` and starts HAProxy on a free
/// loopback port; returns once it accepts connections.
fn start_haproxy(setup: &ServerSetup<'_>, description: String) -> Result<RunningProgram> {
    let binary = haproxy_binary().context(NOT_INSTALLED)?;
    let (dir, address) = prepare(&DESCRIPTOR)?;
    let config = write_files(dir.path(), setup, address)?;
    let log = dir.path().join("error.log");
    let mut command = Command::new(&binary);
    command.arg("-f").arg(config).arg("-db");
    if setup.scenario.is_weak() {
        command.env("OPENSSL_CONF", write_low_security_level(dir.path())?);
    }
    RunningProgram::start(Launch {
        name: "haproxy",
        command,
        dir,
        address,
        // HAProxy says why it did not start on standard error: that is its
        // log.
        log,
        stderr_is_log: true,
        workers: WorkerLayout::SingleProcess,
        tie: crate::child::Tie::Server,
        description,
    })
}

/// Writes an OpenSSL configuration whose default security level is 0 and
/// returns its path. HAProxy loads a certificate's DH parameters into a
/// context at the default level, before the `ciphers` of its bind line
/// lower it, so 1024-bit parameters (a weak row) are refused ("unable to
/// load the DH parameter"): a weak row's HAProxy runs with this file as
/// `OPENSSL_CONF`, the level lowered for this server only, as in process.
fn write_low_security_level(dir: &Path) -> Result<PathBuf> {
    let path = dir.join("openssl.cnf");
    fs::write(
        &path,
        "openssl_conf = tlslab_conf
[tlslab_conf]
ssl_conf = tlslab_ssl
[tlslab_ssl]
system_default = tlslab_defaults
[tlslab_defaults]
CipherString = DEFAULT:@SECLEVEL=0
",
    )?;
    Ok(path)
}

/// The buffer size that holds the largest page of the site and its head.
fn buffer_bytes(page_sizes: &[usize]) -> usize {
    let largest = page_sizes.iter().copied().max().unwrap_or(0);
    DEFAULT_BUFFER_BYTES.max(largest + HEAD_ROOM_BYTES)
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
    let mut pem = pem_chain(&credentials.server.chain_der)?;
    pem.extend(key_pem(credentials)?);
    let settings = openssl_settings(dir, scenario, "HAProxy")?;
    if let Some(parameters) = &settings.dh_parameters {
        // HAProxy takes DH parameters appended to the certificate's PEM.
        pem.extend(fs::read(parameters)?);
    }
    fs::write(dir.join("server.pem"), pem)?;
    let root = dir.display();
    let mut bind = format!(
        "bind {address} ssl crt {root}/server.pem alpn h2,http/1.1 ssl-min-ver {version} ssl-max-ver {version} ciphers {ciphers}",
        version = settings.protocol,
        ciphers = settings.ciphers,
    );
    if let Some(suites) = &settings.ciphersuites {
        write!(bind, " ciphersuites {suites}")?;
    }
    if let Some(groups) = &settings.groups {
        write!(bind, " curves {groups}")?;
    }
    let sessions = Sessions::for_setup(scenario, site);
    if !sessions.tickets {
        bind.push_str(" no-tls-tickets");
    }
    if scenario.mutual {
        // The client must present a certificate that chains to the test root.
        let roots = write_client_roots(dir, credentials)?;
        write!(bind, " ca-file {} verify required", roots.display())?;
    }
    // No session cache: a size of 0 turns HAProxy's shared cache off.
    let cache = if sessions.cache { 20_000 } else { 0 };
    let mut pages = String::new();
    for &size in &site.page_sizes {
        writeln!(
            pages,
            "    http-request return status 200 content-type application/octet-stream file {} if {{ path /page_{size} }}",
            page_path(dir, size).display()
        )?;
    }
    let config = format!(
        "global
    nbthread 1
    maxconn 4096
    tune.bufsize {buffer}
    tune.ssl.cachesize {cache}
defaults
    mode http
    timeout client 60s
    timeout connect 5s
    timeout server 60s
    timeout http-keep-alive 60s
frontend tlslab
    {bind}
{pages}    http-request return status 404 content-type text/plain string \"not found\"
",
        buffer = buffer_bytes(&site.page_sizes),
    );
    let path = dir.join("haproxy.cfg");
    fs::write(&path, config)?;
    Ok(path)
}

/// Fails with a clear message if HAProxy is missing.
fn open(_: &ServerOptions) -> Result<Arc<dyn ServerUnderTest>> {
    let program = ProgramKind {
        kind: ServerKind::Haproxy,
        name: DESCRIPTOR.library,
        start: start_haproxy,
        no_categories: STRIPPED,
    };
    Ok(OpensslProgram::open(program, haproxy_versions()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_buffer_holds_the_largest_page() {
        assert_eq!(buffer_bytes(&[]), DEFAULT_BUFFER_BYTES);
        assert_eq!(buffer_bytes(&[1_000]), DEFAULT_BUFFER_BYTES);
        assert_eq!(buffer_bytes(&[50_000, 20_000]), 50_000 + HEAD_ROOM_BYTES);
    }
}
