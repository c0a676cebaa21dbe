//! Bulk data over QUIC on rustls through quinn-proto: after a handshake
//! that is never counted, the client writes application data on one
//! unidirectional stream and the server reads it, both endpoints in this
//! thread over the memory datagram channel (the scenario's MTU), as
//! [`super::quic`] drives a handshake. The sender's calls protect the
//! stream's frames into packets (and take the receiver's acknowledgements
//! and flow-control credit in); the receiver's take the packets in, open
//! them, hand out the stream's bytes and answer with acknowledgements.
//!
//! The path is set so that only cryptography and QUIC's own bookkeeping
//! are measured, not a network it does not have: a congestion window
//! beyond 4 GiB (quinn then also paces nothing) and flow-control windows
//! far beyond what one chunk of a sample writes, so every write leaves at
//! once whole. Time is the real clock: no timer is due while data flows.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use quinn_proto::congestion::NewRenoConfig;
use quinn_proto::{Dir, ReadError, StreamId, TransportConfig, VarInt};

use super::quic::{QuicHandshaker, QuicSide, CLIENT_ADDRESS, SERVER_ADDRESS};
use crate::backend::{BulkPair, CpuReadings, Negotiated, Turns};
use crate::scenario::Side;
use crate::transport::datagram::{DatagramEnd, DatagramPipe};

/// The congestion window: past `u32::MAX` quinn's pacer stands aside too.
const UNLIMITED_WINDOW_BYTES: u64 = 1 << 34;
/// Flow-control credit, per stream and per connection: far above a
/// sample's chunk (256 KiB), so the sender never waits for credit.
const FLOW_WINDOW_BYTES: u32 = 64 << 20;

/// A QUIC client and server that completed their handshake, the client's
/// stream open: what `bulk` times.
pub(super) struct QuicBulkPair {
    negotiated: Negotiated,
    pipe: DatagramPipe,
    client: QuicSide<DatagramEnd>,
    server: QuicSide<DatagramEnd>,
    /// The client's stream, opened after the handshake.
    sending: StreamId,
    /// The same stream on the server, once its first bytes arrived.
    receiving: Option<StreamId>,
}

impl QuicBulkPair {
    /// The handshake of `handshaker`'s scenario, on a path for bulk data,
    /// then the client's stream.
    pub(super) fn establish(handshaker: &mut QuicHandshaker) -> Result<Self> {
        let path = Arc::new(bulk_path(handshaker.mtu_bytes));
        let mut server_config = (*handshaker.server).clone();
        server_config.transport_config(Arc::clone(&path));
        handshaker.server = Arc::new(server_config);
        handshaker.client.transport_config(path);

        let pipe = DatagramPipe::new(handshaker.mtu_bytes);
        let mut client = QuicSide::new(
            Side::Client,
            handshaker.client_endpoint(),
            pipe.client_end(),
            SERVER_ADDRESS,
            handshaker.mtu_bytes,
        );
        let mut server = QuicSide::new(
            Side::Server,
            handshaker.server_endpoint(),
            pipe.server_end(),
            CLIENT_ADDRESS,
            handshaker.mtu_bytes,
        );
        // Timed as a handshake is, and thrown away: bulk never counts it.
        let mut turns = Turns::start(CpuReadings::EveryTurn);
        handshaker
            .drive(&pipe, &mut client, &mut server, &mut turns)
            .context("the handshake before the data")?;
        let _ = turns.finish();
        let negotiated = handshaker.negotiated()?;
        let sending = client
            .connection()
            .and_then(|connection| connection.streams().open(Dir::Uni))
            .ok_or_else(|| anyhow!("the client could not open a stream"))?;
        Ok(Self {
            negotiated,
            pipe,
            client,
            server,
            sending,
            receiving: None,
        })
    }
}

/// quinn's path for bulk data: the scenario's MTU as for its handshakes,
/// no congestion or flow-control limit that memory would never raise.
fn bulk_path(mtu_bytes: u16) -> TransportConfig {
    let mut path = TransportConfig::default();
    path.initial_mtu(mtu_bytes)
        .min_mtu(mtu_bytes)
        .mtu_discovery_config(None)
        .initial_rtt(Duration::from_millis(1))
        .stream_receive_window(VarInt::from_u32(FLOW_WINDOW_BYTES))
        .receive_window(VarInt::from_u32(FLOW_WINDOW_BYTES))
        .send_window(u64::from(FLOW_WINDOW_BYTES));
    let mut congestion = NewRenoConfig::default();
    congestion.initial_window(UNLIMITED_WINDOW_BYTES);
    path.congestion_controller_factory(Arc::new(congestion));
    path
}

impl BulkPair for QuicBulkPair {
    fn negotiated(&self) -> Option<&Negotiated> {
        Some(&self.negotiated)
    }

    /// The data as one write on the stream, then every packet it makes
    /// (and any acknowledgement the client owes) onto the channel.
    fn send(&mut self, data: &[u8]) -> Result<()> {
        let now = Instant::now();
        // The receiver's acknowledgements and credit first, as a sender's
        // event loop takes what waits before it writes.
        self.client.step(now).context("client")?;
        let connection = self
            .client
            .connection()
            .ok_or_else(|| anyhow!("the client has no connection"))?;
        let written = connection
            .send_stream(self.sending)
            .write(data)
            .map_err(|error| anyhow!("writing on the stream: {error}"))?;
        if written < data.len() {
            bail!(
                "the stream took {written} of {} bytes: out of flow-control credit",
                data.len()
            );
        }
        self.client.step(now).context("client")
    }

    /// Every packet waiting for the server taken in, then the stream's
    /// bytes into `out`, then the acknowledgements and credit it owes.
    fn receive(&mut self, out: &mut [u8]) -> Result<usize> {
        let now = Instant::now();
        if self.pipe.pending_for_server() {
            self.server.step(now).context("server")?;
        }
        let connection = self
            .server
            .connection()
            .ok_or_else(|| anyhow!("the server has no connection"))?;
        if self.receiving.is_none() {
            self.receiving = connection.streams().accept(Dir::Uni);
        }
        let Some(stream) = self.receiving else {
            return Ok(0);
        };
        let mut receiving = connection.recv_stream(stream);
        let mut chunks = receiving
            .read(true)
            .map_err(|error| anyhow!("reading the stream: {error}"))?;
        let mut filled = 0;
        while filled < out.len() {
            match chunks.next(out.len() - filled) {
                Ok(Some(chunk)) => {
                    out[filled..filled + chunk.bytes.len()].copy_from_slice(&chunk.bytes);
                    filled += chunk.bytes.len();
                }
                Ok(None) | Err(ReadError::Blocked) => break,
                Err(error) => return Err(anyhow!("reading the stream: {error}")),
            }
        }
        let _ = chunks.finalize();
        self.server.step(now).context("server")?;
        Ok(filled)
    }
}
