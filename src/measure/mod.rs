//! The one sampler every command uses. It is generic over what one sample
//! does (a handshake, a batch of primitive operations, a batch of tunnel
//! packets): after a warm-up per cell, it samples in interleaved rounds —
//! each round takes one short batch from every cell still sampling, in a
//! fresh shuffled order — so a slowdown of the machine hits all cells alike
//! and a ratio between two cells can be taken from same-round pairs.
//!
//! A cell stops when its median (and, with a baseline, its ratio to the
//! baseline) is precise enough, when its own time budget is spent, or when a
//! fixed count of samples (`runs`) is reached; the run stops when every cell
//! has stopped, or on Ctrl-C. When the run's total budget is spent, each
//! cell stops as soon as it has its minimum samples (at least one): a
//! budget too short for the minimum is taken past, and the cell says so
//! in its note, rather than failed. The time is read from a [`Clock`], so
//! tests can run the budget's cases without waiting.

pub mod verify;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::stats;

/// When to stop sampling, and how to interleave.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SamplingOptions {
    /// Stop a cell once the 95% interval of its median (and of its ratio to
    /// the baseline, when there is one) is within ± this fraction (0.01 = 1%).
    pub precision: f64,
    /// Stop a cell once this much time went into its own samples (and it has
    /// `min_samples`).
    pub max_time: Duration,
    /// Stop the whole run after this long, warm-up included.
    pub max_total_time: Option<Duration>,
    /// Never stop a cell for precision or time with fewer samples.
    pub min_samples: usize,
    /// A fixed count: exactly this many samples per cell, one per round,
    /// whatever the precision (as hyperfine's `--runs`).
    pub runs: Option<usize>,
    /// Warm-up per cell before sampling (not recorded); at least one sample.
    pub warmup: Duration,
    /// Seeds the shuffled order of the rounds (recorded with the run).
    pub seed: u64,
    /// About how long one cell's batch in one round lasts.
    pub slice: Duration,
}

impl Default for SamplingOptions {
    fn default() -> Self {
        Self {
            precision: 0.01,
            max_time: Duration::from_secs(5),
            max_total_time: None,
            min_samples: 10,
            runs: None,
            warmup: Duration::from_millis(200),
            seed: 1,
            slice: Duration::from_millis(3),
        }
    }
}

/// A sample's cost: the figure precision and ratios are about (time per
/// handshake, per operation or per byte; lower is better).
pub trait Sampled: Copy {
    fn cost(&self) -> f64;
}

/// One sample and the round it was taken in.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Timed<S> {
    pub round: u32,
    #[serde(flatten)]
    pub value: S,
}

/// (round, cost) of each sample, for the statistics of pairs and drift.
pub fn costs<S: Sampled>(samples: &[Timed<S>]) -> Vec<(u32, f64)> {
    samples.iter().map(|t| (t.round, t.value.cost())).collect()
}

/// How a cell ended: sampled, not possible (a combination a library or
/// the protocol cannot do, with why), or failed (an error or a negotiated
/// parameter other than the one asked for).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellStatus {
    Measured,
    Unsupported,
    Failed,
}

impl CellStatus {
    /// The status's id in the store and the exports.
    pub fn id(self) -> &'static str {
        match self {
            CellStatus::Measured => "measured",
            CellStatus::Unsupported => "unsupported",
            CellStatus::Failed => "failed",
        }
    }

    /// The status with this id, if there is one.
    pub fn from_id(id: &str) -> Option<Self> {
        [
            CellStatus::Measured,
            CellStatus::Unsupported,
            CellStatus::Failed,
        ]
        .into_iter()
        .find(|status| status.id() == id)
    }
}

impl std::fmt::Display for CellStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// What happened to one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome<S> {
    Measured {
        samples: Vec<Timed<S>>,
        /// True if and only if sampling stopped because the precision was reached.
        precise: bool,
        /// What a reader of the figures must know about how sampling
        /// stopped (the run's budget ran out before the cell had more than
        /// its minimum samples); stored in the cell's reason column.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    Unsupported {
        reason: String,
    },
    Failed {
        reason: String,
    },
}

