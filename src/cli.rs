//! The command line: one subcommand per capability. Only clap types live
//! here, and the vocabulary of named values they parse: this file imports
//! `crate::scenario` (the axes' names, presets, shards) and nothing else of
//! the crate, and `app` turns these options into runs.
//!
//! Why the vocabulary: an option whose value is a name (`--group x25519`)
//! or a number with a unit (`--size 16k`, `--max-time 500ms`) is parsed
//! and checked here, so a bad value is refused by clap with the valid
//! names (exit 2) before any command runs, and shell completions offer
//! the names (`tlslab completions bash`). The names themselves live in
//! one place, `scenario`, which imports no backend and nothing above it.
//! What stays text, and why, is said at each such option: backend lists
//! (the registry's ids live in `backend`, with `all`), addresses, paths,
//! row labels and stored-run specs.

use std::fmt;
use std::marker::PhantomData;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use clap::builder::{PossibleValue, TypedValueParser, ValueParserFactory};
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::{Deserialize, Serialize};

use crate::scenario::bulk::BulkPreset;
use crate::scenario::names::{parse_name, Named};
use crate::scenario::network::{parse_profiles, NetworkProfile};
use crate::scenario::presets::{CostPreset, LoadPreset, Preset, TunnelPreset};
use crate::scenario::speed::Primitive;
use crate::scenario::tunnel::EngineId;
use crate::scenario::tunnel_axes::{Cipher, Compression, Digest, Payload};
use crate::scenario::{
    Aead, CertKind, CpuFeatures, Group, Measure, Resumption, Shard, TlsVersion, Transport,
};

/// A span of time on the command line: plain seconds (`1.5`) or a number
/// with a unit, `ms`, `s`, `m` or `h` (`500ms`, `4s`, `2m`), as wrk, oha
/// and k6 take them. Never negative, NaN or infinite; whether zero is
/// allowed is the option's to say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Seconds(Duration);

impl Seconds {
    pub fn duration(self) -> Duration {
        self.0
    }

    pub fn as_secs_f64(self) -> f64 {
        self.0.as_secs_f64()
    }
}

impl FromStr for Seconds {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let trimmed = text.trim();
        let (number, seconds_per_unit) = [("ms", 0.001), ("s", 1.0), ("m", 60.0), ("h", 3600.0)]
            .iter()
            .find_map(|&(unit, scale)| {
                trimmed
                    .strip_suffix(unit)
                    .filter(|rest| rest.ends_with(|c: char| c.is_ascii_digit() || c == '.'))
                    .map(|rest| (rest, scale))
            })
            .unwrap_or((trimmed, 1.0));
        let invalid = || {
            format!(
                "'{text}' is not a duration: give seconds (1.5) or a number with a unit (500ms, 4s, 2m, 1h)"
            )
        };
        // Only plain decimals: "inf", "NaN" and "1e3" are not durations a person types.
        if !plain_decimal(number) {
            return Err(invalid());
        }
        let value: f64 = number.parse().map_err(|_| invalid())?;
        if value < 0.0 {
            return Err(format!("'{text}': a duration cannot be negative"));
        }
        Duration::try_from_secs_f64(value * seconds_per_unit)
            .map(Seconds)
            .map_err(|_| format!("'{text}' is too long a duration"))
    }
}

/// Plain seconds ("0.2"), which parse back to the same value.
impl fmt::Display for Seconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.as_secs_f64())
    }
}

/// Returns true if and only if `number` is a plain decimal a person types
/// (digits, a point, a sign): "inf", "NaN" and "1e3" are not.
fn plain_decimal(number: &str) -> bool {
    !number.is_empty()
        && number
            .chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == '-' || c == '+')
}

/// A share on the command line, in percent: "1%", "0.5%" or "1" (one
/// percent). Never negative, NaN or infinite; the bounds (whether zero or
/// 100% and more make sense) are the option's to say.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Percent(f64);

impl Percent {
    /// A share of `percent` percent.
    pub const fn new(percent: f64) -> Self {
        Self(percent)
    }

    /// The share in percent (1.0 is 1%).
    pub fn percent(self) -> f64 {
        self.0
    }

    /// The share as a fraction (1% is 0.01).
    pub fn fraction(self) -> f64 {
        self.0 / 100.0
    }
}

impl FromStr for Percent {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let number = text.trim();
        let number = number.strip_suffix('%').unwrap_or(number).trim();
        let invalid = || format!("'{text}' is not a percentage: give one such as 1% or 0.5%");
        if !plain_decimal(number) {
            return Err(invalid());
        }
        let percent: f64 = number.parse().map_err(|_| invalid())?;
        if percent < 0.0 {
            return Err(format!("'{text}': a percentage cannot be negative"));
        }
        Ok(Self(percent))
    }
}

/// "1%", "0.5%": what parses back to the same share.
impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", self.0)
    }
}

/// A number of bytes on the command line: plain (1400) or with k or m
/// (50k is 50,000 bytes, 1m is 1,000,000). Whether zero is allowed and
/// how large a size may be is the option's to say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Size(usize);

impl Size {
    /// A size of `bytes` bytes.
    pub const fn from_bytes(bytes: usize) -> Self {
        Self(bytes)
    }

    pub fn bytes(self) -> usize {
        self.0
    }
}

impl FromStr for Size {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        const FORM: &str = "give bytes (1400) or a number with k or m (50k, 1m)";
        let lower = text.trim().to_ascii_lowercase();
        if lower.is_empty() {
            return Err(format!("an empty size: {FORM}"));
        }
        let (digits, bytes_per_unit) = match (lower.strip_suffix('k'), lower.strip_suffix('m')) {
            (Some(digits), _) => (digits, 1_000),
            (_, Some(digits)) => (digits, 1_000_000),
            _ => (lower.as_str(), 1),
        };
        if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
            return Err(format!("'{text}' is not a size: {FORM}"));
        }
        digits
            .parse::<usize>()
            .ok()
            .and_then(|value| value.checked_mul(bytes_per_unit))
            .map(Self)
            .ok_or_else(|| format!("'{text}' is too large a size"))
    }
}

/// Plain bytes ("50000"), which parse back to the same size.
impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The option an argument is, as a person types it ("--group").
fn option_name(arg: Option<&clap::Arg>) -> String {
    arg.and_then(|arg| arg.get_long())
        .map_or_else(|| "the option".to_string(), |long| format!("--{long}"))
}

/// One name of `T` as typed for `option`: an empty value and a list where
/// one value goes are refused saying so, an unknown name listing the valid ones.
fn one_name<T: Named>(option: &str, text: &str) -> Result<T, String> {
    let valid = || {
        T::ALL
            .iter()
            .map(|value| value.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if text.trim().is_empty() {
        return Err(format!("an empty value; valid {}s: {}", T::KIND, valid()));
    }
    // A list option is split at its commas before its values come here.
    if text.contains(',') {
        return Err(format!(
            "{option} takes one value, not a list; valid {}s: {}",
            T::KIND,
            valid()
        ));
    }
    parse_name(text).map_err(|error| error.to_string())
}

/// The possible values clap completes for `T`: each value's name, and its
/// id and aliases hidden (accepted, neither listed nor completed).
fn possible_names<T: Named>() -> impl Iterator<Item = PossibleValue> {
    T::ALL.iter().flat_map(|value| {
        let name = value.name();
        let hidden = std::iter::once(value.id())
            .filter(move |id| *id != name)
            .chain(value.aliases().iter().copied())
            .map(|other| PossibleValue::new(other).hide(true));
        std::iter::once(PossibleValue::new(name)).chain(hidden)
    })
}

/// The clap value parser of a named value of the vocabulary ([`Named`]):
/// any of its spellings (case, `-` and `_` aside, aliases too) as
/// `scenario::parse_name` takes them; a bad one is refused with the valid
/// names (exit 2). Its names are clap's possible values, so the shells
/// complete them.
pub struct NamedParser<T>(PhantomData<fn() -> T>);

impl<T> NamedParser<T> {
    pub fn new() -> Self {
        Self(PhantomData)
    }
}

impl<T> Default for NamedParser<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for NamedParser<T> {
    fn clone(&self) -> Self {
        Self::new()
    }
}

impl<T: Named + Send + Sync> TypedValueParser for NamedParser<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        let option = option_name(arg);
        // clap's own wrapping: "invalid value 'x' for '--group <LIST>': ...".
        let parse = move |text: &str| one_name::<T>(&option, text);
        parse.parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(possible_names::<T>()))
    }
}

