//! The suite every server under test passes, run over the registry
//! (`tlslab::workload::server::SERVERS`), so a server registered there gets
//! it without a test of its own: started through its trait it serves a
//! verified handshake and its workers' CPU is read, its provenance is
//! recorded, `handshake --server` measures a row with it, and whatever
//! stops tlslab (Ctrl-C in a terminal, SIGTERM, kill -9) leaves none of it
//! running. A server whose program is missing is skipped visibly (and
//! fails under `CI`). [`load`] has `load`'s runs on every server,
//! [`listed`] `handshake --server` listing several, [`quic_peer`] tlslab's
//! QUIC client against Caddy's HTTP/3, [`several`] `load --server`
//! (and `--cert`) listing several.

mod listed;
mod load;
mod quic_peer;
mod serve;
mod several;

use std::path::Path;
use std::time::Duration;

use tlslab::backend::openssl::remote::RemoteClient;
use tlslab::backend::BackendId;
use tlslab::scenario::{CertKind, Group, HandshakeScenario, Named, TlsVersion};
use tlslab::workload::server::{ServerDescriptor, ServerOptions, ServerSetup, Workers, SERVERS};
use tlslab::workload::site::Site;

use crate::each::for_each_server;
use crate::util::{
    cert_dir, certs, nginx_lock, processes_mentioning, skip_without, tlslab, wait_gone, Job,
};

/// The registered servers that can run here; each one that cannot is
/// skipped with a visible line naming `test` and how to install it.
pub fn available(test: &str) -> Vec<&'static ServerDescriptor> {
    SERVERS
        .iter()
        .copied()
        .filter(|server| {
            let name = format!("{test} ({})", server.id.id());
            !skip_without((server.missing)(), &name, server.install)
        })
        .collect()
}

/// tlslab run with its temporary directory (where a server keeps its
/// directory) in `tmp`, so that this test's servers can be told from
/// those of other runs on the same machine.
fn tlslab_in(tmp: &Path, args: &[&str]) -> crate::util::Run {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args(args)
        .env("TMPDIR", tmp)
        .env_remove("COLUMNS")
        .output()
        .expect("the tlslab binary runs");
    crate::util::Run {
        output,
        command: format!("tlslab {}", args.join(" ")),
    }
}

/// The entries tlslab left in `dir` (its scratch directories).
fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("tlslab-"))
        .collect()
}

for_each_server! {
    /// Every server, opened and started through its trait for a TLS 1.3
    /// scenario: it says what it is and that it cannot serve DTLS, serves a
    /// handshake verified by tlslab's OpenSSL client, its workers' CPU grows
    /// with it, and when it drops its workers are gone.
    fn every_server_serves_a_verified_handshake_through_its_trait_and_stops(
        descriptor: &'static ServerDescriptor
    ) {
        let _one = nginx_lock();
        let name = descriptor.id.id();
        let server = (descriptor.open)(&ServerOptions {
            backend: Some(BackendId::Openssl),
            threads: 1,
        })
        .unwrap_or_else(|e| panic!("{name}: {e:#}"));
        assert_eq!(server.kind(), descriptor.id);
        let library = server.library();
        assert!(
            !library.library.is_empty() && !library.version.is_empty(),
            "{name}: {library:?}"
        );
        let scenario =
            HandshakeScenario::full(TlsVersion::Tls13, Group::X25519, CertKind::EcdsaP256);
        assert_eq!(server.unsupported_reason(&scenario), None, "{name}");
        let dtls = HandshakeScenario::full(TlsVersion::Dtls12, Group::P256, CertKind::EcdsaP256);
        assert!(
            server
                .unsupported_reason(&dtls)
                .is_some_and(|reason| reason.contains("DTLS")),
            "{name} must say it cannot serve DTLS"
        );
        let credentials = certs().get(scenario.cert, scenario.chain_depth).unwrap();
        let running = server
            .start(&ServerSetup {
                scenario: &scenario,
                credentials: &credentials,
                site: &Site::default(),
            })
            .unwrap_or_else(|e| panic!("{name}: {e:#}"));
        assert!(running.address().ip().is_loopback(), "{name}");
        assert!(!running.description().is_empty(), "{name}");
        let before = running.worker_cpu_ns().unwrap();
        let mut client = RemoteClient::new(&scenario, &credentials, running.address()).unwrap();
        for _ in 0..3 {
            let done = client
                .handshake()
                .unwrap_or_else(|e| panic!("{name}: {e:#}"));
            assert_eq!(done.negotiated.version, "TLSv1.3", "{name}");
            assert_eq!(done.negotiated.group.as_deref(), Some("x25519"), "{name}");
            assert!(!done.negotiated.resumed, "{name}");
        }
        let after = running.worker_cpu_ns().unwrap();
        assert!(after > before, "{name}: its workers' CPU did not grow");
        // Worker processes or threads alike have an entry in /proc.
        let ids = match running.workers() {
            Workers::Processes(ids) | Workers::Threads(ids) => ids,
        };
        let alive = |id: &u32| Path::new(&format!("/proc/{id}/stat")).exists();
        assert!(!ids.is_empty() && ids.iter().all(alive), "{name}: {ids:?}");
        drop(running);
        assert_eq!(
            wait_gone(&ids, Duration::from_secs(5)),
            Vec::<u32>::new(),
            "{name}: workers outlived the dropped server"
        );
    }
}

