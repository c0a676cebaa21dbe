//! The whole pipeline on the mock backend: matrix -> interleaved sampling
//! -> statistics -> store -> every exporter, with deterministic timings; and
//! the reason for interleaving: a machine whose speed drifts.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tlslab::backend::mock::MockBackend;
use tlslab::backend::Backend;
use tlslab::host::HostInfo;
use tlslab::measure::{self, Outcome, Round, Sampled, SamplingOptions};
use tlslab::report::handshake::{build_rows, HandshakeReport};
use tlslab::report::Format;
use tlslab::scenario::{parse_list, HandshakeMatrix, HandshakeScenario, Resumption};
use tlslab::stats;
use tlslab::store::{RunInfo, RunKind, Store};
use tlslab::workload::handshake::{
    run_matrix, CellResult, HandshakeProbe, MatrixObserver, MatrixRun,
};

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
        mtu_bytes: tlslab::scenario::DEFAULT_MTU_BYTES,
        transports: vec![tlslab::scenario::Transport::Memory],
    }
}

/// A handshake run on `backend`, stored by the test.
fn run_info(backend: &dyn Backend) -> RunInfo {
    util::run_info(RunKind::Handshake, "test", vec![backend.library()])
}

/// A fixed count of samples, so the mock's timings make a fixed output.
fn fixed_runs(runs: usize) -> SamplingOptions {
    SamplingOptions {
        runs: Some(runs),
        warmup: Duration::ZERO,
        slice: Duration::ZERO,
        seed: 11,
        ..SamplingOptions::default()
    }
}

struct Saving<'a> {
    store: &'a mut Store,
    run_id: i64,
    /// Raise the interrupt flag once this many rounds finished.
    stop_after_rounds: Option<(u32, &'a AtomicBool)>,
}

impl MatrixObserver for Saving<'_> {
    fn cell_finished(&mut self, cell: &CellResult) -> anyhow::Result<()> {
        self.store.save_cell(self.run_id, cell)
    }

    fn round_finished(&mut self, round: u32, _: usize, _: usize) {
        if let Some((after, flag)) = self.stop_after_rounds {
            if round + 1 >= after {
                flag.store(true, Ordering::SeqCst);
            }
        }
    }
}

fn report<'a>(
    cells: &'a [CellResult],
    baseline: &'a str,
    host: &'a HostInfo,
    rounds: &'a [Round],
) -> HandshakeReport<'a> {
    HandshakeReport {
        run_id: None,
        complete: true,
        baseline: Some(baseline),
        host,
        libraries: &[],
        seed: Some(11),
        precision: Some(0.01),
        cells,
        rounds,
        counted_with: None,
        show_wire: true,
        server_elsewhere: None,
    }
}

const BASELINE: &str = "handshake_1.2_rsa_rsa2048_aes128gcm";

/// The matrix on the mock, `runs` samples per cell against [`BASELINE`],
/// each cell stored as it finishes in a new in-memory store.
fn mock_run(runs: usize) -> (Store, i64, MatrixRun) {
    let backend: Arc<dyn Backend> = Arc::new(MockBackend::default());
    let mut store = Store::open_in_memory().unwrap();
    let run_id = store.begin_run(&run_info(backend.as_ref())).unwrap();
    let run = run_matrix(
        &matrix().expand(),
        &[backend],
        util::certs(),
        &fixed_runs(runs),
        Some(BASELINE),
        &AtomicBool::new(false),
        &mut Saving {
            store: &mut store,
            run_id,
            stop_after_rounds: None,
        },
    )
    .unwrap();
    (store, run_id, run)
}

