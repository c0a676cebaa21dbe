//! `tlslab merge`: its options.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  tlslab merge all.sqlite shard-0.sqlite shard-1.sqlite shard-2.sqlite
  tlslab merge all.sqlite shard-*.sqlite && tlslab report --db all.sqlite --list

OUT is created if missing; runs already in OUT (same host, start time,
command line and options) are skipped, so merging a file twice changes
nothing. Once every shard of a sharded load (load --shard I/N) is in OUT,
they are also joined into one load run (percentiles from every request);
shards of different loads are refused.")]
pub struct MergeArgs {
    /// The database to merge into (created if missing).
    #[arg(value_name = "OUT")]
    pub out: PathBuf,

    /// The databases to read; they are not modified.
    #[arg(value_name = "IN", required = true)]
    pub inputs: Vec<PathBuf>,
}
