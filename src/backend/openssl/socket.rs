//! OpenSSL's DTLS over loopback UDP (with the same cookie exchange and MTU
//! as over memory): client and server in two threads with blocking
//! sockets, each side timing itself ([`crate::backend::driver::run_sides`]);
//! the bulk pair over UDP; and one side run apart, over TCP through the
//! stream driver, over UDP here. TLS over TCP is in [`super::sides`].

use std::io::{Read, Write};
use std::net::SocketAddr;

use anyhow::{anyhow, bail, Context, Result};

use openssl::ssl::{ErrorCode, ShutdownState, SslStream};

use super::sides::{Lent, Openssl};
use super::{dtls, negotiated, OpensslHandshaker};
use crate::backend::driver::stream::{self, Connected};
use crate::backend::driver::{run_sides, Sides};
use crate::backend::socket::{CutWrites, LossExplained, SocketBulkPair};
use crate::backend::{ApartConnection, ApartHandshake, ApartSide, Carrier, HandshakeSample};
use crate::scenario::Side;
use crate::transport::udp::{bulk_udp_pair, udp_pair, Datagrams};
use crate::transport::IO_TIMEOUT;

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
        client_socket: Datagrams,
        server_socket: Datagrams,
    ) -> Result<Sides<SslStream<Datagrams>, SslStream<Datagrams>>> {
        let client_address = server_socket.peer_address()?;
        let server = self.server_side();
        run_sides(
            || {
                let mut stream = self.client_stream(client_socket)?;
                handshake(&mut stream)?;
                Ok(stream)
            },
            move || server.accept(server_socket, client_address),
        )
    }

    /// What the client negotiated; the session kept for resumption (its
    /// tickets read first, untimed: the server closes, the client reads
    /// up to the close).
    pub(super) fn finish(
        &mut self,
        sides: Sides<SslStream<Datagrams>, SslStream<Datagrams>>,
    ) -> Result<HandshakeSample> {
        let Sides {
            mut client,
            mut server,
            client_time,
            server_time,
            wall_ns,
        } = sides;
        let negotiated = negotiated(client.ssl())?;
        if self.resume {
            server
                .shutdown()
                .map_err(|e| anyhow!("closing the server: {e}"))?;
            read_to_close(&mut client)?;
            self.session = client.ssl().session().map(|s| s.to_owned());
        }
        // As over memory: a connection freed without a shutdown loses its
        // session, which would defeat resumption.
        for stream in [&mut client, &mut server] {
            stream.set_shutdown(ShutdownState::SENT | ShutdownState::RECEIVED);
        }
        Ok(HandshakeSample {
            client: client_time,
            server: server_time,
            wall_ns,
            negotiated,
            split_unsure: false,
        })
    }
}

impl super::sides::ServerSide {
    /// The server's side of one DTLS handshake; `peer` is the client's
    /// address, which the cookie is bound to.
    fn accept(&self, socket: Datagrams, peer: SocketAddr) -> Result<SslStream<Datagrams>> {
        let mut stream = self.server_stream(socket, Some(peer))?;
        handshake(&mut stream)?;
        Ok(stream)
    }
}

/// Runs a DTLS handshake to its end over a UDP socket with OpenSSL's
/// retransmission timer on the real clock: reads wait in slices of at most
/// [`DTLS_SLICE`] (OpenSSL may start a timer inside a call, while a read
/// waits), and a due timer resends the last flight (a lost datagram). It
/// fails after [`IO_TIMEOUT`] without a timer running and without progress.
fn dtls_handshake(stream: &mut SslStream<Datagrams>) -> Result<()> {
    const LONGEST: std::time::Duration = std::time::Duration::from_secs(60);
    let started = std::time::Instant::now();
    let mut quiet_since = started;
    let mut state = stream.ssl().state_string();
    loop {
        let wait = dtls::timer(stream.ssl())
            .unwrap_or(DTLS_SLICE)
            .clamp(std::time::Duration::from_micros(100), DTLS_SLICE);
        stream.get_ref().set_read_timeout(wait)?;
        match stream.do_handshake() {
            Ok(()) => return Ok(()),
            Err(error) if error.code() == ErrorCode::WANT_READ => {
                let resent = dtls::handle_timer(stream.ssl())?;
                let now = stream.ssl().state_string();
                if resent || now != state || dtls::timer(stream.ssl()).is_some() {
                    quiet_since = std::time::Instant::now();
                    state = now;
                } else if quiet_since.elapsed() > IO_TIMEOUT {
                    bail!(
                        "handshake failed: nothing from the peer for {} s",
                        IO_TIMEOUT.as_secs()
                    );
                }
                if started.elapsed() > LONGEST {
                    bail!(
                        "handshake failed: still resending after {} s",
                        LONGEST.as_secs()
                    );
                }
            }
            Err(error) => bail!("handshake failed: {error}"),
        }
    }
}

