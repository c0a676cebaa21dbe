//! The CPU features a library may use: all the machine has (native), or
//! none (generic: OpenSSL's and aws-lc's capability mask cleared), the
//! axis of `--cpu-features`; and how a row names the set it was measured
//! with ("openssl (generic)"), written and read in one place.

use super::names::{deserialize_by_id, serialize_by_id, Named};

/// A set of CPU features to measure with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
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

/// What a generic-CPU row's backend name ends with: "openssl (generic)".
/// Stored as is in the database's backend columns, so it stays.
const GENERIC_ROW_SUFFIX: &str = " (generic)";

impl CpuFeatures {
    /// How a row measured with this set names its backend `backend`:
    /// "openssl" natively, "openssl (generic)" without CPU features.
    pub fn row_backend(self, backend: &str) -> String {
        match self {
            CpuFeatures::Native => backend.to_string(),
            CpuFeatures::Generic => format!("{backend}{GENERIC_ROW_SUFFIX}"),
        }
    }

    /// The backend and the CPU feature set a row's backend name says: the
    /// inverse of [`CpuFeatures::row_backend`].
    pub fn of_row_backend(row_backend: &str) -> (&str, CpuFeatures) {
        match row_backend.strip_suffix(GENERIC_ROW_SUFFIX) {
            Some(backend) => (backend, CpuFeatures::Generic),
            None => (row_backend, CpuFeatures::Native),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_backend_reads_back_as_its_backend_and_feature_set() {
        for features in CpuFeatures::ALL {
            let row = features.row_backend("openssl");
            assert_eq!(CpuFeatures::of_row_backend(&row), ("openssl", *features));
        }
        assert_eq!(CpuFeatures::Generic.row_backend("mock"), "mock (generic)");
        assert_eq!(CpuFeatures::Native.row_backend("mock"), "mock");
    }
}
