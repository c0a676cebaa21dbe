//! `tlslab report`: its options.

use std::path::PathBuf;

use clap::Args;

use super::shared::{DisplayArgs, ExportArgs};

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  tlslab report   (the latest run, as a table)
  tlslab report --run 3 --plot charts/   (run 3's charts as SVG and PNG)
  tlslab report --run 3,4,7 --html report.html
      (three runs in one self-contained page)
  tlslab report --combine   (the latest sharded command's shards as one run)")]
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

    /// The row other rows are compared with, by label; for a handshake
    /// run also protocol=VERSION, each row against its twin over that
    /// protocol. [default: the run's]
    // Text: a row's label or protocol=VERSION, checked against the runs read.
    #[arg(long, value_name = "LABEL")]
    pub baseline: Option<String>,

    /// Show the --run shards of one command (same kind and options but for
    /// --shard, e.g. merged with `tlslab merge`) as one run: one table over
    /// their rows, per host (runs of different hosts are never pooled).
    /// [default runs: the latest sharded command's, each shard's newest run]
    #[arg(long)]
    pub combine: bool,

    /// The SQLite database to read. [default: tlslab/tlslab.sqlite in the user's data directory]
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,

    #[command(flatten)]
    pub exports: ExportArgs,

    #[command(flatten)]
    pub display: DisplayArgs,
}
