//! The embedded HTTPS server: HTTP/1.1, and HTTP/2 when the client
//! chooses `h2` by ALPN (through nghttp2, [`crate::workload::h2`]), over
//! any backend's [`TlsAcceptor`], serving generated pages `/page_SIZE` (the content of
//! [`page_bytes`](crate::workload::site::page_bytes), so a load generator
//! can check every byte). Each worker thread is an event loop (epoll) over
//! nonblocking sockets holding many connections at once, as nginx's
//! workers are: the workers share one listening socket with a long
//! backlog, and a slow, idle or hostile client holds a descriptor and a
//! few hundred bytes, never a worker. Everything is bounded: connections
//! per worker ([`Limits::max_connections`], within the open-file limit),
//! the time of each phase of a connection (see [`connection`]), the bytes
//! of a request head, and the memory of a response (pages are streamed
//! from one static pattern, none is cached).
//!
//! Each worker keeps its thread's CPU time, the time tlslab spends in HTTP
//! (parsing requests, building responses), the time the TLS library spent
//! in its own calls when the session can tell, and, on the instrumented
//! rustls provider, the counted crypto per category.
//!
//! A [`Server`] stops its workers when stopped or dropped (on errors and
//! Ctrl-C alike), so no thread is left serving.

mod connection;
mod connections;
pub mod http;
mod http2;
mod poll;
mod stats;

use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::backend::rustls::instrument;
use crate::backend::{thread_cpu_ns, TlsAcceptor};
use crate::scenario::operations::Category;
use crate::scenario::Side;
use anyhow::{anyhow, Context, Result};
use connection::{Connection, Turn};
use connections::Connections;
use poll::Epoll;

pub use http::MAX_PAGE_BYTES;
pub use stats::{ServerStats, Share};

/// How often a worker looks at the stop flag and its connections' deadlines.
const TICK: Duration = Duration::from_millis(100);
/// The most connections a worker accepts in one go before serving the
/// ones it has.
const ACCEPT_BATCH: usize = 64;
/// Plaintext read from a connection at once.
const READ_CHUNK_BYTES: usize = 16 * 1024;
/// Descriptors kept for everything but connections (the listener, epoll
/// sets, the database, files, the load generator's own sockets).
const RESERVED_DESCRIPTORS: u64 = 256;
/// The token of the listening socket in every worker's epoll set.
const LISTENER: u64 = u64::MAX;

/// The server's bounds in time and number.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The handshake and the first request head must be complete this long
    /// after the connection, and each later head this long after its first
    /// byte; else 408 (as nginx's `client_header_timeout`).
    pub head_timeout: Duration,
    /// A connection idle between requests this long is closed.
    pub keep_alive_timeout: Duration,
    /// A response that makes no progress this long (the client does not
    /// read) is abandoned.
    pub send_timeout: Duration,
    /// The most connections held at once, over all workers (lowered to
    /// what the open-file limit allows).
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            head_timeout: Duration::from_secs(10),
            keep_alive_timeout: Duration::from_secs(10),
            send_timeout: Duration::from_secs(10),
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// The default bound on connections held at once.
pub const DEFAULT_MAX_CONNECTIONS: usize = 16_384;

/// How long [`Server::take_stats`] waits for every worker's figures.
const CHECKPOINT_PATIENCE: Duration = Duration::from_secs(10);

/// Counts shared by the workers.
#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    /// Asked for by [`Server::take_stats`]: each worker hands its figures
    /// since the last checkpoint to `reports` when it sees this change.
    checkpoint: AtomicU64,
    reports: Mutex<Vec<ServerStats>>,
    /// Connections open now, and the most at once.
    open: AtomicU64,
    most: AtomicU64,
}

/// A running embedded server.
pub struct Server {
    address: SocketAddr,
    /// The workers' kernel thread ids (for `perf record -t`).
    thread_ids: Vec<u32>,
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<ServerStats>>,
    started: Instant,
    connection_limit: usize,
    open_file_limit: u64,
}

impl Server {
    /// Listens on `address` and starts `workers` threads serving TLS
    /// connections through `acceptor`, with the default [`Limits`];
    /// `counted` says the acceptor runs on the instrumented provider,
    /// whose tallies the workers collect.
    pub fn start(
        acceptor: Arc<dyn TlsAcceptor>,
        address: SocketAddr,
        workers: usize,
        counted: bool,
    ) -> Result<Self> {
        Self::start_with(acceptor, address, workers, counted, Limits::default())
    }