/// Names the value parser of each named type of the vocabulary, so a field
/// of that type (or a list of it) needs no `value_parser` of its own.
macro_rules! named_values {
    ($($named:ty),* $(,)?) => {$(
        impl ValueParserFactory for $named {
            type Parser = NamedParser<$named>;

            fn value_parser() -> Self::Parser {
                NamedParser::new()
            }
        }
    )*};
}

named_values!(
    TlsVersion,
    Group,
    CertKind,
    Aead,
    Resumption,
    Transport,
    Measure,
    CpuFeatures,
    Preset,
    BulkPreset,
    CostPreset,
    TunnelPreset,
    LoadPreset,
    Cipher,
    Digest,
    Compression,
    Payload,
    EngineId,
    Primitive,
    crate::scenario::ServerKind,
);

/// One item of `speed --algorithm`: every algorithm, or one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    All,
    One(Primitive),
}

/// `all`, else an algorithm's name.
#[derive(Clone, Default)]
pub struct AlgorithmParser;

impl TypedValueParser for AlgorithmParser {
    type Value = Algorithm;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Algorithm, clap::Error> {
        let option = option_name(arg);
        let parse = move |text: &str| {
            if text.trim().eq_ignore_ascii_case("all") {
                Ok(Algorithm::All)
            } else {
                one_name::<Primitive>(&option, text).map(Algorithm::One)
            }
        };
        parse.parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            std::iter::once(PossibleValue::new("all")).chain(possible_names::<Primitive>()),
        ))
    }
}

impl ValueParserFactory for Algorithm {
    type Parser = AlgorithmParser;

    fn value_parser() -> AlgorithmParser {
        AlgorithmParser
    }
}

/// `all` as the one item serialised, else the algorithm's id.
impl Serialize for Algorithm {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Algorithm::All => serializer.serialize_str("all"),
            Algorithm::One(primitive) => primitive.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Algorithm {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        if name == "all" {
            return Ok(Algorithm::All);
        }
        parse_name(&name)
            .map(Algorithm::One)
            .map_err(serde::de::Error::custom)
    }
}

/// Measure what the cryptography of TLS costs on this machine: each key
/// exchange, certificate and cipher suite, on the server and on the client.
#[derive(Debug, Parser)]
#[command(name = "tlslab", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Measure full or resumed handshakes per key exchange, certificate and
    /// suite: client and server in one process over memory buffers, or over
    /// TCP or UDP on loopback (--transport), against nginx (--server), over
    /// an emulated link (--link) or with `tlslab serve` on another host (--remote).
    Handshake(Box<HandshakeArgs>),
    /// Measure the cost of protecting application data after the handshake,
    /// per backend, protocol, suite and write size, each side apart, against
    /// a no-crypto row.
    Bulk(Box<BulkArgs>),
    /// Measure primitive rates per backend: signatures, key exchange, KEMs,
    /// ciphers, hashes and MACs (ops/s, µs/op, MB/s).
    Speed(Box<SpeedArgs>),
    /// Model each side's CPU per handshake from counted operations and
    /// primitive costs, beside the measured cost; --breakdown shows where it goes.
    Cost(Box<CostArgs>),
    /// List the backends, their library versions and what each supports, and the presets.
    List,
    /// Show a stored run again, as a table or an export; --list lists the stored runs.
    Report(ReportArgs),
    /// Load an HTTPS server (nginx or tlslab's embedded server, started on
    /// loopback, or one you run) at a planned request rate; latency percentiles per phase from each
    /// request's due time, the server's CPU per request and where it goes.
    Load(Box<LoadArgs>),
    /// Run tlslab's own HTTPS server (HTTP/1.1, pages /page_SIZE) on one
    /// backend and scenario until --duration or Ctrl-C; then report its
    /// CPU per request and per handshake and, on rustls, where it went.
    Serve(Box<ServeArgs>),
    /// Compare two stored runs of one kind row by row: both medians, their
    /// ratio with a 95% interval and a verdict; exit status 1 when a row is
    /// slower beyond --threshold.
    Compare(CompareArgs),
    /// Measure a VPN data channel per cipher, digest, compression, payload
    /// and packet size: in process, or through a real OpenVPN tunnel.
    Tunnel(Box<TunnelArgs>),
    /// Combine result databases (e.g. the shards of a matrix run on several
    /// machines) into one, each run once with its own host record.
    Merge(MergeArgs),
    /// From a stored run, the configurations not beaten on both cost and
    /// security (the Pareto set) above a security floor, and why every
    /// other row is out.
    Recommend(RecommendArgs),
    /// Print a shell completion script on standard output: bash, zsh, fish,
    /// powershell or elvish.
    Completions(CompletionsArgs),
    /// Print the manual page (roff) on standard output: tlslab's, or one
    /// command's (`tlslab man handshake`).
    Man(ManArgs),
    /// Internal: count a plan's handshakes under callgrind (tlslab runs
    /// itself so for `--measure instructions`).
    #[command(name = "counted-child", hide = true)]
    CountedChild(CountedChildArgs),
    /// Internal: run a command again with the libraries' CPU features
    /// masked (tlslab runs itself so for `--cpu-features generic`).
    #[command(name = "generic-child", hide = true)]
    GenericChild(GenericChildArgs),
}

/// What a run measures: time, or counts that hold on any machine.
#[derive(Debug, Clone, Default, Args, Serialize, Deserialize)]
pub struct MeasureArgs {
    /// What to measure, comma-separated: time (CPU and wall time per side,
    /// sampled in interleaved rounds), instructions (executed per side,
    /// counted under valgrind's callgrind, which tlslab runs itself under:
    /// the same on any machine and beside any neighbour), memory (heap bytes
    /// per side: the peak during a handshake and what the established
    /// connection keeps, every allocation counted). Counted measures take
    /// --runs samples per cell (default 6), one core each. [default: time]
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true
    )]
    pub measure: Option<Vec<Measure>>,

    /// With --measure instructions: where each side's instructions go, per
    /// category (public key, hashing and KDF, symmetric ciphers, random
    /// numbers, certificates and ASN.1, TLS state machine, library
    /// plumbing, memory and libc, tlslab, other), from valgrind's count of
    /// every function.
    #[arg(long)]
    pub breakdown: bool,
}

/// The files of a counted child: its plan, and where its outcomes go.
#[derive(Debug, Clone, Args)]
pub struct CountedChildArgs {
    pub plan: PathBuf,
    pub out: PathBuf,
}

/// The file of a generic-CPU child: its plan ([`GenericPlan`], as JSON).
#[derive(Debug, Clone, Args)]
pub struct GenericChildArgs {
    pub plan: PathBuf,
}

/// What a generic-CPU child runs: the parent's own parsed arguments,
/// changed only where the child must differ (its CPU features, its
/// database, no exports, quiet, the backends whose CPU features can be
/// masked), so every option reaches the child as the parent parsed it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GenericPlan {
    Handshake(Box<HandshakeArgs>),
    Speed(Box<SpeedArgs>),
}

/// Whether handshakes authenticate the client too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MutualArg {
    Off,
    On,
    Both,
}

/// The link `handshake --link` measures over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Link {
    /// tlslab's own link between two network namespaces, over TUN devices.
    Tun,
    /// The kernel's netem: not built (refused saying why, and what to use).
    #[value(hide = true)]
    Netem,
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

/// `--network`'s profiles: named ones and custom `key=value` fields, in
/// their own grammar (a comma also separates the fields of one profile;
/// see `scenario::network`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NetworkProfiles(pub Vec<NetworkProfile>);

impl FromStr for NetworkProfiles {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        parse_profiles(text).map(Self).map_err(|error| error.0)
    }
}

/// What `recommend` prices a row for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Role {
    /// The server's CPU (or instructions) per handshake.
    Server,
    /// The client's CPU (or instructions) per handshake.
    Client,
    /// Both tunnel ends' CPU per megabyte of payload.
    Tunnel,
    /// Both sides' CPU per megabyte of application data.
    Bulk,
}

impl Role {
    /// The role's name, as typed.
    pub fn name(self) -> &'static str {
        match self {
            Role::Server => "server",
            Role::Client => "client",
            Role::Tunnel => "tunnel",
            Role::Bulk => "bulk",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, Args, Serialize, Deserialize)]
