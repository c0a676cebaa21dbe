//! Tables that fit the terminal: at 80 and 120 columns no line of any
//! command's default table is wider than `COLUMNS`, every row keeps its
//! key fields, and long notes become numbered footnotes shared by the
//! rows that have them. `--wide` and piped output keep every column.

use crate::util::{cert_dir, has_row, tlslab_at, Run};

const WIDTHS: [usize; 2] = [80, 120];

/// Panics unless every line of the run's standard output fits `width`.
fn assert_fits(run: &Run, width: usize) {
    run.expect_code(0);
    let out = run.stdout();
    for line in out.lines() {
        assert!(
            line.chars().count() <= width,
            "`{}` at {width} columns printed a line of {} characters:\n{line}\n--- stdout\n{out}",
            run.command,
            line.chars().count()
        );
    }
}

/// Panics unless `text` is numbered as footnote exactly once.
fn assert_one_footnote(out: &str, text: &str) {
    let lines: Vec<&str> = out.lines().filter(|l| l.contains(text)).collect();
    assert_eq!(lines.len(), 1, "{text} once:\n{out}");
    assert!(lines[0].starts_with('['), "{text} as a footnote:\n{out}");
}

fn handshake_args(db: &str) -> Vec<String> {
    [
        "handshake",
        "--backend",
        "mock",
        "--tls",
        "1.2,1.3",
        "--group",
        "x25519,x448,dhe1024",
        "--cert",
        "rsa2048,ecdsa_p256",
        "--runs",
        "3",
        "--warmup",
        "0",
        "--db",
        db,
        "--cert-dir",
        cert_dir().to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec()
}

#[test]
fn handshake_and_report_fit_80_and_120_columns_with_shared_footnotes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let db = db.to_str().unwrap();
    let args = handshake_args(db);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    for width in WIDTHS {
        for run in [
            tlslab_at(&args, Some(width)),
            tlslab_at(&["report", "--db", db], Some(width)),
        ] {
            assert_fits(&run, width);
            let out = run.stdout();
            // Every row with its key fields, the one backend said once.
            assert!(out.contains("Every row: backend mock"), "{out}");
            for version in ["1.2", "1.3"] {
                for group in ["ECDHE X25519", "ECDHE X448"] {
                    for cert in ["RSA-2048", "ECDSA P-256"] {
                        assert!(has_row(&out, &[version, group, cert]), "{out}");
                    }
                }
            }
            assert!(has_row(&out, &["1.2", "DHE-1024", "RSA-2048"]), "{out}");
            // Eight rows lack x448 or DHE: each reason is one footnote.
            assert_one_footnote(
                &out,
                "unsupported: mock has no x448 key exchange in TLS 1.2",
            );
            assert_one_footnote(&out, "1024-bit DH: about 80-bit security");
            assert!(out.contains("[1] "), "{out}");
            assert!(has_row(&out, &["DHE-1024", "RSA-2048", "WEAK ["]), "{out}");
        }
    }
    let narrow = tlslab_at(&["report", "--db", db], Some(80)).stdout();
    assert!(
        narrow.contains("Not shown at 80 columns: p99 µs"),
        "{narrow}"
    );

    // --wide and piped output keep every column on one line.
    let wide = tlslab_at(&["report", "--db", db, "--wide"], Some(80));
    wide.expect_code(0);
    let piped = tlslab_at(&["report", "--db", db], None);
    for run in [wide, piped] {
        let out = run.stdout();
        assert!(out.lines().any(|l| l.chars().count() > 120), "{out}");
        assert!(
            has_row(&out, &["p99 µs", "n", "quantum-safe", "notes"]),
            "{out}"
        );
        assert!(!out.contains("Not shown"), "{out}");
        assert!(out.contains("TLS 1.2   ECDHE X25519  RSA-2048"), "{out}");
    }
}

#[test]
fn speed_fits_80_and_120_columns() {
    for width in WIDTHS {
        let run = tlslab_at(
            &[
                "speed",
                "--no-db",
                "--backend",
                "mock",
                "--algorithm",
                "rsa2048,ecdsa_p256,aes128gcm,sha256",
                "--size",
                "16,16384",
                "--max-time",
                "0",
                "--min-samples",
                "3",
                "--warmup",
                "0",
            ],
            Some(width),
        );
        assert_fits(&run, width);
        let out = run.stdout();
        for (algorithm, operation) in [("rsa2048", "sign"), ("ecdsa_p256", "verify")] {
            assert!(has_row(&out, &[algorithm, operation]), "{out}");
        }
        assert!(has_row(&out, &["aes-128-gcm", "encrypt", "16384"]), "{out}");
        assert_one_footnote(&out, "precision not reached in time");
    }
}

