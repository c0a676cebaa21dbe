//! tlslab's QUIC client (quinn on rustls) against a QUIC server tlslab did
//! not write: a real server under test (Caddy's HTTP/3) at a UDP address on
//! loopback. Each handshake is a new connection from a new socket, with the
//! scenario's TLS 1.3 client configuration (its one group and suite, the
//! test root) offering the server's own ALPN protocol (HTTP/3's `h3`)
//! instead of tlslab's; what it negotiated is reported by rustls as for
//! every QUIC row. The client's time runs from opening its socket until its
//! connection is connected (the kernel's share of its socket calls
//! included, as for TLS over TCP); the sample's server side is left at zero
//! for the caller, who reads the server's CPU from outside. After that the
//! client waits for the server's HANDSHAKE_DONE (the server has then
//! verified the client's Finished and sent its tickets: its work for the
//! handshake is done) and closes the connection, so no connection is left
//! for the server to time out.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Instant;

use anyhow::{Context, Result};
use bytes::BytesMut;

use super::quic::{read_datagram, DatagramLink, QuicHandshaker, QuicSide};
use super::quic_udp::{until, until_connected};
use super::RustlsBackend;
use crate::backend::{thread_cpu_ns, CpuReadings, HandshakeSample, Handshaker, SideTime};
use crate::certs::Credentials;
use crate::scenario::Side;
use crate::scenario::{HandshakeScenario, Transport};
use crate::transport::udp::Datagrams;

/// HTTP/3's "no error" (RFC 9114 §8.1), the code the client closes with.
const H3_NO_ERROR: u32 = 0x100;

impl RustlsBackend {
    /// A QUIC client of `scenario` for the server at `address`, offering
    /// `alpn`.
    pub(super) fn quic_peer(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
        address: SocketAddr,
        alpn: &'static str,
    ) -> Result<QuicPeerClient> {
        let tls = self.configure(scenario, credentials)?;
        let mut client = (*tls.client).clone();
        client.alpn_protocols = vec![alpn.as_bytes().to_vec()];
        let mtu_bytes = scenario
            .mtu_bytes
            .context("a QUIC scenario without an MTU")?;
        let handshaker = QuicHandshaker::new(
            self.provider,
            std::sync::Arc::new(client),
            tls.server,
            tls.server_scheme,
            mtu_bytes,
            Transport::Udp,
        )?;
        Ok(QuicPeerClient {
            handshaker,
            address,
        })
    }
}

/// QUIC handshakes of one scenario with a server elsewhere.
pub(super) struct QuicPeerClient {
    handshaker: QuicHandshaker,
    address: SocketAddr,
}

impl Handshaker for QuicPeerClient {
    /// One connection: connected, verified, confirmed by the server, closed.
    fn handshake(&mut self) -> Result<HandshakeSample> {
        let start = Instant::now();
        let cpu_start = thread_cpu_ns();
        let socket = UdpSocket::bind(("127.0.0.1", 0)).context("a UDP socket")?;
        socket
            .connect(self.address)
            .with_context(|| format!("aiming the UDP socket at {}", self.address))?;
        socket
            .set_nonblocking(true)
            .context("a non-blocking UDP socket")?;
        let handshaker = &self.handshaker;
        let mut side = QuicSide::new(
            Side::Client,
            handshaker.client_endpoint(),
            RefusalsWait(Datagrams::new(socket)),
            self.address,
            handshaker.mtu_bytes,
        );
        side.connect(Instant::now(), handshaker.client.clone(), self.address)
            .with_context(|| format!("QUIC to {}", self.address))?;
        until_connected(&mut side)
            .with_context(|| format!("QUIC handshake with {}", self.address))?;
        let client = SideTime {
            wall_ns: start.elapsed().as_nanos() as u64,
            cpu_ns: thread_cpu_ns().saturating_sub(cpu_start),
        };
        let negotiated = handshaker.negotiated()?;
        until(&mut side, QuicSide::handshake_confirmed)
            .with_context(|| format!("waiting for {}'s HANDSHAKE_DONE", self.address))?;
        side.close(Instant::now(), H3_NO_ERROR)?;
        Ok(HandshakeSample {
            client,
            server: SideTime::default(),
            wall_ns: start.elapsed().as_nanos() as u64,
            negotiated,
            split_unsure: false,
        })
    }

    /// The client runs alone on its thread: its CPU is read at its ends.
    fn read_cpu(&mut self, _readings: CpuReadings) {}
}

/// A UDP socket on which the kernel's "connection refused" (an ICMP port
/// unreachable, while the server's UDP listener is still coming up after
/// its TCP one) means "nothing yet": quinn resends its Initial on its timer.
struct RefusalsWait(Datagrams);

impl Read for RefusalsWait {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        match self.0.read(out) {
            Err(error) if error.kind() == io::ErrorKind::ConnectionRefused => {
                Err(io::ErrorKind::WouldBlock.into())
            }
            other => other,
        }
    }
}

impl Write for RefusalsWait {
    fn write(&mut self, datagram: &[u8]) -> io::Result<usize> {
        match self.0.write(datagram) {
            Err(error) if error.kind() == io::ErrorKind::ConnectionRefused => Ok(datagram.len()),
            other => other,
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl DatagramLink for RefusalsWait {
    fn next_datagram(&mut self, buffer: &mut [u8]) -> io::Result<Option<BytesMut>> {
        read_datagram(self, buffer)
    }
}

impl AsRawFd for RefusalsWait {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}
