//! What a server accepts, as a measuring client's probe finds it (see
//! [`super::MeasuringClient::probe`]): the target, and one [`Attempt`] per
//! version, group or suite tried. The report's probe view reads these; each
//! library's client fills them in.

use std::net::SocketAddr;
use std::time::Duration;

use crate::scenario::TlsVersion;

/// The server to probe.
pub struct ProbeTarget {
    pub address: SocketAddr,
    /// Sent as SNI.
    pub server_name: String,
    /// The wait between two tries (the rate cap off loopback).
    pub pause: Duration,
}

/// What one try offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Axis {
    Version,
    Group,
    Suite,
}

/// One handshake of the probe.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Attempt {
    pub axis: Axis,
    /// The version, group or suite offered alone ("tls1.3", "x25519",
    /// "TLS_AES_128_GCM_SHA256").
    pub offered: String,
    /// The protocol version the try was made with.
    pub version: TlsVersion,
    /// What was negotiated, or why the handshake failed.
    pub outcome: Result<Accepted, String>,
}

/// A handshake the server completed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Accepted {
    pub version: String,
    pub suite: String,
    pub group: Option<String>,
    /// The server's certificate: key type and size, chain length and bytes.
    pub certificate: String,
}

impl Attempt {
    /// Returns true if and only if the server completed this try's handshake.
    pub fn accepted(&self) -> bool {
        self.outcome.is_ok()
    }
}
