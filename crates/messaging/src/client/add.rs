//! Adding publications and subscriptions: blocking, or started at once and polled through
//! their pending handles ([`PendingPublication`], [`PendingExclusivePublication`],
//! [`PendingSubscription`]), as Aeron's `asyncAdd*` calls.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aeron_rs::aeron::Aeron;
use aeron_rs::cnc_file_descriptor;
use aeron_rs::image::Image;
use aeron_rs::utils::errors::{AeronError, GenericError};

use super::Client;
use crate::channel::{check_channel, check_publication_channel};
use crate::conductor::{AeronHandle, Inner};
use crate::error::AddError;
use crate::images::Images;
use crate::publication::{ConcurrentPublication, ExclusivePublication, Publication, Registration};
use crate::reader::{Changes, Counters, Feed};
use crate::subscription::Subscriber;

impl Client {
    /// Adds a publication and waits until the driver has created it.
    ///
    /// # Errors
    /// [`AddError`]: bad channel (also a `term-length` over 512m, whose log this client could not
    /// map), rejected by the driver, no answer within the driver timeout.
    pub fn publication(&self, channel: &str, stream_id: i32) -> Result<ConcurrentPublication, AddError> {
        let mut pending = self.async_add_publication(channel, stream_id)?;
        wait_for(|| pending.poll())
    }

    /// Adds a subscription and waits until the driver has created it. Publishers that join
    /// later are picked up by the client conductor between polls.
    ///
    /// # Errors
    /// [`AddError`]: bad channel, rejected by the driver, no answer within the driver timeout.
    pub fn subscription(&self, channel: &str, stream_id: i32) -> Result<Subscriber, AddError> {
        let mut pending = self.async_add_subscription(channel, stream_id)?;
        wait_for(|| pending.poll())
    }

    /// Adds an exclusive publication (Aeron's `addExclusivePublication`) and waits until the
    /// driver has created it: a publication of its own session that one thread owns and that
    /// writes the log buffer itself, with no lock (see [`ExclusivePublication`]). The fastest
    /// way to publish; use [`publication`](Self::publication) when several threads publish to
    /// one stream.
    ///
    /// # Errors
    /// [`AddError`]: bad channel (also a `term-length` over 512m, whose log this client could not
    /// map), rejected by the driver, no answer within the driver timeout, or the log file could
    /// not be mapped.
    pub fn exclusive_publication(&self, channel: &str, stream_id: i32) -> Result<ExclusivePublication, AddError> {
        let mut pending = self.async_add_exclusive_publication(channel, stream_id)?;
        wait_for(|| pending.poll())
    }

    /// Starts adding an exclusive publication and returns at once (Aeron's
    /// `asyncAddExclusivePublication`): poll the [`PendingExclusivePublication`].
    ///
    /// # Errors
    /// [`AddError`]: a bad channel (also a `term-length` over 512m, whose log this client could
    /// not map), or the command could not be sent.
    pub fn async_add_exclusive_publication(
        &self,
        channel: &str,
        stream_id: i32,
    ) -> Result<PendingExclusivePublication, AddError> {
        let c = check_publication_channel(channel)?;
        let started = Instant::now();
        let id = self
            .inner
            .with_aeron(|a| a.add_exclusive_publication(c, stream_id))?
            .map_err(|e| AddError::from_aeron(channel, stream_id, started.elapsed(), e))?;
        Ok(PendingExclusivePublication(Pending::new(
            self, id, channel, stream_id, started,
        )))
    }

    /// Starts adding a publication and returns at once (Aeron's `asyncAddPublication`): call
    /// [`PendingPublication::poll`] from the service's own loop until it hands over the
    /// [`ConcurrentPublication`], instead of blocking in [`publication`](Self::publication).
    ///
    /// # Errors
    /// [`AddError`]: a bad channel (also a `term-length` over 512m, whose log this client could
    /// not map), or the command could not be sent.
    pub fn async_add_publication(&self, channel: &str, stream_id: i32) -> Result<PendingPublication, AddError> {
        let c = check_publication_channel(channel)?;
        let started = Instant::now();
        let id = self
            .inner
            .with_aeron(|a| a.add_publication(c, stream_id))?
            .map_err(|e| AddError::from_aeron(channel, stream_id, started.elapsed(), e))?;
        Ok(PendingPublication(Pending::new(self, id, channel, stream_id, started)))
    }

