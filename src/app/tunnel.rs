//! `tlslab tunnel`: the matrix of tunnel scenarios per engine, every
//! engine run through its trait
//! ([`TunnelEngine`](crate::workload::tunnel::TunnelEngine)): the rows of
//! every engine that can ready them at once sampled together in one set
//! of interleaved rounds (so ratios between engines come from the same
//! rounds), the others (a real tunnel each) one row at a time after them
//! (both in `tunnel_rows.rs`); a preset's engine that cannot run
//! here gives rows that say why; with `--measure instructions` the rows of
//! countable engines counted under valgrind (the others say why they
//! cannot be); with `--cpu-features generic`, the rows again without CPU
//! features in a child process (`tunnel_rows.rs`, [`super::generic`]);
//! each cell stored as it finishes; the report's tables and the counted
//! table; with `--setup`, each engine's connection set-up
//! ([`super::tunnel_setup`]).

use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use serde::Serialize;

use super::generic;
use super::session::{time_or_instructions, usage, Bar, SamplingDefaults};
use super::study::{self, Outputs, Plan, RunView, Session, Study};
use super::tunnel_rows::{
    generic_cells, in_run_order, sample_interleaved, sample_row_by_row, stored_engines, RowBudget,
};
use crate::backend::LibraryInfo;
use crate::cli::{Size, TunnelArgs};
use crate::host::HostInfo;
use crate::measure::{Outcome, SamplingOptions};
use crate::report::tunnel::{self as tunnel_report, TunnelReport};
use crate::report::Document;
use crate::scenario::names::Named;
use crate::scenario::presets::TunnelPreset;
use crate::scenario::tunnel::{
    Cipher, Compression, Digest, EngineId, Payload, TunnelMatrix, TunnelScenario,
    DEFAULT_PAYLOAD_BYTES,
};
use crate::scenario::Shard;
use crate::scenario::{distinct, CpuFeatures, Measure};
use crate::store::{RunKind, Store, StoredRun};
use crate::workload::counted::{count_instructions, CountOptions, CountedWork, Work};
use crate::workload::tunnel::setup::SetupCell;
use crate::workload::tunnel::{counted_packets, CountedTransfer, EngineOptions, TunnelCell};

