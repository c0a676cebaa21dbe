//! Summaries of raw samples, confidence intervals and ratios. Pure functions
//! over stored samples: nothing here runs inside a timing loop.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// The z value of a two-sided 95% interval (the first guess of the
/// median interval's ranks).
const Z95: f64 = 1.959_963_984_540_054;

/// A closed interval `[low, high]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
}

impl Interval {
    /// Half the width of the interval relative to `centre` (0.01 = ±1%).
    pub fn relative_half_width(&self, centre: f64) -> f64 {
        if centre == 0.0 {
            return f64::INFINITY;
        }
        (self.high - self.low) / 2.0 / centre.abs()
    }
}

/// The summary statistics of one series of samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    pub count: usize,
    pub mean: f64,
    pub median: f64,
    pub stdev: f64,
    pub min: f64,
    pub max: f64,
    pub p99: f64,
    /// 95% confidence interval of the mean (Student's t).
    pub mean_ci95: Interval,
    /// Confidence interval of the median (order statistics, distribution-free):
    /// 95% where the sample allows it, else `[min, max]` with its lower coverage.
    pub median_ci95: Interval,
    /// The real coverage of `median_ci95` (0.95 or more from six samples on;
    /// 0.9375 at five, 0.875 at four...).
    pub median_ci_coverage: f64,
}

/// Summarises samples; `None` for an empty series.
pub fn summarize(samples: &[f64]) -> Option<Summary> {
    if samples.is_empty() {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let count = sorted.len();
    let mean = sorted.iter().sum::<f64>() / count as f64;
    let stdev = sample_stdev(&sorted, mean);
    let half_width = t_critical_95(count.saturating_sub(1)) * stdev / (count as f64).sqrt();
    let median_ci = median_ci_sorted(&sorted);
    Some(Summary {
        count,
        mean,
        median: quantile_sorted(&sorted, 0.5),
        stdev,
        min: sorted[0],
        max: sorted[count - 1],
        p99: quantile_sorted(&sorted, 0.99),
        mean_ci95: Interval {
            low: mean - half_width,
            high: mean + half_width,
        },
        median_ci95: median_ci.interval,
        median_ci_coverage: median_ci.coverage,
    })
}

/// The sample standard deviation (n - 1 in the denominator); 0 for one sample.
fn sample_stdev(samples: &[f64], mean: f64) -> f64 {
    if samples.len() < 2 {
        return 0.0;
    }
    let squares: f64 = samples.iter().map(|x| (x - mean) * (x - mean)).sum();
    (squares / (samples.len() - 1) as f64).sqrt()
}

/// The two-sided 95% critical value of Student's t (its 0.975 quantile),
/// exact for every number of degrees of freedom; infinite for 0.
pub fn t_critical_95(degrees_of_freedom: usize) -> f64 {
    if degrees_of_freedom == 0 {
        return f64::INFINITY;
    }
    StudentsT::new(0.0, 1.0, degrees_of_freedom as f64)
        .expect("a positive number of degrees of freedom")
        .inverse_cdf(0.975)
}

/// The `q` quantile of sorted samples, interpolating linearly between
/// neighbours (Hyndman and Fan type 7, as R and NumPy default to).
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    assert!(!sorted.is_empty(), "quantile of an empty series");
    let position = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let below = position.floor() as usize;
    let above = position.ceil() as usize;
    let fraction = position - below as f64;
    sorted[below] + (sorted[above] - sorted[below]) * fraction
}

/// An interval of the median from order statistics, with its real coverage.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MedianInterval {
    pub interval: Interval,
    /// The probability that the interval holds the true median (exact,
    /// from the binomial distribution; no assumption about the samples).
    pub coverage: f64,
}

/// The coverage of `[X(k), X(n+1-k)]` for the median: P(k <= B <= n-k)
/// with B ~ Binomial(n, 1/2), computed in log space so large n stay exact.
fn order_statistic_coverage(n: usize, k: usize) -> f64 {
    if k == 0 || 2 * k > n {
        return 0.0;
    }
    // P(B <= k - 1), summed term by term: C(n, i) / 2^n.
    let mut log_term = -(n as f64) * std::f64::consts::LN_2; // i = 0
    let mut tail = log_term.exp();
    for i in 1..k {
        log_term += ((n - i + 1) as f64).ln() - (i as f64).ln();
        tail += log_term.exp();
    }
    (1.0 - 2.0 * tail).max(0.0)
}