#[test]
fn mock_matrix_to_store_to_exports() {
    let (mut store, run_id, run) = mock_run(6);
    let baseline = BASELINE;
    store.save_rounds(run_id, &run.rounds).unwrap();
    store.finish_run(run_id, !run.interrupted).unwrap();
    assert!(!run.interrupted);
    assert_eq!(run.cells.len(), 12);
    assert_eq!(run.rounds.len(), 6);

    let measured: Vec<String> = run
        .cells
        .iter()
        .filter(|c| c.outcome.status() == tlslab::measure::CellStatus::Measured)
        .map(|c| c.scenario.label())
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
    assert!(run
        .cells
        .iter()
        .all(|c| c.outcome.status() != tlslab::measure::CellStatus::Failed));
    let x448 = run
        .cells
        .iter()
        .find(|c| c.scenario.label() == "handshake_1.3_x448_ecdsa_p256_aes128gcm")
        .unwrap();
    assert_eq!(
        x448.outcome,
        Outcome::Unsupported {
            reason: "mock has no x448 key exchange in TLS 1.3".into()
        }
    );
    // Every measured cell has one sample in each of the six rounds.
    for cell in run.cells.iter().filter(|c| !c.samples().is_empty()) {
        let rounds: Vec<u32> = cell.samples().iter().map(|s| s.round).collect();
        assert_eq!(rounds, vec![0, 1, 2, 3, 4, 5]);
    }

    // The store gives back exactly what was run, in matrix order.
    let stored = store.load_run(run_id).unwrap();
    assert_eq!(stored.status, tlslab::store::RunStatus::Complete);
    let mut expected = run.cells.clone();
    let mut got = stored.cells.clone();
    let key = |c: &CellResult| c.scenario.label();
    expected.sort_by_key(key);
    got.sort_by_key(key);
    assert_eq!(got, expected);
    assert_eq!(store.load_rounds(run_id).unwrap(), run.rounds);
    if cfg!(target_os = "linux") {
        assert!(
            run.rounds
                .iter()
                .all(|r| r.others_cpu.is_some_and(|cpu| cpu >= 0.0)),
            "each round has a reading of other work: {:?}",
            run.rounds
        );
    }

    // The wire trace and the network model are deterministic on the mock.
    let mut cells = run.cells.clone();
    let untraced = tlslab::workload::annotate::trace_cells(&mut cells, util::certs(), &mut |_| {});
    assert!(untraced.is_empty(), "{untraced:?}");
    // The traced turns' own times share each side's CPU out; without them
    // the shares are equal and the model's figures fixed.
    for wire in cells.iter_mut().filter_map(|c| c.counts.wire.as_mut()) {
        wire.turns.iter_mut().for_each(|turn| turn.ns = 0);
    }
    let profiles = tlslab::scenario::network::parse_profiles("wan,rtt=100ms,initcwnd=1").unwrap();
    tlslab::workload::annotate::model_cells(&mut cells, &profiles);
    let traced = cells.iter().filter(|c| c.counts.wire.is_some()).count();
    assert_eq!(traced, measured.len());

    // Deterministic timings give a deterministic CSV: compare with the snapshot.
    let host = HostInfo::current();
    let document = report(&cells, baseline, &host, &[]).document();
    let csv = document.render(Format::Csv).unwrap();
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
    let rows = build_rows(&run.cells, Some(baseline));
    let ratio = |label: &str| {
        rows.iter()
            .find(|r| r.label == label)
            .and_then(|r| r.ratio_to_baseline)
            .map(|r| r.value)
            .unwrap()
    };
    assert_eq!(ratio(baseline), 1.0);
    assert!(ratio("handshake_1.3_x25519_ecdsa_p256_aes128gcm") < 1.0);

    let json: serde_json::Value =
        serde_json::from_str(&document.render(Format::Json).unwrap()).unwrap();
    let json_rows = json["rows"].as_array().unwrap();
    assert_eq!(json_rows.len(), 12);
    assert_eq!(
        json_rows[0]["scenario"]["label"],
        "handshake_1.2_rsa_rsa2048_aes128gcm"
    );
    assert_eq!(json_rows[0]["samples"].as_array().unwrap().len(), 6);
    assert_eq!(json_rows[0]["samples"][0]["round"], 0);
    assert_eq!(json["seed"], 11);

    // The exports name the wire and network figures as the issue does.
    let wire = &json_rows[0]["wire"];
    assert_eq!(wire["round_trips"], 2.0);
    assert!(wire["client_bytes"].as_u64().unwrap() > 0);
    assert!(wire["records"].as_u64().unwrap() > 0);
    assert!(wire["segments"].as_u64().is_some() && wire["datagrams"].is_null());
    let network = json_rows[0]["network"].as_array().unwrap();
    assert_eq!(network.len(), 2);
    assert_eq!(network[0]["profile"], "wan");
    assert!(network[0]["model_ms"].as_f64().unwrap() > 150.0);
    assert!(json_rows[0]["network"][0]["measured_ms"].is_null());

    // The main table, the wire table and the network table (a line per
    // row and profile).
    let markdown = document.render(Format::Markdown).unwrap();
    let table_lines = markdown.lines().filter(|l| l.starts_with('|')).count();
    assert_eq!(table_lines, (2 + 12) + (2 + 5) + (2 + 2 * 5), "{markdown}");
    assert!(markdown.contains("| mock "), "{markdown}");
    let table = document.render(Format::Table).unwrap();
    assert!(table.contains("same-round ratios"), "{table}");
}

