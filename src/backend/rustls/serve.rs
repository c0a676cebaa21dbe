//! rustls as the embedded HTTPS server's TLS. tlslab drives the socket
//! itself (`read_tls`, `write_tls`) and times only rustls's own calls
//! (`process_new_packets`, plaintext in and out), so a connection can tell
//! how long the library worked apart from the kernel's socket I/O; the
//! crypto inside those calls is counted by the instrumented provider.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use rustls::{HandshakeKind, ServerConfig, ServerConnection};

use super::instrument::{self, Side};
use super::RustlsBackend;
use crate::backend::{ServerStream, TlsAcceptor};
use crate::certs::Credentials;
use crate::scenario::HandshakeScenario;

/// The server configuration of one scenario.
pub struct RustlsAcceptor {
    config: Arc<ServerConfig>,
}

impl RustlsAcceptor {
    pub fn new(
        backend: &RustlsBackend,
        scenario: &HandshakeScenario,
        credentials: &Credentials,
    ) -> Result<Self> {
        Ok(Self {
            config: backend
                .server_config(scenario, credentials)
                .context("configuring the rustls server")?,
        })
    }
}

impl TlsAcceptor for RustlsAcceptor {
    fn accept(
        &self,
        tcp: TcpStream,
        give_up: &mut dyn FnMut() -> bool,
    ) -> Result<Box<dyn ServerStream>> {
        // Counted calls on this thread belong to the server.
        instrument::set_side(Side::Server);
        let start = Instant::now();
        let connection = ServerConnection::new(Arc::clone(&self.config))?;
        let mut stream = RustlsServerStream {
            connection,
            tcp,
            library_ns: start.elapsed().as_nanos() as u64,
        };
        while stream.connection.is_handshaking() {
            stream.send_tls()?;
            if !stream.connection.is_handshaking() {
                break;
            }
            match stream.receive_tls() {
                Ok(0) => bail!("the client closed the connection during the handshake"),
                Ok(_) => {}
                // A read timed out: the client has not sent its next flight yet.
                Err(error)
                    if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
                {
                    if give_up() {
                        bail!("TLS handshake abandoned: the client sent nothing in time");
                    }
                }
                Err(error) => {
                    // Send the alert rustls queued, if any.
                    let _ = stream.send_tls();
                    bail!("TLS handshake failed: {error}");
                }
            }
        }
        stream.send_tls()?;
        Ok(Box::new(stream))
    }

    fn warm_up(&self) {
        let mut bytes = [0u8; 32];
        let _ = self.config.crypto_provider().secure_random.fill(&mut bytes);
    }
}

/// One connection: rustls's state and the socket it drives.
struct RustlsServerStream {
    connection: ServerConnection,
    tcp: TcpStream,
    library_ns: u64,
}

impl RustlsServerStream {
    /// Runs `f` on the connection, its wall time charged to the library.
    fn timed<T>(&mut self, f: impl FnOnce(&mut ServerConnection) -> T) -> T {
        let start = Instant::now();
        let value = f(&mut self.connection);
        self.library_ns += start.elapsed().as_nanos() as u64;
        value
    }

    /// Writes every record rustls has made to the socket.
    fn send_tls(&mut self) -> std::io::Result<()> {
        while self.connection.wants_write() {
            self.connection.write_tls(&mut self.tcp)?;
        }
        Ok(())
    }

    /// Reads records from the socket and processes them; returns the bytes
    /// read (0: the client closed the connection).
    fn receive_tls(&mut self) -> std::io::Result<usize> {
        let read = self.connection.read_tls(&mut self.tcp)?;
        if read > 0 {
            self.timed(|c| c.process_new_packets())
                .map_err(|e| std::io::Error::new(ErrorKind::InvalidData, e))?;
        }
        Ok(read)
    }
}

impl Read for RustlsServerStream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            match self.timed(|c| c.reader().read(buf)) {
                Ok(read) => return Ok(read),
                Err(error) if error.kind() == ErrorKind::WouldBlock => {}
                Err(error) => return Err(error),
            }
            if self.receive_tls()? == 0 {
                return Ok(0);
            }
            self.send_tls()?;
        }
    }
}

impl Write for RustlsServerStream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut accepted = self.timed(|c| c.writer().write(buf))?;
        self.send_tls()?;
        if accepted == 0 && !buf.is_empty() {
            // The outgoing buffer was full: it has just been sent.
            accepted = self.timed(|c| c.writer().write(buf))?;
            self.send_tls()?;
        }
        Ok(accepted)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send_tls()
    }
}

impl ServerStream for RustlsServerStream {
    fn resumed(&self) -> bool {
        self.connection.handshake_kind() == Some(HandshakeKind::Resumed)
    }

    fn close(&mut self) {
        self.timed(|c| c.send_close_notify());
        let _ = self.send_tls();
    }

    fn library_ns(&self) -> Option<u64> {
        Some(self.library_ns)
    }
}
