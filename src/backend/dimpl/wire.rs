//! What a DTLS server said in the clear, read off the datagrams it sent:
//! the ServerHello (suite, the version in DTLS 1.3's `supported_versions`,
//! the group of DTLS 1.3's key share) and DTLS 1.2's ServerKeyExchange
//! (group and signature scheme). dimpl reports only the version it
//! negotiated, so the rest of every handshake is checked against the wire.
//! Handshake messages may come in fragments (a small MTU) and twice
//! (retransmissions): they are put back together before they are read.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};

/// A DTLSPlaintext record header: type, version, epoch, sequence number, length.
const RECORD_HEADER_BYTES: usize = 13;
/// A DTLS handshake header: type, length, message_seq, fragment offset and length.
const HANDSHAKE_HEADER_BYTES: usize = 12;
const CONTENT_HANDSHAKE: u8 = 22;
const SERVER_HELLO: u8 = 2;
const SERVER_KEY_EXCHANGE: u8 = 12;
const EXTENSION_SUPPORTED_VERSIONS: u16 = 0x002b;
const EXTENSION_KEY_SHARE: u16 = 0x0033;
/// The random of a HelloRetryRequest, which is a ServerHello (RFC 8446 §4.1.3).
const HELLO_RETRY_REQUEST_RANDOM: [u8; 32] = [
    0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
    0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c,
];

/// The wire codes a server chose, as far as they travel in the clear.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ServerChoices {
    /// The version: `supported_versions` if present, else the legacy field.
    pub version: Option<u16>,
    pub suite: Option<u16>,
    /// The named group of the key share (DTLS 1.3) or of the
    /// ServerKeyExchange (DTLS 1.2).
    pub group: Option<u16>,
    /// The ServerKeyExchange's signature scheme (DTLS 1.2 only: DTLS 1.3
    /// sends its CertificateVerify encrypted).
    pub signature: Option<u16>,
}

/// A handshake message being put back together from its fragments.
struct Partial {
    body: Vec<u8>,
    received: Vec<bool>,
}

impl Partial {
    fn is_complete(&self) -> bool {
        self.received.iter().all(|byte| *byte)
    }
}

/// Reads what the server chose from the datagrams it sent, in order.
pub fn server_choices(datagrams: &[Vec<u8>]) -> Result<ServerChoices> {
    // Keyed by (message_seq, type): retransmissions land on the same entry.
    let mut messages: BTreeMap<(u16, u8), Partial> = BTreeMap::new();
    for datagram in datagrams {
        for record in plaintext_handshake_records(datagram)? {
            collect_fragments(record, &mut messages)?;
        }
    }
    let mut choices = ServerChoices::default();
    for ((_, kind), message) in &messages {
        if !message.is_complete() {
            continue;
        }
        match *kind {
            SERVER_HELLO => read_server_hello(&message.body, &mut choices)
                .context("reading the server's ServerHello")?,
            SERVER_KEY_EXCHANGE => read_server_key_exchange(&message.body, &mut choices)
                .context("reading the server's ServerKeyExchange")?,
            _ => {}
        }
    }
    Ok(choices)
}

/// The bodies of the epoch-0 handshake records in a datagram. DTLS 1.3's
/// encrypted records (the unified header, first bits 001) are skipped.
fn plaintext_handshake_records(datagram: &[u8]) -> Result<Vec<&[u8]>> {
    let mut records = Vec::new();
    let mut rest = datagram;
    while !rest.is_empty() {
        let first = rest[0];
        if first & 0xe0 == 0x20 {
            // DTLSCiphertext: flags C (connection id), S (16-bit sequence), L (length).
            if first & 0x10 != 0 {
                break; // a connection id of unknown length: nothing plain follows
            }
            let header = 1 + if first & 0x08 != 0 { 2 } else { 1 };
            if first & 0x04 == 0 {
                break; // no length: the record fills the datagram
            }
            let length = read_u16(rest, header)? as usize;
            rest = rest
                .get(header + 2 + length..)
                .context("truncated record")?;
            continue;
        }
        if rest.len() < RECORD_HEADER_BYTES {
            bail!("a {}-byte fragment of a record header", rest.len());
        }
        let epoch = read_u16(rest, 3)?;
        let length = read_u16(rest, 11)? as usize;
        let body = rest
            .get(RECORD_HEADER_BYTES..RECORD_HEADER_BYTES + length)
            .context("truncated record")?;
        if first == CONTENT_HANDSHAKE && epoch == 0 {
            records.push(body);
        }
        rest = &rest[RECORD_HEADER_BYTES + length..];
    }
    Ok(records)
}

fn collect_fragments(mut record: &[u8], messages: &mut BTreeMap<(u16, u8), Partial>) -> Result<()> {
    while record.len() >= HANDSHAKE_HEADER_BYTES {
        let kind = record[0];
        let length = read_u24(record, 1)?;
        let sequence = read_u16(record, 4)?;
        let offset = read_u24(record, 6)?;
        let fragment_length = read_u24(record, 9)?;
        let fragment = record
            .get(HANDSHAKE_HEADER_BYTES..HANDSHAKE_HEADER_BYTES + fragment_length)
            .context("truncated handshake fragment")?;
        if offset + fragment_length > length {
            bail!("a handshake fragment reaches past its message");
        }
        let message = messages.entry((sequence, kind)).or_insert_with(|| Partial {
            body: vec![0; length],
            received: vec![false; length],
        });
        if message.body.len() != length {
            bail!("two lengths for handshake message {sequence}");
        }
        message.body[offset..offset + fragment_length].copy_from_slice(fragment);
        message.received[offset..offset + fragment_length].fill(true);
        record = &record[HANDSHAKE_HEADER_BYTES + fragment_length..];
    }
    Ok(())
}

