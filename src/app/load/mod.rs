//! `tlslab load`: an HTTPS server under a planned request rate. By default
//! the server is Debian's nginx, started on loopback for the run (serving a
//! generated page of the asked size) and stopped after it whatever happens
//! (`--server A,B,...`: several, one after another, one table: `servers`;
//! `--cert A,B`: each server once per certificate, in the same table);
//! `--server embedded` starts tlslab's own HTTPS server in this process
//! instead (on its own threads, stopped after the run; its threads' CPU and,
//! on rustls, its counted breakdown are reported; a preset's study runs on
//! it, on OpenSSL, by default). `--target` aims at a server the user runs,
//! after a probe of what it accepts (`--probe-only`: the probe alone); off
//! loopback only with `--i-have-permission` and `--max-rate`, checked
//! before anything is sent. With `--measure time,instructions` one server
//! handshake of the same scenario is counted under valgrind after the
//! load, per category, beside perf's categories. The run is stored (kind
//! `load`) with its results when the load ends, Ctrl-C included (then
//! marked incomplete). With `--shard I/N` this machine offers its part of
//! a load that N machines offer from a common start (`shard`), and
//! `tlslab merge` joins the shards' runs into one.

mod options;
mod server;
mod servers;
mod shard;
mod side_by_side;
mod target;
mod versions;

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};

use super::session::{check_exports, checked_measures, interrupt_flag, seconds, usage, Bar};
use super::study::{self, Outputs, Plan, RunView, Session, Study};
use crate::backend::client::{self, MeasuringClient, Trust};
use crate::backend::probe;
use crate::backend::{Backend, BackendId, LibraryInfo};
use crate::certs::{CertCache, Credentials};
use crate::cli::values::MAX_EVENT_LOOPS;
use crate::cli::{LoadArgs, Seconds};
use crate::host::HostInfo;
use crate::report::load::LoadReport;
use crate::report::{heading, Document};
use crate::scenario::presets::{LoadPreset, LoadSettings};
use crate::scenario::{CertKind, HandshakeScenario, Measure, Named};
use crate::store::{LoadRecord, RunKind, Store, StoredRun};
use crate::workload::load::{self, Driver, Endpoint, HttpVersion, Mode, Plan as LoadPlan};
use crate::workload::site::page_bytes;
use options::{cert_scenarios, load_version, mode_and_resumption, page_size};
use server::{LoadedServer, Profiler, ServerChoice};
pub(crate) use servers::LoadCell;
use servers::{plan_servers, PlannedServer};
use shard::Sharding;
use side_by_side::servers_document;
use target::{parse_target, probe_target, split_url, Target};
use versions::{http_versions, version_plan, versions_document};

/// The most clients of the blocking driver, one thread each (about 8 MiB
/// of address space and a kernel task per thread): beyond it, event loops
/// hold the connections.
const MAX_CLIENT_THREADS: usize = 1024;

/// Runs `tlslab load` and returns the exit code.
pub fn run(args: &LoadArgs) -> Result<i32> {
    let plan = LoadStudy::plan(args)?;
    if let (Plan::Run(study), true) = (&plan, args.probe_only) {
        return study.probe_only(args);
    }
    study::run_planned(plan, LoadStudy::outputs(args))
}

/// A load as planned from its command line, and what its run finds beside
/// the record (the probe of a server the user runs).
pub(crate) struct LoadStudy {
    preset: Option<LoadPreset>,
    /// The scenario per certificate (`--cert A,B`), in the order given:
    /// each server is loaded with each in turn.
    scenarios: Vec<HandshakeScenario>,
    /// The plan of the first HTTP version; [`LoadStudy::plan_for`] gives
    /// each version's.
    plan: LoadPlan,
    /// The HTTP versions, one load each, back to back.
    versions: Vec<HttpVersion>,
    /// HTTP/2's streams per connection (`--streams`).
    streams: usize,
    driver: Driver,
    page_bytes: usize,
    /// The page asked for (`--path` or a URL's): someone else's page.
    page_path: Option<String>,
    /// The servers loaded one after another (`--server A,B`), or the
    /// server the user runs.
    servers: Vec<PlannedServer>,
    server_name: Option<String>,
    ca_file: Option<PathBuf>,
    max_rate: Option<f64>,
    probe: bool,
    profile_wanted: bool,
    cert_dir: Option<PathBuf>,
    quiet: bool,
    /// The measuring client, and what rows name as their client.
    client: Arc<dyn MeasuringClient>,
    client_library: LibraryInfo,
    /// What the probe of a server the user runs found.
    probed: Option<(String, Vec<probe::Attempt>)>,
    /// This machine's part of a load offered from several (`--shard`).
    sharding: Option<Sharding>,
}

