//! The `tlslab` command: parse the command line, run, map errors to exit codes.

use clap::Parser;

// Every allocation passes tlslab's heap counter (`--measure memory`).
tlslab::interpose_malloc!();

fn main() {
    let cli = tlslab::cli::Cli::parse();
    match tlslab::app::run(cli) {
        Ok(code) => std::process::exit(code),
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::exit(tlslab::app::exit_code(&error));
        }
    }
}
