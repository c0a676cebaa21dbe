//! The parsers of named values: every option whose value is a name of the
//! vocabulary ([`Named`]) parses it with [`NamedParser`], which takes any
//! spelling `scenario::parse_name` takes and refuses a bad one with the
//! valid names (exit 2). Its possible values are the names, so the help
//! lists them (`[possible values: ...]`) and the shells complete them:
//! no help text types a list of names by hand. An option that takes only
//! some of a type's values lists those ([`NamedParser::listing`]).
//! `speed --algorithm` adds `all` ([`Algorithm`]), `--backend` takes a
//! list with `all` ([`BackendListParser`]).

use clap::builder::{PossibleValue, TypedValueParser, ValueParserFactory};
use serde::{Deserialize, Serialize};

use crate::scenario::backend::ALL_BACKENDS;
use crate::scenario::bulk::BulkPreset;
use crate::scenario::names::{parse_name, Named};
use crate::scenario::presets::{CostPreset, LoadPreset, Preset, TunnelPreset};
use crate::scenario::speed::Primitive;
use crate::scenario::tunnel::EngineId;
use crate::scenario::tunnel_axes::{Cipher, Compression, Digest, Payload};
use crate::scenario::{
    Aead, BackendId, BackendList, CertKind, CpuFeatures, Group, Measure, Resumption, ServerKind,
    TlsVersion, Transport,
};

/// The option an argument is, as a person types it ("--group").
fn option_name(arg: Option<&clap::Arg>) -> String {
    arg.and_then(|arg| arg.get_long())
        .map_or_else(|| "the option".to_string(), |long| format!("--{long}"))
}

/// The names of the values of `T` that `listed` keeps, in their order.
fn listed_names<T: Named>(listed: fn(T) -> bool) -> Vec<&'static str> {
    T::ALL
        .iter()
        .copied()
        .filter(|value| listed(*value))
        .map(Named::name)
        .collect()
}

/// One name of `T` as typed for `option`: an empty value and a list where
/// one value goes are refused saying so, an unknown name listing the valid
/// ones (those `listed` keeps).
fn one_name<T: Named>(option: &str, text: &str, listed: fn(T) -> bool) -> Result<T, String> {
    let valid = || listed_names(listed).join(", ");
    if text.trim().is_empty() {
        return Err(format!("an empty value; valid {}s: {}", T::KIND, valid()));
    }
    // A list option is split at its commas before its values come here.
    if text.contains(',') {
        return Err(format!(
            "{option} takes one value, not a list; valid {}s: {}",
            T::KIND,
            valid()
        ));
    }
    parse_name(text).map_err(|mut error| {
        error.valid = listed_names(listed);
        error.to_string()
    })
}

/// The possible values clap lists and completes for `T`: the name of each
/// value `listed` keeps; the names of the others, and every id and alias,
/// hidden (accepted, neither listed nor completed).
fn possible_names<T: Named>(listed: fn(T) -> bool) -> impl Iterator<Item = PossibleValue> {
    T::ALL.iter().flat_map(move |&value| {
        let name = value.name();
        let hidden = std::iter::once(value.id())
            .filter(move |id| *id != name)
            .chain(value.aliases().iter().copied())
            .map(|other| PossibleValue::new(other).hide(true));
        std::iter::once(PossibleValue::new(name).hide(!listed(value))).chain(hidden)
    })
}

/// The clap value parser of a named value of the vocabulary ([`Named`]):
/// any of its spellings (case, `-` and `_` aside, aliases too) as
/// `scenario::parse_name` takes them; a bad one is refused with the valid
/// names (exit 2). Its names are clap's possible values, so the help lists
/// them and the shells complete them.
pub struct NamedParser<T> {
    /// Which values the help, the completions and an error list.
    listed: fn(T) -> bool,
}

impl<T: Named> NamedParser<T> {
    /// The parser of every value of `T`, listing those the vocabulary
    /// lists ([`Named::listed`]).
    pub fn new() -> Self {
        Self {
            listed: Named::listed,
        }
    }

