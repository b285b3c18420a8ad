//! Error types: one per operation, each message says what went wrong and how to fix it.
//!
//! aeron-rs reports everything through one mixed `AeronError`; it never crosses this crate's
//! public API. The mapping happens here, once.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use aeron_rs::utils::errors::AeronError;

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
            Self::Client { dir, detail } => write!(
                f,
                "could not connect to the media driver at {}: {detail}; check that the driver is running and \
                 that ClientBuilder::dir or AERON_DIR names its directory",
                dir.display()
            ),
        }
    }
}

impl std::error::Error for ConnectError {}

/// Why a publication or subscription could not be added.
#[derive(Debug)]
#[non_exhaustive]
pub enum AddError {
    /// The channel is not a well-formed Aeron URI (see [`validate_channel`](crate::validate_channel);
    /// e.g. `aeron:ipc`, `aeron:udp?endpoint=localhost:40123`).
    InvalidChannel {
        /// The channel as given.
        channel: String,
        /// Why it was rejected.
        reason: String,
    },
    /// The driver rejected the request (bad URI parameter, no space for the log buffers, ...).
    Rejected {
        /// The channel as given.
        channel: String,
        /// The stream id.
        stream_id: i32,
        /// The driver's own words.
        detail: String,
    },
    /// The driver did not answer within the driver timeout: it is probably dead.
    Timeout {
        /// The channel as given.
        channel: String,
        /// How long we waited.
        waited: Duration,
    },
    /// The client is closed (its driver timed it out, or it was closed).
    ClientClosed,
    /// The driver created the publication but this process could not map its log file (to
    /// read its status without aeron-rs's lock).
    LogUnreadable {
        /// The log file.
        path: std::path::PathBuf,
        /// The operating system's words.
        detail: String,
    },
    /// The publication's log file was mapped but does not have Aeron's layout as this client
    /// reads it (its term length, page size or length disagree): a driver of an incompatible
    /// version, or a file another program wrote.
    LogInvalid {
        /// The log file.
        path: std::path::PathBuf,
        /// What disagrees.
        detail: String,
    },
}

impl fmt::Display for AddError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidChannel { channel, reason } => write!(
                f,
                "invalid channel {channel:?}: {reason}; use an Aeron URI such as aeron:ipc or \
                 aeron:udp?endpoint=localhost:40123"
            ),
            Self::Rejected {
                channel,
                stream_id,
                detail,
            } => write!(f, "the media driver rejected {channel} stream {stream_id}: {detail}"),
            Self::Timeout { channel, waited } => write!(
                f,
                "the media driver did not answer for {channel} within {:.1} s; check that it is \
                 running (its heartbeat) and not overloaded",
                waited.as_secs_f64()
            ),
            Self::ClientClosed => {
                f.write_str("the Aeron client is closed (the driver timed it out or it was closed); connect again")
            }
            Self::LogUnreadable { path, detail } => write!(
                f,
                "could not map the publication's log {}: {detail}; run this process as the driver's user \
                 (or one its files are readable by)",
                path.display()
            ),
            Self::LogInvalid { path, detail } => write!(
                f,
                "the publication's log {} is not an Aeron log this client can write: {detail}; use a media \
                 driver of Aeron 1.x (this client reads its layout as Aeron 1.54's C client does) and report \
                 the driver's version if it is one",
                path.display()
            ),
        }
    }
}

impl std::error::Error for AddError {}

impl AddError {
    pub(crate) fn from_aeron(channel: &str, stream_id: i32, waited: Duration, e: AeronError) -> Self {
        match e {
            AeronError::DriverTimeout(_) => Self::Timeout {
                channel: channel.to_owned(),
                waited,
            },
            AeronError::ClientTimeoutException => Self::ClientClosed,
            AeronError::RegistrationException(_, detail) | AeronError::ChannelEndpointException(_, detail) => {
                Self::Rejected {
                    channel: channel.to_owned(),
                    stream_id,
                    detail,
                }
            }
            other => Self::Rejected {
                channel: channel.to_owned(),
                stream_id,
                detail: other.to_string(),
            },
        }
    }
}

/// Why [`Publication::offer`](crate::Publication::offer) or
/// [`Publication::try_claim`](crate::Publication::try_claim) did not publish.
///
/// Aeron's five negative results (`NOT_CONNECTED`, `BACK_PRESSURED`, `ADMIN_ACTION`,
/// `CLOSED`, `MAX_POSITION_EXCEEDED`) plus what the client can add. The first three are
/// transient: retry (see [`is_retryable`](Self::is_retryable)); the others are final.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OfferError {
    /// No subscriber is connected to this stream yet (transient).
    NotConnected,
    /// A subscriber is connected but behind; the publication limit is reached (transient).
    BackPressured,
    /// Aeron's admin action: the log rotated to a new term (or the publication was being
    /// updated) during the call; try again straight away (transient).
    AdminAction,
    /// The publication is closed (final).
    Closed,
    /// The stream reached its maximum position for this term length (final: start a new
    /// publication or use a larger term).
    MaxPositionExceeded,
    /// The message is longer than the publication accepts (final for this message).
    MessageTooLong {
        /// Bytes asked for.
        length: usize,
        /// The most the publication takes (for `try_claim`: one MTU's payload).
        max: usize,
    },
    /// aeron-rs returned something undocumented (final; please report it).
    Unexpected(i64),
    /// The client lost its media driver (final: see
    /// [`DriverLiveness::error`](crate::DriverLiveness::error) for why, and build a new client).
    ClientClosed,
}

