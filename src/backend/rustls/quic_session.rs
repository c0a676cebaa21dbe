//! The client's TLS session inside a QUIC connection, for quinn-proto:
//! rustls' QUIC client driven as quinn's own rustls session drives it
//! (quinn-proto 0.11, `crypto/rustls.rs`, MIT OR Apache-2.0), plus what
//! quinn's keeps to itself: when the handshake is done, the session notes
//! what the client negotiated (suite, group, resumption, ALPN, whether its
//! 0-RTT data was accepted) in a slot the handshaker reads, so a QUIC row
//! is verified from the library's own report, as every TLS row is; and it
//! counts the session tickets the client has taken in, so a driver that
//! stops at the handshake's end (over UDP) knows when the next
//! connection can resume.

use std::any::Any;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use quinn_proto::crypto::rustls::HandshakeData;
use quinn_proto::crypto::{
    self, ExportKeyingMaterialError, HeaderKey, KeyPair, Keys, PacketKey, Session,
};
use quinn_proto::transport_parameters::TransportParameters;
use quinn_proto::{ConnectError, ConnectionId, Side, TransportError, TransportErrorCode};
use rustls::quic::{ClientConnection, Connection, KeyChange, Secrets, Suite, Version};
use rustls::{HandshakeKind, ProtocolVersion};
use rustls_pki_types::ServerName;

use crate::scenario::TlsVersion;

/// What the client negotiated, as rustls reports it once the handshake is
/// done (the server's signature scheme is noted by the verifier apart).
#[derive(Debug, Clone)]
pub(super) struct ClientReport {
    /// "QUIC" when TLS 1.3 ran inside QUIC version 1, else both versions
    /// as rustls names them (a draft's QUIC, another TLS).
    pub version: String,
    pub suite: Option<rustls::SupportedCipherSuite>,
    pub group: Option<rustls::NamedGroup>,
    pub resumed: bool,
    pub alpn: Option<String>,
    /// True if and only if the server accepted the client's 0-RTT data.
    pub early_data: bool,
}

/// Where a client session leaves its [`ClientReport`].
pub(super) type ReportSlot = Arc<Mutex<Option<ClientReport>>>;

/// How many TLS 1.3 session tickets the latest client connection has
/// taken in (each is in the client's session store once counted).
pub(super) type TicketCount = Arc<AtomicU32>;

/// A rustls client configuration for quinn-proto whose sessions report
/// what they negotiated into `report`.
pub(super) struct ReportingClientConfig {
    pub inner: Arc<rustls::ClientConfig>,
    /// The suite that protects Initial packets (TLS13_AES_128_GCM_SHA256,
    /// RFC 9001 §5.2), whatever suite the handshake negotiates.
    pub initial: Suite,
    pub report: ReportSlot,
    pub tickets: TicketCount,
}

impl crypto::ClientConfig for ReportingClientConfig {
    fn start_session(
        self: Arc<Self>,
        version: u32,
        server_name: &str,
        params: &TransportParameters,
    ) -> Result<Box<dyn Session>, ConnectError> {
        let version = quic_version(version).ok_or(ConnectError::UnsupportedVersion)?;
        let name = ServerName::try_from(server_name)
            .map_err(|_| ConnectError::InvalidServerName(server_name.into()))?
            .to_owned();
        let mut encoded = Vec::new();
        params.write(&mut encoded);
        let connection = ClientConnection::new(Arc::clone(&self.inner), version, name, encoded)
            .map_err(|error| ConnectError::InvalidServerName(format!("{server_name}: {error}")))?;
        *self.report.lock().expect("report slot") = None;
        self.tickets.store(0, Ordering::Relaxed);
        Ok(Box::new(ReportingSession {
            version,
            connection: Connection::Client(connection),
            initial: self.initial,
            next_secrets: None,
            got_handshake_data: false,
            report: Arc::clone(&self.report),
            tickets: Arc::clone(&self.tickets),
        }))
    }
}

/// rustls' QUIC version for a QUIC version number (v1 and its drafts).
fn quic_version(version: u32) -> Option<Version> {
    match version {
        0xff00_001d..=0xff00_0020 => Some(Version::V1Draft),
        0x0000_0001 | 0xff00_0021..=0xff00_0022 => Some(Version::V1),
        _ => None,
    }
}

/// The client's TLS inside one QUIC connection.
struct ReportingSession {
    version: Version,
    /// Always a client connection.
    connection: Connection,
    initial: Suite,
    next_secrets: Option<Secrets>,
    got_handshake_data: bool,
    report: ReportSlot,
    tickets: TicketCount,
}

impl ReportingSession {
    /// Notes what was negotiated, once, when the handshake is done.
    fn report_when_done(&self) {
        if self.connection.is_handshaking() {
            return;
        }
        let mut slot = self.report.lock().expect("report slot");
        if slot.is_some() {
            return;
        }
        let version = match (self.version, self.connection.protocol_version()) {
            (Version::V1, Some(ProtocolVersion::TLSv1_3)) => {
                TlsVersion::Quic.protocol_name().to_string()
            }
            (quic, tls) => format!("{tls:?} inside QUIC {quic:?}"),
        };
        *slot = Some(ClientReport {
            version,
            suite: self.connection.negotiated_cipher_suite(),
            group: self
                .connection
                .negotiated_key_exchange_group()
                .map(|group| group.name()),
            resumed: self.connection.handshake_kind() == Some(HandshakeKind::Resumed),
            alpn: self
                .connection
                .alpn_protocol()
                .map(|alpn| String::from_utf8_lossy(alpn).into_owned()),
            early_data: match &self.connection {
                Connection::Client(client) => client.is_early_data_accepted(),
                Connection::Server(_) => false,
            },
        });
    }
}

