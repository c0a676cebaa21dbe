//! `tlslab handshake`: its options, and the servers, links and mutual
//! authentication it takes.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

use super::shared::{AxisArgs, MeasureArgs, OutputArgs, SamplingArgs, ShardArgs};
use super::values::{self, NetworkProfiles};
use crate::scenario::presets::Preset;
use crate::scenario::{BackendId, BackendList, CpuFeatures, ServerKind, Transport};

#[derive(Debug, Clone, Args, Serialize, Deserialize)]
#[command(after_help = "Examples:
  tlslab handshake --preset kex-matrix
  tlslab handshake --preset kex-matrix --server nginx   (nginx installed)
  tlslab handshake --preset kex-matrix --server embedded,nginx,apache,haproxy,caddy
  tlslab handshake --server caddy --tls 1.3,quic --resumption off,psk
      (QUIC rows: tlslab's QUIC client against Caddy's HTTP/3)
  tlslab handshake --tls 1.3 --group x25519,p256,x25519mlkem768 \\
      --cert rsa2048,ecdsa_p256,ed25519,mldsa65
  tlslab handshake --backend all --tls 1.2,1.3 --group x25519 \\
      --cert ecdsa_p256 --resumption off,ticket,psk
  tlslab handshake --preset dtls-study --cpu-features native,generic
  tlslab handshake --backend openssl --tls 1.2,dtls1.2 --group p256 \\
      --cert ecdsa_p256 --mtu 576
  tlslab handshake --tls 1.2,1.3,dtls1.2 --group p256 --cert ecdsa_p256 \\
      --transport memory,tcp,udp
  tlslab handshake --capacity --tls 1.3 --group x25519,p256 \\
      --cert rsa2048,ecdsa_p256 --threads 4
  tlslab handshake --tls 1.2,1.3 --group x25519,x25519mlkem768 \\
      --cert ecdsa_p256,mldsa65 --wire --network wan,mobile
  tlslab handshake --preset pq-network
      (as root: measured over tlslab's emulated link too)
  tlslab handshake --preset quic-vs-tcp
      (each QUIC row against its TLS 1.3 twin: --baseline protocol=1.3)
  tlslab handshake --remote 192.168.1.20:8444 --preset kex-matrix
      (tlslab serve --handshakes there)
  tlslab list   (every valid name)

Sampling defaults: --precision 1% --max-time 5 --min-samples 10 --warmup 0.2;
with --preset also --max-total-time: kex-matrix 24, tls13-matrix 48,
post-quantum 60, dtls-study 30, pq-network and quic-network 40 (then 8
handshakes per row and profile over the link), quic-vs-tcp 40 (about twice
their time on a quiet 2-core machine);
with --capacity --max-time 2 per thread count and --warmup 0.2, and
--max-total-time stops the run after the step it is in")]
pub struct HandshakeArgs {
    /// A named matrix (`tlslab list` says what each holds); pq-network is
    /// post-quantum over --network wan,mobile,satellite, --link tun where it
    /// can be built, quic-network the same for quic-vs-tcp on quinn. Axis options override its axes; dtls-study's DTLS 1.3 rows on
    /// dimpl (and its rows on wolfssl, in a build with it) come without --tls, and with
    /// --backend only on the backends it names.
    #[arg(long, value_name = "NAME")]
    pub preset: Option<Preset>,

    /// Backends, comma-separated, or all. [default: the preset's, or all]
    #[arg(long, value_name = "LIST")]
    pub backend: Option<BackendList>,

    // The help names the registered servers: cli::registries::handshake_server.
    #[arg(long, value_name = "LIST", value_delimiter = ',', help = super::registries::handshake_server())]
    pub server: Option<Vec<ServerKind>>,

    /// With --server, the backend whose client handshakes with the
    /// programs' TLS rows (the measuring client): only a backend that can
    /// be that client is accepted. [default: openssl]
    #[arg(long, value_name = "BACKEND", requires = "server")]
    // Not passed to child processes: the programs' rows run in this one.
    #[serde(skip)]
    pub client_backend: Option<BackendId>,

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
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
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
    #[arg(long, value_name = "N", requires = "capacity", value_parser = values::at_least_one)]
    pub threads: Option<usize>,

    /// With hardware acceleration (native) and without it (generic: the
    /// matrix again in a child process with OpenSSL's and aws-lc's CPU
    /// capability mask cleared; its rows are "<backend> (generic)").
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
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
    /// `tlslab report`); or protocol=VERSION: each row against the same row
    /// over that protocol (protocol=1.3 sets each QUIC row against its TLS
    /// 1.3 twin). [default: the preset's baseline, or the first row]
    // Text: a row's label or protocol=VERSION, checked against the matrix
    // once it is planned.
    #[arg(long, value_name = "LABEL")]
    pub baseline: Option<String>,

    // Flattened in the generic-CPU child's plan too, which keeps its shape.
    #[command(flatten)]
    #[serde(flatten)]
    pub output: OutputArgs,

    /// Where generated certificate chains are cached. [default: the user's cache directory]
    #[arg(long, value_name = "DIR")]
    pub cert_dir: Option<PathBuf>,

    /// Do not print the progress bar.
    #[arg(long, short)]
    pub quiet: bool,
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
