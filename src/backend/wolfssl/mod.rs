//! The wolfSSL backend: wolfSSL 5.9.4 (GPL-2.0-or-later, the seeds' DTLS
//! library, built for embedded devices), built from the source bundled in
//! `wolfssl-sys` and linked only with the opt-in cargo feature `wolfssl`.
//! TLS 1.2 and 1.3 over the memory pipe, DTLS 1.2 and 1.3 over the memory
//! datagram channel: both sides in one thread, their I/O through wolfSSL's
//! callbacks (`connection.rs`, which holds every call into the library),
//! each side's turns timed apart ([`crate::backend::turns`]), every
//! handshake's version, suite, group and resumption reported for the
//! sampler to check. wolfSSL does not tell the client the server's
//! signature scheme without its OpenSSL-compatible layer, which tlslab
//! keeps off (its names clash with the vendored OpenSSL), so that one is
//! not checked (`reports_signature_scheme: false`). Resumption is by
//! tickets: TLS 1.2 RFC 5077 tickets, TLS 1.3 PSK. `speed`'s rows run on
//! wolfCrypt (`primitives.rs`, its calls in `wolfcrypt.rs`). Without the feature
//! only the descriptor and `unbuilt.rs` are compiled: the backend is not
//! listed and its rows say how to build it.

mod descriptor;
pub use descriptor::DESCRIPTOR;

#[cfg(feature = "wolfssl")]
mod connection;
#[cfg(feature = "wolfssl")]
mod handshake;
#[cfg(feature = "wolfssl")]
mod primitives;
#[cfg(not(feature = "wolfssl"))]
mod unbuilt;
#[cfg(feature = "wolfssl")]
mod wolfcrypt;

#[cfg(feature = "wolfssl")]
pub use handshake::WolfsslBackend;
#[cfg(not(feature = "wolfssl"))]
use unbuilt::Unbuilt;
