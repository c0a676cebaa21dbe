//! Handshakes whose server runs elsewhere: on another host (`tlslab
//! serve --handshakes` on a small device, `tlslab handshake --remote` on
//! the measuring machine), or in the far namespace of an emulated link.
//! The measuring side drives everything over a control connection (one
//! JSON message a line): for each row it sends the backend, the scenario
//! and the test chain; for each handshake the server opens a socket
//! (TCP for TLS, UDP for DTLS), says its port, runs its side of the
//! handshake and reports the CPU and wall time it spent, so the client's
//! rows get the server's columns as in process. The control connection is
//! plain: it carries tlslab's generated test chain with its keys, never
//! real ones. The server's side is in [`server`].

mod server;

pub use server::serve_control;

use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::backend::{
    thread_cpu_ns, ApartConnection, ApartSide, Backend, Capabilities, Carrier, HandshakeSample,
    Handshaker, LibraryInfo, PrimitiveBackend, SideTime,
};
use crate::certs::{CertChain, Credentials};
use crate::host::HostInfo;
use crate::scenario::Side;
use crate::scenario::{parse_name, HandshakeScenario, Named};
use crate::transport::udp::Datagrams;
use crate::transport::IO_TIMEOUT;

/// The protocol's version: both ends must speak the same.
pub const PROTOCOL: u32 = 1;

/// How long the client waits for a report after its side is done or failed
/// (the server gives up on a silent peer after [`IO_TIMEOUT`]).
const REPORT_TIMEOUT: Duration = Duration::from_secs(15);

/// A test chain as it crosses the control connection.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SentCredentials {
    kind: String,
    depth: u8,
    root_der: Vec<u8>,
    server: (Vec<Vec<u8>>, Vec<u8>),
    client: (Vec<Vec<u8>>, Vec<u8>),
}

impl SentCredentials {
    fn of(credentials: &Credentials) -> Self {
        let chain = |c: &CertChain| (c.chain_der.clone(), c.key_pkcs8_der.clone());
        Self {
            kind: credentials.kind.id().to_string(),
            depth: credentials.depth,
            root_der: credentials.root_der.clone(),
            server: chain(&credentials.server),
            client: chain(&credentials.client),
        }
    }

    fn credentials(self) -> Result<Credentials> {
        let chain = |(chain_der, key_pkcs8_der): (Vec<Vec<u8>>, Vec<u8>)| CertChain {
            chain_der,
            key_pkcs8_der,
        };
        Ok(Credentials {
            kind: parse_name(&self.kind)?,
            depth: self.depth,
            root_der: self.root_der,
            server: chain(self.server),
            client: chain(self.client),
        })
    }
}

/// What the measuring client asks.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    Hello {
        protocol: u32,
    },
    /// Make the server's side of a row (its contexts, certificates).
    Prepare {
        cell: u64,
        backend: String,
        scenario: HandshakeScenario,
        credentials: Box<SentCredentials>,
    },
    /// Open a socket for one handshake of a prepared row and run it.
    Handshake {
        cell: u64,
    },
    /// The client's side of the handshake is over (done or failed).
    Done,
    Forget {
        cell: u64,
    },
    Bye,
}

/// What the server answers.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    Hello {
        protocol: u32,
        host: Box<HostInfo>,
        libraries: Vec<LibraryInfo>,
    },
    Prepared,
    /// The port the next handshake's socket waits on.
    Listening {
        port: u16,
    },
    /// The server's side of the handshake is done: its thread's CPU and
    /// wall time from taking the connection to the end of its handshake.
    Served {
        cpu_ns: u64,
        wall_ns: u64,
    },
    Failed {
        reason: String,
    },
}

/// A control connection: a line of JSON each way.
pub struct Control {
    reader: BufReader<Box<dyn std::io::Read + Send>>,
    /// The reader's descriptor, to wait on it beside a data socket.
    reader_fd: RawFd,
    writer: Box<dyn Write + Send>,
    /// What to say of the peer in errors ("the tlslab server at ...").
    peer: String,
    /// Set: give up waiting (see [`Self::stopping_on`]).
    stop: Option<Arc<AtomicBool>>,
}

