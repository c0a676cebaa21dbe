//! The options several commands share: what a run measures
//! ([`MeasureArgs`]), the axes of a handshake matrix ([`AxisArgs`]), how
//! long and how precisely to sample ([`SamplingArgs`]), which shard of the
//! matrix to run ([`ShardArgs`]), and where results go ([`OutputArgs`]:
//! the database, export files and the table on the terminal).

use std::path::PathBuf;

use clap::Args;
use serde::{Deserialize, Serialize};

use super::values::{self, Percent, Seconds};
use crate::scenario::{Aead, CertKind, Group, Measure, Resumption, Shard, TlsVersion};

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
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub measure: Option<Vec<Measure>>,

    /// With --measure instructions: where each side's instructions go, per
    /// category (public key, hashing and KDF, symmetric ciphers, random
    /// numbers, certificates and ASN.1, TLS state machine, library
    /// plumbing, memory and libc, tlslab, other), from valgrind's count of
    /// every function.
    #[arg(long)]
    pub breakdown: bool,
}

/// The axes of a handshake matrix; each overrides the preset's.
#[derive(Debug, Clone, Args, Serialize, Deserialize)]
pub struct AxisArgs {
    /// Protocol versions. DTLS runs over an in-memory datagram channel, or UDP
    /// with `--transport udp`; dtls1.2 on OpenSSL and dimpl, dtls1.3 on dimpl;
    /// quic (TLS 1.3 inside QUIC, over memory datagrams) on rustls.
    /// [default: 1.3]
    #[arg(long, alias = "protocol", value_name = "LIST", value_delimiter = ',')]
    pub tls: Option<Vec<TlsVersion>>,

    /// Key exchanges: rsa (key transport) and the dhe groups are TLS 1.2's, the
    /// ffdhe groups TLS 1.3's. [default: x25519]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub group: Option<Vec<Group>>,

    /// Certificate key types. [default: rsa2048,ecdsa_p256]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub cert: Option<Vec<CertKind>>,

    /// Bulk ciphers. The CBC ones are (D)TLS 1.2's: aes-256-cbc-sha384 with
    /// ECDHE, the others with RSA and DHE; the rest of a 1.2 suite follows from
    /// group and certificate. [default: aes-128-gcm]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub suite: Option<Vec<Aead>>,

    /// Resumption: off (full handshakes); session_id and ticket are TLS 1.2's,
    /// psk TLS 1.3's; 0rtt (alias early) resumes with psk and sends a request
    /// as 0-RTT early data (QUIC on rustls). [default: off]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub resumption: Option<Vec<Resumption>>,

    /// Certificates in the chain, root to leaf inclusive (3 = root, intermediate, leaf).
    #[arg(long, value_name = "N", value_parser = values::chain_depth)]
    pub chain_depth: Option<u8>,

    /// DTLS rows: the largest datagram either side may send, in bytes of UDP
    /// payload; bigger handshake messages are fragmented. [default: 1400]
    #[arg(long, value_name = "BYTES")]
    pub mtu: Option<u16>,
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
    #[arg(long, value_name = "PERCENT", allow_hyphen_values = true, value_parser = values::precision)]
    pub precision: Option<Percent>,

    /// Time budget per cell, of its own sampling, once it has its minimum
    /// samples: seconds, or with a unit (500ms, 4s, 2m). [default: per command]
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub max_time: Option<Seconds>,

    /// Time budget for the whole run (warm-up included): every cell still
    /// sampling then stops with what it has. Seconds, or with a unit (90s,
    /// 2m). [default: none]
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = values::positive_seconds)]
    pub max_total_time: Option<Seconds>,

    /// Fewest samples per cell before precision or time may stop it. [default: per command]
    #[arg(long, value_name = "N", value_parser = values::at_least_one)]
    pub min_samples: Option<usize>,

    /// Take exactly N samples per cell, one per round, whatever the
    /// precision (as in the classic 10-run studies; overrides the stop rules).
    #[arg(long, value_name = "N", value_parser = values::at_least_one)]
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

/// Where a measuring run's results go: the database, the export files and
/// the table on the terminal. The measuring commands share it, so the one
/// study pipeline (`app::study`) reads it one way for all of them.
#[derive(Debug, Clone, Args, Serialize, Deserialize)]
pub struct OutputArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,

    #[command(flatten)]
    pub exports: ExportArgs,

    #[command(flatten)]
    pub display: DisplayArgs,
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
