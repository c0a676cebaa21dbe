//! Loopback TCP for the socket transport: a listener on 127.0.0.1 with an
//! ephemeral port, the client's connection to it and the server's accepted
//! one, both with Nagle's algorithm off (a handshake flight is several
//! small writes) and time limits on every read and write, so a side whose
//! peer died fails with a reason instead of hanging.

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::{loopback_port, IO_TIMEOUT};

/// A listening socket on loopback, closed when dropped.
#[derive(Debug)]
pub struct TcpLoopback {
    listener: TcpListener,
    address: SocketAddr,
}

impl TcpLoopback {
    /// Listens on 127.0.0.1, on an ephemeral port (or the test hook's port).
    pub fn open() -> Result<Self> {
        let wanted = SocketAddr::from((Ipv4Addr::LOCALHOST, loopback_port()?));
        let listener =
            TcpListener::bind(wanted).with_context(|| format!("cannot listen on TCP {wanted}"))?;
        let address = listener.local_addr()?;
        Ok(Self { listener, address })
    }

    /// The listener kept in `slot`, opened there on first use: the one a
    /// handshaker's connections all go to, as a server's do.
    pub fn kept(slot: &mut Option<Arc<Self>>) -> Result<Arc<Self>> {
        if let Some(listener) = slot {
            return Ok(Arc::clone(listener));
        }
        Ok(Arc::clone(slot.insert(Arc::new(Self::open()?))))
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The client's connection to the listener: a blocking connect, which
    /// on loopback completes or is refused at once (a connect with a time
    /// limit costs four more system calls in the timed stretch).
    pub fn connect(&self) -> Result<TcpStream> {
        let stream = TcpStream::connect(self.address)
            .with_context(|| format!("cannot connect to TCP {}", self.address))?;
        prepare(&stream)?;
        Ok(stream)
    }

    /// The server's end of the next connection, waiting at most
    /// [`IO_TIMEOUT`] for a client.
    pub fn accept(&self) -> Result<TcpStream> {
        wait_readable(self.listener.as_raw_fd(), IO_TIMEOUT)
            .with_context(|| format!("no client connected to TCP {}", self.address))?;
        let (stream, _) = self
            .listener
            .accept()
            .with_context(|| format!("cannot accept on TCP {}", self.address))?;
        prepare(&stream)?;
        Ok(stream)
    }
}

fn prepare(stream: &TcpStream) -> Result<()> {
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    Ok(())
}

/// Waits until `fd` has something to read (for a listener: a connection).
pub(super) fn wait_readable(fd: i32, timeout: Duration) -> Result<()> {
    let mut poll = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    let ready = unsafe { libc::poll(&mut poll, 1, timeout.as_millis() as libc::c_int) };
    match ready {
        1.. => Ok(()),
        0 => bail!("timed out after {} s", timeout.as_secs()),
        _ => Err(std::io::Error::last_os_error().into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn bytes_cross_a_loopback_connection() {
        let loopback = TcpLoopback::open().unwrap();
        assert!(loopback.address().ip().is_loopback());
        let mut client = loopback.connect().unwrap();
        let mut server = loopback.accept().unwrap();
        client.write_all(b"hello").unwrap();
        let mut got = [0u8; 5];
        server.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"hello");
    }
}
