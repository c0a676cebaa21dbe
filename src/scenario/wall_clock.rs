//! A wall-clock instant as people and job runners write it: RFC 3339
//! (`2026-11-28T01:30:00Z`, `2026-11-28T02:30:00.5+01:00`) or seconds since
//! the Unix epoch (`1795829400`, `1795829400.25`), kept to the millisecond
//! and always printed as RFC 3339 in UTC. The shards of one load start at
//! such a time (`load --start-at`), so every machine reads the same instant
//! whatever its time zone.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A wall-clock instant, in milliseconds since the Unix epoch (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WallClock {
    pub unix_ms: i64,
}

impl WallClock {
    /// The system clock's time now.
    pub fn now() -> Self {
        Self::from_system(SystemTime::now())
    }

    pub fn from_system(time: SystemTime) -> Self {
        let unix_ms = match time.duration_since(UNIX_EPOCH) {
            Ok(after) => after.as_millis() as i64,
            Err(before) => -(before.duration().as_millis() as i64),
        };
        Self { unix_ms }
    }

    pub fn to_system(self) -> SystemTime {
        if self.unix_ms >= 0 {
            UNIX_EPOCH + Duration::from_millis(self.unix_ms as u64)
        } else {
            UNIX_EPOCH - Duration::from_millis(self.unix_ms.unsigned_abs())
        }
    }

    /// This instant moved `by` later.
    pub fn after(self, by: Duration) -> Self {
        Self {
            unix_ms: self.unix_ms + by.as_millis() as i64,
        }
    }

    /// How long from now until this instant; `Err` with how long ago it
    /// was when it is not in the future.
    pub fn until(self, now: WallClock) -> Result<Duration, Duration> {
        let left = self.unix_ms - now.unix_ms;
        if left > 0 {
            Ok(Duration::from_millis(left as u64))
        } else {
            Err(Duration::from_millis(left.unsigned_abs()))
        }
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date (year, month, day) of a day since 1970-01-01 (Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Parses RFC 3339 with a `T` (or space) between date and time, optional
/// fractional seconds and `Z` or a `±HH:MM` offset; or Unix seconds.
impl FromStr for WallClock {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "a time is RFC 3339 (e.g. 2026-11-28T01:30:00Z) or seconds since the Unix epoch (e.g. 1795829400), not '{text}'"
            )
        };
        let text = text.trim();
        if let Ok(seconds) = text.parse::<f64>() {
            if !seconds.is_finite() || text.contains(['e', 'E', 'i', 'n', 'N']) {
                return Err(bad());
            }
            return Ok(Self {
                unix_ms: (seconds * 1000.0).round() as i64,
            });
        }
        let number = |part: &str, digits: usize, range: std::ops::RangeInclusive<i64>| {
            (part.len() == digits && part.bytes().all(|b| b.is_ascii_digit()))
                .then(|| part.parse::<i64>().ok())
                .flatten()
                .filter(|n| range.contains(n))
                .ok_or_else(bad)
        };
        let (date, time) = text.split_once(['T', 't', ' ']).ok_or_else(bad)?;
        let mut date_parts = date.split('-');
        let (Some(year), Some(month), Some(day), None) = (
            date_parts.next(),
            date_parts.next(),
            date_parts.next(),
            date_parts.next(),
        ) else {
            return Err(bad());
        };
        let (year, month, day) = (
            number(year, 4, 0..=9999)?,
            number(month, 2, 1..=12)?,
            number(day, 2, 1..=31)?,
        );
        // The offset: Z, or +HH:MM / -HH:MM after the seconds.
        let (clock, offset_minutes) = if let Some(clock) = time.strip_suffix(['Z', 'z']) {
            (clock, 0)
        } else {
            let at = time.rfind(['+', '-']).ok_or_else(bad)?;
            let (clock, offset) = time.split_at(at);
            let sign = if offset.starts_with('-') { -1 } else { 1 };
            let (hours, minutes) = offset[1..].split_once(':').ok_or_else(bad)?;
            (
                clock,
                sign * (number(hours, 2, 0..=23)? * 60 + number(minutes, 2, 0..=59)?),
            )
        };
        let (whole, fraction) = clock.split_once('.').unwrap_or((clock, ""));
        let mut clock_parts = whole.split(':');
        let (Some(hour), Some(minute), Some(second), None) = (
            clock_parts.next(),
            clock_parts.next(),
            clock_parts.next(),
            clock_parts.next(),
        ) else {
            return Err(bad());
        };
        let (hour, minute, second) = (
            number(hour, 2, 0..=23)?,
            number(minute, 2, 0..=59)?,
            number(second, 2, 0..=60)?,
        );
        if !fraction.bytes().all(|b| b.is_ascii_digit()) || clock.ends_with('.') {
            return Err(bad());
        }
        let millis: i64 = format!("{fraction:0<3}")[..3].parse().unwrap_or(0);
        let days = days_from_civil(year, month, day);
        if civil_from_days(days) != (year, month, day) {
            return Err(bad());
        }
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
        Ok(Self {
            unix_ms: seconds * 1000 + millis,
        })
    }
}

