//! The two ends of a connection, as one word for the whole crate: the
//! handshaker's turns, the wire tap, the heap counter, the counted crypto
//! provider, the cost model and every report that splits client from
//! server name a side with [`Side`].

use serde::{Deserialize, Serialize};

/// Which end of a connection: the client, which opens it, or the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Client,
    Server,
}

impl Side {
    /// Both sides, client first.
    pub const BOTH: [Side; 2] = [Side::Client, Side::Server];

    /// 0 for the client, 1 for the server: an index into a pair.
    pub fn index(self) -> usize {
        match self {
            Side::Client => 0,
            Side::Server => 1,
        }
    }

    /// The other end.
    pub fn peer(self) -> Side {
        match self {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        }
    }

    /// "client" or "server".
    pub fn name(self) -> &'static str {
        match self {
            Side::Client => "client",
            Side::Server => "server",
        }
    }
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_side_serialises_as_its_name_and_its_peer_is_the_other() {
        for side in Side::BOTH {
            assert_eq!(
                serde_json::to_string(&side).unwrap(),
                format!("\"{}\"", side.name())
            );
            assert_eq!(side.peer().peer(), side);
            assert_ne!(side.peer(), side);
            assert_eq!(Side::BOTH[side.index()], side);
        }
    }
}
