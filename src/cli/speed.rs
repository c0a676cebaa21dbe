//! `tlslab speed`: its options.

use clap::Args;
use serde::{Deserialize, Serialize};

use super::names::{not_memory, Algorithm, NamedParser};
use super::shared::{OutputArgs, SamplingArgs, ShardArgs};
use super::values::Size;
use crate::scenario::{BackendList, CpuFeatures, Measure};

#[derive(Debug, Clone, Args, Serialize, Deserialize)]
#[command(after_help = "Examples:
  tlslab speed --algorithm rsa2048,ecdsa_p256,p256
  tlslab speed --backend openssl --algorithm aes-128-gcm,chacha20-poly1305 \\
      --size 16,1024,16384
  tlslab speed --algorithm aes-128-gcm,sha256 --cpu-features native,generic

Sampling defaults: --precision 2% --max-time 0.5 --min-samples 5 --warmup 0.05
(each sample is a batch of operations lasting about 2 ms)")]
pub struct SpeedArgs {
    /// Backends, comma-separated, or all.
    #[arg(long, value_name = "LIST", default_value = "all")]
    pub backend: BackendList,

    /// Algorithms, comma-separated, or all.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
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
        default_value = "native"
    )]
    pub cpu_features: Vec<CpuFeatures>,

    /// What to measure: time, or instructions per operation (counted under
    /// valgrind: the same on any machine), or both (time,instructions).
    /// Counted rows take --runs samples (default 6) of a few operations.
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

    // Flattened in the generic-CPU child's plan too, which keeps its shape.
    #[command(flatten)]
    #[serde(flatten)]
    pub output: OutputArgs,

    /// Do not print the progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}
