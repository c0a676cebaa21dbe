//! The datagram driver: a side's DTLS handshake over a connected loopback
//! UDP socket with its retransmission timer on the real clock (for a side
//! run apart, whose flights may be lost on the way), each library with its
//! own rule for a stalled handshake ([`Stall`]); an established side kept
//! after its handshake that answers the peer's resent flight; and bulk's
//! pair over UDP. OpenSSL runs a handshake with both sides in this process
//! on the stream driver ([`super::stream::handshake`]): loopback loses
//! nothing. dimpl runs both on timers, as before: it learns the time
//! only from its timer's turns.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use super::stream::Connected;
use super::{Sides, StreamSide, Wire};
use crate::backend::socket::SocketBulkPair;
use crate::backend::{ApartConnection, Negotiated};
use crate::transport::udp::Datagrams;
use crate::transport::IO_TIMEOUT;

/// A side with a retransmission timer.
pub trait Retransmits {
    /// How long until its timer is due, if one runs.
    fn timer(&self) -> Option<Duration>;

    /// The timer's turn, if it is due (a resent flight goes onto `wire`):
    /// returns true if and only if the side resent its last flight.
    fn on_timer(&mut self, wire: &mut dyn Wire) -> Result<bool>;

    /// Where the handshake is (a state's name): a change is progress.
    fn state(&self) -> &'static str;

    /// When this side's handshake counts as stalled.
    fn stall(&self) -> Stall {
        Stall::Silence
    }
}

/// When a handshake on timers counts as stalled: each library's rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stall {
    /// Reads wait in slices of at most [`SLICE`]; the handshake fails
    /// after [`IO_TIMEOUT`] without a timer running and without progress,
    /// or after [`LONGEST`] (OpenSSL's, whose timer may start inside a call).
    Silence,
    /// Each read waits until the timer is due (at least [`LEAST_WAIT`], at
    /// most [`IO_TIMEOUT`]); the handshake fails after this many reads that
    /// timed out (dimpl's, which resends a flight a set number of times).
    Timeouts(usize),
}

/// The least a read waits for a datagram under [`Stall::Timeouts`].
const LEAST_WAIT: Duration = Duration::from_millis(1);

/// The longest a read waits before the handshake looks at its timer (a
/// library may start a timer inside a call, while a read waits).
const SLICE: Duration = Duration::from_millis(50);

/// The longest a handshake may go on resending.
const LONGEST: Duration = Duration::from_secs(60);

/// Runs `side`'s handshake to its end over `wire`, a read that waits
/// past the side's timer giving it its turn (the last flight resent),
/// until it stalls by the side's rule ([`Stall`]).
pub fn handshake_on_timers<S: StreamSide + Retransmits>(
    side: &mut S,
    wire: &mut Datagrams,
) -> Result<()> {
    let stall = side.stall();
    let (least, most) = match stall {
        Stall::Silence => (Duration::from_micros(100), SLICE),
        Stall::Timeouts(_) => (LEAST_WAIT, IO_TIMEOUT),
    };
    let started = Instant::now();
    let mut quiet_since = started;
    let mut state = side.state();
    let mut timeouts = 0;
    while side.is_handshaking() {
        let wait = side.timer().unwrap_or(most).clamp(least, most);
        wire.set_read_timeout(wait)?;
        match side.receive(wire) {
            Ok(_) => continue,
            Err(error) if !is_timeout(&error) => return Err(error),
            Err(_) => {}
        }
        if let Stall::Timeouts(most_timeouts) = stall {
            timeouts += 1;
            if timeouts > most_timeouts {
                bail!(
                    "handshake stalled: nothing from the peer after {most_timeouts} retransmission timeouts"
                );
            }
            side.on_timer(wire)?;
            continue;
        }
        let resent = side.on_timer(wire)?;
        let now = side.state();
        if resent || now != state || side.timer().is_some() {
            quiet_since = Instant::now();
            state = now;
        } else if quiet_since.elapsed() > IO_TIMEOUT {
            bail!(
                "handshake failed: nothing from the peer for {} s",
                IO_TIMEOUT.as_secs()
            );
        }
        if started.elapsed() > LONGEST {
            bail!(
                "handshake failed: still resending after {} s",
                LONGEST.as_secs()
            );
        }
    }
    Ok(())
}

