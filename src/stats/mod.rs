//! Summaries of raw samples, confidence intervals and ratios. Pure functions
//! over stored samples: nothing here runs inside a timing loop.

use serde::Serialize;

/// The z value of a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

/// Two-sided 95% critical values of Student's t for 1..=30 degrees of freedom.
const T95: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

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
    /// 95% confidence interval of the median (order statistics, distribution-free).
    pub median_ci95: Interval,
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
        median_ci95: median_ci95_sorted(&sorted),
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

/// The two-sided 95% critical value of Student's t; infinite for 0 degrees of freedom.
pub fn t_critical_95(degrees_of_freedom: usize) -> f64 {
    match degrees_of_freedom {
        0 => f64::INFINITY,
        1..=30 => T95[degrees_of_freedom - 1],
        _ => Z95,
    }
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

/// A distribution-free 95% confidence interval of the median: the order
/// statistics at ranks n/2 ∓ 1.96·√n/2 (normal approximation of the binomial).
pub fn median_ci95_sorted(sorted: &[f64]) -> Interval {
    let n = sorted.len();
    if n < 2 {
        return Interval {
            low: sorted.first().copied().unwrap_or(f64::NAN),
            high: sorted.first().copied().unwrap_or(f64::NAN),
        };
    }
    let spread = Z95 * (n as f64).sqrt() / 2.0;
    let centre = n as f64 / 2.0;
    // 1-based ranks, clamped to the sample.
    let low_rank = ((centre - spread).floor() as i64).clamp(1, n as i64) as usize;
    let high_rank = ((centre + spread).ceil() as i64 + 1).clamp(1, n as i64) as usize;
    Interval {
        low: sorted[low_rank - 1],
        high: sorted[high_rank - 1],
    }
}

/// Half the width of the median's 95% interval relative to the median; what
/// `--precision` is compared with.
pub fn median_precision(samples: &[f64]) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = quantile_sorted(&sorted, 0.5);
    median_ci95_sorted(&sorted).relative_half_width(median)
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
        // t(7) = 2.365: 5 ± 2.365 * 2.138090 / sqrt(8)
        let half = 2.365 * 2.138_090 / 8f64.sqrt();
        assert!((s.mean_ci95.low - (5.0 - half)).abs() < 1e-5);
        assert!((s.mean_ci95.high - (5.0 + half)).abs() < 1e-5);
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
    fn single_sample_has_infinite_mean_interval() {
        let s = summarize(&[3.0]).unwrap();
        assert_eq!(s.stdev, 0.0);
        assert!(s.mean_ci95.low.is_nan() || s.mean_ci95.low.is_infinite());
        assert!(summarize(&[]).is_none());
    }
}
