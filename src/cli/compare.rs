//! `tlslab compare`: its options.

use std::path::PathBuf;

use clap::Args;

use super::shared::{DisplayArgs, ExportArgs};
use super::values::Percent;
use crate::scenario::Measure;

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  tlslab compare 3 7   (run 7 against run 3, both in the default database)
  tlslab compare 3 7 --threshold 2%
      (exit status 1 if a row is over 2% slower)
  tlslab compare 3 other.sqlite:1   (a run of another database)
  tlslab report --list   (the stored runs)

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
    #[arg(long, value_name = "MEASURE")]
    pub measure: Option<Measure>,

    /// The SQLite database to read. [default: tlslab/tlslab.sqlite in the user's data directory]
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,

    #[command(flatten)]
    pub exports: ExportArgs,

    #[command(flatten)]
    pub display: DisplayArgs,
}
