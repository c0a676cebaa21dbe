//! `tlslab load`: an HTTPS server under a planned request rate. By default
//! the server is Debian's nginx, started on loopback for the run (serving a
//! generated page of the asked size) and stopped after it whatever happens;
//! `--server embedded` starts tlslab's own HTTPS server in this process
//! instead (on its own threads, stopped after the run; its threads' CPU and,
//! on rustls, its counted breakdown are reported; a preset's study runs on
//! it, on OpenSSL, by default). `--target` aims at a server the user runs,
//! after a probe of what it accepts (`--probe-only`: the probe alone); off
//! loopback only with `--i-have-permission` and `--max-rate`, checked
//! before anything is sent. With `--measure time,instructions` one server
//! handshake of the same scenario is counted under valgrind after the
//! load, per category, beside perf's categories. The run is stored (kind
//! `load`) with its results when the load ends, Ctrl-C included (then
//! marked incomplete).

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};

use super::serve::{check_supported, cores, event_loop_threads, server_backend, MAX_EVENT_LOOPS};
use super::session::{
    check_exports, interrupt_flag, open_store, run_info, usage, EXIT_INTERRUPTED,
};
use crate::backend::openssl::{client_context, client_context_trusting, probe, Trust};
use crate::backend::{server_acceptor, Backend, BackendId, LibraryInfo};
use crate::certs::{CertCache, SERVER_NAME};
use crate::cli::{LoadArgs, LoadAxisArgs, MeasureArgs, Seconds};
use crate::host::HostInfo;
use crate::report::load::LoadReport;
use crate::report::{heading, Document};
use crate::scenario::presets::{LoadPreset, LoadSettings};
use crate::scenario::{
    parse_name, Aead, CertKind, Group, HandshakeMatrix, HandshakeScenario, Measure, Named,
    Resumption, TlsVersion, DEFAULT_CHAIN_DEPTH, DEFAULT_MTU_BYTES,
};
use crate::store::{LoadRecord, Store, StoredRun};
use crate::workload::load::{self, Driver, Endpoint, Mode, Plan};
use crate::workload::nginx::{page_bytes, Nginx, NginxBackend, Site};
use crate::workload::perf;
use crate::workload::serve::Server;

/// The most clients of the blocking driver, one thread each (about 8 MiB
/// of address space and a kernel task per thread): beyond it, event loops
/// hold the connections.
const MAX_CLIENT_THREADS: usize = 1024;

/// Why nginx's samples are not put in symbol categories.
const NGINX_STRIPPED: &str = "nginx runs on Debian's libcrypto.so.3, which is stripped of its internal symbols: perf names only its exported functions there, so a split per symbol category would mislead; the split per shared object above stands (for categories, run the embedded server: --server embedded --backend openssl)";

/// Parses a size: bytes, or with k/m (10^3, 10^6).
fn parse_size(text: &str) -> Result<usize> {
    let lower = text.trim().to_ascii_lowercase();
    let (digits, unit) = match lower.strip_suffix('k') {
        Some(d) => (d, 1_000),
        None => match lower.strip_suffix('m') {
            Some(d) => (d, 1_000_000),
            None => (lower.as_str(), 1),
        },
    };
    let value: usize = digits.parse().map_err(|_| {
        usage(format!(
            "--size '{text}' is not a size (bytes, or e.g. 50k, 1m)"
        ))
    })?;
    let size = value * unit;
    if size == 0 || size > 100_000_000 {
        return Err(usage(format!(
            "--size must be between 1 byte and 100m, not {text}"
        )));
    }
    Ok(size)
}

fn seconds(name: &str, value: f64, zero_ok: bool) -> Result<Duration> {
    if !value.is_finite() || value < 0.0 || (!zero_ok && value == 0.0) {
        return Err(usage(format!(
            "--{name} must be a {} number of seconds, not {value}",
            if zero_ok { "non-negative" } else { "positive" }
        )));
    }
    Ok(Duration::from_secs_f64(value))
}

