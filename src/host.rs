//! What machine a run happened on: CPU model and flags, cores, kernel, OS,
//! and whether the binary ran emulated (an ARM build under qemu-user on an
//! x86 machine), whose times are the emulator's, not the board's.

use std::fs;

use serde::{Deserialize, Serialize};

/// The cores this process may run on (1 if the system does not say).
pub fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The provenance of a run's hardware and system.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostInfo {
    pub hostname: String,
    pub cpu_model: String,
    /// CPU feature flags as the kernel lists them (space-separated).
    pub cpu_flags: String,
    pub cores: usize,
    pub kernel: String,
    pub os: String,
}

impl HostInfo {
    /// Reads this machine's description (Linux `/proc`; elsewhere what std knows).
    pub fn current() -> Self {
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let field = |name: &str| -> String {
            cpuinfo
                .lines()
                .find(|line| line.split(':').next().map(str::trim) == Some(name))
                .and_then(|line| line.split_once(':'))
                .map(|(_, value)| value.trim().to_string())
                .unwrap_or_default()
        };
        let cpu_flags = {
            let flags = field("flags");
            if flags.is_empty() {
                field("Features")
            } else {
                flags
            }
        };
        let read = |path: &str| {
            fs::read_to_string(path)
                .map(|s| s.trim().to_string())
                .unwrap_or_default()
        };
        let os = fs::read_to_string("/etc/os-release")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find_map(|line| line.strip_prefix("PRETTY_NAME="))
                    .map(|name| name.trim_matches('"').to_string())
            })
            .unwrap_or_else(|| std::env::consts::OS.to_string());
        let model = field("model name");
        let model = if model.is_empty() {
            std::env::consts::ARCH.to_string()
        } else {
            model
        };
        let kernel_arch = read("/proc/sys/kernel/arch");
        let x86_cpuinfo = !field("vendor_id").is_empty();
        // Under qemu-user /proc/cpuinfo is the PC's: its flags are not the
        // emulated CPU's, so none are recorded.
        let (cpu_model, cpu_flags) =
            match emulation(std::env::consts::ARCH, &kernel_arch, x86_cpuinfo) {
                Some(note) => (format!("{model} [{note}]"), String::new()),
                None => (model, cpu_flags),
            };
        HostInfo {
            hostname: read("/proc/sys/kernel/hostname"),
            cpu_model,
            cpu_flags,
            cores: available_cores(),
            kernel: read("/proc/sys/kernel/osrelease"),
            os,
        }
    }

    /// The flags that matter most for TLS speed, present on this CPU.
    pub fn crypto_flags(&self) -> Vec<&str> {
        const INTERESTING: &[&str] = &[
            "aes",
            "pclmulqdq",
            "avx",
            "avx2",
            "avx512f",
            "vaes",
            "vpclmulqdq",
            "sha_ni",
            "bmi2",
            "adx",
            "pmull",
            "sha2",
            "sha3",
        ];
        self.cpu_flags
            .split_whitespace()
            .filter(|flag| INTERESTING.contains(flag))
            .collect()
    }
}

/// Says so when a binary built for `binary_arch` (Rust's
/// `std::env::consts::ARCH`) runs on a kernel of another architecture
/// (`/proc/sys/kernel/arch`, empty where the kernel does not have it;
/// `x86_cpuinfo`: `/proc/cpuinfo` has x86's `vendor_id`, the fallback), as
/// under qemu-user. qemu-user answers `uname` with the emulated machine and
/// passes the host's `/proc/cpuinfo` through, so the kernel's own arch file
/// is what gives it away. A kernel runs its 32-bit sibling natively (arm on
/// an aarch64 kernel, as Raspberry Pi OS does; x86 on x86_64): not emulated.
fn emulation(binary_arch: &str, kernel_arch: &str, x86_cpuinfo: bool) -> Option<String> {
    let kernel_arch = match kernel_arch {
        "" if x86_cpuinfo => "x86_64",
        "" => return None,
        arch => arch,
    };
    let native: &[&str] = match kernel_arch {
        "x86_64" => &["x86_64", "x86"],
        "i386" | "i586" | "i686" => &["x86"],
        "aarch64" | "arm64" => &["aarch64", "arm"],
        arch if arch.starts_with("arm") => &["arm"],
        arch => &[arch],
    };
    if native.contains(&binary_arch) {
        return None;
    }
    Some(format!(
        "emulated: {binary_arch} binary on {kernel_arch} (qemu-user), times are the emulator's"
    ))
}

/// CPU time used so far on this machine, by every process and by this one:
/// two readings give the other processes' share of the CPUs in between.
#[derive(Debug, Clone, Copy)]
pub struct CpuUse {
    /// Busy time of all CPUs (user, nice, system, interrupts), seconds.
    machine: f64,
    /// This process's user and system time, every thread, seconds.
    own: f64,
    at: std::time::Instant,
}

