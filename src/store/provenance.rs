//! What a stored run says about how it was made, beyond its host and
//! libraries: the tool version, the command line and when it finished
//! (for the HTML report's provenance).

use anyhow::Result;
use rusqlite::OptionalExtension;

use super::Store;

/// How a run was started and when it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunCommand {
    pub tool_version: String,
    pub command_line: String,
    pub finished_at: Option<String>,
}

impl Store {
    /// The tool version, command line and end time of a run; `None` if
    /// there is no such run.
    pub fn load_run_command(&self, run_id: i64) -> Result<Option<RunCommand>> {
        Ok(self
            .connection
            .query_row(
                "SELECT tool_version, command_line, finished_at FROM runs WHERE id = ?1",
                [run_id],
                |row| {
                    Ok(RunCommand {
                        tool_version: row.get(0)?,
                        command_line: row.get(1)?,
                        finished_at: row.get(2)?,
                    })
                },
            )
            .optional()?)
    }
}
