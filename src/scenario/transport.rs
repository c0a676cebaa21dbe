//! The transport axis: what carries a handshake's (or a bulk row's) bytes
//! between client and server. `memory` (the default) runs both sides in one
//! thread over memory buffers (a byte pipe for TLS, a datagram channel for
//! DTLS and QUIC) and measures the library alone; `tcp` and `udp` run them
//! in two threads over a real loopback socket, so each side's CPU time
//! includes the kernel's share of its socket calls.

use super::axes::TlsVersion;
use super::names::{deserialize_by_id, serialize_by_id, Named};

serialize_by_id!(Transport);
deserialize_by_id!(Transport);

/// What carries the bytes between the two sides. A backend lists the
/// transports it speaks in its capabilities, so a matrix row on another
/// is a row that says why; which protocol a transport can carry at all
/// is [`Transport::conflict`].
///
/// Where QUIC goes: beside the TLS versions, not here. QUIC is not a pipe
/// that TLS bytes cross but a protocol with TLS 1.3 inside it (its
/// handshake in CRYPTO frames, its packets protected with TLS's keys),
/// and it runs over datagrams: the same memory datagram channel as DTLS
/// (OpenSSL's `BIO_new_bio_dgram_pair`, quinn-proto's pair of endpoints
/// in memory) or UDP. So it is one more value of the protocol axis, `quic`
/// next to tls1.2, tls1.3, dtls1.2 and dtls1.3 (TLS 1.3's rules for
/// groups, certificates and suites; carried by datagrams), and this axis
/// keeps saying what carries the datagrams: `memory` or `udp`, never
/// `tcp` (the exhaustive [`Transport::conflict`] says so). quinn runs it
/// inside the rustls backends (their descriptors list `quic`, and `udp`,
/// which carries their QUIC only); OpenSSL's own QUIC runs in the OpenSSL
/// backend (`quic` in its versions, over memory so far).
/// No new transport is needed until something else carries datagrams
/// (an emulated link already does, through namespaces, below UDP).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Transport {
    /// Memory buffers, both sides in one thread (the byte pipe for TLS, the
    /// datagram channel for DTLS).
    #[default]
    Memory,
    /// A loopback TCP connection, each side in its own thread (TLS).
    Tcp,
    /// A pair of connected loopback UDP sockets, each side in its own
    /// thread (DTLS).
    Udp,
}

impl Named for Transport {
    const KIND: &'static str = "transport";
    const ALL: &'static [Self] = &[Transport::Memory, Transport::Tcp, Transport::Udp];

    fn id(self) -> &'static str {
        match self {
            Transport::Memory => "memory",
            Transport::Tcp => "tcp",
            Transport::Udp => "udp",
        }
    }

    fn aliases(self) -> &'static [&'static str] {
        match self {
            Transport::Memory => &["mem", "inprocess"],
            Transport::Tcp => &[],
            Transport::Udp => &[],
        }
    }
}

impl Transport {
    /// True if and only if the two sides talk over a socket (two threads).
    pub fn is_socket(self) -> bool {
        self != Transport::Memory
    }

    /// What a label ends with for this transport: nothing for memory (so
    /// labels stored before the axis existed read back as memory), `_tcp`, `_udp`.
    pub fn label_suffix(self) -> &'static str {
        match self {
            Transport::Memory => "",
            Transport::Tcp => "_tcp",
            Transport::Udp => "_udp",
        }
    }

    /// The transport a stored label names (memory without a suffix).
    pub fn from_label(label: &str) -> Transport {
        [Transport::Tcp, Transport::Udp]
            .into_iter()
            .find(|t| label.ends_with(t.label_suffix()))
            .unwrap_or_default()
    }

    /// `label` without this transport's suffix.
    pub fn strip_suffix(label: &str) -> &str {
        let transport = Transport::from_label(label);
        label
            .strip_suffix(transport.label_suffix())
            .unwrap_or(label)
    }

    /// Why this transport cannot carry `version`, if it cannot: TLS needs a
    /// byte stream, DTLS and QUIC datagrams. Every transport and every
    /// version is matched by name, so a new one must say what it carries.
    pub fn conflict(self, version: TlsVersion) -> Option<&'static str> {
        match (self, version) {
            // The memory pipe for TLS, the memory datagram channel for DTLS
            // and QUIC.
            (Transport::Memory, _) => None,
            (Transport::Tcp, TlsVersion::Tls12 | TlsVersion::Tls13) => None,
            (Transport::Tcp, TlsVersion::Dtls12 | TlsVersion::Dtls13) => {
                Some("DTLS runs over datagrams, not over TCP (use --transport udp)")
            }
            (Transport::Tcp, TlsVersion::Quic) => Some(
                "QUIC runs over datagrams, not over TCP (TLS 1.3 over TCP is --tls 1.3; QUIC runs over memory or udp)",
            ),
            (Transport::Udp, TlsVersion::Tls12 | TlsVersion::Tls13) => Some(
                "TLS needs a byte stream: UDP carries DTLS and QUIC only (use --transport tcp)",
            ),
            (Transport::Udp, TlsVersion::Dtls12 | TlsVersion::Dtls13 | TlsVersion::Quic) => None,
        }
    }

    /// What a row's description ends with: "" over memory (the default),
    /// else " over TCP" or " over UDP".
    pub fn over_suffix(self) -> String {
        match self {
            Transport::Memory => String::new(),
            transport => format!(" over {}", transport.display()),
        }
    }

    /// The name for tables ("memory", "TCP", "UDP").
    pub fn display(self) -> &'static str {
        match self {
            Transport::Memory => "memory",
            Transport::Tcp => "TCP",
            Transport::Udp => "UDP",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_round_trip_and_memory_has_none() {
        for transport in Transport::ALL {
            let label = format!(
                "handshake_1.3_x25519_rsa2048_aes128gcm{}",
                transport.label_suffix()
            );
            assert_eq!(Transport::from_label(&label), *transport);
            assert_eq!(
                Transport::strip_suffix(&label),
                "handshake_1.3_x25519_rsa2048_aes128gcm"
            );
        }
    }

    #[test]
    fn each_socket_carries_its_protocol_only() {
        assert!(Transport::Tcp.conflict(TlsVersion::Tls13).is_none());
        assert!(Transport::Udp.conflict(TlsVersion::Dtls12).is_none());
        assert!(Transport::Udp.conflict(TlsVersion::Tls12).is_some());
        assert!(Transport::Tcp.conflict(TlsVersion::Dtls12).is_some());
        assert!(Transport::Memory.conflict(TlsVersion::Dtls12).is_none());
        assert!(Transport::Memory.conflict(TlsVersion::Quic).is_none());
        assert!(Transport::Udp.conflict(TlsVersion::Quic).is_none());
        let quic_over_tcp = Transport::Tcp.conflict(TlsVersion::Quic).unwrap();
        assert!(quic_over_tcp.starts_with("QUIC runs over datagrams"));
    }
}
