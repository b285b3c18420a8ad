//! Publishing: [`Publication`], one type over Aeron's two appenders: the
//! [`ExclusivePublication`] (one thread's, its tail kept in its own state) and the
//! [`ConcurrentPublication`] (any number per stream, on any threads, claiming space with one
//! atomic add on the shared tail). Both write the log buffer themselves, as Aeron's C and Java
//! clients do, through the same code ([`TermLog`]); only the tail differs.
//!
//! Guarantees:
//! - `offer`, `offer_with_reserved_value`, `try_claim`, [`Claim::commit`] and
//!   [`Claim::abort`] take no lock, allocate nothing, make no syscall, never block, and issue no
//!   fence beyond Aeron's protocol (release stores of the tail and of the frame length, an
//!   acquire load of the publication limit: plain moves on x86-64); one relaxed load checks the
//!   client still has its driver;
//! - the log is written byte for byte as Aeron's term appenders write it (frame header,
//!   fragmentation at the MTU, padding at the end of a term, term rotation with an
//!   `AdminAction`), so any Aeron subscriber reads it: the C client's, Java's, aeron-rs's;
//! - every failure is one typed [`OfferError`]; retry exactly when
//!   [`is_retryable`](OfferError::is_retryable) says so;
//! - a [`ConcurrentPublication`] is `Send` and `Sync`: threads may share one (`Arc`, or
//!   scoped threads borrowing it) and offer and claim through it at once, each append one
//!   atomic add on the shared tail, as with Aeron's `ConcurrentPublication`;
//! - an [`ExclusivePublication`] is `Send` but not `Sync`: one thread owns it, as Aeron
//!   requires. aeron-rs adds, tracks, keeps alive and removes both (registration, liveness,
//!   `CLIENT_CLOSE`).
//!
//! Sharing an exclusive publication between threads does not compile:
//!
//! ```compile_fail
//! fn shared<T: Sync>() {}
//! shared::<messaging::ExclusivePublication>();
//! ```
//!
//! ```
//! # #[cfg(feature = "embedded-driver")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use messaging::{Client, IdleStrategy};
//! # let driver = messaging::EmbeddedDriver::builder().private_dir().ipc_term_length(64 * 1024).spawn()?;
//! let client = Client::connect(driver.dir())?;
//! let publication = client.exclusive_publication("aeron:ipc", 1001)?;
//! # let _subscriber = client.subscription("aeron:ipc", 1001)?;
//! let mut idle: IdleStrategy = "yield".parse()?;
//! // Copy in. Until a subscriber is connected (and whenever it is behind) the offer says so:
//! // retry what is retryable, give up on the rest.
//! while let Err(e) = publication.offer(b"hello") {
//!     if !e.is_retryable() {
//!         return Err(e.into());
//!     }
//!     idle.idle_once();
//! }
//! // Or write straight into the term buffer.
//! loop {
//!     match publication.try_claim(8) {
//!         Ok(mut claim) => {
//!             claim.buffer_mut().copy_from_slice(&42u64.to_le_bytes());
//!             claim.commit();
//!             break;
//!         }
//!         Err(e) if e.is_retryable() => idle.idle_once(),
//!         Err(e) => return Err(e.into()),
//!     }
//! }
//! # Ok(()) }
//! # #[cfg(not(feature = "embedded-driver"))] fn main() {}
//! ```

use std::cell::UnsafeCell;
use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use aeron_rs::exclusive_publication::ExclusivePublication as AeronExclusivePublication;
use aeron_rs::publication::Publication as AeronPublication;

use crate::conductor::{AeronHandle, Inner, ACTIVE};
use crate::error::{AddError, OfferError, PrefaultError};
use crate::log::appender::{concurrent_position, reserve_concurrent, ExclusiveTail, Reserved, TermLog};
use crate::log::frame::{framed_length, DATA_HEADER_LEN};
use crate::log::memory::RawLog;
use crate::mapped::Mapping;
use crate::prefault::PrefaultStats;
#[cfg(doc)]
use crate::PrefaultMethod;

