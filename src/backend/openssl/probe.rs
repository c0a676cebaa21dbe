//! What a TLS server accepts, asked with tlslab's OpenSSL client: each
//! protocol version, then each key-exchange group and each cipher suite
//! this OpenSSL knows, one short handshake per try (closed right after it,
//! no request sent). The client does not verify the server's certificate
//! here: the probe asks what the server offers, not whether it is trusted.

use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use openssl::pkey::Id;
use openssl::ssl::{HandshakeError, SslContextBuilder, SslMethod, SslVerifyMode, SslVersion};

use super::{negotiated, openssl_group_name, TLS12_SUITES};
use crate::backend::probe::{Accepted, Attempt, Axis, ProbeTarget};
use crate::scenario::{Group, Named, TlsVersion};

/// How long one step of a try may block.
const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// The TLS 1.3 suites OpenSSL offers.
const TLS13_SUITES: &[&str] = &[
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
];

/// The groups this OpenSSL can offer, by tlslab id and OpenSSL name.
fn known_groups() -> Vec<(Group, &'static str)> {
    let groups = Group::ALL
        .iter()
        .filter_map(|group| Some((*group, openssl_group_name(*group)?)))
        .filter(|(_, name)| {
            SslContextBuilder::new(SslMethod::tls())
                .and_then(|mut ctx| ctx.set_groups_list(name))
                .is_ok()
        })
        .collect();
    openssl::error::ErrorStack::get(); // drop errors left by failed tries
    groups
}

/// Tries every version, then every group and suite on each version the
/// server accepted. Fails if the server cannot be reached at all or
/// accepts no version; stops early (with the tries made) when `interrupt`
/// is set.
pub fn probe(target: &ProbeTarget, interrupt: &AtomicBool) -> Result<Vec<Attempt>> {
    let groups = known_groups();
    let all_groups: Vec<&str> = groups.iter().map(|(_, name)| *name).collect();
    let all_groups = all_groups.join(":");
    let mut attempts = Vec::new();
    let mut first = true;
    let mut attempt = |axis: Axis, offered: &str, version: TlsVersion, offer: Offer| {
        if !first {
            std::thread::sleep(target.pause);
        }
        first = false;
        let tcp = TcpStream::connect_timeout(&target.address, IO_TIMEOUT)
            .with_context(|| format!("connecting to {}", target.address))?;
        let outcome = handshake(target, tcp, version, &offer).map_err(|e| format!("{e:#}"));
        Ok::<_, anyhow::Error>(Attempt {
            axis,
            offered: offered.to_string(),
            version,
            outcome,
        })
    };

    let mut versions = Vec::new();
    for version in [TlsVersion::Tls12, TlsVersion::Tls13] {
        let offer = Offer {
            groups: all_groups.clone(),
            tls12_ciphers: "ALL".to_string(),
            tls13_suites: TLS13_SUITES.join(":"),
        };
        let tried = attempt(
            Axis::Version,
            &format!("TLS {}", version.id()),
            version,
            offer,
        )?;
        if tried.accepted() {
            versions.push(version);
        }
        attempts.push(tried);
    }
    if versions.is_empty() {
        let reasons: Vec<String> = attempts
            .iter()
            .filter_map(|a| {
                a.outcome
                    .as_ref()
                    .err()
                    .map(|e| format!("{}: {e}", a.offered))
            })
            .collect();
        bail!(
            "{} accepts neither TLS 1.2 nor TLS 1.3 from tlslab's OpenSSL client ({})",
            target.address,
            reasons.join("; ")
        );
    }

    'groups: for (group, name) in &groups {
        for version in [TlsVersion::Tls13, TlsVersion::Tls12] {
            if !versions.contains(&version) || group.protocol_conflict(version).is_some() {
                continue;
            }
            if interrupt.load(Ordering::Relaxed) {
                break 'groups;
            }
            let offer = Offer {
                groups: name.to_string(),
                // In TLS 1.2 the group is used only by an ephemeral key
                // exchange: offer those suites alone.
                tls12_ciphers: "ECDHE:DHE".to_string(),
                tls13_suites: TLS13_SUITES.join(":"),
            };
            let mut tried = attempt(Axis::Group, group.id(), version, offer)?;
            if let Ok(accepted) = &tried.outcome {
                if accepted.group.as_deref() != Some(group.id()) {
                    tried.outcome = Err(format!(
                        "the server negotiated {} instead",
                        accepted.group.as_deref().unwrap_or("no group")
                    ));
                }
            }
            let accepted = tried.accepted();
            attempts.push(tried);
            if accepted {
                break;
            }
        }
    }

    let suites = TLS13_SUITES
        .iter()
        .map(|suite| (TlsVersion::Tls13, *suite, *suite))
        .chain(
            TLS12_SUITES
                .iter()
                .map(|(standard, name)| (TlsVersion::Tls12, *standard, *name)),
        );
    for (version, standard, name) in suites {
        if !versions.contains(&version) {
            continue;
        }
        if interrupt.load(Ordering::Relaxed) {
            break;
        }
        let offer = match version {
            TlsVersion::Tls12 => Offer {
                groups: all_groups.clone(),
                tls12_ciphers: name.to_string(),
                tls13_suites: TLS13_SUITES.join(":"),
            },
            _ => Offer {
                groups: all_groups.clone(),
                tls12_ciphers: "ALL".to_string(),
                tls13_suites: name.to_string(),
            },
        };
        attempts.push(attempt(Axis::Suite, standard, version, offer)?);
    }
    Ok(attempts)
}

