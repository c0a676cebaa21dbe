//! The embedded HTTPS server: HTTP/1.1 over any backend's
//! [`TlsAcceptor`], serving generated pages `/page_SIZE` (the content of
//! [`page_bytes`], so a load generator can check every byte). Worker
//! threads take turns accepting from one listening socket; a worker serves
//! one connection at a time, with blocking I/O, until the client closes
//! it. Each worker keeps its thread's CPU time, the time tlslab spends in
//! HTTP (parsing requests, finding pages, building headers), the time the
//! TLS library spent in its own calls when the stream can tell, and, on
//! the instrumented rustls provider, the counted crypto per category.
//!
//! A [`Server`] stops its workers when stopped or dropped (on errors and
//! Ctrl-C alike), so no thread is left serving.

use std::collections::HashMap;
use std::io::{ErrorKind, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use serde::Serialize;

use crate::backend::rustls::instrument::{self, Category, Side};
use crate::backend::{thread_cpu_ns, TlsAcceptor};
use crate::workload::nginx::page_bytes;

/// How often an idle worker looks at the stop flag.
const POLL_INTERVAL: Duration = Duration::from_millis(50);
/// How long one blocking read or write may wait before the worker looks at
/// the stop flag again.
const IO_SLICE: Duration = Duration::from_millis(200);
/// A connection idle (or stuck mid-request) this long is closed.
const IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest request head the server reads.
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// The largest page served (as `tlslab load --size` allows).
pub const MAX_PAGE_BYTES: usize = 100_000_000;

/// What the server did, over all its workers.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct ServerStats {
    pub workers: usize,
    /// Requests answered with a page.
    pub requests: u64,
    /// Requests answered with an error status (unknown path, bad method).
    pub refused_requests: u64,
    /// Handshakes completed, and how many of them resumed a session.
    pub handshakes: u64,
    pub resumed: u64,
    pub failed_handshakes: u64,
    /// The first failed handshake's message.
    pub first_failure: Option<String>,
    /// Page bytes sent.
    pub body_bytes: u64,
    /// Every worker thread's CPU time, from its start to its end.
    pub cpu_ns: u64,
    /// Wall time in tlslab's HTTP code: reading the request head out of
    /// what TLS handed over, parsing it, finding the page, building the
    /// response head.
    pub http_ns: u64,
    /// Wall time inside the TLS library's own calls (socket I/O not
    /// included), when the backend can tell (rustls).
    pub library_ns: Option<u64>,
    /// Counted crypto per category on the server side (instrumented rustls).
    pub counted_ns: Option<Vec<(Category, u64)>>,
    /// From the start of the server to its stop.
    pub elapsed: Duration,
}

/// One share of the server's CPU.
#[derive(Debug, Clone, Serialize)]
pub struct Share {
    pub name: String,
    pub ns: u64,
}

impl ServerStats {
    fn add(&mut self, other: &ServerStats) {
        self.requests += other.requests;
        self.refused_requests += other.refused_requests;
        self.handshakes += other.handshakes;
        self.resumed += other.resumed;
        self.failed_handshakes += other.failed_handshakes;
        if self.first_failure.is_none() {
            self.first_failure.clone_from(&other.first_failure);
        }
        self.body_bytes += other.body_bytes;
        self.cpu_ns += other.cpu_ns;
        self.http_ns += other.http_ns;
        self.library_ns = match (self.library_ns, other.library_ns) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        self.counted_ns = match (self.counted_ns.take(), &other.counted_ns) {
            (None, None) => None,
            (mine, theirs) => {
                let mut sum = mine.unwrap_or_default();
                for (category, ns) in theirs.iter().flatten() {
                    match sum.iter_mut().find(|(c, _)| c == category) {
                        Some((_, total)) => *total += ns,
                        None => sum.push((*category, *ns)),
                    }
                }
                Some(sum)
            }
        };
    }

