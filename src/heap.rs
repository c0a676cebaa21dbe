//! Heap bytes per side of a handshake, counted exactly: the `tlslab`
//! binary puts its own `malloc`, `calloc`, `realloc` and `free` in front of
//! the C library's ([`interpose_malloc!`]), so every allocation of OpenSSL,
//! aws-lc and Rust code (the standard allocator calls `malloc`) passes
//! through [`allocated`] and [`freed`]. While a side's turn runs (see
//! [`crate::backend::turns`]), each allocation the measuring thread makes
//! is charged to that side with its size; freeing it, on any thread and at
//! any time, takes it off that side again. From those, per side, the peak
//! of the live bytes during a handshake and the bytes still live when it is
//! done (what an established, idle connection keeps).
//!
//! Outside a tracked handshake the hooks cost one relaxed atomic load per
//! call. Allocations made with `posix_memalign` and its kin (Rust's for
//! alignments above 16 bytes) are not seen; the TLS libraries use `malloc`.

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

pub use crate::scenario::Side;

/// The code a thread's allocations are charged under: 0 for no side, 1
/// plus the side's index for a side.
fn side_code(side: Side) -> u8 {
    1 + side.index() as u8
}

/// True while a handshake is tracked: the hooks look further.
static TRACKING: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// The side whose turn this thread runs (0: none).
    static SIDE: Cell<u8> = const { Cell::new(0) };
}

extern "C" {
    fn __libc_malloc(size: usize) -> *mut c_void;
    fn __libc_calloc(count: usize, size: usize) -> *mut c_void;
    fn __libc_realloc(ptr: *mut c_void, size: usize) -> *mut c_void;
    fn __libc_free(ptr: *mut c_void);
}

// Each hook goes straight to the C library's function unless a handshake
// is tracked: one load and one branch more per call.

/// The C library's `malloc`, with the allocation counted.
///
/// # Safety
/// As `malloc`.
#[inline(always)]
pub unsafe fn malloc(size: usize) -> *mut c_void {
    // SAFETY: forwarded as it came.
    let ptr = unsafe { __libc_malloc(size) };
    if TRACKING.load(Ordering::Relaxed) {
        allocated(ptr, size);
    }
    ptr
}

/// The C library's `calloc`, with the allocation counted.
///
/// # Safety
/// As `calloc`.
#[inline(always)]
pub unsafe fn calloc(count: usize, size: usize) -> *mut c_void {
    // SAFETY: forwarded as it came.
    let ptr = unsafe { __libc_calloc(count, size) };
    if TRACKING.load(Ordering::Relaxed) {
        allocated(ptr, count.saturating_mul(size));
    }
    ptr
}

/// The C library's `realloc`, with the move counted.
///
/// # Safety
/// As `realloc`.
#[inline(always)]
pub unsafe fn realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: forwarded as it came.
    let moved = unsafe { __libc_realloc(ptr, size) };
    if TRACKING.load(Ordering::Relaxed) && !(size > 0 && moved.is_null()) {
        reallocated(ptr, moved, size);
    }
    moved
}

/// The C library's `free`, with the release counted.
///
/// # Safety
/// As `free`.
#[inline(always)]
pub unsafe fn free(ptr: *mut c_void) {
    if TRACKING.load(Ordering::Relaxed) {
        freed(ptr);
    }
    // SAFETY: forwarded as it came.
    unsafe { __libc_free(ptr) }
}

