//! The counted child: `tlslab counted-child PLAN OUT`, run by tlslab itself
//! under callgrind. It prepares each planned cell uncounted (contexts,
//! certificates, a first verified handshake), then takes the cell's samples
//! with counting on: before each sample it writes an empty dump labelled
//! with the cell and the sample, and each side's turns write their counts
//! labelled with the side ([`crate::backend::turns`]). Each cell's outcome
//! (verified, or why not) goes to OUT as one JSON line as soon as the cell
//! is done; a line per sample on standard error tells the parent how far it
//! got.

use std::ffi::CString;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::{CountPlan, SAMPLE_LABEL};
use crate::backend::turns::{count_sides, SideCounter};
use crate::backend::{backend_by_id, Negotiated};
use crate::certs::CertCache;
use crate::measure::Outcome;
use crate::valgrind::callgrind;
use crate::workload::handshake::HandshakeProbe;

/// What the child says of one cell.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChildCell {
    pub index: usize,
    /// "measured", "unsupported" or "failed".
    pub status: String,
    pub reason: Option<String>,
    pub negotiated: Option<Negotiated>,
    /// Samples taken and verified.
    pub samples: usize,
}

/// Runs a plan (the child's whole life); errors end it with exit 1.
pub fn run(plan: &Path, out: &Path) -> Result<()> {
    let plan: CountPlan = serde_json::from_slice(
        &std::fs::read(plan).with_context(|| format!("reading {}", plan.display()))?,
    )
    .context("reading the counted plan")?;
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(out)
        .with_context(|| format!("opening {}", out.display()))?;
    let certs = CertCache::new(&plan.cert_dir);
    for cell in &plan.cells {
        let result = count_cell(
            cell.index,
            &cell.backend,
            &cell.scenario,
            cell.samples,
            &certs,
        );
        writeln!(out, "{}", serde_json::to_string(&result)?)?;
        out.flush()?;
    }
    Ok(())
}

fn count_cell(
    index: usize,
    backend: &str,
    scenario: &crate::scenario::HandshakeScenario,
    samples: usize,
    certs: &CertCache,
) -> ChildCell {
    let mut cell = ChildCell {
        index,
        status: "measured".to_string(),
        reason: None,
        negotiated: None,
        samples: 0,
    };
    let backend = match backend_by_id(backend) {
        Ok(backend) => backend,
        Err(error) => {
            cell.status = "failed".to_string();
            cell.reason = Some(error.to_string());
            return cell;
        }
    };
    let (mut probe, negotiated) = match HandshakeProbe::prepare(backend.as_ref(), scenario, certs) {
        Ok(prepared) => prepared,
        Err(outcome) => {
            cell.status = outcome.status().to_string();
            cell.reason = outcome.reason().map(String::from);
            return cell;
        }
    };
    cell.negotiated = Some(negotiated);
    // Counted handshakes are never retaken: under valgrind the clocks
    // always disagree.
    probe.apportion_unsure_splits();
    // One more uncounted handshake: whatever a library does lazily on its
    // second connection is done before counting.
    if let Err(reason) = probe.handshake() {
        return failed(cell, reason);
    }
    for sample in 0..samples {
        let label =
            CString::new(format!("{SAMPLE_LABEL} {index} {sample}")).expect("no NUL in a label");
        callgrind::dump_at(&label);
        count_sides(SideCounter::Instructions);
        let result = probe.handshake();
        count_sides(SideCounter::None);
        if let Err(reason) = result {
            return failed(cell, reason);
        }
        cell.samples += 1;
        eprintln!("{SAMPLE_LABEL} {index} {sample}");
    }
    cell
}

fn failed(mut cell: ChildCell, reason: String) -> ChildCell {
    let outcome: Outcome<()> = Outcome::Failed { reason };
    cell.status = outcome.status().to_string();
    cell.reason = outcome.reason().map(String::from);
    cell
}
