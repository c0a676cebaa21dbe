//! An in-memory duplex byte pipe: the "network" between a client and a
//! server running in the same thread. The wire tap ([`tap`]) sees every
//! write and read while it records.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::rc::Rc;

use super::tap;

#[derive(Debug, Default)]
struct Buffers {
    to_server: VecDeque<u8>,
    to_client: VecDeque<u8>,
}

/// Both directions of a connection.
#[derive(Debug, Default, Clone)]
pub struct Pipe {
    buffers: Rc<RefCell<Buffers>>,
}

impl Pipe {
    pub fn client_end(&self) -> PipeEnd {
        PipeEnd {
            buffers: Rc::clone(&self.buffers),
            is_client: true,
        }
    }

    pub fn server_end(&self) -> PipeEnd {
        PipeEnd {
            buffers: Rc::clone(&self.buffers),
            is_client: false,
        }
    }

    /// True if and only if bytes wait to be read by the client.
    pub fn pending_for_client(&self) -> bool {
        !self.buffers.borrow().to_client.is_empty()
    }

    /// True if and only if bytes wait to be read by the server.
    pub fn pending_for_server(&self) -> bool {
        !self.buffers.borrow().to_server.is_empty()
    }
}

/// One side's view: reads what the peer wrote, writes for the peer. Reading
/// an empty pipe would block (`WouldBlock`), as a non-blocking socket does.
#[derive(Debug)]
pub struct PipeEnd {
    buffers: Rc<RefCell<Buffers>>,
    is_client: bool,
}

impl PipeEnd {
    fn side(&self) -> tap::Side {
        if self.is_client {
            tap::Side::Client
        } else {
            tap::Side::Server
        }
    }
}

impl Read for PipeEnd {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let mut buffers = self.buffers.borrow_mut();
        let incoming = if self.is_client {
            &mut buffers.to_client
        } else {
            &mut buffers.to_server
        };
        if incoming.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let read = incoming.read(out)?;
        tap::read(self.side(), read, false);
        Ok(read)
    }
}

impl Write for PipeEnd {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let mut buffers = self.buffers.borrow_mut();
        let outgoing = if self.is_client {
            &mut buffers.to_server
        } else {
            &mut buffers.to_client
        };
        outgoing.extend(data);
        tap::wrote(self.side(), data, false);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
