//! The parts of the help text that name what the registries hold: the
//! servers under test and the tunnel engines, read from their
//! descriptors, so a new server or engine is named in `--help` by its
//! registration alone.

use crate::scenario::Named;
use crate::workload::server::{ServerDescriptor, SERVERS};
use crate::workload::tunnel::ENGINES;

/// The listed servers that are programs of their own, in the registry's
/// order ("nginx", "apache", ...).
fn program_servers() -> Vec<&'static str> {
    SERVERS
        .iter()
        .filter(|server| server.listed && !server.in_process)
        .map(|server| server.name())
        .collect()
}

/// The server that runs in tlslab's process (the embedded one).
fn in_process_server() -> &'static ServerDescriptor {
    SERVERS
        .iter()
        .copied()
        .find(|server| server.in_process)
        .expect("one server runs in tlslab's process")
}

/// `names` as a list in prose: "a, b, c or d".
fn or_list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// The help of `handshake --server`.
pub(super) fn handshake_server() -> String {
    let embedded = in_process_server();
    format!(
        "The servers, comma-separated: {} (tlslab's own, also called {}: client and server in one \
         process, over memory) and real servers started on loopback per row ({}: tlslab's \
         OpenSSL as the client over TCP; for caddy's QUIC rows, its HTTP/3, tlslab's QUIC client \
         over UDP, quinn on the one backend --backend names, default rustls-aws-lc; the server's \
         CPU is its workers'). Every row is measured against every server listed, in one table, \
         the servers interleaved round by round; a server not installed here gives rows that say \
         why. [default: {}]",
        embedded.name(),
        embedded
            .aliases()
            .first()
            .copied()
            .unwrap_or(embedded.name()),
        program_servers().join(", "),
        embedded.name(),
    )
}

/// The help of `load --server`.
pub(super) fn load_server() -> String {
    format!(
        "The servers started for the run, comma-separated: {} (Debian's, on loopback) or {} \
         (tlslab's own HTTPS server, in this process on its own threads; see `tlslab serve`). \
         Several are loaded one after another, each started, loaded (in every --http version) \
         and stopped before the next, each load stored as a run of its own, side by side in one \
         table; a server that cannot run here is a row that says why. [default: {}; {} with \
         --preset]",
        or_list(&program_servers()),
        in_process_server().name(),
        crate::scenario::ServerKind::Nginx.id(),
        in_process_server().name(),
    )
}

/// The help of `serve --server`.
pub(super) fn serve_server() -> String {
    format!(
        "Start this server as `load --server` starts it ({}: its generated configuration, the \
         test chain, the pages of --size) on a free loopback port for another client, print its \
         address on standard output, and stop it at --duration, Ctrl-C or SIGTERM. It serves one \
         configuration: one value per axis option (default TLS 1.3, X25519, ECDSA P-256, \
         AES-128-GCM)",
        or_list(&program_servers()),
    )
}

/// The help of `tunnel --engine`: each listed engine with what it is.
pub(super) fn tunnel_engine() -> String {
    let engines: Vec<String> = ENGINES
        .iter()
        .filter(|engine| engine.listed)
        .map(|engine| format!("{} ({})", engine.name(), engine.about))
        .collect();
    format!(
        "Engines: {}. A named engine that cannot run here stops the command; a preset's engine \
         that cannot gets rows that say why. [default: inprocess; with --preset vpn-compare: \
         inprocess,wireguard]",
        engines.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_help_names_every_listed_server_and_engine() {
        let servers = [handshake_server(), load_server(), serve_server()];
        for server in SERVERS.iter().filter(|s| !s.in_process) {
            for help in &servers {
                assert!(help.contains(server.name()), "{}: {help}", server.name());
            }
        }
        let engines = tunnel_engine();
        for engine in ENGINES {
            assert!(engines.contains(engine.name()), "{}", engine.name());
        }
    }

    #[test]
    fn a_list_in_prose_ends_with_or() {
        assert_eq!(or_list(&["a", "b", "c"]), "a, b or c");
        assert_eq!(or_list(&["a"]), "a");
    }
}
