//! WireGuard's connection set-up in process: one Noise IK handshake
//! between two fresh boringtun peers — the initiation, the response, the
//! initiator's keepalive and a first data packet, which the responder
//! must decrypt to what was sent before the session counts as
//! established. Each boringtun call is one side's step, timed on the
//! thread's CPU clock and counted as that side's turn
//! ([`crate::backend::turns`]: the initiator is the client). The
//! ephemeral keys are made inside those calls, as every handshake makes
//! them; the static keys and each peer's precomputed static-static
//! Diffie-Hellman (`Tunn::new`) are made beforehand, untimed, as a
//! configured peer has them before it connects. Under valgrind
//! (`--measure instructions`) the same steps are counted per side.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{bail, Result};
use boringtun::noise::TunnResult;

use super::{ip_packet, unexpected, Peers, MIN_DATAGRAM_BUFFER_BYTES};
use crate::backend::thread_cpu_ns;
use crate::backend::turns::{side_begins, side_ends};
use crate::measure::Outcome;
use crate::scenario::tunnel::Payload;
use crate::scenario::Side;
use crate::workload::tunnel::engine::CountedSample;
use crate::workload::tunnel::setup::{SetupOutcome, SetupProbe, SetupSample};

/// What one WireGuard set-up sample covers, for the table's notes.
pub const COVERS: &str = "in process: boringtun's calls of one Noise IK handshake (initiation; response; the initiator's keepalive and a first 64-byte data packet, decrypted and compared), each side on the thread's CPU clock; ephemeral keys made inside them, static keys and Tunn::new's static-static DH beforehand, untimed; bytes and messages are WireGuard's UDP payloads";

/// The first data packet's bytes (an IP packet).
const FIRST_DATA_BYTES: usize = 64;

/// The messages of a set-up, in the order they are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandshakeMessage {
    /// Initiator to responder, 148 bytes.
    Initiation,
    /// Responder to initiator, 92 bytes.
    Response,
    /// Initiator to responder: the empty data packet boringtun sends on
    /// the response, 32 bytes.
    Keepalive,
    /// Initiator to responder: the first packet the tunnel carries.
    FirstData,
}

/// Each side's CPU time over the steps of one set-up.
#[derive(Debug, Default)]
struct SideTimes {
    initiator_ns: u64,
    responder_ns: u64,
}

impl SideTimes {
    /// Runs one side's step, on its turn, and adds its CPU time to the side's.
    fn step<T>(&mut self, turn: Side, step: impl FnOnce() -> T) -> T {
        let start = thread_cpu_ns();
        side_begins(turn);
        let result = step();
        side_ends(turn);
        let spent = thread_cpu_ns().saturating_sub(start);
        match turn {
            Side::Client => self.initiator_ns += spent,
            Side::Server => self.responder_ns += spent,
        }
        result
    }
}

/// The datagram a step gave to send, copied out (as the network would
/// carry it), or the error that says what the step gave instead.
fn datagram(result: TunnResult<'_>, what: &str) -> Result<Vec<u8>> {
    match result {
        TunnResult::WriteToNetwork(message) => Ok(message.to_vec()),
        other => bail!("{what}: {}", unexpected(other)),
    }
}

/// Establishes the session between `peers` (configured, never connected):
/// the handshake and a first data packet, each side's steps timed, the
/// first packet checked after decryption. `tamper` flips one bit of that
/// message on its way, which must make the set-up fail.
pub(super) fn establish(
    peers: &mut Peers,
    tamper: Option<HandshakeMessage>,
) -> Result<SetupSample> {
    let first_data = ip_packet(Payload::Random.bytes(0, FIRST_DATA_BYTES));
    let mut buffer = vec![0u8; MIN_DATAGRAM_BUFFER_BYTES.max(FIRST_DATA_BYTES + 32)];
    let mut times = SideTimes::default();
    let deliver = |message: HandshakeMessage, mut datagram: Vec<u8>| {
        if tamper == Some(message) {
            let middle = datagram.len() / 2;
            datagram[middle] ^= 1;
        }
        datagram
    };
    let (sender, receiver) = (&mut peers.sender, &mut peers.receiver);
    let start = Instant::now();

    let initiation = times.step(Side::Client, || {
        datagram(
            sender.format_handshake_initiation(&mut buffer, false),
            "the initiation",
        )
    })?;
    let initiation = deliver(HandshakeMessage::Initiation, initiation);
    let response = times.step(Side::Server, || {
        datagram(
            receiver.decapsulate(None, &initiation, &mut buffer),
            "the response",
        )
    })?;
    let response = deliver(HandshakeMessage::Response, response);
    let (keepalive, data) = times.step(Side::Client, || -> Result<_> {
        let keepalive = datagram(
            sender.decapsulate(None, &response, &mut buffer),
            "the initiator's keepalive",
        )?;
        let data = datagram(
            sender.encapsulate(&first_data, &mut buffer),
            "the first data packet",
        )?;
        Ok((keepalive, data))
    })?;
    let keepalive = deliver(HandshakeMessage::Keepalive, keepalive);
    let data = deliver(HandshakeMessage::FirstData, data);
    times.step(Side::Server, || -> Result<()> {
        match receiver.decapsulate(None, &keepalive, &mut buffer) {
            TunnResult::Done => {}
            other => bail!(
                "the responder's answer to the keepalive: {}",
                unexpected(other)
            ),
        }
        match receiver.decapsulate(None, &data, &mut buffer) {
            TunnResult::WriteToTunnelV4(packet, _) if packet == first_data.as_slice() => Ok(()),
            TunnResult::WriteToTunnelV4(..) => {
                bail!("the first data packet decrypted to other bytes than were sent")
            }
            other => bail!("the first data packet: {}", unexpected(other)),
        }
    })?;
    let wall_ns = start.elapsed().as_nanos() as u64;
    Ok(SetupSample {
        initiator_cpu_ns: times.initiator_ns,
        responder_cpu_ns: times.responder_ns,
        wall_ns,
        bytes_to_responder: (initiation.len() + keepalive.len() + data.len()) as u64,
        bytes_to_initiator: response.len() as u64,
        messages_to_responder: 3,
        messages_to_initiator: 1,
    })
}