impl CpuUse {
    /// Reads the counters (Linux: `/proc/stat` and `getrusage`); `None`
    /// where there are none.
    pub fn now() -> Option<Self> {
        let stat = fs::read_to_string("/proc/stat").ok()?;
        let machine = machine_busy_seconds(stat.lines().next()?)?;
        // SAFETY: getrusage writes a plain struct it is handed.
        let own = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            if libc::getrusage(libc::RUSAGE_SELF, &mut usage) != 0 {
                return None;
            }
            let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
            seconds(usage.ru_utime) + seconds(usage.ru_stime)
        };
        Some(Self {
            machine,
            own,
            at: std::time::Instant::now(),
        })
    }

    /// How long ago this reading was taken.
    pub fn age(&self) -> std::time::Duration {
        self.at.elapsed()
    }

    /// How many CPUs' worth of time other processes used between `earlier`
    /// and this reading (0.5 = half a CPU throughout). The kernel counts the
    /// machine's time in clock ticks (10 ms), so over a short stretch this
    /// is coarse.
    pub fn others_since(&self, earlier: &CpuUse) -> f64 {
        let elapsed = self.at.duration_since(earlier.at).as_secs_f64();
        if elapsed <= 0.0 {
            return 0.0;
        }
        let others = (self.machine - earlier.machine) - (self.own - earlier.own);
        (others / elapsed).max(0.0)
    }
}

/// The busy seconds on the first line of `/proc/stat` ("cpu  user nice
/// system idle iowait irq softirq steal guest guest_nice", in clock ticks):
/// user, nice, system, irq and softirq. Idle and iowait are not busy, steal
/// is time the hypervisor gave to other machines, and guest time is already
/// in user.
fn machine_busy_seconds(line: &str) -> Option<f64> {
    let mut fields = line.split_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    let ticks: Vec<u64> = fields.map_while(|f| f.parse().ok()).collect();
    if ticks.len() < 7 {
        return None;
    }
    let busy = ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6];
    // SAFETY: sysconf has no preconditions.
    let per_second = match unsafe { libc::sysconf(libc::_SC_CLK_TCK) } {
        n if n > 0 => n as f64,
        _ => 100.0,
    };
    Some(busy as f64 / per_second)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arm_binary_on_an_x86_kernel_is_emulated_and_a_board_is_not() {
        let note = emulation("aarch64", "x86_64", true).unwrap();
        assert!(
            note.contains("emulated: aarch64 binary on x86_64"),
            "{note}"
        );
        assert!(emulation("arm", "x86_64", true).is_some());
        assert!(emulation("arm", "", true).is_some(), "cpuinfo fallback");
        // Real boards, and 32-bit userland on a 64-bit kernel, are native.
        assert_eq!(emulation("aarch64", "aarch64", false), None);
        assert_eq!(emulation("arm", "aarch64", false), None);
        assert_eq!(emulation("arm", "armv7l", false), None);
        assert_eq!(emulation("x86_64", "x86_64", true), None);
        assert_eq!(emulation("arm", "", false), None, "nothing to tell by");
    }

    #[test]
    fn the_host_running_the_tests_is_not_emulated() {
        assert!(!HostInfo::current().cpu_model.contains("emulated"));
    }

    #[test]
    fn busy_time_leaves_out_idle_iowait_steal_and_guest() {
        let line = "cpu  100 20 30 5000 40 1 2 700 50 0";
        let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        let busy = machine_busy_seconds(line).unwrap();
        assert!((busy - 153.0 / per_second).abs() < 1e-9, "{busy}");
        assert_eq!(machine_busy_seconds("cpu0 1 2 3 4 5 6 7"), None);
        assert_eq!(machine_busy_seconds("cpu  1 2"), None);
    }

    #[test]
    fn other_work_is_seen_and_own_work_is_not() {
        let Some(before) = CpuUse::now() else {
            return; // not Linux
        };
        // Another process's busy loop is others' work.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .expect("sh starts");
        std::thread::sleep(std::time::Duration::from_millis(600));
        child.kill().unwrap();
        child.wait().unwrap();
        let after = CpuUse::now().unwrap();
        let others = after.others_since(&before);
        assert!(others >= 0.5, "a busy child is others' work: {others}");

        // Our own busy loop is not: others' work while it runs is no more
        // than in a quiet stretch just before (a shared machine has
        // neighbours, and other tests run in parallel builds).
        let before = CpuUse::now().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(600));
        let neighbours = CpuUse::now().unwrap().others_since(&before);
        // Busy until this process has had half a second of CPU, however
        // long a loaded machine takes to give it (at most 30 s).
        let before = CpuUse::now().unwrap();
        let start = std::time::Instant::now();
        let mut x = 1u64;
        while CpuUse::now().unwrap().own - before.own < 0.5
            && start.elapsed() < std::time::Duration::from_secs(30)
        {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        let after = CpuUse::now().unwrap();
        assert!(after.own - before.own >= 0.4, "own time is counted");
        let others = after.others_since(&before);
        assert!(
            others < neighbours + 0.6,
            "our own loop is not others' work: {others} (neighbours alone: {neighbours})"
        );
    }
}