    /// Where the server's CPU went, when the crypto was counted: each
    /// counted category, the rest of the TLS library's calls, HTTP, and the
    /// rest (the kernel's socket work, accepting, waiting, bookkeeping).
    /// The counted categories and the library's calls are wall time inside
    /// calls, the total is the threads' CPU time: a share can only be too
    /// large if a thread was descheduled inside a call. Returns None
    /// unless the crypto was counted.
    pub fn breakdown(&self) -> Option<Vec<Share>> {
        let counted = self.counted_ns.as_ref()?;
        let mut shares: Vec<Share> = Category::ALL
            .iter()
            .map(|category| Share {
                name: category.name().to_string(),
                ns: counted
                    .iter()
                    .find(|(c, _)| c == category)
                    .map_or(0, |(_, ns)| *ns),
            })
            .collect();
        let crypto_ns: u64 = shares.iter().map(|s| s.ns).sum();
        let library_ns = self.library_ns.unwrap_or(crypto_ns);
        shares.push(Share {
            name: "rest of TLS".to_string(),
            ns: library_ns.saturating_sub(crypto_ns),
        });
        shares.push(Share {
            name: "HTTP".to_string(),
            ns: self.http_ns,
        });
        let accounted = library_ns.max(crypto_ns) + self.http_ns;
        shares.push(Share {
            name: "rest (kernel, I/O, accepting)".to_string(),
            ns: self.cpu_ns.saturating_sub(accounted),
        });
        Some(shares)
    }
}

/// A running embedded server.
pub struct Server {
    address: SocketAddr,
    /// The workers' kernel thread ids (for `perf record -t`).
    thread_ids: Vec<u32>,
    stop: Arc<AtomicBool>,
    workers: Vec<JoinHandle<ServerStats>>,
    started: Instant,
}

