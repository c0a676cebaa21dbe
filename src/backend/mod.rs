//! TLS libraries behind small traits, and the one registry of backends.
//! Each library's folder holds its static [`BackendDescriptor`] (its id,
//! what it supports as data ([`Capabilities`], the transports included),
//! whether its CPU features can be masked, its profile symbols, whether its
//! crypto is counted apart, how to open it) and its code: a [`Backend`]
//! builds a [`Handshaker`] for a scenario (client and server over memory
//! buffers, each side timed), hands out an established [`BulkPair`] for
//! `bulk` and a [`TlsAcceptor`] for the embedded server, and offers its
//! primitives ([`PrimitiveBackend`]) for `speed` and the cost model.
//! [`REGISTRY`] lists the descriptors: adding a library is its name in the
//! vocabulary ([`BackendId`]), its folder (`pub mod` here) and one line
//! there.

pub mod client;
pub mod descriptor;
pub mod dimpl;
pub mod driver;
pub mod mock;
pub mod openssl;
pub mod plain;
pub mod probe;
pub mod rustls;
pub mod socket;
pub mod turns;
pub mod wolfssl;

use std::io::{Read, Write};
use std::sync::Arc;

use anyhow::Result;
use serde::Serialize;

use crate::certs::Credentials;
use crate::scenario::speed::SpeedRow;
/// The registry's ids are the vocabulary's: `scenario::BackendId`, opened here.
pub use crate::scenario::BackendId;
use crate::scenario::{
    BackendList, Group, HandshakeScenario, Named, ServerOffer, TlsVersion, Transport,
};
use crate::scenario::{Side, Subject};
pub use descriptor::{BackendDescriptor, BackendDetails, Capabilities, CpuMasking, SymbolPrefixes};
pub use turns::{CpuReadings, SideTimes, Turns};

/// The name and version of the library a row's subject ran on: a
/// backend's library, a server's (with its TLS library), an engine's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct LibraryInfo {
    /// Whose library this is: exported as `backend`, as it always was.
    #[serde(rename = "backend")]
    pub subject: Subject,
    pub library: String,
    pub version: String,
}

/// What one handshake negotiated, as reported by the client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Negotiated {
    /// "TLSv1.2", "TLSv1.3" or "DTLSv1.2".
    pub version: String,
    /// The IANA name of the suite.
    pub suite: String,
    /// The key exchange group id (see [`Group`]), `rsa` for key transport, or
    /// `None` if the handshake had no key exchange (TLS 1.2 resumption).
    pub group: Option<String>,
    /// The server's signature scheme (RFC 8446 name), `None` if the server did not sign.
    pub signature: Option<String>,
    pub resumed: bool,
    /// The ALPN protocol agreed on, `None` if none was (TLS and DTLS rows
    /// offer none; QUIC requires one). Checked when measured, not stored.
    #[serde(default)]
    pub alpn: Option<String>,
    /// True if and only if the client sent application data in its first
    /// flight (0-RTT) and the server accepted it. Checked when measured,
    /// not stored: a stored `0rtt` row reads back as accepted (it was, or
    /// it would not have been measured).
    #[serde(default)]
    pub early_data: bool,
}

/// Time one side spent inside its library's calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SideTime {
    /// Wall-clock time inside the calls.
    pub wall_ns: u64,
    /// The thread's CPU time inside the calls (`CLOCK_THREAD_CPUTIME_ID`):
    /// the wall time less any time the thread was not running.
    pub cpu_ns: u64,
}

/// The calling thread's CPU time, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec; the thread CPU clock always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// The time each side of one handshake spent and what it negotiated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandshakeSample {
    /// Time inside the client library's calls.
    pub client: SideTime,
    /// Time inside the server library's calls.
    pub server: SideTime,
    /// Time from creating the client connection to both sides being done.
    pub wall_ns: u64,
    pub negotiated: Negotiated,
    /// True if the split of CPU time between the sides is unsure (see
    /// [`SideTimes::split_unsure`]): the handshake is worth retaking with
    /// [`CpuReadings::EveryTurn`].
    pub split_unsure: bool,
}