#[command(after_help = "Examples:
  tlslab handshake --preset kex-matrix
  tlslab handshake --preset kex-matrix --server nginx   (nginx installed)
  tlslab handshake --tls 1.3 --group x25519,p256,x25519mlkem768 --cert rsa2048,ecdsa_p256,ed25519,mldsa65
  tlslab handshake --backend all --tls 1.2,1.3 --group x25519 --cert ecdsa_p256 --resumption off,ticket,psk
  tlslab handshake --preset dtls-study --cpu-features native,generic
  tlslab handshake --backend openssl --tls 1.2,dtls1.2 --group p256 --cert ecdsa_p256 --mtu 576
  tlslab handshake --tls 1.2,1.3,dtls1.2 --group p256 --cert ecdsa_p256 --transport memory,tcp,udp
  tlslab handshake --capacity --tls 1.3 --group x25519,p256 --cert rsa2048,ecdsa_p256 --threads 4
  tlslab handshake --tls 1.2,1.3 --group x25519,x25519mlkem768 --cert ecdsa_p256,mldsa65 --wire --network wan,mobile
  tlslab handshake --preset pq-network   (as root: measured over tlslab's emulated link too)
  tlslab handshake --remote 192.168.1.20:8444 --preset kex-matrix   (tlslab serve --handshakes there)
  tlslab list   (every valid name)

Sampling defaults: --precision 1% --max-time 5 --min-samples 10 --warmup 0.2;
with --preset also --max-total-time: kex-matrix 24, tls13-matrix 48, post-quantum 60, dtls-study 30,
pq-network 40 (then 8 handshakes per row and profile over the link)
(about twice their time on a quiet 2-core machine); with --capacity --max-time 2 per thread
count and --warmup 0.2, and --max-total-time stops the run after the step it is in")]
pub struct HandshakeArgs {
    /// A named matrix: kex-matrix, tls13-matrix, post-quantum, dtls-study,
    /// pq-network (post-quantum over --network wan,mobile,satellite, --link
    /// tun where it can be built). Axis options override its axes;
    /// dtls-study's DTLS 1.3 rows on dimpl come only without --backend and --tls.
    #[arg(long, value_name = "NAME", hide_possible_values = true)]
    pub preset: Option<Preset>,

    /// Backends, comma-separated: openssl, rustls-aws-lc, rustls-ring, dimpl, or all.
    /// [default: the preset's, or all]
    // Text: `all` and the registry's ids, which live in backend/, not the vocabulary.
    #[arg(long, value_name = "LIST")]
    pub backend: Option<String>,

    /// The server: embedded (tlslab's own, also called inprocess: client
    /// and server in one process, over memory) or nginx (Debian's nginx
    /// started on loopback per row, tlslab's OpenSSL as the client over TCP;
    /// the server's CPU is its worker's). [default: embedded]
    #[arg(long, value_name = "SERVER", hide_possible_values = true)]
    pub server: Option<crate::scenario::ServerKind>,

    /// Handshake with tlslab's server on another host instead of in this
    /// process: `tlslab serve --handshakes` running there, at HOST:PORT. It
    /// reports its CPU per handshake, so both sides' columns are filled;
    /// TLS runs over TCP, DTLS over UDP, and the client's time runs from
    /// its connect().
    #[arg(long, value_name = "HOST:PORT", conflicts_with_all = ["server", "transport", "link"])]
    pub remote: Option<String>,

    #[command(flatten)]
    pub axes: AxisArgs,

    /// What carries the handshakes: memory (both sides in one thread; the
    /// library alone), tcp (TLS) or udp (DTLS) over loopback, each side in
    /// its own thread, its CPU time including the kernel's socket work.
    /// A list runs each row over each (TLS over tcp, DTLS over udp when
    /// both are given); rows are labelled `_tcp`, `_udp`. [default: memory]
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true
    )]
    pub transport: Option<Vec<Transport>>,

    /// Mutual TLS: the client presents a certificate too. [default: off]
    #[arg(long, value_enum, value_name = "MODE")]
    pub mutual: Option<MutualArg>,

    /// Also print the handshake on the wire: bytes and records each side
    /// sent, flights, round trips until each side can send application
    /// data, TCP segments at the MSS or DTLS datagrams and fragments at
    /// the MTU. The exports carry these figures always.
    #[arg(long)]
    pub wire: bool,

    /// Network profiles, comma-separated: lan (1 ms, 1 Gbit/s), wan (50 ms,
    /// 20 Mbit/s), mobile (100 ms, 5 Mbit/s, 1% loss), satellite (600 ms),
    /// or custom key=value fields, e.g. rtt=50ms,rate=20mbit,loss=0.5%,initcwnd=10
    /// (a key given again starts another profile). Per row and profile,
    /// the model's time from connect() until the client can send
    /// application data, from the row's bytes, flights and measured CPU.
    #[arg(long, value_name = "LIST")]
    pub network: Option<NetworkProfiles>,

    /// With --network: measure each row over each profile on a link as
    /// well: tun (tlslab's own link between two network namespaces, over
    /// TUN devices; root). TLS over TCP, DTLS over UDP; the server is a
    /// tlslab process in the far namespace that reports its CPU.
    #[arg(
        long,
        value_enum,
        value_name = "KIND",
        ignore_case = true,
        hide_possible_values = true
    )]
    pub link: Option<Link>,

    /// Server capacity on several cores: per row, 1, 2, ... --threads
    /// threads at once, each doing complete verified in-memory handshakes
    /// for --max-time seconds (default 2, in four slices taken in turn with
    /// the other thread counts, each after --warmup); new handshakes
    /// per second, the server's CPU per handshake and the capacity it
    /// implies, beside `cost`'s one-core model times the threads.
    #[arg(long, conflicts_with_all = ["server", "transport", "cpu_features", "baseline", "shard", "precision", "min_samples", "runs", "seed", "network", "wire", "remote"])]
    pub capacity: bool,

    /// With --capacity: the most threads at once (rows from 1 to N).
    /// [default: every core]
    #[arg(long, value_name = "N", requires = "capacity")]
    pub threads: Option<usize>,

    /// With hardware acceleration (native) and without it (generic: the
    /// matrix again in a child process with OpenSSL's and aws-lc's CPU
    /// capability mask cleared; its rows are "<backend> (generic)").
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true,
        default_value = "native"
    )]
    pub cpu_features: Vec<CpuFeatures>,

    #[command(flatten)]
    pub measures: MeasureArgs,

    #[command(flatten)]
    pub sampling: SamplingArgs,

    #[command(flatten)]
    pub shard: ShardArgs,

    /// The row other rows are compared with, by label (see the JSON export or
    /// `tlslab report`). [default: the preset's baseline, or the first row]
    // Text: a row's label, checked against the matrix once it is planned.
    #[arg(long, value_name = "LABEL")]
    pub baseline: Option<String>,

    #[command(flatten)]
    pub database: DatabaseArgs,

    #[command(flatten)]
    pub exports: ExportArgs,

    #[command(flatten)]
    pub display: DisplayArgs,

    /// Where generated certificate chains are cached. [default: the user's cache directory]
    #[arg(long, value_name = "DIR")]
    pub cert_dir: Option<PathBuf>,

    /// Do not print the progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  tlslab bulk
  tlslab bulk --preset dtls-study
  tlslab bulk --backend openssl --tls 1.2,1.3 --suite aes-128-gcm,chacha20-poly1305 --size 64,1024,16384
  tlslab bulk --size 16384 --suite aes-128-gcm --export-markdown bulk.md
  tlslab bulk --size 16384 --suite aes-128-gcm --transport memory,tcp
  tlslab bulk --backend openssl,dimpl --tls dtls1.2 --suite aes-128-gcm --transport memory,udp

Each row: a TLS or DTLS connection (X25519 key exchange, ECDSA P-256
certificate; the handshake is not counted) sends a fixed amount of data per
sample (sized by a first sample to about 2 ms of CPU, 16 KiB to 4 MiB) from
the client to the server; each side's calls are timed by the thread's CPU
clock and every byte is checked. DTLS writes are cut into records that fit
one datagram of the 1400-byte MTU.
Per write size a no-crypto row moves the same writes through the same pipe
(for DTLS rows, in datagrams).

Sampling defaults: --precision 2% --max-time 1 --min-samples 10 --warmup 0.05
(each sample lasts about 1-3 ms); with --preset dtls-study also
--max-total-time 40")]
pub struct BulkArgs {
    /// A named study: dtls-study (DTLS 1.2 and TLS 1.2 on OpenSSL: AES-128-CBC+HMAC,
    /// AES-128-GCM, ChaCha20-Poly1305; DTLS 1.2 and 1.3 on dimpl: the two AEADs;
    /// 1 KiB and 16 KiB writes). Axis options override it; with --backend or --tls
    /// it is its OpenSSL matrix crossed with the backends named.
    #[arg(long, value_name = "NAME", hide_possible_values = true)]
    pub preset: Option<BulkPreset>,

    /// Backends, comma-separated: openssl, rustls-aws-lc, rustls-ring, dimpl, or all.
    /// [default: the preset's, or all]
    #[arg(long, value_name = "LIST")]
    pub backend: Option<String>,

