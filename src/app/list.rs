//! `tlslab list`: each backend with its library version and what it
//! supports, every server under test and tunnel engine with whether it can
//! run here, every speed algorithm, and every preset of every command. The
//! lists come from the registries, so a new backend, server or engine is
//! listed by its registration alone.

use crate::backend::{backend_by_id, BACKEND_IDS};
use crate::scenario::speed::Primitive;
use crate::scenario::Named;
use crate::workload::server::SERVERS;
use crate::workload::tunnel::ENGINES;

/// The text of `tlslab list`.
pub fn text() -> String {
    let ids = |values: Vec<&'static str>| values.join(", ");
    let mut out = String::new();
    for id in BACKEND_IDS {
        let backend = backend_by_id(id).expect("listed backends exist");
        let library = backend.library();
        let caps = backend.capabilities();
        out.push_str(&format!("{id}: {} {}\n", library.library, library.version));
        out.push_str(&format!(
            "  versions:     {}\n",
            ids(caps.versions.iter().map(|v| v.id()).collect())
        ));
        out.push_str(&format!(
            "  TLS 1.2 kx:   {}\n",
            ids(caps.groups_tls12.iter().map(|g| g.id()).collect())
        ));
        out.push_str(&format!(
            "  TLS 1.3 kx:   {}\n",
            ids(caps.groups_tls13.iter().map(|g| g.id()).collect())
        ));
        out.push_str(&format!(
            "  certificates: {}\n",
            ids(caps.certs.iter().map(|c| c.id()).collect())
        ));
        out.push_str(&format!(
            "  suites:       {}\n",
            ids(caps.aeads.iter().map(|a| a.name()).collect())
        ));
        out.push_str(&format!(
            "  resumption:   {}\n  mutual TLS:   {}\n",
            ids(caps.resumptions.iter().map(|r| r.id()).collect()),
            if caps.mutual { "yes" } else { "no" }
        ));
        out.push_str(&format!(
            "  transports:   {}\n\n",
            ids(caps.transports.iter().map(|t| t.id()).collect())
        ));
    }
    out.push_str("servers under test (tlslab handshake|load --server NAME):\n");
    for server in SERVERS {
        let here = if server.in_process {
            "in tlslab's process, on one of its backends".to_string()
        } else {
            match (server.missing)() {
                None => "a program of its own, installed here".to_string(),
                Some(reason) => format!("not here: {reason} (install: {})", server.install),
            }
        };
        out.push_str(&format!("  {:<10} {here}\n", server.id.id()));
    }
    out.push_str("\ntunnel engines (tlslab tunnel --engine LIST):\n");
    let width = ENGINES.iter().map(|e| e.name().len()).max().unwrap_or(0);
    for engine in ENGINES {
        let here = match (engine.open)().preflight() {
            Ok(library) => format!("{} {}", library.library, library.version),
            Err(missing) => format!("not here: {missing}"),
        };
        out.push_str(&format!("  {:<width$} {here}\n", engine.name()));
    }
    out.push('\n');
    out.push_str(&format!(
        "speed algorithms (tlslab speed --algorithm LIST):\n  {}\n\n",
        Primitive::ALL
            .iter()
            .map(|p| p.name())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    out.push_str("network profiles (tlslab handshake --network LIST):\n");
    for (name, what, ..) in crate::scenario::network::NAMED_PROFILES {
        out.push_str(&format!("  {name:<10} {what}\n"));
    }
    out.push_str("  or fields: rtt=50ms,rate=20mbit,loss=0.5%,initcwnd=10\n\n");
    out.push_str("presets (tlslab COMMAND --preset NAME):\n");
    for entry in crate::scenario::presets::all() {
        out.push_str(&format!(
            "  {:<9} {:<16} {}\n",
            entry.command, entry.id, entry.description
        ));
    }
    out
}
