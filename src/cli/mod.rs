//! The command line: one subcommand per capability. Only clap types live
//! here, and the vocabulary of named values they parse: `cli` imports
//! `crate::scenario` (the axes' names, the backends' names, presets,
//! shards) and nothing else of the crate, and `app` turns these options
//! into runs.
//!
//! Why the vocabulary: an option whose value is a name (`--group x25519`,
//! `--backend all,dimpl`) or a number with a unit (`--size 16k`,
//! `--max-time 500ms`) is parsed and checked here, so a bad value is
//! refused by clap with the valid names (exit 2) before any command runs,
//! the help lists the names an option takes, and shell completions offer
//! them (`tlslab completions bash`). The names themselves live in one
//! place, `scenario`, which imports no backend and nothing above it (the
//! backends' ids are there too; opening one is `backend`'s registry).
//! What stays text, and why, is said at each such option: addresses,
//! paths, row labels and stored-run specs.
//!
//! The files, as ripgrep's `flags/` are cut: [`values`] (numbers with a
//! unit), [`names`] (the parsers of named values, and the help lists they
//! give), [`shared`] (the options several commands share), and one file
//! per command, mirroring `app/`.

mod bulk;
mod child;
mod compare;
mod cost;
mod handshake;
mod load;
mod manual;
mod merge;
pub mod names;
mod recommend;
mod registries;
mod report;
mod serve;
mod shared;
mod speed;
mod tunnel;
pub mod usage;
pub mod values;

use clap::{Parser, Subcommand};

pub use bulk::BulkArgs;
pub use child::{CountedChildArgs, GenericChildArgs, GenericPlan};
pub use compare::CompareArgs;
pub use cost::CostArgs;
pub use handshake::{HandshakeArgs, Link, MutualArg};
pub use load::{LoadArgs, LoadAxisArgs, LoadHttp, LoadMode};
pub use manual::{CompletionsArgs, ManArgs};
pub use merge::MergeArgs;
pub use names::{Algorithm, AlgorithmParser, BackendListParser, NamedParser};
pub use recommend::{RecommendArgs, Role};
pub use report::ReportArgs;
pub use serve::{ServeArgs, ServeOfferArgs};
pub use shared::{
    AxisArgs, DatabaseArgs, DisplayArgs, ExportArgs, MeasureArgs, OutputArgs, SamplingArgs,
    ShardArgs,
};
pub use speed::SpeedArgs;
pub use tunnel::TunnelArgs;
pub use values::{NetworkProfiles, Percent, Seconds, Size};

/// Measure what the cryptography of TLS costs on this machine: each key
/// exchange, certificate and cipher suite, on the server and on the client.
#[derive(Debug, Parser)]
// Help is wrapped at 80 columns at most, however wide the terminal: lines a
// person reads whole, and examples written to fit them.
#[command(name = "tlslab", version, about, long_about = None, max_term_width = 80)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Measure full or resumed handshakes per key exchange, certificate and
    /// suite: client and server in one process over memory buffers, or over
    /// TCP or UDP on loopback (--transport), against nginx (--server), over
    /// an emulated link (--link) or with `tlslab serve` on another host (--remote).
    Handshake(Box<HandshakeArgs>),
    /// Measure the cost of protecting application data after the handshake,
    /// per backend, protocol, suite and write size, each side apart, against
    /// a no-crypto row.
    Bulk(Box<BulkArgs>),
    /// Measure primitive rates per backend: signatures, key exchange, KEMs,
    /// ciphers, hashes and MACs (ops/s, µs/op, MB/s).
    Speed(Box<SpeedArgs>),
    /// Model each side's CPU per handshake from counted operations and
    /// primitive costs, beside the measured cost; --breakdown shows where it goes.
    Cost(Box<CostArgs>),
    /// List the backends, their library versions and what each supports, and the presets.
    List,
    /// Show a stored run again, as a table or an export; --list lists the stored runs.
    Report(ReportArgs),
    /// Load an HTTPS server (nginx or tlslab's embedded server, started on
    /// loopback, or one you run) at a planned request rate; latency percentiles per phase from each
    /// request's due time, the server's CPU per request and where it goes.
    Load(Box<LoadArgs>),
    /// Run tlslab's own HTTPS server (HTTP/1.1, pages /page_SIZE) on one
    /// backend and scenario until --duration or Ctrl-C; then report its
    /// CPU per request and per handshake and, on rustls, where it went.
    Serve(Box<ServeArgs>),
    /// Compare two stored runs of one kind row by row: both medians, their
    /// ratio with a 95% interval and a verdict; exit status 1 when a row is
    /// slower beyond --threshold.
    Compare(CompareArgs),
    /// Measure a VPN data channel per cipher, digest, compression, payload
    /// and packet size: in process, or through a real OpenVPN tunnel.
    Tunnel(Box<TunnelArgs>),
    /// Combine result databases (e.g. the shards of a matrix run on several
    /// machines) into one, each run once with its own host record.
    Merge(MergeArgs),
    /// From a stored run, the configurations not beaten on both cost and
    /// security (the Pareto set) above a security floor, and why every
    /// other row is out.
    Recommend(RecommendArgs),
    /// Print a shell completion script on standard output: bash, zsh, fish,
    /// powershell or elvish.
    Completions(CompletionsArgs),
    /// Print the manual page (roff) on standard output: tlslab's, or one
    /// command's (`tlslab man handshake`).
    Man(ManArgs),
    /// Internal: count a plan's handshakes under callgrind (tlslab runs
    /// itself so for `--measure instructions`).
    #[command(name = "counted-child", hide = true)]
    CountedChild(CountedChildArgs),
    /// Internal: run a command again with the libraries' CPU features
    /// masked (tlslab runs itself so for `--cpu-features generic`).
    #[command(name = "generic-child", hide = true)]
    GenericChild(GenericChildArgs),
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    /// The options whose values a person picks from a short list the
    /// option's own text explains value by value, each hiding clap's list.
    const EXPLAINED_IN_THEIR_TEXT: &[&str] = &["link", "mode"];

    /// Issue 23: help texts typed the names of an option's values by hand
    /// beside `hide_possible_values`; the lists come from the vocabulary.
    #[test]
    fn every_option_of_named_values_lists_them_from_the_vocabulary() {
        let tlslab = Cli::command();
        for command in tlslab.get_subcommands() {
            for arg in command.get_arguments() {
                let names = arg.get_possible_values();
                if names.is_empty() || EXPLAINED_IN_THEIR_TEXT.contains(&arg.get_id().as_str()) {
                    continue;
                }
                assert!(
                    !arg.is_hide_possible_values_set(),
                    "{} --{}: its values are hidden from the help",
                    command.get_name(),
                    arg.get_id()
                );
            }
        }
    }

    /// Every command's help fits 80 columns, examples included (a long
    /// example wrapped by clap would read as two commands).
    #[test]
    fn every_help_fits_80_columns() {
        let mut tlslab = Cli::command();
        tlslab.build();
        let mut helps = vec![("tlslab".to_string(), tlslab.render_long_help())];
        for command in tlslab.get_subcommands_mut() {
            let help = command.render_long_help();
            helps.push((command.get_name().to_string(), help));
        }
        for (name, help) in helps {
            let help = help.to_string();
            for line in help.lines() {
                assert!(
                    line.chars().count() <= 80,
                    "{name} --help has a line of {} columns:\n{line}",
                    line.chars().count()
                );
            }
        }
    }
}