/// Returns true if and only if `error` is a read that timed out.
fn is_timeout(error: &anyhow::Error) -> bool {
    error.downcast_ref::<std::io::Error>().is_some_and(|e| {
        matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        )
    })
}

/// A DTLS side kept after its handshake answers the peer's resent flight
/// (a lost Finished flight): the library resends its own on reading it.
impl<S: StreamSide + Send> ApartConnection for Connected<S, Datagrams> {
    fn linger_fd(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        Some(self.wire.as_raw_fd())
    }

    fn answer(&mut self) -> Result<()> {
        self.wire.set_read_timeout(Duration::from_millis(1))?;
        match self.side.read_plaintext(&mut [0u8; 1], &mut self.wire) {
            Ok(_) => Ok(()),
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        // The peer's socket is gone (an ICMP port unreachable).
                        | std::io::ErrorKind::ConnectionRefused
                ) =>
            {
                Ok(())
            }
            Err(error) => bail!("answering the peer: {error}"),
        }
    }
}

/// Established sides over loopback UDP as `bulk`'s pair, in two threads:
/// the client's writes cut into records of at most `most` bytes (each fits
/// a datagram), the server's timed-out reads saying a datagram was lost.
pub fn bulk_pair<C, S>(
    negotiated: Negotiated,
    sides: Sides<Connected<C, Datagrams>, Connected<S, Datagrams>>,
    most: usize,
) -> SocketBulkPair
where
    C: StreamSide + Send + 'static,
    S: StreamSide + Send + 'static,
{
    SocketBulkPair::new(
        Some(negotiated),
        Box::new(CutWrites {
            inner: sides.client,
            most,
        }),
        Box::new(LossExplained(sides.server)),
    )
}

/// A writer that hands its inner writer at most `most` bytes per call: a
/// DTLS application cuts its writes into records that fit a datagram.
struct CutWrites<W> {
    inner: W,
    most: usize,
}

impl<W: Write> Write for CutWrites<W> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.inner.write(&data[..data.len().min(self.most)])
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A reader of application data over UDP whose timed-out reads say that a
/// datagram was lost.
pub struct LossExplained<R>(pub R);

impl<R: Read> Read for LossExplained<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        self.0
            .read(out)
            .map_err(crate::transport::udp::explain_lost_datagram)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::udp::udp_pair;

    /// A side that waits for one datagram, its timer always due soon,
    /// counting its timer's turns.
    struct Waiting {
        turns: usize,
        heard: bool,
    }

    impl StreamSide for Waiting {
        fn receive(&mut self, wire: &mut dyn Wire) -> Result<usize> {
            let read = wire.read(&mut [0u8; 64])?;
            self.heard = true;
            Ok(read)
        }
        fn wants_write(&self) -> bool {
            false
        }
        fn send(&mut self, _: &mut dyn Wire) -> std::io::Result<usize> {
            Ok(0)
        }
        fn is_handshaking(&self) -> bool {
            !self.heard
        }
        fn close(&mut self, _: &mut dyn Wire) -> Result<()> {
            Ok(())
        }
        fn write_plaintext(&mut self, _: &[u8], _: &mut dyn Wire) -> std::io::Result<usize> {
            Ok(0)
        }
        fn read_plaintext(&mut self, _: &mut [u8], _: &mut dyn Wire) -> std::io::Result<usize> {
            Ok(0)
        }
    }

    impl Retransmits for Waiting {
        fn timer(&self) -> Option<Duration> {
            Some(Duration::from_millis(2))
        }
        fn on_timer(&mut self, _: &mut dyn Wire) -> Result<bool> {
            self.turns += 1;
            Ok(true)
        }
        fn state(&self) -> &'static str {
            "waiting"
        }
        fn stall(&self) -> Stall {
            Stall::Timeouts(3)
        }
    }

    #[test]
    fn a_side_counting_timeouts_stalls_after_its_last_and_ends_on_a_datagram() {
        let (mut client, mut server) = udp_pair().unwrap();
        let mut side = Waiting {
            turns: 0,
            heard: false,
        };
        let error = handshake_on_timers(&mut side, &mut client).unwrap_err();
        assert!(
            format!("{error:#}").contains("after 3 retransmission timeouts"),
            "{error:#}"
        );
        assert_eq!(side.turns, 3);
        server.write_all(b"flight").unwrap();
        handshake_on_timers(&mut side, &mut client).unwrap();
        assert!(side.heard);
    }
}