/// A distribution-free confidence interval of the median: the order
/// statistics `X(k)` and `X(n+1-k)` with the largest `k` whose exact
/// binomial coverage is at least 95%. Below six samples no pair reaches
/// 95%: the interval is then `[min, max]` and its coverage says how much it
/// holds (93.75% at five samples).
pub fn median_ci_sorted(sorted: &[f64]) -> MedianInterval {
    median_ci_sorted_at(sorted, 0.95)
}

/// As [`median_ci_sorted`], at another level of confidence (such as 0.975).
pub fn median_ci_sorted_at(sorted: &[f64], level: f64) -> MedianInterval {
    let n = sorted.len();
    if n < 2 {
        let only = sorted.first().copied().unwrap_or(f64::NAN);
        return MedianInterval {
            interval: Interval {
                low: only,
                high: only,
            },
            coverage: 0.0,
        };
    }
    // Start near the normal approximation and step to the exact rank.
    let guess = (n as f64 / 2.0 - Z95 * (n as f64).sqrt() / 2.0).floor() as i64;
    let mut k = guess.clamp(1, (n / 2) as i64) as usize;
    while k > 1 && order_statistic_coverage(n, k) < level {
        k -= 1;
    }
    while 2 * (k + 1) <= n && order_statistic_coverage(n, k + 1) >= level {
        k += 1;
    }
    MedianInterval {
        interval: Interval {
            low: sorted[k - 1],
            high: sorted[n - k],
        },
        coverage: order_statistic_coverage(n, k),
    }
}

/// The ratio of the medians of two independent samples (two runs, which
/// share no rounds to pair), `numerator / denominator`, with a 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MedianRatio {
    pub value: f64,
    pub ci95: Interval,
    /// A lower bound of the probability that the interval holds the true
    /// ratio; under 0.95 when a side has fewer than seven samples.
    pub coverage: f64,
    pub numerator_median: f64,
    pub denominator_median: f64,
    pub numerator_count: usize,
    pub denominator_count: usize,
}

/// The ratio of two samples' medians with a conservative, distribution-free
/// 95% interval: each median's exact order-statistic interval at 97.5%,
/// combined as `[low_n / high_d, high_n / low_d]`. Both intervals hold at
/// once with probability at least 95% (Bonferroni), whatever the
/// distributions, so the ratio's interval holds at least as often. `None`
/// when a side has no samples or a non-positive value.
pub fn median_ratio(numerator: &[f64], denominator: &[f64]) -> Option<MedianRatio> {
    let sorted = |values: &[f64]| {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        sorted
    };
    let (top, bottom) = (sorted(numerator), sorted(denominator));
    if top.is_empty() || bottom.is_empty() || top[0] <= 0.0 || bottom[0] <= 0.0 {
        return None;
    }
    let (top_ci, bottom_ci) = (
        median_ci_sorted_at(&top, 0.975),
        median_ci_sorted_at(&bottom, 0.975),
    );
    let (top_median, bottom_median) = (quantile_sorted(&top, 0.5), quantile_sorted(&bottom, 0.5));
    Some(MedianRatio {
        value: top_median / bottom_median,
        ci95: Interval {
            low: top_ci.interval.low / bottom_ci.interval.high,
            high: top_ci.interval.high / bottom_ci.interval.low,
        },
        coverage: (top_ci.coverage + bottom_ci.coverage - 1.0).max(0.0),
        numerator_median: top_median,
        denominator_median: bottom_median,
        numerator_count: top.len(),
        denominator_count: bottom.len(),
    })
}

/// The ratio of the medians of two series of counts (instructions, bytes:
/// the same figure on any machine, up to the work a few random bits move),
/// `numerator / denominator`, with the range of every pair as its interval:
/// `[min_n / max_d, max_n / min_d]`. No order statistics: a count does not
/// vary with the machine, so a ratio whose whole range lies above 1 is a
/// change of the code path, whatever the number of samples. `None` when a
/// side has no samples or a non-positive value.
pub fn counted_ratio(numerator: &[f64], denominator: &[f64]) -> Option<MedianRatio> {
    let (Some(median_n), Some(median_d)) = (median(numerator), median(denominator)) else {
        return None;
    };
    let low = |values: &[f64]| values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = |values: &[f64]| values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if low(numerator) <= 0.0 || low(denominator) <= 0.0 {
        return None;
    }
    Some(MedianRatio {
        value: median_n / median_d,
        ci95: Interval {
            low: low(numerator) / high(denominator),
            high: high(numerator) / low(denominator),
        },
        coverage: 1.0,
        numerator_median: median_n,
        denominator_median: median_d,
        numerator_count: numerator.len(),
        denominator_count: denominator.len(),
    })
}

