//! A handshake on the wire: from a recording of the in-memory transport
//! ([`crate::transport::tap`]), the bytes and records each side sent, its
//! flights, the round trips until each side can send application data, the
//! TCP segments those flights take at the MSS or the DTLS datagrams they
//! took at the MTU, and how many extra records fragmenting at the MTU
//! cost. The same bytes cross a socket: a row over TCP or UDP is traced
//! over memory, its twin.

use serde::{Deserialize, Serialize};

use crate::transport::tap::{Recording, Side, TurnRecord, MSS_BYTES};

/// A row's handshake on the wire (see the module's documentation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Wire {
    /// Bytes each side sent (TLS or DTLS records, no TCP/UDP/IP headers).
    pub client_bytes: u64,
    pub server_bytes: u64,
    /// Records each side sent.
    pub client_records: u32,
    pub server_records: u32,
    /// Flights each side sent: its writes between two of the peer's.
    pub client_flights: u32,
    pub server_flights: u32,
    /// Round trips from the client's first byte until the client can send
    /// application data (DTLS's cookie exchange included, TCP's handshake
    /// not); `None` if the handshaker did not say when it was done.
    pub round_trips: Option<f64>,
    /// The same for the server, in halves (TLS 1.3: 1.5).
    pub server_round_trips: Option<f64>,
    /// Over a stream, TCP segments at [`MSS_BYTES`] per flight; over
    /// datagrams, the datagrams each side sent.
    pub client_packets: u32,
    pub server_packets: u32,
    /// True for DTLS (datagrams at the MTU), false for TLS (a stream).
    pub datagrams: bool,
    /// DTLS only: records beyond those the same handshake takes at the
    /// largest MTU, i.e. the extra pieces the MTU cut messages into.
    pub fragments: Option<u32>,
    /// Handshakes traced; the figures are those of the median in bytes.
    pub handshakes: u32,
    /// Largest minus smallest total bytes over the handshakes traced.
    pub bytes_spread: u64,
    /// The traced handshake's turns, for the network model.
    pub turns: Vec<TurnRecord>,
}

impl Wire {
    /// Both sides' bytes.
    pub fn total_bytes(&self) -> u64 {
        self.client_bytes + self.server_bytes
    }

    /// Both sides' records.
    pub fn records(&self) -> u32 {
        self.client_records + self.server_records
    }

    /// TCP segments at the MSS, both ways (`None` for DTLS).
    pub fn segments(&self) -> Option<u32> {
        (!self.datagrams).then_some(self.client_packets + self.server_packets)
    }

    /// Datagrams both ways (`None` for TLS).
    pub fn datagram_count(&self) -> Option<u32> {
        self.datagrams
            .then_some(self.client_packets + self.server_packets)
    }
}

/// The records in a TLS byte stream (5-byte headers: type, version, length).
pub fn tls_records(stream: &[u8]) -> u32 {
    let mut records = 0;
    let mut at = 0;
    while at + 5 <= stream.len() {
        let length = u16::from_be_bytes([stream[at + 3], stream[at + 4]]) as usize;
        at += 5 + length;
        records += 1;
    }
    records
}

/// The records in one DTLS datagram: DTLS 1.2 headers (13 bytes), and
/// DTLS 1.3's unified headers (first bits 001) with or without a length
/// (without one, the record fills the datagram).
pub fn dtls_records(datagram: &[u8]) -> u32 {
    let mut records = 0;
    let mut rest = datagram;
    while !rest.is_empty() {
        records += 1;
        let first = rest[0];
        if first & 0xe0 == 0x20 {
            let connection_id = if first & 0x10 != 0 { 1 } else { 0 };
            let header = 1 + connection_id + if first & 0x08 != 0 { 2 } else { 1 };
            if first & 0x04 == 0 || rest.len() < header + 2 {
                break;
            }
            let length = u16::from_be_bytes([rest[header], rest[header + 1]]) as usize;
            rest = rest.get(header + 2 + length..).unwrap_or_default();
            continue;
        }
        if rest.len() < 13 {
            break;
        }
        let length = u16::from_be_bytes([rest[11], rest[12]]) as usize;
        rest = rest.get(13 + length..).unwrap_or_default();
    }
    records
}

/// When each side was done, in round trips from the client's first byte:
/// each side keeps a clock in half round trips, a turn that reads bytes
/// written at half round trip t runs at t + 1 at the earliest, and what it
/// writes leaves then.
pub fn round_trips(turns: &[TurnRecord]) -> (Option<f64>, Option<f64>) {
    let mut now = [0u32; 2];
    let mut sent_at = vec![0u32; turns.len()];
    let mut done = [None, None];
    let index = |side: Side| usize::from(side == Side::Server);
    for (i, turn) in turns.iter().enumerate() {
        let side = index(turn.side);
        for &writer in &turn.read_from {
            now[side] = now[side].max(sent_at[writer] + 1);
        }
        sent_at[i] = now[side];
        if turn.done && done[side].is_none() {
            done[side] = Some(f64::from(now[side]) / 2.0);
        }
    }
    (done[0], done[1])
}

/// The flights in a recording: (side, each write's bytes) of the turns
/// between two of the peer's writing turns, in order.
pub fn flights(turns: &[TurnRecord]) -> Vec<(Side, Vec<usize>)> {
    let mut flights: Vec<(Side, Vec<usize>)> = Vec::new();
    for turn in turns.iter().filter(|t| !t.writes.is_empty()) {
        match flights.last_mut() {
            Some((side, writes)) if *side == turn.side => writes.extend(&turn.writes),
            _ => flights.push((turn.side, turn.writes.clone())),
        }
    }
    flights
}

