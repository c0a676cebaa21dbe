//! Fixtures the store's tests share: the description of a run, and a
//! measured handshake cell with the scenario and parameters it negotiated.

use crate::backend::{LibraryInfo, Negotiated};
use crate::host::HostInfo;
use crate::measure::{Outcome, Timed};
use crate::scenario::{Aead, CertKind, Group, HandshakeScenario, Resumption, TlsVersion};
use crate::store::{RunInfo, RunKind};
use crate::workload::handshake::{CellResult, Sample};

/// A run of `kind` that a test begins as `command_line` on this host, with
/// one library: OpenSSL 3.
pub(crate) fn run_info(kind: RunKind, command_line: &str) -> RunInfo {
    RunInfo {
        kind,
        tool_version: "test".into(),
        command_line: command_line.into(),
        options_json: "{}".into(),
        host: HostInfo::current(),
        libraries: vec![LibraryInfo {
            subject: crate::scenario::Subject::from_name("openssl").unwrap(),
            library: "OpenSSL".into(),
            version: "3".into(),
        }],
    }
}

/// A handshake run on the mock backend, as [`measured_cell`] was taken.
pub(crate) fn handshake_run_info() -> RunInfo {
    RunInfo {
        libraries: vec![LibraryInfo {
            subject: crate::scenario::Subject::from_name("mock").unwrap(),
            library: "mock".into(),
            version: "0".into(),
        }],
        ..run_info(RunKind::Handshake, "tlslab handshake")
    }
}

/// TLS 1.3 with every axis set away from its default.
pub(crate) fn scenario() -> HandshakeScenario {
    HandshakeScenario {
        version: TlsVersion::Tls13,
        group: Group::X25519Mlkem768,
        cert: CertKind::MlDsa65,
        aead: Aead::Chacha20Poly1305,
        resumption: Resumption::Psk,
        mutual: true,
        chain_depth: 4,
        mtu_bytes: None,
        transport: crate::scenario::Transport::Memory,
    }
}

/// What [`scenario`] negotiates.
pub(crate) fn negotiated() -> Negotiated {
    Negotiated {
        version: "TLSv1.3".into(),
        suite: "TLS_CHACHA20_POLY1305_SHA256".into(),
        group: Some("x25519mlkem768".into()),
        signature: None,
        resumed: true,
        alpn: None,
        early_data: false,
    }
}

/// [`scenario`] measured on the mock backend: two samples in rounds 0 and 2.
pub(crate) fn measured_cell() -> CellResult {
    CellResult {
        counts: Default::default(),
        subject: crate::scenario::Subject::from_name("mock").unwrap(),
        scenario: scenario(),
        negotiated: Some(negotiated()),
        outcome: Outcome::Measured {
            samples: vec![
                Timed {
                    round: 0,
                    value: Sample {
                        wall_ns: 10,
                        client_ns: 4,
                        server_ns: 5,
                        client_cpu_ns: 3,
                        server_cpu_ns: 2,
                    },
                },
                Timed {
                    round: 2,
                    value: Sample {
                        wall_ns: 12,
                        client_ns: 5,
                        server_ns: 6,
                        client_cpu_ns: 4,
                        server_cpu_ns: 6,
                    },
                },
            ],
            precise: false,
            note: None,
        },
    }
}