impl<S> Outcome<S> {
    pub fn samples(&self) -> &[Timed<S>] {
        match self {
            Outcome::Measured { samples, .. } => samples,
            _ => &[],
        }
    }

    /// How the cell ended.
    pub fn status(&self) -> CellStatus {
        match self {
            Outcome::Measured { .. } => CellStatus::Measured,
            Outcome::Unsupported { .. } => CellStatus::Unsupported,
            Outcome::Failed { .. } => CellStatus::Failed,
        }
    }

    /// Why the cell is not measured (none for a measured cell).
    pub fn reason(&self) -> Option<&str> {
        match self {
            Outcome::Measured { .. } => None,
            Outcome::Unsupported { reason } | Outcome::Failed { reason } => Some(reason),
        }
    }

    /// A measured cell's note on how its sampling stopped (see
    /// [`Outcome::Measured`]).
    pub fn note(&self) -> Option<&str> {
        match self {
            Outcome::Measured { note, .. } => note.as_deref(),
            Outcome::Unsupported { .. } | Outcome::Failed { .. } => None,
        }
    }

    /// What the store's reason column holds: why the cell is not
    /// measured, or a measured cell's note (rows show it among their notes).
    pub fn stored_reason(&self) -> Option<&str> {
        self.reason().or(self.note())
    }

    pub fn precise(&self) -> bool {
        matches!(self, Outcome::Measured { precise: true, .. })
    }

    /// The same end (status, reason, precision) without any sample, for
    /// samples of another kind: a cell that was counted and not timed has
    /// the status its counts had.
    pub fn without_samples<T>(&self) -> Outcome<T> {
        match self {
            Outcome::Measured { precise, note, .. } => Outcome::Measured {
                samples: Vec::new(),
                precise: *precise,
                note: note.clone(),
            },
            Outcome::Unsupported { reason } => Outcome::Unsupported {
                reason: reason.clone(),
            },
            Outcome::Failed { reason } => Outcome::Failed {
                reason: reason.clone(),
            },
        }
    }
}

/// What one cell does per sample; an error fails the cell with its reason.
pub type Probe<'a, S> = Box<dyn FnMut() -> Result<S, String> + 'a>;

/// When a round started, from the start of the run, and how busy the rest
/// of the machine was while it ran.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Round {
    pub index: u32,
    pub offset_ns: u64,
    /// Other processes' CPU use during the round, in CPUs (0.5 = half a
    /// CPU throughout; see [`crate::host::CpuUse`]); `None` where the
    /// machine does not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub others_cpu: Option<f64>,
}

/// How a sampled run ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SampledRun<S> {
    /// One outcome per probe, in the order the probes were given.
    pub outcomes: Vec<Outcome<S>>,
    pub rounds: Vec<Round>,
    /// Ctrl-C stopped the run; cells under way keep what they sampled.
    pub interrupted: bool,
    /// The total budget stopped the run.
    pub out_of_time: bool,
}

/// Told about progress as the run goes, and handed each cell as it finishes.
pub trait Observer<S> {
    /// A cell stopped sampling (or failed); store it now. An error stops the run.
    fn cell_finished(&mut self, index: usize, outcome: &Outcome<S>) -> anyhow::Result<()>;
    /// A round's samples of the cells still sampling, each cell's (by its
    /// probe's index) taken in that round: store them now, so a run killed
    /// later keeps every round that ended. A cell that stopped in the round
    /// is not among them: [`Observer::cell_finished`] has all its samples.
    /// An error stops the run.
    fn round_sampled(&mut self, _round: u32, _taken: &[RoundSamples<'_, S>]) -> anyhow::Result<()> {
        Ok(())
    }
    /// Rounds whose record is final (when each started, and other
    /// processes' CPU use while it ran, read at most every 50 ms), each
    /// handed once, in order, as soon as it is final (at a round's end, and
    /// the rest when sampling ends): store them now, so a run killed later
    /// keeps them. An error stops the run.
    fn rounds_recorded(&mut self, _rounds: &[Round]) -> anyhow::Result<()> {
        Ok(())
    }
    /// A round ended: `active` cells still sample, `finished` have stopped.
    fn round_finished(&mut self, _round: u32, _active: usize, _finished: usize) {}
}

/// The samples one cell (its probe's index) took in one round.
pub type RoundSamples<'a, S> = (usize, &'a [Timed<S>]);