impl Study for LoadStudy {
    type Args = LoadArgs;
    type Cell = LoadCell;
    const KIND: RunKind = RunKind::Load;

    fn plan(args: &LoadArgs) -> Result<Plan<Self>> {
        let preset = args.preset;
        let defaults = preset.map(LoadPreset::settings);
        let base = defaults.as_ref().map(|d| &d.scenario);
        let version = load_version(args.axes.tls, base)?;
        let (mode, resumption) = mode_and_resumption(
            args.mode,
            args.axes.resumption,
            version,
            defaults.is_some_and(|d| d.keep_alive),
        )?;
        let scenarios = cert_scenarios(&args.axes, base, version, resumption)?;
        let page_bytes = page_size(args.size, defaults.as_ref().map(|d| d.size))?;
        // A URL target names its page too: `https://host[:port]/path`.
        let (target_text, url_path) = match args.target.as_deref().map(split_url).transpose()? {
            Some((address, path)) => (Some(address), path),
            None => (None, None),
        };
        let page_path = args.path.clone().or(url_path);
        let versions = http_versions(args.http.as_deref());
        let streams = args.streams.unwrap_or(1);
        let mut plan = load_plan(args, defaults.as_ref(), mode, page_bytes, &page_path)?;
        for version in &versions {
            load::validate(&version_plan(&plan, *version, streams)).map_err(usage)?;
        }
        let http2 = versions.contains(&HttpVersion::Http2);
        if streams > 1 && !http2 {
            return Err(usage(format!(
                "--streams {streams} multiplexes requests on an HTTP/2 connection: add --http 2 (or 1.1,2); HTTP/1.1 carries one request at a time"
            )));
        }
        if http2 && args.event_loops == Some(0) {
            return Err(usage(
                "--event-loops 0 gives each client a blocking thread; HTTP/2's streams share a connection and run on event loops: give --event-loops N (N >= 1) or leave it out",
            ));
        }
        let driver = match args.event_loops {
            None if mode == Mode::KeepAlive => Driver::EventLoops(1),
            None | Some(0) => Driver::Threads,
            Some(loops) => Driver::EventLoops(loops),
        };
        if driver == Driver::Threads && plan.clients > MAX_CLIENT_THREADS {
            return Err(usage(format!(
                "--clients {} would start as many threads (one blocking thread per client); at most {MAX_CLIENT_THREADS}: for more connections, drive them from event loops, e.g. --event-loops {} (each loop holds many nonblocking connections)",
                plan.clients,
                crate::host::available_cores().min(MAX_EVENT_LOOPS)
            )));
        }
        // Checked before anything is started or sent.
        let max_rate = args.max_rate;
        let target = target_text
            .as_deref()
            .map(|text| parse_target(text, args.i_have_permission, max_rate))
            .transpose()?;
        if let Some(cap) = max_rate {
            if plan.rate > cap {
                return Err(usage(format!(
                    "--rate {} is above --max-rate {cap}: lower the rate or raise the cap",
                    plan.rate
                )));
            }
        }
        // The whole load is checked above; this machine offers its part.
        let sharding = Sharding::of(args.shard, args.start_at, &mut plan)?;
        if sharding.is_some() && versions.len() > 1 {
            return Err(usage(
                "a sharded load runs one HTTP version from its common start: give --http 1.1 or --http 2 (one sharded load each)",
            ));
        }
        if sharding.is_some() && scenarios.len() > 1 {
            return Err(usage(format!(
                "a sharded load drives one server with one certificate from several machines: give one --cert (one sharded load each), not {}",
                scenarios.len()
            )));
        }
        if target.is_some() && scenarios.len() > 1 {
            return Err(usage(
                "a --target server presents its own certificate: give one --cert (or none), or --server to start one per certificate",
            ));
        }
        let servers = plan_servers(args, preset, target, &scenarios, sharding.is_some())?;
        let client = client::chosen_client(args.client_backend)
            .map_err(|e| usage(format!("--client-backend: {e:#}")))?;
        Ok(Plan::Run(Self {
            preset,
            scenarios,
            plan,
            versions,
            streams,
            driver,
            page_bytes,
            page_path,
            servers,
            server_name: args.server_name.clone(),
            ca_file: args.ca_file.clone(),
            max_rate,
            probe: !args.no_probe,
            profile_wanted: args.perf || preset.is_some(),
            cert_dir: args.cert_dir.clone(),
            quiet: args.quiet,
            client_library: client.library(),
            client,
            probed: None,
            sharding,
        }))
    }

