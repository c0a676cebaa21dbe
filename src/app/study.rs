//! One study pipeline for every measuring command. A command says what
//! differs ([`Study`]: its plan from the command line, what it stores with
//! the run, how it measures its cells, how its tables read live and read
//! back); [`run`] does the rest in one place: the store and the run's
//! provenance, Ctrl-C, saving what is measured as it is taken (each round
//! of a sampled matrix as it ends, with its record of other work on the
//! machine, each cell as it finishes), printing and exporting, and the exit
//! status.
//!
//! A storage fault (a full disk, a lock held too long, a file made
//! read-only) does not stop the measuring: the first one is said at once,
//! later saves are skipped, the tables are printed and exported all the
//! same, and the run then exits 1 naming the database.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use anyhow::Result;

use super::session::{
    check_exports, empty_shard, finish, interrupt_flag, open_store, run_info, Bar,
};
use crate::backend::LibraryInfo;
use crate::cli::{DatabaseArgs, DisplayArgs, ExportArgs, OutputArgs};
use crate::host::HostInfo;
use crate::measure::{Observer, Outcome, Round, RoundSamples, Timed};
use crate::report::Document;
use crate::scenario::Shard;
use crate::store::{RunKind, Store, StoredRun};
use crate::workload::handshake::{CellResult, MatrixObserver, Sample};

/// What a study is planned into from its command line.
pub(crate) enum Plan<S> {
    /// A run to make.
    Run(S),
    /// The shard holds no cell of the matrix: nothing runs, exit 0.
    EmptyShard(Shard),
}

/// Where a run's results go: the database, the export files, the terminal.
pub(crate) struct Outputs<'a> {
    pub database: &'a DatabaseArgs,
    pub exports: &'a ExportArgs,
    pub display: &'a DisplayArgs,
    pub quiet: bool,
}

impl<'a> Outputs<'a> {
    /// Where a command's output options send its results; `quiet` is its
    /// `--quiet` (a progress bar, progress lines: each command says).
    pub fn of(options: &'a OutputArgs, quiet: bool) -> Self {
        Self {
            database: &options.database,
            exports: &options.exports,
            display: &options.display,
            quiet,
        }
    }
}

/// What a stored or finished run is, for its document: which run, whether
/// it completed, and where it ran.
pub(crate) struct RunView<'a> {
    /// The run's id in a database on disk (`None` with `--no-db`).
    pub run_id: Option<i64>,
    pub complete: bool,
    pub host: &'a HostInfo,
    pub libraries: &'a [LibraryInfo],
}

/// What differs between the measuring commands.
pub(crate) trait Study: Sized {
    /// The command line it is planned from.
    type Args;
    /// One measured cell, as the study keeps it.
    type Cell;
    /// The kind of run it stores.
    const KIND: RunKind;

    /// The plan, every option checked: a usage error here stops the
    /// command before anything is stored or measured.
    fn plan(args: &Self::Args) -> Result<Plan<Self>>;

    /// Where the command's results go.
    fn outputs(args: &Self::Args) -> Outputs<'_>;

    /// The options stored with the run, as JSON.
    fn options_json(&self) -> Result<String>;

    /// The libraries (or programs) the run measures.
    fn libraries(&self) -> Vec<LibraryInfo>;

    /// Measures every cell, saving what it takes through `session` as it
    /// is taken (a sampled matrix round by round, see [`StoringOutcomes`];
    /// other cells as each finishes); stops early (keeping what it has)
    /// when `session` says Ctrl-C came.
    fn measure(&mut self, session: &mut Session) -> Result<Vec<Self::Cell>>;

    /// The run's document, from the cells measured.
    fn document(&self, run: &RunView<'_>, cells: &[Self::Cell]) -> Result<Document>;

    /// Returns true if and only if the cell failed (the run then exits 1).
    fn failed(cell: &Self::Cell) -> bool;

    /// What a run Ctrl-C stopped keeps, in words.
    fn kept(cells: &[Self::Cell]) -> String {
        format!(
            "{} cells kept (cells still sampling keep the samples they had)",
            cells.len()
        )
    }

    /// A stored run of this kind as the document it printed (for `report`);
    /// `baseline` is `report --baseline`.
    fn stored_document(
        store: &Store,
        run: &StoredRun,
        baseline: Option<String>,
    ) -> Result<Document>;
}

/// A run in progress: where its cells are saved, and whether Ctrl-C (or
/// SIGTERM, SIGHUP) came.
pub(crate) struct Session {
    store: Store,
    run_id: i64,
    interrupt: Arc<AtomicBool>,
    interrupted: bool,
    /// The run begun for the command holds a part that ended before
    /// Ctrl-C (a load of several): it is stored complete all the same.
    run_finished: bool,
    quiet: bool,
    /// The first storage fault, if any: later saves are skipped.
    fault: Option<anyhow::Error>,
}

impl Session {
    fn new(store: Store, run_id: i64, quiet: bool) -> Self {
        Self {
            store,
            run_id,
            interrupt: interrupt_flag(),
            interrupted: false,
            run_finished: false,
            quiet,
            fault: None,
        }
    }

