//! `tlslab tunnel`: the matrix of tunnel scenarios per engine; in-process
//! rows sampled in interleaved rounds, OpenVPN rows one tunnel at a time;
//! with `--measure instructions` the in-process rows counted under
//! valgrind (OpenVPN rows say why they cannot be); each cell stored as it
//! finishes; the five-table report and the counted table.

use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;

use super::session::{
    check_exports, empty_shard, finish, interrupt_flag, open_store, run_info, usage, Bar,
    SamplingDefaults, Shard,
};
use crate::backend::LibraryInfo;
use crate::cli::{MeasureArgs, TunnelArgs};
use crate::host::HostInfo;
use crate::measure::{self, Interrupted, Outcome, SamplingOptions};
use crate::report::tunnel::{self as tunnel_report, TunnelReport};
use crate::report::Document;
use crate::scenario::names::{parse_list, parse_name};
use crate::scenario::presets::TunnelPreset;
use crate::scenario::tunnel::{
    Cipher, Compression, Digest, Engine, Payload, TunnelMatrix, TunnelScenario,
    DEFAULT_PAYLOAD_BYTES,
};
use crate::scenario::Measure;
use crate::store::{Store, StoredRun};
use crate::workload::counted::{count_instructions, CountOptions, CountedWork, Work};
use crate::workload::openvpn;
use crate::workload::tunnel::{
    counted_packets, uncountable, CountedTransfer, InprocessProbe, TunnelCell,
};

/// The options of a tunnel run, as stored with the run.
#[derive(Debug, Serialize)]
struct StoredOptions<'a> {
    preset: Option<TunnelPreset>,
    engines: &'a [Engine],
    matrix: &'a TunnelMatrix,
    sampling: &'a SamplingOptions,
    transfer_bytes: u64,
    baseline: Option<&'a str>,
    shard: Option<Shard>,
    measures: &'a [Measure],
    /// The valgrind that counted instructions ("valgrind-3.19.0").
    #[serde(skip_serializing_if = "Option::is_none")]
    valgrind: Option<&'a str>,
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

/// The whole-run budget of a tunnel preset, in seconds: twice what the
/// classic preset takes on a quiet 2-core machine, so a busy machine gets
/// a run that ends (its rows say whether they reached the precision).
pub(crate) const PRESET_BUDGET_S: f64 = 50.0;

/// Sampling defaults of `tunnel`, and of its classic preset.
fn defaults(preset: Option<TunnelPreset>) -> SamplingDefaults {
    let slice = Duration::ZERO; // each sample is already a batch of about 1 ms
    match preset {
        Some(_) => SamplingDefaults {
            precision: "2%",
            max_time_s: 0.4,
            min_samples: 20,
            warmup_s: 0.02,
            max_total_s: Some(PRESET_BUDGET_S),
            slice,
        },
        None => SamplingDefaults {
            precision: "1%",
            max_time_s: 1.0,
            min_samples: 10,
            warmup_s: 0.1,
            max_total_s: None,
            slice,
        },
    }
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
    let sampling = args.sampling.options(defaults(preset))?;
    let shard = args.shard.shard()?;
    // A shard measures its part of the matrix and the rows others are
    // compared with (the no-tunnel rows, --baseline).
    let scenarios = Shard::filter(
        shard,
        scenarios,
        |s| s.label(),
        |s| s.baseline || args.baseline.as_deref() == Some(s.label().as_str()),
    );
    if let Some(shard) = shard.filter(|shard| !shard.owns_any(scenarios.iter().map(|s| s.label())))
    {
        return empty_shard(shard);
    }
    if !(args.transfer_mb.is_finite() && args.transfer_mb > 0.0) {
        return Err(usage(format!(
            "--transfer-mb must be a positive number, got {}",
            args.transfer_mb
        )));
    }
    let transfer_bytes = (args.transfer_mb * 1e6) as u64;
    let (measures, valgrind) = MeasureArgs {
        measure: args.measure.clone(),
        breakdown: false,
    }
    .checked()?;
    if measures.contains(&Measure::Memory) {
        return Err(usage(
            "tunnel measures time and instructions; memory is counted per handshake (tlslab handshake --measure memory)",
        ));
    }
    let timed = measures.contains(&Measure::Time);
    check_exports(&args.exports)?;
    // The real engine's needs are checked before anything runs (counted
    // alone, its rows only say why they cannot be counted).
    let openvpn_version = if timed && engines.contains(&Engine::Openvpn) {
        Some(openvpn::preflight()?)
    } else {
        None
    };
    let mut store = open_store(&args.database)?;

    crate::backend::openssl::load_legacy_provider();
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
        shard,
        measures: &measures,
        valgrind: valgrind.as_deref(),
    };
    let run_id = store.begin_run(&run_info(
        crate::store::RunKind::Tunnel,
        serde_json::to_string(&options)?,
        &host,
        &libraries,
    ))?;

    let interrupt = interrupt_flag();
    let bar = Bar::new(scenarios.len() * engines.len(), args.quiet);
    let mut cells = Vec::new();
    let mut interrupted = false;
    for &engine in engines.iter().filter(|_| timed) {
        let engine_cells = match engine {
            Engine::Inprocess => sample_inprocess(&scenarios, &sampling, &mut store, run_id, &bar)?,
            Engine::Openvpn => sample_openvpn(
                &scenarios,
                transfer_bytes,
                &sampling,
                &mut store,
                run_id,
                &bar,
            )?,
        };
        interrupted = engine_cells.1;
        cells.extend(engine_cells.0);
        if interrupted {
            break;
        }
    }
    bar.0.finish_and_clear();
    if measures.contains(&Measure::Instructions) && !interrupted {
        let planned: Vec<(Engine, TunnelScenario)> = engines
            .iter()
            .flat_map(|&engine| scenarios.iter().map(move |s| (engine, *s)))
            .collect();
        let options = CountOptions {
            samples: args
                .sampling
                .runs
                .unwrap_or(super::handshake::COUNTED_SAMPLES),
            jobs: crate::host::available_cores(),
            breakdown: false,
        };
        interrupted = count_rows(
            &planned,
            &options,
            args.quiet,
            (&mut store, run_id),
            &mut cells,
        )?;
    }
    store.finish_run(run_id, !interrupted)?;

    let report = build_report(
        &cells,
        args.baseline.clone(),
        store.path().map(|_| run_id),
        !interrupted,
        host,
        libraries,
        Some(sampling.seed),
        valgrind,
    );
    let document = report.document();
    args.display.print(&document)?;
    args.exports.write(&document)?;
    let failed = cells
        .iter()
        .filter(|c| c.outcome.status() == crate::measure::CellStatus::Failed)
        .count();
    let _ = interrupt.load(Ordering::Relaxed);
    Ok(finish(&store, run_id, interrupted, cells.len(), failed))
}

