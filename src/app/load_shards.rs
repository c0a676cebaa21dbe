//! The shards of a sharded load (`load --shard i/n --start-at T`, one per
//! machine) joined into one load run when `tlslab merge` has them all in
//! one database: request counts, errors, bytes and the clients' CPU summed,
//! each phase's percentiles from the shards' histograms added bucket by
//! bucket (those of every request), answers per second summed by
//! wall-clock second. The shards stay beside it as runs of their own.
//! Before a merge writes anything, the shards it would bring together are
//! checked: two shards that start together must be one load (same plan,
//! scenario and server), a shard appears once, and shards of the same
//! split that cannot be one load (different starts, plans or servers) are
//! refused with what differs.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use serde_json::Value;

use super::session::{run_info, usage};
use crate::backend::LibraryInfo;
use crate::host::HostInfo;
use crate::scenario::Shard;
use crate::store::{LoadRecord, RunKind, Store, StoredRun};
use crate::workload::load::shards;

/// The key in a joined run's options that lists its shards.
const MERGED_SHARDS: &str = "merged_shards";

/// One shard of a sharded load, as stored.
#[derive(Debug, Clone)]
pub(super) struct ShardRun {
    /// Where it is, for messages: "shard-1.sqlite run 1".
    source: String,
    run_id: i64,
    hostname: String,
    started_at: String,
    shard: Shard,
    /// The common start, RFC 3339.
    start_at: String,
    /// The run's options without its shard: the same for every shard of
    /// one load (the whole plan, the scenario, the server, the start).
    load: serde_json::Map<String, Value>,
}

impl ShardRun {
    /// The shard of a load run, if its options name one (and a start).
    fn of(run: &StoredRun, source: &str) -> Option<ShardRun> {
        let Ok(Value::Object(mut load)) = serde_json::from_str::<Value>(&run.options_json) else {
            return None;
        };
        let shard: Shard = load.remove("shard")?.as_str()?.parse().ok()?;
        let start_at = load.get("start_at")?.as_str()?.to_string();
        Some(ShardRun {
            source: format!("{source} run {}", run.id),
            run_id: run.id,
            hostname: run.host.hostname.clone(),
            started_at: run.started_at.clone(),
            shard,
            start_at,
            load,
        })
    }

    /// The same run, read from two files (a database merged twice).
    fn same_run(&self, other: &ShardRun) -> bool {
        (&self.hostname, &self.started_at, self.shard, &self.load)
            == (&other.hostname, &other.started_at, other.shard, &other.load)
    }

    /// The options (top-level keys) in which two shards' loads differ.
    fn differences(&self, other: &ShardRun) -> Vec<String> {
        let mut keys: Vec<&String> = self.load.keys().chain(other.load.keys()).collect();
        keys.sort();
        keys.dedup();
        keys.into_iter()
            .filter(|key| self.load.get(*key) != other.load.get(*key))
            .map(|key| match key.as_str() {
                "start_at" => format!(
                    "start (--start-at {} and {})",
                    self.start_at, other.start_at
                ),
                "plan" => "plan (rate, clients, duration, mode or page)".to_string(),
                other => other.to_string(),
            })
            .collect()
    }
}

/// The sharded load runs of a database that stored their results.
pub(super) fn sharded_loads(store: &Store, source: &str) -> Result<Vec<ShardRun>> {
    let mut found = Vec::new();
    for listing in store.list_runs()? {
        if listing.kind != RunKind::Load {
            continue;
        }
        let run = store.load_run(listing.id)?;
        if let Some(shard) = ShardRun::of(&run, source) {
            // A shard that stopped before its load (a start already
            // passed) stored nothing to join.
            if store.load_load(run.id)?.is_some() {
                found.push(shard);
            }
        }
    }
    Ok(found)
}

