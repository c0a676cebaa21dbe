//! The clocks of a handshake whose two sides run in turns on one thread
//! (client and server over memory): the time between two turns' ends
//! belongs to the side whose turn ended; the little bookkeeping between
//! turns (which side is due) is charged to the next side.
//!
//! Wall time is read at every turn's end (the monotonic clock is read in
//! user space, some tens of nanoseconds). The thread's CPU clock is a
//! system call (about 0.65 µs on a virtual machine, seven or eight turns
//! to a DTLS handshake: over 1% of a fast one), so the commands' probes
//! read it only at the handshake's two ends ([`CpuReadings::AtEnds`]); a
//! handshaker not told otherwise reads it at every turn. On one
//! thread that ran throughout, CPU time and wall time are the same time, so
//! each side's share of the handshake's CPU time is its share of the wall
//! time. If the thread was off the CPU for part of the handshake
//! (preempted, or the hypervisor ran another machine), the two clocks
//! disagree, the split is unsure, and [`SideTimes::split_unsure`] says so:
//! the caller retakes such a handshake with a reading at every turn
//! ([`CpuReadings::EveryTurn`]), which is exact either way.
//!
//! The counted measures hook in at the same places: each turn is bracketed
//! by [`Turns::begin`] and [`Turns::ended`], and while a [`TurnCounter`] is
//! set, the instructions (under callgrind) or the heap allocations of each
//! turn are charged to its side, the bookkeeping between turns to neither.
//! The wire tap ([`tap`]) hooks in there too: it notes each turn, and
//! the turn in which a side's handshake was done ([`Turns::done`]).

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::{Duration, Instant};

use super::{thread_cpu_ns, SideTime};
use crate::transport::tap;
use crate::valgrind::callgrind;

/// What besides the clocks each side's turns are counted by, for the
/// whole process (the counted measures set it around each sample).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnCounter {
    /// The clocks only.
    None = 0,
    /// Instructions, under callgrind: collection is on inside a turn, and
    /// each turn's count is written to the profile labelled with its side
    /// (see [`crate::workload::counted`]).
    Instructions = 1,
    /// Heap allocations, charged to the side whose turn makes them
    /// ([`crate::heap`]).
    Heap = 2,
}

static TURN_COUNTER: AtomicU8 = AtomicU8::new(TurnCounter::None as u8);

/// True while callgrind collects (callgrind only toggles, so the state is
/// kept here and a turn that failed half-way cannot invert it).
static COLLECTING: AtomicBool = AtomicBool::new(false);

/// Sets what the following turns are counted by; whatever a turn left on
/// (collection, a side's allocations) is switched off.
pub fn count_sides(counter: TurnCounter) {
    collect(false);
    crate::heap::leave();
    TURN_COUNTER.store(counter as u8, Ordering::SeqCst);
}

/// Switches callgrind's collection on or off, if it is not already.
fn collect(on: bool) {
    if COLLECTING.swap(on, Ordering::Relaxed) != on {
        callgrind::toggle_collect();
    }
}

const INSTRUCTIONS: u8 = TurnCounter::Instructions as u8;
const HEAP: u8 = TurnCounter::Heap as u8;

#[inline]
fn side_counter() -> u8 {
    TURN_COUNTER.load(Ordering::Relaxed)
}

/// `turn`'s side starts some work: from here to [`side_ends`] its
/// instructions or allocations are counted, when a [`TurnCounter`] is set
/// (one relaxed load otherwise). [`Turns`] calls it at every turn; `bulk`
/// around the sender's and the receiver's calls.
#[inline]
pub fn side_begins(turn: Side) {
    match side_counter() {
        INSTRUCTIONS => collect(true),
        HEAP => crate::heap::enter(turn),
        _ => {}
    }
}

/// `turn`'s side ends the work [`side_begins`] started: under callgrind
/// its count is written to the profile, labelled with the side.
#[inline]
pub fn side_ends(turn: Side) {
    match side_counter() {
        INSTRUCTIONS => {
            callgrind::dump_at(profile_label(turn));
            collect(false);
        }
        HEAP => crate::heap::leave(),
        _ => {}
    }
}

/// The label of `side`'s counts in a callgrind profile.
pub fn profile_label(side: Side) -> &'static std::ffi::CStr {
    match side {
        Side::Client => c"tlslab side client",
        Side::Server => c"tlslab side server",
    }
}

/// When a handshake run in turns reads the thread's CPU clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuReadings {
    /// At every turn's end: each side's CPU time is measured even if the
    /// thread was preempted.
    EveryTurn,
    /// At the handshake's start and end: each side's CPU time is the
    /// handshake's, split as the wall time inside the calls is split.
    AtEnds,
}

/// Whose turn just ended: a side, in the crate's one word for it.
use crate::scenario::Side;

/// Each side's time in a finished handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SideTimes {
    pub client: SideTime,
    pub server: SideTime,
    /// True if the CPU clock was read at the ends only and the thread was
    /// off the CPU long enough that the split between the sides may be off
    /// by more than [`UNSURE_SHARE`] of the handshake.
    pub split_unsure: bool,
}