/// Counts every planned in-process row's instructions per side under
/// valgrind (OpenVPN rows: why they cannot be) and stores them: beside the
/// timed samples of the same row in `cells`, or as new cells when time
/// was not measured. Returns true if Ctrl-C stopped it.
fn count_rows(
    planned: &[(Engine, TunnelScenario)],
    options: &CountOptions,
    quiet: bool,
    (store, run_id): (&mut Store, i64),
    cells: &mut Vec<TunnelCell>,
) -> Result<bool> {
    let interrupt = interrupt_flag();
    let countable: Vec<usize> = (0..planned.len())
        .filter(|&i| uncountable(planned[i].0).is_none())
        .collect();
    let work: Vec<CountedWork> = countable
        .iter()
        .map(|&i| {
            let scenario = &planned[i].1;
            (
                Work::Tunnel {
                    row: scenario.label(),
                    packets: counted_packets(scenario),
                },
                None,
            )
        })
        .collect();
    let bar = Bar::counting(work.len() * options.samples, quiet);
    // No certificates: a tunnel's keys are made with its channel.
    let certs = crate::certs::CertCache::new(crate::certs::CertCache::default_dir());
    let counted = count_instructions(&work, &certs, options, &interrupt, &|done| {
        bar.0.set_position(done as u64)
    })?;
    bar.0.finish_and_clear();
    let mut counted = countable.into_iter().zip(counted).peekable();
    for (i, (engine, scenario)) in planned.iter().enumerate() {
        let packets = counted_packets(scenario);
        let outcome = match counted.next_if(|(at, _)| *at == i) {
            Some((_, cell)) => cell.outcome,
            None => Outcome::Unsupported {
                reason: uncountable(*engine).unwrap_or("not counted").to_string(),
            },
        };
        let transfer = CountedTransfer {
            packets,
            payload_bytes: packets * scenario.payload_bytes as u64,
            outcome,
        };
        let timed = cells
            .iter_mut()
            .find(|c| c.engine == *engine && c.scenario == *scenario);
        match timed {
            Some(cell) => {
                cell.counted = Some(transfer);
                store.save_tunnel_counts(run_id, cell)?;
            }
            None => {
                let cell = TunnelCell {
                    engine: *engine,
                    scenario: *scenario,
                    outcome: transfer.outcome.without_samples(),
                    counted: Some(transfer),
                };
                store.save_tunnel_cell(run_id, &cell)?;
                cells.push(cell);
            }
        }
    }
    Ok(interrupt.load(Ordering::SeqCst))
}