    fn outputs(args: &LoadArgs) -> Outputs<'_> {
        Outputs::of(&args.output, args.quiet)
    }

    fn options_json(&self) -> Result<String> {
        self.options_json_of(&self.scenarios[0])
    }

    fn libraries(&self) -> Vec<LibraryInfo> {
        self.first_libraries()
    }

    fn measure(&mut self, session: &mut Session) -> Result<Vec<LoadCell>> {
        self.measure_servers(session)
    }

    fn document(&self, run: &RunView<'_>, cells: &[LoadCell]) -> Result<Document> {
        let mut document = if self.side_by_side() {
            // Every server's libraries: the run's are the first server's.
            let certs: Vec<CertKind> = self.scenarios.iter().map(|s| s.cert).collect();
            servers_document(cells, &certs, &heading(run.host, &self.every_library()))
        } else {
            let records: Vec<&LoadRecord> = cells.iter().filter_map(LoadCell::record).collect();
            versions_document(&records, &heading(run.host, run.libraries))
        };
        if let Some((target, attempts)) = &self.probed {
            document
                .tables
                .insert(0, crate::report::probe::table(target, attempts));
            document.data["probe"] = crate::report::probe::data(target, attempts);
        }
        document
            .footer
            .extend(super::load_shards::footer(&self.options_json()?));
        Ok(document)
    }

    /// A load with errors exits 1, as a failed cell does, and so does a
    /// server that failed to start beside others.
    fn failed(cell: &LoadCell) -> bool {
        match cell {
            LoadCell::Loaded { record, .. } => !record.result.errors.is_empty(),
            LoadCell::Unusable { failed, .. } => *failed,
        }
    }

    fn kept(cells: &[LoadCell]) -> String {
        let finished: usize = cells
            .iter()
            .filter_map(LoadCell::record)
            .map(|r| r.result.answered + r.result.errors.iter().map(|(_, n)| n).sum::<usize>())
            .sum();
        format!("the {finished} requests that finished are kept")
    }

    fn stored_document(store: &Store, run: &StoredRun, _: Option<String>) -> Result<Document> {
        let record = store.load_load(run.id)?.ok_or_else(|| {
            super::session::NoResults(format!(
                "load run {} stored no results (it stopped before the load ended)",
                run.id
            ))
        })?;
        let mut document = document(&record, &heading(&run.host, &run.libraries));
        document
            .footer
            .extend(super::load_shards::footer(&run.options_json));
        Ok(document)
    }
}

impl LoadStudy {
    /// The options stored with the run of `scenario`'s loads (each
    /// certificate's run names its own scenario).
    fn options_json_of(&self, scenario: &HandshakeScenario) -> Result<String> {
        let mut options = serde_json::json!({
            "preset": self.preset,
            "scenario": scenario.label(),
            "target": self.target().map(|t| t.address.to_string()),
            "path": self.page_path,
            "server_name": self.server_name,
            "ca_file": self.ca_file,
            "max_rate": self.max_rate,
            "perf": self.profile_wanted,
            "page_bytes": self.page_bytes,
            "plan": &self.plan,
            "http": self.versions.iter().map(|v| v.id()).collect::<Vec<_>>(),
            "streams": self.streams,
            "driver": self.driver,
        });
        if self.servers.len() > 1 {
            options["servers"] = self.servers.iter().map(|s| s.name).collect();
        }
        if self.scenarios.len() > 1 {
            options["certs"] = self.scenarios.iter().map(|s| s.cert.id()).collect();
        }
        // A shard stores the whole load's plan, the shard and the common
        // start: what `tlslab merge` needs to join the shards into one run.
        if let Some(sharding) = &self.sharding {
            options["plan"] = serde_json::to_value(&sharding.whole)?;
            options["server"] = self.servers[0].name.into();
            options["shard"] = sharding.shard.to_string().into();
            options["start_at"] = sharding.start_at.to_string().into();
        }
        Ok(options.to_string())
    }

    /// Returns true if and only if the loads go side by side in the
    /// servers table: several servers, or several certificates.
    fn side_by_side(&self) -> bool {
        self.servers.len() > 1 || self.scenarios.len() > 1
    }

    /// The plan of one HTTP version: the base plan, with `--streams` for
    /// HTTP/2.
    fn plan_for(&self, version: HttpVersion) -> LoadPlan {
        version_plan(&self.plan, version, self.streams)
    }

