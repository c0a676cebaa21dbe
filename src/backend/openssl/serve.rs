//! OpenSSL as the embedded HTTPS server's TLS: the scenario's server
//! context (group, certificate chain, suite, resumption) and a blocking
//! `SSL_accept` over each accepted TCP connection.

use std::net::TcpStream;

use anyhow::{bail, Context, Result};
use openssl::ssl::{HandshakeError, Ssl, SslContext, SslStream};

use super::server_context;
use crate::backend::{ServerStream, TlsAcceptor};
use crate::certs::Credentials;
use crate::scenario::HandshakeScenario;

/// The server's context for one scenario.
pub struct OpensslAcceptor {
    context: SslContext,
}

impl OpensslAcceptor {
    pub fn new(scenario: &HandshakeScenario, credentials: &Credentials) -> Result<Self> {
        if scenario.version.is_datagram() {
            anyhow::bail!("the embedded server speaks TLS over TCP, not DTLS");
        }
        Ok(Self {
            context: server_context(scenario, credentials)
                .context("configuring the OpenSSL server")?,
        })
    }
}

impl TlsAcceptor for OpensslAcceptor {
    fn accept(
        &self,
        tcp: TcpStream,
        give_up: &mut dyn FnMut() -> bool,
    ) -> Result<Box<dyn ServerStream>> {
        let ssl = Ssl::new(&self.context)?;
        let mut attempt = ssl.accept(tcp);
        loop {
            match attempt {
                Ok(stream) => return Ok(Box::new(OpensslServerStream(stream))),
                // A read timed out: the client has not sent its next flight yet.
                Err(HandshakeError::WouldBlock(midway)) => {
                    if give_up() {
                        bail!("TLS handshake abandoned: the client sent nothing in time");
                    }
                    attempt = midway.handshake();
                }
                Err(error) => bail!("TLS handshake failed: {error}"),
            }
        }
    }
}

struct OpensslServerStream(SslStream<TcpStream>);

impl std::io::Read for OpensslServerStream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

impl std::io::Write for OpensslServerStream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

impl ServerStream for OpensslServerStream {
    fn resumed(&self) -> bool {
        self.0.ssl().session_reused()
    }

    fn close(&mut self) {
        let _ = self.0.shutdown();
    }
}
