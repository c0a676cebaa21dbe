//! The OpenSSL backend, through the `openssl` crate (a vendored OpenSSL 3.6
//! by default, the host's with `--no-default-features`): TLS handshakes
//! here, what DTLS adds to them (cookies, MTU) in [`dtls`], its primitives
//! in [`primitives`], the tunnel's data channel on its EVP ciphers in
//! [`data_channel`]. All OpenSSL code of tlslab is in this folder.

mod client;
pub mod data_channel;
mod descriptor;
pub mod dtls;
mod early_data;
pub mod primitives;
pub mod probe;
#[doc(hidden)]
pub mod quic;
mod quic_memory;
mod quic_udp;
pub mod remote;
pub mod serve;
mod sides;
mod socket;

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::{Arc, OnceLock};

use anyhow::{anyhow, bail, Context, Result};
use foreign_types::{ForeignType, ForeignTypeRef};
use openssl::bn::BigNum;
use openssl::dh::Dh;
use openssl::pkey::{Id, PKey, Private};
use openssl::ssl::{
    ErrorCode, ShutdownState, Ssl, SslContext, SslContextBuilder, SslMethod, SslOptions,
    SslSession, SslSessionCacheMode, SslStream, SslVerifyMode, SslVersion,
};
use openssl::x509::store::X509StoreBuilder;
use openssl::x509::X509;

use super::{
    Backend, BulkPair, Capabilities, CpuReadings, HandshakeSample, Handshaker, LibraryInfo,
    Negotiated, SideTimes, TlsAcceptor, Turns,
};
use crate::certs::{CertChain, Credentials, SERVER_NAME};
use crate::scenario::Side;
use crate::scenario::{
    CertKind, Group, HandshakeScenario, Named, Resumption, ServerOffer, TlsVersion, Transport,
};
use crate::transport::datagram::DatagramPipe;
use crate::transport::memory::Pipe;
use crate::transport::tcp::TcpLoopback;
use crate::transport::Duplex;
pub use client::OpensslClient;
pub use descriptor::DESCRIPTOR;

/// `SSL_CTRL_GET_PEER_SIGNATURE_NAME` (OpenSSL 3.5+): the server's signature scheme.
const SSL_CTRL_GET_PEER_SIGNATURE_NAME: c_int = 141;

/// The OpenSSL backend.
#[derive(Debug)]
pub struct OpensslBackend {
    capabilities: &'static Capabilities,
}

impl Default for OpensslBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl OpensslBackend {
    pub fn new() -> Self {
        Self {
            capabilities: descriptor::capabilities(),
        }
    }
}

/// The name OpenSSL's group lists use for a group; `None` for key exchanges
/// configured otherwise (RSA transport, TLS 1.2 DHE parameters).
pub(crate) fn openssl_group_name(group: Group) -> Option<&'static str> {
    Some(match group {
        Group::RsaKeyTransport
        | Group::Dhe1024
        | Group::Dhe2048
        | Group::Dhe3072
        | Group::Dhe4096 => return None,
        Group::Ffdhe2048 => "ffdhe2048",
        Group::Ffdhe3072 => "ffdhe3072",
        Group::Ffdhe4096 => "ffdhe4096",
        Group::Ffdhe6144 => "ffdhe6144",
        Group::Ffdhe8192 => "ffdhe8192",
        Group::P256 => "P-256",
        Group::P384 => "P-384",
        Group::P521 => "P-521",
        Group::X25519 => "X25519",
        Group::X448 => "X448",
        Group::X25519Mlkem768 => "X25519MLKEM768",
        Group::Secp256r1Mlkem768 => "SecP256r1MLKEM768",
        Group::Mlkem512 => "MLKEM512",
        Group::Mlkem768 => "MLKEM768",
        Group::Mlkem1024 => "MLKEM1024",
    })
}