/// Defines `malloc`, `calloc`, `realloc` and `free` in the binary that
/// invokes it, in front of the C library's, so [`crate::heap`] sees every
/// allocation. Only the `tlslab` binary does.
#[macro_export]
macro_rules! interpose_malloc {
    () => {
        /// `malloc`, counted by tlslab's heap measure.
        ///
        /// # Safety
        /// As `malloc`.
        #[no_mangle]
        pub unsafe extern "C" fn malloc(size: usize) -> *mut ::std::ffi::c_void {
            // SAFETY: the caller keeps malloc's contract.
            unsafe { $crate::heap::malloc(size) }
        }

        /// `calloc`, counted by tlslab's heap measure.
        ///
        /// # Safety
        /// As `calloc`.
        #[no_mangle]
        pub unsafe extern "C" fn calloc(count: usize, size: usize) -> *mut ::std::ffi::c_void {
            // SAFETY: the caller keeps calloc's contract.
            unsafe { $crate::heap::calloc(count, size) }
        }

        /// `realloc`, counted by tlslab's heap measure.
        ///
        /// # Safety
        /// As `realloc`.
        #[no_mangle]
        pub unsafe extern "C" fn realloc(
            ptr: *mut ::std::ffi::c_void,
            size: usize,
        ) -> *mut ::std::ffi::c_void {
            // SAFETY: the caller keeps realloc's contract.
            unsafe { $crate::heap::realloc(ptr, size) }
        }

        /// `free`, counted by tlslab's heap measure.
        ///
        /// # Safety
        /// As `free`.
        #[no_mangle]
        pub unsafe extern "C" fn free(ptr: *mut ::std::ffi::c_void) {
            // SAFETY: the caller keeps free's contract.
            unsafe { $crate::heap::free(ptr) }
        }
    };
}

/// Counts an allocation of `size` bytes at `ptr` (the hooks call it).
pub fn allocated(ptr: *mut c_void, size: usize) {
    if !TRACKING.load(Ordering::Relaxed) || ptr.is_null() {
        return;
    }
    let side = SIDE.with(Cell::get);
    if side == 0 {
        return;
    }
    with_ledger(|ledger| ledger.add(ptr as usize, size as u64, side));
}

/// Counts the release of the allocation at `ptr` (the hooks call it).
pub fn freed(ptr: *mut c_void) {
    if !TRACKING.load(Ordering::Relaxed) || ptr.is_null() {
        return;
    }
    with_ledger(|ledger| ledger.remove(ptr as usize));
}

fn reallocated(old: *mut c_void, new: *mut c_void, size: usize) {
    let side = SIDE.with(Cell::get);
    with_ledger(|ledger| {
        let previous = if old.is_null() {
            None
        } else {
            ledger.remove(old as usize)
        };
        // A block keeps its side when another side (or none) resizes it.
        let side = if side != 0 {
            side
        } else {
            previous.unwrap_or(0)
        };
        if side != 0 && !new.is_null() {
            ledger.add(new as usize, size as u64, side);
        }
    });
}

/// True if and only if this process's `malloc` is counted (the `tlslab`
/// binary; not a test harness or another program linking the library):
/// an allocation made in a tracked turn is seen.
pub fn hooked() -> bool {
    begin();
    enter(Side::Client);
    let probe = std::hint::black_box(vec![0u8; 64]);
    leave();
    mark_done();
    drop(probe);
    end().is_some_and(|seen| seen.client_peak_bytes >= 64)
}

/// Each side's heap figures over one tracked handshake, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeapSample {
    /// The most bytes the client's allocations held at once.
    pub client_peak_bytes: u64,
    /// The most bytes the server's allocations held at once.
    pub server_peak_bytes: u64,
    /// The client's bytes still held when the handshake was done.
    pub client_retained_bytes: u64,
    /// The server's bytes still held when the handshake was done.
    pub server_retained_bytes: u64,
}

/// Starts tracking a handshake on this thread: earlier allocations are
/// forgotten, both sides start at zero.
pub fn begin() {
    with_ledger(Ledger::clear);
    SIDE.with(|s| s.set(0));
    TRACKING.store(true, Ordering::SeqCst);
}

/// Charges the calling thread's allocations to `side` until [`leave`].
#[inline]
pub fn enter(side: Side) {
    SIDE.with(|s| s.set(side_code(side)));
}

