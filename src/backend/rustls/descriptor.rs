//! What tlslab knows about rustls before opening it: one descriptor per
//! crypto provider in the registry, and what rustls supports on each,
//! read once from the provider.

use std::sync::{Arc, OnceLock};

use super::{all_kx_groups, base_provider, our_group, Provider, RustlsBackend};
use crate::backend::{
    BackendDescriptor, BackendDetails, BackendId, Capabilities, CpuMasking, SymbolPrefixes,
};
use crate::scenario::{Aead, CertKind, Group, Named, Resumption, TlsVersion, Transport};

/// The library, as its authors write it (both providers).
pub(super) const LIBRARY: &str = "rustls";

/// Everything tlslab knows about rustls on aws-lc-rs: TLS over memory and
/// TCP, QUIC (quinn) over memory and UDP, its CPU features masked by the OpenSSL-style capability vector
/// aws-lc reads, its crypto counted apart on the instrumented provider.
pub static AWS_LC_DESCRIPTOR: BackendDescriptor = BackendDescriptor {
    id: BackendId::RustlsAwsLc,
    library: LIBRARY,
    listed: true,
    programs: &[],
    scratch: None,
    install: "",
    uncountable: None,
    details: BackendDetails {
        capabilities: || Provider::AwsLcRs.capabilities(),
        cpu_masking: CpuMasking::OPENSSL_CAPABILITY_VECTOR,
        symbols: SymbolPrefixes {
            protocol_paths: &["rustls::"],
            crypto_paths: &["aws_lc_rs::"],
            versioned_symbol_prefixes: &["aws_lc_"],
            protocol_sources: &["/rustls-0."],
            library_sources: &["/aws-lc/", "/aws-lc-rs-", "/aws-lc-sys-"],
        },
        counts_crypto_apart: true,
        notes: crate::backend::descriptor::no_notes,
        open: || Arc::new(RustlsBackend::aws_lc_rs()),
    },
};

/// Everything tlslab knows about rustls on ring: as on aws-lc-rs, but
/// ring cannot be told to leave the CPU's features alone.
pub static RING_DESCRIPTOR: BackendDescriptor = BackendDescriptor {
    id: BackendId::RustlsRing,
    library: LIBRARY,
    listed: true,
    programs: &[],
    scratch: None,
    install: "",
    uncountable: None,
    details: BackendDetails {
        capabilities: || Provider::Ring.capabilities(),
        cpu_masking: CpuMasking::Impossible("ring has no switch to turn its CPU features off"),
        symbols: SymbolPrefixes {
            protocol_paths: &["rustls::"],
            crypto_paths: &["ring::"],
            versioned_symbol_prefixes: &["ring_core_"],
            protocol_sources: &["/rustls-0."],
            library_sources: &["/ring-0."],
        },
        counts_crypto_apart: true,
        notes: crate::backend::descriptor::no_notes,
        open: || Arc::new(RustlsBackend::ring()),
    },
};

impl Provider {
    /// Its descriptor.
    pub(super) fn descriptor(self) -> &'static BackendDescriptor {
        match self {
            Provider::AwsLcRs => &AWS_LC_DESCRIPTOR,
            Provider::Ring => &RING_DESCRIPTOR,
        }
    }

    /// What rustls supports on this provider, read from the provider once.
    pub(super) fn capabilities(self) -> &'static Capabilities {
        static AWS_LC: OnceLock<Capabilities> = OnceLock::new();
        static RING: OnceLock<Capabilities> = OnceLock::new();
        match self {
            Provider::AwsLcRs => AWS_LC.get_or_init(|| read_capabilities(self)),
            Provider::Ring => RING.get_or_init(|| read_capabilities(self)),
        }
    }
}

/// What rustls supports on `provider`: its key exchange groups, the
/// certificates its verifier takes, AEAD suites only.
fn read_capabilities(provider: Provider) -> Capabilities {
    let base = base_provider(provider);
    let groups: Vec<Group> = base
        .kx_groups
        .iter()
        .chain(all_kx_groups(provider))
        .filter_map(|g| our_group(g.name()))
        .fold(Vec::new(), |mut groups, g| {
            if !groups.contains(&g) {
                groups.push(g);
            }
            groups
        });
    let certs = match provider {
        Provider::AwsLcRs => vec![
            CertKind::Rsa2048,
            CertKind::Rsa3072,
            CertKind::Rsa4096,
            CertKind::EcdsaP256,
            CertKind::EcdsaP384,
            CertKind::EcdsaP521,
            CertKind::Ed25519,
            CertKind::MlDsa44,
            CertKind::MlDsa65,
            CertKind::MlDsa87,
        ],
        Provider::Ring => vec![
            CertKind::Rsa2048,
            CertKind::Rsa3072,
            CertKind::Rsa4096,
            CertKind::EcdsaP256,
            CertKind::EcdsaP384,
            CertKind::Ed25519,
        ],
    };
    Capabilities {
        // QUIC through quinn-proto, over the memory datagram channel.
        versions: vec![TlsVersion::Tls12, TlsVersion::Tls13, TlsVersion::Quic],
        groups_tls12: groups
            .iter()
            .copied()
            .filter(|g| g.protocol_conflict(TlsVersion::Tls12).is_none())
            .collect(),
        groups_tls13: groups,
        certs,
        // rustls has no CBC suites (by design: AEADs only).
        aeads: Aead::ALL.iter().copied().filter(|a| a.is_aead()).collect(),
        resumptions: Resumption::ALL.to_vec(),
        mutual: true,
        reports_signature_scheme: true,
        // TLS over memory and TCP, QUIC over memory and UDP (UDP carries
        // no TLS: Transport::conflict).
        transports: vec![Transport::Memory, Transport::Tcp, Transport::Udp],
    }
}