/// The in-process rows in interleaved rounds; each cell stored as it finishes.
fn sample_inprocess(
    scenarios: &[crate::scenario::tunnel::TunnelScenario],
    sampling: &SamplingOptions,
    store: &mut Store,
    run_id: i64,
    bar: &Bar,
) -> Result<(Vec<TunnelCell>, bool)> {
    let mut cells = Vec::new();
    let mut probes = Vec::new();
    let mut probe_cell = Vec::new();
    for scenario in scenarios {
        let mut cell = TunnelCell {
            engine: Engine::Inprocess,
            scenario: *scenario,
            outcome: Outcome::Measured {
                samples: Vec::new(),
                precise: false,
            },
            counted: None,
        };
        match InprocessProbe::prepare(scenario) {
            Ok(probe) => {
                probe_cell.push(cells.len());
                probes.push(probe);
            }
            Err(outcome) => {
                cell.outcome = outcome;
                store.save_tunnel_cell(run_id, &cell)?;
            }
        }
        cells.push(cell);
    }
    struct Storing<'a> {
        cells: &'a mut [TunnelCell],
        probe_cell: &'a [usize],
        store: &'a mut Store,
        run_id: i64,
        bar: &'a Bar,
        already: usize,
    }
    impl measure::Observer<crate::workload::tunnel::TunnelSample> for Storing<'_> {
        fn cell_finished(
            &mut self,
            index: usize,
            outcome: &crate::workload::tunnel::TunnelOutcome,
        ) -> Result<()> {
            let cell = &mut self.cells[self.probe_cell[index]];
            cell.outcome = outcome.clone();
            self.bar.failed(&cell.scenario.label(), outcome);
            self.store
                .save_tunnel_cell(self.run_id, cell)
                .context("saving a finished cell")
        }

        fn round_finished(&mut self, round: u32, _active: usize, finished: usize) {
            self.bar.round(round, self.already + finished);
        }
    }
    let already = cells.len() - probes.len();
    let interrupt = interrupt_flag();
    let run = measure::sample(
        probes.iter_mut().map(InprocessProbe::probe).collect(),
        measure::Pairing::None,
        sampling,
        &interrupt,
        &mut Storing {
            cells: &mut cells,
            probe_cell: &probe_cell,
            store,
            run_id,
            bar,
            already,
        },
    )?;
    store.save_rounds(run_id, &run.rounds)?;
    Ok((cells, run.interrupted))
}

/// The OpenVPN rows, one tunnel at a time.
fn sample_openvpn(
    scenarios: &[crate::scenario::tunnel::TunnelScenario],
    transfer_bytes: u64,
    sampling: &SamplingOptions,
    store: &mut Store,
    run_id: i64,
    bar: &Bar,
) -> Result<(Vec<TunnelCell>, bool)> {
    let interrupt = interrupt_flag();
    let mut lab = openvpn::Lab::create().context("setting up the namespaces")?;
    let mut cells = Vec::new();
    for scenario in scenarios {
        if interrupt.load(Ordering::Relaxed) {
            return Ok((cells, true));
        }
        bar.0.set_message(format!("openvpn {}", scenario.label()));
        let outcome = match lab.measure(scenario, transfer_bytes, sampling, &interrupt) {
            Ok(outcome) => outcome,
            Err(Interrupted) => return Ok((cells, true)),
        };
        let cell = TunnelCell {
            engine: Engine::Openvpn,
            scenario: *scenario,
            outcome,
            counted: None,
        };
        bar.failed(&format!("openvpn {}", scenario.label()), &cell.outcome);
        store
            .save_tunnel_cell(run_id, &cell)
            .context("saving a finished cell")?;
        cells.push(cell);
        bar.0.inc(1);
    }
    Ok((cells, false))
}

#[allow(clippy::too_many_arguments)]
fn build_report(
    cells: &[TunnelCell],
    baseline: Option<String>,
    run_id: Option<i64>,
    complete: bool,
    host: HostInfo,
    libraries: Vec<LibraryInfo>,
    seed: Option<u64>,
    valgrind: Option<String>,
) -> TunnelReport {
    let tables = tunnel_report::build(cells, baseline.as_deref());
    TunnelReport {
        seed,
        drift: tunnel_report::drift(cells),
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
        valgrind,
    }
}

/// A stored tunnel run as a document (for `tlslab report`).
/// The document of tunnel cells gathered from several runs (the shards of
/// one command), which no single stored run holds.
pub(crate) fn combined_document(
    cells: &[TunnelCell],
    baseline: Option<String>,
    complete: bool,
    host: HostInfo,
    libraries: Vec<LibraryInfo>,
    seed: Option<u64>,
    valgrind: Option<String>,
) -> Document {
    build_report(
        cells, baseline, None, complete, host, libraries, seed, valgrind,
    )
    .document()
}

pub(crate) fn stored_document(
    store: &Store,
    run: &StoredRun,
    baseline: Option<String>,
) -> Result<Document> {
    let options: serde_json::Value = serde_json::from_str(&run.options_json).unwrap_or_default();
    let stored_baseline = options
        .get("baseline")
        .and_then(|b| b.as_str())
        .map(String::from);
    let seed = options.pointer("/sampling/seed").and_then(|s| s.as_u64());
    let cells = store.load_tunnel_cells(run.id)?;
    Ok(build_report(
        &cells,
        baseline.or(stored_baseline),
        Some(run.id),
        run.status.is_complete(),
        run.host.clone(),
        run.libraries.clone(),
        seed,
        options
            .get("valgrind")
            .and_then(|v| v.as_str())
            .map(String::from),
    )
    .document())
}
