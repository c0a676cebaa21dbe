//! `tlslab serve --server nginx|apache|haproxy|caddy`: one of the servers
//! `load --server` measures, started through the same server-under-test
//! code (its generated configuration, the test chain, the generated pages)
//! for a client outside tlslab — h2load, curl, a browser — and stopped
//! with nothing left behind when `--duration` is over, on Ctrl-C or on
//! SIGTERM (killed, the kernel stops it with tlslab). So an outside tool
//! meets exactly the server tlslab's own load meets, without a second copy
//! of its configuration in a script.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::session::{interrupt_flag, seconds, usage};
use crate::certs::CertCache;
use crate::cli::{ServeArgs, ServeOfferArgs};
use crate::scenario::{
    HandshakeMatrix, HandshakeScenario, Named, ServerKind, ServerOffer, DEFAULT_MTU_BYTES,
};
use crate::workload::server::{descriptor, ServerOptions, ServerSetup, SERVERS};
use crate::workload::site::Site;

/// The page size served when `--size` is not given: 1 KB, as `load`'s.
const DEFAULT_PAGE_BYTES: usize = 1_000;

/// Runs the server `kind` until `--duration`, Ctrl-C or SIGTERM.
pub(super) fn run(args: &ServeArgs, kind: ServerKind) -> Result<i32> {
    let descriptor = descriptor(kind);
    if descriptor.in_process {
        let programs: Vec<&str> = SERVERS
            .iter()
            .filter(|d| !d.in_process)
            .map(|d| d.id.name())
            .collect();
        return Err(usage(format!(
            "--server {}: `tlslab serve` without --server is tlslab's own server; --server starts one of {}",
            kind.name(),
            programs.join(", ")
        )));
    }
    let scenario = one_scenario(&args.offer)?;
    let page_sizes = match &args.size {
        None => vec![DEFAULT_PAGE_BYTES],
        Some(sizes) if sizes.iter().any(|s| s.bytes() == 0) => {
            return Err(usage("--size: a page has at least one byte"))
        }
        Some(sizes) => sizes.iter().map(|s| s.bytes()).collect(),
    };
    let duration = args
        .duration
        .map(|s| seconds("duration", s.as_secs_f64(), false))
        .transpose()?;
    let server = (descriptor.open)(&ServerOptions::default())?;
    if let Some(reason) = server.unsupported_reason(&scenario) {
        return Err(usage(format!("--server {}: {reason}", kind.name())));
    }
    let certs = CertCache::new(args.cert_dir.clone().unwrap_or_else(CertCache::default_dir));
    let credentials = certs.get(scenario.cert, scenario.chain_depth)?;
    let root_pem = certs.root_bundle(&[scenario.cert], scenario.chain_depth)?;
    let interrupt = interrupt_flag();
    // Stopped when it drops, whatever happens below.
    let running = server.start(&ServerSetup {
        scenario: &scenario,
        credentials: &credentials,
        site: &Site {
            page_sizes: page_sizes.clone(),
            session_resumption: scenario.resumption.is_on(),
        },
    })?;
    let address = running.address();
    // The address alone on standard output, for a script to read.
    println!("{address}");
    if !args.quiet {
        eprintln!(
            "serving https://{address}/page_{} ({}; {}) {}",
            page_sizes[0],
            running.description(),
            ServerOffer::single(&scenario).describe(),
            match duration {
                Some(d) => format!("for {:.0} s; Ctrl-C stops it sooner", d.as_secs_f64()),
                None => "until Ctrl-C".to_string(),
            }
        );
        eprintln!(
            "clients trust the test root: curl --cacert {root} --resolve {name}:{port}:{ip} https://{name}:{port}/page_{size}",
            root = root_pem.display(),
            name = crate::certs::SERVER_NAME,
            port = address.port(),
            ip = address.ip(),
            size = page_sizes[0],
        );
    }
    let started = Instant::now();
    while !interrupt.load(Ordering::SeqCst) && duration.is_none_or(|d| started.elapsed() < d) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let cpu_ns = running.worker_cpu_ns()?;
    running.stop()?;
    if !args.quiet {
        eprintln!(
            "stopped {}: its workers used {:.3} s of CPU in {:.1} s",
            kind.name(),
            cpu_ns as f64 / 1e9,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(0)
}

/// The one scenario a program serves: one value per list of the offer
/// (TLS 1.3, X25519, ECDSA P-256, AES-128-GCM unless given), as `load`
/// configures it.
fn one_scenario(offer: &ServeOfferArgs) -> Result<HandshakeScenario> {
    /// The one value given, else `default`; a list of several is refused.
    fn one<T: Copy + Named>(option: &str, given: &Option<Vec<T>>, default: T) -> Result<T> {
        match given.as_deref() {
            None => Ok(default),
            Some([value]) => Ok(*value),
            Some(_) => Err(usage(format!(
                "--{option}: --server runs one configuration; give one value"
            ))),
        }
    }
    let default = ServerOffer::default();
    let matrix = HandshakeMatrix {
        versions: vec![one("tls", &offer.tls, default.versions[0])?],
        groups: vec![one("group", &offer.group, default.groups[0])?],
        certs: vec![one("cert", &offer.cert, default.certs[0])?],
        aeads: vec![one("suite", &offer.suite, default.aeads[0])?],
        resumptions: vec![offer.resumption.unwrap_or(default.resumption)],
        mutual: vec![false],
        chain_depth: offer.chain_depth.unwrap_or(default.chain_depth),
        mtu_bytes: DEFAULT_MTU_BYTES,
        // The server and its clients speak TCP themselves.
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
