//! `load --server A,B,... --cert C,D`: the servers one load runs against,
//! one after another, each once per certificate. Each server is planned
//! (opened, each certificate's scenario checked), then per certificate
//! started, loaded in every HTTP version and stopped before the next, and
//! each of its loads is stored as a run of its own, as soon as that server
//! is done with that certificate (so Ctrl-C keeps every finished run). With
//! several servers, one that cannot run here, or fails to start, is a row
//! that says why while the others run; with several servers or
//! certificates, so is a certificate a server cannot use, or an HTTP
//! version it cannot do; alone, it stops the command as it always did. The
//! document puts every load side by side in one table, then each load's
//! own tables.

use std::sync::Arc;

use anyhow::{Context, Result};

use super::server::{LoadedServer, ServerChoice};
use super::target::{probe_target, Target};
use super::{counted_backend, LoadStudy};
use crate::app::serve::{check_supported, event_loop_threads, server_backend};
use crate::app::session::{run_info, usage};
use crate::app::study::Session;
use crate::backend::client::ClientContext;
use crate::backend::{Backend, BackendId, LibraryInfo};
use crate::certs::{CertCache, Credentials, SERVER_NAME};
use crate::cli::LoadArgs;
use crate::host::HostInfo;
use crate::scenario::presets::LoadPreset;
use crate::scenario::{distinct, CertKind, HandshakeScenario, Named, ServerKind};
use crate::store::{LoadRecord, RunKind};
use crate::workload::load::{self, Endpoint, HttpVersion, Mode};
use crate::workload::server::{descriptor, ServerOptions, SERVERS};

/// A server of the load as planned.
pub(super) struct PlannedServer {
    /// Its name ("nginx"; "the target" for a server the user runs).
    pub name: &'static str,
    /// The server, or why it cannot be loaded here.
    pub choice: Result<ServerChoice, String>,
    /// Per scenario of the load (per certificate), in order: why the
    /// server cannot use it, or `None` when it can.
    pub unusable_with: Vec<Option<String>>,
    /// `--measure time,instructions`: the backend whose server handshake
    /// is counted after its load, and the valgrind that counts it.
    pub counted_with: Option<(Arc<dyn Backend>, String)>,
}

/// What a load yields per server: a load that ran, or a server (in every
/// HTTP version, or in one) that could not be loaded, with why.
pub(crate) enum LoadCell {
    Loaded {
        /// The server's name ("nginx").
        server: &'static str,
        /// The certificate it served.
        cert: CertKind,
        /// Boxed: a record (histograms, profiles) is large beside a reason.
        record: Box<LoadRecord>,
    },
    Unusable {
        server: &'static str,
        /// The certificate it cannot use or failed with; `None`: it could
        /// not run with any.
        cert: Option<CertKind>,
        /// The HTTP version it cannot do; `None`: it could not run at all.
        http: Option<HttpVersion>,
        reason: String,
        /// True if and only if it failed (it was to run and did not: the
        /// run exits 1); false when it cannot do what was asked (exit 0,
        /// as for a row a backend cannot do).
        failed: bool,
    },
}

impl LoadCell {
    /// The load's record, if it ran.
    pub(super) fn record(&self) -> Option<&LoadRecord> {
        match self {
            LoadCell::Loaded { record, .. } => Some(record),
            LoadCell::Unusable { .. } => None,
        }
    }
}

/// The servers `--server` lists, each once in the order given; without
/// it, tlslab's embedded server for a preset and nginx otherwise.
fn listed_servers(args: &LoadArgs, preset: bool) -> Vec<ServerKind> {
    match args.server.as_deref() {
        Some(listed) if !listed.is_empty() => distinct(listed),
        _ if preset => vec![ServerKind::Embedded],
        _ => vec![ServerKind::Nginx],
    }
}