    /// Saves something of the run, unless an earlier save failed. A
    /// failure is said once and kept for the end: the measuring goes on.
    pub(crate) fn save(&mut self, save: impl FnOnce(&mut Store, i64) -> Result<()>) {
        if self.fault.is_some() {
            return;
        }
        if let Err(error) = save(&mut self.store, self.run_id) {
            eprintln!(
                "warning: cannot write to the database {}: {error:#}; measuring goes on, and the results are printed and exported at the end",
                self.database()
            );
            self.fault = Some(error);
        }
    }

    /// The flag Ctrl-C sets, for loops and samplers that check it.
    pub(crate) fn interrupt(&self) -> &Arc<AtomicBool> {
        &self.interrupt
    }

    /// Says that a pass stopped on Ctrl-C: the run is stored incomplete.
    pub(crate) fn mark_interrupted(&mut self, interrupted: bool) {
        self.interrupted |= interrupted;
    }

    /// Says that what the run begun for the command holds ended before any
    /// Ctrl-C: that run is stored complete even if a later part (stored as
    /// runs of their own) was interrupted.
    pub(crate) fn mark_run_finished(&mut self) {
        self.run_finished = true;
    }

    /// Returns true if and only if Ctrl-C stopped the run (a pass said so,
    /// or the flag is set).
    pub(crate) fn interrupted(&self) -> bool {
        self.interrupted || self.interrupt.load(Ordering::SeqCst)
    }

    /// Returns true if and only if progress bars are hidden (`--quiet`).
    pub(crate) fn quiet(&self) -> bool {
        self.quiet
    }

    /// A progress bar over `total` cells.
    pub(crate) fn bar(&self, total: usize) -> Bar {
        Bar::new(total, self.quiet)
    }

    /// The database's file, for messages ("the in-memory database" with `--no-db`).
    fn database(&self) -> String {
        self.store
            .path()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "in memory".to_string())
    }

    fn path(&self) -> Option<PathBuf> {
        self.store.path().map(PathBuf::from)
    }
}

/// Runs a measuring command: plans it, measures every cell into the store,
/// prints and exports its document, and returns the exit status (0 done,
/// 1 a failed cell or a storage fault, 130 Ctrl-C).
pub(crate) fn run<S: Study>(args: &S::Args) -> Result<i32> {
    run_planned(S::plan(args)?, S::outputs(args))
}

/// Runs a study already planned (see [`run`]).
pub(crate) fn run_planned<S: Study>(plan: Plan<S>, outputs: Outputs<'_>) -> Result<i32> {
    let mut study = match plan {
        Plan::Run(study) => study,
        Plan::EmptyShard(shard) => return empty_shard(shard),
    };
    check_exports(outputs.exports)?;
    let mut store = open_store(outputs.database)?;
    let host = HostInfo::current();
    let libraries = study.libraries();
    let run_id = store.begin_run(&run_info(S::KIND, study.options_json()?, &host, &libraries))?;
    // Commits cheap enough to make one per round (store::journal).
    store.begin_measuring();
    let mut session = Session::new(store, run_id, outputs.quiet);
    let cells = study.measure(&mut session)?;
    let complete = !session.interrupted();
    let run_finished = complete || session.run_finished;
    session.save(|store, run_id| store.finish_run(run_id, run_finished));
    session.store.end_measuring();
    let view = RunView {
        run_id: session.path().map(|_| run_id),
        complete,
        host: &host,
        libraries: &libraries,
    };
    let document = study.document(&view, &cells)?;
    outputs.display.print(&document)?;
    outputs.exports.write(&document)?;
    if let Some(fault) = session.fault {
        return Err(fault.context(format!(
            "the run could not be stored in {} (its results were printed and exported above)",
            session
                .store
                .path()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "memory".to_string())
        )));
    }
    let failed = cells.iter().filter(|cell| S::failed(cell)).count();
    Ok(finish(
        &session.store,
        run_id,
        !complete,
        &S::kept(&cells),
        failed,
    ))
}

/// Saves a handshake matrix as it is taken, says which cells failed, and
/// keeps the progress bar moving (`handshake`, `cost`): each round's
/// samples of the cells still sampling in one transaction as the round
/// ends, so a kill -9 at any moment keeps every round that ended, and
/// each cell whole as it stops (adding what the rounds stored).
pub(crate) struct StoringCells<'a> {
    pub session: &'a mut Session,
    pub bar: &'a Bar,
}

