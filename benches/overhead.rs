//! Does tlslab's runner add measurable cost to what the library itself
//! costs? For each backend and scenario this compares, in alternating rounds
//! on the same machine, tlslab's handshakes per second (runner, per-side
//! timers, verification, sample bookkeeping) with a plain loop that drives
//! the same library's handshake with no timing or bookkeeping at all: TLS
//! 1.3 on every backend, DTLS 1.2 on OpenSSL over a datagram wire, and QUIC
//! (X25519, ECDSA P-256) on OpenSSL and on quinn with both rustls
//! providers, over memory datagrams (the plain loops in common/quic.rs run
//! the configurations the backends build, with no tlslab code inside), and
//! in a build with the feature `wolfssl` TLS 1.3 on wolfSSL (its plain loop,
//! common/wolfssl.rs, calls wolfssl-sys directly).
//! Each row prints the ratio of the two sides' median rates and the median
//! of the per-round ratios (`paired`: a round and its twin run back to
//! back, so the pair cancels the machine's drift).
//!
//! `control` among the names runs an A/A check instead: the plain loop
//! against a second plain loop in tlslab's place, for the resolution of the
//! bench on this machine.
//!
//! Run: `cargo bench --bench overhead` (optionally `-- ROUNDS HANDSHAKES`,
//! and the names of the rows to run, `openssl-dtls`, `rustls-ring` or
//! `rustls-ring-quic`, to run only those; `cargo bench --features wolfssl
//! --bench overhead -- wolfssl` for wolfSSL's). The QUIC rows' figures:
//! docs/handshake.md, section QUIC; wolfSSL's: docs/backends.md.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use openssl::ssl::{ErrorCode, ShutdownState, Ssl, SslContext, SslContextBuilder, SslMethod};
use openssl::ssl::{SslOptions, SslStream, SslVersion};
use tlslab::backend::backend_by_id;
use tlslab::backend::openssl::quic::quic_contexts;
use tlslab::backend::rustls::RustlsBackend;
use tlslab::certs::{CertCache, Credentials, SERVER_NAME};
use tlslab::measure::{self, SamplingOptions};
use tlslab::scenario::{CertKind, Group, HandshakeScenario, Named, TlsVersion, DEFAULT_MTU_BYTES};
use tlslab::stats::median;
use tlslab::workload::handshake::HandshakeProbe;

mod common;
use common::plain::{openssl_plain_handshake, rustls_configs, rustls_plain_handshake};
use common::quic::{openssl_quic_plain_handshake, quinn_plain_handshake};
use common::{client_and_server, openssl_contexts};

/// A datagram wire: one queue of whole datagrams per direction, each at most
/// `mtu` bytes.
struct Datagrams {
    to_server: VecDeque<Vec<u8>>,
    to_client: VecDeque<Vec<u8>>,
    mtu: usize,
}

struct DatagramEnd {
    wire: std::rc::Rc<std::cell::RefCell<Datagrams>>,
    client: bool,
}

impl Read for DatagramEnd {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let mut wire = self.wire.borrow_mut();
        let queue = if self.client {
            &mut wire.to_client
        } else {
            &mut wire.to_server
        };
        let datagram = queue.pop_front().ok_or(io::ErrorKind::WouldBlock)?;
        out[..datagram.len()].copy_from_slice(&datagram);
        Ok(datagram.len())
    }
}

