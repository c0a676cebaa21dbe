//! `tlslab load`: its options, the one configuration it connects with,
//! and the servers and connection modes it takes.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::names::{not_memory, over_tcp, NamedParser};
use super::shared::OutputArgs;
use super::values::{self, Seconds, Size};
use crate::scenario::presets::LoadPreset;
use crate::scenario::{
    Aead, BackendId, CertKind, Group, Measure, Resumption, ServerKind, Shard, TlsVersion, WallClock,
};

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  tlslab load --preset apache-study
      (embedded OpenSSL server; perf for the profile)
  tlslab load --preset apache-study --server apache,nginx,embedded
      (one load per server, back to back, one table)
  tlslab load --server apache,nginx,embedded --http 2 --cert rsa2048,ecdsa_p256
      (RSA against ECDSA on each server, server CPU per request as a ratio)
  tlslab load --preset apache-study --measure time,instructions
      (perf's categories beside valgrind's count)
  tlslab load --rate 200 --duration 10 --size 50k
  tlslab load --rate 2000 --mode keepalive --clients 32 --tls 1.3 \\
      --group x25519 --cert ecdsa_p256
  tlslab load --rate 200 --resumption session_id --tls 1.2 --plot charts/
      (each client resumes)
  tlslab load --http 1.1,2 --mode keepalive --streams 8 --rate 2000
      (HTTP/1.1 then HTTP/2 against nginx, side by side)
  tlslab load --target 127.0.0.1:8443 --rate 50 --duration 5
      (a loopback server you run)
  tlslab load --target 127.0.0.1:8443 --probe-only
      (which versions, groups, suites it accepts)
  tlslab load --target HOST:443 --i-have-permission --max-rate 20 --rate 10
      (off loopback)
  tlslab load --server embedded --backend rustls-aws-lc --rate 300 --size 50k
      (counted breakdown)
  tlslab load --server embedded --threads 1 --rate 300
      (the embedded server on one core)
  tlslab load --target HOST:443 --i-have-permission --max-rate 4000 \\
      --rate 2000 --shard 2/4 --start-at 2026-11-28T01:30:00Z --db shard-2.sqlite
      (a quarter of the load from this machine; tlslab merge joins the shards)

Defaults: --rate 100 --ramp 0 --duration 10 --size 1k --mode new --clients 64
(one blocking thread each; in keepalive mode all on one event loop,
--event-loops 1); --tls 1.3 --group x25519 --cert ecdsa_p256
--suite aes-128-gcm --resumption off (with --preset apache-study: 1.2, rsa,
rsa2048, aes-128-cbc-sha, off).
Requests are due at evenly spaced times whatever the server does; each
latency counts from the moment its request was due (queueing included).")]
pub struct LoadArgs {
    /// A named study. Options given beside it override it.
    #[arg(long, value_name = "NAME")]
    pub preset: Option<LoadPreset>,

    #[command(flatten)]
    pub axes: LoadAxisArgs,

    /// Requests per second once the ramp is over.
    #[arg(long, value_name = "REQ/S", allow_negative_numbers = true)]
    pub rate: Option<f64>,

    /// How long the rate rises linearly from zero: seconds, or with a unit
    /// (500ms, 4s, 2m).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub ramp: Option<Seconds>,

    /// How long the whole run lasts, ramp included: seconds, or with a unit
    /// (500ms, 4s, 2m).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub duration: Option<Seconds>,

    /// Page size: bytes, or with k/m (10^3, 10^6), e.g. 50k; at most 100m.
    #[arg(long, value_name = "BYTES")]
    pub size: Option<Size>,