/// The 95% interval of the median of sorted samples (see [`median_ci_sorted`]).
pub fn median_ci95_sorted(sorted: &[f64]) -> Interval {
    median_ci_sorted(sorted).interval
}

/// Half the width of the median's 95% interval relative to the median; what
/// `--precision` is compared with. Infinite while the sample is too small
/// for a 95% interval (fewer than six values).
pub fn median_precision(samples: &[f64]) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = quantile_sorted(&sorted, 0.5);
    let ci = median_ci_sorted(&sorted);
    if ci.coverage < 0.95 {
        return f64::INFINITY;
    }
    ci.interval.relative_half_width(median)
}

/// The median of unsorted values; `None` for none.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(quantile_sorted(&sorted, 0.5))
}

/// One value per round: the median of a cell's samples taken in each round,
/// in round order. `samples` are (round, value) pairs in any order.
pub fn round_medians(samples: &[(u32, f64)]) -> Vec<(u32, f64)> {
    let mut by_round: std::collections::BTreeMap<u32, Vec<f64>> = Default::default();
    for &(round, value) in samples {
        by_round.entry(round).or_default().push(value);
    }
    by_round
        .into_iter()
        .filter_map(|(round, values)| median(&values).map(|m| (round, m)))
        .collect()
}

/// A ratio of one cell to another estimated from same-round pairs: the
/// median of the per-round ratios, with the order-statistic interval of
/// that median.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PairedRatio {
    pub value: f64,
    pub ci95: Interval,
    /// The real coverage of `ci95` (below 0.95 with fewer than six pairs).
    pub coverage: f64,
    /// How many rounds both cells were sampled in.
    pub pairs: usize,
}

impl PairedRatio {
    /// Half the interval's width relative to the ratio; infinite while
    /// there are too few pairs for a 95% interval.
    pub fn precision(&self) -> f64 {
        if self.coverage < 0.95 {
            f64::INFINITY
        } else {
            self.ci95.relative_half_width(self.value)
        }
    }

    /// The inverse ratio (denominator over numerator), its interval flipped.
    pub fn inverse(&self) -> Self {
        Self {
            value: 1.0 / self.value,
            ci95: Interval {
                low: 1.0 / self.ci95.high,
                high: 1.0 / self.ci95.low,
            },
            ..*self
        }
    }
}

/// The ratio numerator / denominator from per-round values (as
/// [`round_medians`] gives them): one ratio per round both have, then their
/// median and its interval. `None` without a common round.
pub fn paired_ratio(numerator: &[(u32, f64)], denominator: &[(u32, f64)]) -> Option<PairedRatio> {
    let mut ratios = Vec::new();
    let mut j = 0;
    for &(round, value) in numerator {
        while j < denominator.len() && denominator[j].0 < round {
            j += 1;
        }
        if j < denominator.len() && denominator[j].0 == round && denominator[j].1 > 0.0 {
            ratios.push(value / denominator[j].1);
        }
    }
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_by(f64::total_cmp);
    let ci = median_ci_sorted(&ratios);
    Some(PairedRatio {
        value: quantile_sorted(&ratios, 0.5),
        ci95: ci.interval,
        coverage: ci.coverage,
        pairs: ratios.len(),
    })
}

/// How far the machine's speed moved during a run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Drift {
    /// Rounds the index rests on.
    pub rounds: usize,
    /// The per-round speed index (cost relative to each cell's own median,
    /// median over the cells sampled that round; 1.0 = the run's typical
    /// speed, 1.2 = everything took 20% longer): its 10th and 90th percentiles.
    pub p10: f64,
    pub p90: f64,
    /// Its lowest and highest value.
    pub min: f64,
    pub max: f64,
}

