//! An in-memory datagram channel: the "network" between a DTLS client and a
//! server in the same thread. Unlike the byte pipe it keeps message
//! boundaries (one write is one datagram, one read takes one whole
//! datagram) and enforces an MTU: a datagram larger than the MTU is refused
//! with an error, as a path that does not fragment would drop it, so a DTLS
//! library must fragment its handshake messages itself. For tests it can
//! also lose or reorder one datagram ([`Fault`]).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::rc::Rc;

use super::tap;

/// The datagrams in flight one way, and every datagram sent that way when
/// the channel keeps a trace.
#[derive(Debug, Default)]
struct Direction {
    in_flight: VecDeque<Vec<u8>>,
    trace: Option<Vec<Vec<u8>>>,
    /// A datagram held back to be delivered after the next one.
    held: Option<Vec<u8>>,
}

/// One thing the network does wrong, to the datagram with this index
/// (counted from 0 over both directions, in the order they were sent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The datagram is never delivered.
    Lose(usize),
    /// The datagram arrives after the next one sent the same way.
    Reorder(usize),
}

#[derive(Debug)]
struct Channel {
    mtu_bytes: usize,
    to_server: Direction,
    to_client: Direction,
    fault: Option<Fault>,
    sent: usize,
}

/// Both directions of a datagram channel with one MTU.
#[derive(Debug, Clone)]
pub struct DatagramPipe {
    channel: Rc<RefCell<Channel>>,
}

impl DatagramPipe {
    /// A channel that carries datagrams of at most `mtu_bytes`.
    pub fn new(mtu_bytes: u16) -> Self {
        Self {
            channel: Rc::new(RefCell::new(Channel {
                mtu_bytes: usize::from(mtu_bytes),
                to_server: Direction::default(),
                to_client: Direction::default(),
                fault: None,
                sent: 0,
            })),
        }
    }

    /// This channel, doing `fault` to one datagram.
    pub fn with_fault(self, fault: Fault) -> Self {
        self.channel.borrow_mut().fault = Some(fault);
        self
    }

    /// A channel that also keeps a copy of every datagram sent (for tests
    /// and inspection; a measured handshake does not keep one).
    pub fn traced(mtu_bytes: u16) -> Self {
        let pipe = Self::new(mtu_bytes);
        {
            let mut channel = pipe.channel.borrow_mut();
            channel.to_server.trace = Some(Vec::new());
            channel.to_client.trace = Some(Vec::new());
        }
        pipe
    }

    pub fn client_end(&self) -> DatagramEnd {
        DatagramEnd {
            channel: Rc::clone(&self.channel),
            is_client: true,
        }
    }

    pub fn server_end(&self) -> DatagramEnd {
        DatagramEnd {
            channel: Rc::clone(&self.channel),
            is_client: false,
        }
    }

    /// True if and only if a datagram waits to be read by the client.
    pub fn pending_for_client(&self) -> bool {
        !self.channel.borrow().to_client.in_flight.is_empty()
    }

    /// True if and only if a datagram waits to be read by the server.
    pub fn pending_for_server(&self) -> bool {
        !self.channel.borrow().to_server.in_flight.is_empty()
    }

    /// Every datagram the client sent, in order (empty unless [`Self::traced`]).
    pub fn sent_by_client(&self) -> Vec<Vec<u8>> {
        self.channel
            .borrow()
            .to_server
            .trace
            .clone()
            .unwrap_or_default()
    }

    /// Every datagram the server sent, in order (empty unless [`Self::traced`]).
    pub fn sent_by_server(&self) -> Vec<Vec<u8>> {
        self.channel
            .borrow()
            .to_client
            .trace
            .clone()
            .unwrap_or_default()
    }
}

/// One side's view: reads the peer's datagrams one at a time, writes one
/// datagram per call. Reading when nothing waits would block
/// (`WouldBlock`), as a non-blocking UDP socket does.
#[derive(Debug)]
pub struct DatagramEnd {
    channel: Rc<RefCell<Channel>>,
    is_client: bool,
}

impl DatagramEnd {
    fn side(&self) -> tap::Side {
        if self.is_client {
            tap::Side::Client
        } else {
            tap::Side::Server
        }
    }
}

impl DatagramEnd {
    /// The next datagram waiting for this side, handed over as it was
    /// written (no copy); `None` if none waits.
    pub fn take_datagram(&mut self) -> Option<Vec<u8>> {
        let mut channel = self.channel.borrow_mut();
        let incoming = if self.is_client {
            &mut channel.to_client
        } else {
            &mut channel.to_server
        };
        let datagram = incoming.in_flight.pop_front()?;
        tap::read(self.side(), datagram.len(), true);
        Some(datagram)
    }
}

