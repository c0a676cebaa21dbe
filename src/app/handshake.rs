//! `tlslab handshake`: the matrix from a preset and the axis options, every
//! cell sampled in interleaved rounds, stored as it finishes, reported with
//! ratios to the baseline row from same-round pairs; with `--cpu-features
//! generic`, the matrix again in a child process whose libraries see no CPU
//! features, its rows beside the native ones.

use std::process::{Command as Process, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use super::axes::{matrix_from, overridden};
use super::network::NetworkPlan;
use super::session::{
    check_exports, chosen_backends, empty_shard, finish, interrupt_flag, open_store, run_info,
    usage, Bar, SamplingDefaults, Shard,
};
use super::speed::{cpu_feature_list, CpuFeatures, GENERIC_CPU_ENV};
use crate::backend::{backends_from_list, Backend};
use crate::certs::CertCache;
use crate::cli::{HandshakeArgs, MutualArg};
use crate::host::HostInfo;
use crate::measure::{Outcome, SamplingOptions};
use crate::report::handshake::HandshakeReport;
use crate::scenario::presets::Preset;
use crate::scenario::{parse_name, HandshakeMatrix, HandshakeScenario, Measure, Named, Transport};
use crate::store::Store;
use crate::workload::counted::{count_matrix, CountOptions, COUNTED_SAMPLES};
use crate::workload::handshake::{run_cells, CellResult, MatrixObserver, MatrixRun};
use crate::workload::nginx::NginxBackend;
use crate::workload::remote::{Remote, RemoteBackend};

/// Sampling defaults of `handshake`.
pub(crate) const DEFAULTS: SamplingDefaults = SamplingDefaults {
    precision: "1%",
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
    cpu_features: &'a str,
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

/// Stores each cell as it finishes, says which failed, and keeps the
/// progress bar moving (for `handshake` and `cost`).
pub(crate) struct Storing<'a> {
    pub store: &'a mut Store,
    pub run_id: i64,
    pub bar: &'a Bar,
}

impl MatrixObserver for Storing<'_> {
    fn cell_finished(&mut self, cell: &CellResult) -> Result<()> {
        self.bar.failed(
            &format!("{} {}", cell.backend, cell.scenario.label()),
            &cell.outcome,
        );
        self.store
            .save_cell(self.run_id, cell)
            .context("saving a finished cell")
    }

    fn round_finished(&mut self, round: u32, finished: usize, _total: usize) {
        self.bar.round(round, finished);
    }
}

/// Which server the client handshakes with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Server {
    Inprocess,
    Nginx,
}

fn parse_server(name: Option<&str>) -> Result<Server> {
    match name.unwrap_or("inprocess") {
        "inprocess" => Ok(Server::Inprocess),
        "nginx" => Ok(Server::Nginx),
        other => Err(usage(format!(
            "unknown server '{other}'; valid servers: inprocess, nginx"
        ))),
    }
}

