//! Helpers shared by the integration tests.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard, OnceLock};

use tlslab::backend::LibraryInfo;
use tlslab::certs::CertCache;
use tlslab::scenario::Named;
use tlslab::store::{RunInfo, RunKind};

/// True if and only if the backend suites run on `backend` (an id): every
/// one unless `TLSLAB_TEST_BACKENDS` names some (comma-separated ids or
/// aliases), which CI sets to run the shared suite on an opt-in backend
/// alone (wolfssl). Panics, listing the valid names, when that variable
/// names a backend there is not (`wolfsl`) or one this build lacks, so a
/// misspelt selection fails instead of running nothing.
pub fn backend_under_test(backend: &str) -> bool {
    match selected_backends() {
        Some(ids) => ids.iter().any(|id| id.id() == backend),
        None => true,
    }
}

/// The backends `TLSLAB_TEST_BACKENDS` names, or None when it is unset.
fn selected_backends() -> Option<Vec<tlslab::backend::BackendId>> {
    let names = std::env::var("TLSLAB_TEST_BACKENDS").ok()?;
    let list = tlslab::scenario::BackendList::named(names.split(','))
        .unwrap_or_else(|error| panic!("TLSLAB_TEST_BACKENDS={names}: {error}"));
    Some(list.resolve().into_iter().map(|(id, _)| id).collect())
}

/// Says on the terminal what `test` did not check, where the reason is a
/// limit of the environment that CI has too (no perf): a `note:` line
/// that, unlike [`skip_without`], does not fail under `CI`.
pub fn note(test: &str, what: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "note: {test}: {what}");
}

/// Returns true if and only if `test`, written for `backend` alone, must
/// skip because `TLSLAB_TEST_BACKENDS` leaves that backend out; it then
/// says so (see [`note_skipped`]).
pub fn skip_unless_under_test(backend: &str, test: &str) -> bool {
    if backend_under_test(backend) {
        return false;
    }
    note_skipped(test, &format!("{backend} is not in TLSLAB_TEST_BACKENDS"));
    true
}

/// Returns true if and only if `test` must skip (or stop after checking
/// the refusal) because this build has no wolfSSL; it then says so (see
/// [`note_skipped`]: a build without an opt-in feature is a choice, so it
/// does not fail under `CI`, whose wolfssl pass builds it).
pub fn skip_without_wolfssl(test: &str) -> bool {
    if tlslab::scenario::backend::WOLFSSL_BUILT_IN {
        return false;
    }
    note_skipped(test, tlslab::scenario::backend::WOLFSSL_NOT_BUILT);
    true
}

/// Says on the terminal that `test` ran nothing, and why, where that is a
/// choice made on purpose (a backend left out of `TLSLAB_TEST_BACKENDS`)
/// or a fact of what was tested, not a missing tool: unlike
/// [`skip_without`], it does not fail under `CI`.
pub fn note_skipped(test: &str, why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {test}: {why}");
}

/// One certificate cache for the whole test binary, kept between runs (see
/// [`cert_dir`]) so chains are generated once.
pub fn certs() -> &'static CertCache {
    static CACHE: OnceLock<CertCache> = OnceLock::new();
    CACHE.get_or_init(|| CertCache::new(cert_dir()))
}

/// The tests' certificate cache: `TLSLAB_TEST_CERT_DIR` if set (the
/// fresh-machine pass, scripts/fresh-machine-test.sh, points it at a new
/// empty directory so no chain of an earlier run is reused), else `certs`
/// under Cargo's target directory for tests.
pub fn cert_dir() -> PathBuf {
    std::env::var_os("TLSLAB_TEST_CERT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("certs"))
}

/// The output of a finished command, shown in full when an assertion fails.
pub struct Run {
    pub output: Output,
    pub command: String,
}

impl Run {
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    pub fn code(&self) -> Option<i32> {
        self.output.status.code()
    }

    /// Panics with the command, its exit status and both streams unless the code matches.
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code(),
            Some(code),
            "`{}` exited with {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.command,
            self.output.status,
            self.stdout(),
            self.stderr()
        );
        self
    }
}

/// Runs the tlslab binary with arguments; its output is piped and
/// `COLUMNS` unset, so tables keep every column on one line.
pub fn tlslab(args: &[&str]) -> Run {
    tlslab_at(args, None)
}

/// Runs the tlslab binary with `COLUMNS` set to `columns` (or unset).
pub fn tlslab_at(args: &[&str], columns: Option<usize>) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tlslab"));
    command.args(args).env_remove("COLUMNS");
    if let Some(columns) = columns {
        command.env("COLUMNS", columns.to_string());
    }
    let output = command.output().expect("the tlslab binary runs");
    Run {
        output,
        command: format!("tlslab {}", args.join(" ")),
    }
}

/// Tests that start nginx run one at a time: some check that no nginx of
/// tlslab's is left running afterwards.
pub fn nginx_lock() -> MutexGuard<'static, ()> {
    static NGINX: Mutex<()> = Mutex::new(());
    NGINX.lock().unwrap_or_else(|e| e.into_inner())
}