// The sealed trait's methods take the crate's own log types: nothing outside can name or call
// them, which is the point of sealing.
#[allow(private_interfaces)]
mod sealed {
    use super::{OfferError, RawLog, Reserved, TermLog};

    /// What differs between the two publications: where the tail is. Not for use outside
    /// this crate.
    pub trait Appender: Send + Sized + 'static {
        /// The appender of a freshly mapped log.
        fn open(log: &TermLog<RawLog>) -> Self;
        /// Checks the publication `limit` and reserves `framed` bytes for a message of `length`.
        fn reserve(
            &self,
            log: &TermLog<RawLog>,
            limit: i64,
            length: usize,
            framed: usize,
        ) -> Result<Reserved, OfferError>;
        /// The stream position after the last message appended.
        fn position(&self, log: &TermLog<RawLog>) -> i64;
    }
}

/// Which of Aeron's two publications a [`Publication`] is: [`Exclusive`] or [`Concurrent`].
/// Sealed: these two are all there are.
pub trait PublicationKind: sealed::Appender + fmt::Debug {
    /// Aeron's name for it: `"exclusive"` or `"concurrent"`.
    const NAME: &'static str;
}

/// The exclusive publication's appender (Aeron's `ExclusivePublication`): its own session,
/// one thread, the tail kept in this state and only published to the log.
#[derive(Debug)]
pub struct Exclusive {
    /// In a cell: the publication appends through `&self`, and the cell makes it `Send` but
    /// not `Sync`, so one thread at a time owns the tail. (An `UnsafeCell` rather than a
    /// `Cell`: `Cell::set` would store the whole tail back on every append, where the
    /// appender writes the one field that moved.)
    tail: UnsafeCell<ExclusiveTail>,
}

#[allow(private_interfaces)]
impl sealed::Appender for Exclusive {
    fn open(log: &TermLog<RawLog>) -> Self {
        Exclusive {
            tail: UnsafeCell::new(ExclusiveTail::new(log)),
        }
    }

    #[inline]
    fn reserve(&self, log: &TermLog<RawLog>, limit: i64, length: usize, framed: usize) -> Result<Reserved, OfferError> {
        // SAFETY: `Exclusive` is not `Sync` (the `UnsafeCell`), so only the thread that holds
        // the publication gets here, and `reserve` runs no caller code: this is the only
        // reference to the tail while it lives.
        unsafe { &mut *self.tail.get() }.reserve(log, limit, length, framed)
    }

    #[inline]
    fn position(&self, _log: &TermLog<RawLog>) -> i64 {
        // SAFETY: as in `reserve`: one thread, and no mutable reference lives meanwhile.
        unsafe { &*self.tail.get() }.position()
    }
}

impl PublicationKind for Exclusive {
    const NAME: &'static str = "exclusive";
}

/// The concurrent publication's appender (Aeron's `ConcurrentPublication`, what
/// `addPublication` returns): every publication of a stream in a client shares one log and
/// session, each claims space with one atomic add on the shared tail.
#[derive(Debug)]
pub struct Concurrent {
    _private: (),
}

#[allow(private_interfaces)]
impl sealed::Appender for Concurrent {
    fn open(_log: &TermLog<RawLog>) -> Self {
        Concurrent { _private: () }
    }

    #[inline]
    fn reserve(&self, log: &TermLog<RawLog>, limit: i64, length: usize, framed: usize) -> Result<Reserved, OfferError> {
        reserve_concurrent(log, limit, length, framed)
    }

    #[inline]
    fn position(&self, log: &TermLog<RawLog>) -> i64 {
        concurrent_position(log)
    }
}

impl PublicationKind for Concurrent {
    const NAME: &'static str = "concurrent";
}

