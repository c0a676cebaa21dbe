//! What one step of a capacity run does: a number of threads at once, each
//! doing complete handshakes of one backend and scenario over memory
//! (client and server in that thread, every handshake verified, as one
//! handshake sample does) for a fixed window of wall-clock time; how many
//! finished in the window and the CPU each side spent in them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::handshake::HandshakeProbe;
use crate::backend::Backend;
use crate::certs::CertCache;
use crate::scenario::{HandshakeScenario, Subject};

/// One backend and scenario of a capacity run: its steps from one thread up.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapacityCell {
    /// The backend loaded; exported as `backend`.
    #[serde(rename = "backend")]
    pub subject: Subject,
    pub scenario: HandshakeScenario,
    /// A failed cell keeps the steps it finished before the failure.
    pub status: crate::measure::CellStatus,
    /// Why the cell is unsupported or failed.
    pub reason: Option<String>,
    /// The server's CPU per handshake by `cost`'s model (counted
    /// operations times primitive costs measured in the same run).
    pub modelled_server_ns: Option<f64>,
    pub steps: Vec<Step>,
}

impl CapacityCell {
    /// New handshakes per second one core could serve by the model.
    pub fn modelled_capacity_per_core(&self) -> Option<f64> {
        self.modelled_server_ns
            .filter(|ns| *ns > 0.0)
            .map(|ns| 1e9 / ns)
    }

    /// A step's handshakes per second over `threads` times the one-thread
    /// step's: 1.0 is perfect scaling.
    pub fn scaling_efficiency(&self, step: &Step) -> Option<f64> {
        let one = self.steps.iter().find(|s| s.threads == 1)?;
        let single = one.handshakes_per_second();
        (single > 0.0).then(|| step.handshakes_per_second() / (step.threads as f64 * single))
    }
}

/// One step: `threads` threads handshaking at once for `window_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Step {
    pub threads: usize,
    /// Handshakes that finished inside the window, all threads together.
    pub handshakes: u64,
    /// The window's wall-clock length.
    pub window_ns: u64,
    /// The server's CPU time inside its calls, summed over those handshakes.
    pub server_cpu_ns: u64,
    /// The client's CPU time inside its calls, summed over those handshakes.
    pub client_cpu_ns: u64,
}

impl Step {
    /// Two slices of the same thread count as one step: their handshakes,
    /// windows and CPU times added.
    pub fn plus(&self, other: &Step) -> Step {
        Step {
            threads: self.threads,
            handshakes: self.handshakes + other.handshakes,
            window_ns: self.window_ns + other.window_ns,
            server_cpu_ns: self.server_cpu_ns + other.server_cpu_ns,
            client_cpu_ns: self.client_cpu_ns + other.client_cpu_ns,
        }
    }

    /// Handshakes per second of wall-clock time, all threads together
    /// (each thread does both sides of its handshakes).
    pub fn handshakes_per_second(&self) -> f64 {
        self.handshakes as f64 / (self.window_ns.max(1) as f64 / 1e9)
    }

    /// The server's mean CPU time per handshake, if any handshake finished.
    pub fn server_cpu_per_handshake_ns(&self) -> Option<f64> {
        (self.handshakes > 0 && self.server_cpu_ns > 0)
            .then(|| self.server_cpu_ns as f64 / self.handshakes as f64)
    }

    /// The cores a step's capacity counts on a machine of `cores`: one per
    /// thread, but no more than the machine has.
    pub fn capacity_cores(&self, cores: usize) -> usize {
        self.threads.min(cores.max(1))
    }

    /// New handshakes per second a server could answer at this step's CPU
    /// per handshake on a machine of `cores`: one core per thread, at most
    /// the machine's ([`Step::capacity_cores`]), over the server's CPU per
    /// handshake. Threads beyond the cores share them: they add no
    /// capacity. The client's work is left out, as a real server does not
    /// do it.
    pub fn server_capacity_per_second(&self, cores: usize) -> Option<f64> {
        self.server_cpu_per_handshake_ns()
            .map(|ns| self.capacity_cores(cores) as f64 * 1e9 / ns)
    }
}

/// How long a step runs: an unmeasured warm-up, then the measured window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StepTimes {
    pub warmup: Duration,
    pub window: Duration,
}

