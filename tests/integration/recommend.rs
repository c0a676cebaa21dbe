//! `tlslab recommend` on a stored mock run: a dominated row is listed with
//! the row that dominates it, a floor excludes rows with the reason, and a
//! role that does not fit the run is a usage error.

use crate::util::{cert_dir, tlslab, tlslab_at};

/// A mock handshake run in a fresh database; returns the database's path.
fn mock_run(dir: &std::path::Path) -> String {
    let db = dir.join("db.sqlite").to_str().unwrap().to_string();
    tlslab(&[
        "handshake",
        "--backend",
        "mock",
        "--tls",
        "1.2",
        "--group",
        "rsa,dhe1024,x25519,p384",
        "--cert",
        "rsa2048,ecdsa_p256",
        "--runs",
        "5",
        "--warmup",
        "0",
        "--db",
        &db,
        "--cert-dir",
        cert_dir().to_str().unwrap(),
        "-q",
    ])
    .expect_code(0);
    db
}

/// The rows of a recommend JSON export, by label.
fn verdicts(
    dir: &std::path::Path,
    db: &str,
    extra: &[&str],
) -> std::collections::BTreeMap<String, serde_json::Value> {
    let json = dir.join("recommend.json");
    let mut args = vec![
        "recommend",
        "--db",
        db,
        "--export-json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    tlslab(&args).expect_code(0);
    let data: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    data["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| (row["label"].as_str().unwrap().to_string(), row.clone()))
        .collect()
}

const X25519_ECDSA: &str = "handshake_1.2_x25519_ecdsa_p256_aes128gcm";
const X25519_RSA: &str = "handshake_1.2_x25519_rsa2048_aes128gcm";
const RSA_KX: &str = "handshake_1.2_rsa_rsa2048_aes128gcm";
const DHE1024: &str = "handshake_1.2_dhe1024_rsa2048_aes128gcm";

#[test]
fn a_dominated_row_names_its_dominator_and_a_floor_says_why_rows_are_out() {
    let dir = tempfile::tempdir().unwrap();
    let db = mock_run(dir.path());

    // The mock server signs with ECDSA cheaper than with RSA, and an
    // RSA-2048 certificate rates 112 bits against P-256's 128: the RSA row
    // of the same key exchange is dominated by the ECDSA row.
    let rows = verdicts(dir.path(), &db, &[]);
    assert_eq!(rows[X25519_ECDSA]["verdict"]["verdict"], "recommended");
    assert_eq!(rows[X25519_RSA]["verdict"]["verdict"], "dominated");
    assert_eq!(rows[X25519_RSA]["dominated_by"], X25519_ECDSA);
    // Weak rows are out by default.
    assert_eq!(rows[DHE1024]["verdict"]["verdict"], "below_floor");

    let rows = verdicts(
        dir.path(),
        &db,
        &["--min-security", "128", "--forward-secrecy"],
    );
    let reasons = rows[RSA_KX]["verdict"]["reasons"].to_string();
    assert!(reasons.contains("112 bits < 128"), "{reasons}");
    assert!(reasons.contains("no forward secrecy"), "{reasons}");
    let reasons = rows[X25519_RSA]["verdict"]["reasons"].to_string();
    assert!(reasons.contains("RSA-2048 certificate"), "{reasons}");
    assert_eq!(rows[X25519_ECDSA]["verdict"]["verdict"], "recommended");

    // The table says the same, with the reason beside the row.
    let table = tlslab(&["recommend", "--db", &db, "--role", "client", "--wide"]);
    table.expect_code(0);
    assert!(
        table.stdout().contains("dominated by mock"),
        "{}",
        table.stdout()
    );
    assert!(
        table.stdout().contains("flagged weak"),
        "{}",
        table.stdout()
    );

    // The default table fits 80 and 120 columns, reasons as footnotes.
    for width in [80, 120] {
        let run = tlslab_at(
            &["recommend", "--db", &db, "--min-security", "112"],
            Some(width),
        );
        run.expect_code(0);
        let out = run.stdout();
        for line in out.lines() {
            assert!(line.chars().count() <= width, "{width}:\n{out}");
        }
        assert!(out.contains("flagged weak"), "{out}");
    }

    // A role the run has no figure for, or an unknown run, is a usage error.
    tlslab(&["recommend", "--db", &db, "--role", "tunnel"]).expect_code(2);
    tlslab(&["recommend", "--db", &db, "--role", "nonsense"]).expect_code(2);
    tlslab(&["recommend", "--db", &db, "--run", "99"]).expect_code(2);
}

#[test]
fn a_tunnel_run_is_priced_per_megabyte_and_weak_ciphers_are_out() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").to_str().unwrap().to_string();
    tlslab(&[
        "tunnel",
        "--cipher",
        "aes-128-gcm,bf-cbc,des-cbc",
        "--digest",
        "sha256",
        "--runs",
        "3",
        "--warmup",
        "0",
        "--db",
        &db,
        "-q",
    ])
    .expect_code(0);
    let rows = verdicts(dir.path(), &db, &[]);
    let gcm = "tunnel_aes-128-gcm_none_none_random_1400";
    assert_eq!(rows[gcm]["verdict"]["verdict"], "recommended", "{rows:?}");
    for weak in [
        "tunnel_bf-cbc_sha256_none_random_1400",
        "tunnel_des-cbc_sha256_none_random_1400",
        "tunnel_baseline_random_1400",
    ] {
        assert_eq!(rows[weak]["verdict"]["verdict"], "below_floor", "{weak}");
    }
    let rows = verdicts(dir.path(), &db, &["--forward-secrecy"]);
    let reasons = rows[gcm]["verdict"]["reasons"].to_string();
    assert!(reasons.contains("forward secrecy not known"), "{reasons}");
    tlslab(&["recommend", "--db", &db, "--role", "server"]).expect_code(2);
}

/// Issue 18 item 19: after a load run, a bare `recommend` read the load
/// run and blamed "the role server", which no one had given.
#[test]
fn bare_recommend_reads_the_latest_run_it_can_and_says_which_kinds_it_reads() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let db_text = db.to_str().unwrap();
    let load = || {
        tlslab(&[
            "load",
            "--server",
            "embedded",
            "--rate",
            "20",
            "--duration",
            "0.3",
            "--clients",
            "2",
            "--size",
            "1k",
            "-q",
            "--db",
            db_text,
        ])
        .expect_code(0)
        .stdout()
    };
    load();
    let none = tlslab(&["recommend", "--db", db_text]);
    none.expect_code(2);
    assert!(
        none.stderr().contains(&format!(
            "there is no run recommend reads in {db_text} (the latest, run 1, is a load run): it reads server, client (handshake and cost runs), tunnel (tunnel runs), bulk (bulk runs)"
        )),
        "{}",
        none.stderr()
    );
    assert!(!none.stderr().contains("the role server"));

    mock_run(dir.path());
    load();
    let picked = tlslab(&["recommend", "--db", db_text]);
    picked.expect_code(0);
    assert!(
        picked.stdout().contains("Run 2 (handshake run)"),
        "{}",
        picked.stdout()
    );
    let tunnel = tlslab(&["recommend", "--db", db_text, "--role", "tunnel"]);
    tunnel.expect_code(2);
    assert!(
        tunnel
            .stderr()
            .contains("there is no tunnel run for the role tunnel"),
        "{}",
        tunnel.stderr()
    );
}
