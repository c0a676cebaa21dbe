//! wolfSSL's handshakes over memory: the [`Backend`] implementation, the
//! handshaker that runs both sides in turns on one thread, what the
//! client reports as negotiated, and an established pair for `bulk`.

use anyhow::{bail, Context as _, Result};

use super::connection::{self, Connection, Context, Endpoint, Progress, Session};
use super::descriptor::capabilities;
use super::DESCRIPTOR;
use crate::backend::{
    Backend, BulkPair, Capabilities, CpuReadings, HandshakeSample, Handshaker, LibraryInfo,
    Negotiated, PrimitiveBackend, SideTimes, Turns,
};
use crate::certs::Credentials;
use crate::scenario::Side;
use crate::scenario::{Group, HandshakeScenario, Named, Resumption, TlsVersion};
use crate::transport::datagram::DatagramPipe;
use crate::transport::memory::Pipe;

/// The wolfSSL backend.
#[derive(Debug, Default)]
pub struct WolfsslBackend;

impl Backend for WolfsslBackend {
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
            // The build's math and tickets and the licence beside the
            // version: every run's provenance tells an SP-math build from
            // a generic-math one (`compare` shows both), and `tlslab list`
            // says this build carries GPL code.
            version: format!(
                "{}, {} (GPL-2.0-or-later, opt-in feature wolfssl)",
                connection::library_version(),
                build_options()
            ),
        }
    }

    fn capabilities(&self) -> &Capabilities {
        capabilities()
    }

    fn unsupported_reason(&self, scenario: &HandshakeScenario) -> Option<String> {
        if !cfg!(wolfssl_session_ticket)
            && matches!(scenario.resumption, Resumption::Ticket | Resumption::Psk)
        {
            return Some(format!(
                "wolfssl cannot resume with {}: this wolfSSL was built without session tickets \
                 (rebuild it with scripts/wolfssl-build.sh, which keeps the project's \
                 --enable-session-ticket), so it resumes TLS 1.2 and DTLS 1.2 by session id only",
                scenario.resumption.id()
            ));
        }
        if scenario.resumption.sends_early_data() {
            return Some(
                "0-RTT is not built on wolfssl (wolfSSL offers early data; tlslab's wolfSSL \
                 driver does not write it): 0-RTT runs on QUIC with rustls-aws-lc and rustls-ring"
                    .to_string(),
            );
        }
        if scenario.group == Group::RsaKeyTransport {
            return Some(
                "wolfssl has no RSA key transport: wolfSSL leaves static RSA suites out unless \
                 built with WOLFSSL_STATIC_RSA (wolfssl-sys does not)"
                    .to_string(),
            );
        }
        capabilities().unsupported_reason(self.id(), scenario)
    }

    fn handshaker(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
    ) -> Result<Box<dyn Handshaker>> {
        Ok(Box::new(WolfsslHandshaker::new(scenario, credentials)?))
    }

    fn bulk_pair(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
    ) -> Result<Box<dyn BulkPair>> {
        let mut handshaker = WolfsslHandshaker::new(scenario, credentials)?;
        let pipe = Transport::new(scenario.mtu_bytes);
        let established = handshaker.establish_over(&pipe)?;
        let negotiated = negotiated(&established.client, scenario.version)?;
        Ok(Box::new(WolfsslBulkPair {
            negotiated,
            max_write_bytes: established.client.max_write_bytes()?,
            client: established.client,
            server: established.server,
            _pipe: pipe,
        }))
    }

    fn primitives(&self) -> Box<dyn PrimitiveBackend> {
        Box::new(super::primitives::WolfsslPrimitives)
    }
}

/// What the linked wolfSSL was built with, as its options.h says (read by
/// build.rs): its public-key math — the single-precision "SP" code for
/// fixed key sizes that wolfssl-sys turns on, or the generic
/// multi-precision code of a `scripts/wolfssl-build.sh --math generic`
/// build — and whether it has session tickets.
pub(super) fn build_options() -> &'static str {
    match (cfg!(wolfssl_sp_math), cfg!(wolfssl_session_ticket)) {
        (true, true) => "SP math, session tickets",
        (true, false) => "SP math, no session tickets",
        (false, true) => "generic math, session tickets",
        (false, false) => "generic math, no session tickets",
    }
}

