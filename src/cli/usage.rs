//! Usage errors: an option, or a combination of options, that a command
//! refuses before anything runs (exit code 2). clap's own refusals (an
//! unknown name, a bad number, two options that exclude each other) come
//! first, from the argument types and their attributes in this module's
//! siblings; the checks that need more than one option's text (a
//! command's resolve step, [`super::resolve`]) and the few that need the
//! registry or the store (in `app`) return a [`UsageError`].

/// An error in the command line: exit code 2, reported before anything runs.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// A usage error as an `anyhow::Error`, for `?` in a command's checks.
pub fn usage(error: impl std::fmt::Display) -> anyhow::Error {
    UsageError(error.to_string()).into()
}
