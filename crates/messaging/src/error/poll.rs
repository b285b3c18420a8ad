//! [`PollError`]: why a poll read nothing and never will.

use std::fmt;

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
