//! What a row measured, as a type: a TLS library (a backend, natively or
//! without CPU features), a server under test on its own library, a VPN
//! tunnel engine, or no library at all (bulk's plain rows). Every row of
//! every command, every stored cell and every provenance line names its
//! subject with a [`Subject`]; reports, `compare` and the notes match on
//! it instead of parsing a name back.
//!
//! A subject is written as one name, as rows, exports and the store's
//! key columns have always written it ("openssl", "openssl (generic)",
//! "nginx", "inprocess (generic)", "none"); the store keeps the subject's
//! kind beside the name ([`SubjectKind`]), so a stored row reads back
//! typed. The names of the four kinds never clash (a test checks it), so
//! an exported name alone reads back too ([`Subject::from_name`]).

use std::fmt;

use serde::Serialize;

use super::backend::BackendId;
use super::cpu::CpuFeatures;
use super::names::{parse_name, Named, UnknownName};
use super::server::ServerKind;
use super::tunnel::{EngineId, RowEngine};

/// What one row measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Subject {
    /// A TLS library tlslab links (a backend): both sides of each
    /// handshake are its (in process, or one of them in `serve
    /// --handshakes` elsewhere), measured with the CPU features it was
    /// let use. tlslab's embedded server in `handshake --server embedded`
    /// is its backend's row.
    Library(RowBackend),
    /// A server under test, a program on its own TLS library (nginx,
    /// Apache, HAProxy, Caddy), measured with tlslab's client; in `load`,
    /// the embedded server too.
    Server(ServerKind),
    /// A VPN tunnel engine (in process, or real daemons).
    Engine(RowEngine),
    /// No library: bulk's plain rows, whose bytes no TLS protects.
    Plain,
}

/// A backend as a row names it: the library and the CPU features it was
/// let use (`--cpu-features`), written "openssl" or "openssl (generic)".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RowBackend {
    pub backend: BackendId,
    pub cpu_features: CpuFeatures,
}

/// Which of the four kinds a subject is: the store's `subject_kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SubjectKind {
    Library,
    Server,
    Engine,
    Plain,
}

/// The name of the plain rows' subject: bulk's no-crypto rows.
pub const PLAIN_NAME: &str = "none";

impl SubjectKind {
    /// Every kind, in the order the store's CHECK lists them.
    pub const ALL: [SubjectKind; 4] = [
        SubjectKind::Library,
        SubjectKind::Server,
        SubjectKind::Engine,
        SubjectKind::Plain,
    ];

    /// The stored id: "library", "server", "engine", "plain".
    pub fn id(self) -> &'static str {
        match self {
            SubjectKind::Library => "library",
            SubjectKind::Server => "server",
            SubjectKind::Engine => "engine",
            SubjectKind::Plain => "plain",
        }
    }

    /// The kind whose stored id is `id`.
    pub fn from_id(id: &str) -> Option<SubjectKind> {
        Self::ALL.into_iter().find(|kind| kind.id() == id)
    }
}

impl Subject {
    /// A backend measured natively (every CPU feature the machine has).
    pub fn library(backend: BackendId) -> Self {
        Subject::Library(RowBackend {
            backend,
            cpu_features: CpuFeatures::Native,
        })
    }

    /// An engine measured natively.
    pub fn engine(engine: EngineId) -> Self {
        Subject::Engine(RowEngine::native(engine))
    }

    /// The same subject measured with `cpu_features` (a server or the
    /// plain rows, whose CPU features tlslab does not set, stay as they are).
    pub fn with_cpu_features(self, cpu_features: CpuFeatures) -> Self {
        match self {
            Subject::Library(row) => Subject::Library(RowBackend {
                cpu_features,
                ..row
            }),
            Subject::Engine(row) => Subject::Engine(RowEngine {
                cpu_features,
                ..row
            }),
            other => other,
        }
    }

    /// Which kind it is.
    pub fn kind(self) -> SubjectKind {
        match self {
            Subject::Library(_) => SubjectKind::Library,
            Subject::Server(_) => SubjectKind::Server,
            Subject::Engine(_) => SubjectKind::Engine,
            Subject::Plain => SubjectKind::Plain,
        }
    }

    /// The backend, if it is a library's row.
    pub fn backend(self) -> Option<BackendId> {
        match self {
            Subject::Library(row) => Some(row.backend),
            _ => None,
        }
    }

