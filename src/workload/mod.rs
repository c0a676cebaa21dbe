//! What one sample does, per capability: a verified handshake, a batch of
//! application data through an established pair, a batch of
//! primitive operations, a batch of tunnel packets or an OpenVPN transfer,
//! threads handshaking at once for a window (capacity); and the servers under
//! test that `handshake --server` and `load` aim at ([`server`]: nginx, the
//! embedded server), with the processes they run as ([`process`]) and what
//! they serve ([`site`]).
//! The sampler in `measure` runs them.

pub mod annotate;
pub mod breakdown;
pub mod bulk;
pub mod capacity;
pub mod counted;
pub mod h2;
pub mod handshake;
pub mod link;
pub mod load;
pub mod network;
pub mod perf;
pub mod process;
pub mod remote;
pub mod serve;
pub mod server;
pub mod site;
pub mod speed;
pub mod tunnel;
pub mod wire;
