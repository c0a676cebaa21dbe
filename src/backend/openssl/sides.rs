//! OpenSSL's connections as stream sides ([`StreamSide`]) and their
//! making: each connection's stream is the wire the driver lends it for
//! one call ([`Lent`]), so OpenSSL reads and writes through its BIO what
//! it would read and write on the socket itself (a record's header, then
//! its body; a flight per write), and its CPU time over TCP is what it
//! was with the socket as its stream. The handshaker's handshakes and
//! bulk pair over TCP go through the stream driver.

use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::ptr::NonNull;
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use openssl::ssl::{ErrorCode, ShutdownState, Ssl, SslContext, SslStream};

use super::{dtls, negotiated, OpensslHandshaker};
use crate::backend::driver::stream::{self, Connected};
use crate::backend::driver::{Sides, StreamSide, Wire};
use crate::backend::socket::SocketBulkPair;
use crate::backend::HandshakeSample;
use crate::certs::SERVER_NAME;
use crate::transport::tcp::TcpLoopback;

/// The stream under an OpenSSL connection run by a driver: the wire lent
/// to the call in progress, nothing between calls (a read or write then
/// would block).
#[derive(Default)]
pub(super) struct Lent {
    wire: Option<NonNull<dyn Wire>>,
    /// The bytes read in the call in progress.
    read_bytes: usize,
}

// SAFETY: the pointer is set only for the length of one call on the side
// ([`Openssl::lent`]), made on the thread that lent the wire, and never
// followed outside that call.
unsafe impl Send for Lent {}

impl Read for Lent {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        match self.wire {
            // SAFETY: the wire outlives the call it is lent to (see `Openssl::lent`).
            Some(mut wire) => {
                let read = unsafe { wire.as_mut() }.read(out)?;
                self.read_bytes += read;
                Ok(read)
            }
            None => Err(ErrorKind::WouldBlock.into()),
        }
    }
}

impl Write for Lent {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        match self.wire {
            // SAFETY: as for reads.
            Some(mut wire) => unsafe { wire.as_mut() }.write(data),
            None => Err(ErrorKind::WouldBlock.into()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self.wire {
            // SAFETY: as for reads.
            Some(mut wire) => unsafe { wire.as_mut() }.flush(),
            None => Ok(()),
        }
    }
}

/// An OpenSSL connection, client or server, over the wire lent to it.
pub(super) struct Openssl(pub(super) SslStream<Lent>);

impl Openssl {
    /// Runs `call` with `wire` as the connection's stream.
    fn lent<T>(&mut self, wire: &mut dyn Wire, call: impl FnOnce(&mut SslStream<Lent>) -> T) -> T {
        let wire = NonNull::from(wire);
        // SAFETY: only the borrow's lifetime is erased: the pointer is
        // cleared before this function returns, while `wire` is still
        // borrowed. If `call` panics it stays, but the side is then
        // dropped unused (freeing the connection reads and writes nothing).
        let wire =
            unsafe { std::mem::transmute::<NonNull<dyn Wire + '_>, NonNull<dyn Wire>>(wire) };
        *self.0.get_mut() = Lent {
            wire: Some(wire),
            read_bytes: 0,
        };
        let result = call(&mut self.0);
        self.0.get_mut().wire = None;
        result
    }
}

impl StreamSide for Openssl {
    /// The handshake runs on: over a blocking socket, to its end.
    fn receive(&mut self, wire: &mut dyn Wire) -> Result<usize> {
        match self.lent(wire, |stream| stream.do_handshake()) {
            Ok(()) => Ok(self.0.get_ref().read_bytes),
            // Over a blocking socket, a read that timed out.
            Err(error) if error.code() == ErrorCode::WANT_READ => {
                Err(std::io::Error::from(ErrorKind::WouldBlock).into())
            }
            Err(error) => Err(anyhow!("handshake failed: {error}")),
        }
    }

    /// OpenSSL writes as it works: nothing is held.
    fn wants_write(&self) -> bool {
        false
    }

    fn send(&mut self, _: &mut dyn Wire) -> std::io::Result<usize> {
        Ok(0)
    }

    fn is_handshaking(&self) -> bool {
        !self.0.ssl().is_init_finished()
    }

    fn close(&mut self, wire: &mut dyn Wire) -> Result<()> {
        self.lent(wire, |stream| stream.shutdown())
            .map_err(|e| anyhow!("closing the connection: {e}"))?;
        Ok(())
    }

    fn write_plaintext(&mut self, data: &[u8], wire: &mut dyn Wire) -> std::io::Result<usize> {
        self.lent(wire, |stream| stream.write(data))
    }

