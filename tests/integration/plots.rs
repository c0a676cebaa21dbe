//! Charts and the HTML report, through the command line: the files each
//! command draws, the bars and labels their SVG holds (parsed, not compared
//! byte for byte), and the HTML report opened in headless Chromium with
//! every request blocked.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{cert_dir, skip_without, tlslab};

/// The text of every `<text>` element of an SVG document.
pub(crate) fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|element| {
            let body = &element[element.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim().to_string())
        })
        .collect()
}

/// How many `<rect>` elements are filled with this colour.
pub(crate) fn rects_filled(svg: &str, colour: &str) -> usize {
    svg.split("<rect")
        .skip(1)
        .filter(|r| r[..r.find('>').unwrap_or(r.len())].contains(&format!("fill=\"{colour}\"")))
        .count()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn is_png(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|bytes| bytes.starts_with(b"\x89PNG\r\n\x1a\n"))
}

/// A mock handshake run (3 measured rows, one of them weak, 3 unsupported)
/// stored in `db`; more arguments are appended.
fn mock_run(db: &Path, groups: &str, more: &[&str]) {
    let mut args = vec![
        "handshake",
        "--backend",
        "mock",
        "--tls",
        "1.2",
        "--group",
        groups,
        "--cert",
        "rsa2048,ecdsa_p256",
        "--min-samples",
        "6",
        "--max-time",
        "0",
        "--warmup",
        "0",
        "--quiet",
        "--db",
        db.to_str().unwrap(),
    ];
    let certs = cert_dir();
    args.extend(["--cert-dir", certs.to_str().unwrap()]);
    args.extend(more);
    tlslab(&args).expect_code(0);
}

#[test]
fn handshake_charts_hold_every_row_and_report_redraws_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let live = dir.path().join("live");
    mock_run(
        &db,
        "rsa,x25519,dhe1024",
        &["--plot", live.to_str().unwrap()],
    );
    for name in ["handshake_cpu", "handshake_ratio"] {
        assert!(is_png(&live.join(format!("{name}.png"))), "{name}.png");
    }
    let svg = read(&live.join("handshake_cpu.svg"));
    // The file carries its font: its text needs nothing installed.
    assert_eq!(
        svg.matches("@font-face { font-family: \"DejaVu Sans\"; src: url(data:font/ttf;base64,")
            .count(),
        1
    );
    assert!(svg.contains("font-family=\"DejaVu Sans\""));
    // Measured rows: RSA key transport, ECDHE X25519 x2 certificates, DHE-1024 RSA.
    // One client and one server bar each, plus the legend's swatches.
    assert_eq!(rects_filled(&svg, "#1F77B4"), 4 + 1, "{svg}");
    assert_eq!(rects_filled(&svg, "#FF7F0E"), 4 + 1, "{svg}");
    let texts = svg_texts(&svg);
    for expected in [
        "CPU time per handshake (µs), median",
        "client CPU",
        "server CPU",
        "TLS 1.2 ECDHE X25519 ECDSA P-256 aes-128-gcm",
        "WEAK  TLS 1.2 DHE-1024 RSA-2048 aes-128-gcm",
    ] {
        assert!(
            texts.iter().any(|t| t == expected),
            "no '{expected}' in {texts:?}"
        );
    }
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("unsupported: RSA key transport needs an RSA certificate")),
        "{texts:?}"
    );
    let ratio = svg_texts(&read(&live.join("handshake_ratio.svg")));
    assert!(
        ratio
            .iter()
            .any(|t| t == "The vertical line marks baseline = 1."),
        "{ratio:?}"
    );
    assert!(
        ratio.iter().any(|t| t == "1.00"),
        "the baseline's own bar: {ratio:?}"
    );

    // The stored run draws the same charts.
    let again = dir.path().join("again");
    tlslab(&[
        "report",
        "--db",
        db.to_str().unwrap(),
        "--plot",
        again.to_str().unwrap(),
    ])
    .expect_code(0);
    assert_eq!(read(&again.join("handshake_cpu.svg")), svg);
}

