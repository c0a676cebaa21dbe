//! `tlslab tunnel`: the data channel round trip and tamper detection for
//! every cipher and digest, and the command's unknown names; then one
//! suite that runs for every registered engine (`ENGINES`): a matrix with
//! exports and the store, its rows measured or saying the engine's reason,
//! Ctrl-C keeping the samples taken, nothing left behind, and each engine
//! beside the in-process rows. An engine that cannot run here (a real
//! tunnel without root or its programs) prints a skip line; CI must run
//! them all.

use std::path::Path;
use std::process::{Command, Stdio};

use tlslab::backend::openssl::data_channel::{self as channel, PacketError};
use tlslab::scenario::names::Named;
use tlslab::scenario::tunnel::{
    Cipher, CipherMode, Compression, Digest, EngineId, Payload, TunnelScenario,
};
use tlslab::workload::tunnel::inprocess::round_trip;
use tlslab::workload::tunnel::{TunnelEngine, ENGINES};

use crate::each::for_each_engine;
use crate::util::{has_row, processes_mentioning, skip_without, tlslab, Run};

fn scenario(cipher: Cipher, digest: Digest, compression: Compression) -> TunnelScenario {
    TunnelScenario {
        baseline: false,
        cipher,
        digest,
        compression,
        payload: Payload::Text,
        payload_bytes: 333,
    }
}

/// The only reasons a combination may be unsupported in this build.
fn expected_unsupported(scenario: &TunnelScenario) -> bool {
    (scenario.digest == Digest::Sha0 && scenario.cipher.mode() != CipherMode::Aead)
        || (scenario.compression == Compression::Lzo && !cfg!(feature = "lzo"))
}

#[test]
fn every_cipher_digest_and_compression_round_trips() {
    let mut measured = 0;
    for &cipher in Cipher::ALL {
        for &digest in Digest::ALL {
            for &compression in Compression::ALL {
                let scenario = scenario(cipher, digest, compression);
                match channel::unsupported_reason(&scenario) {
                    Some(reason) => assert!(
                        expected_unsupported(&scenario),
                        "{}: {reason}",
                        scenario.label()
                    ),
                    None => {
                        round_trip(&scenario, 3)
                            .unwrap_or_else(|e| panic!("{}: {e:#}", scenario.label()));
                        measured += 1;
                    }
                }
            }
        }
    }
    // Every cipher, every digest but SHA-0, with LZ4 and without.
    assert!(
        measured >= 20 * 12 * 2,
        "{measured} combinations round-tripped"
    );
    round_trip(&TunnelScenario::baseline(Payload::Zero, 1400), 3).unwrap();
}

#[test]
fn a_tampered_packet_fails_authentication_for_every_cipher_and_digest() {
    let mut checked = 0;
    for &cipher in Cipher::ALL {
        for &digest in Digest::ALL {
            let scenario = scenario(cipher, digest, Compression::Lz4);
            if channel::unsupported_reason(&scenario).is_some() {
                continue;
            }
            let authenticated = cipher.mode() == CipherMode::Aead || digest != Digest::None;
            if !authenticated {
                assert!(
                    scenario
                        .security_notes()
                        .iter()
                        .any(|n| n.contains("not authenticated")),
                    "{}",
                    scenario.label()
                );
                continue;
            }
            let (mut sender, mut receiver) = channel::pair(&scenario).unwrap();
            let payload = Payload::Text.bytes(0, 333);
            let mut packet = Vec::new();
            for position in [0, 1, 17, 40, usize::MAX] {
                sender.seal(&payload, &mut packet).unwrap();
                let index = position.min(packet.len() - 1);
                packet[index] ^= 0x01;
                assert_eq!(
                    receiver.open(&packet),
                    Err(PacketError::Authentication),
                    "{} with byte {index} flipped",
                    scenario.label()
                );
                // The untouched packet still opens: the failure was the tampering.
                packet[index] ^= 0x01;
                receiver.open(&packet).unwrap();
                assert_eq!(receiver.payload(), payload.as_slice());
            }
            checked += 1;
        }
    }
    assert!(checked >= 16 * 11 + 3, "{checked} pairs checked");
}

