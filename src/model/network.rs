//! The network model: how long a row's handshake takes over a path, from
//! the client's connect() until it can send application data. It replays
//! the traced handshake's turns ([`crate::workload::wire`]) on a clock:
//! each turn waits for the bytes it read and for its side's CPU (the
//! measured CPU per side, shared out over the side's turns as the trace's
//! own turns shared it), then its writes cross the path: over TCP as
//! segments at the MSS, released by the congestion window (the initial
//! window, growing by a segment per ACK in slow start), over UDP as the
//! traced datagrams; each packet queues at the bottleneck's rate and then
//! takes half the round trip. TCP's handshake comes first; DTLS's cookie
//! exchange is in the trace. Pure and deterministic.
//!
//! Loss: a handshake that loses no packet takes the time above; one that
//! loses a packet waits for a retransmission timer. The model's figure is
//! the median, so with few packets and little loss it is the loss-free
//! time; the mean adds each packet's chance of loss times the timer.

use serde::{Deserialize, Serialize};

use crate::scenario::network::NetworkProfile;
use crate::transport::tap::MSS_BYTES;
use crate::transport::tap::{Side, TurnRecord};

/// IPv4 and TCP headers with the timestamp option, per segment.
pub const TCP_HEADER_BYTES: usize = 52;
/// IPv4 and UDP headers, per datagram.
pub const UDP_HEADER_BYTES: usize = 28;
/// A SYN or SYN-ACK with its options.
const SYN_BYTES: usize = 60;
/// Linux's first retransmission timeout of a SYN.
const SYN_TIMEOUT_S: f64 = 1.0;
/// Linux's least retransmission timeout of data.
const MIN_RTO_S: f64 = 0.2;
/// The first retransmission timer of a DTLS flight (RFC 6347 §4.2.4.1
/// suggests 1 s; OpenSSL starts there).
const DTLS_TIMER_S: f64 = 1.0;

/// What the model needs of a row.
#[derive(Debug, Clone, Copy)]
pub struct ModelInput<'a> {
    /// The traced handshake's turns.
    pub turns: &'a [TurnRecord],
    /// DTLS over UDP (true) or TLS over TCP (false).
    pub datagrams: bool,
    /// The measured CPU per handshake of each side, nanoseconds.
    pub client_cpu_ns: f64,
    pub server_cpu_ns: f64,
}

/// The model's answer for one row over one profile.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Modelled {
    /// Milliseconds from connect() until the client can send application
    /// data: the median handshake's.
    pub ms: f64,
    /// Without loss.
    pub lossless_ms: f64,
    /// The mean, counting each packet's chance of waiting for a timer.
    pub mean_ms: f64,
    /// Round trips on the path without CPU or rate: TCP's handshake, the
    /// protocol's own, and each wait for ACKs when a flight passes the
    /// congestion window.
    pub path_round_trips: f64,
    /// Of those, the waits for ACKs: the round trips the initial window costs.
    pub window_round_trips: f64,
    /// Packets the handshake sends (SYN and SYN-ACK included for TCP).
    pub packets: u32,
    /// The chance that none of them is lost.
    pub lossless_share: f64,
}

/// One direction of the path.
#[derive(Debug, Default)]
struct Direction {
    /// When the bottleneck is free again.
    free_at: f64,
    /// When the ACK of each segment sent this way arrives back (TCP).
    acks: Vec<f64>,
    packets: u32,
}

/// The path and its clock.
struct Path<'a> {
    profile: &'a NetworkProfile,
    one_way_s: f64,
    /// `[client to server, server to client]`.
    directions: [Direction; 2],
}

impl Path<'_> {
    /// Sends `bytes` (on the wire, headers included) from `from` when it is
    /// `ready` and the bottleneck is free; returns when it arrives.
    fn send(&mut self, from: Side, ready: f64, bytes: usize) -> f64 {
        let one_way = self.one_way_s;
        let serialization = self.profile.serialization_s(bytes);
        let direction = &mut self.directions[usize::from(from == Side::Server)];
        let departed = ready.max(direction.free_at) + serialization;
        direction.free_at = departed;
        direction.packets += 1;
        departed + one_way
    }

    /// Sends a TCP flight of `bytes` from `from`, ready at `ready`: its
    /// segments as the congestion window allows; returns when the last
    /// arrives.
    fn send_stream(&mut self, from: Side, ready: f64, bytes: usize) -> f64 {
        let initcwnd = self.profile.initcwnd as usize;
        let mut arrived = ready;
        let mut left = bytes;
        while left > 0 {
            let segment = left.min(MSS_BYTES);
            left -= segment;
            let index = usize::from(from == Side::Server);
            let sent = self.directions[index].acks.len();
            // Slow start, an ACK per segment: after `a` ACKs the window is
            // initcwnd + a and a segments have left the network, so
            // segment n may go once a > (n − initcwnd) / 2.
            let window_ready = if sent < initcwnd {
                ready
            } else {
                let needed = (sent - initcwnd) / 2 + 1;
                ready.max(self.directions[index].acks[needed - 1])
            };
            arrived = self.send(from, window_ready, segment + TCP_HEADER_BYTES);
            let ack = arrived + self.one_way_s;
            self.directions[index].acks.push(ack);
        }
        arrived
    }
}

