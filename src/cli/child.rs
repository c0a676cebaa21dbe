//! The hidden commands tlslab runs itself as: a counted child (a plan's
//! handshakes under callgrind) and a generic-CPU child (a command again
//! with the libraries' CPU features masked).

use std::path::PathBuf;

use clap::Args;
use serde::{Deserialize, Serialize};

use super::{HandshakeArgs, SpeedArgs, TunnelArgs};

/// The files of a counted child: its plan, and where its outcomes go.
#[derive(Debug, Clone, Args)]
pub struct CountedChildArgs {
    pub plan: PathBuf,
    pub out: PathBuf,
}

/// The file of a generic-CPU child: its plan ([`GenericPlan`], as JSON).
#[derive(Debug, Clone, Args)]
pub struct GenericChildArgs {
    pub plan: PathBuf,
}

/// What a generic-CPU child runs: the parent's own parsed arguments,
/// changed only where the child must differ (its CPU features, its
/// database, no exports, quiet, the backends whose CPU features can be
/// masked; for `tunnel`, the engines), so every option reaches the child
/// as the parent parsed it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GenericPlan {
    Handshake(Box<HandshakeArgs>),
    Speed(Box<SpeedArgs>),
    Tunnel(Box<TunnelArgs>),
}