/// What [`Control::wait`] saw first.
enum Ready {
    /// A message on the control connection.
    Message,
    /// Something to read on the socket.
    Socket,
    /// Neither, within the wait.
    Neither,
}

impl Control {
    pub fn new(
        reader: impl std::io::Read + AsRawFd + Send + 'static,
        writer: impl Write + Send + 'static,
        peer: impl Into<String>,
    ) -> Self {
        Self {
            reader_fd: reader.as_raw_fd(),
            reader: BufReader::new(Box::new(reader)),
            writer: Box::new(writer),
            peer: peer.into(),
            stop: None,
        }
    }

    /// Keeps `connection` answering its peer (a resent DTLS flight) until
    /// a message waits on this connection, or `limit` has passed.
    fn linger(&mut self, connection: &mut dyn ApartConnection, limit: Duration) -> Result<()> {
        let until = Instant::now() + limit;
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            match self.wait(connection.linger_fd(), left.min(Duration::from_millis(100)))? {
                Ready::Message => return Ok(()),
                Ready::Socket => connection.answer()?,
                Ready::Neither => {}
            }
        }
        Ok(())
    }

    /// Waits at most `wait` for a message on this connection or, if given,
    /// something to read on `socket`; says which came first.
    fn wait(&mut self, socket: Option<RawFd>, wait: Duration) -> Result<Ready> {
        if !self.reader.buffer().is_empty() {
            return Ok(Ready::Message);
        }
        let mut fds = vec![libc::pollfd {
            fd: self.reader_fd,
            events: libc::POLLIN,
            revents: 0,
        }];
        fds.extend(socket.map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        }));
        let millis = wait.as_millis().min(i32::MAX as u128) as libc::c_int;
        // SAFETY: valid pollfds for the duration of the call.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, millis) };
        if ready < 0 {
            let error = std::io::Error::last_os_error();
            if error.kind() == std::io::ErrorKind::Interrupted {
                return Ok(Ready::Neither);
            }
            return Err(error.into());
        }
        Ok(if fds[0].revents != 0 {
            Ready::Message
        } else if fds.get(1).is_some_and(|fd| fd.revents != 0) {
            Ready::Socket
        } else {
            Ready::Neither
        })
    }

    pub fn send<T: Serialize>(&mut self, message: &T) -> Result<()> {
        let mut line = serde_json::to_vec(message)?;
        line.push(b'\n');
        self.writer
            .write_all(&line)
            .and_then(|()| self.writer.flush())
            .with_context(|| format!("writing to {}", self.peer))
    }

    /// Reads with a time limit per wait, giving up (as if the peer had
    /// closed) once `stop` is set: a server that Ctrl-C must stop.
    pub fn stopping_on(mut self, stop: Arc<AtomicBool>) -> Self {
        self.stop = Some(stop);
        self
    }

    /// The next message, or `None` when the peer closed the connection.
    pub fn receive<T: for<'de> Deserialize<'de>>(&mut self) -> Result<Option<T>> {
        let mut line = String::new();
        loop {
            match self.reader.read_line(&mut line) {
                Ok(0) if line.is_empty() => return Ok(None),
                Ok(_) => break,
                Err(error)
                    if matches!(
                        error.kind(),
                        std::io::ErrorKind::WouldBlock
                            | std::io::ErrorKind::TimedOut
                            | std::io::ErrorKind::Interrupted
                    ) && self.stop.is_some() =>
                {
                    if self.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst)) {
                        return Ok(None);
                    }
                }
                Err(error) => {
                    return Err(error).with_context(|| format!("reading from {}", self.peer))
                }
            }
        }
        serde_json::from_str(&line)
            .map(Some)
            .with_context(|| format!("{} sent something that is not tlslab's protocol", self.peer))
    }

    /// The reply to a request, failing on a closed connection or a
    /// [`Reply::Failed`].
    fn reply(&mut self) -> Result<Reply> {
        match self.receive::<Reply>()? {
            None => bail!("{} closed the control connection", self.peer),
            Some(Reply::Failed { reason }) => Err(anyhow!("server: {reason}")),
            Some(reply) => Ok(reply),
        }
    }
}

