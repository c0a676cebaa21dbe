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

use super::plan::{ChildCell, CountPlan, PlannedCount, Work, SAMPLE_LABEL};
use crate::backend::turns::{count_sides, side_begins, side_ends, TurnCounter};
use crate::backend::{backend_by_id, Negotiated};
use crate::certs::CertCache;
use crate::measure::CellStatus;
use crate::scenario::bulk::BulkScenario;
use crate::scenario::tunnel::TunnelScenario;
use crate::scenario::Side;
use crate::valgrind::callgrind;
use crate::workload::bulk::BulkProbe;
use crate::workload::handshake::HandshakeProbe;
use crate::workload::speed::PreparedRow;

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
        let result = count_cell(cell, &certs);
        writeln!(out, "{}", serde_json::to_string(&result)?)?;
        out.flush()?;
    }
    Ok(())
}

/// One verified sample of a cell's work, counted or not.
type Sample<'a> = Box<dyn FnMut() -> Result<(), String> + 'a>;

/// Prepares a cell's work uncounted: its sample, and what its handshake
/// negotiated; or how it ended (unsupported, failed).
fn prepare(
    work: &Work,
    backend: Option<&str>,
    certs: &CertCache,
) -> Result<(Sample<'static>, Option<Negotiated>), (CellStatus, String)> {
    let ended = |status: CellStatus, reason: String| (status, reason);
    let backend = backend
        .map(backend_by_id)
        .transpose()
        .map_err(|e| ended(CellStatus::Failed, e.to_string()))?;
    match work {
        Work::Handshake { scenario } => {
            let backend = backend.ok_or_else(|| ended(CellStatus::Failed, "no backend".into()))?;
            let (mut probe, negotiated) =
                HandshakeProbe::prepare(backend.as_ref(), scenario, certs)
                    .map_err(|o| ended(o.status(), o.reason().unwrap_or_default().to_string()))?;
            // Counted handshakes are never retaken: under valgrind the
            // clocks always disagree.
            probe.apportion_unsure_splits();
            // One more uncounted handshake: whatever a library does lazily
            // on its second connection is done before counting.
            probe
                .handshake()
                .map_err(|reason| ended(CellStatus::Failed, reason))?;
            Ok((
                Box::new(move || probe.handshake().map(drop)),
                Some(negotiated),
            ))
        }
        Work::Bulk { row, bytes } => {
            let scenario = BulkScenario::from_label(row)
                .ok_or_else(|| ended(CellStatus::Failed, format!("no bulk row '{row}'")))?;
            let (mut probe, negotiated) =
                BulkProbe::prepare(backend.as_deref(), &scenario, certs, Some(*bytes))
                    .map_err(|o| ended(o.status(), o.reason().unwrap_or_default().to_string()))?;
            Ok((Box::new(move || probe.run().map(drop)), negotiated))
        }
        Work::Tunnel {
            engine,
            row,
            packets,
        } => {
            let scenario = TunnelScenario::from_label(row)
                .ok_or_else(|| ended(CellStatus::Failed, format!("no tunnel row '{row}'")))?;
            let sample = engine
                .open()
                .prepare_counted(&scenario, *packets)
                .map_err(|o| ended(o.status(), o.reason().unwrap_or_default().to_string()))?;
            Ok((sample, None))
        }
        Work::TunnelSetup { engine } => {
            let sample = engine
                .open()
                .prepare_counted_setup()
                .map_err(|o| ended(o.status(), o.reason().unwrap_or_default().to_string()))?;
            Ok((sample, None))
        }
        Work::Speed { row, operations } => {
            let backend = backend.ok_or_else(|| ended(CellStatus::Failed, "no backend".into()))?;
            let primitives = backend.primitives();
            let mut prepared = PreparedRow::uncalibrated(primitives.as_ref(), row)
                .map_err(|unsupported| ended(CellStatus::Unsupported, unsupported.0))?;
            // One uncounted operation: lazy set-up is done before counting.
            prepared
                .run(1)
                .map_err(|e| ended(CellStatus::Failed, format!("{e:#}")))?;
            let operations = *operations;
            Ok((
                Box::new(move || {
                    side_begins(Side::Client);
                    let result = prepared.run(operations);
                    side_ends(Side::Client);
                    result.map_err(|e| format!("{e:#}"))
                }),
                None,
            ))
        }
    }
}

fn count_cell(planned: &PlannedCount, certs: &CertCache) -> ChildCell {
    let index = planned.index;
    let mut cell = ChildCell {
        index,
        status: CellStatus::Measured,
        reason: None,
        negotiated: None,
        samples: 0,
    };
    let (mut sample, negotiated) = match prepare(&planned.work, planned.backend.as_deref(), certs) {
        Ok(prepared) => prepared,
        Err((status, reason)) => {
            cell.status = status;
            cell.reason = Some(reason);
            return cell;
        }
    };
    cell.negotiated = negotiated;
    for taken in 0..planned.samples {
        let label =
            CString::new(format!("{SAMPLE_LABEL} {index} {taken}")).expect("no NUL in a label");
        callgrind::dump_at(&label);
        count_sides(TurnCounter::Instructions);
        let result = sample();
        count_sides(TurnCounter::None);
        if let Err(reason) = result {
            cell.status = CellStatus::Failed;
            cell.reason = Some(reason);
            return cell;
        }
        cell.samples += 1;
        eprintln!("{SAMPLE_LABEL} {index} {taken}");
    }
    cell
}
