//! `tlslab serve`: its options, and what the server offers.

use std::path::PathBuf;

use clap::Args;

use super::names::{over_tcp, NamedParser};
use super::shared::{DisplayArgs, ExportArgs};
use super::values::{self, Seconds, Size};
use crate::scenario::{Aead, BackendId, CertKind, Group, Resumption, ServerKind, TlsVersion};

#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  tlslab serve
      (rustls-aws-lc on 127.0.0.1:8443: TLS 1.3 and 1.2, X25519, P-256,
      P-384, ECDSA P-256 and RSA-2048 certificates, AES-GCM and ChaCha20
      suites)
  tlslab serve --backend openssl --tls 1.2 --group p256 --cert rsa2048 \\
      --duration 60   (one configuration)
  tlslab serve --bind 127.0.0.1:0 --threads 4
      (any free port, printed at start)
  tlslab serve --handshakes --bind 0.0.0.0:8444 --allow-non-loopback
      (for `tlslab handshake --remote`)
  curl --cacert ROOT.pem --resolve tlslab.test:8443:127.0.0.1 \\
      https://tlslab.test:8443/page_50000
  tlslab load --target 127.0.0.1:8443 --rate 50 --duration 5
      (load it; the page is /page_SIZE)
  tlslab serve --server apache --size 1k,50k --duration 60
      (Apache as `load --server apache` runs it, for another client;
      its address alone on standard output)

Pages: GET /page_SIZE answers SIZE bytes of the generated page that
`tlslab load` checks; there is no other page. HTTP/1.1, or HTTP/2 when the
client chooses h2 by ALPN (curl --http2, h2load, load --http 2). The certificate is
tlslab's test chain for the name tlslab.test; ROOT.pem is its root, whose
path serve prints at start (in --cert-dir, by default the user's cache
directory).")]
pub struct ServeArgs {
    /// The TLS backend (rustls counts its crypto per category).
    #[arg(long, value_name = "BACKEND", default_value = "rustls-aws-lc")]
    pub backend: BackendId,

    /// What the server offers: each list in its order of preference.
    #[command(flatten)]
    pub offer: ServeOfferArgs,

    /// Where to listen, ADDRESS:PORT (port 0: any free port). Only loopback
    /// unless --allow-non-loopback.
    #[arg(long, value_name = "ADDRESS:PORT", default_value = "127.0.0.1:8443")]
    pub bind: String,

    /// Allow --bind on an address other hosts can reach.
    #[arg(long)]
    pub allow_non_loopback: bool,

    /// Serve handshakes to a measuring `tlslab handshake --remote
    /// ADDRESS:PORT` instead of HTTPS: --bind is the control connection's
    /// address; the client names each row (backend, scenario, test chain),
    /// this server runs the server's side of each handshake on a port it
    /// picks at --bind's address (TLS over TCP, DTLS over UDP) and reports
    /// its CPU per handshake. --backend and the axis options do not apply.
    #[arg(long)]
    pub handshakes: bool,

    /// Internal: with --handshakes, the control connection is standard
    /// input and output (tlslab starting its own server in a namespace).
    #[arg(long, hide = true, requires = "handshakes")]
    pub control_stdio: bool,

    /// Worker threads, each an event loop serving many connections, as
    /// `load --server embedded --threads` (`--workers` is an old name of
    /// it); at most 256, since more threads than cores add only
    /// switching. [default: one per core]
    #[arg(long, alias = "workers", value_name = "N", value_parser = values::event_loops)]
    pub threads: Option<usize>,

    /// The most connections held at once, over all threads; more wait in
    /// the listen backlog. Lowered to what the open-file limit allows (the
    /// soft limit is raised to the hard one). [default: 16384]
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,

    /// How long a client has for the TLS handshake and its first request
    /// head, and for each later head from its first byte; then 408 and the
    /// connection closed (nginx's client_header_timeout). Seconds, or with
    /// a unit (500ms, 4s, 2m). [default: 10]
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub header_timeout: Option<Seconds>,

    /// How long a kept-alive connection may stay idle between requests
    /// before it is closed (nginx's keepalive_timeout). Seconds, or with a
    /// unit (500ms, 4s, 2m). [default: 10]
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub keep_alive_timeout: Option<Seconds>,

    /// Stop after this long: seconds, or with a unit (90s, 2m, 1h).
    /// [default: run until Ctrl-C]
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub duration: Option<Seconds>,

    /// Where generated certificate chains are cached. [default: the user's cache directory]
    #[arg(long, value_name = "DIR")]
    pub cert_dir: Option<PathBuf>,

    #[command(flatten)]
    pub exports: ExportArgs,

    #[command(flatten)]
    pub display: DisplayArgs,

    // The help names the registered servers: cli::registries::serve_server.
    #[arg(
        long,
        value_name = "SERVER",
        conflicts_with_all = ["bind", "backend", "threads", "handshakes"],
        help = super::registries::serve_server()
    )]
    pub server: Option<ServerKind>,

    /// With --server: the sizes of the pages it serves at /page_SIZE, bytes
    /// or with k/m. [default: 1k]
    #[arg(long, value_name = "LIST", value_delimiter = ',', requires = "server")]
    pub size: Option<Vec<Size>>,

    /// Do not print the line saying where the server listens.
    #[arg(long, short)]
    pub quiet: bool,
}

/// What `tlslab serve` offers. As nginx does, a server offers every value
/// of a list, in the list's order of preference, and each client picks
/// what it supports; one value pins the server to it.
#[derive(Debug, Clone, Args)]
pub struct ServeOfferArgs {
    /// Protocol versions offered. [default: 1.3,1.2]
    #[arg(
        long,
        value_parser = NamedParser::listing(over_tcp),
        value_name = "LIST",
        value_delimiter = ','
    )]
    pub tls: Option<Vec<TlsVersion>>,

    /// Key exchange groups offered, preferred first: rsa (key transport) and
    /// one dhe group are TLS 1.2's, on OpenSSL; the ffdhe groups TLS 1.3's.
    /// [default: x25519,p256,p384]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub group: Option<Vec<Group>>,

    /// Certificates offered, one chain per key type, preferred first (the first
    /// the client's signature algorithms allow is sent). [default:
    /// ecdsa_p256,rsa2048]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub cert: Option<Vec<CertKind>>,

    /// Bulk ciphers offered, preferred first; the CBC ones are TLS 1.2's, on
    /// OpenSSL, and the rest of a TLS 1.2 suite follows from group and
    /// certificate. [default: aes-128-gcm,aes-256-gcm,chacha20-poly1305]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub suite: Option<Vec<Aead>>,

    /// Resumption, one value: off (full handshakes); session_id and ticket are
    /// TLS 1.2's, psk TLS 1.3's. [default: off]
    #[arg(long, value_name = "MODE")]
    pub resumption: Option<Resumption>,

    /// Certificates in each chain, root to leaf inclusive (3 = root,
    /// intermediate, leaf). [default: 3]
    #[arg(long, value_name = "N", value_parser = values::chain_depth)]
    pub chain_depth: Option<u8>,
}
