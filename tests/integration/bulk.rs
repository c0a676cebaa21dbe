//! `tlslab bulk`: the pipeline on the mock backend (sampling -> statistics
//! -> store -> every exporter), real rows on every backend with every byte
//! checked, unsupported rows, bad options, and Ctrl-C.

use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use tlslab::backend::mock::MockBackend;
use tlslab::backend::Backend;
use tlslab::host::HostInfo;
use tlslab::measure::{self, Outcome, Quietly, SamplingOptions};
use tlslab::report::bulk::{build_rows, BulkReport};
use tlslab::report::Format;
use tlslab::scenario::bulk::{BulkScenario, Channel};
use tlslab::scenario::Subject;
use tlslab::scenario::{Aead, Named, TlsVersion};
use tlslab::store::{RunKind, Store};
use tlslab::workload::bulk::{BulkCell, BulkProbe};

use crate::util::{self, tlslab};

fn tls(version: TlsVersion, aead: Aead, write_bytes: usize) -> BulkScenario {
    BulkScenario {
        channel: Channel::Tls { version, aead },
        write_bytes,
        transport: tlslab::scenario::Transport::Memory,
    }
}

/// Prepares a row and takes `count` samples of `sample_bytes` each.
fn sample_row(
    backend: Option<&dyn Backend>,
    scenario: &BulkScenario,
    sample_bytes: usize,
    count: usize,
) -> Result<Vec<tlslab::workload::bulk::BulkSample>, Outcome<tlslab::workload::bulk::BulkSample>> {
    let (mut probe, negotiated) =
        BulkProbe::prepare(backend, scenario, util::certs(), Some(sample_bytes))?;
    assert_eq!(negotiated.is_some(), backend.is_some(), "{scenario:?}");
    Ok((0..count)
        .map(|_| {
            probe
                .run()
                .unwrap_or_else(|e| panic!("{}: {e}", scenario.label()))
        })
        .collect())
}

#[test]
fn mock_bulk_rows_to_store_to_exports() {
    let mock: Arc<dyn Backend> = Arc::new(MockBackend::default());
    let scenarios = [
        BulkScenario::plain(1024),
        tls(TlsVersion::Tls13, Aead::Aes128Gcm, 1024),
        tls(TlsVersion::Tls12, Aead::Chacha20Poly1305, 1024),
    ];
    let mut cells = Vec::new();
    let mut probes = Vec::new();
    for scenario in &scenarios {
        let backend = scenario.handshake().map(|_| mock.as_ref());
        let (probe, negotiated) =
            BulkProbe::prepare(backend, scenario, util::certs(), Some(64 * 1024)).unwrap();
        cells.push(BulkCell {
            subject: backend.map_or(Subject::Plain, |b| b.subject()),
            scenario: *scenario,
            negotiated,
            sample_bytes: probe.sizing().sample_bytes() as u64,
            outcome: Outcome::Failed {
                reason: "not sampled".into(),
            },
            instructions: None,
            counted_bytes: 0,
        });
        probes.push(probe);
    }
    let options = SamplingOptions {
        runs: Some(6),
        warmup: Duration::ZERO,
        slice: Duration::ZERO,
        seed: 3,
        ..SamplingOptions::default()
    };
    let run = measure::sample(
        probes.iter_mut().map(BulkProbe::probe).collect(),
        measure::Pairing::PerCell(vec![None, Some(0), Some(0)]),
        &options,
        &AtomicBool::new(false),
        &mut Quietly,
    )
    .unwrap();
    for (cell, outcome) in cells.iter_mut().zip(run.outcomes) {
        cell.outcome = outcome;
    }

    let mut store = Store::open_in_memory().unwrap();
    let run_id = store
        .begin_run(&util::run_info(RunKind::Bulk, "test", vec![mock.library()]))
        .unwrap();
    for cell in &cells {
        store.save_bulk_cell(run_id, cell).unwrap();
    }
    let loaded = store.load_bulk_cells(run_id).unwrap();
    assert_eq!(loaded.len(), 3);
    assert!(loaded.iter().all(|c| c.samples().len() == 6));

    let rows = build_rows(&loaded);
    let gcm = rows
        .iter()
        .find(|r| r.label == "bulk_1.3_aes128gcm_1024")
        .unwrap();
    // The mock charges 1.0 and 1.2 ns per byte, with a spread under 1%.
    let sender = gcm.sender_ms_per_mb.unwrap().median;
    let receiver = gcm.receiver_ms_per_mb.unwrap().median;
    assert!((1.0..1.01).contains(&sender), "{sender}");
    assert!((1.2..1.22).contains(&receiver), "{receiver}");
    assert!((990.0..=1000.0).contains(&gcm.sender_mb_per_s.unwrap()));
    assert!(gcm.ratio_to_plain.is_some() && gcm.crypto_share.is_some());
    assert_eq!(
        gcm.negotiated.as_ref().unwrap().suite,
        "TLS_AES_128_GCM_SHA256"
    );
    let plain = rows.iter().find(|r| r.subject == Subject::Plain).unwrap();
    assert!(plain.ratio_to_plain.is_none() && plain.sender_ms_per_mb.is_some());

    let host = HostInfo::current();
    let document = BulkReport {
        run_id: Some(run_id),
        complete: true,
        host: &host,
        libraries: &[mock.library()],
        seed: Some(3),
        precision: Some(0.02),
        cells: &loaded,
        counted_with: None,
    }
    .document();
    let text = document.render(Format::Table).unwrap();
    assert!(
        text.contains("crypto share") && text.contains("no crypto"),
        "{text}"
    );
    let markdown = document.render(Format::Markdown).unwrap();
    assert!(markdown.contains("| mock"), "{markdown}");
    let csv = document.render(Format::Csv).unwrap();
    assert_eq!(csv.lines().count(), 1 + 3, "{csv}");
    assert!(csv.lines().next().unwrap().contains("crypto_share"));
    let json: serde_json::Value =
        serde_json::from_str(&document.render(Format::Json).unwrap()).unwrap();
    let json_rows = json["rows"].as_array().unwrap();
    assert_eq!(json_rows.len(), 3);
    assert_eq!(json_rows[0]["samples"].as_array().unwrap().len(), 6);
    assert_eq!(json_rows[0]["scenario"]["label"], "bulk_plain_1024");
}