impl HandshakeSample {
    /// The sample of a handshake whose sides took turns on this thread:
    /// each side's time as [`Turns`] split it.
    pub fn of_turns(times: SideTimes, wall_ns: u64, negotiated: Negotiated) -> Self {
        Self {
            client: times.client,
            server: times.server,
            wall_ns,
            negotiated,
            split_unsure: times.split_unsure,
        }
    }
}

/// Drives complete handshakes for one scenario, client and server in this thread.
pub trait Handshaker {
    /// Runs one handshake and returns its times and negotiated parameters.
    fn handshake(&mut self) -> Result<HandshakeSample>;

    /// When the following handshakes read the thread's CPU clock, for
    /// handshakers whose sides run in turns on this thread (see
    /// [`turns`]); until told, at every turn. Two threads read it around
    /// each side's calls, and other handshakers ignore this.
    fn read_cpu(&mut self, _readings: CpuReadings) {}
}

/// An established connection pair, client and server in this thread over
/// an in-memory transport, that carries application data from the sender
/// (the client) to the receiver (the server). Its handshake is done before
/// the pair is handed out and is never counted. `bulk` times each side's
/// calls and checks every byte that comes out; a datagram (DTLS) pair fits
/// the same three calls.
pub trait BulkPair {
    /// What the handshake negotiated, as the client reports it (`None` for
    /// a pair without a handshake).
    fn negotiated(&self) -> Option<&Negotiated>;

    /// The sender protects `data` as one application write and puts every
    /// record it makes on the transport.
    fn send(&mut self, data: &[u8]) -> Result<()>;

    /// The receiver takes records off the transport and writes their
    /// plaintext into `out` until `out` is full or the transport is empty;
    /// returns the bytes written (0: nothing was waiting).
    fn receive(&mut self, out: &mut [u8]) -> Result<usize>;

    /// Fixed CPU nanoseconds per byte charged to the sender and to the
    /// receiver instead of reading the clocks: only the mock backend's fake
    /// has them, so pipeline tests get deterministic figures.
    fn fixed_ns_per_byte(&self) -> Option<(f64, f64)> {
        None
    }

    /// The sender's and the receiver's ends apart, for a pair over a
    /// socket whose two sides must run in two threads (a blocking write
    /// waits for the peer to read); `None` for pairs that run in turns on
    /// one thread through [`Self::send`] and [`Self::receive`].
    fn ends(&mut self) -> Option<(&mut (dyn Write + Send), &mut (dyn Read + Send))> {
        None
    }
}

/// The socket one side of a handshake runs over when the two sides run
/// apart: TLS over TCP, DTLS over a UDP socket connected to the peer.
pub enum Carrier {
    Tcp(std::net::TcpStream),
    Udp(crate::transport::udp::Datagrams),
}

/// One side's part of a handshake that has just completed apart.
pub struct ApartHandshake {
    /// What the client negotiated (`None` on the server's side).
    pub negotiated: Option<Negotiated>,
    /// The established connection: dropping it closes it (kept until the
    /// peer is done too, so a close never cuts the peer's last flight).
    pub connection: Box<dyn ApartConnection>,
}

/// An established connection of a side run apart, kept while the peer
/// finishes its handshake.
pub trait ApartConnection: Send {
    /// Over datagrams, the socket to watch: the peer resends its last
    /// flight when ours was lost, and the library must answer it (TCP
    /// resends in the kernel: `None`).
    fn linger_fd(&self) -> Option<std::os::fd::RawFd> {
        None
    }

    /// Hands the library what waits on the socket, so it answers a
    /// resent flight; returns at once if nothing waits.
    fn answer(&mut self) -> Result<()> {
        Ok(())
    }
}

