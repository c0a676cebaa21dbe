//! The rustls backends: rustls 0.23 with the aws-lc-rs or the ring crypto
//! provider, TLS over memory and TCP, and QUIC through quinn-proto
//! ([`quic`], over UDP [`quic_udp`], against a real server [`quic_peer`])
//! on the same TLS 1.3 configuration. Each configuration is
//! restricted to exactly the scenario's version, suite and group. The
//! providers' primitives are in [`primitives`], the counting provider
//! wrapper in [`instrument`]: all of tlslab's rustls code is in this folder.

mod descriptor;
pub mod instrument;
pub mod primitives;
mod quic;
mod quic_bulk;
mod quic_early;
mod quic_peer;
mod quic_session;
mod quic_udp;
pub mod serve;
mod sides;

use std::io::{Read, Write};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{Resumption as ClientResumption, Tls12Resumption, WebPkiServerVerifier};
use rustls::crypto::{CryptoProvider, SupportedKxGroup};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{NoServerSessionStorage, ServerSessionMemoryCache, WebPkiClientVerifier};
use rustls::DistinguishedName;
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, HandshakeKind, ProtocolVersion,
    RootCertStore, ServerConfig, ServerConnection, SignatureScheme, SupportedCipherSuite,
    SupportedProtocolVersion,
};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};

use super::{
    Backend, BulkPair, Capabilities, CpuReadings, HandshakeSample, Handshaker, LibraryInfo,
    Negotiated, SideTimes, TlsAcceptor, Turns,
};
use crate::certs::{CertChain, Credentials, SERVER_NAME};
use crate::scenario::operations::Category;
use crate::scenario::Side;
use crate::scenario::{
    Group, HandshakeScenario, Named, Resumption, ServerOffer, TlsVersion, Transport,
};
use crate::transport::memory::{Pipe, PipeEnd};
use crate::transport::tcp::TcpLoopback;
pub use descriptor::{AWS_LC_DESCRIPTOR, RING_DESCRIPTOR};
#[doc(hidden)]
pub use quic::PlainQuicConfigs;

/// Which crypto provider rustls runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Provider {
    AwsLcRs,
    Ring,
}

/// rustls with one crypto provider.
#[derive(Debug)]
pub struct RustlsBackend {
    provider: Provider,
    capabilities: &'static Capabilities,
    /// Count and time every provider call (see [`crate::cost::instrument`]).
    instrumented: bool,
}

impl RustlsBackend {
    pub fn aws_lc_rs() -> Self {
        Self::new(Provider::AwsLcRs)
    }

    pub fn ring() -> Self {
        Self::new(Provider::Ring)
    }

    /// This backend with every crypto provider call counted and timed.
    pub fn instrumented(mut self) -> Self {
        self.instrumented = true;
        self
    }

    fn new(provider: Provider) -> Self {
        Self {
            provider,
            capabilities: provider.capabilities(),
            instrumented: false,
        }
    }
}

fn base_provider(provider: Provider) -> CryptoProvider {
    match provider {
        Provider::AwsLcRs => rustls::crypto::aws_lc_rs::default_provider(),
        Provider::Ring => rustls::crypto::ring::default_provider(),
    }
}

fn all_kx_groups(provider: Provider) -> &'static [&'static dyn SupportedKxGroup] {
    match provider {
        Provider::AwsLcRs => rustls::crypto::aws_lc_rs::ALL_KX_GROUPS,
        Provider::Ring => rustls::crypto::ring::ALL_KX_GROUPS,
    }
}

/// tlslab's group for a rustls group (the ones rustls has matched
/// directly, as this runs after every handshake; any other by its name).
fn our_group(name: rustls::NamedGroup) -> Option<Group> {
    use rustls::NamedGroup as Named;
    Some(match name {
        Named::X25519 => Group::X25519,
        Named::secp256r1 => Group::P256,
        Named::secp384r1 => Group::P384,
        Named::secp521r1 => Group::P521,
        Named::X448 => Group::X448,
        Named::X25519MLKEM768 => Group::X25519Mlkem768,
        Named::secp256r1MLKEM768 => Group::Secp256r1Mlkem768,
        Named::MLKEM512 => Group::Mlkem512,
        Named::MLKEM768 => Group::Mlkem768,
        Named::MLKEM1024 => Group::Mlkem1024,
        other => return crate::scenario::parse_name::<Group>(&format!("{other:?}")).ok(),
    })
}

