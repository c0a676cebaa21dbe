//! QUIC handshakes on rustls through quinn-proto: a client and a server
//! `Endpoint` in this thread, their datagrams carried by the memory
//! datagram channel (the MTU enforced, the wire tap watching), time a
//! virtual clock that moves only when both sides wait on a timer. Each
//! side's calls into quinn (and through it rustls and the crypto provider)
//! are one turn of the [`Turns`] machinery, so each side's CPU is timed
//! and counted exactly as a TLS handshake over memory is. The TLS inside
//! is the rustls configuration the backend builds for TLS 1.3 (the same
//! group, certificate and suite) with tlslab's ALPN protocol; Initial
//! packets are protected with TLS13_AES_128_GCM_SHA256 whatever suite the
//! handshake negotiates (RFC 9001 §5.2). The server accepts every client
//! without address validation (no Retry). What the client negotiated comes
//! from rustls itself ([`quic_session`]). [`RustlsBackend::plain_quic_configs`]
//! gives the same configurations with quinn's own client session, for the
//! QUIC overhead bench's plain loop.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use bytes::{Bytes, BytesMut};
use quinn_proto::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn_proto::{
    ClientConfig, Connection, ConnectionHandle, DatagramEvent, Endpoint, EndpointConfig, Event,
    ServerConfig, TransportConfig, ValidationTokenConfig, VarInt,
};
use rustls::SignatureScheme;

use super::quic_early::EarlyRequest;
use super::quic_session::{ClientReport, ReportSlot, ReportingClientConfig, TicketCount};
use super::{group_id, instrument, scheme_name, suite_name, Provider, RustlsBackend};
use crate::backend::{CpuReadings, HandshakeSample, Handshaker, Negotiated, Turns};
use crate::certs::{Credentials, SERVER_NAME};
use crate::scenario::Side;
use crate::scenario::{HandshakeScenario, Transport};
use crate::transport::datagram::{DatagramEnd, DatagramPipe};

/// Where the client's endpoint seems to be (no socket is opened).
pub(super) const CLIENT_ADDRESS: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 50_000);
/// Where the server's endpoint seems to be.
pub(super) const SERVER_ADDRESS: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 4433);

/// The most datagrams one call may hand out (a GSO batch, as quinn's own
/// driver asks for).
const BATCH_DATAGRAMS: usize = 10;

/// The most turns a handshake may take before it counts as stalled.
const MAX_ROUNDS: usize = 64;

impl RustlsBackend {
    /// The QUIC handshaker of a scenario: quinn around the scenario's
    /// TLS 1.3 configurations.
    pub(super) fn quic(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
    ) -> Result<QuicHandshaker> {
        let tls = self.configure(scenario, credentials)?;
        let mtu_bytes = scenario
            .mtu_bytes
            .ok_or_else(|| anyhow!("a QUIC scenario without an MTU"))?;
        let mut handshaker = QuicHandshaker::new(
            self.provider,
            tls.client,
            tls.server,
            tls.server_scheme,
            mtu_bytes,
            scenario.transport,
        )?;
        handshaker.resumes = scenario.resumption.is_on();
        handshaker.early_data = scenario.resumption.sends_early_data();
        Ok(handshaker)
    }
}

/// QUIC handshakes of one scenario: the configurations, built once.
pub(super) struct QuicHandshaker {
    endpoint: Arc<EndpointConfig>,
    pub(super) server: Arc<ServerConfig>,
    pub(super) client: ClientConfig,
    report: ReportSlot,
    /// The tickets the latest client connection has taken in.
    pub(super) tickets: TicketCount,
    server_scheme: Arc<AtomicU16>,
    pub(super) mtu_bytes: u16,
    /// Memory (one thread, in turns) or UDP (two threads, see [`super::quic_udp`]).
    transport: Transport,
    cpu_readings: CpuReadings,
    /// True if and only if the next handshake resumes the last one's
    /// session: over UDP the client then reads its ticket after the
    /// handshake ([`super::quic_udp`]).
    pub(super) resumes: bool,
    /// True if and only if the client sends a request in 0-RTT that the
    /// server reads inside the handshake ([`super::quic_early`]).
    pub(super) early_data: bool,
}

