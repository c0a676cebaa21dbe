//! `tlslab bulk`: the matrix of channels (version, suite) per backend and
//! write size, plus a no-crypto row per size; every cell sampled in
//! interleaved rounds, each paired with the no-crypto row of its size;
//! stored as it finishes; reported with each side's cost and the crypto share.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;

use super::session::{
    check_exports, chosen_backends, empty_shard, finish, interrupt_flag, open_store, run_info,
    usage, Bar, SamplingDefaults, Shard,
};
use crate::backend::{backends_from_list, Backend};
use crate::certs::CertCache;
use crate::cli::{BulkArgs, MeasureArgs};
use crate::host::HostInfo;
use crate::measure::{self, Outcome, SamplingOptions};
use crate::report::bulk::BulkReport;
use crate::report::Document;
use crate::scenario::bulk::{parse_sizes, BulkMatrix, BulkPreset, BulkScenario};
use crate::scenario::{parse_list, parse_name, Aead, Measure, TlsVersion};
use crate::store::{Store, StoredRun};
use crate::workload::bulk::{
    BulkCell, BulkProbe, BulkSample, Sizing, PLAIN_BACKEND, SAMPLES_PER_PAIR,
};
use crate::workload::counted::{count_instructions, CountOptions, CountedWork, Work};

/// Sampling defaults of `bulk`: each sample is already a batch of writes
/// lasting about 1-3 ms.
pub(crate) const DEFAULTS: SamplingDefaults = SamplingDefaults {
    precision: "2%",
    max_time_s: 1.0,
    min_samples: 10,
    warmup_s: 0.05,
    max_total_s: None,
    slice: Duration::ZERO,
};

/// The options of a bulk run, as stored with the run.
#[derive(Debug, Serialize)]
struct StoredOptions<'a> {
    preset: Option<BulkPreset>,
    backends: Vec<&'static str>,
    matrix: &'a BulkMatrix,
    /// A preset's rows on backends of their own ([`BulkPreset::companions`]).
    companions: Vec<&'a BulkMatrix>,
    bytes_per_sample: Option<usize>,
    sampling: &'a SamplingOptions,
    shard: Option<Shard>,
    measures: &'a [Measure],
    /// The valgrind that counted instructions ("valgrind-3.19.0").
    #[serde(skip_serializing_if = "Option::is_none")]
    valgrind: Option<&'a str>,
}

fn default_matrix() -> BulkMatrix {
    BulkMatrix {
        versions: vec![TlsVersion::Tls13],
        aeads: vec![Aead::Aes128Gcm, Aead::Aes256Gcm, Aead::Chacha20Poly1305],
        write_sizes: vec![64, 1024, 16384],
        with_plain: true,
        transports: vec![crate::scenario::Transport::Memory],
    }
}

fn matrix_from(args: &BulkArgs, preset: Option<BulkPreset>) -> Result<BulkMatrix> {
    overridden(
        args,
        preset
            .map(BulkPreset::matrix)
            .unwrap_or_else(default_matrix),
    )
}

/// A matrix with every axis option given replaced.
fn overridden(args: &BulkArgs, mut matrix: BulkMatrix) -> Result<BulkMatrix> {
    if let Some(list) = &args.tls {
        matrix.versions = parse_list(list).map_err(usage)?;
    }
    if let Some(list) = &args.suite {
        matrix.aeads = parse_list(list).map_err(usage)?;
    }
    if let Some(list) = &args.size {
        matrix.write_sizes = parse_sizes(list).map_err(usage)?;
    }
    if let Some(list) = &args.transport {
        matrix.transports = parse_list(list).map_err(usage)?;
    }
    if args.no_baseline_row {
        matrix.with_plain = false;
    }
    matrix.validate().map_err(usage)?;
    Ok(matrix)
}

