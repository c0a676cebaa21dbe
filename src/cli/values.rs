//! The values of the command line that are numbers with a unit, each a
//! type that parses what a person types and prints what parses back:
//! [`Seconds`] (`500ms`, `2m`), [`Percent`] (`1%`), [`Size`] (`50k`), and
//! `--network`'s profiles ([`NetworkProfiles`], in their own grammar).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::scenario::network::{parse_profiles, NetworkProfile};

/// A span of time on the command line: plain seconds (`1.5`) or a number
/// with a unit, `ms`, `s`, `m` or `h` (`500ms`, `4s`, `2m`), as wrk, oha
/// and k6 take them. Never negative, NaN or infinite; whether zero is
/// allowed is the option's to say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Seconds(Duration);

impl Seconds {
    pub fn duration(self) -> Duration {
        self.0
    }

    pub fn as_secs_f64(self) -> f64 {
        self.0.as_secs_f64()
    }
}

impl FromStr for Seconds {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let trimmed = text.trim();
        let (number, seconds_per_unit) = [("ms", 0.001), ("s", 1.0), ("m", 60.0), ("h", 3600.0)]
            .iter()
            .find_map(|&(unit, scale)| {
                trimmed
                    .strip_suffix(unit)
                    .filter(|rest| rest.ends_with(|c: char| c.is_ascii_digit() || c == '.'))
                    .map(|rest| (rest, scale))
            })
            .unwrap_or((trimmed, 1.0));
        let invalid = || {
            format!(
                "'{text}' is not a duration: give seconds (1.5) or a number with a unit (500ms, 4s, 2m, 1h)"
            )
        };
        // Only plain decimals: "inf", "NaN" and "1e3" are not durations a person types.
        if !plain_decimal(number) {
            return Err(invalid());
        }
        let value: f64 = number.parse().map_err(|_| invalid())?;
        if value < 0.0 {
            return Err(format!("'{text}': a duration cannot be negative"));
        }
        Duration::try_from_secs_f64(value * seconds_per_unit)
            .map(Seconds)
            .map_err(|_| format!("'{text}' is too long a duration"))
    }
}

/// Plain seconds ("0.2"), which parse back to the same value.
impl fmt::Display for Seconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.as_secs_f64())
    }
}

/// Returns true if and only if `number` is a plain decimal a person types
/// (digits, a point, a sign): "inf", "NaN" and "1e3" are not.
fn plain_decimal(number: &str) -> bool {
    !number.is_empty()
        && number
            .chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == '-' || c == '+')
}

/// A share on the command line, in percent: "1%", "0.5%" or "1" (one
/// percent). Never negative, NaN or infinite; the bounds (whether zero or
/// 100% and more make sense) are the option's to say.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Percent(f64);

impl Percent {
    /// A share of `percent` percent.
    pub const fn new(percent: f64) -> Self {
        Self(percent)
    }

    /// The share in percent (1.0 is 1%).
    pub fn percent(self) -> f64 {
        self.0
    }

    /// The share as a fraction (1% is 0.01).
    pub fn fraction(self) -> f64 {
        self.0 / 100.0
    }
}

impl FromStr for Percent {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let number = text.trim();
        let number = number.strip_suffix('%').unwrap_or(number).trim();
        let invalid = || format!("'{text}' is not a percentage: give one such as 1% or 0.5%");
        if !plain_decimal(number) {
            return Err(invalid());
        }
        let percent: f64 = number.parse().map_err(|_| invalid())?;
        if percent < 0.0 {
            return Err(format!("'{text}': a percentage cannot be negative"));
        }
        Ok(Self(percent))
    }
}

/// "1%", "0.5%": what parses back to the same share.
impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", self.0)
    }
}

/// The parser of a count that must be at least one (`--runs`,
/// `--min-samples`, `--threads`): zero is refused by clap, with the
/// option's name, before any command runs.
pub fn at_least_one(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".to_string()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("'{text}' is not a whole number")),
    }
}

