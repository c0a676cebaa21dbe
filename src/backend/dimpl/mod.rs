//! The dimpl backend: DTLS 1.2 and DTLS 1.3 from the `dimpl` crate (pure
//! Rust, sans-IO, its crypto on aws-lc-rs; MIT OR Apache-2.0), the DTLS 1.3
//! that OpenSSL 3.6 lacks. Client and server run in one thread over the
//! in-memory datagram channel (MTU enforced); tlslab moves every datagram
//! and drives the library's timers on a logical clock, so a lost datagram
//! is resent after a timeout that costs no waiting. Over loopback UDP
//! (`udp.rs`) each side runs in its own thread on the datagram driver, its
//! endpoint a sans-IO side (`sides.rs`) with its timers on the real clock.
//! dimpl reports only the
//! version it negotiated: suite, group and signature are read off the
//! server's datagrams ([`wire`]); each side checks its peer's certificate in
//! `peer`; application data for `bulk` is in `bulk.rs`. All dimpl code of
//! tlslab is in this folder.
//!
//! What dimpl offers, and so what this backend runs: ECDHE-ECDSA only
//! (X25519, P-256, P-384; ECDSA P-256 and P-384 certificates), AES-GCM and
//! ChaCha20-Poly1305, full handshakes only (no resumption), the server's
//! cookie exchange always on (HelloVerifyRequest in DTLS 1.2, a
//! HelloRetryRequest with a cookie in DTLS 1.3). Its server sends its leaf
//! certificate without intermediates; the client verifies that leaf (and
//! the server a client's, for mutual authentication) with rustls's WebPKI
//! verifier on aws-lc-rs, given the intermediates out of band.

mod bulk;
mod descriptor;
mod peer;
mod sides;
mod udp;
pub mod wire;

use std::io::{ErrorKind, Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use dimpl::crypto::{Dtls12CipherSuite, Dtls13CipherSuite};
use dimpl::{Config, Dtls, DtlsCertificate, NamedGroup, Output, ProtocolVersion};
use rustls::client::WebPkiServerVerifier;
use rustls::server::WebPkiClientVerifier;
use rustls::RootCertStore;
use rustls_pki_types::CertificateDer;

use bulk::{record_payload_bytes, DimplBulkPair};
use descriptor::capabilities;
pub use descriptor::DESCRIPTOR;
use peer::{certificate, PeerCheck};

use super::{
    Backend, BulkPair, Capabilities, CpuReadings, HandshakeSample, Handshaker, LibraryInfo,
    Negotiated, PreparedOperation, PrimitiveBackend, SideTimes, Turns, Unsupported,
};
use crate::certs::Credentials;
use crate::scenario::speed::SpeedRow;
use crate::scenario::Side;
use crate::scenario::{
    Aead, Group, HandshakeScenario, Named, TlsVersion, Transport, DEFAULT_MTU_BYTES,
};
use crate::transport::datagram::{DatagramEnd, DatagramPipe, Fault};

/// The smallest MTU dimpl accepts in its configuration; its DTLS 1.2
/// handshakes run down to it.
const MINIMUM_MTU_BYTES: u16 = 64;

/// The smallest MTU this backend runs dimpl's DTLS 1.3 handshakes at. Below
/// about 180 bytes dimpl 0.8's DTLS 1.3 either overflows its buffer of 12
/// records per flight (and panics) or, with a CertificateRequest, sends
/// datagrams over the MTU (seen from 120 to 170 bytes); 200 leaves a margin.
const MINIMUM_DTLS13_MTU_BYTES: u16 = 200;

/// The most datagrams dimpl may hold queued to send, or received and
/// not yet processed.
const MAX_QUEUED_DATAGRAMS: usize = 256;

/// The least room dimpl's output buffer starts with: enough for the peer's
/// leaf certificate.
const OUTPUT_BUFFER_BYTES: usize = 16 * 1024;

/// The most retransmission timeouts a handshake may wait through before it
/// counts as stalled (dimpl resends a flight four times by default).
const MAX_TIMEOUTS: usize = 8;

/// The dimpl backend.
#[derive(Debug, Default)]
pub struct DimplBackend;

impl Backend for DimplBackend {
    fn id(&self) -> &'static str {
        DESCRIPTOR.name()
    }

    fn subject(&self) -> crate::scenario::Subject {
        crate::scenario::Subject::library(DESCRIPTOR.id)
    }

    fn library(&self) -> LibraryInfo {
        LibraryInfo {
            subject: self.subject(),
            library: DESCRIPTOR.library.to_string(),
            version: format!(
                "{} (aws-lc-rs {})",
                crate::build_info::DIMPL_VERSION,
                crate::build_info::AWS_LC_RS_VERSION
            ),
        }
    }

    fn capabilities(&self) -> &Capabilities {
        capabilities()
    }

    fn unsupported_reason(&self, scenario: &HandshakeScenario) -> Option<String> {
        if !scenario.version.is_datagram() {
            return Some("dimpl implements DTLS only (no TLS over streams)".to_string());
        }
        if let Some(reason) = capabilities().unsupported_reason(self.id(), scenario) {
            return Some(reason);
        }
        let mtu_bytes = scenario.mtu_bytes?;
        let (floor, why) = match scenario.version {
            TlsVersion::Dtls13 => (
                MINIMUM_DTLS13_MTU_BYTES,
                " (below it dimpl 0.8 overflows its flight buffer or exceeds the MTU)",
            ),
            _ => (MINIMUM_MTU_BYTES, ""),
        };
        (mtu_bytes < floor).then(|| {
            format!(
                "an MTU of {mtu_bytes} bytes is too small for a {} handshake: dimpl needs at least {floor} bytes{why}",
                scenario.version.display()
            )
        })
    }

    fn handshaker(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
    ) -> Result<Box<dyn Handshaker>> {
        Ok(Box::new(DimplHandshaker::new(scenario, credentials)?))
    }

    fn apart(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
        side: Side,
    ) -> Result<Box<dyn super::ApartSide>> {
        Ok(Box::new(udp::DimplApart {
            handshaker: DimplHandshaker::new(scenario, credentials)?,
            side,
        }))
    }

    fn bulk_pair(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
    ) -> Result<Box<dyn BulkPair>> {
        let handshaker = DimplHandshaker::new(scenario, credentials)?;
        if scenario.transport.is_socket() {
            return Ok(Box::new(handshaker.bulk_pair_over_udp()?));
        }
        let pipe = DatagramPipe::new(handshaker.mtu_bytes);
        let established = handshaker.establish_over(&pipe)?;
        let negotiated = handshaker.negotiated(&established)?;
        Ok(Box::new(DimplBulkPair {
            negotiated,
            pipe,
            client: established.client,
            server: established.server,
            client_end: established.client_end,
            server_end: established.server_end,
            record_bytes: record_payload_bytes(scenario.version, handshaker.mtu_bytes),
        }))
    }

    fn primitives(&self) -> Box<dyn PrimitiveBackend> {
        Box::new(NoPrimitives)
    }
}

