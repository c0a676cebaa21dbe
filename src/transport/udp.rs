//! Loopback UDP for DTLS over a socket: two sockets on 127.0.0.1 with
//! ephemeral ports, each connected to the other, and the [`Datagrams`]
//! wrapper that lets a DTLS library read and write one datagram per call
//! (as the in-memory datagram channel does). Every read has a time limit:
//! a lost datagram fails the handshake with a reason instead of hanging.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};

use super::{loopback_port, IO_TIMEOUT};

/// One socket of a connected pair: a read takes one whole datagram, a
/// write sends one.
#[derive(Debug)]
pub struct Datagrams {
    socket: UdpSocket,
    /// Every datagram this side sent, when traced (tests and inspection).
    trace: Option<Arc<Mutex<Vec<Vec<u8>>>>>,
}

impl Datagrams {
    pub fn local_address(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    pub fn peer_address(&self) -> io::Result<SocketAddr> {
        self.socket.peer_addr()
    }

    /// How long a read waits for a datagram (at most [`IO_TIMEOUT`] by
    /// default) before it fails with `WouldBlock`.
    pub fn set_read_timeout(&self, wait: std::time::Duration) -> io::Result<()> {
        self.socket.set_read_timeout(Some(wait))
    }

    /// Keeps a copy of every datagram this side sends from now on; the
    /// returned list fills as it sends.
    pub fn traced(&mut self) -> Arc<Mutex<Vec<Vec<u8>>>> {
        Arc::clone(self.trace.get_or_insert_with(Default::default))
    }
}

impl Read for Datagrams {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        self.socket.recv(out)
    }
}

impl Write for Datagrams {
    fn write(&mut self, datagram: &[u8]) -> io::Result<usize> {
        if let Some(trace) = &self.trace {
            trace
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(datagram.to_vec());
        }
        self.socket.send(datagram)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A client and a server socket on loopback, connected to each other;
/// both close when dropped.
pub fn udp_pair() -> Result<(Datagrams, Datagrams)> {
    let bind = |port: u16| -> Result<UdpSocket> {
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let socket =
            UdpSocket::bind(address).with_context(|| format!("cannot bind UDP {address}"))?;
        socket.set_read_timeout(Some(IO_TIMEOUT))?;
        socket.set_write_timeout(Some(IO_TIMEOUT))?;
        Ok(socket)
    };
    let server = bind(loopback_port()?)?;
    let client = bind(0)?;
    let (server_address, client_address) = (server.local_addr()?, client.local_addr()?);
    client
        .connect(server_address)
        .with_context(|| format!("cannot connect UDP {client_address} to {server_address}"))?;
    server
        .connect(client_address)
        .with_context(|| format!("cannot connect UDP {server_address} to {client_address}"))?;
    let wrap = |socket| Datagrams {
        socket,
        trace: None,
    };
    Ok((wrap(client), wrap(server)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagrams_keep_their_boundaries_over_loopback() {
        let (mut client, mut server) = udp_pair().unwrap();
        assert!(client.local_address().unwrap().ip().is_loopback());
        client.write_all(b"first").unwrap();
        client.write_all(b"second").unwrap();
        let mut buffer = [0u8; 64];
        assert_eq!(server.read(&mut buffer).unwrap(), 5);
        assert_eq!(server.read(&mut buffer).unwrap(), 6);
        server.write_all(b"back").unwrap();
        assert_eq!(client.read(&mut buffer).unwrap(), 4);
    }
}