/// The servers to load: a server the user runs (`--target`), else every
/// server listed. Options that concern every server are checked first
/// (usage errors); with one server, anything that stops it is an error as
/// before, with several it is that server's row.
pub(super) fn plan_servers(
    args: &LoadArgs,
    preset: Option<LoadPreset>,
    target: Option<Target>,
    scenarios: &[HandshakeScenario],
    sharded: bool,
) -> Result<Vec<PlannedServer>> {
    let kinds = listed_servers(args, preset.is_some());
    let in_process = |kind: &ServerKind| descriptor(*kind).in_process;
    if !kinds.iter().any(in_process) && (args.backend.is_some() || args.threads.is_some()) {
        let own: Vec<String> = SERVERS
            .iter()
            .filter(|d| d.in_process)
            .map(|d| format!("--server {}", d.id.name()))
            .collect();
        return Err(usage(format!(
            "--backend and --threads configure the embedded server: add {}",
            own.join(" or ")
        )));
    }
    // Each worker is an event loop holding many connections: one per core.
    let threads = event_loop_threads(args.threads);
    if let Some(target) = target {
        let choice = ServerChoice::Target(target);
        return Ok(vec![PlannedServer {
            name: choice.name(),
            counted_with: counted_backend(args, None, None)?,
            choice: Ok(choice),
            unusable_with: vec![None; scenarios.len()],
        }]);
    }
    if sharded && kinds.len() > 1 {
        return Err(usage(format!(
            "a sharded load drives one server from several machines: give one --server (one sharded load each), not {}",
            kinds.len()
        )));
    }
    let several_servers = kinds.len() > 1;
    let several = several_servers || scenarios.len() > 1;
    let mut planned = Vec::new();
    for kind in kinds {
        let (choice, backend) = match open_choice(args, kind, preset, threads) {
            Ok(opened) => opened,
            Err(error) if several_servers => {
                planned.push(PlannedServer {
                    name: kind.name(),
                    choice: Err(format!("{error:#}")),
                    unusable_with: vec![None; scenarios.len()],
                    counted_with: None,
                });
                continue;
            }
            Err(error) => return Err(error),
        };
        let mut unusable_with = Vec::new();
        for scenario in scenarios {
            unusable_with.push(match check_usable(&choice, backend, scenario) {
                Ok(()) => None,
                Err(error) if several => Some(format!("{error:#}")),
                Err(error) => return Err(error),
            });
        }
        // The counted handshake's backend: the embedded server's, or the
        // library the program runs on.
        let library = choice.backend().or(descriptor(kind).counted_on);
        planned.push(PlannedServer {
            name: kind.name(),
            counted_with: counted_backend(args, Some(kind.name()), library)?,
            choice: Ok(choice),
            unusable_with,
        });
    }
    Ok(planned)
}

/// The server `kind` opened for the load: an in-process server on its
/// backend (`--backend`, else rustls-aws-lc, or the preset's),
/// returned beside it, or a program.
fn open_choice(
    args: &LoadArgs,
    kind: ServerKind,
    preset: Option<LoadPreset>,
    threads: usize,
) -> Result<(ServerChoice, Option<BackendId>)> {
    let descriptor = descriptor(kind);
    let mut options = ServerOptions {
        backend: None,
        threads,
    };
    if descriptor.in_process {
        let default_backend = preset.map_or(BackendId::RustlsAwsLc, LoadPreset::server_backend);
        options.backend = Some(server_backend(args.backend.unwrap_or(default_backend))?);
    }
    let server = (descriptor.open)(&options)?;
    Ok((ServerChoice::Started(server), options.backend))
}

/// Whether the opened server can serve `scenario`: an in-process server's
/// `backend` as `serve` checks it, a program as it says.
fn check_usable(
    choice: &ServerChoice,
    backend: Option<BackendId>,
    scenario: &HandshakeScenario,
) -> Result<()> {
    if let Some(id) = backend {
        check_supported(id, scenario)?;
    }
    if let ServerChoice::Started(server) = choice {
        if let Some(reason) = server.unsupported_reason(scenario) {
            return Err(usage(reason));
        }
    }
    Ok(())
}

