//! [`TapError`]: starting the tap, naming its figures, writing its logs.

use std::fmt;
use std::path::PathBuf;

use super::SpawnError;

/// Why the tap could not start, take a figure, or write.
#[derive(Debug)]
#[non_exhaustive]
pub enum TapError {
    /// The tap's directory cannot be made or written.
    Dir {
        /// The directory.
        dir: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The directory holds an earlier tap's files, which new logs would mix with.
    NotEmpty {
        /// The directory.
        dir: PathBuf,
        /// One of those files.
        file: String,
    },
    /// A figure name with characters a file name or a log tag cannot carry.
    BadName {
        /// The name given.
        name: String,
    },
    /// A subscription's hop and end-to-end figures have one name: each message would count
    /// twice in it.
    SameFigure {
        /// The name given for both.
        name: String,
    },
    /// The writer thread could not start or be pinned.
    Spawn(SpawnError),
    /// Writing a log, the status file or the Prometheus textfile failed.
    Write {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A histogram could not be encoded for a log.
    Encode {
        /// The log.
        path: PathBuf,
        /// The encoder's message.
        detail: String,
    },
    /// The writer thread panicked: the last interval may be missing.
    WriterPanicked,
    /// A log was removed while the tap wrote it (a cleanup job, its directory deleted): what
    /// was written to it since is gone. The tap starts a new one.
    Removed {
        /// The log.
        path: PathBuf,
    },
    /// [`Tap::stop`](crate::tap::Tap::stop): some of the writer's writes failed (it went on
    /// after each). What was recorded is in `summary` all the same.
    WritesFailed {
        /// How many writes failed, one per file and interval
        /// ([`Tap::write_errors`](crate::tap::Tap::write_errors)).
        failed: u64,
        /// The first of them.
        first: Box<TapError>,
        /// What [`Tap::stop`](crate::tap::Tap::stop) returns without errors: every figure's
        /// totals (whole: counted before any write) and files (the logs miss the intervals
        /// whose write failed).
        summary: Box<crate::tap::TapSummary>,
    },
}

impl fmt::Display for TapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TapError::Dir { dir, source } => write!(
                f,
                "the tap cannot use {}: {source}; give it a directory this process may create and write",
                dir.display()
            ),
            TapError::NotEmpty { dir, file } => write!(
                f,
                "{} holds an earlier tap's {file}; move those files away or give the tap a new directory",
                dir.display()
            ),
            TapError::BadName { name } => write!(
                f,
                "figure name {name:?} is not a file name and log tag: use 1-64 letters, digits, '-', '_' or \
                 '.', not starting with '.' nor ending in '.' and digits (the logs' rotation suffix)"
            ),
            TapError::SameFigure { name } => write!(
                f,
                "the hop and end to end are both figure {name:?}; give end to end a name of its own"
            ),
            TapError::Spawn(e) => write!(f, "the tap's writer thread did not start: {e}"),
            TapError::Write { path, source } => write!(
                f,
                "the tap could not write {}: {source}; check the disk's space and the directory's permissions",
                path.display()
            ),
            TapError::Encode { path, detail } => write!(
                f,
                "the tap could not encode an interval for {}: {detail}; this is a bug, please report it",
                path.display()
            ),
            TapError::WriterPanicked => write!(
                f,
                "the tap's writer thread panicked, so its last interval may be missing; please report it"
            ),
            TapError::Removed { path } => write!(
                f,
                "{} was removed while the tap wrote it, so what was written to it since is gone; the tap started a \
                 new one: keep the tap's directory out of cleanup jobs",
                path.display()
            ),
            TapError::WritesFailed { failed, first, .. } => write!(
                f,
                "{failed} of the tap's writes failed, so its logs miss those intervals (the totals are whole); \
                 the first: {first}"
            ),
        }
    }
}

impl std::error::Error for TapError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TapError::Dir { source, .. } | TapError::Write { source, .. } => Some(source),
            TapError::Spawn(e) => Some(e),
            TapError::WritesFailed { first, .. } => Some(first.as_ref()),
            _ => None,
        }
    }
}
