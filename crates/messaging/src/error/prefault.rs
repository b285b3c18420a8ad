//! [`PrefaultError`]: why the log buffers could not be faulted in.

use std::fmt;
use std::path::PathBuf;

/// Why [`Publication::prefault`](crate::Publication::prefault) or
/// [`Subscriber::prefault`](crate::Subscriber::prefault) could not fault the log buffers in.
#[derive(Debug)]
#[non_exhaustive]
pub enum PrefaultError {
    /// The subscription has no image yet: no publisher has connected, so there is no log
    /// mapped to prefault.
    NoImage {
        /// The subscription's channel.
        channel: String,
        /// The stream id.
        stream_id: i32,
    },
    /// The publication's log file is not mapped in this process.
    NotMapped {
        /// The log file.
        path: PathBuf,
    },
    /// The log file or `/proc/self/maps` could not be read to find the mappings.
    Inspect {
        /// What could not be read.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The kernel could not fault a range in (no memory, or no space left on `/dev/shm`).
    Populate {
        /// Which log.
        log: String,
        /// The start of the range.
        addr: usize,
        /// Its length in bytes.
        len: usize,
        /// The cause.
        source: std::io::Error,
    },
}

impl fmt::Display for PrefaultError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoImage { channel, stream_id } => write!(
                f,
                "{channel} stream {stream_id} has no image to prefault yet: call Subscriber::prefault after a \
                 publisher has connected (image_count() > 0)"
            ),
            Self::NotMapped { path } => write!(
                f,
                "the publication's log {} is not mapped in this process: prefault an open publication \
                 (and a media driver that keeps its logs in <aeron dir>/publications)",
                path.display()
            ),
            Self::Inspect { path, source } => write!(
                f,
                "could not read {} to find the log buffer mappings: {source}; prefault needs Linux's \
                 /proc/self/maps and an open publication whose log is in <aeron dir>/publications",
                path.display()
            ),
            Self::Populate { log, addr, len, source } => write!(
                f,
                "could not fault in {len} bytes of {log} at {addr:#x}: {source}; check free memory and \
                 free space on /dev/shm (df -h /dev/shm), or use a smaller term length"
            ),
        }
    }
}

impl std::error::Error for PrefaultError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Inspect { source, .. } | Self::Populate { source, .. } => Some(source),
            _ => None,
        }
    }
}
