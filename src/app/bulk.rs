//! `tlslab bulk`: the matrix of channels (version, suite) per backend and
//! write size, plus a no-crypto row per size; every cell sampled in
//! interleaved rounds, each paired with the no-crypto row of its size;
//! stored as it finishes; reported with each side's cost and the crypto share.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

use super::session::{chosen_backends, time_or_instructions, usage, Bar, SamplingDefaults};
use super::study::{self, Outputs, Plan, RunView, Session, StoringOutcomes, Study};
use crate::backend::{backends_from_list, Backend, LibraryInfo};
use crate::certs::CertCache;
use crate::cli::{BulkArgs, Size};
use crate::measure::{self, Outcome, SamplingOptions};
use crate::report::bulk::BulkReport;
use crate::report::Document;
use crate::scenario::bulk::{BulkMatrix, BulkPreset, BulkScenario};
use crate::scenario::Shard;
use crate::scenario::{distinct, Aead, BackendList, Measure, Subject, TlsVersion};
use crate::store::{RunKind, Store, StoredRun};
use crate::workload::bulk::{BulkCell, BulkProbe, Sizing, SAMPLES_PER_PAIR};
use crate::workload::counted::{count_instructions, CountOptions, CountedWork, Work};

/// Sampling defaults of `bulk`: each sample is already a batch of writes
/// lasting about 1-3 ms.
pub(crate) const DEFAULTS: SamplingDefaults = SamplingDefaults {
    precision: crate::cli::Percent::new(2.0),
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
        matrix.versions = distinct(list);
    }
    if let Some(list) = &args.suite {
        matrix.aeads = distinct(list);
    }
    if let Some(list) = &args.size {
        matrix.write_sizes = distinct(list).into_iter().map(Size::bytes).collect();
    }
    if let Some(list) = &args.transport {
        matrix.transports = distinct(list);
    }
    if args.no_baseline_row {
        matrix.with_plain = false;
    }
    matrix.validate().map_err(usage)?;
    Ok(matrix)
}

/// Runs `tlslab bulk` and returns the exit code.
pub fn run(args: &BulkArgs) -> Result<i32> {
    study::run::<BulkStudy>(args)
}

/// A bulk run as planned from its command line.
pub(crate) struct BulkStudy {
    preset: Option<BulkPreset>,
    matrix: BulkMatrix,
    /// A preset's rows on backends of their own ([`BulkPreset::companions`]).
    companions: Vec<BulkMatrix>,
    /// Every backend the run uses, the companions' included.
    backends: Vec<Arc<dyn Backend>>,
    planned: Vec<Planned>,
    measures: Vec<Measure>,
    valgrind: Option<String>,
    sampling: SamplingOptions,
    shard: Option<Shard>,
    bytes_per_sample: Option<usize>,
    count_options: CountOptions,
    cert_dir: Option<std::path::PathBuf>,
}

impl Study for BulkStudy {
    type Args = BulkArgs;
    type Cell = BulkCell;
    const KIND: RunKind = RunKind::Bulk;

    fn plan(args: &BulkArgs) -> Result<Plan<Self>> {
        let preset = args.preset;
        let matrix = matrix_from(args, preset)?;
        let backends = chosen_backends(
            args.backend.as_ref(),
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
                    backends_from_list(&BackendList::named(on.iter().copied()).map_err(usage)?),
                ));
            }
        }
        let (measures, valgrind) = time_or_instructions(args.measure.as_deref(), "bulk")?;
        let defaults = match preset {
            Some(preset) => SamplingDefaults {
                max_total_s: Some(preset.budget_s()),
                ..DEFAULTS
            },
            None => DEFAULTS,
        };
        let sampling = args.sampling.options(defaults)?;
        let shard = args.shard.shard;
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
            return Ok(Plan::EmptyShard(shard));
        }
        let mut all_backends = backends;
        for backend in companions.iter().flat_map(|(_, on)| on) {
            if !all_backends.iter().any(|b| b.id() == backend.id()) {
                all_backends.push(Arc::clone(backend));
            }
        }
        Ok(Plan::Run(Self {
            preset,
            matrix,
            companions: companions.into_iter().map(|(m, _)| m).collect(),
            backends: all_backends,
            planned,
            measures,
            valgrind,
            sampling,
            shard,
            bytes_per_sample: args.bytes_per_sample,
            count_options: args.sampling.count_options(false),
            cert_dir: args.cert_dir.clone(),
        }))
    }

    fn outputs(args: &BulkArgs) -> Outputs<'_> {
        Outputs::of(&args.output, args.quiet)
    }

    fn options_json(&self) -> Result<String> {
        Ok(serde_json::to_string(&StoredOptions {
            preset: self.preset,
            backends: self.backends.iter().map(|b| b.id()).collect(),
            matrix: &self.matrix,
            companions: self.companions.iter().collect(),
            bytes_per_sample: self.bytes_per_sample,
            sampling: &self.sampling,
            shard: self.shard,
            measures: &self.measures,
            valgrind: self.valgrind.as_deref(),
        })?)
    }

    fn libraries(&self) -> Vec<LibraryInfo> {
        self.backends.iter().map(|b| b.library()).collect()
    }

    fn measure(&mut self, session: &mut Session) -> Result<Vec<BulkCell>> {
        let certs = CertCache::new(self.cert_dir.clone().unwrap_or_else(CertCache::default_dir));
        let mut cells = if self.measures.contains(&Measure::Time) {
            sample_matrix(
                &self.planned,
                &certs,
                self.bytes_per_sample,
                &self.sampling,
                session,
            )?
        } else {
            Vec::new()
        };
        if self.measures.contains(&Measure::Instructions) && !session.interrupted() {
            count_matrix(
                &self.planned,
                &certs,
                self.count_options.clone(),
                self.bytes_per_sample.unwrap_or(COUNTED_BYTES),
                session,
                &mut cells,
            )?;
        }
        Ok(cells)
    }

    fn document(&self, run: &RunView<'_>, cells: &[BulkCell]) -> Result<Document> {
        Ok(BulkReport {
            run_id: run.run_id,
            complete: run.complete,
            host: run.host,
            libraries: run.libraries,
            seed: Some(self.sampling.seed),
            precision: Some(self.sampling.precision),
            cells,
            counted_with: self.valgrind.as_deref(),
        }
        .document())
    }

    fn failed(cell: &BulkCell) -> bool {
        cell.outcome.status() == crate::measure::CellStatus::Failed
    }

    fn stored_document(store: &Store, run: &StoredRun, _: Option<String>) -> Result<Document> {
        let sampling = super::session::stored_sampling(&run.options_json);
        let cells = store.load_bulk_cells(run.id)?;
        Ok(BulkReport {
            run_id: Some(run.id),
            complete: run.status.is_complete(),
            host: &run.host,
            libraries: &run.libraries,
            seed: sampling.seed,
            precision: sampling.precision,
            cells: &cells,
            counted_with: sampling.valgrind.as_deref(),
        }
        .document())
    }
}

