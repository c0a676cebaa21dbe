//! The `tlslab tunnel` command: options, the matrix of tunnel scenarios per
//! engine, storing each finished cell at once, and the five-table report.

use std::sync::atomic::Ordering;

use anyhow::{Context, Result};
use clap::Args;
use serde::Serialize;

use super::sampler::{sample_inprocess, TunnelCell, TunnelOutcome};
use super::{
    openvpn, Cipher, Compression, Digest, Engine, Payload, TunnelMatrix, DEFAULT_PAYLOAD_BYTES,
};
use crate::backend::LibraryInfo;
use crate::cli::{DatabaseArgs, ExportArgs};
use crate::commands::{
    check_exports, interrupt_flag, open_store, parse_precision, seconds, usage, Bar,
    EXIT_INTERRUPTED,
};
use crate::host::HostInfo;
use crate::measure::{Interrupted, SamplingOptions};
use crate::report::tunnel::{self as tunnel_report, TunnelReport};
use crate::report::Format;
use crate::scenario::names::{parse_list, parse_name, serialize_by_id, Named};
use crate::store::{RunInfo, Store};

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  tlslab tunnel --preset openvpn-classic
  tlslab tunnel --cipher aes-128-gcm,chacha20-poly1305,aes-128-cbc --digest sha256 --compression none,lz4 --payload random,text
  tlslab tunnel --cipher bf-cbc --digest sha1 --size 64,512,1400,8000
  tlslab tunnel --engine inprocess,openvpn --cipher aes-128-cbc,bf-cbc --digest sha1   (as root, with openvpn installed)")]
pub struct TunnelArgs {
    /// A named matrix: openvpn-classic (16 CBC ciphers x 25 digest names x
    /// compression off/lz4 x random/zero payloads). Axis options override its axes.
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,

    /// Ciphers: none, bf-cbc, cast5-cbc, des-cbc, desx-cbc, des-ede-cbc,
    /// des-ede3-cbc, rc2-cbc, rc2-40-cbc, rc2-64-cbc, seed-cbc,
    /// camellia-128/192/256-cbc, aes-128/192/256-cbc, aes-128-gcm,
    /// aes-256-gcm, chacha20-poly1305. [default: aes-128-gcm,aes-256-gcm,chacha20-poly1305,aes-128-cbc,bf-cbc]
    #[arg(long, value_name = "LIST")]
    pub cipher: Option<String>,

    /// HMAC digests (ignored by AEAD ciphers): none, md4, md5, sha0, sha1,
    /// ripemd160, sha224, sha256, sha384, sha512, whirlpool, sha3-256,
    /// blake2b-512, and OpenVPN's aliases (RSA-SHA1, DSA...). [default: sha256]
    #[arg(long, value_name = "LIST")]
    pub digest: Option<String>,

    /// Compression: none, lz4, lzo (with the `lzo` cargo feature). [default: none]
    #[arg(long, value_name = "LIST")]
    pub compression: Option<String>,

    /// Payloads: random, zero, text (HTML-like). [default: random]
    #[arg(long, value_name = "LIST")]
    pub payload: Option<String>,

    /// Payload bytes per packet; a list is a size sweep. [default: 1400]
    #[arg(long, value_name = "LIST")]
    pub size: Option<String>,

    /// Engines: inprocess (both ends in this process), openvpn (a real
    /// OpenVPN static-key tunnel between network namespaces; root only).
    #[arg(long, value_name = "LIST", default_value = "inprocess")]
    pub engine: String,

    /// Sample until the 95% confidence interval of the median is within ± this.
    /// [default: 1%, the preset's 2%]
    #[arg(long, value_name = "PERCENT")]
    pub precision: Option<String>,

    /// Time budget per cell, in seconds, once the minimum samples are taken.
    /// [default: 1, the preset's 0.4]
    #[arg(long, value_name = "SECONDS")]
    pub max_time: Option<f64>,

    /// Fewest samples per cell. [default: 10, the preset's 20]
    #[arg(long, value_name = "N")]
    pub min_samples: Option<usize>,

    /// Warm-up per cell before sampling, in seconds. [default: 0.1, the preset's 0.02]
    #[arg(long, value_name = "SECONDS")]
    pub warmup: Option<f64>,

    /// Bytes each OpenVPN transfer carries each way, in megabytes (10^6 bytes).
    #[arg(long, value_name = "MB", default_value_t = 16.0)]
    pub transfer_mb: f64,

    /// Leave out the no-tunnel baseline row.
    #[arg(long)]
    pub no_baseline_row: bool,

    /// The row other rows are compared with, by label
    /// (e.g. tunnel_aes-128-cbc_sha1_none_random_1400). [default: the no-tunnel row]
    #[arg(long, value_name = "LABEL")]
    pub baseline: Option<String>,

    #[command(flatten)]
    pub database: DatabaseArgs,

    #[command(flatten)]
    pub exports: ExportArgs,