#[test]
fn speed_and_tunnel_charts_mark_weak_rows() {
    let dir = tempfile::tempdir().unwrap();
    let plots = dir.path().join("plots");
    let quick = [
        "--max-time",
        "0",
        "--min-samples",
        "3",
        "--warmup",
        "0",
        "--no-db",
        "--quiet",
    ];
    let mut args = vec![
        "tunnel",
        "--cipher",
        "aes-128-cbc,bf-cbc",
        "--digest",
        "sha1,sha256",
        "--plot",
        plots.to_str().unwrap(),
    ];
    args.extend(quick);
    tlslab(&args).expect_code(0);
    let ciphers = svg_texts(&read(&plots.join("tunnel_ciphers.svg")));
    assert!(ciphers.iter().any(|t| t == "WEAK  bf-cbc"), "{ciphers:?}");
    assert!(ciphers.iter().any(|t| t == "aes-128-cbc"), "{ciphers:?}");
    let ranking = read(&plots.join("tunnel_ranking.svg"));
    // Four tunnel rows and the no-tunnel row, one bar each.
    assert_eq!(rects_filled(&ranking, "#1F77B4"), 5, "{ranking}");
    assert!(is_png(&plots.join("tunnel_digests.png")));

    let mut args = vec![
        "speed",
        "--backend",
        "openssl",
        "--algorithm",
        "aes128gcm,ecdsa_p256",
        "--size",
        "16,1024",
        "--plot",
        plots.to_str().unwrap(),
    ];
    args.extend(quick);
    tlslab(&args).expect_code(0);
    let throughput = svg_texts(&read(&plots.join("speed_throughput.svg")));
    for expected in [
        "16 B",
        "1024 B",
        "aes-128-gcm encrypt",
        "MB/s (10^6 bytes per second), median",
    ] {
        assert!(
            throughput.iter().any(|t| t == expected),
            "no '{expected}' in {throughput:?}"
        );
    }
    let operations = svg_texts(&read(&plots.join("speed_operations.svg")));
    assert!(
        operations.iter().any(|t| t == "ecdsa_p256 sign"),
        "{operations:?}"
    );
}

/// Chromium from Debian's `chromium` package, or `TLSLAB_CHROMIUM`: the
/// HTML report is checked in a real browser. Without one, `test` skips its
/// browser part (or, in CI, fails).
fn chromium(test: &str) -> Option<PathBuf> {
    let found = std::env::var_os("TLSLAB_CHROMIUM")
        .map(PathBuf::from)
        .into_iter()
        .chain(["/usr/bin/chromium", "/usr/bin/chromium-browser"].map(PathBuf::from))
        .find(|candidate| candidate.is_file());
    let missing = found.is_none().then(|| {
        "headless Chromium is not installed (or set TLSLAB_CHROMIUM to its binary)".to_string()
    });
    if skip_without(
        missing,
        test,
        "apt-get install -y --no-install-recommends chromium",
    ) {
        return None;
    }
    found
}

/// Runs headless Chromium on a local file with every host name unresolvable
/// and a dead proxy, so nothing can leave the machine.
fn headless(browser: &Path, file: &Path, fragment: &str, what: &[&str]) -> std::process::Output {
    let url = format!("file://{}{fragment}", file.display());
    let profile = tempfile::tempdir().unwrap();
    Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--proxy-server=http://127.0.0.1:9",
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(what)
        .arg(url)
        .output()
        .expect("chromium runs")
}

