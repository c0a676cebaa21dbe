//! The `tlslab cost` command: model and measurement side by side, and with
//! `--breakdown`, where each side's time goes.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;

use super::instrument::{Category, Side};
use super::{counted_breakdown, model, model_side, modelled_breakdown, Breakdown, SideCost};
use crate::backend::{backends_from_list, Backend};
use crate::certs::CertCache;
use crate::cli::CostArgs;
use crate::commands::{
    check_exports, interrupt_flag, open_store, parse_precision, seconds, usage, Bar,
    EXIT_INTERRUPTED,
};
use crate::host::HostInfo;
use crate::measure::{sample_cell, CellOutcome, CellResult, SamplingOptions};
use crate::report::markup::{format_us, grid, Style};
use crate::report::Format;
use crate::scenario::names::{serialize_by_id, Named};
use crate::scenario::{
    parse_name, Aead, CertKind, Group, HandshakeMatrix, HandshakeScenario, Resumption, TlsVersion,
};
use crate::speed::{SpeedCell, SpeedOutcome, SpeedRow};
use crate::stats;
use crate::store::RunInfo;

/// Named cost studies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CostPreset {
    /// `openssl speed rsa2048 ecdsap256 ecdhp256` turned into a per-side
    /// model: TLS 1.2 RSA key transport, ECDHE-RSA and ECDHE-ECDSA, the
    /// client verifying an intermediate and a leaf certificate.
    RsaVsEcdsa,
}

serialize_by_id!(CostPreset);

impl Named for CostPreset {
    const KIND: &'static str = "cost preset";
    const ALL: &'static [Self] = &[CostPreset::RsaVsEcdsa];

    fn id(self) -> &'static str {
        "rsa-vs-ecdsa"
    }
}

fn matrix(args: &CostArgs, preset: Option<CostPreset>) -> Result<HandshakeMatrix> {
    let matrix = match preset {
        Some(CostPreset::RsaVsEcdsa) => HandshakeMatrix {
            versions: vec![TlsVersion::Tls12],
            groups: vec![Group::RsaKeyTransport, Group::P256],
            certs: vec![CertKind::Rsa2048, CertKind::EcdsaP256],
            aeads: vec![Aead::Aes128Gcm],
            resumptions: vec![Resumption::Off],
            mutual: vec![false],
            chain_depth: 3,
        },
        None => HandshakeMatrix {
            versions: vec![TlsVersion::Tls13],
            groups: vec![Group::X25519],
            certs: vec![CertKind::EcdsaP256, CertKind::Rsa2048],
            aeads: vec![Aead::Aes128Gcm],
            resumptions: vec![Resumption::Off],
            mutual: vec![false],
            chain_depth: 3,
        },
    };
    let matrix = args.axes.apply(matrix)?;
    matrix.validate().map_err(usage)?;
    Ok(matrix)
}

/// One scenario on one backend: the model beside the measurement.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioCost {
    pub label: String,
    pub backend: String,
    pub description: String,
    /// Set when the scenario could not be measured.
    pub reason: Option<String>,
    pub sides: Vec<SideCost>,
    /// New handshakes per second one core can serve (measured).
    pub capacity_per_core: Option<f64>,
    /// The same from the model.
    pub modelled_capacity_per_core: Option<f64>,
    pub breakdown: Vec<Breakdown>,
}

#[derive(Serialize)]
struct CostExport<'a> {
    tool_version: &'a str,
    run_id: Option<i64>,
    complete: bool,
    host: &'a HostInfo,
    libraries: &'a [crate::backend::LibraryInfo],
    scenarios: &'a [ScenarioCost],
    primitive_costs_ns: BTreeMap<String, f64>,
}

/// The speed backend with the same id as a handshake backend.
fn speed_backend(id: &str) -> Option<Box<dyn crate::speed::PrimitiveBackend>> {
    crate::speed::backend_by_id(id).ok()
}

