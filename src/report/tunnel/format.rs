//! How the tunnel tables write a throughput and a row's security notes,
//! shared by the five tables ([`super::text`]) and table 6
//! ([`super::fastest`]).

/// Throughput with a precision that suits its size.
pub(super) fn format_rate(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// A row's security notes as one cell: `WEAK` first when it is weak.
pub(super) fn notes_of(weak: bool, notes: &[&'static str]) -> String {
    let mut all: Vec<&str> = Vec::new();
    if weak {
        all.push("WEAK");
    }
    all.extend(notes.iter().copied());
    all.join("; ")
}