    /// Protocol versions: 1.2, 1.3, dtls1.2 (OpenSSL, dimpl), dtls1.3 (dimpl).
    /// [default: 1.3]
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true
    )]
    pub tls: Option<Vec<TlsVersion>>,

    /// Suites (bulk ciphers): aes-128-gcm, aes-256-gcm, chacha20-poly1305,
    /// aes-128-cbc-sha256 (AES-128-CBC with HMAC-SHA256: TLS 1.2, OpenSSL).
    /// [default: aes-128-gcm,aes-256-gcm,chacha20-poly1305]
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true
    )]
    pub suite: Option<Vec<Aead>>,

    /// Bytes per application write (or with k: 16k is 16,000), from 1 to
    /// 1048576; a list is a size sweep. [default: 64,1024,16384]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub size: Option<Vec<Size>>,

    /// Application bytes per sample, for every row. [default: per row, about
    /// 2 ms of both sides' CPU time, from 16 KiB to 4 MiB]
    #[arg(long, value_name = "BYTES")]
    pub bytes_per_sample: Option<usize>,

    /// Leave out the no-crypto rows, the baseline of "× no crypto"
    /// (`--no-plain-row` is an old name of it).
    #[arg(long, alias = "no-plain-row")]
    pub no_baseline_row: bool,

    /// What carries the data: memory (sender and receiver in one thread), tcp
    /// (TLS) or udp (DTLS): a loopback socket, sender and receiver in two
    /// threads, each side's CPU time including the kernel's socket work; a
    /// list runs each row over each; rows over a socket are labelled `_tcp`
    /// or `_udp`. [default: memory]
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true
    )]
    pub transport: Option<Vec<Transport>>,

    /// What to measure: time, or instructions (each side's per byte,
    /// counted under valgrind: the same on any machine), or both, e.g.
    /// time,instructions. Counted rows carry --bytes-per-sample bytes per
    /// sample (default 256 KiB) and take --runs samples (default 6).
    /// [default: time]
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true
    )]
    pub measure: Option<Vec<Measure>>,

    #[command(flatten)]
    pub sampling: SamplingArgs,

    #[command(flatten)]
    pub shard: ShardArgs,

    #[command(flatten)]
    pub database: DatabaseArgs,

    #[command(flatten)]
    pub exports: ExportArgs,

    #[command(flatten)]
    pub display: DisplayArgs,

    /// Where generated certificate chains are cached. [default: the user's cache directory]
    #[arg(long, value_name = "DIR")]
    pub cert_dir: Option<PathBuf>,

    /// Do not print the progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Clone, Args, Serialize, Deserialize)]
#[command(after_help = "Examples:
  tlslab speed --algorithm rsa2048,ecdsa_p256,p256
  tlslab speed --backend openssl --algorithm aes-128-gcm,chacha20-poly1305 --size 16,1024,16384
  tlslab speed --algorithm aes-128-gcm,sha256 --cpu-features native,generic

Sampling defaults: --precision 2% --max-time 0.5 --min-samples 5 --warmup 0.05
(each sample is a batch of operations lasting about 2 ms)")]
pub struct SpeedArgs {
    /// Backends, comma-separated: openssl, rustls-aws-lc, rustls-ring, dimpl, or all.
    // Text: `all` and the registry's ids, which live in backend/, not the vocabulary.
    #[arg(long, value_name = "LIST", default_value = "all")]
    pub backend: String,

    /// Algorithms (see `tlslab list`), comma-separated, or all.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true,
        default_value = "all"
    )]
    pub algorithm: Vec<Algorithm>,

    /// Buffer sizes in bytes for ciphers, hashes and MACs (or with k or m:
    /// 16k is 16,000), from 1 to 16777216.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "16,64,256,1024,8192,16384"
    )]
    pub size: Vec<Size>,

    /// With hardware acceleration (native) and without it (generic: OpenSSL's
    /// and aws-lc's CPU capability mask cleared, in a child process).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true,
        default_value = "native"
    )]
    pub cpu_features: Vec<CpuFeatures>,

    /// What to measure: time, or instructions per operation (counted under
    /// valgrind: the same on any machine), or both (time,instructions).
    /// Counted rows take --runs samples (default 6) of a few operations.
    /// [default: time]
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true
    )]
    pub measure: Option<Vec<Measure>>,

    #[command(flatten)]
    pub sampling: SamplingArgs,

    #[command(flatten)]
    pub shard: ShardArgs,

    #[command(flatten)]
    pub database: DatabaseArgs,

    #[command(flatten)]
    pub exports: ExportArgs,

    #[command(flatten)]
    pub display: DisplayArgs,

    /// Do not print the progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  tlslab cost --preset rsa-vs-ecdsa
  tlslab cost --breakdown                      (TLS 1.3 X25519 with ECDSA P-256 and RSA-2048)
  tlslab cost --breakdown --backend rustls-aws-lc --tls 1.3 --group x25519mlkem768 --cert mldsa65
  tlslab cost --breakdown --measure time,instructions   (the model beside valgrind's exact count)

Sampling defaults: --precision 2% --max-time 2 --min-samples 20 --warmup 0.2")]
pub struct CostArgs {
    /// A named study: rsa-vs-ecdsa (TLS 1.2 RSA, ECDHE-RSA, ECDHE-ECDSA on OpenSSL). Axis options override it.
    #[arg(long, value_name = "NAME", hide_possible_values = true)]
    pub preset: Option<CostPreset>,

    /// Show where each side's handshake time goes, by category.
    #[arg(long)]
    pub breakdown: bool,

    /// With instructions: each measured handshake also counted under
    /// valgrind, and with --breakdown each side's instructions per category
    /// beside the model's time. [default: time]
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true
    )]
    pub measure: Option<Vec<Measure>>,

    /// Backends, comma-separated: openssl, rustls-aws-lc, rustls-ring, dimpl, or all.
    /// [default: openssl,rustls-aws-lc; the preset's]
    #[arg(long, value_name = "LIST")]
    pub backend: Option<String>,

    #[command(flatten)]
    pub axes: AxisArgs,

    #[command(flatten)]
    pub sampling: SamplingArgs,

    #[command(flatten)]
    pub shard: ShardArgs,

    #[command(flatten)]
    pub database: DatabaseArgs,

    #[command(flatten)]
    pub exports: ExportArgs,

    #[command(flatten)]
    pub display: DisplayArgs,

    /// Where generated certificate chains are cached.
    #[arg(long, value_name = "DIR")]
    pub cert_dir: Option<PathBuf>,

    /// Do not print the progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

/// The axes of a handshake matrix; each overrides the preset's.
#[derive(Debug, Clone, Args, Serialize, Deserialize)]
pub struct AxisArgs {
    /// Protocol versions: 1.2, 1.3, dtls1.2, dtls1.3 (DTLS over an in-memory
    /// datagram channel, or UDP with `--transport udp`; dtls1.2 on OpenSSL
    /// and dimpl, dtls1.3 on dimpl). [default: 1.3]
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true
    )]
    pub tls: Option<Vec<TlsVersion>>,

    /// Key exchanges: rsa (TLS 1.2 key transport), dhe1024..dhe4096 (TLS 1.2),
    /// ffdhe2048..ffdhe8192 (TLS 1.3), p256, p384, p521, x25519, x448,
    /// x25519mlkem768, secp256r1mlkem768, mlkem512/768/1024. [default: x25519]
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true
    )]
    pub group: Option<Vec<Group>>,

    /// Certificate key types: rsa2048, rsa3072, rsa4096, ecdsa_p256, ecdsa_p384,
    /// ecdsa_p521, ed25519, ed448, mldsa44, mldsa65, mldsa87. [default: rsa2048,ecdsa_p256]
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true
    )]
    pub cert: Option<Vec<CertKind>>,

    /// Bulk ciphers: aes-128-gcm, aes-256-gcm, chacha20-poly1305, and for
    /// (D)TLS 1.2 aes-128-cbc-sha, aes-256-cbc-sha, aes-128-cbc-sha256,
    /// aes-256-cbc-sha256 (RSA, DHE), aes-256-cbc-sha384 (ECDHE); the rest of a
    /// 1.2 suite follows from group and certificate. [default: aes-128-gcm]
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true
    )]
    pub suite: Option<Vec<Aead>>,

    /// Resumption: off (full handshakes), session_id, ticket (TLS 1.2), psk (TLS 1.3). [default: off]
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true
    )]
    pub resumption: Option<Vec<Resumption>>,

    /// Certificates in the chain, root to leaf inclusive (3 = root, intermediate, leaf).
    #[arg(long, value_name = "N")]
    pub chain_depth: Option<u8>,

    /// DTLS rows: the largest datagram either side may send, in bytes of UDP
    /// payload; bigger handshake messages are fragmented. [default: 1400]
    #[arg(long, value_name = "BYTES")]
    pub mtu: Option<u16>,
}