/// dimpl exposes no primitives of its own: its crypto is aws-lc-rs, which
/// `speed` measures as rustls-aws-lc.
struct NoPrimitives;

impl PrimitiveBackend for NoPrimitives {
    fn id(&self) -> &'static str {
        DESCRIPTOR.name()
    }

    fn prepare(&self, _row: &SpeedRow) -> Result<PreparedOperation, Unsupported> {
        Err(Unsupported::new(
            "dimpl exposes no primitives (its crypto is aws-lc-rs: see rustls-aws-lc)",
        ))
    }
}

/// The dimpl name of a scenario's group.
fn named_group(group: Group) -> Result<NamedGroup> {
    Ok(match group {
        Group::X25519 => NamedGroup::X25519,
        Group::P256 => NamedGroup::Secp256r1,
        Group::P384 => NamedGroup::Secp384r1,
        other => bail!("dimpl has no {} key exchange", other.id()),
    })
}

/// The settings both sides share: the one version, suite and group of the
/// scenario, the MTU, the cookie exchange.
fn config(scenario: &HandshakeScenario, mtu_bytes: u16) -> Result<Config> {
    let builder = Config::builder()
        .mtu(usize::from(mtu_bytes))
        // A flight at a small MTU is many datagrams; dimpl's default
        // queues (10 out, 30 in) would refuse it before the MTU does.
        .max_queue_tx(MAX_QUEUED_DATAGRAMS)
        .max_queue_rx(MAX_QUEUED_DATAGRAMS)
        .kx_groups(&[named_group(scenario.group)?])
        .use_server_cookie(true)
        .require_client_certificate(scenario.mutual);
    let builder = match scenario.version {
        TlsVersion::Dtls12 => {
            let suite = match scenario.aead {
                Aead::Aes128Gcm => Dtls12CipherSuite::ECDHE_ECDSA_AES128_GCM_SHA256,
                Aead::Aes256Gcm => Dtls12CipherSuite::ECDHE_ECDSA_AES256_GCM_SHA384,
                Aead::Chacha20Poly1305 => Dtls12CipherSuite::ECDHE_ECDSA_CHACHA20_POLY1305_SHA256,
                other => bail!("dimpl has no {} suite", other.id()),
            };
            builder.dtls12_cipher_suites(&[suite])
        }
        TlsVersion::Dtls13 => {
            let suite = match scenario.aead {
                Aead::Aes128Gcm => Dtls13CipherSuite::AES_128_GCM_SHA256,
                Aead::Aes256Gcm => Dtls13CipherSuite::AES_256_GCM_SHA384,
                Aead::Chacha20Poly1305 => Dtls13CipherSuite::CHACHA20_POLY1305_SHA256,
                other => bail!("dimpl has no {} suite", other.id()),
            };
            builder.dtls13_cipher_suites(&[suite])
        }
        tls => bail!("dimpl implements DTLS only, not {}", tls.display()),
    };
    builder
        .build()
        .map_err(|error| anyhow!("dimpl refuses the configuration: {error}"))
}

