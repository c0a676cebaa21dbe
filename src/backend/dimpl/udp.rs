//! dimpl over loopback UDP: client and server each in its own thread
//! ([`run_sides`]) on a connected socket pair, each side feeding dimpl the
//! datagrams it receives and sending what dimpl says, its retransmission
//! timer on the real clock (a socket read waits at most until the timer is
//! due). The server's cookie exchange happens as over memory. The bulk
//! pair over UDP keeps both sides for application data, in two threads.

use std::io::{ErrorKind, Read, Write};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::bulk::record_payload_bytes;
use super::{DimplHandshaker, Endpoint, MAX_TIMEOUTS};
use crate::backend::driver::{run_sides, Sides};
use crate::backend::socket::{LossExplained, SocketBulkPair};
use crate::backend::{ApartConnection, ApartHandshake, ApartSide, Carrier, HandshakeSample};
use crate::scenario::Side;
use crate::transport::udp::{bulk_udp_pair, udp_pair, Datagrams};
use crate::transport::IO_TIMEOUT;

/// The least a socket read waits for a datagram.
const MIN_WAIT: Duration = Duration::from_millis(1);

impl DimplHandshaker {
    /// One handshake over a fresh pair of loopback UDP sockets.
    pub(super) fn handshake_over_udp(&self) -> Result<HandshakeSample> {
        let (client_socket, server_socket) = udp_pair()?;
        let sides = self.connect_over_udp(client_socket, server_socket)?;
        Ok(HandshakeSample {
            negotiated: self.negotiated_by(&sides.client, &sides.server)?,
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
    ) -> Result<Sides<Endpoint<Datagrams>, Endpoint<Datagrams>>> {
        let client_maker = self.side_maker(true);
        let server_maker = self.side_maker(false);
        run_sides(
            || complete(client_maker.make(client_socket, Instant::now())?),
            move || complete(server_maker.make(server_socket, Instant::now())?),
        )
    }
}

/// Drives one side until dimpl says it is connected: every datagram that
/// arrives goes to dimpl and every answer onto the socket; a read that
/// waits past the side's timer fires it (dimpl resends its flight).
fn complete(mut side: Endpoint<Datagrams>) -> Result<Endpoint<Datagrams>> {
    let mut timeouts = 0;
    while !side.connected {
        let wait = side
            .timer
            .map_or(IO_TIMEOUT, |due| {
                due.saturating_duration_since(Instant::now())
            })
            .clamp(MIN_WAIT, IO_TIMEOUT);
        side.end.set_read_timeout(wait)?;
        match side.end.read(&mut side.datagram) {
            Ok(length) => {
                // dimpl learns the time only from handle_timeout: without
                // it a resent flight meets an expired rate limit as if
                // still running, and is not answered.
                side.tick(Instant::now())?;
                side.take(length, "handshake")?
            }
            Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                timeouts += 1;
                if timeouts > MAX_TIMEOUTS {
                    bail!(
                        "handshake stalled: nothing from the peer after {MAX_TIMEOUTS} retransmission timeouts"
                    );
                }
                side.tick(Instant::now())?;
            }
            Err(error) => return Err(error).context("reading a datagram"),
        }
    }
    Ok(side)
}

impl DimplHandshaker {
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
        sides.server.end.set_read_timeout(IO_TIMEOUT)?;
        let negotiated = self.negotiated_by(&sides.client, &sides.server)?;
        Ok(SocketBulkPair::new(
            Some(negotiated),
            Box::new(DimplWrites {
                side: sides.client,
                record_bytes: record_payload_bytes(self.version, self.mtu_bytes),
            }),
            Box::new(LossExplained(DimplReads { side: sides.server })),
        ))
    }
}

/// The sending side: one record per write, at most `record_bytes`.
struct DimplWrites {
    side: Endpoint<Datagrams>,
    record_bytes: usize,
}

impl Write for DimplWrites {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let record = &data[..data.len().min(self.record_bytes)];
        let accepted = self
            .side
            .dtls
            .send_application_data(record)
            .map_err(|error| {
                std::io::Error::other(format!("sending application data failed: {error}"))
            })?;
        self.side.drain().map_err(std::io::Error::other)?;
        Ok(accepted)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The receiving side: datagrams into dimpl, its plaintext out.
struct DimplReads {
    side: Endpoint<Datagrams>,
}

impl Read for DimplReads {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let side = &mut self.side;
            let moved = side.hand_out(out);
            if moved > 0 || out.is_empty() {
                return Ok(moved);
            }
            let length = side.end.read(&mut side.datagram)?;
            side.take(length, "receiving application data")
                .map_err(std::io::Error::other)?;
        }
    }
}

/// One side of a dimpl handshaker over UDP, its peer elsewhere.
pub(super) struct DimplApart {
    pub(super) handshaker: DimplHandshaker,
    pub(super) side: Side,
}

impl ApartSide for DimplApart {
    fn handshake(&mut self, carrier: Carrier) -> Result<ApartHandshake> {
        let Carrier::Udp(socket) = carrier else {
            bail!("dimpl implements DTLS only, not TLS over TCP");
        };
        let client = self.side == Side::Client;
        let mut side = self
            .handshaker
            .side_maker(client)
            .make(socket, Instant::now())?;
        if client {
            side.heard = Some(Vec::new());
        }
        let side = complete(side)?;
        let negotiated = if client {
            let heard = side.heard.clone().unwrap_or_default();
            Some(self.handshaker.negotiated_from(&side, &heard)?)
        } else {
            None
        };
        Ok(ApartHandshake {
            negotiated,
            connection: Box::new(side),
        })
    }
}

/// A side kept after its handshake feeds dimpl what arrives (a resent
/// flight) and sends what it answers, its timer on the real clock.
impl ApartConnection for Endpoint<Datagrams> {
    fn linger_fd(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        Some(self.end.as_raw_fd())
    }

    fn answer(&mut self) -> Result<()> {
        self.end.set_read_timeout(MIN_WAIT)?;
        match self.end.read(&mut self.datagram) {
            Ok(length) => {
                // The clock first (see `complete`): a side that lingers
                // idle has had no timeout since its last answer, and
                // dimpl would take the peer's next resend for one within
                // the rate limit of the last and leave it unanswered.
                self.tick(Instant::now())?;
                self.take(length, "answering the peer")
            }
            Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                self.tick(Instant::now())
            }
            Err(error) => Err(error).context("reading a datagram"),
        }
    }
}
