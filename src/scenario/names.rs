//! Parsing of user-facing names for every axis value, with errors that list
//! the valid names.

use std::fmt;

/// A value of an axis that has a stable, user-facing name.
pub trait Named: Copy + PartialEq + 'static {
    /// What one value of this axis is called in messages ("group", "certificate").
    const KIND: &'static str;
    /// Every value, in the order lists and tables show them.
    const ALL: &'static [Self];

    /// The stable snake_case id used on the command line, in labels and in the database.
    fn id(self) -> &'static str;

    /// How tables, lists and messages spell the value: the id, unless one
    /// thing has one spelling across every command that differs from it
    /// (the AES-128-GCM cipher is `aes-128-gcm` in `bulk`, `speed` and
    /// `tunnel` alike, while its stored id in TLS labels stays `aes128gcm`).
    fn name(self) -> &'static str {
        self.id()
    }

    /// Other spellings accepted on the command line (resolved to the same value).
    fn aliases(self) -> &'static [&'static str] {
        &[]
    }

    /// Returns true if and only if the value is shown where the valid
    /// names are listed (help, completions, errors); a value that is not
    /// (the mock backend) is accepted all the same.
    fn listed(self) -> bool {
        true
    }
}

/// An error for a name that matches no value of an axis.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct UnknownName {
    pub kind: &'static str,
    pub given: String,
    pub valid: Vec<&'static str>,
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown {} '{}'; valid {}s: {}",
            self.kind,
            self.given,
            self.kind,
            self.valid.join(", ")
        )
    }
}

/// True if and only if two names are equal ignoring case, surrounding
/// spaces and the separators `-` and `_`, so `aes128gcm`, `aes-128-gcm`
/// and `AES_128_GCM` are one name (no allocation: this runs after every
/// handshake).
fn same_name(given: &str, known: &str) -> bool {
    fn folded(text: &str) -> impl Iterator<Item = char> + '_ {
        text.trim()
            .chars()
            .filter(|c| !matches!(c, '-' | '_'))
            .map(|c| c.to_ascii_lowercase())
    }
    folded(given).eq(folded(known))
}

/// Parses one name (case-insensitive; `-` and `_` may be left out or put
/// anywhere: `aes128gcm` is `aes-128-gcm`).
pub fn parse_name<T: Named>(name: &str) -> Result<T, UnknownName> {
    T::ALL
        .iter()
        .copied()
        .find(|value| {
            same_name(name, value.id())
                || same_name(name, value.name())
                || value.aliases().iter().any(|alias| same_name(name, alias))
        })
        .ok_or_else(|| UnknownName {
            kind: T::KIND,
            given: name.trim().to_string(),
            valid: T::ALL
                .iter()
                .filter(|value| value.listed())
                .map(|value| value.name())
                .collect(),
        })
}

/// Parses a comma-separated list of names, keeping order and dropping repeats.
pub fn parse_list<T: Named>(list: &str) -> Result<Vec<T>, UnknownName> {
    let names = list.split(',').filter(|name| !name.trim().is_empty());
    let values = names.map(parse_name::<T>).collect::<Result<Vec<T>, _>>()?;
    Ok(distinct(&values))
}

/// The values in their order, each once: a name given twice on the
/// command line is one row, not two.
pub fn distinct<T: PartialEq + Copy>(values: &[T]) -> Vec<T> {
    let mut kept: Vec<T> = Vec::with_capacity(values.len());
    for value in values {
        if !kept.contains(value) {
            kept.push(*value);
        }
    }
    kept
}

/// Serialises axis values by their id, so exports and the database use one spelling.
macro_rules! serialize_by_id {
    ($($axis:ty),*) => {$(
        impl serde::Serialize for $axis {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.id())
            }
        }
    )*};
}
pub(crate) use serialize_by_id;