/// One side of a scenario's handshakes, the other side elsewhere (another
/// process, another host): `tlslab serve --handshakes` runs the server's,
/// the measuring client the client's.
pub trait ApartSide: Send {
    /// One complete handshake over `carrier`.
    fn handshake(&mut self, carrier: Carrier) -> Result<ApartHandshake>;
}

/// A TLS library that can run handshake scenarios.
pub trait Backend: Send + Sync {
    /// The stable id used on the command line and in the database ("openssl").
    fn id(&self) -> &'static str;

    /// What its rows measured: its library (natively; a generic-CPU
    /// child's rows say so themselves), or for a server under test driven
    /// as a backend (`handshake --server nginx`) the server.
    fn subject(&self) -> Subject;

    fn library(&self) -> LibraryInfo;

    fn capabilities(&self) -> &Capabilities;

    /// Builds a handshaker for a scenario this backend supports. For resumed
    /// scenarios it has already done the first, full handshake.
    fn handshaker(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
    ) -> Result<Box<dyn Handshaker>>;

    /// Why this backend cannot run a scenario, or `None` if it can.
    fn unsupported_reason(&self, scenario: &HandshakeScenario) -> Option<String> {
        self.capabilities().unsupported_reason(self.id(), scenario)
    }

    /// A client and a server of this scenario that have completed their
    /// handshake, ready to carry application data. A backend that cannot
    /// carry data says so with an [`Unsupported`] error.
    fn bulk_pair(
        &self,
        _scenario: &HandshakeScenario,
        _credentials: &Credentials,
    ) -> Result<Box<dyn BulkPair>> {
        Err(Unsupported::new(format!("{} cannot carry application data", self.id())).into())
    }

    /// One side (`side`) of this scenario's handshakes over sockets, the
    /// other side run apart; an [`Unsupported`] error if the backend cannot.
    fn apart(
        &self,
        _scenario: &HandshakeScenario,
        _credentials: &Credentials,
        _side: Side,
    ) -> Result<Box<dyn ApartSide>> {
        Err(Unsupported::new(format!("{} cannot run its sides apart", self.id())).into())
    }

    /// A QUIC client of this scenario for a server tlslab did not write
    /// (a real server under test) at `address` over UDP, offering `alpn`
    /// (the server's own protocol: HTTP/3's `h3`): each handshake a new
    /// connection, verified against the test chain, with the client's time
    /// alone (the sample's server side is zero: the caller reads the
    /// server's). An [`Unsupported`] error if the backend has none.
    fn quic_client(
        &self,
        _scenario: &HandshakeScenario,
        _credentials: &Credentials,
        _address: std::net::SocketAddr,
        _alpn: &'static str,
    ) -> Result<Box<dyn Handshaker>> {
        Err(Unsupported::new(format!(
            "{} has no QUIC client for a server of another library yet (its QUIC runs in process only)",
            self.id()
        ))
        .into())
    }

    /// The ALPN protocol a handshake of `scenario` must agree on: QUIC's
    /// own (tlslab's, see [`TlsVersion::required_alpn`]) for tlslab's two
    /// sides, a real server's (`h3`) where it is the server.
    fn alpn(&self, scenario: &HandshakeScenario) -> Option<&'static str> {
        scenario.version.required_alpn()
    }

    /// The library's primitives, measured by `speed` and charged by the cost model.
    fn primitives(&self) -> Box<dyn PrimitiveBackend>;

    /// This backend as the measuring client of `load` and `handshake
    /// --server` (see [`client`]), or `None` if it cannot be that client.
    fn measuring_client(&self) -> Option<Arc<dyn client::MeasuringClient>> {
        None
    }

    /// This backend with every crypto call counted and timed (the counted
    /// breakdown), if the library allows it.
    fn instrumented(&self) -> Option<Arc<dyn Backend>> {
        None
    }

    /// The TLS server of this backend for one scenario, on the
    /// instrumented provider where the library has one (every crypto call
    /// counted per category); an [`Unsupported`] error if it has none.
    fn acceptor(
        &self,
        _scenario: &HandshakeScenario,
        _credentials: &Credentials,
    ) -> Result<Arc<dyn TlsAcceptor>> {
        Err(no_server(self).into())
    }

    /// The TLS server of this backend offering several versions, groups,
    /// certificates (`chains`, one per certificate of the offer, in its
    /// order) and suites, in the offer's order of preference; on the
    /// instrumented provider where the library has one. An [`Unsupported`]
    /// error if it has none.
    fn offer_acceptor(
        &self,
        _offer: &ServerOffer,
        _chains: &[Arc<Credentials>],
    ) -> Result<Arc<dyn TlsAcceptor>> {
        Err(no_server(self).into())
    }

    /// Why this backend's server cannot hold `offer` as a whole although
    /// it can make each of its handshakes (OpenSSL holds one certificate
    /// per key type), or `None`.
    fn offer_conflict(&self, _offer: &ServerOffer) -> Option<String> {
        None
    }
}