impl QuicHandshaker {
    /// QUIC over `mtu_bytes` datagrams around the rustls configurations
    /// the backend built for the scenario (TLS 1.3, ALPN set).
    pub(super) fn new(
        provider: Provider,
        client: Arc<rustls::ClientConfig>,
        server: Arc<rustls::ServerConfig>,
        server_scheme: Arc<AtomicU16>,
        mtu_bytes: u16,
        transport: Transport,
    ) -> Result<Self> {
        let initial = initial_suite(provider)?;
        let quinn = QuinnConfigs::new(server, initial, mtu_bytes)?;
        let report: ReportSlot = Arc::new(Mutex::new(None));
        let tickets = TicketCount::default();
        let mut client_config = ClientConfig::new(Arc::new(ReportingClientConfig {
            inner: client,
            initial,
            report: Arc::clone(&report),
            tickets: Arc::clone(&tickets),
        }));
        client_config.transport_config(quinn.path);
        Ok(Self {
            endpoint: quinn.endpoint,
            server: quinn.server,
            client: client_config,
            report,
            tickets,
            server_scheme,
            mtu_bytes,
            transport,
            cpu_readings: CpuReadings::EveryTurn,
            resumes: false,
            early_data: false,
        })
    }

    /// A new client endpoint.
    pub(super) fn client_endpoint(&self) -> Endpoint {
        Endpoint::new(Arc::clone(&self.endpoint), None, false, None)
    }

    /// A new server endpoint.
    pub(super) fn server_endpoint(&self) -> Endpoint {
        Endpoint::new(
            Arc::clone(&self.endpoint),
            Some(Arc::clone(&self.server)),
            false,
            None,
        )
    }

    /// What the client reported, with the scheme the server signed with.
    pub(super) fn negotiated(&self) -> Result<Negotiated> {
        let report: ClientReport = self
            .report
            .lock()
            .expect("report slot")
            .take()
            .ok_or_else(|| anyhow!("the client's TLS reported no finished handshake"))?;
        let scheme = self.server_scheme.swap(0, Ordering::Relaxed);
        Ok(Negotiated {
            version: report.version,
            suite: report
                .suite
                .map(suite_name)
                .unwrap_or_else(|| "none".to_string()),
            group: report.group.map(group_id),
            signature: (scheme != 0).then(|| scheme_name(SignatureScheme::from(scheme))),
            resumed: report.resumed,
            alpn: report.alpn,
            early_data: report.early_data,
        })
    }
}

/// quinn's side of a QUIC scenario, around the server's rustls
/// configuration: the endpoint, the server and the path every connection
/// of the scenario shares.
struct QuinnConfigs {
    endpoint: Arc<EndpointConfig>,
    server: Arc<ServerConfig>,
    path: Arc<TransportConfig>,
}

impl QuinnConfigs {
    /// A path of `mtu_bytes` datagrams, Initial packets under `initial`.
    fn new(
        server: Arc<rustls::ServerConfig>,
        initial: rustls::quic::Suite,
        mtu_bytes: u16,
    ) -> Result<Self> {
        let mut path = TransportConfig::default();
        // The path's MTU is known: no discovery, every datagram at most it.
        path.initial_mtu(mtu_bytes)
            .min_mtu(mtu_bytes)
            .mtu_discovery_config(None);
        let path = Arc::new(path);
        let mut endpoint = EndpointConfig::default();
        endpoint
            .max_udp_payload_size(mtu_bytes)
            .context("the MTU as QUIC's max_udp_payload_size")?;

        let server_crypto = QuicServerConfig::with_initial(server, initial)
            .map_err(|error| anyhow!("the server's Initial suite: {error}"))?;
        let mut server = ServerConfig::with_crypto(Arc::new(server_crypto));
        server.transport_config(Arc::clone(&path));
        // No NEW_TOKEN frames: the next connection is not validated by
        // them (the server validates nobody), so they would be work for
        // nothing after the handshake.
        let mut tokens = ValidationTokenConfig::default();
        tokens.sent(0);
        server.validation_token_config(tokens);
        Ok(Self {
            endpoint: Arc::new(endpoint),
            server: Arc::new(server),
            path,
        })
    }
}

/// quinn's endpoint, server and client configurations of a QUIC scenario,
/// built as [`QuicHandshaker`] builds them (the same rustls configurations,
/// path and Initial suite) but with quinn's own rustls client session in
/// place of the one that reports what was negotiated.
#[doc(hidden)]
pub struct PlainQuicConfigs {
    pub endpoint: Arc<EndpointConfig>,
    pub server: Arc<ServerConfig>,
    pub client: ClientConfig,
}

