//! The commands, one file each: options -> plan -> run -> export. The
//! measuring commands are studies run by one pipeline ([`study`]); what
//! every command shares (usage errors, sampling options, Ctrl-C, progress,
//! exports, exit codes) is in [`session`]. Nothing below `app` imports it.

mod axes;
pub mod bulk;
pub mod capacity;
mod combine;
pub mod compare;
pub mod cost;
pub mod generic;
pub mod handshake;
mod handshake_servers;
pub mod list;
pub mod load;
mod load_shards;
pub mod manual;
pub mod merge;
mod network;
pub mod recommend;
pub mod report;
pub mod serve;
mod serve_program;
pub mod session;
pub mod speed;
mod study;
pub mod tunnel;
mod tunnel_rows;
mod tunnel_setup;

use anyhow::Result;

use crate::cli::{Cli, Command, GenericPlan};

pub use session::{exit_code, EXIT_INTERRUPTED};

/// Runs a parsed command line and returns the exit code.
pub fn run(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Handshake(args) if args.capacity => capacity::run(&args),
        Command::Handshake(args) => handshake::run(&args),
        Command::Bulk(args) => bulk::run(&args),
        Command::Speed(args) => speed::run(&args),
        Command::Cost(args) => cost::run(&args),
        Command::List => {
            print!("{}", list::text());
            Ok(0)
        }
        Command::Report(args) => report::run(&args),
        Command::Load(args) => load::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::Compare(args) => compare::run(&args),
        Command::Tunnel(args) => tunnel::run(&args),
        Command::Merge(args) => merge::run(&args),
        Command::Recommend(args) => recommend::run(&args),
        Command::CountedChild(args) => {
            crate::workload::counted::child::run(&args.plan, &args.out)?;
            Ok(0)
        }
        Command::GenericChild(args) => match generic::read_plan(&args)? {
            GenericPlan::Handshake(args) => handshake::run(&args),
            GenericPlan::Speed(args) => speed::run(&args),
            GenericPlan::Tunnel(args) => tunnel::run(&args),
        },
        Command::Completions(args) => manual::completions(&args),
        Command::Man(args) => manual::man(&args),
    }
}
