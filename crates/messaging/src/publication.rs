//! Publishing: `offer` (copy) and zero-copy `try_claim`.
//!
//! Guarantees:
//! - neither call allocates, logs through our code, or makes a syscall;
//! - neither call ever blocks: aeron-rs keeps each publication behind a `std::sync::Mutex`
//!   that its conductor thread also takes; we `try_lock` it once per call, and if the
//!   conductor holds it at that instant the call returns [`OfferError::ClientBusy`]
//!   (retryable) instead of parking the hot thread on a futex;
//! - every failure is one typed [`OfferError`]; retry exactly when
//!   [`is_retryable`](OfferError::is_retryable) says so.
//!
//! ```
//! # #[cfg(feature = "embedded-driver")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use messaging::{Client, IdleStrategy};
//! # let driver = messaging::EmbeddedDriver::builder().private_dir().ipc_term_length(64 * 1024).spawn()?;
//! let client = Client::connect(driver.dir())?;
//! let mut publisher = client.publication("aeron:ipc", 1001)?;
//! # let _subscriber = client.subscription("aeron:ipc", 1001)?;
//! let mut idle: IdleStrategy = "yield".parse()?;
//! // Copy in. Until a subscriber is connected (and whenever it is behind) the offer says so:
//! // retry what is retryable, give up on the rest.
//! while let Err(e) = publisher.offer(b"hello") {
//!     if !e.is_retryable() {
//!         return Err(e.into());
//!     }
//!     idle.idle_once();
//! }
//! // Or write straight into the term buffer.
//! loop {
//!     match publisher.try_claim(8) {
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

use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use aeron_rs::concurrent::atomic_buffer::AtomicBuffer;
use aeron_rs::concurrent::logbuffer::buffer_claim::BufferClaim;
use aeron_rs::publication::Publication as AeronPublication;
use aeron_rs::utils::types::Index;

use crate::conductor::Inner;
use crate::error::{AddError, OfferError, PrefaultError};
use crate::logbuffer::{position_of_raw_tail, LogMetadata};
use crate::prefault::{self, PrefaultStats};
#[cfg(doc)]
use crate::PrefaultMethod;

/// Aeron's data frame header length: a claim's payload starts this far into the frame.
pub(crate) const DATA_HEADER_LEN: usize = 32;
/// Where the reserved value sits in Aeron's data header.
const RESERVED_VALUE_OFFSET: usize = 24;
/// `HDR_TYPE_PAD`.
const HDR_TYPE_PAD: u16 = 0;
/// Aeron's frame alignment in the log.
pub(crate) const FRAME_ALIGNMENT: usize = 32;

thread_local! {
    /// The reserved value of the offer in progress on this thread.
    static RESERVED_VALUE: std::cell::Cell<i64> = const { std::cell::Cell::new(0) };
}

/// aeron-rs's `OnReservedValueSupplier` for [`Publisher::offer_with_reserved_value`].
fn reserved_value_of_this_thread(_: AtomicBuffer, _: Index, _: Index) -> i64 {
    RESERVED_VALUE.with(std::cell::Cell::get)
}

/// The log file of a publication: `<aeron dir>/publications/<original registration id>.logbuffer`
/// (Aeron's C and Java drivers both name it so).
pub(crate) fn log_path(client: &Inner, original_registration_id: i64) -> std::path::PathBuf {
    client
        .dir()
        .join("publications")
        .join(format!("{original_registration_id}.logbuffer"))
}

/// A publication on one channel and stream.
pub struct Publisher {
    // Field order matters: the publication must drop (sending its remove through the
    // client's mapping) before the client handle below.
    pub(crate) publication: Arc<Mutex<AeronPublication>>,
    claim: BufferClaim,
    max_payload: usize,
    max_message: usize,
    term_length: usize,
    session_id: i32,
    /// Names the log file: `<aeron dir>/publications/<original registration id>.logbuffer`.
    original_registration_id: i64,
    channel: String,
    stream_id: i32,
    /// Calls that found the publication lock held (by aeron-rs's conductor).
    busy: std::sync::atomic::AtomicU64,
    /// Our own read-only mapping of the log's metadata: status reads without the lock.
    meta: LogMetadata,
    initial_term_id: i32,
    /// The client's liveness state (one load per offer/try_claim).
    live: Arc<std::sync::atomic::AtomicU8>,
    client: Arc<Inner>,
}