/// The one configuration `load` connects with: each option takes one
/// value, replacing the preset's (HTTP/1.1 runs over TLS on TCP; DTLS is
/// measured by `handshake`).
#[derive(Debug, Clone, Args)]
pub struct LoadAxisArgs {
    /// Protocol version: 1.3 or 1.2. [default: 1.3; the preset's]
    #[arg(long, value_name = "VERSION", hide_possible_values = true)]
    pub tls: Option<TlsVersion>,

    /// Key exchange: x25519, p256, p384, p521, x448, x25519mlkem768,
    /// secp256r1mlkem768, mlkem512/768/1024, ffdhe2048..ffdhe8192 (TLS
    /// 1.3); rsa (key transport), dhe1024..dhe4096 (TLS 1.2).
    /// [default: x25519; the preset's]
    #[arg(long, value_name = "GROUP", hide_possible_values = true)]
    pub group: Option<Group>,

    /// Certificate key type: rsa2048, rsa3072, rsa4096, ecdsa_p256,
    /// ecdsa_p384, ecdsa_p521, ed25519, ed448, mldsa44, mldsa65, mldsa87.
    /// [default: ecdsa_p256; the preset's]
    #[arg(long, value_name = "CERT", hide_possible_values = true)]
    pub cert: Option<CertKind>,

    /// Bulk cipher: aes-128-gcm, aes-256-gcm, chacha20-poly1305, and for TLS
    /// 1.2 aes-128-cbc-sha, aes-256-cbc-sha, aes-128-cbc-sha256,
    /// aes-256-cbc-sha256 (RSA, DHE), aes-256-cbc-sha384 (ECDHE).
    /// [default: aes-128-gcm; the preset's]
    #[arg(long, value_name = "SUITE", hide_possible_values = true)]
    pub suite: Option<Aead>,

    /// Resumption: off (every connection a full handshake), session_id or
    /// ticket (TLS 1.2), psk (TLS 1.3): each client's first connection is
    /// a full handshake, each later one resumes the session of its
    /// previous one (a new connection per request). [default: off]
    #[arg(long, value_name = "MODE", hide_possible_values = true)]
    pub resumption: Option<Resumption>,

    /// Certificates in the chain, root to leaf inclusive (3 = root,
    /// intermediate, leaf). [default: 3]
    #[arg(long, value_name = "N")]
    pub chain_depth: Option<u8>,
}

/// What `tlslab serve` offers. As nginx does, a server offers every value
/// of a list, in the list's order of preference, and each client picks
/// what it supports; one value pins the server to it.
#[derive(Debug, Clone, Args)]
pub struct ServeOfferArgs {
    /// Protocol versions offered: 1.3, 1.2. [default: 1.3,1.2]
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true
    )]
    pub tls: Option<Vec<TlsVersion>>,

    /// Key exchange groups offered, preferred first: x25519, p256, p384,
    /// p521, x448, x25519mlkem768, secp256r1mlkem768, mlkem512/768/1024,
    /// ffdhe2048..ffdhe8192 (TLS 1.3); rsa (key transport) and one of
    /// dhe1024..dhe4096 (TLS 1.2, OpenSSL). [default: x25519,p256,p384]
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true
    )]
    pub group: Option<Vec<Group>>,

    /// Certificates offered, one chain per key type, preferred first (the
    /// first the client's signature algorithms allow is sent): rsa2048,
    /// rsa3072, rsa4096, ecdsa_p256, ecdsa_p384, ecdsa_p521, ed25519, ed448,
    /// mldsa44, mldsa65, mldsa87. [default: ecdsa_p256,rsa2048]
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true
    )]
    pub cert: Option<Vec<CertKind>>,

    /// Bulk ciphers offered, preferred first: aes-128-gcm, aes-256-gcm,
    /// chacha20-poly1305, and for TLS 1.2 on OpenSSL aes-128-cbc-sha,
    /// aes-256-cbc-sha, aes-128-cbc-sha256, aes-256-cbc-sha256, aes-256-cbc-sha384;
    /// the rest of a TLS 1.2 suite follows from group and certificate.
    /// [default: aes-128-gcm,aes-256-gcm,chacha20-poly1305]
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true
    )]
    pub suite: Option<Vec<Aead>>,

    /// Resumption, one value: off (full handshakes), session_id, ticket
    /// (TLS 1.2), psk (TLS 1.3). [default: off]
    #[arg(long, value_name = "MODE", hide_possible_values = true)]
    pub resumption: Option<Resumption>,

    /// Certificates in each chain, root to leaf inclusive (3 = root,
    /// intermediate, leaf). [default: 3]
    #[arg(long, value_name = "N")]
    pub chain_depth: Option<u8>,
}

/// How long and how precisely to sample. Every cell is warmed up, then all
/// cells are sampled in interleaved rounds (one short batch of each per
/// round, in a shuffled order) so that a change in the machine's speed hits
/// every cell alike; ratios come from same-round pairs.
#[derive(Debug, Clone, Args, Serialize, Deserialize)]
pub struct SamplingArgs {
    /// Stop a cell once the 95% interval of its median (and of its ratio to
    /// the baseline row, when there is one) is within ± this, e.g. 1% or 0.5%.
    /// [default: per command, see above]
    #[arg(long, value_name = "PERCENT", allow_hyphen_values = true)]
    pub precision: Option<Percent>,

    /// Time budget per cell, of its own sampling, once it has its minimum
    /// samples: seconds, or with a unit (500ms, 4s, 2m). [default: per command]
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub max_time: Option<Seconds>,

    /// Time budget for the whole run (warm-up included): every cell still
    /// sampling then stops with what it has. Seconds, or with a unit (90s,
    /// 2m). [default: none]
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub max_total_time: Option<Seconds>,

    /// Fewest samples per cell before precision or time may stop it. [default: per command]
    #[arg(long, value_name = "N")]
    pub min_samples: Option<usize>,

    /// Take exactly N samples per cell, one per round, whatever the
    /// precision (as in the classic 10-run studies; overrides the stop rules).
    #[arg(long, value_name = "N")]
    pub runs: Option<usize>,

    /// Warm-up per cell before sampling, seconds or with a unit (200ms; at
    /// least one unrecorded sample is always taken). [default: per command]
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub warmup: Option<Seconds>,

    /// Seed of the shuffled round order (recorded with the run; set it to
    /// repeat an order). [default: from the clock]
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
}

/// Which part of the matrix this machine measures.
#[derive(Debug, Clone, Args, Serialize, Deserialize)]
pub struct ShardArgs {
    /// Measure only shard I of N (1 <= I <= N): the cells whose stable
    /// label hashes to it, so N machines (a Kubernetes Indexed Job, a Slurm
    /// array) each run one part and `tlslab merge` joins their databases.
    /// The same cell always falls in the same shard. [default: the whole matrix]
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,
}

/// Where results are stored.
#[derive(Debug, Clone, Args, Serialize, Deserialize)]
pub struct DatabaseArgs {
    /// The SQLite database for results. [default: tlslab/tlslab.sqlite in the user's data directory]
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,

    /// Keep results in memory only.
    #[arg(long, conflicts_with = "db")]
    pub no_db: bool,
}

/// How the table is drawn on standard output.
#[derive(Debug, Clone, Args, Serialize, Deserialize)]
pub struct DisplayArgs {
    /// Draw every column on one line, whatever the terminal's width. By
    /// default the table fits the terminal (or COLUMNS when set); piped
    /// output without COLUMNS keeps every column, as --wide.
    #[arg(long)]
    pub wide: bool,
}

/// Files to export results to.
#[derive(Debug, Clone, Default, Args, Serialize, Deserialize)]
pub struct ExportArgs {
    /// Write every row with all its statistics as JSON; the rows of a
    /// sampled run (handshake, bulk, tunnel, speed) carry their raw samples.
    #[arg(long, value_name = "PATH")]
    pub export_json: Option<PathBuf>,

    /// Write one line per row with all statistics as CSV.
    #[arg(long, value_name = "PATH")]
    pub export_csv: Option<PathBuf>,

    /// Write the table as Markdown.
    #[arg(long, value_name = "PATH")]
    pub export_markdown: Option<PathBuf>,

