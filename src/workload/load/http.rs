//! The HTTP versions `load` speaks, and the one handshake that asks a
//! server which it chooses by ALPN before a load, so a server without
//! HTTP/2 is told apart before anything is measured.

use anyhow::{Context, Result};
use serde::Serialize;

use super::Endpoint;
#[cfg(doc)]
use super::Plan;

/// The HTTP version a load speaks, negotiated by ALPN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
pub enum HttpVersion {
    /// HTTP/1.1 (ALPN `http/1.1`): one request at a time per connection.
    #[serde(rename = "1.1")]
    Http1_1,
    /// HTTP/2 (ALPN `h2`): up to [`Plan::streams`] requests at once per
    /// connection, as streams.
    #[serde(rename = "2")]
    Http2,
}

impl HttpVersion {
    pub const ALL: [HttpVersion; 2] = [HttpVersion::Http1_1, HttpVersion::Http2];

    /// The version as `--http` takes it: "1.1" or "2".
    pub fn id(self) -> &'static str {
        match self {
            HttpVersion::Http1_1 => "1.1",
            HttpVersion::Http2 => "2",
        }
    }

    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.id() == id)
    }

    /// The name people write: "HTTP/1.1", "HTTP/2".
    pub fn describe(self) -> &'static str {
        match self {
            HttpVersion::Http1_1 => "HTTP/1.1",
            HttpVersion::Http2 => "HTTP/2",
        }
    }
}

/// The protocol the server at `endpoint` chooses when offered `h2` and
/// `http/1.1` by ALPN, from one handshake before a load (None: it chose
/// none). A server that cannot carry HTTP/2 is told apart this way
/// before anything is measured.
pub fn chosen_alpn(endpoint: &Endpoint) -> Result<Option<String>> {
    let tcp = std::net::TcpStream::connect_timeout(&endpoint.address, super::IO_TIMEOUT)
        .with_context(|| format!("connecting to {}", endpoint.address))?;
    tcp.set_read_timeout(Some(super::IO_TIMEOUT))?;
    tcp.set_write_timeout(Some(super::IO_TIMEOUT))?;
    let offer = crate::backend::client::Offer {
        server_name: &endpoint.server_name,
        session: None,
        alpn: b"\x02h2\x08http/1.1",
        read_ahead: false,
    };
    let mut stream = endpoint.context.connection(tcp, &offer)?;
    let handshake =
        |e: &dyn std::fmt::Display| anyhow::anyhow!("TLS handshake with {}: {e}", endpoint.address);
    match stream.handshake() {
        Ok(true) => {}
        Ok(false) => return Err(handshake(&"timed out")),
        Err(failure) => return Err(handshake(&failure)),
    }
    let chosen = stream
        .alpn_protocol()
        .map(|p| String::from_utf8_lossy(p).into_owned());
    stream.shutdown();
    Ok(chosen)
}
