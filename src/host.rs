//! What machine a run happened on: CPU model and flags, cores, kernel, OS.

use std::fs;

use serde::{Deserialize, Serialize};

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
        HostInfo {
            hostname: read("/proc/sys/kernel/hostname"),
            cpu_model: {
                let model = field("model name");
                if model.is_empty() {
                    std::env::consts::ARCH.to_string()
                } else {
                    model
                }
            },
            cpu_flags,
            cores: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
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
