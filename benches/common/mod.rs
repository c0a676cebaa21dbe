//! What the overhead benches share: OpenSSL contexts configured as tlslab
//! configures them, for the plain loops that drive the library directly
//! (TLS in [`plain`], QUIC in [`quic`], wolfSSL's own calls in `wolfssl`
//! in a build with that feature).

pub mod plain;
pub mod quic;
#[cfg(feature = "wolfssl")]
pub mod wolfssl;

use openssl::ssl::{SslContext, SslContextBuilder, SslMethod, SslOptions, SslSessionCacheMode};
use openssl::ssl::{SslVerifyMode, SslVersion};
use tlslab::certs::Credentials;

/// OpenSSL contexts configured as tlslab configures them for a full TLS 1.3 handshake.
pub fn openssl_contexts(credentials: &Credentials) -> (SslContext, SslContext) {
    let (client, mut server) = client_and_server(credentials, || {
        let mut ctx = SslContextBuilder::new(SslMethod::tls()).unwrap();
        ctx.set_min_proto_version(Some(SslVersion::TLS1_3)).unwrap();
        ctx.set_max_proto_version(Some(SslVersion::TLS1_3)).unwrap();
        ctx.set_ciphersuites("TLS_AES_128_GCM_SHA256").unwrap();
        ctx.set_groups_list("X25519").unwrap();
        ctx
    });
    server.set_options(SslOptions::NO_TICKET);
    server.set_num_tickets(0).unwrap();
    (client.build(), server.build())
}

/// A client and a server made by `common`, then set up as tlslab sets them
/// up for a full handshake: the client trusts the test root and verifies
/// the server; the server presents the test chain; no session cache.
pub fn client_and_server(
    credentials: &Credentials,
    common: impl Fn() -> SslContextBuilder,
) -> (SslContextBuilder, SslContextBuilder) {
    let mut client = common();
    let mut store = openssl::x509::store::X509StoreBuilder::new().unwrap();
    store
        .add_cert(openssl::x509::X509::from_der(&credentials.root_der).unwrap())
        .unwrap();
    client.set_cert_store(store.build());
    client.set_verify(SslVerifyMode::PEER);
    client.set_session_cache_mode(SslSessionCacheMode::OFF);

    let mut server = common();
    let chain = &credentials.server.chain_der;
    server
        .set_certificate(&openssl::x509::X509::from_der(&chain[0]).unwrap())
        .unwrap();
    for der in &chain[1..] {
        server
            .add_extra_chain_cert(openssl::x509::X509::from_der(der).unwrap())
            .unwrap();
    }
    let key =
        openssl::pkey::PKey::private_key_from_pkcs8(&credentials.server.key_pkcs8_der).unwrap();
    server.set_private_key(&key).unwrap();
    server.set_session_cache_mode(SslSessionCacheMode::OFF);
    (client, server)
}
