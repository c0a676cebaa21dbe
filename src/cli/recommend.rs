//! `tlslab recommend`: its options, and the roles it prices a row for.

use std::fmt;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::names::{not_memory, NamedParser};
use super::shared::{DisplayArgs, ExportArgs};
use crate::scenario::Measure;

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  tlslab recommend   (the latest run, server CPU per handshake)
  tlslab recommend --role client --min-security 128
  tlslab recommend --run 4 --role tunnel --allow-weak
  tlslab recommend --run 5 --measure instructions
      (a run counted with --measure instructions)

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
    #[arg(long, value_parser = NamedParser::listing(not_memory), value_name = "MEASURE")]
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
