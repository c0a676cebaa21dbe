//! A row over a network: per profile, the model's time from connect()
//! until the client can send application data (from the row's wire trace
//! and its measured CPU per side), and, over an emulated link, the same
//! time measured handshake by handshake ([`crate::workload::remote`]).

use serde::{Deserialize, Serialize};

use crate::measure::Outcome;
use crate::model::network::Modelled;
use crate::scenario::network::NetworkProfile;
use crate::stats;

/// One handshake over a link, as the client saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkSample {
    /// From the client's connect() until it could send application data.
    pub latency_ns: u64,
    /// Each side's thread CPU time for the handshake (the server's as its
    /// process reported it).
    pub client_cpu_ns: u64,
    pub server_cpu_ns: u64,
}

impl crate::measure::Sampled for LinkSample {
    fn cost(&self) -> f64 {
        self.latency_ns as f64
    }
}

/// A row over one profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NetworkResult {
    pub profile: NetworkProfile,
    /// `None` when the row has no wire trace to model.
    pub model: Option<Modelled>,
    /// The link the row was measured over (`tun`: tlslab's link between
    /// two network namespaces), `None` for the model alone.
    pub link: Option<String>,
    /// The handshakes over the link.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured: Option<Outcome<LinkSample>>,
}

impl NetworkResult {
    /// The measured latencies, milliseconds, sorted.
    pub fn latencies_ms(&self) -> Vec<f64> {
        let mut values: Vec<f64> = self
            .measured
            .as_ref()
            .map(|outcome| {
                outcome
                    .samples()
                    .iter()
                    .map(|s| s.value.latency_ns as f64 / 1e6)
                    .collect()
            })
            .unwrap_or_default();
        values.sort_by(f64::total_cmp);
        values
    }

    /// The median measured latency, milliseconds.
    pub fn measured_ms(&self) -> Option<f64> {
        stats::median(&self.latencies_ms())
    }

    /// The 95th percentile of the measured latencies, milliseconds.
    pub fn p95_ms(&self) -> Option<f64> {
        let sorted = self.latencies_ms();
        (!sorted.is_empty()).then(|| stats::quantile_sorted(&sorted, 0.95))
    }
}