/// The shards grouped by load: by common start and number of shards,
/// each group's shards in their order, each run once.
fn loads(runs: &[ShardRun]) -> BTreeMap<(String, u64), Vec<&ShardRun>> {
    let mut groups: BTreeMap<(String, u64), Vec<&ShardRun>> = BTreeMap::new();
    for run in runs {
        let group = groups
            .entry((run.start_at.clone(), run.shard.count))
            .or_default();
        if !group.iter().any(|seen| seen.same_run(run)) {
            group.push(run);
        }
    }
    for group in groups.values_mut() {
        group.sort_by_key(|run| run.shard.index);
    }
    groups
}

/// Returns true if and only if the group holds every shard of its split.
fn is_whole(group: &[&ShardRun]) -> bool {
    let count = group[0].shard.count;
    group.len() as u64 == count
        && group
            .iter()
            .zip(1..)
            .all(|(run, index)| run.shard.index == index)
}

/// Refuses shards that cannot be joined: two that start together but are
/// not one load, one shard twice, or the parts of one split spread over
/// different loads (different starts, plans or servers).
pub(super) fn check(runs: &[ShardRun]) -> Result<()> {
    let groups = loads(runs);
    for ((start_at, _), group) in &groups {
        let first = group[0];
        for run in &group[1..] {
            let differences = first.differences(run);
            if !differences.is_empty() {
                return Err(usage(format!(
                    "{} (shard {}) and {} (shard {}) start together at {start_at} but are not one load: their {} differ; the shards of one load run one command but for --shard",
                    first.source,
                    first.shard,
                    run.source,
                    run.shard,
                    differences.join(", ")
                )));
            }
        }
        for pair in group.windows(2) {
            if pair[0].shard == pair[1].shard {
                return Err(usage(format!(
                    "{} and {} are both shard {} of the load starting at {start_at}: give one database per shard (a retried shard's file holds its last attempt)",
                    pair[0].source, pair[1].source, pair[0].shard
                )));
            }
        }
    }
    // Parts of one split that do not make one load.
    let partial: Vec<&Vec<&ShardRun>> = groups.values().filter(|g| !is_whole(g)).collect();
    for (at, group) in partial.iter().enumerate() {
        if let Some(other) = partial[at + 1..]
            .iter()
            .find(|other| other[0].shard.count == group[0].shard.count)
        {
            let (a, b) = (group[0], other[0]);
            return Err(usage(format!(
                "{} (shard {}) and {} (shard {}) are shards of different loads, so neither load is whole: their {} differ; the shards of one load share --start-at and run one command but for --shard",
                a.source,
                a.shard,
                b.source,
                b.shard,
                a.differences(b).join(", ")
            )));
        }
    }
    Ok(())
}

/// Joins every whole sharded load in `store` that has no joined run yet
/// into one load run; returns a line for each load (joined, already
/// joined, or missing shards).
pub(super) fn join(store: &mut Store, source: &str) -> Result<Vec<String>> {
    let runs = sharded_loads(store, source)?;
    let joined = joined_runs(store)?;
    let mut notes = Vec::new();
    for ((start_at, count), group) in loads(&runs) {
        let shard_list = group
            .iter()
            .map(|run| format!("{} (run {})", run.shard, run.run_id))
            .collect::<Vec<_>>()
            .join(", ");
        if !is_whole(&group) {
            let missing: Vec<String> = (1..=count)
                .filter(|index| !group.iter().any(|run| run.shard.index == *index))
                .map(|index| format!("{index}/{count}"))
                .collect();
            notes.push(format!(
                "the load starting at {start_at} lacks shard {} (it has {shard_list}): not joined; merge the missing shard's database into this one to join it",
                missing.join(", ")
            ));
            continue;
        }
        if let Some((id, _)) = joined.iter().find(|(_, load)| *load == group[0].load) {
            notes.push(format!(
                "the load starting at {start_at} ({count} shards) is already joined as run {id}"
            ));
            continue;
        }
        let id = join_group(store, &group).with_context(|| {
            format!("joining the {count} shards of the load starting at {start_at}")
        })?;
        notes.push(format!(
            "the {count} shards of the load starting at {start_at} ({shard_list}) joined as load run {id}"
        ));
    }
    Ok(notes)
}