    /// As [`Server::start`], within `limits`. The soft open-file limit is
    /// raised to the hard one; the connections held at once are bounded by
    /// what it allows.
    pub fn start_with(
        acceptor: Arc<dyn TlsAcceptor>,
        address: SocketAddr,
        workers: usize,
        counted: bool,
        limits: Limits,
    ) -> Result<Self> {
        let listener = TcpListener::bind(address).map_err(|error| {
            let hint = if error.kind() == std::io::ErrorKind::AddrInUse {
                " (the port is in use: pick another with --bind, or 127.0.0.1:0 for any free port)"
            } else {
                ""
            };
            anyhow!("cannot listen on {address}: {error}{hint}")
        })?;
        poll::set_backlog(&listener, poll::LISTEN_BACKLOG).context("setting the listen backlog")?;
        listener.set_nonblocking(true)?;
        let address = listener.local_addr()?;
        let workers = workers.max(1);
        let open_file_limit = poll::raise_open_file_limit();
        let room = open_file_limit
            .saturating_sub(poll::open_descriptors() + RESERVED_DESCRIPTORS + workers as u64)
            .max(workers as u64);
        let connection_limit = limits.max_connections.min(room as usize).max(workers);
        let per_worker = connection_limit.div_ceil(workers);
        let shared = Arc::new(Shared::default());
        let (started, thread_ids) = std::sync::mpsc::channel();
        let mut server = Self {
            address,
            thread_ids: Vec::new(),
            shared: Arc::clone(&shared),
            workers: Vec::new(),
            started: Instant::now(),
            connection_limit: per_worker * workers,
            open_file_limit,
        };
        for index in 0..workers {
            let listener = listener
                .try_clone()
                .context("sharing the listening socket")?;
            let epoll = Epoll::new().context("creating a worker's epoll set")?;
            epoll
                .add_listener(listener.as_raw_fd(), LISTENER)
                .context("watching the listening socket")?;
            let acceptor = Arc::clone(&acceptor);
            let shared = Arc::clone(&shared);
            let started = started.clone();
            let worker = std::thread::Builder::new()
                .name(format!("tlslab-serve-{index}"))
                .spawn(move || {
                    // SAFETY: gettid(2) has no arguments and cannot fail.
                    let _ = started.send(unsafe { libc::gettid() } as u32);
                    drop(started);
                    Worker {
                        listener: &listener,
                        epoll: &epoll,
                        acceptor: acceptor.as_ref(),
                        shared: &shared,
                        limits: &limits,
                        max_connections: per_worker,
                    }
                    .run(counted)
                })
                .context("starting a server worker")?;
            // Pushed at once: a failure to start the next one drops `server`,
            // which stops those already running.
            server.workers.push(worker);
        }
        drop(started);
        server.thread_ids = thread_ids.iter().take(server.workers.len()).collect();
        Ok(server)
    }

    /// Where the server listens (the port chosen, for port 0).
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The workers' kernel thread ids.
    pub fn thread_ids(&self) -> &[u32] {
        &self.thread_ids
    }

    /// The most connections the server holds at once.
    pub fn connection_limit(&self) -> usize {
        self.connection_limit
    }

    /// The soft open-file limit the server runs under (raised to the hard one).
    pub fn open_file_limit(&self) -> u64 {
        self.open_file_limit
    }

    /// Stops every worker (open connections are closed) and returns what
    /// the server did since it started, or since the last
    /// [`Server::take_stats`].
    pub fn stop(mut self) -> Result<ServerStats> {
        self.stop_workers()
    }

