//! What one handshake sample does: a complete handshake between a client
//! and a server of one backend, each side's time taken apart, the
//! negotiated parameters checked against the scenario. And the matrix: every
//! (scenario, backend) pair prepared, the unsupported ones said why, the rest
//! handed to the interleaved sampler.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use serde::Serialize;

use crate::backend::{Backend, CpuReadings, HandshakeSample, Handshaker, Negotiated, Unsupported};
use crate::certs::{CertCache, Credentials};
use crate::measure::{self, verify, Outcome, Probe, Round, Sampled, SamplingOptions};
use crate::scenario::{HandshakeScenario, Subject};
use crate::workload::counted::values::Counts;

/// One measured handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Sample {
    /// From creating the client connection to both sides being done.
    pub wall_ns: u64,
    /// Wall-clock time inside the client library's calls.
    pub client_ns: u64,
    /// Wall-clock time inside the server library's calls.
    pub server_ns: u64,
    /// The thread's CPU time inside the client's calls.
    pub client_cpu_ns: u64,
    /// The thread's CPU time inside the server's calls.
    pub server_cpu_ns: u64,
}

/// A handshake's cost is the CPU time both sides spent in it. The wall
/// time stretches whenever the thread is preempted (a shared machine, a
/// busy neighbour), in proportion to the handshake's length, so ratios of
/// wall times between rows move from run to run; CPU time does not count
/// the time the thread waits.
impl Sampled for Sample {
    fn cost(&self) -> f64 {
        (self.client_cpu_ns + self.server_cpu_ns) as f64
    }
}

/// One (scenario, backend) pair and its outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellResult {
    /// What the row measured: a backend's library, or a server under test
    /// (`handshake --server`); exported as `backend`, as it always was.
    #[serde(rename = "backend")]
    pub subject: Subject,
    pub scenario: HandshakeScenario,
    /// What the handshakes negotiated (checked on every sample).
    pub negotiated: Option<Negotiated>,
    /// The timed samples (none when time was not measured).
    pub outcome: Outcome<Sample>,
    /// The counted measures, when asked for.
    pub counts: Counts,
}

impl CellResult {
    pub fn samples(&self) -> &[measure::Timed<Sample>] {
        self.outcome.samples()
    }
}

/// How many samples one handshaker gives in a matrix before it is rebuilt.
///
/// A handshaker's contexts and keys sit wherever the allocator put them,
/// and one placement can cost a few percent more than another for the
/// life of the process (seen: one run in seven had its baseline row 8%
/// dearer than in the others, every other row unchanged). Rebuilding the
/// handshaker every few samples spreads each cell over many placements, so
/// no single one decides a row or its ratio to the baseline.
pub const SAMPLES_PER_HANDSHAKER: u32 = 16;

/// What a probe needs to rebuild its handshaker.
struct Renewal {
    backend: Arc<dyn Backend>,
    credentials: Arc<Credentials>,
    every: u32,
    since: u32,
}

/// How a probe's handshakes read the thread's CPU clock (see
/// [`crate::backend::turns`]): at their ends, which leaves the split
/// between the sides unsure when the thread was preempted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuSplit {
    /// A handshake whose split is unsure is retaken with a reading at every
    /// turn: every sample's split is measured, or right to 1%. On a quiet
    /// machine a few handshakes in a thousand are unsure (an interrupt, the
    /// hypervisor); two within [`BUSY_WITHIN`] handshakes mean a busy one,
    /// and the next [`EVERY_TURN_WHEN_BUSY`] read the clock at every turn
    /// rather than be retaken one in a few.
    Retaken {
        /// Handshakes timed at their ends since the last unsure one.
        since_unsure: u32,
        every_turn_left: u32,
    },
    /// Never retaken: an unsure split is the wall time's, right on average
    /// (a preemption falls on each side in proportion to its time), and
    /// every handshake done is one handshake counted.
    Apportioned,
}

