//! The publication a run writes with (`--publication`): messaging's exclusive one (the
//! default) or its concurrent one. The run code is generic over messaging's
//! [`PublicationKind`]; the flag picks the kind once, where a run starts ([`Add`]).

use aeron_latency::messaging::{AddError, Client, Concurrent, Exclusive, Publication, PublicationKind};

/// A kind of publication the probe can add.
pub trait Add: PublicationKind {
    /// The probe's name for it (`--publication`, the report).
    const KIND: crate::model::PublicationKind;

    /// Adds one and waits for the driver (`Client::exclusive_publication` or
    /// `Client::publication`).
    ///
    /// # Errors
    /// The library's [`AddError`].
    fn add(client: &Client, channel: &str, stream: i32) -> Result<Publication<Self>, AddError>;
}

impl Add for Exclusive {
    const KIND: crate::model::PublicationKind = crate::model::PublicationKind::Exclusive;

    fn add(client: &Client, channel: &str, stream: i32) -> Result<Publication<Self>, AddError> {
        client.exclusive_publication(channel, stream)
    }
}

impl Add for Concurrent {
    const KIND: crate::model::PublicationKind = crate::model::PublicationKind::Concurrent;

    fn add(client: &Client, channel: &str, stream: i32) -> Result<Publication<Self>, AddError> {
        client.publication(channel, stream)
    }
}
