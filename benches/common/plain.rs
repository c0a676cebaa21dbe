//! The plain loops the benches hold tlslab against: a TLS 1.3 handshake
//! driven straight through each library, client and server over a byte
//! pipe, with no timing, verification or bookkeeping.

// Each bench uses some of them.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::sync::Arc;

use openssl::ssl::{ErrorCode, ShutdownState, Ssl, SslContext, SslStream};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use tlslab::certs::{Credentials, SERVER_NAME};

/// A byte pipe with one buffer per direction, shared by both ends.
#[derive(Default)]
pub struct Wire {
    to_server: VecDeque<u8>,
    to_client: VecDeque<u8>,
}

pub struct End {
    wire: std::rc::Rc<std::cell::RefCell<Wire>>,
    client: bool,
}

impl Read for End {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let mut wire = self.wire.borrow_mut();
        let queue = if self.client {
            &mut wire.to_client
        } else {
            &mut wire.to_server
        };
        if queue.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        queue.read(out)
    }
}

impl Write for End {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let mut wire = self.wire.borrow_mut();
        let queue = if self.client {
            &mut wire.to_server
        } else {
            &mut wire.to_client
        };
        queue.extend(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

pub fn openssl_plain_handshake(client_ctx: &SslContext, server_ctx: &SslContext) {
    let wire = std::rc::Rc::new(std::cell::RefCell::new(Wire::default()));
    let mut client_ssl = Ssl::new(client_ctx).unwrap();
    client_ssl.set_connect_state();
    client_ssl.set_hostname(SERVER_NAME).unwrap();
    client_ssl.param_mut().set_host(SERVER_NAME).unwrap();
    let mut client = SslStream::new(
        client_ssl,
        End {
            wire: wire.clone(),
            client: true,
        },
    )
    .unwrap();
    let mut server_ssl = Ssl::new(server_ctx).unwrap();
    server_ssl.set_accept_state();
    let mut server = SslStream::new(
        server_ssl,
        End {
            wire: wire.clone(),
            client: false,
        },
    )
    .unwrap();
    let (mut client_done, mut server_done) = (false, false);
    while !(client_done && server_done) {
        for (stream, done) in [
            (&mut client, &mut client_done),
            (&mut server, &mut server_done),
        ] {
            if !*done {
                match stream.do_handshake() {
                    Ok(()) => *done = true,
                    Err(e) if e.code() == ErrorCode::WANT_READ => {}
                    Err(e) => panic!("{e}"),
                }
            }
        }
    }
    client.set_shutdown(ShutdownState::SENT | ShutdownState::RECEIVED);
    server.set_shutdown(ShutdownState::SENT | ShutdownState::RECEIVED);
}

/// rustls configurations as tlslab builds them for a full TLS 1.3 handshake.
pub fn rustls_configs(
    provider: rustls::crypto::CryptoProvider,
    credentials: &Credentials,
) -> (Arc<rustls::ClientConfig>, Arc<rustls::ServerConfig>) {
    let mut provider = provider;
    provider
        .kx_groups
        .retain(|g| g.name() == rustls::NamedGroup::X25519);
    provider
        .cipher_suites
        .retain(|s| s.suite() == rustls::CipherSuite::TLS13_AES_128_GCM_SHA256);
    let provider = Arc::new(provider);
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from(credentials.root_der.clone()))
        .unwrap();
    let mut client = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    client.resumption = rustls::client::Resumption::disabled();
    let chain = credentials
        .server
        .chain_der
        .iter()
        .map(|d| CertificateDer::from(d.clone()))
        .collect();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        credentials.server.key_pkcs8_der.clone(),
    ));
    let mut server = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    server.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
    server.send_tls13_tickets = 0;
    (Arc::new(client), Arc::new(server))
}

pub fn rustls_plain_handshake(
    client_config: &Arc<rustls::ClientConfig>,
    server_config: &Arc<rustls::ServerConfig>,
) {
    let name = ServerName::try_from(SERVER_NAME).unwrap();
    let mut client = rustls::ClientConnection::new(client_config.clone(), name).unwrap();
    let mut server = rustls::ServerConnection::new(server_config.clone()).unwrap();
    let mut buffer = Vec::new();
    while client.is_handshaking() || server.is_handshaking() {
        while client.wants_write() {
            client.write_tls(&mut buffer).unwrap();
        }
        if !buffer.is_empty() {
            server.read_tls(&mut buffer.as_slice()).unwrap();
            buffer.clear();
            server.process_new_packets().unwrap();
        }
        while server.wants_write() {
            server.write_tls(&mut buffer).unwrap();
        }
        if !buffer.is_empty() {
            client.read_tls(&mut buffer.as_slice()).unwrap();
            buffer.clear();
            client.process_new_packets().unwrap();
        }
    }
}
