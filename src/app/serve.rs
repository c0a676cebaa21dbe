//! `tlslab serve`: tlslab's own HTTPS server on one backend, offering the
//! versions, groups, certificates and suites it is given (each list in its
//! order of preference; one value pins it), on loopback unless told
//! otherwise, until `--duration` is over, Ctrl-C or SIGTERM; then what it
//! served, its CPU per request and per handshake and, on rustls, where
//! that CPU went.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::session::{check_exports, interrupt_flag, seconds, usage};
use crate::backend::{listed, no_tls_server, Backend, BackendId, LibraryInfo};
use crate::certs::CertCache;
use crate::cli::values::MAX_EVENT_LOOPS;
use crate::cli::{ServeArgs, ServeOfferArgs};
use crate::host::{available_cores, HostInfo};
use crate::report::heading;
use crate::scenario::{distinct, Group, HandshakeScenario, Named, ServerOffer};
use crate::workload::serve::{Limits, Server};

/// A backend that has a TLS server (over TCP), for a server.
pub(crate) fn server_backend(id: BackendId) -> Result<BackendId> {
    if let Some(reason) = no_tls_server(id.open().as_ref()) {
        let serving: Vec<&str> = listed()
            .filter(|descriptor| no_tls_server((descriptor.open)().as_ref()).is_none())
            .map(|descriptor| descriptor.name())
            .collect();
        return Err(usage(format!(
            "{reason}; valid backends: {}",
            serving.join(", ")
        )));
    }
    Ok(id)
}

/// What a refusal of RSA key transport adds when `backend` has none: the
/// group to give instead, or the listed backends that have it.
fn rsa_key_transport_hint(backend: &dyn Backend) -> String {
    let has_it = |groups: &[Group]| groups.contains(&Group::RsaKeyTransport);
    if has_it(&backend.capabilities().groups_tls12) {
        return String::new();
    }
    let others: String = listed()
        .filter(|descriptor| has_it(&(descriptor.capabilities)().groups_tls12))
        .map(|descriptor| format!(", or --backend {}", descriptor.name()))
        .collect();
    format!(
        " ({} has no RSA key transport: give --group x25519{others})",
        backend.library().library
    )
}

/// Refuses a scenario the backend cannot serve, with its reason.
pub(crate) fn check_supported(id: BackendId, scenario: &HandshakeScenario) -> Result<LibraryInfo> {
    let backend = id.open();
    if let Some(reason) = backend.unsupported_reason(scenario) {
        let hint = if scenario.group == Group::RsaKeyTransport {
            rsa_key_transport_hint(backend.as_ref())
        } else {
            String::new()
        };
        return Err(usage(format!("{reason}{hint}")));
    }
    Ok(backend.library())
}

/// The offer of `serve`'s options: each list given replaces the default's.
/// Refused (with the reason) if a value takes part in no handshake the
/// backend can make with the rest of the offer.
fn offer_from(args: &ServeOfferArgs, backend: &dyn Backend) -> Result<(ServerOffer, LibraryInfo)> {
    /// The values given, each once, else the default's.
    fn list<T: Copy + PartialEq>(given: &Option<Vec<T>>, default: Vec<T>) -> Vec<T> {
        given.as_deref().map_or(default, distinct)
    }
    let default = ServerOffer::default();
    let mut offer = ServerOffer {
        versions: list(&args.tls, default.versions),
        groups: list(&args.group, default.groups),
        certs: list(&args.cert, default.certs),
        aeads: list(&args.suite, default.aeads),
        ..default
    };
    if let Some(resumption) = args.resumption {
        offer.resumption = resumption;
    }
    if let Some(depth) = args.chain_depth {
        offer.chain_depth = depth;
    }
    if offer.versions.iter().any(|v| v.is_datagram()) {
        return Err(usage(
            "serve speaks HTTP/1.1 and HTTP/2 over TLS on TCP; DTLS and QUIC are measured by handshake (--tls dtls1.2, --tls quic)",
        ));
    }
    // Why a combination cannot be served: the protocol's rule or the backend's gap.
    let why_not = |s: &HandshakeScenario| {
        s.protocol_conflict()
            .map(|reason| (false, reason))
            .or_else(|| backend.unsupported_reason(s).map(|reason| (true, reason)))
    };
    let combinations = offer.combinations();
    let check = |option: &str, value: &str, uses: &dyn Fn(&HandshakeScenario) -> bool| {
        let reasons: Vec<(bool, String)> = combinations
            .iter()
            .filter(|s| uses(s))
            .map(why_not)
            .collect::<Option<Vec<_>>>()
            .unwrap_or_default();
        if reasons.is_empty() {
            return Ok(());
        }
        // The backend's gap says more than a rule the other values break.
        let (_, reason) = reasons
            .iter()
            .find(|(backend_gap, _)| *backend_gap)
            .unwrap_or(&reasons[0]);
        Err(usage(format!("{option} {value}: {reason}")))
    };
    // The options given are blamed before the defaults they break.
    for given_only in [true, false] {
        if args.group.is_some() || !given_only {
            for group in &offer.groups {
                let hint = if *group == Group::RsaKeyTransport {
                    rsa_key_transport_hint(backend)
                } else {
                    String::new()
                };
                check("--group", group.id(), &|s| s.group == *group)
                    .map_err(|e| usage(format!("{e:#}{hint}")))?;
            }
        }
        if args.cert.is_some() || !given_only {
            for cert in &offer.certs {
                check("--cert", cert.id(), &|s| s.cert == *cert)?;
            }
        }
        if args.suite.is_some() || !given_only {
            for aead in &offer.aeads {
                check("--suite", aead.name(), &|s| s.aead == *aead)?;
            }
        }
        if args.tls.is_some() || !given_only {
            for version in &offer.versions {
                check("--tls", version.id(), &|s| s.version == *version)?;
            }
        }
        check("--resumption", offer.resumption.id(), &|_| true)?;
    }
    if let Some(conflict) = backend.offer_conflict(&offer) {
        return Err(usage(conflict));
    }
    Ok((offer, backend.library()))
}