#[test]
fn the_html_report_renders_in_chromium_without_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    mock_run(&db, "rsa,x25519,dhe1024", &[]);
    mock_run(&db, "x25519", &[]);
    let html_path = dir.path().join("report.html");
    let report = tlslab(&[
        "report",
        "--db",
        db.to_str().unwrap(),
        "--run",
        "1,2",
        "--html",
        html_path.to_str().unwrap(),
    ]);
    report.expect_code(0);
    let html = read(&html_path);
    // Nothing in the file names a resource to fetch: the one url() is the
    // embedded font's data.
    for forbidden in ["http://", "https://", "src=", "@import"] {
        assert!(!html.contains(forbidden), "the report holds '{forbidden}'");
    }
    assert_eq!(html.matches("url(").count(), 1);
    assert_eq!(html.matches("url(data:font/ttf;base64,").count(), 1);
    for expected in [
        "Run 1: handshake",
        "Run 2: handshake",
        "command line",
        "--group rsa,x25519,dhe1024",
        "CPU crypto flags",
        "drift during the run",
        "seed",
        "Security notes",
        "1024-bit DH",
        "Raw samples",
    ] {
        assert!(html.contains(expected), "no '{expected}' in the report");
    }

    let Some(browser) = chromium("the_html_report_renders_in_chromium_without_any_request") else {
        return;
    };
    let dom = headless(&browser, &html_path, "", &["--dump-dom"]);
    let dom_text = String::from_utf8_lossy(&dom.stdout);
    let root = dom_text
        .lines()
        .find(|l| l.starts_with("<html"))
        .unwrap_or_else(|| {
            panic!(
                "chromium printed no page\n--- stdout\n{dom_text}\n--- stderr\n{}",
                String::from_utf8_lossy(&dom.stderr)
            )
        });
    // The page's own check, written once it has loaded: both runs' charts
    // (CPU and ratio for run 1, CPU and ratio for run 2), their tables,
    // no resource fetched, no script error.
    for expected in [
        "data-status=\"ready\"",
        "data-charts=\"4\"",
        "data-resources=\"0\"",
        "data-errors=\"0\"",
        // The charts' font came from the file itself.
        "data-font=\"loaded\"",
    ] {
        assert!(root.contains(expected), "{expected} not in {root}");
    }
    assert!(dom_text.contains("<svg"), "no chart in the rendered page");

    // Clicking a numeric header sorts the table's rows by that column: the
    // page clicks the first one itself when opened at #check-sort (the four
    // measured rows of run 1; unmeasured rows have no number and go last).
    let sorted = headless(&browser, &html_path, "#check-sort", &["--dump-dom"]);
    let sorted = String::from_utf8_lossy(&sorted.stdout);
    assert!(
        sorted.contains("data-sorted=\"true:4\""),
        "{}",
        sorted
            .lines()
            .find(|l| l.starts_with("<html"))
            .unwrap_or("no page")
    );

    // A screenshot, kept as the test's artefact.
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-screenshot.png");
    let _ = std::fs::remove_file(&shot);
    let taken = headless(
        &browser,
        &html_path,
        "",
        &[
            "--hide-scrollbars",
            "--window-size=1280,2000",
            &format!("--screenshot={}", shot.display()),
        ],
    );
    assert!(
        is_png(&shot),
        "no screenshot at {}: {}",
        shot.display(),
        String::from_utf8_lossy(&taken.stderr)
    );
}

#[test]
fn report_refuses_missing_runs_and_unusable_paths_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    mock_run(&db, "x25519", &[]);
    let db = db.to_str().unwrap();
    let html = dir.path().join("r.html");
    let missing = tlslab(&[
        "report",
        "--db",
        db,
        "--run",
        "1,7",
        "--html",
        html.to_str().unwrap(),
    ]);
    missing.expect_code(2);
    assert!(
        missing.stderr().contains("there is no run 7"),
        "{}",
        missing.stderr()
    );
    assert!(!html.exists(), "nothing is written for a bad run list");

    let file = dir.path().join("a-file");
    std::fs::write(&file, "keep").unwrap();
    let not_a_dir = tlslab(&["report", "--db", db, "--plot", file.to_str().unwrap()]);
    not_a_dir.expect_code(2);
    assert!(
        not_a_dir.stderr().contains("is a file"),
        "{}",
        not_a_dir.stderr()
    );
    assert_eq!(read(&file), "keep");

    let nowhere = dir.path().join("no/such/dir/r.html");
    tlslab(&["report", "--db", db, "--html", nowhere.to_str().unwrap()]).expect_code(2);

    let several = tlslab(&[
        "report",
        "--db",
        db,
        "--run",
        "1,2",
        "--export-json",
        dir.path().join("r.json").to_str().unwrap(),
    ]);
    several.expect_code(2);
    assert!(
        several.stderr().contains("take one run"),
        "{}",
        several.stderr()
    );
}

