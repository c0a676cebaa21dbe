//! `tlslab serve` over HTTP/2 against a client tlslab did not write:
//! nghttp2's h2load (`-m`: streams at once per connection) on each kind of
//! backend the server runs on, every answer 200 with the whole page, the
//! server's own count matching; an unknown path 404 as for HTTP/1.1.

use std::process::Command;

use super::Served;
use crate::util::{has_row, skip_without};

/// h2load's output for `args`, which must have run to its summary.
fn h2load(args: &[&str]) -> String {
    let output = Command::new("h2load").args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "h2load {args:?}: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn h2load_gets_every_page_over_http2_from_serve() {
    let test = "h2load_gets_every_page_over_http2_from_serve";
    let missing = Command::new("h2load")
        .arg("--version")
        .output()
        .is_err()
        .then(|| "h2load is not installed".to_string());
    if skip_without(missing, test, "apt-get install nghttp2-client") {
        return;
    }
    for backend in ["openssl", "rustls-aws-lc"] {
        let served = Served::start(&["--backend", backend, "--duration", "60", "--threads", "2"]);
        let base = format!("https://{}", served.address);
        // 200 pages of 20 kB: 4 connections, 8 streams at once on each.
        let pages = h2load(&[
            "-n",
            "200",
            "-c",
            "4",
            "-m",
            "8",
            &format!("{base}/page_20000"),
        ]);
        for expected in [
            "Application protocol: h2",
            "requests: 200 total, 200 started, 200 done, 200 succeeded, 0 failed, 0 errored, 0 timeout",
            "status codes: 200 2xx, 0 3xx, 0 4xx, 0 5xx",
            "(4000000) data",
        ] {
            assert!(pages.contains(expected), "{backend}: {expected:?}\n{pages}");
        }
        let missing = h2load(&["-n", "3", "-c", "1", &format!("{base}/index.html")]);
        assert!(
            missing.contains("status codes: 0 2xx, 0 3xx, 3 4xx, 0 5xx"),
            "{backend}: {missing}"
        );
        let ended = served.terminate();
        assert_eq!(ended.code, Some(0), "{backend}: {}", ended.stderr);
        for (row, count) in [
            ("requests answered with a page", "200"),
            ("requests refused (bad path, method or head)", "3"),
        ] {
            assert!(
                has_row(&ended.stdout, &[row, count]),
                "{backend}: {row}\n{}",
                ended.stdout
            );
        }
        assert!(
            has_row(&ended.stdout, &["failed handshakes", "0"]),
            "{backend}: {}",
            ended.stdout
        );
    }
}