/// A `--target` as given.
#[derive(Debug)]
struct Target {
    address: SocketAddr,
    /// The host as written (sent as SNI by the probe when it is a name).
    host: String,
}

impl Target {
    /// The server's name: `given` (`--server-name`), else the host as
    /// written when it is a name, else the test chain's name.
    fn server_name(&self, given: Option<&str>) -> String {
        match given {
            Some(name) => name.to_string(),
            None if self.host.parse::<IpAddr>().is_ok() => SERVER_NAME.to_string(),
            None => self.host.clone(),
        }
    }
}

/// Splits a `--target` given as a URL, `https://host[:port][/path]`, into
/// HOST:PORT (port 443 by default) and its path (None when it is `/` or
/// absent); anything else is returned as it is, with no path.
fn split_url(text: &str) -> Result<(String, Option<String>)> {
    if text.starts_with("http://") {
        return Err(usage(format!(
            "--target {text}: tlslab measures TLS; give an https:// URL or HOST:PORT"
        )));
    }
    let Some(rest) = text.strip_prefix("https://") else {
        return Ok((text.to_string(), None));
    };
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, ""),
    };
    if authority.is_empty() {
        return Err(usage(format!("--target {text}: the URL has no host")));
    }
    // A port follows the last ':' unless that ':' is inside an IPv6 literal.
    let has_port = authority
        .rfind(':')
        .is_some_and(|colon| !authority[colon..].contains(']'));
    let address = if has_port {
        authority.to_string()
    } else {
        format!("{authority}:443")
    };
    let path = (!path.is_empty() && path != "/").then(|| path.to_string());
    Ok((address, path))
}

/// Parses a `--target`. Off loopback it is refused unless the user gave
/// consent (`--i-have-permission`) and a rate cap (`--max-rate`), and that
/// is checked before a host name is resolved: without them nothing at all
/// leaves the machine.
fn parse_target(text: &str, consent: bool, max_rate: Option<f64>) -> Result<Target> {
    let not_host_port = || {
        usage(format!(
            "--target '{text}' is not HOST:PORT (e.g. 127.0.0.1:8443)"
        ))
    };
    let (host, port) = match text.parse::<SocketAddr>() {
        Ok(address) => (address.ip().to_string(), address.port()),
        Err(_) => {
            let (host, port) = text.rsplit_once(':').ok_or_else(not_host_port)?;
            let port: u16 = port.parse().map_err(|_| not_host_port())?;
            (host.trim_matches(['[', ']']).to_string(), port)
        }
    };
    if host.is_empty() || port == 0 {
        return Err(not_host_port());
    }
    let literal: Option<IpAddr> = host.parse().ok();
    let loopback = literal.map_or(host.eq_ignore_ascii_case("localhost"), |ip| {
        ip.is_loopback()
    });
    let allowed = loopback || (consent && max_rate.is_some());
    if !allowed {
        return Err(usage(format!(
            "--target {text} is not on loopback: tlslab sends traffic to another machine only with --i-have-permission (you run that server or may load it) and --max-rate REQ/S (a cap on requests and probe handshakes per second); nothing was sent"
        )));
    }
    let address = match literal {
        Some(ip) => SocketAddr::new(ip, port),
        None => (host.as_str(), port)
            .to_socket_addrs()
            .with_context(|| format!("resolving --target {text}"))?
            .find(|address| !loopback || address.ip().is_loopback())
            .with_context(|| format!("--target {text} resolves to no usable address"))?,
    };
    Ok(Target { address, host })
}

/// `--max-rate`: a positive number of requests per second.
fn parse_max_rate(value: Option<f64>) -> Result<Option<f64>> {
    match value {
        Some(rate) if !rate.is_finite() || rate <= 0.0 => Err(usage(format!(
            "--max-rate must be a positive number of requests per second, not {rate}"
        ))),
        other => Ok(other),
    }
}

