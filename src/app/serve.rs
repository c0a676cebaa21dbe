//! `tlslab serve`: tlslab's own HTTPS server on one backend and scenario,
//! on loopback unless told otherwise, until `--duration` is over or Ctrl-C;
//! then what it served, its CPU per request and per handshake and, on
//! rustls, where that CPU went.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::load::one_scenario;
use super::session::{check_exports, interrupt_flag, seconds, usage};
use crate::backend::{server_acceptor, BackendId, LibraryInfo, BACKEND_IDS};
use crate::certs::CertCache;
use crate::cli::ServeArgs;
use crate::host::HostInfo;
use crate::report::heading;
use crate::scenario::{parse_name, Group, HandshakeScenario};
use crate::workload::serve::Server;

/// A real backend by name (not the mock), for a server.
pub(crate) fn server_backend(name: &str) -> Result<BackendId> {
    let id: BackendId = parse_name(name).map_err(|mut error| {
        error.valid = BACKEND_IDS.to_vec();
        usage(error)
    })?;
    if id == BackendId::Mock {
        return Err(usage(format!(
            "the mock backend has no TLS server; valid backends: {}",
            BACKEND_IDS.join(", ")
        )));
    }
    Ok(id)
}

/// Refuses a scenario the backend cannot serve, with its reason.
pub(crate) fn check_supported(id: BackendId, scenario: &HandshakeScenario) -> Result<LibraryInfo> {
    let backend = id.open();
    if let Some(reason) = backend.unsupported_reason(scenario) {
        let hint = if scenario.group == Group::RsaKeyTransport && id != BackendId::Openssl {
            " (rustls has no RSA key transport: give --group x25519, or --backend openssl)"
        } else {
            ""
        };
        return Err(usage(format!("{reason}{hint}")));
    }
    Ok(backend.library())
}

/// `--bind`: an address and port; loopback only unless `allow_non_loopback`.
fn parse_bind(text: &str, allow_non_loopback: bool) -> Result<SocketAddr> {
    let address: SocketAddr = text.parse().map_err(|_| {
        usage(format!(
            "--bind '{text}' is not ADDRESS:PORT (e.g. 127.0.0.1:8443, [::1]:0)"
        ))
    })?;
    if !address.ip().is_loopback() && !allow_non_loopback {
        return Err(usage(format!(
            "--bind {address} is not on loopback: other hosts could reach the server; add --allow-non-loopback if that is meant"
        )));
    }
    Ok(address)
}

/// The default number of workers: one per core.
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

pub fn run(args: &ServeArgs) -> Result<i32> {
    let id = server_backend(&args.backend)?;
    let scenario = one_scenario(&args.axes, None, "serve")?;
    let library = check_supported(id, &scenario)?;
    let address = parse_bind(&args.bind, args.allow_non_loopback)?;
    let workers = args.workers.unwrap_or_else(cores);
    if workers == 0 {
        return Err(usage("--workers must be at least 1"));
    }
    let duration = args
        .duration
        .map(|s| seconds("duration", s, false))
        .transpose()?;
    check_exports(&args.exports)?;

    let certs = CertCache::new(args.cert_dir.clone().unwrap_or_else(CertCache::default_dir));
    let credentials = certs.get(scenario.cert, scenario.chain_depth)?;
    let acceptor = server_acceptor(id, &scenario, &credentials)?;
    let interrupt = interrupt_flag();
    let server = Server::start(acceptor, address, workers, id != BackendId::Openssl)?;
    if !args.quiet {
        eprintln!(
            "serving https://{}/page_SIZE ({}, {} on {}, {workers} workers) {}",
            server.address(),
            crate::certs::SERVER_NAME,
            scenario.describe(),
            library.backend,
            match duration {
                Some(d) => format!("for {:.0} s; Ctrl-C stops it sooner", d.as_secs_f64()),
                None => "until Ctrl-C".to_string(),
            }
        );
    }
    let started = Instant::now();
    while !interrupt.load(Ordering::SeqCst) && duration.is_none_or(|d| started.elapsed() < d) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let stats = server.stop()?;
    let document = crate::report::serve::document(
        heading(&HostInfo::current(), std::slice::from_ref(&library)),
        &scenario.describe(),
        &library.backend,
        &stats,
    );
    args.display.print(&document)?;
    args.exports.write(&document)?;
    // Ctrl-C is how a server without --duration is meant to stop: not an error.
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_binds_without_the_flag() {
        assert!(parse_bind("127.0.0.1:0", false).is_ok());
        assert!(parse_bind("[::1]:8443", false).is_ok());
        assert!(parse_bind("0.0.0.0:8443", false).is_err());
        assert!(parse_bind("0.0.0.0:8443", true).is_ok());
        assert!(parse_bind("localhost", false).is_err());
    }
}