impl Backend for OpensslBackend {
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
            version: openssl::version::version()
                .trim_start_matches("OpenSSL ")
                .to_string(),
        }
    }

    fn capabilities(&self) -> &Capabilities {
        self.capabilities
    }

    fn unsupported_reason(&self, scenario: &HandshakeScenario) -> Option<String> {
        if scenario.version == TlsVersion::Dtls13 {
            return Some(format!(
                "OpenSSL {} has no DTLS 1.3",
                dtls::openssl_release()
            ));
        }
        self.capabilities
            .unsupported_reason(self.id(), scenario)
            .or_else(|| early_data::unsupported_reason(scenario))
            .or_else(|| dtls::unsupported_reason(scenario))
    }

    fn primitives(&self) -> Box<dyn super::PrimitiveBackend> {
        Box::new(primitives::OpensslPrimitives)
    }

    fn measuring_client(&self) -> Option<Arc<dyn super::client::MeasuringClient>> {
        Some(Arc::new(OpensslClient::new()))
    }

    fn acceptor(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
    ) -> Result<Arc<dyn TlsAcceptor>> {
        Ok(Arc::new(serve::OpensslAcceptor::new(
            scenario,
            credentials,
        )?))
    }

    fn offer_acceptor(
        &self,
        offer: &ServerOffer,
        chains: &[Arc<Credentials>],
    ) -> Result<Arc<dyn TlsAcceptor>> {
        Ok(Arc::new(serve::OpensslAcceptor::offering(offer, chains)?))
    }

    fn offer_conflict(&self, offer: &ServerOffer) -> Option<String> {
        serve::offer_conflict(offer)
    }

    fn handshaker(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
    ) -> Result<Box<dyn Handshaker>> {
        if scenario.version == TlsVersion::Quic {
            return Ok(Box::new(quic::OpensslQuicHandshaker::new(
                scenario,
                credentials,
            )?));
        }
        Ok(Box::new(OpensslHandshaker::new(scenario, credentials)?))
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
            return Err(super::Unsupported::new(
                "OpenSSL's QUIC runs in process only so far (over memory or loopback UDP), not apart (--link, --remote)",
            )
            .into());
        }
        let transport = if scenario.version.is_datagram() {
            Transport::Udp
        } else {
            Transport::Tcp
        };
        let scenario = HandshakeScenario {
            transport,
            ..*scenario
        };
        Ok(Box::new(socket::OpensslApart {
            handshaker: OpensslHandshaker::new(&scenario, credentials)?,
            side,
        }))
    }

    fn bulk_pair(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
    ) -> Result<Box<dyn BulkPair>> {
        if scenario.version == TlsVersion::Quic {
            return Err(super::Unsupported::new(
                "bulk over OpenSSL's QUIC streams is not built yet (rustls' QUIC, through quinn, carries bulk data)",
            )
            .into());
        }
        let mut handshaker = OpensslHandshaker::new(scenario, credentials)?;
        match scenario.transport {
            Transport::Tcp => return Ok(Box::new(sides::bulk_pair_over_tcp(&handshaker)?)),
            Transport::Udp => return Ok(Box::new(socket::bulk_pair_over_udp(&handshaker)?)),
            Transport::Memory => {}
        }
        match handshaker.mtu_bytes {
            None => OpensslBulkPair::over(&mut handshaker, Pipe::default()),
            Some(mtu_bytes) => OpensslBulkPair::over(&mut handshaker, DatagramPipe::new(mtu_bytes)),
        }
    }
}

/// An established OpenSSL client and server over a memory channel (the
/// byte pipe for TLS, the datagram channel for DTLS): the client writes,
/// the server reads.
struct OpensslBulkPair<P: Duplex> {
    negotiated: Negotiated,
    pipe: P,
    client: SslStream<P::End>,
    server: SslStream<P::End>,
    /// The most one write may carry: everything for TLS (OpenSSL cuts a
    /// write into records), for DTLS what one record in one datagram of the
    /// MTU holds, as OpenSSL computes it (`DTLS_get_data_mtu`): a DTLS
    /// application cuts its own writes.
    write_bytes: usize,
}