    /// Draw the run's charts into this directory (created if missing), each
    /// as SVG and PNG.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  tlslab report                                  (the latest run, as a table)
  tlslab report --run 3 --plot charts/           (run 3's charts as SVG and PNG)
  tlslab report --run 3,4,7 --html report.html   (three runs in one self-contained page)")]
pub struct ReportArgs {
    /// List the stored runs, one line each (id, date, kind, host, status).
    #[arg(long, conflicts_with_all = ["run", "baseline"])]
    pub list: bool,

    /// The runs to show, comma-separated. [default: the latest]
    #[arg(long, value_name = "ID,...", value_delimiter = ',')]
    pub run: Vec<i64>,

    /// Write one self-contained HTML page with the runs' provenance, tables,
    /// charts, security notes and sample counts (it fetches nothing when opened).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// The row other rows are compared with, by label. [default: the run's]
    // Text: a row's label, checked against the runs read.
    #[arg(long, value_name = "LABEL")]
    pub baseline: Option<String>,

    /// Show the --run shards of one command (same kind and options but for
    /// --shard, e.g. merged with `tlslab merge`) as one run: one table over
    /// their rows, per host (runs of different hosts are never pooled).
    #[arg(long, requires = "run")]
    pub combine: bool,

    /// The SQLite database to read. [default: tlslab/tlslab.sqlite in the user's data directory]
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,

    #[command(flatten)]
    pub exports: ExportArgs,

    #[command(flatten)]
    pub display: DisplayArgs,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  tlslab compare 3 7                       (run 7 against run 3, both in the default database)
  tlslab compare 3 7 --threshold 2%        (exit status 1 if a row is over 2% slower)
  tlslab compare 3 other.sqlite:1          (a run of another database)
  tlslab report --list                     (the stored runs)

Kinds: handshake, speed, tunnel, bulk (a row per side), cost (handshakes
and the operations the model used) and load runs (each phase's p50 is
tested over every request's latency; p99 and the rates are shown without
a test).
Rows match on backend and scenario; when none match and each run has
one backend, on the scenario alone (a run per library).
Counted runs (handshake, speed, bulk or tunnel with --measure
instructions) are compared on their counts, with a 0.5% threshold: the
gate of a library's change.
Exit status: 0 no row slower beyond the threshold, 1 some row is, or no
row was compared, or a row measured in A failed in B; 2 bad options (a
missing run, runs of two kinds).")]
pub struct CompareArgs {
    /// The reference run: an id in --db, or FILE:ID for a run in another database.
    // Text: a file name may hold a colon, so the last one splits it from the id.
    #[arg(value_name = "A")]
    pub a: String,

    /// The run compared with A (ID or FILE:ID).
    #[arg(value_name = "B")]
    pub b: String,

    /// A row fails (exit status 1) when B is significantly slower than A
    /// and its median is more than this much slower, e.g. 5% or 0.5%.
    /// [default: 5% on time, 0.5% on counts (instructions, memory)]
    #[arg(long, value_name = "PERCENT", allow_hyphen_values = true)]
    pub threshold: Option<Percent>,

    /// What two runs are compared on: time (CPU time per handshake,
    /// operation or byte), instructions (handshake, speed, bulk and tunnel
    /// runs counted with --measure instructions) or memory (handshake runs
    /// counted with --measure memory). [default: instructions when both
    /// runs counted them, else time]
    #[arg(long, value_name = "MEASURE", hide_possible_values = true)]
    pub measure: Option<Measure>,

    /// The SQLite database to read. [default: tlslab/tlslab.sqlite in the user's data directory]
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,

    #[command(flatten)]
    pub exports: ExportArgs,

    #[command(flatten)]
    pub display: DisplayArgs,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  tlslab tunnel --preset openvpn-classic
  tlslab tunnel --cipher aes-128-gcm,chacha20-poly1305,aes-128-cbc --digest sha256 --compression none,lz4 --payload random,text
  tlslab tunnel --cipher bf-cbc --digest sha1 --size 64,512,1400,8000
  tlslab tunnel --engine inprocess,openvpn --cipher aes-128-cbc,bf-cbc --digest sha1   (as root, with openvpn installed)
  tlslab tunnel --cipher aes-128-gcm,chacha20-poly1305,aes-128-cbc --digest sha256 --measure time,instructions

Sampling defaults: --precision 1% --max-time 1 --min-samples 10 --warmup 0.1;
with --preset openvpn-classic: 2%, 0.4, 20 and 0.02, and --max-total-time 50
(each sample is a batch of packets lasting about 1 ms). In-process rows
interleave, timed by the thread's CPU clock; OpenVPN rows are
sampled one tunnel at a time.")]
pub struct TunnelArgs {
    /// A named matrix: openvpn-classic (16 CBC ciphers x 25 digest names x
    /// compression off/lz4 x random/zero payloads). Axis options override its axes.
    #[arg(long, value_name = "NAME", hide_possible_values = true)]
    pub preset: Option<TunnelPreset>,

    /// Ciphers: none, bf-cbc, cast5-cbc, des-cbc, desx-cbc, des-ede-cbc,
    /// des-ede3-cbc, rc2-cbc, rc2-40-cbc, rc2-64-cbc, seed-cbc,
    /// camellia-128/192/256-cbc, aes-128/192/256-cbc, aes-128-gcm,
    /// aes-256-gcm, chacha20-poly1305. [default: aes-128-gcm,aes-256-gcm,chacha20-poly1305,aes-128-cbc,bf-cbc]
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true
    )]
    pub cipher: Option<Vec<Cipher>>,

    /// HMAC digests (ignored by AEAD ciphers): none, md4, md5, sha0, sha1,
    /// ripemd160, sha224, sha256, sha384, sha512, whirlpool, sha3-256,
    /// blake2b-512, and OpenVPN's aliases (RSA-SHA1, DSA...). [default: sha256]
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true
    )]
    pub digest: Option<Vec<Digest>>,

    /// Compression: none, lz4, lzo (with the `lzo` cargo feature). [default: none]
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true
    )]
    pub compression: Option<Vec<Compression>>,

    /// Payloads: random, zero, text (HTML-like). [default: random]
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true
    )]
    pub payload: Option<Vec<Payload>>,

    /// Payload bytes per packet (or with k: 8k is 8,000); a list is a size
    /// sweep. [default: 1400]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub size: Option<Vec<Size>>,

    /// Engines: inprocess (both ends in this process), openvpn (a real
    /// OpenVPN static-key tunnel between network namespaces; root only).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true,
        default_value = "inprocess"
    )]
    pub engine: Vec<EngineId>,

    /// Bytes each OpenVPN transfer carries each way, in megabytes (10^6 bytes).
    #[arg(long, value_name = "MB", default_value_t = 16.0)]
    pub transfer_mb: f64,

    /// Leave out the no-tunnel baseline row.
    #[arg(long)]
    pub no_baseline_row: bool,

    /// The row other rows are compared with, by label
    /// (e.g. tunnel_aes-128-cbc_sha1_none_random_1400). [default: the no-tunnel row]
    // Text: a row's label, checked against the matrix once it is planned.
    #[arg(long, value_name = "LABEL")]
    pub baseline: Option<String>,

    /// What to measure: time, or instructions (the sender's and the
    /// receiver's per MB of payload, counted under valgrind on the
    /// in-process engine: the same on any machine; OpenVPN rows say why
    /// they cannot be), or both (time,instructions). Counted rows carry a
    /// fixed batch of packets per sample (at least 256 KiB of payload) and
    /// take --runs samples (default 6). [default: time]
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true
    )]
    pub measure: Option<Vec<Measure>>,

    #[command(flatten)]
    pub sampling: SamplingArgs,

    #[command(flatten)]
    pub shard: ShardArgs,

    #[command(flatten)]
    pub database: DatabaseArgs,

    #[command(flatten)]
    pub exports: ExportArgs,

    #[command(flatten)]
    pub display: DisplayArgs,

    /// Do not print the progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  tlslab load --preset apache-study          (embedded OpenSSL server; perf for the profile)
  tlslab load --preset apache-study --server nginx
  tlslab load --preset apache-study --measure time,instructions   (perf's categories beside valgrind's count)
  tlslab load --rate 200 --duration 10 --size 50k
  tlslab load --rate 2000 --mode keepalive --clients 32 --tls 1.3 --group x25519 --cert ecdsa_p256
  tlslab load --rate 200 --resumption session_id --tls 1.2 --plot charts/   (each client resumes)
  tlslab load --target 127.0.0.1:8443 --rate 50 --duration 5   (a loopback server you run)
  tlslab load --target 127.0.0.1:8443 --probe-only   (which versions, groups, suites it accepts)
  tlslab load --target HOST:443 --i-have-permission --max-rate 20 --rate 10   (off loopback)
  tlslab load --server embedded --backend rustls-aws-lc --rate 300 --size 50k   (counted breakdown)
  tlslab load --server embedded --threads 1 --rate 300   (the embedded server on one core)

