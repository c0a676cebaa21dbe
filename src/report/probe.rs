//! The probe view: what a server accepts, one row per version, group and
//! suite tried, and the lists of what it accepted (the JSON export's
//! `accepted`).

use serde_json::json;

use super::{Column, Document, Table};
use crate::backend::probe::{Attempt, Axis};
use crate::scenario::Named;

/// What the server accepted on one axis, in the order tried.
pub fn accepted(attempts: &[Attempt], axis: Axis) -> Vec<String> {
    attempts
        .iter()
        .filter(|a| a.axis == axis && a.accepted())
        .map(|a| a.offered.clone())
        .collect()
}

/// One row per try.
pub fn table(target: &str, attempts: &[Attempt]) -> Table {
    let mut table = Table::new(vec![
        Column::text("offered"),
        Column::text("with"),
        Column::text("accepted"),
        Column::text("negotiated or why not"),
    ])
    .titled(format!("What {target} accepts (one handshake per row)"));
    for attempt in attempts {
        let (accepted, detail) = match &attempt.outcome {
            Ok(seen) => (
                "yes",
                format!(
                    "{} {} {}",
                    seen.version,
                    seen.suite,
                    seen.group.as_deref().unwrap_or("")
                )
                .trim_end()
                .to_string(),
            ),
            Err(reason) => ("no", reason.clone()),
        };
        let with = match attempt.axis {
            Axis::Version => "every group and suite".to_string(),
            _ => format!("TLS {}", attempt.version.id()),
        };
        table.rows.push(vec![
            attempt.offered.clone(),
            with,
            accepted.to_string(),
            detail,
        ]);
    }
    if let Some(certificate) = certificate(attempts) {
        table
            .notes
            .push(format!("The server's certificate: {certificate}."));
    }
    table.notes.push("Groups are tried on TLS 1.3 first, then on TLS 1.2 with ECDHE and DHE suites only; suites on the version they belong to, only on versions the server accepted. The client verifies nothing here: the probe asks what the server offers, not whether it is trusted.".to_string());
    table
}

/// The certificate of the first accepted try.
fn certificate(attempts: &[Attempt]) -> Option<&str> {
    attempts
        .iter()
        .find_map(|a| a.outcome.as_ref().ok())
        .map(|seen| seen.certificate.as_str())
}

/// The probe alone (`load --target HOST:PORT --probe-only`).
pub fn document(heading: &str, target: &str, attempts: &[Attempt]) -> Document {
    let table = table(target, attempts);
    let records = Table {
        title: None,
        ..table.clone()
    };
    Document {
        heading: heading.to_string(),
        tables: vec![table],
        records,
        data: data(target, attempts),
        footer: Vec::new(),
        figures: Vec::new(),
    }
}

/// The probe as JSON: every try, and what was accepted per axis.
pub fn data(target: &str, attempts: &[Attempt]) -> serde_json::Value {
    json!({
        "target": target,
        "certificate": certificate(attempts),
        "accepted": {
            "versions": accepted(attempts, Axis::Version),
            "groups": accepted(attempts, Axis::Group),
            "suites": accepted(attempts, Axis::Suite),
        },
        "attempts": attempts,
    })
}
