//! `load`'s one configuration from its options: the page size, the TLS
//! version, the scenario (one value per axis, a preset's as the base) and
//! how connections are used (new, resumed, kept alive).

use anyhow::Result;

use super::super::session::usage;
use crate::cli::{LoadAxisArgs, LoadMode, Size};
use crate::scenario::{
    distinct, Aead, CertKind, Group, HandshakeMatrix, HandshakeScenario, Resumption, TlsVersion,
    DEFAULT_CHAIN_DEPTH, DEFAULT_MTU_BYTES,
};
use crate::workload::load::Mode;

/// The largest page `load --size` takes: 100 MB.
const MAX_PAGE_BYTES: usize = 100_000_000;

/// The page size: `--size`, else the preset's, else 1 KB; from 1 byte to 100 MB.
pub(super) fn page_size(asked: Option<Size>, preset: Option<usize>) -> Result<usize> {
    let Some(size) = asked else {
        return Ok(preset.unwrap_or(1_000));
    };
    if !(1..=MAX_PAGE_BYTES).contains(&size.bytes()) {
        return Err(usage(format!(
            "--size must be between 1 byte and 100m, got {size} bytes"
        )));
    }
    Ok(size.bytes())
}

/// The version of `load`'s connections: `--tls`, else the preset's, else
/// TLS 1.3; DTLS and QUIC are refused.
pub(super) fn load_version(
    given: Option<TlsVersion>,
    base: Option<&HandshakeScenario>,
) -> Result<TlsVersion> {
    let version = given.unwrap_or_else(|| base.map_or(TlsVersion::Tls13, |d| d.version));
    if version.is_datagram() {
        return Err(usage(
            "load speaks HTTP/1.1 over TLS on TCP; DTLS and QUIC are measured by handshake (--tls dtls1.2, --tls quic)",
        ));
    }
    Ok(version)
}

/// The scenarios of `load`, one per certificate (`--cert A,B`, each once
/// in the order given; else `base`'s, or ECDSA P-256), each as
/// [`one_scenario`] makes it; refused unless every one is valid.
pub(super) fn cert_scenarios(
    axes: &LoadAxisArgs,
    base: Option<&HandshakeScenario>,
    version: TlsVersion,
    resumption: Resumption,
) -> Result<Vec<HandshakeScenario>> {
    let certs = match axes.cert.as_deref() {
        Some(listed) if !listed.is_empty() => distinct(listed),
        _ => vec![base.map_or(CertKind::EcdsaP256, |d| d.cert)],
    };
    certs
        .into_iter()
        .map(|cert| one_scenario(axes, base, version, resumption, cert))
        .collect()
}

/// The one scenario of `load` with certificate `cert`: `version` and
/// `resumption`, and `base`'s values (or X25519, AES-128-GCM) with each
/// axis given on the command line replacing its own; refused unless it is
/// one valid TLS scenario.
fn one_scenario(
    axes: &LoadAxisArgs,
    base: Option<&HandshakeScenario>,
    version: TlsVersion,
    resumption: Resumption,
    cert: CertKind,
) -> Result<HandshakeScenario> {
    let matrix = HandshakeMatrix {
        versions: vec![version],
        groups: vec![axes
            .group
            .unwrap_or_else(|| base.map_or(Group::X25519, |d| d.group))],
        certs: vec![cert],
        aeads: vec![axes
            .suite
            .unwrap_or_else(|| base.map_or(Aead::Aes128Gcm, |d| d.aead))],
        resumptions: vec![resumption],
        mutual: vec![false],
        chain_depth: axes.chain_depth.unwrap_or(DEFAULT_CHAIN_DEPTH),
        mtu_bytes: DEFAULT_MTU_BYTES,
        // The load generator and the servers speak TCP themselves.
        transports: vec![crate::scenario::Transport::Memory],
    };
    matrix.validate().map_err(usage)?;
    let [scenario] = matrix.expand()[..] else {
        unreachable!("one value per axis expands to one scenario");
    };
    if let Some(reason) = scenario.protocol_conflict() {
        return Err(usage(reason));
    }
    Ok(scenario)
}

/// How connections are used, and the resumption of a new connection:
/// from `--mode` and `--resumption` (`--mode resume`, the old name of
/// resumption, resumes as `version` usually does: psk on TLS 1.3,
/// session_id on TLS 1.2), else keep-alive if the preset says so.
pub(super) fn mode_and_resumption(
    mode: Option<LoadMode>,
    resumption: Option<Resumption>,
    version: TlsVersion,
    preset_keeps_alive: bool,
) -> Result<(Mode, Resumption)> {
    let usual = if version.tls_rules() == TlsVersion::Tls13 {
        Resumption::Psk
    } else {
        Resumption::SessionId
    };
    match (mode, resumption) {
        (_, Some(Resumption::ZeroRtt)) => Err(usage(
            "load's clients send no early data: 0-RTT (--resumption 0rtt) is measured by handshake --tls quic",
        )),
        (None, None) if preset_keeps_alive => Ok((Mode::KeepAlive, Resumption::Off)),
        (None | Some(LoadMode::New), None | Some(Resumption::Off)) => {
            Ok((Mode::NewConnection, Resumption::Off))
        }
        (Some(LoadMode::Resume), None) => Ok((Mode::Resume, usual)),
        (Some(LoadMode::Resume), Some(Resumption::Off)) => Err(usage(
            "--mode resume resumes each later connection; --resumption off makes every one a full handshake: give one of them",
        )),
        (None | Some(LoadMode::New) | Some(LoadMode::Resume), Some(on)) => Ok((Mode::Resume, on)),
        (Some(LoadMode::Keepalive), None | Some(Resumption::Off)) => {
            Ok((Mode::KeepAlive, Resumption::Off))
        }
        (Some(LoadMode::Keepalive), Some(_)) => Err(usage(
            "--resumption resumes a new connection per request; --mode keepalive keeps one connection per client: give one of them",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_from_one_byte_to_100_megabytes() {
        assert_eq!(page_size(None, None).unwrap(), 1_000);
        assert_eq!(page_size(None, Some(50_000)).unwrap(), 50_000);
        let size = |text: &str| page_size(Some(text.parse().unwrap()), None);
        assert_eq!(size("50k").unwrap(), 50_000);
        assert_eq!(size("100m").unwrap(), 100_000_000);
        assert!(size("0").is_err());
        assert!(size("101m").unwrap_err().to_string().contains("100m"));
    }
}
