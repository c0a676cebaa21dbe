//! dimpl's endpoint as a sans-IO side of the drivers ([`StreamSide`]): the
//! socket is lent to each call, the datagrams it reads go to dimpl and
//! what dimpl answers goes onto it, its retransmission timer on the real
//! clock with dimpl's stall rule ([`Stall::Timeouts`]); and a side run
//! apart, kept after its handshake, that answers the peer's resent flight.

use std::io::{ErrorKind, Read};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::{Endpoint, MAX_TIMEOUTS};
use crate::backend::driver::datagram::{Retransmits, Stall};
use crate::backend::driver::stream::Connected;
use crate::backend::driver::{StreamSide, Wire};
use crate::backend::ApartConnection;
use crate::transport::udp::Datagrams;

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

/// A side kept after its handshake: it feeds dimpl what arrives (a resent
/// flight) and sends what it answers, its timer on the real clock.
pub(super) struct Lingering(pub(super) Connected<Endpoint, Datagrams>);

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