/// Why `backend` has no TLS server for the embedded server to run, or
/// `None` if it has one: a library serves if and only if it speaks TLS
/// over TCP.
pub fn no_tls_server<B: Backend + ?Sized>(backend: &B) -> Option<String> {
    let transports = &backend.capabilities().transports;
    if transports.contains(&Transport::Tcp) {
        return None;
    }
    let spoken: Vec<&str> = transports.iter().map(|t| t.display()).collect();
    Some(format!(
        "{} runs over {} only: it has no TLS server over TCP",
        backend.id(),
        spoken.join(" and ")
    ))
}

/// The error of a backend without a TLS server.
fn no_server<B: Backend + ?Sized>(backend: &B) -> Unsupported {
    Unsupported::new(
        no_tls_server(backend).unwrap_or_else(|| format!("{} has no TLS server", backend.id())),
    )
}

/// A TLS server's half of one nonblocking TCP connection, driven by the
/// embedded HTTPS server's event loop (`tlslab serve`). No call blocks:
/// one that must wait for the socket fails with
/// [`std::io::ErrorKind::WouldBlock`] and is called again when the socket
/// is ready. After a fatal TLS error the session sends the library's alert
/// (what it queued) and nothing else: never close_notify.
pub trait ServerSession: Send {
    /// Moves the handshake on with what the socket holds and sends what
    /// the library made; Ok(true) once the handshake is complete, Ok(false)
    /// while it waits for the socket, an error when it failed (the alert
    /// sent, best effort).
    fn handshake(&mut self) -> std::io::Result<bool>;

    /// Reads plaintext: Ok(0) when the client closed the connection. After
    /// every read from the socket it sends what the library wants to write
    /// (a KeyUpdate reply, session tickets) without waiting for a response.
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize>;

    /// Hands plaintext to the library, which encrypts it and sends what the
    /// socket takes; returns how many bytes it took (at least one, or
    /// WouldBlock). A call after WouldBlock must pass the same bytes.
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize>;

    /// Sends what the library still holds: Ok(true) when nothing is left,
    /// Ok(false) when the socket is full.
    fn flush(&mut self) -> std::io::Result<bool>;

    /// Queues close_notify (then [`ServerSession::flush`] sends it); does
    /// nothing after a fatal error.
    fn close_notify(&mut self);

    /// True if and only if the handshake resumed a session.
    fn resumed(&self) -> bool;

    /// The TCP connection, for its descriptor and to shut it down.
    fn tcp(&self) -> &std::net::TcpStream;

    /// The application protocol ALPN chose (one of [`SERVER_ALPN`]), once
    /// the handshake is complete; None when the client offered none.
    fn alpn_protocol(&self) -> Option<&[u8]> {
        None
    }

    /// Wall time spent in the library's own calls on this connection
    /// (handshake processing, record protection; socket I/O not included),
    /// if the session drives the socket itself and can tell.
    fn library_ns(&self) -> Option<u64> {
        None
    }
}