/// The scenario's suite among the provider's suites.
fn suite(provider: &CryptoProvider, scenario: &HandshakeScenario) -> Result<SupportedCipherSuite> {
    let wanted = scenario.suite_name();
    provider
        .cipher_suites
        .iter()
        .copied()
        .find(|s| suite_name(*s) == wanted)
        .ok_or_else(|| anyhow!("the provider has no suite {wanted}"))
}

/// The IANA name of a rustls suite (rustls spells TLS 1.3 suites `TLS13_...`).
fn suite_name(suite: SupportedCipherSuite) -> String {
    let name = suite.suite().as_str().unwrap_or("unknown");
    match name.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => name.to_string(),
    }
}

/// tlslab's id of the group rustls negotiated (its own name if tlslab
/// has no such group).
fn group_id(group: rustls::NamedGroup) -> String {
    match our_group(group) {
        Some(ours) => ours.id().to_string(),
        None => format!("{group:?}"),
    }
}

/// The RFC 8446 name of a signature scheme.
fn scheme_name(scheme: SignatureScheme) -> String {
    match scheme {
        SignatureScheme::RSA_PKCS1_SHA256 => "rsa_pkcs1_sha256",
        SignatureScheme::RSA_PKCS1_SHA384 => "rsa_pkcs1_sha384",
        SignatureScheme::RSA_PKCS1_SHA512 => "rsa_pkcs1_sha512",
        SignatureScheme::RSA_PSS_SHA256 => "rsa_pss_rsae_sha256",
        SignatureScheme::RSA_PSS_SHA384 => "rsa_pss_rsae_sha384",
        SignatureScheme::RSA_PSS_SHA512 => "rsa_pss_rsae_sha512",
        SignatureScheme::ECDSA_NISTP256_SHA256 => "ecdsa_secp256r1_sha256",
        SignatureScheme::ECDSA_NISTP384_SHA384 => "ecdsa_secp384r1_sha384",
        SignatureScheme::ECDSA_NISTP521_SHA512 => "ecdsa_secp521r1_sha512",
        SignatureScheme::ED25519 => "ed25519",
        SignatureScheme::ED448 => "ed448",
        SignatureScheme::ML_DSA_44 => "mldsa44",
        SignatureScheme::ML_DSA_65 => "mldsa65",
        SignatureScheme::ML_DSA_87 => "mldsa87",
        other => return format!("{other:?}"),
    }
    .to_string()
}