#[test]
fn cost_and_its_breakdown_fit_80_and_120_columns() {
    for width in WIDTHS {
        let run = tlslab_at(
            &[
                "cost",
                "--breakdown",
                "--no-db",
                "--backend",
                "mock",
                "--max-time",
                "0",
                "--min-samples",
                "3",
                "--warmup",
                "0",
                "--cert-dir",
                cert_dir().to_str().unwrap(),
            ],
            Some(width),
        );
        assert_fits(&run, width);
        let out = run.stdout();
        for cert in ["RSA-2048", "ECDSA P-256"] {
            for side in ["client", "server"] {
                // Once in the model, once in the breakdown.
                let rows = out.lines().filter(|l| has_row(l, &[cert, side])).count();
                assert_eq!(rows, 2, "{cert} {side}:\n{out}");
            }
        }
        assert!(out.contains("hs/s"), "{out}");
        assert!(out.contains("Where each side's time goes"), "{out}");
    }
}

#[test]
fn the_five_tunnel_tables_fit_80_and_120_columns() {
    for width in WIDTHS {
        let run = tlslab_at(
            &[
                "tunnel",
                "--no-db",
                "--cipher",
                "aes-128-gcm,aes-128-cbc,bf-cbc,des-cbc",
                "--digest",
                "sha1,md5",
                "--compression",
                "none,lz4",
                "--runs",
                "2",
                "--warmup",
                "0",
            ],
            Some(width),
        );
        assert_fits(&run, width);
        let out = run.stdout();
        for title in [
            "1. Effect of compression",
            "2. Ciphers normalised",
            "3. Digests normalised",
            "4. Ranking",
            "5. No tunnel",
        ] {
            assert!(out.contains(title), "{title}:\n{out}");
        }
        for cipher in ["aes-128-cbc", "bf-cbc", "des-cbc"] {
            for digest in ["sha1", "md5"] {
                for compression in ["none", "lz4"] {
                    assert!(has_row(&out, &[cipher, digest, compression]), "{out}");
                }
            }
        }
        assert!(has_row(&out, &["(no tunnel)"]), "{out}");
        // Shared by every 64-bit-block row of tables 2 and 4: numbered
        // once per table, never repeated per row.
        let sweet32 = out.lines().filter(|l| l.contains("SWEET32")).count();
        assert_eq!(sweet32, 2, "{out}");
    }
}

/// The pieces of a word that a fitted table may put on separate lines:
/// the word split after its hyphens and underscores, every run of
/// consecutive pieces ("aes-", "128-gcm" of "aes-128-gcm").
fn pieces(word: &str) -> Vec<String> {
    let parts: Vec<&str> = word.split_inclusive(['-', '_']).collect();
    let mut pieces = Vec::new();
    for start in 0..parts.len() {
        for end in start + 1..=parts.len() {
            pieces.push(parts[start..end].concat());
        }
    }
    pieces
}

/// Panics if the fitted output holds a word that the same output drawn
/// with `--wide` does not (a label broken inside a word, as "backen" /
/// "d"), or a line cut with "…". A word may wrap after its hyphens.
fn assert_no_word_split(fitted: &Run, wide: &Run) {
    fitted.expect_code(0);
    wide.expect_code(0);
    let (fitted, wide) = (fitted.stdout(), wide.stdout());
    let trim = |word: &str| {
        word.trim_end_matches([',', '.', ';', ':'])
            .trim_start_matches('(')
            .trim_end_matches(')')
            .to_string()
    };
    let known: std::collections::HashSet<String> = wide
        .split_whitespace()
        .flat_map(|word| pieces(&trim(word)))
        .collect();
    assert!(!fitted.contains('…'), "a line was cut:\n{fitted}");
    // The note of what was left out, over as many lines as it takes.
    let mut not_shown = false;
    for line in fitted.lines() {
        not_shown |= line.starts_with("Not shown at ");
        if not_shown {
            not_shown = !line.contains("every column).");
            continue;
        }
        for word in line.split_whitespace().map(trim) {
            let footnote = word.starts_with('[') && word.ends_with(']');
            let rule = word.chars().all(|c| c == '─');
            assert!(
                footnote || rule || ["Every", "row"].contains(&word.as_str()) || known.contains(&word),
                "'{word}' is not a word of the wide table (split?) in:\n{line}\n--- fitted\n{fitted}\n--- wide\n{wide}"
            );
        }
    }
}