/// `--bind`: ADDRESS:PORT, or HOST:PORT with a host name (`localhost:8443`)
/// resolved here; loopback only unless `allow_non_loopback`. A name must
/// resolve to loopback addresses only; the server listens on the first
/// IPv4 one if there is one (curl and browsers try every address of a
/// name), else on the first.
fn parse_bind(text: &str, allow_non_loopback: bool) -> Result<SocketAddr> {
    let not_address = || {
        usage(format!(
            "--bind '{text}' is not ADDRESS:PORT or HOST:PORT (e.g. 127.0.0.1:8443, [::1]:0, localhost:8443)"
        ))
    };
    let resolved: Vec<SocketAddr> = match text.parse::<SocketAddr>() {
        Ok(address) => vec![address],
        Err(_) => {
            let (host, port) = text.rsplit_once(':').ok_or_else(not_address)?;
            let port: u16 = port.parse().map_err(|_| not_address())?;
            if host.is_empty() {
                return Err(not_address());
            }
            (host, port)
                .to_socket_addrs()
                .map_err(|error| usage(format!("--bind {text}: cannot resolve {host}: {error}")))?
                .collect()
        }
    };
    if !allow_non_loopback {
        if let Some(outside) = resolved.iter().find(|a| !a.ip().is_loopback()) {
            let resolves = if text.parse::<SocketAddr>().is_ok() {
                String::new()
            } else {
                format!(" ({text} resolves to it)")
            };
            return Err(usage(format!(
                "--bind {outside} is not on loopback{resolves}: other hosts could reach the server; add --allow-non-loopback if that is meant"
            )));
        }
    }
    resolved
        .iter()
        .find(|a| a.is_ipv4())
        .or(resolved.first())
        .copied()
        .ok_or_else(|| usage(format!("--bind {text}: the name resolves to no address")))
}

/// A number of event-loop threads: `given` (whose bounds clap has
/// checked: [`crate::cli::values::event_loops`]), or one per core, at most
/// [`MAX_EVENT_LOOPS`].
pub(crate) fn event_loop_threads(given: Option<usize>) -> usize {
    given.unwrap_or_else(|| available_cores().min(MAX_EVENT_LOOPS))
}

