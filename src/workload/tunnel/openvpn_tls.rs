//! The OpenVPN TLS-mode engine: the mode deployments use. The two ends
//! authenticate with certificates (a root, a server and a client leaf,
//! ECDSA P-256, from tlslab's certificate cache), run OpenVPN's control
//! channel (a TLS handshake, TLS 1.3 with X25519 here) and derive the
//! data channel's keys from it, the data cipher negotiated between them
//! (`--data-ciphers`, OpenVPN 2.6's P2P negotiation): A is the TLS client,
//! B the TLS server. Each row checks, once its tunnel is up, that both
//! ends negotiated the row's cipher (and digest, for a CBC cipher). Rows,
//! processes and the lab are the static-key engine's ([`super::openvpn`]):
//! only the keying differs. OpenVPN 2.6 still allows CBC data ciphers and
//! no cipher at all in TLS mode (with warnings for 64-bit blocks and for
//! `none`), so they are rows too.
//!
//! Its connection set-up is measured two ways ([`super::openvpn_setup`]):
//! a new tunnel is whole processes, both started and timed until both are
//! up, the CPU of each read from /proc — process start, OpenSSL and
//! configuration, the TLS handshake with certificates and the key
//! derivation together (the static-key engine's set-up, which has no
//! handshake, is the start-up part); a renegotiation on a running tunnel
//! is the handshake and key derivation alone.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;

use anyhow::{bail, Context, Result};

use super::engine::{EngineDescriptor, EngineDetails, EngineOptions, EngineRig, TunnelEngine};
use super::openvpn_setup;
use super::openvpn_tunnel::{self as tunnel, End, Keying, SETUP_UNCOUNTABLE};
use super::setup::{SetupKind, SetupOutcome, SetupProbe};
use crate::backend::{CpuMasking, LibraryInfo};
use crate::certs::CertCache;
use crate::scenario::tunnel::{
    Cipher, CipherMode, Compression, Digest, EngineId, Payload, TunnelScenario,
};
use crate::scenario::CertKind;

/// The certificates' key type.
const CERT_KIND: CertKind = CertKind::EcdsaP256;

/// What one TLS-mode set-up sample covers, for the table's notes.
const COVERS: &str = "whole processes: both openvpn processes from exec to \"Initialization Sequence Completed\" in TLS mode (ECDSA P-256 certificates, TLS 1.3 control channel, AES-128-GCM negotiated): process start, OpenSSL and configuration, the TUN device, the TLS handshake and the key derivation together; the openvpn row (static key, no handshake) is the start-up part; bytes and frames on the veth link";

/// What one renegotiation sample covers, for the table's notes.
const RENEGOTIATION_COVERS: &str = "the TLS handshake without process start-up: both openvpn processes' CPU across one renegotiation on a running tunnel (--reneg-sec 1 on the client: a new TLS 1.3 handshake with ECDSA P-256 certificates verified, new AES-128-GCM data-channel keys), from the end of one to the end of the next; wall time is the whole interval; bytes and frames on the veth link";

/// The openvpn-tls engine in the registry of tunnel engines.
pub static DESCRIPTOR: EngineDescriptor = EngineDescriptor {
    id: EngineId::OpenvpnTls,
    library: "OpenVPN",
    listed: true,
    programs: &["openvpn", "ip"],
    scratch: Some(tunnel::SCRATCH),
    install: "apt-get install openvpn iproute2 (as root)",
    uncountable: Some(tunnel::UNCOUNTABLE),
    details: EngineDetails {
        about: "the same in TLS mode: certificates, the data cipher negotiated; root only",
        open: || &OpenvpnTlsEngine,
    },
};

/// The OpenVPN TLS-mode engine, as registered.
pub struct OpenvpnTlsEngine;

impl TunnelEngine for OpenvpnTlsEngine {
    fn id(&self) -> EngineId {
        EngineId::OpenvpnTls
    }

    /// Root, `ip`, `/dev/net/tun` and `openvpn`; OpenVPN's version.
    fn preflight(&self) -> Result<LibraryInfo, String> {
        tunnel::preflight(EngineId::OpenvpnTls)
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
        tunnel::start_rig(options, Certificates::create)
    }

    fn prepare_setup<'a>(
        &self,
        kind: SetupKind,
        interrupt: &'a AtomicBool,
    ) -> Result<SetupProbe<'a>, SetupOutcome> {
        let scenario = TunnelScenario {
            baseline: false,
            cipher: Cipher::Aes128Gcm,
            digest: Digest::None,
            compression: Compression::None,
            payload: Payload::Random,
            payload_bytes: 1400,
        };
        match kind {
            SetupKind::Connect => {
                openvpn_setup::prepare_connect(Certificates::create, scenario, COVERS, interrupt)
            }
            SetupKind::Renegotiate => openvpn_setup::prepare_renegotiation(
                Certificates::create,
                scenario,
                RENEGOTIATION_COVERS,
                interrupt,
            ),
        }
    }

    fn setup_kinds(&self) -> &'static [SetupKind] {
        &[SetupKind::Connect, SetupKind::Renegotiate]
    }
}

/// The files of the certificate chain both ends authenticate with.
struct Certificates {
    /// The folder of the chain in tlslab's certificate cache: `root.pem`,
    /// `server.pem`, `server.key`, `client.pem`, `client.key`.
    folder: PathBuf,
}