/// A publication on one channel and stream that one thread owns ([`Client::exclusive_publication`](crate::Client::exclusive_publication)):
/// the fastest way to publish.
pub type ExclusivePublication = Publication<Exclusive>;

/// A publication that any number of threads may share (it is `Sync`: put it in an `Arc`), as
/// Aeron's `ConcurrentPublication`; the publications one client adds on a stream share one log
/// ([`Client::publication`](crate::Client::publication)).
pub type ConcurrentPublication = Publication<Concurrent>;

/// Renamed [`ConcurrentPublication`] (Aeron's name).
#[deprecated(note = "renamed ConcurrentPublication, Aeron's name for it")]
pub type Publisher = ConcurrentPublication;

/// Renamed [`ExclusivePublication`] (Aeron's name).
#[deprecated(note = "renamed ExclusivePublication, Aeron's name for it")]
pub type ExclusivePublisher = ExclusivePublication;

/// The aeron-rs publication that keeps this one registered with the driver: held, never
/// locked by the hot path, dropped with it (which removes it).
#[allow(dead_code, reason = "held for its Drop, which removes the publication")]
pub(crate) enum Registration {
    Concurrent(Arc<Mutex<AeronPublication>>),
    Exclusive(Arc<Mutex<AeronExclusivePublication>>),
}

// SAFETY: the aeron-rs publication is only held (never locked or used after construction, but
// in a unit test) and dropped wherever the publication is; aeron-rs itself shares it with its
// conductor thread behind its Mutex.
unsafe impl Send for Registration {}
// SAFETY: as above: no code locks it through a shared reference (but that unit test, on one
// thread), so sharing one between threads shares nothing they use.
unsafe impl Sync for Registration {}

/// A publication of kind `K`: [`ExclusivePublication`] or [`ConcurrentPublication`]. Code that
/// publishes is written once for both as `fn send<K: PublicationKind>(p: &Publication<K>)`.
/// Appending takes `&self`: a [`ConcurrentPublication`] is `Sync` and may be shared by
/// threads; an [`ExclusivePublication`] is `Send`, not `Sync`, so one thread at a time has it.
pub struct Publication<K: PublicationKind> {
    appender: K,
    log: TermLog<RawLog>,
    mapping: Mapping,
    /// The client's liveness state (one load per call).
    live: Arc<AtomicU8>,
    channel: String,
    /// The clock each message's send time is stamped from, into its reserved value (none: the
    /// reserved value is the caller's).
    #[cfg(feature = "tap")]
    stamp: Option<crate::tap::StampClock>,
    /// Keeps the publication registered with the driver; dropping it removes it (a unit test
    /// locks it to show nothing here waits for it).
    #[allow(dead_code, reason = "held for its Drop")]
    pub(crate) registration: AeronHandle<Registration>,
}

impl<K: PublicationKind> fmt::Debug for Publication<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Publication")
            .field("kind", &K::NAME)
            .field("channel", &self.channel)
            .field("stream_id", &self.log.stream_id)
            .field("session_id", &self.log.session_id)
            .field("term_length", &self.log.term_length)
            .field("position", &self.position())
            .field("connected", &self.is_connected())
            .finish()
    }
}

impl<K: PublicationKind> Publication<K> {
    pub(crate) fn new(
        registration: Registration,
        spec: crate::mapped::LogSpec,
        client: Arc<Inner>,
        channel: &str,
    ) -> Result<Self, AddError> {
        let registration = AeronHandle::new(registration, client.shared.clone());
        let live = client.shared.lost.state.clone();
        let (log, mapping) = crate::mapped::open(spec, client)?;
        Ok(Publication {
            appender: K::open(&log),
            log,
            mapping,
            live,
            channel: channel.to_owned(),
            #[cfg(feature = "tap")]
            stamp: None,
            registration,
        })
    }

