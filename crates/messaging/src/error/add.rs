//! [`AddError`]: why a publication or subscription could not be added; aeron-rs's errors
//! mapped to it.

use std::fmt;
use std::time::Duration;

use aeron_rs::utils::errors::AeronError;

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
    /// A pending add's `poll` ([`PendingSubscription`](crate::PendingSubscription),
    /// [`PendingPublication`](crate::PendingPublication),
    /// [`PendingExclusivePublication`](crate::PendingExclusivePublication)) after it returned
    /// its handle: it hands it over once.
    HandedOver,
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
            Self::HandedOver => f.write_str(
                "this pending add already returned its handle; poll a pending add until it returns Some, then \
                 use what it returned",
            ),
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
                    detail: super::aeron_error_line(&detail).unwrap_or(detail),
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
