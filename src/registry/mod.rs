//! The one shape of every registry (libraries, servers under test, tunnel
//! engines): a static [`Descriptor`] per implementation, its data first,
//! in the manner of rustls' `CryptoProvider`. What every registry knows of
//! an implementation before (or without) opening it is here: its id in
//! the vocabulary, the library or program that does its work, the
//! programs it starts, the prefix of its scratch directories, how to
//! install what it needs, why its rows cannot be counted, whether it is
//! listed; what only one kind of registry knows (a library's capabilities,
//! a server's place, an engine's trait object) and how to open it is the
//! descriptor's `details`. Help text, `tlslab list`, the tests and the
//! fresh-machine script's list of programs read the descriptors instead
//! of keeping lists of their own.

use crate::scenario::Named;

/// One implementation in a registry: `K` is its id in the vocabulary
/// (`BackendId`, `ServerKind`, `EngineId`), `D` what only its kind of
/// registry knows of it, `open` included. A descriptor derefs to its
/// details, so `descriptor.capabilities` reads a library's.
pub struct Descriptor<K: 'static, D: 'static> {
    /// Its id on the command line and in the database.
    pub id: K,
    /// The library or program that does its work, as its authors write it
    /// ("OpenSSL", "rustls", "nginx", "OpenVPN").
    pub library: &'static str,
    /// True if and only if `all`, help and `tlslab list` include it (the
    /// mock backend is accepted by name but never listed).
    pub listed: bool,
    /// The programs it starts, by their command names ("nginx", "openvpn",
    /// "ip"): the kill -9 tests look for them, and
    /// `scripts/fresh-machine-test.sh` hides every one (a test checks its
    /// list holds them all).
    pub programs: &'static [&'static str],
    /// The word its runs' scratch directories carry
    /// (`tlslab-WORD-PID-START-XXXXXX`, made by `child::scratch_dir`), or
    /// `None` if it makes none.
    pub scratch: Option<&'static str>,
    /// How to install what it needs on Debian ("apt-get install nginx-light"),
    /// or "" if it needs nothing beyond tlslab.
    pub install: &'static str,
    /// Why its rows cannot be counted under valgrind (its work runs in
    /// processes of its own), or `None` if they can.
    pub uncountable: Option<&'static str>,
    /// What only its kind of registry knows of it, and how to open it.
    pub details: D,
}

impl<K: Named, D> Descriptor<K, D> {
    /// Its id as written on the command line ("rustls-aws-lc", "nginx").
    pub fn name(&self) -> &'static str {
        self.id.id()
    }

    /// Other spellings of its id the command line takes (the vocabulary's).
    pub fn aliases(&self) -> &'static [&'static str] {
        self.id.aliases()
    }

    /// The start of its scratch directories' names ("tlslab-openvpn-"),
    /// or `None` if it makes none.
    pub fn scratch_prefix(&self) -> Option<String> {
        self.scratch.map(|word| format!("tlslab-{word}-"))
    }
}

impl<K, D> std::ops::Deref for Descriptor<K, D> {
    type Target = D;

    fn deref(&self) -> &D {
        &self.details
    }
}

impl<K: Named, D> std::fmt::Debug for Descriptor<K, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Descriptor")
            .field("id", &self.name())
            .field("library", &self.library)
            .field("listed", &self.listed)
            .field("programs", &self.programs)
            .field("scratch", &self.scratch)
            .field("install", &self.install)
            .field("uncountable", &self.uncountable)
            .finish_non_exhaustive()
    }
}
