//! `tlslab completions SHELL` and `tlslab man`: what the command line says
//! about itself, generated from the clap definitions in `cli/` so the
//! scripts and the pages never fall behind the options.

use std::io::Write;

use anyhow::{Context, Result};
use clap::CommandFactory;

use super::session::usage;
use crate::cli::{Cli, CompletionsArgs, ManArgs};

/// Writes the completion script for one shell on standard output.
pub fn completions(args: &CompletionsArgs) -> Result<i32> {
    let mut command = Cli::command();
    let mut out = std::io::stdout().lock();
    clap_complete::generate(args.shell, &mut command, "tlslab", &mut out);
    out.flush().context("cannot write the completion script")?;
    Ok(0)
}

/// Writes tlslab(1), or tlslab-COMMAND(1), as roff on standard output.
pub fn man(args: &ManArgs) -> Result<i32> {
    let page = page(args.command.as_deref())?;
    let mut out = std::io::stdout().lock();
    out.write_all(&page)
        .and_then(|()| out.flush())
        .context("cannot write the manual page")?;
    Ok(0)
}

/// The roff source of tlslab(1) (`None`) or of one command's page.
pub fn page(command: Option<&str>) -> Result<Vec<u8>> {
    let mut tlslab = Cli::command();
    tlslab.build();
    let command = match command {
        None => tlslab,
        Some(name) => {
            let names: Vec<String> = tlslab
                .get_subcommands()
                .filter(|sub| !sub.is_hide_set())
                .map(|sub| sub.get_name().to_string())
                .filter(|name| name != "help")
                .collect();
            let sub = tlslab.find_subcommand(name).ok_or_else(|| {
                usage(format!(
                    "no command named {name:?}; the commands: {}",
                    names.join(", ")
                ))
            })?;
            // The page of a command is named as git's are: tlslab-handshake(1).
            sub.clone()
                .name(format!("tlslab-{}", sub.get_name()))
                .bin_name(format!("tlslab {}", sub.get_name()))
                .version(crate::TOOL_VERSION)
        }
    };
    let mut roff = Vec::new();
    clap_mangen::Man::new(command)
        .render(&mut roff)
        .context("cannot render the manual page")?;
    Ok(roff)
}