macro_rules! bulk_backend_tests {
    ($module:ident, $id:literal) => {
        mod $module {
            use super::*;

            /// Every version and suite the backend claims carries checked
            /// data, each side's time counted, in writes that end mid-record.
            #[test]
            fn every_version_and_suite_carries_checked_data() {
                let backend = tlslab::backend::backend_by_id($id).unwrap();
                for version in [TlsVersion::Tls12, TlsVersion::Tls13] {
                    for &aead in Aead::ALL {
                        let scenario = tls(version, aead, 1000);
                        let handshake = scenario.handshake().unwrap();
                        if handshake.protocol_conflict().is_some()
                            || backend.unsupported_reason(&handshake).is_some()
                        {
                            continue;
                        }
                        for sample in sample_row(Some(backend.as_ref()), &scenario, 40_000, 2)
                            .unwrap_or_else(|o| panic!("{}: {o:?}", scenario.label()))
                        {
                            assert_eq!(sample.bytes, 40_000);
                            assert_eq!(sample.writes, 40);
                            assert!(sample.sender_cpu_ns > 0 && sample.receiver_cpu_ns > 0);
                        }
                    }
                }
                // Writes larger than a record are split and put back together.
                let scenario = tls(TlsVersion::Tls13, Aead::Aes128Gcm, 40_000);
                sample_row(Some(backend.as_ref()), &scenario, 80_000, 1).unwrap();
            }
        }
    };
}

bulk_backend_tests!(openssl, "openssl");
bulk_backend_tests!(rustls_aws_lc, "rustls-aws-lc");
bulk_backend_tests!(rustls_ring, "rustls-ring");

/// dimpl carries application data over DTLS 1.2 and 1.3, every byte
/// checked; a write larger than a datagram goes out as several records.
#[test]
fn dimpl_carries_checked_data_over_dtls() {
    let backend = tlslab::backend::backend_by_id("dimpl").unwrap();
    for version in [TlsVersion::Dtls12, TlsVersion::Dtls13] {
        for aead in [Aead::Aes128Gcm, Aead::Aes256Gcm, Aead::Chacha20Poly1305] {
            let scenario = tls(version, aead, 1000);
            for sample in sample_row(Some(backend.as_ref()), &scenario, 40_000, 2)
                .unwrap_or_else(|o| panic!("{}: {o:?}", scenario.label()))
            {
                assert_eq!(sample.bytes, 40_000);
                assert!(sample.sender_cpu_ns > 0 && sample.receiver_cpu_ns > 0);
            }
        }
        let scenario = tls(version, Aead::Aes128Gcm, 16_384);
        sample_row(Some(backend.as_ref()), &scenario, 65_536, 1).unwrap();
    }
}

