//! Subscribing: `poll` with fragment reassembly, and the blocking hand-off into a channel.
//!
//! Guarantees:
//! - [`Subscriber::poll`] hands each whole message to the handler exactly once, in stream
//!   order per publisher (session); messages longer than one frame are reassembled;
//! - `poll` takes no lock, never blocks and makes no syscall: it reads the images' logs
//!   itself and advances their subscriber positions, as Aeron's C client does. aeron-rs's
//!   conductor still finds and retires the images (a late publisher, one that went away); its
//!   image handlers hand each one to the polling thread through a queue that `poll` looks at
//!   once per call;
//! - unfragmented messages (the usual case) are passed straight from the term buffer without
//!   a copy; reassembly buffers are allocated once per publisher and reused.
//!
//! ```
//! # #[cfg(feature = "embedded-driver")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use messaging::{Client, IdleStrategy};
//! # let driver = messaging::EmbeddedDriver::builder().private_dir().ipc_term_length(64 * 1024).spawn()?;
//! let client = Client::connect(driver.dir())?;
//! let mut sub = client.subscription("aeron:ipc", 1001)?;
//! # let publ = client.publication("aeron:ipc", 1001)?;
//! # let mut n = 0;
//! # while n < 10 { if publ.offer(b"tick").is_ok() { n += 1 } else { std::thread::yield_now() } }
//! let mut idle: IdleStrategy = "backoff".parse()?;
//! let mut got = 0;
//! while got < 10 {
//!     let n = sub.poll(&mut |msg: &[u8], _h: &messaging::MessageHeader<'_>| { got += 1; let _ = msg; }, 10)?;
//!     idle.idle(n);
//! }
//! # Ok(()) }
//! # #[cfg(not(feature = "embedded-driver"))] fn main() {}
//! ```

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use aeron_rs::concurrent::logbuffer::log_buffer_descriptor::LOG_META_DATA_SECTION_INDEX;
use aeron_rs::image::Image;
use aeron_rs::subscription::Subscription;
use aeron_rs::utils::log_buffers::LogBuffers;

use crate::conductor::{AeronHandle, Inner};
use crate::error::{PollError, PrefaultError};
#[cfg(doc)]
use crate::images::IMAGE_EVENT_CAPACITY;
use crate::images::{ImageEvent, Images};
use crate::log::frame::UNFRAGMENTED;
use crate::log::term_reader::{Assembly, Deliver, Frame, Step};
use crate::prefault::{self, PrefaultStats};
use crate::reader::{Change, Changes, ReaderImage};

/// What a [`Subscriber::controlled_poll`] handler wants done after a message (Aeron's
/// `ControlledFragmentHandler.Action`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlledAction {
    /// Do not consume this message: stop the poll; the next poll hands it over again.
    Abort,
    /// Consume this message and stop the poll.
    Break,
    /// Consume this message, make the position durable now, and go on.
    Commit,
    /// Consume this message and go on.
    Continue,
}

impl From<ControlledAction> for Step {
    #[inline]
    fn from(a: ControlledAction) -> Self {
        match a {
            ControlledAction::Abort => Step::Abort,
            ControlledAction::Break => Step::Break,
            ControlledAction::Commit => Step::Commit,
            ControlledAction::Continue => Step::Continue,
        }
    }
}

/// What the handler learns about a message besides its bytes: Aeron's frame header (like
/// Aeron's `Header` flyweight). For a message reassembled from fragments, the header Aeron's
/// C client's fragment assembler hands its handler (`aeron_buffer_builder_complete_header`):
/// the first fragment's, with the frame length of the whole message
/// ([`frame_length`](Self::frame_length)) and the last fragment's flags added to the first's
/// (so both begin and end are set); [`position`](Self::position) is after the last fragment.
/// [`values`](Self::values) copies every field out, to keep after the handler returns.
#[derive(Clone, Copy)]
pub struct MessageHeader<'a> {
    pub(crate) frame: Frame<'a>,
    /// The receive time the tap read for this message (feature `tap`).
    #[cfg(feature = "tap")]
    pub(crate) received: Option<i64>,
}

impl<'a> MessageHeader<'a> {
    #[inline]
    pub(crate) fn new(frame: Frame<'a>) -> Self {
        Self {
            frame,
            #[cfg(feature = "tap")]
            received: None,
        }
    }