/// The most event-loop threads a server (`--threads`) or the load
/// generator (`--event-loops`) may start: each holds many connections, so
/// more of them than cores add only switching, and a bound keeps a typo
/// from starting 100,000 threads.
pub const MAX_EVENT_LOOPS: usize = 256;

/// The parser of a number of event-loop threads, `--threads` of a server:
/// from 1 to [`MAX_EVENT_LOOPS`].
pub fn event_loops(text: &str) -> Result<usize, String> {
    at_least_one(text).and_then(at_most_event_loops)
}

/// The parser of `--event-loops`, where 0 has a meaning of its own (a
/// blocking thread per client): at most [`MAX_EVENT_LOOPS`].
pub fn event_loops_or_none(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) => at_most_event_loops(n),
        Err(_) => Err(format!("'{text}' is not a whole number")),
    }
}

fn at_most_event_loops(n: usize) -> Result<usize, String> {
    if n > MAX_EVENT_LOOPS {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        return Err(format!(
            "{n} is too many: at most {MAX_EVENT_LOOPS} (each is an event loop holding many connections; this machine has {cores} cores, and more threads than cores add only switching)"
        ));
    }
    Ok(n)
}

/// The parser of a span of time that must be more than zero
/// (`--max-total-time`).
pub fn positive_seconds(text: &str) -> Result<Seconds, String> {
    let seconds: Seconds = text.parse()?;
    if seconds.duration().is_zero() {
        return Err("must be more than zero seconds".to_string());
    }
    Ok(seconds)
}

/// The parser of `--precision`: more than 0% and less than 100%.
pub fn precision(text: &str) -> Result<Percent, String> {
    let asked: Percent = text.parse()?;
    if !(asked.percent() > 0.0 && asked.percent() < 100.0) {
        return Err(format!(
            "must be more than 0% and less than 100%, got {asked}"
        ));
    }
    Ok(asked)
}

/// The parser of a positive number (`--transfer-mb`, `--max-rate`):
/// finite and more than zero.
pub fn positive_number(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(value) if value.is_finite() && value > 0.0 => Ok(value),
        _ => Err(format!("must be a positive number, got '{text}'")),
    }
}

/// The parser of `--chain-depth`: from 2 (a root and a leaf) to 8
/// ([`crate::scenario::CHAIN_DEPTHS`]).
pub fn chain_depth(text: &str) -> Result<u8, String> {
    let depths = crate::scenario::CHAIN_DEPTHS;
    match text.trim().parse::<u8>() {
        Ok(depth) if depths.contains(&depth) => Ok(depth),
        _ => Err(format!(
            "must be {}..{} (root and leaf at least), got '{text}'",
            depths.start(),
            depths.end()
        )),
    }
}

/// A number of bytes on the command line: plain (1400) or with k or m
/// (50k is 50,000 bytes, 1m is 1,000,000). Whether zero is allowed and
/// how large a size may be is the option's to say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Size(usize);

impl Size {
    /// A size of `bytes` bytes.
    pub const fn from_bytes(bytes: usize) -> Self {
        Self(bytes)
    }

    pub fn bytes(self) -> usize {
        self.0
    }
}

impl FromStr for Size {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        const FORM: &str = "give bytes (1400) or a number with k or m (50k, 1m)";
        let lower = text.trim().to_ascii_lowercase();
        if lower.is_empty() {
            return Err(format!("an empty size: {FORM}"));
        }
        let (digits, bytes_per_unit) = match (lower.strip_suffix('k'), lower.strip_suffix('m')) {
            (Some(digits), _) => (digits, 1_000),
            (_, Some(digits)) => (digits, 1_000_000),
            _ => (lower.as_str(), 1),
        };
        if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
            return Err(format!("'{text}' is not a size: {FORM}"));
        }
        digits
            .parse::<usize>()
            .ok()
            .and_then(|value| value.checked_mul(bytes_per_unit))
            .map(Self)
            .ok_or_else(|| format!("'{text}' is too large a size"))
    }
}