#[test]
fn unknown_tunnel_names_list_the_valid_ones() {
    let run = tlslab(&["tunnel", "--no-db", "--cipher", "aes-512-cbc"]);
    run.expect_code(2);
    let stderr = run.stderr();
    assert!(stderr.contains("unknown cipher 'aes-512-cbc'"), "{stderr}");
    assert!(
        stderr.contains("bf-cbc") && stderr.contains("chacha20-poly1305"),
        "{stderr}"
    );

    let run = tlslab(&["tunnel", "--no-db", "--digest", "sha-1024"]);
    run.expect_code(2);
    assert!(run.stderr().contains("whirlpool"), "{}", run.stderr());
    tlslab(&["tunnel", "--no-db", "--size", "0"]).expect_code(2);
    tlslab(&["tunnel", "--no-db", "--preset", "nope"]).expect_code(2);
}

/// Every registered engine that can run here. Each one that cannot prints
/// a skip line for `test` (and fails it under CI, which must run them all).
pub(crate) fn runnable_engines(test: &str) -> Vec<&'static dyn TunnelEngine> {
    ENGINES
        .iter()
        .map(|descriptor| (descriptor.open)())
        .filter(|engine| {
            let test = format!("{test} [{}]", engine.id().id());
            !skip_without(
                engine.preflight().err(),
                &test,
                "what the reason names, as root",
            )
        })
        .collect()
}

/// Runs tlslab with its temporary directory in `tmp`, so what it leaves
/// there, and the processes that name it, are this run's alone; returns
/// the run and its PID (which names its WireGuard sockets).
pub(crate) fn tlslab_in(tmp: &Path, args: &[&str]) -> (Run, u32) {
    let child = Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args(args)
        .env_remove("COLUMNS")
        .env("TMPDIR", tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the tlslab binary runs");
    let pid = child.id();
    let output = child.wait_with_output().expect("the tlslab binary runs");
    let run = Run {
        output,
        command: format!("TMPDIR={} tlslab {}", tmp.display(), args.join(" ")),
    };
    (run, pid)
}

/// The WireGuard control sockets of the tlslab run with PID `pid` (its
/// wireguard-go daemons', named for it).
pub(crate) fn wireguard_sockets_of(pid: u32) -> Vec<String> {
    std::fs::read_dir(tlslab::child::WIREGUARD_SOCKET_DIR)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| {
            ['a', 'b'].iter().any(|&side| {
                name.starts_with(&tlslab::child::wireguard_interface_prefix(pid, side))
            })
        })
        .collect()
}

/// Asserts that a finished run (PID `pid`) whose temporary directory was
/// `tmp` left nothing behind: no process naming it (an engine's daemon),
/// no scratch file or directory in it, no WireGuard control socket.
pub(crate) fn assert_nothing_left(tmp: &Path, pid: u32, engine: &str) {
    assert_eq!(
        wireguard_sockets_of(pid),
        Vec::<String>::new(),
        "{engine}: sockets left behind"
    );
    let tmp_name = tmp.to_str().unwrap();
    assert_eq!(
        processes_mentioning(tmp_name),
        Vec::<u32>::new(),
        "{engine}: processes outlived the run"
    );
    let left: Vec<String> = std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("tlslab-"))
        .collect();
    assert_eq!(left, Vec::<String>::new(), "{engine}: scratch left behind");
}

/// Asserts that every JSON row of `engine` is measured if the engine
/// supports its scenario, else unsupported with the engine's reason.
fn assert_rows_follow_the_engine(
    engine: &dyn TunnelEngine,
    json: &serde_json::Value,
) -> Vec<serde_json::Value> {
    let rows: Vec<serde_json::Value> = json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["engine"] == engine.id().id())
        .cloned()
        .collect();
    for row in &rows {
        let label = row["label"].as_str().unwrap();
        let scenario = TunnelScenario::from_label(label).unwrap();
        match engine.unsupported_reason(&scenario) {
            None => assert_eq!(row["status"], "measured", "{label}: {row}"),
            Some(reason) => {
                assert_eq!(row["status"], "unsupported", "{label}: {row}");
                assert_eq!(row["reason"], reason.as_str(), "{label}: {row}");
            }
        }
    }
    rows
}

