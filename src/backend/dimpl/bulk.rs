//! Application data over an established dimpl connection, for `tlslab bulk`:
//! the client writes, the server reads, over the datagram channel.

use anyhow::{anyhow, bail, Context, Result};
use std::io::Read;

use super::Endpoint;
use crate::backend::{BulkPair, Negotiated};
use crate::scenario::TlsVersion;
use crate::transport::datagram::{DatagramEnd, DatagramPipe};

/// The most application data one record may carry so that its datagram
/// fits the MTU: dimpl sends each write as one record and leaves the size
/// to the application, as a DTLS application must (RFC 9147 §4.4). The
/// overhead is DTLS 1.2's 13-byte header with an 8-byte explicit nonce, or
/// DTLS 1.3's 5-byte header with the inner content type, plus a 16-byte tag.
pub(super) fn record_payload_bytes(version: TlsVersion, mtu_bytes: u16) -> usize {
    let overhead = match version {
        TlsVersion::Dtls13 => 5 + 1 + 16,
        _ => 13 + 8 + 16,
    };
    usize::from(mtu_bytes).saturating_sub(overhead).max(1)
}

/// An established dimpl client and server over the datagram channel: the
/// client writes, the server reads.
pub(super) struct DimplBulkPair {
    pub(super) negotiated: Negotiated,
    pub(super) pipe: DatagramPipe,
    pub(super) client: Endpoint,
    pub(super) server: Endpoint,
    pub(super) client_end: DatagramEnd,
    pub(super) server_end: DatagramEnd,
    pub(super) record_bytes: usize,
}

impl BulkPair for DimplBulkPair {
    fn negotiated(&self) -> Option<&Negotiated> {
        Some(&self.negotiated)
    }

    fn send(&mut self, data: &[u8]) -> Result<()> {
        for record in data.chunks(self.record_bytes) {
            let accepted = self
                .client
                .dtls
                .send_application_data(record)
                .map_err(|error| anyhow!("sending application data failed: {error}"))?;
            if accepted != record.len() {
                bail!("dimpl took {accepted} of {} bytes", record.len());
            }
            self.client.drain(&mut self.client_end)?;
        }
        Ok(())
    }

    fn receive(&mut self, out: &mut [u8]) -> Result<usize> {
        let mut filled = 0;
        loop {
            filled += self.server.hand_out(&mut out[filled..]);
            if filled == out.len() || !self.pipe.pending_for_server() {
                return Ok(filled);
            }
            let length = self
                .server_end
                .read(&mut self.server.datagram)
                .context("reading a datagram")?;
            self.server
                .take(length, "receiving application data", &mut self.server_end)?;
        }
    }
}
