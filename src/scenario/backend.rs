//! The backends as names: which TLS libraries tlslab drives ([`BackendId`],
//! with its ids and aliases) and a list of them as a person gives one
//! ([`BackendList`]: `all`, ids and aliases, each backend once). Opening a
//! backend is the registry's, in `backend/`; this vocabulary imports none
//! of it, so the command line parses, checks and completes backend names
//! as it does every other name.

use std::fmt;
use std::str::FromStr;

use super::names::{parse_name, Named};

/// A TLS library tlslab drives, by its stable id: the one registry of
/// backends (`backend::BackendId::open`) opens each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BackendId {
    Openssl,
    RustlsAwsLc,
    RustlsRing,
    /// DTLS 1.2 and 1.3 from the pure-Rust dimpl crate.
    Dimpl,
    /// wolfSSL (GPL-2.0-or-later): only in a build with the cargo feature
    /// `wolfssl`; without it the name is refused saying how to build it.
    Wolfssl,
    /// Deterministic fake timings for testing the pipeline; never listed.
    Mock,
}

impl Named for BackendId {
    const KIND: &'static str = "backend";
    const ALL: &'static [Self] = &[
        BackendId::Openssl,
        BackendId::RustlsAwsLc,
        BackendId::RustlsRing,
        BackendId::Dimpl,
        BackendId::Wolfssl,
        BackendId::Mock,
    ];

    fn id(self) -> &'static str {
        match self {
            BackendId::Openssl => "openssl",
            BackendId::RustlsAwsLc => "rustls-aws-lc",
            BackendId::RustlsRing => "rustls-ring",
            BackendId::Dimpl => "dimpl",
            BackendId::Wolfssl => "wolfssl",
            BackendId::Mock => "mock",
        }
    }

    fn aliases(self) -> &'static [&'static str] {
        match self {
            BackendId::Openssl => &["ossl"],
            BackendId::RustlsAwsLc => &["rustls-aws-lc-rs", "aws-lc-rs", "aws-lc", "rustls"],
            BackendId::RustlsRing => &["ring"],
            BackendId::Dimpl => &[],
            BackendId::Wolfssl => &["wolf"],
            BackendId::Mock => &[],
        }
    }

    /// The mock backend is accepted (the tests drive the pipeline with
    /// it) but never listed, completed or meant by `all`; wolfSSL is
    /// listed only in a build that has it.
    fn listed(self) -> bool {
        match self {
            BackendId::Mock => false,
            BackendId::Wolfssl => WOLFSSL_BUILT_IN,
            _ => true,
        }
    }
}

/// True if and only if this build has the wolfSSL backend (the opt-in
/// cargo feature `wolfssl`: wolfSSL is GPL-2.0-or-later).
pub const WOLFSSL_BUILT_IN: bool = cfg!(feature = "wolfssl");

/// Why `--backend wolfssl` is refused in a build without it, and how to
/// get one.
pub const WOLFSSL_NOT_BUILT: &str = "wolfssl is not built in: wolfSSL is GPL-2.0-or-later, so it \
is an opt-in feature; build tlslab with `cargo build --release --features wolfssl` (needs \
autoconf, automake, libtool and libclang-dev)";

impl BackendId {
    /// The real backends, in the order lists show them: what `all` means.
    pub fn listed_ids() -> impl Iterator<Item = BackendId> {
        Self::ALL.iter().copied().filter(|id| id.listed())
    }
}

/// The backend named `name`, refused when this build lacks it (wolfSSL
/// without its feature) with how to build it.
fn parse_built(name: &str) -> Result<BackendId, String> {
    let id: BackendId = parse_name(name).map_err(|error| error.to_string())?;
    if id == BackendId::Wolfssl && !WOLFSSL_BUILT_IN {
        return Err(WOLFSSL_NOT_BUILT.to_string());
    }
    Ok(id)
}

/// One item of a backend list: every real backend, or one by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendChoice {
    All,
    One(BackendId),
}

impl BackendChoice {
    /// The item as typed back: `all`, or the backend's id.
    pub fn id(self) -> &'static str {
        match self {
            BackendChoice::All => ALL_BACKENDS,
            BackendChoice::One(id) => id.id(),
        }
    }
}

/// The name that means every real backend.
pub const ALL_BACKENDS: &str = "all";

/// A list of backends as a person gives one (`all,dimpl`, `ring,openssl`):
/// `all`, ids and aliases in any spelling `parse_name` takes. Never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendList(Vec<BackendChoice>);

impl BackendList {
    /// Every real backend: `all`.
    pub fn all() -> Self {
        Self(vec![BackendChoice::All])
    }

    /// The list of `names` (each `all`, an id or an alias; blank ones are
    /// passed over). An unknown name is refused listing the valid ones, and
    /// so is a list without a name.
    pub fn named<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Self, String> {
        let mut choices = Vec::new();
        for name in names.into_iter().map(str::trim).filter(|n| !n.is_empty()) {
            choices.push(if name.eq_ignore_ascii_case(ALL_BACKENDS) {
                BackendChoice::All
            } else {
                BackendChoice::One(parse_built(name)?)
            });
        }
        if choices.is_empty() {
            let valid: Vec<&str> = std::iter::once(ALL_BACKENDS)
                .chain(BackendId::listed_ids().map(Named::id))
                .collect();
            return Err(format!(
                "the backend list is empty; valid backends: {}",
                valid.join(", ")
            ));
        }
        Ok(Self(choices))
    }