impl<P: Duplex + 'static> OpensslBulkPair<P> {
    fn over(handshaker: &mut OpensslHandshaker, pipe: P) -> Result<Box<dyn BulkPair>> {
        let Established { client, server, .. } = handshaker.establish_over(&pipe)?;
        let write_bytes = match handshaker.mtu_bytes {
            Some(_) => dtls::data_mtu(client.ssl())?,
            None => usize::MAX,
        };
        Ok(Box::new(Self {
            negotiated: negotiated(client.ssl())?,
            pipe,
            client,
            server,
            write_bytes,
        }))
    }
}

impl<P: Duplex> BulkPair for OpensslBulkPair<P> {
    fn negotiated(&self) -> Option<&Negotiated> {
        Some(&self.negotiated)
    }

    fn send(&mut self, data: &[u8]) -> Result<()> {
        for write in data.chunks(self.write_bytes) {
            let mut written = 0;
            while written < write.len() {
                written += self
                    .client
                    .ssl_write(&write[written..])
                    .map_err(|error| anyhow!("SSL_write failed: {error}"))?;
            }
        }
        Ok(())
    }

    fn receive(&mut self, out: &mut [u8]) -> Result<usize> {
        let mut filled = 0;
        // Records on the pipe, or plaintext of a record read but not yet handed out.
        while filled < out.len()
            && (self.pipe.pending_for_server() || self.server.ssl().pending() > 0)
        {
            match self.server.ssl_read(&mut out[filled..]) {
                Ok(0) => bail!("the connection was closed"),
                Ok(read) => filled += read,
                Err(error) if error.code() == ErrorCode::WANT_READ => break,
                Err(error) => bail!("SSL_read failed: {error}"),
            }
        }
        Ok(filled)
    }
}

fn protocol(version: TlsVersion) -> SslVersion {
    match version {
        TlsVersion::Tls12 => SslVersion::TLS1_2,
        TlsVersion::Tls13 => SslVersion::TLS1_3,
        TlsVersion::Dtls12 => SslVersion::DTLS1_2,
        // Never reached: the capabilities list no DTLS 1.3 (OpenSSL 3.6 has none).
        TlsVersion::Dtls13 => SslVersion::DTLS1_2,
        // Never reached: the capabilities list no QUIC (not driven yet).
        TlsVersion::Quic => SslVersion::TLS1_3,
    }
}

fn method(version: TlsVersion) -> SslMethod {
    if version.is_datagram() {
        SslMethod::dtls()
    } else {
        SslMethod::tls()
    }
}

/// Every TLS 1.2 suite tlslab configures: its standard name and OpenSSL's.
pub(crate) const TLS12_SUITES: &[(&str, &str)] = &[
    ("TLS_RSA_WITH_AES_128_GCM_SHA256", "AES128-GCM-SHA256"),
    ("TLS_RSA_WITH_AES_256_GCM_SHA384", "AES256-GCM-SHA384"),
    (
        "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256",
        "DHE-RSA-AES128-GCM-SHA256",
    ),
    (
        "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384",
        "DHE-RSA-AES256-GCM-SHA384",
    ),
    (
        "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        "DHE-RSA-CHACHA20-POLY1305",
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "ECDHE-RSA-AES128-GCM-SHA256",
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384",
    ),
    (
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        "ECDHE-RSA-CHACHA20-POLY1305",
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "ECDHE-ECDSA-AES128-GCM-SHA256",
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        "ECDHE-ECDSA-AES256-GCM-SHA384",
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        "ECDHE-ECDSA-CHACHA20-POLY1305",
    ),
    ("TLS_RSA_WITH_AES_128_CBC_SHA", "AES128-SHA"),
    ("TLS_RSA_WITH_AES_256_CBC_SHA", "AES256-SHA"),
    ("TLS_RSA_WITH_AES_128_CBC_SHA256", "AES128-SHA256"),
    ("TLS_RSA_WITH_AES_256_CBC_SHA256", "AES256-SHA256"),
    ("TLS_DHE_RSA_WITH_AES_128_CBC_SHA", "DHE-RSA-AES128-SHA"),
    ("TLS_DHE_RSA_WITH_AES_256_CBC_SHA", "DHE-RSA-AES256-SHA"),
    (
        "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256",
        "DHE-RSA-AES128-SHA256",
    ),
    (
        "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256",
        "DHE-RSA-AES256-SHA256",
    ),
    ("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA-AES128-SHA"),
    ("TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA-AES256-SHA"),
    (
        "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
        "ECDHE-RSA-AES128-SHA256",
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384",
        "ECDHE-RSA-AES256-SHA384",
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
        "ECDHE-ECDSA-AES128-SHA",
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
        "ECDHE-ECDSA-AES256-SHA",
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
        "ECDHE-ECDSA-AES128-SHA256",
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384",
        "ECDHE-ECDSA-AES256-SHA384",
    ),
];

