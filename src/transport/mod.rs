//! Pipes handed to handshakes: the in-memory byte pipe for TLS and the
//! in-memory datagram channel (message boundaries kept, MTU enforced) for
//! DTLS, both between a client and a server in one thread.

pub mod datagram;
pub mod memory;

use std::io::{Read, Write};

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
