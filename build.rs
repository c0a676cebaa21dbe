//! Records the versions of the TLS libraries this binary is built with, read
//! from Cargo.lock, so every run can store them.

use std::env;
use std::fs;
use std::path::Path;

fn locked_version(lock: &str, name: &str) -> String {
    let header = format!("name = \"{name}\"\nversion = \"");
    lock.find(&header)
        .and_then(|start| {
            let rest = &lock[start + header.len()..];
            rest.find('"').map(|end| rest[..end].to_string())
        })
        .unwrap_or_else(|| "unknown".to_string())
}

/// Tells the code which OpenSSL it is built against: `ossl320` for 3.2 or
/// newer (SSL_get0_group_name), from the version openssl-sys found.
fn openssl_version_cfg() {
    println!("cargo::rustc-check-cfg=cfg(ossl320)");
    let version = env::var("DEP_OPENSSL_VERSION_NUMBER")
        .ok()
        .and_then(|hex| u64::from_str_radix(&hex, 16).ok())
        .unwrap_or(0);
    if version >= 0x3020_0000 {
        println!("cargo::rustc-cfg=ossl320");
    }
}

fn main() {
    openssl_version_cfg();
    let manifest_dir = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let lock_path = Path::new(&manifest_dir).join("Cargo.lock");
    println!("cargo:rerun-if-changed=Cargo.lock");
    let lock = fs::read_to_string(&lock_path).unwrap_or_default();
    let out_dir = env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let mut code = String::new();
    for (constant, crate_name) in [
        ("RUSTLS_VERSION", "rustls"),
        ("AWS_LC_RS_VERSION", "aws-lc-rs"),
        ("RING_VERSION", "ring"),
        ("DIMPL_VERSION", "dimpl"),
        ("QUINN_PROTO_VERSION", "quinn-proto"),
        ("RUSQLITE_VERSION", "rusqlite"),
    ] {
        code.push_str(&format!(
            "pub const {constant}: &str = \"{}\";\n",
            locked_version(&lock, crate_name)
        ));
    }
    fs::write(Path::new(&out_dir).join("build_info.rs"), code).expect("writing build_info.rs");
}
