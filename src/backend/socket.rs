//! What the socket transports share besides their drivers
//! ([`super::driver`]): the established pair of `bulk` over a socket,
//! whose sender and receiver run in two threads (the no-crypto pairs over
//! loopback TCP and UDP are in [`super::plain`]).

use std::io::{Read, Write};

use anyhow::Result;

use super::{BulkPair, Negotiated};

/// An established connection over a loopback socket: the client's end
/// writes application data, the server's end reads it, each in its own
/// thread ([`BulkPair::ends`]).
pub struct SocketBulkPair {
    negotiated: Option<Negotiated>,
    sender: Box<dyn Write + Send>,
    receiver: Box<dyn Read + Send>,
}

impl SocketBulkPair {
    pub fn new(
        negotiated: Option<Negotiated>,
        sender: Box<dyn Write + Send>,
        receiver: Box<dyn Read + Send>,
    ) -> Self {
        Self {
            negotiated,
            sender,
            receiver,
        }
    }
}

impl BulkPair for SocketBulkPair {
    fn negotiated(&self) -> Option<&Negotiated> {
        self.negotiated.as_ref()
    }

    fn send(&mut self, data: &[u8]) -> Result<()> {
        Ok(self.sender.write_all(data)?)
    }

    /// Blocks until `out` is full: the sender must run in another thread
    /// (see [`BulkPair::ends`]).
    fn receive(&mut self, out: &mut [u8]) -> Result<usize> {
        self.receiver.read_exact(out)?;
        Ok(out.len())
    }

    fn ends(&mut self) -> Option<(&mut (dyn Write + Send), &mut (dyn Read + Send))> {
        Some((&mut *self.sender, &mut *self.receiver))
    }
}
