//! The network axis (`--network`): profiles of a path between client and
//! server (round-trip time, bottleneck rate, packet loss, TCP's initial
//! window) that the network model prices each row's handshake over and
//! that tlslab's emulated link reproduces. Named profiles for the common
//! cases, or custom ones written as `key=value` fields.

use std::fmt;

use serde::{Deserialize, Serialize};

/// TCP's initial congestion window, in segments, unless a profile says
/// otherwise: Linux's default since 2.6.39 (RFC 6928).
pub const DEFAULT_INITCWND: u32 = 10;

/// A path between client and server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetworkProfile {
    /// The profile's label: its name (`wan`), or its fields in a canonical
    /// form (`rtt=50ms,rate=20mbit,loss=0.5%,initcwnd=10`).
    pub label: String,
    /// Round-trip time, milliseconds (half each way).
    pub rtt_ms: f64,
    /// The bottleneck's rate each way, bits per second; `None` is no limit.
    pub rate_bps: Option<f64>,
    /// The chance that the link drops a packet, each way (0 ≤ loss < 1).
    pub loss: f64,
    /// TCP's initial congestion window, in segments.
    pub initcwnd: u32,
}

/// The named profiles: (name, what it stands for, round trip in ms,
/// rate in Mbit/s, loss as a fraction).
pub const NAMED_PROFILES: &[(&str, &str, f64, Option<f64>, f64)] = &[
    (
        "lan",
        "a local network: 1 ms, 1 Gbit/s",
        1.0,
        Some(1000.0),
        0.0,
    ),
    (
        "wan",
        "a continental path: 50 ms, 20 Mbit/s",
        50.0,
        Some(20.0),
        0.0,
    ),
    (
        "mobile",
        "a mobile network: 100 ms, 5 Mbit/s, 1% loss",
        100.0,
        Some(5.0),
        0.01,
    ),
    (
        "satellite",
        "a geostationary satellite: 600 ms, no rate limit",
        600.0,
        None,
        0.0,
    ),
];

/// Why a profile cannot be, naming the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--network: {0}")]
pub struct BadProfile(pub String);

impl NetworkProfile {
    /// A named profile.
    pub fn named(name: &str) -> Option<Self> {
        let (name, _, rtt_ms, rate_mbit, loss) = NAMED_PROFILES
            .iter()
            .find(|(known, ..)| known.eq_ignore_ascii_case(name.trim()))?;
        Some(Self {
            label: name.to_string(),
            rtt_ms: *rtt_ms,
            rate_bps: rate_mbit.map(|mbit| mbit * 1e6),
            loss: *loss,
            initcwnd: DEFAULT_INITCWND,
        })
    }

    /// One way's delay, milliseconds.
    pub fn one_way_ms(&self) -> f64 {
        self.rtt_ms / 2.0
    }

    /// Seconds `bytes` take through the bottleneck (0 without a limit).
    pub fn serialization_s(&self, bytes: usize) -> f64 {
        self.rate_bps.map_or(0.0, |rate| bytes as f64 * 8.0 / rate)
    }

    /// The canonical fields of this profile.
    fn fields(&self) -> String {
        let mut fields = vec![format!("rtt={}ms", trim(self.rtt_ms))];
        if let Some(rate) = self.rate_bps {
            fields.push(format!("rate={}", rate_text(rate)));
        }
        if self.loss > 0.0 {
            fields.push(format!("loss={}%", trim(self.loss * 100.0)));
        }
        if self.initcwnd != DEFAULT_INITCWND {
            fields.push(format!("initcwnd={}", self.initcwnd));
        }
        fields.join(",")
    }

    /// What a table says of this profile: its name and fields.
    pub fn describe(&self) -> String {
        let fields = self.fields();
        if fields == self.label {
            fields
        } else {
            format!("{} ({fields})", self.label)
        }
    }
}

impl fmt::Display for NetworkProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label)
    }
}

