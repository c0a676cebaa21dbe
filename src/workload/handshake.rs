//! What one handshake sample does: a complete handshake between a client
//! and a server of one backend, each side's time taken apart, the
//! negotiated parameters checked against the scenario. And the matrix: every
//! (scenario, backend) pair prepared, the unsupported ones said why, the rest
//! handed to the interleaved sampler.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use serde::Serialize;

use crate::backend::{Backend, Handshaker, Negotiated};
use crate::certs::{CertCache, Credentials};
use crate::measure::{self, verify, Outcome, Probe, Round, Sampled, SamplingOptions};
use crate::scenario::HandshakeScenario;

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
    pub backend: String,
    pub scenario: HandshakeScenario,
    /// What the handshakes negotiated (checked on every sample).
    pub negotiated: Option<Negotiated>,
    pub outcome: Outcome<Sample>,
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

/// A handshaker with the scenario it must negotiate: one call, one verified sample.
pub struct HandshakeProbe {
    handshaker: Box<dyn Handshaker>,
    scenario: HandshakeScenario,
    check_signature: bool,
    renewal: Option<Renewal>,
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
        let handshaker = backend.handshaker(scenario, &credentials).map_err(failed)?;
        let mut probe = Self {
            handshaker,
            scenario: *scenario,
            check_signature: backend.capabilities().reports_signature_scheme,
            renewal: None,
        };
        let negotiated = probe
            .handshake()
            .map(|(_, negotiated)| negotiated)
            .map_err(|reason| Outcome::Failed { reason })?;
        Ok((probe, negotiated))
    }

    /// One handshake, verified.
    pub fn handshake(&mut self) -> Result<(Sample, Negotiated), String> {
        let sample = self.handshaker.handshake().map_err(|e| format!("{e:#}"))?;
        verify::check(&self.scenario, &sample.negotiated, self.check_signature)
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
/// stored at once), and each round's progress.
pub trait MatrixObserver {
    fn cell_finished(&mut self, cell: &CellResult) -> anyhow::Result<()>;
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
            backend: backend.id().to_string(),
            scenario: *scenario,
            negotiated: None,
            outcome: Outcome::Measured {
                samples: Vec::new(),
                precise: false,
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
    // Each cell pairs with the baseline row of its own backend, or else
    // with that of the first backend that has it (as the report does).
    let baseline_of = |backend: Option<&str>| {
        let label = baseline?;
        probe_cell.iter().position(|&c| {
            cells[c].scenario.label() == label && backend.is_none_or(|b| cells[c].backend == b)
        })
    };
    let pairing = measure::Pairing::PerCell(
        probe_cell
            .iter()
            .map(|&c| baseline_of(Some(&cells[c].backend)).or_else(|| baseline_of(None)))
            .collect(),
    );
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

/// Hands the sampler's per-probe events on as whole cells.
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

    fn round_finished(&mut self, round: u32, _active: usize, finished: usize) {
        self.observer
            .round_finished(round, self.already + finished, self.total);
    }
}
