//! The load charts: latency percentiles per phase (from each request's due
//! time for the total), answers per second over the run against the rate
//! offered, and the total latency's percentiles against the offered rate,
//! one point per second of the run.

use super::{Bar, Figure, Layout};
use crate::workload::load::{schedule, LoadResult, Plan, INTERVAL_PERCENTILES, PERCENTILES};

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
    if let Some(figure) = latency_against_rate(plan, result) {
        figures.push(figure);
    }
    figures
}

/// The percentiles of the latency-against-offered-rate chart (of
/// [`INTERVAL_PERCENTILES`]: the maximum is left out).
const LINES: usize = 3;

/// p50, p90 and p99 of the total latency of the requests due in each
/// second, against that second's offered rate (None when no second has an
/// answer, e.g. a run stored before the seconds were kept).
fn latency_against_rate(plan: &Plan, result: &LoadResult) -> Option<Figure> {
    let planned_s = plan.duration.as_secs_f64();
    let bars: Vec<Bar> = result
        .intervals
        .iter()
        .enumerate()
        .filter_map(|(second, interval)| {
            let latency_us = interval.latency_us?;
            // The last second of a plan may be cut short.
            let length_s = (planned_s - second as f64).min(1.0);
            (length_s > 0.0).then(|| Bar {
                x: Some(interval.offered as f64 / length_s),
                ..Bar::new(
                    format!("second {second}"),
                    latency_us[..LINES]
                        .iter()
                        .map(|us| Some(*us as f64 / 1e3))
                        .collect(),
                )
            })
        })
        .collect();
    if bars.is_empty() {
        return None;
    }
    let mut notes = vec![
        "One point per second of the run: x, the requests due in it by the plan (per second); y, the latency from due time to last byte of those answered (2 significant digits).".to_string(),
    ];
    if plan.ramp.is_zero() {
        notes.push("Without --ramp every second offers the planned rate, so the points stand on one vertical line; a ramp spreads them over the rates.".to_string());
    }
    Some(Figure {
        id: "load_latency_rate".to_string(),
        title: format!(
            "Latency against offered rate ({} connections)",
            plan.mode.id()
        ),
        axis: "latency (ms)".to_string(),
        series: INTERVAL_PERCENTILES[..LINES]
            .iter()
            .map(|p| format!("p{p}"))
            .collect(),
        layout: Layout::Lines {
            x_axis: "offered rate (req/s)",
        },
        bars,
        reference: None,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::report::plot::svg;
    use crate::workload::load::{Interval, Latencies, Mode};

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
            http: crate::workload::load::HttpVersion::Http1_1,
            streams: 1,
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
            intervals: (0..seconds)
                .map(|second| Interval {
                    offered: 10 * (second + 1),
                    answered: 10,
                    latency_us: Some(
                        [1_000, 2_000, 40_000, 50_000].map(|us| us * (second as u64 + 1)),
                    ),
                })
                .collect(),
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

    #[test]
    fn latency_is_drawn_against_the_offered_rate_one_line_per_percentile() {
        let (mut plan, mut result) = run(3);
        // The last second is half planned: its 30 requests are 60 per second.
        plan.duration = Duration::from_millis(2_500);
        result.intervals.push(Interval {
            offered: 0,
            answered: 0,
            latency_us: None,
        });
        let figures = figures(&plan, &result, &[]);
        let chart = figures
            .iter()
            .find(|f| f.id == "load_latency_rate")
            .unwrap();
        assert_eq!(chart.series, ["p50", "p90", "p99"]);
        let xs: Vec<_> = chart.bars.iter().map(|b| b.x.unwrap()).collect();
        assert_eq!(xs, [10.0, 20.0, 60.0]);
        assert_eq!(chart.bars[1].values, [Some(2.0), Some(4.0), Some(80.0)]);

        let svg = svg(chart).unwrap();
        // One line per percentile, in its series' colour.
        for colour in ["#1F77B4", "#FF7F0E", "#2CA02C"] {
            let lines = svg
                .split("<polyline")
                .skip(1)
                .filter(|l| l[..l.find('>').unwrap()].contains(&format!("stroke=\"{colour}\"")))
                .count();
            assert_eq!(lines, 1, "{colour}: {svg}");
        }
        let texts = crate::report::plot::tests::svg_texts(&svg);
        for expected in [
            "Latency against offered rate (new connections)",
            "offered rate (req/s)",
            "latency (ms) (log scale)",
            "p50",
            "p90",
            "p99",
        ] {
            // The names are in the legend and at the end of each line.
            assert!(
                texts.iter().any(|t| t == expected),
                "no '{expected}' in {texts:?}"
            );
        }
        assert_eq!(texts.iter().filter(|t| *t == "p99").count(), 2, "{texts:?}");
    }

    #[test]
    fn a_run_without_seconds_has_no_latency_against_rate_chart() {
        let (plan, mut result) = run(2);
        result.intervals.clear();
        assert!(figures(&plan, &result, &[])
            .iter()
            .all(|f| f.id != "load_latency_rate"));
    }
}