/// What the client offers in one try.
struct Offer {
    /// OpenSSL's group list.
    groups: String,
    tls12_ciphers: String,
    tls13_suites: String,
}

fn handshake(
    target: &ProbeTarget,
    tcp: TcpStream,
    version: TlsVersion,
    offer: &Offer,
) -> Result<Accepted> {
    let protocol = match version {
        TlsVersion::Tls12 => SslVersion::TLS1_2,
        _ => SslVersion::TLS1_3,
    };
    let mut ctx = SslContextBuilder::new(SslMethod::tls())?;
    ctx.set_min_proto_version(Some(protocol))?;
    ctx.set_max_proto_version(Some(protocol))?;
    // What the server accepts, whatever this client's default policy is.
    ctx.set_security_level(0);
    ctx.set_verify(SslVerifyMode::NONE);
    ctx.set_groups_list(&offer.groups)?;
    ctx.set_cipher_list(&offer.tls12_ciphers)?;
    ctx.set_ciphersuites(&offer.tls13_suites)?;
    tcp.set_nodelay(true)?;
    tcp.set_read_timeout(Some(IO_TIMEOUT))?;
    tcp.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut ssl = openssl::ssl::Ssl::new(&ctx.build())?;
    ssl.set_hostname(&target.server_name)?;
    let mut stream = ssl.connect(tcp).map_err(|error| {
        // OpenSSL's own reason ("sslv3 alert handshake failure") when it has one.
        let reason = match &error {
            HandshakeError::Failure(mid) => mid
                .error()
                .ssl_error()
                .and_then(|stack| stack.errors().first().and_then(|e| e.reason()))
                .map(str::to_string),
            _ => None,
        };
        anyhow!("refused ({})", reason.unwrap_or_else(|| error.to_string()))
    })?;
    let seen = negotiated(stream.ssl())?;
    let certificate = describe_certificate(stream.ssl());
    let _ = stream.shutdown();
    Ok(Accepted {
        version: seen.version,
        suite: seen.suite,
        group: seen.group,
        certificate,
    })
}

/// "RSA-2048, 3 certificates (2841 bytes)".
fn describe_certificate(ssl: &openssl::ssl::SslRef) -> String {
    let Some(leaf) = ssl.peer_certificate() else {
        return "none".to_string();
    };
    let key = match leaf.public_key() {
        Ok(key) => match key.id() {
            Id::RSA => format!("RSA-{}", key.bits()),
            Id::EC => {
                let curve = key
                    .ec_key()
                    .ok()
                    .and_then(|ec| ec.group().curve_name())
                    .and_then(|nid| nid.short_name().ok().map(str::to_string))
                    .unwrap_or_else(|| "?".to_string());
                format!("ECDSA {curve}")
            }
            Id::ED25519 => "Ed25519".to_string(),
            Id::ED448 => "Ed448".to_string(),
            other => format!("key type {} ({} bits)", other.as_raw(), key.bits()),
        },
        Err(_) => "unreadable key".to_string(),
    };
    let (count, bytes) = ssl.peer_cert_chain().map_or((1, 0), |chain| {
        (
            chain.len(),
            chain
                .iter()
                .map(|cert| cert.to_der().map_or(0, |der| der.len()))
                .sum(),
        )
    });
    format!("{key}, {count} certificates ({bytes} bytes)")
}