pub fn run(args: &CostArgs) -> Result<i32> {
    let preset = args
        .preset
        .as_deref()
        .map(parse_name::<CostPreset>)
        .transpose()
        .map_err(usage)?;
    let matrix = matrix(args, preset)?;
    let default_backends = match preset {
        Some(CostPreset::RsaVsEcdsa) => "openssl",
        None => "openssl,rustls-aws-lc",
    };
    let backends: Vec<Arc<dyn Backend>> =
        backends_from_list(args.backend.as_deref().unwrap_or(default_backends)).map_err(usage)?;
    let options = SamplingOptions {
        precision: parse_precision(&args.precision)?,
        max_time: seconds("max-time", args.max_time)?,
        min_samples: args.min_samples.max(2),
        warmup: seconds("warmup", args.warmup)?,
    };
    let primitive_options = SamplingOptions {
        max_time: options.max_time.min(Duration::from_millis(500)),
        min_samples: 5,
        warmup: Duration::from_millis(20),
        ..options
    };
    check_exports(&args.exports)?;
    let mut store = open_store(&args.database)?;
    let host = HostInfo::current();
    let libraries: Vec<_> = backends.iter().map(|b| b.library()).collect();
    let run_id = store.begin_run(&RunInfo {
        kind: "cost".to_string(),
        tool_version: crate::TOOL_VERSION.to_string(),
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
        options_json: serde_json::json!({
            "preset": preset.map(Named::id),
            "backends": backends.iter().map(|b| b.id()).collect::<Vec<_>>(),
            "matrix": matrix,
            "sampling": options,
            "breakdown": args.breakdown,
        })
        .to_string(),
        host: host.clone(),
        libraries: libraries.clone(),
    })?;

    let certs = CertCache::new(args.cert_dir.clone().unwrap_or_else(CertCache::default_dir));
    let interrupt = interrupt_flag();
    let scenarios = matrix.expand();
    let bar = Bar::new(scenarios.len() * backends.len(), args.quiet);
    let mut primitive_ns: BTreeMap<(String, SpeedRow), f64> = BTreeMap::new();
    let mut results = Vec::new();
    let mut interrupted = false;
    'outer: for scenario in &scenarios {
        for backend in &backends {
            bar.0
                .set_message(format!("{} {}", backend.id(), scenario.label()));
            let mut result = ScenarioCost {
                label: scenario.label(),
                backend: backend.id().to_string(),
                description: scenario.describe(),
                reason: None,
                sides: Vec::new(),
                capacity_per_core: None,
                modelled_capacity_per_core: None,
                breakdown: Vec::new(),
            };
            let reason = scenario
                .protocol_conflict()
                .or_else(|| backend.unsupported_reason(scenario));
            if let Some(reason) = reason {
                result.reason = Some(format!("unsupported: {reason}"));
                results.push(result);
                bar.0.inc(1);
                continue;
            }
            // The measurement; a scenario that cannot be set up is a row saying why.
            let prepared = certs
                .get(scenario.cert, scenario.chain_depth)
                .and_then(|credentials| {
                    Ok((backend.handshaker(scenario, &credentials)?, credentials))
                });
            let (mut handshaker, credentials) = match prepared {
                Ok(prepared) => prepared,
                Err(error) => {
                    result.reason = Some(format!("failed: {error:#}"));
                    results.push(result);
                    bar.0.inc(1);
                    continue;
                }
            };
            let outcome = match sample_cell(
                handshaker.as_mut(),
                scenario,
                backend.capabilities().reports_signature_scheme,
                &options,
                &interrupt,
            ) {
                Ok(outcome) => outcome,
                Err(_) => {
                    interrupted = true;
                    break 'outer;
                }
            };
            let cell = CellResult {
                backend: backend.id().to_string(),
                scenario: *scenario,
                outcome,
            };
            store.save_cell(run_id, &cell)?;
            let measured = |pick: fn(&crate::measure::Sample) -> u64| -> Option<f64> {
                let values: Vec<f64> = cell.samples().iter().map(|s| pick(s) as f64).collect();
                stats::summarize(&values).map(|s| s.median)
            };
            if let CellOutcome::Failed { reason } = &cell.outcome {
                result.reason = Some(format!("failed: {reason}"));
            }
            // The primitive costs the model needs.
            let speed = speed_backend(backend.id()).context("no primitive backend")?;
            let mut costs: BTreeMap<SpeedRow, f64> = BTreeMap::new();
            for side in [Side::Client, Side::Server] {
                for (operation, _) in model::operation_counts(scenario, side) {
                    let Some((row, _)) = model::cost_row(scenario, side, operation) else {
                        continue;
                    };
                    let key = (backend.id().to_string(), row);
                    if !primitive_ns.contains_key(&key) {
                        let outcome = match crate::speed::measure_row(
                            speed.as_ref(),
                            &row,
                            &primitive_options,
                            &interrupt,
                        ) {
                            Ok(outcome) => outcome,
                            Err(_) => {
                                interrupted = true;
                                break 'outer;
                            }
                        };
                        if let SpeedOutcome::Measured { ns_per_op, .. } = &outcome {
                            if let Some(summary) = stats::summarize(ns_per_op) {
                                primitive_ns.insert(key.clone(), summary.median);
                            }
                        }
                        store.save_speed_cell(
                            run_id,
                            &SpeedCell {
                                backend: backend.id().to_string(),
                                row,
                                outcome,
                            },
                        )?;
                    }
                    if let Some(ns) = primitive_ns.get(&key) {
                        costs.insert(row, *ns);
                    }
                }
            }
            let client = model_side(scenario, Side::Client, &costs, measured(|s| s.client_ns));
            let server = model_side(scenario, Side::Server, &costs, measured(|s| s.server_ns));
            result.capacity_per_core = server.measured_ns.map(|ns| 1e9 / ns);
            result.modelled_capacity_per_core =
                (server.modelled_ns > 0.0).then(|| 1e9 / server.modelled_ns);
            if args.breakdown && result.reason.is_none() {
                result.breakdown = breakdown(
                    backend.as_ref(),
                    scenario,
                    &credentials,
                    &options,
                    &interrupt,
                    &client,
                    &server,
                )?;
            }
            result.sides = vec![client, server];
            results.push(result);
            bar.0.inc(1);
        }
    }
    bar.0.finish_and_clear();
    store.finish_run(run_id, !interrupted)?;

    print!("{}", render_model(&results, Style::Terminal));
    if args.breakdown {
        println!();
        print!("{}", render_breakdown(&results, Style::Terminal));
    }
    let export = CostExport {
        tool_version: crate::TOOL_VERSION,
        run_id: store.path().map(|_| run_id),
        complete: !interrupted,
        host: &host,
        libraries: &libraries,
        scenarios: &results,
        primitive_costs_ns: primitive_ns
            .iter()
            .map(|((backend, row), ns)| (format!("{backend}/{}", row.label()), *ns))
            .collect(),
    };
    args.exports.write_each(|format| {
        Ok(match format {
            Format::Json => serde_json::to_string_pretty(&export)? + "\n",
            Format::Csv => render_csv(&results),
            _ => {
                let mut text = render_model(&results, Style::Markdown);
                if args.breakdown {
                    text.push('\n');
                    text.push_str(&render_breakdown(&results, Style::Markdown));
                }
                text
            }
        })
    })?;
    if let Some(path) = store.path() {
        eprintln!("results stored as run {run_id} in {}", path.display());
    }
    Ok(if interrupted { EXIT_INTERRUPTED } else { 0 })
}

