//! `tlslab bulk`: its options.

use std::path::PathBuf;

use clap::Args;

use super::names::{not_memory, NamedParser};
use super::shared::{OutputArgs, SamplingArgs, ShardArgs};
use super::values::{self, Size};
use crate::scenario::bulk::BulkPreset;
use crate::scenario::{Aead, BackendList, Measure, TlsVersion, Transport};

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  tlslab bulk
  tlslab bulk --preset dtls-study
  tlslab bulk --backend openssl --tls 1.2,1.3 \\
      --suite aes-128-gcm,chacha20-poly1305 --size 64,1024,16384
  tlslab bulk --size 16384 --suite aes-128-gcm --export-markdown bulk.md
  tlslab bulk --size 16384 --suite aes-128-gcm --transport memory,tcp
  tlslab bulk --backend openssl,dimpl --tls dtls1.2 --suite aes-128-gcm \\
      --transport memory,udp

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
    #[arg(long, value_name = "NAME")]
    pub preset: Option<BulkPreset>,

    /// Backends, comma-separated, or all. [default: the preset's, or all]
    #[arg(long, value_name = "LIST")]
    pub backend: Option<BackendList>,

    /// Protocol versions (dtls1.2 on OpenSSL and dimpl, dtls1.3 on dimpl).
    /// [default: 1.3]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub tls: Option<Vec<TlsVersion>>,

    /// Suites (bulk ciphers); the CBC ones, with HMAC, are TLS 1.2's, on
    /// OpenSSL. [default: aes-128-gcm,aes-256-gcm,chacha20-poly1305]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub suite: Option<Vec<Aead>>,

    /// Bytes per application write (or with k: 16k is 16,000), from 1 to
    /// 1048576; a list is a size sweep. [default: 64,1024,16384]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub size: Option<Vec<Size>>,

    /// Application bytes per sample, for every row. [default: per row, about
    /// 2 ms of both sides' CPU time, from 16 KiB to 4 MiB]
    #[arg(long, value_name = "BYTES", value_parser = values::at_least_one)]
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
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub transport: Option<Vec<Transport>>,

    /// What to measure: time, or instructions (each side's per byte,
    /// counted under valgrind: the same on any machine), or both, e.g.
    /// time,instructions. Counted rows carry --bytes-per-sample bytes per
    /// sample (default 256 KiB) and take --runs samples (default 6).
    /// [default: time]
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

    /// Where generated certificate chains are cached. [default: the user's cache directory]
    #[arg(long, value_name = "DIR")]
    pub cert_dir: Option<PathBuf>,

    /// Do not print the progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}