/// Two unsure handshakes within this many mean the machine is busy.
pub const BUSY_WITHIN: u32 = 20;

/// How many handshakes read the CPU clock at every turn once the machine
/// is busy.
pub const EVERY_TURN_WHEN_BUSY: u32 = 100;

/// A handshaker with the scenario it must negotiate: one call, one verified sample.
pub struct HandshakeProbe {
    handshaker: Box<dyn Handshaker>,
    scenario: HandshakeScenario,
    check_signature: bool,
    /// The ALPN protocol every handshake must agree on (the backend's).
    alpn: Option<&'static str>,
    renewal: Option<Renewal>,
    cpu_split: CpuSplit,
}

impl HandshakeProbe {
    /// Prepares a cell: why it cannot run, or a handshaker whose first
    /// handshake negotiated what the scenario asks for.
    pub fn prepare(
        backend: &dyn Backend,
        scenario: &HandshakeScenario,
        certs: &CertCache,
    ) -> Result<(Self, Negotiated), Outcome<Sample>> {
        if let Some(reason) = scenario
            .protocol_conflict()
            .or_else(|| backend.unsupported_reason(scenario))
        {
            return Err(Outcome::Unsupported { reason });
        }
        let failed = |error: anyhow::Error| Outcome::Failed {
            reason: format!("{error:#}"),
        };
        let credentials = certs
            .get(scenario.cert, scenario.chain_depth)
            .map_err(failed)?;
        // A backend that finds only now that it cannot run the row (a
        // client it lacks for a real server) says why, as a row.
        let handshaker = backend
            .handshaker(scenario, &credentials)
            .map_err(|error| match error.downcast_ref::<Unsupported>() {
                Some(unsupported) => Outcome::Unsupported {
                    reason: unsupported.0.clone(),
                },
                None => failed(error),
            })?;
        let mut probe = Self {
            handshaker,
            scenario: *scenario,
            check_signature: backend.capabilities().reports_signature_scheme,
            alpn: backend.alpn(scenario),
            renewal: None,
            cpu_split: CpuSplit::Retaken {
                since_unsure: BUSY_WITHIN,
                every_turn_left: 0,
            },
        };
        let negotiated = probe
            .handshake()
            .map(|(_, negotiated)| negotiated)
            .map_err(|reason| Outcome::Failed { reason })?;
        Ok((probe, negotiated))
    }

    /// Makes this probe's unsure splits apportioned rather than retaken.
    pub fn apportion_unsure_splits(&mut self) {
        self.cpu_split = CpuSplit::Apportioned;
    }

    /// One handshake, verified.
    pub fn handshake(&mut self) -> Result<(Sample, Negotiated), String> {
        let sample = self.timed_handshake().map_err(|e| format!("{e:#}"))?;
        verify::check_with_alpn(
            &self.scenario,
            &sample.negotiated,
            self.check_signature,
            self.alpn,
        )
        .map_err(|e| e.to_string())?;
        Ok((
            Sample {
                wall_ns: sample.wall_ns,
                client_ns: sample.client.wall_ns,
                server_ns: sample.server.wall_ns,
                client_cpu_ns: sample.client.cpu_ns,
                server_cpu_ns: sample.server.cpu_ns,
            },
            sample.negotiated,
        ))
    }

    /// One handshake, its CPU clock read as [`Self::cpu_split`] says.
    fn timed_handshake(&mut self) -> anyhow::Result<HandshakeSample> {
        let readings = match &mut self.cpu_split {
            CpuSplit::Retaken {
                every_turn_left, ..
            } if *every_turn_left > 0 => {
                *every_turn_left -= 1;
                CpuReadings::EveryTurn
            }
            _ => CpuReadings::AtEnds,
        };
        self.handshaker.read_cpu(readings);
        let sample = self.handshaker.handshake()?;
        let CpuSplit::Retaken {
            since_unsure,
            every_turn_left,
        } = &mut self.cpu_split
        else {
            return Ok(sample);
        };
        if readings == CpuReadings::EveryTurn {
            return Ok(sample);
        }
        if !sample.split_unsure {
            *since_unsure = since_unsure.saturating_add(1);
            return Ok(sample);
        }
        if *since_unsure < BUSY_WITHIN {
            *every_turn_left = EVERY_TURN_WHEN_BUSY;
        }
        *since_unsure = 0;
        self.handshaker.read_cpu(CpuReadings::EveryTurn);
        self.handshaker.handshake()
    }