/// The figures of one recorded handshake (no fragments: see [`trace_cell`]).
pub fn figures(recording: &Recording) -> Wire {
    let sent = |side: Side| -> u64 {
        recording
            .sent_by(side)
            .iter()
            .map(|write| write.len() as u64)
            .sum()
    };
    let records = |side: Side| -> u32 {
        let writes = recording.sent_by(side);
        if recording.datagrams {
            writes.iter().map(|d| dtls_records(d)).sum()
        } else {
            tls_records(&writes.concat())
        }
    };
    let flights = flights(&recording.turns);
    let count_flights = |side: Side| flights.iter().filter(|(s, _)| *s == side).count() as u32;
    let packets = |side: Side| -> u32 {
        if recording.datagrams {
            recording.sent_by(side).len() as u32
        } else {
            flights
                .iter()
                .filter(|(s, _)| *s == side)
                .map(|(_, writes)| writes.iter().sum::<usize>().div_ceil(MSS_BYTES) as u32)
                .sum()
        }
    };
    let (client_done, server_done) = round_trips(&recording.turns);
    Wire {
        client_bytes: sent(Side::Client),
        server_bytes: sent(Side::Server),
        client_records: records(Side::Client),
        server_records: records(Side::Server),
        client_flights: count_flights(Side::Client),
        server_flights: count_flights(Side::Server),
        round_trips: client_done,
        server_round_trips: server_done,
        client_packets: packets(Side::Client),
        server_packets: packets(Side::Server),
        datagrams: recording.datagrams,
        fragments: None,
        handshakes: 1,
        bytes_spread: 0,
        turns: recording.turns.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::tap::TurnRecord;

    fn turn(side: Side, writes: &[usize], read_from: &[usize], done: bool) -> TurnRecord {
        TurnRecord {
            side,
            ns: 1000,
            writes: writes.to_vec(),
            read_from: read_from.to_vec(),
            done,
        }
    }

    fn record(content: u8, body: usize) -> Vec<u8> {
        let mut record = vec![content, 3, 3];
        record.extend_from_slice(&(body as u16).to_be_bytes());
        record.resize(5 + body, 0);
        record
    }

    #[test]
    fn a_stream_counts_records_segments_and_round_trips() {
        // TLS 1.3: ClientHello; the server's flight of two records (4,000
        // bytes: three segments); the client's Finished.
        let client = [record(22, 300), record(23, 53)];
        let server = [record(22, 100), record(23, 3_890)];
        let recording = Recording {
            turns: vec![
                turn(Side::Client, &[305], &[], false),
                turn(Side::Server, &[105, 3_895], &[0], false),
                turn(Side::Client, &[58], &[1], true),
                turn(Side::Server, &[], &[2], true),
            ],
            sent: [client.to_vec(), server.to_vec()],
            datagrams: false,
        };
        let wire = figures(&recording);
        assert_eq!((wire.client_bytes, wire.server_bytes), (363, 4_000));
        assert_eq!((wire.client_records, wire.server_records), (2, 2));
        assert_eq!((wire.client_flights, wire.server_flights), (2, 1));
        assert_eq!(wire.round_trips, Some(1.0));
        assert_eq!(wire.server_round_trips, Some(1.5));
        assert_eq!(wire.segments(), Some(2 + 3));
        assert_eq!(wire.datagram_count(), None);
    }

    #[test]
    fn datagrams_count_records_under_both_dtls_headers() {
        // A DTLS 1.2 datagram with two records, one DTLS 1.3 datagram: a
        // plaintext record then a unified header with a length, then one
        // without (it fills the datagram).
        let mut dtls12 = vec![22u8, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2, 9, 9];
        dtls12.extend_from_slice(&[20, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1, 1]);
        assert_eq!(dtls_records(&dtls12), 2);
        let mut dtls13 = vec![22u8, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 7];
        dtls13.extend_from_slice(&[0x2c, 0, 1, 0, 2, 5, 5]);
        dtls13.extend_from_slice(&[0x28, 0, 2, 6, 6, 6]);
        assert_eq!(dtls_records(&dtls13), 3);
        // Cookie exchange: ClientHello, HelloVerifyRequest, ClientHello
        // again, the server's flight: the client is done after 3 round
        // trips in DTLS 1.2.
        let recording = Recording {
            turns: vec![
                turn(Side::Client, &[200], &[], false),
                turn(Side::Server, &[60], &[0], false),
                turn(Side::Client, &[220], &[1], false),
                turn(Side::Server, &[1200, 900], &[2], false),
                turn(Side::Client, &[300], &[3], false),
                turn(Side::Server, &[60], &[4], true),
                turn(Side::Client, &[], &[5], true),
            ],
            sent: [
                vec![dtls12.clone(), dtls12.clone(), dtls13.clone()],
                vec![dtls12.clone(), dtls13.clone(), dtls12.clone(), dtls12],
            ],
            datagrams: true,
        };
        let wire = figures(&recording);
        assert_eq!(wire.datagram_count(), Some(7));
        assert_eq!(wire.segments(), None);
        assert_eq!(wire.round_trips, Some(3.0));
        assert_eq!(wire.server_round_trips, Some(2.5));
        assert_eq!((wire.client_records, wire.server_records), (7, 9));
    }
}
