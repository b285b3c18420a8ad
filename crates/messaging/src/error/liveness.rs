//! What a client reports on its own: [`LivenessError`] (why it lost its driver) and
//! [`AsyncError`] (what reaches the error handler).

use std::fmt;
use std::path::PathBuf;

/// Why a [`Client`](crate::Client) can no longer work with its media driver
/// ([`DriverLiveness::error`](crate::DriverLiveness::error)). Each is final for this client: its
/// publications and subscriptions no longer move. To carry on, build a new [`Client`](crate::Client)
/// once a driver runs at the directory again.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LivenessError {
    /// The driver closed in order (it wrote the null heartbeat of a clean shutdown).
    DriverClosed {
        /// The driver's directory.
        dir: PathBuf,
    },
    /// The driver's heartbeat is older than the driver timeout: it was killed, hangs or is
    /// stopped.
    DriverTimedOut {
        /// The driver's directory.
        dir: PathBuf,
        /// The driver timeout (`AERON_DRIVER_TIMEOUT`).
        timeout: std::time::Duration,
    },
    /// The driver timed this client out: the client did not keep in touch for longer than the
    /// driver's client liveness timeout (its process was paused or starved), and the driver
    /// closed what it held.
    ClientTimedOut {
        /// The driver's directory.
        dir: PathBuf,
    },
    /// The client's own conductor thread panicked and stopped (the panic's message went to
    /// stderr): nothing this client adds is answered any more, and the driver times it out.
    ConductorStopped {
        /// The driver's directory.
        dir: PathBuf,
    },
}

impl fmt::Display for LivenessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DriverClosed { dir } => write!(
                f,
                "media driver at {} closed (it shut down in order); build a new client once a driver runs there again",
                dir.display()
            ),
            Self::DriverTimedOut { dir, timeout } => write!(
                f,
                "media driver at {} stopped responding (no heartbeat for over {:.1} s, the driver timeout \
                 AERON_DRIVER_TIMEOUT): it was killed, hangs or is stopped; build a new client once a driver runs \
                 there again",
                dir.display(),
                timeout.as_secs_f64()
            ),
            Self::ClientTimedOut { dir } => write!(
                f,
                "media driver at {} timed this client out (the client was silent for longer than the driver's \
                 client liveness timeout, AERON_CLIENT_LIVENESS_TIMEOUT: its process was paused or starved) and \
                 closed its publications and subscriptions; build a new client",
                dir.display()
            ),
            Self::ConductorStopped { dir } => write!(
                f,
                "the conductor thread of this client of the media driver at {} panicked and stopped (its message \
                 is on stderr; please report it); build a new client",
                dir.display()
            ),
        }
    }
}

impl std::error::Error for LivenessError {}

/// An error the client reports on its own, not as the answer to one of your calls: it reaches
/// the [`ClientBuilder::error_handler`](crate::ClientBuilder::error_handler) (by default, a line
/// on stderr).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AsyncError {
    /// The client lost its media driver: delivered once, whichever check saw it first.
    Liveness(LivenessError),
    /// Anything else aeron-rs's conductor reported (a channel endpoint error, a registration
    /// error on a resource added earlier, ...), in its words.
    Client {
        /// What aeron-rs said.
        message: String,
    },
    /// An error the media driver logged (its distinct error log in `cnc.dat`, what Aeron's
    /// `ErrorStat` prints) since this client connected, or the embedded driver's work loop
    /// failing. Delivered once per new error and again each time the driver observes it anew.
    Driver {
        /// The driver's words.
        message: String,
        /// How many times the driver has observed it so far.
        observations: u32,
    },
}

impl fmt::Display for AsyncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Liveness(e) => e.fmt(f),
            Self::Client { message } => write!(f, "aeron client: {message}"),
            Self::Driver { message, observations } if *observations > 1 => {
                write!(f, "media driver ({observations} times): {message}")
            }
            Self::Driver { message, .. } => write!(f, "media driver: {message}"),
        }
    }
}

impl std::error::Error for AsyncError {}
