//! QUIC on rustls over loopback UDP: client and server in two threads
//! ([`crate::backend::socket::run_sides`]), each driving its quinn
//! endpoint on its own connected socket with the real clock: it takes in
//! what waits, sends what quinn has to send, and waits in `poll` for the
//! next datagram or its next timer, never spinning. Each side's time runs
//! from its start until its connection says it is connected, so its CPU
//! includes the kernel's work for its socket calls, as for TLS over TCP.
//! Resumed handshakes run over memory only (the client would have to read
//! its ticket after the handshake). A side run apart ([`QuicApart`]: the
//! other in another process, over the emulated link or `--remote`) is
//! driven the same way on the socket the caller gives it.

use std::os::fd::AsRawFd;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use super::instrument;
use super::quic::{DatagramLink, QuicHandshaker, QuicSide};
use crate::backend::socket::{run_sides, Sides};
use crate::backend::{ApartConnection, ApartHandshake, ApartSide, Carrier, HandshakeSample, Turn};
use crate::scenario::{HandshakeScenario, TlsVersion, Transport};
use crate::transport::udp::{udp_pair, wait_for_datagram, Datagrams};
use crate::transport::IO_TIMEOUT;

/// Why the rustls backends cannot run a QUIC scenario they otherwise
/// declare, or `None`.
pub(super) fn unsupported_reason(scenario: &HandshakeScenario) -> Option<String> {
    (scenario.version == TlsVersion::Quic
        && scenario.transport == Transport::Udp
        && scenario.resumption.is_on())
    .then(|| "resumed QUIC handshakes run over memory only so far".to_string())
}

impl QuicHandshaker {
    /// One handshake over a fresh pair of connected loopback UDP sockets.
    pub(super) fn handshake_over_udp(&mut self) -> Result<HandshakeSample> {
        let (client_socket, server_socket) = udp_pair()?;
        for socket in [&client_socket, &server_socket] {
            socket
                .set_nonblocking(true)
                .context("a non-blocking UDP socket")?;
        }
        let server_address = client_socket.peer_address()?;
        let client_address = server_socket.peer_address()?;
        let mtu_bytes = self.mtu_bytes;
        let mut client = QuicSide::new(
            Turn::Client,
            self.client_endpoint(),
            client_socket,
            server_address,
            mtu_bytes,
        );
        let server = QuicSide::new(
            Turn::Server,
            self.server_endpoint(),
            server_socket,
            client_address,
            mtu_bytes,
        );
        let config = self.client.clone();
        let Sides {
            client_time,
            server_time,
            wall_ns,
            ..
        } = run_sides(
            || {
                instrument::set_side(instrument::Side::Client);
                client.connect(Instant::now(), config, server_address)?;
                until_connected(&mut client)
            },
            move || {
                instrument::set_side(instrument::Side::Server);
                let mut server = server;
                until_connected(&mut server)?;
                Ok(server)
            },
        )?;
        Ok(HandshakeSample {
            client: client_time,
            server: server_time,
            wall_ns,
            negotiated: self.negotiated()?,
            split_unsure: false,
        })
    }
}

/// One side of QUIC handshakes whose peer runs elsewhere: each over the
/// connected UDP socket it is given.
pub(super) struct QuicApart {
    pub(super) handshaker: QuicHandshaker,
    pub(super) side: Turn,
}

impl ApartSide for QuicApart {
    fn handshake(&mut self, carrier: Carrier) -> Result<ApartHandshake> {
        let Carrier::Udp(socket) = carrier else {
            bail!("QUIC runs over UDP, not over TCP");
        };
        socket
            .set_nonblocking(true)
            .context("a non-blocking UDP socket")?;
        let peer = socket.peer_address()?;
        let handshaker = &self.handshaker;
        let endpoint = match self.side {
            Turn::Client => handshaker.client_endpoint(),
            Turn::Server => handshaker.server_endpoint(),
        };
        let mut side = QuicSide::new(self.side, endpoint, socket, peer, handshaker.mtu_bytes);
        if self.side == Turn::Client {
            side.connect(Instant::now(), handshaker.client.clone(), peer)?;
        }
        until_connected(&mut side)?;
        let negotiated = match self.side {
            Turn::Client => Some(handshaker.negotiated()?),
            Turn::Server => None,
        };
        Ok(ApartHandshake {
            negotiated,
            connection: Box::new(side),
        })
    }
}

/// A connected side kept until the peer is done: what arrives (a resent
/// flight) goes to quinn, its timers fire, and it sends what it answers.
impl ApartConnection for QuicSide<Datagrams> {
    fn linger_fd(&self) -> Option<std::os::fd::RawFd> {
        Some(self.end.as_raw_fd())
    }

    fn answer(&mut self) -> Result<()> {
        self.step(Instant::now())
    }
}

/// Drives `side` on its socket until its connection is connected, waiting
/// for a datagram or the next timer in between.
pub(super) fn until_connected<E: DatagramLink + AsRawFd>(side: &mut QuicSide<E>) -> Result<()> {
    until(side, |side| side.connected)
}

/// Drives `side` on its socket until `done` says so, waiting for a
/// datagram or the next timer in between.
pub(super) fn until<E: DatagramLink + AsRawFd>(
    side: &mut QuicSide<E>,
    done: impl Fn(&QuicSide<E>) -> bool,
) -> Result<()> {
    let give_up = Instant::now() + IO_TIMEOUT;
    loop {
        side.step(Instant::now())?;
        if done(side) {
            return Ok(());
        }
        let now = Instant::now();
        if now >= give_up {
            bail!("no QUIC handshake within {} s", IO_TIMEOUT.as_secs());
        }
        let wake = side.next_timer().map_or(give_up, |due| due.min(give_up));
        wait_for_datagram(&side.end, wake.saturating_duration_since(now))?;
    }
}