/// The joined load runs in `store`: their ids and options without the
/// list of shards (the shards' common options).
fn joined_runs(store: &Store) -> Result<Vec<(i64, serde_json::Map<String, Value>)>> {
    let mut joined = Vec::new();
    for listing in store.list_runs()? {
        if listing.kind != RunKind::Load {
            continue;
        }
        let run = store.load_run(listing.id)?;
        if let Ok(Value::Object(mut options)) = serde_json::from_str::<Value>(&run.options_json) {
            if options.remove(MERGED_SHARDS).is_some() {
                joined.push((run.id, options));
            }
        }
    }
    Ok(joined)
}

/// Stores one whole load's shards as one load run; returns its id.
fn join_group(store: &mut Store, group: &[&ShardRun]) -> Result<i64> {
    let mut records = Vec::new();
    let mut stored = Vec::new();
    for run in group {
        records.push(
            store
                .load_load(run.run_id)?
                .with_context(|| format!("load run {} stored no results", run.run_id))?,
        );
        stored.push(store.load_run(run.run_id)?);
    }
    let record = joined_record(&records, group);
    let mut options = group[0].load.clone();
    options.insert(
        MERGED_SHARDS.to_string(),
        serde_json::json!({
            "count": group.len(),
            "shards": group.iter().zip(&records).map(|(run, record)| serde_json::json!({
                "shard": run.shard.to_string(),
                "run": run.run_id,
                "host": run.hostname,
                "offered": record.result.offered,
                "answered": record.result.answered,
            })).collect::<Vec<_>>(),
        }),
    );
    let mut libraries: Vec<LibraryInfo> = Vec::new();
    for library in stored.iter().flat_map(|run| &run.libraries) {
        if !libraries.contains(library) {
            libraries.push(library.clone());
        }
    }
    let host = joined_host(stored.iter().map(|run| &run.host));
    let info = run_info(
        RunKind::Load,
        Value::Object(options).to_string(),
        &host,
        &libraries,
    );
    let id = store.begin_run(&info)?;
    store.save_load(id, &record)?;
    let complete = !record.result.interrupted
        && stored
            .iter()
            .all(|run| run.status == crate::store::RunStatus::Complete);
    store.finish_run(id, complete)?;
    // It starts at the common start and ends with the last shard.
    let mut finished = Vec::new();
    for run in group {
        if let Some(command) = store.load_run_command(run.run_id)? {
            finished.extend(command.finished_at);
        }
    }
    let start_at: crate::scenario::WallClock = group[0]
        .start_at
        .parse()
        .map_err(|error: String| anyhow::anyhow!(error))?;
    let started = sqlite_time(start_at);
    let last = finished
        .into_iter()
        .max()
        .unwrap_or_else(|| started.clone());
    store.date_run(id, &started, &last)?;
    Ok(id)
}

/// A time as SQLite writes the runs' times: RFC 3339 in UTC with
/// milliseconds (`2026-11-28T01:30:00.000Z`).
fn sqlite_time(time: crate::scenario::WallClock) -> String {
    let text = time.to_string();
    match text.strip_suffix('Z') {
        Some(clock) if !clock.contains('.') => format!("{clock}.000Z"),
        _ => text,
    }
}

