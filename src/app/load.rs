//! `tlslab load`: an HTTPS server under a planned request rate. By default
//! the server is Debian's nginx, started on loopback for the run (serving a
//! generated page of the asked size) and stopped after it whatever happens;
//! `--target` aims at a loopback server the user runs instead.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};

use super::session::{check_exports, interrupt_flag, usage, EXIT_INTERRUPTED};
use crate::backend::openssl::client_context;
use crate::backend::{Backend, LibraryInfo};
use crate::certs::CertCache;
use crate::cli::LoadArgs;
use crate::host::HostInfo;
use crate::report::heading;
use crate::report::load::LoadReport;
use crate::scenario::presets::{LoadPreset, LoadSettings};
use crate::scenario::{parse_name, HandshakeMatrix, DEFAULT_CHAIN_DEPTH, DEFAULT_MTU_BYTES};
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
        transports: vec![crate::scenario::Transport::Memory],
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
        Some(other) => {
            return Err(usage(format!(
                "unknown mode '{other}'; valid modes: new, keepalive"
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
                Vec::<LibraryInfo>::new(),
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

    let report = LoadReport {
        heading: heading(&HostInfo::current(), &libraries),
        scenario: scenario.describe(),
        server: server_name,
        plan: &plan,
        result: &result,
        server_cpu_ns,
        profile,
    };
    let document = report.document();
    args.display.print(&document)?;
    args.exports.write(&document)?;
    if result.interrupted {
        return Ok(EXIT_INTERRUPTED);
    }
    Ok(if result.errors.is_empty() { 0 } else { 1 })
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
