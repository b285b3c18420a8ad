//! The CLI layer's one error: a flag, or a setting it leads to, refused before anything starts.

use std::fmt;

/// Bad input or an unusable setup, found before anything started (no driver, no child process,
/// no measurement). Its `Display` is the one line the program prints after `<program>: `: the
/// flag, the cause and the fix. The program exits with [`EXIT_SETUP`](super::EXIT_SETUP).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(String);

impl UsageError {
    /// The error with this one-line message.
    pub fn new(message: impl Into<String>) -> UsageError {
        UsageError(message.into())
    }

    /// The one-line message.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}