/// An observer that keeps nothing.
pub struct Quietly;

impl<S> Observer<S> for Quietly {
    fn cell_finished(&mut self, _: usize, _: &Outcome<S>) -> anyhow::Result<()> {
        Ok(())
    }
}

/// The rounds' shuffled order, repeatable from the seed a run records.
///
/// rand's Fisher-Yates shuffle over ChaCha8 seeded with
/// [`SeedableRng::seed_from_u64`]. The generator is named rather than
/// `StdRng`, whose algorithm rand may replace: ChaCha8's stream for a key
/// is fixed by the cipher itself. rand keeps `seed_from_u64` and `shuffle`
/// value-stable within a release series and across 32- and 64-bit hosts,
/// and lists a change to either as reproducibility-breaking (0.9 brought a
/// new shuffle). A test pins one order, so an upgrade that would replay
/// recorded seeds differently fails it.
#[derive(Debug, Clone)]
pub struct Shuffler(ChaCha8Rng);

impl Shuffler {
    pub fn new(seed: u64) -> Self {
        Self(ChaCha8Rng::seed_from_u64(seed))
    }

    /// Shuffles in place, each order equally likely.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        items.shuffle(&mut self.0);
    }
}

/// A seed for a run that does not set one, from the operating system's
/// random source (through rand's thread-local generator).
pub fn fresh_seed() -> u64 {
    rand::random()
}

struct CellState<'a, S> {
    probe: Probe<'a, S>,
    samples: Vec<Timed<S>>,
    /// How many of `samples` the observer has had (at the end of a round).
    handed: usize,
    /// Samples per round.
    batch: usize,
    /// Time spent in this cell's samples.
    spent: Duration,
    active: bool,
    /// The run's budget ran out before this cell had its minimum samples.
    short_of_the_budget: bool,
}

/// Where the sampler reads the time: the machine's monotonic clock, or in
/// tests one that moves only as the probes move it.
pub trait Clock {
    /// The time since some fixed start.
    fn now(&self) -> Duration;
}

/// The machine's monotonic clock ([`Instant`]).
pub struct SystemClock(Instant);

impl SystemClock {
    pub fn new() -> Self {
        Self(Instant::now())
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }
}

/// Which cell each cell's ratio is taken against, if any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Pairing {
    /// No ratios: each cell stops on its own median.
    #[default]
    None,
    /// Every cell against this one.
    One(usize),
    /// Per cell, its baseline (a cell that is its own baseline has none).
    PerCell(Vec<Option<usize>>),
}

impl Pairing {
    /// The baseline of cell `index`, never the cell itself.
    pub fn baseline_of(&self, index: usize) -> Option<usize> {
        match self {
            Pairing::None => None,
            Pairing::One(b) => Some(*b),
            Pairing::PerCell(bases) => bases.get(index).copied().flatten(),
        }
        .filter(|&b| b != index)
    }
}

/// Samples every probe in interleaved rounds until each is precise or out
/// of time. `pairing` says which cell each cell's ratio is taken against: a
/// cell is only precise once its ratio to its baseline is, and a baseline
/// samples as long as any cell paired with it does.
pub fn sample<S: Sampled>(
    probes: Vec<Probe<'_, S>>,
    pairing: Pairing,
    options: &SamplingOptions,
    interrupt: &AtomicBool,
    observer: &mut dyn Observer<S>,
) -> anyhow::Result<SampledRun<S>> {
    sample_on(
        probes,
        pairing,
        options,
        interrupt,
        observer,
        &SystemClock::new(),
    )
}

/// [`sample`] with the time read from `clock`.
pub fn sample_on<S: Sampled>(
    probes: Vec<Probe<'_, S>>,
    pairing: Pairing,
    options: &SamplingOptions,
    interrupt: &AtomicBool,
    observer: &mut dyn Observer<S>,
    clock: &dyn Clock,
) -> anyhow::Result<SampledRun<S>> {
    let mut sampler = Sampler::new(probes, pairing, options, interrupt, observer, clock);
    sampler.warm_up()?;
    sampler.sample_rounds()?;
    sampler.finish()
}

