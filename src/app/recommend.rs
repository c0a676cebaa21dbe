//! `tlslab recommend`: reads one stored run, prices each row for a role
//! (server or client CPU per handshake, CPU per megabyte through a tunnel
//! or a TLS connection; or, in a counted run, the same in instructions),
//! rates its security (`crate::security`) and prints the Pareto set above
//! the floor and why every other row is out.

use anyhow::Result;

use super::compare::open_existing;
use super::session::{check_exports, usage};
use crate::cli::{RecommendArgs, Role};
use crate::measure::{Outcome, Sampled, Timed};
use crate::report::recommend::{Candidate, CostAxis, Floor, Recommendation};
use crate::scenario::{Measure, Named, Subject};
use crate::security;
use crate::stats::{self, Interval};
use crate::store::{RunKind, Store};
use crate::workload::counted::Instructions;

/// The roles and the run kinds each reads.
const ROLES: &str =
    "server, client (handshake and cost runs), tunnel (tunnel runs), bulk (bulk runs)";

/// The run kinds a role reads (without a role, every kind recommend
/// reads); none for an unknown role.
fn kinds_read(role: Option<Role>) -> Vec<RunKind> {
    match role {
        Some(Role::Server | Role::Client) => vec![RunKind::Handshake, RunKind::Cost],
        Some(Role::Tunnel) => vec![RunKind::Tunnel],
        Some(Role::Bulk) => vec![RunKind::Bulk],
        None => vec![
            RunKind::Handshake,
            RunKind::Cost,
            RunKind::Tunnel,
            RunKind::Bulk,
        ],
    }
}

/// The role a run is priced for when none is asked: its own for tunnel
/// and bulk runs, the server's for handshakes.
fn default_role(kind: RunKind) -> Role {
    match kind {
        RunKind::Tunnel => Role::Tunnel,
        RunKind::Bulk => Role::Bulk,
        RunKind::Handshake | RunKind::Cost | RunKind::Capacity | RunKind::Speed | RunKind::Load => {
            Role::Server
        }
    }
}

/// The cost axis of a role for a run kind, on time or on instructions,
/// or a usage error when the run has no such figure. `why_measure` says
/// why the figure was chosen.
fn cost_axis(role: Role, kind: RunKind, measure: Measure, why_measure: String) -> Result<CostAxis> {
    let axis = match measure {
        Measure::Instructions => counted_axis(role, kind)?,
        _ => timed_axis(role, kind)?,
    };
    Ok(CostAxis {
        measure: measure.id(),
        why_measure,
        ..axis
    })
}

/// The usage error of a role that does not fit the run.
fn role_refused(role: Role, kind: RunKind) -> anyhow::Error {
    usage(format!(
        "the role {role} does not apply to a {kind} run; roles: {ROLES}"
    ))
}

/// A role's cost in counted instructions.
fn counted_axis(role: Role, kind: RunKind) -> Result<CostAxis> {
    let handshake_axes = crate::report::handshake::AXIS_HEADERS.to_vec();
    let axis = |role, header, scale, meaning, backend_header, axis_headers| CostAxis {
        role,
        header,
        scale,
        meaning,
        backend_header,
        axis_headers,
        measure: "instructions",
        why_measure: String::new(),
    };
    Ok(match (role, kind) {
        (Role::Server, RunKind::Handshake | RunKind::Cost) => axis(
            "server",
            "server M instr",
            1e-6,
            "the server's instructions per handshake, counted under valgrind",
            "backend",
            handshake_axes,
        ),
        (Role::Client, RunKind::Handshake | RunKind::Cost) => axis(
            "client",
            "client M instr",
            1e-6,
            "the client's instructions per handshake, counted under valgrind",
            "backend",
            handshake_axes,
        ),
        (Role::Tunnel, RunKind::Tunnel) => axis(
            "tunnel",
            "M instr/MB",
            1e-6,
            "both ends' instructions per megabyte of payload, counted under valgrind (in-process engine)",
            "engine",
            crate::report::tunnel::AXIS_HEADERS.to_vec(),
        ),
        (Role::Bulk, RunKind::Bulk) => axis(
            "bulk",
            "M instr/MB",
            1e-6,
            "both sides' instructions per megabyte of application data, counted under valgrind",
            "backend",
            vec!["protocol", "suite", "write bytes"],
        ),
        _ => return Err(role_refused(role, kind)),
    })
}