/// The measuring client's end: the server's host and libraries, and the
/// control connection every row's handshakes share.
pub struct Remote {
    pub address: IpAddr,
    pub host: HostInfo,
    pub libraries: Vec<LibraryInfo>,
    control: Mutex<Control>,
    next_cell: AtomicU64,
}

impl Remote {
    /// Greets the server on `control`; its data sockets are at `address`.
    pub fn greet(mut control: Control, address: IpAddr) -> Result<Arc<Self>> {
        control.send(&Request::Hello { protocol: PROTOCOL })?;
        let (host, libraries) = match control.reply()? {
            Reply::Hello {
                protocol,
                host,
                libraries,
            } if protocol == PROTOCOL => (*host, libraries),
            Reply::Hello { protocol, .. } => bail!(
                "{} speaks protocol {protocol}, this tlslab {PROTOCOL}: run the same version on both",
                control.peer
            ),
            other => bail!("{} answered {other:?} to a greeting", control.peer),
        };
        Ok(Arc::new(Self {
            address,
            host,
            libraries,
            control: Mutex::new(control),
            next_cell: AtomicU64::new(0),
        }))
    }

    /// Connects to `tlslab serve --handshakes` at `target` (HOST:PORT).
    pub fn connect(target: &str) -> Result<Arc<Self>> {
        use std::net::ToSocketAddrs;
        let address: SocketAddr = target
            .to_socket_addrs()
            .with_context(|| format!("cannot resolve {target}"))?
            .next()
            .with_context(|| format!("{target} resolves to no address"))?;
        let stream = TcpStream::connect_timeout(&address, IO_TIMEOUT).with_context(|| {
            format!("cannot reach a tlslab server at {address} (is `tlslab serve --handshakes` running there?)")
        })?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(REPORT_TIMEOUT))?;
        let reader = stream.try_clone()?;
        Self::greet(
            Control::new(reader, stream, format!("the tlslab server at {address}")),
            address.ip(),
        )
    }

    fn control(&self) -> std::sync::MutexGuard<'_, Control> {
        self.control.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Says goodbye (the server waits for its next client).
    pub fn close(&self) {
        let _ = self.control().send(&Request::Bye);
    }
}

/// A backend whose rows handshake with a remote server: the client side
/// is this process's library, the server side the same library there.
pub struct RemoteBackend {
    local: Arc<dyn Backend>,
    remote: Arc<Remote>,
}

impl RemoteBackend {
    pub fn new(local: Arc<dyn Backend>, remote: Arc<Remote>) -> Self {
        Self { local, remote }
    }
}

impl Backend for RemoteBackend {
    fn id(&self) -> &'static str {
        self.local.id()
    }

    fn subject(&self) -> crate::scenario::Subject {
        self.local.subject()
    }

    fn library(&self) -> LibraryInfo {
        self.local.library()
    }

    fn capabilities(&self) -> &Capabilities {
        self.local.capabilities()
    }

    fn unsupported_reason(&self, scenario: &HandshakeScenario) -> Option<String> {
        if let Some(reason) = self.local.unsupported_reason(scenario) {
            return Some(reason);
        }
        if !self
            .remote
            .libraries
            .iter()
            .any(|l| l.subject == self.subject())
        {
            return Some(format!("the server has no {} backend", self.id()));
        }
        scenario
            .resumption
            .is_on()
            .then(|| "resumed handshakes are not measured against a server elsewhere yet (each connection would need the last one's session)".to_string())
    }

    fn handshaker(
        &self,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
    ) -> Result<Box<dyn Handshaker>> {
        let cell = self.remote.next_cell.fetch_add(1, Ordering::Relaxed);
        {
            let mut control = self.remote.control();
            control.send(&Request::Prepare {
                cell,
                backend: self.id().to_string(),
                scenario: *scenario,
                credentials: Box::new(SentCredentials::of(credentials)),
            })?;
            match control.reply()? {
                Reply::Prepared => {}
                other => bail!("the server answered {other:?} to a row"),
            }
        }
        Ok(Box::new(RemoteHandshaker {
            cell,
            datagrams: scenario.version.is_datagram(),
            client: self.local.apart(scenario, credentials, Side::Client)?,
            remote: Arc::clone(&self.remote),
        }))
    }

    fn primitives(&self) -> Box<dyn PrimitiveBackend> {
        self.local.primitives()
    }
}

