//! What a server under test serves besides the handshake: generated pages
//! whose content a load generator can check byte for byte, and whether
//! clients may resume their sessions. nginx is configured from it, the
//! embedded server answers with the same pages, and `load` checks them.

/// What a server serves besides the handshake: generated pages of given
/// sizes at `/page_SIZE` (bytes cycling through the alphabet, so a client
/// can check them), over connections kept open for many requests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Site {
    pub page_sizes: Vec<usize>,
    /// Lets clients resume: a shared session cache (TLS 1.2 session ids)
    /// and session tickets (TLS 1.2 and 1.3). Off, every handshake is full.
    pub session_resumption: bool,
}

/// The content of a generated page: `size` bytes of a repeating pattern.
pub fn page_bytes(size: usize) -> Vec<u8> {
    (0..size).map(|i| b'a' + (i % 26) as u8).collect()
}