/// One call of [`sample`] under way: the cells, what became of those that
/// stopped, and the rounds so far. Its methods are the run's stages in
/// order: warm-up, rounds, and the end for cells still sampling.
struct Sampler<'p, 'r, S> {
    cells: Vec<CellState<'p, S>>,
    /// Per cell, its outcome once it stopped (handed to the observer then).
    outcomes: Vec<Option<Outcome<S>>>,
    pairing: Pairing,
    /// Per cell, true if and only if some other cell's ratio is taken against it.
    is_baseline: Vec<bool>,
    options: &'r SamplingOptions,
    interrupt: &'r AtomicBool,
    observer: &'r mut dyn Observer<S>,
    clock: &'r dyn Clock,
    /// When the run started, on `clock`.
    start: Duration,
    run: SampledRun<S>,
}

impl<'p, 'r, S: Sampled> Sampler<'p, 'r, S> {
    fn new(
        probes: Vec<Probe<'p, S>>,
        pairing: Pairing,
        options: &'r SamplingOptions,
        interrupt: &'r AtomicBool,
        observer: &'r mut dyn Observer<S>,
        clock: &'r dyn Clock,
    ) -> Self {
        let count = probes.len();
        let mut is_baseline = vec![false; count];
        for index in 0..count {
            if let Some(base) = pairing.baseline_of(index) {
                is_baseline[base] = true;
            }
        }
        Self {
            cells: probes
                .into_iter()
                .map(|probe| CellState {
                    probe,
                    samples: Vec::new(),
                    handed: 0,
                    batch: 1,
                    spent: Duration::ZERO,
                    active: true,
                    short_of_the_budget: false,
                })
                .collect(),
            outcomes: (0..count).map(|_| None).collect(),
            pairing,
            is_baseline,
            options,
            interrupt,
            observer,
            clock,
            start: clock.now(),
            run: SampledRun {
                outcomes: Vec::new(),
                rounds: Vec::new(),
                interrupted: false,
                out_of_time: false,
            },
        }
    }

    /// True if and only if Ctrl-C was pressed.
    fn interrupted(&self) -> bool {
        self.interrupt.load(Ordering::Relaxed)
    }

    /// The time since the run started.
    fn elapsed(&self) -> Duration {
        self.clock.now().saturating_sub(self.start)
    }

    /// True if and only if the run's total budget is spent.
    fn total_time_spent(&self) -> bool {
        self.options
            .max_total_time
            .is_some_and(|budget| self.elapsed() >= budget)
    }

    /// The samples a cell takes before anything but Ctrl-C or a failure
    /// stops it, the run's budget included: `min_samples` (at least one),
    /// or the fixed count if that is fewer.
    fn minimum_samples(&self) -> usize {
        let minimum = self.options.min_samples.max(1);
        self.options.runs.map_or(minimum, |runs| runs.min(minimum))
    }

    /// Cell `index` stopped: the observer stores its outcome now.
    fn finish_cell(&mut self, index: usize, outcome: Outcome<S>) -> anyhow::Result<()> {
        self.cells[index].active = false;
        self.observer.cell_finished(index, &outcome)?;
        self.outcomes[index] = Some(outcome);
        Ok(())
    }

    /// Warms up every cell in turn, which also sizes each cell's batch to
    /// about one slice; a cell whose probe fails here fails. Once the
    /// run's budget is spent, a cell's warm-up is its one call.
    fn warm_up(&mut self) -> anyhow::Result<()> {
        for index in 0..self.cells.len() {
            if self.interrupted() {
                break;
            }
            let warmup = if self.total_time_spent() {
                Duration::ZERO
            } else {
                self.options.warmup
            };
            self.warm_up_cell(index, warmup)?;
        }
        Ok(())
    }