for_each_engine! {
    fn every_engine_runs_a_tiny_matrix_exports_it_and_reports_it_from_the_database(
        engine: &'static dyn TunnelEngine
    ) {
        let id = engine.id().id();
        let dir = tempfile::tempdir().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
        let (run, pid) = tlslab_in(
            tmp.path(),
            &[
                "tunnel",
                "--engine",
                id,
                "--cipher",
                "aes-128-gcm,chacha20-poly1305,bf-cbc,aes-128-cbc",
                "--digest",
                "sha1,RSA-SHA1,md5",
                "--compression",
                "none,lz4",
                "--payload",
                "random,zero",
                "--size",
                "200",
                "--transfer-mb",
                "0.2",
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
                "--export-csv",
                &path("out.csv"),
                "--export-markdown",
                &path("out.md"),
            ],
        );
        run.expect_code(0);
        assert_nothing_left(tmp.path(), pid, id);
        let out = run.stdout();
        for heading in [
            "1. Effect of compression",
            "2. Ciphers normalised to the fastest",
            "3. Digests normalised to the fastest",
            "4. Ranking of every combination",
            "5. No tunnel against the tunnels",
        ] {
            assert!(out.contains(heading), "{id}: missing {heading}: {out}");
        }
        let supports = |label: &str| {
            engine
                .unsupported_reason(&TunnelScenario::from_label(label).unwrap())
                .is_none()
        };
        if supports("tunnel_bf-cbc_sha1_none_random_200") {
            assert!(out.contains("SWEET32"), "{id}: {out}");
        }

        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path("out.json")).unwrap()).unwrap();
        let rows = assert_rows_follow_the_engine(engine, &json);
        // Per payload: baseline + 2 AEAD x 2 compressions + 2 CBC x 2
        // digests x 2 compressions.
        assert_eq!(rows.len(), 2 * (1 + 4 + 8), "{id}: {json}");
        if supports("tunnel_bf-cbc_sha1_lz4_zero_200")
            && supports("tunnel_bf-cbc_sha1_none_zero_200")
        {
            // Compressed against uncompressed, per payload.
            assert_eq!(
                json["compression_effect"].as_array().unwrap().len(),
                2,
                "{id}"
            );
        }
        let tunnel = rows
            .iter()
            .find(|r| r["status"] == "measured" && r["scenario"]["baseline"] == false)
            .unwrap_or_else(|| panic!("{id}: no tunnel row is measured: {json}"));
        let csv = std::fs::read_to_string(path("out.csv")).unwrap();
        assert_eq!(csv.lines().count(), 1 + rows.len(), "{id}");
        let markdown = std::fs::read_to_string(path("out.md")).unwrap();
        assert!(markdown.contains("## 4. Ranking"), "{id}: {markdown}");

        let report = tlslab(&["report", "--db", &path("db.sqlite")]);
        report.expect_code(0);
        let shown = report.stdout();
        assert!(shown.contains("(complete)"), "{id}: {shown}");
        let axis = |name: &str| tunnel["scenario"][name].as_str().unwrap().to_string();
        let fields = [
            id.to_string(),
            axis("cipher"),
            axis("digest"),
            axis("compression"),
        ];
        let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
        assert!(has_row(&shown, &fields), "{id}: {fields:?}: {shown}");
    }
}

