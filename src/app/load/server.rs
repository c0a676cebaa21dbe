//! The server a load runs against, and the profiler beside it: a server
//! under test (nginx, tlslab's embedded server, any of
//! [`crate::workload::server`]'s) started on loopback for the run and
//! stopped when the value drops whatever happens, or a server the user
//! runs (`--target`); perf recording the server's workers while it is
//! loaded.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};

use super::target::Target;
use crate::backend::{BackendId, LibraryInfo};
use crate::certs::Credentials;
use crate::scenario::{HandshakeScenario, Named, Subject};
use crate::workload::perf;
use crate::workload::serve::ServerStats;
use crate::workload::server::{RunningServer, ServerSetup, ServerUnderTest, Workers};
use crate::workload::site::Site;

/// Which server a load aims at, as planned.
pub(super) enum ServerChoice {
    /// A server the user runs.
    Target(Target),
    /// A server under test, started for the run.
    Started(Arc<dyn ServerUnderTest>),
}

impl ServerChoice {
    /// The libraries the run measures: the server's, or for a server the
    /// user runs, the client's (the server's are not known).
    pub(super) fn libraries(&self, client: &LibraryInfo) -> Vec<LibraryInfo> {
        match self {
            ServerChoice::Target(_) => vec![client.clone()],
            ServerChoice::Started(server) => vec![server.library()],
        }
    }

    /// The tlslab backend the started server runs on, if it runs on one.
    pub(super) fn backend(&self) -> Option<BackendId> {
        match self {
            ServerChoice::Started(server) => server.backend(),
            ServerChoice::Target(_) => None,
        }
    }

    /// The server's name ("nginx", "embedded"; "the target").
    pub(super) fn name(&self) -> &'static str {
        match self {
            ServerChoice::Started(server) => server.kind().name(),
            ServerChoice::Target(_) => "the target",
        }
    }

    /// Whether perf's symbols can be put in categories for this server,
    /// or why not.
    fn symbol_categories(&self) -> Result<(), String> {
        match self {
            ServerChoice::Started(server) => server.symbol_categories(),
            ServerChoice::Target(_) => Err("a --target server is not profiled".to_string()),
        }
    }
}

/// The server started for a load (none for a server the user runs): where
/// it listens and what it is, in words.
pub(super) struct LoadedServer {
    running: Option<Box<dyn RunningServer>>,
    /// The backend a counting server ran on, for its figures (`None` for
    /// a server the user runs).
    backend: Option<Subject>,
    /// Whether its symbols can be put in categories, or why not.
    symbol_categories: Result<(), String>,
    pub address: SocketAddr,
    pub description: String,
}

impl LoadedServer {
    /// Starts the chosen server for `scenario`, serving pages of
    /// `page_bytes`, resuming sessions when `resume` says.
    pub(super) fn start(
        choice: &ServerChoice,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
        page_bytes: usize,
        resume: bool,
    ) -> Result<Self> {
        let symbol_categories = choice.symbol_categories();
        Ok(match choice {
            ServerChoice::Target(target) => Self {
                running: None,
                backend: None,
                symbol_categories,
                address: target.address,
                description: format!("{} (your server)", target.address),
            },
            ServerChoice::Started(server) => {
                let running = server.start(&ServerSetup {
                    scenario,
                    credentials,
                    site: &Site {
                        page_sizes: vec![page_bytes],
                        session_resumption: resume,
                    },
                })?;
                Self {
                    address: running.address(),
                    description: running.description(),
                    running: Some(running),
                    backend: Some(server.library().subject),
                    symbol_categories,
                }
            }
        })
    }

    /// The started server's workers' CPU time so far, nanoseconds (`None`
    /// for a server the user runs).
    pub(super) fn worker_cpu_ns(&self) -> Result<Option<u64>> {
        self.running
            .as_ref()
            .map(|running| running.worker_cpu_ns())
            .transpose()
    }

    /// The started server's own figures since it started or since the last
    /// call, with its backend id, for a server that counts them (the
    /// embedded server); `None` else.
    pub(super) fn take_stats(&mut self) -> Result<Option<(ServerStats, Subject)>> {
        let (Some(running), Some(backend)) = (self.running.as_mut(), self.backend) else {
            return Ok(None);
        };
        Ok(running.take_stats()?.map(|stats| (stats, backend)))
    }

    /// Stops the started server and returns its figures and backend id,
    /// for a server that counts them (the embedded server); `None` else.
    pub(super) fn stop(&mut self) -> Result<Option<(ServerStats, Subject)>> {
        let (Some(running), Some(backend)) = (self.running.take(), self.backend) else {
            return Ok(None);
        };
        Ok(running.stop()?.map(|stats| (stats, backend)))
    }
}

/// perf recording the server while it is loaded, when asked for.
pub(super) struct Profiler {
    recording: Option<perf::Recording>,
    /// Why there is no profile, when there is none.
    why_not: String,
    /// What perf samples.
    pub scope: String,
    /// perf's scratch directory, made only when profiling and kept until
    /// the profile is read.
    _directory: Option<tempfile::TempDir>,
}

/// What perf saw: its shares per shared object and per symbol category,
/// or why there are none.
pub(super) type Shares = Result<Vec<(String, f64)>, String>;

impl Profiler {
    /// Starts perf on the server's worker processes or threads when
    /// `wanted`; a server the user runs is not profiled.
    pub(super) fn start(server: &LoadedServer, wanted: bool) -> Result<Self> {
        let mut profiler = Self {
            recording: None,
            why_not: "not asked for (--perf)".to_string(),
            scope: "the server's worker process".to_string(),
            _directory: None,
        };
        if !wanted {
            return Ok(profiler);
        }
        let Some(running) = &server.running else {
            return Ok(profiler);
        };
        let workers = running.workers();
        let started = match &workers {
            Workers::Processes(pids) => perf::record(pids, &profiler.file()?),
            Workers::Threads(tids) => {
                profiler.scope =
                    "the embedded server's worker threads only (perf record -t)".to_string();
                perf::record_threads(tids, &profiler.file()?)
            }
        };
        match started {
            Ok(recording) => profiler.recording = Some(recording),
            Err(error) => {
                profiler.why_not = format!(
                    "{error:#}; the server's CPU per request below is from {} instead",
                    match workers {
                        Workers::Threads(_) => "its threads' CPU clocks",
                        Workers::Processes(_) => "/proc",
                    }
                )
            }
        }
        Ok(profiler)
    }

    /// A file for perf in a scratch directory made now.
    fn file(&mut self) -> Result<PathBuf> {
        crate::child::remove_leftovers();
        let directory = crate::child::scratch_dir("perf").context("making perf's directory")?;
        let file = directory.path().join("perf.data");
        self._directory = Some(directory);
        Ok(file)
    }

    /// Stops perf and returns its shares per shared object and per symbol
    /// category; categories are given where `server` says its symbols can
    /// be read (tlslab's own OpenSSL), else why not.
    pub(super) fn finish(self, server: &LoadedServer) -> (Shares, Shares) {
        let Some(recording) = self.recording else {
            return (Err(self.why_not.clone()), Err(self.why_not));
        };
        match recording.finish() {
            Ok(found) => {
                let categories = server.symbol_categories.clone().map(|()| found.categories);
                (Ok(found.objects), categories)
            }
            Err(error) => {
                let why = format!("{error:#}");
                (Err(why.clone()), Err(why))
            }
        }
    }
}