    /// Rebuilds the handshaker from `backend` and `credentials` after
    /// every `every` samples taken through [`Self::probe`].
    pub fn renew_every(
        &mut self,
        every: u32,
        backend: Arc<dyn Backend>,
        credentials: Arc<Credentials>,
    ) {
        self.renewal = Some(Renewal {
            backend,
            credentials,
            every,
            since: 0,
        });
    }

    /// A new handshaker if one is due, warmed by one unmeasured handshake.
    fn renew_if_due(&mut self) -> Result<(), String> {
        let Some(renewal) = self.renewal.as_mut() else {
            return Ok(());
        };
        renewal.since += 1;
        if renewal.since <= renewal.every {
            return Ok(());
        }
        renewal.since = 1;
        self.handshaker = renewal
            .backend
            .handshaker(&self.scenario, &renewal.credentials)
            .map_err(|e| format!("rebuilding the handshaker: {e:#}"))?;
        self.handshake().map(drop)
    }

    pub fn probe(&mut self) -> Probe<'_, Sample> {
        Box::new(move || {
            self.renew_if_due()?;
            self.handshake().map(|(sample, _)| sample)
        })
    }
}

/// Told about the matrix as it runs: each cell once it is final (to be
/// stored at once), each round's samples as the round ends, and each
/// round's progress.
pub trait MatrixObserver {
    fn cell_finished(&mut self, cell: &CellResult) -> anyhow::Result<()>;
    /// A round's samples of the cells still sampling: per cell, the
    /// samples it took in the round (see [`measure::Observer::round_sampled`]);
    /// store them now, so a run killed later keeps every round that ended.
    fn round_sampled(
        &mut self,
        _round: u32,
        _taken: &[(&CellResult, &[measure::Timed<Sample>])],
    ) -> anyhow::Result<()> {
        Ok(())
    }
    /// Rounds whose record became final (see [`measure::Observer::rounds_recorded`]).
    fn rounds_recorded(&mut self, _rounds: &[Round]) -> anyhow::Result<()> {
        Ok(())
    }
    fn round_finished(&mut self, _round: u32, _finished: usize, _total: usize) {}
}

/// How a matrix run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixRun {
    /// Every cell, in the order planned (for a matrix: scenario by
    /// scenario, backend by backend).
    pub cells: Vec<CellResult>,
    pub rounds: Vec<Round>,
    pub interrupted: bool,
    pub out_of_time: bool,
}

/// Runs every scenario on every backend in interleaved rounds (see
/// [`run_cells`]).
pub fn run_matrix(
    scenarios: &[HandshakeScenario],
    backends: &[Arc<dyn Backend>],
    certs: &CertCache,
    options: &SamplingOptions,
    baseline: Option<&str>,
    interrupt: &AtomicBool,
    observer: &mut dyn MatrixObserver,
) -> anyhow::Result<MatrixRun> {
    let cells: Vec<(HandshakeScenario, Arc<dyn Backend>)> = scenarios
        .iter()
        .flat_map(|scenario| backends.iter().map(|b| (*scenario, Arc::clone(b))))
        .collect();
    run_cells(&cells, certs, options, baseline, interrupt, observer)
}