    /// One HTTP version's load of `scenario` against the started server:
    /// its plan, its server CPU and perf's profile over it.
    fn load_once(
        &self,
        session: &mut Session,
        server: &mut LoadedServer,
        (endpoint, scenario): (&Endpoint, &HandshakeScenario),
        version: HttpVersion,
        name: &str,
    ) -> Result<LoadRecord> {
        let plan = self.plan_for(version);
        let profiler = Profiler::start(server, self.profile_wanted)?;
        let driver = match (version, self.driver) {
            (HttpVersion::Http2, Driver::Threads) => Driver::EventLoops(1),
            (_, driver) => driver,
        };
        if !self.quiet {
            // With several certificates, which one this load serves.
            let with_cert = match self.scenarios.len() {
                1 => String::new(),
                _ => format!(" with {}", scenario.cert.id()),
            };
            eprintln!(
                "loading {}{with_cert} over {} at {:.0} req/s for {:.0} s ({} requests due)...",
                server.description,
                crate::report::load::http_in_words(&plan),
                plan.rate,
                plan.duration.as_secs_f64(),
                load::schedule(plan.rate, plan.ramp, plan.duration, plan.max_requests).len()
            );
        }
        let cpu_before = server.worker_cpu_ns()?;
        // A server that counts its own figures (the embedded server) counts
        // this version's from here: the figures before it are dropped.
        server.take_stats()?;
        let result = match &self.sharding {
            // A shard waits for the common start (refused if it has passed).
            Some(sharding) => {
                let start = sharding.wait_for_start(self.quiet, session.interrupt())?;
                load::run_from(&plan, endpoint, driver, session.interrupt(), start)
            }
            None => load::run(&plan, endpoint, driver, session.interrupt()),
        }
        .context("running the load")?;
        let server_cpu_ns = match cpu_before {
            // After Ctrl-C the server may be gone too (a signal sent to
            // every process, as at a shutdown): its CPU is then not known,
            // and what the load measured is still kept.
            Some(before) => match server.worker_cpu_ns() {
                Ok(after) => after.map(|after| after.saturating_sub(before)),
                Err(_) if result.interrupted => None,
                Err(error) => return Err(error.context(format!("{name} ended during the load"))),
            },
            None => None,
        };
        // ... and is taken at its word (its threads' CPU over this version).
        let embedded = server.take_stats()?;
        let server_cpu_ns = match &embedded {
            Some((stats, _)) => Some(stats.cpu_ns),
            None => server_cpu_ns,
        };
        let scope = profiler.scope.clone();
        let (profile, categories) = profiler.finish(server);
        session.mark_interrupted(result.interrupted);
        Ok(LoadRecord {
            scenario_id: scenario.label(),
            scenario: scenario.describe(),
            server: server.description.clone(),
            plan,
            result,
            server_cpu_ns,
            profile,
            profile_scope: scope,
            categories,
            embedded,
            counted: None,
        })
    }

    /// The server the user runs, if that is the target.
    fn target(&self) -> Option<&Target> {
        self.servers
            .iter()
            .find_map(|planned| match &planned.choice {
                Ok(ServerChoice::Target(target)) => Some(target),
                _ => None,
            })
    }

    /// The client's TLS context for `scenario`: trusting tlslab's test
    /// root for its own servers; for a server the user runs, the system's
    /// roots and the test root, or `--ca-file`.
    fn client_context(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
    ) -> Result<Arc<dyn client::ClientContext>> {
        let context = |trust| self.client.context(scenario, credentials, trust);
        match (self.target(), &self.ca_file) {
            (None, _) => context(Trust::TestRoot),
            (Some(_), None) => context(Trust::SystemAndTestRoot),
            (Some(_), Some(file)) => {
                context(Trust::File(file)).map_err(|e| usage(format!("{e:#}")))
            }
        }
    }

    /// `--measure time,instructions`: one server handshake of `scenario`
    /// counted per category under valgrind, after the load.
    fn count_server_handshake(
        &self,
        planned: &PlannedServer,
        scenario: &HandshakeScenario,
        certs: &CertCache,
        session: &Session,
    ) -> Option<Result<crate::workload::counted::ServerHandshakeCount, String>> {
        let (backend, valgrind) = planned.counted_with.clone()?;
        let bar = Bar::counting(COUNTED_HANDSHAKES, session.quiet());
        let counted = crate::workload::counted::count_server_handshake(
            scenario,
            backend,
            certs,
            COUNTED_HANDSHAKES,
            &valgrind,
            session.interrupt(),
            &|done| bar.0.set_position(done as u64),
        );
        bar.0.finish_and_clear();
        Some(counted)
    }