/// The in-memory transport of one handshake: the byte pipe for TLS, the
/// datagram channel (MTU enforced) for DTLS.
enum Transport {
    Stream(Pipe),
    Datagram(DatagramPipe),
}

impl Transport {
    fn new(mtu_bytes: Option<u16>) -> Self {
        match mtu_bytes {
            Some(mtu_bytes) => Transport::Datagram(DatagramPipe::new(mtu_bytes)),
            None => Transport::Stream(Pipe::default()),
        }
    }

    fn end(&self, side: Side) -> Endpoint {
        match (self, side) {
            (Transport::Stream(pipe), Side::Client) => Endpoint::Stream(pipe.client_end()),
            (Transport::Stream(pipe), Side::Server) => Endpoint::Stream(pipe.server_end()),
            (Transport::Datagram(pipe), Side::Client) => Endpoint::Datagram(pipe.client_end()),
            (Transport::Datagram(pipe), Side::Server) => Endpoint::Datagram(pipe.server_end()),
        }
    }

    fn pending_for(&self, side: Side) -> bool {
        match (self, side) {
            (Transport::Stream(pipe), Side::Client) => pipe.pending_for_client(),
            (Transport::Stream(pipe), Side::Server) => pipe.pending_for_server(),
            (Transport::Datagram(pipe), Side::Client) => pipe.pending_for_client(),
            (Transport::Datagram(pipe), Side::Server) => pipe.pending_for_server(),
        }
    }
}

/// The most message flights a handshake may take before it counts as stalled.
const MAX_ROUNDS: usize = 32;

/// Both sides' contexts for one scenario and, for resumed rows, the
/// session the next client resumes.
struct WolfsslHandshaker {
    client: Context,
    server: Context,
    version: TlsVersion,
    resumption: Resumption,
    session: Option<Session>,
    /// For session-id rows: the server's session of the last full
    /// handshake, put back in wolfSSL's process-wide cache before each
    /// handshake ([`Context::keep_in_cache`]).
    server_session: Option<Session>,
    mtu_bytes: Option<u16>,
    cpu_readings: CpuReadings,
}

/// A client and a server whose handshake is done, and what it cost each side.
struct Established {
    client: Connection,
    server: Connection,
    times: SideTimes,
    wall_ns: u64,
}

impl Handshaker for WolfsslHandshaker {
    fn handshake(&mut self) -> Result<HandshakeSample> {
        let pipe = Transport::new(self.mtu_bytes);
        let established = self.establish_over(&pipe)?;
        let negotiated = negotiated(&established.client, self.version)?;
        if self.resumption.is_on() {
            self.session = established.client.session();
        }
        if self.resumption == Resumption::SessionId && !negotiated.resumed {
            self.server_session = established.server.session();
        }
        Ok(HandshakeSample {
            client: established.times.client,
            server: established.times.server,
            wall_ns: established.wall_ns,
            negotiated,
            split_unsure: established.times.split_unsure,
        })
    }

    fn read_cpu(&mut self, readings: CpuReadings) {
        self.cpu_readings = readings;
    }
}

impl WolfsslHandshaker {
    /// Both contexts; for resumed scenarios the first, full handshake is
    /// done, so the client has a session to resume.
    fn new(scenario: &HandshakeScenario, credentials: &Credentials) -> Result<Self> {
        let mut handshaker = WolfsslHandshaker {
            client: Context::new(scenario, credentials, Side::Client)
                .context("configuring the wolfSSL client")?,
            server: Context::new(scenario, credentials, Side::Server)
                .context("configuring the wolfSSL server")?,
            version: scenario.version,
            resumption: scenario.resumption,
            session: None,
            server_session: None,
            mtu_bytes: scenario.mtu_bytes,
            cpu_readings: CpuReadings::EveryTurn,
        };
        if handshaker.resumption.is_on() {
            handshaker.handshake()?;
            if handshaker.session.is_none() {
                bail!("the full handshake left no session to resume");
            }
        }
        Ok(handshaker)
    }