/// Both sides' configurations and certificates for one scenario.
pub(crate) struct DimplHandshaker {
    version: TlsVersion,
    transport: Transport,
    mtu_bytes: u16,
    config: Arc<Config>,
    server_certificate: DtlsCertificate,
    client_certificate: DtlsCertificate,
    client_check: PeerCheck,
    server_check: PeerCheck,
    /// When a handshake over memory reads the thread's CPU clock.
    cpu_readings: CpuReadings,
}

/// One side of a connection: the dimpl endpoint and what came out of it.
/// Its end of the channel (the in-memory one, or a UDP socket) is lent to
/// each call that reads or sends.
struct Endpoint {
    dtls: Dtls,
    check: PeerCheck,
    /// The datagram being read, and the buffer dimpl writes its output to.
    datagram: Vec<u8>,
    output: Vec<u8>,
    /// When this side's retransmission timer fires, on the logical clock.
    timer: Option<Instant>,
    connected: bool,
    peer_leaf: Option<Vec<u8>>,
    /// Plaintext handshake datagrams this side sent, kept to read what it
    /// chose (the server's; `None` for the client).
    kept: Option<Vec<Vec<u8>>>,
    /// Plaintext handshake datagrams this side received, when kept (a
    /// client whose server runs elsewhere reads the server's choices there).
    heard: Option<Vec<Vec<u8>>>,
    /// Application data received and not yet handed out, from `taken` on.
    received: Vec<u8>,
    taken: usize,
}

impl Endpoint {
    /// Takes everything dimpl has to say until it names its next timer:
    /// datagrams go on `end`, a peer's certificate is checked.
    fn drain<W: Write + ?Sized>(&mut self, end: &mut W) -> Result<()> {
        loop {
            match self.dtls.poll_output(&mut self.output[..]) {
                Output::Packet(datagram) => {
                    if let Some(kept) = &mut self.kept {
                        if datagram.first() == Some(&22) {
                            kept.push(datagram.to_vec());
                        }
                    }
                    end.write(datagram).context("sending a datagram")?;
                }
                Output::BufferTooSmall { needed } => self.output.resize(needed, 0),
                Output::Timeout(at) => {
                    self.timer = Some(at);
                    return Ok(());
                }
                Output::Connected => self.connected = true,
                Output::PeerCert(leaf) => {
                    self.check.check(leaf)?;
                    self.peer_leaf = Some(leaf.to_vec());
                }
                Output::ApplicationData(data) => {
                    if self.taken == self.received.len() {
                        self.received.clear();
                        self.taken = 0;
                    }
                    self.received.extend_from_slice(data);
                }
                Output::CloseNotify => bail!("the peer closed the connection"),
                _ => {}
            }
        }
    }

    /// Moves application data received and not yet handed out into `out`;
    /// returns how many bytes.
    fn hand_out(&mut self, out: &mut [u8]) -> usize {
        let waiting = &self.received[self.taken..];
        let moved = waiting.len().min(out.len());
        out[..moved].copy_from_slice(&waiting[..moved]);
        self.taken += moved;
        moved
    }

