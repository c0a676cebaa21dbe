//! `tlslab load --server A,B,... --cert C,D` (issue 26): one load per
//! server and certificate, back to back, each stored as a run of its own,
//! side by side in one table (with each certificate's server CPU per
//! request against the first's); a server that cannot run is a row that
//! says why while the others run; Ctrl-C keeps every finished run; options
//! that cannot go with several servers or certificates are usage errors.

use std::time::Duration;

use tlslab::scenario::{Named, ServerKind};
use tlslab::workload::server::descriptor;

use crate::util::{cert_dir, nginx_lock, skip_without, tlslab, Job};

fn json_of(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The runs `tlslab report --list` shows: each one's id, kind and status.
fn runs(db: &std::path::Path) -> Vec<(String, String, String)> {
    let listed = tlslab(&["report", "--list", "--db", db.to_str().unwrap()]);
    listed.expect_code(0);
    listed
        .stdout()
        .lines()
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let id = words.first()?;
            (words.len() > 5 && id.chars().all(|c| c.is_ascii_digit()))
                .then(|| (id.to_string(), words[3].to_string(), words[5].to_string()))
        })
        .collect()
}

/// Returns true if and only if `kind` can run here; else says the test
/// skips (and fails under `CI`).
fn installed(kind: ServerKind, test: &str) -> bool {
    let server = descriptor(kind);
    !skip_without(
        (server.missing)(),
        &format!("{test} ({})", kind.id()),
        server.install,
    )
}

/// The embedded server and nginx, and Apache where it is installed, in
/// HTTP/1.1 and HTTP/2: every server's load answers every request, each is
/// a row of the servers table and a run of its own; a server that does not
/// speak h2 (tlslab's embedded server until it does) has an HTTP/2 row
/// that says why.
#[test]
fn issue26_a_load_over_several_servers_gives_every_servers_rows_and_runs() {
    let test = "issue26_a_load_over_several_servers_gives_every_servers_rows_and_runs";
    let _one = nginx_lock();
    if !installed(ServerKind::Nginx, test) {
        return;
    }
    let mut servers = vec!["embedded", "nginx"];
    if installed(ServerKind::Apache, test) {
        servers.push("apache");
    }
    let list = servers.join(",");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("load.json");
    let db = dir.path().join("db.sqlite");
    let run = tlslab(&[
        "load",
        "--server",
        &list,
        "--http",
        "1.1,2",
        "--rate",
        "20",
        "--duration",
        "1",
        "--size",
        "2k",
        "--clients",
        "2",
        "-q",
        "--db",
        db.to_str().unwrap(),
        "--cert-dir",
        cert_dir().to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
    ]);
    run.expect_code(0);
    assert!(
        run.stdout().contains("Servers side by side"),
        "{}",
        run.stdout()
    );
    let rows = json_of(&json)["servers"].as_array().unwrap().clone();
    assert_eq!(rows.len(), servers.len() * 2, "{rows:#?}");
    let mut loaded = 0;
    for (row, (server, version)) in rows.iter().zip(
        servers
            .iter()
            .flat_map(|server| [(server, "1.1"), (server, "2")]),
    ) {
        if let Some(why) = row["unusable"].as_str() {
            // Only the embedded server's HTTP/2, while it speaks HTTP/1.1 only.
            assert_eq!(
                (row["server"].as_str(), row["http"].as_str()),
                (Some(*server), Some("2"))
            );
            assert_eq!(*server, "embedded", "{row}");
            assert!(why.contains("--http 2") && why.contains("h2"), "{row}");
            assert_eq!(row["failed"], false, "{row}");
            continue;
        }
        loaded += 1;
        assert_eq!(row["server_name"], *server, "{row}");
        assert_eq!(row["plan"]["http"], version, "{server}: {row}");
        assert_eq!(row["answered"], 20, "{server} HTTP/{version}: {row}");
        assert_eq!(row["payload_bytes_checked"], 20 * 2_000, "{server}: {row}");
        assert!(
            row["server_cpu_ns"].as_u64().unwrap() > 0,
            "{server}: {row}"
        );
    }
    assert!(loaded >= 2 * servers.len() - 1, "{rows:#?}");
    // Each load a run of its own, every one complete.
    let expected: Vec<_> = (1..=loaded)
        .map(|id| (id.to_string(), "load".to_string(), "complete".to_string()))
        .collect();
    assert_eq!(runs(&db), expected);
}