impl Drift {
    /// The 10th-90th percentile range of the speed index, relative (0.05 = 5%).
    pub fn spread(&self) -> f64 {
        self.p90 - self.p10
    }
}

/// The machine's drift from every cell's per-round values (as
/// [`round_medians`] gives them): in each round, each cell's value over its
/// own median, and the median of those over the cells. `None` with fewer
/// than two rounds.
pub fn drift(cells: &[Vec<(u32, f64)>]) -> Option<Drift> {
    let mut by_round: std::collections::BTreeMap<u32, Vec<f64>> = Default::default();
    for cell in cells {
        let values: Vec<f64> = cell.iter().map(|(_, v)| *v).collect();
        let Some(typical) = median(&values).filter(|m| *m > 0.0) else {
            continue;
        };
        for &(round, value) in cell {
            by_round.entry(round).or_default().push(value / typical);
        }
    }
    let mut index: Vec<f64> = by_round.values().filter_map(|v| median(v)).collect();
    if index.len() < 2 {
        return None;
    }
    index.sort_by(f64::total_cmp);
    Some(Drift {
        rounds: index.len(),
        p10: quantile_sorted(&index, 0.1),
        p90: quantile_sorted(&index, 0.9),
        min: index[0],
        max: index[index.len() - 1],
    })
}

/// Other processes' CPU use (in CPUs) from which a round counts as run
/// beside other work, and under which it counts as quiet.
pub const BUSY_CPU: f64 = 0.5;
pub const QUIET_CPU: f64 = 0.1;

/// Whether other work on the machine moved the ratios: the same ratios
/// taken from the rounds run beside other work and from the quiet rounds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct OtherWork {
    /// Rounds with a reading of other processes' CPU use.
    pub rounds: usize,
    /// Rounds with at least [`BUSY_CPU`] of it.
    pub busy_rounds: usize,
    /// Rounds with less than [`QUIET_CPU`].
    pub quiet_rounds: usize,
    /// Ratios compared: those with at least [`MIN_SIDE_PAIRS`] pairs in
    /// busy rounds and as many in quiet ones.
    pub ratios: usize,
    /// Over those ratios, |ratio from busy rounds / ratio from quiet
    /// rounds - 1|: the median and the largest (sampling noise included).
    pub median_shift: Option<f64>,
    pub worst_shift: Option<f64>,
}

/// A cell's value per round (as [`round_medians`] gives them).
pub type RoundValues = Vec<(u32, f64)>;

/// Pairs a ratio needs in each kind of round to be compared.
pub const MIN_SIDE_PAIRS: usize = 6;

/// How ratios from busy and quiet rounds compare. `loads` is each round's
/// other-process CPU use; `pairs` holds, per ratio, the numerator's and the
/// denominator's per-round values (as [`round_medians`] gives them). `None`
/// without any reading.
pub fn other_work(loads: &[(u32, f64)], pairs: &[(RoundValues, RoundValues)]) -> Option<OtherWork> {
    if loads.is_empty() {
        return None;
    }
    let busy: std::collections::BTreeSet<u32> = loads
        .iter()
        .filter(|(_, cpu)| *cpu >= BUSY_CPU)
        .map(|(round, _)| *round)
        .collect();
    let quiet: std::collections::BTreeSet<u32> = loads
        .iter()
        .filter(|(_, cpu)| *cpu < QUIET_CPU)
        .map(|(round, _)| *round)
        .collect();
    let within =
        |values: &[(u32, f64)], rounds: &std::collections::BTreeSet<u32>| -> Vec<(u32, f64)> {
            values
                .iter()
                .filter(|(r, _)| rounds.contains(r))
                .copied()
                .collect()
        };
    let mut shifts: Vec<f64> = pairs
        .iter()
        .filter_map(|(numerator, denominator)| {
            let on_busy = paired_ratio(&within(numerator, &busy), &within(denominator, &busy))?;
            let on_quiet = paired_ratio(&within(numerator, &quiet), &within(denominator, &quiet))?;
            (on_busy.pairs >= MIN_SIDE_PAIRS && on_quiet.pairs >= MIN_SIDE_PAIRS)
                .then(|| (on_busy.value / on_quiet.value - 1.0).abs())
        })
        .collect();
    shifts.sort_by(f64::total_cmp);
    Some(OtherWork {
        rounds: loads.len(),
        busy_rounds: busy.len(),
        quiet_rounds: quiet.len(),
        ratios: shifts.len(),
        median_shift: (!shifts.is_empty()).then(|| quantile_sorted(&shifts, 0.5)),
        worst_shift: shifts.last().copied(),
    })
}

