//! The load tables: one summary per `tlslab load` run (the plan, the
//! counts, each side's CPU), each phase's latency percentiles and HDR
//! histogram buckets, answers per second, latency percentiles per second of
//! due time, errors by kind and perf's shares.
//! A load run is saved in one transaction when it ends (interrupted or not).

use std::time::Duration;

use anyhow::{bail, Context, Result};
use rusqlite::{params, OptionalExtension};

use super::Store;
use crate::scenario::Subject;
use crate::workload::counted::ServerHandshakeCount;
use crate::workload::load::{
    percentiles, ErrorKind, HttpVersion, Interval, Latencies, LoadResult, Mode, Plan, PHASE_IDS,
};
use crate::workload::serve::ServerStats;

/// A load run as stored: what its view needs to be drawn again.
pub struct LoadRecord {
    /// The scenario's stable label (`handshake_1.3_x25519_ecdsa_p256...`).
    pub scenario_id: String,
    /// The scenario in words.
    pub scenario: String,
    /// The server loaded, in words.
    pub server: String,
    /// The plan; its `body` is left empty when read back.
    pub plan: Plan,
    pub result: LoadResult,
    pub server_cpu_ns: Option<u64>,
    /// perf's shares per shared object, or why there are none.
    pub profile: Result<Vec<(String, f64)>, String>,
    /// What perf sampled ("the server's worker process").
    pub profile_scope: String,
    /// perf's shares per symbol category (labels of
    /// `workload::perf::ProfileCategory`), or why there are none.
    pub categories: Result<Vec<(String, f64)>, String>,
    /// The embedded server's own figures and its backend's id, when it was
    /// the target.
    pub embedded: Option<(ServerStats, Subject)>,
    /// One server handshake of the scenario counted per category under
    /// valgrind (`--measure time,instructions`), or why it was not;
    /// `None` when not asked for.
    pub counted: Option<Result<ServerHandshakeCount, String>>,
}

/// What `load_summaries.embedded_json` holds: the embedded server's own
/// figures, perf's shares per symbol category, the counted server
/// handshake and the HTTP version and streams per connection of the load
/// (each absent in runs stored before it; a run without a version spoke
/// HTTP/1.1). Kept in this JSON rather than in new columns so that no
/// migration was needed. Runs stored before the
/// categories existed hold the bare `[stats, backend]` pair there.
#[derive(serde::Serialize, serde::Deserialize)]
struct ServerFigures {
    embedded: Option<(ServerStats, Subject)>,
    symbol_categories: Result<Vec<(String, f64)>, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    counted: Option<Result<ServerHandshakeCount, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    http: Option<HttpVersion>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    streams: Option<usize>,
}

fn count(value: i64) -> usize {
    value.max(0) as usize
}

