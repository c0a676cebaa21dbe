//! OpenSSL as the embedded HTTPS server's TLS: the scenario's server
//! context (group, certificate chain, suite, resumption) and a nonblocking
//! `SSL_accept`, `SSL_read` and `SSL_write` over each accepted TCP
//! connection. OpenSSL writes to the socket inside its calls (its alerts
//! and session tickets included), except the KeyUpdate a client asks for,
//! which it keeps for its next write: the session sends it after the read
//! that brought the request.

use std::io::{self, ErrorKind};
use std::net::TcpStream;

use anyhow::{bail, Context, Result};
use foreign_types::{ForeignType, ForeignTypeRef};
use openssl::pkey::{PKey, Private};
use openssl::ssl::{
    AlpnError, ErrorCode, Ssl, SslContext, SslContextBuilder, SslMethod, SslOptions, SslStream,
};
use openssl::x509::X509;

use super::{
    certificate_curve, configure_resumption, dhe_parameters, openssl_group_name, protocol,
    server_context_builder, tls12_cipher_name,
};
use crate::backend::{ServerSession, TlsAcceptor, SERVER_ALPN};
use crate::certs::Credentials;
use crate::scenario::{
    CertKind, HandshakeScenario, KxKind, Named, ServerOffer, SignatureFamily, TlsVersion,
};

extern "C" {
    /// The KeyUpdate OpenSSL will send (-1: none), not bound by openssl-sys.
    fn SSL_get_key_update_type(ssl: *const openssl_sys::SSL) -> libc::c_int;
    /// Schedules a KeyUpdate of the given type, sent by the next write or
    /// `SSL_do_handshake`.
    fn SSL_key_update(ssl: *mut openssl_sys::SSL, update_type: libc::c_int) -> libc::c_int;
}

/// OpenSSL's `SSL_KEY_UPDATE_NOT_REQUESTED`: the type of a KeyUpdate that
/// answers a client's request.
const KEY_UPDATE_NOT_REQUESTED: libc::c_int = 0;

/// The server's context for one scenario.
pub struct OpensslAcceptor {
    context: SslContext,
}

impl OpensslAcceptor {
    pub fn new(scenario: &HandshakeScenario, credentials: &Credentials) -> Result<Self> {
        if scenario.version.is_datagram() {
            anyhow::bail!("the embedded server speaks TLS over TCP, not DTLS");
        }
        let mut context = server_context_builder(scenario, credentials)
            .context("configuring the OpenSSL server")?;
        offer_server_alpn(&mut context);
        Ok(Self {
            context: context.build(),
        })
    }

    /// The server of an offer: every version, group, certificate and
    /// suite in it, the suites and groups in its order (the server's
    /// preference, not the client's), one certificate chain per key type
    /// (`chains` in the offer's order; OpenSSL picks the one the client's
    /// signature algorithms allow).
    pub fn offering(offer: &ServerOffer, chains: &[std::sync::Arc<Credentials>]) -> Result<Self> {
        Ok(Self {
            context: offer_context(offer, chains).context("configuring the OpenSSL server")?,
        })
    }
}

/// Makes the server choose its protocols ([`SERVER_ALPN`], in its order)
/// from those a client offers by ALPN, refusing a client that offers none
/// of them with `no_application_protocol` (as nginx does).
fn offer_server_alpn(ctx: &mut SslContextBuilder) {
    ctx.set_alpn_select_callback(|_, offered| {
        SERVER_ALPN
            .iter()
            .find_map(|wanted| alpn_names(offered).find(|name| name == wanted))
            .ok_or(AlpnError::ALERT_FATAL)
    });
}

/// The protocol names of an ALPN list in its wire format (each name after
/// its length byte); a truncated last entry is left out.
fn alpn_names(mut wire: &[u8]) -> impl Iterator<Item = &[u8]> {
    std::iter::from_fn(move || {
        let (&length, rest) = wire.split_first()?;
        let name = rest.get(..length as usize)?;
        wire = &rest[length as usize..];
        Some(name)
    })
}

/// Why an OpenSSL server cannot hold `offer` although it can make each of
/// its handshakes: it holds one certificate per key type and one set of
/// TLS 1.2 DHE parameters.
pub(super) fn offer_conflict(offer: &ServerOffer) -> Option<String> {
    for family in [SignatureFamily::Rsa, SignatureFamily::Ecdsa] {
        if offer.certs.iter().filter(|c| c.family() == family).count() > 1 {
            return Some(
                "an OpenSSL server holds one certificate per key type: offer one RSA and one ECDSA certificate at most"
                    .to_string(),
            );
        }
    }
    let dhe = offer.groups.iter().filter(|g| {
        matches!(g.kind(), KxKind::Ffdh { .. }) && g.protocol_conflict(TlsVersion::Tls12).is_none()
    });
    (dhe.count() > 1).then(|| {
        "an OpenSSL server has one set of TLS 1.2 DHE parameters: offer one of dhe1024..dhe4096"
            .to_string()
    })
}