/// Stops charging the calling thread's allocations to a side.
#[inline]
pub fn leave() {
    SIDE.with(|s| s.set(0));
}

/// Runs `f` with the calling thread's allocations charged to no side: the
/// measuring harness's own buffers (the memory transport) are no side's.
#[inline]
pub fn outside_sides<T>(f: impl FnOnce() -> T) -> T {
    let side = SIDE.with(|s| s.replace(0));
    let result = f();
    SIDE.with(|s| s.set(side));
    result
}

/// Notes each side's live bytes now as what it retains (called when the
/// handshake is done, both ends still held).
pub fn mark_done() {
    if TRACKING.load(Ordering::Relaxed) {
        with_ledger(|ledger| ledger.retained = ledger.live);
    }
}

/// Stops tracking; returns the handshake's figures, or `None` if too
/// many allocations were live to be told apart.
pub fn end() -> Option<HeapSample> {
    TRACKING.store(false, Ordering::SeqCst);
    SIDE.with(|s| s.set(0));
    with_ledger(|ledger| {
        (!ledger.overflowed).then_some(HeapSample {
            client_peak_bytes: ledger.peak[0],
            server_peak_bytes: ledger.peak[1],
            client_retained_bytes: ledger.retained[0],
            server_retained_bytes: ledger.retained[1],
        })
    })
}

/// Live allocations one handshake may hold at once.
const SLOTS: usize = 1 << 18;

/// The tracked allocations (address, size, side) in an open-addressed
/// table in memory of its own (mapped, never from `malloc`), and each
/// side's live and peak bytes.
struct Ledger {
    slots: *mut Slot,
    live: [u64; 2],
    peak: [u64; 2],
    retained: [u64; 2],
    overflowed: bool,
}

#[derive(Clone, Copy)]
struct Slot {
    /// 0: empty.
    address: usize,
    size: u64,
    side: u8,
}

// SAFETY: the ledger is only used under LOCK.
unsafe impl Send for Ledger {}

static LOCK: AtomicBool = AtomicBool::new(false);
static mut LEDGER: Ledger = Ledger {
    slots: std::ptr::null_mut(),
    live: [0; 2],
    peak: [0; 2],
    retained: [0; 2],
    overflowed: false,
};
/// Allocations in the table (for the load factor).
static USED: AtomicU64 = AtomicU64::new(0);

fn with_ledger<T>(f: impl FnOnce(&mut Ledger) -> T) -> T {
    while LOCK
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        std::hint::spin_loop();
    }
    // SAFETY: LOCK gives this thread the only access to LEDGER.
    let ledger = unsafe { &mut *std::ptr::addr_of_mut!(LEDGER) };
    let result = f(ledger);
    LOCK.store(false, Ordering::Release);
    result
}

impl Ledger {
    fn table(&mut self) -> Option<&mut [Slot]> {
        if self.slots.is_null() {
            let bytes = SLOTS * std::mem::size_of::<Slot>();
            // SAFETY: an anonymous private mapping; no memory is aliased.
            let mapped = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    bytes,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if mapped == libc::MAP_FAILED {
                self.overflowed = true;
                return None;
            }
            // Anonymous mappings are zeroed: every slot is empty.
            self.slots = mapped.cast();
        }
        // SAFETY: the mapping holds SLOTS slots and lives for the process.
        Some(unsafe { std::slice::from_raw_parts_mut(self.slots, SLOTS) })
    }

    fn clear(&mut self) {
        if let Some(table) = self.table() {
            for slot in table.iter_mut() {
                slot.address = 0;
            }
        }
        USED.store(0, Ordering::Relaxed);
        self.live = [0; 2];
        self.peak = [0; 2];
        self.retained = [0; 2];
        self.overflowed = false;
    }

