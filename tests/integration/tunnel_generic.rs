//! `tlslab tunnel --cpu-features native,generic` (issue 25 item 4): the
//! rows again in a child process whose libraries see no CPU features,
//! named "<engine> (generic)" beside the native ones in the tables,
//! stored and reported from the database; an engine whose cryptography
//! cannot be masked (WireGuard) gives generic rows that say why. One test
//! runs for every registered engine (`ENGINES`), so a new engine gets it.

use tlslab::backend::CpuMasking;
use tlslab::scenario::names::Named;
use tlslab::scenario::tunnel::{Cipher, CipherMode, Compression, Digest, Payload, TunnelScenario};
use tlslab::scenario::CpuFeatures;

use crate::each::for_each_engine;
use crate::tunnel::{assert_nothing_left, tlslab_in};
use crate::util::{has_row, tlslab};

/// The reason an engine's generic rows give, if its CPU features cannot
/// be masked.
fn cannot_mask(masking: CpuMasking) -> Option<&'static str> {
    match masking {
        CpuMasking::Impossible(reason) => Some(reason),
        _ => None,
    }
}

/// `--preset vpn-compare --cpu-features native,generic` on tiny budgets:
/// the in-process OpenVPN rows measured again without CPU features,
/// WireGuard's generic rows saying why they cannot be, both in table 6
/// beside the native rows (their ratios of medians: a child's rounds are
/// its own) and in the ranking; all of it read back from the database by
/// `report`.
#[test]
fn generic_cpu_rows_sit_beside_the_native_ones_and_wireguards_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let run = tlslab(&[
        "tunnel",
        "--preset",
        "vpn-compare",
        "--cpu-features",
        "native,generic",
        "--max-time",
        "0",
        "--min-samples",
        "3",
        "--warmup",
        "0",
        "-q",
        "--db",
        &path("db.sqlite"),
        "--export-json",
        &path("out.json"),
    ]);
    run.expect_code(0);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path("out.json")).unwrap()).unwrap();
    let rows_of = |engine: &str| -> Vec<serde_json::Value> {
        json["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["engine"] == engine)
            .cloned()
            .collect()
    };
    // Per size: the no-tunnel row and three ciphers, each engine natively
    // and without CPU features.
    for engine in [
        "inprocess",
        "inprocess (generic)",
        "wireguard",
        "wireguard (generic)",
    ] {
        assert_eq!(rows_of(engine).len(), 3 * 4, "{engine}: {json}");
    }
    assert!(
        rows_of("inprocess (generic)")
            .iter()
            .all(|r| r["status"] == "measured"),
        "{json}"
    );
    let wireguard = tlslab::workload::tunnel::wireguard::WireguardEngine;
    let ring = cannot_mask(tlslab::workload::tunnel::TunnelEngine::cpu_masking(
        &wireguard,
    ))
    .expect("boringtun's ring cannot be masked");
    for row in rows_of("wireguard (generic)") {
        assert_eq!(row["status"], "unsupported", "{row}");
        let reason = row["reason"].as_str().unwrap();
        if row["scenario"]["cipher"]
            .as_str()
            .unwrap()
            .starts_with("aes")
        {
            assert!(reason.contains("ChaCha20-Poly1305 only"), "{row}");
        } else {
            assert_eq!(reason, ring, "{row}");
        }
    }
    assert!(ring.contains("ring has no switch"), "{ring}");

    // Table 6: per size, three native OpenVPN rows, WireGuard's, and the
    // three generic OpenVPN rows, compared by their medians.
    let versus = json["versus_fastest"].as_array().unwrap();
    assert_eq!(versus.len(), 3 * 7, "{json}");
    let generic: Vec<&serde_json::Value> = versus
        .iter()
        .filter(|v| v["engine"] == "inprocess (generic)")
        .collect();
    assert_eq!(generic.len(), 3 * 3, "{json}");
    assert!(generic.iter().all(|v| v["same_rounds"] == false), "{json}");
    let out = run.stdout();
    assert!(
        has_row(
            &out,
            &["random 1400 B", "inprocess (generic)", "aes-128-gcm"]
        ),
        "{out}"
    );

    // The same from the database.
    let report = tlslab(&["report", "--db", &path("db.sqlite")]);
    report.expect_code(0);
    let shown = report.stdout();
    let table6 = &shown[shown.find("6. Engines side by side").expect("table 6")..];
    assert!(
        has_row(
            table6,
            &[
                "random 64 B",
                "inprocess (generic)",
                "aes-256-gcm",
                "(medians)"
            ]
        ),
        "{shown}"
    );
    // The ranking shows each native row's generic twin beside it.
    assert!(
        shown.contains("inprocess (generic) MB/s (× baseline)"),
        "{shown}"
    );
    assert!(
        shown.contains("wireguard (generic) chacha20-poly1305"),
        "{shown}"
    );

    // Counted instructions do not depend on CPU features being masked.
    let counted = tlslab(&[
        "tunnel",
        "--no-db",
        "--measure",
        "instructions",
        "--cpu-features",
        "native,generic",
    ]);
    counted.expect_code(2);
    assert!(
        counted.stderr().contains("timed only"),
        "{}",
        counted.stderr()
    );
}