    /// Calls cell `index`'s probe for `warmup` (at least once).
    fn warm_up_cell(&mut self, index: usize, warmup: Duration) -> anyhow::Result<()> {
        let interrupt = self.interrupt;
        let clock = self.clock;
        let cell = &mut self.cells[index];
        let warm = clock.now();
        let mut calls = 0u32;
        let mut failure = None;
        while calls == 0 || clock.now().saturating_sub(warm) < warmup {
            if let Err(reason) = (cell.probe)() {
                // After Ctrl-C a failure is the interrupt's doing (it may
                // have reached the server measured): not the cell's.
                if !interrupt.load(Ordering::SeqCst) {
                    failure = Some(reason);
                }
                break;
            }
            calls += 1;
            if interrupt.load(Ordering::Relaxed) {
                break;
            }
        }
        if let Some(reason) = failure {
            return self.finish_cell(index, Outcome::Failed { reason });
        }
        let per_call = clock.now().saturating_sub(warm) / calls.max(1);
        cell.batch = if self.options.runs.is_some() {
            1
        } else {
            (self.options.slice.as_nanos() / per_call.as_nanos().max(1)).clamp(1, 10_000) as usize
        };
        Ok(())
    }

    /// Samples in rounds, each in a fresh shuffled order of the cells still
    /// sampling, until every cell stopped or Ctrl-C; once the total budget
    /// is spent, a cell stops as soon as it has its minimum samples.
    /// Records when each round started and how busy the rest of the
    /// machine was.
    fn sample_rounds(&mut self) -> anyhow::Result<()> {
        let count = self.cells.len();
        // Which cells are done is checked baselines last, so that a baseline
        // stops in the round its last paired cell stops.
        let (bases, mut check_order): (Vec<usize>, Vec<usize>) =
            (0..count).partition(|&i| self.is_baseline[i]);
        check_order.extend(bases);

        let mut shuffler = Shuffler::new(self.options.seed);
        let mut order: Vec<usize> = Vec::with_capacity(count);
        let mut round: u32 = 0;
        let mut other_work = OtherWorkMeter::start();
        // How many rounds the observer has had (see Observer::rounds_recorded).
        let mut rounds_handed = 0;
        loop {
            if self.interrupted() {
                self.run.interrupted = true;
                break;
            }
            if self.total_time_spent() && !self.run.out_of_time {
                self.run.out_of_time = true;
                self.stop_cells_for_the_budget()?;
            }
            order.clear();
            order.extend((0..count).filter(|&i| self.cells[i].active));
            if order.is_empty() {
                break;
            }
            shuffler.shuffle(&mut order);
            self.run.rounds.push(Round {
                index: round,
                offset_ns: self.elapsed().as_nanos() as u64,
                others_cpu: None,
            });
            self.take_batches(round, &order)?;
            self.stop_cells_that_are_done(&check_order)?;
            self.hand_round_samples(round)?;
            other_work.round_ends(&mut self.run.rounds);
            self.hand_recorded_rounds(&mut rounds_handed, other_work.settled(&self.run.rounds))?;
            let active = self.cells.iter().filter(|c| c.active).count();
            self.observer.round_finished(round, active, count - active);
            round += 1;
        }
        other_work.finish(&mut self.run.rounds);
        self.hand_recorded_rounds(&mut rounds_handed, self.run.rounds.len())
    }

    /// Hands the observer the rounds from `handed` up to `settled` (those
    /// whose record became final since the last hand-over).
    fn hand_recorded_rounds(&mut self, handed: &mut usize, settled: usize) -> anyhow::Result<()> {
        if settled > *handed {
            self.observer
                .rounds_recorded(&self.run.rounds[*handed..settled])?;
            *handed = settled;
        }
        Ok(())
    }

    /// One round: a batch of samples from each cell in `order` (once the
    /// budget is spent, no more than the cell still needs for its
    /// minimum); a cell whose probe fails fails (after Ctrl-C, as in the
    /// warm-up, it keeps what it had).
    fn take_batches(&mut self, round: u32, order: &[usize]) -> anyhow::Result<()> {
        let minimum = self.minimum_samples();
        let clock = self.clock;
        for &index in order {
            if self.interrupted() {
                break;
            }
            let out_of_time = self.run.out_of_time;
            let cell = &mut self.cells[index];
            let batch = if out_of_time {
                cell.batch.min(minimum.saturating_sub(cell.samples.len()))
            } else {
                cell.batch
            };
            let began = clock.now();
            let mut failure = None;
            for _ in 0..batch {
                match (cell.probe)() {
                    Ok(value) => cell.samples.push(Timed { round, value }),
                    Err(_) if self.interrupt.load(Ordering::SeqCst) => break,
                    Err(reason) => {
                        failure = Some(reason);
                        break;
                    }
                }
            }
            cell.spent += clock.now().saturating_sub(began);
            if let Some(reason) = failure {
                self.finish_cell(index, Outcome::Failed { reason })?;
            }
        }
        Ok(())
    }

