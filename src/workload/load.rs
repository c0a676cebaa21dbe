//! An open-model HTTPS load generator: requests are due at planned times
//! (a constant rate, after an optional linear ramp from zero), whatever the
//! server does, and each request's latency is timed from the moment it was
//! due, not from when a client thread got round to it. A server that stalls
//! therefore shows its queueing in the latencies instead of slowing the
//! load down and hiding it (coordinated omission). Each request's phases
//! are timed apart (TCP connect, TLS handshake, time to first byte,
//! transfer), its body is checked byte for byte, and its errors are
//! counted by kind. A run is bounded in time and in requests and stops by
//! itself about a second after its plan ends, whatever the server does, and
//! at once on Ctrl-C. It speaks HTTP/1.1, or HTTP/2 (ALPN `h2`, several
//! requests per connection as streams, framed by nghttp2: see [`super::h2`]).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use hdrhistogram::Histogram;
use serde::Serialize;

use crate::backend::client::ClientContext;

mod events;
mod head;
mod http;
pub mod shards;
mod threads;

pub use events::not_h2;
pub use http::{chosen_alpn, HttpVersion};

/// How long one step of a request (connect, read, write) may wait
/// without progress.
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// How long requests under way when the plan ends have to finish; then
/// they fail as timed out, and the run is over.
pub const GRACE: Duration = Duration::from_secs(1);

/// When the clients stop: no request starts after the plan's end, none
/// goes on after the deadline, and after Ctrl-C none goes on at all.
#[derive(Clone, Copy)]
struct Stop<'a> {
    /// The plan's end: a request not started by then never is.
    end: Instant,
    /// The plan's end plus [`GRACE`].
    deadline: Instant,
    interrupt: &'a AtomicBool,
}

impl Stop<'_> {
    fn interrupted(&self) -> bool {
        self.interrupt.load(Ordering::Relaxed)
    }

    /// Why a request whose step has waited since `since` must give up
    /// now, if it must: Ctrl-C (the caller drops the request), the
    /// deadline, or no progress for [`IO_TIMEOUT`].
    fn reason(&self, since: Instant) -> Option<(ErrorKind, String)> {
        self.reason_at(since, Instant::now())
    }

    /// [`Self::reason`] at `now`: an event loop reads the clock once for
    /// all its clients.
    fn reason_at(&self, since: Instant, now: Instant) -> Option<(ErrorKind, String)> {
        if self.interrupted() {
            Some((ErrorKind::Io, "interrupted".to_string()))
        } else if now >= self.deadline {
            Some((ErrorKind::Timeout, Self::late()))
        } else if now.duration_since(since) >= IO_TIMEOUT {
            Some((
                ErrorKind::Timeout,
                format!("no progress for {} s", IO_TIMEOUT.as_secs()),
            ))
        } else {
            None
        }
    }

    /// The message of a request cut at the deadline.
    fn late() -> String {
        format!(
            "still unanswered {} s after the end of the run",
            GRACE.as_secs()
        )
    }
}

/// How connections are used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Mode {
    /// A new TCP connection and full handshake for every request.
    NewConnection,
    /// Each client keeps one connection open for its requests.
    KeepAlive,
    /// A new TCP connection for every request, resuming the session (TLS
    /// 1.3 ticket, TLS 1.2 session id) of the client's previous
    /// connection; a client's first connection is a full handshake.
    Resume,
}

impl Mode {
    pub fn id(self) -> &'static str {
        match self {
            Mode::NewConnection => "new",
            Mode::KeepAlive => "keepalive",
            Mode::Resume => "resume",
        }
    }

    pub fn from_id(id: &str) -> Option<Self> {
        [Mode::NewConnection, Mode::KeepAlive, Mode::Resume]
            .into_iter()
            .find(|m| m.id() == id)
    }
}

/// What drives the clients' connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Driver {
    /// One blocking thread per client.
    Threads,
    /// This many threads, each an epoll loop over its share of the
    /// clients' nonblocking connections (see the `events` module).
    EventLoops(usize),
}

