//! The wire tap: while a thread records, every write the in-memory
//! transports carry is noted with the side that sent it and the turn it
//! was sent in, every read with the turns whose bytes it took, and each
//! side's turns and the turn its handshake was done in, as the handshakers
//! tell [`crate::backend::turns::Turns`]. A [`Recording`] is what the wire
//! figures and the network model are computed from
//! ([`crate::workload::wire`]). Off, the default, it costs each transport
//! call one relaxed atomic load.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// TCP payload bytes per segment on an Ethernet path (1500-byte MTU) with
/// TCP timestamps, as Linux sends them: 1500 − 20 (IP) − 32 (TCP with
/// the timestamp option).
pub const MSS_BYTES: usize = 1448;

/// How many threads are recording: zero keeps every hook to one load.
static TAPPING: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static TAP: RefCell<Option<Tap>> = const { RefCell::new(None) };
}

/// The two ends of a handshake: the crate's one [`Side`].
pub use crate::scenario::Side;

/// One turn of one side: how long it took, what it wrote and whose
/// bytes it read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnRecord {
    pub side: Side,
    /// The turn's wall time in nanoseconds: on the one thread both sides
    /// share, its CPU time.
    pub ns: u64,
    /// Each write's bytes, in order (over datagrams, one datagram each).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<usize>,
    /// The earlier turns (indices) whose bytes this turn read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_from: Vec<usize>,
    /// True if and only if the side's handshake was done at the end of
    /// this turn for the first time: it can send application data.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub done: bool,
}

impl TurnRecord {
    pub fn bytes(&self) -> usize {
        self.writes.iter().sum()
    }
}

/// Everything one handshake put on the wire, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recording {
    pub turns: Vec<TurnRecord>,
    /// Each side's writes' bytes (`[client, server]`).
    pub sent: [Vec<Vec<u8>>; 2],
    /// True if the transport kept message boundaries (DTLS).
    pub datagrams: bool,
}

impl Recording {
    /// What `side` sent, one entry per write.
    pub fn sent_by(&self, side: Side) -> &[Vec<u8>] {
        &self.sent[side.index()]
    }
}

struct Tap {
    recording: Recording,
    /// The turn being recorded and when it began.
    open: Option<(usize, Instant)>,
    /// Per receiving side, the bytes waiting for it: (turn that wrote
    /// them, bytes left).
    waiting: [VecDeque<(usize, usize)>; 2],
}

impl Tap {
    /// The open turn if it is `side`'s; else a new turn of `side`'s
    /// (a write or read outside the turns the handshaker marked).
    fn turn_of(&mut self, side: Side) -> usize {
        if let Some((index, _)) = self.open {
            if self.recording.turns[index].side == side {
                return index;
            }
        }
        self.recording.turns.push(TurnRecord {
            side,
            ns: 0,
            writes: Vec::new(),
            read_from: Vec::new(),
            done: false,
        });
        self.recording.turns.len() - 1
    }
}

/// True if and only if some thread records.
#[inline]
fn tapping() -> bool {
    TAPPING.load(Ordering::Relaxed) > 0
}

fn with_tap(work: impl FnOnce(&mut Tap)) {
    TAP.with(|tap| {
        if let Some(tap) = tap.borrow_mut().as_mut() {
            work(tap);
        }
    });
}

/// Stops this thread's recording even if the work panics.
struct StopRecording;