/// Runs `tlslab bulk` and returns the exit code.
pub fn run(args: &BulkArgs) -> Result<i32> {
    let preset = args
        .preset
        .as_deref()
        .map(parse_name::<BulkPreset>)
        .transpose()
        .map_err(usage)?;
    let matrix = matrix_from(args, preset)?;
    let backends = chosen_backends(
        args.backend.as_deref(),
        preset.map(|p| p.default_backends()),
        Some(&matrix.versions),
    )?;
    // A preset's rows on backends of their own, unless the backends or
    // the protocols are chosen on the command line; the other axis
    // options apply to them too.
    let mut companions: Vec<(BulkMatrix, Vec<Arc<dyn Backend>>)> = Vec::new();
    if let Some(preset) = preset.filter(|_| args.backend.is_none() && args.tls.is_none()) {
        for (on, companion) in preset.companions() {
            companions.push((
                overridden(args, companion)?,
                backends_from_list(&on.join(",")).map_err(usage)?,
            ));
        }
    }
    if args.bytes_per_sample == Some(0) {
        return Err(usage("--bytes-per-sample must be at least 1"));
    }
    let (measures, valgrind) = MeasureArgs {
        measure: args.measure.clone(),
        breakdown: false,
    }
    .checked()?;
    if measures.contains(&Measure::Memory) {
        return Err(usage(
            "bulk measures time and instructions; memory is counted per handshake (tlslab handshake --measure memory)",
        ));
    }
    let defaults = match preset {
        Some(preset) => SamplingDefaults {
            max_total_s: Some(preset.budget_s()),
            ..DEFAULTS
        },
        None => DEFAULTS,
    };
    let sampling = args.sampling.options(defaults)?;
    let shard = args.shard.shard()?;
    // The no-crypto row of a size once, the others per backend. A shard
    // measures its part of the matrix and the no-crypto rows the crypto
    // share is taken from.
    let mut planned: Vec<Planned> = Vec::new();
    for (matrix, on) in std::iter::once((&matrix, &backends))
        .chain(companions.iter().map(|(matrix, on)| (matrix, on)))
    {
        let rows = Shard::filter(
            shard,
            matrix.expand(),
            |s| s.label(),
            |s| s.handshake().is_none(),
        );
        for scenario in rows {
            match scenario.handshake() {
                None => planned.push((scenario, None)),
                Some(_) => planned.extend(on.iter().map(|b| (scenario, Some(Arc::clone(b))))),
            }
        }
    }
    if let Some(shard) =
        shard.filter(|shard| !shard.owns_any(planned.iter().map(|(s, _)| s.label())))
    {
        return empty_shard(shard);
    }
    check_exports(&args.exports)?;
    let mut store = open_store(&args.database)?;

    let host = HostInfo::current();
    let mut all_backends: Vec<&Arc<dyn Backend>> = backends.iter().collect();
    for backend in companions.iter().flat_map(|(_, on)| on) {
        if !all_backends.iter().any(|b| b.id() == backend.id()) {
            all_backends.push(backend);
        }
    }
    let libraries: Vec<_> = all_backends.iter().map(|b| b.library()).collect();
    let options = StoredOptions {
        preset,
        backends: all_backends.iter().map(|b| b.id()).collect(),
        matrix: &matrix,
        companions: companions.iter().map(|(m, _)| m).collect(),
        bytes_per_sample: args.bytes_per_sample,
        sampling: &sampling,
        shard,
        measures: &measures,
        valgrind: valgrind.as_deref(),
    };
    let run_id = store.begin_run(&run_info(
        crate::store::RunKind::Bulk,
        serde_json::to_string(&options)?,
        &host,
        &libraries,
    ))?;

    let certs = CertCache::new(args.cert_dir.clone().unwrap_or_else(CertCache::default_dir));
    let bar = Bar::new(planned.len(), args.quiet);
    let (mut cells, mut interrupted) = if measures.contains(&Measure::Time) {
        sample_matrix(
            &planned,
            &certs,
            args.bytes_per_sample,
            &sampling,
            &mut store,
            run_id,
            &bar,
        )?
    } else {
        (Vec::new(), false)
    };
    bar.0.finish_and_clear();
    if measures.contains(&Measure::Instructions) && !interrupted {
        interrupted = count_matrix(
            &planned,
            &certs,
            CountOptions {
                samples: args
                    .sampling
                    .runs
                    .unwrap_or(super::handshake::COUNTED_SAMPLES),
                jobs: crate::host::available_cores(),
                breakdown: false,
            },
            args.bytes_per_sample.unwrap_or(COUNTED_BYTES),
            args.quiet,
            (&mut store, run_id),
            &mut cells,
        )?;
    }
    store.finish_run(run_id, !interrupted)?;

    let document = BulkReport {
        run_id: store.path().map(|_| run_id),
        complete: !interrupted,
        host: &host,
        libraries: &libraries,
        seed: Some(sampling.seed),
        precision: Some(sampling.precision),
        cells: &cells,
        counted_with: valgrind.as_deref(),
    }
    .document();
    args.display.print(&document)?;
    args.exports.write(&document)?;
    let failed = cells
        .iter()
        .filter(|c| c.outcome.status() == crate::measure::CellStatus::Failed)
        .count();
    Ok(finish(&store, run_id, interrupted, cells.len(), failed))
}