    /// Bytes one unfragmented message of `payload` bytes takes in the log: Aeron's 32-byte
    /// data header plus the payload, aligned to 32 bytes. A message that does not fit in the
    /// rest of a term is preceded by a padding frame that fills the term.
    #[must_use]
    pub fn frame_length(payload: usize) -> usize {
        // No buffer is longer than `isize::MAX`; the bound keeps the sum from overflowing.
        framed_length(payload.min(isize::MAX as usize))
    }

    /// The checks every append starts with (the client has its driver, the message fits), then
    /// the appender's reservation.
    #[inline]
    fn reserve(&self, length: usize, max: usize, framed: usize) -> Result<Reserved, OfferError> {
        if self.live.load(Ordering::Relaxed) != ACTIVE {
            return Err(OfferError::ClientClosed);
        }
        if length > max {
            return Err(OfferError::MessageTooLong { length, max });
        }
        self.appender.reserve(&self.log, self.mapping.limit(), length, framed)
    }

    /// Copies `msg` into the log (fragmented above [`max_payload_length`](Self::max_payload_length)).
    /// Returns the new stream position.
    ///
    /// # Errors
    /// An [`OfferError`]; retry when [`OfferError::is_retryable`] says so (`AdminAction` after
    /// a term rotation: straight away).
    #[inline]
    pub fn offer(&self, msg: &[u8]) -> Result<u64, OfferError> {
        let stamp = self.stamp_now();
        self.append(msg, stamp)
    }

    /// The send stamp of a message sent now: the clock's reading when this publication stamps
    /// ([`stamp_send_time`](Self::stamp_send_time), feature `tap`), else none.
    #[inline(always)]
    fn stamp_now(&self) -> Option<i64> {
        #[cfg(feature = "tap")]
        {
            self.stamp.map(crate::tap::StampClock::now_ns)
        }
        #[cfg(not(feature = "tap"))]
        {
            None
        }
    }

    /// [`offer`](Self::offer) with the frame's reserved value set to `reserved_value` (Aeron's
    /// `ReservedValueSupplier`); a message longer than one frame carries it in every fragment.
    ///
    /// # Errors
    /// As [`offer`](Self::offer).
    #[inline]
    pub fn offer_with_reserved_value(&self, msg: &[u8], reserved_value: i64) -> Result<u64, OfferError> {
        self.append(msg, Some(reserved_value))
    }

    #[inline]
    fn append(&self, msg: &[u8], reserved: Option<i64>) -> Result<u64, OfferError> {
        let framed = self.log.framed(msg.len());
        let r = self.reserve(msg.len(), self.log.max_offer(), framed)?;
        if msg.len() <= self.log.max_payload {
            self.log.write_unfragmented(r.index, r.offset, r.term_id, msg, reserved);
        } else {
            self.log.write_fragmented(r.index, r.offset, r.term_id, msg, reserved);
        }
        Ok(r.position as u64)
    }