/// Counted for rustls (an instrumented twin of the backend), modelled otherwise.
fn breakdown(
    backend: &dyn Backend,
    scenario: &HandshakeScenario,
    credentials: &crate::certs::Credentials,
    options: &SamplingOptions,
    interrupt: &AtomicBool,
    client: &SideCost,
    server: &SideCost,
) -> Result<Vec<Breakdown>> {
    let instrumented = match backend.id() {
        "rustls-aws-lc" => Some(crate::backend::rustls::RustlsBackend::aws_lc_rs().instrumented()),
        "rustls-ring" => Some(crate::backend::rustls::RustlsBackend::ring().instrumented()),
        _ => None,
    };
    match instrumented {
        Some(instrumented) => {
            Ok(counted_breakdown(&instrumented, scenario, credentials, options, interrupt)?.0)
        }
        None => Ok([client, server]
            .into_iter()
            .filter_map(modelled_breakdown)
            .collect()),
    }
}

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Client => "client",
        Side::Server => "server",
    }
}

/// The model beside the measurement, one line per side.
pub fn render_model(results: &[ScenarioCost], style: Style) -> String {
    let headers = [
        "backend",
        "scenario",
        "side",
        "operations per handshake",
        "modelled µs",
        "measured µs",
        "explained",
        "capacity/core",
    ];
    let numeric = [false, false, false, false, true, true, true, true];
    let mut rows = Vec::new();
    for result in results {
        if let Some(reason) = &result.reason {
            if result.sides.is_empty() {
                rows.push(vec![
                    result.backend.clone(),
                    result.description.clone(),
                    "—".into(),
                    reason.clone(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                ]);
                continue;
            }
        }
        for side in &result.sides {
            let capacity = match side.side {
                Side::Server => result
                    .capacity_per_core
                    .map(|c| format!("{c:.0} hs/s"))
                    .unwrap_or_default(),
                Side::Client => String::new(),
            };
            rows.push(vec![
                result.backend.clone(),
                result.description.clone(),
                side_name(side.side).to_string(),
                side.summary(),
                format_us(side.modelled_ns / 1000.0),
                side.measured_ns
                    .map(|ns| format_us(ns / 1000.0))
                    .unwrap_or_else(|| "—".into()),
                side.explained()
                    .map(|e| format!("{:.0}%", e * 100.0))
                    .unwrap_or_default(),
                capacity,
            ]);
        }
    }
    let mut out = grid(&headers, &numeric, &rows, style);
    out.push_str("\nmodelled: counted operations x primitive costs measured now on this machine (tlslab speed);\nmeasured: median time inside each side's library calls in real handshakes; capacity: 1 / measured server time.\n");
    out
}

/// Where each side's time goes, in µs and share of the total.
pub fn render_breakdown(results: &[ScenarioCost], style: Style) -> String {
    let mut headers = vec!["backend", "scenario", "side", "method"];
    headers.extend(Category::ALL.iter().map(|c| c.name()));
    headers.extend(["other", "total µs"]);
    let mut numeric = vec![false; 4];
    numeric.extend(vec![true; Category::ALL.len() + 2]);
    let mut rows = Vec::new();
    for result in results {
        for b in &result.breakdown {
            let share = |ns: f64| {
                if ns == 0.0 {
                    "—".to_string()
                } else {
                    format!(
                        "{} ({:.0}%)",
                        format_us(ns / 1000.0),
                        ns / b.total_ns * 100.0
                    )
                }
            };
            let mut row = vec![
                result.backend.clone(),
                result.description.clone(),
                side_name(b.side).to_string(),
                b.method.to_string(),
            ];
            row.extend(b.categories.iter().map(|(_, ns)| share(*ns)));
            row.push(share(b.other_ns));
            row.push(format_us(b.total_ns / 1000.0));
            rows.push(row);
        }
    }
    let mut out = grid(&headers, &numeric, &rows, style);
    out.push_str("\ncounted: every crypto provider call timed inside real handshakes (rustls; the counting adds its own small cost to the total);\nmodelled: counted operations x primitive costs, the rest of the measured time as other (OpenSSL).\n");
    out
}

/// One CSV line per side.
pub fn render_csv(results: &[ScenarioCost]) -> String {
    let mut out = String::from("label,backend,side,reason,operations,modelled_ns,measured_ns,explained,capacity_per_core\n");
    for result in results {
        for side in &result.sides {
            let fields = [
                result.label.clone(),
                result.backend.clone(),
                side_name(side.side).to_string(),
                result.reason.clone().unwrap_or_default(),
                side.summary(),
                format!("{:.0}", side.modelled_ns),
                side.measured_ns
                    .map(|ns| format!("{ns:.0}"))
                    .unwrap_or_default(),
                side.explained()
                    .map(|e| format!("{e:.4}"))
                    .unwrap_or_default(),
                if side.side == Side::Server {
                    result
                        .capacity_per_core
                        .map(|c| format!("{c:.1}"))
                        .unwrap_or_default()
                } else {
                    String::new()
                },
            ];
            let quoted: Vec<String> = fields.iter().map(|f| crate::report::csv_quote(f)).collect();
            out.push_str(&quoted.join(","));
            out.push('\n');
        }
    }
    out
}
