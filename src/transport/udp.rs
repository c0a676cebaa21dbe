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
    /// A socket already connected to its peer.
    pub fn new(socket: UdpSocket) -> Self {
        Self {
            socket,
            trace: None,
        }
    }

    pub fn local_address(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    pub fn peer_address(&self) -> io::Result<SocketAddr> {
        self.socket.peer_addr()
    }

    /// Makes reads return `WouldBlock` at once when nothing waits (a side
    /// that waits in `poll` itself, as a QUIC endpoint on its timers does).
    pub fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        self.socket.set_nonblocking(on)
    }

    /// How long a read waits for a datagram (at most [`IO_TIMEOUT`] by
    /// default) before it fails with `WouldBlock`.
    pub fn set_read_timeout(&self, wait: std::time::Duration) -> io::Result<()> {
        self.socket.set_read_timeout(Some(wait))
    }

    /// Asks for a receive buffer of `bytes` (beyond the system's limit where
    /// the process may, as root can) and returns what the kernel granted: a
    /// stream of application data, which DTLS never resends, must not be
    /// dropped because the reader fell behind for a moment.
    pub fn set_receive_buffer(&self, bytes: usize) -> io::Result<usize> {
        use std::os::fd::AsRawFd;
        let fd = self.socket.as_raw_fd();
        let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
        let set = |option| {
            // SAFETY: a live socket and an int option, passed by pointer and size.
            unsafe {
                libc::setsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    option,
                    (&value as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            }
        };
        if set(libc::SO_RCVBUFFORCE) != 0 && set(libc::SO_RCVBUF) != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut granted: libc::c_int = 0;
        let mut length = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: as above, the kernel writes an int and its size.
        let read = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                (&mut granted as *mut libc::c_int).cast(),
                &mut length,
            )
        };
        if read != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(granted.max(0) as usize)
    }

    /// Keeps a copy of every datagram this side sends from now on; the
    /// returned list fills as it sends.
    pub fn traced(&mut self) -> Arc<Mutex<Vec<Vec<u8>>>> {
        Arc::clone(self.trace.get_or_insert_with(Default::default))
    }
}

impl std::os::fd::AsRawFd for Datagrams {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.socket.as_raw_fd()
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

/// The receive buffer asked for on the reading socket of a bulk pair.
const BULK_RECEIVE_BUFFER: usize = 16 << 20;

/// A pair as [`udp_pair`] makes it for application data from the client
/// to the server: the server's socket (the reader) gets a large receive
/// buffer, so a burst of writes waits there rather than being dropped.
pub fn bulk_udp_pair() -> Result<(Datagrams, Datagrams)> {
    let (client, server) = udp_pair()?;
    server.set_receive_buffer(BULK_RECEIVE_BUFFER)?;
    Ok((client, server))
}

/// What a reader of application data over UDP says when a read timed out:
/// a datagram was lost (DTLS does not resend application data); other
/// errors pass as they are.
pub fn explain_lost_datagram(error: io::Error) -> io::Error {
    if matches!(
        error.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    ) {
        io::Error::new(
            error.kind(),
            format!(
                "no datagram for {} s: one was lost (UDP drops a datagram when the reader's buffer is full, and DTLS does not resend application data)",
                IO_TIMEOUT.as_secs()
            ),
        )
    } else {
        error
    }
}

/// Waits until `socket` has a datagram to read or `wait` has passed (a
/// side that sleeps on its protocol's next timer instead of spinning);
/// an interrupted wait returns early, as a timer that fired would.
pub fn wait_for_datagram(
    socket: &impl std::os::fd::AsRawFd,
    wait: std::time::Duration,
) -> Result<()> {
    let mut poll = libc::pollfd {
        fd: socket.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // Round up: a timer due in 0.4 ms must not be polled for 0 ms in a loop.
    let millis = wait.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
    // SAFETY: one pollfd for a live socket, by pointer with its count.
    let ready = unsafe { libc::poll(&mut poll, 1, millis) };
    if ready < 0 {
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error).context("waiting for a datagram");
        }
    }
    Ok(())
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

    #[test]
    fn a_bigger_receive_buffer_is_granted() {
        let (_, server) = udp_pair().unwrap();
        let granted = server.set_receive_buffer(4 << 20).unwrap();
        // Linux doubles the value for its bookkeeping; without the right
        // to exceed the system's limit it is capped there.
        assert!(granted >= 200_000, "{granted}");
    }
}