    /// Claims `len` bytes in the log for zero-copy writing (`aeron_claim`); fill
    /// [`Claim::buffer_mut`] and [`commit`](Claim::commit); dropping the claim aborts it. At
    /// most [`max_payload_length`](Self::max_payload_length) bytes (one frame).
    ///
    /// # Errors
    /// An [`OfferError`]; retry when [`OfferError::is_retryable`] says so.
    #[inline]
    pub fn try_claim(&self, len: usize) -> Result<Claim<'_>, OfferError> {
        let stamp = self.stamp_now();
        self.claim(len, stamp)
    }

    #[inline]
    fn claim(&self, len: usize, stamp: Option<i64>) -> Result<Claim<'_>, OfferError> {
        // A `len` past the maximum is refused before `framed` is used; the `min` keeps a huge
        // one (`usize::MAX`) from overflowing the sum first.
        let framed = framed_length(len.min(self.log.max_payload));
        let r = self.reserve(len, self.log.max_payload, framed)?;
        self.log.claim(r.index, r.offset, r.term_id, len);
        let mut claim = Claim {
            log: &self.log,
            index: r.index,
            offset: r.offset,
            len,
            done: false,
        };
        if let Some(v) = stamp {
            claim.set_reserved_value(v);
        }
        Ok(claim)
    }

    /// The stream position after the last message written to this publication's log (a byte
    /// count from the start of the stream: headers, alignment and padding included). The
    /// exclusive publication reads its own state, the concurrent one two atomic loads of the
    /// log's metadata (Aeron's `Publication.position`).
    ///
    /// # Errors
    /// [`OfferError::ClientClosed`] once the client lost its driver.
    pub fn position(&self) -> Result<i64, OfferError> {
        let position = self.appender.position(&self.log);
        if self.live.load(Ordering::Relaxed) != ACTIVE {
            return Err(OfferError::ClientClosed);
        }
        Ok(position)
    }

    /// Whether at least one subscriber is connected, as the driver last said (the log's
    /// `is_connected` flag): one atomic load. False once the client lost its driver.
    #[must_use]
    pub fn is_connected(&self) -> bool {
        use crate::log::memory::LogMemory as _;
        self.live.load(Ordering::Relaxed) == ACTIVE && self.log.mem.is_connected()
    }

    /// The largest message `try_claim` accepts (one MTU less the frame header).
    #[must_use]
    pub fn max_payload_length(&self) -> usize {
        self.log.max_payload
    }

    /// The largest message `offer` accepts: Aeron's maximum message length (an eighth of the
    /// term, at most 16 MiB, fragmented across frames), or one frame's payload
    /// ([`max_payload_length`](Self::max_payload_length)) where the MTU is larger, as Aeron
    /// checks the maximum only for fragmented messages.
    #[must_use]
    pub fn max_message_length(&self) -> usize {
        self.log.max_offer()
    }

    /// The term buffer length of this publication's log.
    #[must_use]
    pub fn term_length(&self) -> usize {
        self.log.term_length as usize
    }

    /// This publication's session id.
    #[must_use]
    pub fn session_id(&self) -> i32 {
        self.log.session_id
    }

    /// The channel this publication was added on.
    #[must_use]
    pub fn channel(&self) -> &str {
        &self.channel
    }

    /// The stream id.
    #[must_use]
    pub fn stream_id(&self) -> i32 {
        self.log.stream_id
    }

    /// Guarantees: on `Ok`, every page of this publication's log buffers (three terms and the
    /// metadata) is in this process's page tables, writable, so no write to the log in the
    /// measured phase takes a page fault (on kernels older than 5.14: for logs on tmpfs such
    /// as `/dev/shm`, see [`PrefaultMethod::TouchRead`]); the log's contents are not changed,
    /// so it is safe while subscribers, the driver and other processes use it. It covers
    /// every mapping of the log file in *this process*: the publication's own and, being the
    /// same file, an `aeron:ipc` subscriber's image of it and an embedded driver's mapping if
    /// they are here (other processes prefault their own).
    ///
    /// Call it once after creating the publication, before measuring. Not for the hot path: it
    /// reads `/proc/self/maps`, allocates and takes up to ~1.5 ms per MiB (less when the pages
    /// exist already). [`PrefaultStats`] says what it did, [`PrefaultMethod`] how (Linux
    /// >= 5.14: `MADV_POPULATE_WRITE`; older kernels: a read of each page).
    ///
    /// The log is found as the file the driver names `<aeron dir>/publications/<original
    /// registration id>.logbuffer` (Aeron's C and Java drivers both do).
    ///
    /// # Errors
    /// [`PrefaultError::NotMapped`] / [`PrefaultError::Inspect`] when the log file or its
    /// mapping cannot be found, [`PrefaultError::Populate`] when the kernel cannot fault a page
    /// in (no memory, `/dev/shm` full).
    pub fn prefault(&self) -> Result<PrefaultStats, PrefaultError> {
        self.mapping.prefault()
    }

    /// Closes the publication: the driver is told at once.
    pub fn close(self) {}
}