/// The application protocols the embedded server offers by ALPN, in its
/// order of preference: HTTP/2, then HTTP/1.1 (as nginx's `listen ... ssl
/// http2`). A client that offers neither is refused; one that offers no
/// ALPN at all gets HTTP/1.1.
pub const SERVER_ALPN: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// A TLS server configured for one scenario (or one offer of several
/// versions, groups, certificates and suites): starts the server's side
/// of each accepted connection.
pub trait TlsAcceptor: Send + Sync {
    /// The server's session over `tcp`, a nonblocking socket just accepted.
    fn session(&self, tcp: std::net::TcpStream) -> Result<Box<dyn ServerSession>>;

    /// Does once, on the calling thread, what the library does on a
    /// thread's first connection only (aws-lc seeds a per-thread random
    /// generator, which takes tens of milliseconds of wall time), so a
    /// worker's figures describe its steady state.
    fn warm_up(&self) {}
}

/// A prepared operation: keys and buffers are made, each call does the work once.
pub type PreparedOperation = Box<dyn FnMut() -> Result<()>>;

/// A library whose primitives can be measured.
pub trait PrimitiveBackend {
    fn id(&self) -> &'static str;

    /// Prepares one row, or says why this library cannot do it.
    fn prepare(&self, row: &SpeedRow) -> Result<PreparedOperation, Unsupported>;
}

/// Why a backend cannot measure a row (or failed to set it up).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unsupported(pub String);

impl Unsupported {
    pub fn new(reason: impl Into<String>) -> Self {
        Self(reason.into())
    }
}

impl From<anyhow::Error> for Unsupported {
    fn from(error: anyhow::Error) -> Self {
        Self(format!("{error:#}"))
    }
}

/// The one registry: every library's descriptor, in the order backends
/// are listed (`tlslab list`, `all`, tables). A new library is one line here.
pub static REGISTRY: &[&BackendDescriptor] = &[
    &openssl::DESCRIPTOR,
    &rustls::AWS_LC_DESCRIPTOR,
    &rustls::RING_DESCRIPTOR,
    &dimpl::DESCRIPTOR,
    &wolfssl::DESCRIPTOR,
    &mock::DESCRIPTOR,
];

impl BackendId {
    /// This backend's descriptor in the [`REGISTRY`].
    pub fn descriptor(self) -> &'static BackendDescriptor {
        REGISTRY
            .iter()
            .find(|descriptor| descriptor.id == self)
            .unwrap_or_else(|| panic!("backend {} is not in the registry", self.id()))
    }

    /// The backend itself.
    pub fn open(self) -> Arc<dyn Backend> {
        (self.descriptor().open)()
    }
}

/// The descriptor of the backend whose id (not alias) is `id`, as rows
/// and [`Backend::id`] name it.
pub fn descriptor_by_id(id: &str) -> Option<&'static BackendDescriptor> {
    REGISTRY
        .iter()
        .copied()
        .find(|descriptor| descriptor.name() == id)
}

/// The listed descriptors, in the registry's order.
pub fn listed() -> impl Iterator<Item = &'static BackendDescriptor> {
    REGISTRY
        .iter()
        .copied()
        .filter(|descriptor| descriptor.listed)
}

/// The ids of the listed backends, in the registry's order: a slice of
/// [`ListedIds`], read from the [`REGISTRY`] on first use.
pub const BACKEND_IDS: ListedIds = ListedIds;

/// The ids of the listed backends ([`BACKEND_IDS`]): it derefs to a slice
/// and iterates like one, so it reads as the constant list it replaces.
#[derive(Debug, Clone, Copy)]
pub struct ListedIds;

impl std::ops::Deref for ListedIds {
    type Target = [&'static str];

    fn deref(&self) -> &[&'static str] {
        listed_ids()
    }
}

impl IntoIterator for ListedIds {
    type Item = &'static &'static str;
    type IntoIter = std::slice::Iter<'static, &'static str>;

    fn into_iter(self) -> Self::IntoIter {
        listed_ids().iter()
    }
}

/// The ids of the listed backends, collected once.
fn listed_ids() -> &'static [&'static str] {
    static IDS: std::sync::LazyLock<Vec<&'static str>> =
        std::sync::LazyLock::new(|| listed().map(BackendDescriptor::name).collect());
    &IDS
}

