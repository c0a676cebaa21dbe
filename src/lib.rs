//! tlslab: a laboratory for the cost of cryptography in secure transports.
//!
//! The library holds everything; the binary only parses the command line and
//! calls [`app::run`].

pub mod app;
pub mod backend;
pub mod certs;
pub mod child;
pub mod cli;
pub mod heap;
pub mod host;
pub mod measure;
pub mod model;
pub mod registry;
pub mod report;
pub mod scenario;
pub mod security;
pub mod stats;
pub mod store;
pub mod transport;
pub mod valgrind;
pub mod workload;

/// Versions of the libraries this binary was built with (from Cargo.lock).
pub mod build_info {
    include!(concat!(env!("OUT_DIR"), "/build_info.rs"));
}

/// This tool's version.
pub const TOOL_VERSION: &str = env!("CARGO_PKG_VERSION");
