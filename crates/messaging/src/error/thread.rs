//! The errors of this process's own threads: [`SpawnError`] (a pinned thread) and
//! [`ParseIdleError`] (an idle strategy's name).

use std::fmt;

/// An idle strategy name that is not one of Aeron's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseIdleError {
    pub(crate) given: String,
}

impl fmt::Display for ParseIdleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown idle strategy {:?}: use one of spin, noop, yield, sleep-ns[:N] (sleep N ns, N from 1 \
             to 1000000000, e.g. sleep-ns:1000) or backoff",
            self.given
        )
    }
}

impl std::error::Error for ParseIdleError {}

/// Why a pinned thread could not be started.
#[derive(Debug)]
#[non_exhaustive]
pub enum SpawnError {
    /// The OS refused to create the thread.
    Spawn(std::io::Error),
    /// The requested core does not exist or is not in this process's CPU set.
    NoSuchCore {
        /// The core asked for.
        core: usize,
        /// The cores this process may run on.
        available: Vec<usize>,
    },
    /// Setting the affinity failed (e.g. forbidden by a cgroup cpuset).
    PinFailed {
        /// The core asked for.
        core: usize,
    },
    /// The thread's name holds a NUL byte, which no thread name may.
    BadName {
        /// The name given.
        name: String,
    },
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Spawn(e) => write!(f, "could not start a thread: {e}"),
            Self::NoSuchCore { core, available } => write!(
                f,
                "core {core} does not exist or is not allowed for this process; choose one of {available:?}"
            ),
            Self::PinFailed { core } => write!(
                f,
                "could not pin the thread to core {core} (cpuset or permissions); pick another core or run without pinning"
            ),
            Self::BadName { name } => write!(f, "thread name {name:?} holds a NUL byte; name it without one"),
        }
    }
}

impl std::error::Error for SpawnError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Spawn(e) => Some(e),
            _ => None,
        }
    }
}