/// wolfSSL (in a build with it) carries application data over TLS 1.2
/// and 1.3 and DTLS 1.2 and 1.3 with every AEAD, every byte checked, a
/// DTLS write larger than a datagram going out as several records, and
/// `bulk --backend wolfssl` measures its rows and says why for CBC; a
/// build without it refuses the name with the build command.
#[test]
fn wolfssl_carries_checked_data_or_says_how_to_build_it() {
    const TEST: &str = "bulk::wolfssl_carries_checked_data_or_says_how_to_build_it";
    if util::skip_unless_under_test("wolfssl", TEST) {
        return;
    }
    let command = |extra: &[&str]| {
        let mut args = vec![
            "bulk",
            "--backend",
            "wolfssl",
            "--size",
            "1k",
            "--bytes-per-sample",
            "16384",
            "--runs",
            "2",
            "--warmup",
            "0",
            "--no-db",
            "-q",
        ];
        args.extend_from_slice(extra);
        tlslab(&args)
    };
    if util::skip_without_wolfssl(TEST) {
        let run = command(&[]);
        run.expect_code(2);
        assert!(
            run.stderr().contains("--features wolfssl"),
            "{}",
            run.stderr()
        );
        return;
    }
    let backend = tlslab::backend::backend_by_id("wolfssl").unwrap();
    for version in [
        TlsVersion::Tls12,
        TlsVersion::Tls13,
        TlsVersion::Dtls12,
        TlsVersion::Dtls13,
    ] {
        for aead in [Aead::Aes128Gcm, Aead::Aes256Gcm, Aead::Chacha20Poly1305] {
            let scenario = tls(version, aead, 1000);
            for sample in sample_row(Some(backend.as_ref()), &scenario, 40_000, 2)
                .unwrap_or_else(|o| panic!("{}: {o:?}", scenario.label()))
            {
                assert_eq!((sample.bytes, sample.writes), (40_000, 40));
                assert!(sample.sender_cpu_ns > 0 && sample.receiver_cpu_ns > 0);
            }
        }
        // Writes larger than a record (TLS) or a datagram (DTLS).
        let scenario = tls(version, Aead::Aes128Gcm, 16_384);
        sample_row(Some(backend.as_ref()), &scenario, 65_536, 1)
            .unwrap_or_else(|o| panic!("{}: {o:?}", scenario.label()));
    }
    let run = command(&[
        "--tls",
        "1.3,dtls1.2",
        "--suite",
        "aes128gcm,aes128cbc_sha256",
    ]);
    run.expect_code(0);
    let out = run.stdout();
    for protocol in [" TLS 1.3 ", " DTLS 1.2 "] {
        let row = out
            .lines()
            .find(|l| l.starts_with("wolfssl") && l.contains(protocol) && l.contains("aes-128-gcm"))
            .unwrap_or_else(|| panic!("no wolfssl{protocol}row:\n{out}"));
        assert!(
            !row.contains("unsupported") && !row.contains("failed"),
            "{row}"
        );
    }
    assert!(
        util::has_row(&out, &["wolfssl", "DTLS 1.2", "aes-128-cbc", "unsupported"]),
        "{out}"
    );
}

/// QUIC carries application data on rustls (quinn) with every TLS 1.3
/// suite, every byte checked: writes smaller and larger than a packet,
/// and samples whose sum passes the initial flow-control windows many
/// times (the receiver's credit comes back). OpenSSL's QUIC row says why.
#[test]
fn quic_carries_checked_data_on_rustls_and_says_why_on_openssl() {
    for id in ["rustls-aws-lc", "rustls-ring"] {
        let backend = tlslab::backend::backend_by_id(id).unwrap();
        for aead in [Aead::Aes128Gcm, Aead::Aes256Gcm, Aead::Chacha20Poly1305] {
            let scenario = tls(TlsVersion::Quic, aead, 1000);
            for sample in sample_row(Some(backend.as_ref()), &scenario, 40_000, 2)
                .unwrap_or_else(|o| panic!("{id} {}: {o:?}", scenario.label()))
            {
                assert_eq!(sample.bytes, 40_000);
                assert!(sample.sender_cpu_ns > 0 && sample.receiver_cpu_ns > 0);
            }
        }
        let scenario = tls(TlsVersion::Quic, Aead::Aes128Gcm, 40_000);
        let samples = sample_row(Some(backend.as_ref()), &scenario, 4_000_000, 20)
            .unwrap_or_else(|o| panic!("{id} {}: {o:?}", scenario.label()));
        // Past the 64 MiB windows the path starts with (whole chunks of
        // whole writes make a sample: 3.84 MB here).
        assert!(samples.iter().map(|s| s.bytes).sum::<u64>() > 70_000_000);
    }
    let run = tlslab(&[
        "bulk",
        "--backend",
        "openssl",
        "--tls",
        "quic",
        "--size",
        "1k",
        "--runs",
        "2",
        "--warmup",
        "0",
        "--no-db",
        "-q",
    ]);
    run.expect_code(0);
    assert!(
        run.stdout()
            .contains("unsupported: bulk over OpenSSL's QUIC streams is not built yet"),
        "{}",
        run.stdout()
    );
}

