//! The whole pipeline on the mock backend: matrix -> sampling -> statistics
//! -> store -> exports, with deterministic timings.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tlslab::backend::mock::MockBackend;
use tlslab::backend::Backend;
use tlslab::host::HostInfo;
use tlslab::measure::{run_matrix, CellOutcome, CellResult, NoProgress, Progress};
use tlslab::report::{self, Format, Report};
use tlslab::scenario::{parse_list, HandshakeMatrix, HandshakeScenario, Resumption};
use tlslab::store::{RunInfo, Store};

use crate::util;

fn matrix() -> HandshakeMatrix {
    HandshakeMatrix {
        versions: parse_list("1.2,1.3").unwrap(),
        groups: parse_list("rsa,x25519,x448").unwrap(),
        certs: parse_list("rsa2048,ecdsa_p256").unwrap(),
        aeads: parse_list("aes128gcm").unwrap(),
        resumptions: vec![Resumption::Off],
        mutual: vec![false],
        chain_depth: 3,
    }
}

fn run_info(backend: &dyn Backend) -> RunInfo {
    RunInfo {
        kind: "handshake".into(),
        tool_version: "test".into(),
        command_line: "test".into(),
        options_json: "{}".into(),
        host: HostInfo::current(),
        libraries: vec![backend.library()],
    }
}

fn report(cells: &[CellResult], baseline: &str) -> Report {
    Report {
        tool_version: "test".into(),
        run_id: None,
        complete: true,
        baseline: Some(baseline.into()),
        host: HostInfo::current(),
        libraries: vec![],
        rows: report::build_rows(cells, Some(baseline)),
    }
}

#[test]
fn mock_matrix_to_store_to_exports() {
    let backend: Arc<dyn Backend> = Arc::new(MockBackend::default());
    let mut store = Store::open_in_memory().unwrap();
    let run_id = store.begin_run(&run_info(backend.as_ref())).unwrap();
    let scenarios = matrix().expand();
    let run = run_matrix(
        &scenarios,
        &[Arc::clone(&backend)],
        util::certs(),
        &util::tiny_sampling(),
        &mut NoProgress,
        &AtomicBool::new(false),
        &mut |cell| store.save_cell(run_id, cell),
    )
    .unwrap();
    store.finish_run(run_id, !run.interrupted).unwrap();
    assert!(!run.interrupted);
    assert_eq!(run.cells.len(), 12);

    let statuses: Vec<(String, &str)> = run
        .cells
        .iter()
        .map(|c| {
            let status = match &c.outcome {
                CellOutcome::Measured { .. } => "measured",
                CellOutcome::Unsupported { .. } => "unsupported",
                CellOutcome::Failed { .. } => "failed",
            };
            (c.scenario.label(), status)
        })
        .collect();
    let measured: Vec<&str> = statuses
        .iter()
        .filter(|(_, s)| *s == "measured")
        .map(|(l, _)| l.as_str())
        .collect();
    assert_eq!(
        measured,
        vec![
            "handshake_1.2_rsa_rsa2048_aes128gcm",
            "handshake_1.2_x25519_rsa2048_aes128gcm",
            "handshake_1.2_x25519_ecdsa_p256_aes128gcm",
            "handshake_1.3_x25519_rsa2048_aes128gcm",
            "handshake_1.3_x25519_ecdsa_p256_aes128gcm",
        ]
    );
    assert!(statuses.iter().all(|(_, s)| *s != "failed"), "{statuses:?}");
    let x448 = run
        .cells
        .iter()
        .find(|c| c.scenario.label() == "handshake_1.3_x448_ecdsa_p256_aes128gcm")
        .unwrap();
    assert_eq!(
        x448.outcome,
        CellOutcome::Unsupported {
            reason: "mock has no x448 key exchange in TLS 1.3".into()
        }
    );

    // The store gives back exactly what was run.
    let stored = store.load_run(run_id).unwrap();
    assert_eq!(stored.status, "complete");
    assert_eq!(stored.cells, run.cells);

    // Deterministic timings give a deterministic CSV: compare with the snapshot.
    let baseline = "handshake_1.2_rsa_rsa2048_aes128gcm";
    let csv = report::render(&report(&stored.cells, baseline), Format::Csv).unwrap();
    let snapshot_path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/integration/snapshots/mock_pipeline.csv"
    );
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(snapshot_path, &csv).unwrap();
    }
    let expected = std::fs::read_to_string(snapshot_path).expect("snapshot exists");
    assert_eq!(csv, expected, "CSV export differs from the snapshot");

    // The baseline row has ratio 1; the others their mock cost ratio.
    let rows = report::build_rows(&stored.cells, Some(baseline));
    let ratio = |label: &str| {
        rows.iter()
            .find(|r| r.label == label)
            .and_then(|r| r.ratio_to_baseline)
            .map(|r| r.value)
            .unwrap()
    };
    assert_eq!(ratio(baseline), 1.0);
    assert!(ratio("handshake_1.3_x25519_ecdsa_p256_aes128gcm") < 1.0);

    let json: serde_json::Value = serde_json::from_str(
        &report::render(&report(&stored.cells, baseline), Format::Json).unwrap(),
    )
    .unwrap();
    let json_rows = json["rows"].as_array().unwrap();
    assert_eq!(json_rows.len(), 12);
    assert_eq!(
        json_rows[0]["scenario"]["label"],
        "handshake_1.2_rsa_rsa2048_aes128gcm"
    );
    assert_eq!(json_rows[0]["samples"].as_array().unwrap().len(), 3);

    let markdown = report::render(&report(&stored.cells, baseline), Format::Markdown).unwrap();
    let table_lines = markdown.lines().filter(|l| l.starts_with('|')).count();
    assert_eq!(table_lines, 2 + 12, "{markdown}");
    assert!(markdown.contains("| mock "), "{markdown}");
}

