//! Does splitting a handshake's CPU time as its wall time is split give the
//! same per-side figures as reading the thread's CPU clock at every turn?
//! For a few backends and scenarios over memory this runs handshakes
//! alternately with the clock read at the two ends
//! ([`CpuReadings::AtEnds`], what the commands use) and at every turn
//! ([`CpuReadings::EveryTurn`]), on one handshaker, and prints each side's
//! median CPU time both ways, their ratio, and how many handshakes timed
//! at the ends came out unsure (the thread was off the CPU: the probes
//! retake those).
//!
//! Run: `cargo bench --bench cpu_readings` (optionally `-- HANDSHAKES`,
//! per row and way).

use tlslab::backend::{backend_by_id, CpuReadings, Handshaker};
use tlslab::certs::CertCache;
use tlslab::scenario::{CertKind, Group, HandshakeScenario, Named, TlsVersion};
use tlslab::stats::median;

/// Each side's CPU time per handshake, read one way, and how many were unsure.
#[derive(Default)]
struct Way {
    client: Vec<f64>,
    server: Vec<f64>,
    unsure: usize,
}

fn main() {
    let handshakes: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(2000);
    let certs = CertCache::new(CertCache::default_dir());
    let rows = [
        (
            "openssl",
            TlsVersion::Tls13,
            Group::X25519,
            CertKind::EcdsaP256,
        ),
        (
            "openssl",
            TlsVersion::Tls12,
            Group::Dhe2048,
            CertKind::Rsa2048,
        ),
        (
            "openssl",
            TlsVersion::Dtls12,
            Group::P256,
            CertKind::EcdsaP256,
        ),
        (
            "rustls-aws-lc",
            TlsVersion::Tls13,
            Group::X25519,
            CertKind::EcdsaP256,
        ),
        (
            "dimpl",
            TlsVersion::Dtls13,
            Group::P256,
            CertKind::EcdsaP256,
        ),
    ];
    println!("handshakes per row and way: {handshakes}; CPU µs, median");
    println!(
        "{:<14} {:<8} {:<8} {:>9} {:>9} {:>6} {:>9} {:>9} {:>6} {:>7}",
        "backend",
        "version",
        "group",
        "client",
        "at ends",
        "ratio",
        "server",
        "at ends",
        "ratio",
        "unsure"
    );
    for (backend_id, version, group, cert) in rows {
        let backend = backend_by_id(backend_id).unwrap();
        let scenario = HandshakeScenario::full(version, group, cert);
        let credentials = certs.get(cert, 3).unwrap();
        let mut handshaker = backend.handshaker(&scenario, &credentials).unwrap();
        let (mut every_turn, mut at_ends) = (Way::default(), Way::default());
        let take = |handshaker: &mut Box<dyn Handshaker>, readings, way: &mut Way| {
            handshaker.read_cpu(readings);
            let sample = handshaker.handshake().unwrap();
            way.client.push(sample.client.cpu_ns as f64);
            way.server.push(sample.server.cpu_ns as f64);
            way.unsure += usize::from(sample.split_unsure);
        };
        for _ in 0..50 {
            take(&mut handshaker, CpuReadings::EveryTurn, &mut Way::default());
        }
        for i in 0..handshakes {
            // Alternate which way goes first, so drift favours neither.
            let ways = [
                (CpuReadings::EveryTurn, &mut every_turn),
                (CpuReadings::AtEnds, &mut at_ends),
            ];
            let [first, second] = if i % 2 == 0 {
                ways
            } else {
                let [a, b] = ways;
                [b, a]
            };
            take(&mut handshaker, first.0, first.1);
            take(&mut handshaker, second.0, second.1);
        }
        let median = |values: &[f64]| median(values).expect("handshakes ran");
        let (client, client_ends) = (median(&every_turn.client), median(&at_ends.client));
        let (server, server_ends) = (median(&every_turn.server), median(&at_ends.server));
        println!(
            "{:<14} {:<8} {:<8} {:>9.1} {:>9.1} {:>6.3} {:>9.1} {:>9.1} {:>6.3} {:>6.1}%",
            backend_id,
            version.id(),
            group.id(),
            client / 1e3,
            client_ends / 1e3,
            client_ends / client,
            server / 1e3,
            server_ends / 1e3,
            server_ends / server,
            100.0 * at_ends.unsure as f64 / handshakes as f64
        );
    }
}
