//! dimpl over loopback UDP on the drivers ([`super::sides`]): both sides
//! in this process each in its own thread ([`run_sides`]) on the datagram
//! driver's timers, kept for bulk's application data in two threads; and
//! a side run apart.

use std::time::Instant;

use anyhow::{bail, Context, Result};

use super::bulk::record_payload_bytes;
use super::sides::Lingering;
use super::{DimplHandshaker, Endpoint};
use crate::backend::driver::datagram::{self, handshake_on_timers};
use crate::backend::driver::stream::Connected;
use crate::backend::driver::{run_sides, Sides};
use crate::backend::socket::SocketBulkPair;
use crate::backend::{ApartHandshake, ApartSide, Carrier, HandshakeSample};
use crate::scenario::Side;
use crate::transport::udp::{bulk_udp_pair, udp_pair, Datagrams};
use crate::transport::IO_TIMEOUT;

type OverUdp = Connected<Endpoint, Datagrams>;

impl DimplHandshaker {
    /// One handshake over a fresh pair of loopback UDP sockets.
    pub(super) fn handshake_over_udp(&self) -> Result<HandshakeSample> {
        let (client_socket, server_socket) = udp_pair()?;
        let sides = self.connect_over_udp(client_socket, server_socket)?;
        Ok(HandshakeSample {
            negotiated: self.negotiated_by(&sides.client.side, &sides.server.side)?,
            client: sides.client_time,
            server: sides.server_time,
            wall_ns: sides.wall_ns,
            split_unsure: false,
        })
    }

    /// A client and a server over these sockets, each in its own thread,
    /// their handshake done.
    fn connect_over_udp(
        &self,
        client_socket: Datagrams,
        server_socket: Datagrams,
    ) -> Result<Sides<OverUdp, OverUdp>> {
        let client_maker = self.side_maker(true);
        let server_maker = self.side_maker(false);
        let complete = |mut wire: Datagrams, maker: super::SideMaker| {
            let mut side = maker.make(&mut wire, Instant::now())?;
            handshake_on_timers(&mut side, &mut wire)?;
            Ok(Connected { side, wire })
        };
        run_sides(
            || complete(client_socket, client_maker),
            move || complete(server_socket, server_maker),
        )
    }

    /// A client and a server over a fresh pair of loopback UDP sockets,
    /// their handshake done, ready to carry application data in two
    /// threads: each write cut into records that fit the MTU, the reader's
    /// socket given a large receive buffer.
    pub(super) fn bulk_pair_over_udp(&self) -> Result<SocketBulkPair> {
        let (client_socket, server_socket) = bulk_udp_pair()?;
        let sides = self
            .connect_over_udp(client_socket, server_socket)
            .context("the handshake over UDP")?;
        // The handshake left whatever wait its last timer needed; every
        // read of the data waits as long as any socket read may.
        sides.server.wire.set_read_timeout(IO_TIMEOUT)?;
        let negotiated = self.negotiated_by(&sides.client.side, &sides.server.side)?;
        let most = record_payload_bytes(self.version, self.mtu_bytes);
        Ok(datagram::bulk_pair(negotiated, sides, most))
    }
}

/// One side of a dimpl handshaker over UDP, its peer elsewhere.
pub(super) struct DimplApart {
    pub(super) handshaker: DimplHandshaker,
    pub(super) side: Side,
}

impl ApartSide for DimplApart {
    fn handshake(&mut self, carrier: Carrier) -> Result<ApartHandshake> {
        let Carrier::Udp(mut wire) = carrier else {
            bail!("dimpl implements DTLS only, not TLS over TCP");
        };
        let client = self.side == Side::Client;
        let mut side = self
            .handshaker
            .side_maker(client)
            .make(&mut wire, Instant::now())?;
        if client {
            side.heard = Some(Vec::new());
        }
        handshake_on_timers(&mut side, &mut wire)?;
        let negotiated = if client {
            let heard = side.heard.clone().unwrap_or_default();
            Some(self.handshaker.negotiated_from(&side, &heard)?)
        } else {
            None
        };
        Ok(ApartHandshake {
            negotiated,
            connection: Box::new(Lingering(Connected { side, wire })),
        })
    }
}