/// Rounds run beside other work and quiet ones give the same ratios on the
/// mock (its costs are fixed), and the footer says so.
#[test]
fn the_footer_compares_ratios_from_busy_and_quiet_rounds() {
    let (_, _, run) = mock_run(16);
    let baseline = BASELINE;
    // Every other round beside a whole CPU of other work.
    let rounds: Vec<Round> = run
        .rounds
        .iter()
        .map(|r| Round {
            others_cpu: Some(if r.index % 2 == 0 { 1.0 } else { 0.0 }),
            ..*r
        })
        .collect();
    let host = HostInfo::current();
    let document = report(&run.cells, baseline, &host, &rounds).document();
    let footer = document.footer.join("\n");
    assert!(
        footer.contains("at least 0.5 CPU during 8 of 16 rounds, under 0.1 CPU during 8.")
            && footer.contains("differ by 0.0% for the median row and 0.0% at most (4 rows"),
        "{footer}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&document.render(Format::Json).unwrap()).unwrap();
    assert_eq!(json["other_work"]["busy_rounds"], 8);
    assert_eq!(json["round_times"].as_array().unwrap().len(), 16);

    // Without readings (an old run, another OS) there is no such line.
    let document = report(&run.cells, baseline, &host, &run.rounds[..0]).document();
    assert!(!document.footer.join("\n").contains("Other work"));
}

#[test]
fn a_wrong_group_fails_the_cell() {
    let backend = MockBackend::negotiating_group(tlslab::scenario::Group::P256);
    let scenario: HandshakeScenario = matrix()
        .expand()
        .into_iter()
        .find(|s| s.label() == "handshake_1.3_x25519_ecdsa_p256_aes128gcm")
        .unwrap();
    match HandshakeProbe::prepare(&backend, &scenario, util::certs()) {
        Err(outcome) => assert_eq!(
            outcome,
            Outcome::Failed {
                reason: "wrong group: asked for x25519, negotiated p256".into()
            }
        ),
        Ok(_) => panic!("a mismatch was accepted"),
    }
}

#[test]
fn an_interrupted_run_keeps_every_cell_it_had() {
    let backend: Arc<dyn Backend> = Arc::new(MockBackend::default());
    let mut store = Store::open_in_memory().unwrap();
    let run_id = store.begin_run(&run_info(backend.as_ref())).unwrap();
    let flag = AtomicBool::new(false);
    let run = run_matrix(
        &matrix().expand(),
        &[backend],
        util::certs(),
        &fixed_runs(50),
        None,
        &flag,
        &mut Saving {
            store: &mut store,
            run_id,
            stop_after_rounds: Some((3, &flag)),
        },
    )
    .unwrap();
    store.finish_run(run_id, !run.interrupted).unwrap();
    assert!(run.interrupted);
    assert_eq!(run.rounds.len(), 3);
    // Cells under way keep their three samples; none is lost or invented.
    for cell in run
        .cells
        .iter()
        .filter(|c| c.outcome.status() == tlslab::measure::CellStatus::Measured)
    {
        assert_eq!(cell.samples().len(), 3, "{}", cell.scenario.label());
        assert!(!cell.outcome.precise());
    }
    let stored = store.load_run(run_id).unwrap();
    assert_eq!(stored.status, tlslab::store::RunStatus::Incomplete);
    assert_eq!(stored.cells.len(), 12);
}

/// The true cost ratio of two mock rows (their fixed costs, no drift).
fn true_ratio(cells: &[CellResult], label: &str, baseline: &str) -> f64 {
    let typical = |label: &str| {
        let cell = cells.iter().find(|c| c.scenario.label() == label).unwrap();
        cell.samples()
            .iter()
            .map(|s| s.value.cost())
            .fold(f64::INFINITY, f64::min)
    };
    typical(label) / typical(baseline)
}

/// Issue 7: on a machine whose speed changes in the middle of a run,
/// interleaved rounds keep every ratio to the baseline inside its interval,
/// while measuring one cell after another (as before) puts them off.
#[test]
fn interleaving_keeps_ratios_right_on_a_drifting_machine() {
    let scenarios = matrix().expand();
    let baseline = "handshake_1.2_rsa_rsa2048_aes128gcm";
    let options = fixed_runs(40);

    // Interleaved: the machine is twice as slow for 40 handshakes out of
    // every 80 (across all cells), the mock's costs otherwise fixed.
    let drifting: Arc<dyn Backend> = Arc::new(MockBackend::drifting(80, 2));
    let mut store = Store::open_in_memory().unwrap();
    let run_id = store.begin_run(&run_info(drifting.as_ref())).unwrap();
    let run = run_matrix(
        &scenarios,
        &[drifting],
        util::certs(),
        &options,
        Some(baseline),
        &AtomicBool::new(false),
        &mut Saving {
            store: &mut store,
            run_id,
            stop_after_rounds: None,
        },
    )
    .unwrap();
    let rows = build_rows(&run.cells, Some(baseline));
    let drift = tlslab::report::handshake::drift(&run.cells).unwrap();
    assert!(drift.max / drift.min > 1.5, "the drift is seen: {drift:?}");
    for row in rows.iter().filter(|r| r.sample_count > 0) {
        let truth = true_ratio(&run.cells, &row.label, baseline);
        let ratio = row.ratio_to_baseline.unwrap();
        // The mock adds up to 1 µs of jitter per handshake (under 1%): the
        // interval is allowed that much slack around the jitter-free truth.
        assert!(
            ratio.ci95.low * 0.99 <= truth && truth <= ratio.ci95.high * 1.01,
            "{}: true ratio {truth} outside {ratio:?}",
            row.label
        );
        assert!(
            (ratio.value / truth - 1.0).abs() < 0.02,
            "{}: {ratio:?}",
            row.label
        );
    }

    // One cell after another on the same kind of machine: each cell is
    // sampled alone, so some see the slow stretch and others do not.
    let drifting = MockBackend::drifting(80, 2);
    let mut medians = Vec::new();
    for scenario in &scenarios {
        let Ok((mut probe, _)) = HandshakeProbe::prepare(&drifting, scenario, util::certs()) else {
            continue;
        };
        let run = measure::sample(
            vec![probe.probe()],
            tlslab::measure::Pairing::None,
            &options,
            &AtomicBool::new(false),
            &mut measure::Quietly,
        )
        .unwrap();
        let costs: Vec<f64> = run.outcomes[0]
            .samples()
            .iter()
            .map(|s| s.value.cost())
            .collect();
        medians.push((scenario.label(), stats::median(&costs).unwrap()));
    }
    let base = medians.iter().find(|(l, _)| l == baseline).unwrap().1;
    let off = medians
        .iter()
        .filter(|(label, median)| {
            let truth = true_ratio(&run.cells, label, baseline);
            (median / base / truth - 1.0).abs() > 0.2
        })
        .count();
    assert!(
        off >= 1,
        "sequential medians should be thrown off by the drift: {medians:?}"
    );
}