impl RustlsBackend {
    /// The configurations a plain loop over quinn drives for `scenario`,
    /// with no tlslab code inside the connection: what the QUIC overhead
    /// bench (benches/overhead.rs) holds tlslab's QUIC handshaker against.
    #[doc(hidden)]
    pub fn plain_quic_configs(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
    ) -> Result<PlainQuicConfigs> {
        let tls = self.configure(scenario, credentials)?;
        let mtu_bytes = scenario
            .mtu_bytes
            .ok_or_else(|| anyhow!("a QUIC scenario without an MTU"))?;
        let initial = initial_suite(self.provider)?;
        let quinn = QuinnConfigs::new(tls.server, initial, mtu_bytes)?;
        let crypto = QuicClientConfig::with_initial(tls.client, initial)
            .map_err(|error| anyhow!("the client's Initial suite: {error}"))?;
        let mut client = ClientConfig::new(Arc::new(crypto));
        client.transport_config(quinn.path);
        Ok(PlainQuicConfigs {
            endpoint: quinn.endpoint,
            server: quinn.server,
            client,
        })
    }
}

/// TLS13_AES_128_GCM_SHA256 of `provider`, for Initial packets.
fn initial_suite(provider: Provider) -> Result<rustls::quic::Suite> {
    let suite = match provider {
        Provider::AwsLcRs => rustls::crypto::aws_lc_rs::cipher_suite::TLS13_AES_128_GCM_SHA256,
        Provider::Ring => rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256,
    };
    suite
        .tls13()
        .and_then(|suite| suite.quic_suite())
        .ok_or_else(|| anyhow!("the provider's TLS13_AES_128_GCM_SHA256 has no QUIC keys"))
}

/// One side of a QUIC handshake: its endpoint, its connection once there
/// is one, its end of the datagrams (the memory channel's or a UDP socket).
pub(super) struct QuicSide<E> {
    pub(super) turn: Side,
    endpoint: Endpoint,
    connection: Option<(ConnectionHandle, Connection)>,
    pub(super) end: E,
    peer: SocketAddr,
    /// True once the connection said it was connected.
    pub(super) connected: bool,
    /// Its part in a 0-RTT handshake (none unless the scenario sends early data).
    pub(super) early: EarlyRequest,
    /// Where a datagram is read into (the MTU's size; empty over the
    /// memory channel, which hands datagrams over whole).
    datagram: Vec<u8>,
    /// Where quinn writes what it sends.
    scratch: Vec<u8>,
}

/// Where a QUIC side's datagrams come from: the memory channel hands each
/// one over as it was written; a socket is read into the side's buffer.
pub(super) trait DatagramLink: Write {
    /// True if and only if a datagram is read into the side's buffer.
    const READS_INTO_BUFFER: bool = true;

    /// The next datagram waiting, `None` if none waits; `buffer` (the
    /// MTU's size) is where a socket reads it into.
    fn next_datagram(&mut self, buffer: &mut [u8]) -> std::io::Result<Option<BytesMut>>;
}

impl DatagramLink for DatagramEnd {
    const READS_INTO_BUFFER: bool = false;

    fn next_datagram(&mut self, _buffer: &mut [u8]) -> std::io::Result<Option<BytesMut>> {
        // Written whole by the peer's side, so it moves without a copy.
        Ok(self
            .take_datagram()
            .map(|datagram| Bytes::from(datagram).into()))
    }
}

impl DatagramLink for crate::transport::udp::Datagrams {
    fn next_datagram(&mut self, buffer: &mut [u8]) -> std::io::Result<Option<BytesMut>> {
        read_datagram(self, buffer)
    }
}

/// The next datagram `socket` has, read into `buffer`; `None` if none waits.
pub(super) fn read_datagram(
    socket: &mut impl Read,
    buffer: &mut [u8],
) -> std::io::Result<Option<BytesMut>> {
    match socket.read(buffer) {
        Ok(read) => Ok(Some(BytesMut::from(&buffer[..read]))),
        Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => Ok(None),
        Err(error) => Err(error),
    }
}

impl<E: DatagramLink> QuicSide<E> {
    /// A side of `turn` on `endpoint` whose datagrams go through `end` to
    /// `peer`, datagrams at most `mtu_bytes` long.
    pub(super) fn new(
        turn: Side,
        endpoint: Endpoint,
        end: E,
        peer: SocketAddr,
        mtu_bytes: u16,
    ) -> Self {
        Self {
            turn,
            endpoint,
            connection: None,
            end,
            peer,
            connected: false,
            early: EarlyRequest::None,
            datagram: if E::READS_INTO_BUFFER {
                vec![0; usize::from(mtu_bytes)]
            } else {
                Vec::new()
            },
            scratch: Vec::with_capacity(usize::from(mtu_bytes) * BATCH_DATAGRAMS),
        }
    }

