//! What a stored run is and how it ended, as types: the kind of study a run
//! holds (`runs.kind`) and its status (`runs.status`). Each is stored as
//! its id, text a person can query by hand; in code a match on the enum
//! makes a new kind a compile error wherever it must be handled.

use std::fmt;

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

/// The study a run holds: one per measuring command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RunKind {
    Handshake,
    Capacity,
    Bulk,
    Tunnel,
    Speed,
    Cost,
    Load,
}

impl RunKind {
    /// Every kind, in the order `report --list` explains them.
    pub const ALL: [RunKind; 7] = [
        RunKind::Handshake,
        RunKind::Capacity,
        RunKind::Bulk,
        RunKind::Tunnel,
        RunKind::Speed,
        RunKind::Cost,
        RunKind::Load,
    ];

    /// The kind's id in the store and in exports ("handshake", "speed"...).
    pub fn id(self) -> &'static str {
        match self {
            RunKind::Handshake => "handshake",
            RunKind::Capacity => "capacity",
            RunKind::Bulk => "bulk",
            RunKind::Tunnel => "tunnel",
            RunKind::Speed => "speed",
            RunKind::Cost => "cost",
            RunKind::Load => "load",
        }
    }

    /// The kind with this id, if there is one.
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.id() == id)
    }
}

impl fmt::Display for RunKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// In exports, as its id.
impl serde::Serialize for RunKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.id())
    }
}

impl ToSql for RunKind {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.id()))
    }
}

/// A kind this tlslab does not know is an error of the read, naming it.
impl FromSql for RunKind {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let id = value.as_str()?;
        Self::from_id(id)
            .ok_or_else(|| FromSqlError::Other(format!("unknown run kind '{id}'").into()))
    }
}

/// How a run ended: `Incomplete` from its start until it is marked
/// `Complete` at its end, so a run stopped by Ctrl-C, a crash or kill -9
/// stays incomplete with every cell it finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunStatus {
    Incomplete,
    Complete,
}

impl RunStatus {
    /// The status's id in the store ("incomplete", "complete").
    pub fn id(self) -> &'static str {
        match self {
            RunStatus::Incomplete => "incomplete",
            RunStatus::Complete => "complete",
        }
    }

    /// Returns true if and only if the run finished.
    pub fn is_complete(self) -> bool {
        self == RunStatus::Complete
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// In exports, as its id.
impl serde::Serialize for RunStatus {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.id())
    }
}

impl ToSql for RunStatus {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.id()))
    }
}

impl FromSql for RunStatus {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        match value.as_str()? {
            "incomplete" => Ok(RunStatus::Incomplete),
            "complete" => Ok(RunStatus::Complete),
            other => Err(FromSqlError::Other(
                format!("unknown run status '{other}'").into(),
            )),
        }
    }
}

/// A cell's status is stored as its id.
impl ToSql for crate::measure::CellStatus {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.id()))
    }
}

impl FromSql for crate::measure::CellStatus {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let id = value.as_str()?;
        Self::from_id(id)
            .ok_or_else(|| FromSqlError::Other(format!("unknown cell status '{id}'").into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_back_from_its_id() {
        for kind in RunKind::ALL {
            assert_eq!(RunKind::from_id(kind.id()), Some(kind));
        }
        assert_eq!(RunKind::from_id("nope"), None);
    }
}