/// Probes `target` (see [`probe::probe`]), at most `max_rate` handshakes
/// per second off loopback.
fn probe_target(
    target: &Target,
    server_name: Option<&str>,
    max_rate: Option<f64>,
    quiet: bool,
    interrupt: &std::sync::atomic::AtomicBool,
) -> Result<Vec<probe::Attempt>> {
    let pause = match max_rate {
        Some(rate) if !target.address.ip().is_loopback() => Duration::from_secs_f64(1.0 / rate),
        _ => Duration::ZERO,
    };
    let server_name = target.server_name(server_name);
    if !quiet {
        eprintln!(
            "probing {} (versions, groups, suites; one handshake each)...",
            target.address
        );
    }
    probe::probe(
        &probe::ProbeTarget {
            address: target.address,
            server_name,
            pause,
        },
        interrupt,
    )
    .with_context(|| format!("probing {}", target.address))
}

/// One value of an axis option of `load` (`--group x25519`); a list is
/// refused, since a load runs one configuration.
fn one_value<T: Named>(option: &str, text: &str) -> Result<T> {
    if text.contains(',') {
        return Err(usage(format!(
            "{option} takes one value: load runs one configuration (got '{text}')"
        )));
    }
    parse_name(text).map_err(usage)
}

/// The version of `load`'s connections: `--tls`, else the preset's, else
/// TLS 1.3; DTLS is refused.
fn load_version(given: Option<&str>, base: Option<&HandshakeScenario>) -> Result<TlsVersion> {
    let version = match given {
        Some(text) => one_value::<TlsVersion>("--tls", text)?,
        None => base.map_or(TlsVersion::Tls13, |d| d.version),
    };
    if version.is_datagram() {
        return Err(usage(
            "load speaks HTTP/1.1 over TLS on TCP; DTLS is measured by handshake (--tls dtls1.2)",
        ));
    }
    Ok(version)
}

/// The one scenario of `load`: `version` and `resumption`, and `base`'s
/// values (or X25519, ECDSA P-256, AES-128-GCM) with each axis given on
/// the command line replacing its own; refused unless it is one valid TLS
/// scenario.
fn one_scenario(
    axes: &LoadAxisArgs,
    base: Option<&HandshakeScenario>,
    version: TlsVersion,
    resumption: Resumption,
) -> Result<HandshakeScenario> {
    let matrix = HandshakeMatrix {
        versions: vec![version],
        groups: vec![match &axes.group {
            Some(text) => one_value("--group", text)?,
            None => base.map_or(Group::X25519, |d| d.group),
        }],
        certs: vec![match &axes.cert {
            Some(text) => one_value("--cert", text)?,
            None => base.map_or(CertKind::EcdsaP256, |d| d.cert),
        }],
        aeads: vec![match &axes.suite {
            Some(text) => one_value("--suite", text)?,
            None => base.map_or(Aead::Aes128Gcm, |d| d.aead),
        }],
        resumptions: vec![resumption],
        mutual: vec![false],
        chain_depth: axes.chain_depth.unwrap_or(DEFAULT_CHAIN_DEPTH),
        mtu_bytes: DEFAULT_MTU_BYTES,
        // The load generator and the servers speak TCP themselves.
        transports: vec![crate::scenario::Transport::Memory],
    };
    matrix.validate().map_err(usage)?;
    let [scenario] = matrix.expand()[..] else {
        unreachable!("one value per axis expands to one scenario");
    };
    if let Some(reason) = scenario.protocol_conflict() {
        return Err(usage(reason));
    }
    Ok(scenario)
}

