//! `tlslab handshake`: the matrix from a preset and the axis options, every
//! cell sampled in interleaved rounds, stored as it finishes, reported with
//! ratios to the baseline row from same-round pairs; with `--cpu-features
//! generic`, the matrix again in a child process whose libraries see no CPU
//! features, its rows beside the native ones.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

use super::axes::{matrix_from, overridden};
use super::generic;
use super::handshake_servers::{names, program_servers, server_backends};
use super::network::NetworkPlan;
use super::session::{usage, Bar, SamplingDefaults};
use super::study::{self, Outputs, Plan, RunView, Session, StoringCells, Study};
use crate::backend::{backends_from_list, Backend, LibraryInfo};
use crate::certs::CertCache;
use crate::cli::{ExportArgs, GenericPlan, HandshakeArgs};
use crate::host::HostInfo;
use crate::measure::{CellStatus, Outcome, SamplingOptions};
use crate::report::handshake::HandshakeReport;
use crate::report::Document;
use crate::scenario::baseline as baselines;
use crate::scenario::presets::Preset;
use crate::scenario::{
    distinct, BackendList, CpuFeatures, HandshakeMatrix, HandshakeScenario, Measure, Named, Shard,
    Transport,
};
use crate::store::{RunKind, Store, StoredRun};
use crate::workload::counted::{count_matrix, CountOptions};
use crate::workload::handshake::{run_cells, CellResult};
use crate::workload::remote::Remote;

/// Sampling defaults of `handshake`.
pub(crate) const DEFAULTS: SamplingDefaults = SamplingDefaults {
    precision: crate::cli::Percent::new(1.0),
    max_time_s: 5.0,
    min_samples: 10,
    warmup_s: 0.2,
    max_total_s: None,
    slice: Duration::from_millis(3),
};

/// The options of a handshake run, as stored with the run.
#[derive(Debug, Serialize)]
struct StoredOptions<'a> {
    preset: Option<&'static str>,
    backends: Vec<&'static str>,
    matrix: &'a HandshakeMatrix,
    /// A preset's rows on backends of their own ([`Preset::companions`]).
    companions: Vec<&'a HandshakeMatrix>,
    sampling: &'a SamplingOptions,
    baseline: Option<&'a str>,
    cpu_features: String,
    shard: Option<Shard>,
    measures: &'a [Measure],
    /// The valgrind that counted instructions ("valgrind-3.19.0").
    #[serde(skip_serializing_if = "Option::is_none")]
    valgrind: Option<&'a str>,
    /// The wire table was asked for (`--wire`).
    wire: bool,
    /// The network profiles, the link and its handshakes per row.
    #[serde(skip_serializing_if = "Option::is_none")]
    network: Option<&'a NetworkPlan>,
    /// The server elsewhere (`--remote`): where, its host and libraries.
    #[serde(skip_serializing_if = "Option::is_none")]
    remote: Option<RemoteServer<'a>>,
}

/// Where a run's server ran, when not in this process.
#[derive(Debug, Serialize)]
struct RemoteServer<'a> {
    address: &'a str,
    host: &'a HostInfo,
    libraries: &'a [crate::backend::LibraryInfo],
}

/// Runs `tlslab handshake` and returns the exit code.
pub fn run(args: &HandshakeArgs) -> Result<i32> {
    study::run::<HandshakeStudy>(args)
}

