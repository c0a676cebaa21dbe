//! `handshake --server LIST` (issue 26, one table across servers): every
//! row against every server listed in one run and one table, the servers
//! taken from the registry; a server not installed or failing to start
//! gives rows that say why while the others are measured; nothing is left
//! running, at the end or after Ctrl-C.

use std::path::Path;

use tlslab::scenario::Named;
use tlslab::workload::server::SERVERS;

use super::{available, leftovers, tlslab_in};
use crate::util::{cert_dir, nginx_lock, processes_mentioning, tlslab};

/// The JSON export's rows.
fn rows_of(path: &Path) -> Vec<serde_json::Value> {
    let run: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    run["rows"].as_array().unwrap().clone()
}

/// A small matrix (TLS 1.3, X25519 and P-256, ECDSA) against `servers`,
/// with tlslab's OpenSSL for the embedded server's rows.
fn matrix<'a>(servers: &'a str, runs: &'a str, certs: &'a Path) -> Vec<&'a str> {
    vec![
        "handshake",
        "--server",
        servers,
        "--backend",
        "openssl",
        "--tls",
        "1.3",
        "--group",
        "x25519,p256",
        "--cert",
        "ecdsa_p256",
        "--runs",
        runs,
        "--warmup",
        "0",
        "-q",
        "--cert-dir",
        certs.to_str().unwrap(),
    ]
}

/// Every registered server in one run: one table whose rows are every
/// scenario against every server (the embedded server's named after its
/// backend), each installed server's rows measured and verified, each
/// missing one's saying how to install it; the stored run reads back with
/// the same rows; nothing is left running, and Ctrl-C during such a run
/// exits 130 with every server stopped.
#[test]
fn issue26_every_server_listed_is_measured_in_one_table() {
    let _one = nginx_lock();
    let test = "issue26_every_server_listed_is_measured_in_one_table";
    let installed: Vec<&str> = available(test).iter().map(|s| s.id.id()).collect();
    let listed: Vec<&str> = SERVERS.iter().map(|s| s.id.id()).collect();
    let list = listed.join(",");
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("handshake.json");
    let db = tmp.path().join("db.sqlite");
    let certs = cert_dir();
    let mut args = matrix(&list, "3", &certs);
    args.extend([
        "--db",
        db.to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
    ]);
    let run = tlslab_in(tmp.path(), &args);
    run.expect_code(0);
    let rows = rows_of(&json);
    assert_eq!(rows.len(), 2 * SERVERS.len(), "{rows:#?}");
    for descriptor in SERVERS {
        let backend = if descriptor.in_process {
            "openssl"
        } else {
            descriptor.id.id()
        };
        for group in ["x25519", "p256"] {
            let label = format!("handshake_1.3_{group}_ecdsa_p256_aes128gcm");
            let row = rows
                .iter()
                .find(|r| r["backend"] == backend && r["label"] == label.as_str())
                .unwrap_or_else(|| panic!("no {backend} row {label}: {rows:#?}"));
            if installed.contains(&descriptor.id.id()) {
                assert_eq!(row["status"], "measured", "{backend}: {row}");
                assert_eq!(row["sample_count"], 3, "{backend}: {row}");
                assert_eq!(row["negotiated"]["group"], group, "{backend}: {row}");
                assert!(
                    row["server_cpu_us"]["median"].as_f64().unwrap() > 0.0,
                    "{backend}: {row}"
                );
            } else {
                assert_eq!(row["status"], "unsupported", "{backend}: {row}");
                let reason = row["reason"].as_str().unwrap();
                assert!(reason.contains(descriptor.install), "{backend}: {reason}");
            }
        }
    }
    // One table: each server's rows under the same header.
    let stdout = run.stdout();
    let headers = stdout.lines().filter(|l| l.starts_with("backend ")).count();
    assert_eq!(headers, 1, "{stdout}");
    // The stored run distinguishes the servers as the live one did.
    let again = tmp.path().join("again.json");
    tlslab(&[
        "report",
        "--db",
        db.to_str().unwrap(),
        "--export-json",
        again.to_str().unwrap(),
    ])
    .expect_code(0);
    let backends = |rows: Vec<serde_json::Value>| -> Vec<(String, String)> {
        rows.iter()
            .map(|r| (r["backend"].to_string(), r["label"].to_string()))
            .collect()
    };
    assert_eq!(backends(rows_of(&again)), backends(rows));
    let tmp_text = tmp.path().to_str().unwrap();
    assert_eq!(processes_mentioning(tmp_text), Vec::<u32>::new());
    assert_eq!(leftovers(tmp.path()), Vec::<String>::new());

    let interrupted = std::process::Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args(matrix(&list, "100000", &certs))
        .arg("--no-db")
        .env("TMPDIR", tmp.path())
        .env("TLSLAB_TEST_SIGINT_AFTER_ROUNDS", "2")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&interrupted.stderr);
    assert_eq!(interrupted.status.code(), Some(130), "{stderr}");
    assert_eq!(processes_mentioning(tmp_text), Vec::<u32>::new());
    assert_eq!(leftovers(tmp.path()), Vec::<String>::new());
}