Defaults: --rate 100 --ramp 0 --duration 10 --size 1k --mode new --clients 64
(one blocking thread each; in keepalive mode all on one event loop, --event-loops 1);
--tls 1.3 --group x25519 --cert ecdsa_p256 --suite aes-128-gcm --resumption off
(with --preset apache-study: 1.2, rsa, rsa2048, aes-128-cbc-sha, off).
Requests are due at evenly spaced times whatever the server does; each
latency counts from the moment its request was due (queueing included).")]
pub struct LoadArgs {
    /// A named study: apache-study. Options given beside it override it.
    #[arg(long, value_name = "NAME", hide_possible_values = true)]
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
    #[arg(long, value_name = "N")]
    pub clients: Option<usize>,

    /// Drive the clients from N threads (at most 256), each an epoll loop
    /// over nonblocking connections; 0 gives each client a blocking thread
    /// of its own. [default: 1 in keepalive mode, else 0]
    #[arg(long, value_name = "N")]
    pub event_loops: Option<usize>,

    /// At most this many requests, whatever rate and duration say. [default: 1000000]
    #[arg(long, value_name = "N")]
    pub max_requests: Option<usize>,

    /// The server started for the run: nginx (Debian's, on loopback) or
    /// embedded (tlslab's own HTTPS server, in this process on its own
    /// threads; see `tlslab serve`). [default: nginx; embedded with --preset]
    #[arg(long, value_name = "SERVER", hide_possible_values = true)]
    pub server: Option<crate::scenario::ServerKind>,

    /// The embedded server's TLS backend: openssl, rustls-aws-lc,
    /// rustls-ring (rustls counts its crypto per category). [default:
    /// rustls-aws-lc; openssl with --preset]
    // Text: a backend registry's id, which lives in backend/, not the vocabulary.
    #[arg(long, value_name = "BACKEND")]
    pub backend: Option<String>,

    /// The embedded server's worker threads, each an event loop serving
    /// many connections: the cores its handshakes can use (`--workers` is
    /// an old name of it); at most 256. [default: every core]
    #[arg(long, alias = "workers", value_name = "N")]
    pub threads: Option<usize>,

    /// A server you run, HOST:PORT or https://HOST[:PORT]/PATH (the URL's
    /// path is the page, as with --path), instead of nginx: client-side figures
    /// only (its CPU is not known to tlslab). It is probed first (which
    /// versions, groups and suites it accepts). Without --path it must serve
    /// /page_SIZE with tlslab's generated content (as `tlslab serve` does);
    /// with --path any page. Its certificate is checked against the
    /// system's roots and tlslab's test root (or --ca-file) for
    /// --server-name. Off loopback it needs --i-have-permission and --max-rate.
    #[arg(long, value_name = "HOST:PORT|URL")]
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
    #[arg(long, value_name = "REQ/S", allow_negative_numbers = true)]
    pub max_rate: Option<f64>,

    /// With --target: probe what the server accepts, print it, and stop.
    #[arg(long)]
    pub probe_only: bool,

    /// With --target: load without probing first.
    #[arg(long)]
    pub no_probe: bool,

    /// Profile the server with perf during the run (per shared object):
    /// nginx's worker, or the embedded server's worker threads.
    /// [default: on with --preset, else off]
    #[arg(long)]
    pub perf: bool,

    /// What to measure: time (the load: latencies, rates, each side's CPU),
    /// and with time,instructions also one server handshake of the same
    /// scenario counted under valgrind after the load, per category,
    /// beside perf's categories (the embedded server's backend, or
    /// tlslab's OpenSSL for nginx). [default: time]
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        hide_possible_values = true
    )]
    pub measure: Option<Vec<Measure>>,

    /// Where generated certificate chains are cached. [default: the user's cache directory]
    #[arg(long, value_name = "DIR")]
    pub cert_dir: Option<PathBuf>,

    #[command(flatten)]
    pub database: DatabaseArgs,

    #[command(flatten)]
    pub exports: ExportArgs,

    #[command(flatten)]
    pub display: DisplayArgs,

    /// Do not print progress.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  tlslab merge all.sqlite shard-0.sqlite shard-1.sqlite shard-2.sqlite
  tlslab merge all.sqlite shard-*.sqlite && tlslab report --db all.sqlite --list

OUT is created if missing; runs already in OUT (same host, start time,
command line and options) are skipped, so merging a file twice changes nothing.")]
pub struct MergeArgs {
    /// The database to merge into (created if missing).
    #[arg(value_name = "OUT")]
    pub out: PathBuf,

    /// The databases to read; they are not modified.
    #[arg(value_name = "IN", required = true)]
    pub inputs: Vec<PathBuf>,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  tlslab recommend                                  (the latest run, server CPU per handshake)
  tlslab recommend --role client --min-security 128
  tlslab recommend --run 4 --role tunnel --allow-weak
  tlslab recommend --run 5 --measure instructions   (a run counted with --measure instructions)

Security bits per algorithm follow NIST SP 800-57 Part 1 Rev. 5, Table 2
(see `src/security.rs`); a row's strength is its weakest part's.")]
pub struct RecommendArgs {
    /// The run to read. [default: the latest]
    #[arg(long, value_name = "ID")]
    pub run: Option<i64>,

    /// What the cost is: server (server CPU per handshake), client (client
    /// CPU per handshake) for handshake and cost runs; tunnel (CPU per
    /// megabyte through the tunnel) for tunnel runs; bulk (both sides' CPU
    /// per megabyte) for bulk runs. [default: server, or the run's kind]
    #[arg(long, value_enum, value_name = "ROLE")]
    pub role: Option<Role>,

    /// The figure the rows are ranked on: time (CPU time) or instructions
    /// (counted under valgrind by a run with --measure instructions: the
    /// role's instructions per handshake, or per megabyte). [default:
    /// instructions when the run counted them, else time]
    #[arg(long, value_name = "MEASURE", hide_possible_values = true)]
    pub measure: Option<Measure>,

    /// Leave out rows whose estimated security is below this many bits.
    #[arg(long, value_name = "BITS", default_value_t = 0)]
    pub min_security: u32,

    /// Leave out rows without forward secrecy (TLS 1.2 RSA key transport),
    /// and rows that say nothing of their key exchange (tunnel data channels).
    #[arg(long)]
    pub forward_secrecy: bool,

    /// Keep rows flagged weak (broken digest, 64-bit block, short keys).
    #[arg(long)]
    pub allow_weak: bool,

    /// The SQLite database to read. [default: tlslab/tlslab.sqlite in the user's data directory]
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,

    #[command(flatten)]
    pub exports: ExportArgs,

    #[command(flatten)]
    pub display: DisplayArgs,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  tlslab serve                 (rustls-aws-lc on 127.0.0.1:8443: TLS 1.3 and 1.2, X25519, P-256, P-384,
                               ECDSA P-256 and RSA-2048 certificates, AES-GCM and ChaCha20 suites)
  tlslab serve --backend openssl --tls 1.2 --group p256 --cert rsa2048 --duration 60   (one configuration)
  tlslab serve --bind 127.0.0.1:0 --threads 4           (any free port, printed at start)
  tlslab serve --handshakes --bind 0.0.0.0:8444 --allow-non-loopback   (for `tlslab handshake --remote`)
  curl --cacert ROOT.pem --resolve tlslab.test:8443:127.0.0.1 https://tlslab.test:8443/page_50000
  tlslab load --target 127.0.0.1:8443 --rate 50 --duration 5   (load it; the page is /page_SIZE)

Pages: GET /page_SIZE answers SIZE bytes of the generated page that
`tlslab load` checks; there is no other page. The certificate is
tlslab's test chain for the name tlslab.test; ROOT.pem is its root, whose
path serve prints at start (in --cert-dir, by default the user's cache
directory).")]
pub struct ServeArgs {
    /// The TLS backend: openssl, rustls-aws-lc, rustls-ring (rustls counts
    /// its crypto per category).
    // Text: a backend registry's id, which lives in backend/, not the vocabulary.
    #[arg(long, value_name = "BACKEND", default_value = "rustls-aws-lc")]
    pub backend: String,

    /// What the server offers: each list in its order of preference.
    #[command(flatten)]
    pub offer: ServeOfferArgs,

    /// Where to listen, ADDRESS:PORT (port 0: any free port). Only loopback
    /// unless --allow-non-loopback.
    #[arg(long, value_name = "ADDRESS:PORT", default_value = "127.0.0.1:8443")]
    pub bind: String,