/// A server hidden from tlslab (its binary variable names no file) beside
/// the embedded server: its row says why and how to install it, the
/// embedded server is loaded, and the run exits 0 (a server that cannot
/// run here is a result). Alone, the same server stops the command as it
/// did before.
#[test]
fn issue26_a_missing_server_beside_others_is_a_row_that_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("load.json");
    let db = dir.path().join("db.sqlite");
    let hidden = dir.path().join("no-apache2");
    let load = |servers: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_tlslab"))
            .args([
                "load",
                "--server",
                servers,
                "--rate",
                "10",
                "--duration",
                "1",
                "--clients",
                "1",
                "-q",
                "--db",
                db.to_str().unwrap(),
                "--cert-dir",
                cert_dir().to_str().unwrap(),
                "--export-json",
                json.to_str().unwrap(),
            ])
            .env("TLSLAB_APACHE", &hidden)
            .env("TMPDIR", dir.path())
            .output()
            .unwrap()
    };
    let run = load("apache,embedded");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("Apache httpd is not installed"), "{stdout}");
    let rows = json_of(&json)["servers"].as_array().unwrap().clone();
    assert_eq!(rows.len(), 2, "{rows:#?}");
    assert_eq!(rows[0]["server"], "apache");
    assert!(
        rows[0]["unusable"]
            .as_str()
            .is_some_and(|why| why.contains("apt-get install apache2")),
        "{rows:#?}"
    );
    assert_eq!(rows[1]["server_name"], "embedded");
    assert_eq!(rows[1]["answered"], 10, "{rows:#?}");
    // The embedded server's load is the run begun for the command.
    let shown = tlslab(&["report", "--db", db.to_str().unwrap(), "--run", "1"]);
    shown.expect_code(0);
    assert!(
        shown.stdout().contains("embedded server"),
        "{}",
        shown.stdout()
    );

    let alone = load("apache");
    assert_ne!(alone.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&alone.stderr).contains("Apache httpd is not installed"),
        "{}",
        String::from_utf8_lossy(&alone.stderr)
    );
}