/// A role's cost in CPU time.
fn timed_axis(role: Role, kind: RunKind) -> Result<CostAxis> {
    let handshake_axes = crate::report::handshake::AXIS_HEADERS.to_vec();
    Ok(match (role, kind) {
        (Role::Server, RunKind::Handshake | RunKind::Cost) => CostAxis {
            role: "server",
            header: "server CPU µs",
            scale: 1e-3,
            meaning: "the server's CPU time per handshake",
            backend_header: "backend",
            axis_headers: handshake_axes,
            measure: "time",
            why_measure: String::new(),
        },
        (Role::Client, RunKind::Handshake | RunKind::Cost) => CostAxis {
            role: "client",
            header: "client CPU µs",
            scale: 1e-3,
            meaning: "the client's CPU time per handshake",
            backend_header: "backend",
            axis_headers: handshake_axes,
            measure: "time",
            why_measure: String::new(),
        },
        (Role::Tunnel, RunKind::Tunnel) => CostAxis {
            role: "tunnel",
            header: "CPU ms/MB",
            scale: 1.0,
            meaning: "the CPU time of both ends per megabyte of payload (the inverse of throughput per core)",
            backend_header: "engine",
            axis_headers: crate::report::tunnel::AXIS_HEADERS.to_vec(),
            measure: "time",
            why_measure: String::new(),
        },
        (Role::Bulk, RunKind::Bulk) => CostAxis {
            role: "bulk",
            header: "CPU ms/MB",
            scale: 1.0,
            meaning: "both sides' CPU time per megabyte of application data",
            backend_header: "backend",
            axis_headers: vec!["protocol", "suite", "write bytes"],
            measure: "time",
            why_measure: String::new(),
        },
        _ => return Err(role_refused(role, kind)),
    })
}

/// A row's cost: the median of its samples' costs and the median's 95%
/// interval, the sample count, and why the row was not measured if it was
/// not (then no median).
struct RowCost {
    median: Option<f64>,
    interval: Option<Interval>,
    samples: usize,
    not_measured: Option<String>,
}

/// The cost of a row from each sample's cost.
fn row_cost<S>(outcome: &Outcome<S>, samples: &[Timed<S>], cost: impl Fn(&S) -> f64) -> RowCost {
    let mut costs: Vec<f64> = samples.iter().map(|s| cost(&s.value)).collect();
    costs.sort_by(f64::total_cmp);
    let not_measured = outcome
        .reason()
        .map(|reason| format!("{}: {reason}", outcome.status()));
    let measured = outcome.status() == crate::measure::CellStatus::Measured && !costs.is_empty();
    RowCost {
        median: measured.then(|| stats::quantile_sorted(&costs, 0.5)),
        interval: measured.then(|| stats::median_ci95_sorted(&costs)),
        samples: costs.len(),
        not_measured,
    }
}

/// The cost of a row that was not counted, in a run asked to rank on counts.
fn not_counted() -> RowCost {
    row_cost(
        &Outcome::<Instructions>::Unsupported {
            reason: "instructions were not counted for this row".to_string(),
        },
        &[],
        |_| 0.0,
    )
}

/// Every row of the run as a candidate for the role, on time or on
/// counted instructions.
fn candidates(
    store: &Store,
    stored: &crate::store::StoredRun,
    kind: RunKind,
    role: Role,
    measure: Measure,
) -> Result<Vec<Candidate>> {
    let counted = measure == Measure::Instructions;
    // Nanoseconds per byte are milliseconds per megabyte (10^6 bytes);
    // instructions per MB are instructions per byte times 10^6.
    Ok(match kind {
        RunKind::Handshake | RunKind::Cost => stored
            .cells
            .iter()
            .map(|c| {
                let side = |s: &Instructions| match role {
                    Role::Client => s.client as f64,
                    _ => s.server as f64,
                };
                let cost = match (&c.counts.instructions, counted) {
                    (_, false) => row_cost(&c.outcome, c.samples(), |s| match role {
                        Role::Client => s.client_cpu_ns as f64,
                        _ => s.server_cpu_ns as f64,
                    }),
                    (Some(outcome), true) => row_cost(outcome, outcome.samples(), side),
                    (None, true) => not_counted(),
                };
                Candidate {
                    subject: c.subject,
                    label: c.scenario.label(),
                    axes: crate::report::handshake::axis_cells(&c.scenario),
                    workload: String::new(),
                    cost: cost.median,
                    interval: cost.interval,
                    samples: cost.samples,
                    not_measured: cost.not_measured,
                    strength: security::handshake(&c.scenario),
                }
            })
            .collect(),
        RunKind::Tunnel => store
            .load_tunnel_cells(stored.id)?
            .iter()
            .map(|c| {
                let cost = match (&c.counted, counted) {
                    (_, false) => row_cost(&c.outcome, c.samples(), Sampled::cost),
                    (Some(transfer), true) => {
                        let bytes = transfer.payload_bytes.max(1) as f64;
                        row_cost(&transfer.outcome, transfer.outcome.samples(), |s| {
                            (s.client + s.server) as f64 * 1e6 / bytes
                        })
                    }
                    (None, true) => not_counted(),
                };
                Candidate {
                    subject: Subject::Engine(c.row_engine()),
                    label: c.scenario.label(),
                    axes: crate::report::tunnel::axis_cells(&c.scenario),
                    workload: format!(
                        "{} {}",
                        crate::scenario::Named::id(c.scenario.payload),
                        c.scenario.payload_bytes
                    ),
                    cost: cost.median,
                    interval: cost.interval,
                    samples: cost.samples,
                    not_measured: cost.not_measured,
                    strength: security::tunnel(&c.scenario),
                }
            })
            .collect(),
        RunKind::Bulk => store
            .load_bulk_cells(stored.id)?
            .iter()
            .map(|c| {
                let cost = match (&c.instructions, counted) {
                    (_, false) => row_cost(&c.outcome, c.samples(), Sampled::cost),
                    (Some(outcome), true) => {
                        let bytes = c.counted_bytes.max(1) as f64;
                        row_cost(outcome, outcome.samples(), |s| {
                            (s.client + s.server) as f64 * 1e6 / bytes
                        })
                    }
                    (None, true) => not_counted(),
                };
                let (protocol, suite) = (
                    c.scenario.channel.display() + &c.scenario.transport.over_suffix(),
                    c.scenario.suite_name().to_string(),
                );
                Candidate {
                    subject: c.subject,
                    label: c.scenario.label(),
                    axes: vec![protocol, suite, c.scenario.write_bytes.to_string()],
                    workload: c.scenario.write_bytes.to_string(),
                    cost: cost.median,
                    interval: cost.interval,
                    samples: cost.samples,
                    not_measured: cost.not_measured,
                    strength: security::bulk(&c.scenario),
                }
            })
            .collect(),
        // cost_axis refused these kinds before any row is read.
        RunKind::Capacity | RunKind::Speed | RunKind::Load => return Err(role_refused(role, kind)),
    })
}