    /// After a round, hands the observer what each cell still sampling
    /// took in it (the cells that stopped were handed over whole).
    fn hand_round_samples(&mut self, round: u32) -> anyhow::Result<()> {
        let taken: Vec<RoundSamples<'_, S>> = self
            .cells
            .iter()
            .enumerate()
            .filter(|(_, cell)| cell.active && cell.samples.len() > cell.handed)
            .map(|(index, cell)| (index, &cell.samples[cell.handed..]))
            .collect();
        if !taken.is_empty() {
            self.observer.round_sampled(round, &taken)?;
        }
        for cell in self.cells.iter_mut().filter(|cell| cell.active) {
            cell.handed = cell.samples.len();
        }
        Ok(())
    }

    /// After a round, stops each cell that has enough samples and is
    /// precise or out of its own time (or reached the fixed count), in
    /// `check_order`; a baseline goes on while a cell paired with it does.
    fn stop_cells_that_are_done(&mut self, check_order: &[usize]) -> anyhow::Result<()> {
        // The baselines' round medians, while they still sample (a finished
        // baseline's samples have gone to its outcome and pair no longer).
        let baseline_costs: Vec<Option<Vec<(u32, f64)>>> = (0..self.cells.len())
            .map(|index| {
                self.pairing
                    .baseline_of(index)
                    .filter(|&b| self.cells[b].active)
                    .map(|b| stats::round_medians(&costs(&self.cells[b].samples)))
            })
            .collect();
        for &index in check_order {
            if !self.cells[index].active {
                continue;
            }
            let baseline = baseline_costs[index].as_deref();
            let n = self.cells[index].samples.len();
            let done = match self.options.runs {
                _ if self.run.out_of_time => n >= self.minimum_samples(),
                Some(runs) => n >= runs,
                None => {
                    let enough = n >= self.options.min_samples.max(1);
                    let out_of_time = self.cells[index].spent >= self.options.max_time;
                    enough && (out_of_time || self.precise(index, baseline))
                }
            };
            // A baseline pairs with its cells: it goes on while they do
            // (not past the budget: it has its minimum, and so do they).
            let paired_go_on = self.is_baseline[index]
                && self.options.runs.is_none()
                && !self.run.out_of_time
                && self.paired_cells_active(index);
            if done && !paired_go_on {
                let note = self.cells[index]
                    .short_of_the_budget
                    .then(|| short_budget_note(n));
                let outcome = Outcome::Measured {
                    precise: self.precise(index, baseline),
                    samples: std::mem::take(&mut self.cells[index].samples),
                    note,
                };
                self.finish_cell(index, outcome)?;
            }
        }
        Ok(())
    }

    /// The run's budget is spent: each cell still sampling that has its
    /// minimum samples stops with them; the others go on to their minimum
    /// (and will say the budget was short).
    fn stop_cells_for_the_budget(&mut self) -> anyhow::Result<()> {
        let minimum = self.minimum_samples();
        for index in 0..self.cells.len() {
            let cell = &mut self.cells[index];
            if !cell.active {
                continue;
            }
            if cell.samples.len() < minimum {
                cell.short_of_the_budget = true;
                continue;
            }
            let values: Vec<f64> = cell.samples.iter().map(|t| t.value.cost()).collect();
            let outcome = Outcome::Measured {
                precise: stats::median_precision(&values) <= self.options.precision,
                samples: std::mem::take(&mut cell.samples),
                note: None,
            };
            self.finish_cell(index, outcome)?;
        }
        Ok(())
    }