/// AES-CBC with HMAC runs on OpenSSL in TLS 1.2; elsewhere its rows say why.
#[test]
fn cbc_rows_run_on_openssl_and_say_why_elsewhere() {
    let openssl = tlslab::backend::backend_by_id("openssl").unwrap();
    let cbc12 = tls(TlsVersion::Tls12, Aead::Aes128CbcSha256, 1024);
    sample_row(Some(openssl.as_ref()), &cbc12, 16_384, 2).unwrap();
    let unsupported = |backend: &dyn Backend, scenario: &BulkScenario| -> String {
        match BulkProbe::prepare(Some(backend), scenario, util::certs(), None) {
            Err(Outcome::Unsupported { reason }) => reason,
            Err(other) => panic!("{other:?}"),
            Ok(_) => panic!("{} ran on {}", scenario.label(), backend.id()),
        }
    };
    let cbc13 = tls(TlsVersion::Tls13, Aead::Aes128CbcSha256, 1024);
    assert_eq!(
        unsupported(openssl.as_ref(), &cbc13),
        "TLS 1.3 has AEAD suites only (no CBC with HMAC)"
    );
    let ring = tlslab::backend::backend_by_id("rustls-ring").unwrap();
    assert_eq!(
        unsupported(ring.as_ref(), &cbc12),
        "rustls-ring has no aes-128-cbc-sha256 suite"
    );
}

/// A probe replaces its pair (a new handshake) every few samples and goes on.
#[test]
fn renewing_the_pair_between_samples_keeps_sampling() {
    let backend = tlslab::backend::backend_by_id("rustls-aws-lc").unwrap();
    let scenario = tls(TlsVersion::Tls12, Aead::Aes128Gcm, 256);
    let (mut probe, _) =
        BulkProbe::prepare(Some(backend.as_ref()), &scenario, util::certs(), Some(8192)).unwrap();
    probe
        .renew_every(2, Arc::clone(&backend), &scenario, util::certs())
        .unwrap();
    let mut sample = probe.probe();
    for _ in 0..5 {
        assert_eq!(sample().unwrap().bytes, 8192);
    }
}

#[test]
fn the_plain_row_carries_checked_data() {
    for sample in sample_row(None, &BulkScenario::plain(64), 64 * 100, 2).unwrap() {
        assert_eq!((sample.bytes, sample.writes), (6400, 100));
    }
}