/// The OpenSSL name of the TLS 1.2 (or DTLS 1.2) suite a scenario asks for.
pub(crate) fn tls12_cipher_name(scenario: &HandshakeScenario) -> Result<&'static str> {
    let suite = scenario.suite_name();
    match TLS12_SUITES.iter().find(|(standard, _)| *standard == suite) {
        Some((_, name)) => Ok(name),
        None => bail!("no OpenSSL name for suite {suite}"),
    }
}

/// The settings both sides share: version, suite, group, security level.
fn common_context(scenario: &HandshakeScenario) -> Result<SslContextBuilder> {
    let mut ctx = SslContextBuilder::new(method(scenario.version))?;
    ctx.set_min_proto_version(Some(protocol(scenario.version)))?;
    ctx.set_max_proto_version(Some(protocol(scenario.version)))?;
    match scenario.version.tls_rules() {
        TlsVersion::Tls13 => ctx.set_ciphersuites(scenario.suite_name())?,
        _ => ctx.set_cipher_list(tls12_cipher_name(scenario)?)?,
    }
    if let Some(name) = openssl_group_name(scenario.group) {
        match (
            scenario.version.tls_rules(),
            certificate_curve(scenario.cert),
        ) {
            // In TLS 1.2 a peer may only use an ECDSA certificate on a curve
            // the other side lists (RFC 4492), so both sides list the
            // certificate's curve after the scenario's group; the server
            // follows the client's order and still picks the group, which
            // every handshake checks.
            (TlsVersion::Tls12, Some(curve)) if curve != name => {
                ctx.set_groups_list(&format!("{name}:{curve}"))?
            }
            _ => ctx.set_groups_list(name)?,
        }
    }
    if scenario.version.is_datagram() {
        // The MTU is set on each connection; the channel is not asked.
        ctx.set_options(SslOptions::NO_QUERY_MTU);
    }
    if scenario.is_weak() {
        // Measured and flagged as weak rather than refused: only this row's
        // contexts get the lower level.
        ctx.set_security_level(0);
    }
    Ok(ctx)
}

fn trust_store(credentials: &Credentials) -> Result<openssl::x509::store::X509Store> {
    let mut store = X509StoreBuilder::new()?;
    store.add_cert(X509::from_der(&credentials.root_der)?)?;
    Ok(store.build())
}

fn use_chain(ctx: &mut SslContextBuilder, chain: &CertChain) -> Result<()> {
    let (leaf, intermediates) = chain
        .chain_der
        .split_first()
        .context("empty certificate chain")?;
    let leaf = X509::from_der(leaf)?;
    ctx.set_certificate(&leaf)?;
    for der in intermediates {
        ctx.add_extra_chain_cert(X509::from_der(der)?)?;
    }
    let key: PKey<Private> = PKey::private_key_from_pkcs8(&chain.key_pkcs8_der)?;
    ctx.set_private_key(&key)?;
    ctx.check_private_key()?;
    Ok(())
}

/// The curve of an ECDSA certificate, as OpenSSL names it.
pub(crate) fn certificate_curve(cert: CertKind) -> Option<&'static str> {
    match cert {
        CertKind::EcdsaP256 => Some("P-256"),
        CertKind::EcdsaP384 => Some("P-384"),
        CertKind::EcdsaP521 => Some("P-521"),
        _ => None,
    }
}

