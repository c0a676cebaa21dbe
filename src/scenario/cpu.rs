//! The CPU features a library may use: all the machine has (native), or
//! none (generic: OpenSSL's and aws-lc's capability mask cleared), the
//! axis of `--cpu-features`.

use super::names::{deserialize_by_id, serialize_by_id, Named};

/// A set of CPU features to measure with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CpuFeatures {
    /// Whatever the machine has: AES-NI, SHA extensions, vector units.
    Native,
    /// None: the libraries' generic code, in a child process whose
    /// capability mask is cleared.
    Generic,
}

serialize_by_id!(CpuFeatures);
deserialize_by_id!(CpuFeatures);

impl Named for CpuFeatures {
    const KIND: &'static str = "CPU feature set";
    const ALL: &'static [Self] = &[CpuFeatures::Native, CpuFeatures::Generic];

    fn id(self) -> &'static str {
        match self {
            CpuFeatures::Native => "native",
            CpuFeatures::Generic => "generic",
        }
    }
}
