//! `tlslab compare A B`: two stored runs of one kind (handshake, speed,
//! tunnel, bulk, cost or load) row by row, with a verdict per row and an
//! exit status a CI job can gate on: 0 when no row is slower beyond the
//! threshold, 1 when one is, 2 for bad options. Counted runs (handshake,
//! speed, bulk, tunnel with `--measure instructions`) are compared on
//! their counts, with a threshold that suits counts.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::session::{check_exports, usage};
use crate::cli::{CompareArgs, Percent};
use crate::measure::{CellStatus, Outcome, Sampled, Timed};
use crate::report::compare::{self, Cell, Kind, Run};
use crate::report::cost::{CostRow, COMPARED_AXES as COST_AXES};
use crate::report::{self, axis_cells};
use crate::scenario::{HandshakeScenario, Measure, Named, Subject};
use crate::store::{RunKind, Store};
use crate::workload::bulk::BulkSample;
use crate::workload::counted::Instructions;
use crate::workload::load::PHASE_IDS;

/// A run named on the command line: "ID" in the default database, or "FILE:ID".
fn run_spec(text: &str, default_db: &Path) -> Result<(PathBuf, i64)> {
    if let Ok(id) = text.parse() {
        return Ok((default_db.to_path_buf(), id));
    }
    text.rsplit_once(':')
        .and_then(|(file, id)| Some((PathBuf::from(file), id.parse().ok()?)))
        .filter(|(file, _)| !file.as_os_str().is_empty())
        .ok_or_else(|| {
            usage(format!(
                "'{text}' is not a run: give its id (3) or a database and an id (other.sqlite:3)"
            ))
        })
}

/// Opens a database that must already exist (nothing is created for a
/// typo) to read it: the file is never changed.
pub(super) fn open_existing(path: &Path) -> Result<Store> {
    if !path.exists() {
        return Err(usage(format!("there is no database at {}", path.display())));
    }
    Store::open_read_only(path)
}

/// What a run kind's rows measure (by `measure`), as the kind's view
/// says, or a usage error for a kind compare cannot read or a figure the
/// kind does not have.
fn kind_of(name: RunKind, measure: Measure) -> Result<Kind> {
    if let Some(kind) = compare::kind_of(name, measure) {
        return Ok(kind);
    }
    if measure == Measure::Time {
        return Err(usage(format!(
            "compare reads handshake, speed, tunnel, bulk, cost and load runs; this is a {name} run"
        )));
    }
    let compared: Vec<&str> = RunKind::ALL
        .into_iter()
        .filter(|k| compare::kind_of(*k, measure).is_some())
        .map(RunKind::id)
        .collect();
    Err(usage(format!(
        "--measure {} compares {} runs; a {name} run is compared on time",
        measure.id(),
        compared.join(", ")
    )))
}

/// A cell of any kind, reduced to its status and its samples' costs.
fn cell<S: Sampled>(
    subject: Subject,
    label: String,
    axes: Vec<String>,
    outcome: &Outcome<S>,
    samples: &[Timed<S>],
) -> Cell {
    Cell {
        subject: Some(subject),
        name: subject.name(),
        label,
        axes,
        status: outcome.status(),
        reason: outcome.reason().map(String::from),
        costs: samples.iter().map(|s| s.value.cost()).collect(),
        tested: true,
    }
}

/// The end of a row that `measure` was not counted in.
fn not_counted(measure: Measure) -> Outcome<Instructions> {
    Outcome::Unsupported {
        reason: format!("{} was not counted in this run", measure.id()),
    }
}

/// A handshake run's cells (also the handshakes of a cost run), with the
/// axes `axes` makes of each scenario, on the figure `measure` names.
fn handshake_cells(
    stored: &crate::store::StoredRun,
    axes: fn(&HandshakeScenario) -> Vec<String>,
    measure: Measure,
) -> Vec<Cell> {
    let mut cells = stored.cells.clone();
    cells.sort_by_key(|c| (c.scenario, c.subject.name()));
    let not_counted = || not_counted(measure);
    cells
        .iter()
        .map(|c| {
            let (label, axes) = (c.scenario.label(), axes(&c.scenario));
            match measure {
                Measure::Time => cell(c.subject, label, axes, &c.outcome, c.samples()),
                Measure::Instructions => match &c.counts.instructions {
                    Some(outcome) => cell(c.subject, label, axes, outcome, outcome.samples()),
                    None => cell(c.subject, label, axes, &not_counted(), &[]),
                },
                Measure::Memory => match &c.counts.memory {
                    Some(outcome) => cell(c.subject, label, axes, outcome, outcome.samples()),
                    None => cell(c.subject, label, axes, &not_counted(), &[]),
                },
            }
        })
        .collect()
}