/// A row and the backend that runs it (`None` for a no-crypto row).
type Planned = (BulkScenario, Option<Arc<dyn Backend>>);

/// Application bytes per counted sample without `--bytes-per-sample`: one
/// chunk of the sender's writes and the receiver's reads.
const COUNTED_BYTES: usize = 256 * 1024;

/// Counts every planned row's instructions per side under valgrind and
/// stores them: beside the timed samples of `cells` (in planned order), or
/// as new cells when time was not measured.
fn count_matrix(
    planned: &[Planned],
    certs: &CertCache,
    options: CountOptions,
    bytes: usize,
    session: &mut Session,
    cells: &mut Vec<BulkCell>,
) -> Result<()> {
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
    let bar = Bar::counting(work.len() * options.samples, session.quiet());
    let counted = count_instructions(&work, certs, &options, session.interrupt(), &|done| {
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
            session.save(|store, run_id| store.save_bulk_counts(run_id, cell));
        } else {
            let cell = BulkCell {
                subject: backend.as_ref().map_or(Subject::Plain, |b| b.subject()),
                scenario: *scenario,
                negotiated,
                sample_bytes: counted_bytes,
                outcome: outcome.without_samples(),
                instructions: Some(outcome),
                counted_bytes,
            };
            session.save(|store, run_id| store.save_bulk_cell(run_id, &cell));
            cells.push(cell);
        }
    }
    Ok(())
}

/// Prepares every planned cell, samples the runnable ones in interleaved
/// rounds, each paired with the no-crypto row of its size, and stores each
/// as it finishes.
fn sample_matrix(
    planned: &[Planned],
    certs: &CertCache,
    bytes_per_sample: Option<usize>,
    sampling: &SamplingOptions,
    session: &mut Session,
) -> Result<Vec<BulkCell>> {
    let bar = session.bar(planned.len());
    let mut cells: Vec<BulkCell> = Vec::new();
    let mut probes: Vec<BulkProbe> = Vec::new();
    let mut probe_cell: Vec<usize> = Vec::new();
    for (scenario, backend) in planned {
        let backend = backend.as_ref();
        let mut cell = BulkCell {
            subject: backend.map_or(Subject::Plain, |b| b.subject()),
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
                report_failure(&bar, &cell);
                session.save(|store, run_id| store.save_bulk_cell(run_id, &cell));
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

    let already = cells.len() - probes.len();
    let interrupt = Arc::clone(session.interrupt());
    let run = measure::sample(
        probes.iter_mut().map(BulkProbe::probe).collect(),
        pairing,
        sampling,
        &interrupt,
        &mut StoringOutcomes {
            cells: &mut cells,
            probe_cell: &probe_cell,
            session,
            bar: &bar,
            already,
            label: |cell| format!("{} {}", cell.subject, cell.scenario.label()),
            outcome: |cell| &mut cell.outcome,
            save: |store, run_id, cell| store.save_bulk_cell(run_id, cell),
            save_samples: |store, run_id, taken| store.save_bulk_samples(run_id, taken),
            store_rounds: true,
        },
    )?;
    bar.0.finish_and_clear();
    session.save(|store, run_id| store.save_rounds(run_id, &run.rounds));
    session.mark_interrupted(run.interrupted);
    Ok(cells)
}

fn report_failure(bar: &Bar, cell: &BulkCell) {
    bar.failed(
        &format!("{} {}", cell.subject, cell.scenario.label()),
        &cell.outcome,
    );
}
