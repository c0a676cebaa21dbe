//! Where a server process's CPU goes, sampled by Linux `perf` (software
//! clock events, which work in virtual machines where hardware counters do
//! not), attributed per shared object: the library, the program or the
//! kernel. A stripped library (Debian's libcrypto) is attributed as a
//! whole; inside it perf sees only addresses.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};

/// A `perf record` attached to one process.
pub struct Recording {
    child: Option<Child>,
    output: PathBuf,
}

/// Starts sampling `pid` into `output`; fails with perf's own message if
/// perf is missing or not allowed here.
pub fn record(pid: u32, output: &Path) -> Result<Recording> {
    start(&["-p".to_string(), pid.to_string()], output)
}

/// Starts sampling only the threads `tids` (of this or another process)
/// into `output`, as [`record`] does for a whole process.
pub fn record_threads(tids: &[u32], output: &Path) -> Result<Recording> {
    let list: Vec<String> = tids.iter().map(u32::to_string).collect();
    start(&["-t".to_string(), list.join(",")], output)
}

fn start(target: &[String], output: &Path) -> Result<Recording> {
    let mut child = Command::new("perf")
        .args(["record", "-e", "cpu-clock", "-F", "1999", "--quiet", "-o"])
        .arg(output)
        .args(target)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("perf is not installed (Debian: apt-get install linux-perf)")?;
    // perf refuses at once when it may not attach (perf_event_paranoid).
    std::thread::sleep(Duration::from_millis(300));
    if let Some(status) = child.try_wait()? {
        let mut message = String::new();
        if let Some(mut stderr) = child.stderr.take() {
            use std::io::Read;
            let _ = stderr.read_to_string(&mut message);
        }
        let first = message.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        bail!("perf record exited at once ({status}): {first}");
    }
    Ok(Recording {
        child: Some(child),
        output: output.to_path_buf(),
    })
}

impl Recording {
    /// Stops sampling and returns each shared object's share of the
    /// samples, in percent, largest first.
    pub fn finish(mut self) -> Result<Vec<(String, f64)>> {
        if let Some(mut child) = self.child.take() {
            // SAFETY: SIGINT to our own child: perf writes its file and exits.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
            child.wait().context("waiting for perf record")?;
        }
        let report = Command::new("perf")
            .args(["report", "--stdio", "--quiet", "--sort", "dso", "-i"])
            .arg(&self.output)
            .output()
            .context("running perf report")?;
        if !report.status.success() {
            bail!(
                "perf report failed: {}",
                String::from_utf8_lossy(&report.stderr).trim()
            );
        }
        let shares = parse_dso_report(&String::from_utf8_lossy(&report.stdout));
        if shares.is_empty() {
            bail!("perf recorded no samples of the server");
        }
        Ok(shares)
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Parses `perf report --sort dso` lines ("    76.12%  libcrypto.so.3").
pub fn parse_dso_report(text: &str) -> Vec<(String, f64)> {
    let mut shares: Vec<(String, f64)> = text
        .lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let percent = fields.next()?.strip_suffix('%')?.parse().ok()?;
            let dso = fields.collect::<Vec<_>>().join(" ");
            (!dso.is_empty()).then_some((dso, percent))
        })
        .collect();
    shares.sort_by(|a, b| b.1.total_cmp(&a.1));
    shares
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dso_report_is_read() {
        let text = "# comment\n    61.50%  libcrypto.so.3\n    20.00%  [kernel.kallsyms]\n     3.25%  nginx\n";
        assert_eq!(
            parse_dso_report(text),
            vec![
                ("libcrypto.so.3".to_string(), 61.5),
                ("[kernel.kallsyms]".to_string(), 20.0),
                ("nginx".to_string(), 3.25)
            ]
        );
    }
}