impl Store {
    /// Saves a finished (or interrupted) load run's results.
    pub fn save_load(&mut self, run_id: i64, record: &LoadRecord) -> Result<()> {
        let tx = self.connection.transaction()?;
        let (plan, result) = (&record.plan, &record.result);
        tx.execute(
            "INSERT INTO load_summaries (run_id, scenario_id, scenario, server, mode, rate_per_s,
             ramp_s, duration_s, page_bytes, clients, max_requests, offered, sent, answered,
             errors, handshakes, resumed_handshakes, payload_bytes, elapsed_ns,
             achieved_rate_per_s, steady_rate_per_s, client_cpu_ns, server_cpu_ns,
             profile_unavailable, interrupted)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
             ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25)",
            params![
                run_id,
                record.scenario_id,
                record.scenario,
                record.server,
                plan.mode.id(),
                plan.rate,
                plan.ramp.as_secs_f64(),
                plan.duration.as_secs_f64(),
                plan.body.len() as i64,
                plan.clients as i64,
                plan.max_requests as i64,
                result.offered as i64,
                result.sent as i64,
                result.answered as i64,
                result.errors.iter().map(|(_, n)| n).sum::<usize>() as i64,
                result.latencies.handshake.len() as i64,
                result.resumed as i64,
                result.bytes as i64,
                result.elapsed.as_nanos() as i64,
                result.achieved_rate(),
                result.steady_rate(plan),
                result.client_cpu_ns as i64,
                record.server_cpu_ns.map(|n| n as i64),
                record.profile.as_ref().err(),
                result.interrupted,
            ],
        )?;
        let embedded_json = serde_json::to_string(&ServerFigures {
            embedded: record.embedded.clone(),
            symbol_categories: record.categories.clone(),
            counted: record.counted.clone(),
            http: Some(plan.http),
            streams: Some(plan.streams),
        })?;
        tx.execute(
            "UPDATE load_summaries SET profile_scope = ?1, embedded_json = ?2 WHERE run_id = ?3",
            params![record.profile_scope, embedded_json, run_id],
        )?;
        for (kind, n) in &result.errors {
            let message = result
                .first_error
                .iter()
                .find(|(k, _)| k == kind)
                .map_or("", |(_, m)| m.as_str());
            tx.execute(
                "INSERT INTO load_errors (run_id, kind, count, first_message) VALUES (?1, ?2, ?3, ?4)",
                params![run_id, kind.id(), *n as i64, message],
            )?;
        }
        {
            let mut phase = tx.prepare(
                "INSERT INTO load_phases (run_id, phase, requests, p50_us, p90_us, p99_us,
                 p999_us, max_us) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
            let mut bucket = tx.prepare(
                "INSERT INTO load_histograms (run_id, phase, latency_us, count)
                 VALUES (?1, ?2, ?3, ?4)",
            )?;
            for (id, histogram) in PHASE_IDS.iter().zip(result.latencies.phases()) {
                let values = percentiles(histogram);
                let at = |i: usize| values.as_ref().map(|v| v[i] as i64);
                phase.execute(params![
                    run_id,
                    id,
                    histogram.len() as i64,
                    at(0),
                    at(1),
                    at(2),
                    at(3),
                    at(4)
                ])?;
                for value in histogram.iter_recorded() {
                    bucket.execute(params![
                        run_id,
                        id,
                        value.value_iterated_to() as i64,
                        value.count_at_value() as i64
                    ])?;
                }
            }
            let mut second = tx.prepare(
                "INSERT INTO load_seconds (run_id, second, answered) VALUES (?1, ?2, ?3)",
            )?;
            for (at, answered) in result.per_second.iter().enumerate() {
                second.execute(params![run_id, at as i64, *answered as i64])?;
            }
            let mut interval = tx.prepare(
                "INSERT INTO load_intervals (run_id, second, offered, answered, p50_us, p90_us,
                 p99_us, max_us) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
            for (at, figures) in result.intervals.iter().enumerate() {
                let us = |i: usize| figures.latency_us.map(|v| v[i] as i64);
                interval.execute(params![
                    run_id,
                    at as i64,
                    figures.offered as i64,
                    figures.answered as i64,
                    us(0),
                    us(1),
                    us(2),
                    us(3)
                ])?;
            }
            let mut share = tx.prepare(
                "INSERT INTO load_profile (run_id, seq, shared_object, percent)
                 VALUES (?1, ?2, ?3, ?4)",
            )?;
            for (seq, (object, percent)) in record.profile.iter().flatten().enumerate() {
                share.execute(params![run_id, seq as i64, object, percent])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Reads a load run's results back (None: the run stored none, e.g. it
    /// broke before the load ended).
    pub fn load_load(&self, run_id: i64) -> Result<Option<LoadRecord>> {
        let Some(summary) = self.load_summary(run_id)? else {
            return Ok(None);
        };
        let mut plan = summary.plan(run_id)?;
        let latencies = self.load_latencies(run_id)?;
        let (errors, first_error) = self.load_errors(run_id)?;
        let per_second = self.load_answers_per_second(run_id)?;
        let intervals = self.load_intervals(run_id)?;
        let profile = match summary.profile_unavailable {
            Some(reason) => Err(reason),
            None => Ok(self.load_profile(run_id)?),
        };
        let (profile_scope, figures) = self.load_server_figures(run_id)?;
        plan.http = figures.http.unwrap_or(HttpVersion::Http1_1);
        plan.streams = figures.streams.unwrap_or(1);
        Ok(Some(LoadRecord {
            scenario_id: summary.scenario_id,
            scenario: summary.scenario,
            server: summary.server,
            plan,
            result: LoadResult {
                offered: count(summary.offered),
                sent: count(summary.sent),
                answered: count(summary.answered),
                errors,
                first_error,
                latencies,
                bytes: summary.payload_bytes.max(0) as u64,
                elapsed: Duration::from_nanos(summary.elapsed_ns.max(0) as u64),
                client_cpu_ns: summary.client_cpu_ns.max(0) as u64,
                per_second,
                intervals,
                resumed: count(summary.resumed),
                interrupted: summary.interrupted,
            },
            server_cpu_ns: summary.server_cpu_ns.map(|n| n.max(0) as u64),
            profile,
            profile_scope,
            categories: figures.symbol_categories,
            embedded: figures.embedded,
            counted: figures.counted,
        }))
    }

    /// The run's row of `load_summaries`, if it has one.
    fn load_summary(&self, run_id: i64) -> Result<Option<Summary>> {
        let summary = self
            .connection
            .query_row(
                "SELECT scenario_id, scenario, server, mode, rate_per_s, ramp_s, duration_s,
                        page_bytes, clients, max_requests, offered, sent, answered,
                        resumed_handshakes, payload_bytes, elapsed_ns, client_cpu_ns,
                        server_cpu_ns, profile_unavailable, interrupted
                 FROM load_summaries WHERE run_id = ?1",
                [run_id],
                |row| {
                    Ok(Summary {
                        scenario_id: row.get(0)?,
                        scenario: row.get(1)?,
                        server: row.get(2)?,
                        mode: row.get(3)?,
                        rate_per_s: row.get(4)?,
                        ramp_s: row.get(5)?,
                        duration_s: row.get(6)?,
                        page_bytes: row.get(7)?,
                        clients: row.get(8)?,
                        max_requests: row.get(9)?,
                        offered: row.get(10)?,
                        sent: row.get(11)?,
                        answered: row.get(12)?,
                        resumed: row.get(13)?,
                        payload_bytes: row.get(14)?,
                        elapsed_ns: row.get(15)?,
                        client_cpu_ns: row.get(16)?,
                        server_cpu_ns: row.get(17)?,
                        profile_unavailable: row.get(18)?,
                        interrupted: row.get(19)?,
                    })
                },
            )
            .optional()?;
        Ok(summary)
    }

    /// Each phase's latency histogram, rebuilt from its stored buckets.
    fn load_latencies(&self, run_id: i64) -> Result<Latencies> {
        let mut latencies = Latencies::new();
        let mut buckets = self.connection.prepare(
            "SELECT phase, latency_us, count FROM load_histograms WHERE run_id = ?1
             ORDER BY phase, latency_us",
        )?;
        for bucket in buckets.query_map([run_id], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, i64>(2)?,
            ))
        })? {
            let (phase, latency_us, n) = bucket?;
            let histogram = latencies
                .phase_mut(&phase)
                .with_context(|| format!("load run {run_id} has the unknown phase '{phase}'"))?;
            histogram
                .record_n(latency_us.max(1) as u64, n.max(0) as u64)
                .with_context(|| format!("a latency of {latency_us} µs is out of range"))?;
        }
        Ok(latencies)
    }

    /// The errors by kind, and the first message of each kind (both sorted
    /// by kind, as the load driver keeps them).
    fn load_errors(&self, run_id: i64) -> Result<ErrorsByKind> {
        let mut errors = Vec::new();
        let mut first_error = Vec::new();
        let mut statement = self.connection.prepare(
            "SELECT kind, count, first_message FROM load_errors WHERE run_id = ?1 ORDER BY kind",
        )?;
        for row in statement.query_map([run_id], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, String>(2)?,
            ))
        })? {
            let (kind, n, message) = row?;
            let kind = ErrorKind::from_id(&kind)
                .with_context(|| format!("load run {run_id} has the unknown error '{kind}'"))?;
            errors.push((kind, count(n)));
            first_error.push((kind, message));
        }
        errors.sort();
        first_error.sort();
        Ok((errors, first_error))
    }

    /// The answers in each second of the run.
    fn load_answers_per_second(&self, run_id: i64) -> Result<Vec<usize>> {
        let mut statement = self
            .connection
            .prepare("SELECT answered FROM load_seconds WHERE run_id = ?1 ORDER BY second")?;
        let per_second = statement
            .query_map([run_id], |row| row.get::<_, i64>(0).map(count))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(per_second)
    }

    /// Per second of due time: requests due, answered, and their total
    /// latency's percentiles (None where none was answered).
    fn load_intervals(&self, run_id: i64) -> Result<Vec<Interval>> {
        let mut statement = self.connection.prepare(
            "SELECT offered, answered, p50_us, p90_us, p99_us, max_us FROM load_intervals
             WHERE run_id = ?1 ORDER BY second",
        )?;
        let intervals = statement
            .query_map([run_id], |row| {
                let us = |i: usize| {
                    row.get::<_, Option<i64>>(i)
                        .map(|v| v.map(|v| v.max(0) as u64))
                };
                let latency_us = match [us(2)?, us(3)?, us(4)?, us(5)?] {
                    [Some(p50), Some(p90), Some(p99), Some(max)] => Some([p50, p90, p99, max]),
                    _ => None,
                };
                Ok(Interval {
                    offered: count(row.get(0)?),
                    answered: count(row.get(1)?),
                    latency_us,
                })
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(intervals)
    }

    /// perf's shares per shared object, in the order perf gave them.
    fn load_profile(&self, run_id: i64) -> Result<Vec<(String, f64)>> {
        let mut statement = self.connection.prepare(
            "SELECT shared_object, percent FROM load_profile WHERE run_id = ?1 ORDER BY seq",
        )?;
        let shares = statement
            .query_map([run_id], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(shares)
    }

    /// What perf sampled, and the server's figures beside the profile; a
    /// run stored before they existed reads back with what it has and says
    /// why the rest is missing.
    fn load_server_figures(&self, run_id: i64) -> Result<(String, ServerFigures)> {
        let (profile_scope, embedded_json): (Option<String>, Option<String>) =
            self.connection.query_row(
                "SELECT profile_scope, embedded_json FROM load_summaries WHERE run_id = ?1",
                [run_id],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )?;
        let unreadable = || format!("load run {run_id} has unreadable embedded-server figures");
        let figures = match embedded_json {
            None => ServerFigures {
                embedded: None,
                symbol_categories: Err("not stored (a run from before tlslab kept them)".into()),
                counted: None,
                http: None,
                streams: None,
            },
            Some(json) if json.starts_with('[') => ServerFigures {
                embedded: Some(serde_json::from_str(&json).with_context(unreadable)?),
                symbol_categories: Err("not stored (a run from before tlslab kept them)".into()),
                counted: None,
                http: None,
                streams: None,
            },
            Some(json) => serde_json::from_str(&json).with_context(unreadable)?,
        };
        Ok((profile_scope.unwrap_or_default(), figures))
    }
}

/// The errors by kind with their counts, and the first message of each kind.
type ErrorsByKind = (Vec<(ErrorKind, usize)>, Vec<(ErrorKind, String)>);

/// A load run's row of `load_summaries` as stored (integers as SQLite holds
/// them; [`count`] and friends clamp them when the record is built).
struct Summary {
    scenario_id: String,
    scenario: String,
    server: String,
    mode: String,
    rate_per_s: f64,
    ramp_s: f64,
    duration_s: f64,
    page_bytes: i64,
    clients: i64,
    max_requests: i64,
    offered: i64,
    sent: i64,
    answered: i64,
    resumed: i64,
    payload_bytes: i64,
    elapsed_ns: i64,
    client_cpu_ns: i64,
    server_cpu_ns: Option<i64>,
    /// Why perf gave no profile; `None`: its shares are in `load_profile`.
    profile_unavailable: Option<String>,
    interrupted: bool,
}

impl Summary {
    /// The plan the run followed; the page body is not stored, so it is
    /// left empty (its size is in the path).
    fn plan(&self, run_id: i64) -> Result<Plan> {
        let Some(mode) = Mode::from_id(&self.mode) else {
            bail!("load run {run_id} has the unknown mode '{}'", self.mode);
        };
        Ok(Plan {
            rate: self.rate_per_s,
            ramp: Duration::from_secs_f64(self.ramp_s.max(0.0)),
            duration: Duration::from_secs_f64(self.duration_s.max(0.0)),
            path: format!("/page_{}", self.page_bytes),
            body: Vec::new(),
            mode,
            clients: count(self.clients),
            max_requests: count(self.max_requests),
            http: HttpVersion::Http1_1,
            streams: 1,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::LibraryInfo;
    use crate::store::fixtures::run_info;
    use crate::store::{RunInfo, RunKind};

    fn record(interrupted: bool, profile: Result<Vec<(String, f64)>, String>) -> LoadRecord {
        let profile_scope = "the server's worker process".to_string();
        let mut latencies = Latencies::new();
        for us in [120, 130, 150, 900, 40_000] {
            latencies.total.record(us).unwrap();
            latencies.handshake.record(us / 2).unwrap();
        }
        LoadRecord {
            scenario_id: "handshake_1.3_x25519_ecdsa_p256_aes128gcm".into(),
            scenario: "TLS 1.3 X25519 ECDSA P-256 aes128gcm".into(),
            server: "nginx 1.22.1".into(),
            plan: Plan {
                rate: 40.0,
                ramp: Duration::from_millis(500),
                duration: Duration::from_secs(2),
                path: "/page_1000".into(),
                body: vec![b'a'; 1000],
                mode: Mode::Resume,
                clients: 4,
                max_requests: 1000,
                http: HttpVersion::Http2,
                streams: 8,
            },
            result: LoadResult {
                offered: 70,
                sent: 6,
                answered: 5,
                errors: vec![(ErrorKind::Connect, 1)],
                first_error: vec![(ErrorKind::Connect, "connect: refused".into())],
                latencies,
                bytes: 5000,
                elapsed: Duration::from_millis(2_100),
                client_cpu_ns: 7_000_000,
                per_second: vec![3, 2, 0],
                intervals: vec![
                    Interval {
                        offered: 10,
                        answered: 3,
                        latency_us: Some([120, 150, 900, 900]),
                    },
                    Interval {
                        offered: 40,
                        answered: 0,
                        latency_us: None,
                    },
                ],
                resumed: 4,
                interrupted,
            },
            server_cpu_ns: Some(3_000_000),
            profile,
            profile_scope,
            categories: Ok(vec![("public key".into(), 70.0), ("kernel".into(), 30.0)]),
            embedded: None,
            counted: Some(Ok(ServerHandshakeCount {
                subject: crate::scenario::Subject::from_name("openssl").unwrap(),
                library: "OpenSSL 3".into(),
                valgrind: "valgrind-3.19.0".into(),
                handshakes: 3,
                server_instructions: 2_000_000.0,
                categories: vec![
                    ("public key".into(), 1_500_000.0),
                    ("hashing and KDF".into(), 500_000.0),
                ],
            })),
        }
    }

    fn run(store: &mut Store) -> i64 {
        store
            .begin_run(&RunInfo {
                libraries: vec![LibraryInfo {
                    subject: crate::scenario::Subject::from_name("nginx").unwrap(),
                    library: "nginx".into(),
                    version: "1.22.1".into(),
                }],
                ..run_info(RunKind::Load, "tlslab load")
            })
            .unwrap()
    }

    #[test]
    fn a_load_run_round_trips_with_its_percentiles() {
        let mut store = Store::open_in_memory().unwrap();
        let id = run(&mut store);
        let saved = record(true, Ok(vec![("libcrypto.so.3".into(), 61.5)]));
        store.save_load(id, &saved).unwrap();
        let loaded = store.load_load(id).unwrap().unwrap();
        assert_eq!(loaded.scenario_id, saved.scenario_id);
        assert_eq!(loaded.server, saved.server);
        assert_eq!(loaded.plan.mode, Mode::Resume);
        assert_eq!(
            (loaded.plan.http, loaded.plan.streams),
            (HttpVersion::Http2, 8)
        );
        assert_eq!(loaded.plan.path, "/page_1000");
        assert_eq!(loaded.plan.ramp, saved.plan.ramp);
        let (a, b) = (&loaded.result, &saved.result);
        assert_eq!(
            (a.offered, a.sent, a.answered, a.bytes, a.resumed),
            (b.offered, b.sent, b.answered, b.bytes, b.resumed)
        );
        assert_eq!((a.elapsed, a.client_cpu_ns), (b.elapsed, b.client_cpu_ns));
        assert_eq!(a.errors, b.errors);
        assert_eq!(a.first_error, b.first_error);
        assert_eq!(a.per_second, b.per_second);
        assert_eq!(a.intervals, b.intervals);
        assert!(a.interrupted);
        for (mine, theirs) in a.latencies.phases().iter().zip(b.latencies.phases()) {
            assert_eq!(percentiles(mine), percentiles(theirs));
            assert_eq!(mine.len(), theirs.len());
        }
        assert_eq!(loaded.server_cpu_ns, Some(3_000_000));
        assert_eq!(loaded.profile, saved.profile);
        assert_eq!(loaded.categories, saved.categories);
        assert_eq!(loaded.counted, saved.counted);

        // p99 by hand, as the README shows it.
        let p99: i64 = store
            .connection
            .query_row(
                "SELECT p99_us FROM load_phases WHERE run_id = ?1 AND phase = 'total'",
                [id],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(p99 as u64, b.latencies.total.value_at_percentile(99.0));
    }

    #[test]
    fn a_missing_profile_keeps_its_reason() {
        let mut store = Store::open_in_memory().unwrap();
        let id = run(&mut store);
        store
            .save_load(id, &record(false, Err("perf is not installed".into())))
            .unwrap();
        let loaded = store.load_load(id).unwrap().unwrap();
        assert_eq!(loaded.profile, Err("perf is not installed".to_string()));
        assert!(!loaded.result.interrupted);
        assert!(store.load_load(id + 1).unwrap().is_none());
    }

    #[test]
    fn a_run_stored_before_symbol_categories_reads_back() {
        let mut store = Store::open_in_memory().unwrap();
        let id = run(&mut store);
        store
            .save_load(id, &record(false, Err("perf is not installed".into())))
            .unwrap();
        let legacy = serde_json::to_string(&(ServerStats::default(), "openssl")).unwrap();
        store
            .connection
            .execute(
                "UPDATE load_summaries SET embedded_json = ?1 WHERE run_id = ?2",
                params![legacy, id],
            )
            .unwrap();
        let loaded = store.load_load(id).unwrap().unwrap();
        assert_eq!(loaded.embedded.unwrap().1.name(), "openssl");
        assert!(loaded.categories.unwrap_err().contains("not stored"));
    }
}