    /// True if and only if the 95% interval of cell `index`'s median, and of
    /// its ratio to its baseline's round medians (`baseline`, if any), is
    /// within the precision asked for.
    fn precise(&self, index: usize, baseline: Option<&[(u32, f64)]>) -> bool {
        let samples = &self.cells[index].samples;
        let values: Vec<f64> = samples.iter().map(|t| t.value.cost()).collect();
        if stats::median_precision(&values) > self.options.precision {
            return false;
        }
        match baseline {
            Some(base) => stats::paired_ratio(&stats::round_medians(&costs(samples)), base)
                .is_some_and(|r| r.precision() <= self.options.precision),
            None => true,
        }
    }

    /// True if and only if a cell paired with baseline `base` still samples.
    fn paired_cells_active(&self, base: usize) -> bool {
        (0..self.cells.len())
            .any(|i| self.cells[i].active && self.pairing.baseline_of(i) == Some(base))
    }

    /// Ends the run: cells still sampling when Ctrl-C stopped it keep what
    /// they have (one without a sample fails, saying why).
    fn finish(mut self) -> anyhow::Result<SampledRun<S>> {
        for index in 0..self.cells.len() {
            if self.outcomes[index].is_some() {
                continue;
            }
            let cell = &mut self.cells[index];
            let values: Vec<f64> = cell.samples.iter().map(|t| t.value.cost()).collect();
            let outcome = if cell.samples.is_empty() {
                Outcome::Failed {
                    reason: "interrupted before its first sample".to_string(),
                }
            } else {
                Outcome::Measured {
                    precise: stats::median_precision(&values) <= self.options.precision,
                    samples: std::mem::take(&mut cell.samples),
                    note: None,
                }
            };
            self.finish_cell(index, outcome)?;
        }
        self.run.outcomes = self
            .outcomes
            .into_iter()
            .map(|o| o.expect("every cell has an outcome"))
            .collect();
        Ok(self.run)
    }
}

/// Reads other processes' CPU use for the rounds (see
/// [`crate::host::CpuUse`]), at most every [`OtherWorkMeter::EVERY`]: a
/// reading costs tens of microseconds, which rounds of one short sample
/// must not pay each time. The rounds between two readings share the
/// stretch's figure.
struct OtherWorkMeter {
    last: Option<crate::host::CpuUse>,
    /// The first round not yet given a figure.
    pending_from: usize,
}

impl OtherWorkMeter {
    const EVERY: Duration = Duration::from_millis(50);

    fn start() -> Self {
        Self {
            last: crate::host::CpuUse::now(),
            pending_from: 0,
        }
    }

    /// After a round: reads if the last reading is old enough.
    fn round_ends(&mut self, rounds: &mut [Round]) {
        if self.last.is_some_and(|last| last.age() >= Self::EVERY) {
            self.read(rounds);
        }
    }

    /// How many of `rounds` (from the first) have their final record: those
    /// a reading has given a figure, or all of them where the machine does
    /// not say (no reading will come).
    fn settled(&self, rounds: &[Round]) -> usize {
        if self.last.is_some() {
            self.pending_from
        } else {
            rounds.len()
        }
    }

    /// At the end of the run: every round left gets a figure.
    fn finish(&mut self, rounds: &mut [Round]) {
        self.read(rounds);
    }

    fn read(&mut self, rounds: &mut [Round]) {
        let now = crate::host::CpuUse::now();
        if let (Some(before), Some(after)) = (self.last, now) {
            let others = after.others_since(&before);
            for round in rounds.iter_mut().skip(self.pending_from) {
                round.others_cpu = Some(others);
            }
        }
        self.pending_from = rounds.len();
        self.last = now;
    }
}

/// The note of a cell the run's budget left short of its minimum: it took
/// its `samples` past the budget.
pub fn short_budget_note(samples: usize) -> String {
    let (noun, verb) = if samples == 1 {
        ("sample", "was")
    } else {
        ("samples", "were")
    };
    format!("the time budget ran out: only the minimum {samples} {noun} {verb} taken")
}

/// The run was interrupted (Ctrl-C).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("interrupted")]
pub struct Interrupted;

#[cfg(test)]
mod tests;
