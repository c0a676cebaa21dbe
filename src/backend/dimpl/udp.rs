//! dimpl over loopback UDP: client and server each in its own thread
//! ([`run_sides`]) on a connected socket pair, each side feeding dimpl the
//! datagrams it receives and sending what dimpl says, its retransmission
//! timer on the real clock (a socket read waits at most until the timer is
//! due). The server's cookie exchange happens as over memory.

use std::io::{ErrorKind, Read};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use super::{DimplHandshaker, Side, MAX_TIMEOUTS};
use crate::backend::socket::run_sides;
use crate::backend::HandshakeSample;
use crate::transport::udp::{udp_pair, Datagrams};
use crate::transport::IO_TIMEOUT;

/// The least a socket read waits for a datagram.
const MIN_WAIT: Duration = Duration::from_millis(1);

impl DimplHandshaker {
    /// One handshake over a fresh pair of loopback UDP sockets.
    pub(super) fn handshake_over_udp(&self) -> Result<HandshakeSample> {
        let (client_socket, server_socket) = udp_pair()?;
        let client_maker = self.side_maker(true);
        let server_maker = self.side_maker(false);
        let sides = run_sides(
            || complete(client_maker.make(client_socket, Instant::now())?),
            move || complete(server_maker.make(server_socket, Instant::now())?),
        )?;
        Ok(HandshakeSample {
            negotiated: self.negotiated_by(&sides.client, &sides.server)?,
            client: sides.client_time,
            server: sides.server_time,
            wall_ns: sides.wall_ns,
        })
    }
}

/// Drives one side until dimpl says it is connected: every datagram that
/// arrives goes to dimpl and every answer onto the socket; a read that
/// waits past the side's timer fires it (dimpl resends its flight).
fn complete(mut side: Side<Datagrams>) -> Result<Side<Datagrams>> {
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
                side.dtls
                    .handle_packet(&side.datagram[..length])
                    .map_err(|error| anyhow!("handshake failed: {error}"))?;
                side.drain()?;
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
