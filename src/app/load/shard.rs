//! `load --shard I/N --start-at TIME`: this machine's part of a load that N
//! machines offer together (1/N of the rate, of the clients and of the
//! bound on requests), and the common wall-clock start it waits for, so
//! that every shard's seconds are the same seconds and `tlslab merge`
//! can join their runs into one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;

use super::super::session::usage;
use crate::scenario::{Shard, WallClock};
use crate::workload::load::Plan as LoadPlan;

/// The environment variable a job recipe sets to the common start when
/// `--start-at` is not given (deploy/slurm-load.sh, deploy/k8s-load-job.yaml).
pub(super) const START_AT_VARIABLE: &str = "TLSLAB_START_AT";

/// Which part of a load this machine offers, and from when.
#[derive(Debug, Clone)]
pub(super) struct Sharding {
    pub shard: Shard,
    /// When every shard's plan starts.
    pub start_at: WallClock,
    /// The whole load's plan, as the command line gave it (the shard's own
    /// is its part of it).
    pub whole: LoadPlan,
}

impl Sharding {
    /// The sharding `--shard` and `--start-at` (or `$TLSLAB_START_AT`) ask
    /// for, with `plan` cut to this shard's part; `None` without `--shard`.
    /// Refused: no start, a start already passed, fewer clients or
    /// requests than shards.
    pub fn of(
        shard: Option<Shard>,
        start_at: Option<WallClock>,
        plan: &mut LoadPlan,
    ) -> Result<Option<Sharding>> {
        let Some(shard) = shard else {
            return Ok(None);
        };
        let start_at = match start_at {
            Some(time) => time,
            None => match std::env::var(START_AT_VARIABLE) {
                Ok(text) => text
                    .parse()
                    .map_err(|error| usage(format!("{START_AT_VARIABLE}: {error}")))?,
                Err(_) => {
                    return Err(usage(format!(
                        "--shard {shard} needs the common start of every shard: --start-at TIME (RFC 3339 or Unix seconds), or {START_AT_VARIABLE} in the environment (the recipes in deploy/ set it)"
                    )))
                }
            },
        };
        check_not_passed(start_at)?;
        for (what, total) in [
            ("--clients", plan.clients),
            ("--max-requests", plan.max_requests),
        ] {
            if total < shard.count as usize {
                return Err(usage(format!(
                    "{what} {total} cannot be split among {} shards (each needs at least one)",
                    shard.count
                )));
            }
        }
        let whole = plan.clone();
        plan.rate = whole.rate / shard.count as f64;
        plan.clients = shard.share(whole.clients);
        plan.max_requests = shard.share(whole.max_requests);
        Ok(Some(Sharding {
            shard,
            start_at,
            whole,
        }))
    }

    /// How much later than the common start this shard's plan begins:
    /// shard i of N by (i - 1) / rate of the whole load, so that at a
    /// constant rate the shards' requests together are due evenly spaced,
    /// as one machine's would be, rather than N at a time.
    pub fn offset(&self) -> Duration {
        Duration::from_secs_f64((self.shard.index - 1) as f64 / self.whole.rate)
    }

    /// Waits for this shard's start (the common start plus its
    /// [`offset`](Self::offset); Ctrl-C ends the wait) and returns it as an
    /// instant of this process's clock; a common start passed by now is
    /// refused (a shard late by seconds would offer its part in other
    /// seconds than the others, and the merged run would not be one load).
    pub fn wait_for_start(&self, quiet: bool, interrupt: &AtomicBool) -> Result<Instant> {
        let left = check_not_passed(self.start_at)? + self.offset();
        if !quiet {
            eprintln!(
                "shard {}: the load starts at {} (in {:.1} s)",
                self.shard,
                self.start_at,
                left.as_secs_f64()
            );
        }
        let start = Instant::now() + left;
        while !interrupt.load(Ordering::Relaxed) {
            let now = Instant::now();
            if now >= start {
                break;
            }
            std::thread::sleep((start - now).min(Duration::from_millis(50)));
        }
        Ok(start)
    }
}

/// The time left until `start_at`, or the usage error of a start already
/// passed (exit status 2; nothing has been sent).
fn check_not_passed(start_at: WallClock) -> Result<Duration> {
    let now = WallClock::now();
    start_at.until(now).map_err(|ago| {
        usage(format!(
            "the common start {start_at} passed {:.1} s ago (it is {now}): this shard would offer its part in other seconds than the others, so it sends nothing; give every shard a later --start-at",
            ago.as_secs_f64()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::load::Mode;

    fn plan() -> LoadPlan {
        LoadPlan {
            rate: 300.0,
            ramp: Duration::ZERO,
            duration: Duration::from_secs(2),
            path: "/page_1000".into(),
            body: Vec::new(),
            mode: Mode::NewConnection,
            clients: 64,
            max_requests: 1_000_000,
            http: crate::workload::load::HttpVersion::Http1_1,
            streams: 1,
        }
    }

    #[test]
    fn a_shard_offers_its_part_of_the_rate_clients_and_requests() {
        let mut part = plan();
        let start = WallClock::now().after(Duration::from_secs(60));
        let sharding = Sharding::of(Some("2/3".parse().unwrap()), Some(start), &mut part)
            .unwrap()
            .unwrap();
        assert_eq!(part.rate, 100.0);
        assert_eq!((part.clients, part.max_requests), (21, 333_333));
        assert_eq!(sharding.whole.clients, 64);
        assert_eq!(sharding.start_at, start);
        // Shard 2's requests fall between shard 1's and shard 3's.
        assert_eq!(sharding.offset(), Duration::from_secs_f64(1.0 / 300.0));
    }

    #[test]
    fn a_start_already_passed_is_refused_and_says_so() {
        let past = WallClock::now().after(Duration::ZERO);
        let past = WallClock {
            unix_ms: past.unix_ms - 3_000,
        };
        let error = Sharding::of(Some("1/2".parse().unwrap()), Some(past), &mut plan())
            .unwrap_err()
            .to_string();
        assert!(error.contains("passed 3."), "{error}");
        assert!(error.contains("sends nothing"), "{error}");
        let mut few = LoadPlan {
            clients: 1,
            ..plan()
        };
        let later = WallClock::now().after(Duration::from_secs(60));
        let error = Sharding::of(Some("1/2".parse().unwrap()), Some(later), &mut few)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("--clients 1 cannot be split among 2"),
            "{error}"
        );
    }
}
