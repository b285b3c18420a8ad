//! [`DriverLaunchError`]: why the embedded media driver could not be launched.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// A live driver's heartbeat is at most its timer interval old (1 s in Aeron's drivers).
const STALE_HEARTBEAT: Duration = Duration::from_millis(1_500);

/// Why the embedded media driver could not be launched.
#[derive(Debug)]
#[non_exhaustive]
pub enum DriverLaunchError {
    /// Not enough free space where the driver's directory goes (usually /dev/shm).
    NoSpace {
        /// The directory.
        dir: PathBuf,
        /// Bytes needed (estimate: the logs the caller expects, `EmbeddedDriverBuilder::expected_logs`,
        /// of three terms each, plus 16 MiB).
        needed: u64,
        /// Bytes free.
        available: u64,
        /// The IPC term length the estimate is for, in bytes.
        term_length: u64,
    },
    /// The directory could not be created or prepared.
    Dir {
        /// The directory.
        dir: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A configuration value was rejected.
    Config {
        /// Which setting.
        setting: &'static str,
        /// The driver's words.
        detail: String,
    },
    /// A media driver is running in the directory: starting another there would wipe its files.
    ActiveDriver {
        /// The directory.
        dir: PathBuf,
        /// The running driver's process id, from its `cnc.dat`.
        pid: Option<u32>,
        /// How old its heartbeat is.
        heartbeat_age: Duration,
        /// What this host says about that process: running, or not visible from here (a
        /// driver whose process is gone, a zombie or a reused pid does not stop a launch).
        process: crate::DriverProcessState,
    },
    /// The driver failed to start.
    Start {
        /// The driver's words.
        detail: String,
    },
}

impl fmt::Display for DriverLaunchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoSpace {
                dir,
                needed,
                available,
                term_length,
            } => write!(
                f,
                "not enough space for the media driver's term buffers in {}: needs about {} MiB ({}), {} MiB \
                 free; use a smaller term length (EmbeddedDriverBuilder::ipc_term_length, \
                 AERON_IPC_TERM_BUFFER_LENGTH), give the tmpfs more room (mount -o remount,size=2G /dev/shm; in \
                 Docker: docker run --shm-size=2g) or put the driver where there is room (EmbeddedDriverBuilder::dir)",
                dir.display(),
                needed.div_ceil(1 << 20),
                no_space_estimate(*needed, *term_length),
                available / (1 << 20)
            ),
            Self::Dir { dir, source } => write!(
                f,
                "could not prepare the media driver directory {}: {source}",
                dir.display()
            ),
            Self::Config { setting, detail } => {
                write!(f, "media driver setting {setting} was rejected: {detail}")
            }
            Self::ActiveDriver {
                dir,
                pid,
                heartbeat_age,
                process,
            } => {
                write!(
                    f,
                    "a media driver{} is running at {} (heartbeat {} ms ago; {})",
                    pid.map(|p| format!(" (pid {p})")).unwrap_or_default(),
                    dir.display(),
                    heartbeat_age.as_millis(),
                    process.describe(*pid)
                )?;
                if *process == crate::DriverProcessState::Running && *heartbeat_age > STALE_HEARTBEAT {
                    f.write_str(
                        ": its process is alive but has not beaten for over a second (stopped, or starved of CPU?); \
                         it counts as dead once its heartbeat is older than the driver timeout",
                    )?;
                }
                f.write_str(
                    ": connect to it with Client::connect, or start this one in another directory \
                     (EmbeddedDriverBuilder::dir)",
                )
            }
            Self::Start { detail } => write!(f, "the media driver did not start: {detail}"),
        }
    }
}

/// How [`DriverLaunchError::NoSpace`]'s estimate adds up: `2 logs x 3 terms of 64 MiB + 16 MiB`
/// (the estimate is whole logs of three terms plus 16 MiB, so the count is read back from it).
fn no_space_estimate(needed: u64, term_length: u64) -> String {
    let term = if term_length.is_multiple_of(1 << 20) {
        format!("{} MiB", term_length >> 20)
    } else {
        format!("{} KiB", term_length.div_ceil(1 << 10))
    };
    let logs = needed.saturating_sub(16 << 20) / (3 * term_length).max(1);
    let plural = if logs == 1 { "" } else { "s" };
    format!("{logs} log{plural} x 3 terms of {term} + 16 MiB")
}

impl std::error::Error for DriverLaunchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Dir { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_space_says_how_the_estimate_adds_up() {
        let no_space = |logs: u64, term: u64| {
            DriverLaunchError::NoSpace {
                dir: "/dev/shm".into(),
                needed: logs * 3 * term + (16 << 20),
                available: 8 << 20,
                term_length: term,
            }
            .to_string()
        };
        let m = no_space(2, 1 << 20);
        assert!(
            m.contains("needs about 22 MiB (2 logs x 3 terms of 1 MiB + 16 MiB), 8 MiB free"),
            "{m}"
        );
        let m = no_space(1, 64 << 10);
        assert!(m.contains("(1 log x 3 terms of 64 KiB + 16 MiB)"), "{m}");
    }
}
