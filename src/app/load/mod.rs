//! `tlslab load`: an HTTPS server under a planned request rate. By default
//! the server is Debian's nginx, started on loopback for the run (serving a
//! generated page of the asked size) and stopped after it whatever happens;
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
mod shard;
mod target;
mod versions;

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};

use super::serve::{check_supported, event_loop_threads, server_backend, MAX_EVENT_LOOPS};
use super::session::{
    check_exports, checked_measures, interrupt_flag, run_info, seconds, usage, Bar,
};
use super::study::{self, Outputs, Plan, RunView, Session, Study};
use crate::backend::openssl::{client_context, client_context_trusting, probe, Trust};
use crate::backend::{Backend, BackendId, LibraryInfo};
use crate::certs::{CertCache, Credentials, SERVER_NAME};
use crate::cli::{LoadArgs, Seconds};
use crate::host::HostInfo;
use crate::report::load::LoadReport;
use crate::report::{heading, Document};
use crate::scenario::presets::{LoadPreset, LoadSettings};
use crate::scenario::{HandshakeScenario, Measure, Named, ServerKind};
use crate::store::{LoadRecord, RunKind, Store, StoredRun};
use crate::workload::load::{self, Driver, Endpoint, HttpVersion, Mode, Plan as LoadPlan};
use crate::workload::server::{descriptor, ServerOptions, SERVERS};
use crate::workload::site::page_bytes;
use options::{load_version, mode_and_resumption, one_scenario, page_size};
use server::{LoadedServer, Profiler, ServerChoice};
use shard::Sharding;
use target::{parse_max_rate, parse_target, probe_target, split_url, Target};
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
    scenario: HandshakeScenario,
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
    server: ServerChoice,
    server_name: Option<String>,
    ca_file: Option<PathBuf>,
    max_rate: Option<f64>,
    probe: bool,
    profile_wanted: bool,
    counted_with: Option<(Arc<dyn Backend>, String)>,
    cert_dir: Option<PathBuf>,
    quiet: bool,
    client_library: LibraryInfo,
    /// What the probe of a server the user runs found.
    probed: Option<(String, Vec<probe::Attempt>)>,
    /// This machine's part of a load offered from several (`--shard`).
    sharding: Option<Sharding>,
}