    /// The server, if it is a server under test.
    pub fn server(self) -> Option<ServerKind> {
        match self {
            Subject::Server(kind) => Some(kind),
            _ => None,
        }
    }

    /// The CPU features it was measured with: a library's or an engine's
    /// as set, native for the others.
    pub fn cpu_features(self) -> CpuFeatures {
        match self {
            Subject::Library(row) => row.cpu_features,
            Subject::Engine(row) => row.cpu_features,
            Subject::Server(_) | Subject::Plain => CpuFeatures::Native,
        }
    }

    /// The id of what it is, without the CPU features: "openssl" for
    /// "openssl (generic)", "nginx", "inprocess", "none".
    pub fn id(self) -> &'static str {
        match self {
            Subject::Library(row) => row.backend.id(),
            Subject::Server(kind) => kind.id(),
            Subject::Engine(row) => row.engine.id(),
            Subject::Plain => PLAIN_NAME,
        }
    }

    /// Its name as rows write it: the id, with " (generic)" for a row
    /// measured without CPU features.
    pub fn name(self) -> String {
        self.cpu_features().row_backend(self.id())
    }

    /// The subject of `kind` that [`Subject::name`] wrote as `name`: its
    /// id exactly, as stored, or failing that one of the value's aliases
    /// (a row stored under an id since renamed).
    pub fn parse(kind: SubjectKind, name: &str) -> Result<Self, UnknownName> {
        Self::parse_exact(kind, name).or_else(|error| Self::parse_alias(kind, name).ok_or(error))
    }

    /// The subject of `kind` whose name is exactly `name`.
    fn parse_exact(kind: SubjectKind, name: &str) -> Result<Self, UnknownName> {
        let (id, cpu_features) = CpuFeatures::of_row_backend(name);
        Ok(match kind {
            SubjectKind::Library => Subject::Library(RowBackend {
                backend: by_id(id)?,
                cpu_features,
            }),
            SubjectKind::Engine => Subject::Engine(RowEngine {
                engine: by_id(id)?,
                cpu_features,
            }),
            SubjectKind::Server if cpu_features == CpuFeatures::Native => {
                Subject::Server(by_id(id)?)
            }
            SubjectKind::Server => return Err(unknown::<ServerKind>(name)),
            SubjectKind::Plain if name == PLAIN_NAME => Subject::Plain,
            SubjectKind::Plain => {
                return Err(UnknownName {
                    kind: "plain subject",
                    given: name.to_string(),
                    valid: vec![PLAIN_NAME],
                })
            }
        })
    }

    /// The subject of `kind` one of whose values has `name`'s id as an alias.
    fn parse_alias(kind: SubjectKind, name: &str) -> Option<Self> {
        let (id, cpu_features) = CpuFeatures::of_row_backend(name);
        let subject = match kind {
            SubjectKind::Library => Subject::library(parse_name(id).ok()?),
            SubjectKind::Engine => Subject::engine(parse_name(id).ok()?),
            SubjectKind::Server if cpu_features == CpuFeatures::Native => {
                Subject::Server(parse_name(id).ok()?)
            }
            SubjectKind::Server | SubjectKind::Plain => return None,
        };
        Some(subject.with_cpu_features(cpu_features))
    }

    /// The subject a name stands for, whatever its kind: the kinds' names
    /// never clash, so an exported name reads back as the row's subject.
    /// Ids are matched before aliases: `inprocess` is the engine, not the
    /// embedded server that alias once named.
    pub fn from_name(name: &str) -> Result<Self, UnknownName> {
        SubjectKind::ALL
            .into_iter()
            .find_map(|kind| Self::parse_exact(kind, name).ok())
            .or_else(|| {
                SubjectKind::ALL
                    .into_iter()
                    .find_map(|kind| Self::parse_alias(kind, name))
            })
            .ok_or_else(|| UnknownName {
                kind: "subject",
                given: name.to_string(),
                valid: Self::valid_names(),
            })
    }

    /// Every listed name of every kind, as errors list them.
    fn valid_names() -> Vec<&'static str> {
        let mut names: Vec<&'static str> = Vec::new();
        names.extend(
            BackendId::ALL
                .iter()
                .filter(|id| id.listed())
                .map(|id| id.id()),
        );
        names.extend(ServerKind::ALL.iter().map(|kind| kind.id()));
        names.extend(EngineId::ALL.iter().map(|engine| engine.id()));
        names.push(PLAIN_NAME);
        names
    }

    /// Returns true if and only if it is a server under test that runs as
    /// a program of its own on its own TLS library (not tlslab's embedded
    /// server).
    pub fn is_program(self) -> bool {
        matches!(self, Subject::Server(kind) if kind != ServerKind::Embedded)
    }
}