/// A number without a trailing `.0`.
fn trim(value: f64) -> String {
    let text = format!("{value:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn rate_text(bps: f64) -> String {
    for (unit, scale) in [("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3)] {
        if bps >= scale {
            return format!("{}{unit}", trim(bps / scale));
        }
    }
    format!("{}bit", trim(bps))
}

/// A duration in milliseconds: `50ms`, `0.6s`, `800us`, or plain
/// milliseconds.
fn parse_ms(field: &str, text: &str) -> Result<f64, BadProfile> {
    let lower = text.trim().to_ascii_lowercase();
    let (number, scale) = if let Some(n) = lower.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = lower.strip_suffix("us").or(lower.strip_suffix("µs")) {
        (n, 1e-3)
    } else if let Some(n) = lower.strip_suffix('s') {
        (n, 1e3)
    } else {
        (lower.as_str(), 1.0)
    };
    let value: f64 = number.trim().parse().map_err(|_| {
        BadProfile(format!(
            "{field}={text} is not a duration (e.g. {field}=50ms, {field}=0.6s)"
        ))
    })?;
    if !value.is_finite() || value < 0.0 {
        return Err(BadProfile(format!(
            "{field}={text}: a delay cannot be negative"
        )));
    }
    Ok(value * scale)
}

/// A rate in bits per second: `20mbit`, `5Mbps`, `512kbit`, `1gbit`.
fn parse_rate(text: &str) -> Result<f64, BadProfile> {
    let lower = text.trim().to_ascii_lowercase();
    let units = [
        ("gbit", 1e9),
        ("gbps", 1e9),
        ("mbit", 1e6),
        ("mbps", 1e6),
        ("kbit", 1e3),
        ("kbps", 1e3),
        ("bit", 1.0),
        ("bps", 1.0),
    ];
    let (number, scale) = units
        .iter()
        .find_map(|(unit, scale)| lower.strip_suffix(unit).map(|n| (n, *scale)))
        .unwrap_or((lower.as_str(), 1.0));
    let value: f64 = number.trim().parse().map_err(|_| {
        BadProfile(format!(
            "rate={text} is not a rate (e.g. rate=20mbit, rate=512kbit)"
        ))
    })?;
    if !value.is_finite() || value <= 0.0 {
        return Err(BadProfile(format!(
            "rate={text}: the rate must be above zero (leave rate out for no limit)"
        )));
    }
    Ok(value * scale)
}

/// A loss in percent (`0.5%`, or `0.5`): a fraction from 0 up to, not
/// including, 1.
fn parse_loss(text: &str) -> Result<f64, BadProfile> {
    let number = text.trim().trim_end_matches('%');
    let percent: f64 = number
        .trim()
        .parse()
        .map_err(|_| BadProfile(format!("loss={text} is not a percentage (e.g. loss=1%)")))?;
    if !percent.is_finite() || !(0.0..100.0).contains(&percent) {
        return Err(BadProfile(format!(
            "loss={text}: the loss must be at least 0% and below 100%"
        )));
    }
    Ok(percent / 100.0)
}

/// Adds one `key=value` field to a custom profile.
fn set_field(profile: &mut NetworkProfile, key: &str, value: &str) -> Result<(), BadProfile> {
    match key {
        "rtt" => profile.rtt_ms = parse_ms("rtt", value)?,
        "delay" => profile.rtt_ms = 2.0 * parse_ms("delay", value)?,
        "rate" => profile.rate_bps = Some(parse_rate(value)?),
        "loss" => profile.loss = parse_loss(value)?,
        "initcwnd" => {
            profile.initcwnd = value
                .trim()
                .parse()
                .ok()
                .filter(|segments: &u32| (1..=1000).contains(segments))
                .ok_or_else(|| {
                    BadProfile(format!(
                        "initcwnd={value}: the initial window must be 1 to 1000 segments"
                    ))
                })?
        }
        other => {
            return Err(BadProfile(format!(
                "unknown field '{other}'; fields: rtt (or delay, one way), rate, loss, initcwnd"
            )))
        }
    }
    Ok(())
}

/// The keys a custom profile's fields set (delay sets rtt).
fn key_of(key: &str) -> &str {
    if key == "delay" {
        "rtt"
    } else {
        key
    }
}

/// Parses `--network`: named profiles and custom ones, comma-separated. A
/// custom profile is consecutive `key=value` fields (rtt or delay, rate,
/// loss, initcwnd); a key seen again starts the next one. Repeats count
/// once.
pub fn parse_profiles(list: &str) -> Result<Vec<NetworkProfile>, BadProfile> {
    let mut profiles: Vec<NetworkProfile> = Vec::new();
    // The custom profile being read and the keys it has.
    let mut custom: Option<(NetworkProfile, Vec<String>)> = None;
    let finish = |custom: &mut Option<(NetworkProfile, Vec<String>)>,
                  profiles: &mut Vec<NetworkProfile>|
     -> Result<(), BadProfile> {
        if let Some((mut profile, keys)) = custom.take() {
            if !keys.iter().any(|k| k == "rtt") {
                return Err(BadProfile(format!(
                    "the custom profile '{}' has no rtt (e.g. rtt=50ms)",
                    keys.join(",")
                )));
            }
            profile.label = profile.fields();
            profiles.push(profile);
        }
        Ok(())
    };
    for token in list.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        match token.split_once('=') {
            Some((key, value)) => {
                let key = key.trim().to_ascii_lowercase();
                if custom
                    .as_ref()
                    .is_some_and(|(_, keys)| keys.iter().any(|k| k == key_of(&key)))
                {
                    finish(&mut custom, &mut profiles)?;
                }
                let (profile, keys) = custom.get_or_insert_with(|| {
                    (
                        NetworkProfile {
                            label: String::new(),
                            rtt_ms: 0.0,
                            rate_bps: None,
                            loss: 0.0,
                            initcwnd: DEFAULT_INITCWND,
                        },
                        Vec::new(),
                    )
                });
                set_field(profile, &key, value)?;
                keys.push(key_of(&key).to_string());
            }
            None => {
                finish(&mut custom, &mut profiles)?;
                let profile = NetworkProfile::named(token).ok_or_else(|| {
                    let names: Vec<&str> = NAMED_PROFILES.iter().map(|p| p.0).collect();
                    BadProfile(format!(
                        "unknown profile '{token}'; named profiles: {}, or key=value fields (rtt, rate, loss, initcwnd)",
                        names.join(", ")
                    ))
                })?;
                profiles.push(profile);
            }
        }
    }
    finish(&mut custom, &mut profiles)?;
    let mut unique: Vec<NetworkProfile> = Vec::new();
    for profile in profiles {
        if !unique.iter().any(|p| p.label == profile.label) {
            unique.push(profile);
        }
    }
    if unique.is_empty() {
        return Err(BadProfile("no profile given".to_string()));
    }
    Ok(unique)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_and_custom_profiles_parse_and_keep_a_canonical_label() {
        let profiles =
            parse_profiles("wan,rtt=50ms,rate=20Mbit,loss=0.5%,initcwnd=4,rtt=0.6s,mobile")
                .unwrap();
        let labels: Vec<&str> = profiles.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "wan",
                "rtt=50ms,rate=20mbit,loss=0.5%,initcwnd=4",
                "rtt=600ms",
                "mobile"
            ]
        );
        let custom = &profiles[1];
        assert_eq!(custom.rate_bps, Some(20e6));
        assert!((custom.loss - 0.005).abs() < 1e-12);
        assert_eq!(custom.initcwnd, 4);
        assert_eq!(profiles[3].loss, 0.01);
        assert_eq!(
            profiles[3].describe(),
            "mobile (rtt=100ms,rate=5mbit,loss=1%)"
        );
        // The label reads back as the same profile.
        assert_eq!(&parse_profiles(&custom.label).unwrap()[0], custom);
        assert_eq!(parse_profiles("delay=25ms").unwrap()[0].rtt_ms, 50.0);
    }

    #[test]
    fn impossible_profiles_name_their_field() {
        for (given, named) in [
            ("rtt=-5ms", "rtt=-5ms"),
            ("rtt=50ms,loss=100%", "loss=100%"),
            ("rtt=50ms,loss=-1%", "loss=-1%"),
            ("rtt=50ms,rate=0mbit", "rate=0mbit"),
            ("rtt=50ms,rate=fast", "rate=fast"),
            ("rtt=50ms,initcwnd=0", "initcwnd=0"),
            ("rtt=50ms,jitter=5ms", "'jitter'"),
            ("rate=20mbit", "no rtt"),
            ("moon", "'moon'"),
        ] {
            let error = parse_profiles(given).unwrap_err().to_string();
            assert!(error.contains(named), "{given}: {error}");
            assert!(error.starts_with("--network"), "{error}");
        }
    }
}