for_each_engine! {
    /// Every engine that can run here, without CPU features only: its row
    /// measured in the generic-CPU child as "<engine> (generic)" if its
    /// cryptography can be masked (the inprocess engine's OpenSSL, the
    /// OpenVPN daemons' OpenSSL through their environment), else saying why
    /// (WireGuard's); stored, reported, and nothing left behind.
    fn every_engine_runs_without_cpu_features_or_says_why(engine: &'static dyn TunnelEngine) {
        let id = engine.id().id();
        // The first of these rows the engine runs.
        let row = [
            Cipher::Aes128Gcm,
            Cipher::Aes128Cbc,
            Cipher::Chacha20Poly1305,
        ]
        .into_iter()
        .map(|cipher| TunnelScenario {
            baseline: false,
            cipher,
            digest: match cipher.mode() {
                CipherMode::Aead => Digest::None,
                _ => Digest::Sha1,
            },
            compression: Compression::None,
            payload: Payload::Random,
            payload_bytes: 200,
        })
        .find(|row| engine.unsupported_reason(row).is_none())
        .unwrap_or_else(|| panic!("{id} runs none of the rows"));
        let dir = tempfile::tempdir().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let db = dir.path().join("db.sqlite");
        let (run, pid) = tlslab_in(
            tmp.path(),
            &[
                "tunnel",
                "--engine",
                id,
                "--cipher",
                row.cipher.id(),
                "--digest",
                row.digest.id(),
                "--size",
                "200",
                "--no-baseline-row",
                "--cpu-features",
                "generic",
                "--transfer-mb",
                "0.2",
                "--max-time",
                "0",
                "--min-samples",
                "2",
                "--warmup",
                "0",
                "-q",
                "--db",
                db.to_str().unwrap(),
            ],
        );
        run.expect_code(0);
        assert_nothing_left(tmp.path(), pid, id);
        let store = tlslab::store::Store::open_read_only(&db).unwrap();
        let cells = store
            .load_tunnel_cells(store.latest_run_id().unwrap().unwrap())
            .unwrap();
        assert_eq!(cells.len(), 1, "{id}: {cells:?}");
        let cell = &cells[0];
        assert_eq!(cell.engine, engine.id(), "{id}");
        assert_eq!(cell.cpu_features, CpuFeatures::Generic, "{id}");
        assert_eq!(cell.scenario, row, "{id}");
        let status = cell.outcome.status().to_string();
        match cannot_mask(engine.cpu_masking()) {
            Some(reason) => {
                assert_eq!(status, "unsupported", "{id}: {cell:?}");
                assert_eq!(cell.outcome.reason(), Some(reason), "{id}");
            }
            None => {
                assert_eq!(status, "measured", "{id}: {cell:?}");
                assert_eq!(cell.samples().len(), 2, "{id}: {cell:?}");
            }
        }
        let report = tlslab(&["report", "--db", db.to_str().unwrap()]);
        report.expect_code(0);
        let generic = format!("{id} (generic)");
        assert!(
            report.stdout().contains(&generic),
            "{id}: {}",
            report.stdout()
        );
    }
}