/// A row and the backend that runs it (`None` for a no-crypto row).
type Planned = (BulkScenario, Option<Arc<dyn Backend>>);

/// Application bytes per counted sample without `--bytes-per-sample`: one
/// chunk of the sender's writes and the receiver's reads.
const COUNTED_BYTES: usize = 256 * 1024;

/// Counts every planned row's instructions per side under valgrind and
/// stores them: beside the timed samples of `cells` (in planned order), or
/// as new cells when time was not measured. Returns true if Ctrl-C
/// stopped it.
#[allow(clippy::too_many_arguments)]
fn count_matrix(
    planned: &[Planned],
    certs: &CertCache,
    options: CountOptions,
    bytes: usize,
    quiet: bool,
    (store, run_id): (&mut Store, i64),
    cells: &mut Vec<BulkCell>,
) -> Result<bool> {
    let interrupt = interrupt_flag();
    let countable: Vec<usize> = (0..planned.len())
        .filter(|&i| !planned[i].0.transport.is_socket())
        .collect();
    let work: Vec<CountedWork> = countable
        .iter()
        .map(|&i| {
            let (scenario, backend) = &planned[i];
            (
                Work::Bulk {
                    row: scenario.label(),
                    bytes,
                },
                backend.clone(),
            )
        })
        .collect();
    let bar = Bar::counting(work.len() * options.samples, quiet);
    let counted = count_instructions(&work, certs, &options, &interrupt, &|done| {
        bar.0.set_position(done as u64)
    })?;
    bar.0.finish_and_clear();
    let mut counted = countable.into_iter().zip(counted).peekable();
    let timed = !cells.is_empty();
    for (i, (scenario, backend)) in planned.iter().enumerate() {
        // What the counted samples carried: `bytes` in whole writes.
        let counted_bytes = Sizing::new(scenario.write_bytes, Some(bytes)).sample_bytes() as u64;
        let (outcome, negotiated) = match counted.next_if(|(at, _)| *at == i) {
            Some((_, cell)) => (cell.outcome, cell.negotiated),
            None => (
                Outcome::Unsupported {
                    reason: format!(
                        "counted in memory only (sender and receiver in turns on one thread); {} rows are timed",
                        scenario.transport.display()
                    ),
                },
                None,
            ),
        };
        if timed {
            let cell = &mut cells[i];
            cell.instructions = Some(outcome);
            cell.counted_bytes = counted_bytes;
            cell.negotiated = cell.negotiated.take().or(negotiated);
            store.save_bulk_counts(run_id, cell)?;
        } else {
            let cell = BulkCell {
                backend: backend
                    .as_ref()
                    .map_or(PLAIN_BACKEND, |b| b.id())
                    .to_string(),
                scenario: *scenario,
                negotiated,
                sample_bytes: counted_bytes,
                outcome: outcome.without_samples(),
                instructions: Some(outcome),
                counted_bytes,
            };
            store.save_bulk_cell(run_id, &cell)?;
            cells.push(cell);
        }
    }
    Ok(interrupt.load(std::sync::atomic::Ordering::SeqCst))
}