/// The counted set-up: fresh peers per sample (outside the turns, so not
/// counted), then [`establish`], after one uncounted set-up.
pub(super) fn prepare_counted() -> Result<CountedSample, SetupOutcome> {
    let set_up = || -> Result<(), String> {
        let mut peers = Peers::configured().map_err(|e| format!("{e:#}"))?;
        establish(&mut peers, None)
            .map(drop)
            .map_err(|e| format!("{e:#}"))
    };
    set_up().map_err(|reason| Outcome::Failed { reason })?;
    Ok(Box::new(set_up))
}

/// The set-up probe: fresh peers per sample (untimed), then [`establish`].
pub(super) fn prepare(interrupt: &AtomicBool) -> Result<SetupProbe<'_>, SetupOutcome> {
    // One set-up now: an engine that fails says so before sampling.
    let check = Peers::configured().and_then(|mut peers| establish(&mut peers, None));
    if let Err(error) = check {
        return Err(Outcome::Failed {
            reason: format!("{error:#}"),
        });
    }
    Ok(SetupProbe {
        covers: COVERS,
        probe: Box::new(move || {
            if interrupt.load(Ordering::Relaxed) {
                return Err("interrupted".to_string());
            }
            let mut peers = Peers::configured().map_err(|e| format!("{e:#}"))?;
            establish(&mut peers, None).map_err(|e| format!("{e:#}"))
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_up_times_both_sides_and_counts_wireguards_messages() {
        let mut peers = Peers::configured().unwrap();
        let sample = establish(&mut peers, None).unwrap();
        assert!(sample.initiator_cpu_ns > 0 && sample.responder_cpu_ns > 0);
        assert!(sample.wall_ns > 0);
        // Initiation 148, keepalive 32, data 64 + 32; response 92.
        assert_eq!(
            sample.bytes_to_responder,
            148 + 32 + FIRST_DATA_BYTES as u64 + 32
        );
        assert_eq!(sample.bytes_to_initiator, 92);
        assert_eq!(
            (sample.messages_to_responder, sample.messages_to_initiator),
            (3, 1)
        );
        // The session carries data on: the set-up left it established.
        let packet = ip_packet(Payload::Zero.bytes(1, 100));
        let mut sent = [0u8; 200];
        let mut received = [0u8; 200];
        let datagram = match peers.sender.encapsulate(&packet, &mut sent) {
            TunnResult::WriteToNetwork(d) => d.to_vec(),
            other => panic!("{}", unexpected(other)),
        };
        match peers.receiver.decapsulate(None, &datagram, &mut received) {
            TunnResult::WriteToTunnelV4(p, _) => assert_eq!(p, packet.as_slice()),
            other => panic!("{}", unexpected(other)),
        }
    }

    #[test]
    fn a_tampered_handshake_message_fails_the_set_up() {
        for message in [
            HandshakeMessage::Initiation,
            HandshakeMessage::Response,
            HandshakeMessage::Keepalive,
            HandshakeMessage::FirstData,
        ] {
            let mut peers = Peers::configured().unwrap();
            let error = establish(&mut peers, Some(message)).unwrap_err();
            let text = format!("{error:#}");
            assert!(
                text.contains("boringtun refused") || text.contains("boringtun gave"),
                "{message:?}: {text}"
            );
        }
    }
}
