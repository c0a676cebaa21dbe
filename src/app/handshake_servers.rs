//! The servers one `handshake` run measures (`--server`, a list): each
//! listed server's rows beside the others' in one matrix, so the sampler
//! interleaves them round by round as it interleaves any rows. tlslab's own
//! server (embedded) gives the rows of the chosen backends, both sides in
//! this process; a program of its own gives one backend whose client is
//! tlslab's measuring client over TCP ([`client::DEFAULT_CLIENT`]), and for QUIC rows the QUIC client of the one
//! backend `--backend` names (quinn on rustls-aws-lc by default) over UDP
//! ([`ServerBackend`]). Which is which comes from
//! the registry's descriptors: nothing here names a kind of server.

use std::sync::Arc;

use anyhow::Result;

use super::session::{chosen_backends, usage};
use crate::backend::{client, Backend};
use crate::cli::HandshakeArgs;
use crate::scenario::presets::Preset;
use crate::scenario::{distinct, BackendId, BackendList, HandshakeMatrix, Named, TlsVersion};
use crate::workload::remote::{Remote, RemoteBackend};
use crate::workload::server::{self, ServerBackend, ServerDescriptor};

/// The servers `--server` lists, each once, in the order given; empty
/// without `--server`.
pub(super) fn listed_servers(args: &HandshakeArgs) -> Vec<&'static ServerDescriptor> {
    distinct(args.server.as_deref().unwrap_or_default())
        .into_iter()
        .map(server::descriptor)
        .collect()
}

/// The listed servers that are programs of their own (nginx, Apache...),
/// which tlslab's measuring client handshakes with over TCP: none without
/// `--server` or for tlslab's own server alone.
pub(super) fn program_servers(args: &HandshakeArgs) -> Vec<&'static ServerDescriptor> {
    listed_servers(args)
        .into_iter()
        .filter(|descriptor| !descriptor.in_process)
        .collect()
}