impl LoadStudy {
    /// Loads every planned server in turn, each with every certificate in
    /// turn; a server that cannot run, or cannot use a certificate, is a
    /// row. Stops before the next load when Ctrl-C came.
    pub(super) fn measure_servers(&mut self, session: &mut Session) -> Result<Vec<LoadCell>> {
        let certs = CertCache::new(self.cert_dir.clone().unwrap_or_else(CertCache::default_dir));
        // Someone else's server: what it accepts, before it is loaded.
        if let (Some(target), true) = (self.target(), self.probe) {
            let attempts = probe_target(
                self.client.as_ref(),
                target,
                self.server_name.as_deref(),
                self.max_rate,
                self.quiet,
                session.interrupt(),
            )?;
            self.probed = Some((target.address.to_string(), attempts));
        }
        let several = self.side_by_side();
        let mut cells = Vec::new();
        // The first load is stored in the run begun for the command.
        let mut first_stored = false;
        for planned in &self.servers {
            if session.interrupted() {
                break;
            }
            let choice = match &planned.choice {
                Ok(choice) => choice,
                Err(reason) => {
                    cells.push(LoadCell::Unusable {
                        server: planned.name,
                        cert: None,
                        http: None,
                        reason: reason.clone(),
                        failed: false,
                    });
                    continue;
                }
            };
            for (scenario, unusable) in self.scenarios.iter().zip(&planned.unusable_with) {
                if session.interrupted() {
                    break;
                }
                if let Some(reason) = unusable {
                    cells.push(LoadCell::Unusable {
                        server: planned.name,
                        cert: Some(scenario.cert),
                        http: None,
                        reason: reason.clone(),
                        failed: false,
                    });
                    continue;
                }
                let loaded = self.measure_with_cert(
                    session,
                    (planned, choice),
                    scenario,
                    &certs,
                    &mut first_stored,
                );
                match loaded {
                    Ok(server_cells) => cells.extend(server_cells),
                    Err(error) if several => cells.push(LoadCell::Unusable {
                        server: planned.name,
                        cert: Some(scenario.cert),
                        http: None,
                        reason: format!("{error:#}"),
                        failed: true,
                    }),
                    Err(error) => return Err(error),
                }
            }
        }
        Ok(cells)
    }

    /// One server with `scenario`'s certificate: its chain and the client's
    /// context for it, then the server's loads.
    fn measure_with_cert(
        &self,
        session: &mut Session,
        (planned, choice): (&PlannedServer, &ServerChoice),
        scenario: &HandshakeScenario,
        certs: &CertCache,
        first_stored: &mut bool,
    ) -> Result<Vec<LoadCell>> {
        let credentials = certs.get(scenario.cert, scenario.chain_depth)?;
        let context = self.client_context(scenario, &credentials)?;
        self.measure_server(
            session,
            planned,
            choice,
            (scenario, certs, &credentials, &context),
            first_stored,
        )
    }