impl MatrixObserver for StoringCells<'_> {
    fn cell_finished(&mut self, cell: &CellResult) -> Result<()> {
        self.bar.failed(
            &format!("{} {}", cell.subject, cell.scenario.label()),
            &cell.outcome,
        );
        self.session
            .save(|store, run_id| store.save_cell(run_id, cell));
        Ok(())
    }

    fn round_sampled(
        &mut self,
        _round: u32,
        taken: &[(&CellResult, &[Timed<Sample>])],
    ) -> Result<()> {
        self.session
            .save(|store, run_id| store.save_handshake_samples(run_id, taken));
        Ok(())
    }

    fn rounds_recorded(&mut self, rounds: &[Round]) -> Result<()> {
        self.session
            .save(|store, run_id| store.save_rounds(run_id, rounds));
        Ok(())
    }

    fn round_finished(&mut self, round: u32, finished: usize, _total: usize) {
        sigkill_after_round(round);
        self.bar.round(round, finished);
    }
}

/// Saves a sampled matrix as it is taken, says which cells failed, and
/// keeps the progress bar moving (`bulk`, `tunnel`, `speed`, the
/// primitives of `cost`'s model): each round's samples of the cells still
/// sampling in one transaction as the round ends (`save_samples`), so a
/// kill -9 at any moment keeps every round that ended, and each cell
/// whole as it stops (`save`, which adds what the rounds stored). Probe
/// `i` samples cell `probe_cell[i]`, which `outcome` reaches.
pub(crate) struct StoringOutcomes<'a, C, S> {
    pub cells: &'a mut [C],
    pub probe_cell: &'a [usize],
    pub session: &'a mut Session,
    pub bar: &'a Bar,
    /// Cells that ended before sampling began (not runnable), for the bar.
    pub already: usize,
    /// The cell in words, for a failure's line.
    pub label: fn(&C) -> String,
    pub outcome: fn(&mut C) -> &mut Outcome<S>,
    pub save: fn(&mut Store, i64, &C) -> Result<()>,
    /// Stores one round's samples of cells still sampling, each beside its
    /// cell (the cell stored at its first round, as still sampling).
    pub save_samples: SaveSamples<C, S>,
    /// The rounds are the run's (not those of a pass inside it, such as
    /// the primitives of `cost`'s model): each is stored as it is recorded.
    pub store_rounds: bool,
}

/// How a study stores one round's samples: per cell still sampling, the
/// samples it took in the round, all in one transaction.
pub(crate) type SaveSamples<C, S> = fn(&mut Store, i64, &[(&C, &[Timed<S>])]) -> Result<()>;

impl<C, S: Clone> Observer<S> for StoringOutcomes<'_, C, S> {
    fn cell_finished(&mut self, index: usize, outcome: &Outcome<S>) -> Result<()> {
        let cell = &mut self.cells[self.probe_cell[index]];
        *(self.outcome)(cell) = outcome.clone();
        self.bar.failed(&(self.label)(cell), outcome);
        let save = self.save;
        self.session.save(|store, run_id| save(store, run_id, cell));
        Ok(())
    }

    fn round_sampled(&mut self, _round: u32, taken: &[RoundSamples<'_, S>]) -> Result<()> {
        let cells = &*self.cells;
        let taken: Vec<(&C, &[Timed<S>])> = taken
            .iter()
            .map(|(index, samples)| (&cells[self.probe_cell[*index]], *samples))
            .collect();
        let save_samples = self.save_samples;
        self.session
            .save(|store, run_id| save_samples(store, run_id, &taken));
        Ok(())
    }

    fn rounds_recorded(&mut self, rounds: &[Round]) -> Result<()> {
        if self.store_rounds {
            self.session
                .save(|store, run_id| store.save_rounds(run_id, rounds));
        }
        Ok(())
    }

    fn round_finished(&mut self, round: u32, _active: usize, finished: usize) {
        sigkill_after_round(round);
        self.bar.round(round, self.already + finished);
    }
}

/// For tests: `TLSLAB_TEST_SIGKILL_AFTER_ROUNDS=N` makes the process kill
/// itself with SIGKILL once round N has ended and been stored, as a
/// `kill -9` would at that moment (no handler runs, nothing is flushed),
/// so that what a killed run keeps is tested at a known point of a run
/// instead of after a guessed sleep (Ctrl-C: `TLSLAB_TEST_SIGINT_AFTER_ROUNDS`).
fn sigkill_after_round(round: u32) {
    static AFTER: OnceLock<Option<u32>> = OnceLock::new();
    let after = AFTER.get_or_init(|| {
        std::env::var("TLSLAB_TEST_SIGKILL_AFTER_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
    });
    if *after == Some(round + 1) {
        // SAFETY: the process ends here, as a kill -9 would end it.
        unsafe { libc::raise(libc::SIGKILL) };
    }
}