impl Backend for RustlsBackend {
    fn id(&self) -> &'static str {
        self.provider.descriptor().name()
    }

    fn subject(&self) -> crate::scenario::Subject {
        crate::scenario::Subject::library(self.provider.descriptor().id)
    }

    fn library(&self) -> LibraryInfo {
        let crypto = match self.provider {
            Provider::AwsLcRs => format!("aws-lc-rs {}", crate::build_info::AWS_LC_RS_VERSION),
            Provider::Ring => format!("ring {}", crate::build_info::RING_VERSION),
        };
        // QUIC rows run through quinn-proto: its version is part of the record.
        let provider = format!(
            "{crypto}; QUIC: quinn-proto {}",
            crate::build_info::QUINN_PROTO_VERSION
        );
        LibraryInfo {
            subject: self.subject(),
            library: descriptor::LIBRARY.to_string(),
            version: format!("{} ({provider})", crate::build_info::RUSTLS_VERSION),
        }
    }

    fn capabilities(&self) -> &Capabilities {
        self.capabilities
    }

    fn unsupported_reason(&self, scenario: &HandshakeScenario) -> Option<String> {
        self.capabilities
            .unsupported_reason(self.id(), scenario)
            .or_else(|| quic_early::unsupported_reason(scenario))
    }

    fn primitives(&self) -> Box<dyn super::PrimitiveBackend> {
        Box::new(match self.provider {
            Provider::AwsLcRs => primitives::RustlsPrimitives::aws_lc_rs(),
            Provider::Ring => primitives::RustlsPrimitives::ring(),
        })
    }

    fn instrumented(&self) -> Option<Arc<dyn Backend>> {
        Some(Arc::new(Self::new(self.provider).instrumented()))
    }

    /// The server runs on the instrumented provider: every crypto call
    /// counted per category, on the thread that makes it.
    fn acceptor(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
    ) -> Result<Arc<dyn TlsAcceptor>> {
        Ok(Arc::new(serve::RustlsAcceptor::new(
            &Self::new(self.provider).instrumented(),
            scenario,
            credentials,
        )?))
    }

    fn offer_acceptor(
        &self,
        offer: &ServerOffer,
        chains: &[Arc<Credentials>],
    ) -> Result<Arc<dyn TlsAcceptor>> {
        Ok(Arc::new(serve::RustlsAcceptor::offering(
            &Self::new(self.provider).instrumented(),
            offer,
            chains,
        )?))
    }

    fn handshaker(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
    ) -> Result<Box<dyn Handshaker>> {
        let mut handshaker: Box<dyn Handshaker> = match scenario.version {
            TlsVersion::Quic => Box::new(self.quic(scenario, credentials)?),
            _ => Box::new(self.configure(scenario, credentials)?),
        };
        if scenario.resumption.is_on() {
            // The first, full handshake fills the client's session store.
            handshaker.handshake()?;
        }
        Ok(handshaker)
    }

    fn apart(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
        side: Side,
    ) -> Result<Box<dyn super::ApartSide>> {
        if scenario.resumption.is_on() {
            bail!("resumed handshakes are not run apart (each connection would need the last one's session)");
        }
        if scenario.version == TlsVersion::Quic {
            return Ok(Box::new(quic_udp::QuicApart {
                handshaker: self.quic(scenario, credentials)?,
                side,
            }));
        }
        Ok(Box::new(sides::RustlsApart {
            handshaker: self.configure(scenario, credentials)?,
            side,
        }))
    }

    fn quic_client(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
        address: std::net::SocketAddr,
        alpn: &'static str,
    ) -> Result<Box<dyn Handshaker>> {
        Ok(Box::new(self.quic_peer(
            scenario,
            credentials,
            address,
            alpn,
        )?))
    }

    fn bulk_pair(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
    ) -> Result<Box<dyn BulkPair>> {
        if scenario.version == TlsVersion::Quic {
            if scenario.transport != Transport::Memory {
                return Err(super::Unsupported::new(
                    "bulk over QUIC runs over memory datagrams only (no --transport udp yet)",
                )
                .into());
            }
            let mut handshaker = self.quic(scenario, credentials)?;
            return Ok(Box::new(quic_bulk::QuicBulkPair::establish(
                &mut handshaker,
            )?));
        }
        let mut handshaker = self.configure(scenario, credentials)?;
        if scenario.transport == Transport::Tcp {
            return Ok(Box::new(sides::bulk_pair_over_tcp(&handshaker)?));
        }
        let established = handshaker.establish()?;
        let negotiated = handshaker.negotiated(&established.client);
        Ok(Box::new(RustlsBulkPair {
            negotiated,
            pipe: established.pipe,
            client: established.client,
            server: established.server,
            client_end: established.client_end,
            server_end: established.server_end,
        }))
    }
}

impl RustlsBackend {
    /// The server configuration of a scenario (on the counting provider
    /// if this backend is instrumented).
    pub(crate) fn server_config(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
    ) -> Result<Arc<ServerConfig>> {
        if let Some(reason) = self.unsupported_reason(scenario) {
            bail!("{reason}");
        }
        Ok(self.configure(scenario, credentials)?.server)
    }