/// The figure two runs are compared on: `--measure`, else instructions
/// when both runs counted them, else time.
fn measure_of(asked: Option<Measure>, counted: [bool; 2]) -> Measure {
    match asked {
        Some(measure) => measure,
        None if counted.iter().all(|c| *c) => Measure::Instructions,
        None => Measure::Time,
    }
}

/// A speed run's cells, with the axes `axes` makes of each row, on time
/// per operation or on counted instructions per operation.
fn speed_cells(
    store: &Store,
    id: i64,
    axes: fn(&crate::scenario::speed::SpeedRow) -> Vec<String>,
    measure: Measure,
) -> Result<Vec<Cell>> {
    let mut cells = store.load_speed_cells(id)?;
    cells.sort_by_key(|c| (c.row, c.subject.name()));
    Ok(cells
        .iter()
        .map(|c| {
            let (label, axes) = (c.row.label(), axes(&c.row));
            if measure == Measure::Time {
                return cell(c.subject, label, axes, &c.outcome, c.outcome.samples());
            }
            match &c.counted {
                Some(counted) => Cell {
                    costs: counted.per_operation(),
                    ..cell(c.subject, label, axes, &counted.outcome, &[])
                },
                None => cell(c.subject, label, axes, &not_counted(measure), &[]),
            }
        })
        .collect())
}

/// A tunnel run's cells, on both ends' CPU time per byte or on their
/// counted instructions per MB.
fn tunnel_cells(store: &Store, id: i64, measure: Measure) -> Result<Vec<Cell>> {
    Ok(store
        .load_tunnel_cells(id)?
        .iter()
        .map(|c| {
            let (engine, label) = (Subject::Engine(c.row_engine()), c.scenario.label());
            let axes = crate::report::tunnel::axis_cells(&c.scenario);
            if measure == Measure::Time {
                return cell(engine, label, axes, &c.outcome, c.samples());
            }
            match &c.counted {
                Some(counted) => Cell {
                    costs: counted.per_mb(|s| s.client + s.server),
                    ..cell(engine, label, axes, &counted.outcome, &[])
                },
                None => cell(engine, label, axes, &not_counted(measure), &[]),
            }
        })
        .collect())
}

/// One side's CPU nanoseconds per byte of a bulk sample.
type PerByte = fn(&BulkSample) -> f64;

/// One side's count in a counted bulk sample.
type SideCount = fn(&Instructions) -> u64;

/// A run's figures without a test, as (name, value).
type Figures = Vec<(String, String)>;

