//! The `wireguard` group: what tlslab's WireGuard engine costs beyond
//! boringtun itself. One side is the engine's row as `tlslab tunnel`
//! samples it (the registry's engine, its rig, the row's probe, the
//! sampler; per sample a batch the initiator encapsulates, then the
//! responder decapsulates and compares with the packet sent); the other a
//! plain loop: two peers handshaken the same way, the same 16 IP packets,
//! each batch encapsulated into datagram buffers, then decapsulated,
//! nothing checked, nothing recorded but the batch's wall time. Both are
//! payload MB per second of wall time through both ends.

use std::net::Ipv4Addr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use boringtun::noise::rate_limiter::RateLimiter;
use boringtun::noise::{Tunn, TunnResult};
use boringtun::x25519::{PublicKey, StaticSecret};
use tlslab::measure::{self, SamplingOptions};
use tlslab::scenario::tunnel::{Cipher, Compression, Digest, EngineId, Payload, TunnelScenario};
use tlslab::workload::tunnel::{EngineOptions, DISTINCT_PAYLOADS};

use super::median;

/// The packet sizes compared: per-packet work dominates the small one.
const SIZES_BYTES: [usize; 2] = [64, 1400];

/// Packets per batch of the plain loop (a batch of 64-byte packets lasts
/// tens of microseconds: two clock readings are lost in it).
const PLAIN_BATCH: usize = 256;

/// The target: tlslab within 5% of the plain loop.
const TARGET_RATIO: f64 = 0.95;

fn scenario(payload_bytes: usize) -> TunnelScenario {
    TunnelScenario {
        baseline: false,
        cipher: Cipher::Chacha20Poly1305,
        digest: Digest::None,
        compression: Compression::None,
        payload: Payload::Random,
        payload_bytes,
    }
}

/// MB/s of the engine's row for `round_time`: the median over its samples
/// of payload over sender + receiver wall time.
fn tlslab_round(payload_bytes: usize, round_time: Duration) -> f64 {
    let options = SamplingOptions {
        precision: 1e-9,
        max_time: round_time,
        min_samples: 10,
        warmup: Duration::from_millis(20),
        slice: Duration::ZERO,
        ..SamplingOptions::default()
    };
    let rig = EngineId::Wireguard
        .open()
        .start(&EngineOptions { transfer_bytes: 0 })
        .expect("the WireGuard engine starts");
    let interrupt = AtomicBool::new(false);
    let Ok(probe) = rig.prepare(&scenario(payload_bytes), &interrupt) else {
        panic!("the WireGuard row did not run");
    };
    let run = measure::sample(
        vec![probe],
        measure::Pairing::None,
        &options,
        &interrupt,
        &mut measure::Quietly,
    )
    .expect("sampled");
    let mut rates: Vec<f64> = run.outcomes[0]
        .samples()
        .iter()
        .map(|s| s.value.payload_bytes as f64 / s.value.total_ns() as f64 * 1000.0)
        .collect();
    median(&mut rates)
}

/// Two peers with fresh keys and unlimited rate limiters, handshaken.
fn handshaken() -> (Tunn, Tunn) {
    let secret = |seed: u8| StaticSecret::from([seed; 32]);
    let peer = |own: u8, other: u8, index: u32| {
        let limiter = RateLimiter::new(&PublicKey::from(&secret(own)), u64::MAX);
        Tunn::new(
            secret(own),
            PublicKey::from(&secret(other)),
            None,
            None,
            index,
            Some(Arc::new(limiter)),
        )
    };
    let (mut sender, mut receiver) = (peer(1, 2, 1), peer(2, 1, 2));
    let (mut a, mut b) = ([0u8; 256], [0u8; 256]);
    let TunnResult::WriteToNetwork(initiation) = sender.format_handshake_initiation(&mut a, false)
    else {
        panic!("no initiation")
    };
    let TunnResult::WriteToNetwork(response) = receiver.decapsulate(None, initiation, &mut b)
    else {
        panic!("no response")
    };
    let TunnResult::WriteToNetwork(keepalive) = sender.decapsulate(None, response, &mut a) else {
        panic!("no keepalive")
    };
    assert!(matches!(
        receiver.decapsulate(None, keepalive, &mut b),
        TunnResult::Done
    ));
    (sender, receiver)
}

