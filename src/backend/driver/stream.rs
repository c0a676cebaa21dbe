//! The stream driver: runs a sans-IO side's handshake over a byte stream
//! (a blocking loopback TCP connection), both sides of a handshake over a
//! fresh TCP connection in two threads ([`super::threads`]), and keeps an
//! established side with its stream as one connection: application data
//! in and out through `Read` and `Write` for `bulk`, and kept while a peer
//! run apart finishes.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

use anyhow::{anyhow, bail, Result};

use super::{run_sides, Sides, StreamSide};
use crate::backend::ApartConnection;
use crate::transport::tcp::TcpLoopback;
use crate::transport::IO_TIMEOUT;

/// An established side and the stream it runs over.
pub struct Connected<S, W = TcpStream> {
    pub side: S,
    pub wire: W,
}

/// Runs `side`'s handshake to its end over `wire`: whatever the side has
/// to send goes out, then one read of what the peer sent goes in, until
/// the handshake is done and nothing waits to be sent (the client's last
/// flight, the server's session tickets).
pub fn handshake<S: StreamSide, W: Read + Write>(side: &mut S, wire: &mut W) -> Result<()> {
    loop {
        flush(side, wire)?;
        if !side.is_handshaking() {
            return Ok(());
        }
        match side.receive(wire) {
            Ok(0) if side.is_handshaking() => {
                bail!("handshake failed: the peer closed the connection")
            }
            Ok(_) => {}
            Err(error) => {
                // The alert that describes the error, if the side made one.
                let _ = side.send(wire);
                return Err(timed_out(error));
            }
        }
    }
}

/// Sends everything `side` has to send.
pub fn flush<S: StreamSide, W: Read + Write>(side: &mut S, wire: &mut W) -> std::io::Result<()> {
    while side.wants_write() {
        side.send(wire)?;
    }
    Ok(())
}

/// A read that timed out, said so; other errors as they are.
fn timed_out(error: anyhow::Error) -> anyhow::Error {
    match error.downcast_ref::<std::io::Error>().map(|e| e.kind()) {
        Some(ErrorKind::WouldBlock | ErrorKind::TimedOut) => anyhow!(
            "handshake failed: nothing from the peer for {} s",
            IO_TIMEOUT.as_secs()
        ),
        _ => error,
    }
}

/// Closes `side`: its close_notify goes out.
pub fn close<S: StreamSide, W: Read + Write>(side: &mut S, wire: &mut W) -> Result<()> {
    side.close(wire)?;
    Ok(flush(side, wire)?)
}

/// Reads what the peer sends after the handshake (session tickets) up to
/// its close.
pub fn read_to_close<S: StreamSide, W: Read + Write>(side: &mut S, wire: &mut W) -> Result<()> {
    match side.read_plaintext(&mut [0u8; 1], wire) {
        Ok(0) => Ok(()),
        Ok(_) => bail!("unexpected application data after the handshake"),
        Err(error) => Err(anyhow!("reading session tickets failed: {error}")),
    }
}

/// Both sides' handshakes over a new TCP connection to `loopback`, each in
/// its own thread: the client connects, then makes its side (`client`),
/// and the server accepts, then makes its side (`server`), in their timed
/// stretches.
pub fn over_tcp<C, S>(
    loopback: &Arc<TcpLoopback>,
    client: impl FnOnce() -> Result<C>,
    server: impl FnOnce() -> Result<S> + Send + 'static,
) -> Result<Sides<Connected<C>, Connected<S>>>
where
    C: StreamSide,
    S: StreamSide + Send + 'static,
{
    let listener = Arc::clone(loopback);
    run_sides(
        || {
            let mut wire = loopback.connect()?;
            let mut side = client()?;
            handshake(&mut side, &mut wire)?;
            Ok(Connected { side, wire })
        },
        move || {
            let mut wire = listener.accept()?;
            let mut side = server()?;
            handshake(&mut side, &mut wire)?;
            Ok(Connected { side, wire })
        },
    )
}