/// How connections are used, and the resumption of a new connection:
/// from `--mode` and `--resumption` (`--mode resume`, the old name of
/// resumption, resumes as `version` usually does: psk on TLS 1.3,
/// session_id on TLS 1.2), else keep-alive if the preset says so.
fn mode_and_resumption(
    mode: Option<&str>,
    resumption: Option<&str>,
    version: TlsVersion,
    preset_keeps_alive: bool,
) -> Result<(Mode, Resumption)> {
    let resumption = resumption
        .map(|text| one_value::<Resumption>("--resumption", text))
        .transpose()?;
    let usual = if version.tls_rules() == TlsVersion::Tls13 {
        Resumption::Psk
    } else {
        Resumption::SessionId
    };
    match (mode, resumption) {
        (None, None) if preset_keeps_alive => Ok((Mode::KeepAlive, Resumption::Off)),
        (None | Some("new"), None | Some(Resumption::Off)) => {
            Ok((Mode::NewConnection, Resumption::Off))
        }
        (Some("resume"), None) => Ok((Mode::Resume, usual)),
        (Some("resume"), Some(Resumption::Off)) => Err(usage(
            "--mode resume resumes each later connection; --resumption off makes every one a full handshake: give one of them",
        )),
        (None | Some("new") | Some("resume"), Some(on)) => Ok((Mode::Resume, on)),
        (Some("keepalive"), None | Some(Resumption::Off)) => {
            Ok((Mode::KeepAlive, Resumption::Off))
        }
        (Some("keepalive"), Some(_)) => Err(usage(
            "--resumption resumes a new connection per request; --mode keepalive keeps one connection per client: give one of them",
        )),
        (Some(other), _) => Err(usage(format!(
            "unknown mode '{other}'; valid modes: new, keepalive (resumed connections: --resumption session_id, ticket or psk)"
        ))),
    }
}

