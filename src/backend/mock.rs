//! A backend with deterministic fake timings, for testing the pipeline
//! (matrix -> sampling -> statistics -> store -> exports) without noise. It
//! performs no cryptography and is never listed as a backend.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use anyhow::Result;

use super::plain::PlainPair;
use super::{
    Backend, BackendDescriptor, BackendDetails, BackendId, BulkPair, Capabilities, CpuMasking,
    CpuReadings, HandshakeSample, Handshaker, LibraryInfo, Negotiated, PreparedOperation,
    PrimitiveBackend, SideTime, SymbolPrefixes, Turns, Unsupported,
};
use crate::certs::Credentials;
use crate::scenario::speed::SpeedRow;
use crate::scenario::Side;
use crate::scenario::{
    Aead, CertKind, Group, HandshakeScenario, KxKind, Named, Resumption, TlsVersion, Transport,
};

/// Everything tlslab knows about the mock backend: accepted by name,
/// never listed; TLS over memory only (its handshakes are computed, not
/// carried); no CPU features to mask, no symbols of its own.
pub static DESCRIPTOR: BackendDescriptor = BackendDescriptor {
    id: BackendId::Mock,
    library: "mock",
    listed: false,
    programs: &[],
    scratch: None,
    install: "",
    uncountable: None,
    details: BackendDetails {
        capabilities,
        cpu_masking: CpuMasking::Unused,
        symbols: SymbolPrefixes {
            protocol_paths: &[],
            crypto_paths: &[],
            versioned_symbol_prefixes: &[],
            protocol_sources: &[],
            library_sources: &[],
        },
        counts_crypto_apart: false,
        notes: crate::backend::descriptor::no_notes,
        open: || Arc::new(MockBackend::default()),
    },
};

/// What the mock supports: everything but X448 and Ed448, so that
/// matrices get unsupported rows, over memory.
fn capabilities() -> &'static Capabilities {
    static CAPABILITIES: OnceLock<Capabilities> = OnceLock::new();
    CAPABILITIES.get_or_init(|| {
        let groups = |version: TlsVersion| -> Vec<Group> {
            Group::ALL
                .iter()
                .copied()
                .filter(|g| *g != Group::X448 && g.protocol_conflict(version).is_none())
                .collect()
        };
        Capabilities {
            versions: vec![TlsVersion::Tls12, TlsVersion::Tls13],
            groups_tls12: groups(TlsVersion::Tls12),
            groups_tls13: groups(TlsVersion::Tls13),
            certs: CertKind::ALL
                .iter()
                .copied()
                .filter(|c| *c != CertKind::Ed448)
                .collect(),
            aeads: Aead::ALL.to_vec(),
            resumptions: Resumption::ALL.to_vec(),
            mutual: true,
            reports_signature_scheme: true,
            transports: vec![Transport::Memory],
        }
    })
}

/// The mock backend. It lacks X448 and Ed448 so that matrices get
/// unsupported rows, and can be told to negotiate a wrong group.
#[derive(Debug, Clone)]
pub struct MockBackend {
    capabilities: &'static Capabilities,
    /// If set, every handshake reports this group instead of the one asked for.
    pub wrong_group: Option<Group>,
    /// If set, a machine whose speed changes during the run (see [`Drift`]).
    pub drift: Option<Arc<Drift>>,
}

/// A deterministic change of the machine's speed, shared by every
/// handshaker of a mock backend: the handshakes are counted, and every
/// handshake in the second half of each stretch of `stretch` handshakes
/// takes `factor` times as long.
#[derive(Debug)]
pub struct Drift {
    pub stretch: u64,
    pub factor: u64,
    count: AtomicU64,
}

impl Drift {
    pub fn new(stretch: u64, factor: u64) -> Self {
        Self {
            stretch,
            factor,
            count: AtomicU64::new(0),
        }
    }

