//! The shards of one load joined into one result: the parts of a load that
//! several machines offered from a common start (`load --shard i/n`). Counts,
//! bytes, errors and the clients' CPU are summed; each phase's latency
//! percentiles come from the shards' HDR histograms added bucket by bucket,
//! so they are exactly those of all requests (never averages of
//! percentiles); answers per second are summed second by second (the
//! shards' seconds are the same wall-clock seconds, counted from the common
//! start). A second's latency percentiles are kept only where one shard
//! alone answered in it: the shards keep percentiles per second, not their
//! histograms, and percentiles do not add.

use std::collections::BTreeMap;

use super::{ErrorKind, Interval, Latencies, LoadResult};

/// The shards' results as one load's.
pub fn merge(parts: &[&LoadResult]) -> LoadResult {
    let sum = |field: fn(&LoadResult) -> usize| parts.iter().map(|p| field(p)).sum();
    let mut latencies = Latencies::new();
    let mut errors: BTreeMap<ErrorKind, usize> = BTreeMap::new();
    let mut first_error: BTreeMap<ErrorKind, String> = BTreeMap::new();
    let mut per_second: Vec<usize> = Vec::new();
    let mut intervals: Vec<Interval> = Vec::new();
    // Per second, how many shards answered in it.
    let mut answering: Vec<usize> = Vec::new();
    for part in parts {
        latencies.add(&part.latencies);
        for (kind, count) in &part.errors {
            *errors.entry(*kind).or_default() += count;
        }
        for (kind, message) in &part.first_error {
            first_error.entry(*kind).or_insert_with(|| message.clone());
        }
        if per_second.len() < part.per_second.len() {
            per_second.resize(part.per_second.len(), 0);
        }
        for (total, answered) in per_second.iter_mut().zip(&part.per_second) {
            *total += answered;
        }
        for (second, interval) in part.intervals.iter().enumerate() {
            if intervals.len() <= second {
                intervals.resize(
                    second + 1,
                    Interval {
                        offered: 0,
                        answered: 0,
                        latency_us: None,
                    },
                );
                answering.resize(second + 1, 0);
            }
            let merged = &mut intervals[second];
            merged.offered += interval.offered;
            merged.answered += interval.answered;
            if interval.answered > 0 {
                answering[second] += 1;
                merged.latency_us = interval.latency_us;
            }
        }
    }
    for (interval, shards) in intervals.iter_mut().zip(answering) {
        if shards > 1 {
            interval.latency_us = None;
        }
    }
    LoadResult {
        offered: sum(|p| p.offered),
        sent: sum(|p| p.sent),
        answered: sum(|p| p.answered),
        errors: errors.into_iter().collect(),
        first_error: first_error.into_iter().collect(),
        latencies,
        bytes: parts.iter().map(|p| p.bytes).sum(),
        elapsed: parts.iter().map(|p| p.elapsed).max().unwrap_or_default(),
        client_cpu_ns: parts.iter().map(|p| p.client_cpu_ns).sum(),
        per_second,
        intervals,
        resumed: sum(|p| p.resumed),
        interrupted: parts.iter().any(|p| p.interrupted),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{percentiles, PERCENTILES};
    use super::*;
    use std::time::Duration;

    fn result(latencies: Latencies, per_second: Vec<usize>) -> LoadResult {
        let answered = latencies.total.len() as usize;
        LoadResult {
            offered: answered + 1,
            sent: answered + 1,
            answered,
            errors: vec![(ErrorKind::Timeout, 1)],
            first_error: vec![(ErrorKind::Timeout, "late".into())],
            latencies,
            bytes: 1000 * answered as u64,
            elapsed: Duration::from_millis(2_000 + answered as u64),
            client_cpu_ns: 1_000_000,
            per_second,
            intervals: vec![Interval {
                offered: answered + 1,
                answered,
                latency_us: Some([1, 2, 3, 4]),
            }],
            resumed: 0,
            interrupted: false,
        }
    }

    /// The nearest-rank percentile of sorted raw values.
    fn nearest_rank(sorted: &[u64], percentile: f64) -> u64 {
        let rank = ((percentile / 100.0) * sorted.len() as f64).ceil() as usize;
        sorted[rank.clamp(1, sorted.len()) - 1]
    }

    #[test]
    fn merged_histograms_give_exactly_the_percentiles_of_all_raw_latencies() {
        // Three shards of different sizes and latency ranges (one with a
        // long tail), from a fixed pseudo-random sequence.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |bound: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % bound
        };
        let mut raw = Vec::new();
        let mut shards = Vec::new();
        for (requests, floor_us, spread_us) in
            [(700, 900, 2_000), (1_300, 1_100, 600), (50, 5_000, 400_000)]
        {
            let mut latencies = Latencies::new();
            for _ in 0..requests {
                let total = floor_us + next(spread_us);
                latencies.total.record(total).unwrap();
                latencies.handshake.record(total / 3).unwrap();
                raw.push(total);
            }
            shards.push(result(latencies, vec![requests / 2, requests / 2]));
        }
        let merged = merge(&shards.iter().collect::<Vec<_>>());

        // The same histogram as one machine recording every request...
        let mut all = Latencies::new();
        for &total in &raw {
            all.total.record(total).unwrap();
            all.handshake.record(total / 3).unwrap();
        }
        for (mine, whole) in merged.latencies.phases().iter().zip(all.phases()) {
            assert_eq!(percentiles(mine), percentiles(whole));
            assert_eq!(mine.len(), whole.len());
        }
        // ... and, to the histogram's 3 significant digits, the raw
        // latencies' own percentiles.
        raw.sort_unstable();
        let merged_total = percentiles(&merged.latencies.total).unwrap();
        for (&percentile, &value) in PERCENTILES.iter().zip(&merged_total) {
            let exact = nearest_rank(&raw, percentile);
            assert!(
                value.abs_diff(exact) as f64 <= exact as f64 * 0.001 + 1.0,
                "p{percentile}: {value} µs from the histograms, {exact} µs from the raw latencies"
            );
        }
        // Averaging the shards' percentiles would be far off at p99.
        let mean_p99 = shards
            .iter()
            .map(|s| s.latencies.total.value_at_percentile(99.0))
            .sum::<u64>()
            / 3;
        assert!(
            mean_p99.abs_diff(merged_total[2]) > merged_total[2] / 5,
            "the mean of the shards' p99 {mean_p99} µs, the p99 of all {} µs",
            merged_total[2]
        );
    }

    #[test]
    fn counts_errors_seconds_and_cpu_are_summed() {
        let mut one = Latencies::new();
        one.total.record(1_000).unwrap();
        let mut two = Latencies::new();
        two.total.record(2_000).unwrap();
        two.total.record(3_000).unwrap();
        let first = result(one, vec![1, 0]);
        let mut second = result(two, vec![1, 1, 0]);
        second.interrupted = true;
        second.intervals.push(Interval {
            offered: 3,
            answered: 2,
            latency_us: Some([5, 6, 7, 8]),
        });
        let merged = merge(&[&first, &second]);
        assert_eq!((merged.offered, merged.sent, merged.answered), (5, 5, 3));
        assert_eq!(merged.errors, vec![(ErrorKind::Timeout, 2)]);
        assert_eq!(merged.bytes, 3000);
        assert_eq!(merged.client_cpu_ns, 2_000_000);
        assert_eq!(merged.per_second, vec![2, 1, 0]);
        assert_eq!(merged.elapsed, Duration::from_millis(2_002));
        assert!(merged.interrupted);
        // Second 0: both shards answered, so no percentiles; second 1: one.
        assert_eq!(
            (merged.intervals[0].offered, merged.intervals[0].answered),
            (5, 3)
        );
        assert_eq!(merged.intervals[0].latency_us, None);
        assert_eq!(merged.intervals[1].latency_us, Some([5, 6, 7, 8]));
    }
}