    /// Do not print the progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

/// A named tunnel matrix with its sampling defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TunnelPreset {
    OpenvpnClassic,
}

serialize_by_id!(TunnelPreset);

impl Named for TunnelPreset {
    const KIND: &'static str = "tunnel preset";
    const ALL: &'static [Self] = &[TunnelPreset::OpenvpnClassic];

    fn id(self) -> &'static str {
        "openvpn-classic"
    }

    fn aliases(self) -> &'static [&'static str] {
        &["classic"]
    }
}

/// The options of a tunnel run, as stored with the run.
#[derive(Debug, Serialize)]
struct StoredOptions<'a> {
    preset: Option<TunnelPreset>,
    engines: &'a [Engine],
    matrix: &'a TunnelMatrix,
    sampling: &'a SamplingOptions,
    transfer_bytes: u64,
    baseline: Option<&'a str>,
}

fn default_matrix() -> TunnelMatrix {
    TunnelMatrix {
        ciphers: vec![
            Cipher::Aes128Gcm,
            Cipher::Aes256Gcm,
            Cipher::Chacha20Poly1305,
            Cipher::Aes128Cbc,
            Cipher::BfCbc,
        ],
        digests: vec![Digest::Sha256],
        compressions: vec![Compression::None],
        payloads: vec![Payload::Random],
        payload_sizes: vec![DEFAULT_PAYLOAD_BYTES],
        with_baseline: true,
    }
}

fn matrix_from(args: &TunnelArgs, preset: Option<TunnelPreset>) -> Result<TunnelMatrix> {
    let mut matrix = match preset {
        Some(TunnelPreset::OpenvpnClassic) => TunnelMatrix::classic(),
        None => default_matrix(),
    };
    if let Some(list) = &args.cipher {
        matrix.ciphers = parse_list(list).map_err(usage)?;
    }
    if let Some(list) = &args.digest {
        matrix.digests = parse_list(list).map_err(usage)?;
    }
    if let Some(list) = &args.compression {
        matrix.compressions = parse_list(list).map_err(usage)?;
    }
    if let Some(list) = &args.payload {
        matrix.payloads = parse_list(list).map_err(usage)?;
    }
    if let Some(list) = &args.size {
        let mut sizes = Vec::new();
        for text in list.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let size: usize = text.parse().map_err(|_| {
                usage(format!(
                    "--size takes byte counts such as 64,1400, got '{text}'"
                ))
            })?;
            if !sizes.contains(&size) {
                sizes.push(size);
            }
        }
        matrix.payload_sizes = sizes;
    }
    if args.no_baseline_row {
        matrix.with_baseline = false;
    }
    matrix.validate().map_err(usage)?;
    Ok(matrix)
}

fn sampling_from(args: &TunnelArgs, preset: Option<TunnelPreset>) -> Result<SamplingOptions> {
    let classic = preset.is_some();
    Ok(SamplingOptions {
        precision: parse_precision(args.precision.as_deref().unwrap_or(if classic {
            "2%"
        } else {
            "1%"
        }))?,
        max_time: seconds(
            "max-time",
            args.max_time.unwrap_or(if classic { 0.4 } else { 1.0 }),
        )?,
        min_samples: args
            .min_samples
            .unwrap_or(if classic { 20 } else { 10 })
            .max(1),
        warmup: seconds(
            "warmup",
            args.warmup.unwrap_or(if classic { 0.02 } else { 0.1 }),
        )?,
    })
}