fn read_server_hello(body: &[u8], choices: &mut ServerChoices) -> Result<()> {
    let legacy_version = read_u16(body, 0)?;
    if body.get(2..34) == Some(&HELLO_RETRY_REQUEST_RANDOM[..]) {
        return Ok(()); // a HelloRetryRequest chooses nothing yet
    }
    let session_id_length = usize::from(*body.get(34).context("truncated")?);
    let mut at = 35 + session_id_length;
    choices.suite = Some(read_u16(body, at)?);
    at += 3; // suite and compression method
    choices.version = Some(legacy_version);
    if at == body.len() {
        return Ok(()); // no extensions
    }
    let end = at + 2 + read_u16(body, at)? as usize;
    at += 2;
    while at < end {
        let kind = read_u16(body, at)?;
        let length = read_u16(body, at + 2)? as usize;
        let data = body.get(at + 4..at + 4 + length).context("truncated")?;
        match kind {
            EXTENSION_SUPPORTED_VERSIONS => choices.version = Some(read_u16(data, 0)?),
            EXTENSION_KEY_SHARE => choices.group = Some(read_u16(data, 0)?),
            _ => {}
        }
        at += 4 + length;
    }
    Ok(())
}

fn read_server_key_exchange(body: &[u8], choices: &mut ServerChoices) -> Result<()> {
    const NAMED_CURVE: u8 = 3;
    if body.first() != Some(&NAMED_CURVE) {
        bail!("not an ECDHE key exchange with a named curve");
    }
    choices.group = Some(read_u16(body, 1)?);
    let point_length = usize::from(*body.get(3).context("truncated")?);
    choices.signature = Some(read_u16(body, 4 + point_length)?);
    Ok(())
}

fn read_u16(bytes: &[u8], at: usize) -> Result<u16> {
    let pair = bytes.get(at..at + 2).context("truncated")?;
    Ok(u16::from_be_bytes([pair[0], pair[1]]))
}

fn read_u24(bytes: &[u8], at: usize) -> Result<usize> {
    let triple = bytes.get(at..at + 3).context("truncated")?;
    Ok(usize::from(triple[0]) << 16 | usize::from(triple[1]) << 8 | usize::from(triple[2]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(epoch: u8, body: &[u8]) -> Vec<u8> {
        let mut bytes = vec![CONTENT_HANDSHAKE, 0xfe, 0xfd, 0, epoch, 0, 0, 0, 0, 0, 0];
        bytes.extend((body.len() as u16).to_be_bytes());
        bytes.extend(body);
        bytes
    }

    fn fragment(kind: u8, sequence: u16, message: &[u8], range: std::ops::Range<usize>) -> Vec<u8> {
        let mut bytes = vec![kind];
        bytes.extend(&(message.len() as u32).to_be_bytes()[1..]);
        bytes.extend(sequence.to_be_bytes());
        bytes.extend(&(range.start as u32).to_be_bytes()[1..]);
        bytes.extend(&(range.len() as u32).to_be_bytes()[1..]);
        bytes.extend(&message[range]);
        bytes
    }

    fn server_hello(random: [u8; 32], extensions: &[u8]) -> Vec<u8> {
        let mut body = vec![0xfe, 0xfd];
        body.extend(random);
        body.extend([0, 0x13, 0x01, 0]); // no session id, TLS_AES_128_GCM_SHA256, null
        body.extend((extensions.len() as u16).to_be_bytes());
        body.extend(extensions);
        body
    }

    #[test]
    fn a_fragmented_server_hello_after_a_retry_request_is_read() {
        let extensions = [
            0x00, 0x2b, 0, 2, 0xfe, 0xfc, // supported_versions: DTLS 1.3
            0x00, 0x33, 0, 6, 0, 23, 0, 2, 9, 9, // key_share: secp256r1
        ];
        let retry = server_hello(HELLO_RETRY_REQUEST_RANDOM, &[0x00, 0x33, 0, 2, 0, 29]);
        let hello = server_hello([7; 32], &extensions);
        let datagrams = vec![
            record(0, &fragment(SERVER_HELLO, 0, &retry, 0..retry.len())),
            record(0, &fragment(SERVER_HELLO, 1, &hello, 0..20)),
            // An encrypted DTLS 1.3 record (unified header with a length) follows.
            [
                record(0, &fragment(SERVER_HELLO, 1, &hello, 20..hello.len())),
                vec![0x2c, 0x01, 0x00, 0x00, 0x02, 0xaa, 0xbb],
            ]
            .concat(),
        ];
        let choices = server_choices(&datagrams).unwrap();
        assert_eq!(
            choices,
            ServerChoices {
                version: Some(0xfefc),
                suite: Some(0x1301),
                group: Some(23),
                signature: None,
            }
        );
    }

    #[test]
    fn a_server_key_exchange_gives_group_and_signature() {
        let exchange = [3, 0, 29, 2, 0xaa, 0xbb, 0x04, 0x03, 0, 1, 0xcc];
        let datagrams = vec![record(
            0,
            &fragment(SERVER_KEY_EXCHANGE, 2, &exchange, 0..exchange.len()),
        )];
        let choices = server_choices(&datagrams).unwrap();
        assert_eq!(choices.group, Some(29));
        assert_eq!(choices.signature, Some(0x0403));
        // Half a message is not read.
        let half = vec![record(
            0,
            &fragment(SERVER_KEY_EXCHANGE, 2, &exchange, 0..5),
        )];
        assert_eq!(server_choices(&half).unwrap(), ServerChoices::default());
    }
}