    /// The client and server configurations of a scenario.
    fn configure(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
    ) -> Result<RustlsHandshaker> {
        let mut provider = base_provider(self.provider);
        let group = all_kx_groups(self.provider)
            .iter()
            .copied()
            .find(|g| our_group(g.name()) == Some(scenario.group))
            .ok_or_else(|| anyhow!("{} has no group {}", self.id(), scenario.group.id()))?;
        provider.kx_groups = vec![group];
        provider.cipher_suites = vec![suite(&provider, scenario)?];
        if self.instrumented {
            provider = instrument::instrument(provider);
        }
        let provider = Arc::new(provider);
        let versions: &[&SupportedProtocolVersion] = match scenario.version {
            TlsVersion::Tls12 => &[&rustls::version::TLS12],
            // QUIC carries TLS 1.3 (RFC 9001).
            TlsVersion::Tls13 | TlsVersion::Quic => &[&rustls::version::TLS13],
            TlsVersion::Dtls12 | TlsVersion::Dtls13 => bail!("rustls has no DTLS"),
        };
        let mut roots = RootCertStore::empty();
        roots.add(CertificateDer::from(credentials.root_der.clone()))?;
        let roots = Arc::new(roots);

        let server_scheme = Arc::new(AtomicU16::new(0));
        let verifier =
            WebPkiServerVerifier::builder_with_provider(Arc::clone(&roots), Arc::clone(&provider))
                .build()
                .context("building the server certificate verifier")?;
        let client_builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(versions)?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(SchemeRecorder {
                inner: verifier,
                last_scheme: Arc::clone(&server_scheme),
                instrumented: self.instrumented,
            }));
        let mut client = if scenario.mutual {
            let (chain, key) = rustls_chain(&credentials.client);
            client_builder.with_client_auth_cert(chain, key)?
        } else {
            client_builder.with_no_client_auth()
        };
        client.resumption = if scenario.resumption.is_on() {
            ClientResumption::in_memory_sessions(64)
                .tls12_resumption(Tls12Resumption::SessionIdOrTickets)
        } else {
            ClientResumption::disabled()
        };
        // 0-RTT: the client writes early data under a ticket that allows it.
        client.enable_early_data = scenario.resumption.sends_early_data();

        let server_builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(versions)?;
        let server_builder = if scenario.mutual {
            let verifier =
                WebPkiClientVerifier::builder_with_provider(roots, Arc::clone(&provider))
                    .build()
                    .context("building the client certificate verifier")?;
            server_builder.with_client_cert_verifier(Arc::new(ClientAuthRecorder {
                inner: verifier,
                instrumented: self.instrumented,
            }))
        } else {
            server_builder.with_no_client_auth()
        };
        if let Some(alpn) = scenario.version.required_alpn() {
            client.alpn_protocols = vec![alpn.as_bytes().to_vec()];
        }
        let (chain, key) = rustls_chain(&credentials.server);
        let mut server = server_builder
            .with_single_cert(chain, key)
            .context("loading the server certificate")?;
        if let Some(alpn) = scenario.version.required_alpn() {
            server.alpn_protocols = vec![alpn.as_bytes().to_vec()];
        }
        match scenario.resumption {
            Resumption::Off => {
                server.session_storage = Arc::new(NoServerSessionStorage {});
                server.send_tls13_tickets = 0;
            }
            Resumption::SessionId => {
                server.session_storage = ServerSessionMemoryCache::new(256);
            }
            Resumption::Ticket | Resumption::Psk => {
                server.session_storage = Arc::new(NoServerSessionStorage {});
                server.ticketer = match self.provider {
                    Provider::AwsLcRs => rustls::crypto::aws_lc_rs::Ticketer::new()?,
                    Provider::Ring => rustls::crypto::ring::Ticketer::new()?,
                };
                server.send_tls13_tickets = 1;
            }
            Resumption::ZeroRtt => {
                // rustls allows early data under stateful resumption only:
                // a ticket is an id into the server's cache, taken once
                // (RFC 8446 §8.1, against replays). Inside QUIC the early
                // data limit must be u32::MAX (RFC 9001 §4.6.1).
                server.session_storage = ServerSessionMemoryCache::new(256);
                server.send_tls13_tickets = 1;
                server.max_early_data_size = u32::MAX;
            }
        }

        Ok(RustlsHandshaker {
            client: Arc::new(client),
            server: Arc::new(server),
            server_name: ServerName::try_from(SERVER_NAME)?,
            server_scheme,
            transport: scenario.transport,
            listener: None,
            resumes: scenario.resumption.is_on(),
            cpu_readings: CpuReadings::EveryTurn,
        })
    }
}

fn rustls_chain(chain: &CertChain) -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
    let certs = chain
        .chain_der
        .iter()
        .map(|der| CertificateDer::from(der.clone()))
        .collect();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(chain.key_pkcs8_der.clone()));
    (certs, key)
}

/// The WebPKI verifier, noting which scheme the server signed with.
#[derive(Debug)]
struct SchemeRecorder {
    inner: Arc<WebPkiServerVerifier>,
    last_scheme: Arc<AtomicU16>,
    /// Charge certificate work to its own category and mark handshake signatures.
    instrumented: bool,
}

