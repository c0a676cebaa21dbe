//! The no-crypto pairs of `bulk`: the same application writes through the
//! same memory channel with the copies a record layer makes (plaintext into
//! a record buffer behind a header, the record onto the channel; the record
//! off the channel, its body out to the reader), and no cryptography. Over
//! the byte pipe records are TLS-sized behind a 5-byte header; over the
//! datagram channel each record is one datagram of at most the MTU behind
//! DTLS's 13-byte header. Their cost is the harness and transport share of
//! every bulk row. Over loopback TCP and UDP the pairs run in two threads
//! like the protected rows, the same framing on the sockets.

use std::io::{Read, Write};

use anyhow::{bail, Context, Result};

use super::driver::datagram::LossExplained;
use super::socket::SocketBulkPair;
use super::{BulkPair, Negotiated};
use crate::transport::datagram::{DatagramEnd, DatagramPipe};
use crate::transport::memory::{Pipe, PipeEnd};

/// The largest record body, as in TLS.
pub const MAX_RECORD_BYTES: usize = 16_384;
const TLS_HEADER_BYTES: usize = 5;
/// A DTLS record header: type, version, epoch, sequence number, length.
const DTLS_HEADER_BYTES: usize = 13;

/// The most a datagram of `mtu_bytes` carries behind its DTLS header.
pub fn datagram_body_bytes(mtu_bytes: u16) -> usize {
    usize::from(mtu_bytes)
        .saturating_sub(DTLS_HEADER_BYTES)
        .max(1)
}

/// Puts `body` into `record` behind a DTLS application data header (epoch
/// 1, the sequence number left at zero), as the no-crypto datagram rows
/// frame their writes.
pub fn frame_datagram(body: &[u8], record: &mut Vec<u8>) {
    record.clear();
    record.extend_from_slice(&[23, 0xfe, 0xfd, 0, 1, 0, 0, 0, 0, 0, 0]);
    record.extend_from_slice(&(body.len() as u16).to_be_bytes());
    record.extend_from_slice(body);
}

/// The body of a datagram framed by [`frame_datagram`].
pub fn datagram_body(datagram: &[u8]) -> Result<&[u8]> {
    if datagram.len() < DTLS_HEADER_BYTES || datagram[0] != 23 {
        bail!("a datagram that is not an application data record");
    }
    let declared = usize::from(datagram[11]) << 8 | usize::from(datagram[12]);
    if declared != datagram.len() - DTLS_HEADER_BYTES {
        bail!(
            "a record of {declared} bytes in a datagram of {}",
            datagram.len()
        );
    }
    Ok(&datagram[DTLS_HEADER_BYTES..])
}

/// Records without protection between a sender and a receiver.
pub struct PlainPair {
    link: Link,
    /// The record being written.
    record: Vec<u8>,
    /// The record being read: its body is `incoming[handed_out..body_end]`
    /// once the first `handed_out` bytes went out (or were its header).
    incoming: Vec<u8>,
    handed_out: usize,
    body_end: usize,
    /// XORed into every byte on the channel and back out (the mock's
    /// stand-in for a cipher, so a pair that skips a step fails the content
    /// check).
    mask: u8,
    fixed_ns_per_byte: Option<(f64, f64)>,
}

/// What carries the records.
enum Link {
    Stream {
        pipe: Pipe,
        sender: PipeEnd,
        receiver: PipeEnd,
    },
    Datagrams {
        pipe: DatagramPipe,
        sender: DatagramEnd,
        receiver: DatagramEnd,
        /// The largest record body that fits a datagram.
        body_bytes: usize,
    },
}

impl Link {
    fn header_bytes(&self) -> usize {
        match self {
            Link::Stream { .. } => TLS_HEADER_BYTES,
            Link::Datagrams { .. } => DTLS_HEADER_BYTES,
        }
    }

    fn body_bytes(&self) -> usize {
        match self {
            Link::Stream { .. } => MAX_RECORD_BYTES,
            Link::Datagrams { body_bytes, .. } => *body_bytes,
        }
    }

    fn pending_for_receiver(&self) -> bool {
        match self {
            Link::Stream { pipe, .. } => pipe.pending_for_server(),
            Link::Datagrams { pipe, .. } => pipe.pending_for_server(),
        }
    }
}

impl Default for PlainPair {
    fn default() -> Self {
        Self::new()
    }
}

impl PlainPair {
    /// Records over the byte pipe.
    pub fn new() -> Self {
        let pipe = Pipe::default();
        Self::over(Link::Stream {
            sender: pipe.client_end(),
            receiver: pipe.server_end(),
            pipe,
        })
    }

    /// Records over the datagram channel, one per datagram of at most
    /// `mtu_bytes`.
    pub fn datagrams(mtu_bytes: u16) -> Self {
        let pipe = DatagramPipe::new(mtu_bytes);
        Self::over(Link::Datagrams {
            sender: pipe.client_end(),
            receiver: pipe.server_end(),
            body_bytes: datagram_body_bytes(mtu_bytes),
            pipe,
        })
    }