/// The shards' records as one load's: their results merged, the plan's
/// rate, clients and bound on requests summed; the server's CPU summed
/// when every shard knew its own; perf's profiles stay with the shards.
fn joined_record(records: &[LoadRecord], group: &[&ShardRun]) -> LoadRecord {
    let first = &records[0];
    let mut plan = first.plan.clone();
    plan.rate = records.iter().map(|r| r.plan.rate).sum();
    plan.clients = records.iter().map(|r| r.plan.clients).sum();
    plan.max_requests = records.iter().map(|r| r.plan.max_requests).sum();
    let mut servers: Vec<&str> = Vec::new();
    for record in records {
        if !servers.contains(&record.server.as_str()) {
            servers.push(&record.server);
        }
    }
    let runs = group
        .iter()
        .map(|run| run.run_id.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let per_shard = |profiled: bool, first: &Result<Vec<(String, f64)>, String>| match first {
        Err(reason) if !profiled => Err(reason.clone()),
        _ => Err(format!(
            "sampled per shard, not joined: tlslab report --run {runs}"
        )),
    };
    LoadRecord {
        scenario_id: first.scenario_id.clone(),
        scenario: first.scenario.clone(),
        server: servers.join(" + "),
        plan,
        result: shards::merge(&records.iter().map(|r| &r.result).collect::<Vec<_>>()),
        server_cpu_ns: records.iter().map(|r| r.server_cpu_ns).sum(),
        profile: per_shard(records.iter().any(|r| r.profile.is_ok()), &first.profile),
        profile_scope: first.profile_scope.clone(),
        categories: per_shard(
            records.iter().any(|r| r.categories.is_ok()),
            &first.categories,
        ),
        embedded: None,
        counted: None,
    }
}

/// One host record for the shards' machines: theirs when they all ran on
/// one, else their names, models, kernels and systems joined with " + "
/// and their cores summed.
fn joined_host<'a>(hosts: impl Iterator<Item = &'a HostInfo>) -> HostInfo {
    let mut distinct: Vec<&HostInfo> = Vec::new();
    for host in hosts {
        if !distinct.contains(&host) {
            distinct.push(host);
        }
    }
    if let [only] = distinct[..] {
        return only.clone();
    }
    let join = |field: fn(&HostInfo) -> &str| {
        let mut values: Vec<&str> = Vec::new();
        for host in &distinct {
            if !values.contains(&field(host)) {
                values.push(field(host));
            }
        }
        values.join(" + ")
    };
    HostInfo {
        hostname: join(|h| &h.hostname),
        cpu_model: join(|h| &h.cpu_model),
        cpu_flags: distinct[0].cpu_flags.clone(),
        cores: distinct.iter().map(|h| h.cores).sum(),
        kernel: join(|h| &h.kernel),
        os: join(|h| &h.os),
    }
}