pub use crate::backend::client::Trust;

pub(crate) fn client_context(
    scenario: &HandshakeScenario,
    credentials: &Credentials,
) -> Result<SslContext> {
    client_context_trusting(scenario, credentials, Trust::TestRoot)
}

/// As [`client_context`], trusting `trust`'s certificates.
pub(crate) fn client_context_trusting(
    scenario: &HandshakeScenario,
    credentials: &Credentials,
    trust: Trust,
) -> Result<SslContext> {
    let mut ctx = common_context(scenario)?;

    ctx.set_verify(SslVerifyMode::PEER);
    let store = match trust {
        Trust::TestRoot => trust_store(credentials)?,
        Trust::SystemAndTestRoot => {
            let mut store = X509StoreBuilder::new()?;
            store.add_cert(X509::from_der(&credentials.root_der)?)?;
            store.set_default_paths()?;
            store.build()
        }
        Trust::File(path) => {
            let pem = std::fs::read(path)
                .with_context(|| format!("reading --ca-file {}", path.display()))?;
            let certificates = X509::stack_from_pem(&pem)
                .with_context(|| format!("--ca-file {}: not PEM certificates", path.display()))?;
            if certificates.is_empty() {
                bail!("--ca-file {} holds no certificate", path.display());
            }
            let mut store = X509StoreBuilder::new()?;
            for certificate in certificates {
                store.add_cert(certificate)?;
            }
            store.build()
        }
    };
    ctx.set_cert_store(store);
    ctx.set_session_cache_mode(SslSessionCacheMode::OFF);
    if scenario.mutual {
        use_chain(&mut ctx, &credentials.client)?;
    }
    Ok(ctx.build())
}

/// Finite-field parameters for TLS 1.2 DHE: RFC 2409 group 2 for 1024 bits,
/// RFC 3526 MODP groups above, generator 2.
pub(crate) fn dhe_parameters(group: Group) -> Result<Option<Dh<openssl::pkey::Params>>> {
    let prime = match group {
        Group::Dhe1024 => BigNum::get_rfc2409_prime_1024()?,
        Group::Dhe2048 => BigNum::get_rfc3526_prime_2048()?,
        Group::Dhe3072 => BigNum::get_rfc3526_prime_3072()?,
        Group::Dhe4096 => BigNum::get_rfc3526_prime_4096()?,
        _ => return Ok(None),
    };
    Ok(Some(Dh::from_pqg(prime, None, BigNum::from_u32(2)?)?))
}

pub(crate) fn server_context(
    scenario: &HandshakeScenario,
    credentials: &Credentials,
) -> Result<SslContext> {
    Ok(server_context_builder(scenario, credentials)?.build())
}

/// [`server_context`] before it is built, for a server that adds to it.
pub(crate) fn server_context_builder(
    scenario: &HandshakeScenario,
    credentials: &Credentials,
) -> Result<SslContextBuilder> {
    let mut ctx = common_context(scenario)?;
    use_chain(&mut ctx, &credentials.server)?;
    if let Some(parameters) = dhe_parameters(scenario.group)? {
        ctx.set_tmp_dh(&parameters)?;
    }
    configure_resumption(&mut ctx, scenario.resumption)?;
    if scenario.mutual {
        ctx.set_verify(SslVerifyMode::PEER | SslVerifyMode::FAIL_IF_NO_PEER_CERT);
        ctx.set_cert_store(trust_store(credentials)?);
    }
    if scenario.version.is_datagram() {
        dtls::require_cookies(&mut ctx)?;
    }
    Ok(ctx)
}

/// A server's session cache and tickets for one kind of resumption.
fn configure_resumption(ctx: &mut SslContextBuilder, resumption: Resumption) -> Result<()> {
    ctx.set_session_id_context(b"tlslab")?;
    match resumption {
        Resumption::Off => {
            ctx.set_session_cache_mode(SslSessionCacheMode::OFF);
            ctx.set_options(SslOptions::NO_TICKET);
            ctx.set_num_tickets(0)?;
        }
        Resumption::SessionId => {
            ctx.set_session_cache_mode(SslSessionCacheMode::SERVER);
            ctx.set_options(SslOptions::NO_TICKET);
        }
        Resumption::Ticket => {
            ctx.set_session_cache_mode(SslSessionCacheMode::OFF);
        }
        Resumption::Psk | Resumption::ZeroRtt => {
            ctx.set_num_tickets(1)?;
        }
    }
    Ok(())
}

