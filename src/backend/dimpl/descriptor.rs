//! What tlslab knows about dimpl before opening it: its descriptor in the
//! registry and what it supports, declared as data.

use std::sync::{Arc, OnceLock};

use super::DimplBackend;
use crate::backend::{
    BackendDescriptor, BackendDetails, BackendId, Capabilities, CpuMasking, SymbolPrefixes,
};
use crate::scenario::{Aead, CertKind, Group, Resumption, TlsVersion, Transport};

/// Everything tlslab knows about dimpl: DTLS 1.2 and 1.3 over the memory
/// datagram channel and loopback UDP, its crypto aws-lc-rs (so masked as
/// aws-lc is), counted only as a whole.
pub static DESCRIPTOR: BackendDescriptor = BackendDescriptor {
    id: BackendId::Dimpl,
    library: "dimpl",
    listed: true,
    programs: &[],
    scratch: None,
    install: "",
    uncountable: None,
    details: BackendDetails {
        capabilities,
        cpu_masking: CpuMasking::OPENSSL_CAPABILITY_VECTOR,
        symbols: SymbolPrefixes {
            protocol_paths: &["dimpl::"],
            crypto_paths: &["aws_lc_rs::"],
            versioned_symbol_prefixes: &["aws_lc_"],
            protocol_sources: &["/dimpl-"],
            library_sources: &["/aws-lc/", "/aws-lc-rs-", "/aws-lc-sys-"],
        },
        counts_crypto_apart: false,
        notes: crate::backend::descriptor::no_notes,
        open: || Arc::new(DimplBackend),
    },
};

/// What dimpl offers: ECDHE-ECDSA with AEAD suites, full handshakes only.
pub(super) fn capabilities() -> &'static Capabilities {
    static CAPABILITIES: OnceLock<Capabilities> = OnceLock::new();
    CAPABILITIES.get_or_init(|| {
        let groups = vec![Group::X25519, Group::P256, Group::P384];
        Capabilities {
            versions: vec![TlsVersion::Dtls12, TlsVersion::Dtls13],
            groups_tls12: groups.clone(),
            groups_tls13: groups,
            certs: vec![CertKind::EcdsaP256, CertKind::EcdsaP384],
            aeads: vec![Aead::Aes128Gcm, Aead::Aes256Gcm, Aead::Chacha20Poly1305],
            resumptions: vec![Resumption::Off],
            mutual: true,
            reports_signature_scheme: true,
            transports: vec![Transport::Memory, Transport::Udp],
        }
    })
}