impl fmt::Debug for Publisher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Publisher")
            .field("channel", &self.channel)
            .field("stream_id", &self.stream_id)
            .field("session_id", &self.session_id)
            .field("term_length", &self.term_length)
            .field("connected", &self.is_connected())
            .finish()
    }
}

impl Publisher {
    pub(crate) fn new(
        publication: Arc<Mutex<AeronPublication>>,
        client: Arc<Inner>,
        channel: &str,
        stream_id: i32,
    ) -> Result<Self, AddError> {
        let (max_payload, max_message, term_length, session_id, original_registration_id, initial_term_id) = {
            let p = publication.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            (
                p.max_payload_length().max(0) as usize,
                p.max_message_length().max(0) as usize,
                p.term_buffer_length().max(0) as usize,
                p.session_id(),
                p.original_registration_id(),
                p.initial_term_id(),
            )
        };
        let path = log_path(&client, original_registration_id);
        let meta = LogMetadata::open(&path, term_length).map_err(|e| AddError::LogUnreadable {
            path,
            detail: e.to_string(),
        })?;
        Ok(Self {
            publication,
            claim: BufferClaim::default(),
            max_payload,
            max_message,
            term_length,
            session_id,
            original_registration_id,
            channel: channel.to_owned(),
            stream_id,
            busy: std::sync::atomic::AtomicU64::new(0),
            meta,
            initial_term_id,
            live: client.shared.lost.state.clone(),
            client,
        })
    }

    /// The stream position after the last message written to this publication's log (a
    /// byte count from the start of the stream: headers, alignment and padding included).
    /// Two atomic loads of the log's metadata (Aeron's `Publication.position`), never the
    /// conductor's lock.
    ///
    /// # Errors
    /// [`OfferError::ClientClosed`] once the client lost its driver (the position is then
    /// what it was when the driver went).
    pub fn position(&self) -> Result<i64, OfferError> {
        let position = position_of_raw_tail(self.meta.raw_tail(), self.term_length, self.initial_term_id);
        if self.live.load(std::sync::atomic::Ordering::Relaxed) != crate::conductor::ACTIVE {
            return Err(OfferError::ClientClosed);
        }
        Ok(position)
    }

    /// Bytes one unfragmented message of `payload` bytes takes in the log: Aeron's 32-byte
    /// data header plus the payload, aligned to 32 bytes. A message that does not fit in the
    /// rest of a term is preceded by a padding frame that fills the term.
    #[must_use]
    pub fn frame_length(payload: usize) -> usize {
        (DATA_HEADER_LEN + payload).next_multiple_of(FRAME_ALIGNMENT)
    }

    /// How many offer/try_claim calls so far found the publication's lock held by aeron-rs's
    /// conductor (and returned [`OfferError::ClientBusy`] for it).
    #[must_use]
    pub fn busy_count(&self) -> u64 {
        self.busy.load(std::sync::atomic::Ordering::Relaxed)
    }

    #[inline]
    fn check_message_length(&self, length: usize) -> Result<(), OfferError> {
        if length > self.max_message {
            return Err(OfferError::MessageTooLong {
                length,
                max: self.max_message,
            });
        }
        Ok(())
    }