    /// The slowdown of the next handshake.
    fn next_factor(&self) -> u64 {
        let count = self.count.fetch_add(1, Ordering::Relaxed);
        if count % self.stretch >= self.stretch / 2 {
            self.factor
        } else {
            1
        }
    }
}

impl Default for MockBackend {
    fn default() -> Self {
        Self {
            capabilities: capabilities(),
            wrong_group: None,
            drift: None,
        }
    }
}

impl MockBackend {
    /// A mock on a machine that slows down by `factor` for half of every
    /// stretch of `stretch` handshakes (across all its cells).
    pub fn drifting(stretch: u64, factor: u64) -> Self {
        Self {
            drift: Some(Arc::new(Drift::new(stretch, factor))),
            ..Self::default()
        }
    }

    /// A mock whose handshakes all report `group`, whatever was asked for.
    pub fn negotiating_group(group: Group) -> Self {
        Self {
            wrong_group: Some(group),
            ..Self::default()
        }
    }
}

impl Backend for MockBackend {
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
            version: "0".to_string(),
        }
    }

    fn capabilities(&self) -> &Capabilities {
        self.capabilities
    }

    fn primitives(&self) -> Box<dyn PrimitiveBackend> {
        Box::new(MockPrimitives)
    }

    fn handshaker(
        &self,
        scenario: &HandshakeScenario,
        _credentials: &Credentials,
    ) -> Result<Box<dyn Handshaker>> {
        Ok(Box::new(MockHandshaker {
            scenario: *scenario,
            wrong_group: self.wrong_group,
            drift: self.drift.clone(),
            count: 0,
        }))
    }

    /// Real bytes through a scrambling pipe, with fixed costs per byte by
    /// suite (the receiver a little dearer), and what a handshake of the
    /// scenario would report.
    fn bulk_pair(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
    ) -> Result<Box<dyn BulkPair>> {
        let (sender, receiver) = match scenario.aead {
            Aead::Aes128Gcm => (1.0, 1.2),
            Aead::Aes256Gcm => (1.25, 1.45),
            _ => (2.0, 2.1),
        };
        let negotiated = self
            .handshaker(scenario, credentials)?
            .handshake()?
            .negotiated;
        Ok(Box::new(MockBulkPair {
            negotiated,
            inner: PlainPair::fake(0x5a, sender, receiver),
        }))
    }
}

/// The mock's established pair: a scrambling plain pair that reports a handshake.
struct MockBulkPair {
    negotiated: Negotiated,
    inner: PlainPair,
}

impl BulkPair for MockBulkPair {
    fn negotiated(&self) -> Option<&Negotiated> {
        Some(&self.negotiated)
    }

    fn send(&mut self, data: &[u8]) -> Result<()> {
        self.inner.send(data)
    }

    fn receive(&mut self, out: &mut [u8]) -> Result<usize> {
        self.inner.receive(out)
    }

    fn fixed_ns_per_byte(&self) -> Option<(f64, f64)> {
        self.inner.fixed_ns_per_byte()
    }
}

struct MockHandshaker {
    scenario: HandshakeScenario,
    wrong_group: Option<Group>,
    drift: Option<Arc<Drift>>,
    count: u64,
}

/// Fake but plausible per-side costs: key exchange by its kind and size,
/// signature by certificate family.
fn mock_cost_ns(scenario: &HandshakeScenario) -> (u64, u64) {
    let kx = match scenario.group.kind() {
        KxKind::RsaKeyTransport => 20_000,
        KxKind::Ffdh { bits } => u64::from(bits) * 100,
        KxKind::Ecdh => 50_000,
        KxKind::Kem => 40_000,
    };
    let signature = match scenario.cert.family() {
        crate::scenario::SignatureFamily::Rsa => 600_000,
        _ => 30_000,
    };
    (100_000 + kx + signature / 10, 150_000 + kx + signature)
}