/// A handshake run as planned from its command line, and what its
/// measuring keeps beside the cells (the rounds, the baseline it resolved).
pub(crate) struct HandshakeStudy {
    preset: Option<Preset>,
    matrix: HandshakeMatrix,
    /// A preset's rows on backends of their own ([`Preset::companions`]).
    companions: Vec<HandshakeMatrix>,
    /// The command line's backends, each listed server's (a program's
    /// through its client), or the remote server's.
    backends: Vec<Arc<dyn Backend>>,
    /// Every backend the run uses, the companions' included.
    all_backends: Vec<Arc<dyn Backend>>,
    /// The server elsewhere (`--remote`) and its address.
    remote: Option<(Arc<Remote>, String)>,
    /// This run's (or shard's) rows of the matrix.
    scenarios: Vec<HandshakeScenario>,
    planned: Vec<(HandshakeScenario, Arc<dyn Backend>)>,
    /// `--baseline` or the preset's; after measuring, the row resolved.
    baseline: Option<String>,
    sampling: SamplingOptions,
    feature_sets: Vec<CpuFeatures>,
    counting: Counting,
    network: Option<NetworkPlan>,
    shard: Option<Shard>,
    wire: bool,
    cert_dir: Option<std::path::PathBuf>,
    rounds: Vec<crate::measure::Round>,
    /// The parsed command line, handed to the generic-CPU child.
    args: HandshakeArgs,
}

impl Study for HandshakeStudy {
    type Args = HandshakeArgs;
    type Cell = CellResult;
    const KIND: RunKind = RunKind::Handshake;

    fn plan(args: &HandshakeArgs) -> Result<Plan<Self>> {
        let preset = args.preset;
        let mut matrix = matrix_from(args, preset)?;
        // What is measured, checked before any server starts: a counted
        // measure against nginx or a remote server is a usage error
        // whether or not that server could start.
        let feature_sets = distinct(&args.cpu_features);
        let counting = Counting::from_args(args, &feature_sets)?;
        let remote = match &args.remote {
            Some(target) => {
                // TLS over TCP, DTLS over UDP, to the server elsewhere.
                matrix.transports = vec![Transport::Tcp, Transport::Udp];
                Some((Remote::connect(target)?, target.clone()))
            }
            None => None,
        };
        let backends = server_backends(args, preset, &matrix, remote.as_ref().map(|(r, _)| r))?;
        // A preset's rows on backends of their own, unless the protocols
        // are chosen on the command line; with --backend, on those of its
        // own that the list names (`--backend wolfssl --preset dtls-study`
        // keeps wolfSSL's DTLS 1.3 rows, `--backend openssl` drops them).
        let mut companions: Vec<(HandshakeMatrix, Vec<Arc<dyn Backend>>)> = Vec::new();
        if let Some(preset) = preset
            .filter(|_| args.axes.tls.is_none() && args.server.is_none() && args.remote.is_none())
        {
            for companion in preset.companions() {
                let mut on = backends_from_list(
                    &BackendList::named(companion.backends.iter().copied()).map_err(usage)?,
                );
                if let Some(named) = &args.backend {
                    let named: Vec<_> = named.resolve().into_iter().map(|(id, _)| id).collect();
                    on.retain(|backend| named.iter().any(|id| id.id() == backend.id()));
                }
                if !on.is_empty() {
                    companions.push((overridden(args, companion.matrix)?, on));
                }
            }
        }
        let scenarios = matrix.expand();
        zero_rtt_runs_somewhere(&scenarios, &backends)?;
        let baseline = asked_baseline(args, preset, &scenarios)?;
        let defaults = match preset {
            Some(preset) => SamplingDefaults {
                max_total_s: Some(preset.budget_s()),
                ..DEFAULTS
            },
            None => DEFAULTS,
        };
        let sampling = args.sampling.options(defaults)?;
        let network = NetworkPlan::from_args(args, preset.and_then(Preset::network))?;
        let shard = args.shard.shard;
        // A shard measures its part of the matrix and the baseline row.
        let is_baseline = |s: &HandshakeScenario| {
            baseline
                .as_deref()
                .is_some_and(|b| baselines::is_baseline(b, s))
        };
        let scenarios = Shard::filter(shard, scenarios, |s| s.label(), is_baseline);
        let mut planned: Vec<(HandshakeScenario, Arc<dyn Backend>)> = scenarios
            .iter()
            .flat_map(|scenario| backends.iter().map(|b| (*scenario, Arc::clone(b))))
            .collect();
        for (companion, on) in &companions {
            let rows = Shard::filter(shard, companion.expand(), |s| s.label(), is_baseline);
            for scenario in &rows {
                for backend in on {
                    // Each row once per backend: a companion may repeat
                    // the matrix on a backend the list also names.
                    let planned_already = planned
                        .iter()
                        .any(|(s, b)| s == scenario && b.id() == backend.id());
                    if !planned_already {
                        planned.push((*scenario, Arc::clone(backend)));
                    }
                }
            }
        }
        if let Some(shard) =
            shard.filter(|shard| !shard.owns_any(planned.iter().map(|(s, _)| s.label())))
        {
            return Ok(Plan::EmptyShard(shard));
        }
        let mut all_backends = backends.clone();
        for backend in companions.iter().flat_map(|(_, on)| on) {
            if !all_backends.iter().any(|b| b.id() == backend.id()) {
                all_backends.push(Arc::clone(backend));
            }
        }
        Ok(Plan::Run(Self {
            preset,
            matrix,
            companions: companions.into_iter().map(|(m, _)| m).collect(),
            backends,
            all_backends,
            remote,
            scenarios,
            planned,
            baseline,
            sampling,
            feature_sets,
            counting,
            network,
            shard,
            wire: args.wire || preset.is_some_and(|p| p.network().is_some()),
            cert_dir: args.cert_dir.clone(),
            rounds: Vec::new(),
            args: args.clone(),
        }))
    }

