//! Transports as drivers, in the manner of quinn-proto's
//! `handle_event`/`poll_transmit`: a backend hands out the sans-IO sides
//! of its connections (what the peer sent goes in, what to send comes
//! out, "is the handshake done"), and one driver per transport moves the
//! bytes between the two sides and times each side's work. A backend
//! then opens no socket itself: over TCP, [`stream`] connects, accepts,
//! runs each side's handshake in its own thread ([`threads`]) and hands
//! back the established connections for `bulk` and for sides run apart.
//!
//! Bytes go in and out through `Read` and `Write`, the shape of rustls'
//! `read_tls`/`write_tls`: the side takes what it wants from one read of
//! the wire and writes what it has, so a driver over a socket makes the
//! same system calls the library would make on the socket itself.

pub mod stream;
pub mod threads;

use std::io::{Read, Write};

use anyhow::Result;

pub use threads::{run_sides, Sides};

/// One side of a TLS connection over a byte stream, without its IO: the
/// driver gives it what arrives and sends what it has to send.
pub trait StreamSide {
    /// Takes what the peer sent from one read of `incoming` and processes
    /// it; returns the bytes read, 0 if and only if the peer closed.
    fn receive(&mut self, incoming: &mut dyn Read) -> Result<usize>;

    /// Returns true if and only if this side has bytes to send.
    fn wants_write(&self) -> bool;

    /// Writes (some of) what this side has to send into `outgoing`;
    /// returns the bytes written.
    fn send(&mut self, outgoing: &mut dyn Write) -> std::io::Result<usize>;

    /// Returns true if and only if the handshake is not done yet (this
    /// side cannot both send and receive application data).
    fn is_handshaking(&self) -> bool;

    /// Returns true if and only if the peer's close (close_notify) has
    /// been received.
    fn peer_closed(&self) -> bool;

    /// Queues this side's close (close_notify) for sending.
    fn close(&mut self);

    /// Protects application data; returns the bytes taken (the records
    /// wait to be sent).
    fn write_plaintext(&mut self, data: &[u8]) -> std::io::Result<usize>;

    /// Hands out received application data; `WouldBlock` if none waits.
    fn read_plaintext(&mut self, out: &mut [u8]) -> std::io::Result<usize>;
}