/// Off-CPU time, as a share of the handshake, above which a split made
/// from the two ends is unsure.
pub const UNSURE_SHARE: f64 = 0.01;

/// Off-CPU time that is never unsure: the two clocks are read a system
/// call apart, so on a thread that ran throughout they disagree by about a
/// microsecond either way.
const CLOCKS_DISAGREE: Duration = Duration::from_micros(2);

/// The clocks of one handshake run in turns.
pub struct Turns {
    readings: CpuReadings,
    started: Instant,
    last: Instant,
    /// The CPU clock's last reading: at the start, or (every turn) at the
    /// last turn's end.
    cpu_ns: u64,
    client: SideTime,
    server: SideTime,
}

impl Turns {
    pub fn start(readings: CpuReadings) -> Self {
        let cpu_ns = thread_cpu_ns();
        let now = Instant::now();
        Self {
            readings,
            started: now,
            last: now,
            cpu_ns,
            client: SideTime::default(),
            server: SideTime::default(),
        }
    }

    /// `turn`'s side starts a turn: from here to [`Self::ended`] its
    /// instructions or allocations are counted, when a [`TurnCounter`] is set.
    #[inline]
    pub fn begin(&mut self, turn: Side) {
        tap::turn_began(turn);
        side_begins(turn);
    }

    /// `turn`'s side is done with its handshake (it can send application
    /// data): the wire tap marks its latest turn, the first time only.
    #[inline]
    pub fn done(&mut self, turn: Side) {
        tap::done(turn);
    }

    /// Charges the time since the previous turn ended to `turn`'s side.
    pub fn ended(&mut self, turn: Side) {
        tap::turn_ended(turn);
        side_ends(turn);
        let now = Instant::now();
        let side = match turn {
            Side::Client => &mut self.client,
            Side::Server => &mut self.server,
        };
        side.wall_ns += (now - self.last).as_nanos() as u64;
        self.last = now;
        if self.readings == CpuReadings::EveryTurn {
            let cpu_ns = thread_cpu_ns();
            side.cpu_ns += cpu_ns.saturating_sub(self.cpu_ns);
            self.cpu_ns = cpu_ns;
        }
    }

    /// Each side's time, once the last turn has ended.
    pub fn finish(self) -> SideTimes {
        if side_counter() == HEAP {
            crate::heap::mark_done();
        }
        let (mut client, mut server) = (self.client, self.server);
        if self.readings == CpuReadings::EveryTurn {
            return SideTimes {
                client,
                server,
                split_unsure: false,
            };
        }
        let (now, cpu_ns) = (Instant::now(), thread_cpu_ns());
        let cpu_ns = cpu_ns.saturating_sub(self.cpu_ns);
        let wall = now - self.started;
        let off_cpu = wall.saturating_sub(Duration::from_nanos(cpu_ns));
        let cpu_per_wall = if wall.is_zero() {
            0.0
        } else {
            cpu_ns as f64 / wall.as_nanos() as f64
        };
        for side in [&mut client, &mut server] {
            side.cpu_ns = (side.wall_ns as f64 * cpu_per_wall).round() as u64;
        }
        let unsure = off_cpu > CLOCKS_DISAGREE.max(wall.mul_f64(UNSURE_SHARE));
        SideTimes {
            client,
            server,
            split_unsure: unsure,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Work the compiler cannot drop.
    fn spin(iterations: u64) -> u64 {
        (0..iterations).fold(0u64, |a, i| std::hint::black_box(a.wrapping_mul(31) ^ i))
    }

    #[test]
    fn both_readings_charge_each_side_its_turns() {
        for readings in [CpuReadings::EveryTurn, CpuReadings::AtEnds] {
            let mut turns = Turns::start(readings);
            spin(200_000);
            turns.ended(Side::Client);
            spin(600_000);
            turns.ended(Side::Server);
            let times = turns.finish();
            for side in [times.client, times.server] {
                assert!(
                    side.wall_ns > 0 && side.cpu_ns > 0,
                    "{readings:?}: {side:?}"
                );
            }
            // The server spun three times as long; a generous margin for a
            // preemption on a shared machine.
            let ratio = times.server.cpu_ns as f64 / times.client.cpu_ns as f64;
            assert!(
                times.split_unsure || (1.5..6.0).contains(&ratio),
                "{readings:?}: {ratio}"
            );
        }
    }

    /// A client turn that works, then a server turn that sleeps 5 ms.
    fn sleepy_server(readings: CpuReadings) -> SideTimes {
        let mut turns = Turns::start(readings);
        spin(100_000);
        turns.ended(Side::Client);
        std::thread::sleep(Duration::from_millis(5));
        turns.ended(Side::Server);
        turns.finish()
    }

    #[test]
    fn a_sleep_inside_a_turn_makes_a_split_from_the_ends_unsure() {
        let times = sleepy_server(CpuReadings::AtEnds);
        assert!(times.split_unsure, "{times:?}");
        // Read at every turn, the sleeping side is charged no CPU for it.
        let times = sleepy_server(CpuReadings::EveryTurn);
        assert!(!times.split_unsure);
        assert!(times.server.wall_ns >= 5_000_000, "{times:?}");
        assert!(times.server.cpu_ns < 2_000_000, "{times:?}");
    }
}