/// Returns true if and only if some line of `text` holds every one of
/// `fields`, in this order (a table row with these cells).
pub fn has_row(text: &str, fields: &[&str]) -> bool {
    text.lines().any(|line| {
        let mut rest = line;
        fields.iter().all(|field| match rest.find(field) {
            Some(at) => {
                rest = &rest[at + field.len()..];
                true
            }
            None => false,
        })
    })
}

/// A run of `kind` that a test stores by hand (`command_line` says how),
/// on this host, with these libraries.
pub fn run_info(kind: RunKind, command_line: &str, libraries: Vec<LibraryInfo>) -> RunInfo {
    RunInfo {
        kind,
        tool_version: "test".into(),
        command_line: command_line.into(),
        options_json: "{}".into(),
        host: tlslab::host::HostInfo::current(),
        libraries,
    }
}

/// Returns true if and only if the test must skip because an external tool
/// is missing: outside CI it says so on the terminal (written past the test
/// harness's output capture, so `cargo test` shows it even for a passing
/// test) and the caller returns; with `CI` set it panics, because CI must run
/// every test with the real tools.
pub fn skip_without(missing: Option<String>, test: &str, install: &str) -> bool {
    let Some(what) = missing else {
        return false;
    };
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must run {test}, but {what} (install: {install})"
    );
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "skipped: {test}: {what} (install: {install})"
    );
    true
}

/// Returns true if and only if `test` must skip because nginx is not
/// installed (see `skip_without`).
pub fn skip_without_nginx(test: &str) -> bool {
    let missing = tlslab::workload::server::nginx::nginx_binary()
        .is_none()
        .then(|| "nginx is not installed".to_string());
    skip_without(missing, test, "apt-get install nginx-light")
}

/// tlslab started as a shell starts a job: in a process group of its own
/// (so a signal to the group, as a terminal's Ctrl-C sends, reaches it and
/// what it started in its group, and not the tests), its standard error
/// read line by line as it comes. Killed (SIGKILL) on drop if still running.
pub struct Job {
    pub child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    /// The lines of standard error read so far.
    pub stderr: Vec<String>,
}

impl Job {
    /// Starts `tlslab ARGS` with these environment variables.
    pub fn start(args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Self {
        use std::io::BufRead;
        use std::os::unix::process::CommandExt;
        let mut command = Command::new(env!("CARGO_BIN_EXE_tlslab"));
        command
            .args(args)
            .env_remove("COLUMNS")
            .process_group(0)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().expect("the tlslab binary runs");
        let stderr = child.stderr.take().expect("piped");
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            lines,
            stderr: Vec::new(),
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Waits until a line of standard error holds `text`; panics after `timeout`.
    pub fn wait_for_line(&mut self, text: &str, timeout: std::time::Duration) {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let found = line.contains(text);
                    self.stderr.push(line);
                    if found {
                        return;
                    }
                }
                Err(_) => panic!(
                    "no line with '{text}' within {timeout:?}; standard error:\n{}",
                    self.stderr.join("\n")
                ),
            }
        }
    }

    /// Sends `signal` to the job's whole process group.
    pub fn signal_group(&self, signal: i32) {
        // SAFETY: a signal to the process group this test started.
        unsafe { libc::kill(-self.pid(), signal) };
    }

    /// Sends `signal` to tlslab alone.
    pub fn signal(&self, signal: i32) {
        // SAFETY: a signal to the process this test started.
        unsafe { libc::kill(self.pid(), signal) };
    }

    /// Waits for the job to end, at most `timeout` (then panics, and the
    /// job is killed); returns its exit status and all of its standard error.
    pub fn finish(&mut self, timeout: std::time::Duration) -> (std::process::ExitStatus, String) {
        let deadline = std::time::Instant::now() + timeout;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "tlslab did not end within {timeout:?}; standard error:\n{}",
                self.stderr.join("\n")
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        // The reader ends with the pipe (unless a child still holds it).
        while let Ok(line) = self
            .lines
            .recv_timeout(std::time::Duration::from_millis(500))
        {
            self.stderr.push(line);
        }
        (status, self.stderr.join("\n"))
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The PIDs of running processes whose command line holds `text`.
pub fn processes_mentioning(text: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmdline)
            .replace('\0', " ")
            .contains(text)
        {
            found.push(pid);
        }
    }
    found
}

/// The PIDs of `parent`'s children whose command line holds `text`.
pub fn children_mentioning(parent: u32, text: &str) -> Vec<u32> {
    let children = tlslab::workload::process::children_of(parent);
    processes_mentioning(text)
        .into_iter()
        .filter(|pid| children.contains(pid))
        .collect()
}

/// Waits until none of `pids` runs (zombies count as gone); returns
/// those still running after `timeout`.
pub fn wait_gone(pids: &[u32], timeout: std::time::Duration) -> Vec<u32> {
    let running = |pid: &u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            // The state follows the command name in parentheses.
            stat.rsplit_once(") ")
                .is_some_and(|(_, rest)| !rest.starts_with('Z'))
        })
    };
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let left: Vec<u32> = pids.iter().copied().filter(running).collect();
        if left.is_empty() || std::time::Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
