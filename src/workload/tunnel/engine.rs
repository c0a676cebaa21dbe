//! The one trait a VPN engine implements, so `tlslab tunnel` runs every
//! engine the same way: whether it can run here ([`TunnelEngine::preflight`]),
//! which values of the tunnel's axes it runs and why not the others,
//! whether its rows can be counted under valgrind and why not, and what
//! its rows share in one run (an [`EngineRig`]: nothing in process, two
//! network namespaces and a key for OpenVPN) whose
//! [`EngineRig::prepare`] readies one row and returns its sample; and,
//! optionally, what establishing one of its tunnels costs
//! ([`TunnelEngine::prepare_setup`], `tunnel --setup`); and whether its
//! cryptography's CPU features can be masked ([`TunnelEngine::cpu_masking`],
//! `tunnel --cpu-features generic`).
//!
//! The axes (cipher, digest, compression, payload, packet size) are
//! OpenVPN's. An engine whose cryptography is fixed (WireGuard:
//! ChaCha20-Poly1305, no HMAC digest, no compression) answers
//! [`TunnelEngine::cipher_unsupported`] and its two siblings for every
//! value but its own: the matrix then holds one supported row per payload
//! and size (`chacha20-poly1305`, digest `none` as for every AEAD row,
//! compression `none`), and every other cell is a row that says why.

use std::sync::atomic::AtomicBool;

use anyhow::Result;

use super::setup::{SetupKind, SetupOutcome, SetupProbe};
use super::{TunnelOutcome, TunnelSample};
use crate::backend::{CpuMasking, LibraryInfo};
use crate::measure::Probe;
use crate::registry::Descriptor;
use crate::scenario::names::Named;
use crate::scenario::tunnel::{Cipher, Compression, Digest, EngineId, TunnelScenario};

/// What tlslab knows of an engine before it runs anything: the
/// registry's one shape ([`Descriptor`]) with an engine's details.
pub type EngineDescriptor = Descriptor<EngineId, EngineDetails>;

/// What only an engine's descriptor holds: how to open it (the engine
/// itself is a value without state, the trait's implementation).
pub struct EngineDetails {
    /// What it is, in a few words, for `tunnel --engine`'s help ("a real
    /// OpenVPN static-key tunnel between network namespaces; root only").
    pub about: &'static str,
    pub open: fn() -> &'static dyn TunnelEngine,
}

/// What every engine's run is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineOptions {
    /// Bytes one transfer carries each way, for engines whose sample is a
    /// transfer through a real tunnel (`--transfer-mb`).
    pub transfer_bytes: u64,
}

/// One counted sample of a row: exactly the same work every time, each
/// side's part between the turns of [`crate::backend::turns`].
pub type CountedSample = Box<dyn FnMut() -> Result<(), String>>;

/// A VPN engine: what runs a tunnel row's packets.
pub trait TunnelEngine: Sync {
    /// Which engine this is (its name on the command line and in the store).
    fn id(&self) -> EngineId;

    /// Whether the engine can run on this machine: what does its work
    /// (library or program and version, for the run's provenance), or
    /// everything that is missing (root, programs, devices), each with how
    /// to get it.
    fn preflight(&self) -> Result<LibraryInfo, String>;

    /// Why the engine cannot run this cipher, if it cannot.
    fn cipher_unsupported(&self, _cipher: Cipher) -> Option<String> {
        None
    }

    /// Why the engine cannot authenticate with this digest, if it cannot
    /// (only asked for rows whose cipher is not an AEAD: an AEAD row's
    /// digest is `none`).
    fn digest_unsupported(&self, _digest: Digest) -> Option<String> {
        None
    }

    /// Why the engine cannot compress with this compression, if it cannot.
    fn compression_unsupported(&self, _compression: Compression) -> Option<String> {
        None
    }

    /// Why the engine cannot run a row whose axis values it each supports
    /// (a combination, a payload or a packet size), if it cannot. Asked of
    /// no-tunnel rows too.
    fn row_unsupported(&self, _scenario: &TunnelScenario) -> Option<String> {
        None
    }

    /// Why the engine cannot run a row, if it cannot: the first axis it
    /// refuses, else the row as a whole. The no-tunnel row is only asked
    /// of [`Self::row_unsupported`].
    fn unsupported_reason(&self, scenario: &TunnelScenario) -> Option<String> {
        if scenario.baseline {
            return self.row_unsupported(scenario);
        }
        self.cipher_unsupported(scenario.cipher)
            .or_else(|| {
                let authenticates =
                    scenario.cipher.mode() != crate::scenario::tunnel::CipherMode::Aead;
                authenticates
                    .then(|| self.digest_unsupported(scenario.digest))
                    .flatten()
            })
            .or_else(|| self.compression_unsupported(scenario.compression))
            .or_else(|| self.row_unsupported(scenario))
    }

