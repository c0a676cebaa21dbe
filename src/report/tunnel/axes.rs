//! The tunnel scenario's axes as short columns, shared by every tunnel
//! table (the study's five, the counted one) and by compare and recommend.

use crate::scenario::names::Named;
use crate::scenario::tunnel::TunnelScenario;

/// The scenario's axes as short columns: their headers.
pub(crate) const AXIS_HEADERS: [&str; 5] = ["cipher", "digest", "compression", "payload", "bytes"];

/// The scenario's axes as short cells, one per [`AXIS_HEADERS`].
pub(crate) fn axis_cells(scenario: &TunnelScenario) -> Vec<String> {
    let (cipher, digest, compression) = if scenario.baseline {
        ("(no tunnel)".to_string(), "—".to_string(), "—".to_string())
    } else {
        (
            scenario.cipher.id().to_string(),
            scenario.digest.id().to_string(),
            scenario.compression.id().to_string(),
        )
    };
    vec![
        cipher,
        digest,
        compression,
        scenario.payload.id().to_string(),
        scenario.payload_bytes.to_string(),
    ]
}