/// The dtls-study preset runs its TLS 1.2 and DTLS 1.2 rows on OpenSSL and
/// its DTLS 1.2 and 1.3 AEAD rows on dimpl, the DTLS rows against a
/// no-crypto row over datagrams; naming the backends crosses the matrix
/// with them instead.
#[test]
fn dtls_study_preset_has_dtls_rows_on_openssl_and_dimpl() {
    let cert_dir = util::cert_dir();
    let run_with = |extra: &[&str]| {
        let mut args = vec![
            "bulk",
            "--preset",
            "dtls-study",
            "--size",
            "1024",
            "--bytes-per-sample",
            "16384",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--no-db",
            "-q",
            "--cert-dir",
            cert_dir.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let run = tlslab(&args);
        run.expect_code(0);
        run.stdout()
    };
    let out = run_with(&[]);
    let measured = |backend: &str, protocol: &str, suite: &str| {
        let row = out
            .lines()
            .find(|l| {
                l.starts_with(backend) && l.contains(&format!(" {protocol} ")) && l.contains(suite)
            })
            .unwrap_or_else(|| panic!("no {backend} {protocol} {suite} row:\n{out}"));
        assert!(
            !row.contains("unsupported") && !row.contains("failed"),
            "{row}"
        );
    };
    for suite in ["aes-128-gcm", "chacha20-poly1305"] {
        measured("dimpl", "DTLS 1.2", suite);
        measured("dimpl", "DTLS 1.3", suite);
    }
    for suite in ["aes-128-gcm", "chacha20-poly1305", "aes-128-cbc-sha256"] {
        measured("openssl", "DTLS 1.2", suite);
        measured("openssl", "TLS 1.2", suite);
    }
    assert!(
        util::has_row(&out, &["none", "no crypto, datagrams"]),
        "{out}"
    );
    assert!(!util::has_row(&out, &["dimpl", " TLS 1.2"]), "{out}");
    assert!(!util::has_row(&out, &["DTLS 1.3", "aes-128-cbc"]), "{out}");
    assert!(!out.contains("rustls"), "{out}");
    let named = run_with(&["--backend", "openssl"]);
    assert!(!named.contains("dimpl"), "{named}");
}

#[test]
fn bad_bulk_options_are_usage_errors() {
    for (args, expected) in [
        (&["--size", "0"][..], "from 1 to"),
        (&["--size", "64,big"][..], "'big' is not a size"),
        (&["--suite", "aes512gcm"][..], "unknown suite 'aes512gcm'"),
        (&["--tls", "1.4"][..], "unknown TLS version '1.4'"),
        (&["--backend", "gnutls"][..], "rustls-ring"),
        (&["--preset", "nope"][..], "dtls-study"),
        (&["--bytes-per-sample", "0"][..], "at least 1"),
    ] {
        let mut all = vec!["bulk", "--no-db"];
        all.extend_from_slice(args);
        let run = tlslab(&all);
        run.expect_code(2);
        assert!(run.stderr().contains(expected), "{}", run.stderr());
    }
}

#[test]
fn a_tiny_bulk_run_exports_and_reports_from_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let cert_dir = util::cert_dir();
    let run = tlslab(&[
        "bulk",
        "--backend",
        "openssl,rustls-ring",
        "--tls",
        "1.2",
        "--suite",
        "aes128gcm,chacha20poly1305",
        "--size",
        "512",
        "--bytes-per-sample",
        "65536",
        "--runs",
        "3",
        "--warmup",
        "0",
        "-q",
        "--cert-dir",
        cert_dir.to_str().unwrap(),
        "--db",
        &path("db.sqlite"),
        "--export-json",
        &path("out.json"),
        "--export-csv",
        &path("out.csv"),
        "--export-markdown",
        &path("out.md"),
    ]);
    run.expect_code(0);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path("out.json")).unwrap()).unwrap();
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1 + 2 * 2, "{json}");
    assert!(rows.iter().all(|r| r["status"] == "measured"), "{json}");
    assert!(rows
        .iter()
        .filter(|r| r["backend"] != "none")
        .all(|r| r["crypto_share"].is_number()));
    let csv = std::fs::read_to_string(path("out.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + rows.len());
    assert!(std::fs::read_to_string(path("out.md"))
        .unwrap()
        .contains("| rustls-ring"));

    let report = tlslab(&["report", "--db", &path("db.sqlite")]);
    report.expect_code(0);
    let shown = report.stdout();
    assert!(
        shown.contains("bulk run") && shown.contains("(complete)"),
        "{shown}"
    );
    assert!(
        shown.contains("chacha20-poly1305") && shown.contains("crypto share"),
        "{shown}"
    );
}

/// Ctrl-C stops the run, keeps every cell with the samples it had and
/// marks the run incomplete (a real SIGINT, sent after the third round).
#[test]
fn ctrl_c_keeps_finished_bulk_cells() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let cert_dir = util::cert_dir();
    let output = Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args([
            "bulk",
            "--backend",
            "openssl",
            "--suite",
            "aes128gcm",
            "--size",
            "256",
            "--bytes-per-sample",
            "16384",
            "--runs",
            "1000",
            "--warmup",
            "0",
            "-q",
            "--cert-dir",
            cert_dir.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
        ])
        .env("TLSLAB_TEST_SIGINT_AFTER_ROUNDS", "3")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    let store = Store::open(&db).unwrap();
    let run_id = store.latest_run_id().unwrap().unwrap();
    let cells = store.load_bulk_cells(run_id).unwrap();
    assert_eq!(cells.len(), 2);
    for cell in &cells {
        assert_eq!(cell.samples().len(), 3, "{cell:?}");
    }
    let report = tlslab(&["report", "--db", db.to_str().unwrap()]);
    report.expect_code(0);
    assert!(
        report.stdout().contains("(incomplete)"),
        "{}",
        report.stdout()
    );
}
