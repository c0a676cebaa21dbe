//! What the socket transports share besides their drivers
//! ([`super::driver`]): the established pair of `bulk` over a socket,
//! whose sender and receiver run in two threads, and the no-crypto pairs
//! over loopback TCP and UDP.

use std::io::{Read, Write};

use anyhow::Result;

use super::driver::datagram::LossExplained;
use super::{BulkPair, Negotiated};

/// An established connection over a loopback socket: the client's end
/// writes application data, the server's end reads it, each in its own
/// thread ([`BulkPair::ends`]).
pub struct SocketBulkPair {
    negotiated: Option<Negotiated>,
    sender: Box<dyn Write + Send>,
    receiver: Box<dyn Read + Send>,
}

impl SocketBulkPair {
    pub fn new(
        negotiated: Option<Negotiated>,
        sender: Box<dyn Write + Send>,
        receiver: Box<dyn Read + Send>,
    ) -> Self {
        Self {
            negotiated,
            sender,
            receiver,
        }
    }
}

impl BulkPair for SocketBulkPair {
    fn negotiated(&self) -> Option<&Negotiated> {
        self.negotiated.as_ref()
    }

    fn send(&mut self, data: &[u8]) -> Result<()> {
        Ok(self.sender.write_all(data)?)
    }

    /// Blocks until `out` is full: the sender must run in another thread
    /// (see [`BulkPair::ends`]).
    fn receive(&mut self, out: &mut [u8]) -> Result<usize> {
        self.receiver.read_exact(out)?;
        Ok(out.len())
    }

    fn ends(&mut self) -> Option<(&mut (dyn Write + Send), &mut (dyn Read + Send))> {
        Some((&mut *self.sender, &mut *self.receiver))
    }
}

/// The no-crypto pair over loopback UDP: each write cut into datagrams of
/// at most `mtu_bytes`, one record behind a DTLS header each, in two
/// threads like the protected rows.
pub fn plain_pair_over_udp(mtu_bytes: u16) -> Result<SocketBulkPair> {
    let (sender, receiver) = crate::transport::udp::bulk_udp_pair()?;
    Ok(SocketBulkPair::new(
        None,
        Box::new(PlainDatagramWrites {
            socket: sender,
            body_bytes: super::plain::datagram_body_bytes(mtu_bytes),
            record: Vec::new(),
        }),
        Box::new(LossExplained(PlainDatagramReads {
            socket: receiver,
            datagram: vec![0; usize::from(mtu_bytes)],
            body: 0..0,
        })),
    ))
}

struct PlainDatagramWrites {
    socket: crate::transport::udp::Datagrams,
    body_bytes: usize,
    record: Vec<u8>,
}

impl Write for PlainDatagramWrites {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let body = &data[..data.len().min(self.body_bytes)];
        super::plain::frame_datagram(body, &mut self.record);
        self.socket.write_all(&self.record)?;
        Ok(body.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

struct PlainDatagramReads {
    socket: crate::transport::udp::Datagrams,
    datagram: Vec<u8>,
    /// The part of `datagram` not yet handed out.
    body: std::ops::Range<usize>,
}

impl Read for PlainDatagramReads {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.body.is_empty() {
            let length = self.socket.read(&mut self.datagram)?;
            let body = super::plain::datagram_body(&self.datagram[..length])
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
            self.body = length - body.len()..length;
        }
        let moved = self.body.len().min(out.len());
        out[..moved].copy_from_slice(&self.datagram[self.body.start..self.body.start + moved]);
        self.body.start += moved;
        Ok(moved)
    }
}

/// The no-crypto pair over loopback TCP: the application writes go onto
/// the connection as they are, in two threads like the protected rows.
pub fn plain_pair_over_tcp() -> Result<SocketBulkPair> {
    let loopback = crate::transport::tcp::TcpLoopback::open()?;
    let sender = loopback.connect()?;
    let receiver = loopback.accept()?;
    Ok(SocketBulkPair::new(
        None,
        Box::new(sender),
        Box::new(receiver),
    ))
}