/// Ctrl-C while the second server is loaded: the first server's load is
/// kept as a complete run, the second's as an incomplete one, and the
/// exit status is 130.
#[test]
fn issue26_ctrl_c_keeps_every_finished_servers_run() {
    let test = "issue26_ctrl_c_keeps_every_finished_servers_run";
    let _one = nginx_lock();
    if !installed(ServerKind::Nginx, test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let mut job = Job::start(
        &[
            "load",
            "--server",
            "embedded,nginx",
            "--rate",
            "20",
            "--duration",
            "2",
            "--clients",
            "2",
            "--db",
            db.to_str().unwrap(),
            "--cert-dir",
            cert_dir().to_str().unwrap(),
        ],
        &[("TMPDIR", dir.path().as_os_str())],
    );
    job.wait_for_line("loading nginx", Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(500));
    job.signal(libc::SIGINT);
    let (status, stderr) = job.finish(Duration::from_secs(20));
    assert_eq!(status.code(), Some(130), "{stderr}");
    let status: Vec<_> = runs(&db)
        .into_iter()
        .map(|(id, _, status)| (id, status))
        .collect();
    assert_eq!(
        status,
        [
            ("1".to_string(), "complete".to_string()),
            ("2".to_string(), "incomplete".to_string())
        ]
    );
    let connection = rusqlite::Connection::open(&db).unwrap();
    let answered = |run: i64| -> (i64, bool) {
        connection
            .query_row(
                "SELECT answered, interrupted FROM load_summaries WHERE run_id = ?1",
                [run],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .unwrap()
    };
    assert_eq!(answered(1), (40, false));
    let (second, interrupted) = answered(2);
    assert!(interrupted && second < 40, "{second}");
}

/// What cannot go with several servers, or with none that the option
/// concerns, is refused before anything starts (exit 2).
#[test]
fn issue26_bad_combinations_with_several_servers_are_usage_errors() {
    for (args, expected) in [
        (
            vec![
                "load",
                "--server",
                "embedded,nginx",
                "--shard",
                "1/2",
                "--start-at",
                "4000000000",
            ],
            "a sharded load drives one server",
        ),
        (
            vec!["load", "--server", "nginx,apache", "--backend", "openssl"],
            "configure the embedded server",
        ),
        (
            vec![
                "load",
                "--server",
                "nginx,embedded",
                "--target",
                "127.0.0.1:9",
            ],
            "cannot be used with",
        ),
        (vec!["load", "--server", "nginx,lighttpd"], "lighttpd"),
    ] {
        let run = tlslab(&args);
        run.expect_code(2);
        assert!(
            run.stderr().contains(expected),
            "{args:?}: {}",
            run.stderr()
        );
    }
}

/// The Markdown table under the header that starts with `first_headers`:
/// its header and its rows, each cell trimmed.
fn markdown_table(markdown: &str, first_headers: &str) -> Vec<Vec<String>> {
    let cells = |line: &str| -> Vec<String> {
        line.trim()
            .trim_matches('|')
            .split('|')
            .map(|cell| cell.trim().to_string())
            .collect()
    };
    let mut lines = markdown
        .lines()
        .skip_while(|line| !line.replace(' ', "").starts_with(first_headers));
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    let mut table = vec![cells(header)];
    // The rule under the header, then the rows up to the first other line.
    table.extend(
        lines
            .skip(1)
            .take_while(|line| line.trim_start().starts_with('|'))
            .map(cells),
    );
    table
}

/// `load --cert rsa2048,ecdsa_p256` on the embedded server (always here):
/// the server is loaded once per certificate, back to back, both loads in
/// one servers table with a certificate column and each one's server CPU
/// per request against RSA's, and each load a run of its own that names
/// its own certificate.
#[test]
fn issue26_a_load_over_two_certificates_gives_one_table_with_a_ratio_and_a_run_each() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("load.json");
    let markdown = dir.path().join("load.md");
    let db = dir.path().join("db.sqlite");
    let run = tlslab(&[
        "load",
        "--server",
        "embedded",
        "--cert",
        "rsa2048,ecdsa_p256",
        "--rate",
        "20",
        "--duration",
        "1",
        "--size",
        "2k",
        "--clients",
        "2",
        "-q",
        "--db",
        db.to_str().unwrap(),
        "--cert-dir",
        cert_dir().to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
        "--export-markdown",
        markdown.to_str().unwrap(),
    ]);
    run.expect_code(0);
    assert!(
        run.stdout().contains("Servers side by side"),
        "{}",
        run.stdout()
    );
    let rows = json_of(&json)["servers"].as_array().unwrap().clone();
    assert_eq!(rows.len(), 2, "{rows:#?}");
    for (row, cert) in rows.iter().zip(["rsa2048", "ecdsa_p256"]) {
        assert_eq!(row["server_name"], "embedded", "{row}");
        assert_eq!(row["cert"], cert, "{row}");
        assert_eq!(row["answered"], 20, "{cert}: {row}");
        assert!(row["server_cpu_ns"].as_u64().unwrap() > 0, "{cert}: {row}");
    }
    // One table: a row per certificate, RSA's ratio 1.00, ECDSA's a number.
    let markdown = std::fs::read_to_string(&markdown).unwrap();
    let table = markdown_table(&markdown, "|server|certificate|HTTP|");
    assert_eq!(table.len(), 3, "{markdown}");
    let ratio = table[0]
        .iter()
        .position(|header| header == "server CPU vs rsa2048")
        .unwrap_or_else(|| panic!("{markdown}"));
    assert_eq!(table[1][1], "rsa2048", "{markdown}");
    assert_eq!(table[2][1], "ecdsa_p256", "{markdown}");
    assert_eq!(table[1][ratio], "1.00", "{markdown}");
    assert!(
        table[2][ratio].parse::<f64>().is_ok_and(|r| r > 0.0),
        "{markdown}"
    );
    assert!(
        markdown.contains("server CPU vs rsa2048: the row's server CPU per answered request"),
        "{markdown}"
    );
    // A run per certificate, each complete, each naming its certificate.
    assert_eq!(
        runs(&db),
        [
            ("1".to_string(), "load".to_string(), "complete".to_string()),
            ("2".to_string(), "load".to_string(), "complete".to_string())
        ]
    );
    let connection = rusqlite::Connection::open(&db).unwrap();
    let stored = |run: i64| -> (String, String) {
        connection
            .query_row(
                "SELECT l.scenario_id, r.options_json FROM load_summaries l JOIN runs r ON r.id = l.run_id WHERE l.run_id = ?1",
                [run],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .unwrap()
    };
    for (run, cert) in [(1, "rsa2048"), (2, "ecdsa_p256")] {
        let (scenario, options) = stored(run);
        assert!(scenario.contains(cert), "run {run}: {scenario}");
        let options: serde_json::Value = serde_json::from_str(&options).unwrap();
        assert_eq!(options["scenario"], scenario.as_str(), "run {run}");
        assert_eq!(
            options["certs"],
            serde_json::json!(["rsa2048", "ecdsa_p256"])
        );
    }
}

/// What cannot go with several certificates is refused before anything
/// starts (exit 2), and an unknown certificate lists the valid ones.
#[test]
fn issue26_bad_combinations_with_several_certificates_are_usage_errors() {
    for (args, expected) in [
        (
            vec![
                "load",
                "--server",
                "embedded",
                "--cert",
                "rsa2048,ecdsa_p256",
                "--shard",
                "1/2",
                "--start-at",
                "4000000000",
            ],
            "give one --cert",
        ),
        (
            vec![
                "load",
                "--cert",
                "rsa2048,ecdsa_p256",
                "--target",
                "127.0.0.1:9",
            ],
            "give one --cert",
        ),
        (
            vec!["load", "--server", "embedded", "--cert", "rsa2048,rsa1024"],
            "ecdsa_p256",
        ),
    ] {
        let run = tlslab(&args);
        run.expect_code(2);
        assert!(
            run.stderr().contains(expected),
            "{args:?}: {}",
            run.stderr()
        );
    }
}

/// Ctrl-C while the second certificate is loaded: the first
/// certificate's load is kept as a complete run, the second's as an
/// incomplete one, and the exit status is 130.
#[test]
fn issue26_ctrl_c_keeps_every_finished_certificates_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let mut job = Job::start(
        &[
            "load",
            "--server",
            "embedded",
            "--cert",
            "rsa2048,ecdsa_p256",
            "--rate",
            "20",
            "--duration",
            "2",
            "--clients",
            "2",
            "--db",
            db.to_str().unwrap(),
            "--cert-dir",
            cert_dir().to_str().unwrap(),
        ],
        &[("TMPDIR", dir.path().as_os_str())],
    );
    job.wait_for_line("with ecdsa_p256", Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(500));
    job.signal(libc::SIGINT);
    let (status, stderr) = job.finish(Duration::from_secs(20));
    assert_eq!(status.code(), Some(130), "{stderr}");
    let status: Vec<_> = runs(&db)
        .into_iter()
        .map(|(id, _, status)| (id, status))
        .collect();
    assert_eq!(
        status,
        [
            ("1".to_string(), "complete".to_string()),
            ("2".to_string(), "incomplete".to_string())
        ]
    );
    let connection = rusqlite::Connection::open(&db).unwrap();
    let answered = |run: i64| -> (String, i64, bool) {
        connection
            .query_row(
                "SELECT scenario_id, answered, interrupted FROM load_summaries WHERE run_id = ?1",
                [run],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
            )
            .unwrap()
    };
    let (first, answered_first, interrupted_first) = answered(1);
    assert!(first.contains("rsa2048"), "{first}");
    assert_eq!((answered_first, interrupted_first), (40, false));
    let (second, answered_second, interrupted) = answered(2);
    assert!(second.contains("ecdsa_p256"), "{second}");
    assert!(interrupted && answered_second < 40, "{answered_second}");
}

/// A certificate the server cannot use (rustls has no Ed448) beside one it
/// can: its row says why, the other is loaded and stored, and the run
/// exits 0 (what a server cannot do is a result).
#[test]
fn issue26_a_certificate_the_server_cannot_use_is_a_row_that_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("load.json");
    let db = dir.path().join("db.sqlite");
    let run = tlslab(&[
        "load",
        "--server",
        "embedded",
        "--backend",
        "rustls-aws-lc",
        "--cert",
        "ecdsa_p256,ed448",
        "--rate",
        "10",
        "--duration",
        "1",
        "--clients",
        "1",
        "-q",
        "--db",
        db.to_str().unwrap(),
        "--cert-dir",
        cert_dir().to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
    ]);
    run.expect_code(0);
    let rows = json_of(&json)["servers"].as_array().unwrap().clone();
    assert_eq!(rows.len(), 2, "{rows:#?}");
    assert_eq!(rows[0]["cert"], "ecdsa_p256", "{rows:#?}");
    assert_eq!(rows[0]["answered"], 10, "{rows:#?}");
    assert_eq!(rows[1]["cert"], "ed448", "{rows:#?}");
    assert_eq!(rows[1]["failed"], false, "{rows:#?}");
    assert!(
        rows[1]["unusable"]
            .as_str()
            .is_some_and(|why| why.contains("cannot use ed448")),
        "{rows:#?}"
    );
    assert_eq!(runs(&db).len(), 1);
}
