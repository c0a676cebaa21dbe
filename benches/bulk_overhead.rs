//! Does tlslab's bulk workload add measurable cost to what the library's
//! record layer itself costs? This compares, in alternating rounds on the
//! same machine, tlslab's `bulk` row for OpenSSL TLS 1.3 AES-128-GCM at
//! 16 KiB writes (the probe, the sampler, the chunking, the per-side clocks,
//! the content check) with a plain loop that pushes the same bytes through
//! an OpenSSL pair over the same in-memory pipe: `SSL_write` on the client,
//! `SSL_read` on the server, nothing else.
//!
//! Two ratios per round, their medians printed:
//! - reported: the MB/s tlslab reports (both sides' CPU time inside their
//!   calls) over the plain loop's MB/s per CPU second of its thread;
//! - loop: the bytes tlslab's whole sampler moves per wall second over the
//!   plain loop's bytes per wall second (everything tlslab does counted).
//!
//! Run: `cargo bench --bench bulk_overhead` (optionally `-- ROUNDS MIB`,
//! the MiB each side moves per round).

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use openssl::ssl::{ErrorCode, Ssl, SslContext, SslStream};
use tlslab::backend::{backend_by_id, thread_cpu_ns};
use tlslab::certs::{CertCache, SERVER_NAME};
use tlslab::measure::{self, SamplingOptions};
use tlslab::scenario::bulk::{BulkScenario, Channel, BULK_CERT};
use tlslab::scenario::{Aead, TlsVersion, Transport};
use tlslab::transport::memory::{Pipe, PipeEnd};
use tlslab::workload::bulk::{BulkProbe, BulkSample, SAMPLES_PER_PAIR};

mod common;
use common::openssl_contexts;

const WRITE_BYTES: usize = 16 * 1024;

/// An established OpenSSL client and server over tlslab's memory pipe.
struct PlainPair {
    client: SslStream<PipeEnd>,
    server: SslStream<PipeEnd>,
    /// Kept to hold the pipe as long as its ends.
    _pipe: Pipe,
}

fn establish(client_ctx: &SslContext, server_ctx: &SslContext) -> PlainPair {
    let pipe = Pipe::default();
    let mut client_ssl = Ssl::new(client_ctx).unwrap();
    client_ssl.set_connect_state();
    client_ssl.set_hostname(SERVER_NAME).unwrap();
    client_ssl.param_mut().set_host(SERVER_NAME).unwrap();
    let mut client = SslStream::new(client_ssl, pipe.client_end()).unwrap();
    let mut server_ssl = Ssl::new(server_ctx).unwrap();
    server_ssl.set_accept_state();
    let mut server = SslStream::new(server_ssl, pipe.server_end()).unwrap();
    let (mut client_done, mut server_done) = (false, false);
    while !(client_done && server_done) {
        for (stream, done) in [
            (&mut client, &mut client_done),
            (&mut server, &mut server_done),
        ] {
            if !*done {
                match stream.do_handshake() {
                    Ok(()) => *done = true,
                    Err(e) if e.code() == ErrorCode::WANT_READ => {}
                    Err(e) => panic!("{e}"),
                }
            }
        }
    }
    PlainPair {
        client,
        server,
        _pipe: pipe,
    }
}

