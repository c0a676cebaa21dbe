//! dimpl over loopback UDP on the drivers: each side a [`StreamSide`] on
//! the socket lent to each call, its handshake on the datagram driver's
//! timers with dimpl's stall rule ([`Stall::Timeouts`]); both sides in
//! this process each in its own thread ([`run_sides`]), the bulk pair's
//! sides kept for application data in two threads.

use std::io::{ErrorKind, Read};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::bulk::record_payload_bytes;
use super::{DimplHandshaker, Endpoint, MAX_TIMEOUTS};
use crate::backend::driver::datagram::{self, handshake_on_timers, Retransmits, Stall};
use crate::backend::driver::stream::Connected;
use crate::backend::driver::{run_sides, Sides, StreamSide, Wire};
use crate::backend::socket::SocketBulkPair;
use crate::backend::{ApartConnection, ApartHandshake, ApartSide, Carrier, HandshakeSample};
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

/// Returns true if and only if `error` is a read that timed out.
fn timed_out(error: &std::io::Error) -> bool {
    matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

impl StreamSide for Endpoint {
    /// One datagram in, what dimpl answers out.
    fn receive(&mut self, wire: &mut dyn Wire) -> Result<usize> {
        let length = match wire.read(&mut self.datagram) {
            Ok(length) => length,
            Err(error) if timed_out(&error) => return Err(error.into()),
            Err(error) => return Err(error).context("reading a datagram"),
        };
        // dimpl learns the time only from handle_timeout: without it a
        // resent flight meets an expired rate limit as if still running,
        // and is not answered.
        self.tick(Instant::now(), wire)?;
        self.take(length, "handshake", wire)?;
        Ok(length)
    }

    /// dimpl's output goes out as it comes: nothing is held.
    fn wants_write(&self) -> bool {
        false
    }

    fn send(&mut self, _: &mut dyn Wire) -> std::io::Result<usize> {
        Ok(0)
    }

    fn is_handshaking(&self) -> bool {
        !self.connected
    }

    fn close(&mut self, _: &mut dyn Wire) -> Result<()> {
        bail!("tlslab closes no dimpl connection over UDP")
    }

    /// One record, its datagram sent.
    fn write_plaintext(&mut self, data: &[u8], wire: &mut dyn Wire) -> std::io::Result<usize> {
        let accepted = self.dtls.send_application_data(data).map_err(|error| {
            std::io::Error::other(format!("sending application data failed: {error}"))
        })?;
        self.drain(wire).map_err(std::io::Error::other)?;
        Ok(accepted)
    }

    fn read_plaintext(&mut self, out: &mut [u8], wire: &mut dyn Wire) -> std::io::Result<usize> {
        loop {
            let moved = self.hand_out(out);
            if moved > 0 || out.is_empty() {
                return Ok(moved);
            }
            let length = wire.read(&mut self.datagram)?;
            self.take(length, "receiving application data", wire)
                .map_err(std::io::Error::other)?;
        }
    }
}

/// dimpl's timer, on the real clock.
impl Retransmits for Endpoint {
    fn timer(&self) -> Option<Duration> {
        self.timer
            .map(|due| due.saturating_duration_since(Instant::now()))
    }

    /// dimpl says nothing of a resend.
    fn on_timer(&mut self, wire: &mut dyn Wire) -> Result<bool> {
        self.tick(Instant::now(), wire)?;
        Ok(false)
    }

    fn state(&self) -> &'static str {
        match self.connected {
            true => "connected",
            false => "handshaking",
        }
    }

    fn stall(&self) -> Stall {
        Stall::Timeouts(MAX_TIMEOUTS)
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

/// A side kept after its handshake: it feeds dimpl what arrives (a resent
/// flight) and sends what it answers, its timer on the real clock.
struct Lingering(OverUdp);

impl ApartConnection for Lingering {
    fn linger_fd(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        Some(self.0.wire.as_raw_fd())
    }

    fn answer(&mut self) -> Result<()> {
        let Connected { side, wire } = &mut self.0;
        wire.set_read_timeout(Duration::from_millis(1))?;
        match wire.read(&mut side.datagram) {
            Ok(length) => {
                // The clock first (see `receive`): a side that lingers
                // idle has had no timeout since its last answer, and
                // dimpl would take the peer's next resend for one within
                // the rate limit of the last and leave it unanswered.
                side.tick(Instant::now(), wire)?;
                side.take(length, "answering the peer", wire)
            }
            Err(error) if timed_out(&error) => side.tick(Instant::now(), wire),
            Err(error) => Err(error).context("reading a datagram"),
        }
    }
}
