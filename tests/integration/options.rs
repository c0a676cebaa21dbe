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
    // 20 requests per second for one second: offered, whether or not a
    // loaded machine answered each in time.
    assert_eq!(json_of(&json)["offered"], 20, "{}", run.stdout());

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

/// Issue 19 item 3: the shells complete the names an option takes, not
/// only the option (a named value is typed for clap, its aliases hidden).
#[test]
fn bash_completes_the_names_of_a_typed_option() {
    let run = tlslab(&["completions", "bash"]);
    run.expect_code(0);
    let script = run.stdout();
    let lines: Vec<&str> = script.lines().collect();
    let group = lines
        .iter()
        .position(|line| line.trim() == "--group)")
        .expect("a case for --group");
    let words = lines[group + 1];
    assert!(words.contains("compgen -W"), "{words}");
    for name in ["x25519mlkem768", "dhe2048", "mlkem1024"] {
        assert!(words.contains(name), "{name}: {words}");
    }
    // An alias is accepted, not offered.
    assert!(!words.contains("P-256"), "{words}");
    let features = lines
        .iter()
        .position(|line| line.trim() == "--cpu-features)")
        .expect("a case for --cpu-features");
    assert!(
        lines[features + 1].contains("native generic"),
        "{}",
        lines[features + 1]
    );
}

/// Issue 19 item 3: a bad value of a typed option is refused by the
/// command line itself, naming the option and what it takes, exit 2,
/// before anything runs or is stored.
#[test]
fn a_bad_typed_value_exits_2_naming_the_option_and_what_it_takes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    for (args, expected) in [
        // A list of names.
        (
            vec!["handshake", "--group", "x25519,x9999"],
            vec![
                "invalid value 'x9999' for '--group <LIST>'",
                "valid groups: rsa, dhe1024",
                "x25519mlkem768",
            ],
        ),
        // One name where a list is no use.
        (
            vec!["load", "--suite", "aes-128-gcm,chacha20-poly1305"],
            vec!["--suite takes one value", "valid suites: aes-128-gcm"],
        ),
        // A size.
        (
            vec!["load", "--size", "fifty"],
            vec![
                "invalid value 'fifty' for '--size <BYTES>'",
                "give bytes (1400) or a number with k or m (50k, 1m)",
            ],
        ),
        // A percentage.
        (
            vec!["handshake", "--precision", "fast"],
            vec![
                "invalid value 'fast' for '--precision <PERCENT>'",
                "such as 1% or 0.5%",
            ],
        ),
        // A duration.
        (
            vec!["bulk", "--max-time", "soon"],
            vec![
                "invalid value 'soon' for '--max-time <DURATION>'",
                "500ms, 4s, 2m, 1h",
            ],
        ),
    ] {
        let mut all = args.clone();
        all.extend(["--db", db.to_str().unwrap()]);
        let run = tlslab(&all);
        run.expect_code(2);
        for text in expected {
            assert!(run.stderr().contains(text), "{args:?}: {}", run.stderr());
        }
    }
    assert!(!db.exists(), "nothing may be stored for bad options");
}

/// Every spelling of a name is the one value it names: the name tables
/// print, the stored id, and the others a person types.
#[test]
fn a_suite_is_one_suite_however_it_is_spelt() {
    let dir = tempfile::tempdir().unwrap();
    let label_of = |suite: &str| {
        let json = dir.path().join("run.json");
        let run = tlslab(&[
            "handshake",
            "--no-db",
            "-q",
            "--backend",
            "mock",
            "--group",
            "x25519",
            "--cert",
            "ecdsa_p256",
            "--suite",
            suite,
            "--runs",
            "2",
            "--cert-dir",
            cert_dir().to_str().unwrap(),
            "--export-json",
            json.to_str().unwrap(),
        ]);
        run.expect_code(0);
        let rows = json_of(&json)["rows"].clone();
        let labels: Vec<String> = rows
            .as_array()
            .unwrap()
            .iter()
            .map(|row| row["label"].as_str().unwrap().to_string())
            .collect();
        labels
    };
    let expected = vec!["handshake_1.3_x25519_ecdsa_p256_aes128gcm".to_string()];
    for suite in [
        "aes-128-gcm",
        "aes128gcm",
        "AES_128_GCM",
        "aes128gcm,aes-128-gcm",
    ] {
        assert_eq!(label_of(suite), expected, "--suite {suite}");
    }
}