/// OpenSSL's key slot of a certificate type: one certificate per slot.
fn key_slot(cert: CertKind) -> &'static str {
    match cert.family() {
        SignatureFamily::Rsa => "RSA",
        SignatureFamily::Ecdsa => "ECDSA",
        _ => cert.id(),
    }
}

fn offer_context(
    offer: &ServerOffer,
    chains: &[std::sync::Arc<Credentials>],
) -> Result<SslContext> {
    let scenarios = offer.scenarios();
    if scenarios.is_empty() {
        bail!("the offer has no version, group, certificate and suite that go together");
    }
    let mut ctx = SslContextBuilder::new(SslMethod::tls())?;
    let lowest = offer
        .versions
        .iter()
        .min()
        .copied()
        .unwrap_or(TlsVersion::Tls13);
    let highest = offer
        .versions
        .iter()
        .max()
        .copied()
        .unwrap_or(TlsVersion::Tls13);
    ctx.set_min_proto_version(Some(protocol(lowest)))?;
    ctx.set_max_proto_version(Some(protocol(highest)))?;
    ctx.set_options(SslOptions::CIPHER_SERVER_PREFERENCE);
    let mut tls13_suites: Vec<&str> = Vec::new();
    let mut tls12_suites: Vec<&str> = Vec::new();
    for scenario in &scenarios {
        let (list, name) = match scenario.version {
            TlsVersion::Tls13 => (&mut tls13_suites, scenario.suite_name()),
            _ => (&mut tls12_suites, tls12_cipher_name(scenario)?),
        };
        if !list.contains(&name) {
            list.push(name);
        }
    }
    if !tls13_suites.is_empty() {
        ctx.set_ciphersuites(&tls13_suites.join(":"))?;
    }
    if !tls12_suites.is_empty() {
        ctx.set_cipher_list(&tls12_suites.join(":"))?;
    }
    let mut groups: Vec<&str> = offer
        .groups
        .iter()
        .filter_map(|g| openssl_group_name(*g))
        .collect();
    if offer.versions.contains(&TlsVersion::Tls12) {
        // In TLS 1.2 an ECDSA certificate may only be used on a curve the
        // client lists, so the server lists its certificates' curves too.
        for curve in offer.certs.iter().filter_map(|c| certificate_curve(*c)) {
            if !groups.contains(&curve) && !groups.is_empty() {
                groups.push(curve);
            }
        }
    }
    if !groups.is_empty() {
        ctx.set_groups_list(&groups.join(":"))?;
    }
    let dhe: Vec<_> = offer
        .groups
        .iter()
        .filter(|g| matches!(g.kind(), KxKind::Ffdh { .. }) && g.ffdh_bits().is_some())
        .filter_map(|g| dhe_parameters(*g).transpose())
        .collect::<Result<_>>()?;
    match dhe.as_slice() {
        [] => {}
        [parameters] => ctx.set_tmp_dh(parameters)?,
        _ => bail!("an OpenSSL server has one set of TLS 1.2 DHE parameters: offer one of dhe1024..dhe4096"),
    }
    if scenarios.iter().any(|s| s.is_weak()) {
        ctx.set_security_level(0);
    }
    let mut slots: Vec<&str> = Vec::new();
    for credentials in chains {
        let slot = key_slot(credentials.kind);
        if slots.contains(&slot) {
            bail!(
                "an OpenSSL server holds one certificate per key type: offer one {slot} certificate"
            );
        }
        slots.push(slot);
        add_certificate(&mut ctx, credentials)?;
    }
    configure_resumption(&mut ctx, offer.resumption)?;
    offer_server_alpn(&mut ctx);
    Ok(ctx.build())
}