/// Plain bytes ("50000"), which parse back to the same size.
impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// `--network`'s profiles: named ones and custom `key=value` fields, in
/// their own grammar (a comma also separates the fields of one profile;
/// see `scenario::network`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NetworkProfiles(pub Vec<NetworkProfile>);

impl FromStr for NetworkProfiles {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        parse_profiles(text).map(Self).map_err(|error| error.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Duration, String> {
        text.parse::<Seconds>().map(Seconds::duration)
    }

    #[test]
    fn durations_take_plain_seconds_and_units() {
        assert_eq!(parsed("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parsed("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parsed("0"), Ok(Duration::ZERO));
        assert_eq!(parsed("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parsed("4s"), Ok(Duration::from_secs(4)));
        assert_eq!(parsed("0.5s"), Ok(Duration::from_millis(500)));
        assert_eq!(parsed("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parsed("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parsed(" 200ms "), Ok(Duration::from_millis(200)));
    }

    #[test]
    fn durations_refuse_negatives_nan_and_garbage_saying_why() {
        for text in ["-1", "-1s", "-0.5ms"] {
            let error = parsed(text).unwrap_err();
            assert!(error.contains("cannot be negative"), "{text}: {error}");
        }
        for text in [
            "NaN", "inf", "1e3", "", "s", "ms", "4x", "4 s", "four", "1.2.3", "4sec",
        ] {
            let error = parsed(text).unwrap_err();
            assert!(
                error.contains("is not a duration") && error.contains("500ms, 4s, 2m"),
                "{text:?}: {error}"
            );
        }
        assert!(parsed("1e300").is_err());
        assert!(parsed(&"9".repeat(40)).unwrap_err().contains("too long"));
    }

    #[test]
    fn sizes_take_bytes_or_k_and_m() {
        let bytes = |text: &str| text.parse::<Size>().map(Size::bytes);
        assert_eq!(bytes("1400"), Ok(1400));
        assert_eq!(bytes(" 50k "), Ok(50_000));
        assert_eq!(bytes("50K"), Ok(50_000));
        assert_eq!(bytes("1m"), Ok(1_000_000));
        assert_eq!(bytes("0"), Ok(0));
        for text in ["big", "1.5k", "-1", "k", "16kb", "1e3", "0x10"] {
            let error = bytes(text).unwrap_err();
            assert!(error.contains("is not a size"), "{text}: {error}");
        }
        assert!(bytes(" ").unwrap_err().contains("an empty size"));
        assert!(bytes(&format!("{}m", usize::MAX))
            .unwrap_err()
            .contains("too large"));
        assert_eq!(
            Size::from_bytes(50_000).to_string().parse(),
            Ok(Size(50_000))
        );
    }

    #[test]
    fn percents_take_a_sign_or_none_and_refuse_negatives() {
        let fraction = |text: &str| text.parse::<Percent>().map(Percent::fraction);
        assert_eq!(fraction("1%"), Ok(0.01));
        assert_eq!(fraction("0.5%"), Ok(0.005));
        assert_eq!(fraction("2"), Ok(0.02));
        assert_eq!(fraction(" 5 % "), Ok(0.05));
        assert!(fraction("-1%").unwrap_err().contains("cannot be negative"));
        for text in ["fast", "", "%", "inf", "NaN", "1e3%"] {
            let error = fraction(text).unwrap_err();
            assert!(error.contains("is not a percentage"), "{text:?}: {error}");
        }
        let value: Percent = "0.5%".parse().unwrap();
        assert_eq!(value.to_string().parse(), Ok(value));
    }

    #[test]
    fn a_duration_prints_as_seconds_that_parse_back() {
        for text in ["0.2", "500ms", "2m", "1.25"] {
            let value: Seconds = text.parse().unwrap();
            assert_eq!(value.to_string().parse::<Seconds>(), Ok(value), "{text}");
        }
        assert_eq!("200ms".parse::<Seconds>().unwrap().to_string(), "0.2");
    }
}
