//! The no-crypto pair of `bulk`: the same application writes through the
//! same memory pipe with the copies a record layer makes (plaintext into a
//! record buffer behind a 5-byte header, the record onto the pipe; the
//! record off the pipe, its body out to the reader), and no cryptography.
//! Its cost is the harness and transport share of every bulk row.

use std::io::{Read, Write};

use anyhow::{bail, Context, Result};

use super::{BulkPair, Negotiated};
use crate::transport::memory::{Pipe, PipeEnd};

/// The largest record body, as in TLS.
pub const MAX_RECORD_BYTES: usize = 16_384;
const HEADER_BYTES: usize = 5;

/// Records without protection between a sender and a receiver.
pub struct PlainPair {
    pipe: Pipe,
    sender_end: PipeEnd,
    receiver_end: PipeEnd,
    /// The record being written.
    record: Vec<u8>,
    /// The body of the record being read, and how much of it was handed out.
    incoming: Vec<u8>,
    handed_out: usize,
    /// XORed into every byte on the pipe and back out (the mock's stand-in
    /// for a cipher, so a pair that skips a step fails the content check).
    mask: u8,
    fixed_ns_per_byte: Option<(f64, f64)>,
}

impl Default for PlainPair {
    fn default() -> Self {
        Self::new()
    }
}

impl PlainPair {
    pub fn new() -> Self {
        let pipe = Pipe::default();
        Self {
            sender_end: pipe.client_end(),
            receiver_end: pipe.server_end(),
            pipe,
            record: Vec::with_capacity(HEADER_BYTES + MAX_RECORD_BYTES),
            incoming: Vec::with_capacity(MAX_RECORD_BYTES),
            handed_out: 0,
            mask: 0,
            fixed_ns_per_byte: None,
        }
    }

    /// A pair that scrambles the bytes on the pipe with `mask` and reports
    /// fixed costs per byte instead of being timed (the mock backend's).
    pub fn fake(mask: u8, sender_ns_per_byte: f64, receiver_ns_per_byte: f64) -> Self {
        Self {
            mask,
            fixed_ns_per_byte: Some((sender_ns_per_byte, receiver_ns_per_byte)),
            ..Self::new()
        }
    }
}

impl BulkPair for PlainPair {
    fn negotiated(&self) -> Option<&Negotiated> {
        None
    }

    fn send(&mut self, data: &[u8]) -> Result<()> {
        for body in data.chunks(MAX_RECORD_BYTES) {
            let length = body.len() as u16;
            self.record.clear();
            self.record
                .extend_from_slice(&[23, 3, 3, (length >> 8) as u8, length as u8]);
            self.record.extend_from_slice(body);
            if self.mask != 0 {
                for byte in &mut self.record[HEADER_BYTES..] {
                    *byte ^= self.mask;
                }
            }
            self.sender_end.write_all(&self.record)?;
        }
        Ok(())
    }

    fn receive(&mut self, out: &mut [u8]) -> Result<usize> {
        let mut filled = 0;
        loop {
            let waiting = &self.incoming[self.handed_out..];
            let take = waiting.len().min(out.len() - filled);
            out[filled..filled + take].copy_from_slice(&waiting[..take]);
            if self.mask != 0 {
                for byte in &mut out[filled..filled + take] {
                    *byte ^= self.mask;
                }
            }
            self.handed_out += take;
            filled += take;
            if filled == out.len() || !self.pipe.pending_for_server() {
                return Ok(filled);
            }
            let mut header = [0u8; HEADER_BYTES];
            self.receiver_end
                .read_exact(&mut header)
                .context("a truncated record header")?;
            if header[0] != 23 {
                bail!("a record of type {} (expected application data)", header[0]);
            }
            let length = usize::from(header[3]) << 8 | usize::from(header[4]);
            self.incoming.resize(length, 0);
            self.receiver_end
                .read_exact(&mut self.incoming)
                .context("a truncated record")?;
            self.handed_out = 0;
        }
    }

    fn fixed_ns_per_byte(&self) -> Option<(f64, f64)> {
        self.fixed_ns_per_byte
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_come_out_as_they_went_in_across_record_and_buffer_edges() {
        for mask in [0, 0x5a] {
            let mut pair = PlainPair::fake(mask, 1.0, 1.0);
            let data: Vec<u8> = (0..40_000u32).map(|i| (i * 7 % 251) as u8).collect();
            pair.send(&data[..30_000]).unwrap();
            pair.send(&data[30_000..]).unwrap();
            let mut out = vec![0u8; data.len()];
            let first = pair.receive(&mut out[..1000]).unwrap();
            let rest = pair.receive(&mut out[first..]).unwrap();
            assert_eq!(first + rest, data.len());
            assert_eq!(out, data);
            assert_eq!(pair.receive(&mut out).unwrap(), 0);
        }
    }
}