/// Deserialises axis values from their id (or an alias).
macro_rules! deserialize_by_id {
    ($($axis:ty),*) => {$(
        impl<'de> serde::Deserialize<'de> for $axis {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let name = <String as serde::Deserialize>::deserialize(deserializer)?;
                $crate::scenario::names::parse_name(&name).map_err(serde::de::Error::custom)
            }
        }
    )*};
}
pub(crate) use deserialize_by_id;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::axes::Group;

    #[test]
    fn aliases_resolve_to_the_same_value() {
        assert_eq!(parse_name::<Group>("secp256r1"), Ok(Group::P256));
        assert_eq!(parse_name::<Group>("P-256"), Ok(Group::P256));
        assert_eq!(
            parse_name::<Group>("X25519MLKEM768"),
            Ok(Group::X25519Mlkem768)
        );
    }

    /// Issue 18 item 17: one thing had two spellings across commands
    /// (`aes128gcm` in bulk and speed, `aes-128-gcm` in tunnel; `p256` in
    /// handshake, `ecdh_p256` in speed); each command takes both.
    #[test]
    fn every_spelling_of_one_thing_is_accepted_by_every_command() {
        use crate::scenario::speed::Primitive;
        use crate::scenario::tunnel_axes::Cipher;
        use crate::scenario::Aead;
        for name in ["aes128gcm", "aes-128-gcm", "AES_128_GCM", "aes128-gcm"] {
            assert_eq!(parse_name::<Aead>(name), Ok(Aead::Aes128Gcm), "{name}");
            assert_eq!(parse_name::<Cipher>(name), Ok(Cipher::Aes128Gcm), "{name}");
            assert_eq!(
                parse_name::<Primitive>(name),
                Ok(Primitive::Aes128Gcm),
                "{name}"
            );
        }
        for name in ["chacha20poly1305", "chacha20-poly1305"] {
            assert_eq!(parse_name::<Aead>(name), Ok(Aead::Chacha20Poly1305));
            assert_eq!(parse_name::<Cipher>(name), Ok(Cipher::Chacha20Poly1305));
            assert_eq!(
                parse_name::<Primitive>(name),
                Ok(Primitive::Chacha20Poly1305)
            );
        }
        for name in ["aes128cbc", "aes-128-cbc"] {
            assert_eq!(parse_name::<Cipher>(name), Ok(Cipher::Aes128Cbc));
            assert_eq!(parse_name::<Primitive>(name), Ok(Primitive::Aes128Cbc));
        }
        for name in ["p256", "ecdh_p256", "ecdhp256", "P-256", "secp256r1"] {
            assert_eq!(parse_name::<Group>(name), Ok(Group::P256), "{name}");
            assert_eq!(
                parse_name::<Primitive>(name),
                Ok(Primitive::EcdhP256),
                "{name}"
            );
        }
        assert_eq!(parse_name::<Group>("ecdh_p384"), Ok(Group::P384));
        assert_eq!(parse_name::<Group>("ecdh_p521"), Ok(Group::P521));
        // One spelling printed for each, the same in every command.
        assert_eq!(Aead::Aes128Gcm.name(), Cipher::Aes128Gcm.name());
        assert_eq!(Aead::Aes128Gcm.name(), Primitive::Aes128Gcm.name());
        assert_eq!(
            Aead::Chacha20Poly1305.name(),
            Cipher::Chacha20Poly1305.name()
        );
        assert_eq!(Primitive::Aes128Cbc.name(), Cipher::Aes128Cbc.name());
        assert_eq!(Primitive::EcdhP256.name(), Group::P256.name());
        // The stored ids stay as they were.
        assert_eq!(Aead::Aes128Gcm.id(), "aes128gcm");
        assert_eq!(Primitive::EcdhP256.id(), "ecdh_p256");
    }

    /// Returns the first two values of `T` that one name would match.
    fn clash<T: Named + std::fmt::Debug>() -> Option<(T, T, String)> {
        for (i, &a) in T::ALL.iter().enumerate() {
            for &b in &T::ALL[i + 1..] {
                let spellings = |v: T| {
                    [v.id(), v.name()]
                        .into_iter()
                        .chain(v.aliases().iter().copied())
                };
                for name in spellings(a) {
                    if spellings(b).any(|other| same_name(name, other)) {
                        return Some((a, b, name.to_string()));
                    }
                }
            }
        }
        None
    }

    /// Leaving separators out must not make two values one name.
    #[test]
    fn no_name_matches_two_values() {
        use crate::scenario::{backend, presets, speed, tunnel, tunnel_axes, *};
        assert_eq!(clash::<TlsVersion>(), None);
        assert_eq!(clash::<Group>(), None);
        assert_eq!(clash::<CertKind>(), None);
        assert_eq!(clash::<Aead>(), None);
        assert_eq!(clash::<Resumption>(), None);
        assert_eq!(clash::<Transport>(), None);
        assert_eq!(clash::<Measure>(), None);
        assert_eq!(clash::<CpuFeatures>(), None);
        assert_eq!(clash::<speed::Primitive>(), None);
        assert_eq!(clash::<speed::Operation>(), None);
        assert_eq!(clash::<tunnel_axes::Cipher>(), None);
        assert_eq!(clash::<tunnel_axes::Digest>(), None);
        assert_eq!(clash::<tunnel_axes::Compression>(), None);
        assert_eq!(clash::<tunnel_axes::Payload>(), None);
        assert_eq!(clash::<tunnel::EngineId>(), None);
        assert_eq!(clash::<ServerKind>(), None);
        assert_eq!(clash::<presets::Preset>(), None);
        assert_eq!(clash::<backend::BackendId>(), None);
    }

    #[test]
    fn unknown_name_lists_valid_ones() {
        let error = parse_name::<Group>("x9999").unwrap_err();
        let message = error.to_string();
        assert!(message.contains("unknown group 'x9999'"), "{message}");
        assert!(message.contains("x25519"), "{message}");
        assert!(message.contains("ffdhe2048"), "{message}");
    }

    #[test]
    fn lists_drop_repeats_keeping_the_order() {
        let groups = distinct(&[Group::X25519, Group::P256, Group::X25519]);
        assert_eq!(groups, vec![Group::X25519, Group::P256]);
    }
}