pub fn run(args: &LoadArgs) -> Result<i32> {
    let preset = args
        .preset
        .as_deref()
        .map(parse_name::<LoadPreset>)
        .transpose()
        .map_err(usage)?;
    let defaults = preset.map(LoadPreset::settings);
    let base = defaults.as_ref().map(|d| &d.scenario);
    let version = load_version(args.axes.tls.as_deref(), base)?;
    let (mode, resumption) = mode_and_resumption(
        args.mode.as_deref(),
        args.axes.resumption.as_deref(),
        version,
        defaults.is_some_and(|d| d.keep_alive),
    )?;
    let scenario = &one_scenario(&args.axes, base, version, resumption)?;
    let setting = |value: Option<f64>, from: fn(&LoadSettings) -> f64, default: f64| {
        value.or(defaults.as_ref().map(from)).unwrap_or(default)
    };
    let secs = |value: Option<Seconds>| value.map(Seconds::as_secs_f64);
    let size = match &args.size {
        Some(text) => parse_size(text)?,
        None => defaults.map_or(1_000, |d| d.size),
    };
    // A URL target names its page too: `https://host[:port]/path`.
    let (target_text, url_path) = match args.target.as_deref().map(split_url).transpose()? {
        Some((address, path)) => (Some(address), path),
        None => (None, None),
    };
    let page_path = args.path.clone().or(url_path);
    let plan = Plan {
        rate: setting(args.rate, |d| d.rate, 100.0),
        ramp: seconds("ramp", setting(secs(args.ramp), |d| d.ramp_s, 0.0), true)?,
        duration: seconds(
            "duration",
            setting(secs(args.duration), |d| d.duration_s, 10.0),
            false,
        )?,
        path: match &page_path {
            Some(path) if !path.starts_with('/') || path.contains(char::is_whitespace) => {
                return Err(usage(format!(
                    "--path '{path}' is not a path (it starts with / and holds no spaces)"
                )))
            }
            Some(path) => path.clone(),
            None => format!("/page_{size}"),
        },
        // Someone else's page is counted, not compared.
        body: if page_path.is_some() {
            Vec::new()
        } else {
            page_bytes(size)
        },
        mode,
        clients: args.clients.unwrap_or(64),
        max_requests: args.max_requests.unwrap_or(1_000_000),
    };
    load::validate(&plan).map_err(usage)?;
    let driver = match args.event_loops {
        None if mode == Mode::KeepAlive => Driver::EventLoops(1),
        None | Some(0) => Driver::Threads,
        Some(loops) => Driver::EventLoops(event_loop_threads("event-loops", Some(loops))?),
    };
    if driver == Driver::Threads && plan.clients > MAX_CLIENT_THREADS {
        return Err(usage(format!(
            "--clients {} would start as many threads (one blocking thread per client); at most {MAX_CLIENT_THREADS}: for more connections, drive them from event loops, e.g. --event-loops {} (each loop holds many nonblocking connections)",
            plan.clients,
            cores().min(MAX_EVENT_LOOPS)
        )));
    }
    // Checked before anything is started or sent.
    let max_rate = parse_max_rate(args.max_rate)?;
    let target = target_text
        .as_deref()
        .map(|text| parse_target(text, args.i_have_permission, max_rate))
        .transpose()?;
    if let Some(cap) = max_rate {
        if plan.rate > cap {
            return Err(usage(format!(
                "--rate {} is above --max-rate {cap}: lower the rate or raise the cap",
                plan.rate
            )));
        }
    }
    if target.is_none() && (args.probe_only || args.no_probe) {
        return Err(usage("--probe-only and --no-probe go with --target"));
    }
    if args.probe_only && args.no_probe {
        return Err(usage("--probe-only and --no-probe exclude each other"));
    }
    // A preset's study runs on the embedded OpenSSL server (its symbols are
    // there for perf); anything else on nginx, unless told otherwise.
    let embedded = match args.server.as_deref() {
        None => preset.is_some() && target.is_none(),
        Some("nginx") => false,
        Some("embedded") => true,
        Some(other) => {
            return Err(usage(format!(
                "unknown server '{other}'; valid servers: nginx, embedded"
            )))
        }
    };
    if target.is_some() && args.server.is_some() {
        return Err(usage(
            "--target aims at a server you run; --server starts one: give one of them",
        ));
    }
    if !embedded && (args.backend.is_some() || args.threads.is_some()) {
        return Err(usage(
            "--backend and --threads configure the embedded server: add --server embedded",
        ));
    }
    let default_backend = if preset.is_some() {
        "openssl"
    } else {
        "rustls-aws-lc"
    };
    let embedded_backend = embedded
        .then(|| server_backend(args.backend.as_deref().unwrap_or(default_backend)))
        .transpose()?
        .map(|id| Ok::<_, anyhow::Error>((id, check_supported(id, scenario)?)))
        .transpose()?;
    // Each worker is an event loop holding many connections: one per core.
    let workers = event_loop_threads("threads", args.threads)?;
    let profile_wanted = args.perf || preset.is_some();
    if target.is_some() && args.perf {
        return Err(usage(
            "--perf profiles nginx or the embedded server; it cannot profile a --target server",
        ));
    }
    // The counted handshake's backend: the embedded server's, or for
    // nginx tlslab's own OpenSSL.
    let counted_with = counted_backend(args, target.is_some(), embedded_backend.as_ref())?;
    check_exports(&args.exports)?;
    let client_library = LibraryInfo {
        backend: "openssl".to_string(),
        library: "OpenSSL (client)".to_string(),
        version: openssl::version::version()
            .trim_start_matches("OpenSSL ")
            .to_string(),
    };
    let interrupt = interrupt_flag();
    if let (Some(target), true) = (&target, args.probe_only) {
        let attempts = probe_target(
            target,
            args.server_name.as_deref(),
            max_rate,
            args.quiet,
            &interrupt,
        )?;
        let heading = heading(&HostInfo::current(), std::slice::from_ref(&client_library));
        let document =
            crate::report::probe::document(&heading, &target.address.to_string(), &attempts);
        args.display.print(&document)?;
        args.exports.write(&document)?;
        return Ok(0);
    }
    let mut store = open_store(&args.database)?;

    let certs = CertCache::new(args.cert_dir.clone().unwrap_or_else(CertCache::default_dir));
    let credentials = certs.get(scenario.cert, scenario.chain_depth)?;
    let context = match (&target, &args.ca_file) {
        (None, _) => client_context(scenario, &credentials)?,
        (Some(_), None) => {
            client_context_trusting(scenario, &credentials, Trust::SystemAndTestRoot)?
        }
        (Some(_), Some(file)) => client_context_trusting(scenario, &credentials, Trust::File(file))
            .map_err(|e| usage(format!("{e:#}")))?,
    };

    // nginx or the embedded server (unless --target): stopped when
    // `server` or `embedded_server` drops, whatever happens.
    let backend;
    let server: Option<Nginx>;
    let mut embedded_server: Option<(Server, String)> = None;
    let (address, server_name, libraries) = match (&target, embedded_backend) {
        (Some(target), _) => {
            server = None;
            (
                target.address,
                format!("{} (your server)", target.address),
                // The server's libraries are not known; the client's are.
                vec![client_library],
            )
        }
        (None, Some((id, library))) => {
            server = None;
            let acceptor = server_acceptor(id, scenario, &credentials)?;
            let started = Server::start(
                acceptor,
                SocketAddr::from(([127, 0, 0, 1], 0)),
                workers,
                id != BackendId::Openssl,
            )?;
            let address = started.address();
            embedded_server = Some((started, library.backend.clone()));
            (
                address,
                format!(
                    "tlslab's embedded server on {} ({workers} workers)",
                    library.backend
                ),
                vec![library],
            )
        }
        (None, None) => {
            backend = NginxBackend::new()?;
            if let Some(reason) = backend.unsupported_reason(scenario) {
                return Err(usage(reason));
            }
            let nginx = Nginx::serving(
                scenario,
                &credentials,
                &Site {
                    page_sizes: vec![size],
                    session_resumption: mode == Mode::Resume,
                },
            )?;
            let address = nginx.address();
            server = Some(nginx);
            let library = backend.library();
            (address, format!("nginx {}", library.version), vec![library])
        }
    };
    let mut recording = None;
    let mut profile = Err("not asked for (--perf)".to_string());
    let mut profile_scope = "the server's worker process".to_string();
    // perf's file goes in a scratch directory made only when profiling,
    // kept until the profile is read.
    let mut perf_dir = None;
    let mut perf_file = || -> Result<PathBuf> {
        crate::child::remove_leftovers();
        let dir = crate::child::scratch_dir("perf").context("making perf's directory")?;
        let file = dir.path().join("perf.data");
        perf_dir = Some(dir);
        Ok(file)
    };
    let started_recording = match (&server, &embedded_server, profile_wanted) {
        (_, _, false) | (None, None, true) => None,
        (Some(nginx), _, true) => Some(perf::record(nginx.worker_pid(), &perf_file()?)),
        (None, Some((running, _)), true) => {
            profile_scope =
                "the embedded server's worker threads only (perf record -t)".to_string();
            Some(perf::record_threads(running.thread_ids(), &perf_file()?))
        }
    };
    match started_recording {
        Some(Ok(started)) => recording = Some(started),
        Some(Err(error)) => {
            profile = Err(format!(
                "{error:#}; the server's CPU per request below is from {} instead",
                if embedded {
                    "its threads' CPU clocks"
                } else {
                    "/proc"
                }
            ))
        }
        None => {}
    }
    if !args.quiet {
        eprintln!(
            "loading {server_name} at {:.0} req/s for {:.0} s ({} requests due)...",
            plan.rate,
            plan.duration.as_secs_f64(),
            load::schedule(plan.rate, plan.ramp, plan.duration, plan.max_requests).len()
        );
    }
    // Someone else's server: what it accepts, before it is loaded.
    let probed = match &target {
        Some(target) if !args.no_probe => Some((
            target.address.to_string(),
            probe_target(
                target,
                args.server_name.as_deref(),
                max_rate,
                args.quiet,
                &interrupt,
            )?,
        )),
        _ => None,
    };
    let host = HostInfo::current();
    let options = serde_json::json!({
        "preset": args.preset,
        "scenario": scenario.label(),
        "target": target.as_ref().map(|t| t.address.to_string()),
        "path": page_path,
        "server_name": args.server_name,
        "ca_file": args.ca_file,
        "max_rate": max_rate,
        "perf": profile_wanted,
        "page_bytes": size,
        "plan": &plan,
        "driver": driver,
    });
    let run_id = store.begin_run(&run_info(
        crate::store::RunKind::Load,
        options.to_string(),
        &host,
        &libraries,
    ))?;
    let cpu_before = server.as_ref().map(Nginx::worker_cpu_ns).transpose()?;
    let endpoint = Endpoint {
        context,
        address,
        server_name: target.as_ref().map_or_else(
            || SERVER_NAME.to_string(),
            |t| t.server_name(args.server_name.as_deref()),
        ),
        check_body: page_path.is_none(),
    };
    let result = load::run(&plan, &endpoint, driver, &interrupt).context("running the load")?;
    let mut server_cpu_ns = match (&server, cpu_before) {
        // After Ctrl-C nginx may be gone too (a signal sent to every
        // process, as at a shutdown): its CPU is then not known, and what
        // the load measured is still kept.
        (Some(nginx), Some(before)) => match nginx.worker_cpu_ns() {
            Ok(after) => Some(after.saturating_sub(before)),
            Err(_) if result.interrupted => None,
            Err(error) => return Err(error.context("nginx ended during the load")),
        },
        _ => None,
    };
    let embedded_stats = match embedded_server.take() {
        Some((running, backend)) => {
            let stats = running.stop().context("stopping the embedded server")?;
            server_cpu_ns = Some(stats.cpu_ns);
            Some((stats, backend))
        }
        None => None,
    };
    let mut categories = Err(profile.clone().err().unwrap_or_default());
    if let Some(recording) = recording {
        match recording.finish() {
            Ok(found) => {
                profile = Ok(found.objects);
                categories = match &embedded_stats {
                    None => Err(NGINX_STRIPPED.to_string()),
                    Some((_, backend)) if backend == "openssl" => Ok(found.categories),
                    // rustls is Rust: its state machine would read as tlslab's own code.
                    Some((_, backend)) => Err(format!(
                        "the categories read OpenSSL's symbol names; {backend} counts its crypto per category itself (above)"
                    )),
                };
            }
            Err(error) => {
                profile = Err(format!("{error:#}"));
                categories = profile.clone().map(|_| Vec::new());
            }
        }
    }
    drop(server);
    let counted = counted_with.map(|(backend, valgrind)| {
        let bar = super::session::Bar::counting(COUNTED_HANDSHAKES, args.quiet);
        let counted = crate::workload::counted::count_server_handshake(
            scenario,
            backend,
            &certs,
            COUNTED_HANDSHAKES,
            &valgrind,
            &interrupt,
            &|done| bar.0.set_position(done as u64),
        );
        bar.0.finish_and_clear();
        counted
    });

    let record = LoadRecord {
        scenario_id: scenario.label(),
        scenario: scenario.describe(),
        server: server_name,
        plan,
        result,
        server_cpu_ns,
        profile,
        profile_scope,
        categories,
        embedded: embedded_stats,
        counted,
    };
    store
        .save_load(run_id, &record)
        .context("saving the load run")?;
    store.finish_run(run_id, !record.result.interrupted)?;
    let mut document = document(&record, &heading(&host, &libraries));
    if let Some((target, attempts)) = &probed {
        document
            .tables
            .insert(0, crate::report::probe::table(target, attempts));
        document.data["probe"] = crate::report::probe::data(target, attempts);
    }
    args.display.print(&document)?;
    args.exports.write(&document)?;
    if let Some(path) = store.path() {
        eprintln!("results stored as run {run_id} in {}", path.display());
    }
    if record.result.interrupted {
        eprintln!(
            "interrupted: the {} requests that finished are kept (run marked incomplete)",
            record.result.answered + record.result.errors.iter().map(|(_, n)| n).sum::<usize>()
        );
        return Ok(EXIT_INTERRUPTED);
    }
    Ok(if record.result.errors.is_empty() {
        0
    } else {
        1
    })
}