/// A bulk run's cells: two rows per cell, the sender's and the receiver's
/// CPU per byte (nanoseconds per byte are milliseconds per MB), or their
/// counted instructions per byte.
fn bulk_cells(store: &Store, id: i64, measure: Measure) -> Result<Vec<Cell>> {
    let mut cells = Vec::new();
    for c in store.load_bulk_cells(id)? {
        let s = &c.scenario;
        let sides: [(&'static str, PerByte, SideCount); 2] = [
            ("sender", BulkSample::sender_ns_per_byte, |i| i.client),
            ("receiver", BulkSample::receiver_ns_per_byte, |i| i.server),
        ];
        let bytes = c.counted_bytes.max(1) as f64;
        let not_counted = not_counted(measure);
        for (side, per_byte, counted) in sides {
            let axes = axis_cells(&report::bulk::COMPARED_AXES, &(*s, side));
            let label = format!("{}_{side}", s.label());
            cells.push(if measure == Measure::Time {
                Cell {
                    costs: c.samples().iter().map(|t| per_byte(&t.value)).collect(),
                    ..cell(c.subject, label, axes, &c.outcome, &[])
                }
            } else {
                let outcome = c.instructions.as_ref().unwrap_or(&not_counted);
                Cell {
                    costs: outcome
                        .samples()
                        .iter()
                        .map(|t| counted(&t.value) as f64 / bytes)
                        .collect(),
                    ..cell(c.subject, label, axes, outcome, &[])
                }
            });
        }
    }
    Ok(cells)
}

/// A load run's rows, per phase its p50 (every request's latency, tested)
/// and its p99 (one figure), and its plan and rates as untested figures.
fn load_rows(store: &Store, id: i64) -> Result<(Vec<Cell>, Figures)> {
    let record = store.load_load(id)?.ok_or_else(|| {
        usage(format!(
            "load run {id} stored no results (it broke before the load ended)"
        ))
    })?;
    let mut cells = Vec::new();
    for (phase, histogram) in PHASE_IDS.iter().zip(record.result.latencies.phases()) {
        let mut latencies_us = Vec::with_capacity(histogram.len() as usize);
        for bucket in histogram.iter_recorded() {
            let value = bucket.value_iterated_to() as f64;
            latencies_us.extend(std::iter::repeat_n(value, bucket.count_at_value() as usize));
        }
        let (status, reason) = if histogram.is_empty() {
            (
                CellStatus::Unsupported,
                Some("no request reached this phase".to_string()),
            )
        } else {
            (CellStatus::Measured, None)
        };
        let p99 = (!histogram.is_empty()).then(|| histogram.value_at_percentile(99.0) as f64);
        for (statistic, costs, tested) in [
            ("p50", latencies_us, true),
            ("p99", p99.into_iter().collect(), false),
        ] {
            cells.push(Cell {
                subject: None,
                name: record.server.clone(),
                label: format!("{phase}_{statistic}"),
                axes: axis_cells(&report::load::COMPARED_AXES, &(*phase, statistic)),
                status,
                reason: reason.clone(),
                costs,
                tested,
            });
        }
    }
    let (plan, result) = (&record.plan, &record.result);
    let errors: usize = result.errors.iter().map(|(_, n)| n).sum();
    let figures = vec![
        ("scenario", record.scenario.clone()),
        ("mode", plan.mode.id().to_string()),
        ("offered rate (req/s)", format!("{:.0}", plan.rate)),
        ("ramp (s)", format!("{:.1}", plan.ramp.as_secs_f64())),
        (
            "page (bytes)",
            plan.path.trim_start_matches("/page_").to_string(),
        ),
        ("clients", plan.clients.to_string()),
        (
            "achieved rate, whole run (answers/s)",
            format!("{:.1}", result.achieved_rate()),
        ),
        (
            "achieved rate after the ramp (answers/s)",
            result
                .steady_rate(plan)
                .map_or_else(|| "—".to_string(), |r| format!("{r:.1}")),
        ),
        (
            "answered / errors",
            format!("{} / {errors}", result.answered),
        ),
    ];
    Ok((
        cells,
        figures
            .into_iter()
            .map(|(n, v)| (n.to_string(), v))
            .collect(),
    ))
}

/// A stored run with its cells, ready to compare on `measure`.
fn load(
    store: &Store,
    stored: crate::store::StoredRun,
    kind: RunKind,
    measure: Measure,
) -> Result<Run> {
    let id = stored.id;
    let mut figures = Vec::new();
    let cells = match kind {
        RunKind::Handshake => {
            handshake_cells(&stored, crate::report::handshake::axis_cells, measure)
        }
        RunKind::Speed => speed_cells(
            store,
            id,
            |row| axis_cells(&report::speed::AXES, row),
            measure,
        )?,
        RunKind::Bulk => bulk_cells(store, id, measure)?,
        RunKind::Cost => {
            let mut cells = handshake_cells(
                &stored,
                |scenario| axis_cells(&COST_AXES, &CostRow::Handshake(*scenario)),
                Measure::Time,
            );
            cells.extend(speed_cells(
                store,
                id,
                |row| axis_cells(&COST_AXES, &CostRow::Operation(*row)),
                Measure::Time,
            )?);
            cells
        }
        RunKind::Load => {
            let (cells, plan) = load_rows(store, id)?;
            figures = plan;
            cells
        }
        RunKind::Tunnel => tunnel_cells(store, id, measure)?,
        // kind_of refuses capacity runs before any is loaded.
        RunKind::Capacity => Vec::new(),
    };
    Ok(Run {
        id,
        started_at: stored.started_at,
        status: stored.status,
        host: stored.host,
        libraries: stored.libraries,
        cells,
        figures,
    })
}

/// The gate's default threshold on time: machines drift.
const TIME_THRESHOLD: Percent = Percent::new(5.0);
/// The gate's default threshold on counts: they repeat within hundredths of
/// a percent, so half a percent is a change of the code.
const COUNTED_THRESHOLD: Percent = Percent::new(0.5);

pub fn run(args: &CompareArgs) -> Result<i32> {
    check_exports(&args.exports)?;
    let default_db = args.db.clone().unwrap_or_else(Store::default_path);
    let (path_a, id_a) = run_spec(&args.a, &default_db)?;
    let (path_b, id_b) = run_spec(&args.b, &default_db)?;
    let store_a = open_existing(&path_a)?;
    let store_b = if path_b == path_a {
        None
    } else {
        Some(open_existing(&path_b)?)
    };
    let store_b = store_b.as_ref().unwrap_or(&store_a);
    let kind_in = |store: &Store, id: i64, path: &Path| -> Result<RunKind> {
        store
            .run_kind(id)?
            .ok_or_else(|| usage(format!("there is no run {id} in {}", path.display())))
    };
    let kind_a = kind_in(&store_a, id_a, &path_a)?;
    let kind_b = kind_in(store_b, id_b, &path_b)?;
    if kind_a != kind_b {
        return Err(usage(format!(
            "run {id_a} is a {kind_a} run and run {id_b} a {kind_b} run: compare needs two runs of one kind"
        )));
    }
    let (stored_a, stored_b) = (store_a.load_run(id_a)?, store_b.load_run(id_b)?);
    // A cost run is compared on time (its operations were not counted).
    let countable = compare::kind_of(kind_a, Measure::Instructions).is_some();
    let measure = measure_of(
        args.measure,
        [
            countable && store_a.counted_instructions(id_a, kind_a)?,
            countable && store_b.counted_instructions(id_b, kind_b)?,
        ],
    );
    let kind = kind_of(kind_a, measure)?;
    // Any share from 0% up (the parser refuses negatives).
    let threshold = args
        .threshold
        .unwrap_or(if kind.counted {
            COUNTED_THRESHOLD
        } else {
            TIME_THRESHOLD
        })
        .fraction();
    let a = load(&store_a, stored_a, kind_a, measure)?;
    let b = load(store_b, stored_b, kind_b, measure)?;
    let comparison = compare::compare(kind, a, b, threshold);
    let document = comparison.document();
    args.display.print(&document)?;
    args.exports.write(&document)?;
    Ok(gate(&comparison))
}

/// The exit status a CI job gates on: 1 when a row is slower beyond the
/// threshold, when no row was compared at all (nothing shared, an empty
/// run), or when a row measured in A failed in B; else 0. Each reason is
/// said on standard error.
fn gate(comparison: &compare::Comparison) -> i32 {
    let mut failed = false;
    let slower: Vec<String> = comparison
        .rows
        .iter()
        .filter(|r| r.beyond_threshold)
        .map(|r| format!("{} on {}", r.label, r.name_b))
        .collect();
    if !slower.is_empty() {
        eprintln!(
            "{} row(s) slower beyond the threshold: {}",
            slower.len(),
            slower.join(", ")
        );
        failed = true;
    }
    if comparison.compared() == 0 {
        eprintln!(
            "no row was compared (the runs share no measured row): the gate fails rather than pass on nothing"
        );
        failed = true;
    }
    let broken = comparison.failed_in_b();
    if !broken.is_empty() {
        eprintln!(
            "{} row(s) measured in A failed in B: {}",
            broken.len(),
            broken.join(", ")
        );
        failed = true;
    }
    i32::from(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_names_parse_or_are_refused() {
        let default = Path::new("default.sqlite");
        assert_eq!(run_spec("3", default).unwrap(), (default.to_path_buf(), 3));
        assert_eq!(
            run_spec("other.sqlite:7", default).unwrap(),
            (PathBuf::from("other.sqlite"), 7)
        );
        assert!(run_spec("other.sqlite", default).is_err());
        assert!(run_spec(":7", default).is_err());
    }
}
