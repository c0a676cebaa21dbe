//! `tlslab completions` and `tlslab man`: their options.

use clap::Args;

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  tlslab completions bash > ~/.local/share/bash-completion/completions/tlslab
  tlslab completions zsh > ~/.zfunc/_tlslab   (with fpath+=~/.zfunc in ~/.zshrc)
  tlslab completions fish > ~/.config/fish/completions/tlslab.fish")]
pub struct CompletionsArgs {
    /// The shell the script is for.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  tlslab man | man -l -
  tlslab man > ~/.local/share/man/man1/tlslab.1
  tlslab man handshake > ~/.local/share/man/man1/tlslab-handshake.1")]
pub struct ManArgs {
    /// One command's page (tlslab-COMMAND(1)) instead of tlslab(1).
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,
}