    /// The items as given.
    pub fn choices(&self) -> &[BackendChoice] {
        &self.0
    }

    /// Each backend the list names, once, in the order first named, with
    /// true if and only if it was named on its own, not only through `all`
    /// (`all,openssl` and `ring,rustls-ring` name each backend once).
    pub fn resolve(&self) -> Vec<(BackendId, bool)> {
        let mut resolved: Vec<(BackendId, bool)> = Vec::new();
        for choice in &self.0 {
            let (ids, named): (Vec<BackendId>, bool) = match *choice {
                BackendChoice::All => (BackendId::listed_ids().collect(), false),
                BackendChoice::One(id) => (vec![id], true),
            };
            for id in ids {
                match resolved.iter_mut().find(|(seen, _)| *seen == id) {
                    Some((_, was_named)) => *was_named |= named,
                    None => resolved.push((id, named)),
                }
            }
        }
        resolved
    }
}

impl FromStr for BackendList {
    type Err = String;

    /// A comma-separated list.
    fn from_str(text: &str) -> Result<Self, String> {
        Self::named(text.split(','))
    }
}

/// The list as typed back, comma-separated ("all,dimpl"): it parses to
/// the same list.
impl fmt::Display for BackendList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<&str> = self.0.iter().map(|choice| choice.id()).collect();
        f.write_str(&ids.join(","))
    }
}

/// Serialised as typed back ("all,dimpl").
impl serde::Serialize for BackendList {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for BackendList {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolved(text: &str) -> Vec<(BackendId, bool)> {
        text.parse::<BackendList>().unwrap().resolve()
    }

    #[test]
    fn all_means_every_real_backend_and_repeats_count_once() {
        use BackendId::*;
        let mut all = vec![
            (Openssl, false),
            (RustlsAwsLc, false),
            (RustlsRing, false),
            (Dimpl, false),
        ];
        if WOLFSSL_BUILT_IN {
            all.push((Wolfssl, false));
        }
        assert_eq!(resolved("all"), all);
        assert_eq!(
            resolved("ring, rustls-ring,OpenSSL"),
            [(RustlsRing, true), (Openssl, true)]
        );
        assert_eq!(resolved("all,dimpl")[3], (Dimpl, true));
        assert_eq!(resolved("mock,"), [(Mock, true)]);
        assert_eq!(resolved("aws-lc,all").len(), all.len());
    }

    /// The real backends as error messages list them.
    fn listed_names() -> &'static str {
        if WOLFSSL_BUILT_IN {
            "openssl, rustls-aws-lc, rustls-ring, dimpl, wolfssl"
        } else {
            "openssl, rustls-aws-lc, rustls-ring, dimpl"
        }
    }

    #[test]
    fn wolfssl_is_refused_saying_how_to_build_it_unless_built_in() {
        let parsed = "wolfssl".parse::<BackendList>();
        if WOLFSSL_BUILT_IN {
            assert_eq!(parsed.unwrap().resolve(), [(BackendId::Wolfssl, true)]);
        } else {
            let error = parsed.unwrap_err();
            assert!(error.contains("--features wolfssl"), "{error}");
            assert!(error.contains("GPL-2.0-or-later"), "{error}");
        }
    }

    #[test]
    fn unknown_and_empty_lists_are_refused_listing_the_valid_names() {
        let unknown = "openssl,gnutls".parse::<BackendList>().unwrap_err();
        assert_eq!(
            unknown,
            format!(
                "unknown backend 'gnutls'; valid backends: {}",
                listed_names()
            )
        );
        for empty in ["", " , ", ","] {
            let error = empty.parse::<BackendList>().unwrap_err();
            assert_eq!(
                error,
                format!(
                    "the backend list is empty; valid backends: all, {}",
                    listed_names()
                )
            );
        }
    }

    #[test]
    fn a_list_prints_and_serialises_as_it_parses_back() {
        let list: BackendList = "ALL, ring".parse().unwrap();
        assert_eq!(list.to_string(), "all,rustls-ring");
        assert_eq!(list.to_string().parse(), Ok(list.clone()));
        let json = serde_json::to_string(&list).unwrap();
        assert_eq!(json, "\"all,rustls-ring\"");
        assert_eq!(serde_json::from_str::<BackendList>(&json).unwrap(), list);
    }

    #[test]
    fn every_preset_names_known_backends() {
        use super::super::bulk::BulkPreset;
        use super::super::presets::Preset;
        for preset in Preset::ALL {
            BackendList::named(preset.default_backends().iter().copied()).unwrap();
            for companion in preset.companions() {
                BackendList::named(companion.backends.iter().copied()).unwrap();
            }
        }
        for preset in BulkPreset::ALL {
            BackendList::named(preset.default_backends().iter().copied()).unwrap();
            for (backends, _) in preset.companions() {
                BackendList::named(backends.iter().copied()).unwrap();
            }
        }
    }
}