    /// What the server did since it started, or since the last call,
    /// without stopping it: each worker hands over its figures at its next
    /// wake (within [`TICK`]) and counts anew from there, so a load of
    /// several parts (one per HTTP version) gets each part's own figures.
    /// The TLS library's time of a connection still open is counted up to
    /// now.
    pub fn take_stats(&mut self) -> Result<ServerStats> {
        self.shared
            .reports
            .lock()
            .expect("no worker panics holding it")
            .clear();
        self.shared.checkpoint.fetch_add(1, Ordering::SeqCst);
        let asked = Instant::now();
        let reports = loop {
            {
                let mut reports = self
                    .shared
                    .reports
                    .lock()
                    .expect("no worker panics holding it");
                if reports.len() >= self.workers.len() {
                    break std::mem::take(&mut *reports);
                }
            }
            if self.workers.iter().any(JoinHandle::is_finished) {
                return Err(anyhow!("a server worker ended while it was serving"));
            }
            if asked.elapsed() > CHECKPOINT_PATIENCE {
                return Err(anyhow!(
                    "the server's workers did not hand over their figures within {} s",
                    CHECKPOINT_PATIENCE.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        let mut stats = self.totals();
        for report in &reports {
            stats.add(report);
        }
        Ok(stats)
    }

    /// The figures every report shares (workers, bounds, the most
    /// connections at once), with the time since the last checkpoint.
    fn totals(&mut self) -> ServerStats {
        let now = Instant::now();
        let since = std::mem::replace(&mut self.started, now);
        ServerStats {
            workers: self.workers.len(),
            connection_limit: self.connection_limit as u64,
            most_connections: self.shared.most.load(Ordering::SeqCst),
            elapsed: now - since,
            ..ServerStats::default()
        }
    }

    fn stop_workers(&mut self) -> Result<ServerStats> {
        self.shared.stop.store(true, Ordering::SeqCst);
        let mut stats = self.totals();
        let mut panicked = false;
        for worker in self.workers.drain(..) {
            match worker.join() {
                Ok(mine) => stats.add(&mine),
                Err(_) => panicked = true,
            }
        }
        stats.most_connections = self.shared.most.load(Ordering::SeqCst);
        if panicked {
            return Err(anyhow!("a server worker panicked"));
        }
        Ok(stats)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if !self.workers.is_empty() {
            let _ = self.stop_workers();
        }
    }
}

/// One worker: an event loop over the connections it accepted.
struct Worker<'a> {
    listener: &'a TcpListener,
    epoll: &'a Epoll,
    acceptor: &'a dyn TlsAcceptor,
    shared: &'a Shared,
    limits: &'a Limits,
    /// The most connections this worker holds at once.
    max_connections: usize,
}

/// A worker's state while it runs.
struct Loop {
    connections: Connections,
    stats: ServerStats,
    library_ns: Option<u64>,
    chunk: Vec<u8>,
    /// Connections that gave way to others with work left.
    again: Vec<u64>,
    /// The listener is in the epoll set (it leaves while the worker is full).
    listening: bool,
    /// Accepting failed (out of descriptors): not before this again.
    accept_paused_until: Instant,
}

impl Worker<'_> {
    /// Accepts and serves connections until told to stop; returns what it
    /// did and its thread's CPU time (after the library's per-thread
    /// warm-up, which is not counted).
    fn run(&self, counted: bool) -> ServerStats {
        self.acceptor.warm_up();
        let mut cpu_start = thread_cpu_ns();
        // A new server's count; one asked for before this thread ran is
        // seen at once.
        let mut checkpoint = 0;
        if counted {
            instrument::set_side(Side::Server);
            instrument::take_tally();
        }
        let mut state = Loop {
            connections: Connections::default(),
            stats: ServerStats::default(),
            library_ns: None,
            chunk: vec![0; READ_CHUNK_BYTES],
            again: Vec::new(),
            listening: true,
            accept_paused_until: Instant::now(),
        };
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 1024];
        let mut next_sweep = Instant::now() + TICK;
        while !self.shared.stop.load(Ordering::Relaxed) {
            let asked = self.shared.checkpoint.load(Ordering::SeqCst);
            if asked != checkpoint {
                checkpoint = asked;
                let stats = self.take_stats(&mut state, counted, &mut cpu_start);
                self.shared
                    .reports
                    .lock()
                    .expect("no worker panics holding it")
                    .push(stats);
            }
            let timeout = if state.again.is_empty() {
                TICK
            } else {
                Duration::ZERO
            };
            let ready = match self.epoll.wait(&mut events, timeout) {
                Ok(ready) => ready,
                Err(error) => {
                    state
                        .stats
                        .first_failure
                        .get_or_insert(format!("the worker's epoll wait failed: {error}"));
                    break;
                }
            };
            let now = Instant::now();
            let mut accept = false;
            let mut due: Vec<u64> = std::mem::take(&mut state.again);
            for event in &events[..ready] {
                match event.u64 {
                    LISTENER => accept = true,
                    token => due.push(token),
                }
            }
            for token in due {
                self.turn(&mut state, token, now, false);
            }
            if accept {
                self.accept(&mut state, now);
            }
            self.listen_while_room(&mut state, now);
            if now >= next_sweep {
                for token in state.connections.expired(now) {
                    self.turn(&mut state, token, now, true);
                }
                next_sweep = now + TICK;
            }
        }
        for token in state.connections.tokens() {
            if let Some(mut connection) = state.connections.remove(token) {
                connection.stop(&mut state.stats);
                self.closed(&mut state, connection);
            }
        }
        self.take_stats(&mut state, counted, &mut cpu_start)
    }

    /// The worker's figures since `cpu_start` (moved on to now), counting
    /// anew from here: the TLS library's time of the connections still
    /// open is taken up to now, the counted crypto's tally emptied.
    fn take_stats(&self, state: &mut Loop, counted: bool, cpu_start: &mut u64) -> ServerStats {
        let mut stats = std::mem::take(&mut state.stats);
        let mut library_ns = state.library_ns.take();
        for connection in state.connections.each_mut() {
            if let Some(ns) = connection.take_library_ns() {
                *library_ns.get_or_insert(0) += ns;
            }
        }
        stats.library_ns = library_ns;
        if counted {
            let tally = instrument::take_tally();
            stats.counted_ns = Some(
                Category::ALL
                    .iter()
                    .map(|c| {
                        (
                            *c,
                            tally
                                .category_ns
                                .get(&(Side::Server, *c))
                                .copied()
                                .unwrap_or(0),
                        )
                    })
                    .collect(),
            );
        }
        let cpu_now = thread_cpu_ns();
        stats.cpu_ns = cpu_now.saturating_sub(*cpu_start);
        *cpu_start = cpu_now;
        stats
    }

    /// Moves one connection on (or, `expired`, handles its deadline).
    fn turn(&self, state: &mut Loop, token: u64, now: Instant, expired: bool) {
        let Some(connection) = state.connections.get(token) else {
            return;
        };
        let turn = if expired {
            connection.expire(
                self.acceptor,
                now,
                self.limits,
                &mut state.stats,
                &mut state.chunk,
            )
        } else {
            connection.turn(
                self.acceptor,
                now,
                self.limits,
                &mut state.stats,
                &mut state.chunk,
            )
        };
        match turn {
            Turn::Waiting => {}
            Turn::Again => state.again.push(token),
            Turn::Closed => {
                if let Some(connection) = state.connections.remove(token) {
                    self.closed(state, connection);
                }
            }
        }
    }

    /// Counts a closed connection out.
    fn closed(&self, state: &mut Loop, mut connection: Connection) {
        if let Some(ns) = connection.take_library_ns() {
            *state.library_ns.get_or_insert(0) += ns;
        }
        self.shared.open.fetch_sub(1, Ordering::Relaxed);
    }

    /// Accepts what the listener has, up to a batch and the worker's bound.
    fn accept(&self, state: &mut Loop, now: Instant) {
        for _ in 0..ACCEPT_BATCH {
            if state.connections.held >= self.max_connections {
                return;
            }
            let tcp = match self.listener.accept() {
                Ok((tcp, _)) => tcp,
                // Another worker took it, or nothing came.
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => return,
                // Out of descriptors or memory: leave the rest in the
                // backlog for a tick instead of spinning on it.
                Err(error) => {
                    state
                        .stats
                        .first_failure
                        .get_or_insert(format!("accepting a connection failed: {error}"));
                    self.stop_listening(state);
                    state.accept_paused_until = now + TICK;
                    return;
                }
            };
            if tcp.set_nonblocking(true).is_err() || tcp.set_nodelay(true).is_err() {
                continue;
            }
            let fd = tcp.as_raw_fd();
            let token = state
                .connections
                .insert(Connection::new(tcp, now, self.limits));
            if self.epoll.add_connection(fd, token).is_err() {
                state.connections.remove(token);
                continue;
            }
            state.stats.connections += 1;
            let open = self.shared.open.fetch_add(1, Ordering::Relaxed) + 1;
            self.shared.most.fetch_max(open, Ordering::Relaxed);
        }
    }

    /// Takes the listener out of the epoll set while the worker is full (or
    /// accepting failed), and back when there is room: a full worker leaves
    /// new connections to the others, or to the backlog.
    fn listen_while_room(&self, state: &mut Loop, now: Instant) {
        let room =
            state.connections.held < self.max_connections && now >= state.accept_paused_until;
        if room && !state.listening {
            state.listening = self
                .epoll
                .add_listener(self.listener.as_raw_fd(), LISTENER)
                .is_ok();
        } else if !room && state.listening {
            self.stop_listening(state);
        }
    }

    fn stop_listening(&self, state: &mut Loop) {
        if state.listening && self.epoll.remove(self.listener.as_raw_fd()).is_ok() {
            state.listening = false;
        }
    }
}