    /// The parser of an option that takes only some values of `T` (`load
    /// --tls` takes no DTLS version): it lists the values `listed` keeps,
    /// and still parses the others, so the command refuses them saying why.
    pub fn listing(listed: fn(T) -> bool) -> Self {
        Self { listed }
    }
}

impl<T: Named> Default for NamedParser<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for NamedParser<T> {
    fn clone(&self) -> Self {
        Self {
            listed: self.listed,
        }
    }
}

impl<T: Named + Send + Sync> TypedValueParser for NamedParser<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        let option = option_name(arg);
        let listed = self.listed;
        // clap's own wrapping: "invalid value 'x' for '--group <LIST>': ...".
        let parse = move |text: &str| one_name::<T>(&option, text, listed);
        parse.parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(possible_names::<T>(self.listed)))
    }
}

/// What `--measure` lists on the commands that time and count
/// instructions but not memory, which only `handshake` counts: every
/// measure but memory (given all the same, it is refused saying so).
pub(super) fn not_memory(measure: Measure) -> bool {
    measure != Measure::Memory
}

/// What `--tls` lists on the commands that run over TCP (`load`, `serve`):
/// the TLS versions, not the DTLS ones (given all the same, they are
/// refused saying so).
pub(super) fn over_tcp(version: TlsVersion) -> bool {
    !version.is_datagram()
}

/// Names the value parser of each named type of the vocabulary, so a field
/// of that type (or a list of it) needs no `value_parser` of its own.
macro_rules! named_values {
    ($($named:ty),* $(,)?) => {$(
        impl ValueParserFactory for $named {
            type Parser = NamedParser<$named>;

            fn value_parser() -> Self::Parser {
                NamedParser::new()
            }
        }
    )*};
}

named_values!(
    TlsVersion,
    Group,
    CertKind,
    Aead,
    Resumption,
    Transport,
    Measure,
    CpuFeatures,
    Preset,
    BulkPreset,
    CostPreset,
    TunnelPreset,
    LoadPreset,
    Cipher,
    Digest,
    Compression,
    Payload,
    EngineId,
    Primitive,
    BackendId,
    ServerKind,
);

/// One item of `speed --algorithm`: every algorithm, or one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    All,
    One(Primitive),
}

/// `all`, else an algorithm's name.
#[derive(Clone, Default)]
pub struct AlgorithmParser;

impl TypedValueParser for AlgorithmParser {
    type Value = Algorithm;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Algorithm, clap::Error> {
        let option = option_name(arg);
        let parse = move |text: &str| {
            if text.trim().eq_ignore_ascii_case("all") {
                Ok(Algorithm::All)
            } else {
                one_name::<Primitive>(&option, text, Named::listed).map(Algorithm::One)
            }
        };
        parse.parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            std::iter::once(PossibleValue::new("all"))
                .chain(possible_names::<Primitive>(Named::listed)),
        ))
    }
}

impl ValueParserFactory for Algorithm {
    type Parser = AlgorithmParser;

    fn value_parser() -> AlgorithmParser {
        AlgorithmParser
    }
}

/// `all` as the one item serialised, else the algorithm's id.
impl Serialize for Algorithm {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Algorithm::All => serializer.serialize_str("all"),
            Algorithm::One(primitive) => primitive.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Algorithm {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        if name == "all" {
            return Ok(Algorithm::All);
        }
        parse_name(&name)
            .map(Algorithm::One)
            .map_err(serde::de::Error::custom)
    }
}

/// The parser of a `--backend` list ([`BackendList`]): `all`, ids and
/// aliases, comma-separated, as one value, so an empty list is refused as
/// such. Its possible values are `all` and the listed backends' ids (the
/// mock backend is accepted, never listed).
#[derive(Clone, Default)]
pub struct BackendListParser;

impl TypedValueParser for BackendListParser {
    type Value = BackendList;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<BackendList, clap::Error> {
        let parse = |text: &str| text.parse::<BackendList>();
        parse.parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            std::iter::once(PossibleValue::new(ALL_BACKENDS))
                .chain(possible_names::<BackendId>(Named::listed)),
        ))
    }
}

