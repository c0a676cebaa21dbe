//! What tlslab knows about OpenSSL before opening it: its descriptor in
//! the registry, and its capabilities, probed once from the library (the
//! groups and key types depend on how it was built).

use std::sync::{Arc, OnceLock};

use openssl::ssl::{SslContextBuilder, SslMethod};

use super::{openssl_group_name, OpensslBackend};
use crate::backend::{
    BackendDescriptor, BackendDetails, BackendId, Capabilities, CpuMasking, SymbolPrefixes,
};
use crate::certs::openssl_supports_key;
use crate::scenario::{
    Aead, CertKind, Group, HandshakeScenario, Named, Resumption, TlsVersion, Transport,
};

/// Everything tlslab knows about OpenSSL: TLS and DTLS 1.2 over memory
/// and loopback sockets, its CPU features masked by its capability vector,
/// its crypto counted only as a whole (it has no provider tlslab can wrap).
pub static DESCRIPTOR: BackendDescriptor = BackendDescriptor {
    id: BackendId::Openssl,
    library: "OpenSSL",
    listed: true,
    programs: &[],
    scratch: None,
    install: "",
    uncountable: None,
    details: BackendDetails {
        capabilities,
        cpu_masking: CpuMasking::OPENSSL_CAPABILITY_VECTOR,
        symbols: SymbolPrefixes {
            protocol_paths: &[],
            crypto_paths: &[],
            versioned_symbol_prefixes: &[],
            protocol_sources: &["/ssl/"],
            library_sources: &["/openssl-build/", "/openssl-0.", "/openssl-sys-"],
        },
        counts_crypto_apart: false,
        notes,
        open: || Arc::new(OpensslBackend::new()),
    },
};

/// What a report says under OpenSSL's rows of `scenario`: for QUIC, the
/// datagram size it cannot change.
fn notes(scenario: &HandshakeScenario) -> Vec<&'static str> {
    match scenario.version {
        TlsVersion::Quic => vec![super::quic::DATAGRAM_SIZE_NOTE],
        _ => Vec::new(),
    }
}

/// OpenSSL's capabilities, probed from the library once.
pub(super) fn capabilities() -> &'static Capabilities {
    static CAPABILITIES: OnceLock<Capabilities> = OnceLock::new();
    CAPABILITIES.get_or_init(probe_capabilities)
}

/// Asks this OpenSSL build which groups and key types it has.
fn probe_capabilities() -> Capabilities {
    let group_known = |group: Group| -> bool {
        let Some(name) = openssl_group_name(group) else {
            return true;
        };
        SslContextBuilder::new(SslMethod::tls())
            .and_then(|mut ctx| ctx.set_groups_list(name))
            .is_ok()
    };
    let groups_tls12 = Group::ALL
        .iter()
        .copied()
        .filter(|g| g.protocol_conflict(TlsVersion::Tls12).is_none() && group_known(*g))
        .collect();
    let groups_tls13 = Group::ALL
        .iter()
        .copied()
        .filter(|g| g.protocol_conflict(TlsVersion::Tls13).is_none() && group_known(*g))
        .collect();
    openssl::error::ErrorStack::get(); // drop errors left by failed probes
    let mut versions = vec![TlsVersion::Tls12, TlsVersion::Tls13, TlsVersion::Dtls12];
    // A QUIC server (the listener API) since OpenSSL 3.5.
    if openssl::version::number() >= 0x3050_0000 {
        versions.push(TlsVersion::Quic);
    }
    Capabilities {
        versions,
        groups_tls12,
        groups_tls13,
        certs: CertKind::ALL
            .iter()
            .copied()
            .filter(|kind| openssl_supports_key(*kind))
            .collect(),
        aeads: Aead::ALL.to_vec(),
        resumptions: Resumption::ALL.to_vec(),
        mutual: true,
        reports_signature_scheme: openssl::version::number() >= 0x3050_0000,
        transports: vec![Transport::Memory, Transport::Tcp, Transport::Udp],
    }
}
