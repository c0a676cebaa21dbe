//! `tlslab report --run 3,4,5 --combine`: the shards of one command (the
//! same kind and options but for `--shard`) read as one run, one table over
//! every shard's rows. Runs of different hosts are never pooled: each host
//! gets its own combined table.
//!
//! Each shard's rounds keep their own numbers, moved by a stride per shard,
//! so a ratio still comes only from same-round pairs within one shard. A row
//! measured in several shards (the baseline every shard measures) is shown
//! once, its samples pooled from every shard: each shard's rows then pair
//! with that shard's copy.

use anyhow::Result;

use super::session::usage;
use crate::measure::Outcome;
use crate::report::Document;
use crate::store::{RunKind, Store, StoredRun};

/// How far apart the rounds of two shards are moved (no run has that many rounds).
const ROUND_STRIDE: u32 = 1_000_000;

/// Returns true if and only if the shards of a run of this kind combine.
fn combines(kind: RunKind) -> bool {
    match kind {
        RunKind::Handshake | RunKind::Speed | RunKind::Tunnel | RunKind::Bulk => true,
        RunKind::Capacity | RunKind::Cost | RunKind::Load => false,
    }
}

/// The runs of one host, combined.
pub struct Combined {
    pub runs: Vec<StoredRun>,
    pub document: Document,
}

/// A run's options without its shard and its seed (each shard draws its
/// own unless `--seed` is given): equal for the shards of one command.
fn options_without_shard(run: &StoredRun) -> serde_json::Value {
    command_of(&run.options_json)
}

/// Stored options (JSON) without the shard and the seed: the command
/// the shards share.
fn command_of(options_json: &str) -> serde_json::Value {
    let mut options: serde_json::Value = serde_json::from_str(options_json).unwrap_or_default();
    if let Some(map) = options.as_object_mut() {
        map.remove("shard");
    }
    if let Some(sampling) = options.get_mut("sampling").and_then(|s| s.as_object_mut()) {
        sampling.remove("seed");
    }
    options
}

/// The seed of a run's sampling, if it recorded one.
fn seed_of(run: &StoredRun) -> Option<u64> {
    super::session::stored_sampling(&run.options_json).seed
}

/// The shard a run measured ("2/3"), if it was one.
pub fn shard_of(run: &StoredRun) -> Option<String> {
    shard_in(&run.options_json)
}

/// The shard that stored options (JSON) name, if any.
fn shard_in(options_json: &str) -> Option<String> {
    let options: serde_json::Value = serde_json::from_str(options_json).ok()?;
    options.get("shard")?.as_str().map(String::from)
}

/// The runs `report --combine` reads without `--run`: those of the latest
/// sharded command (of a kind that combines) — the newest run with
/// `--shard` and every run of the same kind and options but for the shard
/// and the seed, oldest first; per host and shard only the newest, so a
/// command run twice shows its last time. Empty if no run is such a shard.
pub fn latest_sharded_command(store: &Store) -> Result<Vec<i64>> {
    let listings = store.list_runs()?;
    let Some(latest) = listings
        .iter()
        .rev()
        .find(|run| combines(run.kind) && shard_in(&run.options_json).is_some())
    else {
        return Ok(Vec::new());
    };
    let command = command_of(&latest.options_json);
    let mut seen: Vec<(&str, String)> = Vec::new();
    let mut ids = Vec::new();
    for run in listings.iter().rev() {
        let Some(shard) = shard_in(&run.options_json) else {
            continue;
        };
        if run.kind != latest.kind || command_of(&run.options_json) != command {
            continue;
        }
        let host_shard = (run.hostname.as_str(), shard);
        if !seen.contains(&host_shard) {
            seen.push(host_shard);
            ids.push(run.id);
        }
    }
    ids.reverse();
    Ok(ids)
}