/// The value of `T` whose id is exactly `id`.
fn by_id<T: Named>(id: &str) -> Result<T, UnknownName> {
    T::ALL
        .iter()
        .copied()
        .find(|value| value.id() == id)
        .ok_or_else(|| unknown::<T>(id))
}

/// The error for a name that is no stored id of `T`.
fn unknown<T: Named>(given: &str) -> UnknownName {
    UnknownName {
        kind: T::KIND,
        given: given.to_string(),
        valid: T::ALL
            .iter()
            .filter(|v| v.listed())
            .map(|v| v.id())
            .collect(),
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// Serialised as its name ("openssl (generic)"), as rows have always
/// been exported.
impl Serialize for Subject {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Subject {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = <String as serde::Deserialize>::deserialize(deserializer)?;
        Subject::from_name(&name).map_err(serde::de::Error::custom)
    }
}

/// The subject of a backend's native row.
impl From<BackendId> for Subject {
    fn from(backend: BackendId) -> Self {
        Subject::library(backend)
    }
}

impl From<RowEngine> for Subject {
    fn from(engine: RowEngine) -> Self {
        Subject::Engine(engine)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every subject of every kind, natively and without CPU features.
    fn every_subject() -> Vec<Subject> {
        let mut all = vec![Subject::Plain];
        for features in CpuFeatures::ALL {
            for backend in BackendId::ALL {
                all.push(Subject::library(*backend).with_cpu_features(*features));
            }
            for engine in EngineId::ALL {
                all.push(Subject::engine(*engine).with_cpu_features(*features));
            }
        }
        all.extend(ServerKind::ALL.iter().map(|kind| Subject::Server(*kind)));
        all
    }

    #[test]
    fn every_subject_reads_back_from_its_kind_and_name_and_from_its_name_alone() {
        for subject in every_subject() {
            let name = subject.name();
            assert_eq!(Subject::parse(subject.kind(), &name), Ok(subject), "{name}");
            assert_eq!(Subject::from_name(&name), Ok(subject), "{name}");
            let json = serde_json::to_string(&subject).unwrap();
            assert_eq!(json, format!("\"{name}\""));
            assert_eq!(serde_json::from_str::<Subject>(&json).unwrap(), subject);
            assert_eq!(
                SubjectKind::from_id(subject.kind().id()),
                Some(subject.kind())
            );
        }
    }

    #[test]
    fn no_two_subjects_share_a_name() {
        let names: Vec<String> = every_subject().iter().map(|s| s.name()).collect();
        for (i, name) in names.iter().enumerate() {
            assert!(
                !names[i + 1..].contains(name),
                "two subjects are named {name}"
            );
        }
    }

    #[test]
    fn rows_are_named_as_they_always_were() {
        use crate::scenario::CpuFeatures::Generic;
        assert_eq!(Subject::library(BackendId::Openssl).name(), "openssl");
        assert_eq!(
            Subject::library(BackendId::RustlsRing)
                .with_cpu_features(Generic)
                .name(),
            "rustls-ring (generic)"
        );
        assert_eq!(Subject::Server(ServerKind::Nginx).name(), "nginx");
        assert_eq!(
            Subject::engine(EngineId::Inprocess)
                .with_cpu_features(Generic)
                .name(),
            "inprocess (generic)"
        );
        assert_eq!(Subject::Plain.name(), "none");
        assert!(Subject::Server(ServerKind::Caddy).is_program());
        assert!(!Subject::Server(ServerKind::Embedded).is_program());
        assert!(!Subject::library(BackendId::Openssl).is_program());
        assert_eq!(
            Subject::from_name("inprocess"),
            Ok(Subject::engine(EngineId::Inprocess))
        );
        assert!(Subject::parse(SubjectKind::Server, "nginx (generic)").is_err());
        assert_eq!(
            Subject::parse(SubjectKind::Library, "ring (generic)"),
            Ok(Subject::library(BackendId::RustlsRing).with_cpu_features(Generic))
        );
        let error = Subject::from_name("gnutls").unwrap_err().to_string();
        assert!(error.contains("unknown subject 'gnutls'"), "{error}");
        assert!(
            error.contains("openssl") && error.contains("nginx"),
            "{error}"
        );
    }
}
