//! OpenSSL as the embedded HTTPS server's TLS: the scenario's server
//! context (group, certificate chain, suite, resumption) and a blocking
//! `SSL_accept` over each accepted TCP connection.

use std::net::TcpStream;

use anyhow::{anyhow, Context, Result};
use openssl::ssl::{Ssl, SslContext, SslStream};

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
    fn accept(&self, tcp: TcpStream) -> Result<Box<dyn ServerStream>> {
        let ssl = Ssl::new(&self.context)?;
        let stream = ssl
            .accept(tcp)
            .map_err(|e| anyhow!("TLS handshake failed: {e}"))?;
        Ok(Box::new(OpensslServerStream(stream)))
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