fn document(record: &LoadRecord, heading: &str) -> Document {
    LoadReport {
        heading: heading.to_string(),
        scenario: record.scenario.clone(),
        server: record.server.clone(),
        plan: &record.plan,
        result: &record.result,
        server_cpu_ns: record.server_cpu_ns,
        profile: record.profile.clone(),
        profile_scope: record.profile_scope.clone(),
        categories: record.categories.clone(),
        counted: record.counted.clone(),
        embedded: record
            .embedded
            .as_ref()
            .map(|(stats, backend)| (stats, backend.as_str())),
    }
    .document()
}

/// Server handshakes counted by `--measure time,instructions`: the
/// counts repeat, so a few suffice.
const COUNTED_HANDSHAKES: usize = 3;

/// What `--measure` asks of a load: time always; with instructions, the
/// backend whose server handshake is counted and the valgrind that counts
/// it (`None` without instructions). Memory, instructions alone and a
/// `--target` server are usage errors.
fn counted_backend(
    args: &LoadArgs,
    target: bool,
    embedded: Option<&(BackendId, LibraryInfo)>,
) -> Result<Option<(std::sync::Arc<dyn Backend>, String)>> {
    let (measures, valgrind) = MeasureArgs {
        measure: args.measure.clone(),
        breakdown: false,
    }
    .checked()?;
    if measures.contains(&Measure::Memory) {
        return Err(usage(
            "load measures time and, beside it, instructions; memory is counted per handshake (tlslab handshake --measure memory), and the server's per idle connection by cargo bench --bench serve_idle",
        ));
    }
    if !measures.contains(&Measure::Time) {
        return Err(usage(
            "load measures time; the counted handshake comes beside it: --measure time,instructions",
        ));
    }
    let Some(valgrind) = valgrind else {
        return Ok(None);
    };
    if target {
        return Err(usage(
            "--measure instructions counts the server's library in process; a --target server's library is not known (run it as --server embedded or nginx)",
        ));
    }
    let id = embedded.map_or(BackendId::Openssl, |(id, _)| *id);
    Ok(Some((id.open(), valgrind)))
}

