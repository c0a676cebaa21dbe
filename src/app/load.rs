//! `tlslab load`: an HTTPS server under a planned request rate. By default
//! the server is Debian's nginx, started on loopback for the run (serving a
//! generated page of the asked size) and stopped after it whatever happens;
//! `--server embedded` starts tlslab's own HTTPS server in this process
//! instead (on its own threads, stopped after the run; its threads' CPU and,
//! on rustls, its counted breakdown are reported); `--target` aims at a
//! loopback server the user runs. The run is stored (kind `load`) with its
//! results when the load ends, Ctrl-C included (then marked incomplete).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};

use super::serve::{check_supported, cores, server_backend};
use super::session::{
    check_exports, interrupt_flag, open_store, run_info, usage, EXIT_INTERRUPTED,
};
use crate::backend::openssl::client_context;
use crate::backend::{server_acceptor, Backend, BackendId, LibraryInfo};
use crate::certs::CertCache;
use crate::cli::{AxisArgs, LoadArgs};
use crate::host::HostInfo;
use crate::report::load::LoadReport;
use crate::report::{heading, Document};
use crate::scenario::presets::{LoadPreset, LoadSettings};
use crate::scenario::{
    parse_name, Aead, CertKind, Group, HandshakeMatrix, HandshakeScenario, Resumption, TlsVersion,
    DEFAULT_CHAIN_DEPTH, DEFAULT_MTU_BYTES,
};
use crate::store::{LoadRecord, Store, StoredRun};
use crate::workload::load::{self, Driver, Endpoint, Mode, Plan};
use crate::workload::nginx::{page_bytes, Nginx, NginxBackend, Site};
use crate::workload::perf;
use crate::workload::serve::Server;

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

/// A `--target`: on loopback only (tlslab never aims load elsewhere).
fn parse_target(text: &str) -> Result<SocketAddr> {
    let address: SocketAddr = text.parse().map_err(|_| {
        usage(format!(
            "--target '{text}' is not HOST:PORT (e.g. 127.0.0.1:8443)"
        ))
    })?;
    if !address.ip().is_loopback() {
        return Err(usage(format!(
            "--target {address} is not on loopback: tlslab only loads servers on this machine's loopback"
        )));
    }
    Ok(address)
}

/// The one scenario of `load` and `serve`: `base`'s values (or TLS 1.3,
/// X25519, ECDSA P-256, AES-128-GCM, no resumption), each axis given on the
/// command line replacing its own; refused unless it is one valid TLS
/// scenario over TCP.
pub(crate) fn one_scenario(
    axes: &AxisArgs,
    base: Option<&HandshakeScenario>,
    command: &str,
) -> Result<HandshakeScenario> {
    let mut matrix = HandshakeMatrix {
        versions: vec![base.map_or(TlsVersion::Tls13, |d| d.version)],
        groups: vec![base.map_or(Group::X25519, |d| d.group)],
        certs: vec![base.map_or(CertKind::EcdsaP256, |d| d.cert)],
        aeads: vec![base.map_or(Aead::Aes128Gcm, |d| d.aead)],
        resumptions: vec![Resumption::Off],
        mutual: vec![false],
        chain_depth: DEFAULT_CHAIN_DEPTH,
        mtu_bytes: DEFAULT_MTU_BYTES,
        // The load generator and the servers speak TCP themselves.
        transports: vec![crate::scenario::Transport::Memory],
    };
    matrix = axes.apply(matrix)?;
    matrix.validate().map_err(usage)?;
    let scenarios = matrix.expand();
    let [scenario] = scenarios.as_slice() else {
        return Err(usage(format!(
            "{command} runs one scenario: give one value per axis ({} given in all)",
            scenarios.len()
        )));
    };
    if let Some(reason) = scenario.protocol_conflict() {
        return Err(usage(reason));
    }
    if scenario.version.is_datagram() {
        return Err(usage(format!(
            "{command} speaks HTTP/1.1 over TLS on TCP; DTLS is measured by handshake (--tls dtls1.2)"
        )));
    }
    Ok(*scenario)
}