/// The backend with this id or alias. `mock` is accepted for testing the
/// pipeline but is never listed.
pub fn backend_by_id(id: &str) -> Result<Arc<dyn Backend>, crate::scenario::UnknownName> {
    let found: BackendId = crate::scenario::parse_name(id).map_err(|mut error| {
        error.valid = BACKEND_IDS.to_vec();
        error
    })?;
    Ok(found.open())
}

/// The backends of a list, each once; `all` means every real backend.
pub fn backends_from_list(list: &BackendList) -> Vec<Arc<dyn Backend>> {
    backends_running(list, None)
}

/// The backends of a list as [`backends_from_list`] gives them, but `all`
/// means every real backend that runs at least one of `protocols` (a
/// TLS-only matrix leaves out dimpl, a DTLS-only one rustls); a backend
/// named on its own stays, whatever it runs, so its rows say why they are
/// unsupported.
pub fn backends_running(
    list: &BackendList,
    protocols: Option<&[TlsVersion]>,
) -> Vec<Arc<dyn Backend>> {
    list.resolve()
        .into_iter()
        .map(|(id, named)| (id.open(), named))
        .filter(|(backend, named)| {
            *named
                || protocols.is_none_or(|protocols| {
                    protocols
                        .iter()
                        .any(|v| backend.capabilities().versions.contains(v))
                })
        })
        .map(|(backend, _)| backend)
        .collect()
}

/// Maps a library's group name to our id, keeping unknown names as they are.
pub(crate) fn canonical_group(name: &str) -> String {
    // Libraries report a group by one of its spellings in some case
    // ("X25519", "secp256r1"): compared as bytes first, as this runs
    // after every handshake.
    let same = |spelling: &str| spelling.eq_ignore_ascii_case(name);
    let exact = Group::ALL.iter().find(|group| {
        same(group.id()) || same(group.name()) || group.aliases().iter().any(|alias| same(alias))
    });
    if let Some(group) = exact {
        return group.id().to_string();
    }
    crate::scenario::parse_name::<Group>(name)
        .map(|group| group.id().to_string())
        .unwrap_or_else(|_| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libraries_group_names_map_to_our_ids() {
        for (library, ours) in [
            ("X25519", "x25519"),
            ("secp256r1", "p256"),
            ("X25519MLKEM768", "x25519mlkem768"),
            ("P-384", "p384"),
            ("ffdhe_2048", "ffdhe2048"),
            ("brainpoolP256r1", "brainpoolP256r1"),
        ] {
            assert_eq!(canonical_group(library), ours, "{library}");
        }
    }

    #[test]
    fn every_backend_id_has_one_descriptor_and_all_lists_the_listed_ones() {
        for id in BackendId::ALL {
            let found = REGISTRY.iter().filter(|d| d.id == *id).count();
            assert_eq!(found, 1, "{}", id.id());
            assert_eq!(id.descriptor().name(), id.id());
        }
        let all: Vec<&str> = backends_from_list(&BackendList::all())
            .iter()
            .map(|backend| backend.id())
            .collect();
        assert_eq!(all, BACKEND_IDS.to_vec());
        assert!(!all.contains(&"mock"), "{all:?}");
        assert_eq!(descriptor_by_id("mock").map(|d| d.listed), Some(false));
        assert!(
            descriptor_by_id("ring").is_none(),
            "aliases are not row ids"
        );
    }

    #[test]
    fn a_backend_without_tcp_has_no_tls_server_and_says_why() {
        let dimpl = BackendId::Dimpl.open();
        assert_eq!(
            no_tls_server(dimpl.as_ref()).as_deref(),
            Some("dimpl runs over memory and UDP only: it has no TLS server over TCP")
        );
        assert!(no_tls_server(BackendId::Openssl.open().as_ref()).is_none());
    }
}