pub fn run(args: &RecommendArgs) -> Result<i32> {
    check_exports(&args.exports)?;
    let path = args.db.clone().unwrap_or_else(Store::default_path);
    let store = open_existing(&path)?;
    let run_id = match args.run {
        Some(id) => id,
        // The latest run recommend can read (for the role, if given).
        None => {
            let kinds = kinds_read(args.role);
            match store.latest_run_of(&kinds)? {
                Some(id) => id,
                None => {
                    let latest = match store.latest_run_id()? {
                        Some(id) => format!(
                            " (the latest, run {id}, is a {} run)",
                            store.run_kind(id)?.map_or("unknown", RunKind::id)
                        ),
                        None => String::new(),
                    };
                    let kinds: Vec<&str> = kinds.into_iter().map(RunKind::id).collect();
                    return Err(usage(match args.role {
                        Some(role) => format!(
                            "there is no {} run for the role {role} in {}{latest}",
                            kinds.join(" or "),
                            path.display()
                        ),
                        None => format!(
                            "there is no run recommend reads in {}{latest}: it reads {ROLES}",
                            path.display()
                        ),
                    }));
                }
            }
        }
    };
    let kind = store
        .run_kind(run_id)?
        .ok_or_else(|| usage(format!("there is no run {run_id} in {}", path.display())))?;
    let role = args.role.unwrap_or_else(|| default_role(kind));
    let stored = store.load_run(run_id)?;
    let counted = store.counted_instructions(run_id, kind)?;
    let (measure, why) = match args.measure {
        Some(measure) => {
            if measure == Measure::Memory {
                return Err(usage(
                    "recommend ranks on time or instructions; memory is compared by tlslab compare --measure memory",
                ));
            }
            if measure == Measure::Instructions && !counted {
                return Err(usage(format!(
                    "run {run_id} counted no instructions (it ran without --measure instructions); rank it on time"
                )));
            }
            (measure, "asked for (--measure)".to_string())
        }
        None if counted => (
            Measure::Instructions,
            "the run counted them under valgrind (--measure time ranks on CPU time, if the run timed its rows)".to_string(),
        ),
        None => (Measure::Time, "CPU time, as the run timed it".to_string()),
    };
    let axis = cost_axis(role, kind, measure, why)?;
    let floor = Floor {
        min_bits: args.min_security,
        forward_secrecy: args.forward_secrecy,
        allow_weak: args.allow_weak,
    };
    let candidates = candidates(&store, &stored, kind, role, measure)?;
    let recommendation = Recommendation::new(
        run_id,
        kind.id(),
        &stored.host,
        &stored.libraries,
        axis,
        floor,
        candidates,
    );
    let document = recommendation.document();
    args.display.print(&document)?;
    args.exports.write(&document)?;
    Ok(0)
}
