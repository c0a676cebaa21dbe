//! 0-RTT inside QUIC handshakes on quinn (`--resumption 0rtt`): the
//! client, resuming with a ticket that allows early data, writes a small
//! request on a unidirectional stream as it opens its connection, so the
//! request leaves in 0-RTT packets beside its Initial; the server reads
//! the whole request before its handshake is done. Both are inside the
//! measured handshake, so the sample pays for 0-RTT's keys, packets and
//! stream. A request the server did not read under 0-RTT (rejected early
//! data: quinn then drops the stream) leaves the sample unverified, never
//! a quiet resumed handshake.

use anyhow::{anyhow, bail, Result};
use quinn_proto::{Connection, Dir, ReadError, StreamId};

use crate::scenario::{HandshakeScenario, TlsVersion};

/// The request a 0-RTT handshake carries: 32 bytes, about a short HTTP
/// request line.
pub(super) const REQUEST: &[u8; 32] = b"GET /index.html tlslab 0-RTT....";

/// Why the rustls backends cannot run a 0-RTT scenario they otherwise
/// declare, or `None`.
pub(super) fn unsupported_reason(scenario: &HandshakeScenario) -> Option<String> {
    (scenario.resumption.sends_early_data() && scenario.version != TlsVersion::Quic).then(|| {
        "0-RTT over TLS 1.3 is not built on rustls yet (rustls offers early data; \
         tlslab's TLS driver does not write it): 0-RTT runs on QUIC"
            .to_string()
    })
}

/// What one side of a QUIC handshake does with the 0-RTT request.
#[derive(Debug, Default)]
pub(super) enum EarlyRequest {
    /// A handshake without early data.
    #[default]
    None,
    /// The client: writes the request under 0-RTT keys as it connects.
    Send,
    /// The server: reads the request as it arrives.
    Receive(Received),
}

/// How much of the request the server has read, and when.
#[derive(Debug, Default)]
pub(super) struct Received {
    stream: Option<StreamId>,
    bytes: usize,
    /// True once the stream ended (the request is whole).
    finished: bool,
    /// True if and only if the request was whole while the server was
    /// still handshaking: it came in 0-RTT packets (quinn reads no 1-RTT
    /// packet before its handshake is done).
    in_zero_rtt: bool,
}

impl EarlyRequest {
    /// The client's part (`Send`) or the server's (`Receive`) in a
    /// scenario that sends early data, else `None`.
    pub(super) fn for_side(scenario_sends_early_data: bool, client: bool) -> Self {
        match (scenario_sends_early_data, client) {
            (false, _) => EarlyRequest::None,
            (true, true) => EarlyRequest::Send,
            (true, false) => EarlyRequest::Receive(Received::default()),
        }
    }

    /// The client writes the request on a new stream of `connection`, just
    /// opened: it leaves in 0-RTT packets. Nothing without 0-RTT keys (the
    /// first, full handshake that fetches the ticket; a ticket that allows
    /// no early data): the sample then says no early data was accepted,
    /// which its verification refuses.
    pub(super) fn send(&self, connection: &mut Connection) -> Result<()> {
        if !matches!(self, EarlyRequest::Send) || !connection.has_0rtt() {
            return Ok(());
        }
        let stream = connection
            .streams()
            .open(Dir::Uni)
            .ok_or_else(|| anyhow!("the client could not open a stream in 0-RTT"))?;
        let mut sending = connection.send_stream(stream);
        let written = sending
            .write(REQUEST)
            .map_err(|error| anyhow!("writing the 0-RTT request: {error}"))?;
        if written != REQUEST.len() {
            bail!("the 0-RTT stream took {written} of {} bytes", REQUEST.len());
        }
        sending
            .finish()
            .map_err(|error| anyhow!("ending the 0-RTT request: {error}"))
    }