/// What to offer and how.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// Requests per second once the ramp is over.
    pub rate: f64,
    /// The rate rises linearly from zero over this long.
    pub ramp: Duration,
    /// The whole run, ramp included: no request is due after it.
    pub duration: Duration,
    /// The path requested, and the body it must return.
    pub path: String,
    #[serde(skip)]
    pub body: Vec<u8>,
    pub mode: Mode,
    /// Clients, each one connection with one request at a time; a request
    /// waits for a free one (and that wait counts in its latency).
    pub clients: usize,
    /// A bound on requests, whatever the rate and duration say.
    pub max_requests: usize,
    /// The HTTP version spoken.
    pub http: HttpVersion,
    /// HTTP/2 in keep-alive mode: the requests a client's connection
    /// carries at once (h2load's `-m`); 1 otherwise.
    pub streams: usize,
}

/// The planned start of each request, as offsets from the start of the run.
pub fn schedule(
    rate: f64,
    ramp: Duration,
    duration: Duration,
    max_requests: usize,
) -> Vec<Duration> {
    let schedule = Schedule::new(rate, ramp, duration, max_requests);
    (0..schedule.len()).map(|i| schedule.at(i)).collect()
}

/// The plan's due times, each worked out when it is needed: at a million
/// requests a second a list made up front is millions of entries, and
/// making it was a visible share of the client's CPU per request.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    rate: f64,
    ramp_s: f64,
    /// Requests offered during the ramp: the area under the rate, rate * ramp / 2.
    during_ramp: f64,
    len: usize,
}

impl Schedule {
    /// At most `max_requests` requests due before `duration`, the rate
    /// rising linearly to `rate` (requests per second) over `ramp`.
    pub fn new(rate: f64, ramp: Duration, duration: Duration, max_requests: usize) -> Self {
        let ramp_s = ramp.as_secs_f64().min(duration.as_secs_f64());
        let mut schedule = Self {
            rate,
            ramp_s,
            during_ramp: rate * ramp_s / 2.0,
            len: 0,
        };
        if rate <= 0.0 {
            return schedule;
        }
        let end = duration.as_secs_f64();
        let offset = |i: usize| schedule.offset_s(i);
        // The count from the inverse of `offset_s`, then made exact where
        // rounding put it one off: every request due before the end.
        let estimate = if end <= ramp_s {
            rate * end * end / (2.0 * ramp_s)
        } else {
            schedule.during_ramp + (end - ramp_s) * rate
        };
        let mut len = (estimate.max(0.0).ceil() as usize).min(max_requests);
        while len > 0 && offset(len - 1) >= end {
            len -= 1;
        }
        while len < max_requests && offset(len) < end {
            len += 1;
        }
        schedule.len = len;
        schedule
    }

    /// How many requests are due.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// When request `i` (counted from 0, below [`Self::len`]) is due.
    pub fn at(&self, i: usize) -> Duration {
        Duration::from_secs_f64(self.offset_s(i))
    }

    fn offset_s(&self, i: usize) -> f64 {
        let n = i as f64;
        if n < self.during_ramp {
            // n = rate * t^2 / (2 * ramp)  =>  t = sqrt(2 * ramp * n / rate)
            (2.0 * self.ramp_s * n / self.rate).sqrt()
        } else {
            self.ramp_s + (n - self.during_ramp) / self.rate
        }
    }
}

/// Why a request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum ErrorKind {
    Connect,
    Handshake,
    Timeout,
    Status,
    Body,
    Io,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 6] = [
        ErrorKind::Connect,
        ErrorKind::Handshake,
        ErrorKind::Timeout,
        ErrorKind::Status,
        ErrorKind::Body,
        ErrorKind::Io,
    ];

    /// A stable snake_case id: the key in the store.
    pub fn id(self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::Handshake => "handshake",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Status => "status",
            ErrorKind::Body => "body",
            ErrorKind::Io => "io",
        }
    }

    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.id() == id)
    }

    pub fn describe(self) -> &'static str {
        match self {
            ErrorKind::Connect => "TCP connect failed",
            ErrorKind::Handshake => "TLS handshake failed",
            ErrorKind::Timeout => "timed out",
            ErrorKind::Status => "HTTP status not 200",
            ErrorKind::Body => "wrong or short body",
            ErrorKind::Io => "read or write failed",
        }
    }
}

/// Latencies in microseconds, per phase.
pub struct Latencies {
    pub connect: Histogram<u64>,
    pub handshake: Histogram<u64>,
    pub first_byte: Histogram<u64>,
    pub transfer: Histogram<u64>,
    /// From the moment the request was due to its last byte.
    pub total: Histogram<u64>,
    /// From the moment a client thread started it to its last byte.
    pub service: Histogram<u64>,
}