    fn outputs(args: &HandshakeArgs) -> Outputs<'_> {
        Outputs::of(&args.output, args.quiet)
    }

    fn options_json(&self) -> Result<String> {
        Ok(serde_json::to_string(&StoredOptions {
            preset: self.preset.map(Named::id),
            backends: self.all_backends.iter().map(|b| b.id()).collect(),
            matrix: &self.matrix,
            companions: self.companions.iter().collect(),
            sampling: &self.sampling,
            baseline: self.baseline.as_deref(),
            cpu_features: generic::feature_list(&self.feature_sets),
            shard: self.shard,
            measures: &self.counting.measures,
            valgrind: self.counting.valgrind.as_deref(),
            wire: self.wire,
            network: self.network.as_ref(),
            remote: self.remote.as_ref().map(|(r, address)| RemoteServer {
                address,
                host: &r.host,
                libraries: &r.libraries,
            }),
        })?)
    }

    fn libraries(&self) -> Vec<LibraryInfo> {
        self.all_backends.iter().map(|b| b.library()).collect()
    }

    fn measure(&mut self, session: &mut Session) -> Result<Vec<CellResult>> {
        let certs = CertCache::new(self.cert_dir.clone().unwrap_or_else(CertCache::default_dir));
        let mut cells = Vec::new();
        if self.counting.measures.contains(&Measure::Time)
            && self.feature_sets.contains(&CpuFeatures::Native)
        {
            let interrupt = Arc::clone(session.interrupt());
            let bar = session.bar(self.planned.len());
            let run = run_cells(
                &self.planned,
                &certs,
                &self.sampling,
                self.baseline.as_deref(),
                &interrupt,
                &mut StoringCells { session, bar: &bar },
            )?;
            bar.0.finish_and_clear();
            session.mark_interrupted(run.interrupted);
            cells = run.cells;
            self.rounds = run.rounds;
        }
        if !session.interrupted() && self.counting.any() {
            self.counting
                .run(&self.planned, &certs, session, &mut cells)?;
        }
        if !session.interrupted() {
            let traced = self.planned.len().min(cells.len());
            super::network::run(self.network.as_ref(), &mut cells[..traced], &certs, session)?;
        }
        if !session.interrupted() && self.feature_sets.contains(&CpuFeatures::Generic) {
            let backend_ids: Vec<&str> = self.backends.iter().map(|b| b.id()).collect();
            for cell in generic_cells(&self.args, &backend_ids, &self.scenarios, session)? {
                session.save(|store, run_id| store.save_cell(run_id, &cell));
                cells.push(cell);
            }
        }
        if let Some((remote, _)) = &self.remote {
            remote.close();
        }
        // Without --baseline or a preset's, the first row measured in the
        // matrix's order; recorded with the run, so that `report` divides
        // by the same row (the store keeps cells in the order first stored).
        self.baseline = self
            .baseline
            .take()
            .or_else(|| first_measured_label(&cells));
        let (baseline, rounds) = (self.baseline.as_deref(), &self.rounds);
        session.save(|store, run_id| {
            store.record_baseline(run_id, baseline)?;
            store.save_rounds(run_id, rounds)
        });
        Ok(cells)
    }

    fn document(&self, run: &RunView<'_>, cells: &[CellResult]) -> Result<Document> {
        let server_elsewhere = self
            .remote
            .as_ref()
            .map(|(remote, address)| super::session::remote_description(address, &remote.host));
        Ok(HandshakeReport {
            run_id: run.run_id,
            complete: run.complete,
            baseline: self.baseline.as_deref(),
            host: run.host,
            libraries: run.libraries,
            seed: Some(self.sampling.seed),
            precision: Some(self.sampling.precision),
            cells,
            rounds: &self.rounds,
            counted_with: self.counting.valgrind.as_deref(),
            show_wire: self.wire,
            server_elsewhere: server_elsewhere.as_deref(),
        }
        .document())
    }

    /// A row that failed over a link fails the run as a failed cell does.
    fn failed(cell: &CellResult) -> bool {
        cell.outcome.status() == CellStatus::Failed
            || cell.counts.network.iter().any(|n| {
                n.measured
                    .as_ref()
                    .is_some_and(|m| m.status() == CellStatus::Failed)
            })
    }

    fn stored_document(
        store: &Store,
        run: &StoredRun,
        baseline: Option<String>,
    ) -> Result<Document> {
        let sampling = super::session::stored_sampling(&run.options_json);
        let baseline = baseline.or_else(|| recorded_baseline(run));
        Ok(HandshakeReport {
            run_id: Some(run.id),
            complete: run.status.is_complete(),
            baseline: baseline.as_deref(),
            host: &run.host,
            libraries: &run.libraries,
            seed: sampling.seed,
            precision: sampling.precision,
            cells: &run.cells,
            rounds: &store.load_rounds(run.id)?,
            counted_with: sampling.valgrind.as_deref(),
            show_wire: sampling.wire,
            server_elsewhere: sampling.remote.as_deref(),
        }
        .document())
    }
}

