//! Valgrind's client requests, as tlslab's counted measures use them: a
//! program run under valgrind can talk to it through a special sequence of
//! instructions that does nothing on a real CPU (a few rotations of a
//! register by 128 bits in all), so the requests cost next to nothing
//! outside valgrind and need no library. Under callgrind they switch the
//! counting of instructions on and off around each side's work and write
//! the counts so far to the profile with a label ([`callgrind`]).
//!
//! The sequences are valgrind's documented ABI (`valgrind.h`) for x86-64
//! and AArch64; on other architectures every request returns its default,
//! as it would on a real CPU, and [`supported`] says counting is not
//! available.

use std::ffi::CStr;
use std::process::Command;

/// True if and only if this build can send client requests (x86-64 and
/// AArch64).
pub const fn supported() -> bool {
    cfg!(any(target_arch = "x86_64", target_arch = "aarch64"))
}

/// Sends one client request with up to five arguments; returns valgrind's
/// answer, or `default` when the program runs on a real CPU.
#[inline(always)]
fn request(default: usize, code: usize, args: [usize; 5]) -> usize {
    let block: [usize; 6] = [code, args[0], args[1], args[2], args[3], args[4]];
    #[cfg(target_arch = "x86_64")]
    {
        let mut result = default;
        // SAFETY: the rotations of rdi sum to 128 bits (rdi is unchanged)
        // and `xchg rbx, rbx` does nothing: on a real CPU the sequence has
        // no effect; valgrind recognises it and reads the request block
        // that rax points to, which outlives the call.
        unsafe {
            std::arch::asm!(
                "rol rdi, 3",
                "rol rdi, 13",
                "rol rdi, 61",
                "rol rdi, 51",
                "xchg rbx, rbx",
                inout("rdx") result,
                in("rax") block.as_ptr(),
                out("rdi") _,
                options(nostack),
            );
        }
        result
    }
    #[cfg(target_arch = "aarch64")]
    {
        let mut result = default;
        // SAFETY: the rotations of x12 sum to 128 bits and `orr x10, x10,
        // x10` does nothing: on a real CPU the sequence has no effect;
        // valgrind reads the request block that x4 points to.
        unsafe {
            std::arch::asm!(
                "ror x12, x12, #3",
                "ror x12, x12, #13",
                "ror x12, x12, #51",
                "ror x12, x12, #61",
                "orr x10, x10, x10",
                inout("x3") result,
                in("x4") block.as_ptr(),
                out("x12") _,
                options(nostack),
            );
        }
        result
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = (code, block);
        default
    }
}

/// How many valgrinds this process runs under (0 on a real CPU).
pub fn running_on_valgrind() -> usize {
    const RUNNING_ON_VALGRIND: usize = 0x1001;
    request(0, RUNNING_ON_VALGRIND, [0; 5])
}

/// Callgrind's requests (`callgrind.h`).
pub mod callgrind {
    use super::{request, CStr};

    /// `VG_USERREQ_TOOL_BASE('C', 'T')`: callgrind's requests follow it.
    const BASE: usize = ((b'C' as usize) << 24) | ((b'T' as usize) << 16);
    const DUMP_STATS_AT: usize = BASE + 3;
    const TOGGLE_COLLECT: usize = BASE + 2;
    const ZERO_STATS: usize = BASE + 1;

    /// Turns the counting of instructions on if it was off, off if it was
    /// on (callgrind has no request for either alone: callers pair them).
    #[inline(always)]
    pub fn toggle_collect() {
        request(0, TOGGLE_COLLECT, [0; 5]);
    }

    /// Writes the counts since the last dump (or zeroing) to the profile,
    /// labelled `label`, and zeroes them.
    #[inline(always)]
    pub fn dump_at(label: &CStr) {
        request(0, DUMP_STATS_AT, [label.as_ptr() as usize, 0, 0, 0, 0]);
    }

    /// Zeroes the counts without writing them.
    #[inline(always)]
    pub fn zero() {
        request(0, ZERO_STATS, [0; 5]);
    }
}

/// The installed valgrind's version ("valgrind-3.19.0"), or why there is
/// none to run.
pub fn installed() -> Result<String, String> {
    match Command::new("valgrind").arg("--version").output() {
        Ok(output) if output.status.success() => {
            Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
        }
        Ok(output) => Err(format!(
            "`valgrind --version` failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )),
        Err(error) => Err(format!("valgrind is not installed ({error})")),
    }
}

/// How to install valgrind, for messages.
pub const INSTALL_HINT: &str =
    "install valgrind (Debian/Ubuntu: apt-get install valgrind; Fedora: dnf install valgrind)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_do_nothing_on_a_real_cpu() {
        if running_on_valgrind() > 0 {
            return;
        }
        assert_eq!(request(42, 0x1001, [1, 2, 3, 4, 5]), 42);
        callgrind::toggle_collect();
        callgrind::dump_at(c"nothing");
        callgrind::zero();
    }
}
