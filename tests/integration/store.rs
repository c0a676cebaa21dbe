//! The result database from the outside (issue 18, items 8 and 9): the
//! commands that only read never change a file, a SQLite file of another
//! tool is refused and left byte for byte as it was (even with a table
//! named `runs`), a merge that fails leaves no output behind, the output
//! given again as an input through a hard link is refused at once, and a
//! database that cannot be written is named.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use rusqlite::Connection;

use crate::merge::path_text;
use crate::util::{cert_dir, tlslab, Run};

/// A tiny mock handshake run stored in `db`.
fn mock_run(db: &Path) {
    tlslab(&[
        "handshake",
        "--backend",
        "mock",
        "--group",
        "x25519,p256",
        "--runs",
        "2",
        "--warmup",
        "0",
        "-q",
        "--db",
        &path_text(db),
        "--cert-dir",
        &path_text(&cert_dir()),
    ])
    .expect_code(0);
}

/// Issue 18 item 8: a file of another tool with a table named `runs` was
/// migrated into a tlslab database by `report --list`.
#[test]
fn a_foreign_database_with_a_runs_table_is_refused_and_left_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let foreign = dir.path().join("jobs.sqlite");
    Connection::open(&foreign)
        .unwrap()
        .execute_batch(
            "CREATE TABLE runs (id INTEGER PRIMARY KEY, name TEXT, started TEXT);
             INSERT INTO runs (name, started) VALUES ('nightly', '2026-01-01');",
        )
        .unwrap();
    let before = std::fs::read(&foreign).unwrap();
    let good = dir.path().join("good.sqlite");
    mock_run(&good);
    let out = dir.path().join("out.sqlite");
    let (foreign_text, good_text, out_text) =
        (path_text(&foreign), path_text(&good), path_text(&out));
    let foreign_run = format!("{foreign_text}:1");
    let commands: Vec<Vec<&str>> = vec![
        vec!["report", "--list", "--db", &foreign_text],
        vec!["report", "--db", &foreign_text],
        vec!["report", "--run", "1", "--db", &foreign_text],
        vec!["compare", &foreign_run, &foreign_run],
        vec!["recommend", "--db", &foreign_text],
        vec!["merge", &out_text, &foreign_text],
        vec!["merge", &foreign_text, &good_text],
        vec!["handshake", "--backend", "mock", "--db", &foreign_text],
    ];
    for args in commands {
        let run = tlslab(&args);
        run.expect_code(1);
        assert!(
            run.stderr()
                .contains(&format!("{foreign_text} is not a tlslab database")),
            "{}: {}",
            run.command,
            run.stderr()
        );
        assert!(
            std::fs::read(&foreign).unwrap() == before,
            "`{}` changed the file",
            run.command
        );
    }
    assert!(!out.exists(), "a refused merge must not create its output");
}

/// Issue 18 item 8: `report` opened the database read-write and migrated
/// an older tlslab file in place; commands that only read leave it as it was.
#[test]
fn report_compare_and_recommend_read_an_older_database_without_changing_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("old.sqlite");
    mock_run(&db);
    // The layout of schema version 9: before runs recorded their baseline
    // (10), before tunnel counts and bulk counts' own bytes (11), before
    // tunnel set-ups (12), and before each row's subject kind (13).
    Connection::open(&db)
        .unwrap()
        .execute_batch(
            "ALTER TABLE runs DROP COLUMN baseline;
             ALTER TABLE bulk_counts DROP COLUMN sample_bytes;
             DROP TABLE tunnel_count_samples;
             DROP TABLE tunnel_counts;
             DROP TABLE tunnel_setup_count_samples;
             DROP TABLE tunnel_setup_samples;
             DROP TABLE tunnel_setup_cells;
             ALTER TABLE libraries DROP COLUMN subject_kind;
             ALTER TABLE cells DROP COLUMN subject_kind;
             ALTER TABLE bulk_cells DROP COLUMN subject_kind;
             PRAGMA user_version = 9;",
        )
        .unwrap();
    let before = std::fs::read(&db).unwrap();
    let db_text = path_text(&db);
    for args in [
        vec!["report", "--list", "--db", &db_text],
        vec!["report", "--run", "1", "--db", &db_text],
        vec!["compare", "--db", &db_text, "1", "1"],
        vec!["recommend", "--db", &db_text],
    ] {
        let run = tlslab(&args);
        run.expect_code(0);
        assert!(
            std::fs::read(&db).unwrap() == before,
            "`{}` changed the file",
            run.command
        );
    }
}