for_each_server! {
    /// `handshake --server` measures a row with every server (both sides'
    /// CPU known), records its library, and leaves nothing behind; Ctrl-C
    /// during a matrix of two rows (a server each, for a program) exits 130
    /// and stops every server it started.
    fn a_handshake_row_is_measured_with_every_server_and_nothing_is_left(
        descriptor: &'static ServerDescriptor
    ) {
        let _one = nginx_lock();
        let name = descriptor.id.name();
        let tmp = tempfile::tempdir().unwrap();
        let json = tmp.path().join("handshake.json");
        let certs = cert_dir();
        let row = |runs: &'static str, groups: &'static str| {
            vec![
                "handshake",
                "--server",
                name,
                "--backend",
                "openssl",
                "--tls",
                "1.3",
                "--group",
                groups,
                "--cert",
                "ecdsa_p256",
                "--runs",
                runs,
                "--warmup",
                "0",
                "--no-db",
                "-q",
                "--cert-dir",
                certs.to_str().unwrap(),
            ]
        };
        let mut args = row("3", "x25519");
        args.extend(["--export-json", json.to_str().unwrap()]);
        tlslab_in(tmp.path(), &args).expect_code(0);
        let run: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        let rows = run["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 1, "{name}: {rows:#?}");
        let measured = &rows[0];
        assert_eq!(measured["status"], "measured", "{name}: {measured}");
        assert_eq!(
            measured["label"],
            "handshake_1.3_x25519_ecdsa_p256_aes128gcm"
        );
        assert_eq!(measured["sample_count"], 3, "{name}");
        assert_eq!(measured["negotiated"]["group"], "x25519", "{name}");
        for side in ["server_cpu_us", "client_cpu_us"] {
            assert!(
                measured[side]["median"].as_f64().unwrap() > 0.0,
                "{name} {side}: {measured}"
            );
        }
        let library = &run["libraries"][0];
        assert_eq!(library["backend"], measured["backend"], "{name}: {run}");
        assert!(!library["version"].as_str().unwrap().is_empty());
        std::fs::remove_file(&json).unwrap();
        assert_eq!(leftovers(tmp.path()), Vec::<String>::new(), "{name}");
        let tmp_text = tmp.path().to_str().unwrap();
        assert_eq!(processes_mentioning(tmp_text), Vec::<u32>::new(), "{name}");

        let interrupted = std::process::Command::new(env!("CARGO_BIN_EXE_tlslab"))
            .args(row("100000", "x25519,p256"))
            .env("TMPDIR", tmp.path())
            .env("TLSLAB_TEST_SIGINT_AFTER_ROUNDS", "2")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&interrupted.stderr);
        assert_eq!(interrupted.status.code(), Some(130), "{name}: {stderr}");
        assert_eq!(processes_mentioning(tmp_text), Vec::<u32>::new(), "{name}");
        assert_eq!(leftovers(tmp.path()), Vec::<String>::new(), "{name}");
    }
}

for_each_server! {
    /// A load on every server stopped by each way a run is stopped: Ctrl-C in
    /// a terminal (SIGINT to the whole process group) and SIGTERM end it with
    /// 130 and the server stopped, its directory removed; after kill -9 the
    /// server is gone with tlslab and the next run removes what it left.
    fn ctrl_c_sigterm_and_kill_9_leave_no_server_running(descriptor: &'static ServerDescriptor) {
        let _one = nginx_lock();
        let name = descriptor.id.name();
        let certs = cert_dir();
        let load = |duration: &'static str| {
            vec![
                "load",
                "--server",
                name,
                "--rate",
                "20",
                "--duration",
                duration,
                "--clients",
                "2",
                "--no-db",
                "--cert-dir",
                certs.to_str().unwrap(),
            ]
        };
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGKILL] {
            let case = format!("{name}, signal {signal}");
            let tmp = tempfile::tempdir().unwrap();
            let env = [("TMPDIR", tmp.path().as_os_str())];
            let tmp_text = tmp.path().to_str().unwrap().to_string();
            let mut job = Job::start(&load("30"), &env);
            job.wait_for_line("loading", Duration::from_secs(60));
            std::thread::sleep(Duration::from_millis(500));
            // A program's processes name their directory under `tmp`.
            let server = processes_mentioning(&tmp_text);
            if signal == libc::SIGINT {
                job.signal_group(signal);
            } else {
                job.signal(signal);
            }
            let (status, stderr) = job.finish(Duration::from_secs(20));
            assert_eq!(
                wait_gone(&server, Duration::from_secs(5)),
                Vec::<u32>::new(),
                "{case}: the server outlived tlslab"
            );
            if signal == libc::SIGKILL {
                let mut next = Job::start(&load("0.3"), &env);
                let (status, stderr) = next.finish(Duration::from_secs(60));
                assert_eq!(status.code(), Some(0), "{case}, the next run: {stderr}");
            } else {
                assert_eq!(status.code(), Some(130), "{case}: {stderr}");
            }
            assert_eq!(leftovers(tmp.path()), Vec::<String>::new(), "{case}");
        }
    }
}

/// A server that is not registered is refused before anything starts,
/// listing every registered one, by both commands; a program's client is
/// tlslab's OpenSSL, so another --backend is refused.
#[test]
fn bad_server_options_are_usage_errors() {
    let names: Vec<&str> = SERVERS.iter().map(|s| s.id.name()).collect();
    for command in ["handshake", "load"] {
        let run = tlslab(&[command, "--server", "lighttpd"]);
        run.expect_code(2);
        assert!(
            run.stderr().contains(&names.join(", ")),
            "{command}: {}",
            run.stderr()
        );
    }
    for program in SERVERS.iter().filter(|s| !s.in_process) {
        let run = tlslab(&[
            "handshake",
            "--server",
            program.id.name(),
            "--backend",
            "rustls-ring",
        ]);
        run.expect_code(2);
        assert!(run.stderr().contains("--backend"), "{}", run.stderr());
    }
}
