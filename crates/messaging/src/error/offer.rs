//! [`OfferError`]: why an offer or a claim did not publish, Aeron's negative results as one enum.

use std::fmt;

/// Why [`Publication::offer`](crate::Publication::offer) or
/// [`Publication::try_claim`](crate::Publication::try_claim) did not publish.
///
/// Aeron's negative results (`NOT_CONNECTED`, `BACK_PRESSURED`, `ADMIN_ACTION`,
/// `MAX_POSITION_EXCEEDED`) plus what the client can add. The first three are transient: retry
/// (see [`is_retryable`](Self::is_retryable)); the others are final. Aeron's `CLOSED` never
/// happens here: a publication closes only when it is dropped, and a client that lost its
/// driver says [`ClientClosed`](Self::ClientClosed).
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
    /// The publication is closed (final). Never returned: a publication closes only when it is
    /// dropped; a client that lost its driver returns [`ClientClosed`](Self::ClientClosed).
    #[deprecated(
        since = "0.2.0",
        note = "never returned since the publications write their logs themselves (a publication closes only \
                when dropped); match on OfferError::ClientClosed instead"
    )]
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
    /// aeron-rs returned something undocumented (final; please report it). Never returned: the
    /// publications write their logs themselves, without aeron-rs's offer and its result codes.
    #[deprecated(
        since = "0.2.0",
        note = "never returned since the publications write their logs themselves instead of calling \
                aeron-rs's offer; match on the other variants, with a wildcard arm (OfferError is \
                non_exhaustive), instead"
    )]
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
    #[allow(deprecated)] // Exhaustive on purpose: callers can still construct the deprecated variants.
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
    #[allow(deprecated)] // Exhaustive on purpose: callers can still construct the deprecated variants.
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
                "message of {length} bytes is longer than the {max} bytes this publication takes at once: \
                 send it in parts, or raise the limit: a try_claim holds one frame (max_payload_length: mtu= \
                 in the channel), offer fragments up to max_message_length (an eighth of the term: \
                 term-length=), so offer a message too long to claim"
            ),
            Self::Unexpected(code) => write!(f, "unexpected result {code} from the Aeron client"),
        }
    }
}

impl std::error::Error for OfferError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(deprecated)] // The deprecated variants can still be constructed, and are final.
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
    fn a_message_too_long_says_how_to_send_it() {
        let e = OfferError::MessageTooLong {
            length: 1377,
            max: 1376,
        }
        .to_string();
        assert!(
            e.starts_with("message of 1377 bytes is longer than the 1376 bytes"),
            "{e}"
        );
        assert!(
            e.contains("mtu=") && e.contains("term-length=") && e.contains("offer a message too long to claim"),
            "{e}"
        );
    }
}