/// Adds a server certificate with its own chain (each certificate of a
/// context has its own, unlike `add_extra_chain_cert`'s shared one).
fn add_certificate(ctx: &mut SslContextBuilder, credentials: &Credentials) -> Result<()> {
    let chain = &credentials.server.chain_der;
    let (leaf, intermediates) = chain.split_first().context("empty certificate chain")?;
    let leaf = X509::from_der(leaf)?;
    ctx.set_certificate(&leaf)?;
    for der in intermediates {
        let intermediate = X509::from_der(der)?;
        // SAFETY: SSL_CTX_add1_chain_cert (a macro over SSL_CTX_ctrl) adds
        // the certificate to the current one's chain, taking a reference of
        // its own; `intermediate` stays ours.
        let added = unsafe {
            openssl_sys::SSL_CTX_ctrl(
                ctx.as_ptr(),
                openssl_sys::SSL_CTRL_CHAIN_CERT,
                1,
                intermediate.as_ptr().cast(),
            )
        };
        if added != 1 {
            return Err(openssl::error::ErrorStack::get().into());
        }
    }
    let key: PKey<Private> = PKey::private_key_from_pkcs8(&credentials.server.key_pkcs8_der)?;
    ctx.set_private_key(&key)?;
    ctx.check_private_key()?;
    Ok(())
}

impl TlsAcceptor for OpensslAcceptor {
    fn session(&self, tcp: TcpStream) -> Result<Box<dyn ServerSession>> {
        let mut ssl = Ssl::new(&self.context)?;
        ssl.set_accept_state();
        Ok(Box::new(OpensslSession {
            stream: SslStream::new(ssl, tcp)?,
            failed: false,
        }))
    }
}

struct OpensslSession {
    stream: SslStream<TcpStream>,
    /// OpenSSL reported a fatal error: it sent its alert, and nothing may
    /// follow it (not even close_notify).
    failed: bool,
}

impl OpensslSession {
    /// Turns an OpenSSL error into WouldBlock when the call waits for the
    /// socket; any other error is fatal to the connection.
    fn fail(&mut self, error: openssl::ssl::Error) -> io::Error {
        match error.code() {
            ErrorCode::WANT_READ | ErrorCode::WANT_WRITE => ErrorKind::WouldBlock.into(),
            _ => {
                self.failed = true;
                match error.into_io_error() {
                    Ok(error) => error,
                    Err(error) => io::Error::new(ErrorKind::InvalidData, error.to_string()),
                }
            }
        }
    }
}

impl OpensslSession {
    /// Sends now the KeyUpdate a client asked for, which OpenSSL would
    /// otherwise keep until the response is written.
    fn answer_key_update(&mut self) {
        let ssl = self.stream.ssl().as_ptr();
        // SAFETY: `ssl` is this session's live SSL object; both calls only
        // read or set its key update state (SSL_key_update refuses while a
        // write is pending or the handshake is not finished).
        let scheduled = unsafe {
            SSL_get_key_update_type(ssl) == KEY_UPDATE_NOT_REQUESTED
                && SSL_key_update(ssl, KEY_UPDATE_NOT_REQUESTED) == 1
        };
        if scheduled {
            // A full socket leaves the rest to the next call.
            let _ = self.stream.do_handshake();
        } else {
            // SSL_key_update's refusal, if any, is not this connection's error.
            openssl::error::ErrorStack::get();
        }
    }
}

impl ServerSession for OpensslSession {
    fn handshake(&mut self) -> io::Result<bool> {
        match self.stream.do_handshake() {
            Ok(()) => Ok(true),
            Err(error) => match self.fail(error) {
                error if error.kind() == ErrorKind::WouldBlock => Ok(false),
                error => Err(error),
            },
        }
    }

    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        match self.stream.ssl_read(buffer) {
            Ok(read) => {
                self.answer_key_update();
                Ok(read)
            }
            // close_notify from the client.
            Err(error) if error.code() == ErrorCode::ZERO_RETURN => Ok(0),
            Err(error) => {
                let error = self.fail(error);
                if error.kind() == ErrorKind::WouldBlock {
                    self.answer_key_update();
                }
                Err(error)
            }
        }
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.stream
            .ssl_write(bytes)
            .map_err(|error| self.fail(error))
    }

    fn flush(&mut self) -> io::Result<bool> {
        // OpenSSL writes its records to the socket inside its calls; a
        // write cut short by a full socket is finished by the next call.
        Ok(true)
    }

    fn close_notify(&mut self) {
        if !self.failed {
            let _ = self.stream.shutdown();
        }
    }

    fn resumed(&self) -> bool {
        self.stream.ssl().session_reused()
    }

    fn tcp(&self) -> &TcpStream {
        self.stream.get_ref()
    }

    fn alpn_protocol(&self) -> Option<&[u8]> {
        self.stream.ssl().selected_alpn_protocol()
    }
}

#[cfg(test)]
mod tests {
    use super::alpn_names;

    #[test]
    fn alpn_lists_split_into_names() {
        let names: Vec<&[u8]> = alpn_names(b"\x02h2\x08http/1.1\x09trunc").collect();
        assert_eq!(names, [b"h2".as_slice(), b"http/1.1".as_slice()]);
        assert_eq!(alpn_names(b"").count(), 0);
    }
}
