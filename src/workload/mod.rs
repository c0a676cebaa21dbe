//! What one sample does, per capability: a verified handshake, a batch of
//! application data through an established pair, a batch of
//! primitive operations, a batch of tunnel packets or an OpenVPN transfer,
//! threads handshaking at once for a window (capacity); and the servers that `load` aims at (nginx, the embedded server).
//! The sampler in `measure` runs them.

pub mod annotate;
pub mod breakdown;
pub mod bulk;
pub mod capacity;
pub mod counted;
pub mod handshake;
pub mod link;
pub mod load;
pub mod network;
pub mod nginx;
pub mod openvpn;
pub mod perf;
pub mod remote;
pub mod serve;
pub mod speed;
pub mod tunnel;
pub mod wire;