impl Study for LoadStudy {
    type Args = LoadArgs;
    type Cell = LoadRecord;
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
        let scenario = one_scenario(&args.axes, base, version, resumption)?;
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
            Some(loops) => Driver::EventLoops(event_loop_threads("event-loops", Some(loops))?),
        };
        if driver == Driver::Threads && plan.clients > MAX_CLIENT_THREADS {
            return Err(usage(format!(
                "--clients {} would start as many threads (one blocking thread per client); at most {MAX_CLIENT_THREADS}: for more connections, drive them from event loops, e.g. --event-loops {} (each loop holds many nonblocking connections)",
                plan.clients,
                crate::host::available_cores().min(MAX_EVENT_LOOPS)
            )));
        }
        // Checked before anything is started or sent.
        let max_rate = parse_max_rate(args.max_rate)?;
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
        if target.is_none() && (args.probe_only || args.no_probe) {
            return Err(usage("--probe-only and --no-probe go with --target"));
        }
        if args.probe_only && args.no_probe {
            return Err(usage("--probe-only and --no-probe exclude each other"));
        }
        if target.is_some() && args.perf {
            return Err(usage(
                "--perf profiles nginx or the embedded server; it cannot profile a --target server",
            ));
        }
        let targeted = target.is_some();
        let server = choose_server(args, preset.is_some(), target, &scenario)?;
        // The counted handshake's backend: the embedded server's, or for
        // nginx tlslab's own OpenSSL.
        let counted_with = counted_backend(args, targeted, server.backend())?;
        Ok(Plan::Run(Self {
            preset,
            scenario,
            plan,
            versions,
            streams,
            driver,
            page_bytes,
            page_path,
            server,
            server_name: args.server_name.clone(),
            ca_file: args.ca_file.clone(),
            max_rate,
            probe: !args.no_probe,
            profile_wanted: args.perf || preset.is_some(),
            counted_with,
            cert_dir: args.cert_dir.clone(),
            quiet: args.quiet,
            client_library: LibraryInfo {
                backend: "openssl".to_string(),
                library: "OpenSSL (client)".to_string(),
                version: openssl::version::version()
                    .trim_start_matches("OpenSSL ")
                    .to_string(),
            },
            probed: None,
            sharding,
        }))
    }

    fn outputs(args: &LoadArgs) -> Outputs<'_> {
        Outputs::of(&args.output, args.quiet)
    }

    fn options_json(&self) -> Result<String> {
        let mut options = serde_json::json!({
            "preset": self.preset,
            "scenario": self.scenario.label(),
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
        // A shard stores the whole load's plan, the shard and the common
        // start: what `tlslab merge` needs to join the shards into one run.
        if let Some(sharding) = &self.sharding {
            options["plan"] = serde_json::to_value(&sharding.whole)?;
            options["server"] = self.server.name().into();
            options["shard"] = sharding.shard.to_string().into();
            options["start_at"] = sharding.start_at.to_string().into();
        }
        Ok(options.to_string())
    }

    fn libraries(&self) -> Vec<LibraryInfo> {
        self.server.libraries(&self.client_library)
    }

    fn measure(&mut self, session: &mut Session) -> Result<Vec<LoadRecord>> {
        let certs = CertCache::new(self.cert_dir.clone().unwrap_or_else(CertCache::default_dir));
        let credentials = certs.get(self.scenario.cert, self.scenario.chain_depth)?;
        let context = self.client_context(&credentials)?;
        // Stopped when it drops, whatever happens.
        let mut server = LoadedServer::start(
            &self.server,
            &self.scenario,
            &credentials,
            self.page_bytes,
            self.plan.mode == Mode::Resume,
        )?;
        // Someone else's server: what it accepts, before it is loaded.
        if let (Some(target), true) = (self.target(), self.probe) {
            let attempts = probe_target(
                target,
                self.server_name.as_deref(),
                self.max_rate,
                self.quiet,
                session.interrupt(),
            )?;
            self.probed = Some((target.address.to_string(), attempts));
        }
        let endpoint = Endpoint {
            context,
            address: server.address,
            server_name: self.target().map_or_else(
                || SERVER_NAME.to_string(),
                |t| t.server_name(self.server_name.as_deref()),
            ),
            check_body: self.page_path.is_none(),
        };
        // A server that cannot carry HTTP/2 is refused before anything is
        // loaded: nothing measured is lost.
        if self.versions.contains(&HttpVersion::Http2) {
            let chosen = load::chosen_alpn(&endpoint)
                .with_context(|| format!("asking {} for h2", server.description))?;
            if chosen.as_deref() != Some("h2") {
                return Err(usage(format!(
                    "--http 2: {}: {}",
                    server.description,
                    load::not_h2(chosen.as_deref().map(str::as_bytes))
                )));
            }
        }
        let mut records = Vec::new();
        for version in self.versions.clone() {
            if session.interrupted() {
                break;
            }
            records.push(self.load_once(session, &mut server, &endpoint, version)?);
        }
        server.stop()?;
        drop(server);
        let counted = self.count_server_handshake(&certs, session);
        for record in &mut records {
            record.counted = counted.clone();
        }
        // Each version is a run of its own in the store: the first is
        // this run, the others runs begun beside it.
        let complete = !session.interrupted();
        for (index, record) in records.iter().enumerate() {
            if index == 0 {
                session.save(|store, run_id| store.save_load(run_id, record));
            } else {
                let info = run_info(
                    RunKind::Load,
                    self.options_json()?,
                    &HostInfo::current(),
                    &self.libraries(),
                );
                session.save(|store, _| {
                    let run_id = store.begin_run(&info)?;
                    store.save_load(run_id, record)?;
                    store.finish_run(run_id, complete)
                });
            }
        }
        Ok(records)
    }

    fn document(&self, run: &RunView<'_>, cells: &[LoadRecord]) -> Result<Document> {
        let mut document = versions_document(cells, &heading(run.host, run.libraries));
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

    /// A load with errors exits 1, as a failed cell does.
    fn failed(record: &LoadRecord) -> bool {
        !record.result.errors.is_empty()
    }

    fn kept(cells: &[LoadRecord]) -> String {
        let finished: usize = cells
            .iter()
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
    /// The plan of one HTTP version: the base plan, with `--streams` for
    /// HTTP/2.
    fn plan_for(&self, version: HttpVersion) -> LoadPlan {
        version_plan(&self.plan, version, self.streams)
    }

    /// One HTTP version's load against the started server: its plan, its
    /// server CPU and perf's profile over it.
    fn load_once(
        &self,
        session: &mut Session,
        server: &mut LoadedServer,
        endpoint: &Endpoint,
        version: HttpVersion,
    ) -> Result<LoadRecord> {
        let plan = self.plan_for(version);
        let profiler = Profiler::start(server, self.profile_wanted)?;
        let driver = match (version, self.driver) {
            (HttpVersion::Http2, Driver::Threads) => Driver::EventLoops(1),
            (_, driver) => driver,
        };
        if !self.quiet {
            eprintln!(
                "loading {} over {} at {:.0} req/s for {:.0} s ({} requests due)...",
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
                Err(error) => {
                    return Err(
                        error.context(format!("{} ended during the load", self.server.name()))
                    )
                }
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
            scenario_id: self.scenario.label(),
            scenario: self.scenario.describe(),
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
        match &self.server {
            ServerChoice::Target(target) => Some(target),
            ServerChoice::Started(_) => None,
        }
    }

    /// The client's TLS context: trusting tlslab's test root for its own
    /// servers; for a server the user runs, the system's roots and the test
    /// root, or `--ca-file`.
    fn client_context(&self, credentials: &Credentials) -> Result<openssl::ssl::SslContext> {
        match (self.target(), &self.ca_file) {
            (None, _) => client_context(&self.scenario, credentials),
            (Some(_), None) => {
                client_context_trusting(&self.scenario, credentials, Trust::SystemAndTestRoot)
            }
            (Some(_), Some(file)) => {
                client_context_trusting(&self.scenario, credentials, Trust::File(file))
                    .map_err(|e| usage(format!("{e:#}")))
            }
        }
    }

    /// `--measure time,instructions`: one server handshake of the scenario
    /// counted per category under valgrind, after the load.
    fn count_server_handshake(
        &self,
        certs: &CertCache,
        session: &Session,
    ) -> Option<Result<crate::workload::counted::ServerHandshakeCount, String>> {
        let (backend, valgrind) = self.counted_with.clone()?;
        let bar = Bar::counting(COUNTED_HANDSHAKES, session.quiet());
        let counted = crate::workload::counted::count_server_handshake(
            &self.scenario,
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

/// The server to load: a server the user runs (`--target`), else a
/// server under test started for the run: `--server`, else tlslab's
/// embedded server for a preset, nginx otherwise.
fn choose_server(
    args: &LoadArgs,
    preset: bool,
    target: Option<Target>,
    scenario: &HandshakeScenario,
) -> Result<ServerChoice> {
    // A preset's study runs on the embedded OpenSSL server (its symbols are
    // there for perf); anything else on nginx, unless told otherwise.
    let kind = args.server.unwrap_or(if preset && target.is_none() {
        ServerKind::Embedded
    } else {
        ServerKind::Nginx
    });
    if target.is_some() && args.server.is_some() {
        return Err(usage(
            "--target aims at a server you run; --server starts one: give one of them",
        ));
    }
    let descriptor = descriptor(kind);
    if !descriptor.in_process && (args.backend.is_some() || args.threads.is_some()) {
        let own: Vec<String> = SERVERS
            .iter()
            .filter(|d| d.in_process)
            .map(|d| format!("--server {}", d.kind.name()))
            .collect();
        return Err(usage(format!(
            "--backend and --threads configure the embedded server: add {}",
            own.join(" or ")
        )));
    }
    // Each worker is an event loop holding many connections: one per core.
    let workers = event_loop_threads("threads", args.threads)?;
    if let Some(target) = target {
        return Ok(ServerChoice::Target(target));
    }
    let mut options = ServerOptions {
        backend: None,
        threads: workers,
    };
    if descriptor.in_process {
        // A server on tlslab's backends is checked as `serve` checks it.
        let default_backend = if preset {
            BackendId::Openssl
        } else {
            BackendId::RustlsAwsLc
        };
        let id = server_backend(args.backend.unwrap_or(default_backend))?;
        check_supported(id, scenario)?;
        options.backend = Some(id);
    }
    let server = (descriptor.open)(&options)?;
    if let Some(reason) = server.unsupported_reason(scenario) {
        return Err(usage(reason));
    }
    Ok(ServerChoice::Started(server))
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
            .map(|(stats, backend)| (stats, backend.as_str())),
    }
    .document()
}

/// Server handshakes counted by `--measure time,instructions`: the
/// counts repeat, so a few suffice.
const COUNTED_HANDSHAKES: usize = 3;

/// What `--measure` asks of a load: time always; with instructions, the
/// backend whose server handshake is counted and the valgrind that counts
/// it (`None` without instructions). Memory, instructions alone and a
/// `--target` server are usage errors.
fn counted_backend(
    args: &LoadArgs,
    target: bool,
    embedded: Option<BackendId>,
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
    if target {
        return Err(usage(
            "--measure instructions counts the server's library in process; a --target server's library is not known (run it as --server embedded or nginx)",
        ));
    }
    let id = embedded.unwrap_or(BackendId::Openssl);
    Ok(Some((id.open(), valgrind)))
}