/// The help of `command` with its lines joined by single spaces (clap
/// wraps help text at its own width).
fn help_text(command: &str) -> String {
    let run = tlslab(&[command, "--help"]);
    run.expect_code(0);
    run.stdout()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The help of one option of `command`, from its name to the next
/// option's, with lines joined by single spaces.
fn option_help(command: &str, option: &str) -> String {
    let run = tlslab(&[command, "--help"]);
    run.expect_code(0);
    let out = run.stdout();
    let mut block = Vec::new();
    let mut inside = false;
    for line in out.lines() {
        let trimmed = line.trim_start();
        let starts_option = trimmed.starts_with("--") || trimmed.starts_with("-h, ");
        let starts_option =
            starts_option || (trimmed.starts_with('-') && trimmed.chars().nth(2) == Some(','));
        if starts_option {
            inside = trimmed.starts_with(&format!("{option} "))
                || trimmed.contains(&format!(", {option} "))
                || trimmed == option;
        } else if !line.starts_with(' ') {
            inside = false;
        }
        if inside {
            block.push(trimmed);
        }
    }
    assert!(
        !block.is_empty(),
        "no {option} in `{command} --help`:\n{out}"
    );
    block
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The value of `[default: ...]` in an option's help.
fn default_in(help: &str) -> String {
    let start = help.find("[default: ").expect("a [default: ...]") + "[default: ".len();
    let end = start + help[start..].find(']').unwrap();
    help[start..end].to_string()
}

/// Issue 18 item 16: `load --help` was `handshake`'s: DTLS versions and
/// --transport that do not apply, `<LIST>` for options that take one value,
/// `[default: rsa2048,ecdsa_p256]` for --cert while load used ECDSA P-256,
/// and --mtu accepted and ignored.
#[test]
fn load_help_lists_only_what_load_takes_with_the_defaults_it_uses() {
    let help = help_text("load");
    for absent in ["DTLS", "dtls", "--mtu", "--transport", "datagram"] {
        assert!(
            !help.contains(absent),
            "load --help mentions {absent}: {help}"
        );
    }
    let mut defaults = Vec::new();
    for option in ["--tls", "--group", "--cert", "--suite", "--resumption"] {
        let text = option_help("load", option);
        // --cert takes a list since issue 26 (each server loaded once per
        // certificate); its default is still one value.
        if option != "--cert" {
            assert!(!text.contains("<LIST>"), "{option} takes one value: {text}");
        }
        // "1.3; the preset's": the value before any note.
        let default = default_in(&text);
        let value = default.split(';').next().unwrap().trim().to_string();
        assert!(!value.contains(','), "{option}: one default value: {text}");
        defaults.push((option, value));
    }

    // The defaults the help names are what a run without them uses.
    let dir = tempfile::tempdir().unwrap();
    let scenario_of = |extra: &[&str], name: &str| {
        let json = dir.path().join(name);
        let mut args = vec![
            "load",
            "--no-db",
            "--server",
            "embedded",
            "--rate",
            "10",
            "--duration",
            "0.3",
            "--clients",
            "1",
            "-q",
            "--cert-dir",
        ];
        let certs = cert_dir();
        args.push(certs.to_str().unwrap());
        args.extend(["--export-json", json.to_str().unwrap()]);
        args.extend_from_slice(extra);
        tlslab(&args).expect_code(0);
        let json = json_of(&json);
        (json["scenario"].clone(), json["plan"]["mode"].clone())
    };
    let implicit = scenario_of(&[], "implicit.json");
    let explicit_args: Vec<&str> = defaults
        .iter()
        .flat_map(|(option, value)| [*option, value.as_str()])
        .collect();
    let explicit = scenario_of(&explicit_args, "explicit.json");
    assert_eq!(implicit, explicit, "the help's defaults: {explicit_args:?}");
    assert!(
        implicit.0.as_str().unwrap().contains("ECDSA P-256"),
        "{implicit:?}"
    );

    // Options that do not apply are refused, not ignored.
    for args in [
        &["load", "--mtu", "500"][..],
        &["load", "--transport", "tcp"][..],
    ] {
        let run = tlslab(args);
        run.expect_code(2);
        assert!(
            run.stderr().contains("unexpected argument"),
            "{}",
            run.stderr()
        );
    }
    let run = tlslab(&["load", "--no-db", "--group", "x25519,p256"]);
    run.expect_code(2);
    assert!(
        run.stderr().contains("--group takes one value"),
        "{}",
        run.stderr()
    );
    for datagrams in ["dtls1.2", "quic"] {
        let run = tlslab(&["load", "--no-db", "--tls", datagrams]);
        run.expect_code(2);
        assert!(run
            .stderr()
            .contains("DTLS and QUIC are measured by handshake"));
    }
}

/// Issue 18 item 16: `speed --help` printed "[default: all]" twice, the
/// doc comment's and clap's; no option of any command says its default twice.
#[test]
fn no_option_states_its_default_twice() {
    for command in [
        "handshake",
        "bulk",
        "speed",
        "cost",
        "report",
        "load",
        "serve",
        "compare",
        "tunnel",
        "merge",
        "recommend",
    ] {
        let run = tlslab(&[command, "--help"]);
        run.expect_code(0);
        let out = run.stdout();
        let mut option = String::new();
        let mut count = 0;
        for line in out.lines() {
            let trimmed = line.trim_start();
            if trimmed.starts_with('-') && line.len() - trimmed.len() <= 6 {
                option = trimmed.split_whitespace().next().unwrap().to_string();
                count = 0;
            }
            count += line.matches("[default:").count();
            assert!(count <= 1, "{command} {option}: two defaults:\n{out}");
        }
    }
    assert_eq!(help_text("speed").matches("[default: all]").count(), 2);
}

/// Issue 18 item 16: `handshake --help` said "over memory buffers" only,
/// beside --transport, --server, --remote and --link.
#[test]
fn handshake_help_names_every_way_it_connects() {
    let run = tlslab(&["handshake", "--help"]);
    run.expect_code(0);
    let intro = run.stdout().split("Usage:").next().unwrap().to_string();
    let listed = tlslab(&["--help"]).stdout();
    let listed = listed.split_whitespace().collect::<Vec<_>>().join(" ");
    let listed = &listed[listed.find("handshake").unwrap()..listed.find("bulk").unwrap()];
    for text in [intro.as_str(), listed] {
        for way in ["memory", "--transport", "--server", "--remote", "--link"] {
            assert!(text.contains(way), "{way}: {text}");
        }
    }
}

/// The words of a table a person reads, without the stable labels
/// (`handshake_dtls1.2_...`), which keep their ids.
fn words_outside_labels(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || c == ',' || c == '(' || c == ')')
        .filter(|w| !w.contains('_') || !w.starts_with(|c: char| c.is_ascii_lowercase()))
        .map(String::from)
        .collect()
}

/// Issue 18 item 17: DTLS 1.2 was `dtls1.2` in the handshake table,
/// `DTLSv1.2` in the bulk table and `DTLS 1.2` in the TLS-against-DTLS
/// table; the suite was `aes128gcm` there and `aes-128-gcm` in tunnel's.
#[test]
fn every_table_spells_a_protocol_and_a_cipher_one_way() {
    let certs = cert_dir();
    let certs = certs.to_str().unwrap();
    let handshake = tlslab(&[
        "handshake",
        "--no-db",
        "--runs",
        "2",
        "--backend",
        "openssl",
        "--tls",
        "1.2,dtls1.2",
        "--group",
        "p256",
        "--cert",
        "ecdsa_p256",
        "--suite",
        "aes128gcm",
        "-q",
        "--cert-dir",
        certs,
    ]);
    handshake.expect_code(0);
    let handshake = handshake.stdout();
    assert!(
        handshake.contains("TLS against DTLS") && handshake.contains("TLS 1.2 / DTLS 1.2"),
        "{handshake}"
    );
    let bulk = tlslab(&[
        "bulk",
        "--no-db",
        "--runs",
        "2",
        "--size",
        "64",
        "--backend",
        "openssl",
        "--tls",
        "1.2,dtls1.2",
        "--suite",
        "aes128gcm",
        "-q",
        "--cert-dir",
        certs,
    ]);
    bulk.expect_code(0);
    let bulk = bulk.stdout();
    for (table, out) in [("handshake", &handshake), ("bulk", &bulk)] {
        let words = words_outside_labels(out);
        for other in ["dtls1.2", "DTLSv1.2", "TLSv1.2", "aes128gcm"] {
            assert!(
                !words.iter().any(|w| w == other),
                "{table} shows {other}:\n{out}"
            );
        }
        assert!(
            out.contains("DTLS 1.2") && out.contains("aes-128-gcm"),
            "{table}:\n{out}"
        );
        assert!(
            crate::util::has_row(out, &["openssl", "DTLS 1.2", "aes-128-gcm"]),
            "{table}:\n{out}"
        );
    }

    // The same cipher, named either way, is one row name in speed and tunnel.
    for (command, option) in [("speed", "--algorithm"), ("tunnel", "--cipher")] {
        for given in ["aes128gcm", "aes-128-gcm"] {
            let mut args = vec![command, "--no-db", "--runs", "2", option, given, "-q"];
            if command == "speed" {
                args.extend(["--backend", "openssl", "--size", "16"]);
            } else {
                args.extend(["--digest", "sha256"]);
            }
            let run = tlslab(&args);
            run.expect_code(0);
            let words = words_outside_labels(&run.stdout());
            assert!(
                words.iter().any(|w| w == "aes-128-gcm"),
                "{args:?}:\n{}",
                run.stdout()
            );
            assert!(
                !words.iter().any(|w| w == "aes128gcm"),
                "{args:?}:\n{}",
                run.stdout()
            );
        }
    }
    // speed's name of the P-256 key exchange is handshake's.
    let run = tlslab(&[
        "speed",
        "--no-db",
        "--runs",
        "2",
        "--backend",
        "openssl",
        "--algorithm",
        "ecdh_p256",
        "-q",
    ]);
    run.expect_code(0);
    assert!(
        crate::util::has_row(&run.stdout(), &["openssl", "p256", "keygen"]),
        "{}",
        run.stdout()
    );
    assert!(!run.stdout().contains("ecdh_p256"), "{}", run.stdout());
}

/// Issue 18 item 17: the old names of options still work and mean what
/// the new ones mean: serve `--workers` (now `--threads`, as load's),
/// bulk `--no-plain-row` (now `--no-baseline-row`, as tunnel's), load
/// `--mode resume` (now `--resumption`, as handshake's).
#[test]
fn old_option_names_are_aliases_of_the_new_ones() {
    let certs = cert_dir();
    let certs = certs.to_str().unwrap();
    for option in ["--threads", "--workers"] {
        let run = tlslab(&[
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--duration",
            "200ms",
            option,
            "3",
            "--cert-dir",
            certs,
        ]);
        run.expect_code(0);
        let all = run.stdout() + &run.stderr();
        assert!(all.contains("3 workers"), "{option}: {all}");
    }
    assert!(
        !help_text("serve").contains("--workers <"),
        "{}",
        help_text("serve")
    );

    for option in ["--no-baseline-row", "--no-plain-row"] {
        let run = tlslab(&[
            "bulk",
            "--no-db",
            "--runs",
            "2",
            "--size",
            "64",
            "--backend",
            "openssl",
            "--tls",
            "1.3",
            "--suite",
            "aes128gcm",
            "-q",
            "--cert-dir",
            certs,
            option,
        ]);
        run.expect_code(0);
        assert!(
            !crate::util::has_row(&run.stdout(), &["none", "no crypto", "none"]),
            "{option}: {}",
            run.stdout()
        );
        assert!(
            run.stdout().contains("aes-128-gcm"),
            "{option}: {}",
            run.stdout()
        );
    }
    let with_plain = tlslab(&[
        "bulk",
        "--no-db",
        "--runs",
        "2",
        "--size",
        "64",
        "--backend",
        "openssl",
        "--tls",
        "1.3",
        "--suite",
        "aes128gcm",
        "-q",
        "--cert-dir",
        certs,
    ]);
    assert!(
        crate::util::has_row(&with_plain.stdout(), &["none", "no crypto", "none"]),
        "{}",
        with_plain.stdout()
    );

    let dir = tempfile::tempdir().unwrap();
    let mut seen = Vec::new();
    for (i, resumed) in [&["--mode", "resume"][..], &["--resumption", "psk"][..]]
        .into_iter()
        .enumerate()
    {
        let json = dir.path().join(format!("{i}.json"));
        let mut args = vec![
            "load",
            "--no-db",
            "--server",
            "embedded",
            "--rate",
            "10",
            "--duration",
            "1",
            "--clients",
            "1",
            "-q",
            "--cert-dir",
            certs,
            "--export-json",
        ];
        args.push(json.to_str().unwrap());
        args.extend_from_slice(resumed);
        tlslab(&args).expect_code(0);
        let json = json_of(&json);
        // One client: its first handshake is full, the nine after it resume.
        assert_eq!(json["resumed_handshakes"], 9, "{resumed:?}: {json}");
        seen.push((json["scenario"].clone(), json["plan"]["mode"].clone()));
    }
    assert_eq!(seen[0], seen[1]);
}

/// Issue 33 item 9: a total budget too short for any sample no longer fails
/// the row ("the run's time budget ran out before its first sample", exit 1):
/// the row takes its minimum samples and its notes say the budget was short.
#[test]
fn issue_33_a_budget_too_short_still_takes_the_minimum_samples() {
    let run = tlslab(&[
        "handshake",
        "--no-db",
        "--backend",
        "openssl",
        "--cert",
        "ecdsa_p256",
        "--group",
        "x25519",
        "--tls",
        "1.3",
        "--min-samples",
        "2",
        "--warmup",
        "10ms",
        "--max-total-time",
        "1ms",
        "--cert-dir",
        cert_dir().to_str().unwrap(),
    ]);
    run.expect_code(0);
    assert!(
        run.stdout()
            .contains("the time budget ran out: only the minimum 2 samples were taken"),
        "{}",
        run.stdout()
    );
}