    #[inline]
    fn lock(&self) -> Result<MutexGuard<'_, AeronPublication>, OfferError> {
        if self.live.load(std::sync::atomic::Ordering::Relaxed) != crate::conductor::ACTIVE {
            return Err(OfferError::ClientClosed);
        }
        match self.publication.try_lock() {
            Ok(g) => Ok(g),
            Err(TryLockError::WouldBlock) => {
                self.busy.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Err(OfferError::ClientBusy)
            }
            Err(TryLockError::Poisoned(_)) => Err(OfferError::Closed),
        }
    }

    /// Copies `msg` into the log. Returns the new stream position.
    ///
    /// # Errors
    /// An [`OfferError`]; retry when [`OfferError::is_retryable`] says so.
    #[inline]
    pub fn offer(&mut self, msg: &[u8]) -> Result<u64, OfferError> {
        self.check_message_length(msg.len())?;
        // aeron-rs's AtomicBuffer wants a mutable pointer even for a source it only reads.
        let src = AtomicBuffer::wrap_raw_slice(std::ptr::from_ref(msg).cast_mut());
        let p = self.lock()?;
        p.offer(src).map_err(OfferError::from_aeron)
    }

    /// [`offer`](Self::offer) with the frame's reserved value set to `reserved_value` (Aeron's
    /// `ReservedValueSupplier`); a message longer than one frame carries it in every fragment.
    ///
    /// # Errors
    /// As [`offer`](Self::offer).
    #[inline]
    pub fn offer_with_reserved_value(&mut self, msg: &[u8], reserved_value: i64) -> Result<u64, OfferError> {
        self.check_message_length(msg.len())?;
        let src = AtomicBuffer::wrap_raw_slice(std::ptr::from_ref(msg).cast_mut());
        let p = self.lock()?;
        // aeron-rs takes the supplier as a plain `fn`: the value travels in a thread-local the
        // supplier reads (set and read on this thread, inside this call).
        RESERVED_VALUE.with(|v| v.set(reserved_value));
        p.offer_opt(src, 0, msg.len() as Index, reserved_value_of_this_thread)
            .map_err(OfferError::from_aeron)
    }

    /// Claims `len` bytes in the log for zero-copy writing. Fill
    /// [`Claim::buffer_mut`] and [`commit`](Claim::commit); dropping the claim aborts it.
    /// `len` may be at most [`max_payload_length`](Self::max_payload_length) (one MTU).
    ///
    /// # Errors
    /// An [`OfferError`]; retry when [`OfferError::is_retryable`] says so.
    #[inline]
    pub fn try_claim(&mut self, len: usize) -> Result<Claim<'_>, OfferError> {
        if len > self.max_payload {
            return Err(OfferError::MessageTooLong {
                length: len,
                max: self.max_payload,
            });
        }
        let mut claim = self.claim;
        {
            let mut p = self.lock()?;
            p.try_claim(len as i32, &mut claim).map_err(OfferError::from_aeron)?;
        }
        let frame = claim.buffer().buffer();
        debug_assert!(DATA_HEADER_LEN + len <= claim.buffer().capacity() as usize);
        // SAFETY: aeron-rs claimed this frame (header + `len` bytes) in the mapped log, which
        // stays mapped while the publisher lives; the claim borrows the publisher mutably.
        Ok(unsafe { Claim::from_frame(frame, len) })
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
    /// aeron-rs gives no access to the publication's mapping, so it is found through the log
    /// file the driver names `<aeron dir>/publications/<original registration id>.logbuffer`
    /// (Aeron's C and Java drivers both do).
    ///
    /// # Errors
    /// [`PrefaultError::NotMapped`] / [`PrefaultError::Inspect`] when the log file or its
    /// mapping cannot be found, [`PrefaultError::Populate`] when the kernel cannot fault a page
    /// in (no memory, `/dev/shm` full).
    pub fn prefault(&self) -> Result<PrefaultStats, PrefaultError> {
        let path = log_path(&self.client, self.original_registration_id);
        // `&self` holds the publication, and with it its own mapping of the log, for the
        // whole call; other mappings of the file may go meanwhile (populate_all skips them).
        let ours = self.meta.range();
        let mut ranges = prefault::mappings_of(&path)?;
        // Our read-only view of the metadata is touched at every status read already.
        ranges.retain(|r| *r != ours);
        if ranges.is_empty() {
            return Err(PrefaultError::NotMapped { path });
        }
        prefault::populate_all(&ranges, &|| format!("the log {}", path.display()))
    }

    /// Whether at least one subscriber is connected, as the driver last said (the log's
    /// `is_connected` flag): one atomic load, never the conductor's lock. False once the
    /// client lost its driver.
    #[must_use]
    pub fn is_connected(&self) -> bool {
        self.live.load(std::sync::atomic::Ordering::Relaxed) == crate::conductor::ACTIVE && self.meta.is_connected()
    }

    /// The largest message `try_claim` accepts (one MTU less the frame header).
    #[must_use]
    pub fn max_payload_length(&self) -> usize {
        self.max_payload
    }

    /// The largest message `offer` accepts (fragmented across frames).
    #[must_use]
    pub fn max_message_length(&self) -> usize {
        self.max_message
    }

    /// The term buffer length of this publication's log.
    #[must_use]
    pub fn term_length(&self) -> usize {
        self.term_length
    }

    /// This publication's session id.
    #[must_use]
    pub fn session_id(&self) -> i32 {
        self.session_id
    }

    /// The channel this publication was added on.
    #[must_use]
    pub fn channel(&self) -> &str {
        &self.channel
    }

    /// The stream id.
    #[must_use]
    pub fn stream_id(&self) -> i32 {
        self.stream_id
    }

    /// Closes the publication: the driver is told at once.
    pub fn close(self) {}
}

