//! What tlslab knows about wolfSSL before opening it: its descriptor in
//! the registry and what the bundled build supports, declared as data.
//! The descriptor exists in every build (the registry holds one per
//! backend id); without the cargo feature `wolfssl` it is not listed,
//! supports nothing, and opens a backend whose rows say how to build it.

use std::sync::{Arc, OnceLock};

use crate::backend::{
    BackendDescriptor, BackendDetails, BackendId, Capabilities, CpuMasking, SymbolPrefixes,
};
#[cfg(feature = "wolfssl")]
use crate::scenario::{Aead, CertKind, Group, Resumption, TlsVersion, Transport};

/// Everything tlslab knows about wolfSSL: TLS 1.2 and 1.3 over the memory
/// pipe, DTLS 1.2 and 1.3 over the memory datagram channel, its own
/// crypto (wolfCrypt, with its single-precision "SP" math), not counted
/// apart.
pub static DESCRIPTOR: BackendDescriptor = BackendDescriptor {
    id: BackendId::Wolfssl,
    library: "wolfSSL",
    listed: crate::scenario::backend::WOLFSSL_BUILT_IN,
    programs: &[],
    scratch: None,
    install: "",
    uncountable: None,
    details: BackendDetails {
        capabilities,
        cpu_masking: CpuMasking::Impossible(
            "wolfSSL picks AES-NI, its x86-64 assembly and its optimised (SP) math when it is \
             built, not at run time: build it without the optimised math with \
             `scripts/wolfssl-build.sh --math generic` and `tlslab compare` the two builds' runs",
        ),
        // wolfSSL is C compiled with debug information from the tree
        // wolfssl-sys copies into its build directory: its protocol code is
        // `wolfssl-src/src/` (ssl.c, internal.c, tls13.c, dtls13.c), what
        // `workload::perf` puts in a crypto category by its `wolfcrypt/src/`
        // file (sp_*, rsa, ecc, dh, sha*, aes, random, asn) is that, and the
        // rest of the tree is the library's plumbing. Its C names (wolfSSL_,
        // wc_, sp_) carry no version to strip.
        symbols: SymbolPrefixes {
            protocol_paths: &[],
            crypto_paths: &[],
            versioned_symbol_prefixes: &[],
            protocol_sources: &["/wolfssl-src/src/"],
            library_sources: &["/wolfssl-src/"],
        },
        counts_crypto_apart: false,
        notes: crate::backend::descriptor::no_notes,
        open,
    },
};

#[cfg(feature = "wolfssl")]
fn open() -> Arc<dyn crate::backend::Backend> {
    Arc::new(super::WolfsslBackend)
}

#[cfg(not(feature = "wolfssl"))]
fn open() -> Arc<dyn crate::backend::Backend> {
    Arc::new(super::Unbuilt)
}

/// What the bundled wolfSSL 5.9.4 build offers (wolfssl-sys 5.3.0 with
/// `dh` and `postquantum`; its options.h says so): of the finite-field
/// groups only ffdhe2048 (HAVE_FFDHE_2048), ML-KEM only in the X25519 and
/// P-256 hybrids (WOLFSSL_TLS_NO_MLKEM_STANDALONE), no X448, Ed25519 or
/// Ed448 and no ML-DSA certificates (not configured), no CBC suites in
/// tlslab's rows, no static RSA key transport (WOLFSSL_STATIC_RSA is off).
/// Session tickets come from the project's autoconf site file
/// (scripts/wolfssl/, HAVE_SESSION_TICKET in options.h): with them it
/// resumes TLS 1.2 and DTLS 1.2 by session id or ticket, TLS 1.3 and DTLS
/// 1.3 by PSK; a build without them by session id only.
#[cfg(feature = "wolfssl")]
pub(super) fn capabilities() -> &'static Capabilities {
    static CAPABILITIES: OnceLock<Capabilities> = OnceLock::new();
    CAPABILITIES.get_or_init(|| Capabilities {
        versions: vec![
            TlsVersion::Tls12,
            TlsVersion::Tls13,
            TlsVersion::Dtls12,
            TlsVersion::Dtls13,
        ],
        groups_tls12: vec![
            Group::Dhe2048,
            Group::Dhe3072,
            Group::Dhe4096,
            Group::P256,
            Group::P384,
            Group::P521,
            Group::X25519,
        ],
        groups_tls13: vec![
            Group::X25519,
            Group::P256,
            Group::P384,
            Group::P521,
            Group::Ffdhe2048,
            Group::X25519Mlkem768,
            Group::Secp256r1Mlkem768,
        ],
        certs: vec![
            CertKind::Rsa2048,
            CertKind::Rsa3072,
            CertKind::Rsa4096,
            CertKind::EcdsaP256,
            CertKind::EcdsaP384,
            CertKind::EcdsaP521,
        ],
        aeads: vec![Aead::Aes128Gcm, Aead::Aes256Gcm, Aead::Chacha20Poly1305],
        resumptions: if cfg!(wolfssl_session_ticket) {
            vec![
                Resumption::Off,
                Resumption::SessionId,
                Resumption::Ticket,
                Resumption::Psk,
            ]
        } else {
            vec![Resumption::Off, Resumption::SessionId]
        },
        mutual: true,
        reports_signature_scheme: false,
        transports: vec![Transport::Memory],
    })
}

/// Without the feature wolfSSL supports nothing: every row says how to
/// build it.
#[cfg(not(feature = "wolfssl"))]
pub(super) fn capabilities() -> &'static Capabilities {
    static CAPABILITIES: OnceLock<Capabilities> = OnceLock::new();
    CAPABILITIES.get_or_init(Capabilities::default)
}