/// quinn's keys from rustls' keys.
fn keys(keys: rustls::quic::Keys) -> Keys {
    Keys {
        header: KeyPair {
            local: Box::new(keys.local.header),
            remote: Box::new(keys.remote.header),
        },
        packet: KeyPair {
            local: Box::new(keys.local.packet),
            remote: Box::new(keys.remote.packet),
        },
    }
}

impl Session for ReportingSession {
    fn initial_keys(&self, dst_cid: &ConnectionId, side: Side) -> Keys {
        keys(self.initial.keys(dst_cid, side.into(), self.version))
    }

    fn handshake_data(&self) -> Option<Box<dyn Any>> {
        self.got_handshake_data.then(|| -> Box<dyn Any> {
            Box::new(HandshakeData {
                protocol: self.connection.alpn_protocol().map(<[u8]>::to_vec),
                server_name: None,
            })
        })
    }

    fn peer_identity(&self) -> Option<Box<dyn Any>> {
        self.connection
            .peer_certificates()
            .map(|chain| -> Box<dyn Any> {
                Box::new(
                    chain
                        .iter()
                        .map(|der| der.clone().into_owned())
                        .collect::<Vec<_>>(),
                )
            })
    }

    fn early_crypto(&self) -> Option<(Box<dyn HeaderKey>, Box<dyn PacketKey>)> {
        let keys = self.connection.zero_rtt_keys()?;
        Some((Box::new(keys.header), Box::new(keys.packet)))
    }

    fn early_data_accepted(&self) -> Option<bool> {
        match &self.connection {
            Connection::Client(client) => Some(client.is_early_data_accepted()),
            Connection::Server(_) => None,
        }
    }

    fn is_handshaking(&self) -> bool {
        self.connection.is_handshaking()
    }

    fn read_handshake(&mut self, buf: &[u8]) -> Result<bool, TransportError> {
        self.connection
            .read_hs(buf)
            .map_err(|error| match self.connection.alert() {
                Some(alert) => TransportError {
                    code: TransportErrorCode::crypto(alert.into()),
                    frame: None,
                    reason: error.to_string(),
                },
                None => TransportError {
                    code: TransportErrorCode::PROTOCOL_VIOLATION,
                    frame: None,
                    reason: format!("TLS error: {error}"),
                },
            })?;
        self.report_when_done();
        if let Connection::Client(client) = &self.connection {
            // A NewSessionTicket comes in here, after the handshake.
            self.tickets
                .store(client.tls13_tickets_received(), Ordering::Relaxed);
        }
        // As quinn's session: the handshake data is ready once ALPN is
        // agreed on (or the handshake is done without it).
        if !self.got_handshake_data
            && (self.connection.alpn_protocol().is_some() || !self.connection.is_handshaking())
        {
            self.got_handshake_data = true;
            return Ok(true);
        }
        Ok(false)
    }

    fn transport_parameters(&self) -> Result<Option<TransportParameters>, TransportError> {
        match self.connection.quic_transport_parameters() {
            None => Ok(None),
            Some(mut encoded) => Ok(Some(TransportParameters::read(Side::Client, &mut encoded)?)),
        }
    }

    fn write_handshake(&mut self, buf: &mut Vec<u8>) -> Option<Keys> {
        let change = self.connection.write_hs(buf);
        self.report_when_done();
        let next = match change? {
            KeyChange::Handshake { keys } => keys,
            KeyChange::OneRtt { keys, next } => {
                self.next_secrets = Some(next);
                keys
            }
        };
        Some(keys(next))
    }

    fn next_1rtt_keys(&mut self) -> Option<KeyPair<Box<dyn PacketKey>>> {
        let keys = self.next_secrets.as_mut()?.next_packet_keys();
        Some(KeyPair {
            local: Box::new(keys.local),
            remote: Box::new(keys.remote),
        })
    }

    /// tlslab's server never sends a Retry (it accepts every address
    /// unvalidated, as OpenSSL's SSL_LISTENER_FLAG_NO_VALIDATE does), so a
    /// Retry is never valid here: the connection then fails rather than
    /// measuring a handshake it did not ask for.
    fn is_valid_retry(
        &self,
        _orig_dst_cid: &ConnectionId,
        _header: &[u8],
        _payload: &[u8],
    ) -> bool {
        false
    }

    fn export_keying_material(
        &self,
        output: &mut [u8],
        label: &[u8],
        context: &[u8],
    ) -> Result<(), ExportKeyingMaterialError> {
        self.connection
            .export_keying_material(output, label, Some(context))
            .map(|_| ())
            .map_err(|_| ExportKeyingMaterialError)
    }
}
