//! The sample of a real tunnel, whose data channel runs in two daemons
//! (OpenVPN, wireguard-go), one in each namespace of a [`Lab`]: one TCP
//! transfer each way through the tunnel, each timed on the wall clock,
//! and each daemon's CPU time (every thread, user and system) read from
//! the kernel before and after each way. The no-tunnel row is the same
//! transfer over the bare link: no daemon, so no CPU time.
//!
//! In a transfer from A to B, A's daemon is the sending end (it reads
//! the plaintext from its TUN device, encrypts it and sends it over the
//! link) and B's the receiving end (it decrypts and writes to its TUN
//! device); each also carries the TCP acknowledgements back. The sample
//! adds the sending ends of both ways, and the receiving ends.

use std::net::Ipv4Addr;
use std::sync::atomic::AtomicBool;

use super::TunnelSample;
use crate::scenario::tunnel::Payload;
use crate::transport::lab::{self, Lab, WRITE_CHUNK_BYTES};
use crate::transport::netns::Namespace;
use crate::workload::process::process_cpu_time_ns;

/// The smallest TCP segment Linux sends (`TCP_MIN_MSS`): rows of smaller
/// packets are sent in segments of this size.
pub const MIN_SEGMENT_BYTES: usize = 88;

/// The largest segment a real tunnel's rows use: 1400 bytes of payload
/// and 40 of IPv4 and TCP headers fit a tunnel whose packets, with the
/// tunnel's own headers, fit the lab's 1500-byte link.
pub const MAX_SEGMENT_BYTES: usize = 1400;

/// The TCP segment size of a row: its payload size, within
/// [`MIN_SEGMENT_BYTES`] and [`MAX_SEGMENT_BYTES`].
pub fn segment_bytes(payload_bytes: usize) -> i32 {
    payload_bytes.clamp(MIN_SEGMENT_BYTES, MAX_SEGMENT_BYTES) as i32
}

/// 1 MiB of the payload, sent over and over.
pub fn transfer_data(payload: Payload) -> Vec<u8> {
    (0..16)
        .flat_map(|i| payload.bytes(i, WRITE_CHUNK_BYTES))
        .collect()
}

/// Where one row's transfers go and what carries them.
pub struct TransferRoute<'lab> {
    pub lab: &'lab Lab,
    /// The addresses the two ends listen on: the tunnel's, or the link's
    /// for the no-tunnel row.
    pub address_a: Ipv4Addr,
    pub address_b: Ipv4Addr,
    /// The PIDs of the tunnel's daemons in namespaces A and B, or None for
    /// the no-tunnel row.
    pub daemons: Option<[u32; 2]>,
}

/// One sample: `bytes` of `data` from A to B, then from B to A, in TCP
/// segments of `mss` bytes; wall time each way (`send_ns` A to B,
/// `receive_ns` B to A), and the daemons' CPU time as the sending and the
/// receiving ends (0 without a tunnel). Gives up when `interrupt` is set.
pub fn timed_transfers(
    route: &TransferRoute,
    data: &[u8],
    mss: i32,
    bytes: u64,
    interrupt: &AtomicBool,
) -> Result<TunnelSample, String> {
    let (a, b) = (route.lab.a(), route.lab.b());
    let cpu = || -> Result<[u64; 2], String> {
        let Some(daemons) = route.daemons else {
            return Ok([0, 0]);
        };
        let mut times = [0; 2];
        for ((time, pid), side) in times.iter_mut().zip(daemons).zip(["A", "B"]) {
            *time = process_cpu_time_ns(pid).map_err(|error| {
                format!("the tunnel's process in namespace {side} (PID {pid}) is gone: {error:#}")
            })?;
        }
        Ok(times)
    };
    let way = |from: &Namespace, to: (&Namespace, Ipv4Addr)| {
        lab::transfer(from, to, data, mss, bytes, interrupt)
    };
    let before = cpu()?;
    let forward =
        way(a, (b, route.address_b)).map_err(|error| format!("transfer A to B: {error:#}"))?;
    let between = cpu()?;
    let backward =
        way(b, (a, route.address_a)).map_err(|error| format!("transfer B to A: {error:#}"))?;
    let after = cpu()?;
    let spent = |side: usize, from: [u64; 2], to: [u64; 2]| to[side].saturating_sub(from[side]);
    Ok(TunnelSample {
        packets: 0,
        payload_bytes: bytes,
        send_ns: forward.as_nanos() as u64,
        receive_ns: backward.as_nanos() as u64,
        send_cpu_ns: spent(0, before, between) + spent(1, between, after),
        receive_cpu_ns: spent(1, before, between) + spent(0, between, after),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_carry_the_rows_payload_within_what_tcp_and_the_link_allow() {
        assert_eq!(segment_bytes(1), 88);
        assert_eq!(segment_bytes(512), 512);
        assert_eq!(segment_bytes(1400), 1400);
        assert_eq!(segment_bytes(60_000), 1400);
        assert_eq!(transfer_data(Payload::Zero).len(), 16 * WRITE_CHUNK_BYTES);
    }
}