/// Runs `threads` threads at once, each with its own handshaker (prepared
/// and checked by a first handshake before the clock starts); every thread
/// starts at the same instant, warms up, then counts the handshakes that
/// finish inside the window. A handshake that fails or negotiates something
/// else than the scenario fails the step; Ctrl-C (`interrupt`) ends it
/// early, and the step is then `None`.
pub fn run_step(
    backend: &dyn Backend,
    scenario: &HandshakeScenario,
    certs: &CertCache,
    threads: usize,
    times: StepTimes,
    interrupt: &AtomicBool,
) -> Result<Option<Step>, String> {
    let ready = Barrier::new(threads);
    let start: Mutex<Option<Instant>> = Mutex::new(None);
    let totals = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let prepared = HandshakeProbe::prepare(backend, scenario, certs);
                    // Every thread reaches both waits, prepared or not, so
                    // none is left waiting; the leader sets the start between them.
                    if ready.wait().is_leader() {
                        *start.lock().expect("not poisoned") = Some(Instant::now());
                    }
                    ready.wait();
                    let begun = start
                        .lock()
                        .expect("not poisoned")
                        .expect("set by the leader");
                    let mut probe = prepared
                        .map(|(probe, _)| probe)
                        .map_err(|outcome| outcome.reason().unwrap_or_default().to_string())?;
                    // Every handshake done in the window is counted, and
                    // only the sums of CPU time are kept.
                    probe.apportion_unsure_splits();
                    count_handshakes(&mut probe, begun + times.warmup, times.window, interrupt)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().expect("a capacity thread panicked"))
            .collect::<Result<Vec<_>, String>>()
    })?;
    if interrupt.load(Ordering::SeqCst) {
        return Ok(None);
    }
    let mut step = Step {
        threads,
        handshakes: 0,
        window_ns: times.window.as_nanos() as u64,
        server_cpu_ns: 0,
        client_cpu_ns: 0,
    };
    for (handshakes, server_cpu_ns, client_cpu_ns) in totals {
        step.handshakes += handshakes;
        step.server_cpu_ns += server_cpu_ns;
        step.client_cpu_ns += client_cpu_ns;
    }
    Ok(Some(step))
}

/// One thread's handshakes until the window ends: (handshakes finished
/// inside the window, server CPU ns, client CPU ns) over those handshakes.
fn count_handshakes(
    probe: &mut HandshakeProbe,
    window_start: Instant,
    window: Duration,
    interrupt: &AtomicBool,
) -> Result<(u64, u64, u64), String> {
    let window_end = window_start + window;
    let (mut handshakes, mut server_cpu_ns, mut client_cpu_ns) = (0, 0, 0);
    loop {
        let (sample, _) = probe.handshake()?;
        let now = Instant::now();
        if now >= window_end || interrupt.load(Ordering::Relaxed) {
            return Ok((handshakes, server_cpu_ns, client_cpu_ns));
        }
        if now >= window_start {
            handshakes += 1;
            server_cpu_ns += sample.server_cpu_ns;
            client_cpu_ns += sample.client_cpu_ns;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_is_the_threads_over_the_server_cpu_per_handshake() {
        let step = Step {
            threads: 4,
            handshakes: 2_000,
            window_ns: 2_000_000_000,
            server_cpu_ns: 2_000 * 500_000,
            client_cpu_ns: 2_000 * 300_000,
        };
        assert_eq!(step.handshakes_per_second(), 1_000.0);
        assert_eq!(step.server_cpu_per_handshake_ns(), Some(500_000.0));
        assert_eq!(step.server_capacity_per_second(8), Some(8_000.0));
        // Issue 18 item 14: four threads on two cores are two cores' capacity.
        assert_eq!(step.capacity_cores(2), 2);
        assert_eq!(step.server_capacity_per_second(2), Some(4_000.0));
        let none = Step {
            handshakes: 0,
            server_cpu_ns: 0,
            ..step
        };
        assert_eq!(none.server_capacity_per_second(8), None);
    }

    #[test]
    fn every_thread_counts_its_handshakes_on_the_mock() {
        let backend = crate::backend::mock::MockBackend::default();
        let scenario = HandshakeScenario::full(
            crate::scenario::TlsVersion::Tls13,
            crate::scenario::Group::X25519,
            crate::scenario::CertKind::EcdsaP256,
        );
        let cert_dir = tempfile::tempdir().unwrap();
        let certs = CertCache::new(cert_dir.path());
        let times = StepTimes {
            warmup: Duration::ZERO,
            window: Duration::from_millis(30),
        };
        let step = run_step(
            &backend,
            &scenario,
            &certs,
            2,
            times,
            &AtomicBool::new(false),
        )
        .unwrap()
        .unwrap();
        assert_eq!(step.threads, 2);
        assert!(step.handshakes > 2, "{step:?}");
        // The mock's server costs 230-231 µs of CPU for this scenario.
        let per_handshake = step.server_cpu_per_handshake_ns().unwrap();
        assert!((230_000.0..=231_000.0).contains(&per_handshake), "{step:?}");
    }
}