/// Issue 18 item 8: a merge that fails after creating its output (an input
/// whose pages are damaged past its schema) leaves no output file.
#[test]
fn a_failed_merge_leaves_no_output_file() {
    let dir = tempfile::tempdir().unwrap();
    let damaged = dir.path().join("damaged.sqlite");
    mock_run(&damaged);
    let (page_bytes, root_page): (u64, u64) = {
        let connection = Connection::open(&damaged).unwrap();
        let page_bytes = connection
            .pragma_query_value(None, "page_size", |row| row.get(0))
            .unwrap();
        let root_page = connection
            .query_row(
                "SELECT rootpage FROM sqlite_master WHERE name = 'samples'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        (page_bytes, root_page)
    };
    let mut bytes = std::fs::read(&damaged).unwrap();
    let start = ((root_page - 1) * page_bytes) as usize;
    bytes[start..start + page_bytes as usize].fill(0xa5);
    std::fs::write(&damaged, &bytes).unwrap();

    let out = dir.path().join("merged.sqlite");
    let run = tlslab(&["merge", &path_text(&out), &path_text(&damaged)]);
    run.expect_code(1);
    assert!(
        run.stderr().contains(&path_text(&damaged)),
        "{}",
        run.stderr()
    );
    assert!(!out.exists(), "the failed merge left {}", out.display());
    for suffix in ["-journal", "-wal"] {
        assert!(!dir.path().join(format!("merged.sqlite{suffix}")).exists());
    }

    // An output that existed before is kept.
    let existing = dir.path().join("existing.sqlite");
    mock_run(&existing);
    tlslab(&["merge", &path_text(&existing), &path_text(&damaged)]).expect_code(1);
    assert!(existing.exists());
    tlslab(&["report", "--db", &path_text(&existing)]).expect_code(0);
}

/// Issue 18 item 9: a hard link of the output given as an input waited 5 s
/// for a lock, then failed with "database is locked".
#[test]
fn merge_refuses_a_hard_link_of_its_output_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.sqlite");
    mock_run(&out);
    let link = dir.path().join("link.sqlite");
    std::fs::hard_link(&out, &link).unwrap();
    let before = std::fs::read(&out).unwrap();
    let run = tlslab(&["merge", &path_text(&out), &path_text(&link)]);
    run.expect_code(2);
    for path in [&out, &link] {
        assert!(run.stderr().contains(&path_text(path)), "{}", run.stderr());
    }
    assert!(run.stderr().contains("the same file"), "{}", run.stderr());
    assert!(std::fs::read(&out).unwrap() == before);
}

/// Runs tlslab as a user who may not write what root may: `nobody` when
/// the tests run as root (root writes any file), else the user itself.
///
/// As root it runs a copy of the binary placed in `dir` (which must be
/// open to all): nobody may not reach the build's own binary, whose
/// checkout can sit in a directory only root enters (a `mktemp -d` clone).
fn tlslab_unprivileged(dir: &std::path::Path, args: &[&str]) -> Run {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let binary = if root {
        let copy = dir.join("tlslab");
        if !copy.exists() {
            std::fs::copy(env!("CARGO_BIN_EXE_tlslab"), &copy).expect("the binary copies");
        }
        copy
    } else {
        std::path::PathBuf::from(env!("CARGO_BIN_EXE_tlslab"))
    };
    let mut command = Command::new(binary);
    command.args(args).env_remove("COLUMNS").current_dir(dir);
    if root {
        command.uid(65534).gid(65534);
    }
    Run {
        output: command.output().expect("the tlslab binary runs"),
        command: format!("tlslab {}", args.join(" ")),
    }
}

