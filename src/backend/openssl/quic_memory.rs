//! OpenSSL's QUIC over memory: the client and the listener of one
//! handshake in this thread over a new datagram BIO pair ([`QuicWire`]),
//! each side's calls one turn of the [`Turns`] machinery. A side gets a
//! turn when a datagram waits for it or its event timeout has passed;
//! when neither, the driver sleeps until the first timer (OpenSSL's clock
//! is the real one), outside both sides' turns, never spinning.

use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use openssl::ssl::Ssl;

use super::quic::{
    accept_connection, datagram_waiting, event_timeout, handle_events, handshake_step, has_ticket,
    quic_negotiated, timeout_due, OpensslQuicHandshaker, QuicWire, MAX_ROUNDS,
};
use crate::backend::{HandshakeSample, Turns};
use crate::scenario::Side;

impl OpensslQuicHandshaker {
    /// One handshake over a new datagram BIO pair, the two sides taking
    /// turns in this thread. A resumed scenario's handshake lasts until
    /// the client also holds the server's new ticket.
    pub(super) fn handshake_in_memory(&mut self) -> Result<HandshakeSample> {
        let mut wire = QuicWire::listen(&self.server)?;

        let start = Instant::now();
        let mut turns = Turns::start(self.cpu_readings);
        turns.begin(Side::Client);
        let client = wire.connect_resuming(&self.client, self.session.as_deref());
        turns.ended(Side::Client);
        let mut client = client.context("client")?;
        let listener = &wire.listener;

        let mut server: Option<Ssl> = None;
        let (mut client_done, mut server_done) = (false, false);
        let mut rounds = 0;
        loop {
            let server_due = datagram_waiting(listener)
                || timeout_due(listener)
                || server.as_ref().is_some_and(timeout_due);
            if server_due {
                turns.begin(Side::Server);
                let stepped = (|| -> Result<()> {
                    handle_events(listener);
                    if server.is_none() {
                        server = accept_connection(listener)?;
                    }
                    if let Some(connection) = &mut server {
                        if !server_done {
                            server_done = handshake_step(connection)?;
                        } else {
                            handle_events(connection);
                        }
                    }
                    Ok(())
                })();
                if server_done {
                    turns.done(Side::Server);
                }
                turns.ended(Side::Server);
                stepped.context("server")?;
            }
            let client_due = datagram_waiting(&client) || timeout_due(&client);
            if client_due {
                turns.begin(Side::Client);
                let stepped = if client_done {
                    handle_events(&client);
                    Ok(())
                } else {
                    handshake_step(&mut client).map(|done| client_done = done)
                };
                if client_done {
                    turns.done(Side::Client);
                }
                turns.ended(Side::Client);
                stepped.context("client")?;
            }
            if client_done
                && server_done
                && !datagram_waiting(&client)
                && !datagram_waiting(listener)
                && (!self.resume || has_ticket(&client))
            {
                break;
            }
            rounds += 1;
            if rounds > MAX_ROUNDS {
                bail!("the QUIC handshake stalled after {rounds} rounds");
            }
            if !server_due && !client_due {
                // Both wait on a timer (OpenSSL's clock is the real one):
                // sleep until the first, outside both sides' turns.
                let first = [Some(listener), Some(&client), server.as_ref()]
                    .into_iter()
                    .flatten()
                    .filter_map(event_timeout)
                    .min()
                    .ok_or_else(|| {
                        anyhow!("the QUIC handshake stalled: nothing to read, no timer")
                    })?;
                std::thread::sleep(first);
            }
        }
        let wall_ns = start.elapsed().as_nanos() as u64;
        let times = turns.finish();
        let negotiated = quic_negotiated(&client)?;
        self.keep_session(&client)?;
        Ok(HandshakeSample::of_turns(times, wall_ns, negotiated))
    }
}