    /// Starts adding a subscription and returns at once (Aeron's `asyncAddSubscription`): call
    /// [`PendingSubscription::poll`] until it hands over the [`Subscriber`].
    ///
    /// # Errors
    /// [`AddError`]: a bad channel, or the command could not be sent.
    pub fn async_add_subscription(&self, channel: &str, stream_id: i32) -> Result<PendingSubscription, AddError> {
        let c = check_channel(channel)?;
        let started = Instant::now();
        let images = Images::new();
        let values = cnc_file_descriptor::create_counter_values_buffer(&self.inner.shared.cnc);
        // The handlers hold the counters' address, not the client: the client's mapping of
        // cnc.dat outlives every image the subscriber reads (the subscriber holds the client).
        let (feed, changes) = Feed::new(Counters {
            base: values.buffer() as usize,
            capacity: values.capacity().max(0) as usize,
        });
        let (on_available, on_unavailable) = ((images.clone(), feed.clone()), (images.clone(), feed));
        let id = self
            .inner
            .with_aeron(|a| {
                a.add_subscription_opt(
                    c,
                    stream_id,
                    // The reader goes to the poll side before the image is counted: a
                    // caller that saw `image_count() > 0` then reads it in its next poll.
                    Box::new(move |image: &Image| {
                        on_available.1.available(image);
                        on_available.0.on_available(image);
                    }),
                    Box::new(move |image: &Image| {
                        on_unavailable.0.on_unavailable(image);
                        on_unavailable.1.unavailable(image);
                    }),
                )
            })?
            .map_err(|e| AddError::from_aeron(channel, stream_id, started.elapsed(), e))?;
        Ok(PendingSubscription {
            pending: Pending::new(self, id, channel, stream_id, started),
            images,
            changes: Some(changes),
        })
    }
}

/// Polls `poll` until it hands something over, backing off from 100 µs to 5 ms.
fn wait_for<T>(mut poll: impl FnMut() -> Result<Option<T>, AddError>) -> Result<T, AddError> {
    let mut pause = Duration::from_micros(100);
    loop {
        if let Some(t) = poll()? {
            return Ok(t);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(5));
    }
}

/// What a pending add knows: the registration and since when it waits.
struct Pending {
    inner: Arc<Inner>,
    id: i64,
    channel: String,
    stream_id: i32,
    started: Instant,
    /// It handed what was added over (set by the caller once its handle is made), once.
    handed_over: bool,
}

impl fmt::Debug for Pending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pending")
            .field("registration_id", &self.id)
            .field("channel", &self.channel)
            .field("stream_id", &self.stream_id)
            .field("waiting", &self.started.elapsed())
            .finish()
    }
}

impl Pending {
    fn new(client: &Client, id: i64, channel: &str, stream_id: i32, started: Instant) -> Pending {
        Pending {
            inner: client.inner.clone(),
            id,
            channel: channel.to_owned(),
            stream_id,
            started,
            handed_over: false,
        }
    }

    /// One look: the resource, `None` while the driver has not answered, or why it failed
    /// (including no answer within the driver timeout).
    fn poll<T>(
        &mut self,
        find: impl FnOnce(&mut Aeron, i64) -> Result<Option<T>, AeronError>,
    ) -> Result<Option<T>, AddError> {
        if self.handed_over {
            return Err(AddError::HandedOver);
        }
        match self.inner.with_aeron(|a| find(a, self.id))? {
            Ok(Some(t)) => Ok(Some(t)),
            Err(e) => Err(AddError::from_aeron(
                &self.channel,
                self.stream_id,
                self.started.elapsed(),
                e,
            )),
            Ok(None) if self.started.elapsed() > self.inner.timeout => Err(AddError::Timeout {
                channel: self.channel.clone(),
                waited: self.started.elapsed(),
            }),
            Ok(None) => Ok(None),
        }
    }
}

/// A publication being added ([`Client::async_add_publication`]). Dropped before it handed
/// over the [`ConcurrentPublication`], the publication stays with the driver until the client closes.
#[derive(Debug)]
#[must_use = "poll it until it hands over the ConcurrentPublication"]
pub struct PendingPublication(Pending);

