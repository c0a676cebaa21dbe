//! `tlslab tunnel`: its options.

use clap::Args;
use serde::{Deserialize, Serialize};

use super::names::{not_memory, NamedParser};
use super::shared::{OutputArgs, SamplingArgs, ShardArgs};
use super::values::{self, Size};
use crate::scenario::presets::TunnelPreset;
use crate::scenario::tunnel::EngineId;
use crate::scenario::tunnel_axes::{Cipher, Compression, Digest, Payload};
use crate::scenario::{CpuFeatures, Measure};

#[derive(Debug, Clone, Args, Serialize, Deserialize)]
#[command(after_help = "Examples:
  tlslab tunnel --preset openvpn-classic
  tlslab tunnel --preset vpn-compare
  tlslab tunnel --preset vpn-compare --cpu-features native,generic
  tlslab tunnel --cipher aes-128-gcm,chacha20-poly1305,aes-128-cbc \\
      --digest sha256 --compression none,lz4 --payload random,text
  tlslab tunnel --cipher bf-cbc --digest sha1 --size 64,512,1400,8000
  tlslab tunnel --engine inprocess,openvpn --cipher aes-128-cbc,bf-cbc \\
      --digest sha1   (as root, with openvpn installed)
  tlslab tunnel --cipher aes-128-gcm,chacha20-poly1305,aes-128-cbc \\
      --digest sha256 --measure time,instructions
  tlslab tunnel --engine wireguard,openvpn,openvpn-tls --cipher aes-128-gcm \\
      --setup   (connection set-up per engine; as root for the openvpn ones)

Sampling defaults: --precision 1% --max-time 1 --min-samples 10 --warmup 0.1;
with --preset openvpn-classic: 2%, 0.4, 20 and 0.02, and --max-total-time 50;
with --preset vpn-compare: 0.5%, 1, 50 and 0.05, and --max-total-time 80
(each sample is a batch of packets lasting about 1 ms). The rows of every
in-process engine (inprocess, wireguard) interleave in one set of rounds,
timed by the thread's CPU clock; real tunnels' rows (openvpn, openvpn-tls,
wireguard-go) are sampled one tunnel at a time after them.")]
pub struct TunnelArgs {
    /// A named matrix: openvpn-classic (16 CBC ciphers x 25 digest names x
    /// compression off/lz4 x random/zero payloads) or vpn-compare
    /// (WireGuard against OpenVPN's AES-128-GCM, AES-256-GCM and
    /// ChaCha20-Poly1305 at 64, 512 and 1400 bytes). Axis options override
    /// its axes, --engine its engines.
    #[arg(long, value_name = "NAME")]
    pub preset: Option<TunnelPreset>,

    /// Ciphers. [default:
    /// aes-128-gcm,aes-256-gcm,chacha20-poly1305,aes-128-cbc,bf-cbc]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub cipher: Option<Vec<Cipher>>,

    /// HMAC digests (ignored by AEAD ciphers); OpenVPN's names of them (RSA-
    /// SHA1, DSA...) are taken too. [default: sha256]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub digest: Option<Vec<Digest>>,

    /// Compression (lzo with the `lzo` cargo feature). [default: none]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub compression: Option<Vec<Compression>>,

    /// Payloads (text is HTML-like). [default: random]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub payload: Option<Vec<Payload>>,

    /// Payload bytes per packet (or with k: 8k is 8,000); a list is a size
    /// sweep. [default: 1400]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub size: Option<Vec<Size>>,

    // The help names the registered engines: cli::registries::tunnel_engine.
    #[arg(long, value_name = "LIST", value_delimiter = ',', help = super::registries::tunnel_engine())]
    pub engine: Option<Vec<EngineId>>,

    /// Bytes each transfer through a real tunnel (openvpn, wireguard-go)
    /// carries each way, in megabytes (10^6 bytes).
    #[arg(long, value_name = "MB", default_value_t = 16.0, value_parser = values::positive_number)]
    pub transfer_mb: f64,

    /// Also measure what establishing a tunnel costs, per engine: each
    /// side's CPU, wall time, and bytes and messages each way (wireguard:
    /// its handshake in process; openvpn-tls: both processes from start to
    /// ready, TLS handshake included; openvpn: the same without a
    /// handshake, for comparison; inprocess says why it has none). Sampled
    /// one engine at a time with the sampling options of the rows. On by
    /// default with --preset vpn-compare.
    #[arg(long)]
    pub setup: bool,

    /// Leave out the connection set-up a preset measures (vpn-compare).
    #[arg(long, conflicts_with = "setup")]
    pub no_setup: bool,

    /// With hardware acceleration (native) and without it (generic: the
    /// rows again in a child process with OpenSSL's CPU capability mask
    /// cleared, for the inprocess engine and the OpenVPN daemons; rows
    /// "<engine> (generic)"). WireGuard's cryptography (ring in boringtun,
    /// Go's in wireguard-go) cannot be masked: its generic rows say why.
    /// Timed only; --setup's set-up is measured natively.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "native"
    )]
    pub cpu_features: Vec<CpuFeatures>,

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
        value_parser = NamedParser::listing(not_memory),
        value_name = "LIST",
        value_delimiter = ','
    )]
    pub measure: Option<Vec<Measure>>,

    #[command(flatten)]
    pub sampling: SamplingArgs,

    #[command(flatten)]
    pub shard: ShardArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    /// Do not print the progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}
