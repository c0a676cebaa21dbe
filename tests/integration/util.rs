//! Helpers shared by the integration tests.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard, OnceLock};

use tlslab::certs::CertCache;

/// One certificate cache for the whole test binary, kept between runs under
/// Cargo's target directory so chains are generated once.
pub fn certs() -> &'static CertCache {
    static CACHE: OnceLock<CertCache> = OnceLock::new();
    CACHE.get_or_init(|| CertCache::new(cert_dir()))
}

pub fn cert_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("certs")
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
    let missing = tlslab::workload::nginx::nginx_binary()
        .is_none()
        .then(|| "nginx is not installed".to_string());
    skip_without(missing, test, "apt-get install nginx-light")
}