    /// The receive time the tap read for this message, when its subscription records latency
    /// ([`Subscriber::record_latency`]) and the message carries a stamp (feature `tap`): the
    /// time to subtract from when the service forwards it (see [`crate::tap::Stamp`]).
    #[cfg(feature = "tap")]
    #[inline]
    #[must_use]
    pub fn received_ns(&self) -> Option<i64> {
        self.received
    }

    /// The publishing session (one per publication).
    #[inline]
    #[must_use]
    pub fn session_id(&self) -> i32 {
        self.frame.session_id()
    }

    /// The stream id.
    #[inline]
    #[must_use]
    pub fn stream_id(&self) -> i32 {
        self.frame.stream_id()
    }

    /// The reserved value the publisher set in the frame header (0 by default).
    #[inline]
    #[must_use]
    pub fn reserved_value(&self) -> i64 {
        self.frame.reserved_value()
    }

    /// The term the message is in (a message never spans two terms).
    #[inline]
    #[must_use]
    pub fn term_id(&self) -> i32 {
        self.frame.term_id()
    }

    /// Its (first fragment's) offset in that term, bytes.
    #[inline]
    #[must_use]
    pub fn term_offset(&self) -> i32 {
        self.frame.term_offset()
    }

    /// The frame length field: Aeron's 32-byte header plus the message, whole for a
    /// reassembled message.
    #[inline]
    #[must_use]
    pub fn frame_length(&self) -> i32 {
        self.frame.frame_length()
    }

    /// The stream position just after this message (what a subscriber position reads once it
    /// is consumed).
    #[inline]
    #[must_use]
    pub fn position(&self) -> i64 {
        self.frame.position()
    }

    /// The frame flags: `0xC0` (begin and end) for a whole message, a reassembled one included,
    /// plus any other bits the publisher set.
    #[inline]
    #[must_use]
    pub fn flags(&self) -> u8 {
        self.frame.flags()
    }

    /// Every field, copied out.
    #[must_use]
    pub fn values(&self) -> HeaderValues {
        HeaderValues {
            session_id: self.session_id(),
            stream_id: self.stream_id(),
            reserved_value: self.reserved_value(),
            term_id: self.term_id(),
            term_offset: self.term_offset(),
            position: self.position(),
            flags: self.flags(),
            frame_length: self.frame_length(),
        }
    }
}

impl fmt::Debug for MessageHeader<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.values().fmt(f)
    }
}

/// The fields of a [`MessageHeader`], owned ([`MessageHeader::values`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeaderValues {
    /// See [`MessageHeader::session_id`].
    pub session_id: i32,
    /// See [`MessageHeader::stream_id`].
    pub stream_id: i32,
    /// See [`MessageHeader::reserved_value`].
    pub reserved_value: i64,
    /// See [`MessageHeader::term_id`].
    pub term_id: i32,
    /// See [`MessageHeader::term_offset`].
    pub term_offset: i32,
    /// See [`MessageHeader::position`].
    pub position: i64,
    /// See [`MessageHeader::flags`].
    pub flags: u8,
    /// See [`MessageHeader::frame_length`].
    pub frame_length: i32,
}

/// A subscription on one channel and stream.
pub struct Subscriber {
    /// Keeps the subscription registered (and its images found and retired by aeron-rs's
    /// conductor); never locked by `poll`.
    pub(crate) subscription: AeronHandle<Arc<Mutex<Subscription>>>,
    /// The images this thread reads, in the order they came, and where the next poll starts.
    readers: Vec<ReaderImage>,
    round_robin: usize,
    /// Images handed over (and retired) by the image handlers on the conductor thread.
    changes: Changes,
    channel: String,
    stream_id: i32,
    /// The client's liveness state (one load per poll).
    live: Arc<std::sync::atomic::AtomicU8>,
    /// Image count and events, kept by the image handlers on the conductor thread.
    images: Arc<Images>,
    /// The latency recorder (feature `tap`), when asked for.
    #[cfg(feature = "tap")]
    pub(crate) tap: Option<Box<crate::tap::SubscriberTap>>,
    _client: Arc<Inner>,
}

impl fmt::Debug for Subscriber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscriber")
            .field("channel", &self.channel)
            .field("stream_id", &self.stream_id)
            .field("images", &self.image_count())
            .finish()
    }
}