impl OfferError {
    /// Whether the same offer may succeed if retried: true for `NotConnected`,
    /// `BackPressured` and `AdminAction`.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::NotConnected | Self::BackPressured | Self::AdminAction)
    }

    /// A stable snake_case name, for counters and reports (`back_pressured`, ...).
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Self::NotConnected => "not_connected",
            Self::BackPressured => "back_pressured",
            Self::AdminAction => "admin_action",
            Self::Closed => "closed",
            Self::ClientClosed => "client_closed",
            Self::MaxPositionExceeded => "max_position_exceeded",
            Self::MessageTooLong { .. } => "message_too_long",
            Self::Unexpected(_) => "unexpected",
        }
    }
}

impl fmt::Display for OfferError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotConnected => f.write_str("no subscriber is connected (retry, or start a subscriber)"),
            Self::BackPressured => f.write_str("back-pressured: the subscriber is behind (retry)"),
            Self::AdminAction => f.write_str("admin action: the log rotated to a new term (retry)"),
            Self::Closed => f.write_str("the publication is closed"),
            Self::ClientClosed => f.write_str(
                "the client lost its media driver (Client::liveness().error() says why); build a new client",
            ),
            Self::MaxPositionExceeded => {
                f.write_str("the stream reached its maximum position; use a larger term length or a new publication")
            }
            Self::MessageTooLong { length, max } => write!(
                f,
                "message of {length} bytes is longer than the {max} bytes this publication accepts"
            ),
            Self::Unexpected(code) => write!(f, "unexpected result {code} from the Aeron client"),
        }
    }
}

impl std::error::Error for OfferError {}

/// An idle strategy name that is not one of Aeron's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseIdleError {
    pub(crate) given: String,
}

impl fmt::Display for ParseIdleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown idle strategy {:?}: use one of spin, noop, yield, sleep-ns[:N] (sleep N ns, e.g. \
             sleep-ns:1000) or backoff",
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
        }
    }
}

impl std::error::Error for LivenessError {}

/// Why a [`Subscriber::poll`](crate::Subscriber::poll) or
/// [`controlled_poll`](crate::Subscriber::controlled_poll) read nothing and never will.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PollError {
    /// The client lost its media driver (final: see
    /// [`DriverLiveness::error`](crate::DriverLiveness::error) for why, and build a new client).
    ClientClosed,
    /// A frame in one publisher's log has a length no Aeron publisher writes (shorter than a
    /// header, or running past the end of its term): something other than an Aeron client wrote
    /// into the log. That image is no longer read (nothing past the frame is handed over); the
    /// subscription's other images still are. Returned once, by the poll that found it.
    MalformedFrame {
        /// The publisher's session.
        session_id: i32,
        /// The subscriber position at the frame.
        position: i64,
        /// The frame length found.
        frame_length: i32,
    },
}

impl fmt::Display for PollError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ClientClosed => f.write_str(
                "the client lost its media driver (Client::liveness().error() says why); build a new client",
            ),
            Self::MalformedFrame {
                session_id,
                position,
                frame_length,
            } => write!(
                f,
                "the log of session {session_id} holds a frame of length {frame_length} at position {position}, \
                 which no Aeron publisher writes: a process other than an Aeron client wrote into it; that \
                 publisher's image is no longer read (the subscription's others are): find what writes into \
                 the driver's directory"
            ),
        }
    }
}

impl std::error::Error for PollError {}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_and_launch_messages_speak_to_a_service_not_to_the_probe() {
        let dir = PathBuf::from("/dev/shm/aeron-x");
        let messages = [
            ConnectError::NoDriver { dir: dir.clone() }.to_string(),
            ConnectError::NotADirectory { dir: dir.clone() }.to_string(),
            ConnectError::BadCnc {
                dir: dir.clone(),
                detail: "is garbage".into(),
            }
            .to_string(),
            ConnectError::DriverDead {
                dir: dir.clone(),
                heartbeat_age: Duration::from_secs(30),
            }
            .to_string(),
            ConnectError::Client {
                dir: dir.clone(),
                detail: "x".into(),
            }
            .to_string(),
            DriverLaunchError::NoSpace {
                dir: dir.clone(),
                needed: 100 << 20,
                available: 10 << 20,
                term_length: 16 << 20,
            }
            .to_string(),
            DriverLaunchError::ActiveDriver {
                dir: dir.clone(),
                pid: Some(7),
                heartbeat_age: Duration::from_millis(3),
                process: crate::DriverProcessState::Running,
            }
            .to_string(),
            LivenessError::DriverClosed { dir: dir.clone() }.to_string(),
            LivenessError::DriverTimedOut {
                dir: dir.clone(),
                timeout: Duration::from_secs(10),
            }
            .to_string(),
            LivenessError::ClientTimedOut { dir }.to_string(),
        ];
        for m in messages {
            assert!(m.contains("/dev/shm/aeron-x"), "names the directory: {m}");
            for probe_words in ["--dir", "--driver-dir", "--term-length", "latency-", "the run"] {
                assert!(!m.contains(probe_words), "{probe_words:?} in: {m}");
            }
        }
    }

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

    #[test]
    fn only_the_three_transient_offer_results_are_retryable() {
        let retryable = [
            OfferError::NotConnected,
            OfferError::BackPressured,
            OfferError::AdminAction,
        ];
        let fatal = [
            OfferError::Closed,
            OfferError::MaxPositionExceeded,
            OfferError::MessageTooLong { length: 2, max: 1 },
            OfferError::Unexpected(-7),
            OfferError::ClientClosed,
        ];
        assert!(retryable.iter().all(OfferError::is_retryable));
        assert!(!fatal.iter().any(OfferError::is_retryable));
    }

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
