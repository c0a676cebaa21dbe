//! rustls' connections as sans-IO stream sides ([`StreamSide`]: they are
//! sans-IO already, `read_tls`/`process_new_packets`/`write_tls`), the
//! handshaker's handshakes and bulk pair over TCP through the stream
//! driver, and one side of a handshaker run apart.

use std::io::{Read, Write};
use std::ops::DerefMut;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use rustls::{ClientConnection, ConnectionCommon, HandshakeKind, ServerConnection};

use super::instrument;
use super::RustlsHandshaker;
use crate::backend::driver::stream::{self, Connected};
use crate::backend::driver::{Sides, StreamSide, Wire};
use crate::backend::socket::SocketBulkPair;
use crate::backend::{ApartHandshake, ApartSide, Carrier, HandshakeSample};
use crate::scenario::Side;
use crate::transport::tcp::TcpLoopback;

/// A rustls connection, client or server.
pub(super) struct Tls<C>(pub(super) C);

impl<C, Data> StreamSide for Tls<C>
where
    C: DerefMut<Target = ConnectionCommon<Data>>,
{
    fn receive(&mut self, wire: &mut dyn Wire) -> Result<usize> {
        let read = self.0.read_tls(wire)?;
        self.0.process_new_packets()?;
        Ok(read)
    }

    fn wants_write(&self) -> bool {
        self.0.wants_write()
    }

    fn send(&mut self, wire: &mut dyn Wire) -> std::io::Result<usize> {
        self.0.write_tls(wire)
    }

    fn is_handshaking(&self) -> bool {
        self.0.is_handshaking()
    }

    fn close(&mut self, _: &mut dyn Wire) -> Result<()> {
        self.0.send_close_notify();
        Ok(())
    }

    fn write_plaintext(&mut self, data: &[u8], _: &mut dyn Wire) -> std::io::Result<usize> {
        self.0.writer().write(data)
    }

    /// rustls hands out what it decrypted before it reads more (it keeps
    /// little received plaintext).
    fn read_plaintext(&mut self, out: &mut [u8], wire: &mut dyn Wire) -> std::io::Result<usize> {
        loop {
            match self.0.reader().read(out) {
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
                other => return other,
            }
            if self.0.read_tls(wire)? == 0 {
                // The peer's end of the stream: rustls says how it ended.
                return self.0.reader().read(out);
            }
            self.0
                .process_new_packets()
                .map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidData, error))?;
        }
    }
}

type Established = Sides<Connected<Tls<ClientConnection>>, Connected<Tls<ServerConnection>>>;

impl RustlsHandshaker {
    /// The client's side of one connection, before its handshake.
    fn client_side(&self) -> Result<Tls<ClientConnection>> {
        instrument::set_side(Side::Client);
        let client = ClientConnection::new(Arc::clone(&self.client), self.server_name.clone())?;
        Ok(Tls(client))
    }

    /// What makes the server's side of a connection, on the server's thread.
    fn server_side(&self) -> impl FnOnce() -> Result<Tls<ServerConnection>> + Send + 'static {
        let config = Arc::clone(&self.server);
        move || {
            instrument::set_side(Side::Server);
            Ok(Tls(ServerConnection::new(config)?))
        }
    }

    /// One handshake over a loopback TCP connection, closed after it.
    pub(super) fn handshake_over_tcp(&mut self) -> Result<HandshakeSample> {
        let server = self.server_side();
        let mut listener = self.listener.take();
        let sides = stream::over_kept_tcp(&mut listener, || self.client_side(), server);
        self.listener = listener;
        let Sides {
            mut client,
            mut server,
            client_time,
            server_time,
            wall_ns,
        } = sides?;
        let negotiated = self.negotiated(&client.side.0);
        if client.side.0.handshake_kind() == Some(HandshakeKind::FullWithHelloRetryRequest) {
            bail!("the handshake needed a HelloRetryRequest (an extra round trip)");
        }
        if self.resumes {
            // Untimed: the server closes, the client reads its session
            // tickets up to the close, so the next handshake can resume.
            stream::close(&mut server.side, &mut server.wire)?;
            stream::read_to_close(&mut client.side, &mut client.wire)?;
        }
        Ok(HandshakeSample {
            client: client_time,
            server: server_time,
            wall_ns,
            negotiated,
            split_unsure: false,
        })
    }

    /// A handshake over a new TCP connection to `loopback`.
    fn establish_over_tcp(&self, loopback: &Arc<TcpLoopback>) -> Result<Established> {
        stream::over_tcp(loopback, || self.client_side(), self.server_side())
    }
}

/// A client and a server of this handshaker over loopback TCP, ready to
/// carry application data in two threads.
pub(super) fn bulk_pair_over_tcp(handshaker: &RustlsHandshaker) -> Result<SocketBulkPair> {
    let loopback = Arc::new(TcpLoopback::open()?);
    let sides = handshaker
        .establish_over_tcp(&loopback)
        .context("the handshake over TCP")?;
    let negotiated = handshaker.negotiated(&sides.client.side.0);
    Ok(SocketBulkPair::new(
        Some(negotiated),
        Box::new(sides.client),
        Box::new(sides.server),
    ))
}

/// One side of a rustls handshaker over TCP, its peer elsewhere.
pub(super) struct RustlsApart {
    pub(super) handshaker: RustlsHandshaker,
    pub(super) side: Side,
}

impl ApartSide for RustlsApart {
    fn handshake(&mut self, carrier: Carrier) -> Result<ApartHandshake> {
        let Carrier::Tcp(mut wire) = carrier else {
            bail!("rustls has no DTLS to run over UDP");
        };
        let handshaker = &self.handshaker;
        match self.side {
            Side::Client => {
                let mut side = Tls(ClientConnection::new(
                    Arc::clone(&handshaker.client),
                    handshaker.server_name.clone(),
                )?);
                stream::handshake(&mut side, &mut wire)?;
                if side.0.handshake_kind() == Some(HandshakeKind::FullWithHelloRetryRequest) {
                    bail!("the handshake needed a HelloRetryRequest (an extra round trip)");
                }
                Ok(ApartHandshake {
                    negotiated: Some(handshaker.negotiated(&side.0)),
                    connection: Box::new(Connected { side, wire }),
                })
            }
            Side::Server => {
                let mut side = Tls(ServerConnection::new(Arc::clone(&handshaker.server))?);
                stream::handshake(&mut side, &mut wire)?;
                Ok(ApartHandshake {
                    negotiated: None,
                    connection: Box::new(Connected { side, wire }),
                })
            }
        }
    }
}
