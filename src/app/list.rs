//! `tlslab list`: each backend with its library version and what it
//! supports, every speed algorithm, and every preset of every command.

use crate::backend::{backend_by_id, BACKEND_IDS};
use crate::scenario::speed::Primitive;
use crate::scenario::Named;

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
            "  resumption:   {}\n  mutual TLS:   {}\n\n",
            ids(caps.resumptions.iter().map(|r| r.id()).collect()),
            if caps.mutual { "yes" } else { "no" }
        ));
    }
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