    fn home(address: usize) -> usize {
        // Fibonacci hashing of the address (allocations are 16-aligned), in
        // 64 bits so that 32-bit targets (armv7) hash the same way.
        let hash = ((address as u64) >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (hash >> (u64::BITS - SLOTS.trailing_zeros())) as usize
    }

    fn add(&mut self, address: usize, size: u64, side: u8) {
        if USED.load(Ordering::Relaxed) as usize >= SLOTS / 2 {
            self.overflowed = true;
            return;
        }
        let Some(table) = self.table() else { return };
        let mut at = Self::home(address);
        while table[at].address != 0 && table[at].address != address {
            at = (at + 1) & (SLOTS - 1);
        }
        if table[at].address == 0 {
            USED.fetch_add(1, Ordering::Relaxed);
        }
        table[at] = Slot {
            address,
            size,
            side,
        };
        let i = usize::from(side - 1);
        self.live[i] += size;
        self.peak[i] = self.peak[i].max(self.live[i]);
    }

    /// Takes an allocation off its side; returns that side.
    fn remove(&mut self, address: usize) -> Option<u8> {
        if self.slots.is_null() {
            return None;
        }
        let table = self.table()?;
        let mut at = Self::home(address);
        loop {
            if table[at].address == 0 {
                return None;
            }
            if table[at].address == address {
                break;
            }
            at = (at + 1) & (SLOTS - 1);
        }
        let Slot { size, side, .. } = table[at];
        // Backward-shift deletion keeps every probe chain unbroken.
        let mut hole = at;
        let mut next = (hole + 1) & (SLOTS - 1);
        while table[next].address != 0 {
            let home = Self::home(table[next].address);
            let distance_next = next.wrapping_sub(home) & (SLOTS - 1);
            let distance_hole = hole.wrapping_sub(home) & (SLOTS - 1);
            if distance_hole <= distance_next {
                table[hole] = table[next];
                hole = next;
            }
            next = (next + 1) & (SLOTS - 1);
        }
        table[hole].address = 0;
        USED.fetch_sub(1, Ordering::Relaxed);
        let i = usize::from(side - 1);
        self.live[i] = self.live[i].saturating_sub(size);
        Some(side)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ledger is one per process: its tests take turns.
    fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
        static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
        TURN.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The ledger on its own (the test harness has no hooks): allocations
    /// made in a side's turn count, the rest do not, frees take them off
    /// wherever they happen, and the peak is the most held at once.
    #[test]
    fn each_side_is_charged_its_own_allocations_and_their_release() {
        let _turn = one_at_a_time();
        begin();
        let fake = |n: usize| (0x1000_0000 + n * 64) as *mut c_void;
        allocated(fake(1), 500); // no side: not counted
        enter(Side::Client);
        allocated(fake(2), 1000);
        allocated(fake(3), 300);
        leave();
        enter(Side::Server);
        allocated(fake(4), 4000);
        freed(fake(3)); // the client's block, freed in the server's turn
        outside_sides(|| allocated(fake(5), 7000));
        freed(fake(4));
        allocated(fake(6), 100);
        leave();
        mark_done();
        freed(fake(2));
        freed(fake(6));
        freed(fake(1));
        let sample = end().unwrap();
        assert_eq!(
            sample,
            HeapSample {
                client_peak_bytes: 1300,
                server_peak_bytes: 4000,
                client_retained_bytes: 1000,
                server_retained_bytes: 100,
            }
        );
    }

    #[test]
    fn a_crowded_table_keeps_every_chain() {
        let _turn = one_at_a_time();
        begin();
        enter(Side::Client);
        // Addresses that share home slots.
        let addresses: Vec<usize> = (1..2000).map(|i| i << 22).collect();
        for &a in &addresses {
            allocated(a as *mut c_void, 1);
        }
        for &a in addresses.iter().step_by(2) {
            freed(a as *mut c_void);
        }
        leave();
        mark_done();
        let sample = end().unwrap();
        assert_eq!(sample.client_peak_bytes, 1999);
        assert_eq!(sample.client_retained_bytes, 999);
    }
}
