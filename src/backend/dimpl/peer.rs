//! How each side of a dimpl connection checks its peer's certificate.
//! dimpl verifies the handshake's signatures with the peer's leaf but leaves
//! the chain to the application; here rustls's WebPKI verifier (on
//! aws-lc-rs) checks it against the root, within the side's timed turn.
//! dimpl sends a leaf without intermediates, so the verifier is given them
//! out of band.

use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use dimpl::DtlsCertificate;
use rustls::client::danger::ServerCertVerifier;
use rustls::client::WebPkiServerVerifier;
use rustls::server::danger::ClientCertVerifier;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

use crate::certs::{CertChain, SERVER_NAME};

/// A leaf and its key as dimpl takes them, and the intermediates that a
/// verifier of that leaf is given out of band.
pub(super) fn certificate(
    chain: &CertChain,
) -> Result<(DtlsCertificate, Vec<CertificateDer<'static>>)> {
    let (leaf, intermediates) = chain
        .chain_der
        .split_first()
        .context("empty certificate chain")?;
    Ok((
        DtlsCertificate {
            certificate: leaf.clone(),
            private_key: chain.key_pkcs8_der.clone(),
        },
        intermediates
            .iter()
            .map(|der| CertificateDer::from(der.clone()))
            .collect(),
    ))
}

/// How one side checks the certificate its peer presents.
#[derive(Clone)]
pub(super) enum PeerCheck {
    /// The client checks the server's leaf against the root, for the server name.
    Server {
        verifier: Arc<WebPkiServerVerifier>,
        intermediates: Vec<CertificateDer<'static>>,
    },
    /// The server checks a client's leaf against the root (mutual authentication).
    Client {
        verifier: Arc<dyn ClientCertVerifier>,
        intermediates: Vec<CertificateDer<'static>>,
    },
    /// The server asked for no certificate.
    None,
}

impl PeerCheck {
    pub(super) fn check(&self, leaf: &[u8]) -> Result<()> {
        let leaf = CertificateDer::from(leaf);
        match self {
            PeerCheck::Server {
                verifier,
                intermediates,
            } => {
                let name = ServerName::try_from(SERVER_NAME)?;
                verifier
                    .verify_server_cert(&leaf, intermediates, &name, &[], UnixTime::now())
                    .map_err(|error| anyhow!("the server's certificate is refused: {error}"))?;
            }
            PeerCheck::Client {
                verifier,
                intermediates,
            } => {
                verifier
                    .verify_client_cert(&leaf, intermediates, UnixTime::now())
                    .map_err(|error| anyhow!("the client's certificate is refused: {error}"))?;
            }
            PeerCheck::None => bail!("a certificate came that was not asked for"),
        }
        Ok(())
    }
}
