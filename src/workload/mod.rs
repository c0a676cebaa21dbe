//! What one sample does, per capability: a verified handshake, a batch of
//! primitive operations, a batch of tunnel packets or an OpenVPN transfer.
//! The sampler in `measure` runs them.

pub mod handshake;
pub mod load;
pub mod nginx;
pub mod openvpn;
pub mod perf;
pub mod speed;
pub mod tunnel;
