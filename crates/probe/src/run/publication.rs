//! The publication a run writes with (`--publication`): messaging's exclusive one (the
//! default) or its concurrent one (`shared`). One enum, so the hot loops are written once;
//! each call is one well-predicted branch.

use aeron_latency::messaging::{
    AddError, Claim, Client, ExclusivePublisher, OfferError, PrefaultError, PrefaultStats, Publication, Publisher,
};

use crate::model::PublicationKind;

/// Either publication.
#[derive(Debug)]
pub enum AnyPublication {
    /// `Client::exclusive_publication`.
    Exclusive(ExclusivePublisher),
    /// `Client::publication`.
    Shared(Publisher),
}

impl AnyPublication {
    /// Adds a publication of `kind` and waits for the driver.
    ///
    /// # Errors
    /// The library's [`AddError`].
    pub fn add(client: &Client, kind: PublicationKind, channel: &str, stream: i32) -> Result<Self, AddError> {
        Ok(match kind {
            PublicationKind::Exclusive => Self::Exclusive(client.exclusive_publication(channel, stream)?),
            PublicationKind::Shared => Self::Shared(client.publication(channel, stream)?),
        })
    }

    /// Which one it is.
    #[must_use]
    pub fn kind(&self) -> PublicationKind {
        match self {
            Self::Exclusive(_) => PublicationKind::Exclusive,
            Self::Shared(_) => PublicationKind::Shared,
        }
    }
}

/// `$call` on whichever publication `$self` holds.
macro_rules! on_either {
    ($self:expr, $p:ident => $call:expr) => {
        match $self {
            AnyPublication::Exclusive($p) => $call,
            AnyPublication::Shared($p) => $call,
        }
    };
}

impl Publication for AnyPublication {
    #[inline]
    fn offer(&mut self, msg: &[u8]) -> Result<u64, OfferError> {
        on_either!(self, p => p.offer(msg))
    }
    #[inline]
    fn offer_with_reserved_value(&mut self, msg: &[u8], reserved_value: i64) -> Result<u64, OfferError> {
        on_either!(self, p => p.offer_with_reserved_value(msg, reserved_value))
    }
    #[inline]
    fn try_claim(&mut self, len: usize) -> Result<Claim<'_>, OfferError> {
        on_either!(self, p => p.try_claim(len))
    }
    fn position(&self) -> Result<i64, OfferError> {
        on_either!(self, p => p.position())
    }
    fn is_connected(&self) -> bool {
        on_either!(self, p => p.is_connected())
    }
    fn max_payload_length(&self) -> usize {
        on_either!(self, p => p.max_payload_length())
    }
    fn max_message_length(&self) -> usize {
        on_either!(self, p => p.max_message_length())
    }
    fn term_length(&self) -> usize {
        on_either!(self, p => p.term_length())
    }
    fn session_id(&self) -> i32 {
        on_either!(self, p => p.session_id())
    }
    fn channel(&self) -> &str {
        on_either!(self, p => p.channel())
    }
    fn stream_id(&self) -> i32 {
        on_either!(self, p => p.stream_id())
    }
    fn prefault(&self) -> Result<PrefaultStats, PrefaultError> {
        on_either!(self, p => p.prefault())
    }
}