/// Each turn's share of its side's CPU, as the trace's turns shared it
/// (equal shares if the trace has no times).
fn cpu_per_turn(input: &ModelInput) -> Vec<f64> {
    let total = |side: Side| -> f64 {
        input
            .turns
            .iter()
            .filter(|t| t.side == side)
            .map(|t| t.ns as f64)
            .sum()
    };
    let count = |side: Side| input.turns.iter().filter(|t| t.side == side).count() as f64;
    let (client_total, server_total) = (total(Side::Client), total(Side::Server));
    input
        .turns
        .iter()
        .map(|turn| {
            let (cpu, traced) = match turn.side {
                Side::Client => (input.client_cpu_ns, client_total),
                Side::Server => (input.server_cpu_ns, server_total),
            };
            let share = if traced > 0.0 {
                turn.ns as f64 / traced
            } else {
                1.0 / count(turn.side)
            };
            cpu * share / 1e9
        })
        .collect()
}

/// Seconds from connect() until the client is done, and the packets sent.
fn replay(input: &ModelInput, profile: &NetworkProfile, cpu: &[f64]) -> (f64, u32) {
    let mut path = Path {
        profile,
        one_way_s: profile.rtt_ms / 2e3,
        directions: Default::default(),
    };
    // When each side's CPU is free; the client starts once connect()
    // returns (TCP: after the SYN-ACK).
    let mut free = [0.0f64; 2];
    if !input.datagrams {
        let syn = path.send(Side::Client, 0.0, SYN_BYTES);
        let syn_ack = path.send(Side::Server, syn, SYN_BYTES);
        free = [syn_ack, syn];
    }
    let mut arrival = vec![0.0f64; input.turns.len()];
    let mut done_at = None;
    for (i, turn) in input.turns.iter().enumerate() {
        let side = usize::from(turn.side == Side::Server);
        let inputs = turn
            .read_from
            .iter()
            .map(|&writer| arrival[writer])
            .fold(0.0f64, f64::max);
        let end = free[side].max(inputs) + cpu[i];
        free[side] = end;
        arrival[i] = end;
        if input.datagrams {
            for &datagram in &turn.writes {
                arrival[i] = path.send(turn.side, end, datagram + UDP_HEADER_BYTES);
            }
        } else if !turn.writes.is_empty() {
            arrival[i] = path.send_stream(turn.side, end, turn.bytes());
        }
        if turn.done && turn.side == Side::Client && done_at.is_none() {
            done_at = Some(end);
        }
    }
    let packets = path.directions.iter().map(|d| d.packets).sum();
    (done_at.unwrap_or(free[0]), packets)
}