    /// Why the engine's rows cannot be counted under valgrind
    /// (`--measure instructions`), if they cannot: its descriptor's.
    fn uncountable(&self) -> Option<&'static str> {
        self.id().descriptor().uncountable
    }

    /// Whether `--cpu-features generic` can turn off the CPU features of
    /// the code that does the engine's cryptography (in this process, or
    /// in the daemons it starts, which inherit tlslab's environment), and
    /// how; the library's own descriptor says it where there is one.
    fn cpu_masking(&self) -> CpuMasking;

    /// Readies a row for counting, inside the counted child (the work
    /// counted as the client is the sender's, as the server the
    /// receiver's): `packets` packets per sample, after one uncounted
    /// sample of the same size. Only asked of engines that can be counted.
    fn prepare_counted(
        &self,
        _scenario: &TunnelScenario,
        _packets: u64,
    ) -> Result<CountedSample, TunnelOutcome> {
        Err(crate::measure::Outcome::Unsupported {
            reason: self
                .uncountable()
                .unwrap_or("this engine cannot be counted")
                .to_string(),
        })
    }

    /// True if and only if the engine's rows can be ready at once and
    /// sampled in interleaved rounds; else each row is readied, sampled
    /// and dropped before the next (a real tunnel per row).
    fn interleaves_rows(&self) -> bool;

    /// Sets up what the engine's rows share for one run; dropping the rig
    /// removes all of it.
    fn start(&self, options: &EngineOptions) -> Result<Box<dyn EngineRig>>;

    /// The kinds of set-up the engine measures (`tunnel --setup`): a new
    /// tunnel, and any other it can isolate (a renegotiation).
    fn setup_kinds(&self) -> &'static [SetupKind] {
        &[SetupKind::Connect]
    }

    /// Why the engine's set-up cannot be counted under valgrind
    /// (`tunnel --setup --measure instructions`), if it cannot (the default).
    fn setup_uncountable(&self) -> Option<&'static str> {
        Some("this engine's set-up is not counted under valgrind")
    }

    /// Readies the counting of the engine's set-up (a new tunnel), inside
    /// the counted child: each call of the sample is one set-up, the
    /// initiator's steps between the client's turns
    /// ([`crate::backend::turns`]), the responder's between the server's.
    /// Only asked of engines whose [`Self::setup_uncountable`] is `None`.
    fn prepare_counted_setup(&self) -> Result<CountedSample, SetupOutcome> {
        Err(crate::measure::Outcome::Unsupported {
            reason: self
                .setup_uncountable()
                .unwrap_or("this engine's set-up cannot be counted")
                .to_string(),
        })
    }

    /// Readies the measurement of one kind of the engine's connection
    /// set-up (`tunnel --setup`, asked only for its [`Self::setup_kinds`]):
    /// each call of the probe establishes one (a fresh tunnel, or a new
    /// handshake on a running one), checks it and returns each side's
    /// cost; whatever the probe holds (namespaces, processes) goes when it
    /// is dropped. An engine that cannot measure it answers why (the
    /// default); `interrupt` is Ctrl-C.
    fn prepare_setup<'a>(
        &self,
        _kind: SetupKind,
        _interrupt: &'a AtomicBool,
    ) -> Result<SetupProbe<'a>, SetupOutcome> {
        Err(crate::measure::Outcome::Unsupported {
            reason: format!(
                "the {} engine does not measure its connection set-up",
                self.id().id()
            ),
        })
    }
}

/// What one engine's rows share during a run.
pub trait EngineRig {
    /// Readies one row the engine supports (its tunnel up, its channel
    /// keyed, a first sample checked) and returns its sample: each call is
    /// one verified measurement of the row. Dropping it tears the row down.
    /// An error is the row's outcome: unsupported (the engine found out
    /// only now) or failed, with the reason. `interrupt` is Ctrl-C: a
    /// row that takes long to ready gives up when it is set.
    fn prepare<'rig>(
        &'rig self,
        scenario: &TunnelScenario,
        interrupt: &'rig AtomicBool,
    ) -> Result<Probe<'rig, TunnelSample>, TunnelOutcome>;
}
