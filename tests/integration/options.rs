//! What a user reads and types on every command: help texts that say what
//! an option takes and what it defaults to, one name per thing with the
//! old names still accepted, and durations with units.

use crate::util::{cert_dir, tlslab};

fn json_of(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Issue 18 item 22: `--duration 4s` was refused ("invalid float literal").
#[test]
fn durations_take_units_as_well_as_plain_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("load.json");
    let run = tlslab(&[
        "load",
        "--no-db",
        "--server",
        "embedded",
        "--rate",
        "20",
        "--duration",
        "1s",
        "--ramp",
        "0ms",
        "--clients",
        "1",
        "-q",
        "--cert-dir",
        cert_dir().to_str().unwrap(),
        "--export-json",
        json.to_str().unwrap(),
    ]);
    run.expect_code(0);
    // 20 requests per second for one second.
    assert_eq!(json_of(&json)["answered"], 20, "{}", run.stdout());

    let run = tlslab(&[
        "handshake",
        "--no-db",
        "--backend",
        "openssl",
        "--cert",
        "ecdsa_p256",
        "--min-samples",
        "2",
        "--max-time",
        "200ms",
        "--warmup",
        "10ms",
        "--max-total-time",
        "0.1m",
        "-q",
        "--cert-dir",
        cert_dir().to_str().unwrap(),
    ]);
    run.expect_code(0);

    for (value, says) in [
        ("4x", "is not a duration"),
        ("-1s", "cannot be negative"),
        ("NaN", "is not a duration"),
    ] {
        let run = tlslab(&["serve", "--duration", value]);
        run.expect_code(2);
        assert!(
            run.stderr().contains(says) && run.stderr().contains("--duration"),
            "{value}: {}",
            run.stderr()
        );
    }
    let run = tlslab(&["bulk", "--max-time", "4x"]);
    run.expect_code(2);
    assert!(run.stderr().contains("500ms, 4s, 2m"), "{}", run.stderr());
}