struct OpensslHandshaker {
    client: SslContext,
    server: SslContext,
    resume: bool,
    session: Option<SslSession>,
    /// The datagram MTU for DTLS; `None` runs TLS over the byte pipe.
    mtu_bytes: Option<u16>,
    /// Memory (the pipe or the datagram channel, one thread) or a loopback
    /// socket (two threads, see [`sides`] and [`socket`]).
    transport: Transport,
    /// Over TCP, the listener every handshake of this handshaker connects
    /// to (as a server's is), opened on first use.
    listener: Option<Arc<TcpLoopback>>,
    /// When a handshake over memory reads the thread's CPU clock.
    cpu_readings: CpuReadings,
}

/// The most message flights a handshake may take before it counts as stalled.
const MAX_ROUNDS: usize = 32;

/// A client and a server whose handshake is done, and what it cost each side.
struct Established<E> {
    client: SslStream<E>,
    server: SslStream<E>,
    times: SideTimes,
    wall_ns: u64,
}

impl Handshaker for OpensslHandshaker {
    fn handshake(&mut self) -> Result<HandshakeSample> {
        match self.transport {
            Transport::Tcp => return self.handshake_over_tcp(),
            Transport::Udp => return self.handshake_over_udp(),
            Transport::Memory => {}
        }
        match self.mtu_bytes {
            None => self.handshake_over(&Pipe::default()),
            Some(mtu_bytes) => self.handshake_over(&DatagramPipe::new(mtu_bytes)),
        }
    }

    fn read_cpu(&mut self, readings: CpuReadings) {
        self.cpu_readings = readings;
    }
}

impl OpensslHandshaker {
    /// Client and server contexts for a scenario; for resumed scenarios the
    /// first, full handshake is done, so the client has a session to resume.
    fn new(scenario: &HandshakeScenario, credentials: &Credentials) -> Result<Self> {
        let mut handshaker = OpensslHandshaker {
            client: client_context(scenario, credentials)
                .context("configuring the OpenSSL client")?,
            server: server_context(scenario, credentials)
                .context("configuring the OpenSSL server")?,
            resume: scenario.resumption.is_on(),
            session: None,
            mtu_bytes: scenario.mtu_bytes,
            transport: scenario.transport,
            listener: None,
            cpu_readings: CpuReadings::EveryTurn,
        };
        if handshaker.resume {
            handshaker.handshake()?;
            if handshaker.session.is_none() {
                bail!("the full handshake left no session to resume");
            }
        }
        Ok(handshaker)
    }

    /// One handshake over `pipe`: TLS over the byte pipe, DTLS over the
    /// datagram channel (the contexts decide which).
    fn handshake_over<P: Duplex>(&mut self, pipe: &P) -> Result<HandshakeSample> {
        let Established {
            mut client,
            mut server,
            times,
            wall_ns,
        } = self.establish_over(pipe)?;
        let negotiated = negotiated(client.ssl())?;
        // Closed as after close_notify: OpenSSL drops the session of a
        // connection freed without a shutdown, which would defeat resumption.
        for stream in [&mut client, &mut server] {
            stream.set_shutdown(ShutdownState::SENT | ShutdownState::RECEIVED);
        }
        if self.resume {
            self.session = client.ssl().session().map(|s| s.to_owned());
        }
        Ok(HandshakeSample::of_turns(times, wall_ns, negotiated))
    }

