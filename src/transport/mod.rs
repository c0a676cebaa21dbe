//! Pipes handed to handshakes: the in-memory byte pipe for TLS and the
//! in-memory datagram channel (message boundaries kept, MTU enforced) for
//! DTLS, both between a client and a server in one thread; and the
//! loopback sockets of the socket transports ([`tcp`], [`udp`]), whose two
//! sides run in two threads; and network namespaces ([`netns`]) with what
//! joins them: an emulated link ([`link`]) and the real VPN engines' veth
//! lab ([`lab`]).

pub mod datagram;
pub mod lab;
pub mod link;
pub mod memory;
pub mod netns;
pub mod tap;
pub mod tcp;
pub mod udp;

use std::io::{Read, Write};
use std::time::Duration;

use anyhow::{Context, Result};

/// The longest a socket side waits for its peer (to connect, to send)
/// before its sample fails.
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// A test hook: the port the server side binds on 127.0.0.1 instead of an
/// ephemeral one, so a test can hold the port and see the row fail with
/// the kernel's reason (address in use).
pub const LOOPBACK_PORT_ENV: &str = "TLSLAB_TEST_LOOPBACK_PORT";

/// The port the server binds: 0 (ephemeral) unless the test hook names one.
fn loopback_port() -> Result<u16> {
    match std::env::var(LOOPBACK_PORT_ENV) {
        Ok(port) => port
            .parse()
            .with_context(|| format!("{LOOPBACK_PORT_ENV} must be a port number, got '{port}'")),
        Err(_) => Ok(0),
    }
}

/// A connection between a client and a server that run in turns on one
/// thread: each end is the "socket" one side's library reads and writes.
pub trait Duplex {
    type End: Read + Write + 'static;

    fn client_end(&self) -> Self::End;
    fn server_end(&self) -> Self::End;
    /// True if and only if something waits to be read by the client.
    fn pending_for_client(&self) -> bool;
    /// True if and only if something waits to be read by the server.
    fn pending_for_server(&self) -> bool;
}

impl Duplex for memory::Pipe {
    type End = memory::PipeEnd;

    fn client_end(&self) -> Self::End {
        memory::Pipe::client_end(self)
    }
    fn server_end(&self) -> Self::End {
        memory::Pipe::server_end(self)
    }
    fn pending_for_client(&self) -> bool {
        memory::Pipe::pending_for_client(self)
    }
    fn pending_for_server(&self) -> bool {
        memory::Pipe::pending_for_server(self)
    }
}

impl Duplex for datagram::DatagramPipe {
    type End = datagram::DatagramEnd;

    fn client_end(&self) -> Self::End {
        datagram::DatagramPipe::client_end(self)
    }
    fn server_end(&self) -> Self::End {
        datagram::DatagramPipe::server_end(self)
    }
    fn pending_for_client(&self) -> bool {
        datagram::DatagramPipe::pending_for_client(self)
    }
    fn pending_for_server(&self) -> bool {
        datagram::DatagramPipe::pending_for_server(self)
    }
}
