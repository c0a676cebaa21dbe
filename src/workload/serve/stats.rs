//! What the embedded server did, over all its workers: counts of
//! connections, requests and handshakes, and where its threads' CPU went.

use std::time::Duration;

use crate::scenario::operations::Category;
use serde::Serialize;

/// What the server did, over all its workers.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ServerStats {
    pub workers: usize,
    /// Connections accepted.
    pub connections: u64,
    /// The most connections held at once.
    pub most_connections: u64,
    /// The most connections the server holds at once (its workers' bound).
    pub connection_limit: u64,
    /// Connections closed before their client sent a byte (it closed,
    /// stayed silent past the deadline, or the server stopped).
    pub silent_connections: u64,
    /// Requests answered with a page.
    pub requests: u64,
    /// Requests answered with an error status (unknown path, bad method,
    /// malformed or too long head).
    pub refused_requests: u64,
    /// Request heads not complete in time, answered 408.
    pub timed_out_requests: u64,
    /// Handshakes completed, and how many of them resumed a session.
    pub handshakes: u64,
    pub resumed: u64,
    /// Handshakes that failed or were not complete in time.
    pub failed_handshakes: u64,
    /// The first failed handshake's message.
    pub first_failure: Option<String>,
    /// Page bytes sent.
    pub body_bytes: u64,
    /// Every worker thread's CPU time, from its start to its end.
    pub cpu_ns: u64,
    /// Wall time in tlslab's HTTP code: reading the request head out of
    /// what TLS handed over, parsing it, finding the page, building the
    /// response head; over HTTP/2, every call into nghttp2 (framing, HPACK,
    /// copying the page into DATA frames).
    pub http_ns: u64,
    /// Wall time inside the TLS library's own calls (socket I/O not
    /// included), when the backend can tell (rustls).
    pub library_ns: Option<u64>,
    /// Counted crypto per category on the server side (instrumented rustls).
    pub counted_ns: Option<Vec<(Category, u64)>>,
    /// From the start of the server to its stop.
    pub elapsed: Duration,
}

/// One share of the server's CPU.
#[derive(Debug, Clone, Serialize)]
pub struct Share {
    pub name: String,
    pub ns: u64,
}

impl ServerStats {
    /// Counts a failed handshake, keeping the first failure's message.
    pub(super) fn fail_handshake(&mut self, message: String) {
        self.failed_handshakes += 1;
        self.first_failure.get_or_insert(message);
    }

    pub(super) fn add(&mut self, other: &ServerStats) {
        self.connections += other.connections;
        self.silent_connections += other.silent_connections;
        self.requests += other.requests;
        self.refused_requests += other.refused_requests;
        self.timed_out_requests += other.timed_out_requests;
        self.handshakes += other.handshakes;
        self.resumed += other.resumed;
        self.failed_handshakes += other.failed_handshakes;
        if self.first_failure.is_none() {
            self.first_failure.clone_from(&other.first_failure);
        }
        self.body_bytes += other.body_bytes;
        self.cpu_ns += other.cpu_ns;
        self.http_ns += other.http_ns;
        self.library_ns = match (self.library_ns, other.library_ns) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        self.counted_ns = match (self.counted_ns.take(), &other.counted_ns) {
            (None, None) => None,
            (mine, theirs) => {
                let mut sum = mine.unwrap_or_default();
                for (category, ns) in theirs.iter().flatten() {
                    match sum.iter_mut().find(|(c, _)| c == category) {
                        Some((_, total)) => *total += ns,
                        None => sum.push((*category, *ns)),
                    }
                }
                Some(sum)
            }
        };
    }

    /// Where the server's CPU went, when the crypto was counted: each
    /// counted category, the rest of the TLS library's calls, HTTP, and the
    /// rest (the kernel's socket work, accepting, the event loop).
    /// The counted categories and the library's calls are wall time inside
    /// calls, the total is the threads' CPU time: a share can only be too
    /// large if a thread was descheduled inside a call. Returns None
    /// unless the crypto was counted.
    pub fn breakdown(&self) -> Option<Vec<Share>> {
        let counted = self.counted_ns.as_ref()?;
        let mut shares: Vec<Share> = Category::ALL
            .iter()
            .map(|category| Share {
                name: category.name().to_string(),
                ns: counted
                    .iter()
                    .find(|(c, _)| c == category)
                    .map_or(0, |(_, ns)| *ns),
            })
            .collect();
        let crypto_ns: u64 = shares.iter().map(|s| s.ns).sum();
        let library_ns = self.library_ns.unwrap_or(crypto_ns);
        shares.push(Share {
            name: "rest of TLS".to_string(),
            ns: library_ns.saturating_sub(crypto_ns),
        });
        shares.push(Share {
            name: "HTTP".to_string(),
            ns: self.http_ns,
        });
        let accounted = library_ns.max(crypto_ns) + self.http_ns;
        shares.push(Share {
            name: "rest (kernel, I/O, event loop)".to_string(),
            ns: self.cpu_ns.saturating_sub(accounted),
        });
        Some(shares)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_breakdown_adds_up_to_the_cpu_time() {
        let stats = ServerStats {
            cpu_ns: 1_000,
            http_ns: 100,
            library_ns: Some(600),
            counted_ns: Some(vec![(Category::KeyExchange, 300), (Category::Signing, 200)]),
            ..ServerStats::default()
        };
        let shares = stats.breakdown().unwrap();
        let total: u64 = shares.iter().map(|s| s.ns).sum();
        assert_eq!(total, 1_000);
        let rest_of_tls = shares.iter().find(|s| s.name == "rest of TLS").unwrap();
        assert_eq!(rest_of_tls.ns, 100);
        assert!(ServerStats::default().breakdown().is_none());
    }
}