/// `--resumption 0rtt` where no row can send early data (no library
/// asked for offers it on the protocols and transports asked for) is a
/// usage error that gives the first row's reason, as a resumption mode no
/// requested version allows is; where some row can, the others say why.
fn zero_rtt_runs_somewhere(
    scenarios: &[HandshakeScenario],
    backends: &[Arc<dyn Backend>],
) -> Result<()> {
    let mut reasons = scenarios
        .iter()
        .filter(|s| s.resumption.sends_early_data())
        .flat_map(|s| backends.iter().map(move |b| (s, b)))
        .map(|(s, b)| {
            let reason = s.protocol_conflict().or_else(|| b.unsupported_reason(s));
            reason.map(|reason| format!("{} {}: {reason}", b.id(), s.label()))
        });
    match reasons.next() {
        Some(Some(first)) if reasons.all(|reason| reason.is_some()) => Err(usage(format!(
            "--resumption 0rtt: no row can send 0-RTT data; {first}"
        ))),
        _ => Ok(()),
    }
}

/// The baseline asked for: `--baseline`, which must be a row of the
/// matrix, else the preset's when it is one.
fn asked_baseline(
    args: &HandshakeArgs,
    preset: Option<Preset>,
    scenarios: &[HandshakeScenario],
) -> Result<Option<String>> {
    Ok(match &args.baseline {
        Some(spec) if baselines::twin_protocol(spec).is_some() => {
            let version = baselines::twin_protocol(spec)
                .expect("matched above")
                .map_err(usage)?;
            if !scenarios.iter().any(|s| s.version == version) {
                return Err(usage(format!(
                    "the baseline '{spec}' names {}, which no row of this matrix runs; add it with --tls",
                    version.display()
                )));
            }
            Some(spec.clone())
        }
        Some(label) => {
            if !scenarios.iter().any(|s| s.label() == *label) {
                let labels: Vec<String> = scenarios.iter().map(|s| s.label()).collect();
                return Err(usage(format!(
                    "the baseline '{label}' is not a row of this matrix; rows: {}",
                    labels.join(", ")
                )));
            }
            Some(label.clone())
        }
        None => {
            preset
                .map(|p| p.baseline_spec())
                .filter(|spec| match baselines::twin_protocol(spec) {
                    Some(version) => {
                        version.is_ok_and(|v| scenarios.iter().any(|s| s.version == v))
                    }
                    None => scenarios.iter().any(|s| s.label() == *spec),
                })
        }
    })
}

