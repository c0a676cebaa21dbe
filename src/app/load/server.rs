//! The server a load runs against, and the profiler beside it: nginx or
//! tlslab's embedded server, started on loopback for the run and stopped
//! when the value drops whatever happens, or a server the user runs
//! (`--target`); perf recording the server's worker while it is loaded.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, Result};

use super::target::Target;
use crate::backend::{descriptor_by_id, Backend, BackendId, LibraryInfo};
use crate::certs::Credentials;
use crate::scenario::HandshakeScenario;
use crate::workload::nginx::{Nginx, NginxBackend, Site};
use crate::workload::perf;
use crate::workload::serve::{Server, ServerStats};

/// Why nginx's samples are not put in symbol categories.
const NGINX_STRIPPED: &str = "nginx runs on Debian's libcrypto.so.3, which is stripped of its internal symbols: perf names only its exported functions there, so a split per symbol category would mislead; the split per shared object above stands (for categories, run the embedded server: --server embedded --backend openssl)";

/// Which server a load aims at, as planned.
pub(super) enum ServerChoice {
    /// A server the user runs.
    Target(Target),
    /// tlslab's embedded server on this backend, with this many workers.
    Embedded {
        id: BackendId,
        library: LibraryInfo,
        workers: usize,
    },
    /// Debian's nginx (boxed: its client's capabilities make it large).
    Nginx(Box<NginxBackend>),
}

impl ServerChoice {
    /// The libraries the run measures: the server's, or for a server the
    /// user runs, the client's (the server's are not known).
    pub(super) fn libraries(&self, client: &LibraryInfo) -> Vec<LibraryInfo> {
        match self {
            ServerChoice::Target(_) => vec![client.clone()],
            ServerChoice::Embedded { library, .. } => vec![library.clone()],
            ServerChoice::Nginx(backend) => vec![backend.library()],
        }
    }

    /// The embedded server's backend, if that is the server.
    pub(super) fn embedded(&self) -> Option<BackendId> {
        match self {
            ServerChoice::Embedded { id, .. } => Some(*id),
            _ => None,
        }
    }
}

/// A server under load, running until it drops.
pub(super) enum Running {
    Target,
    Embedded { server: Server, backend: String },
    Nginx(Nginx),
}

/// The server started for a load: where it listens and what it is, in words.
pub(super) struct ServerUnderTest {
    pub running: Running,
    pub address: SocketAddr,
    pub description: String,
}

impl ServerUnderTest {
    /// Starts the chosen server for `scenario`, serving pages of
    /// `page_bytes` (nginx), resuming sessions when `resume` says.
    pub(super) fn start(
        choice: &ServerChoice,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
        page_bytes: usize,
        resume: bool,
    ) -> Result<Self> {
        Ok(match choice {
            ServerChoice::Target(target) => Self {
                running: Running::Target,
                address: target.address,
                description: format!("{} (your server)", target.address),
            },
            ServerChoice::Embedded {
                id,
                library,
                workers,
            } => {
                let acceptor = id.open().acceptor(scenario, credentials)?;
                let server = Server::start(
                    acceptor,
                    SocketAddr::from(([127, 0, 0, 1], 0)),
                    *workers,
                    id.descriptor().counts_crypto_apart,
                )?;
                Self {
                    address: server.address(),
                    description: format!(
                        "tlslab's embedded server on {} ({workers} workers)",
                        library.backend
                    ),
                    running: Running::Embedded {
                        server,
                        backend: library.backend.clone(),
                    },
                }
            }
            ServerChoice::Nginx(backend) => {
                let nginx = Nginx::serving(
                    scenario,
                    credentials,
                    &Site {
                        page_sizes: vec![page_bytes],
                        session_resumption: resume,
                    },
                )?;
                Self {
                    address: nginx.address(),
                    description: format!("nginx {}", backend.library().version),
                    running: Running::Nginx(nginx),
                }
            }
        })
    }

    /// nginx's worker's CPU time so far, nanoseconds (`None` for other servers).
    pub(super) fn nginx_cpu_ns(&self) -> Result<Option<u64>> {
        match &self.running {
            Running::Nginx(nginx) => nginx.worker_cpu_ns().map(Some),
            _ => Ok(None),
        }
    }

    /// Stops the embedded server and returns its figures and backend id
    /// (`None` for other servers, which stop when dropped).
    pub(super) fn stop_embedded(&mut self) -> Result<Option<(ServerStats, String)>> {
        match std::mem::replace(&mut self.running, Running::Target) {
            Running::Embedded { server, backend } => Ok(Some((
                server.stop().context("stopping the embedded server")?,
                backend,
            ))),
            other => {
                self.running = other;
                Ok(None)
            }
        }
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
    /// Starts perf on the server's worker (nginx) or threads (embedded)
    /// when `wanted`; a server the user runs is not profiled.
    pub(super) fn start(server: &ServerUnderTest, wanted: bool) -> Result<Self> {
        let mut profiler = Self {
            recording: None,
            why_not: "not asked for (--perf)".to_string(),
            scope: "the server's worker process".to_string(),
            _directory: None,
        };
        if !wanted {
            return Ok(profiler);
        }
        let started = match &server.running {
            Running::Target => return Ok(profiler),
            Running::Nginx(nginx) => perf::record(nginx.worker_pid(), &profiler.file()?),
            Running::Embedded { server, .. } => {
                profiler.scope =
                    "the embedded server's worker threads only (perf record -t)".to_string();
                perf::record_threads(server.thread_ids(), &profiler.file()?)
            }
        };
        match started {
            Ok(recording) => profiler.recording = Some(recording),
            Err(error) => {
                profiler.why_not = format!(
                    "{error:#}; the server's CPU per request below is from {} instead",
                    match server.running {
                        Running::Embedded { .. } => "its threads' CPU clocks",
                        _ => "/proc",
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
    /// category; categories read the symbol names of C libraries, so they
    /// are given for an embedded server whose crypto is not counted apart
    /// (OpenSSL; `embedded`: its backend id).
    pub(super) fn finish(self, embedded: Option<&str>) -> (Shares, Shares) {
        let Some(recording) = self.recording else {
            return (Err(self.why_not.clone()), Err(self.why_not));
        };
        match recording.finish() {
            Ok(found) => {
                let categories = match embedded {
                    None => Err(NGINX_STRIPPED.to_string()),
                    // rustls is Rust: its state machine would read as tlslab's own code.
                    Some(backend)
                        if descriptor_by_id(backend).is_some_and(|d| d.counts_crypto_apart) =>
                    {
                        Err(format!(
                            "the categories read OpenSSL's symbol names; {backend} counts its crypto per category itself (above)"
                        ))
                    }
                    Some(_) => Ok(found.categories),
                };
                (Ok(found.objects), categories)
            }
            Err(error) => {
                let why = format!("{error:#}");
                (Err(why.clone()), Err(why))
            }
        }
    }
}