/// Runs `tlslab tunnel` and returns the exit code.
pub fn run(args: &TunnelArgs) -> Result<i32> {
    let preset = args
        .preset
        .as_deref()
        .map(parse_name::<TunnelPreset>)
        .transpose()
        .map_err(usage)?;
    let matrix = matrix_from(args, preset)?;
    let engines: Vec<Engine> = parse_list(&args.engine).map_err(usage)?;
    if engines.is_empty() {
        return Err(usage("the engine list is empty"));
    }
    let scenarios = matrix.expand();
    if let Some(label) = &args.baseline {
        if !scenarios.iter().any(|s| s.label() == *label) {
            let labels: Vec<String> = scenarios.iter().map(|s| s.label()).collect();
            return Err(usage(format!(
                "the baseline '{label}' is not a row of this matrix; rows: {}",
                labels.join(", ")
            )));
        }
    }
    let sampling = sampling_from(args, preset)?;
    if !(args.transfer_mb.is_finite() && args.transfer_mb > 0.0) {
        return Err(usage(format!(
            "--transfer-mb must be a positive number, got {}",
            args.transfer_mb
        )));
    }
    let transfer_bytes = (args.transfer_mb * 1e6) as u64;
    check_exports(&args.exports)?;
    // The real engine's needs are checked before anything runs.
    let openvpn_version = if engines.contains(&Engine::Openvpn) {
        Some(openvpn::preflight()?)
    } else {
        None
    };
    let mut store = open_store(&args.database)?;

    super::load_legacy_provider();
    let host = HostInfo::current();
    let mut libraries = vec![LibraryInfo {
        backend: "inprocess".to_string(),
        library: "OpenSSL".to_string(),
        version: openssl::version::version()
            .trim_start_matches("OpenSSL ")
            .to_string(),
    }];
    if let Some(version) = &openvpn_version {
        libraries.push(LibraryInfo {
            backend: "openvpn".to_string(),
            library: "OpenVPN".to_string(),
            version: version.clone(),
        });
    }
    let options = StoredOptions {
        preset,
        engines: &engines,
        matrix: &matrix,
        sampling: &sampling,
        transfer_bytes,
        baseline: args.baseline.as_deref(),
    };
    let run_id = store.begin_run(&RunInfo {
        kind: "tunnel".to_string(),
        tool_version: crate::TOOL_VERSION.to_string(),
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
        options_json: serde_json::to_string(&options)?,
        host: host.clone(),
        libraries: libraries.clone(),
    })?;

    let interrupt = interrupt_flag();
    let bar = Bar::new(scenarios.len() * engines.len(), args.quiet);
    let mut cells = Vec::new();
    let mut interrupted = false;
    for &engine in &engines {
        let mut lab = None;
        for scenario in &scenarios {
            if interrupt.load(Ordering::Relaxed) {
                interrupted = true;
                break;
            }
            bar.0
                .set_message(format!("{} {}", engine.id(), scenario.label()));
            let outcome = match engine {
                Engine::Inprocess => sample_inprocess(scenario, &sampling, &interrupt),
                Engine::Openvpn => {
                    if lab.is_none() {
                        lab = Some(openvpn::Lab::create().context("setting up the namespaces")?);
                    }
                    let lab = lab.as_mut().expect("just created");
                    lab.measure(scenario, transfer_bytes, &sampling, &interrupt)
                }
            };
            let outcome = match outcome {
                Ok(outcome) => outcome,
                Err(Interrupted) => {
                    interrupted = true;
                    break;
                }
            };
            let cell = TunnelCell {
                engine,
                scenario: *scenario,
                outcome,
            };
            if let TunnelOutcome::Failed { reason } = &cell.outcome {
                bar.0.suspend(|| {
                    eprintln!("failed: {} {}: {reason}", engine.id(), scenario.label())
                });
            }
            store
                .save_tunnel_cell(run_id, &cell)
                .context("saving a finished cell")?;
            cells.push(cell);
            bar.0.set_position(cells.len() as u64);
        }
        drop(lab);
        if interrupted {
            break;
        }
    }
    bar.0.finish_and_clear();
    store.finish_run(run_id, !interrupted)?;

    let report = build_report(
        &cells,
        args.baseline.clone(),
        store.path().map(|_| run_id),
        !interrupted,
        host,
        libraries,
    );
    print!("{}", tunnel_report::render(&report, Format::Table)?);
    write_exports(&report, &args.exports)?;
    if let Some(path) = store.path() {
        eprintln!("results stored as run {run_id} in {}", path.display());
    }
    if interrupted {
        eprintln!("interrupted: {} finished cells kept", cells.len());
        return Ok(EXIT_INTERRUPTED);
    }
    Ok(0)
}

fn build_report(
    cells: &[TunnelCell],
    baseline: Option<String>,
    run_id: Option<i64>,
    complete: bool,
    host: HostInfo,
    libraries: Vec<LibraryInfo>,
) -> TunnelReport {
    let tables = tunnel_report::build(cells, baseline.as_deref());
    TunnelReport {
        tool_version: crate::TOOL_VERSION.to_string(),
        run_id,
        complete,
        baseline,
        host,
        libraries,
        compression_effect: tables.compression_effect,
        ciphers: tables.ciphers,
        digests: tables.digests,
        baselines: tables.baselines,
        rows: tables.rows,
    }
}

fn write_exports(report: &TunnelReport, exports: &ExportArgs) -> Result<()> {
    exports.write_each(|format| tunnel_report::render(report, format))
}

/// Shows a stored tunnel run again (for `tlslab report`).
pub fn show_stored(
    store: &Store,
    run_id: i64,
    baseline: Option<String>,
    exports: &ExportArgs,
) -> Result<i32> {
    let run = store.load_run(run_id)?;
    let stored_baseline = serde_json::from_str::<serde_json::Value>(&run.options_json)
        .ok()
        .and_then(|options| options.get("baseline")?.as_str().map(String::from));
    let cells = store.load_tunnel_cells(run_id)?;
    let report = build_report(
        &cells,
        baseline.or(stored_baseline),
        Some(run_id),
        run.status == "complete",
        run.host,
        run.libraries,
    );
    println!(
        "run {} started {} ({})\n",
        run.id, run.started_at, run.status
    );
    print!("{}", tunnel_report::render(&report, Format::Table)?);
    write_exports(&report, exports)?;
    Ok(0)
}
