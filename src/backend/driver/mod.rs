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

pub mod datagram;
pub mod stream;
pub mod threads;

use std::io::{Read, Write};

use anyhow::Result;

pub use threads::{run_sides, Sides};

/// The stream a side reads and writes, lent to it for one call.
pub trait Wire: Read + Write {}

impl<W: Read + Write> Wire for W {}

/// One side of a TLS connection over a byte stream, without its IO: the
/// driver lends it the wire for each call. A side takes what it wants
/// from one read of the wire, as rustls' `read_tls` does; a library that
/// reads and writes through its own stream while it works, as OpenSSL's
/// BIO does, makes its reads and writes on the wire lent to that call,
/// the same system calls it would make on the socket itself.
pub trait StreamSide {
    /// Takes what the peer sent from `wire` and processes it (a side
    /// that writes as it works may answer on it); returns the bytes read,
    /// 0 if and only if the peer closed.
    fn receive(&mut self, wire: &mut dyn Wire) -> Result<usize>;

    /// Returns true if and only if this side holds bytes to send.
    fn wants_write(&self) -> bool;

    /// Writes (some of) what this side holds to send into `wire`; returns
    /// the bytes written.
    fn send(&mut self, wire: &mut dyn Wire) -> std::io::Result<usize>;

    /// Returns true if and only if the handshake is not done yet (this
    /// side cannot both send and receive application data).
    fn is_handshaking(&self) -> bool;

    /// Closes this side: its close_notify is sent, or held to send.
    fn close(&mut self, wire: &mut dyn Wire) -> Result<()>;

    /// Protects application data; returns the bytes taken (their records
    /// sent, or held to send).
    fn write_plaintext(&mut self, data: &[u8], wire: &mut dyn Wire) -> std::io::Result<usize>;

    /// Hands out application data, reading records off `wire` until some
    /// comes out; 0 at the peer's close.
    fn read_plaintext(&mut self, out: &mut [u8], wire: &mut dyn Wire) -> std::io::Result<usize>;
}
