//! OpenSSL's QUIC over loopback UDP: client and server in two threads
//! ([`crate::backend::driver::run_sides`]), each on its own connected
//! socket (`SSL_set_fd`: OpenSSL's datagram BIO) with the real clock,
//! each waiting in `poll` for a datagram or its `SSL_get_event_timeout`,
//! never spinning. The listener (no address validation, as over memory)
//! is made before the handshake starts; each side's time runs from its
//! start until its library says its handshake is done, so its CPU
//! includes the kernel's work for its socket calls, as for TLS over TCP.
//! A resumed scenario's client needs the ticket the server sends after
//! the handshake: once both sides are done, this thread drives both
//! until it arrives, outside either side's time (the server wrote the
//! ticket inside its handshake; only its sending is left out).

use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use openssl::ssl::Ssl;

use super::quic::{
    accept_connection, attach_socket, event_timeout, handle_events, handshake_step, has_ticket,
    new_client, new_listener, quic_negotiated, start_client, Address, OpensslQuicHandshaker,
};
use crate::backend::driver::{run_sides, Sides};
use crate::backend::HandshakeSample;
use crate::transport::udp::{udp_pair, wait_for_datagram, Datagrams};
use crate::transport::IO_TIMEOUT;

/// The server's side once its handshake is done: the listener, its
/// connection and the socket under them, kept until the client has what
/// it needs.
struct ServerSide {
    listener: Ssl,
    connection: Ssl,
    /// Held open until the ticket is delivered; only read through the listener.
    _socket: Datagrams,
}

impl OpensslQuicHandshaker {
    /// One handshake over a fresh pair of connected loopback UDP sockets.
    pub(super) fn handshake_over_udp(&mut self) -> Result<HandshakeSample> {
        let (client_socket, server_socket) = udp_pair()?;
        for socket in [&client_socket, &server_socket] {
            socket
                .set_nonblocking(true)
                .context("a non-blocking UDP socket")?;
        }
        let server_address = Address::of(client_socket.peer_address()?)?;
        let listener = new_listener(&self.server, |listener| {
            attach_socket(listener, server_socket.as_raw_fd())
        })?;
        let (client_context, session) = (&self.client, self.session.as_deref());
        let give_up = Instant::now() + IO_TIMEOUT;
        let Sides {
            client,
            server,
            client_time,
            server_time,
            wall_ns,
        } = run_sides(
            || {
                let client = new_client(client_context, session)?;
                attach_socket(&client, client_socket.as_raw_fd())?;
                let mut client = start_client(client, &server_address)?;
                client_until_done(&mut client, &client_socket, give_up)?;
                Ok(client)
            },
            move || {
                let connection = server_until_done(&listener, &server_socket, give_up)?;
                Ok(ServerSide {
                    listener,
                    connection,
                    _socket: server_socket,
                })
            },
        )?;
        if self.resume {
            deliver_ticket(&client, &client_socket, &server, give_up)?;
        }
        let negotiated = quic_negotiated(&client)?;
        self.keep_session(&client)?;
        Ok(HandshakeSample {
            client: client_time,
            server: server_time,
            wall_ns,
            negotiated,
            split_unsure: false,
        })
    }
}

/// Moves the client's handshake on whenever a datagram arrives or its
/// timer is due, until it is done.
fn client_until_done(client: &mut Ssl, socket: &Datagrams, give_up: Instant) -> Result<()> {
    while !handshake_step(client)? {
        wait(socket, [event_timeout(client)], give_up)?;
    }
    Ok(())
}

/// Lets the listener take in what arrives and accept the client's
/// connection, then moves that connection's handshake on until it is done.
fn server_until_done(listener: &Ssl, socket: &Datagrams, give_up: Instant) -> Result<Ssl> {
    let mut connection: Option<Ssl> = None;
    loop {
        handle_events(listener);
        if connection.is_none() {
            connection = accept_connection(listener)?;
        }
        if let Some(accepted) = &mut connection {
            if handshake_step(accepted)? {
                return Ok(connection.expect("accepted"));
            }
        }
        let timers = [
            event_timeout(listener),
            connection.as_ref().and_then(event_timeout),
        ];
        wait(socket, timers, give_up)?;
    }
}

/// After both handshakes: lets each side in turn take in what arrived and
/// send what is due until the client holds the server's ticket.
fn deliver_ticket(
    client: &Ssl,
    client_socket: &Datagrams,
    server: &ServerSide,
    give_up: Instant,
) -> Result<()> {
    loop {
        handle_events(&server.listener);
        handle_events(&server.connection);
        handle_events(client);
        if has_ticket(client) {
            return Ok(());
        }
        if Instant::now() >= give_up {
            bail!(
                "no ticket from the QUIC server within {} s",
                IO_TIMEOUT.as_secs()
            );
        }
        // Both sockets are this thread's now: a short wait on the client's
        // (where the ticket arrives) or the first timer of the three.
        let timers = [
            event_timeout(client),
            event_timeout(&server.connection),
            Some(Duration::from_millis(1)),
        ];
        wait(client_socket, timers, give_up)?;
    }
}

/// Waits on `socket` for a datagram, the earliest of `timers`, or
/// `give_up`, whichever comes first; fails once `give_up` has passed.
fn wait<const N: usize>(
    socket: &Datagrams,
    timers: [Option<Duration>; N],
    give_up: Instant,
) -> Result<()> {
    let now = Instant::now();
    if now >= give_up {
        bail!("no QUIC handshake within {} s", IO_TIMEOUT.as_secs());
    }
    let until_give_up = give_up - now;
    let wait = timers
        .into_iter()
        .flatten()
        .min()
        .map_or(until_give_up, |timer| timer.min(until_give_up));
    wait_for_datagram(socket, wait)
}
