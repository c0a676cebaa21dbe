//! `tlslab load`: an HTTPS server under a planned request rate. By default
//! the server is Debian's nginx, started on loopback for the run (serving a
//! generated page of the asked size) and stopped after it whatever happens;
//! `--target` aims at a loopback server the user runs instead. The run is
//! stored (kind `load`) with its results when the load ends, Ctrl-C
//! included (then marked incomplete).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};

use super::session::{
    check_exports, interrupt_flag, open_store, run_info, usage, EXIT_INTERRUPTED,
};
use crate::backend::openssl::client_context;
use crate::backend::{Backend, LibraryInfo};
use crate::certs::CertCache;
use crate::cli::LoadArgs;
use crate::host::HostInfo;
use crate::report::load::LoadReport;
use crate::report::{heading, Document};
use crate::scenario::presets::{LoadPreset, LoadSettings};
use crate::scenario::{parse_name, HandshakeMatrix, DEFAULT_CHAIN_DEPTH, DEFAULT_MTU_BYTES};
use crate::store::{LoadRecord, Store, StoredRun};
use crate::workload::load::{self, Endpoint, Mode, Plan};
use crate::workload::nginx::{page_bytes, Nginx, NginxBackend, Site};
use crate::workload::perf;

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

pub fn run(args: &LoadArgs) -> Result<i32> {
    let preset = args
        .preset
        .as_deref()
        .map(parse_name::<LoadPreset>)
        .transpose()
        .map_err(usage)?;
    let defaults = preset.map(LoadPreset::settings);
    // The scenario: the preset's, or one value per axis.
    let mut matrix = HandshakeMatrix {
        versions: vec![defaults.map_or(crate::scenario::TlsVersion::Tls13, |d| d.scenario.version)],
        groups: vec![defaults.map_or(crate::scenario::Group::X25519, |d| d.scenario.group)],
        certs: vec![defaults.map_or(crate::scenario::CertKind::EcdsaP256, |d| d.scenario.cert)],
        aeads: vec![defaults.map_or(crate::scenario::Aead::Aes128Gcm, |d| d.scenario.aead)],
        resumptions: vec![crate::scenario::Resumption::Off],
        mutual: vec![false],
        chain_depth: DEFAULT_CHAIN_DEPTH,
        mtu_bytes: DEFAULT_MTU_BYTES,
    };
    matrix = args.axes.apply(matrix)?;
    matrix.validate().map_err(usage)?;
    let scenarios = matrix.expand();
    let [scenario] = scenarios.as_slice() else {
        return Err(usage(format!(
            "load runs one scenario: give one value per axis ({} given in all)",
            scenarios.len()
        )));
    };
    if let Some(reason) = scenario.protocol_conflict() {
        return Err(usage(reason));
    }
    if scenario.version.is_datagram() {
        return Err(usage(
            "load speaks HTTP/1.1 over TLS on TCP; DTLS is measured by handshake (--tls dtls1.2)",
        ));
    }
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
    let target = args.target.as_deref().map(parse_target).transpose()?;
    let profile_wanted = args.perf || preset.is_some();
    if target.is_some() && args.perf {
        return Err(usage(
            "--perf profiles nginx; it cannot profile a --target server",
        ));
    }
    check_exports(&args.exports)?;
    let mut store = open_store(&args.database)?;

    let certs = CertCache::new(args.cert_dir.clone().unwrap_or_else(CertCache::default_dir));
    let credentials = certs.get(scenario.cert, scenario.chain_depth)?;
    let context = client_context(scenario, &credentials)?;
    let interrupt = interrupt_flag();

    // nginx (unless --target): stopped when `server` drops, whatever happens.
    let backend;
    let server: Option<Nginx>;
    let (address, server_name, libraries) = match target {
        Some(address) => {
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
        None => {
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
    if let (Some(nginx), true) = (&server, profile_wanted) {
        let file: PathBuf = nginx.dir().join("perf.data");
        match perf::record(nginx.worker_pid(), &file) {
            Ok(started) => recording = Some(started),
            Err(error) => {
                profile = Err(format!(
                    "{error:#}; the server's CPU per request below is from /proc instead"
                ))
            }
        }
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
    });
    let run_id = store.begin_run(&run_info("load", options.to_string(), &host, &libraries))?;
    let cpu_before = server.as_ref().map(Nginx::worker_cpu_ns).transpose()?;
    let result =
        load::run(&plan, &Endpoint { context, address }, &interrupt).context("running the load")?;
    let server_cpu_ns = match (&server, cpu_before) {
        (Some(nginx), Some(before)) => Some(nginx.worker_cpu_ns()?.saturating_sub(before)),
        _ => None,
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