for_each_engine! {
    /// Ctrl-C stops the run, keeps every row with the samples it had and
    /// marks the run incomplete (a real SIGINT, sent after the third round):
    /// rows sampled together keep their rounds, a row sampled on its own (a
    /// real tunnel) keeps the samples it took before Ctrl-C.
    fn ctrl_c_keeps_the_samples_every_engine_took(engine: &'static dyn TunnelEngine) {
        let ciphers = "aes-128-cbc,camellia-128-cbc,seed-cbc,cast5-cbc,des-cbc,chacha20-poly1305";
        let id = engine.id().id();
        // The first row of the matrix the engine runs: sampled whether the
        // engine interleaves its rows or takes them one at a time.
        let first = ciphers
            .split(',')
            .map(|name| {
                let cipher: Cipher = tlslab::scenario::names::parse_name(name).unwrap();
                TunnelScenario {
                    baseline: false,
                    cipher,
                    // As the matrix has it: an AEAD row's digest is none.
                    digest: match cipher.mode() {
                        CipherMode::Aead => Digest::None,
                        _ => Digest::Sha256,
                    },
                    compression: Compression::None,
                    payload: Payload::Random,
                    payload_bytes: 1400,
                }
            })
            .find(|row| engine.unsupported_reason(row).is_none())
            .unwrap_or_else(|| panic!("{id} runs none of {ciphers}"));
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db.sqlite");
        let child = Command::new(env!("CARGO_BIN_EXE_tlslab"))
            .args([
                "tunnel",
                "--engine",
                id,
                "--cipher",
                ciphers,
                "--digest",
                "sha256",
                "--no-baseline-row",
                "--transfer-mb",
                "0.2",
                "--runs",
                "100000",
                "--warmup",
                "0",
                "-q",
                "--db",
                db.to_str().unwrap(),
            ])
            .env("TLSLAB_TEST_SIGINT_AFTER_ROUNDS", "3")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(130), "{id}: {stderr}");
        // Its daemons stopped, their sockets gone.
        assert_eq!(wireguard_sockets_of(pid), Vec::<String>::new(), "{id}");
        let connection = rusqlite::Connection::open(&db).unwrap();
        let (state, samples): (String, i64) = connection
            .query_row(
                "SELECT status, sample_count FROM tunnel_cells WHERE engine = ?1 AND scenario_id = ?2",
                [id, first.label().as_str()],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .unwrap_or_else(|e| panic!("{id}: {} is stored: {e}: {stderr}", first.label()));
        assert_eq!(state, "measured", "{id}: {stderr}");
        assert_eq!(samples, 3, "{id}: it kept the samples of its three rounds");

        let report = tlslab(&["report", "--db", db.to_str().unwrap()]);
        report.expect_code(0);
        let out = report.stdout();
        assert!(out.contains("(incomplete)"), "{id}: {out}");
        let row = [id, first.cipher.id(), first.digest.id()];
        assert!(has_row(&out, &row), "{id}: {out}");
        assert!(out.contains("interrupted"), "{id}: {out}");
    }
}

for_each_engine! {
    real;

    /// Every engine but the in-process one, run beside it: its figure in the
    /// ranking's last column, its rows measured or saying its reason, nothing
    /// left behind.
    fn every_engine_measures_beside_the_in_process_rows(engine: &'static dyn TunnelEngine) {
        let id = engine.id().id();
        let dir = tempfile::tempdir().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let json_path = dir.path().join("out.json");
        let engines = format!("inprocess,{id}");
        let (run, pid) = tlslab_in(
            tmp.path(),
            &[
                "tunnel",
                "--engine",
                &engines,
                "--cipher",
                "aes-128-cbc,bf-cbc,aes-128-gcm,chacha20-poly1305",
                "--digest",
                "sha1",
                "--compression",
                "none,lz4",
                "--transfer-mb",
                "2",
                "--min-samples",
                "2",
                "--max-time",
                "0",
                "--warmup",
                "0",
                "--no-db",
                "-q",
                "--export-json",
                json_path.to_str().unwrap(),
            ],
        );
        run.expect_code(0);
        assert_nothing_left(tmp.path(), pid, id);
        let out = run.stdout();
        assert!(out.contains(&format!("{id} MB/s")), "{out}");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
        let rows = assert_rows_follow_the_engine(engine, &json);
        // Per compression: the baseline once, and the four ciphers.
        assert_eq!(rows.len(), 1 + 4 * 2, "{id}: {json}");
        assert!(
            rows.iter()
                .any(|r| r["status"] == "measured" && r["scenario"]["baseline"] == false),
            "{id}: a tunnel row is measured: {json}"
        );
    }
}