    /// One server with one certificate: started, loaded in every HTTP
    /// version it can do, stopped (whatever happens: it stops when it
    /// drops), its counted handshake taken, and each load stored as a run.
    fn measure_server(
        &self,
        session: &mut Session,
        planned: &PlannedServer,
        choice: &ServerChoice,
        (scenario, certs, credentials, context): (
            &HandshakeScenario,
            &CertCache,
            &Credentials,
            &Arc<dyn ClientContext>,
        ),
        first_stored: &mut bool,
    ) -> Result<Vec<LoadCell>> {
        let several = self.side_by_side();
        let mut server = LoadedServer::start(
            choice,
            scenario,
            credentials,
            self.page_bytes,
            self.plan.mode == Mode::Resume,
        )?;
        let endpoint = Endpoint {
            context: context.clone(),
            address: server.address,
            server_name: self.target().map_or_else(
                || SERVER_NAME.to_string(),
                |t| t.server_name(self.server_name.as_deref()),
            ),
            check_body: self.page_path.is_none(),
        };
        // A server that cannot carry HTTP/2 is refused before anything is
        // loaded (alone: nothing measured is lost; beside others: its
        // HTTP/2 row says why).
        let mut versions = self.versions.clone();
        let mut refused = None;
        if versions.contains(&HttpVersion::Http2) {
            let chosen = load::chosen_alpn(&endpoint)
                .with_context(|| format!("asking {} for h2", server.description))?;
            if chosen.as_deref() != Some("h2") {
                let reason = format!(
                    "--http 2: {}: {}",
                    server.description,
                    load::not_h2(chosen.as_deref().map(str::as_bytes))
                );
                if !several {
                    return Err(usage(reason));
                }
                versions.retain(|v| *v != HttpVersion::Http2);
                refused = Some(reason);
            }
        }
        let mut records = Vec::new();
        for version in versions {
            if session.interrupted() {
                break;
            }
            records.push(self.load_once(
                session,
                &mut server,
                (&endpoint, scenario),
                version,
                planned.name,
            )?);
        }
        // A server that counts its own figures (the embedded server) gave
        // each version's in `load_once`.
        server.stop()?;
        drop(server);
        let counted = self.count_server_handshake(planned, scenario, certs, session);
        for record in &mut records {
            record.counted = counted.clone();
        }
        self.store_loads(session, choice, scenario, &records, first_stored)?;
        let mut cells: Vec<LoadCell> = records
            .into_iter()
            .map(|record| LoadCell::Loaded {
                server: planned.name,
                cert: scenario.cert,
                record: Box::new(record),
            })
            .collect();
        if let Some(reason) = refused {
            cells.push(LoadCell::Unusable {
                server: planned.name,
                cert: Some(scenario.cert),
                http: Some(HttpVersion::Http2),
                reason,
                failed: false,
            });
        }
        Ok(cells)
    }

    /// Stores each load as a run of its own: the first of the command in
    /// the run begun for it, every other in a run begun beside it with its
    /// server's libraries and its own scenario.
    fn store_loads(
        &self,
        session: &mut Session,
        choice: &ServerChoice,
        scenario: &HandshakeScenario,
        records: &[LoadRecord],
        first_stored: &mut bool,
    ) -> Result<()> {
        for record in records {
            // A load that ended before Ctrl-C is complete, whatever came after.
            let complete = !record.result.interrupted;
            if !*first_stored {
                session.save(|store, run_id| store.save_load(run_id, record));
                if complete {
                    session.mark_run_finished();
                }
                *first_stored = true;
                continue;
            }
            let info = run_info(
                RunKind::Load,
                self.options_json_of(scenario)?,
                &HostInfo::current(),
                &choice.libraries(&self.client_library),
            );
            session.save(|store, _| {
                let run_id = store.begin_run(&info)?;
                store.save_load(run_id, record)?;
                store.finish_run(run_id, complete)
            });
        }
        Ok(())
    }

    /// The libraries of every server that can run, each once.
    pub(super) fn every_library(&self) -> Vec<LibraryInfo> {
        let mut libraries: Vec<LibraryInfo> = Vec::new();
        for planned in &self.servers {
            for library in planned
                .choice
                .as_ref()
                .map_or_else(|_| Vec::new(), |c| c.libraries(&self.client_library))
            {
                if !libraries.contains(&library) {
                    libraries.push(library);
                }
            }
        }
        libraries
    }

    /// The libraries of the run begun for the command: those of the first
    /// server that can run (the client's for a server the user runs).
    pub(super) fn first_libraries(&self) -> Vec<LibraryInfo> {
        self.servers
            .iter()
            .find_map(|planned| planned.choice.as_ref().ok())
            .map_or_else(
                || vec![self.client_library.clone()],
                |choice| choice.libraries(&self.client_library),
            )
    }
}
