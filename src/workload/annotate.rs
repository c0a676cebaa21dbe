//! What a matrix's handshake cells get once sampled: a trace on the wire
//! (the figures of [`crate::workload::wire`], from handshakes of each
//! row's twin over memory) and the network model over each profile
//! ([`crate::model::network`]). Kept apart from the figures and results
//! themselves, which a cell holds, so those stay below the handshake
//! workload.

use crate::backend::Backend;
use crate::certs::CertCache;
use crate::model::network::{model, ModelInput, Modelled};
use crate::scenario::network::NetworkProfile;
use crate::scenario::{HandshakeScenario, Transport, MAX_MTU_BYTES};
use crate::stats;
use crate::transport::tap;
use crate::workload::handshake::{CellResult, HandshakeProbe};
use crate::workload::network::NetworkResult;
use crate::workload::wire::{figures, Wire};

/// Handshakes traced per row: ECDSA signatures are DER-encoded and vary
/// by a byte or two, so the row keeps the handshake of median size.
pub const TRACED_HANDSHAKES: usize = 5;

/// Traces `count` verified handshakes of `scenario` over memory and
/// returns the figures of each.
fn trace(
    backend: &dyn Backend,
    scenario: &HandshakeScenario,
    certs: &CertCache,
    count: usize,
) -> Result<Vec<Wire>, String> {
    let (mut probe, _) = HandshakeProbe::prepare(backend, scenario, certs)
        .map_err(|outcome| outcome.reason().unwrap_or("failed").to_string())?;
    // One handshake per recording: none retaken for an unsure CPU split.
    probe.apportion_unsure_splits();
    let mut traced = Vec::with_capacity(count);
    for _ in 0..count {
        let (result, recording) = tap::record(|| probe.handshake());
        result?;
        if recording.turns.is_empty() {
            return Err(format!(
                "{} put nothing on the in-memory transport",
                backend.id()
            ));
        }
        traced.push(figures(&recording));
    }
    Ok(traced)
}

/// A row's wire figures: [`TRACED_HANDSHAKES`] handshakes of its twin
/// over memory, the one of median size kept; for DTLS, the fragments from
/// one more at the largest MTU. The reason if the row cannot be traced.
pub fn trace_cell(
    backend: &dyn Backend,
    scenario: &HandshakeScenario,
    certs: &CertCache,
) -> Result<Wire, String> {
    let twin = HandshakeScenario {
        transport: Transport::Memory,
        ..*scenario
    };
    let mut traced = trace(backend, &twin, certs, TRACED_HANDSHAKES)?;
    traced.sort_by_key(Wire::total_bytes);
    let spread = traced.last().map_or(0, Wire::total_bytes) - traced[0].total_bytes();
    let mut wire = traced.swap_remove(traced.len() / 2);
    wire.handshakes = TRACED_HANDSHAKES as u32;
    wire.bytes_spread = spread;
    if twin.mtu_bytes.is_some_and(|mtu| mtu < MAX_MTU_BYTES) {
        let unlimited = HandshakeScenario {
            mtu_bytes: Some(MAX_MTU_BYTES),
            ..twin
        };
        wire.fragments = trace(backend, &unlimited, certs, 1)
            .ok()
            .map(|whole| wire.records().saturating_sub(whole[0].records()));
    }
    Ok(wire)
}