/// Moves `writes` writes of `data` from the client to the server, each
/// read back whole before the next.
fn plain_loop(pair: &mut PlainPair, data: &[u8], out: &mut [u8], writes: usize) {
    for _ in 0..writes {
        let mut written = 0;
        while written < data.len() {
            written += pair.client.ssl_write(&data[written..]).unwrap();
        }
        let mut filled = 0;
        while filled < out.len() {
            filled += pair.server.ssl_read(&mut out[filled..]).unwrap();
        }
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| !a.starts_with('-'));
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(15);
    let mib: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(256);
    let certs = CertCache::new(CertCache::default_dir());
    let backend = backend_by_id("openssl").unwrap();
    let scenario = BulkScenario {
        channel: Channel::Tls {
            version: TlsVersion::Tls13,
            aead: Aead::Aes128Gcm,
        },
        write_bytes: WRITE_BYTES,
        transport: Transport::Memory,
    };
    let handshake = scenario.handshake().unwrap();
    let credentials = certs.get(BULK_CERT, handshake.chain_depth).unwrap();

    // tlslab's row as `tlslab bulk` prepares it: sized by a first sample,
    // renewed every SAMPLES_PER_PAIR samples.
    let (mut probe, _) = BulkProbe::prepare(Some(backend.as_ref()), &scenario, &certs, None)
        .unwrap_or_else(|outcome| panic!("{outcome:?}"));
    probe
        .renew_every(
            SAMPLES_PER_PAIR,
            std::sync::Arc::clone(&backend),
            &scenario,
            &certs,
        )
        .unwrap();
    let sample_bytes = probe.sizing().sample_bytes();
    // The sampler runs one warm-up sample before the counted ones.
    let samples = (mib << 20).div_ceil(sample_bytes).max(2) - 1;
    let round_bytes = (samples + 1) * sample_bytes;
    let writes = round_bytes / WRITE_BYTES;

    let (client_ctx, server_ctx) = openssl_contexts(&credentials);
    let mut plain = establish(&client_ctx, &server_ctx);
    let data: Vec<u8> = (0..WRITE_BYTES).map(|i| (i * 131 % 251) as u8).collect();
    let mut out = vec![0u8; WRITE_BYTES];

    let options = SamplingOptions {
        runs: Some(samples),
        warmup: Duration::ZERO,
        slice: Duration::ZERO,
        ..SamplingOptions::default()
    };
    let never = AtomicBool::new(false);
    let sampled = |probe: &mut BulkProbe| -> Vec<BulkSample> {
        let run = measure::sample(
            vec![probe.probe()],
            measure::Pairing::None,
            &options,
            &never,
            &mut measure::Quietly,
        )
        .unwrap();
        let samples: Vec<BulkSample> = run.outcomes[0].samples().iter().map(|s| s.value).collect();
        assert_eq!(
            samples.len(),
            options.runs.unwrap(),
            "{:?}",
            run.outcomes[0]
        );
        samples
    };

    println!(
        "OpenSSL TLS 1.3 aes128gcm, {WRITE_BYTES}-byte writes; rounds: {rounds}, {} MiB per round and side ({samples} + 1 samples of {sample_bytes} bytes; {writes} plain writes)",
        round_bytes >> 20
    );
    // Warm both up.
    plain_loop(&mut plain, &data, &mut out, 64);
    sampled(&mut probe);

    let (mut reported_ratios, mut loop_ratios) = (Vec::new(), Vec::new());
    let (mut plain_cpu_rates, mut reported_rates) = (Vec::new(), Vec::new());
    let (mut plain_wall_rates, mut loop_rates) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let (mut plain_cpu, mut plain_wall, mut reported, mut looped) = (0.0, 0.0, 0.0, 0.0);
        // Alternate which side goes first, so drift favours neither.
        for side in [round % 2, 1 - round % 2] {
            let (wall, cpu) = (Instant::now(), thread_cpu_ns());
            if side == 0 {
                plain_loop(&mut plain, &data, &mut out, writes);
                let cpu_s = (thread_cpu_ns() - cpu) as f64 / 1e9;
                let bytes = (writes * WRITE_BYTES) as f64;
                plain_cpu = bytes / cpu_s / 1e6;
                plain_wall = bytes / wall.elapsed().as_secs_f64() / 1e6;
            } else {
                let samples = sampled(&mut probe);
                looped = round_bytes as f64 / wall.elapsed().as_secs_f64() / 1e6;
                // As the report reads a row: MB per CPU second of both
                // sides, from the median sample.
                let mut ns_per_byte: Vec<f64> = samples
                    .iter()
                    .map(|s| (s.sender_cpu_ns + s.receiver_cpu_ns) as f64 / s.bytes as f64)
                    .collect();
                reported = 1e3 / median(&mut ns_per_byte);
            }
        }
        reported_ratios.push(reported / plain_cpu);
        loop_ratios.push(looped / plain_wall);
        plain_cpu_rates.push(plain_cpu);
        reported_rates.push(reported);
        plain_wall_rates.push(plain_wall);
        loop_rates.push(looped);
        println!(
            "round {round:>2}: plain {plain_cpu:>6.0} MB/CPU s, tlslab reports {reported:>6.0} ({:.3}); wall: plain {plain_wall:>6.0} MB/s, tlslab's loop {looped:>6.0} ({:.3})",
            reported / plain_cpu,
            looped / plain_wall
        );
    }
    println!(
        "median: plain {:.0} MB/CPU s, tlslab reports {:.0}: ratio {:.3} (median of per-round ratios)",
        median(&mut plain_cpu_rates),
        median(&mut reported_rates),
        median(&mut reported_ratios)
    );
    println!(
        "median: plain {:.0} MB/s wall, tlslab's whole loop {:.0}: ratio {:.3} (median of per-round ratios)",
        median(&mut plain_wall_rates),
        median(&mut loop_rates),
        median(&mut loop_ratios)
    );
}