pub fn run(args: &HandshakeArgs) -> Result<i32> {
    let preset = args
        .preset
        .as_deref()
        .map(parse_name::<Preset>)
        .transpose()
        .map_err(usage)?;
    let mut matrix = matrix_from(args, preset)?;
    let remote = match &args.remote {
        Some(target) => {
            // TLS over TCP, DTLS over UDP, to the server elsewhere.
            matrix.transports = vec![Transport::Tcp, Transport::Udp];
            Some(Remote::connect(target)?)
        }
        None => None,
    };
    let backends: Vec<Arc<dyn Backend>> = match parse_server(args.server.as_deref())? {
        Server::Inprocess => chosen_backends(
            args.backend.as_deref(),
            preset.map(|p| p.default_backends()),
            Some(&matrix.versions),
        )?,
        Server::Nginx => {
            if args.backend.as_deref().is_some_and(|b| b != "openssl") {
                return Err(usage(
                    "with --server nginx the client is tlslab's OpenSSL: --backend must be openssl or left out",
                ));
            }
            if args.transport.is_some() {
                return Err(usage(
                    "with --server nginx the client always talks TCP to nginx: leave --transport out",
                ));
            }
            // Every nginx it starts stops when it drops, at the end of this
            // function whatever happens.
            vec![Arc::new(NginxBackend::new()?)]
        }
    };
    let backends: Vec<Arc<dyn Backend>> = match &remote {
        Some(remote) => backends
            .into_iter()
            .map(|local| {
                Arc::new(RemoteBackend::new(local, Arc::clone(remote))) as Arc<dyn Backend>
            })
            .collect(),
        None => backends,
    };
    // A preset's rows on backends of their own, unless the backends or
    // the protocols are chosen on the command line.
    let mut companions: Vec<(HandshakeMatrix, Vec<Arc<dyn Backend>>)> = Vec::new();
    if let Some(preset) = preset.filter(|_| {
        args.backend.is_none()
            && args.axes.tls.is_none()
            && args.server.is_none()
            && args.remote.is_none()
    }) {
        for companion in preset.companions() {
            companions.push((
                overridden(args, companion.matrix)?,
                backends_from_list(&companion.backends.join(",")).map_err(usage)?,
            ));
        }
    }
    let scenarios = matrix.expand();
    let baseline = match &args.baseline {
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
        None => preset
            .map(|p| p.baseline().label())
            .filter(|label| scenarios.iter().any(|s| s.label() == *label)),
    };
    let defaults = match preset {
        Some(preset) => SamplingDefaults {
            max_total_s: Some(preset.budget_s()),
            ..DEFAULTS
        },
        None => DEFAULTS,
    };
    let sampling = args.sampling.options(defaults)?;
    let feature_sets = cpu_feature_list(&args.cpu_features)?;
    let counting = Counting::from_args(args, &feature_sets)?;
    let network = NetworkPlan::from_args(args, preset.and_then(Preset::network))?;
    let shard = args.shard.shard()?;
    // A shard measures its part of the matrix and the baseline row.
    let is_baseline = |s: &HandshakeScenario| baseline.as_deref() == Some(s.label().as_str());
    let scenarios = Shard::filter(shard, scenarios, |s| s.label(), is_baseline);
    let mut planned: Vec<(HandshakeScenario, Arc<dyn Backend>)> = scenarios
        .iter()
        .flat_map(|scenario| backends.iter().map(|b| (*scenario, Arc::clone(b))))
        .collect();
    for (companion, on) in &companions {
        let rows = Shard::filter(shard, companion.expand(), |s| s.label(), is_baseline);
        planned.extend(
            rows.iter()
                .flat_map(|scenario| on.iter().map(|b| (*scenario, Arc::clone(b)))),
        );
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
        preset: preset.map(Named::id),
        backends: all_backends.iter().map(|b| b.id()).collect(),
        matrix: &matrix,
        companions: companions.iter().map(|(m, _)| m).collect(),
        sampling: &sampling,
        baseline: baseline.as_deref(),
        cpu_features: &args.cpu_features,
        shard,
        measures: &counting.measures,
        valgrind: counting.valgrind.as_deref(),
        wire: args.wire || preset.is_some_and(|p| p.network().is_some()),
        network: network.as_ref(),
        remote: remote
            .as_ref()
            .zip(args.remote.as_deref())
            .map(|(r, address)| RemoteServer {
                address,
                host: &r.host,
                libraries: &r.libraries,
            }),
    };
    let run_id = store.begin_run(&run_info(
        crate::store::RunKind::Handshake,
        serde_json::to_string(&options)?,
        &host,
        &libraries,
    ))?;

    let certs = CertCache::new(args.cert_dir.clone().unwrap_or_else(CertCache::default_dir));
    let interrupt = interrupt_flag();
    let bar = Bar::new(planned.len(), args.quiet);
    let timed = counting.measures.contains(&Measure::Time);
    let mut run = if timed && feature_sets.contains(&CpuFeatures::Native) {
        run_cells(
            &planned,
            &certs,
            &sampling,
            baseline.as_deref(),
            &interrupt,
            &mut Storing {
                store: &mut store,
                run_id,
                bar: &bar,
            },
        )?
    } else {
        MatrixRun {
            cells: Vec::new(),
            rounds: Vec::new(),
            interrupted: false,
            out_of_time: false,
        }
    };
    bar.0.finish_and_clear();
    if !run.interrupted && counting.any() {
        run.interrupted = counting.run(
            &planned,
            &certs,
            &interrupt,
            args.quiet,
            (&mut store, run_id),
            &mut run.cells,
        )?;
    }
    if !run.interrupted {
        let traced = planned.len().min(run.cells.len());
        run.interrupted = super::network::run(
            network.as_ref(),
            &mut run.cells[..traced],
            &certs,
            &interrupt,
            args.quiet,
            (&mut store, run_id),
        )?;
    }
    if !run.interrupted && feature_sets.contains(&CpuFeatures::Generic) {
        let backend_ids: Vec<&str> = backends.iter().map(|b| b.id()).collect();
        for cell in generic_cells(args, &backend_ids, &scenarios, &interrupt)? {
            store.save_cell(run_id, &cell)?;
            run.cells.push(cell);
        }
        run.interrupted = interrupt.load(std::sync::atomic::Ordering::SeqCst);
    }
    if let Some(remote) = &remote {
        remote.close();
    }
    // Without --baseline or a preset's, the first row measured in the
    // matrix's order; recorded with the run, so that `report` divides by
    // the same row (the store keeps cells in the order they finished).
    let baseline = baseline.or_else(|| first_measured_label(&run.cells));
    store.record_baseline(run_id, baseline.as_deref())?;
    store.save_rounds(run_id, &run.rounds)?;
    store.finish_run(run_id, !run.interrupted)?;

    let server_elsewhere = remote
        .as_ref()
        .zip(args.remote.as_deref())
        .map(|(remote, address)| super::session::remote_description(address, &remote.host));
    let document = HandshakeReport {
        run_id: store.path().map(|_| run_id),
        complete: !run.interrupted,
        baseline: baseline.as_deref(),
        host: &host,
        libraries: &libraries,
        seed: Some(sampling.seed),
        precision: Some(sampling.precision),
        cells: &run.cells,
        rounds: &run.rounds,
        counted_with: counting.valgrind.as_deref(),
        show_wire: args.wire || preset.is_some_and(|p| p.network().is_some()),
        server_elsewhere: server_elsewhere.as_deref(),
    }
    .document();
    args.display.print(&document)?;
    args.exports.write(&document)?;
    // A row that failed over a link fails the run as a failed cell does.
    let failed = run
        .cells
        .iter()
        .filter(|c| {
            c.outcome.status() == crate::measure::CellStatus::Failed
                || c.counts.network.iter().any(|n| {
                    n.measured
                        .as_ref()
                        .is_some_and(|m| m.status() == crate::measure::CellStatus::Failed)
                })
        })
        .count();
    Ok(finish(
        &store,
        run_id,
        run.interrupted,
        run.cells.len(),
        failed,
    ))
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
        if counted && args.server.as_deref() == Some("nginx") {
            return Err(usage(
                "counted measures run both sides in tlslab's process; against nginx use --measure time",
            ));
        }
        if counted && feature_sets.contains(&CpuFeatures::Generic) {
            return Err(usage(
                "--cpu-features generic is timed only; leave --measure at time for it",
            ));
        }
        Ok(Self {
            measures,
            valgrind,
            options: CountOptions {
                samples: args.sampling.runs.unwrap_or(COUNTED_SAMPLES),
                jobs: crate::host::available_cores(),
                breakdown: args.measures.breakdown,
            },
        })
    }

    /// True if and only if some measure is counted.
    fn any(&self) -> bool {
        self.measures.iter().any(|m| m.is_counted())
    }

    /// Counts every planned cell and stores its counts: beside its timed
    /// samples in `cells` (the time pass's cells, in planned order), or as
    /// a new cell when time was not measured. Returns true if Ctrl-C
    /// stopped it.
    fn run(
        &self,
        planned: &[(HandshakeScenario, Arc<dyn Backend>)],
        certs: &CertCache,
        interrupt: &AtomicBool,
        quiet: bool,
        (store, run_id): (&mut Store, i64),
        cells: &mut Vec<CellResult>,
    ) -> Result<bool> {
        let counted_measures = self.measures.iter().filter(|m| m.is_counted()).count();
        let bar = Bar::counting(
            planned.len() * self.options.samples * counted_measures,
            quiet,
        );
        let counts = count_matrix(
            planned,
            certs,
            &self.measures,
            &self.options,
            interrupt,
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
                store.save_counts(run_id, cell)?;
            } else {
                let outcome = counts
                    .instructions
                    .as_ref()
                    .map(Outcome::without_samples)
                    .or_else(|| counts.memory.as_ref().map(Outcome::without_samples))
                    .expect("a counted measure was asked for");
                let cell = CellResult {
                    backend: backend.id().to_string(),
                    scenario: *scenario,
                    negotiated,
                    outcome,
                    counts,
                };
                store.save_cell(run_id, &cell)?;
                cells.push(cell);
            }
        }
        Ok(interrupt.load(std::sync::atomic::Ordering::SeqCst))
    }
}