    /// The client opens its connection to `server` and sends its first flight.
    pub(super) fn connect(
        &mut self,
        now: Instant,
        config: ClientConfig,
        server: SocketAddr,
    ) -> Result<()> {
        let connection = self
            .endpoint
            .connect(now, config, server, SERVER_NAME)
            .context("connecting")?;
        let (handle, mut connection) = connection;
        self.early.send(&mut connection)?;
        self.connection = Some((handle, connection));
        self.step(now)
    }

    /// Takes in every datagram waiting for this side, lets timers that are
    /// due fire and sends what the connection has to send.
    pub(super) fn step(&mut self, now: Instant) -> Result<()> {
        let Self {
            datagram, scratch, ..
        } = self;
        while let Some(data) = self.end.next_datagram(datagram)? {
            match self
                .endpoint
                .handle(now, self.peer, None, None, data, scratch)
            {
                Some(DatagramEvent::NewConnection(incoming)) => {
                    // Accepted unvalidated: no Retry round trip.
                    let accepted = self
                        .endpoint
                        .accept(incoming, now, scratch, None)
                        .map_err(|error| anyhow!("accepting the connection: {}", error.cause))?;
                    self.connection = Some(accepted);
                }
                Some(DatagramEvent::ConnectionEvent(_, event)) => {
                    if let Some((_, connection)) = &mut self.connection {
                        connection.handle_event(event);
                    }
                }
                Some(DatagramEvent::Response(transmit)) => {
                    send(
                        &mut self.end,
                        &scratch[..transmit.size],
                        transmit.segment_size,
                    )?;
                }
                None => {}
            }
            scratch.clear();
        }
        let Some((handle, connection)) = &mut self.connection else {
            return Ok(());
        };
        if connection.poll_timeout().is_some_and(|due| due <= now) {
            connection.handle_timeout(now);
        }
        self.early.receive(connection)?;
        loop {
            while let Some(event) = connection.poll_endpoint_events() {
                if let Some(event) = self.endpoint.handle_event(*handle, event) {
                    connection.handle_event(event);
                }
            }
            let Some(transmit) = connection.poll_transmit(now, BATCH_DATAGRAMS, scratch) else {
                break;
            };
            let size = transmit.size;
            send(&mut self.end, &scratch[..size], transmit.segment_size)?;
            scratch.clear();
        }
        while let Some(event) = connection.poll() {
            match event {
                Event::Connected => self.connected = true,
                Event::ConnectionLost { reason } => bail!("the connection was lost: {reason}"),
                _ => {}
            }
        }
        Ok(())
    }

    /// True if and only if this side's handshake is done: connected, and
    /// in a 0-RTT handshake the server has the whole request.
    pub(super) fn done(&self) -> bool {
        self.connected && self.early.done()
    }

    /// The connection, once there is one (after the handshake, what bulk
    /// data goes through).
    pub(super) fn connection(&mut self) -> Option<&mut Connection> {
        self.connection.as_mut().map(|(_, connection)| connection)
    }

    /// True if and only if the server has confirmed the handshake: the
    /// client received its HANDSHAKE_DONE frame (RFC 9001 §4.1.2), sent
    /// once the server has verified the client's Finished.
    pub(super) fn handshake_confirmed(&self) -> bool {
        self.connection
            .as_ref()
            .is_some_and(|(_, connection)| connection.stats().frame_rx.handshake_done > 0)
    }

    /// Closes the connection with `code` (the application's "no error")
    /// and sends the CONNECTION_CLOSE, so the peer stops at once instead
    /// of waiting for its idle timeout.
    pub(super) fn close(&mut self, now: Instant, code: u32) -> Result<()> {
        let Some((_, connection)) = &mut self.connection else {
            return Ok(());
        };
        connection.close(now, VarInt::from_u32(code), Bytes::new());
        let scratch = &mut self.scratch;
        while let Some(transmit) = connection.poll_transmit(now, BATCH_DATAGRAMS, scratch) {
            send(
                &mut self.end,
                &scratch[..transmit.size],
                transmit.segment_size,
            )?;
            scratch.clear();
        }
        Ok(())
    }