impl Server {
    /// Listens on `address` and starts `workers` threads serving TLS
    /// connections through `acceptor`; `counted` says the acceptor runs on
    /// the instrumented provider, whose tallies the workers collect.
    pub fn start(
        acceptor: Arc<dyn TlsAcceptor>,
        address: SocketAddr,
        workers: usize,
        counted: bool,
    ) -> Result<Self> {
        let listener = TcpListener::bind(address).map_err(|error| {
            let hint = if error.kind() == ErrorKind::AddrInUse {
                " (the port is in use: pick another with --bind, or 127.0.0.1:0 for any free port)"
            } else {
                ""
            };
            anyhow!("cannot listen on {address}: {error}{hint}")
        })?;
        let address = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let (started, thread_ids) = std::sync::mpsc::channel();
        let mut server = Self {
            address,
            thread_ids: Vec::new(),
            stop: Arc::clone(&stop),
            workers: Vec::new(),
            started: Instant::now(),
        };
        for index in 0..workers.max(1) {
            let listener = listener
                .try_clone()
                .context("sharing the listening socket")?;
            let acceptor = Arc::clone(&acceptor);
            let stop = Arc::clone(&stop);
            let started = started.clone();
            let worker = std::thread::Builder::new()
                .name(format!("tlslab-serve-{index}"))
                .spawn(move || {
                    // SAFETY: gettid(2) has no arguments and cannot fail.
                    let _ = started.send(unsafe { libc::gettid() } as u32);
                    drop(started);
                    worker(&listener, acceptor.as_ref(), &stop, counted)
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

    /// The worker threads' kernel ids.
    pub fn thread_ids(&self) -> &[u32] {
        &self.thread_ids
    }

    /// Stops every worker (a connection being served is closed after its
    /// current request) and returns what the server did.
    pub fn stop(mut self) -> Result<ServerStats> {
        self.stop_workers()
    }

    fn stop_workers(&mut self) -> Result<ServerStats> {
        self.stop.store(true, Ordering::SeqCst);
        let mut stats = ServerStats {
            workers: self.workers.len(),
            ..ServerStats::default()
        };
        let mut panicked = false;
        for worker in self.workers.drain(..) {
            match worker.join() {
                Ok(mine) => stats.add(&mine),
                Err(_) => panicked = true,
            }
        }
        stats.elapsed = self.started.elapsed();
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

/// Waits up to `timeout` for the listener to have a connection waiting.
fn wait_readable(listener: &TcpListener, timeout: Duration) {
    let mut poll = libc::pollfd {
        fd: listener.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll(2) on one pollfd we own, for a bounded time.
    unsafe { libc::poll(&mut poll, 1, timeout.as_millis() as libc::c_int) };
}

/// A worker: accepts and serves connections until told to stop; returns
/// what it did and its thread's CPU time (after the library's per-thread
/// warm-up, which is not counted).
fn worker(
    listener: &TcpListener,
    acceptor: &dyn TlsAcceptor,
    stop: &AtomicBool,
    counted: bool,
) -> ServerStats {
    acceptor.warm_up();
    let cpu_start = thread_cpu_ns();
    if counted {
        instrument::set_side(Side::Server);
        instrument::take_tally();
    }
    let mut stats = ServerStats::default();
    let mut pages = Pages::default();
    let mut library_ns = None;
    while !stop.load(Ordering::Relaxed) {
        wait_readable(listener, POLL_INTERVAL);
        let tcp = match listener.accept() {
            Ok((tcp, _)) => tcp,
            // Another worker took it, or nothing came.
            Err(_) => continue,
        };
        if let Some(ns) = serve_connection(tcp, acceptor, stop, &mut stats, &mut pages) {
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
    stats.cpu_ns = thread_cpu_ns().saturating_sub(cpu_start);
    stats
}

/// Generated pages by size, made once per worker (as a server's page cache
/// would hold a file).
#[derive(Default)]
struct Pages(HashMap<usize, Vec<u8>>);

impl Pages {
    fn get(&mut self, size: usize) -> &[u8] {
        if self.0.len() >= 16 && !self.0.contains_key(&size) {
            self.0.clear();
        }
        self.0.entry(size).or_insert_with(|| page_bytes(size))
    }
}

/// Serves one connection until the client closes it, asks to close, goes
/// idle or the server stops. Returns the library's time on it, if known.
fn serve_connection(
    tcp: TcpStream,
    acceptor: &dyn TlsAcceptor,
    stop: &AtomicBool,
    stats: &mut ServerStats,
    pages: &mut Pages,
) -> Option<u64> {
    let setup = || -> std::io::Result<()> {
        tcp.set_nonblocking(false)?;
        tcp.set_nodelay(true)?;
        tcp.set_read_timeout(Some(IO_SLICE))?;
        tcp.set_write_timeout(Some(IDLE_TIMEOUT))
    };
    if setup().is_err() {
        return None;
    }
    // The handshake waits for the client with the same patience as a
    // request, and no longer than the server runs.
    let mut waited = Duration::ZERO;
    let mut give_up = || {
        waited += IO_SLICE;
        stop.load(Ordering::Relaxed) || waited >= IDLE_TIMEOUT
    };
    let mut stream = match acceptor.accept(tcp, &mut give_up) {
        Ok(stream) => stream,
        Err(error) => {
            stats.failed_handshakes += 1;
            stats
                .first_failure
                .get_or_insert_with(|| format!("{error:#}"));
            return None;
        }
    };
    stats.handshakes += 1;
    if stream.resumed() {
        stats.resumed += 1;
    }
    let mut buffer = Vec::with_capacity(1024);
    while let Some(head) = read_head(stream.as_mut(), &mut buffer, stop, &mut stats.http_ns) {
        let began = Instant::now();
        let request = parse_request(&head);
        let (status, body): (&str, &[u8]) = match &request {
            Ok(request) => ("200 OK", pages.get(request.page_size)),
            Err(status) => (status, b""),
        };
        let keep_alive =
            request.as_ref().is_ok_and(|r| r.keep_alive) && !stop.load(Ordering::Relaxed);
        let response_head = format!(
            "HTTP/1.1 {status}\r\nServer: tlslab\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\nConnection: {}\r\n\r\n",
            body.len(),
            if keep_alive { "keep-alive" } else { "close" }
        );
        stats.http_ns += began.elapsed().as_nanos() as u64;
        let written = stream
            .write_all(response_head.as_bytes())
            .and_then(|()| stream.write_all(body))
            .and_then(|()| stream.flush());
        if written.is_err() {
            break;
        }
        match request {
            Ok(_) => {
                stats.requests += 1;
                stats.body_bytes += body.len() as u64;
            }
            Err(_) => stats.refused_requests += 1,
        }
        if !keep_alive {
            break;
        }
    }
    stream.close();
    stream.library_ns()
}

/// Reads the next request head (up to the blank line) into a string,
/// keeping any bytes after it in `buffer`. None when the client closed the
/// connection, went idle, sent too much, or the server stops.
fn read_head(
    stream: &mut dyn crate::backend::ServerStream,
    buffer: &mut Vec<u8>,
    stop: &AtomicBool,
    http_ns: &mut u64,
) -> Option<String> {
    let mut chunk = [0u8; 4096];
    let mut idle = Duration::ZERO;
    loop {
        let began = Instant::now();
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
            buffer.drain(..end + 4);
            *http_ns += began.elapsed().as_nanos() as u64;
            return Some(head);
        }
        *http_ns += began.elapsed().as_nanos() as u64;
        if buffer.len() > MAX_HEAD_BYTES {
            return None;
        }
        match stream.read(&mut chunk) {
            Ok(0) => return None,
            Ok(n) => {
                buffer.extend_from_slice(&chunk[..n]);
                idle = Duration::ZERO;
            }
            Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                idle += IO_SLICE;
                if stop.load(Ordering::Relaxed) || idle >= IDLE_TIMEOUT {
                    return None;
                }
            }
            Err(_) => return None,
        }
    }
}

/// A request the server answers with a page.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    page_size: usize,
    keep_alive: bool,
}

/// Parses a request head; an error is the status line to answer with.
fn parse_request(head: &str) -> std::result::Result<Request, &'static str> {
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split_whitespace();
    let (method, path, version) = (first.next(), first.next(), first.next());
    if method != Some("GET") {
        return Err("405 Method Not Allowed");
    }
    let page_size = path
        .and_then(|p| p.strip_prefix("/page_"))
        .and_then(|size| size.parse::<usize>().ok())
        .filter(|size| *size <= MAX_PAGE_BYTES)
        .ok_or("404 Not Found")?;
    let connection = lines.find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("connection")
            .then(|| value.trim().to_ascii_lowercase())
    });
    // HTTP/1.1 keeps the connection unless told otherwise; HTTP/1.0 closes it.
    let keep_alive = match connection.as_deref() {
        Some("close") => false,
        Some("keep-alive") => true,
        _ => version == Some("HTTP/1.1"),
    };
    Ok(Request {
        page_size,
        keep_alive,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse() {
        assert_eq!(
            parse_request("GET /page_50000 HTTP/1.1\r\nHost: x\r\nConnection: close"),
            Ok(Request {
                page_size: 50_000,
                keep_alive: false
            })
        );
        assert_eq!(
            parse_request("GET /page_10 HTTP/1.1\r\nHost: x"),
            Ok(Request {
                page_size: 10,
                keep_alive: true
            })
        );
        assert_eq!(
            parse_request("GET /page_10 HTTP/1.0"),
            Ok(Request {
                page_size: 10,
                keep_alive: false
            })
        );
        assert_eq!(
            parse_request("GET /index.html HTTP/1.1"),
            Err("404 Not Found")
        );
        assert_eq!(
            parse_request("POST /page_10 HTTP/1.1"),
            Err("405 Method Not Allowed")
        );
    }

    #[test]
    fn the_breakdown_adds_up_to_the_cpu_time() {
        let stats = ServerStats {
            cpu_ns: 1_000,
            http_ns: 100,
            library_ns: Some(600),
            counted_ns: Some(vec![(Category::KeyExchange, 300), (Category::Signing, 200)]),
            ..ServerStats::default()
        };
        let shares = stats.breakdown().unwrap();
        let total: u64 = shares.iter().map(|s| s.ns).sum();
        assert_eq!(total, 1_000);
        let rest_of_tls = shares.iter().find(|s| s.name == "rest of TLS").unwrap();
        assert_eq!(rest_of_tls.ns, 100);
        assert!(ServerStats::default().breakdown().is_none());
    }
}
