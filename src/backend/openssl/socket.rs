//! OpenSSL's DTLS over loopback UDP (with the same cookie exchange and MTU
//! as over memory) on the drivers: both sides in this process on the
//! stream driver, each in its own thread; a side run apart on the datagram
//! driver's timers ([`crate::backend::driver::datagram`]); and the bulk
//! pair over UDP. TLS over TCP is in [`super::sides`].

use anyhow::{Context, Result};

use super::sides::{Lent, Openssl};
use super::{dtls, negotiated, OpensslHandshaker};
use crate::backend::driver::datagram::{self, Retransmits};
use crate::backend::driver::stream::{self, Connected};
use crate::backend::driver::{run_sides, Sides};
use crate::backend::socket::SocketBulkPair;
use crate::backend::{ApartConnection, ApartHandshake, ApartSide, Carrier, HandshakeSample};
use crate::scenario::Side;
use crate::transport::udp::{bulk_udp_pair, udp_pair, Datagrams};

impl OpensslHandshaker {
    /// One DTLS handshake over a fresh pair of loopback UDP sockets.
    pub(super) fn handshake_over_udp(&mut self) -> Result<HandshakeSample> {
        let (client_socket, server_socket) = udp_pair()?;
        let sides = self.establish_over_udp(client_socket, server_socket)?;
        self.finish(sides)
    }

    /// A DTLS handshake over a connected pair of UDP sockets, the server's
    /// cookie bound to the client socket's address.
    pub(super) fn establish_over_udp(
        &self,
        mut client_socket: Datagrams,
        mut server_socket: Datagrams,
    ) -> Result<Sides<Connected<Openssl, Datagrams>, Connected<Openssl, Datagrams>>> {
        let client_address = server_socket.peer_address()?;
        let server = self.server_side();
        run_sides(
            || {
                let mut side = Openssl(self.client_stream(Lent::default())?);
                stream::handshake(&mut side, &mut client_socket)?;
                Ok(Connected {
                    side,
                    wire: client_socket,
                })
            },
            move || {
                let mut side =
                    Openssl(server.server_stream(Lent::default(), Some(client_address))?);
                stream::handshake(&mut side, &mut server_socket)?;
                Ok(Connected {
                    side,
                    wire: server_socket,
                })
            },
        )
    }
}

/// OpenSSL's DTLS timer, on the real clock.
impl Retransmits for Openssl {
    fn timer(&self) -> Option<std::time::Duration> {
        dtls::timer(self.0.ssl())
    }

    fn on_timer(&mut self, _: &mut dyn crate::backend::driver::Wire) -> Result<bool> {
        dtls::handle_timer(self.0.ssl())
    }

    fn state(&self) -> &'static str {
        self.0.ssl().state_string()
    }
}

/// A DTLS client and server of this handshaker over loopback UDP, ready to
/// carry application data in two threads: each write cut into records
/// that fit the MTU, the reader's socket given a large receive buffer.
pub(super) fn bulk_pair_over_udp(handshaker: &OpensslHandshaker) -> Result<SocketBulkPair> {
    let (client_socket, server_socket) = bulk_udp_pair()?;
    let sides = handshaker
        .establish_over_udp(client_socket, server_socket)
        .context("the handshake over UDP")?;
    let negotiated = negotiated(sides.client.side.0.ssl())?;
    let most = dtls::data_mtu(sides.client.side.0.ssl())?;
    Ok(datagram::bulk_pair(negotiated, sides, most))
}

/// One side of an OpenSSL handshaker, its peer elsewhere.
pub(super) struct OpensslApart {
    pub(super) handshaker: OpensslHandshaker,
    pub(super) side: Side,
}

impl ApartSide for OpensslApart {
    fn handshake(&mut self, carrier: Carrier) -> Result<ApartHandshake> {
        let handshaker = &self.handshaker;
        let client = self.side == Side::Client;
        let make = |peer| match client {
            true => handshaker.client_stream(Lent::default()),
            false => handshaker
                .server_side()
                .server_stream(Lent::default(), peer),
        };
        let (negotiated_here, connection): (_, Box<dyn ApartConnection>) = match carrier {
            Carrier::Tcp(mut wire) => {
                let mut side = Openssl(make(None)?);
                stream::handshake(&mut side, &mut wire)?;
                let negotiated = client.then(|| negotiated(side.0.ssl())).transpose()?;
                (negotiated, Box::new(Connected { side, wire }))
            }
            Carrier::Udp(mut wire) => {
                // The server's cookie is bound to the client's address.
                let peer = if client {
                    None
                } else {
                    Some(wire.peer_address()?)
                };
                let mut side = Openssl(make(peer)?);
                datagram::handshake_on_timers(&mut side, &mut wire)?;
                let negotiated = client.then(|| negotiated(side.0.ssl())).transpose()?;
                (negotiated, Box::new(Connected { side, wire }))
            }
        };
        Ok(ApartHandshake {
            negotiated: negotiated_here,
            connection,
        })
    }
}