    /// `--probe-only`: what a server the user runs accepts, nothing loaded
    /// or stored.
    fn probe_only(&self, args: &LoadArgs) -> Result<i32> {
        let target = self.target().expect("--probe-only goes with --target");
        check_exports(&args.output.exports)?;
        let attempts = probe_target(
            self.client.as_ref(),
            target,
            self.server_name.as_deref(),
            self.max_rate,
            self.quiet,
            &interrupt_flag(),
        )?;
        let heading = heading(
            &HostInfo::current(),
            std::slice::from_ref(&self.client_library),
        );
        let document =
            crate::report::probe::document(&heading, &target.address.to_string(), &attempts);
        args.output.display.print(&document)?;
        args.output.exports.write(&document)?;
        Ok(0)
    }
}

/// The load's plan: its rate, ramp and duration (options, else the
/// preset's, else defaults), the page, how connections are used, clients.
fn load_plan(
    args: &LoadArgs,
    defaults: Option<&LoadSettings>,
    mode: Mode,
    size: usize,
    page_path: &Option<String>,
) -> Result<LoadPlan> {
    let setting = |value: Option<f64>, from: fn(&LoadSettings) -> f64, default: f64| {
        value.or(defaults.map(from)).unwrap_or(default)
    };
    let secs = |value: Option<Seconds>| value.map(Seconds::as_secs_f64);
    let plan = LoadPlan {
        rate: setting(args.rate, |d| d.rate, 100.0),
        ramp: seconds("ramp", setting(secs(args.ramp), |d| d.ramp_s, 0.0), true)?,
        duration: seconds(
            "duration",
            setting(secs(args.duration), |d| d.duration_s, 10.0),
            false,
        )?,
        path: match page_path {
            Some(path) if !path.starts_with('/') || path.contains(char::is_whitespace) => {
                return Err(usage(format!(
                    "--path '{path}' is not a path (it starts with / and holds no spaces)"
                )))
            }
            Some(path) => path.clone(),
            None => format!("/page_{size}"),
        },
        // Someone else's page is counted, not compared.
        body: if page_path.is_some() {
            Vec::new()
        } else {
            page_bytes(size)
        },
        mode,
        clients: args.clients.unwrap_or(64),
        max_requests: args.max_requests.unwrap_or(1_000_000),
        http: HttpVersion::Http1_1,
        streams: 1,
    };
    load::validate(&plan).map_err(usage)?;
    Ok(plan)
}

pub(super) fn document(record: &LoadRecord, heading: &str) -> Document {
    LoadReport {
        heading: heading.to_string(),
        scenario: record.scenario.clone(),
        server: record.server.clone(),
        plan: &record.plan,
        result: &record.result,
        server_cpu_ns: record.server_cpu_ns,
        profile: record.profile.clone(),
        profile_scope: record.profile_scope.clone(),
        categories: record.categories.clone(),
        counted: record.counted.clone(),
        embedded: record
            .embedded
            .as_ref()
            .map(|(stats, backend)| (stats, *backend)),
    }
    .document()
}

/// Server handshakes counted by `--measure time,instructions`: the
/// counts repeat, so a few suffice.
const COUNTED_HANDSHAKES: usize = 3;

/// What `--measure` asks of a load: time always; with instructions, the
/// backend whose server handshake is counted (`library`: the embedded
/// server's backend, or the library a program runs on, from its
/// descriptor) and the valgrind that counts it (`None` without
/// instructions). Memory, instructions alone, a `--target` server and a
/// program on a library tlslab does not run are usage errors.
pub(super) fn counted_backend(
    args: &LoadArgs,
    target: Option<&str>,
    library: Option<BackendId>,
) -> Result<Option<(Arc<dyn Backend>, String)>> {
    let (measures, valgrind) = checked_measures(args.measure.as_deref(), false)?;
    if measures.contains(&Measure::Memory) {
        return Err(usage(
            "load measures time and, beside it, instructions; memory is counted per handshake (tlslab handshake --measure memory), and the server's per idle connection by cargo bench --bench serve_idle",
        ));
    }
    if !measures.contains(&Measure::Time) {
        return Err(usage(
            "load measures time; the counted handshake comes beside it: --measure time,instructions",
        ));
    }
    let Some(valgrind) = valgrind else {
        return Ok(None);
    };
    let Some(id) = library else {
        let server = target.unwrap_or("a --target server");
        return Err(usage(format!(
            "--measure instructions counts the server's library in process; {server}'s library is not one tlslab runs (run it as --server embedded or nginx)"
        )));
    };
    Ok(Some((id.open(), valgrind)))
}