impl Default for Latencies {
    fn default() -> Self {
        Self::new()
    }
}

/// The phases' stable ids (the keys in the store), in the order of
/// [`Latencies::phases`].
pub const PHASE_IDS: [&str; 6] = [
    "connect",
    "handshake",
    "first_byte",
    "transfer",
    "service",
    "total",
];

impl Latencies {
    /// Each phase's histogram, in the order of [`PHASE_IDS`].
    pub fn phases(&self) -> [&Histogram<u64>; 6] {
        [
            &self.connect,
            &self.handshake,
            &self.first_byte,
            &self.transfer,
            &self.service,
            &self.total,
        ]
    }

    /// The histogram of the phase with this id.
    pub fn phase_mut(&mut self, id: &str) -> Option<&mut Histogram<u64>> {
        Some(match id {
            "connect" => &mut self.connect,
            "handshake" => &mut self.handshake,
            "first_byte" => &mut self.first_byte,
            "transfer" => &mut self.transfer,
            "service" => &mut self.service,
            "total" => &mut self.total,
            _ => return None,
        })
    }

    /// Empty histograms with the generator's bounds.
    pub fn new() -> Self {
        // 1 µs to 10 minutes at 3 significant digits.
        let histogram = || Histogram::new_with_bounds(1, 600_000_000, 3).expect("valid bounds");
        Self {
            connect: histogram(),
            handshake: histogram(),
            first_byte: histogram(),
            transfer: histogram(),
            total: histogram(),
            service: histogram(),
        }
    }

    fn add(&mut self, other: &Latencies) {
        for (mine, theirs) in [
            (&mut self.connect, &other.connect),
            (&mut self.handshake, &other.handshake),
            (&mut self.first_byte, &other.first_byte),
            (&mut self.transfer, &other.transfer),
            (&mut self.total, &other.total),
            (&mut self.service, &other.service),
        ] {
            mine.add(theirs).expect("same bounds");
        }
    }
}

/// What a run did.
pub struct LoadResult {
    /// Requests that were due (offered).
    pub offered: usize,
    /// Requests started: offered minus those never started, still waiting
    /// for a free client when the plan ended (or when Ctrl-C came).
    pub sent: usize,
    pub answered: usize,
    pub errors: Vec<(ErrorKind, usize)>,
    /// The first message of each kind of error, for the report.
    pub first_error: Vec<(ErrorKind, String)>,
    pub latencies: Latencies,
    /// Payload bytes received and checked.
    pub bytes: u64,
    /// From the first request due to the last one finished.
    pub elapsed: Duration,
    /// The client threads' CPU time, all together.
    pub client_cpu_ns: u64,
    /// Answers per second of the run, second by second.
    pub per_second: Vec<usize>,
    /// Second by second, the requests due in it and the latencies of
    /// those answered: latency against offered rate.
    pub intervals: Vec<Interval>,
    /// Handshakes in which the server accepted the offered session
    /// (resumed mode); 0 in the other modes.
    pub resumed: usize,
    pub interrupted: bool,
}

impl LoadResult {
    /// Answers per second over the whole run, the ramp included.
    pub fn achieved_rate(&self) -> f64 {
        self.answered as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Where latency took off: the first second of due time whose median
    /// total latency is over three times, and 5 ms over, the median of
    /// the first quarter of the run's answered seconds (at least one).
    /// Returns that second, its offered requests and its median, and the
    /// early median, all latencies in microseconds.
    pub fn latency_knee(&self) -> Option<Knee> {
        let medians: Vec<(usize, usize, u64)> = self
            .intervals
            .iter()
            .enumerate()
            .filter_map(|(second, i)| i.latency_us.map(|l| (second, i.offered, l[0])))
            .collect();
        let early_count = (medians.len() / 4).max(1);
        let mut early: Vec<u64> = medians.iter().take(early_count).map(|m| m.2).collect();
        early.sort_unstable();
        let baseline = *early.get(early.len() / 2)?;
        medians
            .iter()
            .skip(early_count)
            .find(|(_, _, p50)| *p50 > 3 * baseline && *p50 > baseline + 5_000)
            .map(|&(second, offered, p50_us)| Knee {
                second,
                offered,
                p50_us,
                baseline_us: baseline,
            })
    }

    /// Answers per second in the whole seconds after the ramp and before
    /// the end of the plan (None if there is no such second).
    pub fn steady_rate(&self, plan: &Plan) -> Option<f64> {
        let first = plan.ramp.as_secs_f64().ceil() as usize;
        let last = (plan.duration.as_secs_f64().floor() as usize).min(self.per_second.len());
        (last > first).then(|| {
            self.per_second[first..last].iter().sum::<usize>() as f64 / (last - first) as f64
        })
    }
}

/// The requests due in one second of a run (the index of
/// [`LoadResult::intervals`]) and the total latency of those answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interval {
    /// Requests due in this second by the plan and released.
    pub offered: usize,
    /// Of those, the ones answered: what the percentiles rest on.
    pub answered: usize,
    /// Their total latency (due to last byte) at [`INTERVAL_PERCENTILES`],
    /// in microseconds; None when none was answered.
    pub latency_us: Option<[u64; 4]>,
}