/// The cells of every shard as one list, in the order they first appear:
/// each shard's rounds moved by its stride, and a row that several shards
/// measured once, with every shard's samples. Returns the labels of the
/// rows pooled that way, with the number of shards each came from.
fn pool<C, S>(
    shards: Vec<Vec<C>>,
    key: impl Fn(&C) -> String,
    outcome: impl Fn(&mut C) -> &mut Outcome<S>,
) -> (Vec<C>, Vec<(String, usize)>) {
    let mut cells: Vec<C> = Vec::new();
    let mut keys: Vec<String> = Vec::new();
    let mut copies: Vec<usize> = Vec::new();
    for (position, shard) in shards.into_iter().enumerate() {
        let offset = position as u32 * ROUND_STRIDE;
        for mut cell in shard {
            if let Outcome::Measured { samples, .. } = outcome(&mut cell) {
                for sample in samples.iter_mut() {
                    sample.round += offset;
                }
            }
            let cell_key = key(&cell);
            let Some(at) = keys.iter().position(|k| *k == cell_key) else {
                keys.push(cell_key);
                copies.push(1);
                cells.push(cell);
                continue;
            };
            copies[at] += 1;
            let kept = outcome(&mut cells[at]);
            match (kept, outcome(&mut cell)) {
                (
                    Outcome::Measured {
                        samples,
                        precise,
                        note,
                    },
                    Outcome::Measured {
                        samples: more,
                        precise: more_precise,
                        note: more_note,
                    },
                ) => {
                    samples.append(more);
                    *precise &= *more_precise;
                    // A copy the budget cut short says so in the pooled row.
                    if note.is_none() {
                        *note = more_note.take();
                    }
                }
                // A copy measured replaces one that was not.
                (kept, new @ Outcome::Measured { .. }) => std::mem::swap(kept, new),
                _ => {}
            }
        }
    }
    let pooled = keys
        .into_iter()
        .zip(copies)
        .filter(|(_, n)| *n > 1)
        .collect();
    (cells, pooled)
}

/// Checks that the runs are of one command: the same kind (one that
/// combines) and the same options but for the shard and the seed.
fn check_one_command(runs: &[StoredRun]) -> Result<()> {
    let first = &runs[0];
    if !combines(first.kind) {
        return Err(usage(format!(
            "--combine reads shards of handshake, speed, tunnel and bulk runs; run {} is a {} run{}",
            first.id,
            first.kind,
            if first.kind == RunKind::Load {
                " (tlslab merge joins the shards of a sharded load into one load run)"
            } else {
                ""
            }
        )));
    }
    let options = options_without_shard(first);
    for run in &runs[1..] {
        if run.kind != first.kind {
            return Err(usage(format!(
                "run {} is a {} run and run {} a {} run: --combine needs the shards of one command",
                first.id, first.kind, run.id, run.kind
            )));
        }
        if options_without_shard(run) != options {
            return Err(usage(format!(
                "runs {} and {} are not shards of one command: their options differ",
                first.id, run.id
            )));
        }
    }
    Ok(())
}

/// Checks that the runs can combine, and groups them per host (in the
/// order of the hosts' first runs).
fn group_per_host(runs: Vec<StoredRun>) -> Result<Vec<Vec<StoredRun>>> {
    check_one_command(&runs)?;
    let mut groups: Vec<Vec<StoredRun>> = Vec::new();
    for run in runs {
        match groups.iter_mut().find(|g| g[0].host == run.host) {
            Some(group) => group.push(run),
            None => groups.push(vec![run]),
        }
    }
    Ok(groups)
}

/// Returns true if and only if the runs are two or more shards (each run
/// with `--shard`) of one command, which `--combine` can show as one run.
pub fn are_shards(runs: &[StoredRun]) -> bool {
    runs.len() > 1 && runs.iter().all(|r| shard_of(r).is_some()) && check_one_command(runs).is_ok()
}

/// The runs combined, one document per host.
pub fn combine(
    store: &Store,
    runs: Vec<StoredRun>,
    baseline: Option<String>,
) -> Result<Vec<Combined>> {
    let mut combined = Vec::new();
    for runs in group_per_host(runs)? {
        let document = document(store, &runs, baseline.clone())?;
        combined.push(Combined { runs, document });
    }
    Ok(combined)
}

