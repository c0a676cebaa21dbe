//! `tlslab serve --server NAME` on every program of the registry: the
//! server `load --server` starts, run for an outside client until SIGTERM,
//! answers a checked request at the address it prints and leaves nothing
//! behind.

use std::time::Duration;

use tlslab::scenario::Named;

use crate::each::for_each_server;
use crate::util::{cert_dir, nginx_lock, processes_mentioning, tlslab, wait_gone, Job};

for_each_server! {
    programs;

    /// Each program started by `serve --server` answers a request for its
    /// page, checked byte for byte by `load --target` at the address serve
    /// printed; SIGTERM then stops it with status 0, its processes gone and
    /// its directory removed.
    fn serve_server_answers_a_request_and_stops_on_sigterm_with_nothing_left(
        descriptor: &'static ServerDescriptor
    ) {
        let _one = nginx_lock();
        let certs = cert_dir();
        let certs = certs.to_str().unwrap();
        let name = descriptor.id.name();
        let tmp = tempfile::tempdir().unwrap();
        let env = [("TMPDIR", tmp.path().as_os_str())];
        let mut job = Job::start(
            &[
                "serve",
                "--server",
                name,
                "--size",
                "2k",
                "--duration",
                "120",
                "--cert-dir",
                certs,
            ],
            &env,
        );
        job.wait_for_line("serving https://", Duration::from_secs(60));
        let line = job
            .stderr
            .iter()
            .find(|line| line.contains("serving https://"))
            .unwrap()
            .clone();
        let address = line["serving https://".len()..]
            .split('/')
            .next()
            .unwrap()
            .to_string();
        assert!(address.starts_with("127.0.0.1:"), "{name}: {line}");
        let server = processes_mentioning(tmp.path().to_str().unwrap());
        assert!(
            !server.is_empty(),
            "{name}: no process runs in its directory"
        );
        let json = tmp.path().join("load.json");
        tlslab(&[
            "load",
            "--target",
            &address,
            "--no-probe",
            "--size",
            "2k",
            "--rate",
            "10",
            "--duration",
            "0.1",
            "--max-requests",
            "1",
            "--no-db",
            "-q",
            "--cert-dir",
            certs,
            "--export-json",
            json.to_str().unwrap(),
        ])
        .expect_code(0);
        let run: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(run["answered"], 1, "{name}: {run}");
        assert_eq!(run["payload_bytes_checked"], 2_000, "{name}: {run}");
        job.signal(libc::SIGTERM);
        let (status, stderr) = job.finish(Duration::from_secs(30));
        assert_eq!(status.code(), Some(0), "{name}: {stderr}");
        assert_eq!(
            wait_gone(&server, Duration::from_secs(5)),
            Vec::<u32>::new(),
            "{name}: the server outlived serve"
        );
        assert_eq!(crate::servers::leftovers(tmp.path()), Vec::<String>::new(), "{name}");
    }
}

/// The embedded server is `serve` itself, and a program serves one
/// configuration: both refused before anything starts.
#[test]
fn serve_server_refuses_the_embedded_server_and_lists() {
    let run = tlslab(&["serve", "--server", "embedded"]);
    run.expect_code(2);
    assert!(run.stderr().contains("nginx"), "{}", run.stderr());
    let run = tlslab(&["serve", "--server", "nginx", "--group", "x25519,p256"]);
    run.expect_code(2);
    assert!(run.stderr().contains("one value"), "{}", run.stderr());
}