/// Runs each (scenario, backend) cell in interleaved rounds. `baseline`
/// is the label of the row ratios are taken against (per backend): its
/// cells pair with every other cell, and the others stop only once their
/// ratio to it is precise. Unsupported and failed cells go to the observer
/// before sampling starts; measured ones as each stops.
pub fn run_cells(
    planned: &[(HandshakeScenario, Arc<dyn Backend>)],
    certs: &CertCache,
    options: &SamplingOptions,
    baseline: Option<&str>,
    interrupt: &AtomicBool,
    observer: &mut dyn MatrixObserver,
) -> anyhow::Result<MatrixRun> {
    let mut cells: Vec<CellResult> = Vec::new();
    let mut probes: Vec<HandshakeProbe> = Vec::new();
    let mut probe_cell: Vec<usize> = Vec::new();
    for (scenario, backend) in planned {
        let prepared = HandshakeProbe::prepare(backend.as_ref(), scenario, certs);
        let mut cell = CellResult {
            counts: Default::default(),
            subject: backend.subject(),
            scenario: *scenario,
            negotiated: None,
            outcome: Outcome::Measured {
                samples: Vec::new(),
                precise: false,
                note: None,
            },
        };
        match prepared {
            Ok((mut probe, negotiated)) => {
                let credentials = certs.get(scenario.cert, scenario.chain_depth)?;
                probe.renew_every(SAMPLES_PER_HANDSHAKER, Arc::clone(backend), credentials);
                cell.negotiated = Some(negotiated);
                probe_cell.push(cells.len());
                probes.push(probe);
            }
            Err(outcome) => {
                cell.outcome = outcome;
                observer.cell_finished(&cell)?;
            }
        }
        cells.push(cell);
    }
    // Each cell pairs with the baseline row of its own backend, if it has
    // one (as the report does: never with another library's).
    let baseline_of = |cell: &CellResult| {
        let label = crate::scenario::baseline::baseline_label(baseline?, &cell.scenario);
        probe_cell
            .iter()
            .position(|&c| cells[c].scenario.label() == label && cells[c].subject == cell.subject)
    };
    let pairing =
        measure::Pairing::PerCell(probe_cell.iter().map(|&c| baseline_of(&cells[c])).collect());
    let total = cells.len();
    let already = total - probes.len();
    let mut relay = Relay {
        cells: &mut cells,
        probe_cell: &probe_cell,
        observer,
        already,
        total,
    };
    let sampled = measure::sample(
        probes.iter_mut().map(HandshakeProbe::probe).collect(),
        pairing,
        options,
        interrupt,
        &mut relay,
    )?;
    for (probe, outcome) in sampled.outcomes.into_iter().enumerate() {
        cells[probe_cell[probe]].outcome = outcome;
    }
    Ok(MatrixRun {
        cells,
        rounds: sampled.rounds,
        interrupted: sampled.interrupted,
        out_of_time: sampled.out_of_time,
    })
}

/// Hands the sampler's per-probe events on as whole cells (a round's
/// samples beside the cell that took them).
struct Relay<'a> {
    cells: &'a mut [CellResult],
    probe_cell: &'a [usize],
    observer: &'a mut dyn MatrixObserver,
    already: usize,
    total: usize,
}

