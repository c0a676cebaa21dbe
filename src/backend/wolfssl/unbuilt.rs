//! The wolfSSL backend of a build without the cargo feature `wolfssl`:
//! every row it is asked for says how to build it.

use anyhow::{bail, Result};

use crate::backend::{
    Backend, Capabilities, Handshaker, LibraryInfo, PreparedOperation, PrimitiveBackend,
    Unsupported,
};
use crate::certs::Credentials;
use crate::scenario::backend::WOLFSSL_NOT_BUILT;
use crate::scenario::speed::SpeedRow;
use crate::scenario::HandshakeScenario;

/// wolfSSL, not built in.
pub(super) struct Unbuilt;

impl Backend for Unbuilt {
    fn id(&self) -> &'static str {
        super::DESCRIPTOR.name()
    }

    fn subject(&self) -> crate::scenario::Subject {
        crate::scenario::Subject::library(super::DESCRIPTOR.id)
    }

    fn library(&self) -> LibraryInfo {
        LibraryInfo {
            subject: crate::scenario::Subject::library(super::DESCRIPTOR.id),
            library: super::DESCRIPTOR.library.to_string(),
            version: "not built in".to_string(),
        }
    }

    fn capabilities(&self) -> &Capabilities {
        (super::DESCRIPTOR.capabilities)()
    }

    fn unsupported_reason(&self, _scenario: &HandshakeScenario) -> Option<String> {
        Some(WOLFSSL_NOT_BUILT.to_string())
    }

    fn handshaker(
        &self,
        _scenario: &HandshakeScenario,
        _credentials: &Credentials,
    ) -> Result<Box<dyn Handshaker>> {
        bail!("{WOLFSSL_NOT_BUILT}")
    }

    fn primitives(&self) -> Box<dyn PrimitiveBackend> {
        Box::new(Unbuilt)
    }
}

impl PrimitiveBackend for Unbuilt {
    fn id(&self) -> &'static str {
        super::DESCRIPTOR.name()
    }

    fn prepare(&self, _row: &SpeedRow) -> Result<PreparedOperation, Unsupported> {
        Err(Unsupported::new(WOLFSSL_NOT_BUILT))
    }
}