    /// Allow --bind on an address other hosts can reach.
    #[arg(long)]
    pub allow_non_loopback: bool,

    /// Serve handshakes to a measuring `tlslab handshake --remote
    /// ADDRESS:PORT` instead of HTTPS: --bind is the control connection's
    /// address; the client names each row (backend, scenario, test chain),
    /// this server runs the server's side of each handshake on a port it
    /// picks at --bind's address (TLS over TCP, DTLS over UDP) and reports
    /// its CPU per handshake. --backend and the axis options do not apply.
    #[arg(long)]
    pub handshakes: bool,

    /// Internal: with --handshakes, the control connection is standard
    /// input and output (tlslab starting its own server in a namespace).
    #[arg(long, hide = true, requires = "handshakes")]
    pub control_stdio: bool,

    /// Worker threads, each an event loop serving many connections, as
    /// `load --server embedded --threads` (`--workers` is an old name of
    /// it); at most 256, since more threads than cores add only
    /// switching. [default: one per core]
    #[arg(long, alias = "workers", value_name = "N")]
    pub threads: Option<usize>,

    /// The most connections held at once, over all threads; more wait in
    /// the listen backlog. Lowered to what the open-file limit allows (the
    /// soft limit is raised to the hard one). [default: 16384]
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,

    /// How long a client has for the TLS handshake and its first request
    /// head, and for each later head from its first byte; then 408 and the
    /// connection closed (nginx's client_header_timeout). Seconds, or with
    /// a unit (500ms, 4s, 2m). [default: 10]
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub header_timeout: Option<Seconds>,

    /// How long a kept-alive connection may stay idle between requests
    /// before it is closed (nginx's keepalive_timeout). Seconds, or with a
    /// unit (500ms, 4s, 2m). [default: 10]
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub keep_alive_timeout: Option<Seconds>,

    /// Stop after this long: seconds, or with a unit (90s, 2m, 1h).
    /// [default: run until Ctrl-C]
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub duration: Option<Seconds>,

    /// Where generated certificate chains are cached. [default: the user's cache directory]
    #[arg(long, value_name = "DIR")]
    pub cert_dir: Option<PathBuf>,

    #[command(flatten)]
    pub exports: ExportArgs,

    #[command(flatten)]
    pub display: DisplayArgs,

    /// Do not print the line saying where the server listens.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  tlslab completions bash > ~/.local/share/bash-completion/completions/tlslab
  tlslab completions zsh > ~/.zfunc/_tlslab   (with fpath+=~/.zfunc in ~/.zshrc)
  tlslab completions fish > ~/.config/fish/completions/tlslab.fish")]
pub struct CompletionsArgs {
    /// The shell the script is for.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  tlslab man | man -l -
  tlslab man > ~/.local/share/man/man1/tlslab.1
  tlslab man handshake > ~/.local/share/man/man1/tlslab-handshake.1")]
pub struct ManArgs {
    /// One command's page (tlslab-COMMAND(1)) instead of tlslab(1).
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Duration, String> {
        text.parse::<Seconds>().map(Seconds::duration)
    }

    #[test]
    fn durations_take_plain_seconds_and_units() {
        assert_eq!(parsed("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parsed("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parsed("0"), Ok(Duration::ZERO));
        assert_eq!(parsed("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parsed("4s"), Ok(Duration::from_secs(4)));
        assert_eq!(parsed("0.5s"), Ok(Duration::from_millis(500)));
        assert_eq!(parsed("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parsed("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parsed(" 200ms "), Ok(Duration::from_millis(200)));
    }

    #[test]
    fn durations_refuse_negatives_nan_and_garbage_saying_why() {
        for text in ["-1", "-1s", "-0.5ms"] {
            let error = parsed(text).unwrap_err();
            assert!(error.contains("cannot be negative"), "{text}: {error}");
        }
        for text in [
            "NaN", "inf", "1e3", "", "s", "ms", "4x", "4 s", "four", "1.2.3", "4sec",
        ] {
            let error = parsed(text).unwrap_err();
            assert!(
                error.contains("is not a duration") && error.contains("500ms, 4s, 2m"),
                "{text:?}: {error}"
            );
        }
        assert!(parsed("1e300").is_err());
        assert!(parsed(&"9".repeat(40)).unwrap_err().contains("too long"));
    }

    #[test]
    fn sizes_take_bytes_or_k_and_m() {
        let bytes = |text: &str| text.parse::<Size>().map(Size::bytes);
        assert_eq!(bytes("1400"), Ok(1400));
        assert_eq!(bytes(" 50k "), Ok(50_000));
        assert_eq!(bytes("50K"), Ok(50_000));
        assert_eq!(bytes("1m"), Ok(1_000_000));
        assert_eq!(bytes("0"), Ok(0));
        for text in ["big", "1.5k", "-1", "k", "16kb", "1e3", "0x10"] {
            let error = bytes(text).unwrap_err();
            assert!(error.contains("is not a size"), "{text}: {error}");
        }
        assert!(bytes(" ").unwrap_err().contains("an empty size"));
        assert!(bytes(&format!("{}m", usize::MAX))
            .unwrap_err()
            .contains("too large"));
        assert_eq!(
            Size::from_bytes(50_000).to_string().parse(),
            Ok(Size(50_000))
        );
    }

    #[test]
    fn percents_take_a_sign_or_none_and_refuse_negatives() {
        let fraction = |text: &str| text.parse::<Percent>().map(Percent::fraction);
        assert_eq!(fraction("1%"), Ok(0.01));
        assert_eq!(fraction("0.5%"), Ok(0.005));
        assert_eq!(fraction("2"), Ok(0.02));
        assert_eq!(fraction(" 5 % "), Ok(0.05));
        assert!(fraction("-1%").unwrap_err().contains("cannot be negative"));
        for text in ["fast", "", "%", "inf", "NaN", "1e3%"] {
            let error = fraction(text).unwrap_err();
            assert!(error.contains("is not a percentage"), "{text:?}: {error}");
        }
        let value: Percent = "0.5%".parse().unwrap();
        assert_eq!(value.to_string().parse(), Ok(value));
    }

    /// A command with one list of groups and one single group, as the
    /// commands declare them.
    fn groups_command() -> clap::Command {
        clap::Command::new("t")
            .arg(
                clap::Arg::new("group")
                    .long("group")
                    .value_delimiter(',')
                    .action(clap::ArgAction::Append)
                    .value_parser(NamedParser::<Group>::new()),
            )
            .arg(
                clap::Arg::new("one")
                    .long("one")
                    .value_parser(NamedParser::<Group>::new()),
            )
    }

    #[test]
    fn named_values_take_every_spelling_and_refuse_others_listing_the_valid_ones() {
        let matches = groups_command()
            .try_get_matches_from(["t", "--group", "x25519,P-256,secp384r1", "--one", "X448"])
            .unwrap();
        let groups: Vec<Group> = matches.get_many("group").unwrap().copied().collect();
        assert_eq!(groups, [Group::X25519, Group::P256, Group::P384]);
        assert_eq!(matches.get_one::<Group>("one"), Some(&Group::X448));
        for (args, expected) in [
            (
                ["t", "--group", "x9999"],
                "unknown group 'x9999'; valid groups: rsa",
            ),
            (
                ["t", "--group", "x25519,"],
                "an empty value; valid groups: rsa",
            ),
            (
                ["t", "--one", "x25519,p256"],
                "--one takes one value, not a list",
            ),
        ] {
            let error = groups_command().try_get_matches_from(args).unwrap_err();
            assert_eq!(error.kind(), clap::error::ErrorKind::ValueValidation);
            assert!(error.to_string().contains(expected), "{args:?}: {error}");
        }
    }

    #[test]
    fn named_values_complete_their_names_not_their_aliases() {
        let command = groups_command();
        let group = command.get_arguments().next().unwrap();
        let shown: Vec<String> = group
            .get_possible_values()
            .iter()
            .filter(|value| !value.is_hide_set())
            .map(|value| value.get_name().to_string())
            .collect();
        assert!(shown.contains(&"x25519mlkem768".to_string()), "{shown:?}");
        assert!(!shown.contains(&"secp256r1".to_string()), "{shown:?}");
        assert_eq!(shown.len(), Group::ALL.len());
    }

    #[test]
    fn a_duration_prints_as_seconds_that_parse_back() {
        for text in ["0.2", "500ms", "2m", "1.25"] {
            let value: Seconds = text.parse().unwrap();
            assert_eq!(value.to_string().parse::<Seconds>(), Ok(value), "{text}");
        }
        assert_eq!("200ms".parse::<Seconds>().unwrap().to_string(), "0.2");
    }
}