#[test]
fn a_wrong_group_fails_the_cell() {
    let backend: Arc<dyn Backend> = Arc::new(MockBackend::negotiating_group(
        tlslab::scenario::Group::P256,
    ));
    let scenarios: Vec<HandshakeScenario> = matrix()
        .expand()
        .into_iter()
        .filter(|s| s.label() == "handshake_1.3_x25519_ecdsa_p256_aes128gcm")
        .collect();
    let run = run_matrix(
        &scenarios,
        &[backend],
        util::certs(),
        &util::tiny_sampling(),
        &mut NoProgress,
        &AtomicBool::new(false),
        &mut |_| Ok(()),
    )
    .unwrap();
    assert_eq!(
        run.cells[0].outcome,
        CellOutcome::Failed {
            reason: "wrong group: asked for x25519, negotiated p256".into()
        }
    );
}

/// Stops the run (as Ctrl-C does) once a number of cells finished.
struct InterruptAfter<'a> {
    cells: usize,
    flag: &'a AtomicBool,
}

impl Progress for InterruptAfter<'_> {
    fn cell_started(&mut self, _: usize, _: usize, _: &str, _: &HandshakeScenario) {}

    fn cell_finished(&mut self, done: usize, _: usize, _: &CellResult) {
        if done >= self.cells {
            self.flag.store(true, Ordering::SeqCst);
        }
    }
}

#[test]
fn an_interrupted_run_keeps_finished_cells() {
    let backend: Arc<dyn Backend> = Arc::new(MockBackend::default());
    let mut store = Store::open_in_memory().unwrap();
    let run_id = store.begin_run(&run_info(backend.as_ref())).unwrap();
    let flag = AtomicBool::new(false);
    let run = run_matrix(
        &matrix().expand(),
        &[backend],
        util::certs(),
        &util::tiny_sampling(),
        &mut InterruptAfter {
            cells: 2,
            flag: &flag,
        },
        &flag,
        &mut |cell| store.save_cell(run_id, cell),
    )
    .unwrap();
    store.finish_run(run_id, !run.interrupted).unwrap();
    assert!(run.interrupted);
    assert_eq!(run.cells.len(), 2);
    let stored = store.load_run(run_id).unwrap();
    assert_eq!(stored.status, "incomplete");
    assert_eq!(stored.cells, run.cells);
}