/// What the mock's sides allocate per handshake (its counted measures are
/// known exactly): the client keeps [`MOCK_CLIENT_KEPT_BYTES`] for the
/// connection and uses [`MOCK_CLIENT_SCRATCH_BYTES`] more for a moment; the
/// server keeps [`MOCK_SERVER_KEPT_BYTES`].
pub const MOCK_CLIENT_KEPT_BYTES: usize = 1_000;
pub const MOCK_CLIENT_SCRATCH_BYTES: usize = 4_096;
pub const MOCK_SERVER_KEPT_BYTES: usize = 3_000;

/// Work the compiler cannot drop: `rounds` rounds of a multiply and xor.
fn busy(rounds: u64) -> u64 {
    (0..rounds).fold(1u64, |a, i| std::hint::black_box(a.wrapping_mul(31) ^ i))
}

/// Rounds of [`busy`] work in the client's and the server's turns: the
/// server's are three times the client's, so counted instructions have a
/// known ratio.
pub const MOCK_BUSY_ROUNDS: (u64, u64) = (2_000, 6_000);

impl MockHandshaker {
    /// The mock's two turns, with real allocations and real work for the
    /// counted measures; the clocks' figures are the fake ones.
    fn turns(&self) {
        let mut turns = Turns::start(CpuReadings::EveryTurn);
        turns.begin(Side::Client);
        let client_state = std::hint::black_box(vec![1u8; MOCK_CLIENT_KEPT_BYTES]);
        drop(std::hint::black_box(vec![2u8; MOCK_CLIENT_SCRATCH_BYTES]));
        busy(MOCK_BUSY_ROUNDS.0);
        turns.ended(Side::Client);
        turns.begin(Side::Server);
        let server_state = std::hint::black_box(vec![3u8; MOCK_SERVER_KEPT_BYTES]);
        busy(MOCK_BUSY_ROUNDS.1);
        turns.ended(Side::Server);
        turns.finish();
        drop((client_state, server_state));
    }
}

/// The mock's key shares on the wire, client's and server's, in bytes.
fn mock_key_shares(group: Group) -> (usize, usize) {
    match group {
        Group::X25519Mlkem768 => (32 + 1_184, 32 + 1_088),
        Group::Mlkem768 => (1_184, 1_088),
        Group::RsaKeyTransport => (256, 0),
        other => match other.kind() {
            KxKind::Ffdh { bits } => (bits as usize / 8, bits as usize / 8),
            KxKind::Kem => (800, 768),
            _ => (32, 32),
        },
    }
}

/// One TLS record of `body_bytes` of `content` (22 handshake, 20
/// change_cipher_spec, 23 application data).
fn mock_record(content: u8, body_bytes: usize) -> Vec<u8> {
    let mut record = vec![content, 3, 3];
    record.extend_from_slice(&(body_bytes as u16).to_be_bytes());
    record.resize(5 + body_bytes, 0);
    record
}