#[test]
fn bulk_charts_draw_each_side_per_write_size_and_mark_cbc() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let live = dir.path().join("live");
    let certs = cert_dir();
    tlslab(&[
        "bulk",
        "--backend",
        "openssl",
        "--tls",
        "1.2",
        "--suite",
        "aes128gcm,aes128cbc_sha256",
        "--size",
        "64,1024",
        "--bytes-per-sample",
        "16384",
        "--runs",
        "2",
        "--warmup",
        "0",
        "-q",
        "--cert-dir",
        certs.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
        "--plot",
        live.to_str().unwrap(),
    ])
    .expect_code(0);
    for name in ["bulk_send", "bulk_receive"] {
        assert!(is_png(&live.join(format!("{name}.png"))), "{name}.png");
        let svg = read(&live.join(format!("{name}.svg")));
        // Three rows (no crypto, GCM, CBC), a bar per write size each,
        // plus the legend's swatches.
        assert_eq!(rects_filled(&svg, "#1F77B4"), 3 + 1, "{svg}");
        assert_eq!(rects_filled(&svg, "#FF7F0E"), 3 + 1, "{svg}");
        let texts = svg_texts(&svg);
        for expected in [
            "64 B writes",
            "1024 B writes",
            "no crypto",
            "TLS 1.2 aes-128-gcm",
            "WEAK  TLS 1.2 aes-128-cbc-sha256",
        ] {
            assert!(
                texts.iter().any(|t| t == expected),
                "no '{expected}' in {texts:?}"
            );
        }
        assert!(
            texts
                .iter()
                .any(|t| t.ends_with("MB/s (per CPU second), median")),
            "{texts:?}"
        );
    }
    // The stored run draws the same charts.
    let again = dir.path().join("again");
    tlslab(&[
        "report",
        "--db",
        db.to_str().unwrap(),
        "--plot",
        again.to_str().unwrap(),
    ])
    .expect_code(0);
    assert_eq!(
        read(&again.join("bulk_send.svg")),
        read(&live.join("bulk_send.svg"))
    );
}

/// Issue 10: `report --html` on a run of each landed capability opens in
/// Chromium with every chart drawn (the page counts the charts it drew and
/// reports it; it must equal the charts the file holds).
#[test]
fn one_report_of_every_capability_renders_in_chromium() {
    let _one = crate::util::nginx_lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("all.sqlite");
    let db_text = db.to_str().unwrap().to_string();
    let cert_dir = cert_dir();
    let quick = |args: &[&str]| {
        let mut all: Vec<&str> = args.to_vec();
        all.extend([
            "--max-time",
            "0",
            "--min-samples",
            "3",
            "--warmup",
            "0",
            "--quiet",
            "--db",
            &db_text,
        ]);
        tlslab(&all).expect_code(0);
    };
    let certs = cert_dir.to_str().unwrap();
    mock_run(&db, "rsa,x25519", &[]);
    quick(&[
        "speed",
        "--backend",
        "openssl",
        "--algorithm",
        "aes128gcm,ecdsa_p256",
        "--size",
        "1024",
    ]);
    quick(&["cost", "--preset", "rsa-vs-ecdsa", "--cert-dir", certs]);
    quick(&[
        "tunnel",
        "--cipher",
        "aes-128-cbc,bf-cbc",
        "--digest",
        "sha1",
    ]);
    quick(&[
        "bulk",
        "--backend",
        "openssl",
        "--tls",
        "1.3",
        "--suite",
        "aes128gcm",
        "--size",
        "1024",
        "--cert-dir",
        certs,
    ]);
    let mut runs = "1,2,3,4,5".to_string();
    if !crate::util::skip_without_nginx(
        "one_report_of_every_capability_renders_in_chromium (its load run)",
    ) {
        tlslab(&[
            "load",
            "--rate",
            "10",
            "--duration",
            "1",
            "--clients",
            "2",
            "-q",
            "--cert-dir",
            certs,
            "--db",
            &db_text,
        ])
        .expect_code(0);
        runs.push_str(",6");
    }
    let html_path = dir.path().join("everything.html");
    tlslab(&[
        "report",
        "--db",
        &db_text,
        "--run",
        &runs,
        "--html",
        html_path.to_str().unwrap(),
    ])
    .expect_code(0);
    let html = read(&html_path);
    for kind in ["handshake", "speed", "cost", "tunnel", "bulk"] {
        assert!(
            html.contains(&format!(": {kind}")),
            "no {kind} run in the report"
        );
    }
    let charts = html.matches("<svg").count();
    assert!(charts >= 10, "only {charts} charts in the file");
    let Some(browser) = chromium("one_report_of_every_capability_renders_in_chromium") else {
        return;
    };
    let dom = headless(&browser, &html_path, "", &["--dump-dom"]);
    let dom_text = String::from_utf8_lossy(&dom.stdout);
    let root = dom_text
        .lines()
        .find(|l| l.starts_with("<html"))
        .unwrap_or_else(|| {
            panic!(
                "chromium printed no page: {}",
                String::from_utf8_lossy(&dom.stderr)
            )
        });
    for expected in [
        "data-status=\"ready\"".to_string(),
        format!("data-charts=\"{charts}\""),
        "data-resources=\"0\"".to_string(),
        "data-errors=\"0\"".to_string(),
        "data-font=\"loaded\"".to_string(),
    ] {
        assert!(root.contains(&expected), "{expected} not in {root}");
    }
}