    /// new (a new connection per request: a full handshake, or a resumed
    /// one with --resumption) or keepalive (each client keeps its
    /// connection). `--mode resume` is an old name of --resumption with the
    /// version's usual mode (psk on TLS 1.3, session_id on TLS 1.2).
    #[arg(
        long,
        value_enum,
        value_name = "MODE",
        ignore_case = true,
        hide_possible_values = true
    )]
    pub mode: Option<LoadMode>,

    /// Clients: connections with one request at a time each (a due request
    /// waits for a free one, and that wait counts). At most 1024 with a
    /// blocking thread each; more with --event-loops.
    #[arg(long, value_name = "N", value_parser = values::at_least_one)]
    pub clients: Option<usize>,

    /// Drive the clients from N threads (at most 256), each an epoll loop
    /// over nonblocking connections; 0 gives each client a blocking thread
    /// of its own. [default: 1 in keepalive mode, else 0]
    #[arg(long, value_name = "N", value_parser = values::event_loops_or_none)]
    pub event_loops: Option<usize>,

    /// HTTP versions: 1.1 (ALPN http/1.1) and 2 (ALPN h2, framed by
    /// nghttp2), e.g. 1.1,2: one load each, back to back against the same
    /// server, side by side. HTTP/2 runs on event loops. [default: 1.1]
    #[arg(long, value_enum, value_name = "LIST", value_delimiter = ',')]
    pub http: Option<Vec<LoadHttp>>,

    /// HTTP/2 in keepalive mode: the requests each connection carries at
    /// once, as streams (h2load's -m). [default: 1]
    #[arg(long, value_name = "N", value_parser = values::at_least_one)]
    pub streams: Option<usize>,

    /// At most this many requests, whatever rate and duration say. [default: 1000000]
    #[arg(long, value_name = "N", value_parser = values::at_least_one)]
    pub max_requests: Option<usize>,

    // The help names the registered servers: cli::registries::load_server.
    #[arg(long, value_name = "LIST", value_delimiter = ',', help = super::registries::load_server())]
    pub server: Option<Vec<ServerKind>>,

    /// The embedded server's TLS backend (rustls counts its crypto per
    /// category). [default: rustls-aws-lc; openssl with --preset]
    #[arg(long, value_name = "BACKEND")]
    pub backend: Option<BackendId>,

    /// The backend whose client offers the load (the measuring client):
    /// only a backend that can be that client is accepted. [default: openssl]
    #[arg(long, value_name = "BACKEND")]
    pub client_backend: Option<BackendId>,

    /// The embedded server's worker threads, each an event loop serving
    /// many connections: the cores its handshakes can use (`--workers` is
    /// an old name of it); at most 256. [default: every core]
    #[arg(long, alias = "workers", value_name = "N", value_parser = values::event_loops)]
    pub threads: Option<usize>,

    /// A server you run, HOST:PORT or https://HOST[:PORT]/PATH (the URL's
    /// path is the page, as with --path), instead of nginx: client-side figures
    /// only (its CPU is not known to tlslab). It is probed first (which
    /// versions, groups and suites it accepts). Without --path it must serve
    /// /page_SIZE with tlslab's generated content (as `tlslab serve` does);
    /// with --path any page. Its certificate is checked against the
    /// system's roots and tlslab's test root (or --ca-file) for
    /// --server-name. Off loopback it needs --i-have-permission and --max-rate.
    #[arg(long, value_name = "HOST:PORT|URL", conflicts_with = "server")]
    pub target: Option<String>,

    /// With --target: the path to request (e.g. /index.html). Each answer
    /// is read to its Content-Length and counted, not compared with
    /// tlslab's generated page. [default: /page_SIZE, compared byte for byte]
    #[arg(long, value_name = "PATH", requires = "target")]
    pub path: Option<String>,

    /// With --target: the server's name, sent as SNI and in the Host header;
    /// its certificate must be for it. [default: the target's host name, or
    /// tlslab.test (the test chain's name) when the target is an address]
    #[arg(long, value_name = "NAME", requires = "target")]
    pub server_name: Option<String>,

    /// With --target: trust only the certificates in this PEM file.
    /// [default: the system's roots and tlslab's test root]
    #[arg(long, value_name = "PEM", requires = "target")]
    pub ca_file: Option<PathBuf>,

    /// Your consent: you run the --target server or may load it. Required
    /// (with --max-rate) before tlslab sends anything to a target off loopback.
    #[arg(long)]
    pub i_have_permission: bool,

    /// A cap on the offered requests per second (a higher --rate is
    /// refused) and, off loopback, on the probe's handshakes per second.
    /// Required for a --target off loopback.
    #[arg(long, value_name = "REQ/S", allow_negative_numbers = true, value_parser = values::positive_number)]
    pub max_rate: Option<f64>,

    /// With --target: probe what the server accepts, print it, and stop.
    #[arg(long, requires = "target", conflicts_with = "no_probe")]
    pub probe_only: bool,

    /// With --target: load without probing first.
    #[arg(long, requires = "target")]
    pub no_probe: bool,

    /// Profile the server with perf during the run (per shared object):
    /// nginx's worker, or the embedded server's worker threads.
    /// [default: on with --preset, else off]
    #[arg(long, conflicts_with = "target")]
    pub perf: bool,

    /// What to measure: time (the load: latencies, rates, each side's CPU),
    /// and with time,instructions also one server handshake of the same
    /// scenario counted under valgrind after the load, per category,
    /// beside perf's categories (the embedded server's backend, or
    /// tlslab's OpenSSL for nginx). [default: time]
    #[arg(
        long,
        value_parser = NamedParser::listing(not_memory),
        value_name = "LIST",
        value_delimiter = ','
    )]
    pub measure: Option<Vec<Measure>>,

    /// Offer shard I of N of the load (1 <= I <= N) from this machine:
    /// 1/N of --rate, of --clients and of --max-requests, from the common
    /// --start-at, so N machines drive one server; `tlslab merge` joins
    /// their databases into one run (latency percentiles from every request).
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,

    /// With --shard: when the load starts on every machine, RFC 3339
    /// (2026-11-28T01:30:00Z) or seconds since the Unix epoch; a time
    /// already passed exits 2 with nothing sent. [default: $TLSLAB_START_AT,
    /// which the job recipes in deploy/ set]
    #[arg(long, value_name = "TIME", requires = "shard")]
    pub start_at: Option<WallClock>,

    /// Where generated certificate chains are cached. [default: the user's cache directory]
    #[arg(long, value_name = "DIR")]
    pub cert_dir: Option<PathBuf>,

    #[command(flatten)]
    pub output: OutputArgs,

    /// Do not print progress.
    #[arg(long, short)]
    pub quiet: bool,
}

