//! `load --target`: a server the user runs, given as HOST:PORT or an
//! https:// URL; refused off loopback without consent and a rate cap
//! (checked before a name is even resolved), and probed for what it
//! accepts before it is loaded.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

use anyhow::{Context, Result};

use super::super::session::usage;
use crate::backend::client::MeasuringClient;
use crate::backend::probe;
use crate::certs::SERVER_NAME;

/// A `--target` as given.
#[derive(Debug)]
pub(super) struct Target {
    pub(super) address: SocketAddr,
    /// The host as written (sent as SNI by the probe when it is a name).
    host: String,
}

impl Target {
    /// The server's name: `given` (`--server-name`), else the host as
    /// written when it is a name, else the test chain's name.
    pub(super) fn server_name(&self, given: Option<&str>) -> String {
        match given {
            Some(name) => name.to_string(),
            None if self.host.parse::<IpAddr>().is_ok() => SERVER_NAME.to_string(),
            None => self.host.clone(),
        }
    }
}

/// Splits a `--target` given as a URL, `https://host[:port][/path]`, into
/// HOST:PORT (port 443 by default) and its path (None when it is `/` or
/// absent); anything else is returned as it is, with no path.
pub(super) fn split_url(text: &str) -> Result<(String, Option<String>)> {
    if text.starts_with("http://") {
        return Err(usage(format!(
            "--target {text}: tlslab measures TLS; give an https:// URL or HOST:PORT"
        )));
    }
    let Some(rest) = text.strip_prefix("https://") else {
        return Ok((text.to_string(), None));
    };
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, ""),
    };
    if authority.is_empty() {
        return Err(usage(format!("--target {text}: the URL has no host")));
    }
    // A port follows the last ':' unless that ':' is inside an IPv6 literal.
    let has_port = authority
        .rfind(':')
        .is_some_and(|colon| !authority[colon..].contains(']'));
    let address = if has_port {
        authority.to_string()
    } else {
        format!("{authority}:443")
    };
    let path = (!path.is_empty() && path != "/").then(|| path.to_string());
    Ok((address, path))
}

/// Parses a `--target`. Off loopback it is refused unless the user gave
/// consent (`--i-have-permission`) and a rate cap (`--max-rate`), and that
/// is checked before a host name is resolved: without them nothing at all
/// leaves the machine.
pub(super) fn parse_target(text: &str, consent: bool, max_rate: Option<f64>) -> Result<Target> {
    let not_host_port = || {
        usage(format!(
            "--target '{text}' is not HOST:PORT (e.g. 127.0.0.1:8443)"
        ))
    };
    let (host, port) = match text.parse::<SocketAddr>() {
        Ok(address) => (address.ip().to_string(), address.port()),
        Err(_) => {
            let (host, port) = text.rsplit_once(':').ok_or_else(not_host_port)?;
            let port: u16 = port.parse().map_err(|_| not_host_port())?;
            (host.trim_matches(['[', ']']).to_string(), port)
        }
    };
    if host.is_empty() || port == 0 {
        return Err(not_host_port());
    }
    let literal: Option<IpAddr> = host.parse().ok();
    let loopback = literal.map_or(host.eq_ignore_ascii_case("localhost"), |ip| {
        ip.is_loopback()
    });
    let allowed = loopback || (consent && max_rate.is_some());
    if !allowed {
        return Err(usage(format!(
            "--target {text} is not on loopback: tlslab sends traffic to another machine only with --i-have-permission (you run that server or may load it) and --max-rate REQ/S (a cap on requests and probe handshakes per second); nothing was sent"
        )));
    }
    let address = match literal {
        Some(ip) => SocketAddr::new(ip, port),
        None => (host.as_str(), port)
            .to_socket_addrs()
            .with_context(|| format!("resolving --target {text}"))?
            .find(|address| !loopback || address.ip().is_loopback())
            .with_context(|| format!("--target {text} resolves to no usable address"))?,
    };
    Ok(Target { address, host })
}

/// Probes `target` with `client` (see [`MeasuringClient::probe`]), at
/// most `max_rate` handshakes per second off loopback.
pub(super) fn probe_target(
    client: &dyn MeasuringClient,
    target: &Target,
    server_name: Option<&str>,
    max_rate: Option<f64>,
    quiet: bool,
    interrupt: &std::sync::atomic::AtomicBool,
) -> Result<Vec<probe::Attempt>> {
    let pause = match max_rate {
        Some(rate) if !target.address.ip().is_loopback() => Duration::from_secs_f64(1.0 / rate),
        _ => Duration::ZERO,
    };
    let server_name = target.server_name(server_name);
    if !quiet {
        eprintln!(
            "probing {} (versions, groups, suites; one handshake each)...",
            target.address
        );
    }
    client
        .probe(
            &probe::ProbeTarget {
                address: target.address,
                server_name,
                pause,
            },
            interrupt,
        )
        .with_context(|| format!("probing {}", target.address))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_target_names_its_address_and_page() {
        let split = |text: &str| split_url(text).unwrap();
        assert_eq!(
            split("127.0.0.1:8443"),
            ("127.0.0.1:8443".to_string(), None)
        );
        assert_eq!(
            split("https://127.0.0.1"),
            ("127.0.0.1:443".to_string(), None)
        );
        assert_eq!(
            split("https://localhost:8443/"),
            ("localhost:8443".to_string(), None)
        );
        assert_eq!(
            split("https://[::1]/a/b.html?x=1"),
            ("[::1]:443".to_string(), Some("/a/b.html?x=1".to_string()))
        );
        assert_eq!(
            split("https://[::1]:8443/index.html"),
            ("[::1]:8443".to_string(), Some("/index.html".to_string()))
        );
        assert!(split_url("http://127.0.0.1/").is_err());
        assert!(split_url("https:///index.html").is_err());
    }

    #[test]
    fn a_target_off_loopback_needs_consent_and_a_rate_cap() {
        assert!(parse_target("127.0.0.1:8443", false, None).is_ok());
        assert!(parse_target("[::1]:8443", false, None).is_ok());
        assert!(parse_target("example", false, None).is_err());
        for (consent, cap) in [(false, None), (true, None), (false, Some(5.0))] {
            let refused = parse_target("192.0.2.1:443", consent, cap).unwrap_err();
            assert!(format!("{refused:#}").contains("--i-have-permission"));
            // A name is not even resolved without them.
            let refused = parse_target("example.invalid:443", consent, cap).unwrap_err();
            assert!(format!("{refused:#}").contains("nothing was sent"));
        }
        let target = parse_target("192.0.2.1:443", true, Some(5.0)).unwrap();
        assert_eq!(target.address.to_string(), "192.0.2.1:443");
    }
}
