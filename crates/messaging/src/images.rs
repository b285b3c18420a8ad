//! Image availability: which publishers a subscription reads from, as Aeron's
//! `AvailableImageHandler` / `UnavailableImageHandler` report it.
//!
//! Guarantees:
//! - [`Subscriber::image_count`](crate::Subscriber::image_count) and
//!   [`Subscriber::is_connected`](crate::Subscriber::is_connected) are one atomic load each,
//!   never the client conductor's lock: fit for a hot loop;
//! - an image they count is read by the subscriber's next poll (its reader is handed to the
//!   poll side before it is counted), unless its position counter is not one of the driver's
//!   counters (no Aeron driver does that), when no poll reads it;
//! - every image that becomes available or unavailable is one [`ImageEvent`], queued by the
//!   client conductor thread (which does nothing else with it: Aeron's rule for these
//!   handlers) and taken from the service's own thread with
//!   [`Subscriber::poll_image_events`](crate::Subscriber::poll_image_events), in the order
//!   they happened;
//! - the queue holds [`IMAGE_EVENT_CAPACITY`] events; events that come while it is full are
//!   dropped and counted by
//!   [`Subscriber::image_events_dropped`](crate::Subscriber::image_events_dropped) — the
//!   image count stays exact either way.

use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use aeron_rs::image::Image;
use crossbeam_channel::{Receiver, Sender, TrySendError};

/// How many image events a subscriber's queue holds before it counts the overflow as dropped.
pub const IMAGE_EVENT_CAPACITY: usize = 1024;

/// Whether an image came or went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImageEventKind {
    /// A publisher's image is attached: its messages can be polled.
    Available,
    /// The image is gone: its publisher closed, timed out, or this client lost its driver.
    Unavailable,
}

/// One image becoming available or unavailable to a subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ImageEvent {
    /// Available or unavailable.
    pub kind: ImageEventKind,
    /// The publisher's session id (as [`MessageHeader::session_id`](crate::MessageHeader::session_id)).
    pub session_id: i32,
    /// The image's correlation id (the driver's id for this publisher/subscription pairing).
    pub correlation_id: i64,
    /// Where the publisher is: `aeron:ipc` for IPC, the source address for UDP.
    pub source_identity: String,
    /// The stream position the subscription joined at (available) or had read to (unavailable).
    pub position: i64,
}

impl fmt::Display for ImageEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            ImageEventKind::Available => "available",
            ImageEventKind::Unavailable => "unavailable",
        };
        write!(
            f,
            "image {what}: session {} from {} at position {} (correlation id {})",
            self.session_id, self.source_identity, self.position, self.correlation_id
        )
    }
}

/// One subscription's images, shared by its handlers (client conductor thread) and the
/// [`Subscriber`](crate::Subscriber) (service thread).
pub(crate) struct Images {
    count: AtomicUsize,
    dropped: AtomicU64,
    tx: Sender<ImageEvent>,
    rx: Receiver<ImageEvent>,
}

impl Images {
    pub(crate) fn new() -> Arc<Self> {
        let (tx, rx) = crossbeam_channel::bounded(IMAGE_EVENT_CAPACITY);
        Arc::new(Self {
            count: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
            tx,
            rx,
        })
    }

    pub(crate) fn count(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    pub(crate) fn on_available(&self, image: &Image) {
        self.count.fetch_add(1, Ordering::AcqRel);
        self.push(ImageEventKind::Available, image, image.join_position());
    }

    pub(crate) fn on_unavailable(&self, image: &Image) {
        // Never below zero, whatever order aeron-rs reports in.
        let _ = self
            .count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        self.push(ImageEventKind::Unavailable, image, image.position());
    }

    fn push(&self, kind: ImageEventKind, image: &Image, position: i64) {
        let event = ImageEvent {
            kind,
            session_id: image.session_id(),
            correlation_id: image.correlation_id(),
            source_identity: image.source_identity().to_string_lossy().into_owned(),
            position,
        };
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) = self.tx.try_send(event) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Hands every queued event to `handler`, oldest first; returns how many.
    pub(crate) fn drain(&self, handler: &mut impl FnMut(&ImageEvent)) -> usize {
        let mut n = 0;
        while let Ok(e) = self.rx.try_recv() {
            handler(&e);
            n += 1;
        }
        n
    }
}