    /// Hands dimpl the datagram just read (the first `length` bytes of
    /// `datagram`) and puts out what it answers; `what` names the step in
    /// errors ("handshake").
    fn take<W: Write + ?Sized>(&mut self, length: usize, what: &str, end: &mut W) -> Result<()> {
        if let Some(heard) = &mut self.heard {
            if self.datagram.first() == Some(&22) {
                heard.push(self.datagram[..length].to_vec());
            }
        }
        self.dtls
            .handle_packet(&self.datagram[..length])
            .map_err(|error| anyhow!("{what} failed: {error}"))?;
        self.drain(end)
    }

    /// Feeds dimpl every datagram waiting for this side on `end`.
    fn receive_all(&mut self, end: &mut DatagramEnd) -> Result<()> {
        loop {
            match end.read(&mut self.datagram) {
                Ok(length) => self.take(length, "handshake", end)?,
                Err(error) if error.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(error) => return Err(error).context("reading a datagram"),
            }
        }
    }

    /// Moves this side's logical clock to `now`, firing a due timer.
    fn tick<W: Write + ?Sized>(&mut self, now: Instant, end: &mut W) -> Result<()> {
        self.dtls
            .handle_timeout(now)
            .map_err(|error| anyhow!("handshake failed: {error}"))?;
        self.drain(end)
    }
}

/// A client and a server whose handshake is done over the in-memory
/// channel, their ends of it, and what it cost each side.
struct Established {
    client: Endpoint,
    server: Endpoint,
    client_end: DatagramEnd,
    server_end: DatagramEnd,
    times: SideTimes,
    wall_ns: u64,
    /// How many times a retransmission timer had to fire (a lost datagram).
    timeouts: usize,
}

impl Handshaker for DimplHandshaker {
    fn handshake(&mut self) -> Result<HandshakeSample> {
        if self.transport == Transport::Udp {
            return self.handshake_over_udp();
        }
        let established = self.establish_over(&DatagramPipe::new(self.mtu_bytes))?;
        Ok(HandshakeSample {
            client: established.times.client,
            server: established.times.server,
            wall_ns: established.wall_ns,
            negotiated: self.negotiated(&established)?,
            split_unsure: established.times.split_unsure,
        })
    }

    fn read_cpu(&mut self, readings: CpuReadings) {
        self.cpu_readings = readings;
    }
}

impl DimplHandshaker {
    pub(crate) fn new(scenario: &HandshakeScenario, credentials: &Credentials) -> Result<Self> {
        if let Some(reason) = DimplBackend.unsupported_reason(scenario) {
            bail!("{reason}");
        }
        // A bulk row's handshake names no MTU: it runs at the default one.
        let mtu_bytes = scenario.mtu_bytes.unwrap_or(DEFAULT_MTU_BYTES);
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut roots = RootCertStore::empty();
        roots.add(CertificateDer::from(credentials.root_der.clone()))?;
        let roots = Arc::new(roots);
        let (server_certificate, server_intermediates) = certificate(&credentials.server)?;
        let (client_certificate, client_intermediates) = certificate(&credentials.client)?;
        let client_check = PeerCheck::Server {
            verifier: WebPkiServerVerifier::builder_with_provider(
                Arc::clone(&roots),
                Arc::clone(&provider),
            )
            .build()?,
            intermediates: server_intermediates,
        };
        let server_check = if scenario.mutual {
            PeerCheck::Client {
                verifier: WebPkiClientVerifier::builder_with_provider(roots, provider).build()?,
                intermediates: client_intermediates,
            }
        } else {
            PeerCheck::None
        };
        Ok(Self {
            version: scenario.version,
            transport: scenario.transport,
            mtu_bytes,
            config: Arc::new(config(scenario, mtu_bytes)?),
            server_certificate,
            client_certificate,
            client_check,
            server_check,
            cpu_readings: CpuReadings::EveryTurn,
        })
    }

    fn new_side<W: Write>(&self, client: bool, end: &mut W, now: Instant) -> Result<Endpoint> {
        self.side_maker(client).make(end, now)
    }

    /// What it takes to start one side, to hand to another thread.
    fn side_maker(&self, client: bool) -> SideMaker {
        let (certificate, check) = if client {
            (self.client_certificate.clone(), self.client_check.clone())
        } else {
            (self.server_certificate.clone(), self.server_check.clone())
        };
        SideMaker {
            client,
            version: self.version,
            mtu_bytes: self.mtu_bytes,
            config: Arc::clone(&self.config),
            certificate,
            check,
        }
    }