/// What a load run's report says about its sharding: the shard and the
/// common start of a shard; the shards and their requests of a joined run.
pub(crate) fn footer(options_json: &str) -> Vec<String> {
    let Ok(options) = serde_json::from_str::<Value>(options_json) else {
        return Vec::new();
    };
    let start_at = options["start_at"].as_str().unwrap_or("?");
    if let Some(shard) = options["shard"].as_str() {
        return vec![format!(
            "Shard {shard} of a load starting at {start_at}: `tlslab merge OUT` with every shard's database joins them into one run."
        )];
    }
    let Some(shards) = options[MERGED_SHARDS]["shards"].as_array() else {
        return Vec::new();
    };
    let parts: Vec<String> = shards
        .iter()
        .map(|s| {
            format!(
                "{} on {} (run {}): {} of {} answered",
                s["shard"].as_str().unwrap_or("?"),
                s["host"].as_str().unwrap_or("?"),
                s["run"],
                s["answered"],
                s["offered"]
            )
        })
        .collect();
    vec![
        format!(
            "One load from {} shards starting at {start_at}: {}.",
            shards.len(),
            parts.join("; ")
        ),
        "Each phase's percentiles come from the shards' histograms added bucket by bucket (every request); a second's latency percentiles only where one shard alone answered in it.".to_string(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shard `shard` of a load starting at `start` with `rate`, as stored
    /// in `source` run 1 on `host`.
    fn shard(source: &str, shard: &str, start: &str, rate: f64) -> ShardRun {
        let Value::Object(load) = serde_json::json!({
            "scenario": "handshake_1.3_x25519_ecdsa_p256_aes128gcm",
            "target": "10.0.0.5:443",
            "plan": {"rate": rate, "clients": 64},
            "start_at": start,
        }) else {
            unreachable!()
        };
        ShardRun {
            source: format!("{source} run 1"),
            run_id: 1,
            hostname: source.to_string(),
            started_at: format!("{start} on {source}"),
            shard: shard.parse().unwrap(),
            start_at: start.to_string(),
            load,
        }
    }

    const T1: &str = "2026-11-28T01:30:00Z";
    const T2: &str = "2026-11-28T01:31:00Z";

    fn refusal(runs: &[ShardRun]) -> String {
        format!("{:#}", check(runs).unwrap_err())
    }

    #[test]
    fn the_shards_of_one_load_pass_even_read_twice_or_partial() {
        let a = shard("a.sqlite", "1/2", T1, 400.0);
        let b = shard("b.sqlite", "2/2", T1, 400.0);
        assert!(check(&[a.clone(), b.clone(), a.clone()]).is_ok());
        let twice = [a.clone(), b, a.clone()];
        let groups = loads(&twice);
        assert_eq!(groups[&(T1.to_string(), 2)].len(), 2);
        assert!(is_whole(&groups[&(T1.to_string(), 2)]));
        // One shard alone: joined later, when the other comes.
        let alone = [a];
        assert!(check(&alone).is_ok());
        assert!(!is_whole(&loads(&alone)[&(T1.to_string(), 2)]));
    }

    #[test]
    fn shards_that_start_together_must_be_one_load() {
        let error = refusal(&[
            shard("a.sqlite", "1/2", T1, 400.0),
            shard("b.sqlite", "2/2", T1, 800.0),
        ]);
        assert!(error.contains("start together at"), "{error}");
        assert!(error.contains("plan (rate"), "{error}");
    }

    #[test]
    fn a_shard_twice_is_refused() {
        let error = refusal(&[
            shard("a.sqlite", "1/2", T1, 400.0),
            shard("c.sqlite", "1/2", T1, 400.0),
        ]);
        assert!(error.contains("are both shard 1/2"), "{error}");
    }

    #[test]
    fn parts_of_one_split_from_different_starts_are_different_loads() {
        let error = refusal(&[
            shard("a.sqlite", "1/2", T1, 400.0),
            shard("b.sqlite", "2/2", T2, 400.0),
        ]);
        assert!(error.contains("shards of different loads"), "{error}");
        assert!(
            error.contains(&format!("start (--start-at {T1} and {T2})")),
            "{error}"
        );
        // Whole loads of different starts are two loads, both joined.
        assert!(check(&[
            shard("a.sqlite", "1/1", T1, 400.0),
            shard("b.sqlite", "1/1", T2, 400.0),
        ])
        .is_ok());
    }

    #[test]
    fn machines_of_the_shards_make_one_host_record() {
        let host = |name: &str, cores: usize| HostInfo {
            hostname: name.into(),
            cpu_model: "Xeon".into(),
            cpu_flags: "aes".into(),
            cores,
            kernel: "6.1".into(),
            os: "linux".into(),
        };
        let (a, b) = (host("a", 2), host("b", 4));
        assert_eq!(joined_host([&a, &a].into_iter()), a);
        let both = joined_host([&a, &b, &a].into_iter());
        assert_eq!((both.hostname.as_str(), both.cores), ("a + b", 6));
        assert_eq!(both.cpu_model, "Xeon");
    }

    #[test]
    fn a_joined_run_starts_at_the_common_start_as_sqlite_writes_times() {
        let start: crate::scenario::WallClock = T1.parse().unwrap();
        assert_eq!(sqlite_time(start), "2026-11-28T01:30:00.000Z");
        assert_eq!(
            sqlite_time(start.after(std::time::Duration::from_millis(250))),
            "2026-11-28T01:30:00.250Z"
        );
    }
}