/// One row's handshakes with the remote server.
struct RemoteHandshaker {
    cell: u64,
    datagrams: bool,
    client: Box<dyn ApartSide>,
    remote: Arc<Remote>,
}

impl Drop for RemoteHandshaker {
    fn drop(&mut self) {
        let _ = self
            .remote
            .control()
            .send(&Request::Forget { cell: self.cell });
    }
}

impl RemoteHandshaker {
    /// This side's socket to the server's `port`.
    fn carrier(&self, port: u16) -> Result<Carrier> {
        let server = SocketAddr::new(self.remote.address, port);
        if self.datagrams {
            let any: IpAddr = match server {
                SocketAddr::V4(_) => std::net::Ipv4Addr::UNSPECIFIED.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::UNSPECIFIED.into(),
            };
            let socket = UdpSocket::bind((any, 0)).context("cannot open a UDP socket")?;
            socket
                .connect(server)
                .with_context(|| format!("cannot connect UDP to {server}"))?;
            socket.set_read_timeout(Some(IO_TIMEOUT))?;
            socket.set_write_timeout(Some(IO_TIMEOUT))?;
            return Ok(Carrier::Udp(Datagrams::new(socket)));
        }
        let stream = TcpStream::connect_timeout(&server, IO_TIMEOUT)
            .with_context(|| format!("cannot connect TCP to {server}"))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(IO_TIMEOUT))?;
        stream.set_write_timeout(Some(IO_TIMEOUT))?;
        Ok(Carrier::Tcp(stream))
    }
}

impl Handshaker for RemoteHandshaker {
    /// One handshake: the client's time runs from its connect() until its
    /// library is done (TCP's handshake included); the server's is what
    /// it reports. The connection stays open until the report is in.
    fn handshake(&mut self) -> Result<HandshakeSample> {
        let remote = Arc::clone(&self.remote);
        let mut control = remote.control();
        control.send(&Request::Handshake { cell: self.cell })?;
        let port = match control.reply()? {
            Reply::Listening { port } => port,
            other => bail!("the server answered {other:?} to a handshake"),
        };
        let (cpu, wall) = (thread_cpu_ns(), Instant::now());
        let result = self
            .carrier(port)
            .and_then(|carrier| self.client.handshake(carrier));
        let client = SideTime {
            wall_ns: wall.elapsed().as_nanos() as u64,
            cpu_ns: thread_cpu_ns().saturating_sub(cpu),
        };
        // The server reports either way (it gives up on a silent client);
        // until then the connection answers a resent flight.
        control.send(&Request::Done)?;
        let mut apart = match result {
            Ok(apart) => apart,
            Err(error) => {
                // The server's side of the story, if it has one.
                let error = match control.receive::<Reply>() {
                    Ok(Some(Reply::Failed { reason })) => {
                        error.context(format!("client (the server says: {reason})"))
                    }
                    _ => error.context("client"),
                };
                return Err(error);
            }
        };
        control.linger(apart.connection.as_mut(), REPORT_TIMEOUT)?;
        let (server_cpu, server_wall) = match control.reply().context("server")? {
            Reply::Served { cpu_ns, wall_ns } => (cpu_ns, wall_ns),
            other => bail!("the server answered {other:?} after a handshake"),
        };
        drop(apart.connection);
        Ok(HandshakeSample {
            client,
            server: SideTime {
                wall_ns: server_wall,
                cpu_ns: server_cpu,
            },
            wall_ns: client.wall_ns,
            negotiated: apart
                .negotiated
                .context("the client side reported no negotiation")?,
            split_unsure: false,
        })
    }
}