/// Send stamps (feature `tap`, [`crate::tap`]).
#[cfg(feature = "tap")]
impl<K: PublicationKind> Publication<K> {
    /// Stamps every message's send time into its frame's reserved value, on `clock` (none:
    /// stops; off by default). [`offer`](Self::offer) and [`try_claim`](Self::try_claim) then
    /// read the clock once per attempt, right before claiming the space (a retried message
    /// carries its accepted attempt's time); [`offer_with_reserved_value`](Self::offer_with_reserved_value)
    /// and [`Claim::set_reserved_value`] still write what they are given. Every fragment of a
    /// fragmented message carries the stamp.
    pub fn stamp_send_time(&mut self, clock: Option<crate::tap::StampClock>) {
        self.stamp = clock;
    }

    /// The clock this publication stamps from, if it stamps.
    #[must_use]
    pub fn send_stamp(&self) -> Option<crate::tap::StampClock> {
        self.stamp
    }

    /// [`offer`](Self::offer) with the send stamp `now` the caller already read (on the clock
    /// its subscribers expect), so the clock is not read twice; whether or not this publication
    /// stamps by itself.
    ///
    /// # Errors
    /// As [`offer`](Self::offer).
    #[inline]
    pub fn offer_stamped(&self, msg: &[u8], now: i64) -> Result<u64, OfferError> {
        self.append(msg, Some(now))
    }

    /// [`try_claim`](Self::try_claim) with the send stamp `now` the caller already read.
    ///
    /// # Errors
    /// As [`try_claim`](Self::try_claim).
    #[inline]
    pub fn try_claim_stamped(&self, len: usize, now: i64) -> Result<Claim<'_>, OfferError> {
        self.claim(len, Some(now))
    }
}

/// A claimed range of the log; write the message, then [`commit`](Self::commit).
/// Dropping it without committing aborts it (the range becomes padding subscribers skip).
#[must_use = "a claim must be committed, or it is aborted when dropped"]
pub struct Claim<'a> {
    /// The publication's log: the claimed frame is `offset` in term `index`, its header
    /// written with a negative length, ours alone until published.
    log: &'a TermLog<RawLog>,
    index: usize,
    offset: i32,
    len: usize,
    done: bool,
}

impl fmt::Debug for Claim<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Claim").field("len", &self.len).finish()
    }
}

impl Claim<'_> {
    /// The claimed bytes (not zeroed: they may hold an older message).
    #[inline]
    pub fn buffer_mut(&mut self) -> &mut [u8] {
        let frame = self.log.mem.frame(self.index, self.offset);
        // SAFETY: the claim owns `len` payload bytes after the frame's header, inside the
        // mapped term (the reservation checked it), until it publishes them; the slice borrows
        // `&mut self`, so no other reference to them can exist.
        unsafe { std::slice::from_raw_parts_mut(frame.add(DATA_HEADER_LEN), self.len) }
    }

    /// The claimed length.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the claim is zero bytes long.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sets the frame's reserved value (a 64-bit field of Aeron's data header subscribers read
    /// as [`MessageHeader::reserved_value`](crate::MessageHeader::reserved_value); e.g. a
    /// checksum or a timestamp). Call it before [`commit`](Self::commit).
    #[inline]
    pub fn set_reserved_value(&mut self, value: i64) {
        use crate::log::memory::LogMemory as _;
        // SAFETY: the claimed frame is ours until published.
        unsafe { self.log.mem.write_reserved_value(self.index, self.offset, value) }
    }

    /// Publishes the written bytes (Aeron's `BufferClaim.commit`: a release store of the
    /// frame's length).
    #[inline]
    pub fn commit(mut self) {
        self.done = true;
        self.log.commit(self.index, self.offset, self.len);
    }

    /// Gives the range up; subscribers skip it (the frame becomes padding).
    pub fn abort(mut self) {
        self.done = true;
        self.log.abort(self.index, self.offset, self.len);
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.log.abort(self.index, self.offset, self.len);
        }
    }
}