/// Issue 18 item 9: a database in a read-only file or directory failed
/// with "attempt to write a readonly database", naming no file.
#[test]
fn a_read_only_database_is_named_before_anything_runs() {
    use std::fs::{set_permissions, Permissions};
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    set_permissions(dir.path(), Permissions::from_mode(0o755)).unwrap();
    let read_only_file = dir.path().join("file.sqlite");
    mock_run(&read_only_file);
    set_permissions(&read_only_file, Permissions::from_mode(0o444)).unwrap();
    let read_only_dir = dir.path().join("locked");
    std::fs::create_dir(&read_only_dir).unwrap();
    let in_read_only_dir = read_only_dir.join("db.sqlite");
    mock_run(&in_read_only_dir);
    set_permissions(&in_read_only_dir, Permissions::from_mode(0o666)).unwrap();
    set_permissions(&read_only_dir, Permissions::from_mode(0o555)).unwrap();
    for db in [&read_only_file, &in_read_only_dir] {
        let run = tlslab_unprivileged(
            dir.path(),
            &[
                "handshake",
                "--backend",
                "mock",
                "--runs",
                "2",
                "--db",
                &path_text(db),
            ],
        );
        run.expect_code(1);
        assert!(
            run.stderr()
                .contains(&format!("cannot write to the database {}", path_text(db))),
            "{}",
            run.stderr()
        );
        assert!(run.stdout().is_empty(), "nothing may run: {}", run.stdout());
    }
    set_permissions(&read_only_dir, Permissions::from_mode(0o755)).unwrap();
}

/// Issue 18 item 7: a storage fault in the middle of a run (here another
/// process holds the database locked, longer than tlslab waits) does not
/// throw away what was measured: the measuring goes on, the table is
/// printed and the JSON exported, and the run exits 1 naming the database.
#[test]
fn a_database_locked_mid_run_loses_nothing_measured_and_exits_1_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("locked.sqlite");
    let json = dir.path().join("run.json");
    let child = Command::new(env!("CARGO_BIN_EXE_tlslab"))
        .args([
            "handshake",
            "--backend",
            "mock",
            "--tls",
            "1.3",
            "--group",
            "x25519,p256",
            "--cert",
            "ecdsa_p256",
            "--runs",
            "3000",
            "--warmup",
            "0",
            "-q",
            "--db",
        ])
        .arg(&db)
        .arg("--export-json")
        .arg(&json)
        .arg("--cert-dir")
        .arg(cert_dir())
        .env_remove("COLUMNS")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the tlslab binary runs");
    // Once the run has begun, take the database and hold it to the end.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let lock = loop {
        assert!(std::time::Instant::now() < deadline, "the run never began");
        let begun = Connection::open(&db).ok().and_then(|c| {
            c.query_row("SELECT count(*) FROM runs", [], |row| row.get::<_, i64>(0))
                .ok()
                .filter(|n| *n > 0)
                .map(|_| c)
        });
        if let Some(connection) = begun {
            connection.execute_batch("BEGIN EXCLUSIVE").unwrap();
            break connection;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let output = child.wait_with_output().unwrap();
    drop(lock);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    for group in ["X25519", "P-256"] {
        assert!(stdout.contains(group), "the table lost {group}:\n{stdout}");
    }
    let exported: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("the export is written"))
            .unwrap();
    assert_eq!(
        exported["rows"].as_array().map(Vec::len),
        Some(2),
        "{exported}"
    );
    assert!(
        stderr.contains(db.to_str().unwrap()) && stderr.contains("could not be stored"),
        "{stderr}"
    );
}
