//! The OpenVPN engine: a static-key point-to-point tunnel between the two
//! namespaces of a lab, one tunnel per row, and a fixed-size TCP transfer
//! through it each way as the sample; the same transfer over the bare veth
//! link is the no-tunnel row. The tunnel, its processes and the rig are
//! shared with TLS mode ([`super::openvpn_tunnel`]); only the keying (a
//! static key, `--secret`) is here. Its connection set-up is the processes'
//! start to ready, without a handshake ([`super::openvpn_setup`]).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};

use super::engine::{EngineDescriptor, EngineDetails, EngineOptions, EngineRig, TunnelEngine};
use super::openvpn_setup;
use super::openvpn_tunnel::{self as tunnel, End, Keying, SETUP_UNCOUNTABLE};
use super::setup::{SetupKind, SetupOutcome, SetupProbe};
use crate::backend::{CpuMasking, LibraryInfo};
use crate::scenario::tunnel::{
    Cipher, CipherMode, Compression, Digest, EngineId, Payload, TunnelScenario,
};

/// The openvpn engine in the registry of tunnel engines.
pub static DESCRIPTOR: EngineDescriptor = EngineDescriptor {
    id: EngineId::Openvpn,
    library: "OpenVPN",
    listed: true,
    programs: &["openvpn", "ip"],
    scratch: Some(tunnel::SCRATCH),
    install: "apt-get install openvpn iproute2 (as root)",
    uncountable: Some(tunnel::UNCOUNTABLE),
    details: EngineDetails {
        about: "a real OpenVPN static-key tunnel between network namespaces; root only",
        open: || &OpenvpnEngine,
    },
};

/// The OpenVPN engine, as registered.
pub struct OpenvpnEngine;

impl TunnelEngine for OpenvpnEngine {
    fn id(&self) -> EngineId {
        EngineId::Openvpn
    }

    /// Root, `ip`, `/dev/net/tun` and `openvpn`; OpenVPN's version.
    fn preflight(&self) -> Result<LibraryInfo, String> {
        tunnel::preflight(EngineId::Openvpn)
    }

    fn cipher_unsupported(&self, cipher: Cipher) -> Option<String> {
        (cipher.mode() == CipherMode::Aead).then(|| {
            format!(
                "OpenVPN offers {} in TLS mode only (the openvpn-tls engine), not with a static key",
                cipher.openssl_name().unwrap_or_default()
            )
        })
    }

    fn digest_unsupported(&self, digest: Digest) -> Option<String> {
        tunnel::digest_unsupported(digest)
    }

    fn compression_unsupported(&self, compression: Compression) -> Option<String> {
        tunnel::compression_unsupported(compression)
    }

    /// The daemons' OpenSSL's capability mask, in their environment.
    fn cpu_masking(&self) -> CpuMasking {
        tunnel::cpu_masking()
    }

    fn interleaves_rows(&self) -> bool {
        // Each row needs its own tunnel up.
        false
    }

    fn setup_uncountable(&self) -> Option<&'static str> {
        Some(SETUP_UNCOUNTABLE)
    }

    fn start(&self, options: &EngineOptions) -> Result<Box<dyn EngineRig>> {
        tunnel::start_rig(options, StaticKey::create)
    }

    /// Both processes from exec to ready: no handshake with a static key,
    /// so this is what a tunnel costs to start, for comparison.
    fn prepare_setup<'a>(
        &self,
        _kind: SetupKind,
        interrupt: &'a AtomicBool,
    ) -> Result<SetupProbe<'a>, SetupOutcome> {
        let scenario = TunnelScenario {
            baseline: false,
            cipher: Cipher::Aes128Cbc,
            digest: Digest::Sha256,
            compression: Compression::None,
            payload: Payload::Random,
            payload_bytes: 1400,
        };
        openvpn_setup::prepare_connect(StaticKey::create, scenario, STATIC_KEY_COVERS, interrupt)
    }
}

/// What one static-key set-up sample covers, for the table's notes.
const STATIC_KEY_COVERS: &str = "whole processes, no handshake: both openvpn processes from exec to \"Initialization Sequence Completed\" with a static key (AES-128-CBC, SHA256): process start, OpenSSL and configuration, the TUN device; the start-up a TLS-mode tunnel pays besides its handshake; bytes and frames on the veth link";

/// A static key shared by both ends (`--secret`), A's direction 0 and B's 1.
struct StaticKey {
    key_file: PathBuf,
}

impl StaticKey {
    fn create(directory: &Path) -> Result<Self> {
        let key_file = directory.join("static.key");
        write_static_key(&key_file)?;
        Ok(Self { key_file })
    }
}

impl Keying for StaticKey {
    fn add_arguments(&self, end: End, command: &mut Command) {
        command
            .arg("--secret")
            .arg(&self.key_file)
            .arg(if end == End::A { "0" } else { "1" });
    }

    fn add_cipher(&self, scenario: &TunnelScenario, command: &mut Command) {
        command
            .args(["--cipher", scenario.cipher.openssl_name().unwrap_or("none")])
            .args(["--auth", scenario.digest.openssl_name().unwrap_or("none")]);
    }
}

/// An OpenVPN static key file: 2048 random bits in the V1 format.
fn write_static_key(path: &Path) -> Result<()> {
    let mut key = [0u8; 256];
    openssl::rand::rand_bytes(&mut key)?;
    let mut text = String::from("-----BEGIN OpenVPN Static key V1-----\n");
    for line in key.chunks(16) {
        for byte in line {
            text.push_str(&format!("{byte:02x}"));
        }
        text.push('\n');
    }
    text.push_str("-----END OpenVPN Static key V1-----\n");
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_key_rows_refuse_aead_ciphers_and_sha0_and_say_why() {
        let engine = OpenvpnEngine;
        let row = |cipher, digest| TunnelScenario {
            baseline: false,
            cipher,
            digest,
            compression: Compression::None,
            payload: Payload::Random,
            payload_bytes: 1400,
        };
        let aead = engine.unsupported_reason(&row(Cipher::Aes128Gcm, Digest::None));
        assert!(aead.is_some_and(|r| r.contains("TLS mode only")));
        let sha0 = engine.unsupported_reason(&row(Cipher::Aes128Cbc, Digest::Sha0));
        assert!(sha0.is_some_and(|r| r.contains("SHA-0")));
        assert_eq!(
            engine.unsupported_reason(&row(Cipher::BfCbc, Digest::Sha1)),
            None
        );
        assert_eq!(
            engine.unsupported_reason(&TunnelScenario::baseline(Payload::Zero, 64)),
            None
        );
    }
}