/// Issue 25: the rows of every engine that interleaves are sampled in ONE
/// set of rounds, so a ratio between two engines' rows is a same-round
/// ratio. Ctrl-C after round 3 leaves the rows of both in-process engines
/// with the samples of rounds 0 to 2 (sampled one engine after the other,
/// the second engine would have no row at all).
#[test]
fn rows_of_two_interleaving_engines_share_their_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let output = Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args([
            "tunnel",
            "--engine",
            "inprocess,wireguard",
            "--cipher",
            "aes-128-gcm,chacha20-poly1305",
            "--size",
            "200",
            "--runs",
            "100000",
            "--warmup",
            "0",
            "-q",
            "--db",
            db.to_str().unwrap(),
        ])
        .env("TLSLAB_TEST_SIGINT_AFTER_ROUNDS", "3")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    let store = tlslab::store::Store::open_read_only(&db).unwrap();
    let run = store.latest_run_id().unwrap().unwrap();
    let cells = store.load_tunnel_cells(run).unwrap();
    let measured: Vec<(EngineId, String)> = cells
        .iter()
        .filter(|cell| cell.outcome.status() == tlslab::measure::CellStatus::Measured)
        .map(|cell| (cell.engine, cell.scenario.label()))
        .collect();
    // Each engine's no-tunnel row and the ciphers it runs.
    assert_eq!(measured.len(), 3 + 2, "{measured:?}: {stderr}");
    for cell in cells.iter().filter(|cell| !cell.samples().is_empty()) {
        let rounds: Vec<u32> = cell.samples().iter().map(|s| s.round).collect();
        assert_eq!(
            rounds,
            vec![0, 1, 2],
            "{:?} {}",
            cell.engine,
            cell.scenario.label()
        );
    }
    let wireguard = "tunnel_chacha20-poly1305_none_none_random_200".to_string();
    assert!(
        measured.contains(&(EngineId::Wireguard, wireguard)),
        "{measured:?}"
    );
}

/// Issue 25 item 4: `--preset vpn-compare` on tiny budgets: OpenVPN's
/// three AEAD rows and WireGuard's row per packet size, each engine's
/// no-tunnel row, WireGuard's AES rows saying why, and table 6 ranking
/// both engines' rows per size against the fastest from the same rounds.
#[test]
fn the_vpn_compare_preset_ranks_both_engines_per_packet_size() {
    let dir = tempfile::tempdir().unwrap();
    let json_path = dir.path().join("out.json");
    let run = tlslab(&[
        "tunnel",
        "--preset",
        "vpn-compare",
        "--max-time",
        "0",
        "--min-samples",
        "3",
        "--warmup",
        "0",
        "--no-db",
        "-q",
        "--export-json",
        json_path.to_str().unwrap(),
    ]);
    run.expect_code(0);
    let out = run.stdout();
    assert!(
        out.contains("6. Engines side by side per packet size"),
        "{out}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    for engine in ["inprocess", "wireguard"] {
        let rows = assert_rows_follow_the_engine(
            tlslab::scenario::names::parse_name::<EngineId>(engine)
                .unwrap()
                .open(),
            &json,
        );
        // Per size: the no-tunnel row and three ciphers.
        assert_eq!(rows.len(), 3 * 4, "{engine}: {json}");
    }
    let versus = json["versus_fastest"].as_array().unwrap();
    // Per size: three in-process rows and WireGuard's.
    assert_eq!(versus.len(), 3 * 4, "{json}");
    for (index, size) in [64, 512, 1400].into_iter().enumerate() {
        let group = &versus[index * 4..index * 4 + 4];
        assert!(group.iter().all(|v| v["payload_bytes"] == size), "{json}");
        assert_eq!(group[0]["relative"], 1.0, "the fastest first: {json}");
        // Same-round ratios: a row slower by its median may win more
        // rounds, so only the fastest's own ratio is exact.
        let paired = |v: &serde_json::Value| {
            v["same_rounds"] == true && v["relative"].as_f64().is_some_and(|r| r > 0.0)
        };
        assert!(group.iter().all(paired), "{json}");
        assert!(group.iter().any(|v| v["engine"] == "wireguard"), "{json}");
    }
    assert!(out.contains("× fastest"), "{out}");
}