    /// Runs one handshake over `pipe`, each side's turns timed, and keeps
    /// both ends (for application data after it). Each side's connection is
    /// made in its first turn (the server's once the client's first flight
    /// waits for it), so setting it up costs no clock reading of its own.
    fn establish_over<P: Duplex>(&mut self, pipe: &P) -> Result<Established<P::End>> {
        let start = std::time::Instant::now();
        let mut turns = Turns::start(self.cpu_readings);

        turns.begin(Side::Client);
        let mut client = self.new_client(pipe)?;
        let mut server = None;
        let (mut client_done, mut server_done) = (false, false);
        let mut rounds = 0;
        loop {
            let client_turn = rounds == 0 || pipe.pending_for_client();
            if client_turn {
                if rounds > 0 {
                    turns.begin(Side::Client);
                }
                let was_done = client_done;
                step(&mut client, &mut client_done).context("client")?;
                if client_done && !was_done {
                    turns.done(Side::Client);
                }
                turns.ended(Side::Client);
            }
            let server_turn = pipe.pending_for_server();
            if server_turn {
                turns.begin(Side::Server);
                let server = match &mut server {
                    Some(server) => server,
                    None => server.insert(self.new_server(pipe)?),
                };
                let was_done = server_done;
                step(server, &mut server_done).context("server")?;
                if server_done && !was_done {
                    turns.done(Side::Server);
                }
                turns.ended(Side::Server);
            }
            if client_done
                && server_done
                && !pipe.pending_for_client()
                && !pipe.pending_for_server()
            {
                break;
            }
            rounds += 1;
            if !client_turn && !server_turn {
                // Over datagrams this is a lost packet: DTLS would resend
                // its flight when its timer (1 s) fires; a measurement does
                // not wait for it.
                bail!("handshake stalled after {rounds} rounds: neither side has anything to read");
            }
            if rounds > MAX_ROUNDS {
                bail!("handshake stalled after {rounds} rounds");
            }
        }
        let wall_ns = start.elapsed().as_nanos() as u64;
        Ok(Established {
            client,
            server: server.context("the server never had a turn")?,
            times: turns.finish(),
            wall_ns,
        })
    }

    fn new_client<P: Duplex>(&self, pipe: &P) -> Result<SslStream<P::End>> {
        let mut ssl = Ssl::new(&self.client)?;
        ssl.set_connect_state();
        ssl.set_hostname(SERVER_NAME)?;
        ssl.param_mut().set_host(SERVER_NAME)?;
        if let Some(session) = &self.session {
            // SAFETY: the session was made by a client of this same context.
            unsafe { ssl.set_session(session)? };
        }
        self.open(ssl, pipe.client_end())
    }

    fn new_server<P: Duplex>(&self, pipe: &P) -> Result<SslStream<P::End>> {
        let mut ssl = Ssl::new(&self.server)?;
        ssl.set_accept_state();
        self.open(ssl, pipe.server_end())
    }

    /// The connection over its end of the pipe, held to the MTU for DTLS.
    fn open<S: std::io::Read + std::io::Write>(&self, ssl: Ssl, end: S) -> Result<SslStream<S>> {
        let stream = SslStream::new(ssl, end)?;
        if let Some(mtu_bytes) = self.mtu_bytes {
            dtls::set_mtu(stream.ssl(), mtu_bytes)?;
        }
        Ok(stream)
    }
}

/// Advances one side: the handshake until it is done, then post-handshake
/// messages (session tickets).
fn step<S: std::io::Read + std::io::Write>(
    stream: &mut SslStream<S>,
    done: &mut bool,
) -> Result<()> {
    if !*done {
        match stream.do_handshake() {
            Ok(()) => *done = true,
            Err(error) if error.code() == ErrorCode::WANT_READ => {}
            Err(error) => return Err(anyhow!("handshake failed: {error}")),
        }
        return Ok(());
    }
    let mut byte = [0u8; 1];
    match stream.ssl_read(&mut byte) {
        Ok(_) => bail!("unexpected application data after the handshake"),
        Err(error) if error.code() == ErrorCode::WANT_READ => Ok(()),
        Err(error) => Err(anyhow!("reading post-handshake messages failed: {error}")),
    }
}