impl Read for DatagramEnd {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let mut channel = self.channel.borrow_mut();
        let incoming = if self.is_client {
            &mut channel.to_client
        } else {
            &mut channel.to_server
        };
        let Some(datagram) = incoming.in_flight.pop_front() else {
            return Err(io::ErrorKind::WouldBlock.into());
        };
        if datagram.len() > out.len() {
            // A UDP socket would truncate silently; say so instead.
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a {}-byte datagram does not fit the reader's {}-byte buffer",
                    datagram.len(),
                    out.len()
                ),
            ));
        }
        out[..datagram.len()].copy_from_slice(&datagram);
        tap::read(self.side(), datagram.len(), true);
        Ok(datagram.len())
    }
}

/// The error of a write larger than the MTU (out of the write's way: it
/// runs for every datagram of a measured handshake).
#[cold]
fn over_the_mtu(length: usize, mtu_bytes: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("a {length}-byte datagram exceeds the MTU of {mtu_bytes} bytes"),
    )
}

impl Write for DatagramEnd {
    fn write(&mut self, datagram: &[u8]) -> io::Result<usize> {
        let mut channel = self.channel.borrow_mut();
        if datagram.len() > channel.mtu_bytes {
            return Err(over_the_mtu(datagram.len(), channel.mtu_bytes));
        }
        let index = channel.sent;
        channel.sent += 1;
        tap::wrote(self.side(), datagram, true);
        let fault = channel.fault;
        let outgoing = if self.is_client {
            &mut channel.to_server
        } else {
            &mut channel.to_client
        };
        if let Some(trace) = &mut outgoing.trace {
            trace.push(datagram.to_vec());
        }
        match fault {
            Some(Fault::Lose(lost)) if lost == index => {}
            Some(Fault::Reorder(late)) if late == index => outgoing.held = Some(datagram.to_vec()),
            _ => {
                outgoing.in_flight.push_back(datagram.to_vec());
                if let Some(held) = outgoing.held.take() {
                    outgoing.in_flight.push_back(held);
                }
            }
        }
        Ok(datagram.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagrams_keep_their_boundaries() {
        let pipe = DatagramPipe::traced(100);
        let (mut client, mut server) = (pipe.client_end(), pipe.server_end());
        client.write_all(b"first").unwrap();
        client.write_all(b"second").unwrap();
        assert!(pipe.pending_for_server());
        assert!(!pipe.pending_for_client());
        let mut buffer = [0u8; 64];
        assert_eq!(server.read(&mut buffer).unwrap(), 5);
        assert_eq!(&buffer[..5], b"first");
        assert_eq!(server.read(&mut buffer).unwrap(), 6);
        assert_eq!(
            server.read(&mut buffer).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        assert_eq!(
            pipe.sent_by_client(),
            vec![b"first".to_vec(), b"second".to_vec()]
        );
        assert!(pipe.sent_by_server().is_empty());
        // Taken whole, as written.
        client.write_all(b"third").unwrap();
        assert_eq!(server.take_datagram(), Some(b"third".to_vec()));
        assert_eq!(server.take_datagram(), None);
    }

    #[test]
    fn faults_lose_or_reorder_one_datagram() {
        let read_all = |pipe: &DatagramPipe| {
            let mut server = pipe.server_end();
            let mut buffer = [0u8; 8];
            let mut got = Vec::new();
            while let Ok(n) = server.read(&mut buffer) {
                got.push(buffer[..n].to_vec());
            }
            got
        };
        for (fault, expected) in [
            (Fault::Lose(1), vec![b"a".to_vec(), b"c".to_vec()]),
            (
                Fault::Reorder(0),
                vec![b"b".to_vec(), b"a".to_vec(), b"c".to_vec()],
            ),
        ] {
            let pipe = DatagramPipe::new(8).with_fault(fault);
            let mut client = pipe.client_end();
            for datagram in [b"a", b"b", b"c"] {
                client.write_all(datagram).unwrap();
            }
            assert_eq!(read_all(&pipe), expected, "{fault:?}");
        }
    }

    #[test]
    fn a_datagram_over_the_mtu_is_refused() {
        let pipe = DatagramPipe::new(8);
        let mut server = pipe.server_end();
        server.write_all(b"12345678").unwrap();
        let error = server.write(b"123456789").unwrap_err();
        assert!(
            error
                .to_string()
                .contains("9-byte datagram exceeds the MTU of 8"),
            "{error}"
        );
        let mut buffer = [0u8; 4];
        let error = pipe.client_end().read(&mut buffer).unwrap_err();
        assert!(error.to_string().contains("does not fit"), "{error}");
    }
}