impl Write for DatagramEnd {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let mut wire = self.wire.borrow_mut();
        assert!(data.len() <= wire.mtu, "a datagram over the MTU");
        let queue = if self.client {
            &mut wire.to_server
        } else {
            &mut wire.to_client
        };
        queue.push_back(data.to_vec());
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The MTU of tlslab's DTLS rows unless `--mtu` says otherwise.
const DTLS_MTU: u16 = DEFAULT_MTU_BYTES;

/// How many clients and servers each side of a row is given (see `main`).
const PLACEMENTS: usize = 8;

/// OpenSSL contexts for a full DTLS 1.2 ECDHE P-256 handshake with
/// AES-128-GCM, the server requiring a cookie (HMAC-SHA256).
fn openssl_dtls_contexts(credentials: &Credentials, cert: CertKind) -> (SslContext, SslContext) {
    let cipher = if cert == CertKind::Rsa2048 {
        "ECDHE-RSA-AES128-GCM-SHA256"
    } else {
        "ECDHE-ECDSA-AES128-GCM-SHA256"
    };
    let (client, mut server) = client_and_server(credentials, || {
        let mut ctx = SslContextBuilder::new(SslMethod::dtls()).unwrap();
        ctx.set_min_proto_version(Some(SslVersion::DTLS1_2))
            .unwrap();
        ctx.set_max_proto_version(Some(SslVersion::DTLS1_2))
            .unwrap();
        ctx.set_cipher_list(cipher).unwrap();
        ctx.set_groups_list("P-256").unwrap();
        ctx.set_options(SslOptions::NO_QUERY_MTU);
        ctx
    });
    server.set_options(SslOptions::NO_TICKET | SslOptions::COOKIE_EXCHANGE);
    let secret = Arc::new(openssl::pkey::PKey::hmac(b"0123456789abcdef0123456789abcdef").unwrap());
    let cookie = move |secret: &openssl::pkey::PKey<openssl::pkey::Private>| {
        let mut signer =
            openssl::sign::Signer::new(openssl::hash::MessageDigest::sha256(), secret).unwrap();
        signer.update(b"peer").unwrap();
        signer.sign_to_vec().unwrap()
    };
    let generating = Arc::clone(&secret);
    server.set_cookie_generate_cb(move |_, out| {
        let value = cookie(&generating);
        out[..value.len()].copy_from_slice(&value);
        Ok(value.len())
    });
    server.set_cookie_verify_cb(move |_, given| cookie(&secret) == given);
    (client.build(), server.build())
}

fn openssl_plain_dtls_handshake(client_ctx: &SslContext, server_ctx: &SslContext) {
    let wire = std::rc::Rc::new(std::cell::RefCell::new(Datagrams {
        to_server: VecDeque::new(),
        to_client: VecDeque::new(),
        mtu: DTLS_MTU.into(),
    }));
    let stream = |ctx: &SslContext, client: bool| {
        let mut ssl = Ssl::new(ctx).unwrap();
        if client {
            ssl.set_connect_state();
            ssl.set_hostname(SERVER_NAME).unwrap();
            ssl.param_mut().set_host(SERVER_NAME).unwrap();
        } else {
            ssl.set_accept_state();
        }
        let end = DatagramEnd {
            wire: wire.clone(),
            client,
        };
        let stream = SslStream::new(ssl, end).unwrap();
        use foreign_types::ForeignTypeRef;
        // SAFETY: a live DTLS connection with its BIO set.
        assert!(unsafe { openssl_sys::SSL_set_mtu(stream.ssl().as_ptr(), DTLS_MTU.into()) } > 0);
        stream
    };
    let mut client = stream(client_ctx, true);
    let mut server = stream(server_ctx, false);
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
    client.set_shutdown(ShutdownState::SENT | ShutdownState::RECEIVED);
    server.set_shutdown(ShutdownState::SENT | ShutdownState::RECEIVED);
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let (counts, names): (Vec<&String>, Vec<&String>) =
        args.iter().partition(|a| a.parse::<usize>().is_ok());
    let count = |at: usize, default: usize| counts.get(at).map_or(default, |a| a.parse().unwrap());
    // Many short rounds: the machine's drift between a round of the plain
    // loop and its tlslab twin stays small (10 rounds of 400 let two runs
    // differ by up to 14% on a shared VM; 40 of 100 agree within 1-2%).
    let rounds = count(0, 40);
    let handshakes = count(1, 100);
    // `control`: the plain loop against a second plain loop of its own
    // (new placements of the same configurations) in tlslab's place, an
    // A/A run that shows how far apart two identical loops come out in
    // time on this machine: the bench's resolution for that row.
    let control = names.iter().any(|name| *name == "control");
    let names: Vec<&String> = names.into_iter().filter(|n| *n != "control").collect();
    let certs = CertCache::new(CertCache::default_dir());
    println!("rounds: {rounds}, handshakes per round and side: {handshakes}");
    println!(
        "{:<18} {:<12} {:>12} {:>12} {:>7} {:>7}",
        "backend",
        "certificate",
        "plain hs/s",
        if control {
            "plain B hs/s"
        } else {
            "tlslab hs/s"
        },
        "ratio",
        "paired"
    );
    let mut rows = vec![
        "openssl",
        "rustls-aws-lc",
        "rustls-ring",
        "openssl-dtls",
        "openssl-quic",
        "rustls-aws-lc-quic",
        "rustls-ring-quic",
    ];
    if cfg!(feature = "wolfssl") {
        rows.push("wolfssl");
    } else if names.iter().any(|name| *name == "wolfssl") {
        println!("wolfssl: not built in; run `cargo bench --features wolfssl --bench overhead -- wolfssl`");
    }
    for backend_id in rows
        .into_iter()
        .filter(|row| names.is_empty() || names.contains(&&row.to_string()))
    {
        let library = backend_id
            .trim_end_matches("-dtls")
            .trim_end_matches("-quic");
        let backend = backend_by_id(library).unwrap();
        let quic = backend_id.ends_with("-quic");
        let certs_of_row: &[CertKind] = if quic {
            &[CertKind::EcdsaP256]
        } else {
            &[CertKind::EcdsaP256, CertKind::Rsa2048]
        };
        for &cert in certs_of_row {
            let dtls = backend_id == "openssl-dtls";
            let scenario = if dtls {
                HandshakeScenario::full(TlsVersion::Dtls12, Group::P256, cert)
            } else if quic {
                HandshakeScenario::full(TlsVersion::Quic, Group::X25519, cert)
            } else {
                HandshakeScenario::full(TlsVersion::Tls13, Group::X25519, cert)
            };
            let credentials = certs.get(cert, 3).unwrap();
            let make_plain = || -> Box<dyn FnMut()> {
                match backend_id {
                    "openssl-dtls" => {
                        let (c, s) = openssl_dtls_contexts(&credentials, cert);
                        Box::new(move || openssl_plain_dtls_handshake(&c, &s))
                    }
                    "openssl" => {
                        let (c, s) = openssl_contexts(&credentials);
                        Box::new(move || openssl_plain_handshake(&c, &s))
                    }
                    "rustls-aws-lc" => {
                        let (c, s) = rustls_configs(
                            rustls::crypto::aws_lc_rs::default_provider(),
                            &credentials,
                        );
                        Box::new(move || rustls_plain_handshake(&c, &s))
                    }
                    "rustls-ring" => {
                        let (c, s) =
                            rustls_configs(rustls::crypto::ring::default_provider(), &credentials);
                        Box::new(move || rustls_plain_handshake(&c, &s))
                    }
                    #[cfg(feature = "wolfssl")]
                    "wolfssl" => {
                        let contexts = common::wolfssl::wolfssl_contexts(&credentials);
                        Box::new(move || common::wolfssl::wolfssl_plain_handshake(&contexts))
                    }
                    "openssl-quic" => {
                        let (c, s) = quic_contexts(&scenario, &credentials).unwrap();
                        Box::new(move || openssl_quic_plain_handshake(&c, &s))
                    }
                    _ => {
                        let rustls = if library == "rustls-aws-lc" {
                            RustlsBackend::aws_lc_rs()
                        } else {
                            RustlsBackend::ring()
                        };
                        let configs = rustls.plain_quic_configs(&scenario, &credentials).unwrap();
                        Box::new(move || quinn_plain_handshake(&configs))
                    }
                }
            };
            // Where the allocator puts a client's and a server's keys and
            // contexts can make every handshake of theirs a few percent
            // dearer or cheaper for their whole life; each side gets
            // several placements, one per round in turn, so that neither
            // side's luck decides the ratio.
            let mut plains: Vec<Box<dyn FnMut()>> = (0..PLACEMENTS).map(|_| make_plain()).collect();
            let mut twins: Vec<Box<dyn FnMut()>> = if control {
                (0..PLACEMENTS).map(|_| make_plain()).collect()
            } else {
                Vec::new()
            };
            let mut probes: Vec<HandshakeProbe> = (0..PLACEMENTS)
                .map(|_| {
                    HandshakeProbe::prepare(backend.as_ref(), &scenario, &certs)
                        .unwrap()
                        .0
                })
                .collect();
            // The sampler as the commands use it, for a fixed count.
            let options = SamplingOptions {
                runs: Some(handshakes),
                warmup: Duration::ZERO,
                slice: Duration::ZERO,
                ..SamplingOptions::default()
            };
            let never = AtomicBool::new(false);
            let sampled = |probe: &mut HandshakeProbe| {
                let run = measure::sample(
                    vec![probe.probe()],
                    tlslab::measure::Pairing::None,
                    &options,
                    &never,
                    &mut measure::Quietly,
                )
                .unwrap();
                assert_eq!(run.outcomes[0].samples().len(), handshakes, "{backend_id}");
            };
            // Warm both up.
            for plain in plains.iter_mut().chain(twins.iter_mut()) {
                for _ in 0..10 {
                    plain();
                }
            }
            for probe in &mut probes {
                sampled(probe);
            }

            let (mut plain_rates, mut tlslab_rates) = (Vec::new(), Vec::new());
            for round in 0..rounds {
                // Alternate which side goes first, so drift favours neither.
                for side in [round % 2, 1 - round % 2] {
                    let start = Instant::now();
                    let placement = round % PLACEMENTS;
                    if side == 0 {
                        for _ in 0..handshakes {
                            plains[placement]();
                        }
                        plain_rates.push(handshakes as f64 / start.elapsed().as_secs_f64());
                    } else if control {
                        for _ in 0..handshakes {
                            twins[placement]();
                        }
                        tlslab_rates.push(handshakes as f64 / start.elapsed().as_secs_f64());
                    } else {
                        sampled(&mut probes[placement]);
                        let elapsed = start.elapsed().as_secs_f64();
                        // The sampler always runs one warm-up handshake first.
                        tlslab_rates.push((handshakes + 1) as f64 / elapsed);
                    }
                }
            }
            let paired: Vec<f64> = tlslab_rates
                .iter()
                .zip(&plain_rates)
                .map(|(ours, plain)| ours / plain)
                .collect();
            let plain = median(&plain_rates).expect("rounds ran");
            let ours = median(&tlslab_rates).expect("rounds ran");
            println!(
                "{:<18} {:<12} {:>12.0} {:>12.0} {:>7.3} {:>7.3}",
                backend_id,
                cert.id(),
                plain,
                ours,
                ours / plain,
                median(&paired).expect("rounds ran")
            );
        }
    }
}