    /// The server reads what has arrived of the request on `connection`.
    pub(super) fn receive(&mut self, connection: &mut Connection) -> Result<()> {
        let EarlyRequest::Receive(received) = self else {
            return Ok(());
        };
        if received.finished {
            return Ok(());
        }
        if received.stream.is_none() {
            received.stream = connection.streams().accept(Dir::Uni);
        }
        let Some(stream) = received.stream else {
            return Ok(());
        };
        let mut receiving = connection.recv_stream(stream);
        let mut chunks = receiving
            .read(true)
            .map_err(|error| anyhow!("reading the 0-RTT request: {error}"))?;
        let outcome = loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => received.bytes += chunk.bytes.len(),
                Ok(None) => break Ok(true),
                Err(ReadError::Blocked) => break Ok(false),
                Err(error) => break Err(anyhow!("reading the 0-RTT request: {error}")),
            }
        };
        let _ = chunks.finalize();
        if outcome? {
            received.finished = true;
            received.in_zero_rtt = connection.is_handshaking();
            if received.bytes != REQUEST.len() {
                bail!(
                    "the 0-RTT request was {} bytes, {} were sent",
                    received.bytes,
                    REQUEST.len()
                );
            }
        }
        Ok(())
    }

    /// True if and only if this side's part is done: nothing to do, the
    /// request sent, or the whole request read.
    pub(super) fn done(&self) -> bool {
        match self {
            EarlyRequest::None | EarlyRequest::Send => true,
            EarlyRequest::Receive(received) => received.finished,
        }
    }

    /// True if and only if the server read the whole request in 0-RTT
    /// packets, before its handshake was done.
    pub(super) fn read_in_zero_rtt(&self) -> bool {
        matches!(self, EarlyRequest::Receive(received) if received.in_zero_rtt)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::quic::QuicHandshaker;
    use super::super::{Provider, RustlsBackend};
    use crate::backend::Handshaker;
    use crate::certs::CertCache;
    use crate::measure::verify;
    use crate::scenario::{CertKind, Group, HandshakeScenario, Resumption, TlsVersion, Transport};

    /// A server that resumes the client's session but rejects its early
    /// data: quinn drops the 0-RTT request, and the sample, resumed all
    /// the same, fails its verification instead of passing for 0-RTT,
    /// over memory and over UDP alike.
    #[test]
    fn a_rejected_zero_rtt_handshake_is_not_measured_as_one() {
        let dir = tempfile::tempdir().unwrap();
        let credentials = CertCache::new(dir.path())
            .get(CertKind::EcdsaP256, 3)
            .unwrap();
        for transport in [Transport::Memory, Transport::Udp] {
            rejected_zero_rtt_fails_its_verification(transport, &credentials);
        }
    }

    /// Two 0-RTT handshakes over `transport` (a ticket, then early data
    /// accepted), then one against a server that refuses early data.
    fn rejected_zero_rtt_fails_its_verification(
        transport: Transport,
        credentials: &crate::certs::Credentials,
    ) {
        let mut scenario =
            HandshakeScenario::full(TlsVersion::Quic, Group::X25519, CertKind::EcdsaP256);
        scenario.resumption = Resumption::ZeroRtt;
        scenario.transport = transport;
        let backend = RustlsBackend::new(Provider::Ring);
        let tls = backend.configure(&scenario, credentials).unwrap();
        let handshaker = |server| {
            let mut handshaker = QuicHandshaker::new(
                Provider::Ring,
                Arc::clone(&tls.client),
                server,
                Arc::clone(&tls.server_scheme),
                scenario.mtu_bytes.unwrap(),
                scenario.transport,
            )
            .unwrap();
            handshaker.resumes = true;
            handshaker.early_data = true;
            handshaker
        };
        let mut accepting = handshaker(Arc::clone(&tls.server));
        // The first handshake fetches a ticket; the next one uses it.
        accepting.handshake().unwrap();
        let accepted = accepting.handshake().unwrap().negotiated;
        verify::check(&scenario, &accepted, true).unwrap();

        // The same session cache behind a server that takes no early data.
        let mut refusing = (*tls.server).clone();
        refusing.max_early_data_size = 0;
        accepting.server = handshaker(Arc::new(refusing)).server;
        let rejected = accepting.handshake().unwrap().negotiated;
        assert!(rejected.resumed, "{transport:?}: {rejected:?}");
        assert!(!rejected.early_data, "{transport:?}: {rejected:?}");
        let mismatch = verify::check(&scenario, &rejected, true).unwrap_err();
        assert_eq!(mismatch.what, "early data");
    }
}