    fn over(link: Link) -> Self {
        Self {
            record: Vec::with_capacity(link.header_bytes() + link.body_bytes()),
            incoming: vec![0; link.header_bytes() + link.body_bytes()],
            link,
            handed_out: 0,
            body_end: 0,
            mask: 0,
            fixed_ns_per_byte: None,
        }
    }

    /// A pair that scrambles the bytes on the pipe with `mask` and reports
    /// fixed costs per byte instead of being timed (the mock backend's).
    pub fn fake(mask: u8, sender_ns_per_byte: f64, receiver_ns_per_byte: f64) -> Self {
        Self {
            mask,
            fixed_ns_per_byte: Some((sender_ns_per_byte, receiver_ns_per_byte)),
            ..Self::new()
        }
    }

    /// Reads the next record into `incoming`.
    fn next_record(&mut self) -> Result<()> {
        let header_bytes = self.link.header_bytes();
        let length = match &mut self.link {
            Link::Stream { receiver, .. } => {
                let header = &mut self.incoming[..TLS_HEADER_BYTES];
                receiver
                    .read_exact(header)
                    .context("a truncated record header")?;
                if header[0] != 23 {
                    bail!("a record of type {} (expected application data)", header[0]);
                }
                let body = usize::from(header[3]) << 8 | usize::from(header[4]);
                if body > MAX_RECORD_BYTES {
                    bail!("a record of {body} bytes, over the limit of {MAX_RECORD_BYTES}");
                }
                receiver
                    .read_exact(&mut self.incoming[header_bytes..header_bytes + body])
                    .context("a truncated record")?;
                header_bytes + body
            }
            Link::Datagrams { receiver, .. } => {
                let length = receiver
                    .read(&mut self.incoming)
                    .context("reading a datagram")?;
                datagram_body(&self.incoming[..length])?;
                length
            }
        };
        self.handed_out = header_bytes;
        self.body_end = length;
        Ok(())
    }
}

impl BulkPair for PlainPair {
    fn negotiated(&self) -> Option<&Negotiated> {
        None
    }

    fn send(&mut self, data: &[u8]) -> Result<()> {
        let header_bytes = self.link.header_bytes();
        for body in data.chunks(self.link.body_bytes()) {
            match self.link {
                Link::Stream { .. } => {
                    self.record.clear();
                    self.record.extend_from_slice(&[23, 3, 3]);
                    self.record
                        .extend_from_slice(&(body.len() as u16).to_be_bytes());
                    self.record.extend_from_slice(body);
                }
                Link::Datagrams { .. } => frame_datagram(body, &mut self.record),
            }
            if self.mask != 0 {
                for byte in &mut self.record[header_bytes..] {
                    *byte ^= self.mask;
                }
            }
            match &mut self.link {
                Link::Stream { sender, .. } => sender.write_all(&self.record)?,
                Link::Datagrams { sender, .. } => {
                    sender.write(&self.record).context("sending a datagram")?;
                }
            }
        }
        Ok(())
    }

    fn receive(&mut self, out: &mut [u8]) -> Result<usize> {
        let mut filled = 0;
        loop {
            let waiting = &self.incoming[self.handed_out..self.body_end];
            let take = waiting.len().min(out.len() - filled);
            out[filled..filled + take].copy_from_slice(&waiting[..take]);
            if self.mask != 0 {
                for byte in &mut out[filled..filled + take] {
                    *byte ^= self.mask;
                }
            }
            self.handed_out += take;
            filled += take;
            if filled == out.len() || !self.link.pending_for_receiver() {
                return Ok(filled);
            }
            self.next_record()?;
        }
    }

    fn fixed_ns_per_byte(&self) -> Option<(f64, f64)> {
        self.fixed_ns_per_byte
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
            body_bytes: datagram_body_bytes(mtu_bytes),
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
        frame_datagram(body, &mut self.record);
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
            let body = datagram_body(&self.datagram[..length])
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_come_out_as_they_went_in_across_record_and_buffer_edges() {
        for mask in [0, 0x5a] {
            let mut pair = PlainPair::fake(mask, 1.0, 1.0);
            let data: Vec<u8> = (0..40_000u32).map(|i| (i * 7 % 251) as u8).collect();
            pair.send(&data[..30_000]).unwrap();
            pair.send(&data[30_000..]).unwrap();
            let mut out = vec![0u8; data.len()];
            let first = pair.receive(&mut out[..1000]).unwrap();
            let rest = pair.receive(&mut out[first..]).unwrap();
            assert_eq!(first + rest, data.len());
            assert_eq!(out, data);
            assert_eq!(pair.receive(&mut out).unwrap(), 0);
        }
    }

    #[test]
    fn datagrams_carry_records_that_fit_the_mtu() {
        let mut pair = PlainPair::datagrams(200);
        let data: Vec<u8> = (0..5_000u32).map(|i| (i * 13 % 251) as u8).collect();
        pair.send(&data).unwrap();
        let Link::Datagrams { pipe, .. } = &pair.link else {
            unreachable!()
        };
        assert!(pipe.pending_for_server());
        let mut out = vec![0u8; data.len()];
        assert_eq!(pair.receive(&mut out).unwrap(), data.len());
        assert_eq!(out, data);
        assert_eq!(pair.receive(&mut out).unwrap(), 0);
    }
}