/// [`over_tcp`] to the listener kept in `slot` (opened there on first
/// use), the one all of a handshaker's connections go to, as a server's
/// do. A handshake that fails drops it: a connection the server never
/// took may still wait in its backlog, so the next handshake listens
/// afresh.
pub fn over_kept_tcp<C, S>(
    slot: &mut Option<Arc<TcpLoopback>>,
    client: impl FnOnce() -> Result<C>,
    server: impl FnOnce() -> Result<S> + Send + 'static,
) -> Result<Sides<Connected<C>, Connected<S>>>
where
    C: StreamSide,
    S: StreamSide + Send + 'static,
{
    let loopback = TcpLoopback::kept(slot)?;
    over_tcp(&loopback, client, server).inspect_err(|_| *slot = None)
}

/// Application data in: records read off the stream until some plaintext
/// comes out; 0 at the peer's close.
impl<S: StreamSide, W: Read + Write> Read for Connected<S, W> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        self.side.read_plaintext(out, &mut self.wire)
    }
}

/// Application data out: each write's records sent before it returns.
impl<S: StreamSide, W: Read + Write> Write for Connected<S, W> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let taken = self.side.write_plaintext(data, &mut self.wire)?;
        flush(&mut self.side, &mut self.wire)?;
        Ok(taken)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.wire.flush()
    }
}

/// Over TCP the kernel resends what was lost: nothing to answer.
impl<S: StreamSide + Send> ApartConnection for Connected<S> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::driver::Wire;
    use std::time::Duration;

    /// A side that says hello, then waits for the peer's hello to be done.
    #[derive(Default)]
    struct Hello {
        said: bool,
        heard: Vec<u8>,
    }

    impl StreamSide for Hello {
        fn receive(&mut self, wire: &mut dyn Wire) -> Result<usize> {
            let mut buffer = [0u8; 16];
            let read = wire.read(&mut buffer)?;
            self.heard.extend_from_slice(&buffer[..read]);
            Ok(read)
        }
        fn wants_write(&self) -> bool {
            !self.said
        }
        fn send(&mut self, wire: &mut dyn Wire) -> std::io::Result<usize> {
            self.said = true;
            wire.write(b"hello")
        }
        fn is_handshaking(&self) -> bool {
            self.heard.len() < 5
        }
        fn close(&mut self, _: &mut dyn Wire) -> Result<()> {
            Ok(())
        }
        fn write_plaintext(&mut self, data: &[u8], wire: &mut dyn Wire) -> std::io::Result<usize> {
            wire.write(data)
        }
        fn read_plaintext(
            &mut self,
            out: &mut [u8],
            wire: &mut dyn Wire,
        ) -> std::io::Result<usize> {
            wire.read(out)
        }
    }

    #[test]
    fn both_sides_send_before_they_wait_and_end_when_done() {
        let loopback = Arc::new(TcpLoopback::open().unwrap());
        let sides = over_tcp(&loopback, || Ok(Hello::default()), || Ok(Hello::default())).unwrap();
        assert_eq!(sides.client.side.heard, b"hello");
        assert_eq!(sides.server.side.heard, b"hello");
        assert!(sides.client_time.cpu_ns > 0 && sides.server_time.cpu_ns > 0);
    }

    #[test]
    fn a_peer_that_closes_or_stays_silent_fails_the_handshake_with_the_reason() {
        let loopback = TcpLoopback::open().unwrap();
        let mut client = loopback.connect().unwrap();
        let server = loopback.accept().unwrap();
        client
            .set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let error = handshake(&mut Hello::default(), &mut client).unwrap_err();
        assert!(
            format!("{error:#}").contains("nothing from the peer"),
            "{error:#}"
        );
        drop(server);
        // A new connection whose server closes it unread.
        let mut client = loopback.connect().unwrap();
        drop(loopback.accept().unwrap());
        let mut side = Hello {
            said: true,
            heard: Vec::new(),
        };
        let error = handshake(&mut side, &mut client).unwrap_err();
        assert!(
            format!("{error:#}").contains("the peer closed"),
            "{error:#}"
        );
    }
}
