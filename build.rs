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

/// Tells the code what the wolfSSL that wolfssl-sys built has, from the
/// options.h its configure wrote (only with the cargo feature `wolfssl`):
/// `wolfssl_session_ticket` when it has session tickets, `wolfssl_sp_math`
/// when it has its single-precision math. wolfssl-sys does not rebuild when
/// the autoconf site file (CONFIG_SITE, scripts/wolfssl/) changes, so a
/// build whose options.h disagrees with the site file gets a warning.
fn wolfssl_options_cfg() {
    println!("cargo::rustc-check-cfg=cfg(wolfssl_session_ticket)");
    println!("cargo::rustc-check-cfg=cfg(wolfssl_sp_math)");
    let Ok(include) = env::var("DEP_WOLFSSL_INCLUDE") else {
        return;
    };
    let options_path = Path::new(&include).join("wolfssl").join("options.h");
    println!("cargo:rerun-if-changed={}", options_path.display());
    println!("cargo:rerun-if-env-changed=CONFIG_SITE");
    let options = fs::read_to_string(&options_path).unwrap_or_default();
    let defines = |name: &str| {
        options
            .lines()
            .any(|line| line.trim() == format!("#define {name}"))
    };
    let tickets = defines("HAVE_SESSION_TICKET");
    let sp_math = defines("WOLFSSL_HAVE_SP_RSA");
    if tickets {
        println!("cargo::rustc-cfg=wolfssl_session_ticket");
    }
    if sp_math {
        println!("cargo::rustc-cfg=wolfssl_sp_math");
    }
    let site_path = env::var("CONFIG_SITE").unwrap_or_default();
    let site = fs::read_to_string(&site_path).unwrap_or_default();
    let asks = |setting: &str| site.lines().any(|line| line.trim() == setting);
    if !site.is_empty()
        && (asks("enable_session_ticket=yes") != tickets || asks("enable_sp=no") == sp_math)
    {
        println!(
            "cargo:warning=the wolfSSL in this target directory was not built as {site_path} \
             asks (wolfssl-sys does not rebuild when CONFIG_SITE changes): run \
             `cargo clean -p wolfssl-sys` with the same CARGO_TARGET_DIR, or build with \
             scripts/wolfssl-build.sh"
        );
    }
}

fn main() {
    openssl_version_cfg();
    wolfssl_options_cfg();
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
