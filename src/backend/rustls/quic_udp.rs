//! QUIC on rustls over loopback UDP: client and server in two threads
//! ([`crate::backend::driver::run_sides`]), each driving its quinn
//! endpoint on its own connected socket with the real clock: it takes in
//! what waits, sends what quinn has to send, and waits in `poll` for the
//! next datagram or its next timer, never spinning. Each side's time runs
//! from its start until its connection says it is connected, so its CPU
//! includes the kernel's work for its socket calls, as for TLS over TCP.
//! A resumed handshake (`psk`, `0rtt`) runs the same way; in `0rtt` the
//! client writes its request as it connects and the server reads it inside
//! its time, as over memory ([`super::quic_early`]). The server sends its
//! ticket after the handshake: once both sides are done, this thread
//! drives both until the client has taken it in, outside either side's
//! time (the server wrote and sent it inside its own; the client's reading
//! it is left out, where over memory it is in the client's time), as
//! OpenSSL's QUIC over UDP does. A side run apart ([`QuicApart`]: the
//! other in another process, over the emulated link or `--remote`) is
//! driven the same way on the socket the caller gives it.

use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use super::instrument;
use super::quic::{DatagramLink, QuicHandshaker, QuicSide};
use super::quic_early::EarlyRequest;
use crate::backend::driver::{run_sides, Sides};
use crate::backend::{ApartConnection, ApartHandshake, ApartSide, Carrier, HandshakeSample};
use crate::scenario::Side;
use crate::transport::udp::{udp_pair, wait_for_datagram, Datagrams};
use crate::transport::IO_TIMEOUT;

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
            Side::Client,
            self.client_endpoint(),
            client_socket,
            server_address,
            mtu_bytes,
        );
        client.early = EarlyRequest::for_side(self.early_data, true);
        let mut server = QuicSide::new(
            Side::Server,
            self.server_endpoint(),
            server_socket,
            client_address,
            mtu_bytes,
        );
        server.early = EarlyRequest::for_side(self.early_data, false);
        let config = self.client.clone();
        let Sides {
            server,
            client_time,
            server_time,
            wall_ns,
            ..
        } = run_sides(
            || {
                instrument::set_side(Side::Client);
                client.connect(Instant::now(), config, server_address)?;
                until_connected(&mut client)
            },
            move || {
                instrument::set_side(Side::Server);
                // A 0-RTT request not whole by the time the server is
                // connected was not read under 0-RTT keys: the sample's
                // verification says so, as over memory.
                until_connected(&mut server)?;
                Ok(server)
            },
        )?;
        let mut server = server;
        if self.resumes {
            self.deliver_ticket(&mut client, &mut server)?;
        }
        let mut negotiated = self.negotiated()?;
        // Accepted as the client's rustls says, and the request really
        // read by the server under 0-RTT keys.
        negotiated.early_data &= server.early.read_in_zero_rtt();
        Ok(HandshakeSample {
            client: client_time,
            server: server_time,
            wall_ns,
            negotiated,
            split_unsure: false,
        })
    }

    /// After both handshakes, untimed: lets each side in turn take in what
    /// arrived, fire its due timers and send what it has, until the client
    /// has taken in the server's ticket (in its session store for the next
    /// handshake), waiting on the client's socket (where the ticket
    /// arrives) or the first timer of the two in between.
    fn deliver_ticket(
        &self,
        client: &mut QuicSide<Datagrams>,
        server: &mut QuicSide<Datagrams>,
    ) -> Result<()> {
        let give_up = Instant::now() + IO_TIMEOUT;
        loop {
            let now = Instant::now();
            instrument::set_side(Side::Server);
            server.step(now).context("server, sending its ticket")?;
            instrument::set_side(Side::Client);
            client.step(now).context("client, taking in its ticket")?;
            if self.tickets.load(Ordering::Relaxed) > 0 {
                return Ok(());
            }
            if now >= give_up {
                bail!(
                    "no ticket from the QUIC server within {} s",
                    IO_TIMEOUT.as_secs()
                );
            }
            let wake = [client.next_timer(), server.next_timer()]
                .into_iter()
                .flatten()
                .fold(give_up, Instant::min);
            wait_for_datagram(&client.end, wake.saturating_duration_since(now))?;
        }
    }
}

/// One side of QUIC handshakes whose peer runs elsewhere: each over the
/// connected UDP socket it is given.
pub(super) struct QuicApart {
    pub(super) handshaker: QuicHandshaker,
    pub(super) side: Side,
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
            Side::Client => handshaker.client_endpoint(),
            Side::Server => handshaker.server_endpoint(),
        };
        let mut side = QuicSide::new(self.side, endpoint, socket, peer, handshaker.mtu_bytes);
        if self.side == Side::Client {
            side.connect(Instant::now(), handshaker.client.clone(), peer)?;
        }
        until_connected(&mut side)?;
        let negotiated = match self.side {
            Side::Client => Some(handshaker.negotiated()?),
            Side::Server => None,
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