    /// Runs one handshake over `pipe`, each side's turns timed, and keeps
    /// both sides (for application data after it). A panic inside dimpl
    /// (0.8 has a few, on limits it does not check) fails this handshake
    /// rather than the whole run.
    fn establish_over(&self, pipe: &DatagramPipe) -> Result<Established> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.try_establish(pipe)))
            .unwrap_or_else(|panic| {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|text| text.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                Err(anyhow!("dimpl panicked: {message}"))
            })
    }

    fn try_establish(&self, pipe: &DatagramPipe) -> Result<Established> {
        let start = Instant::now();
        // dimpl's clock: it moves only when a timer must fire.
        let mut clock = start;
        let mut turns = Turns::start(self.cpu_readings);
        turns.begin(Side::Client);
        let mut client_end = pipe.client_end();
        let mut server_end = pipe.server_end();
        let mut client = self
            .new_side(true, &mut client_end, clock)
            .context("client")?;
        turns.ended(Side::Client);
        turns.begin(Side::Server);
        let mut server = self
            .new_side(false, &mut server_end, clock)
            .context("server")?;
        turns.ended(Side::Server);
        let mut timeouts = 0;
        loop {
            let server_turn = pipe.pending_for_server();
            if server_turn {
                turns.begin(Side::Server);
                server.receive_all(&mut server_end).context("server")?;
                if server.connected {
                    turns.done(Side::Server);
                }
                turns.ended(Side::Server);
            }
            let client_turn = pipe.pending_for_client();
            if client_turn {
                turns.begin(Side::Client);
                client.receive_all(&mut client_end).context("client")?;
                if client.connected {
                    turns.done(Side::Client);
                }
                turns.ended(Side::Client);
            }
            if client.connected
                && server.connected
                && !pipe.pending_for_client()
                && !pipe.pending_for_server()
            {
                break;
            }
            if !client_turn && !server_turn {
                // A datagram was lost: time passes until the earlier timer
                // fires and its side resends its flight.
                timeouts += 1;
                let due = [client.timer, server.timer].into_iter().flatten().min();
                let Some(due) = due.filter(|_| timeouts <= MAX_TIMEOUTS) else {
                    bail!(
                        "handshake stalled: neither side has anything to read after {} retransmission timeouts",
                        timeouts - 1
                    );
                };
                clock = clock.max(due) + Duration::from_micros(1);
                turns.begin(Side::Client);
                client.tick(clock, &mut client_end).context("client")?;
                turns.ended(Side::Client);
                turns.begin(Side::Server);
                server.tick(clock, &mut server_end).context("server")?;
                turns.ended(Side::Server);
            }
        }
        let wall_ns = start.elapsed().as_nanos() as u64;
        Ok(Established {
            client,
            server,
            client_end,
            server_end,
            times: turns.finish(),
            wall_ns,
            timeouts,
        })
    }

    /// What the handshake negotiated: the version as dimpl reports it,
    /// suite, group and (DTLS 1.2) signature scheme as the server sent
    /// them. DTLS 1.3 sends its CertificateVerify encrypted: there the
    /// scheme is the one the server's leaf key allows (TLS 1.3 ties each
    /// ECDSA scheme to one curve, RFC 8446 §4.2.3).
    fn negotiated(&self, established: &Established) -> Result<Negotiated> {
        self.negotiated_by(&established.client, &established.server)
    }

    /// What a client and a server of this handshaker negotiated (see
    /// [`Self::negotiated`]).
    fn negotiated_by(&self, client: &Endpoint, server: &Endpoint) -> Result<Negotiated> {
        self.negotiated_from(client, server.kept.as_deref().unwrap_or_default())
    }

    /// What a client of this handshaker negotiated, read off the
    /// server's plaintext handshake datagrams `kept` (see [`Self::negotiated`]).
    fn negotiated_from(&self, client: &Endpoint, kept: &[Vec<u8>]) -> Result<Negotiated> {
        let version = match client.dtls.protocol_version() {
            Some(ProtocolVersion::DTLS1_2) => "DTLSv1.2",
            Some(ProtocolVersion::DTLS1_3) => "DTLSv1.3",
            other => bail!("dimpl negotiated an unexpected version: {other:?}"),
        };
        let choices = wire::server_choices(kept)?;
        let wire_version = match choices.version {
            Some(0xfefd) => "DTLSv1.2",
            Some(0xfefc) => "DTLSv1.3",
            _ => "none",
        };
        if wire_version != version {
            bail!("dimpl reports {version} but the server's ServerHello says {wire_version}");
        }
        let signature = match self.version {
            TlsVersion::Dtls13 => {
                let leaf = client
                    .peer_leaf
                    .as_deref()
                    .context("the server sent no certificate")?;
                match dimpl::crypto::cert_named_group(leaf) {
                    Ok(NamedGroup::Secp256r1) => Some(0x0403),
                    Ok(NamedGroup::Secp384r1) => Some(0x0503),
                    _ => None,
                }
            }
            _ => choices.signature,
        };
        Ok(Negotiated {
            version: version.to_string(),
            suite: choices
                .suite
                .map(suite_name)
                .unwrap_or_else(|| "none".to_string()),
            group: choices.group.map(group_id),
            signature: signature.map(signature_name),
            resumed: false,
            alpn: None,
            early_data: false,
        })
    }
}