impl ServerCertVerifier for SchemeRecorder {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verify = || {
            self.inner.verify_server_cert(
                end_entity,
                intermediates,
                server_name,
                ocsp_response,
                now,
            )
        };
        if self.instrumented {
            instrument::record(Category::Certificates, None, verify)
        } else {
            verify()
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.last_scheme
            .store(u16::from(dss.scheme), Ordering::Relaxed);
        instrument::in_handshake_signature(|| self.inner.verify_tls12_signature(message, cert, dss))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.last_scheme
            .store(u16::from(dss.scheme), Ordering::Relaxed);
        instrument::in_handshake_signature(|| self.inner.verify_tls13_signature(message, cert, dss))
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// The server's verifier of client certificates, marking handshake
/// signatures and charging certificate work when instrumented.
#[derive(Debug)]
struct ClientAuthRecorder {
    inner: Arc<dyn ClientCertVerifier>,
    instrumented: bool,
}

impl ClientCertVerifier for ClientAuthRecorder {
    fn offer_client_auth(&self) -> bool {
        self.inner.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.inner.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let verify = || {
            self.inner
                .verify_client_cert(end_entity, intermediates, now)
        };
        if self.instrumented {
            instrument::record(Category::Certificates, None, verify)
        } else {
            verify()
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        instrument::in_handshake_signature(|| self.inner.verify_tls12_signature(message, cert, dss))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        instrument::in_handshake_signature(|| self.inner.verify_tls13_signature(message, cert, dss))
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

struct RustlsHandshaker {
    client: Arc<ClientConfig>,
    server: Arc<ServerConfig>,
    server_name: ServerName<'static>,
    server_scheme: Arc<AtomicU16>,
    /// Memory (one thread) or loopback TCP (two threads, see [`sides`]).
    transport: Transport,
    /// Over TCP, the listener every handshake of this handshaker connects
    /// to (as a server's is), opened on first use.
    listener: Option<Arc<TcpLoopback>>,
    /// The client keeps sessions (read its tickets after each handshake).
    resumes: bool,
    /// When a handshake over memory reads the thread's CPU clock.
    cpu_readings: CpuReadings,
}

/// The most message flights a handshake may take before it counts as stalled.
const MAX_ROUNDS: usize = 32;

/// Feeds what the peer sent into a connection and writes out its answer.
fn pump<Data>(
    connection: &mut rustls::ConnectionCommon<Data>,
    end: &mut PipeEnd,
    has_input: bool,
) -> Result<()> {
    if has_input {
        while connection.read_tls(end).is_ok() {
            connection.process_new_packets()?;
        }
    }
    while connection.wants_write() {
        connection.write_tls(end)?;
    }
    Ok(())
}

/// A client and a server whose handshake is done, and what it cost each side.
struct Established {
    pipe: Pipe,
    client_end: PipeEnd,
    server_end: PipeEnd,
    client: ClientConnection,
    server: ServerConnection,
    times: SideTimes,
    wall_ns: u64,
}

impl RustlsHandshaker {
    /// Runs one handshake, each side's turns timed, and keeps both ends.
    fn establish(&mut self) -> Result<Established> {
        let pipe = Pipe::default();
        let mut client_end = pipe.client_end();
        let mut server_end = pipe.server_end();
        let start = std::time::Instant::now();
        let mut turns = Turns::start(self.cpu_readings);

        instrument::set_side(Side::Client);
        turns.begin(Side::Client);
        let mut client = ClientConnection::new(Arc::clone(&self.client), self.server_name.clone())?;
        turns.ended(Side::Client);
        instrument::set_side(Side::Server);
        turns.begin(Side::Server);
        let mut server = ServerConnection::new(Arc::clone(&self.server))?;
        turns.ended(Side::Server);
        let mut rounds = 0;
        loop {
            let client_turn = rounds == 0 || pipe.pending_for_client();
            if client_turn {
                let input = pipe.pending_for_client();
                instrument::set_side(Side::Client);
                turns.begin(Side::Client);
                pump(&mut *client, &mut client_end, input).context("client")?;
                if !client.is_handshaking() {
                    turns.done(Side::Client);
                }
                turns.ended(Side::Client);
            }
            let server_turn = pipe.pending_for_server();
            if server_turn {
                instrument::set_side(Side::Server);
                turns.begin(Side::Server);
                pump(&mut *server, &mut server_end, true).context("server")?;
                if !server.is_handshaking() {
                    turns.done(Side::Server);
                }
                turns.ended(Side::Server);
            }
            if !client.is_handshaking()
                && !server.is_handshaking()
                && !pipe.pending_for_client()
                && !pipe.pending_for_server()
            {
                break;
            }
            rounds += 1;
            if (!client_turn && !server_turn) || rounds > MAX_ROUNDS {
                bail!("handshake stalled after {rounds} rounds");
            }
        }
        let wall_ns = start.elapsed().as_nanos() as u64;
        let times = turns.finish();
        Ok(Established {
            pipe,
            client_end,
            server_end,
            client,
            server,
            times,
            wall_ns,
        })
    }

    /// What the client sees as negotiated.
    fn negotiated(&self, client: &ClientConnection) -> Negotiated {
        let version = match client.protocol_version() {
            Some(ProtocolVersion::TLSv1_2) => "TLSv1.2".to_string(),
            Some(ProtocolVersion::TLSv1_3) => "TLSv1.3".to_string(),
            other => format!("{other:?}"),
        };
        let scheme = self.server_scheme.swap(0, Ordering::Relaxed);
        Negotiated {
            version,
            suite: client
                .negotiated_cipher_suite()
                .map(suite_name)
                .unwrap_or_else(|| "none".to_string()),
            group: client
                .negotiated_key_exchange_group()
                .map(|g| group_id(g.name())),
            signature: (scheme != 0).then(|| scheme_name(SignatureScheme::from(scheme))),
            resumed: client.handshake_kind() == Some(HandshakeKind::Resumed),
            alpn: None,
            early_data: false,
        }
    }
}

impl Handshaker for RustlsHandshaker {
    fn handshake(&mut self) -> Result<HandshakeSample> {
        match self.transport {
            Transport::Memory => {}
            Transport::Tcp => return self.handshake_over_tcp(),
            Transport::Udp => bail!("rustls has no DTLS to run over UDP"),
        }
        let Established {
            client,
            times,
            wall_ns,
            ..
        } = self.establish()?;
        let negotiated = self.negotiated(&client);
        if client.handshake_kind() == Some(HandshakeKind::FullWithHelloRetryRequest) {
            bail!("the handshake needed a HelloRetryRequest (an extra round trip)");
        }
        Ok(HandshakeSample::of_turns(times, wall_ns, negotiated))
    }

    fn read_cpu(&mut self, readings: CpuReadings) {
        self.cpu_readings = readings;
    }
}

/// An established rustls client and server over the memory pipe: the
/// client writes, the server reads.
struct RustlsBulkPair {
    negotiated: Negotiated,
    pipe: Pipe,
    client_end: PipeEnd,
    server_end: PipeEnd,
    client: ClientConnection,
    server: ServerConnection,
}

impl BulkPair for RustlsBulkPair {
    fn negotiated(&self) -> Option<&Negotiated> {
        Some(&self.negotiated)
    }

    fn send(&mut self, data: &[u8]) -> Result<()> {
        let mut written = 0;
        while written < data.len() {
            let accepted = self.client.writer().write(&data[written..])?;
            while self.client.wants_write() {
                self.client.write_tls(&mut self.client_end)?;
            }
            if accepted == 0 {
                bail!("the client accepts no more application data");
            }
            written += accepted;
        }
        Ok(())
    }

    fn receive(&mut self, out: &mut [u8]) -> Result<usize> {
        let mut filled = 0;
        loop {
            // Hand out what is decrypted before reading more: rustls
            // refuses to buffer more than a little received plaintext.
            while filled < out.len() {
                match self.server.reader().read(&mut out[filled..]) {
                    Ok(0) => bail!("the connection was closed"),
                    Ok(read) => filled += read,
                    Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(error) => return Err(error.into()),
                }
            }
            if filled == out.len() || !self.pipe.pending_for_server() {
                return Ok(filled);
            }
            self.server.read_tls(&mut self.server_end)?;
            self.server.process_new_packets()?;
        }
    }
}