pub fn run(args: &LoadArgs) -> Result<i32> {
    let preset = args
        .preset
        .as_deref()
        .map(parse_name::<LoadPreset>)
        .transpose()
        .map_err(usage)?;
    let defaults = preset.map(LoadPreset::settings);
    let scenario = &one_scenario(&args.axes, defaults.as_ref().map(|d| &d.scenario), "load")?;
    let setting = |value: Option<f64>, from: fn(&LoadSettings) -> f64, default: f64| {
        value.or(defaults.as_ref().map(from)).unwrap_or(default)
    };
    let size = match &args.size {
        Some(text) => parse_size(text)?,
        None => defaults.map_or(1_000, |d| d.size),
    };
    let mode = match args.mode.as_deref() {
        None => {
            if defaults.is_some_and(|d| d.keep_alive) {
                Mode::KeepAlive
            } else {
                Mode::NewConnection
            }
        }
        Some("new") => Mode::NewConnection,
        Some("keepalive") => Mode::KeepAlive,
        Some("resume") => Mode::Resume,
        Some(other) => {
            return Err(usage(format!(
                "unknown mode '{other}'; valid modes: new, resume, keepalive"
            )))
        }
    };
    let plan = Plan {
        rate: setting(args.rate, |d| d.rate, 100.0),
        ramp: seconds("ramp", setting(args.ramp, |d| d.ramp_s, 0.0), true)?,
        duration: seconds(
            "duration",
            setting(args.duration, |d| d.duration_s, 10.0),
            false,
        )?,
        path: format!("/page_{size}"),
        body: page_bytes(size),
        mode,
        clients: args.clients.unwrap_or(64),
        max_requests: args.max_requests.unwrap_or(1_000_000),
    };
    load::validate(&plan).map_err(usage)?;
    let driver = match args.event_loops {
        None if mode == Mode::KeepAlive => Driver::EventLoops(1),
        None | Some(0) => Driver::Threads,
        Some(loops) => Driver::EventLoops(loops),
    };
    let target = args.target.as_deref().map(parse_target).transpose()?;
    let embedded = match args.server.as_deref() {
        None | Some("nginx") => false,
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
    if !embedded && (args.backend.is_some() || args.workers.is_some()) {
        return Err(usage(
            "--backend and --workers configure the embedded server: add --server embedded",
        ));
    }
    let embedded_backend = embedded
        .then(|| server_backend(args.backend.as_deref().unwrap_or("rustls-aws-lc")))
        .transpose()?
        .map(|id| Ok::<_, anyhow::Error>((id, check_supported(id, scenario)?)))
        .transpose()?;
    // A worker serves one connection at a time: in keepalive mode every
    // client keeps one, so there are at least as many workers as clients.
    let workers = match args.workers {
        Some(0) => return Err(usage("--workers must be at least 1")),
        Some(n) => n,
        None if mode == Mode::KeepAlive => cores().max(plan.clients),
        None => cores(),
    };
    let profile_wanted = args.perf || preset.is_some();
    if target.is_some() && args.perf {
        return Err(usage(
            "--perf profiles nginx or the embedded server; it cannot profile a --target server",
        ));
    }
    check_exports(&args.exports)?;
    let mut store = open_store(&args.database)?;

    let certs = CertCache::new(args.cert_dir.clone().unwrap_or_else(CertCache::default_dir));
    let credentials = certs.get(scenario.cert, scenario.chain_depth)?;
    let context = client_context(scenario, &credentials)?;
    let interrupt = interrupt_flag();

    // nginx or the embedded server (unless --target): stopped when
    // `server` or `embedded_server` drops, whatever happens.
    let backend;
    let server: Option<Nginx>;
    let mut embedded_server: Option<(Server, String)> = None;
    let (address, server_name, libraries) = match (target, embedded_backend) {
        (Some(address), _) => {
            server = None;
            (
                address,
                format!("{address} (your server)"),
                // The server's libraries are not known; the client's are.
                vec![LibraryInfo {
                    backend: "openssl".to_string(),
                    library: "OpenSSL (client)".to_string(),
                    version: openssl::version::version()
                        .trim_start_matches("OpenSSL ")
                        .to_string(),
                }],
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
    let perf_dir = tempfile::Builder::new().prefix("tlslab-perf-").tempdir()?;
    let file: PathBuf = perf_dir.path().join("perf.data");
    let started_recording = match (&server, &embedded_server, profile_wanted) {
        (_, _, false) | (None, None, true) => None,
        (Some(nginx), _, true) => Some(perf::record(nginx.worker_pid(), &file)),
        (None, Some((running, _)), true) => {
            profile_scope =
                "the embedded server's worker threads only (perf record -t)".to_string();
            Some(perf::record_threads(running.thread_ids(), &file))
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
    let host = HostInfo::current();
    let options = serde_json::json!({
        "preset": args.preset,
        "scenario": scenario.label(),
        "target": target.map(|t| t.to_string()),
        "perf": profile_wanted,
        "page_bytes": size,
        "plan": &plan,
        "driver": driver,
    });
    let run_id = store.begin_run(&run_info("load", options.to_string(), &host, &libraries))?;
    let cpu_before = server.as_ref().map(Nginx::worker_cpu_ns).transpose()?;
    let result = load::run(&plan, &Endpoint { context, address }, driver, &interrupt)
        .context("running the load")?;
    let mut server_cpu_ns = match (&server, cpu_before) {
        (Some(nginx), Some(before)) => Some(nginx.worker_cpu_ns()?.saturating_sub(before)),
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
    if let Some(recording) = recording {
        profile = recording.finish().map_err(|e| format!("{e:#}"));
    }
    drop(server);

    let record = LoadRecord {
        scenario_id: scenario.label(),
        scenario: scenario.describe(),
        server: server_name,
        plan,
        result,
        server_cpu_ns,
        profile,
        profile_scope,
        embedded: embedded_stats,
    };
    store
        .save_load(run_id, &record)
        .context("saving the load run")?;
    store.finish_run(run_id, !record.result.interrupted)?;
    let document = document(&record, &heading(&host, &libraries));
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
        embedded: record
            .embedded
            .as_ref()
            .map(|(stats, backend)| (stats, backend.as_str())),
    }
    .document()
}

/// A stored load run as a document (for `tlslab report`).
pub(crate) fn stored_document(store: &Store, run: &StoredRun) -> Result<Document> {
    let record = store.load_load(run.id)?.with_context(|| {
        format!(
            "load run {} stored no results (it stopped before the load ended)",
            run.id
        )
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
    fn only_loopback_targets_are_accepted() {
        assert!(parse_target("127.0.0.1:8443").is_ok());
        assert!(parse_target("[::1]:8443").is_ok());
        assert!(parse_target("192.0.2.1:443").is_err());
        assert!(parse_target("example").is_err());
    }
}
