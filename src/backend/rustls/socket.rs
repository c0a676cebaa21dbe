//! rustls over loopback TCP: client and server in two threads with
//! blocking sockets, each side timing itself
//! ([`crate::backend::socket::run_sides`]); and the bulk pair over TCP.

use std::net::TcpStream;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use rustls::{ClientConnection, HandshakeKind, ServerConnection, StreamOwned};

use super::instrument;
use super::RustlsHandshaker;
use crate::backend::socket::{run_sides, Sides, SocketBulkPair};
use crate::backend::{ApartConnection, ApartHandshake, ApartSide, Carrier, HandshakeSample};
use crate::scenario::Side;
use crate::transport::tcp::TcpLoopback;

type Established = Sides<(ClientConnection, TcpStream), (ServerConnection, TcpStream)>;

impl RustlsHandshaker {
    /// One handshake over a fresh loopback TCP connection, closed after it.
    pub(super) fn handshake_over_tcp(&mut self) -> Result<HandshakeSample> {
        let loopback = TcpLoopback::kept(&mut self.listener)?;
        let Sides {
            client: (mut client, mut client_socket),
            server: (mut server, mut server_socket),
            client_time,
            server_time,
            wall_ns,
        } = self.establish_over_tcp(&loopback).inspect_err(|_| {
            // A connection the server never took may still wait in the
            // backlog: the next handshake listens afresh.
            self.listener = None;
        })?;
        let negotiated = self.negotiated(&client);
        if client.handshake_kind() == Some(HandshakeKind::FullWithHelloRetryRequest) {
            bail!("the handshake needed a HelloRetryRequest (an extra round trip)");
        }
        if self.resumes {
            // Untimed: the server closes, the client reads its session
            // tickets up to the close, so the next handshake can resume.
            server.send_close_notify();
            server.complete_io(&mut server_socket)?;
            loop {
                if client.read_tls(&mut client_socket)? == 0 {
                    break;
                }
                if client.process_new_packets()?.peer_has_closed() {
                    break;
                }
            }
        }
        Ok(HandshakeSample {
            client: client_time,
            server: server_time,
            wall_ns,
            negotiated,
            split_unsure: false,
        })
    }

    /// A handshake over a new TCP connection to `loopback`: the client
    /// connects and the server accepts in their timed stretches.
    fn establish_over_tcp(&self, loopback: &Arc<TcpLoopback>) -> Result<Established> {
        let (config, listener) = (Arc::clone(&self.server), Arc::clone(loopback));
        run_sides(
            || {
                let mut socket = loopback.connect()?;
                instrument::set_side(Side::Client);
                let mut client =
                    ClientConnection::new(Arc::clone(&self.client), self.server_name.clone())?;
                while client.is_handshaking() {
                    client.complete_io(&mut socket)?;
                }
                Ok((client, socket))
            },
            move || {
                let mut socket = listener.accept()?;
                instrument::set_side(Side::Server);
                let mut server = ServerConnection::new(config)?;
                while server.is_handshaking() {
                    server.complete_io(&mut socket)?;
                }
                // Session tickets, made as the handshake ends.
                while server.wants_write() {
                    server.write_tls(&mut socket)?;
                }
                Ok((server, socket))
            },
        )
    }
}

/// A client and a server of this handshaker over loopback TCP, ready to
/// carry application data in two threads.
pub(super) fn bulk_pair_over_tcp(handshaker: &RustlsHandshaker) -> Result<SocketBulkPair> {
    let loopback = Arc::new(TcpLoopback::open()?);
    let sides = handshaker
        .establish_over_tcp(&loopback)
        .context("the handshake over TCP")?;
    let negotiated = handshaker.negotiated(&sides.client.0);
    let (client, client_socket) = sides.client;
    let (server, server_socket) = sides.server;
    Ok(SocketBulkPair::new(
        Some(negotiated),
        Box::new(StreamOwned::new(client, client_socket)),
        Box::new(StreamOwned::new(server, server_socket)),
    ))
}

/// One side of a rustls handshaker over TCP, its peer elsewhere.
pub(super) struct RustlsApart {
    pub(super) handshaker: RustlsHandshaker,
    pub(super) side: Side,
}

impl ApartSide for RustlsApart {
    fn handshake(&mut self, carrier: Carrier) -> Result<ApartHandshake> {
        let Carrier::Tcp(mut socket) = carrier else {
            bail!("rustls has no DTLS to run over UDP");
        };
        let handshaker = &self.handshaker;
        match self.side {
            Side::Client => {
                let mut client = ClientConnection::new(
                    Arc::clone(&handshaker.client),
                    handshaker.server_name.clone(),
                )?;
                while client.is_handshaking() {
                    client.complete_io(&mut socket)?;
                }
                // The client's last flight (TLS 1.3: its Finished).
                while client.wants_write() {
                    client.write_tls(&mut socket)?;
                }
                if client.handshake_kind() == Some(HandshakeKind::FullWithHelloRetryRequest) {
                    bail!("the handshake needed a HelloRetryRequest (an extra round trip)");
                }
                Ok(ApartHandshake {
                    negotiated: Some(handshaker.negotiated(&client)),
                    connection: Box::new((client, socket)),
                })
            }
            Side::Server => {
                let mut server = ServerConnection::new(Arc::clone(&handshaker.server))?;
                while server.is_handshaking() {
                    server.complete_io(&mut socket)?;
                }
                while server.wants_write() {
                    server.write_tls(&mut socket)?;
                }
                Ok(ApartHandshake {
                    negotiated: None,
                    connection: Box::new((server, socket)),
                })
            }
        }
    }
}

impl ApartConnection for (ClientConnection, TcpStream) {}
impl ApartConnection for (ServerConnection, TcpStream) {}