impl ValueParserFactory for BackendList {
    type Parser = BackendListParser;

    fn value_parser() -> BackendListParser {
        BackendListParser
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A command with one list of groups and one single group, as the
    /// commands declare them.
    fn groups_command() -> clap::Command {
        clap::Command::new("t")
            .arg(
                clap::Arg::new("group")
                    .long("group")
                    .value_delimiter(',')
                    .action(clap::ArgAction::Append)
                    .value_parser(NamedParser::<Group>::new()),
            )
            .arg(
                clap::Arg::new("one")
                    .long("one")
                    .value_parser(NamedParser::<Group>::new()),
            )
    }

    #[test]
    fn named_values_take_every_spelling_and_refuse_others_listing_the_valid_ones() {
        let matches = groups_command()
            .try_get_matches_from(["t", "--group", "x25519,P-256,secp384r1", "--one", "X448"])
            .unwrap();
        let groups: Vec<Group> = matches.get_many("group").unwrap().copied().collect();
        assert_eq!(groups, [Group::X25519, Group::P256, Group::P384]);
        assert_eq!(matches.get_one::<Group>("one"), Some(&Group::X448));
        for (args, expected) in [
            (
                ["t", "--group", "x9999"],
                "unknown group 'x9999'; valid groups: rsa",
            ),
            (
                ["t", "--group", "x25519,"],
                "an empty value; valid groups: rsa",
            ),
            (
                ["t", "--one", "x25519,p256"],
                "--one takes one value, not a list",
            ),
        ] {
            let error = groups_command().try_get_matches_from(args).unwrap_err();
            assert_eq!(error.kind(), clap::error::ErrorKind::ValueValidation);
            assert!(error.to_string().contains(expected), "{args:?}: {error}");
        }
    }

    #[test]
    fn named_values_complete_their_names_not_their_aliases() {
        let command = groups_command();
        let group = command.get_arguments().next().unwrap();
        let shown: Vec<String> = group
            .get_possible_values()
            .iter()
            .filter(|value| !value.is_hide_set())
            .map(|value| value.get_name().to_string())
            .collect();
        assert!(shown.contains(&"x25519mlkem768".to_string()), "{shown:?}");
        assert!(!shown.contains(&"secp256r1".to_string()), "{shown:?}");
        assert_eq!(shown.len(), Group::ALL.len());
    }

    #[test]
    fn backend_lists_complete_all_and_the_real_backends_and_refuse_an_empty_list() {
        let command = clap::Command::new("t").arg(
            clap::Arg::new("backend")
                .long("backend")
                .value_parser(BackendListParser),
        );
        let backend = command.get_arguments().next().unwrap();
        let shown: Vec<String> = backend
            .get_possible_values()
            .iter()
            .filter(|value| !value.is_hide_set())
            .map(|value| value.get_name().to_string())
            .collect();
        // `all`, then the registry's listed backends (wolfssl with its feature).
        let expected: Vec<&str> = std::iter::once("all")
            .chain(crate::backend::BACKEND_IDS.iter().copied())
            .collect();
        assert_eq!(shown, expected);
        assert!(
            shown.iter().any(|name| name == "dimpl") && !shown.iter().any(|name| name == "mock"),
            "{shown:?}"
        );
        let matches = command
            .clone()
            .try_get_matches_from(["t", "--backend", "mock,ring,all"])
            .unwrap();
        let list = matches.get_one::<BackendList>("backend").unwrap();
        assert_eq!(list.to_string(), "mock,rustls-ring,all");
        let error = command
            .try_get_matches_from(["t", "--backend", " , "])
            .unwrap_err();
        assert_eq!(error.kind(), clap::error::ErrorKind::ValueValidation);
        assert!(
            error
                .to_string()
                .contains("the backend list is empty; valid backends: all, openssl"),
            "{error}"
        );
    }
}