impl Certificates {
    /// The chain of [`CERT_KIND`], root and leaf only, generated into the
    /// certificate cache on first use (never inside a measurement).
    fn create(_scratch: &Path) -> Result<Self> {
        let root = CertCache::new(CertCache::default_dir())
            .root_pem(CERT_KIND, 2)
            .context("the certificates of OpenVPN's TLS mode")?;
        let folder = root
            .parent()
            .context("the certificate chain has no folder")?
            .to_path_buf();
        Ok(Self { folder })
    }
}

impl Keying for Certificates {
    fn add_arguments(&self, end: End, command: &mut Command) {
        let (role, leaf, peer) = match end {
            End::A => ("--tls-client", "client", "server"),
            End::B => ("--tls-server", "server", "client"),
        };
        command
            .arg(role)
            .arg("--ca")
            .arg(self.folder.join("root.pem"))
            .arg("--cert")
            .arg(self.folder.join(format!("{leaf}.pem")))
            .arg("--key")
            .arg(self.folder.join(format!("{leaf}.key")))
            .args(["--remote-cert-tls", peer]);
        if end == End::B {
            // ECDHE only (TLS 1.3's groups): no finite-field parameters.
            command.args(["--dh", "none"]);
        }
    }

    fn add_cipher(&self, scenario: &TunnelScenario, command: &mut Command) {
        command.args([
            "--data-ciphers",
            scenario.cipher.openssl_name().unwrap_or("none"),
        ]);
        if scenario.cipher.mode() != CipherMode::Aead {
            command.args(["--auth", scenario.digest.openssl_name().unwrap_or("none")]);
        }
    }

    /// Up, and the data channel is the row's: the cipher negotiated (and
    /// the digest of a CBC cipher) is the one asked for.
    fn is_up(&self, scenario: &TunnelScenario, log: &str) -> Result<bool> {
        if !log.contains(tunnel::READY) {
            return Ok(false);
        }
        let Some(line) = log
            .lines()
            .find(|line| line.contains("Data Channel: cipher"))
        else {
            return Ok(false);
        };
        check_data_channel(scenario, line)?;
        Ok(true)
    }
}

/// Checks OpenVPN's "Data Channel: cipher 'AES-128-GCM', ..." line against
/// the row: its cipher, and for a CBC cipher its digest.
fn check_data_channel(scenario: &TunnelScenario, line: &str) -> Result<()> {
    let quoted = |key: &str| -> Option<String> {
        let rest = &line[line.find(&format!("{key} '"))? + key.len() + 2..];
        Some(rest[..rest.find('\'')?].to_string())
    };
    // OpenVPN names no cipher and no digest so.
    let expected = scenario.cipher.openssl_name().unwrap_or("[null-cipher]");
    let cipher = quoted("cipher").unwrap_or_default();
    if !cipher.eq_ignore_ascii_case(expected) {
        bail!("OpenVPN negotiated the data cipher '{cipher}', not {expected}: {line}");
    }
    if scenario.cipher.mode() != CipherMode::Aead {
        let expected = scenario.digest.openssl_name().unwrap_or("[null-digest]");
        let digest = quoted("auth").unwrap_or_default();
        if !digest.eq_ignore_ascii_case(expected) {
            bail!("OpenVPN authenticates with '{digest}', not {expected}: {line}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cipher: Cipher, digest: Digest) -> TunnelScenario {
        TunnelScenario {
            baseline: false,
            cipher,
            digest,
            compression: Compression::None,
            payload: Payload::Random,
            payload_bytes: 1400,
        }
    }

    #[test]
    fn tls_mode_runs_aead_cbc_and_no_cipher_and_refuses_sha0() {
        let engine = OpenvpnTlsEngine;
        for cipher in [Cipher::Aes128Gcm, Cipher::Chacha20Poly1305] {
            assert_eq!(engine.unsupported_reason(&row(cipher, Digest::None)), None);
        }
        assert_eq!(
            engine.unsupported_reason(&row(Cipher::BfCbc, Digest::Sha1)),
            None
        );
        // OpenVPN 2.6 still negotiates 'none' (with a loud warning).
        assert_eq!(
            engine.unsupported_reason(&row(Cipher::None, Digest::Sha1)),
            None
        );
        let sha0 = engine.unsupported_reason(&row(Cipher::Aes128Cbc, Digest::Sha0));
        assert!(sha0.is_some_and(|r| r.contains("SHA-0")));
    }

    #[test]
    fn the_negotiated_data_channel_must_be_the_rows() {
        let gcm = row(Cipher::Aes128Gcm, Digest::None);
        check_data_channel(&gcm, "Data Channel: cipher 'AES-128-GCM', peer-id: 0").unwrap();
        let error =
            check_data_channel(&gcm, "Data Channel: cipher 'AES-256-GCM', peer-id: 0").unwrap_err();
        assert!(error.to_string().contains("not AES-128-GCM"), "{error}");
        let cbc = row(Cipher::Aes128Cbc, Digest::Sha256);
        check_data_channel(
            &cbc,
            "Data Channel: cipher 'AES-128-CBC', auth 'SHA256', peer-id: 0",
        )
        .unwrap();
        let error = check_data_channel(
            &cbc,
            "Data Channel: cipher 'AES-128-CBC', auth 'SHA1', peer-id: 0",
        )
        .unwrap_err();
        assert!(error.to_string().contains("not SHA256"), "{error}");
        check_data_channel(
            &row(Cipher::None, Digest::None),
            "Data Channel: cipher '[null-cipher]', auth '[null-digest]', peer-id: 0",
        )
        .unwrap();
    }
}
