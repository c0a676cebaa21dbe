//! tlslab's OpenSSL client against a server in another process (nginx),
//! over TCP on loopback: one verified handshake per call, then a clean
//! close that waits for the server to close too, so the server's work for
//! the connection is over when the call returns.

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use openssl::ssl::{
    ErrorCode, HandshakeError, Ssl, SslContext, SslRef, SslSession, SslSessionRef, SslStream,
};
use openssl::x509::X509VerifyResult;

use super::{client_context, negotiated};
use crate::backend::{thread_cpu_ns, Negotiated, SideTime};
use crate::certs::{Credentials, SERVER_NAME};
use crate::scenario::HandshakeScenario;

/// How long a step of a remote handshake may block before it counts as hung.
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a client's handshake failed, in words: when the client could not
/// verify the server's certificate, that, with OpenSSL's reason, and the
/// likely cause (a root with the right name but another key otherwise
/// reads "EVP_DigestVerifyFinal: provider signature failure"); else
/// OpenSSL's `error`.
pub fn handshake_failure(ssl: &SslRef, error: &dyn std::fmt::Display) -> String {
    let verified = ssl.verify_result();
    if verified == X509VerifyResult::OK {
        return format!("TLS handshake failed: {error}");
    }
    format!(
        "certificate verification failed: {} (is the root the client trusts, --ca-file or tlslab's test root, the one that signed the server's chain?)",
        verified.error_string()
    )
}

/// The message of a failed `Ssl::connect`, as [`handshake_failure`] says it.
fn connect_failure<S: std::fmt::Debug>(error: HandshakeError<S>) -> String {
    match &error {
        HandshakeError::Failure(mid) => handshake_failure(mid.ssl(), mid.error()),
        _ => format!("TLS handshake failed: {error}"),
    }
}

/// An OpenSSL client configured for one scenario, aimed at one address.
/// For a resumed scenario it keeps the session of its last connection and
/// offers it on the next one (its first handshake is therefore full).
pub struct RemoteClient {
    context: SslContext,
    address: SocketAddr,
    resume: bool,
    session: Option<SslSession>,
}

/// One handshake with a remote server, as the client saw it.
pub struct RemoteHandshake {
    /// The client thread's wall and CPU time from connecting to the end of
    /// the handshake (the TCP connect and the kernel's share included).
    pub client: SideTime,
    /// From connecting to the server having closed the connection.
    pub wall_ns: u64,
    pub negotiated: Negotiated,
}

/// A client connection over `tcp`, handshaken and verified against the
/// test chain's host name, with `timeout` on every read and write.
pub fn connect_tls(
    context: &SslContext,
    tcp: TcpStream,
    timeout: Duration,
) -> Result<SslStream<TcpStream>> {
    connect_tls_resuming(context, tcp, timeout, SERVER_NAME, None)
}

/// As [`connect_tls`], offering `session` (a TLS 1.2 session id or a TLS
/// 1.3 ticket from an earlier connection made with the same `context`) for
/// resumption; whether the server took it is `SslRef::session_reused()`.
/// The server's certificate must be for `server_name` (see [`client_ssl`]).
pub fn connect_tls_resuming(
    context: &SslContext,
    tcp: TcpStream,
    timeout: Duration,
    server_name: &str,
    session: Option<&SslSessionRef>,
) -> Result<SslStream<TcpStream>> {
    tcp.set_nodelay(true)?;
    tcp.set_read_timeout(Some(timeout))?;
    tcp.set_write_timeout(Some(timeout))?;
    client_ssl(context, server_name, session)?
        .connect(tcp)
        .map_err(|e| anyhow!(connect_failure(e)))
}

/// A client connection's state before its handshake: verifying that the
/// server's certificate is for `server_name` (a host name, sent as SNI, or
/// an IP address, checked against the certificate's addresses), offering
/// `session` for resumption if given (a session from an earlier connection
/// made with the same `context`).
pub fn client_ssl(
    context: &SslContext,
    server_name: &str,
    session: Option<&SslSessionRef>,
) -> Result<Ssl> {
    let mut ssl = Ssl::new(context)?;
    match server_name.parse::<std::net::IpAddr>() {
        Ok(ip) => ssl.param_mut().set_ip(ip)?,
        Err(_) => {
            ssl.set_hostname(server_name)?;
            ssl.param_mut().set_host(server_name)?;
        }
    }
    if let Some(session) = session {
        // SAFETY: the callers' sessions come from connections made with
        // this same context, as set_session requires.
        unsafe { ssl.set_session(session)? };
    }
    Ok(ssl)
}

impl RemoteClient {
    /// The client's context, for other workloads that connect alike.
    pub fn context(&self) -> &SslContext {
        &self.context
    }

    pub fn new(
        scenario: &HandshakeScenario,
        credentials: &Credentials,
        address: SocketAddr,
    ) -> Result<Self> {
        Ok(Self {
            context: client_context(scenario, credentials)
                .context("configuring the OpenSSL client")?,
            address,
            resume: scenario.resumption.is_on(),
            session: None,
        })
    }

    /// Connects, handshakes (offering the last connection's session when
    /// resuming), reads what was negotiated, sends close_notify and waits
    /// for the server to close its side; a TLS 1.3 server's tickets arrive
    /// meanwhile.
    pub fn handshake(&mut self) -> Result<RemoteHandshake> {
        let start = Instant::now();
        let cpu_start = thread_cpu_ns();
        let tcp = TcpStream::connect_timeout(&self.address, IO_TIMEOUT)
            .with_context(|| format!("connecting to {}", self.address))?;
        tcp.set_nodelay(true)?;
        tcp.set_read_timeout(Some(IO_TIMEOUT))?;
        tcp.set_write_timeout(Some(IO_TIMEOUT))?;
        let mut ssl = Ssl::new(&self.context)?;
        ssl.set_hostname(SERVER_NAME)?;
        ssl.param_mut().set_host(SERVER_NAME)?;
        if let Some(session) = &self.session {
            // SAFETY: the session comes from a connection of this same context.
            unsafe { ssl.set_session(session)? };
        }
        let mut stream = ssl
            .connect(tcp)
            .map_err(|e| anyhow!("handshake with {}: {}", self.address, connect_failure(e)))?;
        let client = SideTime {
            wall_ns: start.elapsed().as_nanos() as u64,
            cpu_ns: thread_cpu_ns().saturating_sub(cpu_start),
        };
        let negotiated = negotiated(stream.ssl())?;
        // close_notify, then wait for the server's close (EOF or its
        // close_notify): its work for this connection is then done.
        let _ = stream.shutdown();
        let mut buffer = [0u8; 256];
        loop {
            match stream.ssl_read(&mut buffer) {
                Ok(0) => break,
                Ok(_) => continue,
                Err(error) if error.code() == ErrorCode::ZERO_RETURN => break,
                Err(error) if error.code() == ErrorCode::SYSCALL => break,
                Err(error) => return Err(anyhow!("closing the connection: {error}")),
            }
        }
        let _ = stream.get_mut().read(&mut buffer);
        if self.resume {
            self.session = stream.ssl().session().map(|s| s.to_owned());
            if self.session.is_none() {
                return Err(anyhow!(
                    "{} left no session to resume after the handshake",
                    self.address
                ));
            }
        }
        Ok(RemoteHandshake {
            client,
            wall_ns: start.elapsed().as_nanos() as u64,
            negotiated,
        })
    }
}