    fn read_plaintext(&mut self, out: &mut [u8], wire: &mut dyn Wire) -> std::io::Result<usize> {
        self.lent(wire, |stream| stream.read(out))
    }
}

type Established = Sides<Connected<Openssl>, Connected<Openssl>>;

impl OpensslHandshaker {
    /// The client's connection over `socket`, before its handshake.
    pub(super) fn client_stream<S: Read + Write>(&self, socket: S) -> Result<SslStream<S>> {
        let mut ssl = Ssl::new(&self.client)?;
        ssl.set_connect_state();
        ssl.set_hostname(SERVER_NAME)?;
        ssl.param_mut().set_host(SERVER_NAME)?;
        if let Some(session) = &self.session {
            // SAFETY: the session was made by a client of this same context.
            unsafe { ssl.set_session(session)? };
        }
        self.open(ssl, socket)
    }

    /// What the server thread needs to accept connections of this handshaker.
    pub(super) fn server_side(&self) -> ServerSide {
        ServerSide {
            context: self.server.clone(),
            mtu_bytes: self.mtu_bytes,
        }
    }

    /// One TLS handshake over a loopback TCP connection, closed after it;
    /// the session kept for resumption (its tickets read first, untimed:
    /// the server closes, the client reads up to the close).
    pub(super) fn handshake_over_tcp(&mut self) -> Result<HandshakeSample> {
        let server = self.server_side();
        let mut listener = self.listener.take();
        let sides = stream::over_kept_tcp(
            &mut listener,
            || Ok(Openssl(self.client_stream(Lent::default())?)),
            move || Ok(Openssl(server.server_stream(Lent::default(), None)?)),
        );
        self.listener = listener;
        self.finish(sides?)
    }

    /// What the client negotiated; the session kept for resumption (its
    /// tickets read first, untimed: the server closes, the client reads
    /// up to the close).
    pub(super) fn finish<W: Read + Write>(
        &mut self,
        sides: Sides<Connected<Openssl, W>, Connected<Openssl, W>>,
    ) -> Result<HandshakeSample> {
        let Sides {
            mut client,
            mut server,
            client_time,
            server_time,
            wall_ns,
        } = sides;
        let negotiated = negotiated(client.side.0.ssl())?;
        if self.resume {
            stream::close(&mut server.side, &mut server.wire)?;
            stream::read_to_close(&mut client.side, &mut client.wire)?;
            self.session = client.side.0.ssl().session().map(|s| s.to_owned());
        }
        // As over memory: a connection freed without a shutdown loses its
        // session, which would defeat resumption.
        for side in [&mut client.side, &mut server.side] {
            side.0
                .set_shutdown(ShutdownState::SENT | ShutdownState::RECEIVED);
        }
        Ok(HandshakeSample {
            client: client_time,
            server: server_time,
            wall_ns,
            negotiated,
            split_unsure: false,
        })
    }

    /// A TLS handshake over a new TCP connection to `loopback`.
    fn establish_over_tcp(&self, loopback: &Arc<TcpLoopback>) -> Result<Established> {
        let server = self.server_side();
        stream::over_tcp(
            loopback,
            || Ok(Openssl(self.client_stream(Lent::default())?)),
            move || Ok(Openssl(server.server_stream(Lent::default(), None)?)),
        )
    }
}

/// The server's context and MTU, for the server thread.
pub(super) struct ServerSide {
    context: SslContext,
    mtu_bytes: Option<u16>,
}

impl ServerSide {
    /// The server's connection over `socket`, before its handshake; over
    /// UDP `peer` is the client's address, which the DTLS cookie is bound to.
    pub(super) fn server_stream<S: Read + Write>(
        &self,
        socket: S,
        peer: Option<SocketAddr>,
    ) -> Result<SslStream<S>> {
        let mut ssl = Ssl::new(&self.context)?;
        ssl.set_accept_state();
        if let Some(peer) = peer {
            dtls::set_peer_address(&mut ssl, peer);
        }
        let stream = SslStream::new(ssl, socket)?;
        if let Some(mtu_bytes) = self.mtu_bytes {
            dtls::set_mtu(stream.ssl(), mtu_bytes)?;
        }
        Ok(stream)
    }
}

/// A client and a server of this handshaker over loopback TCP, ready to
/// carry application data in two threads.
pub(super) fn bulk_pair_over_tcp(handshaker: &OpensslHandshaker) -> Result<SocketBulkPair> {
    let loopback = Arc::new(TcpLoopback::open()?);
    let sides = handshaker
        .establish_over_tcp(&loopback)
        .context("the handshake over TCP")?;
    let negotiated = negotiated(sides.client.side.0.ssl())?;
    Ok(SocketBulkPair::new(
        Some(negotiated),
        Box::new(sides.client),
        Box::new(sides.server),
    ))
}
