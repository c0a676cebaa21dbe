//! Heap bytes per side of a handshake, counted in process: each sample is
//! one verified handshake with every allocation of each side's turns
//! charged to it ([`crate::heap`]); the figures are exact and repeat, so a
//! few samples per cell suffice.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, Result};

use crate::backend::turns::{count_sides, TurnCounter};
use crate::backend::{Backend, Negotiated};
use crate::certs::CertCache;
use crate::heap::{self, HeapSample};
use crate::measure::{Outcome, Sampled, Timed};
use crate::scenario::HandshakeScenario;
use crate::workload::handshake::HandshakeProbe;

/// A handshake's heap figure for ratios: both sides' peaks.
impl Sampled for HeapSample {
    fn cost(&self) -> f64 {
        (self.client_peak_bytes + self.server_peak_bytes) as f64
    }
}

/// What counting the heap found for one cell.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryCell {
    pub outcome: Outcome<HeapSample>,
    pub negotiated: Option<Negotiated>,
}

/// Counts each cell's heap bytes per side over `samples` handshakes.
/// `progress` is called after each sample with the number done so far.
pub fn count_memory(
    cells: &[(HandshakeScenario, Arc<dyn Backend>)],
    certs: &CertCache,
    samples: usize,
    interrupt: &AtomicBool,
    progress: &dyn Fn(usize),
) -> Result<Vec<MemoryCell>> {
    if !heap::hooked() {
        bail!("heap bytes can be counted only by the tlslab binary, whose malloc is counted");
    }
    let mut done = 0;
    let mut results = Vec::new();
    for (scenario, backend) in cells {
        if interrupt.load(Ordering::SeqCst) {
            results.push(MemoryCell {
                outcome: Outcome::Measured {
                    samples: Vec::new(),
                    precise: false,
                },
                negotiated: None,
            });
            continue;
        }
        let (mut probe, negotiated) =
            match HandshakeProbe::prepare(backend.as_ref(), scenario, certs) {
                Ok(prepared) => prepared,
                Err(outcome) => {
                    results.push(MemoryCell {
                        outcome: match outcome {
                            Outcome::Unsupported { reason } => Outcome::Unsupported { reason },
                            other => Outcome::Failed {
                                reason: other.reason().unwrap_or_default().to_string(),
                            },
                        },
                        negotiated: None,
                    });
                    continue;
                }
            };
        probe.apportion_unsure_splits();
        let mut taken = Vec::new();
        let mut failure = probe.handshake().err();
        for sample in 0..samples {
            if failure.is_some() || interrupt.load(Ordering::SeqCst) {
                break;
            }
            heap::begin();
            count_sides(TurnCounter::Heap);
            let result = probe.handshake();
            count_sides(TurnCounter::None);
            let counted = heap::end();
            match (result, counted) {
                (Ok(_), Some(value)) => taken.push(Timed {
                    round: sample as u32,
                    value,
                }),
                (Ok(_), None) => {
                    failure = Some("too many live allocations to tell apart".to_string())
                }
                (Err(reason), _) => failure = Some(reason),
            }
            done += 1;
            progress(done);
        }
        results.push(MemoryCell {
            outcome: match failure {
                Some(reason) => Outcome::Failed { reason },
                None => Outcome::Measured {
                    precise: taken.len() == samples,
                    samples: taken,
                },
            },
            negotiated: Some(negotiated),
        });
    }
    Ok(results)
}
