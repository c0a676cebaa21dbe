//! Why OpenSSL's rows send no 0-RTT data (`--resumption 0rtt`): its QUIC
//! has none, and tlslab's TLS driver does not write early data yet.

use super::dtls::openssl_release;
use crate::scenario::{HandshakeScenario, TlsVersion};

/// Why OpenSSL cannot run a 0-RTT scenario, or `None` if the scenario
/// sends no early data.
pub(super) fn unsupported_reason(scenario: &HandshakeScenario) -> Option<String> {
    if !scenario.resumption.sends_early_data() {
        return None;
    }
    Some(if scenario.version == TlsVersion::Quic {
        // Read in OpenSSL 3.6.3's source: ssl/quic/quic_channel.c drops
        // 0-RTT packets on the server ("TODO(QUIC 0RTT): Implement 0-RTT on
        // the server side"), and SSL_write_early_data / SSL_read_early_data
        // refuse QUIC objects (ssl/ssl_lib.c).
        format!(
            "OpenSSL {}'s QUIC has no 0-RTT: its server drops 0-RTT packets and \
             SSL_write_early_data refuses QUIC connections",
            openssl_release()
        )
    } else {
        "0-RTT over TLS 1.3 is not built on openssl yet (OpenSSL offers early data; \
         tlslab's TLS driver does not write it): 0-RTT runs on QUIC with rustls-aws-lc \
         and rustls-ring"
            .to_string()
    })
}