/// A ratio of two medians with an approximate 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Ratio {
    pub value: f64,
    pub ci95: Interval,
}

/// The ratio of two medians. The interval combines the relative half-widths
/// of both medians' intervals in quadrature (first-order error propagation).
pub fn ratio_of_medians(numerator: &Summary, denominator: &Summary) -> Ratio {
    let value = numerator.median / denominator.median;
    let relative = numerator
        .median_ci95
        .relative_half_width(numerator.median)
        .hypot(
            denominator
                .median_ci95
                .relative_half_width(denominator.median),
        );
    Ratio {
        value,
        ci95: Interval {
            low: value * (1.0 - relative),
            high: value * (1.0 + relative),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn a_counted_ratio_spans_every_pair() {
        let ratio = counted_ratio(&[101.0, 102.0, 103.0], &[100.0, 100.5]).unwrap();
        assert!(close(ratio.value, 102.0 / 100.25));
        assert!(close(ratio.ci95.low, 101.0 / 100.5));
        assert!(close(ratio.ci95.high, 103.0 / 100.0));
        assert_eq!(ratio.coverage, 1.0);
        assert!(counted_ratio(&[], &[1.0]).is_none());
        assert!(counted_ratio(&[1.0], &[0.0]).is_none());
    }

    #[test]
    fn summary_of_known_values() {
        // Values checked with R: mean 5, sd 2.138090, median 4.5, quantile(x, .99) 8.86.
        let samples = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let s = summarize(&samples).unwrap();
        assert_eq!(s.count, 8);
        assert!(close(s.mean, 5.0));
        assert!(close(s.median, 4.5));
        assert!((s.stdev - 2.138_090).abs() < 1e-6);
        assert!(close(s.min, 2.0) && close(s.max, 9.0));
        assert!(close(s.p99, 8.86));
        // R: qt(0.975, 7) = 2.3646243; 5 ± 2.3646243 * 2.1380899 / sqrt(8)
        let half = 1.787_487_918_236;
        assert!((s.mean_ci95.low - (5.0 - half)).abs() < 1e-8);
        assert!((s.mean_ci95.high - (5.0 + half)).abs() < 1e-8);
    }

    #[test]
    fn quantiles_interpolate() {
        let sorted = [10.0, 20.0, 30.0, 40.0];
        assert!(close(quantile_sorted(&sorted, 0.0), 10.0));
        assert!(close(quantile_sorted(&sorted, 0.5), 25.0));
        assert!(close(quantile_sorted(&sorted, 1.0), 40.0));
        assert!(close(quantile_sorted(&sorted, 1.0 / 3.0), 20.0));
    }

    #[test]
    fn median_interval_uses_order_statistics() {
        // n = 100: ranks 50 ∓ 9.8 -> 40th and 61st order statistics.
        let sorted: Vec<f64> = (1..=100).map(f64::from).collect();
        let ci = median_ci95_sorted(&sorted);
        assert!(close(ci.low, 40.0), "{ci:?}");
        assert!(close(ci.high, 61.0), "{ci:?}");
        assert!(ci.low <= 50.5 && 50.5 <= ci.high);
    }

    #[test]
    fn precision_narrows_with_more_samples() {
        let few: Vec<f64> = (0..20).map(|i| 100.0 + (i % 7) as f64).collect();
        let many: Vec<f64> = (0..2000).map(|i| 100.0 + (i % 7) as f64).collect();
        assert!(median_precision(&many) <= median_precision(&few));
        let constant = vec![5.0; 50];
        assert_eq!(median_precision(&constant), 0.0);
    }

    #[test]
    fn ratio_propagates_relative_uncertainty() {
        let a = summarize(&[200.0; 10]).unwrap();
        let b = summarize(&[100.0; 10]).unwrap();
        let r = ratio_of_medians(&a, &b);
        assert!(close(r.value, 2.0));
        assert!(close(r.ci95.low, 2.0) && close(r.ci95.high, 2.0));
    }

    #[test]
    fn small_samples_say_their_real_coverage() {
        // Five samples: [min, max] holds the median with 1 - 2/32 = 93.75%.
        let five = median_ci_sorted(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        assert!(close(five.coverage, 0.9375), "{five:?}");
        assert!(close(five.interval.low, 1.0) && close(five.interval.high, 5.0));
        assert_eq!(median_precision(&[5.0; 5]), f64::INFINITY);
        // Six samples reach 96.9% with [min, max].
        let six = median_ci_sorted(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert!(close(six.coverage, 1.0 - 2.0 / 64.0), "{six:?}");
        assert_eq!(median_precision(&[5.0; 6]), 0.0);
        // n = 20: ranks 6 and 15 (coverage 95.86%, checked with R's pbinom).
        let sorted: Vec<f64> = (1..=20).map(f64::from).collect();
        let twenty = median_ci_sorted(&sorted);
        assert!(close(twenty.interval.low, 6.0) && close(twenty.interval.high, 15.0));
        assert!((twenty.coverage - 0.958_610_5).abs() < 1e-6, "{twenty:?}");
    }

    #[test]
    fn paired_ratios_cancel_a_shared_slowdown() {
        // The machine is twice as slow in rounds 3..6; both cells feel it.
        let slow = |round: u32| if (3..6).contains(&round) { 2.0 } else { 1.0 };
        let a: Vec<(u32, f64)> = (0..10).map(|r| (r, 300.0 * slow(r))).collect();
        let b: Vec<(u32, f64)> = (0..10).map(|r| (r, 100.0 * slow(r))).collect();
        let ratio = paired_ratio(&a, &b).unwrap();
        assert!(close(ratio.value, 3.0));
        assert!(close(ratio.ci95.low, 3.0) && close(ratio.ci95.high, 3.0));
        assert_eq!(ratio.pairs, 10);
        // Rounds only one cell has do not pair.
        let partial = paired_ratio(&a[..4], &b[2..]).unwrap();
        assert_eq!(partial.pairs, 2);
        assert_eq!(partial.precision(), f64::INFINITY);
        let inverse = ratio.inverse();
        assert!(close(inverse.value, 1.0 / 3.0));
    }

    #[test]
    fn round_medians_and_drift() {
        let samples = [(0, 5.0), (0, 1.0), (0, 3.0), (2, 10.0)];
        assert_eq!(round_medians(&samples), vec![(0, 3.0), (2, 10.0)]);
        // Two cells, the machine 50% slower in the last of four rounds.
        let cell = |base: f64| -> Vec<(u32, f64)> {
            (0..4)
                .map(|r| (r, if r == 3 { base * 1.5 } else { base }))
                .collect()
        };
        let drift = drift(&[cell(100.0), cell(7.0)]).unwrap();
        assert_eq!(drift.rounds, 4);
        assert!(close(drift.min, 1.0) && close(drift.max, 1.5), "{drift:?}");
        assert!(drift.spread() > 0.1);
        assert!(super::drift(&[vec![(0, 1.0)]]).is_none());
    }

    /// Issue 19: past 30 degrees of freedom the table fell back to z = 1.96,
    /// about 4% short at 31. The reference values are the 0.975 quantiles
    /// (R's `qt(0.975, df)`, checked to 17 digits with mpmath).
    #[test]
    fn issue_19_t_quantiles_are_exact_at_every_degree_of_freedom() {
        let known = [
            (1, 12.706_204_736_174_705),
            (5, 2.570_581_835_636_315_5),
            (30, 2.042_272_456_301_238),
            (31, 2.039_513_446_396_408_5),
            (60, 2.000_297_822_014_260_5),
            (120, 1.979_930_405_082_441),
            (1000, 1.962_339_080_826_408_5),
        ];
        for (degrees_of_freedom, expected) in known {
            let t = t_critical_95(degrees_of_freedom);
            assert!(
                (t - expected).abs() < 1e-9 * expected,
                "df {degrees_of_freedom}: {t} against {expected}"
            );
        }
        assert_eq!(t_critical_95(0), f64::INFINITY);
        // Decreasing towards z, never below it.
        let mut previous = f64::INFINITY;
        for degrees_of_freedom in 1..=2000 {
            let t = t_critical_95(degrees_of_freedom);
            assert!(t < previous && t > Z95, "df {degrees_of_freedom}: {t}");
            previous = t;
        }
    }

    #[test]
    fn the_mean_interval_of_fifty_samples_uses_t_with_49_degrees_of_freedom() {
        let samples: Vec<f64> = (0..50).map(|i| 100.0 + (i % 10) as f64).collect();
        let s = summarize(&samples).unwrap();
        let half_width = (s.mean_ci95.high - s.mean_ci95.low) / 2.0;
        let expected = 2.009_575_237_129_239_7 * s.stdev / 50f64.sqrt();
        assert!(
            (half_width - expected).abs() < 1e-9 * expected,
            "{half_width} against {expected}"
        );
    }

    #[test]
    fn single_sample_has_infinite_mean_interval() {
        let s = summarize(&[3.0]).unwrap();
        assert_eq!(s.stdev, 0.0);
        assert!(s.mean_ci95.low.is_nan() || s.mean_ci95.low.is_infinite());
        assert!(summarize(&[]).is_none());
    }

    #[test]
    fn median_ratio_holds_a_known_slowdown_and_no_difference() {
        let base: Vec<f64> = (0..40).map(|i| 100.0 + (i % 7) as f64).collect();
        let slower: Vec<f64> = base.iter().map(|v| v * 1.2).collect();
        let ratio = median_ratio(&slower, &base).unwrap();
        assert!((ratio.value - 1.2).abs() < 1e-9);
        assert!(ratio.ci95.low > 1.0 && ratio.ci95.high > 1.2, "{ratio:?}");
        assert!(ratio.coverage >= 0.95);
        let same = median_ratio(&base, &base).unwrap();
        assert!(same.ci95.low < 1.0 && same.ci95.high > 1.0, "{same:?}");
        // Six samples cannot reach 97.5% on each side.
        assert!(median_ratio(&base[..6], &base[..6]).unwrap().coverage < 0.95);
        assert!(median_ratio(&[], &base).is_none());
    }

    #[test]
    fn the_interval_at_a_higher_level_is_no_narrower() {
        let values: Vec<f64> = (0..50).map(f64::from).collect();
        let at95 = median_ci_sorted_at(&values, 0.95);
        let at975 = median_ci_sorted_at(&values, 0.975);
        assert_eq!(at95, median_ci_sorted(&values));
        assert!(at975.coverage >= 0.975 && at975.interval.low <= at95.interval.low);
    }

    #[test]
    fn other_work_compares_busy_and_quiet_rounds() {
        // Rounds 0-9 quiet, 10-19 busy; the numerator costs 2x the
        // denominator when quiet and 2.2x when busy.
        let loads: Vec<(u32, f64)> = (0..20)
            .map(|r| (r, if r < 10 { 0.0 } else { 1.0 }))
            .collect();
        let denominator: Vec<(u32, f64)> = (0..20).map(|r| (r, 100.0)).collect();
        let numerator: Vec<(u32, f64)> = (0..20)
            .map(|r| (r, if r < 10 { 200.0 } else { 220.0 }))
            .collect();
        let same = numerator.clone();
        let work = other_work(
            &loads,
            &[(numerator, denominator.clone()), (same.clone(), same)],
        )
        .unwrap();
        assert_eq!(
            (work.rounds, work.busy_rounds, work.quiet_rounds),
            (20, 10, 10)
        );
        assert_eq!(work.ratios, 2);
        assert!((work.worst_shift.unwrap() - 0.1).abs() < 1e-9);
        assert!((work.median_shift.unwrap() - 0.05).abs() < 1e-9);

        // Half a CPU is busy, under a tenth quiet, in between neither; too
        // few busy rounds compare nothing.
        let few: Vec<(u32, f64)> = (0..20)
            .map(|r| {
                (
                    r,
                    if r < 3 {
                        0.5
                    } else if r < 6 {
                        0.3
                    } else {
                        0.05
                    },
                )
            })
            .collect();
        let work = other_work(&few, &[(denominator.clone(), denominator)]).unwrap();
        assert_eq!(
            (work.busy_rounds, work.quiet_rounds, work.ratios),
            (3, 14, 0)
        );
        assert_eq!(work.median_shift, None);
        assert_eq!(other_work(&[], &[]), None);
    }
}
