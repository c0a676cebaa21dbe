//! The plain QUIC loops the overhead bench holds tlslab's QUIC handshakers
//! against: a client and a server in this thread over memory datagrams,
//! driven straight through the library with no timing, verification or
//! bookkeeping. quinn's two endpoints are driven by hand with a virtual
//! clock, as quinn-proto's own tests do (tests/util.rs, `Pair`); OpenSSL's
//! QUIC runs over a datagram BIO pair through the same calls as tlslab's
//! driver, each side given a turn only when a datagram or a timer is due.

// Each bench uses some of them.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Instant;

use bytes::BytesMut;
use openssl::ssl::{Ssl, SslContext};
use quinn_proto::{Connection, ConnectionHandle, DatagramEvent, Endpoint, Event};
use tlslab::backend::openssl::quic::{
    accept_connection, datagram_waiting, event_timeout, handle_events, handshake_step, timeout_due,
    QuicWire,
};
use tlslab::backend::rustls::PlainQuicConfigs;
use tlslab::certs::SERVER_NAME;

/// Where the client's endpoint seems to be (no socket is opened).
const CLIENT_ADDRESS: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 50_000);
/// Where the server's endpoint seems to be.
const SERVER_ADDRESS: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 4433);

/// The most datagrams one `poll_transmit` may hand out (as tlslab asks).
const BATCH_DATAGRAMS: usize = 10;

/// One quinn endpoint, its connection once there is one, and the
/// datagrams waiting for it.
struct QuinnSide {
    endpoint: Endpoint,
    connection: Option<(ConnectionHandle, Connection)>,
    inbox: VecDeque<BytesMut>,
    connected: bool,
}

impl QuinnSide {
    fn new(endpoint: Endpoint) -> Self {
        Self {
            endpoint,
            connection: None,
            inbox: VecDeque::new(),
            connected: false,
        }
    }

    /// True if and only if a datagram waits or the connection's timer is due.
    fn due(&mut self, now: Instant) -> bool {
        !self.inbox.is_empty() || self.next_timer().is_some_and(|due| due <= now)
    }

    fn next_timer(&mut self) -> Option<Instant> {
        self.connection.as_mut()?.1.poll_timeout()
    }

    /// Takes in every waiting datagram from `peer`, fires a due timer and
    /// puts what the connection sends into `outbox`.
    fn step(
        &mut self,
        now: Instant,
        peer: SocketAddr,
        outbox: &mut VecDeque<BytesMut>,
        scratch: &mut Vec<u8>,
    ) {
        while let Some(datagram) = self.inbox.pop_front() {
            match self
                .endpoint
                .handle(now, peer, None, None, datagram, scratch)
            {
                Some(DatagramEvent::NewConnection(incoming)) => {
                    let accepted = self.endpoint.accept(incoming, now, scratch, None);
                    self.connection = Some(accepted.map_err(|e| e.cause).unwrap());
                }
                Some(DatagramEvent::ConnectionEvent(_, event)) => {
                    self.connection.as_mut().unwrap().1.handle_event(event);
                }
                Some(DatagramEvent::Response(transmit)) => {
                    post(outbox, &scratch[..transmit.size], transmit.segment_size);
                }
                None => {}
            }
            scratch.clear();
        }
        let (handle, connection) = self.connection.as_mut().unwrap();
        if connection.poll_timeout().is_some_and(|due| due <= now) {
            connection.handle_timeout(now);
        }
        loop {
            while let Some(event) = connection.poll_endpoint_events() {
                if let Some(event) = self.endpoint.handle_event(*handle, event) {
                    connection.handle_event(event);
                }
            }
            let Some(transmit) = connection.poll_transmit(now, BATCH_DATAGRAMS, scratch) else {
                break;
            };
            post(outbox, &scratch[..transmit.size], transmit.segment_size);
            scratch.clear();
        }
        while let Some(event) = connection.poll() {
            match event {
                Event::Connected => self.connected = true,
                Event::ConnectionLost { reason } => panic!("connection lost: {reason}"),
                _ => {}
            }
        }
    }
}

/// Splits a batch at `segment_size` into datagrams for the peer.
fn post(outbox: &mut VecDeque<BytesMut>, batch: &[u8], segment_size: Option<usize>) {
    for datagram in batch.chunks(segment_size.unwrap_or(batch.len()).max(1)) {
        outbox.push_back(BytesMut::from(datagram));
    }
}

/// One full QUIC handshake between two new quinn endpoints of `configs`.
pub fn quinn_plain_handshake(configs: &PlainQuicConfigs) {
    let mut client = QuinnSide::new(Endpoint::new(configs.endpoint.clone(), None, false, None));
    let mut server = QuinnSide::new(Endpoint::new(
        configs.endpoint.clone(),
        Some(configs.server.clone()),
        false,
        None,
    ));
    let mut scratch = Vec::new();
    let mut now = Instant::now();
    let connection = client
        .endpoint
        .connect(now, configs.client.clone(), SERVER_ADDRESS, SERVER_NAME)
        .unwrap();
    client.connection = Some(connection);
    client.step(now, SERVER_ADDRESS, &mut server.inbox, &mut scratch);
    loop {
        let mut moved = false;
        if server.due(now) {
            server.step(now, CLIENT_ADDRESS, &mut client.inbox, &mut scratch);
            moved = true;
        }
        if client.due(now) {
            client.step(now, SERVER_ADDRESS, &mut server.inbox, &mut scratch);
            moved = true;
        }
        if client.connected
            && server.connected
            && client.inbox.is_empty()
            && server.inbox.is_empty()
        {
            break;
        }
        if !moved {
            // Both wait on a timer: the virtual clock jumps to the first.
            now = [client.next_timer(), server.next_timer()]
                .into_iter()
                .flatten()
                .min()
                .expect("a timer");
        }
    }
}

/// One full QUIC handshake on OpenSSL between a new client of `client_ctx`
/// and a new listener of `server_ctx` over a datagram BIO pair.
pub fn openssl_quic_plain_handshake(client_ctx: &SslContext, server_ctx: &SslContext) {
    let mut wire = QuicWire::listen(server_ctx).unwrap();
    let mut client = wire.connect(client_ctx).unwrap();
    let listener = &wire.listener;
    let mut server: Option<Ssl> = None;
    let (mut client_done, mut server_done) = (false, false);
    loop {
        let server_due = datagram_waiting(listener)
            || timeout_due(listener)
            || server.as_ref().is_some_and(timeout_due);
        if server_due {
            handle_events(listener);
            if server.is_none() {
                server = accept_connection(listener).unwrap();
            }
            if let Some(connection) = &mut server {
                if server_done {
                    handle_events(connection);
                } else {
                    server_done = handshake_step(connection).unwrap();
                }
            }
        }
        let client_due = datagram_waiting(&client) || timeout_due(&client);
        if client_due {
            if client_done {
                handle_events(&client);
            } else {
                client_done = handshake_step(&mut client).unwrap();
            }
        }
        if client_done && server_done && !datagram_waiting(&client) && !datagram_waiting(listener) {
            break;
        }
        if !server_due && !client_due {
            // Both wait on a timer (OpenSSL's clock is the real one).
            let first = [Some(listener), Some(&client), server.as_ref()]
                .into_iter()
                .flatten()
                .filter_map(event_timeout)
                .min()
                .expect("a timer");
            std::thread::sleep(first);
        }
    }
}