/// A stored load run as a document (for `tlslab report`).
pub(crate) fn stored_document(store: &Store, run: &StoredRun) -> Result<Document> {
    let record = store.load_load(run.id)?.ok_or_else(|| {
        super::session::NoResults(format!(
            "load run {} stored no results (it stopped before the load ended)",
            run.id
        ))
    })?;
    Ok(document(&record, &heading(&run.host, &run.libraries)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("50k").unwrap(), 50_000);
        assert_eq!(parse_size("1m").unwrap(), 1_000_000);
        assert_eq!(parse_size("512").unwrap(), 512);
        assert!(parse_size("0").is_err());
        assert!(parse_size("fifty").is_err());
    }

    #[test]
    fn a_url_target_names_its_address_and_page() {
        let split = |text: &str| split_url(text).unwrap();
        assert_eq!(
            split("127.0.0.1:8443"),
            ("127.0.0.1:8443".to_string(), None)
        );
        assert_eq!(
            split("https://127.0.0.1"),
            ("127.0.0.1:443".to_string(), None)
        );
        assert_eq!(
            split("https://localhost:8443/"),
            ("localhost:8443".to_string(), None)
        );
        assert_eq!(
            split("https://[::1]/a/b.html?x=1"),
            ("[::1]:443".to_string(), Some("/a/b.html?x=1".to_string()))
        );
        assert_eq!(
            split("https://[::1]:8443/index.html"),
            ("[::1]:8443".to_string(), Some("/index.html".to_string()))
        );
        assert!(split_url("http://127.0.0.1/").is_err());
        assert!(split_url("https:///index.html").is_err());
    }

    #[test]
    fn a_target_off_loopback_needs_consent_and_a_rate_cap() {
        assert!(parse_target("127.0.0.1:8443", false, None).is_ok());
        assert!(parse_target("[::1]:8443", false, None).is_ok());
        assert!(parse_target("example", false, None).is_err());
        for (consent, cap) in [(false, None), (true, None), (false, Some(5.0))] {
            let refused = parse_target("192.0.2.1:443", consent, cap).unwrap_err();
            assert!(format!("{refused:#}").contains("--i-have-permission"));
            // A name is not even resolved without them.
            let refused = parse_target("example.invalid:443", consent, cap).unwrap_err();
            assert!(format!("{refused:#}").contains("nothing was sent"));
        }
        let target = parse_target("192.0.2.1:443", true, Some(5.0)).unwrap();
        assert_eq!(target.address.to_string(), "192.0.2.1:443");
    }
}