impl Subscriber {
    pub(crate) fn new(
        subscription: AeronHandle<Arc<Mutex<Subscription>>>,
        client: Arc<Inner>,
        images: Arc<Images>,
        changes: Changes,
        channel: &str,
        stream_id: i32,
    ) -> Self {
        Self {
            subscription,
            readers: Vec::new(),
            round_robin: 0,
            changes,
            channel: channel.to_owned(),
            stream_id,
            live: client.shared.lost.state.clone(),
            images,
            #[cfg(feature = "tap")]
            tap: None,
            _client: client,
        }
    }

    /// Polls up to `fragment_limit` fragments and calls `handler` for every complete message.
    /// Returns the number of fragments read (the work count for an idle strategy). Reads the
    /// images' logs directly, as Aeron's C client does: no lock, no allocation once each
    /// image's reassembly buffer has grown to its longest message; images that came or went
    /// since the last poll are taken into account first (one queue look).
    ///
    /// Fragmented messages are reassembled per image as Aeron's image fragment assembler does:
    /// a fragment that does not start where the previous one ended (a loss on an unreliable
    /// stream, filled with padding, or a subscriber that joined mid-message) drops the partial
    /// message, so two halves of different messages are never handed over as one.
    ///
    /// # Errors
    /// [`PollError::ClientClosed`] once the client lost its media driver (one load per call);
    /// [`PollError::MalformedFrame`] once for an image whose log holds a frame no Aeron
    /// publisher writes.
    #[inline]
    pub fn poll<F>(&mut self, handler: &mut F, fragment_limit: usize) -> Result<usize, PollError>
    where
        F: FnMut(&[u8], &MessageHeader<'_>),
    {
        self.begin_poll()?;
        #[cfg(feature = "tap")]
        if self.tap.is_some() {
            return self.poll_tapped(handler, fragment_limit);
        }
        self.read_messages(fragment_limit, &mut |bytes: &[u8], frame: &Frame<'_>| {
            handler(bytes, &MessageHeader::new(*frame));
            Step::Continue
        })
    }

    /// Reads fragments as [`read`](Self::read) does and hands `deliver` every complete
    /// message: an unfragmented frame as it is, fragments once their image's assembly has the
    /// whole message.
    #[inline]
    pub(crate) fn read_messages(
        &mut self,
        fragment_limit: usize,
        deliver: &mut impl Deliver,
    ) -> Result<usize, PollError> {
        self.read(fragment_limit, &mut |assembly, bytes, frame| {
            if frame.flags() & UNFRAGMENTED == UNFRAGMENTED {
                deliver.deliver(bytes, frame)
            } else {
                assembly.fragment(bytes, frame, deliver)
            }
        })
    }

    /// The start of every poll: fails once the client lost its driver, and takes the image
    /// changes the conductor queued, before a recording poll takes its recorder (so a session
    /// that went retires in it). Two relaxed loads when nothing changed.
    #[inline]
    fn begin_poll(&mut self) -> Result<(), PollError> {
        if self.live.load(std::sync::atomic::Ordering::Relaxed) != crate::conductor::ACTIVE {
            return Err(self.closed());
        }
        if self.changes.pending() {
            self.take_changes();
        }
        Ok(())
    }

    /// A poll of a client that lost its driver: it fails, and a recorder still hands its
    /// intervals over when the tap's writer asks, so what it recorded before the loss reaches
    /// the logs while the service goes on polling.
    #[cold]
    fn closed(&mut self) -> PollError {
        #[cfg(feature = "tap")]
        if let Some(tap) = self.tap.as_mut() {
            let asked = tap.asked();
            tap.end_poll(asked);
        }
        PollError::ClientClosed
    }