impl Drop for StopRecording {
    fn drop(&mut self) {
        TAP.with(|tap| tap.borrow_mut().take());
        TAPPING.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Runs `work` on this thread with the tap recording; returns its result
/// and what it put on the in-memory transports.
pub fn record<T>(work: impl FnOnce() -> T) -> (T, Recording) {
    TAP.with(|tap| {
        *tap.borrow_mut() = Some(Tap {
            recording: Recording::default(),
            open: None,
            waiting: Default::default(),
        })
    });
    TAPPING.fetch_add(1, Ordering::Relaxed);
    let guard = StopRecording;
    let result = work();
    let recording = TAP
        .with(|tap| tap.borrow_mut().take())
        .map(|tap| tap.recording)
        .unwrap_or_default();
    drop(guard);
    (result, recording)
}

/// True if and only if this thread is recording.
pub fn recording() -> bool {
    tapping() && TAP.with(|tap| tap.borrow().is_some())
}

/// `side` begins a turn.
#[inline]
pub fn turn_began(side: Side) {
    if !tapping() {
        return;
    }
    with_tap(|tap| {
        tap.recording.turns.push(TurnRecord {
            side,
            ns: 0,
            writes: Vec::new(),
            read_from: Vec::new(),
            done: false,
        });
        tap.open = Some((tap.recording.turns.len() - 1, Instant::now()));
    });
}

/// `side`'s turn ended.
#[inline]
pub fn turn_ended(side: Side) {
    if !tapping() {
        return;
    }
    with_tap(|tap| {
        if let Some((index, began)) = tap.open.take() {
            if tap.recording.turns[index].side == side {
                tap.recording.turns[index].ns = began.elapsed().as_nanos() as u64;
            }
        }
    });
}

/// `side`'s handshake is done (it can send application data): marks its
/// latest turn, the first time only.
#[inline]
pub fn done(side: Side) {
    if !tapping() {
        return;
    }
    with_tap(|tap| {
        let turns = &mut tap.recording.turns;
        if turns.iter().any(|t| t.side == side && t.done) {
            return;
        }
        if let Some(turn) = turns.iter_mut().rev().find(|t| t.side == side) {
            turn.done = true;
        }
    });
}

/// `from` wrote `bytes` (one datagram if `datagram`).
#[inline]
pub fn wrote(from: Side, bytes: &[u8], datagram: bool) {
    if !tapping() || bytes.is_empty() {
        return;
    }
    with_tap(|tap| {
        let turn = tap.turn_of(from);
        tap.recording.turns[turn].writes.push(bytes.len());
        tap.recording.sent[from.index()].push(bytes.to_vec());
        tap.recording.datagrams |= datagram;
        tap.waiting[from.peer().index()].push_back((turn, bytes.len()));
    });
}

/// `by` read `count` bytes (a whole datagram if `datagram`).
#[inline]
pub fn read(by: Side, count: usize, datagram: bool) {
    if !tapping() {
        return;
    }
    with_tap(|tap| {
        let turn = tap.turn_of(by);
        let mut left = count;
        let waiting = &mut tap.waiting[by.index()];
        let mut from = Vec::new();
        while let Some((writer, bytes)) = waiting.front_mut() {
            from.push(*writer);
            if datagram {
                waiting.pop_front();
                break;
            }
            let taken = left.min(*bytes);
            *bytes -= taken;
            left -= taken;
            if *bytes == 0 {
                waiting.pop_front();
            }
            if left == 0 {
                break;
            }
        }
        let read_from = &mut tap.recording.turns[turn].read_from;
        for writer in from {
            if !read_from.contains(&writer) {
                read_from.push(writer);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recording_keeps_turns_writes_reads_and_done() {
        let ((), recording) = record(|| {
            turn_began(Side::Client);
            wrote(Side::Client, b"hello", false);
            turn_ended(Side::Client);
            turn_began(Side::Server);
            read(Side::Server, 3, false);
            read(Side::Server, 2, false);
            wrote(Side::Server, b"world!", false);
            done(Side::Server);
            turn_ended(Side::Server);
            turn_began(Side::Client);
            read(Side::Client, 6, false);
            done(Side::Client);
            done(Side::Client);
            turn_ended(Side::Client);
        });
        let turns = &recording.turns;
        assert_eq!(turns.len(), 3);
        assert_eq!(turns[0].writes, vec![5]);
        assert_eq!(turns[1].read_from, vec![0]);
        assert!(turns[1].done && turns[2].done && !turns[0].done);
        assert_eq!(turns[2].read_from, vec![1]);
        assert_eq!(recording.sent_by(Side::Server), &[b"world!".to_vec()]);
        assert!(!recording.datagrams);
        // Off again: nothing is kept.
        wrote(Side::Client, b"late", false);
        let ((), empty) = record(|| {});
        assert!(empty.turns.is_empty());
    }
}
