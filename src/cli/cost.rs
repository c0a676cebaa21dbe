//! `tlslab cost`: its options.

use std::path::PathBuf;

use clap::Args;

use super::names::{not_memory, NamedParser};
use super::shared::{AxisArgs, OutputArgs, SamplingArgs, ShardArgs};
use crate::scenario::presets::CostPreset;
use crate::scenario::{BackendList, Measure};

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  tlslab cost --preset rsa-vs-ecdsa
  tlslab cost --breakdown   (TLS 1.3 X25519 with ECDSA P-256 and RSA-2048)
  tlslab cost --breakdown --backend rustls-aws-lc --tls 1.3 \\
      --group x25519mlkem768 --cert mldsa65
  tlslab cost --breakdown --measure time,instructions
      (the model beside valgrind's exact count)

Sampling defaults: --precision 2% --max-time 2 --min-samples 20 --warmup 0.2")]
pub struct CostArgs {
    /// A named study: rsa-vs-ecdsa (TLS 1.2 RSA, ECDHE-RSA, ECDHE-ECDSA on OpenSSL). Axis options override it.
    #[arg(long, value_name = "NAME")]
    pub preset: Option<CostPreset>,

    /// Show where each side's handshake time goes, by category.
    #[arg(long)]
    pub breakdown: bool,

    /// With instructions: each measured handshake also counted under
    /// valgrind, and with --breakdown each side's instructions per category
    /// beside the model's time. [default: time]
    #[arg(
        long,
        value_parser = NamedParser::listing(not_memory),
        value_name = "LIST",
        value_delimiter = ','
    )]
    pub measure: Option<Vec<Measure>>,

    /// Backends, comma-separated, or all. [default: openssl,rustls-aws-lc;
    /// the preset's]
    #[arg(long, value_name = "LIST")]
    pub backend: Option<BackendList>,

    #[command(flatten)]
    pub axes: AxisArgs,

    #[command(flatten)]
    pub sampling: SamplingArgs,

    #[command(flatten)]
    pub shard: ShardArgs,

    #[command(flatten)]
    pub output: OutputArgs,

    /// Where generated certificate chains are cached.
    #[arg(long, value_name = "DIR")]
    pub cert_dir: Option<PathBuf>,

    /// Do not print the progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}