/// The model of one row over one profile.
pub fn model(input: &ModelInput, profile: &NetworkProfile) -> Modelled {
    let cpu = cpu_per_turn(input);
    let (lossless_s, packets) = replay(input, profile, &cpu);
    // Round trips on the path alone: no CPU, no rate limit.
    let bare = NetworkProfile {
        rate_bps: None,
        rtt_ms: if profile.rtt_ms > 0.0 {
            profile.rtt_ms
        } else {
            1.0
        },
        ..profile.clone()
    };
    let (bare_s, _) = replay(input, &bare, &vec![0.0; cpu.len()]);
    let path_round_trips = (bare_s * 1e3 / bare.rtt_ms * 2.0).round() / 2.0;
    let unlimited = NetworkProfile {
        initcwnd: 1_000_000,
        ..bare.clone()
    };
    let (unlimited_s, _) = replay(input, &unlimited, &vec![0.0; cpu.len()]);
    let window_round_trips =
        path_round_trips - (unlimited_s * 1e3 / bare.rtt_ms * 2.0).round() / 2.0;
    let lossless_share = (1.0 - profile.loss).powi(packets as i32);
    let rtt_s = profile.rtt_ms / 1e3;
    let timer_s = if input.datagrams {
        DTLS_TIMER_S
    } else {
        // Mostly data after an RTT sample: srtt + max(4 rttvar, 200 ms)
        // with rttvar = srtt / 2; a lost SYN waits a second.
        let data = rtt_s + (2.0 * rtt_s).max(MIN_RTO_S);
        (data * f64::from(packets.saturating_sub(2)) + 2.0 * SYN_TIMEOUT_S)
            / f64::from(packets.max(1))
    };
    let expected_losses = profile.loss * f64::from(packets);
    let median_s = if lossless_share >= 0.5 {
        lossless_s
    } else {
        lossless_s + timer_s
    };
    Modelled {
        ms: median_s * 1e3,
        lossless_ms: lossless_s * 1e3,
        mean_ms: (lossless_s + expected_losses * timer_s) * 1e3,
        path_round_trips,
        window_round_trips,
        packets,
        lossless_share,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::network::parse_profiles;

    fn turn(side: Side, writes: &[usize], read_from: &[usize], done: bool) -> TurnRecord {
        TurnRecord {
            side,
            ns: 1_000,
            writes: writes.to_vec(),
            read_from: read_from.to_vec(),
            done,
        }
    }

    /// TLS 1.3: ClientHello, the server's flight of `server_bytes`, the
    /// client's Finished (done), the server reads it.
    fn tls13(server_bytes: usize) -> Vec<TurnRecord> {
        vec![
            turn(Side::Client, &[300], &[], false),
            turn(Side::Server, &[server_bytes], &[0], false),
            turn(Side::Client, &[64], &[1], true),
            turn(Side::Server, &[], &[2], true),
        ]
    }

    /// TLS 1.2: two round trips.
    fn tls12() -> Vec<TurnRecord> {
        vec![
            turn(Side::Client, &[250], &[], false),
            turn(Side::Server, &[1_100], &[0], false),
            turn(Side::Client, &[130], &[1], false),
            turn(Side::Server, &[51], &[2], true),
            turn(Side::Client, &[], &[3], true),
        ]
    }

    fn input(turns: &[TurnRecord]) -> ModelInput<'_> {
        ModelInput {
            turns,
            datagrams: false,
            client_cpu_ns: 0.0,
            server_cpu_ns: 0.0,
        }
    }

    fn profile(text: &str) -> NetworkProfile {
        parse_profiles(text).unwrap().remove(0)
    }

    #[test]
    fn tls13_takes_two_round_trips_with_tcp_and_tls12_one_more() {
        let wan = profile("rtt=50ms");
        let one = model(&input(&tls13(1_200)), &wan);
        let two = model(&input(&tls12()), &wan);
        assert!((one.ms - 100.0).abs() < 1e-9, "{one:?}");
        assert!((two.ms - one.ms - 50.0).abs() < 1e-9, "{two:?}");
        assert_eq!((one.path_round_trips, two.path_round_trips), (2.0, 3.0));
        assert_eq!(one.window_round_trips, 0.0);
        // The named wan profile adds serialization at 20 Mbit/s only.
        let named = model(&input(&tls13(1_200)), &profile("wan"));
        let bytes = 2 * 60 + (300 + 52) + (1_200 + 52) + (64 + 52);
        assert!(named.ms > 100.0 && named.ms < 100.0 + bytes as f64 * 8.0 / 20e6 * 1e3 + 1e-9);
    }

    #[test]
    fn a_flight_over_the_initial_window_waits_a_round_trip_for_acks() {
        let path = profile("rtt=100ms");
        let fits = model(&input(&tls13(10 * MSS_BYTES)), &path);
        let over = model(&input(&tls13(14 * MSS_BYTES)), &path);
        assert_eq!(fits.window_round_trips, 0.0);
        assert_eq!(over.window_round_trips, 1.0);
        assert!(
            (over.ms - fits.ms - 100.0).abs() < 1e-6,
            "{fits:?} {over:?}"
        );
        // A larger initial window takes it in one go.
        let wide = model(
            &input(&tls13(14 * MSS_BYTES)),
            &profile("rtt=100ms,initcwnd=16"),
        );
        assert!((wide.ms - fits.ms).abs() < 1e-6);
    }

    #[test]
    fn cpu_rate_and_loss_add_as_they_should() {
        let turns = tls13(1_200);
        let path = profile("rtt=50ms");
        let mut slow = input(&turns);
        slow.client_cpu_ns = 2e6;
        slow.server_cpu_ns = 4e6;
        // The client's two turns are on the path, and the server's first
        // (its second, reading the Finished, is not): half its CPU.
        let with_cpu = model(&slow, &path);
        assert!(
            (with_cpu.ms - (100.0 + 2.0 + 2.0)).abs() < 1e-6,
            "{with_cpu:?}"
        );
        let lossy = model(&input(&turns), &profile("rtt=50ms,loss=1%"));
        assert_eq!(lossy.ms, lossy.lossless_ms);
        assert!(lossy.mean_ms > lossy.ms && lossy.lossless_share > 0.9);
        let awful = model(&input(&turns), &profile("rtt=50ms,loss=40%"));
        assert!(awful.ms > awful.lossless_ms + 150.0, "{awful:?}");
        // Datagrams: no TCP handshake, each datagram at the rate.
        let mut dtls = input(&turns);
        dtls.datagrams = true;
        let udp = model(&dtls, &profile("rtt=50ms"));
        assert!((udp.ms - 50.0).abs() < 1e-9, "{udp:?}");
    }

    #[test]
    fn the_model_is_deterministic() {
        let turns = tls12();
        let a = model(&input(&turns), &profile("mobile"));
        let b = model(&input(&turns), &profile("mobile"));
        assert_eq!(a, b);
    }
}