/// RFC 3339 in UTC, with milliseconds when there are any.
impl fmt::Display for WallClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seconds = self.unix_ms.div_euclid(1000);
        let millis = self.unix_ms.rem_euclid(1000);
        let (year, month, day) = civil_from_days(seconds.div_euclid(86_400));
        let of_day = seconds.rem_euclid(86_400);
        write!(
            f,
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
            of_day / 3600,
            of_day / 60 % 60,
            of_day % 60
        )?;
        if millis != 0 {
            write!(f, ".{millis:03}")?;
        }
        f.write_str("Z")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_3339_and_unix_seconds_name_the_same_instant() {
        let utc: WallClock = "2026-11-28T01:30:00Z".parse().unwrap();
        assert_eq!(utc.unix_ms, 1_795_829_400_000);
        assert_eq!("1795829400".parse::<WallClock>().unwrap(), utc);
        assert_eq!(
            "2026-11-28T02:30:00+01:00".parse::<WallClock>().unwrap(),
            utc
        );
        assert_eq!(
            "2026-11-27 20:30:00-05:00".parse::<WallClock>().unwrap(),
            utc
        );
        let half: WallClock = "2026-11-28T01:30:00.5Z".parse().unwrap();
        assert_eq!(half.unix_ms, utc.unix_ms + 500);
        assert_eq!("1795829400.5".parse::<WallClock>().unwrap(), half);
        assert_eq!(utc.to_string(), "2026-11-28T01:30:00Z");
        assert_eq!(half.to_string(), "2026-11-28T01:30:00.500Z");
        assert_eq!(half.to_string().parse::<WallClock>().unwrap(), half);
        assert_eq!(WallClock::from_system(utc.to_system()), utc);
        assert_eq!(
            "2000-02-29T00:00:00Z".parse::<WallClock>().unwrap().unix_ms,
            951_782_400_000
        );
    }

    #[test]
    fn anything_else_is_refused_saying_the_forms() {
        for text in [
            "",
            "tomorrow",
            "2026-11-28",
            "2026-11-28T01:30Z",
            "2026-11-28T01:30:00",
            "2026-02-30T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-11-28T25:00:00Z",
            "2026-11-28T01:30:00.Z",
            "2026-11-28T01:30:00+1:00",
            "1e9",
            "NaN",
            "inf",
        ] {
            let error = text.parse::<WallClock>().expect_err(text);
            assert!(error.contains("RFC 3339"), "{text}: {error}");
        }
    }

    #[test]
    fn until_says_how_long_ago_a_past_instant_was() {
        let now: WallClock = "1000".parse().unwrap();
        assert_eq!(
            now.after(Duration::from_secs(5)).until(now),
            Ok(Duration::from_secs(5))
        );
        assert_eq!(
            "998".parse::<WallClock>().unwrap().until(now),
            Err(Duration::from_secs(2))
        );
        assert_eq!(now.until(now), Err(Duration::ZERO));
    }
}