/// The one configuration `load` connects with: each option takes one
/// value, replacing the preset's (HTTP/1.1 runs over TLS on TCP; DTLS is
/// measured by `handshake`).
#[derive(Debug, Clone, Args)]
pub struct LoadAxisArgs {
    /// Protocol version. [default: 1.3; the preset's]
    #[arg(long, value_parser = NamedParser::listing(over_tcp), value_name = "VERSION")]
    pub tls: Option<TlsVersion>,

    /// Key exchange: rsa (key transport) and the dhe groups are TLS 1.2's, the
    /// ffdhe groups TLS 1.3's. [default: x25519; the preset's]
    #[arg(long, value_name = "GROUP")]
    pub group: Option<Group>,

    /// Certificate key types, comma-separated: several are loaded one
    /// after another on each server (started with each in turn), each load
    /// stored as a run of its own, side by side in one table with each
    /// one's server CPU per request against the first's.
    /// [default: ecdsa_p256; the preset's]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub cert: Option<Vec<CertKind>>,

    /// Bulk cipher. The CBC ones are TLS 1.2's: aes-256-cbc-sha384 with ECDHE,
    /// the others with RSA and DHE. [default: aes-128-gcm; the preset's]
    #[arg(long, value_name = "SUITE")]
    pub suite: Option<Aead>,

    /// Resumption: off (every connection a full handshake), or each client's
    /// first connection is a full handshake and each later one resumes the
    /// session of its previous one (a new connection per request); session_id
    /// and ticket are TLS 1.2's, psk TLS 1.3's. [default: off]
    #[arg(long, value_name = "MODE")]
    pub resumption: Option<Resumption>,

    /// Certificates in the chain, root to leaf inclusive (3 = root,
    /// intermediate, leaf). [default: 3]
    #[arg(long, value_name = "N", value_parser = values::chain_depth)]
    pub chain_depth: Option<u8>,
}

/// An HTTP version `load` speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum LoadHttp {
    /// HTTP/1.1, ALPN http/1.1.
    #[value(name = "1.1")]
    Http1_1,
    /// HTTP/2, ALPN h2.
    #[value(name = "2")]
    Http2,
}

/// How `load` uses its connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LoadMode {
    /// A new connection per request.
    New,
    /// Each client keeps its connection.
    Keepalive,
    /// The old name of --resumption with the version's usual mode.
    #[value(hide = true)]
    Resume,
}