/// The programs' names, comma-separated, for a message.
pub(super) fn names(programs: &[&ServerDescriptor]) -> String {
    programs
        .iter()
        .map(|p| p.id.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The QUIC client of a program's QUIC rows when `--backend` names none:
/// quinn on rustls with aws-lc-rs.
const DEFAULT_QUIC_CLIENT: BackendId = BackendId::RustlsAwsLc;

/// The backend whose QUIC client handshakes with the programs' QUIC: the
/// one `--backend` names, else [`DEFAULT_QUIC_CLIENT`].
fn quic_client(backend: Option<&BackendList>) -> BackendId {
    match backend.map(BackendList::resolve).as_deref() {
        Some([(id, _)]) => *id,
        _ => DEFAULT_QUIC_CLIENT,
    }
}

/// The backends the client handshakes with, in the order `--server` lists
/// the servers: tlslab's own server's (those asked, or the preset's)
/// without `--server` or where it lists an in-process server, and one per
/// program listed (started per row on first use, every one stopped when
/// the backends drop at the end of the run, whatever ends it); each
/// through the remote server with `--remote`. A program that is not
/// installed or cannot be opened is still a backend, whose rows say why.
pub(super) fn server_backends(
    args: &HandshakeArgs,
    preset: Option<Preset>,
    matrix: &HandshakeMatrix,
    remote: Option<&Arc<Remote>>,
) -> Result<Vec<Arc<dyn Backend>>> {
    let listed = listed_servers(args);
    let programs = program_servers(args);
    let in_process = listed.is_empty() || listed.len() > programs.len();
    let quic_client = quic_client(args.backend.as_ref());
    let tls_client = client::chosen_client(args.client_backend)
        .map_err(|e| usage(format!("--client-backend: {e:#}")))?;
    if !programs.is_empty() {
        let names = names(&programs);
        let named = args.backend.as_ref().map(BackendList::resolve);
        let tls_rows = matrix.versions.iter().any(|v| *v != TlsVersion::Quic);
        let others = |ids: &Vec<(BackendId, bool)>| {
            ids.len() > 1 || (tls_rows && ids.iter().any(|(id, _)| *id != tls_client.id()))
        };
        if !in_process && named.as_ref().is_some_and(others) {
            return Err(usage(format!(
                "with --server {names} the client of TLS rows is tlslab's {} and that of QUIC rows (--tls quic) the one backend --backend names (default {}): --backend must be one backend, {} unless every row is QUIC, or left out (it chooses the embedded server's backends when embedded is listed too)",
                tls_client.id().descriptor().library,
                DEFAULT_QUIC_CLIENT.id(),
                tls_client.id().id()
            )));
        }
        if args.transport.is_some() {
            return Err(usage(format!(
                "with --server {names} the client always talks TCP to the server: leave --transport out"
            )));
        }
    }
    let own = || {
        chosen_backends(
            args.backend.as_ref(),
            preset.map(|p| p.default_backends()),
            Some(&matrix.versions),
        )
    };
    let mut backends: Vec<Arc<dyn Backend>> = Vec::new();
    if listed.is_empty() {
        backends = own()?;
    }
    for descriptor in listed {
        if descriptor.in_process {
            backends.extend(own()?);
        } else {
            backends.push(Arc::new(ServerBackend::open(
                descriptor,
                Arc::clone(&tls_client),
                quic_client.open(),
            )));
        }
    }
    Ok(match remote {
        Some(remote) => backends
            .into_iter()
            .map(|local| {
                Arc::new(RemoteBackend::new(local, Arc::clone(remote))) as Arc<dyn Backend>
            })
            .collect(),
        None => backends,
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::app::axes::matrix_from;
    use crate::app::session::exit_code;
    use crate::cli::{Cli, Command};

    /// `tlslab handshake ...` parsed.
    fn parsed(line: &str) -> HandshakeArgs {
        let words = std::iter::once("tlslab").chain(line.split_whitespace());
        match Cli::try_parse_from(words).unwrap().command {
            Command::Handshake(args) => *args,
            _ => unreachable!("a handshake command line"),
        }
    }

    /// The ids of the backends `line` measures, or its exit code.
    fn backend_ids(line: &str) -> Result<Vec<&'static str>, i32> {
        let args = parsed(line);
        let matrix = matrix_from(&args, None).unwrap();
        server_backends(&args, None, &matrix, None)
            .map(|backends| backends.iter().map(|b| b.id()).collect())
            .map_err(|error| exit_code(&error))
    }

    #[test]
    fn every_listed_server_gives_rows_once_in_the_order_listed() {
        // Installed or not, a program is a backend of its own: its rows
        // say why when it cannot run here.
        assert_eq!(
            backend_ids("handshake --server nginx,embedded,nginx --backend openssl --tls 1.3"),
            Ok(vec!["nginx", "openssl"])
        );
        assert_eq!(
            backend_ids("handshake --server caddy,apache --tls 1.3"),
            Ok(vec!["caddy", "apache"])
        );
        assert_eq!(
            backend_ids("handshake --backend openssl --tls 1.3"),
            Ok(vec!["openssl"])
        );
    }

    #[test]
    fn backend_chooses_the_embedded_servers_backends_and_no_programs_client() {
        assert_eq!(
            backend_ids("handshake --server embedded,haproxy --backend rustls-ring --tls 1.3"),
            Ok(vec!["rustls-ring", "haproxy"])
        );
        assert_eq!(
            backend_ids("handshake --server nginx,haproxy --backend rustls-ring --tls 1.3"),
            Err(2)
        );
        assert_eq!(
            backend_ids("handshake --server embedded,nginx --transport tcp --tls 1.3"),
            Err(2)
        );
    }

    #[test]
    fn client_backend_names_the_programs_tls_client_and_only_a_measuring_client() {
        assert_eq!(
            backend_ids("handshake --server nginx --client-backend openssl --tls 1.3"),
            Ok(vec!["nginx"])
        );
        assert_eq!(
            backend_ids("handshake --server nginx --client-backend rustls-ring --tls 1.3"),
            Err(2)
        );
    }

    #[test]
    fn backend_names_the_one_quic_client_of_a_programs_quic_rows() {
        assert_eq!(quic_client(None), BackendId::RustlsAwsLc);
        let ring = "rustls-ring".parse::<BackendList>().unwrap();
        assert_eq!(quic_client(Some(&ring)), BackendId::RustlsRing);
        assert_eq!(
            backend_ids("handshake --server caddy --backend rustls-ring --tls quic"),
            Ok(vec!["caddy"])
        );
        // TLS rows' client is OpenSSL's, and one client runs a server's
        // QUIC rows.
        assert_eq!(
            backend_ids("handshake --server caddy --backend rustls-ring --tls 1.3,quic"),
            Err(2)
        );
        assert_eq!(
            backend_ids("handshake --server caddy --backend rustls-ring,rustls-aws-lc --tls quic"),
            Err(2)
        );
        assert_eq!(
            backend_ids("handshake --server caddy --tls 1.3,quic"),
            Ok(vec!["caddy"])
        );
    }
}