/// A claimed range of the log; write the message, then [`commit`](Self::commit).
/// Dropping it without committing aborts it (the range becomes padding subscribers skip).
#[must_use = "a claim must be committed, or it is aborted when dropped"]
pub struct Claim<'a> {
    /// The claimed frame: Aeron's 32-byte data header, then `len` bytes.
    frame: *mut u8,
    len: usize,
    done: bool,
    _publisher: PhantomData<&'a mut ()>,
}

impl fmt::Debug for Claim<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Claim").field("len", &self.len).finish()
    }
}

impl Claim<'_> {
    /// # Safety
    /// `frame` is a claimed frame of `DATA_HEADER_LEN + len` bytes in a mapped log, its header
    /// written with a negative length, ours alone until its length is published, and mapped
    /// for as long as the claim's lifetime (the publisher it borrows).
    #[inline]
    pub(crate) unsafe fn from_frame(frame: *mut u8, len: usize) -> Self {
        Claim {
            frame,
            len,
            done: false,
            _publisher: PhantomData,
        }
    }

    /// The claimed bytes (not zeroed: they may hold an older message).
    #[inline]
    pub fn buffer_mut(&mut self) -> &mut [u8] {
        // SAFETY: the claim owns `len` payload bytes after the header (see `from_frame`), and
        // the returned slice borrows `&mut self`, so no other reference to them can exist.
        unsafe { std::slice::from_raw_parts_mut(self.frame.add(DATA_HEADER_LEN), self.len) }
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
        // SAFETY: the header is ours until published; the field is 8-byte aligned (frames are
        // 32-byte aligned).
        unsafe { self.frame.add(RESERVED_VALUE_OFFSET).cast::<i64>().write(value.to_le()) }
    }

    /// The frame length field, published with a release store.
    #[inline]
    fn frame_length(&self) -> &AtomicI32 {
        // SAFETY: the header's first 4 bytes, 4-byte aligned; every Aeron reader loads it atomically.
        unsafe { &*self.frame.cast::<AtomicI32>() }
    }

    /// Publishes the written bytes (Aeron's `BufferClaim.commit`: a release store of the
    /// frame's length).
    #[inline]
    pub fn commit(mut self) {
        self.done = true;
        self.frame_length()
            .store((DATA_HEADER_LEN + self.len) as i32, Ordering::Release);
    }

    /// Gives the range up; subscribers skip it (the frame becomes padding).
    pub fn abort(mut self) {
        self.done = true;
        self.pad();
    }

    fn pad(&self) {
        // SAFETY: as `set_reserved_value`: the type field (offset 6, 2 bytes) is ours until
        // the length is published.
        unsafe { self.frame.add(6).cast::<u16>().write(HDR_TYPE_PAD.to_le()) };
        self.frame_length()
            .store((DATA_HEADER_LEN + self.len) as i32, Ordering::Release);
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.pad();
        }
    }
}