impl MockHandshaker {
    /// The mock's handshake as it would cross the wire, while the wire tap
    /// records: its flights of TLS records (fixed sizes from the key
    /// shares and the certificate), TLS 1.3 in one round trip, TLS 1.2 in
    /// two (one when resumed).
    fn wire_turns(&self) -> Result<()> {
        use std::io::{Read, Write};
        let scenario = &self.scenario;
        let (client_share, server_share) = mock_key_shares(scenario.group);
        let resumed = scenario.resumption.is_on();
        let certificate = if resumed {
            0
        } else {
            400 * usize::from(scenario.chain_depth)
        };
        let pipe = crate::transport::memory::Pipe::default();
        let (mut client, mut server) = (pipe.client_end(), pipe.server_end());
        let mut turns = Turns::start(CpuReadings::EveryTurn);
        let drain = |end: &mut crate::transport::memory::PipeEnd| {
            let mut buffer = [0u8; 4096];
            while end.read(&mut buffer).is_ok() {}
        };
        let mut flight = |turn: Side, records: &[Vec<u8>], done: bool| -> Result<()> {
            turns.begin(turn);
            let end = match turn {
                Side::Client => &mut client,
                Side::Server => &mut server,
            };
            drain(end);
            for record in records {
                end.write_all(record)?;
            }
            if done {
                turns.done(turn);
            }
            turns.ended(turn);
            Ok(())
        };
        flight(Side::Client, &[mock_record(22, 200 + client_share)], false)?;
        if scenario.version.tls_rules() == TlsVersion::Tls13 {
            flight(
                Side::Server,
                &[
                    mock_record(22, 90 + server_share),
                    mock_record(23, 100 + certificate),
                ],
                false,
            )?;
            flight(Side::Client, &[mock_record(23, 53)], true)?;
            flight(Side::Server, &[], true)?;
        } else if resumed {
            flight(
                Side::Server,
                &[mock_record(22, 90), mock_record(20, 1), mock_record(22, 40)],
                false,
            )?;
            flight(
                Side::Client,
                &[mock_record(20, 1), mock_record(22, 40)],
                true,
            )?;
            flight(Side::Server, &[], true)?;
        } else {
            flight(
                Side::Server,
                &[
                    mock_record(22, 90),
                    mock_record(22, certificate),
                    mock_record(22, 40 + server_share),
                    mock_record(22, 4),
                ],
                false,
            )?;
            flight(
                Side::Client,
                &[
                    mock_record(22, 4 + client_share),
                    mock_record(20, 1),
                    mock_record(22, 40),
                ],
                false,
            )?;
            flight(
                Side::Server,
                &[mock_record(20, 1), mock_record(22, 40)],
                true,
            )?;
            flight(Side::Client, &[], true)?;
        }
        Ok(())
    }
}

impl Handshaker for MockHandshaker {
    fn handshake(&mut self) -> Result<HandshakeSample> {
        self.count += 1;
        if crate::transport::tap::recording() {
            self.wire_turns()?;
        } else {
            self.turns();
        }
        let scenario = &self.scenario;
        let (client, server) = mock_cost_ns(scenario);
        // A small deterministic spread, so statistics have something to do.
        let jitter = (self.count * 7919) % 11 * 100;
        let slow = self.drift.as_ref().map_or(1, |d| d.next_factor());
        let (client, server) = (client * slow, server * slow);
        let group = self.wrong_group.unwrap_or(scenario.group);
        let resumed = scenario.resumption.is_on();
        let signed = !resumed && group != Group::RsaKeyTransport;
        Ok(HandshakeSample {
            client: SideTime {
                wall_ns: client + jitter,
                cpu_ns: client + jitter,
            },
            server: SideTime {
                wall_ns: server + jitter,
                cpu_ns: server + jitter,
            },
            wall_ns: client + server + 2 * jitter + 1_000,
            negotiated: Negotiated {
                version: scenario.version.protocol_name().to_string(),
                suite: scenario.suite_name().to_string(),
                group: (!(resumed && scenario.version.tls_rules() == TlsVersion::Tls12))
                    .then(|| group.id().to_string()),
                signature: signed
                    .then(|| scenario.cert.acceptable_schemes(scenario.version)[0].to_string()),
                resumed,
                alpn: scenario.version.required_alpn().map(str::to_string),
                early_data: scenario.resumption.sends_early_data(),
            },
            split_unsure: false,
        })
    }
}

/// Primitives that do a little fixed work, for testing the speed pipeline.
struct MockPrimitives;

impl PrimitiveBackend for MockPrimitives {
    fn id(&self) -> &'static str {
        DESCRIPTOR.name()
    }

    fn prepare(&self, row: &SpeedRow) -> Result<PreparedOperation, Unsupported> {
        if row.primitive.group() == Some(Group::X448) {
            return Err(Unsupported::new("mock has no X448"));
        }
        let work = 50 + row.size_bytes.unwrap_or(0) as u64 / 16;
        Ok(Box::new(move || {
            std::hint::black_box((0..work).fold(0u64, |a, b| a.wrapping_mul(31) ^ b));
            Ok(())
        }))
    }
}
