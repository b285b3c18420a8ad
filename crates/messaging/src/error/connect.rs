//! [`ConnectError`]: why a client could not reach a media driver.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// Why [`Client::connect`](crate::Client) could not reach a media driver.
#[derive(Debug)]
#[non_exhaustive]
pub enum ConnectError {
    /// There is no `cnc.dat` in the directory: no media driver was ever started there.
    NoDriver {
        /// The Aeron directory that was tried.
        dir: PathBuf,
    },
    /// The path given as the Aeron directory is a file, not a directory.
    NotADirectory {
        /// The path that was tried.
        dir: PathBuf,
    },
    /// `cnc.dat` exists but is not a media driver's: garbage, truncated, unreadable, or never
    /// initialised by the driver that created it.
    BadCnc {
        /// The Aeron directory that was tried.
        dir: PathBuf,
        /// What is wrong with `cnc.dat`, as the rest of a sentence that starts with its path.
        detail: String,
    },
    /// `cnc.dat` exists but the driver has not updated its heartbeat within the driver timeout.
    DriverDead {
        /// The Aeron directory that was tried.
        dir: PathBuf,
        /// How old the last heartbeat is.
        heartbeat_age: Duration,
    },
    /// The driver speaks a command-and-control version this client does not.
    VersionMismatch {
        /// The Aeron directory that was tried.
        dir: PathBuf,
        /// What the client or driver said.
        detail: String,
    },
    /// The driver timeout (`ClientBuilder::driver_timeout`, `AERON_DRIVER_TIMEOUT`) is not one
    /// this client can use: under [`MIN_DRIVER_TIMEOUT`](crate::MIN_DRIVER_TIMEOUT), past
    /// [`MAX_DRIVER_TIMEOUT`](crate::MAX_DRIVER_TIMEOUT), or
    /// not a number of milliseconds.
    BadDriverTimeout {
        /// What is wrong and how to fix it.
        detail: String,
    },
    /// This process may not use the driver's files: the driver runs as another user, and its
    /// directory or `cnc.dat` does not let this one read and write them.
    PermissionDenied {
        /// The Aeron directory that was tried.
        dir: PathBuf,
        /// What was refused.
        detail: String,
    },
    /// The client's conductor thread could not start, or could not be pinned to the core
    /// [`ClientBuilder::conductor_core`](crate::ClientBuilder::conductor_core) named.
    ConductorThread {
        /// The Aeron directory that was tried.
        dir: PathBuf,
        /// Why the thread did not start or was not pinned.
        source: crate::SpawnError,
    },
    /// Anything else the client reported while connecting.
    Client {
        /// The Aeron directory that was tried.
        dir: PathBuf,
        /// What the client said.
        detail: String,
    },
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadDriverTimeout { detail } => write!(f, "cannot connect: {detail}"),
            Self::PermissionDenied { dir, detail } => write!(
                f,
                "no access to the media driver at {}: {detail}; run as the driver's user, or as a member of its \
                 group with the driver started under a umask that lets the group read and write (e.g. umask 007), \
                 or start a driver of your own in another directory (ClientBuilder::dir, AERON_DIR)",
                dir.display()
            ),
            Self::NoDriver { dir } => write!(
                f,
                "no media driver at {}: {} is missing; start one there (aeronmd, the Java MediaDriver, or an \
                 EmbeddedDriver), or connect to the directory of a running one (ClientBuilder::dir, AERON_DIR)",
                dir.display(),
                dir.join("cnc.dat").display()
            ),
            Self::NotADirectory { dir } => write!(
                f,
                "no media driver at {}: it is a file, not a directory; connect to the media driver's directory \
                 (the one holding cnc.dat) with ClientBuilder::dir or AERON_DIR",
                dir.display()
            ),
            Self::BadCnc { dir, detail } => write!(
                f,
                "no usable media driver at {}: {} {detail}; start a media driver there (after deleting the \
                 stale directory), or connect to a running driver's directory (ClientBuilder::dir, AERON_DIR)",
                dir.display(),
                dir.join("cnc.dat").display()
            ),
            Self::DriverDead { dir, heartbeat_age } => write!(
                f,
                "media driver at {} is not running: its last heartbeat is {:.1} s old; restart the driver \
                 (or delete the stale directory), or connect to a running driver's directory \
                 (ClientBuilder::dir, AERON_DIR)",
                dir.display(),
                heartbeat_age.as_secs_f64()
            ),
            Self::VersionMismatch { dir, detail } => write!(
                f,
                "media driver at {} speaks another Aeron protocol version ({detail}); use a 1.x driver",
                dir.display()
            ),
            Self::ConductorThread { dir, source } => write!(
                f,
                "could not start the client's conductor thread for the media driver at {} (its core is \
                 ClientBuilder::conductor_core's; None leaves it unpinned): {source}",
                dir.display()
            ),
            Self::Client { dir, detail } => write!(
                f,
                "could not connect to the media driver at {}: {detail}; check that the driver is running and \
                 that ClientBuilder::dir or AERON_DIR names its directory",
                dir.display()
            ),
        }
    }
}

impl std::error::Error for ConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::ConductorThread { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_driver_message_names_the_dir_and_the_fix() {
        let e = ConnectError::NoDriver {
            dir: "/nonexistent".into(),
        };
        let s = e.to_string();
        assert!(s.contains("/nonexistent/cnc.dat"), "{s}");
        assert!(s.contains("AERON_DIR"), "{s}");
    }
}