impl PendingPublication {
    /// The [`ConcurrentPublication`] once the driver created it, `None` while it has not answered yet.
    /// Takes the client's lock for one look (never waits for the driver).
    ///
    /// # Errors
    /// [`AddError`]: the driver refused it, or did not answer within the driver timeout;
    /// [`AddError::HandedOver`] once it has returned the publication.
    pub fn poll(&mut self) -> Result<Option<ConcurrentPublication>, AddError> {
        let found = self.0.poll(|a, id| match a.find_publication(id) {
            Err(AeronError::PublicationNotReady(_)) => Ok(None),
            Err(e) => Err(e),
            Ok(p) => Ok(Some(p)),
        })?;
        let Some(p) = found else { return Ok(None) };
        let spec = crate::mapped::log_spec!(p, &self.0.inner, self.0.stream_id);
        let publication = Publication::new(Registration::Concurrent(p), spec, self.0.inner.clone(), &self.0.channel)?;
        self.0.handed_over = true;
        Ok(Some(publication))
    }
}

/// An exclusive publication being added ([`Client::async_add_exclusive_publication`]).
#[derive(Debug)]
#[must_use = "poll it until it hands over the ExclusivePublication"]
pub struct PendingExclusivePublication(Pending);

impl PendingExclusivePublication {
    /// The [`ExclusivePublication`] once the driver created it, `None` while it has not answered
    /// yet. Takes the client's lock for one look (never waits for the driver).
    ///
    /// # Errors
    /// [`AddError`]: the driver refused it, did not answer within the driver timeout, or the
    /// log file could not be mapped; [`AddError::HandedOver`] once it has returned the
    /// publication.
    pub fn poll(&mut self) -> Result<Option<ExclusivePublication>, AddError> {
        let found = self.0.poll(|a, id| match a.find_exclusive_publication(id) {
            Err(AeronError::Generic(GenericError::ExclusivePublicationNotReadyYet { .. })) => Ok(None),
            Err(e) => Err(e),
            Ok(p) => Ok(Some(p)),
        })?;
        let Some(p) = found else { return Ok(None) };
        let spec = crate::mapped::log_spec!(p, &self.0.inner, self.0.stream_id);
        let publication = Publication::new(Registration::Exclusive(p), spec, self.0.inner.clone(), &self.0.channel)?;
        self.0.handed_over = true;
        Ok(Some(publication))
    }
}

/// A subscription being added ([`Client::async_add_subscription`]). Dropped before it handed
/// over the [`Subscriber`], the subscription is removed from the driver once the driver has
/// answered (within a duty cycle of the client conductor after that).
#[must_use = "poll it until it hands over the Subscriber"]
pub struct PendingSubscription {
    pending: Pending,
    /// Fed by the image handlers from the moment the subscription was asked for.
    images: Arc<Images>,
    /// The images the subscriber will read (taken when it is handed over).
    changes: Option<Changes>,
}

impl fmt::Debug for PendingSubscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.pending.fmt(f)
    }
}

impl Drop for PendingSubscription {
    fn drop(&mut self) {
        // Not handed over: the conductor lets aeron-rs's reference go once the driver answered.
        if self.changes.is_some() {
            let shared = &self.pending.inner.shared;
            let mut ids = shared
                .abandoned
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            ids.push(self.pending.id);
        }
    }
}

impl PendingSubscription {
    /// The [`Subscriber`] once the driver created it, `None` while it has not answered yet.
    /// Takes the client's lock for one look (never waits for the driver).
    ///
    /// # Errors
    /// [`AddError`]: the driver refused it, or did not answer within the driver timeout;
    /// [`AddError::HandedOver`] once it has returned the subscriber.
    pub fn poll(&mut self) -> Result<Option<Subscriber>, AddError> {
        let p = &mut self.pending;
        let found = p.poll(|a, id| match a.find_subscription(id) {
            Err(AeronError::SubscriptionNotReady(_)) => Ok(None),
            Err(e) => Err(e),
            Ok(s) => Ok(Some(s)),
        })?;
        let Some(s) = found else {
            return Ok(None);
        };
        let s = AeronHandle::new(s, p.inner.shared.clone());
        let changes = self.changes.take().ok_or(AddError::HandedOver)?;
        p.handed_over = true;
        Ok(Some(Subscriber::new(
            s,
            p.inner.clone(),
            self.images.clone(),
            changes,
            &p.channel,
            p.stream_id,
        )))
    }
}