impl measure::Observer<Sample> for Relay<'_> {
    fn cell_finished(&mut self, index: usize, outcome: &Outcome<Sample>) -> anyhow::Result<()> {
        let cell = &mut self.cells[self.probe_cell[index]];
        cell.outcome = outcome.clone();
        self.observer.cell_finished(cell)
    }

    fn round_sampled(
        &mut self,
        round: u32,
        taken: &[measure::RoundSamples<'_, Sample>],
    ) -> anyhow::Result<()> {
        let cells = &*self.cells;
        let taken: Vec<(&CellResult, &[measure::Timed<Sample>])> = taken
            .iter()
            .map(|(index, samples)| (&cells[self.probe_cell[*index]], *samples))
            .collect();
        self.observer.round_sampled(round, &taken)
    }

    fn rounds_recorded(&mut self, rounds: &[Round]) -> anyhow::Result<()> {
        self.observer.rounds_recorded(rounds)
    }

    fn round_finished(&mut self, round: u32, _active: usize, finished: usize) {
        self.observer
            .round_finished(round, self.already + finished, self.total);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::Mutex;

    use super::*;
    use crate::scenario::{CertKind, Group, TlsVersion};

    /// The mock's handshakes, reported unsure as a script says whenever
    /// the CPU clock was to be read at the ends only; every request kept.
    struct Scripted {
        inner: Box<dyn Handshaker>,
        unsure: VecDeque<bool>,
        readings: CpuReadings,
        asked: Arc<Mutex<Vec<CpuReadings>>>,
    }

    impl Handshaker for Scripted {
        fn handshake(&mut self) -> anyhow::Result<HandshakeSample> {
            self.asked.lock().unwrap().push(self.readings);
            let mut sample = self.inner.handshake()?;
            sample.split_unsure =
                self.readings == CpuReadings::AtEnds && self.unsure.pop_front().unwrap_or(false);
            Ok(sample)
        }

        fn read_cpu(&mut self, readings: CpuReadings) {
            self.readings = readings;
        }
    }

    fn scripted_probe(unsure: &[bool]) -> (HandshakeProbe, Arc<Mutex<Vec<CpuReadings>>>) {
        let backend = crate::backend::mock::MockBackend::default();
        let scenario =
            HandshakeScenario::full(TlsVersion::Tls13, Group::X25519, CertKind::EcdsaP256);
        let cert_dir = tempfile::tempdir().unwrap();
        let certs = CertCache::new(cert_dir.path());
        let (mut probe, _) = HandshakeProbe::prepare(&backend, &scenario, &certs).unwrap();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let inner = std::mem::replace(
            &mut probe.handshaker,
            backend
                .handshaker(&scenario, &certs.get(scenario.cert, 3).unwrap())
                .unwrap(),
        );
        probe.handshaker = Box::new(Scripted {
            inner,
            unsure: unsure.iter().copied().collect(),
            readings: CpuReadings::EveryTurn,
            asked: Arc::clone(&asked),
        });
        (probe, asked)
    }

    #[test]
    fn an_unsure_split_is_retaken_reading_every_turn_and_a_busy_machine_reads_every_turn() {
        use CpuReadings::{AtEnds, EveryTurn};
        // Unsure at the 2nd handshake, then again three handshakes later.
        let mut script = vec![false, true, false, false, false, true];
        script.resize(200, false);
        let (mut probe, asked) = scripted_probe(&script);
        for _ in 0..6 {
            probe.handshake().unwrap();
        }
        let asked = std::mem::take(&mut *asked.lock().unwrap());
        // The 2nd is retaken; the 6th too, and two unsure within
        // BUSY_WITHIN make the following ones read every turn.
        assert_eq!(
            asked,
            vec![AtEnds, AtEnds, EveryTurn, AtEnds, AtEnds, AtEnds, AtEnds, EveryTurn]
        );
        let (mut probe, asked) = scripted_probe(&script);
        for _ in 0..(6 + EVERY_TURN_WHEN_BUSY + 1) {
            probe.handshake().unwrap();
        }
        let asked = asked.lock().unwrap();
        let every_turn = asked.iter().filter(|r| **r == EveryTurn).count();
        assert_eq!(every_turn, 2 + EVERY_TURN_WHEN_BUSY as usize);
        assert_eq!(asked.last(), Some(&AtEnds));
    }

    #[test]
    fn apportioned_splits_are_never_retaken() {
        let (mut probe, asked) = scripted_probe(&[true, true, true]);
        probe.apportion_unsure_splits();
        for _ in 0..3 {
            probe.handshake().unwrap();
        }
        assert_eq!(*asked.lock().unwrap(), vec![CpuReadings::AtEnds; 3]);
    }
}
