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
    const ALL: &'static [Self] = &[ServerKind::Nginx, ServerKind::Embedded];

    fn id(self) -> &'static str {
        match self {
            ServerKind::Nginx => "nginx",
            ServerKind::Embedded => "embedded",
        }
    }

    /// `inprocess` is what `handshake --server` called tlslab's own
    /// server before the two commands shared one list.
    fn aliases(self) -> &'static [&'static str] {
        match self {
            ServerKind::Nginx => &[],
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
        let error = parse_name::<ServerKind>("apache").unwrap_err().to_string();
        assert!(error.contains("nginx, embedded"), "{error}");
    }

    #[test]
    fn a_server_kind_round_trips_through_json_by_its_id() {
        let json = serde_json::to_string(&ServerKind::Embedded).unwrap();
        assert_eq!(json, "\"embedded\"");
        let back: ServerKind = serde_json::from_str("\"inprocess\"").unwrap();
        assert_eq!(back, ServerKind::Embedded);
    }
}