/// The longest a DTLS read waits before its handshake looks at its timer.
const DTLS_SLICE: std::time::Duration = std::time::Duration::from_millis(50);

/// Runs a handshake to its end over a blocking socket: a "want read" here
/// is a read that timed out.
fn handshake<S: Read + Write>(stream: &mut SslStream<S>) -> Result<()> {
    match stream.do_handshake() {
        Ok(()) => Ok(()),
        Err(error) if error.code() == ErrorCode::WANT_READ => Err(anyhow!(
            "handshake failed: nothing from the peer for {} s",
            IO_TIMEOUT.as_secs()
        )),
        Err(error) => Err(anyhow!("handshake failed: {error}")),
    }
}

/// Reads post-handshake messages (session tickets) up to the peer's close.
fn read_to_close<S: Read + Write>(stream: &mut SslStream<S>) -> Result<()> {
    let mut byte = [0u8; 1];
    match stream.ssl_read(&mut byte) {
        Ok(0) => Ok(()),
        Ok(_) => bail!("unexpected application data after the handshake"),
        Err(error) if error.code() == ErrorCode::ZERO_RETURN => Ok(()),
        Err(error) => Err(anyhow!("reading session tickets failed: {error}")),
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
    let negotiated = negotiated(sides.client.ssl())?;
    let most = dtls::data_mtu(sides.client.ssl())?;
    Ok(SocketBulkPair::new(
        Some(negotiated),
        Box::new(CutWrites {
            inner: sides.client,
            most,
        }),
        Box::new(LossExplained(sides.server)),
    ))
}

/// One side of an OpenSSL handshaker, its peer elsewhere.
pub(super) struct OpensslApart {
    pub(super) handshaker: OpensslHandshaker,
    pub(super) side: Side,
}

impl ApartSide for OpensslApart {
    fn handshake(&mut self, carrier: Carrier) -> Result<ApartHandshake> {
        let connection: Box<dyn ApartConnection>;
        let mut negotiated_here = None;
        match (self.side, carrier) {
            (Side::Client, Carrier::Tcp(mut wire)) => {
                let mut side = Openssl(self.handshaker.client_stream(Lent::default())?);
                stream::handshake(&mut side, &mut wire)?;
                negotiated_here = Some(negotiated(side.0.ssl())?);
                connection = Box::new(Connected { side, wire });
            }
            (Side::Client, Carrier::Udp(socket)) => {
                let mut stream = self.handshaker.client_stream(socket)?;
                dtls_handshake(&mut stream)?;
                negotiated_here = Some(negotiated(stream.ssl())?);
                connection = Box::new(stream);
            }
            (Side::Server, Carrier::Tcp(mut wire)) => {
                let server = self.handshaker.server_side();
                let mut side = Openssl(server.server_stream(Lent::default(), None)?);
                stream::handshake(&mut side, &mut wire)?;
                connection = Box::new(Connected { side, wire });
            }
            (Side::Server, Carrier::Udp(socket)) => {
                let peer = socket.peer_address()?;
                let mut stream = self
                    .handshaker
                    .server_side()
                    .server_stream(socket, Some(peer))?;
                dtls_handshake(&mut stream)?;
                connection = Box::new(stream);
            }
        }
        Ok(ApartHandshake {
            negotiated: negotiated_here,
            connection,
        })
    }
}

/// A DTLS connection kept after its handshake answers the peer's resent
/// flight (a lost Finished flight): OpenSSL resends its own on reading it.
impl ApartConnection for SslStream<Datagrams> {
    fn linger_fd(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        Some(self.get_ref().as_raw_fd())
    }

    fn answer(&mut self) -> Result<()> {
        self.get_ref()
            .set_read_timeout(std::time::Duration::from_millis(1))?;
        let mut byte = [0u8; 1];
        match self.ssl_read(&mut byte) {
            Ok(_) => Ok(()),
            Err(error)
                if matches!(
                    error.code(),
                    ErrorCode::WANT_READ | ErrorCode::ZERO_RETURN | ErrorCode::SYSCALL
                ) =>
            {
                Ok(())
            }
            Err(error) => Err(anyhow!("answering the peer: {error}")),
        }
    }
}
