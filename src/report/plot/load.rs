//! The load charts: latency percentiles per phase (from each request's due
//! time for the total), and answers per second over the run against the
//! rate offered.

use super::{Bar, Figure, Layout};
use crate::workload::load::{schedule, LoadResult, Plan, PERCENTILES};

/// The percentiles drawn (the maximum stays in the table: one outlier
/// would squeeze every other bar).
const DRAWN: usize = 4;

/// Most rows of the rate chart: longer runs are drawn in windows of
/// several seconds.
const MOST_WINDOWS: usize = 60;

/// The charts of a load run; `phases` are the view's (name, histogram) rows.
pub fn figures(
    plan: &Plan,
    result: &LoadResult,
    phases: &[(&str, &hdrhistogram::Histogram<u64>)],
) -> Vec<Figure> {
    let bars = phases
        .iter()
        .map(|(name, histogram)| {
            if histogram.is_empty() {
                return Bar::missing(*name, DRAWN, "no request reached this phase");
            }
            let values = PERCENTILES[..DRAWN]
                .iter()
                .map(|p| Some(histogram.value_at_percentile(*p) as f64 / 1e3))
                .collect();
            Bar::new(*name, values)
        })
        .collect();
    let mut figures = vec![Figure {
        id: "load_latency".to_string(),
        title: format!(
            "Latency per phase ({} connections, {:.0} req/s offered)",
            plan.mode.id(),
            plan.rate
        ),
        axis: "latency (ms)".to_string(),
        series: PERCENTILES[..DRAWN]
            .iter()
            .map(|p| format!("p{p}"))
            .collect(),
        layout: Layout::Grouped,
        bars,
        reference: None,
        notes: vec!["Percentiles from HDR histograms; total counts from the moment each request was due, so queueing shows. The maximum is in the table.".to_string()],
    }];

    // Offered against answered, second by second (or per window).
    let mut offered = vec![0usize; result.per_second.len()];
    for due in schedule(plan.rate, plan.ramp, plan.duration, result.offered) {
        if let Some(count) = offered.get_mut(due.as_secs() as usize) {
            *count += 1;
        }
    }
    // The last second is often a sliver after the last answer: left out
    // when nothing was due or answered in it.
    let mut seconds = result.per_second.len();
    while seconds > 1 && offered[seconds - 1] == 0 && result.per_second[seconds - 1] == 0 {
        seconds -= 1;
    }
    if seconds > 0 && result.offered > 0 {
        let window = seconds.div_ceil(MOST_WINDOWS);
        let bars = (0..seconds)
            .step_by(window)
            .map(|from| {
                let to = (from + window).min(seconds);
                let per_second = |counts: &[usize]| {
                    Some(counts[from..to].iter().sum::<usize>() as f64 / (to - from) as f64)
                };
                Bar::new(
                    format!("{from}–{to} s"),
                    vec![per_second(&offered), per_second(&result.per_second)],
                )
            })
            .collect();
        figures.push(Figure {
            id: "load_rate".to_string(),
            title: "Requests offered and answered per second over the run".to_string(),
            axis: "requests per second".to_string(),
            series: vec!["offered (due)".to_string(), "answered".to_string()],
            layout: Layout::Grouped,
            bars,
            reference: Some((plan.rate, format!("the planned rate, {:.0} req/s", plan.rate))),
            notes: vec!["Offered: requests due in that second by the plan; answered: requests whose last byte arrived in it (a slow server answers later than due).".to_string()],
        });
    }
    figures
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::workload::load::{Latencies, Mode};

    fn run(seconds: usize) -> (Plan, LoadResult) {
        let plan = Plan {
            rate: 10.0,
            ramp: Duration::ZERO,
            duration: Duration::from_secs(seconds as u64),
            path: "/page_1".into(),
            body: Vec::new(),
            mode: Mode::NewConnection,
            clients: 1,
            max_requests: 1_000_000,
        };
        let mut latencies = Latencies::new();
        for us in [1_000, 2_000, 3_000] {
            latencies.total.record(us).unwrap();
        }
        let result = LoadResult {
            offered: 10 * seconds,
            sent: 10 * seconds,
            answered: 10 * seconds,
            errors: Vec::new(),
            first_error: Vec::new(),
            latencies,
            bytes: 0,
            elapsed: Duration::from_secs(seconds as u64),
            client_cpu_ns: 0,
            per_second: vec![10; seconds],
            resumed: 0,
            interrupted: false,
        };
        (plan, result)
    }

    #[test]
    fn phases_without_requests_are_said_and_percentiles_are_in_ms() {
        let (plan, mut result) = run(2);
        result.per_second.push(0);
        let phases = [
            ("handshake", &result.latencies.handshake),
            ("total", &result.latencies.total),
        ];
        let figures = figures(&plan, &result, &phases);
        let latency = &figures[0];
        assert_eq!(latency.series, ["p50", "p90", "p99", "p99.9"]);
        assert!(latency.bars[0].missing.is_some());
        let p50 = latency.bars[1].values[0].unwrap();
        assert!((1.99..=2.01).contains(&p50), "{p50}");
        // Offered and answered, 10 per second each.
        let rate = &figures[1];
        assert_eq!(rate.bars.len(), 2);
        assert_eq!(rate.bars[0].values, [Some(10.0), Some(10.0)]);
    }

    #[test]
    fn a_long_run_is_drawn_in_windows() {
        let (plan, result) = run(150);
        let figures = figures(&plan, &result, &[]);
        let rate = &figures[1];
        // 150 s in windows of 3 s: 50 rows, each still per second.
        assert_eq!(rate.bars.len(), 50);
        assert_eq!(rate.bars[0].label, "0–3 s");
        assert_eq!(rate.bars[49].values, [Some(10.0), Some(10.0)]);
    }
}