/// What the client sees as negotiated.
pub(crate) fn negotiated(ssl: &openssl::ssl::SslRef) -> Result<Negotiated> {
    let suite = ssl
        .current_cipher()
        .and_then(|cipher| cipher.standard_name())
        .unwrap_or("none")
        .to_string();
    let resumed = ssl.session_reused();
    Ok(Negotiated {
        version: ssl.version_str().to_string(),
        suite,
        group: negotiated_group(ssl, resumed),
        signature: peer_signature_name(ssl),
        resumed,
        alpn: None,
        early_data: false,
    })
}

fn negotiated_group(ssl: &openssl::ssl::SslRef, resumed: bool) -> Option<String> {
    let is_tls12 = matches!(ssl.version_str(), "TLSv1.2" | "DTLSv1.2");
    if is_tls12 && resumed {
        return None;
    }
    let mut key: *mut openssl_sys::EVP_PKEY = std::ptr::null_mut();
    // SAFETY: SSL_get_peer_tmp_key hands out a new reference in `key`, which
    // `PKey::from_ptr` takes over and frees.
    let peer_key = unsafe {
        if openssl_sys::SSL_get_peer_tmp_key(ssl.as_ptr(), &mut key) > 0 && !key.is_null() {
            Some(PKey::<openssl::pkey::Public>::from_ptr(key))
        } else {
            None
        }
    };
    if is_tls12 {
        match &peer_key {
            None => return Some(Group::RsaKeyTransport.id().to_string()),
            Some(key) if key.id() == Id::DH => return Some(format!("dhe{}", key.bits())),
            Some(_) => {}
        }
    }
    negotiated_group_name(ssl)
        .or_else(|| peer_key.as_ref().and_then(group_of_key))
        .map(|name| super::canonical_group(&name))
}

/// The group name OpenSSL reports (3.2 and newer).
#[cfg(ossl320)]
fn negotiated_group_name(ssl: &openssl::ssl::SslRef) -> Option<String> {
    // SAFETY: the returned string is owned by the connection and copied at once.
    unsafe {
        let name: *const c_char = openssl_sys::SSL_get0_group_name(ssl.as_ptr());
        (!name.is_null()).then(|| CStr::from_ptr(name).to_string_lossy().into_owned())
    }
}

#[cfg(not(ossl320))]
fn negotiated_group_name(_: &openssl::ssl::SslRef) -> Option<String> {
    None
}

/// The group of the server's ephemeral key, for OpenSSL before 3.2.
fn group_of_key(key: &PKey<openssl::pkey::Public>) -> Option<String> {
    match key.id() {
        Id::X25519 => Some("x25519".into()),
        Id::X448 => Some("x448".into()),
        Id::DH => Some(format!("ffdhe{}", key.bits())),
        Id::EC => {
            let nid = key.ec_key().ok()?.group().curve_name()?;
            nid.short_name().ok().map(String::from)
        }
        _ => None,
    }
}

fn peer_signature_name(ssl: &openssl::ssl::SslRef) -> Option<String> {
    let mut name: *const c_char = std::ptr::null();
    // SAFETY: the control fills `name` with a string owned by the connection,
    // copied at once; OpenSSL before 3.5 returns 0 and leaves it NULL.
    unsafe {
        let found = openssl_sys::SSL_ctrl(
            ssl.as_ptr(),
            SSL_CTRL_GET_PEER_SIGNATURE_NAME,
            0,
            &mut name as *mut *const c_char as *mut c_void,
        );
        (found > 0 && !name.is_null()).then(|| CStr::from_ptr(name).to_string_lossy().into_owned())
    }
}

/// Loads OpenSSL's legacy provider (Blowfish, CAST5, DES, RC2, SEED, MD4,
/// Whirlpool) next to the default one, once per process. Returns true if and
/// only if the legacy provider is available.
pub fn load_legacy_provider() -> bool {
    static LEGACY: OnceLock<Option<openssl::provider::Provider>> = OnceLock::new();
    LEGACY
        .get_or_init(|| openssl::provider::Provider::try_load(None, "legacy", true).ok())
        .is_some()
}