/// Prepares every planned cell, samples the runnable ones in interleaved
/// rounds, each paired with the no-crypto row of its size, and stores each
/// as it finishes.
fn sample_matrix(
    planned: &[Planned],
    certs: &CertCache,
    bytes_per_sample: Option<usize>,
    sampling: &SamplingOptions,
    store: &mut Store,
    run_id: i64,
    bar: &Bar,
) -> Result<(Vec<BulkCell>, bool)> {
    let mut cells: Vec<BulkCell> = Vec::new();
    let mut probes: Vec<BulkProbe> = Vec::new();
    let mut probe_cell: Vec<usize> = Vec::new();
    for (scenario, backend) in planned {
        let backend = backend.as_ref();
        let mut cell = BulkCell {
            backend: backend.map_or(PLAIN_BACKEND, |b| b.id()).to_string(),
            scenario: *scenario,
            negotiated: None,
            sample_bytes: 0,
            outcome: Outcome::Measured {
                samples: Vec::new(),
                precise: false,
            },
            instructions: None,
            counted_bytes: 0,
        };
        match BulkProbe::prepare(
            backend.map(|b| b.as_ref()),
            scenario,
            certs,
            bytes_per_sample,
        ) {
            Ok((mut probe, negotiated)) => {
                if let Some(backend) = backend {
                    probe.renew_every(SAMPLES_PER_PAIR, Arc::clone(backend), scenario, certs)?;
                }
                cell.negotiated = negotiated;
                cell.sample_bytes = probe.sizing().sample_bytes() as u64;
                probe_cell.push(cells.len());
                probes.push(probe);
            }
            Err(outcome) => {
                cell.outcome = outcome;
                report_failure(bar, &cell);
                store
                    .save_bulk_cell(run_id, &cell)
                    .context("saving a finished cell")?;
            }
        }
        cells.push(cell);
    }
    // Each protected row pairs with the no-crypto row of its write size.
    let pairing = measure::Pairing::PerCell(
        probe_cell
            .iter()
            .map(|&c| {
                let scenario = cells[c].scenario;
                let plain = scenario.no_crypto_twin();
                (!scenario.channel.is_plain())
                    .then(|| probe_cell.iter().position(|&p| cells[p].scenario == plain))
                    .flatten()
            })
            .collect(),
    );

    struct Storing<'a> {
        cells: &'a mut [BulkCell],
        probe_cell: &'a [usize],
        store: &'a mut Store,
        run_id: i64,
        bar: &'a Bar,
        already: usize,
    }
    impl measure::Observer<BulkSample> for Storing<'_> {
        fn cell_finished(&mut self, index: usize, outcome: &Outcome<BulkSample>) -> Result<()> {
            let cell = &mut self.cells[self.probe_cell[index]];
            cell.outcome = outcome.clone();
            report_failure(self.bar, cell);
            self.store
                .save_bulk_cell(self.run_id, cell)
                .context("saving a finished cell")
        }

        fn round_finished(&mut self, round: u32, _active: usize, finished: usize) {
            self.bar.round(round, self.already + finished);
        }
    }
    let already = cells.len() - probes.len();
    let interrupt = interrupt_flag();
    let run = measure::sample(
        probes.iter_mut().map(BulkProbe::probe).collect(),
        pairing,
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

fn report_failure(bar: &Bar, cell: &BulkCell) {
    bar.failed(
        &format!("{} {}", cell.backend, cell.scenario.label()),
        &cell.outcome,
    );
}

/// A stored bulk run as a document (for `tlslab report`).
pub(crate) fn stored_document(store: &Store, run: &StoredRun) -> Result<Document> {
    let options: serde_json::Value = serde_json::from_str(&run.options_json).unwrap_or_default();
    let cells = store.load_bulk_cells(run.id)?;
    Ok(BulkReport {
        run_id: Some(run.id),
        complete: run.status.is_complete(),
        host: &run.host,
        libraries: &run.libraries,
        seed: options.pointer("/sampling/seed").and_then(|s| s.as_u64()),
        precision: options
            .pointer("/sampling/precision")
            .and_then(|p| p.as_f64()),
        cells: &cells,
        counted_with: options.get("valgrind").and_then(|v| v.as_str()),
    }
    .document())
}