    /// When this side's next timer is due, if it has one.
    pub(super) fn next_timer(&mut self) -> Option<Instant> {
        self.connection
            .as_mut()
            .and_then(|(_, connection)| connection.poll_timeout())
    }
}

/// Writes a batch of datagrams (split at `segment_size`) to the channel
/// (the memory channel refuses one larger than its MTU).
fn send(end: &mut impl Write, datagrams: &[u8], segment_size: Option<usize>) -> Result<()> {
    let size = segment_size.unwrap_or(datagrams.len()).max(1);
    for datagram in datagrams.chunks(size) {
        end.write_all(datagram)
            .context("a QUIC datagram the channel refused")?;
    }
    Ok(())
}

impl Handshaker for QuicHandshaker {
    fn handshake(&mut self) -> Result<HandshakeSample> {
        if self.transport == Transport::Udp {
            return self.handshake_over_udp();
        }
        let pipe = DatagramPipe::new(self.mtu_bytes);
        let mut client = QuicSide::new(
            Side::Client,
            self.client_endpoint(),
            pipe.client_end(),
            SERVER_ADDRESS,
            self.mtu_bytes,
        );
        client.early = EarlyRequest::for_side(self.early_data, true);
        let mut server = QuicSide::new(
            Side::Server,
            self.server_endpoint(),
            pipe.server_end(),
            CLIENT_ADDRESS,
            self.mtu_bytes,
        );
        server.early = EarlyRequest::for_side(self.early_data, false);
        let start = Instant::now();
        let mut turns = Turns::start(self.cpu_readings);
        self.drive(&pipe, &mut client, &mut server, &mut turns)?;
        let wall_ns = start.elapsed().as_nanos() as u64;
        let times = turns.finish();
        let mut negotiated = self.negotiated()?;
        // Accepted as the client's rustls says, and the request really
        // read by the server under 0-RTT keys.
        negotiated.early_data &= server.early.read_in_zero_rtt();
        Ok(HandshakeSample::of_turns(times, wall_ns, negotiated))
    }

    fn read_cpu(&mut self, readings: CpuReadings) {
        self.cpu_readings = readings;
    }
}

impl QuicHandshaker {
    /// Runs one handshake between `client` and `server` over `pipe` to
    /// its end (both connected, nothing in flight), each side's calls one
    /// turn of `turns`.
    pub(super) fn drive(
        &self,
        pipe: &DatagramPipe,
        client: &mut QuicSide<DatagramEnd>,
        server: &mut QuicSide<DatagramEnd>,
        turns: &mut Turns,
    ) -> Result<()> {
        let mut now = Instant::now();
        instrument::set_side(Side::Client);
        turns.begin(Side::Client);
        let first = client.connect(now, self.client.clone(), SERVER_ADDRESS);
        turns.ended(Side::Client);
        first.context("client")?;

        let mut rounds = 0;
        loop {
            let mut moved = false;
            for side in [&mut *server, &mut *client] {
                let waiting = match side.turn {
                    Side::Client => pipe.pending_for_client(),
                    Side::Server => pipe.pending_for_server(),
                };
                let timer_due = side.next_timer().is_some_and(|due| due <= now);
                if !waiting && !timer_due {
                    continue;
                }
                moved = true;
                instrument::set_side(match side.turn {
                    Side::Client => Side::Client,
                    Side::Server => Side::Server,
                });
                turns.begin(side.turn);
                let stepped = side.step(now);
                if side.done() {
                    turns.done(side.turn);
                }
                turns.ended(side.turn);
                stepped.with_context(|| format!("{:?}", side.turn).to_lowercase())?;
            }
            let waiting = pipe.pending_for_client() || pipe.pending_for_server();
            if client.connected && server.connected && !waiting {
                // A 0-RTT request the server never read (early data
                // rejected) shows in the sample's verification.
                break;
            }
            rounds += 1;
            if rounds > MAX_ROUNDS {
                bail!("the QUIC handshake stalled after {rounds} rounds");
            }
            if !moved {
                // Both wait on a timer (a loss, which memory does not
                // have, or an acknowledgement delay): the virtual clock
                // jumps to the first one.
                let due = [client.next_timer(), server.next_timer()]
                    .into_iter()
                    .flatten()
                    .min()
                    .ok_or_else(|| {
                        anyhow!("the QUIC handshake stalled: nothing to send, no timer")
                    })?;
                now = now.max(due);
            }
        }
        Ok(())
    }
}