/// One host's shards as one document, by the view of their kind.
fn document(store: &Store, runs: &[StoredRun], baseline: Option<String>) -> Result<Document> {
    let first = &runs[0];
    // One seed only when every shard used it.
    let seed = seed_of(first).filter(|seed| runs.iter().all(|r| seed_of(r) == Some(*seed)));
    let super::session::StoredSampling {
        baseline: stored_baseline,
        precision,
        valgrind: counted_with,
        wire,
        remote,
        ..
    } = super::session::stored_sampling(&first.options_json);
    let complete = runs.iter().all(|r| r.status.is_complete());
    let libraries = merged_libraries(runs);
    let (mut document, pooled) = match first.kind {
        RunKind::Speed => {
            let shards = runs
                .iter()
                .map(|r| store.load_speed_cells(r.id))
                .collect::<Result<Vec<_>>>()?;
            let (cells, pooled) = pool(
                shards,
                |c| format!("{} {}", c.subject, c.row.label()),
                |c| &mut c.outcome,
            );
            let document = crate::report::speed::document(
                &cells,
                None,
                complete,
                &first.host,
                &libraries,
                seed,
                counted_with.as_deref(),
            );
            (document, pooled)
        }
        RunKind::Tunnel => {
            let shards = runs
                .iter()
                .map(|r| store.load_tunnel_cells(r.id))
                .collect::<Result<Vec<_>>>()?;
            let (cells, pooled) = pool(
                shards,
                |c| format!("{} {}", c.row_engine(), c.scenario.label()),
                |c| &mut c.outcome,
            );
            let document = super::tunnel::combined_document(
                &cells,
                baseline.or(stored_baseline),
                complete,
                first.host.clone(),
                libraries,
                seed,
                counted_with,
            );
            (document, pooled)
        }
        RunKind::Bulk => {
            let shards = runs
                .iter()
                .map(|r| store.load_bulk_cells(r.id))
                .collect::<Result<Vec<_>>>()?;
            let (cells, pooled) = pool(
                shards,
                |c| format!("{} {}", c.subject, c.scenario.label()),
                |c| &mut c.outcome,
            );
            let document = crate::report::bulk::BulkReport {
                run_id: None,
                complete,
                host: &first.host,
                libraries: &libraries,
                seed,
                precision,
                cells: &cells,
                counted_with: counted_with.as_deref(),
            }
            .document();
            (document, pooled)
        }
        // check_one_command let only the kinds that combine through.
        RunKind::Capacity | RunKind::Cost | RunKind::Load => {
            unreachable!("{} runs do not combine", first.kind)
        }
        RunKind::Handshake => {
            let shards = runs.iter().map(|r| r.cells.clone()).collect();
            let (cells, pooled) = pool(
                shards,
                |c| format!("{} {}", c.subject, c.scenario.label()),
                |c| &mut c.outcome,
            );
            // The shards' recorded baseline when they all recorded one.
            let recorded = super::handshake::recorded_baseline(first).filter(|b| {
                runs.iter()
                    .all(|r| r.baseline.as_deref() == Some(b.as_str()))
            });
            let baseline = baseline
                .or(stored_baseline)
                .or(recorded)
                .or_else(|| super::handshake::first_measured_label(&cells));
            let document = crate::report::handshake::HandshakeReport {
                run_id: None,
                complete,
                baseline: baseline.as_deref(),
                host: &first.host,
                libraries: &libraries,
                seed,
                precision,
                cells: &cells,
                // Each shard numbers its rounds apart: no shared readings.
                rounds: &[],
                counted_with: counted_with.as_deref(),
                show_wire: wire,
                server_elsewhere: remote.as_deref(),
            }
            .document();
            (document, pooled)
        }
    };
    say_combined(&mut document, runs, &pooled);
    Ok(document)
}

/// Every library of the runs, each once, in the order first seen.
fn merged_libraries(runs: &[StoredRun]) -> Vec<crate::backend::LibraryInfo> {
    let mut libraries = Vec::new();
    for library in runs.iter().flat_map(|run| &run.libraries) {
        if !libraries.contains(library) {
            libraries.push(library.clone());
        }
    }
    libraries
}