/// The matrix again in a child process whose libraries see no CPU features
/// (OpenSSL's and aws-lc's capability mask cleared), stored by the child in
/// a scratch database and read back; its rows are "<backend> (generic)".
/// ring cannot be told to ignore the CPU's features, so its rows say so.
/// The child samples after the parent, so a ratio between a native and a
/// generic row is not from same-round pairs; each backend's rows are.
fn generic_cells(
    args: &HandshakeArgs,
    backends: &[&str],
    scenarios: &[HandshakeScenario],
    interrupt: &std::sync::atomic::AtomicBool,
) -> Result<Vec<CellResult>> {
    let maskable: Vec<&str> = backends
        .iter()
        .copied()
        .filter(|id| *id != "rustls-ring")
        .collect();
    let mut cells = Vec::new();
    if !maskable.is_empty() {
        crate::child::remove_leftovers();
        let scratch = crate::child::scratch_dir("generic").context("making a scratch directory")?;
        let database = scratch.path().join("generic.sqlite");
        let mut child = Process::new(std::env::current_exe()?);
        child
            .args(["handshake", "-q", "--cpu-features", "native"])
            .arg("--db")
            .arg(&database);
        // A preset's own backends (its companions' included) are planned
        // by the child as by the parent.
        if args.backend.is_some() || args.preset.is_none() {
            child.args(["--backend", &maskable.join(",")]);
        }
        let axes = &args.axes;
        let sampling = &args.sampling;
        let mutual = args.mutual.map(|mutual| {
            match mutual {
                MutualArg::Off => "off",
                MutualArg::On => "on",
                MutualArg::Both => "both",
            }
            .to_string()
        });
        for (flag, value) in [
            ("--preset", args.preset.clone()),
            ("--tls", axes.tls.clone()),
            ("--group", axes.group.clone()),
            ("--cert", axes.cert.clone()),
            ("--suite", axes.suite.clone()),
            ("--resumption", axes.resumption.clone()),
            ("--chain-depth", axes.chain_depth.map(|v| v.to_string())),
            ("--mtu", axes.mtu.map(|v| v.to_string())),
            ("--transport", args.transport.clone()),
            ("--mutual", mutual),
            ("--baseline", args.baseline.clone()),
            ("--precision", sampling.precision.clone()),
            ("--max-time", sampling.max_time.map(|v| v.to_string())),
            (
                "--max-total-time",
                sampling.max_total_time.map(|v| v.to_string()),
            ),
            ("--min-samples", sampling.min_samples.map(|v| v.to_string())),
            ("--runs", sampling.runs.map(|v| v.to_string())),
            ("--warmup", sampling.warmup.map(|v| v.to_string())),
            ("--seed", sampling.seed.map(|v| v.to_string())),
            ("--shard", args.shard.shard.clone()),
        ] {
            if let Some(value) = value {
                child.args([flag, &value]);
            }
        }
        if let Some(dir) = &args.cert_dir {
            child.arg("--cert-dir").arg(dir);
        }
        child
            .env(GENERIC_CPU_ENV.0, GENERIC_CPU_ENV.1)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Killed with tlslab; stopped as tlslab is (Ctrl-C, SIGTERM), and
        // what it measured until then is kept.
        let output = crate::child::run_worker(child, interrupt)
            .context("starting the generic-CPU child process")?;
        let stored = Store::open(&database).ok().and_then(|store| {
            let run_id = store.latest_run_id().ok()??;
            store.load_run(run_id).ok()
        });
        let Some(stored) = stored else {
            if interrupt.load(std::sync::atomic::Ordering::SeqCst) {
                // Stopped before it stored a run: nothing of it to keep.
                return Ok(cells);
            }
            bail!(
                "the generic-CPU child process failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            );
        };
        cells.extend(stored.cells.into_iter().map(|mut cell| {
            cell.backend = format!("{} (generic)", cell.backend);
            cell
        }));
    }
    if backends.contains(&"rustls-ring") {
        cells.extend(scenarios.iter().map(|scenario| CellResult {
            counts: Default::default(),
            backend: "rustls-ring (generic)".to_string(),
            scenario: *scenario,
            negotiated: None,
            outcome: Outcome::Unsupported {
                reason: "ring has no switch to turn its CPU features off".to_string(),
            },
        }));
    }
    Ok(cells)
}