    /// The client's connection, resuming the kept session if there is one.
    fn new_client(&self, pipe: &Transport) -> Result<Connection> {
        let mut client = self.client.connect(pipe.end(Side::Client))?;
        if let Some(session) = &self.session {
            client.resume(session)?;
        }
        Ok(client)
    }

    /// Runs one handshake over `pipe`, each side's turns timed, and keeps
    /// both ends. Each side's connection is made in its first turn; a
    /// session-id row's server session is put back in the cache first,
    /// untimed.
    fn establish_over(&mut self, pipe: &Transport) -> Result<Established> {
        if let Some(session) = &self.server_session {
            self.server.keep_in_cache(session)?;
        }
        let start = std::time::Instant::now();
        let mut turns = Turns::start(self.cpu_readings);
        turns.begin(Side::Client);
        let mut client = self.new_client(pipe)?;
        let mut server: Option<Connection> = None;
        let (mut client_done, mut server_done) = (false, false);
        let mut rounds = 0;
        loop {
            let client_turn = rounds == 0 || pipe.pending_for(Side::Client);
            if client_turn {
                if rounds > 0 {
                    turns.begin(Side::Client);
                }
                let was_done = client_done;
                step(&mut client, Side::Client, &mut client_done).context("client")?;
                if client_done && !was_done {
                    turns.done(Side::Client);
                }
                turns.ended(Side::Client);
            }
            let server_turn = pipe.pending_for(Side::Server);
            if server_turn {
                turns.begin(Side::Server);
                let server = match &mut server {
                    Some(server) => server,
                    None => server.insert(self.server.connect(pipe.end(Side::Server))?),
                };
                let was_done = server_done;
                step(server, Side::Server, &mut server_done).context("server")?;
                if server_done && !was_done {
                    turns.done(Side::Server);
                }
                turns.ended(Side::Server);
            }
            if client_done
                && server_done
                && !pipe.pending_for(Side::Client)
                && !pipe.pending_for(Side::Server)
            {
                break;
            }
            rounds += 1;
            if !client_turn && !server_turn {
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
}

/// Advances one side: the handshake until it is done, then what comes
/// after it (session tickets, acknowledgements).
fn step(connection: &mut Connection, side: Side, done: &mut bool) -> Result<()> {
    if *done {
        return connection.read_post_handshake();
    }
    if let Progress::Done = connection.handshake(side)? {
        *done = true;
    }
    Ok(())
}

/// What the client sees as negotiated.
fn negotiated(client: &Connection, version: TlsVersion) -> Result<Negotiated> {
    let suite = client.suite();
    let resumed = client.resumed();
    let group = if version.tls_rules() == TlsVersion::Tls12 {
        if resumed {
            None
        } else if suite.starts_with("TLS_RSA_") {
            Some(Group::RsaKeyTransport.id().to_string())
        } else if suite.starts_with("TLS_DHE_") {
            Some(format!("dhe{}", client.dhe_bits()))
        } else {
            client.curve_name().map(|name| group_id(&name))
        }
    } else {
        client.curve_name().map(|name| group_id(&name))
    };
    Ok(Negotiated {
        version: client.version(),
        suite,
        group,
        signature: None,
        resumed,
        alpn: None,
        early_data: false,
    })
}

/// tlslab's id of a group wolfSSL names ("SECP256R1", "FFDHE_2048",
/// "ML_KEM_768"); a name it does not know is kept as it is, so the check
/// shows it.
fn group_id(name: &str) -> String {
    let id = match name {
        "SECP256R1" => Group::P256,
        "SECP384R1" => Group::P384,
        "SECP521R1" => Group::P521,
        "X25519" => Group::X25519,
        "FFDHE_2048" => Group::Ffdhe2048,
        "FFDHE_3072" => Group::Ffdhe3072,
        "FFDHE_4096" => Group::Ffdhe4096,
        "ML_KEM_512" => Group::Mlkem512,
        "ML_KEM_768" => Group::Mlkem768,
        "ML_KEM_1024" => Group::Mlkem1024,
        "X25519MLKEM768" => Group::X25519Mlkem768,
        "SecP256r1MLKEM768" => Group::Secp256r1Mlkem768,
        other => return other.to_string(),
    };
    id.id().to_string()
}

/// An established wolfSSL pair carrying application data from the client
/// to the server over memory (TLS over the byte pipe, DTLS over the
/// datagram channel).
struct WolfsslBulkPair {
    negotiated: Negotiated,
    /// The most bytes one record carries (for DTLS, one datagram's worth).
    max_write_bytes: usize,
    client: Connection,
    server: Connection,
    /// The transport both connections' callbacks use, kept alive with them.
    _pipe: Transport,
}

impl BulkPair for WolfsslBulkPair {
    fn negotiated(&self) -> Option<&Negotiated> {
        Some(&self.negotiated)
    }

    /// Writes `data` in records of at most `max_write_bytes` (a DTLS write
    /// larger than a datagram goes out as several records).
    fn send(&mut self, data: &[u8]) -> Result<()> {
        for piece in data.chunks(self.max_write_bytes) {
            self.client.write(piece)?;
        }
        Ok(())
    }

    fn receive(&mut self, out: &mut [u8]) -> Result<usize> {
        let mut filled = 0;
        while filled < out.len() {
            let read = self.server.read(&mut out[filled..])?;
            if read == 0 {
                break;
            }
            filled += read;
        }
        Ok(filled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::certs::CertCache;
    use crate::scenario::CertKind;

    /// Issue 27: wolfSSL keeps one session cache for the whole process, 33
    /// sessions, and every session-id handshaker built (a row prepared, a
    /// handshaker renewed) adds two. A second session-id row's handshakers,
    /// built again and again beside the first row's, pushed the first
    /// row's server session out of the table, and its next handshake came
    /// out full ("asked for a resumed handshake, negotiated a full
    /// handshake"). An RSA row kept while an ECDSA row's handshaker is
    /// built 100 times: every handshake of both rows resumes (before the
    /// fix, the kept row stayed in the table with odds under 1 in 1,000).
    #[test]
    fn issue27_wolfssl_session_id_rows_side_by_side_both_resume() {
        let cert_dir = tempfile::tempdir().unwrap();
        let certs = CertCache::new(cert_dir.path());
        let row = |cert| {
            let mut scenario = HandshakeScenario::full(TlsVersion::Tls12, Group::X25519, cert);
            scenario.resumption = Resumption::SessionId;
            scenario
        };
        let (kept, renewed) = (row(CertKind::Rsa2048), row(CertKind::EcdsaP256));
        let kept_credentials = certs.get(kept.cert, kept.chain_depth).unwrap();
        let renewed_credentials = certs.get(renewed.cert, renewed.chain_depth).unwrap();
        let mut kept_handshaker = WolfsslBackend.handshaker(&kept, &kept_credentials).unwrap();
        for built in 1..=100 {
            let mut renewed_handshaker = WolfsslBackend
                .handshaker(&renewed, &renewed_credentials)
                .unwrap();
            let renewed_sample = renewed_handshaker.handshake().unwrap();
            assert!(
                renewed_sample.negotiated.resumed,
                "the ECDSA row's handshaker {built} did not resume"
            );
            let kept_sample = kept_handshaker.handshake().unwrap();
            assert!(
                kept_sample.negotiated.resumed,
                "the RSA row negotiated a full handshake after {built} ECDSA handshakers"
            );
        }
    }

    /// The project's wolfSSL build (the site file `.cargo/config.toml` or
    /// `scripts/wolfssl-build.sh` names) has session tickets, so its ticket
    /// and PSK rows run (the shared backend suite resumes them) instead of
    /// saying why; and its library version says which math it has, so two
    /// builds' runs are told apart.
    #[test]
    fn wolfssl_build_has_session_tickets_and_names_its_math() {
        let resumptions = &WolfsslBackend.capabilities().resumptions;
        assert!(
            resumptions.contains(&Resumption::Ticket),
            "this wolfSSL has no session tickets ({resumptions:?}): build it with \
             scripts/wolfssl-build.sh"
        );
        assert!(resumptions.contains(&Resumption::Psk), "{resumptions:?}");
        let version = WolfsslBackend.library().version;
        let math = if cfg!(wolfssl_sp_math) {
            "SP math"
        } else {
            "generic math"
        };
        assert!(
            version.contains(&format!(", {math}, session tickets (GPL")),
            "{version}"
        );
    }
}