/// The second in which a run's latency took off (see
/// [`LoadResult::latency_knee`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Knee {
    pub second: usize,
    /// Requests due in that second.
    pub offered: usize,
    /// Its median total latency, and the run's early median, in µs.
    pub p50_us: u64,
    pub baseline_us: u64,
}

/// The percentiles kept per second: p50, p90, p99 and the maximum.
pub const INTERVAL_PERCENTILES: [f64; 4] = [50.0, 90.0, 99.0, 100.0];

/// Gathers [`Interval`]s while the answers come in: a small histogram per
/// second of due time (2 significant digits, enough for a chart, about
/// 12 KiB each), added as the answers reach it.
#[derive(Default)]
struct IntervalTally {
    latencies: Vec<Histogram<u32>>,
}

impl IntervalTally {
    /// A request due at `due` (from the start) answered after `latency`.
    fn answered(&mut self, due: Duration, latency: Duration) {
        let second = due.as_secs() as usize;
        while self.latencies.len() <= second {
            self.latencies
                .push(Histogram::new_with_bounds(1, 600_000_000, 2).expect("valid bounds"));
        }
        self.latencies[second].saturating_record(micros(latency));
    }

    /// Adds another tally's answers.
    fn add(&mut self, other: IntervalTally) {
        for (second, histogram) in other.latencies.into_iter().enumerate() {
            match self.latencies.get_mut(second) {
                Some(mine) => mine.add(&histogram).expect("the same bounds"),
                None => self.latencies.push(histogram),
            }
        }
    }

    /// The intervals of the requests due at these offsets (in order): a
    /// second is offered what fell due in it.
    fn finish(self, due: impl IntoIterator<Item = Duration>) -> Vec<Interval> {
        let mut offered: Vec<usize> = Vec::new();
        for at in due {
            let second = at.as_secs() as usize;
            if second >= offered.len() {
                offered.resize(second + 1, 0);
            }
            offered[second] += 1;
        }
        let mut latencies = self.latencies.into_iter();
        offered
            .into_iter()
            .map(|offered| (offered, latencies.next()))
            .map(|(offered, histogram)| Interval {
                offered,
                answered: histogram.as_ref().map_or(0, |h| h.len() as usize),
                latency_us: histogram
                    .filter(|h| !h.is_empty())
                    .map(|h| INTERVAL_PERCENTILES.map(|p| h.value_at_percentile(p))),
            })
            .collect()
    }
}

/// A client's TLS setup: the measuring client's context, where to
/// connect, the server's name and whether its answers are tlslab's
/// generated pages.
#[derive(Clone)]
pub struct Endpoint {
    pub context: std::sync::Arc<dyn ClientContext>,
    pub address: SocketAddr,
    /// Sent as SNI and in the Host header; the server's certificate must
    /// be for it (a host name, or an IP address).
    pub server_name: String,
    /// Compare every body with the plan's page byte for byte (tlslab's
    /// servers and nginx serve it); off, a body is read to its
    /// Content-Length and counted (someone else's server, `--path`).
    pub check_body: bool,
}

/// What the clients did: the requests they started, their latencies and
/// CPU time, and the tally of the requests that finished (each client
/// thread keeps its own, added up when it ends).
struct Driven {
    sent: usize,
    latencies: Latencies,
    client_cpu_ns: u64,
    finished: Finished,
}

impl Driven {
    fn new(start: Instant) -> Self {
        Self {
            sent: 0,
            latencies: Latencies::new(),
            client_cpu_ns: 0,
            finished: Finished::new(start),
        }
    }