/// One side's configuration, certificate and peer check: a side can be
/// started from it on any thread.
struct SideMaker {
    client: bool,
    version: TlsVersion,
    mtu_bytes: u16,
    config: Arc<Config>,
    certificate: DtlsCertificate,
    check: PeerCheck,
}

impl SideMaker {
    /// A new endpoint, its first output (the client's ClientHello) already
    /// sent on `end`.
    fn make<W: Write + ?Sized>(self, end: &mut W, now: Instant) -> Result<Endpoint> {
        let mut dtls = match self.version {
            TlsVersion::Dtls13 => Dtls::new_13(self.config, self.certificate, now),
            _ => Dtls::new_12(self.config, self.certificate, now),
        };
        dtls.set_active(self.client);
        let mtu = usize::from(self.mtu_bytes);
        let mut side = Endpoint {
            dtls,
            check: self.check,
            datagram: vec![0; mtu],
            // dimpl 0.8's DTLS 1.2 client panics, rather than asking for
            // more room, when the peer's certificate does not fit.
            output: vec![0; mtu.max(OUTPUT_BUFFER_BYTES)],
            timer: None,
            connected: false,
            peer_leaf: None,
            kept: (!self.client).then(Vec::new),
            heard: None,
            received: Vec::new(),
            taken: 0,
        };
        side.tick(now, end)?;
        Ok(side)
    }
}

fn suite_name(code: u16) -> String {
    match code {
        0x1301 => "TLS_AES_128_GCM_SHA256",
        0x1302 => "TLS_AES_256_GCM_SHA384",
        0x1303 => "TLS_CHACHA20_POLY1305_SHA256",
        0xc02b => "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        0xc02c => "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        0xcca9 => "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        other => return format!("0x{other:04x}"),
    }
    .to_string()
}

fn group_id(code: u16) -> String {
    match code {
        23 => Group::P256.id(),
        24 => Group::P384.id(),
        25 => Group::P521.id(),
        29 => Group::X25519.id(),
        30 => Group::X448.id(),
        other => return format!("0x{other:04x}"),
    }
    .to_string()
}

fn signature_name(code: u16) -> String {
    match code {
        0x0403 => "ecdsa_secp256r1_sha256",
        0x0503 => "ecdsa_secp384r1_sha384",
        0x0603 => "ecdsa_secp521r1_sha512",
        other => return format!("0x{other:04x}"),
    }
    .to_string()
}

/// One DTLS handshake on dimpl with every datagram kept and `fault` done
/// to one of them if given: what was negotiated, what each side sent, and
/// how many retransmission timeouts it took.
#[derive(Debug, Clone)]
pub struct DimplTrace {
    pub negotiated: Negotiated,
    pub client_datagrams: Vec<Vec<u8>>,
    pub server_datagrams: Vec<Vec<u8>>,
    pub timeouts: usize,
}

/// Runs one traced handshake of `scenario` (see [`DimplTrace`]).
pub fn trace_handshake(
    scenario: &HandshakeScenario,
    credentials: &Credentials,
    fault: Option<Fault>,
) -> Result<DimplTrace> {
    let handshaker = DimplHandshaker::new(scenario, credentials)?;
    let mut pipe = DatagramPipe::traced(handshaker.mtu_bytes);
    if let Some(fault) = fault {
        pipe = pipe.with_fault(fault);
    }
    let established = handshaker.establish_over(&pipe)?;
    Ok(DimplTrace {
        negotiated: handshaker.negotiated(&established)?,
        client_datagrams: pipe.sent_by_client(),
        server_datagrams: pipe.sent_by_server(),
        timeouts: established.timeouts,
    })
}
