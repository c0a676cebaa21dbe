//! `load`'s one configuration from its options: the page size, the TLS
//! version, the scenario (one value per axis, a preset's as the base) and
//! how connections are used (new, resumed, kept alive).

use anyhow::Result;

use super::super::session::usage;
use crate::cli::LoadAxisArgs;
use crate::scenario::{
    parse_name, Aead, CertKind, Group, HandshakeMatrix, HandshakeScenario, Named, Resumption,
    TlsVersion, DEFAULT_CHAIN_DEPTH, DEFAULT_MTU_BYTES,
};
use crate::workload::load::Mode;

/// Parses a size: bytes, or with k/m (10^3, 10^6).
pub(super) fn parse_size(text: &str) -> Result<usize> {
    let lower = text.trim().to_ascii_lowercase();
    let (digits, unit) = match lower.strip_suffix('k') {
        Some(d) => (d, 1_000),
        None => match lower.strip_suffix('m') {
            Some(d) => (d, 1_000_000),
            None => (lower.as_str(), 1),
        },
    };
    let value: usize = digits.parse().map_err(|_| {
        usage(format!(
            "--size '{text}' is not a size (bytes, or e.g. 50k, 1m)"
        ))
    })?;
    let size = value * unit;
    if size == 0 || size > 100_000_000 {
        return Err(usage(format!(
            "--size must be between 1 byte and 100m, not {text}"
        )));
    }
    Ok(size)
}

/// One value of an axis option of `load` (`--group x25519`); a list is
/// refused, since a load runs one configuration.
fn one_value<T: Named>(option: &str, text: &str) -> Result<T> {
    if text.contains(',') {
        return Err(usage(format!(
            "{option} takes one value: load runs one configuration (got '{text}')"
        )));
    }
    parse_name(text).map_err(usage)
}

/// The version of `load`'s connections: `--tls`, else the preset's, else
/// TLS 1.3; DTLS is refused.
pub(super) fn load_version(
    given: Option<&str>,
    base: Option<&HandshakeScenario>,
) -> Result<TlsVersion> {
    let version = match given {
        Some(text) => one_value::<TlsVersion>("--tls", text)?,
        None => base.map_or(TlsVersion::Tls13, |d| d.version),
    };
    if version.is_datagram() {
        return Err(usage(
            "load speaks HTTP/1.1 over TLS on TCP; DTLS is measured by handshake (--tls dtls1.2)",
        ));
    }
    Ok(version)
}

/// The one scenario of `load`: `version` and `resumption`, and `base`'s
/// values (or X25519, ECDSA P-256, AES-128-GCM) with each axis given on
/// the command line replacing its own; refused unless it is one valid TLS
/// scenario.
pub(super) fn one_scenario(
    axes: &LoadAxisArgs,
    base: Option<&HandshakeScenario>,
    version: TlsVersion,
    resumption: Resumption,
) -> Result<HandshakeScenario> {
    let matrix = HandshakeMatrix {
        versions: vec![version],
        groups: vec![match &axes.group {
            Some(text) => one_value("--group", text)?,
            None => base.map_or(Group::X25519, |d| d.group),
        }],
        certs: vec![match &axes.cert {
            Some(text) => one_value("--cert", text)?,
            None => base.map_or(CertKind::EcdsaP256, |d| d.cert),
        }],
        aeads: vec![match &axes.suite {
            Some(text) => one_value("--suite", text)?,
            None => base.map_or(Aead::Aes128Gcm, |d| d.aead),
        }],
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
    mode: Option<&str>,
    resumption: Option<&str>,
    version: TlsVersion,
    preset_keeps_alive: bool,
) -> Result<(Mode, Resumption)> {
    let resumption = resumption
        .map(|text| one_value::<Resumption>("--resumption", text))
        .transpose()?;
    let usual = if version.tls_rules() == TlsVersion::Tls13 {
        Resumption::Psk
    } else {
        Resumption::SessionId
    };
    match (mode, resumption) {
        (None, None) if preset_keeps_alive => Ok((Mode::KeepAlive, Resumption::Off)),
        (None | Some("new"), None | Some(Resumption::Off)) => {
            Ok((Mode::NewConnection, Resumption::Off))
        }
        (Some("resume"), None) => Ok((Mode::Resume, usual)),
        (Some("resume"), Some(Resumption::Off)) => Err(usage(
            "--mode resume resumes each later connection; --resumption off makes every one a full handshake: give one of them",
        )),
        (None | Some("new") | Some("resume"), Some(on)) => Ok((Mode::Resume, on)),
        (Some("keepalive"), None | Some(Resumption::Off)) => {
            Ok((Mode::KeepAlive, Resumption::Off))
        }
        (Some("keepalive"), Some(_)) => Err(usage(
            "--resumption resumes a new connection per request; --mode keepalive keeps one connection per client: give one of them",
        )),
        (Some(other), _) => Err(usage(format!(
            "unknown mode '{other}'; valid modes: new, keepalive (resumed connections: --resumption session_id, ticket or psk)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("50k").unwrap(), 50_000);
        assert_eq!(parse_size("1m").unwrap(), 1_000_000);
        assert_eq!(parse_size("512").unwrap(), 512);
        assert!(parse_size("0").is_err());
        assert!(parse_size("fifty").is_err());
    }
}
