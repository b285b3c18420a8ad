//! Why a publisher's send loop (latency-pub, ping) stopped before its last planned message:
//! the report's `incomplete_reason`, and whose loss it was.

use std::fmt;
use std::time::Duration;

use aeron_latency::messaging::OfferError;
use aeron_latency::wire::EncodeError;

/// Why the send loop stopped before the last planned message. `Display` is the report's
/// `incomplete_reason` (before the driver's description or the subscriber's progress is added).
#[derive(Debug, Clone, PartialEq)]
pub enum Stop {
    /// Message `seq` did not fit the claimed range (a bug: sizes are checked before the run).
    Encode {
        /// Sequence number.
        seq: u64,
        /// Why.
        error: EncodeError,
    },
    /// The media driver stopped responding; `sent` messages had gone out.
    DriverLost {
        /// Sequence number.
        seq: u64,
        /// Messages sent.
        sent: u64,
    },
    /// Ping stopped waiting for the echo of `seq` because the driver stopped responding.
    EchoDriverLost {
        /// Sequence number.
        seq: u64,
    },
    /// SIGINT or SIGTERM arrived while ping waited for the echo of `seq` (sent, neither echoed
    /// nor lost: its echo is not counted).
    EchoInterrupted {
        /// Sequence number.
        seq: u64,
    },
    /// No echo of `seq` within `--wait`.
    EchoTimeout {
        /// Sequence number.
        seq: u64,
        /// `--wait`.
        wait: Duration,
    },
    /// An offer failed in a way retrying cannot fix.
    Offer {
        /// Sequence number.
        seq: u64,
        /// Aeron's outcome.
        error: OfferError,
    },
    /// Not connected for longer than `--wait`.
    SubscriberGone {
        /// Sequence number.
        seq: u64,
        /// `--wait`.
        wait: Duration,
    },
    /// SIGINT or SIGTERM arrived; `sent` messages had gone out (the end marker says so).
    Interrupted {
        /// Sequence number.
        seq: u64,
        /// Messages sent.
        sent: u64,
    },
    /// Back-pressured for longer than twice `--wait`.
    BackPressure {
        /// Sequence number.
        seq: u64,
        /// How long, ns.
        for_ns: i64,
    },
}

impl Stop {
    /// The run stopped because the driver stopped responding.
    #[must_use]
    pub fn driver_lost(&self) -> bool {
        matches!(self, Stop::DriverLost { .. } | Stop::EchoDriverLost { .. })
    }

    /// The run stopped because the subscriber went away (not connected, or back-pressure that
    /// never cleared).
    #[must_use]
    pub fn subscriber_lost(&self) -> bool {
        matches!(self, Stop::SubscriberGone { .. } | Stop::BackPressure { .. })
    }
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stop::Encode { seq, error } => write!(f, "could not encode message {seq}: {error}"),
            Stop::DriverLost { seq, sent } => write!(f, "stopped at message {seq} ({sent} sent)"),
            Stop::EchoDriverLost { seq } => write!(f, "stopped waiting for the echo of message {seq}"),
            Stop::EchoInterrupted { seq } => write!(
                f,
                "{} (stopped waiting for the echo of message {seq}, {} sent; that echo is not counted, neither \
                 received nor lost)",
                crate::sys::signals::INTERRUPTED_REASON,
                seq + 1
            ),
            Stop::EchoTimeout { seq, wait } => write!(
                f,
                "no echo of message {seq} within --wait {:.1} s: pong (latency-sub --mode rtt) stopped echoing or \
                 uses another --pong-channel/--pong-stream",
                wait.as_secs_f64()
            ),
            Stop::Offer { seq, error } => write!(f, "publishing stopped at message {seq}: {error}"),
            Stop::Interrupted { seq, sent } => write!(
                f,
                "{} (stopped at message {seq}, {sent} sent)",
                crate::sys::signals::INTERRUPTED_REASON
            ),
            Stop::SubscriberGone { seq, wait } => write!(
                f,
                "the subscriber went away: not connected for {:.1} s at message {seq}",
                wait.as_secs_f64()
            ),
            Stop::BackPressure { seq, for_ns } => write!(
                f,
                "back-pressure never cleared: {:.1} s at message {seq}; the subscriber stopped reading",
                *for_ns as f64 / 1e9
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The messages the publisher's loop wrote as `abort` strings before `Stop` existed; the
    /// report's `incomplete_reason` must read the same.
    #[test]
    fn every_stop_reads_as_the_reason_reports_always_gave_and_says_whose_loss_it_was() {
        let wait = Duration::from_millis(2_500);
        let cases = [
            (
                Stop::DriverLost { seq: 7, sent: 8 },
                "stopped at message 7 (8 sent)",
                true,
                false,
            ),
            (
                Stop::DriverLost { seq: 7, sent: 7 },
                "stopped at message 7 (7 sent)",
                true,
                false,
            ),
            (
                Stop::EchoDriverLost { seq: 3 },
                "stopped waiting for the echo of message 3",
                true,
                false,
            ),
            (
                Stop::EchoInterrupted { seq: 3 },
                "interrupted (SIGINT or SIGTERM): the report holds what was measured until then (stopped waiting \
                 for the echo of message 3, 4 sent; that echo is not counted, neither received nor lost)",
                false,
                false,
            ),
            (
                Stop::EchoTimeout { seq: 3, wait },
                "no echo of message 3 within --wait 2.5 s: pong (latency-sub --mode rtt) stopped echoing or uses \
                 another --pong-channel/--pong-stream",
                false,
                false,
            ),
            (
                Stop::Offer {
                    seq: 9,
                    error: OfferError::MaxPositionExceeded,
                },
                "publishing stopped at message 9: the stream reached its maximum position; use a larger term \
                 length or a new publication",
                false,
                false,
            ),
            (
                Stop::SubscriberGone { seq: 4, wait },
                "the subscriber went away: not connected for 2.5 s at message 4",
                false,
                true,
            ),
            (
                Stop::BackPressure {
                    seq: 5,
                    for_ns: 5_000_000_000,
                },
                "back-pressure never cleared: 5.0 s at message 5; the subscriber stopped reading",
                false,
                true,
            ),
        ];
        for (stop, text, driver, subscriber) in cases {
            assert_eq!(stop.to_string(), text);
            assert_eq!(
                (stop.driver_lost(), stop.subscriber_lost()),
                (driver, subscriber),
                "{stop:?}"
            );
        }
    }
}
