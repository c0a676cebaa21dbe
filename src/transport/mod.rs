//! Byte pipes handed to handshakes: today the in-memory pipe between a
//! client and a server in one thread.

pub mod memory;
