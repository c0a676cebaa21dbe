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

    /// Other spellings accepted on the command line (resolved to the same value).
    fn aliases(self) -> &'static [&'static str] {
        &[]
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
/// spaces, and the difference between `-` and `_` (no allocation: this runs
/// after every handshake).
fn same_name(given: &str, known: &str) -> bool {
    let fold = |c: char| {
        if c == '-' {
            '_'
        } else {
            c.to_ascii_lowercase()
        }
    };
    given.trim().chars().map(fold).eq(known.chars().map(fold))
}

/// Parses one name (case-insensitive, `-` and `_` interchangeable).
pub fn parse_name<T: Named>(name: &str) -> Result<T, UnknownName> {
    T::ALL
        .iter()
        .copied()
        .find(|value| {
            same_name(name, value.id())
                || value.aliases().iter().any(|alias| same_name(name, alias))
        })
        .ok_or_else(|| UnknownName {
            kind: T::KIND,
            given: name.trim().to_string(),
            valid: T::ALL.iter().map(|value| value.id()).collect(),
        })
}

/// Parses a comma-separated list of names, keeping order and dropping repeats.
pub fn parse_list<T: Named>(list: &str) -> Result<Vec<T>, UnknownName> {
    let mut values = Vec::new();
    for name in list.split(',').filter(|name| !name.trim().is_empty()) {
        let value = parse_name::<T>(name)?;
        if !values.contains(&value) {
            values.push(value);
        }
    }
    Ok(values)
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

    #[test]
    fn unknown_name_lists_valid_ones() {
        let error = parse_name::<Group>("x9999").unwrap_err();
        let message = error.to_string();
        assert!(message.contains("unknown group 'x9999'"), "{message}");
        assert!(message.contains("x25519"), "{message}");
        assert!(message.contains("ffdhe2048"), "{message}");
    }

    #[test]
    fn lists_drop_repeats() {
        let groups = parse_list::<Group>("x25519,p256,X25519").unwrap();
        assert_eq!(groups, vec![Group::X25519, Group::P256]);
    }
}