    /// Reads the images round robin (Aeron's subscription poll), handing each fragment to `on`
    /// with its image's assembly. After [`begin_poll`](Self::begin_poll).
    #[inline]
    pub(crate) fn read(
        &mut self,
        fragment_limit: usize,
        on: &mut impl FnMut(&mut Assembly, &[u8], &Frame<'_>) -> Step,
    ) -> Result<usize, PollError> {
        let n = self.readers.len();
        if n == 0 {
            return Ok(0);
        }
        // The next image starts this poll, wrapped with a compare rather than `%`: a division
        // per poll and per image cost a poll of one message about 8 ns on the 2-core VM
        // (docs/results/2026-11-28-poll-cost.md). Aeron's C client wraps the same way.
        let start = if self.round_robin + 1 >= n {
            0
        } else {
            self.round_robin + 1
        };
        self.round_robin = start;
        let mut fragments = 0;
        for k in 0..n {
            let i = if start + k >= n { start + k - n } else { start + k };
            let image = &mut self.readers[i];
            if !image.readable() {
                continue;
            }
            match image.read(fragment_limit - fragments, on) {
                Ok(read) => fragments += read,
                Err(m) => {
                    return Err(PollError::MalformedFrame {
                        session_id: image.session_id(),
                        position: m.position,
                        frame_length: m.frame_length,
                    })
                }
            }
            if fragments >= fragment_limit {
                break;
            }
        }
        Ok(fragments)
    }

    /// Applies the images that came and went (not on the hot path's common case: only when
    /// the feed flagged changes).
    #[cold]
    fn take_changes(&mut self) {
        for change in self.changes.take() {
            match change {
                Change::Add(image) => self.readers.push(image),
                Change::Remove(id) => {
                    #[cfg(feature = "tap")]
                    let gone = self
                        .readers
                        .iter()
                        .find(|r| r.correlation_id() == id)
                        .map(ReaderImage::session_id);
                    self.readers.retain(|r| r.correlation_id() != id);
                    #[cfg(feature = "tap")]
                    if let Some(session) = gone.filter(|s| !self.readers.iter().any(|r| r.session_id() == *s)) {
                        if let Some(tap) = self.tap.as_mut() {
                            tap.session_gone(session);
                        }
                    }
                }
            }
        }
    }

    /// Like [`poll`](Self::poll), but the handler decides what happens to the stream position
    /// after each message (Aeron's controlled poll, with `ControlledFragmentAssembler`'s
    /// reassembly): [`ControlledAction::Continue`] goes on, [`ControlledAction::Break`] stops
    /// this poll after the message, [`ControlledAction::Commit`] goes on and makes the position
    /// durable now, and [`ControlledAction::Abort`] stops without consuming the message: the
    /// next poll hands it over again (a handler whose own output is back-pressured refuses a
    /// message this way). Returns the number of fragments consumed.
    ///
    /// # Errors
    /// [`PollError::ClientClosed`] once the client lost its media driver.
    #[inline]
    pub fn controlled_poll<F>(&mut self, handler: &mut F, fragment_limit: usize) -> Result<usize, PollError>
    where
        F: FnMut(&[u8], &MessageHeader<'_>) -> ControlledAction,
    {
        self.begin_poll()?;
        #[cfg(feature = "tap")]
        if self.tap.is_some() {
            return self.controlled_poll_tapped(handler, fragment_limit);
        }
        self.read_messages(fragment_limit, &mut |bytes: &[u8], frame: &Frame<'_>| {
            handler(bytes, &MessageHeader::new(*frame)).into()
        })
    }

    /// Guarantees: on `Ok`, every page of the log buffers of every image attached right now
    /// (one per connected publisher: three terms and the metadata each) is in this process's
    /// page tables, writable where the mapping is, so no read of them in the measured phase
    /// takes a page fault; the logs' contents are not changed, so it is safe while the
    /// publishers, the driver and other processes use them.
    ///
    /// Call it **after** the publishers connected: an image's log is only mapped when the
    /// client conductor attaches it (wait for [`image_count`](Self::image_count) to reach the
    /// number of publishers); images that attach later are not covered, call it again. The
    /// subscription's lock (which the client conductor shares) is held only while listing the
    /// images, not while populating. Not for the hot path: it allocates and takes up to
    /// ~1.5 ms per MiB (less when the pages exist already). [`PrefaultStats`] says what it did.
    ///
    /// One client maps an `aeron:ipc` log once for its publication and its own subscription's
    /// image of it, so in that case this also covers the publication (and vice versa).
    ///
    /// # Errors
    /// [`PrefaultError::NoImage`] when no publisher is connected yet,
    /// [`PrefaultError::Populate`] when the kernel cannot fault a page in.
    pub fn prefault(&self) -> Result<PrefaultStats, PrefaultError> {
        // Each `LogBuffers` owns its image's mapping: holding them keeps every range mapped
        // while it is populated, even if the image closes meanwhile.
        let list = || -> Vec<Arc<LogBuffers>> {
            let sub = self
                .subscription
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            sub.images().iter().map(Image::log_buffers).collect()
        };
        let mut logs = list();
        // `image_count` counts an image as its handler runs, just before aeron-rs adds it to
        // the list: give the conductor that moment.
        let since = std::time::Instant::now();
        while logs.is_empty() && self.image_count() > 0 && since.elapsed() < std::time::Duration::from_millis(100) {
            std::thread::sleep(std::time::Duration::from_micros(200));
            logs = list();
        }
        if logs.is_empty() {
            return Err(PrefaultError::NoImage {
                channel: self.channel.clone(),
                stream_id: self.stream_id,
            });
        }
        let ranges: Vec<_> = logs
            .iter()
            .map(|log| {
                // Aeron's layout: three terms from the start of the mapping, the metadata at
                // its very end.
                let start = log.atomic_buffer(0).buffer() as usize;
                let meta = log.atomic_buffer(LOG_META_DATA_SECTION_INDEX);
                start..meta.buffer() as usize + meta.capacity().max(0) as usize
            })
            .collect();
        prefault::populate_all(&ranges, &|| {
            format!("an image log of {} stream {}", self.channel, self.stream_id)
        })
    }

    /// Whether at least one publisher's image is available and the client still has its
    /// driver (as [`Publication::is_connected`](crate::Publication::is_connected)): two atomic
    /// loads, never the conductor's lock. False once the client lost its driver, whatever
    /// [`image_count`](Self::image_count) last said.
    #[must_use]
    pub fn is_connected(&self) -> bool {
        self.live.load(Ordering::Relaxed) == crate::conductor::ACTIVE && self.image_count() > 0
    }

    /// How many publishers' images are available (Aeron's available-image notifications less
    /// the unavailable ones): one atomic load, never the conductor's lock. An image counted
    /// here is read by this subscriber's next [`poll`](Self::poll) (as in Aeron, where
    /// `isConnected` and `poll` look at the same image list); aeron-rs's own list, which
    /// [`prefault`](Self::prefault) maps, may take a moment longer.
    #[must_use]
    pub fn image_count(&self) -> usize {
        self.images.count()
    }

    /// Hands every image event queued since the last call to `handler`, oldest first, on this
    /// thread (Aeron's available / unavailable image handlers, delivered where the service
    /// runs instead of on the client conductor). Returns how many. Never blocks, never takes
    /// the conductor's lock. See [`ImageEvent`].
    ///
    /// ```
    /// # #[cfg(feature = "embedded-driver")]
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use messaging::{Client, ImageEventKind};
    /// # let driver = messaging::EmbeddedDriver::builder().private_dir().ipc_term_length(64 * 1024).spawn()?;
    /// let client = Client::connect(driver.dir())?;
    /// let mut sub = client.subscription("aeron:ipc", 1002)?;
    /// let publ = client.publication("aeron:ipc", 1002)?;
    /// let mut joined = Vec::new();
    /// while joined.is_empty() {
    ///     sub.poll_image_events(|e| {
    ///         if e.kind == ImageEventKind::Available {
    ///             joined.push(e.session_id);
    ///         }
    ///     });
    ///     std::thread::yield_now();
    /// }
    /// assert_eq!(joined, [publ.session_id()]);
    /// # Ok(()) }
    /// # #[cfg(not(feature = "embedded-driver"))] fn main() {}
    /// ```
    pub fn poll_image_events(&mut self, mut handler: impl FnMut(&ImageEvent)) -> usize {
        self.images.drain(&mut handler)
    }

    /// Image events lost because the queue was full ([`IMAGE_EVENT_CAPACITY`]): the service
    /// did not call [`poll_image_events`](Self::poll_image_events) often enough.
    #[must_use]
    pub fn image_events_dropped(&self) -> u64 {
        self.images.dropped()
    }

    /// The channel.
    #[must_use]
    pub fn channel(&self) -> &str {
        &self.channel
    }

    /// The stream id.
    #[must_use]
    pub fn stream_id(&self) -> i32 {
        self.stream_id
    }

    /// Closes the subscription: the driver is told at once.
    pub fn close(self) {}
}
