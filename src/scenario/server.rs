//! The servers under test, by name: the one vocabulary of `handshake
//! --server` and `load --server`. What each kind is and does lives with its
//! implementation (`workload::server`); this module only names them, so the
//! command line parses, lists and completes them like every other axis.

use super::names::{deserialize_by_id, serialize_by_id, Named};

/// A server tlslab starts and measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServerKind {
    /// Debian's nginx, started on loopback with a generated configuration.
    Nginx,
    /// Debian's Apache httpd 2.4 (mod_ssl), the seeds' own server, started
    /// the same way.
    Apache,
    /// Debian's HAProxy, the TLS terminator, started the same way and
    /// answering without a backend.
    Haproxy,
    /// Debian's Caddy, on Go's crypto/tls (another TLS library altogether),
    /// started the same way.
    Caddy,
    /// tlslab's own server on one of its backends, in its process: for
    /// `handshake`, client and server in one process (over memory or
    /// `--transport`); for `load`, the embedded HTTPS server on its own
    /// threads.
    Embedded,
}

serialize_by_id!(ServerKind);
deserialize_by_id!(ServerKind);

impl Named for ServerKind {
    const KIND: &'static str = "server";
    const ALL: &'static [Self] = &[
        ServerKind::Nginx,
        ServerKind::Apache,
        ServerKind::Haproxy,
        ServerKind::Caddy,
        ServerKind::Embedded,
    ];

    fn id(self) -> &'static str {
        match self {
            ServerKind::Nginx => "nginx",
            ServerKind::Apache => "apache",
            ServerKind::Haproxy => "haproxy",
            ServerKind::Caddy => "caddy",
            ServerKind::Embedded => "embedded",
        }
    }

    /// `inprocess` is what `handshake --server` called tlslab's own
    /// server before the two commands shared one list; Apache goes by its
    /// program's and its project's names too.
    fn aliases(self) -> &'static [&'static str] {
        match self {
            ServerKind::Nginx | ServerKind::Haproxy | ServerKind::Caddy => &[],
            ServerKind::Apache => &["apache2", "httpd"],
            ServerKind::Embedded => &["inprocess", "in-process"],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::parse_name;

    #[test]
    fn both_commands_spellings_name_one_server() {
        for name in ["embedded", "inprocess", "in-process", "Embedded"] {
            assert_eq!(parse_name::<ServerKind>(name), Ok(ServerKind::Embedded));
        }
        assert_eq!(parse_name::<ServerKind>("NGINX"), Ok(ServerKind::Nginx));
        for name in ["apache", "apache2", "httpd"] {
            assert_eq!(parse_name::<ServerKind>(name), Ok(ServerKind::Apache));
        }
        assert_eq!(parse_name::<ServerKind>("HAProxy"), Ok(ServerKind::Haproxy));
        let error = parse_name::<ServerKind>("lighttpd")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("nginx, apache, haproxy, caddy, embedded"),
            "{error}"
        );
    }

    #[test]
    fn a_server_kind_round_trips_through_json_by_its_id() {
        let json = serde_json::to_string(&ServerKind::Embedded).unwrap();
        assert_eq!(json, "\"embedded\"");
        let back: ServerKind = serde_json::from_str("\"inprocess\"").unwrap();
        assert_eq!(back, ServerKind::Embedded);
    }
}