/// The options of a tunnel run, as stored with the run.
#[derive(Debug, Serialize)]
struct StoredOptions<'a> {
    preset: Option<TunnelPreset>,
    engines: &'a [EngineId],
    matrix: &'a TunnelMatrix,
    sampling: &'a SamplingOptions,
    transfer_bytes: u64,
    baseline: Option<&'a str>,
    shard: Option<Shard>,
    measures: &'a [Measure],
    /// The CPU feature sets measured ("native,generic").
    cpu_features: String,
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
    let mut matrix = preset.map_or_else(default_matrix, TunnelPreset::matrix);
    if let Some(list) = &args.cipher {
        matrix.ciphers = distinct(list);
    }
    if let Some(list) = &args.digest {
        matrix.digests = distinct(list);
    }
    if let Some(list) = &args.compression {
        matrix.compressions = distinct(list);
    }
    if let Some(list) = &args.payload {
        matrix.payloads = distinct(list);
    }
    if let Some(list) = &args.size {
        matrix.payload_sizes = distinct(list).into_iter().map(Size::bytes).collect();
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

/// The whole-run budget of `--preset vpn-compare`, in seconds: its 16
/// measured rows get a tighter precision than the classic preset's
/// hundreds (the ratios between engines are its point), and a slower
/// machine's run still ends within two minutes with its set-up and report.
pub(crate) const VPN_COMPARE_BUDGET_S: f64 = 80.0;

/// Sampling defaults of `tunnel`, and of its presets.
fn defaults(preset: Option<TunnelPreset>) -> SamplingDefaults {
    let slice = Duration::ZERO; // each sample is already a batch of about 1 ms
    match preset {
        Some(TunnelPreset::VpnCompare) => SamplingDefaults {
            precision: crate::cli::Percent::new(0.5),
            // The tunnel rows reach 0.5% in 0.05-0.2 s of samples; the
            // no-tunnel rows (short, noisy copies) may not, and are not
            // what the preset compares.
            max_time_s: 1.0,
            min_samples: 50,
            warmup_s: 0.05,
            max_total_s: Some(VPN_COMPARE_BUDGET_S),
            slice,
        },
        Some(TunnelPreset::OpenvpnClassic) => SamplingDefaults {
            precision: crate::cli::Percent::new(2.0),
            max_time_s: 0.4,
            min_samples: 20,
            warmup_s: 0.02,
            max_total_s: Some(PRESET_BUDGET_S),
            slice,
        },
        None => SamplingDefaults {
            precision: crate::cli::Percent::new(1.0),
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
    study::run::<TunnelStudy>(args)
}

/// A tunnel run as planned from its command line.
pub(crate) struct TunnelStudy {
    preset: Option<TunnelPreset>,
    matrix: TunnelMatrix,
    /// The engines that run (the preflights passed).
    engines: Vec<EngineId>,
    /// Engines a preset brings that cannot run here, each with why: their
    /// rows say so instead of failing the run.
    unavailable: Unavailable,
    /// The matrix's rows this run (or shard) measures.
    scenarios: Vec<TunnelScenario>,
    baseline: Option<String>,
    sampling: SamplingOptions,
    shard: Option<Shard>,
    transfer_bytes: u64,
    measures: Vec<Measure>,
    valgrind: Option<String>,
    count_options: CountOptions,
    /// What does the work of each engine that runs (the preflights' answers).
    libraries: Vec<LibraryInfo>,
    /// Whether each engine's connection set-up is measured (`--setup`).
    setup: bool,
    /// The engines' set-up cells, once measured.
    setups: Vec<SetupCell>,
    /// With all the machine's CPU features, without them (a child
    /// process), or both (`--cpu-features`).
    feature_sets: Vec<CpuFeatures>,
    /// The parsed command line, handed to the generic-CPU child.
    args: TunnelArgs,
}

impl Study for TunnelStudy {
    type Args = TunnelArgs;
    type Cell = TunnelCell;
    const KIND: RunKind = RunKind::Tunnel;

    fn plan(args: &TunnelArgs) -> Result<Plan<Self>> {
        let preset = args.preset;
        let matrix = matrix_from(args, preset)?;
        // Engines named on the command line must run; a preset's run if
        // they can.
        let (engines, required) = match (&args.engine, preset) {
            (Some(named), _) => (distinct(named), true),
            (None, Some(preset)) => (preset.engines().to_vec(), false),
            (None, None) => (vec![EngineId::Inprocess], true),
        };
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
        let shard = args.shard.shard;
        // A shard measures its part of the matrix and the rows others are
        // compared with (the no-tunnel rows, --baseline).
        let scenarios = Shard::filter(
            shard,
            scenarios,
            |s| s.label(),
            |s| s.baseline || args.baseline.as_deref() == Some(s.label().as_str()),
        );
        if let Some(shard) =
            shard.filter(|shard| !shard.owns_any(scenarios.iter().map(|s| s.label())))
        {
            return Ok(Plan::EmptyShard(shard));
        }
        // A usage error before asking for valgrind, which may be missing.
        let feature_sets = distinct(&args.cpu_features);
        let counts = args
            .measure
            .as_deref()
            .is_some_and(|measures| measures.contains(&Measure::Instructions));
        if counts && feature_sets.contains(&CpuFeatures::Generic) {
            return Err(usage(
                "--cpu-features generic is timed only; leave --measure at time for it",
            ));
        }
        let (measures, valgrind) = time_or_instructions(args.measure.as_deref(), "tunnel")?;
        super::session::check_exports(&args.output.exports)?;
        let (libraries, unavailable) = preflight(&engines, &measures, required)?;
        let engines = engines
            .into_iter()
            .filter(|id| !unavailable.iter().any(|(missing, _)| missing == id))
            .collect();
        Ok(Plan::Run(Self {
            preset,
            matrix,
            engines,
            unavailable,
            scenarios,
            baseline: args.baseline.clone(),
            sampling,
            shard,
            transfer_bytes: (args.transfer_mb * 1e6) as u64,
            measures,
            valgrind,
            count_options: args.sampling.count_options(false),
            libraries,
            setup: args.setup
                || (!args.no_setup && preset.is_some_and(TunnelPreset::measures_setup)),
            setups: Vec::new(),
            feature_sets,
            args: args.clone(),
        }))
    }

    fn outputs(args: &TunnelArgs) -> Outputs<'_> {
        Outputs::of(&args.output, args.quiet)
    }

    fn options_json(&self) -> Result<String> {
        Ok(serde_json::to_string(&StoredOptions {
            preset: self.preset,
            engines: &self.engines,
            matrix: &self.matrix,
            sampling: &self.sampling,
            transfer_bytes: self.transfer_bytes,
            baseline: self.baseline.as_deref(),
            shard: self.shard,
            measures: &self.measures,
            cpu_features: generic::feature_list(&self.feature_sets),
            valgrind: self.valgrind.as_deref(),
        })?)
    }

    fn libraries(&self) -> Vec<LibraryInfo> {
        self.libraries.clone()
    }

    fn measure(&mut self, session: &mut Session) -> Result<Vec<TunnelCell>> {
        let native = self.feature_sets.contains(&CpuFeatures::Native);
        let bar = session.bar(self.scenarios.len() * self.engines.len() * usize::from(native));
        let mut cells = Vec::new();
        if self.measures.contains(&Measure::Time) && native {
            let options = EngineOptions {
                transfer_bytes: self.transfer_bytes,
            };
            // Every row of every engine that interleaves in one matrix, so
            // a ratio between two engines' rows comes from the same rounds;
            // then the engines that take their rows one at a time.
            let (together, one_by_one): (Vec<EngineId>, Vec<EngineId>) = self
                .engines
                .iter()
                .partition(|id| id.open().interleaves_rows());
            cells = sample_interleaved(
                &together,
                &options,
                &self.scenarios,
                &self.sampling,
                session,
                &bar,
            )?;
            let mut budget = RowBudget::new(
                &self.sampling,
                std::time::Instant::now(),
                one_by_one.len() * self.scenarios.len(),
            );
            for id in one_by_one {
                if session.interrupted() {
                    break;
                }
                let engine = id.open();
                let rig = engine
                    .start(&options)
                    .with_context(|| format!("starting the {} engine", id.id()))?;
                cells.extend(sample_row_by_row(
                    engine,
                    rig.as_ref(),
                    &self.scenarios,
                    &self.sampling,
                    &mut budget,
                    session,
                    &bar,
                )?);
            }
        }
        for (engine, reason) in &self.unavailable {
            for scenario in &self.scenarios {
                let cell = TunnelCell {
                    engine: *engine,
                    cpu_features: CpuFeatures::Native,
                    scenario: *scenario,
                    outcome: Outcome::Unsupported {
                        reason: reason.clone(),
                    },
                    counted: None,
                };
                session.save(|store, run_id| store.save_tunnel_cell(run_id, &cell));
                cells.push(cell);
            }
        }
        bar.0.finish_and_clear();
        if self.feature_sets.contains(&CpuFeatures::Generic) && !session.interrupted() {
            for cell in generic_cells(&self.args, &self.engines, &self.scenarios, session)? {
                session.save(|store, run_id| store.save_tunnel_cell(run_id, &cell));
                cells.push(cell);
            }
        }
        in_run_order(&mut cells, &self.engines);
        if self.measures.contains(&Measure::Instructions) && !session.interrupted() {
            let planned: Vec<(EngineId, TunnelScenario)> = self
                .engines
                .iter()
                .flat_map(|&engine| self.scenarios.iter().map(move |s| (engine, *s)))
                .collect();
            count_rows(&planned, &self.count_options, session, &mut cells)?;
        }
        if self.setup && !session.interrupted() {
            let count = self
                .measures
                .contains(&Measure::Instructions)
                .then_some(&self.count_options);
            self.setups =
                super::tunnel_setup::measure_setups(&self.engines, &self.sampling, count, session)?;
        }
        Ok(cells)
    }

    fn document(&self, run: &RunView<'_>, cells: &[TunnelCell]) -> Result<Document> {
        Ok(build_report(
            cells,
            &self.setups,
            self.baseline.clone(),
            run.run_id,
            run.complete,
            run.host.clone(),
            run.libraries.to_vec(),
            Some(self.sampling.seed),
            self.valgrind.clone(),
        )
        .document())
    }

    fn failed(cell: &TunnelCell) -> bool {
        cell.outcome.status() == crate::measure::CellStatus::Failed
    }

    fn stored_document(
        store: &Store,
        run: &StoredRun,
        baseline: Option<String>,
    ) -> Result<Document> {
        let sampling = super::session::stored_sampling(&run.options_json);
        let mut cells = store.load_tunnel_cells(run.id)?;
        in_run_order(&mut cells, &stored_engines(&run.options_json));
        let setups = store.load_tunnel_setups(run.id)?;
        Ok(build_report(
            &cells,
            &setups,
            baseline.or(sampling.baseline),
            Some(run.id),
            run.status.is_complete(),
            run.host.clone(),
            run.libraries.clone(),
            sampling.seed,
            sampling.valgrind,
        )
        .document())
    }
}

/// Engines that cannot run here, each with why (for their rows to say).
type Unavailable = Vec<(EngineId, String)>;

/// Checks, before anything runs, that every engine the run starts can run
/// here, and returns what does each one's work. An engine runs when rows
/// are timed, or counted and it can be counted (counted alone, a real
/// tunnel's rows only say why they cannot be counted). An engine that
/// cannot run is an error if it is `required` (named on the command line),
/// else it is returned with why, for its rows to say.
fn preflight(
    engines: &[EngineId],
    measures: &[Measure],
    required: bool,
) -> Result<(Vec<LibraryInfo>, Unavailable)> {
    let mut libraries = Vec::new();
    let mut unavailable = Vec::new();
    for &id in engines {
        let engine = id.open();
        let counted = measures.contains(&Measure::Instructions) && engine.uncountable().is_none();
        if measures.contains(&Measure::Time) || counted {
            match engine.preflight() {
                Ok(library) => libraries.push(library),
                Err(missing) => {
                    let reason =
                        format!("the {} engine cannot run here; missing: {missing}", id.id());
                    if required {
                        return Err(anyhow!(reason));
                    }
                    unavailable.push((id, reason));
                }
            }
        }
    }
    Ok((libraries, unavailable))
}

/// Counts every planned row's instructions per side under valgrind (rows
/// of engines that cannot be counted: why not) and stores them: beside the
/// timed samples of the same row in `cells`, or as new cells when time
/// was not measured.
fn count_rows(
    planned: &[(EngineId, TunnelScenario)],
    options: &CountOptions,
    session: &mut Session,
    cells: &mut Vec<TunnelCell>,
) -> Result<()> {
    let countable: Vec<usize> = (0..planned.len())
        .filter(|&i| planned[i].0.open().uncountable().is_none())
        .collect();
    let work: Vec<CountedWork> = countable
        .iter()
        .map(|&i| {
            let (engine, scenario) = &planned[i];
            (
                Work::Tunnel {
                    engine: *engine,
                    row: scenario.label(),
                    packets: counted_packets(scenario),
                },
                None,
            )
        })
        .collect();
    let bar = Bar::counting(work.len() * options.samples, session.quiet());
    // No certificates: a tunnel's keys are made with its channel.
    let certs = crate::certs::CertCache::new(crate::certs::CertCache::default_dir());
    let counted = count_instructions(&work, &certs, options, session.interrupt(), &|done| {
        bar.0.set_position(done as u64)
    })?;
    bar.0.finish_and_clear();
    let mut counted = countable.into_iter().zip(counted).peekable();
    for (i, (engine, scenario)) in planned.iter().enumerate() {
        let packets = counted_packets(scenario);
        let outcome = match counted.next_if(|(at, _)| *at == i) {
            Some((_, cell)) => cell.outcome,
            None => Outcome::Unsupported {
                reason: engine
                    .open()
                    .uncountable()
                    .unwrap_or("not counted")
                    .to_string(),
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
                session.save(|store, run_id| store.save_tunnel_counts(run_id, cell));
            }
            None => {
                let cell = TunnelCell {
                    engine: *engine,
                    cpu_features: CpuFeatures::Native,
                    scenario: *scenario,
                    outcome: transfer.outcome.without_samples(),
                    counted: Some(transfer),
                };
                session.save(|store, run_id| store.save_tunnel_cell(run_id, &cell));
                cells.push(cell);
            }
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn build_report(
    cells: &[TunnelCell],
    setups: &[SetupCell],
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
        versus_fastest: tables.versus_fastest,
        rows: tables.rows,
        valgrind,
        setup: tunnel_report::setup_rows(setups),
    }
}

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
    // The shards' set-up cells are not gathered: each shard's report has its own.
    build_report(
        cells,
        &[],
        baseline,
        None,
        complete,
        host,
        libraries,
        seed,
        valgrind,
    )
    .document()
}
