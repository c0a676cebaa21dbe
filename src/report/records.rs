//! What every view's record table (the CSV) writes the same way: a figure
//! as text with a fixed number of decimals, and a [`Summary`] as one column
//! per statistic. A view names its series and its unit; the statistics,
//! their order and their headers come from here, as fields beside a view's
//! own or as record columns ([`SummaryColumns::columns`]).

use super::{Column, Columns};
use crate::stats::Summary;

/// A figure with `decimals` digits after the point; empty when there is none.
pub(crate) fn number(value: Option<f64>, decimals: usize) -> String {
    value
        .map(|value| format!("{value:.decimals$}"))
        .unwrap_or_default()
}

/// How a view writes a [`Summary`] as record columns: mean, median,
/// stdev, min, max, (p99,) and the ends of the median's interval.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SummaryColumns {
    /// With the 99th percentile after the maximum.
    pub with_p99: bool,
    /// The name of the median's interval in the headers: `median_ci` gives
    /// `median_ci_low` and `median_ci_high`.
    pub interval: &'static str,
    /// What follows the statistic's name in a header (`_us`), or nothing.
    pub unit: &'static str,
    /// Digits after the point.
    pub decimals: usize,
}

/// A statistic's name in a header, and how it is read from a summary.
type Statistic = (String, fn(&Summary) -> f64);

impl SummaryColumns {
    /// The statistics written, in their order.
    fn statistics(self) -> Vec<Statistic> {
        let mut statistics: Vec<Statistic> = vec![
            ("mean".to_string(), |s| s.mean),
            ("median".to_string(), |s| s.median),
            ("stdev".to_string(), |s| s.stdev),
            ("min".to_string(), |s| s.min),
            ("max".to_string(), |s| s.max),
        ];
        if self.with_p99 {
            statistics.push(("p99".to_string(), |s| s.p99));
        }
        statistics.push((format!("{}_low", self.interval), |s| s.median_ci95.low));
        statistics.push((format!("{}_high", self.interval), |s| s.median_ci95.high));
        statistics
    }

    /// The headers of one series' columns: `{series}_{statistic}{unit}`.
    pub fn headers(self, series: &str) -> Vec<String> {
        self.statistics()
            .into_iter()
            .map(|(statistic, _)| format!("{series}_{statistic}{}", self.unit))
            .collect()
    }

    /// One series' record columns over rows of type `R`, each cell a
    /// statistic of the row's `summary` (empty without one).
    pub fn columns<'a, R: 'a>(
        self,
        series: &str,
        summary: fn(&R) -> Option<Summary>,
    ) -> Columns<'a, R> {
        let mut columns = Columns::new();
        for (statistic, read) in self.statistics() {
            columns.push(
                Column::text(format!("{series}_{statistic}{}", self.unit)),
                move |row| number(summary(row).as_ref().map(read), self.decimals),
            );
        }
        columns
    }

    /// A summary's fields, one per header; all empty without a summary.
    pub fn fields(self, summary: Option<&Summary>) -> Vec<String> {
        self.statistics()
            .into_iter()
            .map(|(_, read)| number(summary.map(read), self.decimals))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_and_fields_line_up_and_are_empty_without_a_summary() {
        let columns = SummaryColumns {
            with_p99: true,
            interval: "median_ci",
            unit: "_us",
            decimals: 2,
        };
        assert_eq!(
            columns.headers("wall"),
            [
                "wall_mean_us",
                "wall_median_us",
                "wall_stdev_us",
                "wall_min_us",
                "wall_max_us",
                "wall_p99_us",
                "wall_median_ci_low_us",
                "wall_median_ci_high_us"
            ]
        );
        let summary = crate::stats::summarize(&[1.0, 2.0, 4.0]).unwrap();
        let fields = columns.fields(Some(&summary));
        assert_eq!(fields.len(), 8);
        assert_eq!(fields[0], "2.33");
        assert_eq!(fields[1], "2.00");
        assert_eq!(fields[3], "1.00");
        assert_eq!(fields[4], "4.00");
        assert_eq!(columns.fields(None), vec![String::new(); 8]);
        let without_p99 = SummaryColumns {
            with_p99: false,
            ..columns
        };
        assert_eq!(without_p99.headers("x").len(), 7);
        let table = columns
            .columns("wall", |s: &crate::stats::Summary| Some(*s))
            .table([&summary]);
        assert_eq!(table.headers(), columns.headers("wall"));
        assert_eq!(table.rows[0], fields);
        assert_eq!(number(Some(1.23456), 3), "1.235");
        assert_eq!(number(None, 3), "");
    }
}