/// Says in the footer and the data which runs were combined, and which
/// rows every shard measured (shown once, their samples pooled).
fn say_combined(document: &mut Document, runs: &[StoredRun], pooled: &[(String, usize)]) {
    let first = &runs[0];
    let described: Vec<String> = runs
        .iter()
        .map(|r| match shard_of(r) {
            Some(shard) => format!("run {} (shard {shard})", r.id),
            None => format!("run {} (no shard)", r.id),
        })
        .collect();
    document.footer.push(format!(
        "Combined: {} on {}. Ratios come from same-round pairs within each shard (rounds of shard k are numbered from k x {ROUND_STRIDE}): a ratio between rows of two shards has no pair and shows as —, unless one of them is a reference row every shard measures.",
        described.join(", "),
        first.host.hostname
    ));
    for (row, shards) in pooled {
        document.footer.push(format!(
            "{row}: measured in {shards} runs (a reference row every shard measures); shown once, with every run's samples, and each shard's rows paired with its own copy."
        ));
    }
    if let Some(data) = document.data.as_object_mut() {
        data.insert(
            "combined_runs".to_string(),
            serde_json::json!(runs
                .iter()
                .map(|r| serde_json::json!({"run_id": r.id, "shard": shard_of(r)}))
                .collect::<Vec<_>>()),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::Timed;

    #[derive(Debug, Clone, Copy, PartialEq)]
    struct Cost(f64);

    type Cell = (&'static str, Outcome<Cost>);

    fn measured(rounds: &[u32]) -> Outcome<Cost> {
        Outcome::Measured {
            samples: rounds
                .iter()
                .map(|&round| Timed {
                    round,
                    value: Cost(f64::from(round)),
                })
                .collect(),
            precise: true,
            note: None,
        }
    }

    #[test]
    fn shards_keep_their_rounds_apart_and_a_shared_row_is_pooled_once() {
        let shards: Vec<Vec<Cell>> = vec![
            vec![("baseline", measured(&[0, 1])), ("a", measured(&[0, 1]))],
            vec![
                ("b", measured(&[0])),
                ("baseline", Outcome::Failed { reason: "x".into() }),
            ],
            vec![("baseline", measured(&[0])), ("c", measured(&[1]))],
        ];
        let (cells, pooled) = pool(shards, |c| c.0.to_string(), |c| &mut c.1);
        let labels: Vec<&str> = cells.iter().map(|c| c.0).collect();
        assert_eq!(labels, ["baseline", "a", "b", "c"]);
        let rounds =
            |i: usize| -> Vec<u32> { cells[i].1.samples().iter().map(|s| s.round).collect() };
        assert_eq!(rounds(0), [0, 1, 2 * ROUND_STRIDE]);
        assert_eq!(rounds(1), [0, 1]);
        assert_eq!(rounds(2), [ROUND_STRIDE]);
        assert_eq!(rounds(3), [2 * ROUND_STRIDE + 1]);
        assert_eq!(pooled, [("baseline".to_string(), 3)]);
    }

    fn run(id: i64, host: &str, shard: &str) -> StoredRun {
        StoredRun {
            id,
            kind: RunKind::Handshake,
            status: crate::store::RunStatus::Complete,
            started_at: String::new(),
            options_json: format!(r#"{{"runs":4,"sampling":{{"seed":{id}}},"shard":"{shard}"}}"#),
            baseline: None,
            host: crate::host::HostInfo {
                hostname: host.into(),
                ..crate::host::HostInfo::current()
            },
            libraries: Vec::new(),
            cells: Vec::new(),
        }
    }

    #[test]
    fn runs_of_two_hosts_are_grouped_apart_and_other_commands_refused() {
        let groups = group_per_host(vec![
            run(1, "a", "1/3"),
            run(2, "b", "2/3"),
            run(3, "a", "3/3"),
        ])
        .unwrap();
        let ids: Vec<Vec<i64>> = groups
            .iter()
            .map(|g| g.iter().map(|r| r.id).collect())
            .collect();
        assert_eq!(ids, [vec![1, 3], vec![2]]);
        let mut other = run(4, "a", "2/3");
        other.options_json = r#"{"runs":8,"shard":"2/3"}"#.into();
        let refused = group_per_host(vec![run(1, "a", "1/3"), other])
            .err()
            .unwrap();
        assert!(refused.to_string().contains("not shards of one command"));
    }

    #[test]
    fn shards_of_one_command_are_recognised() {
        assert!(are_shards(&[run(1, "a", "1/2"), run(2, "b", "2/2")]));
        let mut whole = run(3, "a", "");
        whole.options_json = r#"{"runs":4}"#.into();
        assert!(!are_shards(&[run(1, "a", "1/2"), whole]));
        assert!(!are_shards(&[run(1, "a", "1/2")]));
    }
}