/// A server hidden from tlslab (its binary variable names no file): its
/// rows are unsupported and say how to install it, the embedded server's
/// rows beside them are measured, and the exit code is that of rows a
/// backend cannot do (0). Alone, the same server gives the same rows.
#[test]
fn issue26_a_missing_servers_rows_say_why_and_the_others_are_measured() {
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("handshake.json");
    let certs = cert_dir();
    for list in ["embedded,apache", "apache"] {
        let mut args = matrix(list, "3", &certs);
        args.extend(["--no-db", "--export-json", json.to_str().unwrap()]);
        let run = std::process::Command::new(env!("CARGO_BIN_EXE_tlslab"))
            .args(&args)
            .env("TLSLAB_APACHE", tmp.path().join("no-apache2"))
            .env("TMPDIR", tmp.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&run.stdout);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(0), "{list}: {stderr}");
        assert!(
            stdout.contains("Apache httpd is not installed"),
            "{list}: {stdout}"
        );
        let rows = rows_of(&json);
        let apache: Vec<_> = rows.iter().filter(|r| r["backend"] == "apache").collect();
        assert_eq!(apache.len(), 2, "{list}: {rows:#?}");
        for row in apache {
            assert_eq!(row["status"], "unsupported", "{list}: {row}");
            assert!(
                row["reason"]
                    .as_str()
                    .unwrap()
                    .contains("apt-get install apache2"),
                "{list}: {row}"
            );
        }
        let embedded: Vec<_> = rows.iter().filter(|r| r["backend"] == "openssl").collect();
        assert_eq!(
            embedded.len(),
            if list == "apache" { 0 } else { 2 },
            "{list}"
        );
        for row in embedded {
            assert_eq!(row["status"], "measured", "{list}: {row}");
            assert_eq!(row["sample_count"], 3, "{list}: {row}");
        }
    }
    assert_eq!(leftovers(tmp.path()), Vec::<String>::new());
}

/// A server that is installed but will not start (here a stand-in for
/// nginx that writes to its error log and exits): its rows fail with the
/// last lines of that log, the embedded server's rows are measured, and
/// the run exits 1 as for any failed row.
#[test]
fn issue26_a_server_that_fails_to_start_fails_its_rows_with_its_log() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let broken = tmp.path().join("nginx");
    // tlslab runs `nginx -V` for the versions, then `nginx -p DIR -c CONF
    // -e LOG`.
    std::fs::write(
        &broken,
        "#!/bin/sh\n\
         if [ \"$1\" = -V ]; then echo 'nginx version: nginx/0.0.0' >&2; exit 0; fi\n\
         echo 'emerg: this nginx cannot start' >> \"$6\"\n\
         exit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&broken, std::fs::Permissions::from_mode(0o755)).unwrap();
    let json = tmp.path().join("handshake.json");
    let certs = cert_dir();
    let mut args = matrix("nginx,embedded", "3", &certs);
    args.extend(["--no-db", "--export-json", json.to_str().unwrap()]);
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args(&args)
        .env("TLSLAB_NGINX", &broken)
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    let rows = rows_of(&json);
    for row in &rows {
        if row["backend"] == "nginx" {
            assert_eq!(row["status"], "failed", "{row}");
            assert!(
                row["reason"]
                    .as_str()
                    .unwrap()
                    .contains("emerg: this nginx cannot start"),
                "{row}"
            );
        } else {
            assert_eq!(row["backend"], "openssl", "{row}");
            assert_eq!(row["status"], "measured", "{row}");
        }
    }
    assert_eq!(rows.len(), 4, "{rows:#?}");
    assert_eq!(leftovers(tmp.path()), Vec::<String>::new());
}

/// An unknown name in a list is refused before anything starts, listing
/// every registered server; programs alone take no other --backend.
#[test]
fn issue26_an_unknown_server_in_a_list_is_a_usage_error() {
    let names: Vec<&str> = SERVERS.iter().map(|s| s.id.id()).collect();
    let run = tlslab(&["handshake", "--server", "embedded,lighttpd"]);
    run.expect_code(2);
    assert!(run.stderr().contains(&names.join(", ")), "{}", run.stderr());
    let programs: Vec<&str> = SERVERS
        .iter()
        .filter(|s| !s.in_process)
        .map(|s| s.id.id())
        .collect();
    let run = tlslab(&[
        "handshake",
        "--server",
        &programs.join(","),
        "--backend",
        "rustls-ring",
    ]);
    run.expect_code(2);
    assert!(run.stderr().contains("--backend"), "{}", run.stderr());
}