/// Issue 18 item 18: `bulk` ignored COLUMNS (lines of 267 characters at
/// 100 columns) and `report` of a bulk run split words ("backen" / "d");
/// bulk, its report, compare and recommend fit 80 columns, and no word
/// is broken.
#[test]
fn bulk_its_report_compare_and_recommend_fit_80_columns_without_splitting_words() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let db = db.to_str().unwrap();
    let bulk = [
        "bulk",
        "--backend",
        "mock",
        "--tls",
        "1.2,1.3",
        "--suite",
        "aes128gcm,chacha20poly1305",
        "--size",
        "64,16384",
        "--runs",
        "2",
        "--warmup",
        "0",
        "-q",
        "--db",
        db,
    ];
    for _ in 0..2 {
        let run = tlslab_at(&bulk, Some(80));
        assert_fits(&run, 80);
        let out = run.stdout();
        assert!(
            has_row(&out, &["mock", "TLS 1.2", "chacha20-poly1305", "16384"]),
            "{out}"
        );
        assert!(has_row(&out, &["none", "no crypto", "none", "64"]), "{out}");
    }
    for args in [
        &["report", "--db", db, "--run", "1"][..],
        &["compare", "--db", db, "1", "2", "--threshold", "1000%"],
        &["recommend", "--db", db, "--run", "1"],
    ] {
        let fitted = tlslab_at(args, Some(80));
        assert_fits(&fitted, 80);
        let mut wide_args = args.to_vec();
        wide_args.push("--wide");
        assert_no_word_split(&fitted, &tlslab_at(&wide_args, Some(80)));
    }
}

/// Issue 18 item 18: every other table a command prints fits 80 columns
/// without a broken word: handshake's wire and network tables, capacity,
/// load and the comparison of two load runs (whose figures are text), and
/// recommend of a handshake run.
#[test]
fn wire_capacity_load_and_recommend_tables_fit_80_columns() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let db = db.to_str().unwrap();
    let certs = cert_dir();
    let certs = certs.to_str().unwrap();
    let runs: [&[&str]; 4] = [
        &[
            "handshake",
            "--backend",
            "mock",
            "--tls",
            "1.2,1.3",
            "--group",
            "x25519,p256",
            "--cert",
            "rsa2048,ecdsa_p256",
            "--wire",
            "--network",
            "wan,mobile",
            "--runs",
            "2",
            "--warmup",
            "0",
        ],
        &[
            "handshake",
            "--capacity",
            "--backend",
            "mock",
            "--tls",
            "1.2,1.3",
            "--cert",
            "rsa2048,ecdsa_p256",
            "--threads",
            "2",
            "--max-time",
            "0.05",
            "--warmup",
            "0",
        ],
        &[
            "load",
            "--server",
            "embedded",
            "--rate",
            "20",
            "--duration",
            "0.3",
            "--clients",
            "2",
        ],
        &[
            "load",
            "--server",
            "embedded",
            "--rate",
            "20",
            "--duration",
            "0.3",
            "--clients",
            "2",
        ],
    ];
    for args in runs {
        let mut args = args.to_vec();
        args.extend(["-q", "--db", db, "--cert-dir", certs]);
        assert_fits(&tlslab_at(&args, Some(80)), 80);
    }
    for args in [
        &["report", "--db", db, "--run", "1"][..],
        &["report", "--db", db, "--run", "2"],
        &["report", "--db", db, "--run", "3"],
        &["compare", "--db", db, "3", "4", "--threshold", "1000%"],
        &["recommend", "--db", db, "--run", "1"],
    ] {
        let fitted = tlslab_at(args, Some(80));
        assert_fits(&fitted, 80);
        let mut wide_args = args.to_vec();
        wide_args.push("--wide");
        assert_no_word_split(&fitted, &tlslab_at(&wide_args, Some(80)));
    }
}