    /// Adds another thread's share.
    fn add(&mut self, other: Driven) {
        self.sent += other.sent;
        self.latencies.add(&other.latencies);
        self.client_cpu_ns += other.client_cpu_ns;
        self.finished.add(other.finished);
    }
}

/// The finished requests, tallied as each finishes: a list of their
/// records would be tens of megabytes at a million requests, and making it
/// a visible share of the client's CPU per request.
struct Finished {
    /// The run's time zero.
    start: Instant,
    answered: usize,
    resumed: usize,
    bytes: u64,
    errors: std::collections::BTreeMap<ErrorKind, usize>,
    first_error: std::collections::BTreeMap<ErrorKind, String>,
    /// Answers per second of the run, by when they ended.
    per_second: Vec<usize>,
    intervals: IntervalTally,
}

impl Finished {
    fn new(start: Instant) -> Self {
        Self {
            start,
            answered: 0,
            resumed: 0,
            bytes: 0,
            errors: Default::default(),
            first_error: Default::default(),
            per_second: Vec::new(),
            intervals: IntervalTally::default(),
        }
    }

    fn record(&mut self, done: Done) {
        self.resumed += usize::from(done.resumed);
        match done.result {
            Ok(body) => {
                self.answered += 1;
                self.bytes += body;
                let second = done.end.saturating_duration_since(self.start).as_secs() as usize;
                if second >= self.per_second.len() {
                    self.per_second.resize(second + 1, 0);
                }
                self.per_second[second] += 1;
                self.intervals.answered(
                    done.due.saturating_duration_since(self.start),
                    done.end.saturating_duration_since(done.due),
                );
            }
            Err((kind, message)) => {
                *self.errors.entry(kind).or_default() += 1;
                self.first_error.entry(kind).or_insert(message);
            }
        }
    }

    fn add(&mut self, other: Finished) {
        self.answered += other.answered;
        self.resumed += other.resumed;
        self.bytes += other.bytes;
        for (kind, count) in other.errors {
            *self.errors.entry(kind).or_default() += count;
        }
        for (kind, message) in other.first_error {
            self.first_error.entry(kind).or_insert(message);
        }
        if other.per_second.len() > self.per_second.len() {
            self.per_second.resize(other.per_second.len(), 0);
        }
        for (mine, theirs) in self.per_second.iter_mut().zip(other.per_second) {
            *mine += theirs;
        }
        self.intervals.add(other.intervals);
    }
}

/// One request's record.
struct Done {
    /// When the request was due, and when it ended.
    due: Instant,
    end: Instant,
    /// The request's connection resumed a session.
    resumed: bool,
    result: std::result::Result<u64, (ErrorKind, String)>,
}

/// Runs the plan against `endpoint`, its clients driven by `driver`.
/// Stops when every request started is done: none starts after the plan's
/// end, and one still under way [`GRACE`] after it fails as timed out.
/// Ctrl-C (`interrupt`) stops it at once, keeping what finished.
pub fn run(
    plan: &Plan,
    endpoint: &Endpoint,
    driver: Driver,
    interrupt: &AtomicBool,
) -> Result<LoadResult> {
    let start = Instant::now() + Duration::from_millis(20);
    run_from(plan, endpoint, driver, interrupt, start)
}

/// [`run`] with the plan's time zero at `start` (a shard of a load started
/// on several machines: their common start), so that its seconds are the
/// same wall-clock seconds on every machine.
pub fn run_from(
    plan: &Plan,
    endpoint: &Endpoint,
    driver: Driver,
    interrupt: &AtomicBool,
    start: Instant,
) -> Result<LoadResult> {
    let due = Schedule::new(plan.rate, plan.ramp, plan.duration, plan.max_requests);
    let offered = due.len();
    let stop = Stop {
        end: start + plan.duration,
        deadline: start + plan.duration + GRACE,
        interrupt,
    };
    if driver == Driver::Threads && plan.http == HttpVersion::Http2 {
        anyhow::bail!("HTTP/2 is driven by event loops (its streams share a connection), not by a blocking thread per client");
    }
    let Driven {
        sent,
        latencies,
        client_cpu_ns,
        finished,
    } = match driver {
        Driver::Threads => threads::drive(plan, endpoint, due, start, stop)?,
        Driver::EventLoops(loops) => events::drive(plan, endpoint, due, start, loops, stop)?,
    };
    let elapsed = start.elapsed();
    let mut per_second = finished.per_second;
    // Every second of the run, the last one begun included.
    per_second.resize(elapsed.as_secs() as usize + 1, 0);
    Ok(LoadResult {
        offered,
        sent,
        answered: finished.answered,
        errors: finished.errors.into_iter().collect(),
        first_error: finished.first_error.into_iter().collect(),
        latencies,
        bytes: finished.bytes,
        elapsed,
        client_cpu_ns,
        per_second,
        intervals: finished.intervals.finish((0..sent).map(|i| due.at(i))),
        resumed: finished.resumed,
        interrupted: interrupt.load(Ordering::Relaxed),
    })
}