/// The row a stored handshake run's ratios were taken against: the one the
/// run recorded; for a run stored before runs recorded it, its
/// `--baseline` or preset's, else the first row measured in the store's order.
pub(super) fn recorded_baseline(run: &StoredRun) -> Option<String> {
    run.baseline
        .clone()
        .or_else(|| super::session::stored_sampling(&run.options_json).baseline)
        .or_else(|| first_measured_label(&run.cells))
}

/// The first row with samples (timed, else counted): the default baseline.
pub(crate) fn first_measured_label(cells: &[CellResult]) -> Option<String> {
    let counted = |c: &&CellResult| {
        c.counts
            .instructions
            .as_ref()
            .is_some_and(|o| !o.samples().is_empty())
            || c.counts
                .memory
                .as_ref()
                .is_some_and(|o| !o.samples().is_empty())
    };
    cells
        .iter()
        .find(|c| !c.samples().is_empty())
        .or_else(|| cells.iter().find(counted))
        .map(|c| c.scenario.label())
}

/// The counted measures a run asks for (`--measure instructions,memory`)
/// and what counting them takes.
struct Counting {
    /// Every measure asked for, time included.
    measures: Vec<Measure>,
    /// The valgrind that counts instructions, when they are asked for.
    valgrind: Option<String>,
    options: CountOptions,
}

impl Counting {
    /// The measures from `--measure`, checked against the rest of the
    /// command line; a missing valgrind is a usage error.
    fn from_args(args: &HandshakeArgs, feature_sets: &[CpuFeatures]) -> Result<Self> {
        let (measures, valgrind) = args.measures.checked()?;
        let counted = measures.iter().any(|m| m.is_counted());
        if counted && args.remote.is_some() {
            return Err(usage(
                "counted measures run both sides in tlslab's process; against a --remote server use --measure time",
            ));
        }
        if args.remote.is_some() && feature_sets.contains(&CpuFeatures::Generic) {
            return Err(usage(
                "--cpu-features generic runs the matrix again in a child process, which has no --remote server: leave it out",
            ));
        }
        let programs = program_servers(args);
        if counted && !programs.is_empty() {
            return Err(usage(format!(
                "counted measures run both sides in tlslab's process; against {} use --measure time",
                names(&programs)
            )));
        }
        if counted && feature_sets.contains(&CpuFeatures::Generic) {
            return Err(usage(
                "--cpu-features generic is timed only; leave --measure at time for it",
            ));
        }
        Ok(Self {
            measures,
            valgrind,
            options: args.sampling.count_options(args.measures.breakdown),
        })
    }