/// What both publications offer (Aeron's `Publication`, the base of its concurrent and
/// exclusive publications), so code that publishes is written once for either:
/// [`Publisher`] (aeron-rs's publication, any number per stream, behind aeron-rs's lock) and
/// [`ExclusivePublisher`](crate::ExclusivePublisher) (one thread's, writing the log itself).
/// Each method is the type's own, documented there.
pub trait Publication: Send {
    /// See [`Publisher::offer`].
    ///
    /// # Errors
    /// An [`OfferError`].
    fn offer(&mut self, msg: &[u8]) -> Result<u64, OfferError>;
    /// See [`Publisher::offer_with_reserved_value`].
    ///
    /// # Errors
    /// An [`OfferError`].
    fn offer_with_reserved_value(&mut self, msg: &[u8], reserved_value: i64) -> Result<u64, OfferError>;
    /// See [`Publisher::try_claim`].
    ///
    /// # Errors
    /// An [`OfferError`].
    fn try_claim(&mut self, len: usize) -> Result<Claim<'_>, OfferError>;
    /// See [`Publisher::position`].
    ///
    /// # Errors
    /// [`OfferError::ClientClosed`] once the client lost its driver.
    fn position(&self) -> Result<i64, OfferError>;
    /// See [`Publisher::is_connected`].
    fn is_connected(&self) -> bool;
    /// See [`Publisher::max_payload_length`].
    fn max_payload_length(&self) -> usize;
    /// See [`Publisher::max_message_length`].
    fn max_message_length(&self) -> usize;
    /// See [`Publisher::term_length`].
    fn term_length(&self) -> usize;
    /// See [`Publisher::session_id`].
    fn session_id(&self) -> i32;
    /// See [`Publisher::channel`].
    fn channel(&self) -> &str;
    /// See [`Publisher::stream_id`].
    fn stream_id(&self) -> i32;
    /// See [`Publisher::prefault`].
    ///
    /// # Errors
    /// A [`PrefaultError`].
    fn prefault(&self) -> Result<PrefaultStats, PrefaultError>;
    /// Calls that returned [`OfferError::ClientBusy`] because aeron-rs's conductor held the
    /// publication's lock (always 0 for the exclusive publication, which takes no lock).
    fn busy_count(&self) -> u64;
}

/// Forwards every [`Publication`] method to the type's inherent one.
macro_rules! forward_publication {
    ($t:ty, busy: $busy:expr) => {
        impl $crate::publication::Publication for $t {
            #[inline]
            fn offer(&mut self, msg: &[u8]) -> Result<u64, OfferError> {
                <$t>::offer(self, msg)
            }
            #[inline]
            fn offer_with_reserved_value(&mut self, msg: &[u8], reserved_value: i64) -> Result<u64, OfferError> {
                <$t>::offer_with_reserved_value(self, msg, reserved_value)
            }
            #[inline]
            fn try_claim(&mut self, len: usize) -> Result<Claim<'_>, OfferError> {
                <$t>::try_claim(self, len)
            }
            fn position(&self) -> Result<i64, OfferError> {
                <$t>::position(self)
            }
            fn is_connected(&self) -> bool {
                <$t>::is_connected(self)
            }
            fn max_payload_length(&self) -> usize {
                <$t>::max_payload_length(self)
            }
            fn max_message_length(&self) -> usize {
                <$t>::max_message_length(self)
            }
            fn term_length(&self) -> usize {
                <$t>::term_length(self)
            }
            fn session_id(&self) -> i32 {
                <$t>::session_id(self)
            }
            fn channel(&self) -> &str {
                <$t>::channel(self)
            }
            fn stream_id(&self) -> i32 {
                <$t>::stream_id(self)
            }
            fn prefault(&self) -> Result<PrefaultStats, PrefaultError> {
                <$t>::prefault(self)
            }
            fn busy_count(&self) -> u64 {
                #[allow(clippy::redundant_closure_call)]
                ($busy)(self)
            }
        }
    };
}
pub(crate) use forward_publication;

forward_publication!(Publisher, busy: |p: &Publisher| p.busy_count());