pub fn run(args: &ServeArgs) -> Result<i32> {
    if let Some(kind) = args.server {
        return super::serve_program::run(args, kind);
    }
    if args.handshakes {
        return serve_handshakes(args);
    }
    let id = server_backend(args.backend)?;
    let backend = id.open();
    let (offer, library) = offer_from(&args.offer, backend.as_ref())?;
    let address = parse_bind(&args.bind, args.allow_non_loopback)?;
    let workers = event_loop_threads(args.threads);
    let duration = args
        .duration
        .map(|s| seconds("duration", s.as_secs_f64(), false))
        .transpose()?;
    let mut limits = Limits::default();
    if let Some(timeout) = args.header_timeout {
        limits.head_timeout = seconds("header-timeout", timeout.as_secs_f64(), false)?;
    }
    if let Some(timeout) = args.keep_alive_timeout {
        limits.keep_alive_timeout = seconds("keep-alive-timeout", timeout.as_secs_f64(), false)?;
    }
    if let Some(connections) = args.max_connections {
        if connections < workers {
            return Err(usage(format!(
                "--max-connections must be at least --threads ({workers})"
            )));
        }
        limits.max_connections = connections;
    }
    check_exports(&args.exports)?;

    let certs = CertCache::new(args.cert_dir.clone().unwrap_or_else(CertCache::default_dir));
    let chains = offer
        .certs
        .iter()
        .map(|cert| certs.get(*cert, offer.chain_depth))
        .collect::<Result<Vec<_>>>()?;
    let root_pem = certs.root_bundle(&offer.certs, offer.chain_depth)?;
    let acceptor = backend.offer_acceptor(&offer, &chains)?;
    let interrupt = interrupt_flag();
    let counted = id.descriptor().counts_crypto_apart;
    let server = Server::start_with(acceptor, address, workers, counted, limits)?;
    if !args.quiet {
        eprintln!(
            "serving https://{}/page_SIZE ({}, {} on {}, {workers} workers) {}",
            server.address(),
            crate::certs::SERVER_NAME,
            offer.describe(),
            library.subject,
            match duration {
                Some(d) => format!("for {:.0} s; Ctrl-C stops it sooner", d.as_secs_f64()),
                None => "until Ctrl-C".to_string(),
            }
        );
        if server.connection_limit() < limits.max_connections {
            eprintln!(
                "note: the open-file limit (ulimit -n) is {}: the server holds at most {} connections at once (raise the hard limit to hold more)",
                server.open_file_limit(),
                server.connection_limit()
            );
        }
        eprintln!(
            "clients trust the test root{}: curl --cacert {root} --resolve {name}:{port}:{ip} https://{name}:{port}/page_1000",
            if offer.certs.len() > 1 { "s (one per certificate)" } else { "" },
            root = root_pem.display(),
            name = crate::certs::SERVER_NAME,
            port = server.address().port(),
            ip = server.address().ip(),
        );
    }
    let started = Instant::now();
    while !interrupt.load(Ordering::SeqCst) && duration.is_none_or(|d| started.elapsed() < d) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let stats = server.stop()?;
    let document = crate::report::serve::document(
        heading(&HostInfo::current(), std::slice::from_ref(&library)),
        &offer.describe(),
        library.subject,
        &stats,
    );
    args.display.print(&document)?;
    args.exports.write(&document)?;
    // Ctrl-C is how a server without --duration is meant to stop: not an error.
    Ok(0)
}

/// `serve --handshakes`: the server's side of a measuring `handshake
/// --remote`, one control connection at a time (or standard input and
/// output, for a server tlslab starts itself), until --duration or Ctrl-C.
fn serve_handshakes(args: &ServeArgs) -> Result<i32> {
    use crate::workload::remote::{serve_control, Control};
    use std::os::fd::AsFd;
    let address = parse_bind(&args.bind, args.allow_non_loopback)?;
    let duration = args
        .duration
        .map(|s| seconds("duration", s.as_secs_f64(), false))
        .transpose()?;
    let interrupt = interrupt_flag();
    if args.control_stdio {
        let stdin = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned()?);
        let stdout = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
        let mut control = Control::new(stdin, stdout, "the measuring tlslab");
        serve_control(&mut control, address.ip(), &interrupt)?;
        return Ok(0);
    }
    let listener = std::net::TcpListener::bind(address)
        .map_err(|e| usage(format!("cannot listen on {address}: {e}")))?;
    listener.set_nonblocking(true)?;
    if !args.quiet {
        eprintln!(
            "serving handshakes to `tlslab handshake --remote {}` {}",
            listener.local_addr()?,
            match duration {
                Some(d) => format!("for {:.0} s; Ctrl-C stops it sooner", d.as_secs_f64()),
                None => "until Ctrl-C".to_string(),
            }
        );
    }
    let started = Instant::now();
    while !interrupt.load(Ordering::SeqCst) && duration.is_none_or(|d| started.elapsed() < d) {
        let (stream, peer) = match listener.accept() {
            Ok(accepted) => accepted,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            Err(error) => return Err(error.into()),
        };
        stream.set_nonblocking(false)?;
        stream.set_nodelay(true)?;
        // Waits are cut in slices so that Ctrl-C is seen.
        stream.set_read_timeout(Some(Duration::from_millis(500)))?;
        if !args.quiet {
            eprintln!("measuring client {peer} connected");
        }
        let reader = stream.try_clone()?;
        let mut control = Control::new(reader, stream, format!("the client at {peer}"))
            .stopping_on(std::sync::Arc::clone(&interrupt));
        match serve_control(&mut control, address.ip(), &interrupt) {
            Ok(()) if !args.quiet => eprintln!("measuring client {peer} is done"),
            Ok(()) => {}
            Err(error) => eprintln!("measuring client {peer}: {error:#}"),
        }
    }
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

    #[test]
    fn a_host_name_that_resolves_to_loopback_binds() {
        let address = parse_bind("localhost:8450", false).unwrap();
        assert!(address.ip().is_loopback(), "{address}");
        assert_eq!(address.port(), 8450);
        assert!(parse_bind("localhost:", false).is_err());
        assert!(parse_bind(":8450", false).is_err());
    }
}
