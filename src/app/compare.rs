//! `tlslab compare A B`: two stored runs of one kind (handshake, speed or
//! tunnel) row by row, with a verdict per row and an exit status a CI job
//! can gate on: 0 when no row is slower beyond the threshold, 1 when one
//! is, 2 for bad options.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::session::{check_exports, usage};
use crate::cli::CompareArgs;
use crate::measure::{Outcome, Sampled, Timed};
use crate::report::compare::{self, Cell, Kind, Run};
use crate::scenario::Named;
use crate::store::Store;

/// Parses "5%", "0.5%" or "5" (percent) into a fraction, zero allowed.
fn parse_threshold(text: &str) -> Result<f64> {
    let number = text.trim().trim_end_matches('%').trim();
    match number.parse::<f64>() {
        Ok(percent) if percent.is_finite() && percent >= 0.0 => Ok(percent / 100.0),
        _ => Err(usage(format!(
            "--threshold must be a percentage such as 5% or 0.5%, from 0% up, got '{text}'"
        ))),
    }
}

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

/// Opens a database that must already exist (nothing is created for a typo).
pub(super) fn open_existing(path: &Path) -> Result<Store> {
    if !path.exists() {
        return Err(usage(format!("there is no database at {}", path.display())));
    }
    Store::open(path)
}

/// What a run kind's rows measure, or a usage error for a kind compare cannot read.
fn kind_of(name: &str) -> Result<Kind> {
    Ok(match name {
        "handshake" => Kind {
            name: "handshake",
            unit: "CPU µs",
            cost: "both sides' CPU time per handshake (client + server)",
            scale: 1e-3,
            backend_header: "backend",
            axis_headers: crate::report::handshake::AXIS_HEADERS.to_vec(),
        },
        "speed" => Kind {
            name: "speed",
            unit: "µs/op",
            cost: "the time per operation",
            scale: 1e-3,
            backend_header: "backend",
            axis_headers: vec!["algorithm", "operation", "bytes"],
        },
        "tunnel" => Kind {
            name: "tunnel",
            unit: "CPU ns/byte",
            cost: "the CPU time per payload byte through both ends (in process) or the transfer's time per byte (OpenVPN)",
            scale: 1.0,
            backend_header: "engine",
            axis_headers: crate::report::tunnel::AXIS_HEADERS.to_vec(),
        },
        other => {
            return Err(usage(format!(
                "compare reads handshake, speed and tunnel runs; this is a {other} run"
            )))
        }
    })
}

/// A cell of any kind, reduced to its status and its samples' costs.
fn cell<S: Sampled>(
    backend: &str,
    label: String,
    axes: Vec<String>,
    outcome: &Outcome<S>,
    samples: &[Timed<S>],
) -> Cell {
    Cell {
        backend: backend.to_string(),
        label,
        axes,
        status: outcome.status().to_string(),
        reason: outcome.reason().map(String::from),
        costs: samples.iter().map(|s| s.value.cost()).collect(),
    }
}

/// A stored run with its cells, ready to compare.
fn load(store: &Store, id: i64, kind: &str) -> Result<Run> {
    let stored = store.load_run(id)?;
    let cells = match kind {
        "handshake" => {
            let mut cells = stored.cells.clone();
            cells.sort_by(|a, b| (a.scenario, &a.backend).cmp(&(b.scenario, &b.backend)));
            cells
                .iter()
                .map(|c| {
                    cell(
                        &c.backend,
                        c.scenario.label(),
                        crate::report::handshake::axis_cells(&c.scenario),
                        &c.outcome,
                        c.samples(),
                    )
                })
                .collect()
        }
        "speed" => {
            let mut cells = store.load_speed_cells(id)?;
            cells.sort_by(|a, b| (a.row, &a.backend).cmp(&(b.row, &b.backend)));
            cells
                .iter()
                .map(|c| {
                    let axes = vec![
                        c.row.primitive.id().to_string(),
                        c.row.operation.id().to_string(),
                        c.row.size_bytes.map(|s| s.to_string()).unwrap_or_default(),
                    ];
                    cell(
                        &c.backend,
                        c.row.label(),
                        axes,
                        &c.outcome,
                        c.outcome.samples(),
                    )
                })
                .collect()
        }
        _ => store
            .load_tunnel_cells(id)?
            .iter()
            .map(|c| {
                cell(
                    c.engine.id(),
                    c.scenario.label(),
                    crate::report::tunnel::axis_cells(&c.scenario),
                    &c.outcome,
                    c.samples(),
                )
            })
            .collect(),
    };
    Ok(Run {
        id,
        started_at: stored.started_at,
        status: stored.status,
        host: stored.host,
        libraries: stored.libraries,
        cells,
    })
}

pub fn run(args: &CompareArgs) -> Result<i32> {
    let threshold = parse_threshold(&args.threshold)?;
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
    let kind_in = |store: &Store, id: i64, path: &Path| -> Result<String> {
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
    let kind = kind_of(&kind_a)?;
    let a = load(&store_a, id_a, &kind_a)?;
    let b = load(store_b, id_b, &kind_b)?;
    let comparison = compare::compare(kind, a, b, threshold);
    let document = comparison.document();
    args.display.print(&document)?;
    args.exports.write(&document)?;
    Ok(if comparison.slower_beyond_threshold() > 0 {
        1
    } else {
        0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_and_run_names_parse_or_are_refused() {
        assert_eq!(parse_threshold("5%").unwrap(), 0.05);
        assert_eq!(parse_threshold("0").unwrap(), 0.0);
        assert!(parse_threshold("-1%").is_err());
        assert!(parse_threshold("fast").is_err());
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
