//! What a run measures: the clocks (time), or counts that hold on any
//! machine (instructions executed under valgrind, heap bytes).

use serde::{Deserialize, Serialize};

use super::Named;

/// One measure of `--measure`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// CPU and wall time, sampled in interleaved rounds.
    Time,
    /// Instructions executed per side, counted under valgrind's callgrind.
    Instructions,
    /// Heap bytes per side: the peak during a handshake and what an
    /// established connection keeps.
    Memory,
}

impl Named for Measure {
    const KIND: &'static str = "measure";
    const ALL: &'static [Self] = &[Measure::Time, Measure::Instructions, Measure::Memory];

    fn id(self) -> &'static str {
        match self {
            Measure::Time => "time",
            Measure::Instructions => "instructions",
            Measure::Memory => "memory",
        }
    }

    fn aliases(self) -> &'static [&'static str] {
        match self {
            Measure::Time => &["cpu", "clock"],
            Measure::Instructions => &["instr", "ir", "valgrind"],
            Measure::Memory => &["heap", "mem"],
        }
    }
}

impl Measure {
    /// True if and only if the measure counts (the same on any machine)
    /// rather than times.
    pub fn is_counted(self) -> bool {
        self != Measure::Time
    }
}