/// The payload as an IPv4 packet whose length is its own (as the engine
/// makes it: boringtun forwards IP packets only).
fn ip_packet(mut payload: Vec<u8>) -> Vec<u8> {
    let total_length = payload.len() as u16;
    let header = &mut payload[..20];
    header.fill(0);
    header[0] = 0x45;
    header[2..4].copy_from_slice(&total_length.to_be_bytes());
    header[8] = 64;
    header[9] = 17;
    header[12..16].copy_from_slice(&Ipv4Addr::new(10, 233, 0, 1).octets());
    header[16..20].copy_from_slice(&Ipv4Addr::new(10, 233, 0, 2).octets());
    payload
}

/// MB/s of the plain loop for `round_time`: the median over its batches.
fn plain_round(payload_bytes: usize, round_time: Duration) -> f64 {
    let (mut sender, mut receiver) = handshaken();
    let packets: Vec<Vec<u8>> = (0..DISTINCT_PAYLOADS)
        .map(|i| ip_packet(Payload::Random.bytes(i, payload_bytes)))
        .collect();
    let buffer_bytes = (payload_bytes + 32).max(148);
    let mut datagrams = vec![vec![0u8; buffer_bytes]; PLAIN_BATCH];
    let mut lengths = vec![0usize; PLAIN_BATCH];
    let mut received = vec![0u8; buffer_bytes];
    let mut batch_once = || {
        for (i, datagram) in datagrams.iter_mut().enumerate() {
            let packet = &packets[i % DISTINCT_PAYLOADS];
            lengths[i] = match sender.encapsulate(packet, datagram) {
                TunnResult::WriteToNetwork(sent) => sent.len(),
                _ => panic!("encapsulate"),
            };
        }
        for (datagram, &length) in datagrams.iter().zip(&lengths) {
            match receiver.decapsulate(None, &datagram[..length], &mut received) {
                TunnResult::WriteToTunnelV4(packet, _) => std::hint::black_box(packet),
                _ => panic!("decapsulate"),
            };
        }
    };
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_millis(20) {
        batch_once();
    }
    let mut rates = Vec::new();
    let start = Instant::now();
    while start.elapsed() < round_time {
        let batch_start = Instant::now();
        batch_once();
        let elapsed = batch_start.elapsed().as_nanos() as f64;
        rates.push((PLAIN_BATCH * payload_bytes) as f64 / elapsed * 1000.0);
    }
    median(&mut rates)
}

/// Runs the group: per size, `rounds` alternating rounds of each side.
pub fn compare(rounds: usize, round_time: Duration) {
    for payload_bytes in SIZES_BYTES {
        let (mut tlslab, mut plain, mut paired) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds {
            let (t, p) = if round % 2 == 0 {
                let t = tlslab_round(payload_bytes, round_time);
                (t, plain_round(payload_bytes, round_time))
            } else {
                let p = plain_round(payload_bytes, round_time);
                (tlslab_round(payload_bytes, round_time), p)
            };
            tlslab.push(t);
            plain.push(p);
            paired.push(t / p);
        }
        let (tlslab, plain) = (median(&mut tlslab), median(&mut plain));
        let ratio = tlslab / plain;
        let paired = median(&mut paired);
        println!(
            "wireguard {payload_bytes:>4} B: tlslab {tlslab:.1} MB/s, plain boringtun loop {plain:.1} MB/s, \
             ratio {ratio:.3}, paired {paired:.3} ({rounds} alternating rounds; target >= {TARGET_RATIO}: {})",
            if paired >= TARGET_RATIO { "met" } else { "NOT met" }
        );
    }
}