    /// True if and only if some measure is counted.
    fn any(&self) -> bool {
        self.measures.iter().any(|m| m.is_counted())
    }

    /// Counts every planned cell and stores its counts: beside its timed
    /// samples in `cells` (the time pass's cells, in planned order), or as
    /// a new cell when time was not measured.
    fn run(
        &self,
        planned: &[(HandshakeScenario, Arc<dyn Backend>)],
        certs: &CertCache,
        session: &mut Session,
        cells: &mut Vec<CellResult>,
    ) -> Result<()> {
        let counted_measures = self.measures.iter().filter(|m| m.is_counted()).count();
        let bar = Bar::counting(
            planned.len() * self.options.samples * counted_measures,
            session.quiet(),
        );
        let counts = count_matrix(
            planned,
            certs,
            &self.measures,
            &self.options,
            session.interrupt(),
            &|done| bar.0.set_position(done as u64),
        )?;
        bar.0.finish_and_clear();
        let timed = !cells.is_empty();
        for (i, ((scenario, backend), (counts, negotiated))) in
            planned.iter().zip(counts).enumerate()
        {
            if timed {
                let cell = &mut cells[i];
                cell.counts = counts;
                cell.negotiated = cell.negotiated.take().or(negotiated);
                session.save(|store, run_id| store.save_counts(run_id, cell));
            } else {
                let outcome = counts
                    .instructions
                    .as_ref()
                    .map(Outcome::without_samples)
                    .or_else(|| counts.memory.as_ref().map(Outcome::without_samples))
                    .expect("a counted measure was asked for");
                let cell = CellResult {
                    subject: backend.subject(),
                    scenario: *scenario,
                    negotiated,
                    outcome,
                    counts,
                };
                session.save(|store, run_id| store.save_cell(run_id, &cell));
                cells.push(cell);
            }
        }
        Ok(())
    }
}

/// The matrix again in a child process whose libraries see no CPU features
/// ([`generic`]), its rows "<backend> (generic)". A backend that cannot be
/// told to ignore the CPU's features (ring, says its descriptor) gets rows
/// that say so. The child samples after the parent, so a ratio between a
/// native and a generic row is not from same-round pairs; each backend's
/// rows are.
fn generic_cells(
    args: &HandshakeArgs,
    backends: &[&str],
    scenarios: &[HandshakeScenario],
    session: &Session,
) -> Result<Vec<CellResult>> {
    let maskable = generic::maskable(backends);
    let mut cells = Vec::new();
    if !maskable.is_empty() {
        let plan = |database: &std::path::Path| {
            let mut child = args.clone();
            child.cpu_features = vec![CpuFeatures::Native];
            child.output.database = generic::child_database(database);
            child.output.exports = ExportArgs::default();
            child.quiet = true;
            // A preset's own backends (its companions' included) are
            // planned by the child as by the parent; a program server's
            // client is tlslab's OpenSSL whatever --backend says.
            if program_servers(args).is_empty() && (args.backend.is_some() || args.preset.is_none())
            {
                child.backend =
                    Some(BackendList::named(maskable).expect("backends' ids are their names"));
            }
            GenericPlan::Handshake(Box::new(child))
        };
        let stored = generic::run_child(plan, session, |store| {
            store.load_run(store.latest_run_id().ok()??).ok()
        })?;
        cells.extend(
            stored
                .into_iter()
                .flat_map(|run| run.cells)
                .map(|mut cell| {
                    cell.subject = cell.subject.with_cpu_features(CpuFeatures::Generic);
                    cell
                }),
        );
    }
    for (backend, reason) in generic::unmaskable(backends) {
        cells.extend(scenarios.iter().map(|scenario| CellResult {
            counts: Default::default(),
            subject: generic::generic_row(backend),
            scenario: *scenario,
            negotiated: None,
            outcome: Outcome::Unsupported {
                reason: reason.to_string(),
            },
        }));
    }
    Ok(cells)
}