fn micros(duration: Duration) -> u64 {
    (duration.as_micros() as u64).max(1)
}

/// The request for the plan's page, asking to keep the connection open in
/// keep-alive mode and to close it otherwise.
fn request_head(plan: &Plan, endpoint: &Endpoint) -> String {
    let connection = if plan.mode == Mode::KeepAlive {
        "keep-alive"
    } else {
        "close"
    };
    format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nConnection: {connection}\r\n\r\n",
        plan.path, endpoint.server_name
    )
}

fn kind_of(error: &std::io::Error, otherwise: ErrorKind) -> ErrorKind {
    match error.kind() {
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => ErrorKind::Timeout,
        _ => otherwise,
    }
}

/// The percentiles reported for each phase.
pub const PERCENTILES: [f64; 5] = [50.0, 90.0, 99.0, 99.9, 100.0];

/// A histogram's percentiles in microseconds (None when it is empty).
pub fn percentiles(histogram: &Histogram<u64>) -> Option<Vec<u64>> {
    (!histogram.is_empty()).then(|| {
        PERCENTILES
            .iter()
            .map(|&p| histogram.value_at_percentile(p))
            .collect()
    })
}

/// Checks a plan before anything starts.
pub fn validate(plan: &Plan) -> Result<()> {
    if !(plan.rate.is_finite() && plan.rate > 0.0) {
        anyhow::bail!("--rate must be a positive number of requests per second");
    }
    if plan.ramp > plan.duration {
        anyhow::bail!(
            "--ramp ({:.1} s) is longer than --duration ({:.1} s)",
            plan.ramp.as_secs_f64(),
            plan.duration.as_secs_f64()
        );
    }
    if plan.clients == 0 {
        anyhow::bail!("--clients must be at least 1");
    }
    if plan.max_requests == 0 {
        anyhow::bail!("--max-requests must be at least 1");
    }
    if plan.streams == 0 {
        anyhow::bail!("--streams must be at least 1");
    }
    if plan.streams > 1 && (plan.http != HttpVersion::Http2 || plan.mode != Mode::KeepAlive) {
        anyhow::bail!(
            "--streams {} sends that many requests at once on one HTTP/2 connection: it goes with --http 2 and --mode keepalive (a new connection carries one request)",
            plan.streams
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_constant_rate_is_evenly_spaced() {
        let due = schedule(10.0, Duration::ZERO, Duration::from_secs(2), 1000);
        assert_eq!(due.len(), 20);
        assert_eq!(due[1], Duration::from_millis(100));
        assert_eq!(due[19], Duration::from_millis(1900));
    }

    #[test]
    fn a_ramp_offers_half_as_many_requests_during_it() {
        let due = schedule(
            100.0,
            Duration::from_secs(2),
            Duration::from_secs(4),
            100_000,
        );
        let during = due.iter().filter(|d| d.as_secs_f64() < 2.0).count();
        assert!((99..=101).contains(&during), "{during}");
        assert!((299..=301).contains(&due.len()), "{}", due.len());
        // The gaps shrink during the ramp.
        assert!(due[2] - due[1] > due[90] - due[89]);
    }

    #[test]
    fn the_schedule_counts_exactly_the_requests_due_before_the_end() {
        // Each request's offset worked out in turn until one falls at or
        // after the end: the count the schedule must give without doing so.
        let counted = |rate: f64, ramp: f64, end: f64, max: usize| {
            let schedule = Schedule::new(
                rate,
                Duration::from_secs_f64(ramp),
                Duration::from_secs_f64(end),
                max,
            );
            (0..max)
                .take_while(|&i| schedule.offset_s(i) < end.max(0.0))
                .count()
        };
        for rate in [0.5, 3.0, 7.0, 100.0, 333.3, 1e6] {
            for (ramp, end) in [(0.0, 1.0), (0.0, 2.5), (1.0, 3.0), (3.0, 3.0), (2.0, 1.0)] {
                for max in [0, 1, 10, 1_000_000] {
                    let schedule = Schedule::new(
                        rate,
                        Duration::from_secs_f64(ramp),
                        Duration::from_secs_f64(end),
                        max,
                    );
                    let expected = counted(rate, ramp, end, max);
                    assert_eq!(schedule.len(), expected, "{rate} {ramp} {end} {max}");
                }
            }
        }
    }

    #[test]
    fn the_bound_on_requests_holds() {
        assert_eq!(
            schedule(1e6, Duration::ZERO, Duration::from_secs(60), 50).len(),
            50
        );
    }

    #[test]
    fn bad_plans_are_refused() {
        let plan = Plan {
            rate: 0.0,
            ramp: Duration::ZERO,
            duration: Duration::from_secs(1),
            path: "/".into(),
            body: Vec::new(),
            mode: Mode::NewConnection,
            clients: 1,
            max_requests: 10,
            http: HttpVersion::Http1_1,
            streams: 1,
        };
        assert!(validate(&plan).is_err());
        let plan = Plan {
            rate: 10.0,
            ramp: Duration::from_secs(5),
            ..plan
        };
        assert!(validate(&plan).unwrap_err().to_string().contains("--ramp"));
        let plan = Plan {
            ramp: Duration::ZERO,
            streams: 4,
            ..plan
        };
        assert!(validate(&plan)
            .unwrap_err()
            .to_string()
            .contains("--http 2"));
    }

    #[test]
    fn each_second_keeps_the_latencies_of_the_requests_due_in_it() {
        let due = schedule(4.0, Duration::ZERO, Duration::from_secs(3), 100);
        let mut tally = IntervalTally::default();
        // Second 0: latencies of 1, 2, 3 and 100 ms; second 1: one
        // answer, and late (it ended in second 2); second 2: none.
        for (at, ms) in due[..4].iter().zip([1, 2, 3, 100]) {
            tally.answered(*at, Duration::from_millis(ms));
        }
        tally.answered(due[5], Duration::from_millis(1500));
        let intervals = tally.finish(due.iter().copied());
        assert_eq!(intervals.len(), 3);
        assert_eq!(
            intervals.iter().map(|i| i.offered).collect::<Vec<_>>(),
            [4, 4, 4]
        );
        assert_eq!(intervals[0].answered, 4);
        let [p50, p90, p99, max] = intervals[0].latency_us.unwrap();
        assert!((1_960..=2_040).contains(&p50), "{p50}");
        assert!((98_000..=102_000).contains(&p90), "{p90}");
        assert_eq!(p99, max);
        assert_eq!(intervals[1].answered, 1);
        assert!(intervals[1].latency_us.unwrap()[0] >= 1_490_000);
        assert_eq!(intervals[2].latency_us, None);
    }

    #[test]
    fn latency_takes_off_where_the_median_triples() {
        let second = |offered: usize, p50_ms: u64| Interval {
            offered,
            answered: offered,
            latency_us: Some([p50_ms * 1000, p50_ms * 2000, p50_ms * 3000, p50_ms * 4000]),
        };
        let mut result = LoadResult {
            offered: 0,
            sent: 0,
            answered: 0,
            errors: Vec::new(),
            first_error: Vec::new(),
            latencies: Latencies::new(),
            bytes: 0,
            elapsed: Duration::from_secs(8),
            client_cpu_ns: 0,
            per_second: Vec::new(),
            intervals: [
                (100, 2),
                (200, 2),
                (300, 3),
                (400, 5),
                (500, 9),
                (600, 40),
                (700, 80),
                (800, 90),
            ]
            .map(|(offered, ms)| second(offered, ms))
            .to_vec(),
            resumed: 0,
            interrupted: false,
        };
        let knee = result.latency_knee().unwrap();
        assert_eq!((knee.second, knee.offered), (4, 500));
        assert_eq!(knee.baseline_us, 2_000);
        // Flat latency: no knee.
        for interval in &mut result.intervals {
            interval.latency_us = Some([2_000, 3_000, 4_000, 5_000]);
        }
        assert_eq!(result.latency_knee(), None);
    }
}