/// Traces every cell that was measured (timed or counted), on the
/// backend of its name (the wire is the library's, wherever its server
/// ran; rows of a server outside tlslab, nginx's, are left out). Returns
/// the cells that could not be traced, with why. `progress` is told after
/// each cell.
pub fn trace_cells(
    cells: &mut [CellResult],
    certs: &CertCache,
    progress: &mut dyn FnMut(usize),
) -> Vec<(usize, String)> {
    let mut untraced = Vec::new();
    for (i, cell) in cells.iter_mut().enumerate() {
        let measured = cell.outcome.status() == crate::measure::CellStatus::Measured
            && (!cell.samples().is_empty()
                || cell.counts.instructions.is_some()
                || cell.counts.memory.is_some());
        // A server outside tlslab (nginx) has no library here to trace.
        // (nor a generic-CPU row, whose libraries ran in a child).
        let native = cell.subject.cpu_features() == crate::scenario::CpuFeatures::Native;
        let backend = cell
            .subject
            .backend()
            .filter(|_| native)
            .map(|id| id.open());
        if let Some(backend) = backend.filter(|_| measured) {
            match trace_cell(backend.as_ref(), &cell.scenario, certs) {
                Ok(wire) => cell.counts.wire = Some(wire),
                Err(reason) => untraced.push((i, reason)),
            }
        }
        progress(i + 1);
    }
    untraced
}

/// Each side's median CPU per handshake of a cell, nanoseconds: timed
/// samples, else none (the model then prices the path alone).
pub fn cpu_medians(cell: &CellResult) -> Option<(f64, f64)> {
    let samples = cell.samples();
    let median = |pick: fn(&crate::workload::handshake::Sample) -> u64| {
        stats::median(
            &samples
                .iter()
                .map(|s| pick(&s.value) as f64)
                .collect::<Vec<_>>(),
        )
    };
    Some((median(|s| s.client_cpu_ns)?, median(|s| s.server_cpu_ns)?))
}

/// The model of `cell` over `profile`, if the cell has a wire trace.
pub fn model_cell(cell: &CellResult, profile: &NetworkProfile) -> Option<Modelled> {
    let wire = cell.counts.wire.as_ref()?;
    let (client_cpu_ns, server_cpu_ns) = cpu_medians(cell).unwrap_or((0.0, 0.0));
    Some(model(
        &ModelInput {
            turns: &wire.turns,
            datagrams: wire.datagrams,
            client_cpu_ns,
            server_cpu_ns,
        },
        profile,
    ))
}

/// Sets the model over every profile of every cell traced on the wire
/// (keeping what a link measured for a profile already there).
pub fn model_cells(cells: &mut [CellResult], profiles: &[NetworkProfile]) {
    for cell in cells.iter_mut().filter(|c| c.counts.wire.is_some()) {
        for profile in profiles {
            let modelled = model_cell(cell, profile);
            match cell
                .counts
                .network
                .iter_mut()
                .find(|r| r.profile.label == profile.label)
            {
                Some(result) => result.model = modelled,
                None => cell.counts.network.push(NetworkResult {
                    profile: profile.clone(),
                    model: modelled,
                    link: None,
                    measured: None,
                }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mock_is_traced_through_the_memory_pipe() {
        use crate::scenario::{CertKind, Group, TlsVersion};
        let backend = crate::backend::mock::MockBackend::default();
        let dir = tempfile::tempdir().unwrap();
        let certs = CertCache::new(dir.path());
        let figures = |version, group| {
            let scenario = HandshakeScenario::full(version, group, CertKind::EcdsaP256);
            trace_cell(&backend, &scenario, &certs).unwrap()
        };
        let classic = figures(TlsVersion::Tls13, Group::X25519);
        let hybrid = figures(TlsVersion::Tls13, Group::X25519Mlkem768);
        assert_eq!(hybrid.client_bytes - classic.client_bytes, 1_184);
        assert_eq!(hybrid.server_bytes - classic.server_bytes, 1_088);
        assert_eq!(classic.round_trips, Some(1.0));
        assert_eq!(classic.handshakes, TRACED_HANDSHAKES as u32);
        assert_eq!(classic.bytes_spread, 0);
        let tls12 = figures(TlsVersion::Tls12, Group::X25519);
        assert_eq!(tls12.round_trips, Some(2.0));
        assert_eq!(tls12.server_round_trips, Some(1.5));
        assert_eq!((tls12.client_flights, tls12.server_flights), (2, 2));
    }
}
