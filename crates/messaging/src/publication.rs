//! Publishing: `offer` (copy) and zero-copy `try_claim`.
//!
//! Guarantees:
//! - neither call allocates, logs through our code, or makes a syscall;
//! - neither call takes a lock or ever blocks: the publication writes the log itself, as
//!   Aeron's concurrent term appender does (one atomic add on the tail claims the space, a
//!   release store of the frame length publishes it), so any number of [`Publisher`]s of one
//!   stream, on any threads, append side by side; aeron-rs only adds, tracks and removes it;
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
use std::sync::atomic::{AtomicI32, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use aeron_rs::publication::Publication as AeronPublication;

use crate::appender::{length_of, rotate_log, Log};
use crate::conductor::{Inner, ACTIVE};
use crate::error::{AddError, OfferError, PrefaultError};
use crate::frame::{fragmented_length, framed_length, DataHeader, DATA_HEADER_LEN, HDR_TYPE_PAD};
use crate::prefault::PrefaultStats;
#[cfg(doc)]
use crate::PrefaultMethod;

/// The log file of a publication: `<aeron dir>/publications/<original registration id>.logbuffer`
/// (Aeron's C and Java drivers both name it so).
pub(crate) fn log_path(client: &Inner, original_registration_id: i64) -> std::path::PathBuf {
    client
        .dir()
        .join("publications")
        .join(format!("{original_registration_id}.logbuffer"))
}

/// The status and identity methods both publications share, over their `log`, `live` and
/// `channel` fields.
macro_rules! log_accessors {
    () => {
        /// Whether at least one subscriber is connected, as the driver last said (the log's
        /// `is_connected` flag): one atomic load. False once the client lost its driver.
        #[must_use]
        pub fn is_connected(&self) -> bool {
            self.live.load(Ordering::Relaxed) == ACTIVE && self.log.is_connected()
        }

        /// The largest message `try_claim` accepts (one MTU less the frame header).
        #[must_use]
        pub fn max_payload_length(&self) -> usize {
            self.log.max_payload
        }

        /// The largest message `offer` accepts: Aeron's maximum message length (an eighth of
        /// the term, at most 16 MiB, fragmented across frames), or one frame's payload
        /// ([`max_payload_length`](Self::max_payload_length)) where the MTU is larger, as
        /// Aeron checks the maximum only for fragmented messages.
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
    };
}
pub(crate) use log_accessors;

/// A publication on one channel and stream (Aeron's concurrent publication): any number of
/// them may write to one stream, from any threads.
pub struct Publisher {
    log: Log,
    channel: String,
    /// The client's liveness state (one load per offer/try_claim).
    live: Arc<AtomicU8>,
    /// Keeps the publication registered with the driver; dropping it removes it. Never locked
    /// after construction (a unit test locks it to show nothing here waits for it).
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "held for its Drop, which removes the publication")
    )]
    pub(crate) publication: Arc<Mutex<AeronPublication>>,
}

impl fmt::Debug for Publisher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Publisher")
            .field("channel", &self.channel)
            .field("stream_id", &self.log.stream_id)
            .field("session_id", &self.log.session_id)
            .field("term_length", &self.log.term_length)
            .field("connected", &self.is_connected())
            .finish()
    }
}

/// Where a message goes: the partition, the offset and term id the atomic add returned, and
/// the stream position after it.
struct Reserved {
    index: usize,
    offset: i32,
    term_id: i32,
    position: i64,
}

impl Publisher {
    pub(crate) fn new(
        publication: Arc<Mutex<AeronPublication>>,
        client: Arc<Inner>,
        channel: &str,
        stream_id: i32,
    ) -> Result<Self, AddError> {
        let spec = crate::appender::log_spec!(publication, &client, stream_id);
        let live = client.shared.lost.state.clone();
        Ok(Self {
            log: Log::open(spec, client)?,
            channel: channel.to_owned(),
            live,
            publication,
        })
    }

    /// The stream position after the last message written to this publication's log (a
    /// byte count from the start of the stream: headers, alignment and padding included).
    /// Two atomic loads of the log's metadata (Aeron's `Publication.position`).
    ///
    /// # Errors
    /// [`OfferError::ClientClosed`] once the client lost its driver.
    pub fn position(&self) -> Result<i64, OfferError> {
        let count = self.log.active_term_count().load(Ordering::Acquire);
        let raw = self.log.tail((count as u32 % 3) as usize).load(Ordering::Acquire);
        let offset = (raw & 0xFFFF_FFFF).min(i64::from(self.log.term_length)) as i32;
        let position = self.log.position((raw >> 32) as i32, offset);
        if self.live.load(Ordering::Relaxed) != ACTIVE {
            return Err(OfferError::ClientClosed);
        }
        Ok(position)
    }

    /// Bytes one unfragmented message of `payload` bytes takes in the log: Aeron's 32-byte
    /// data header plus the payload, aligned to 32 bytes. A message that does not fit in the
    /// rest of a term is preceded by a padding frame that fills the term.
    #[must_use]
    pub fn frame_length(payload: usize) -> usize {
        framed_length(payload)
    }

    /// `aeron_publication_offer`'s checks, then one atomic add on the tail for `framed` bytes
    /// (`get_and_add_raw_tail`): where to write, or why not (a full term is padded and the
    /// log rotated: `AdminAction`).
    #[inline]
    fn reserve(&self, length: usize, max: usize, framed: usize) -> Result<Reserved, OfferError> {
        if self.live.load(Ordering::Relaxed) != ACTIVE {
            return Err(OfferError::ClientClosed);
        }
        if length > max {
            return Err(OfferError::MessageTooLong { length, max });
        }
        let log = &self.log;
        let limit = log.limit();
        let term_count = log.active_term_count().load(Ordering::Acquire);
        let index = (term_count as u32 % 3) as usize;
        let raw = log.tail(index).load(Ordering::Acquire);
        let term_length = log.term_length;
        let term_id = (raw >> 32) as i32;
        if term_count != term_id.wrapping_sub(log.initial_term_id) {
            // Another publisher is rotating the log.
            return Err(OfferError::AdminAction);
        }
        let position = log.position(term_id, (raw & 0xFFFF_FFFF).min(i64::from(term_length)) as i32);
        if position >= limit {
            return Err(log.refused(position, length));
        }
        let raw = log.tail(index).fetch_add(framed as i64, Ordering::AcqRel);
        let term_id = (raw >> 32) as i32;
        let offset = (raw & 0xFFFF_FFFF).min(i64::from(term_length)) as i32;
        let resulting = offset + framed as i32;
        let position = log.position(term_id, resulting);
        if resulting > term_length {
            return Err(self.term_full(index, offset, term_id, position));
        }
        Ok(Reserved {
            index,
            offset,
            term_id,
            position,
        })
    }

    /// `aeron_publication_handle_end_of_log_condition`: pad the rest of the term, then the
    /// stream's end or a rotation to the next term.
    #[cold]
    fn term_full(&self, index: usize, offset: i32, term_id: i32, position: i64) -> OfferError {
        self.log.pad(index, offset, term_id);
        if position >= self.log.max_possible_position {
            return OfferError::MaxPositionExceeded;
        }
        rotate_log(&self.log, term_id.wrapping_sub(self.log.initial_term_id), term_id);
        OfferError::AdminAction
    }

    /// Copies `msg` into the log (fragmented above [`max_payload_length`](Self::max_payload_length)).
    /// Returns the new stream position.
    ///
    /// # Errors
    /// An [`OfferError`]; retry when [`OfferError::is_retryable`] says so.
    #[inline]
    pub fn offer(&mut self, msg: &[u8]) -> Result<u64, OfferError> {
        self.append(msg, None)
    }

    /// [`offer`](Self::offer) with the frame's reserved value set to `reserved_value` (Aeron's
    /// `ReservedValueSupplier`); a message longer than one frame carries it in every fragment.
    ///
    /// # Errors
    /// As [`offer`](Self::offer).
    #[inline]
    pub fn offer_with_reserved_value(&mut self, msg: &[u8], reserved_value: i64) -> Result<u64, OfferError> {
        self.append(msg, Some(reserved_value))
    }

    #[inline]
    fn append(&self, msg: &[u8], reserved: Option<i64>) -> Result<u64, OfferError> {
        let unfragmented = msg.len() <= self.log.max_payload;
        let framed = if unfragmented {
            Self::frame_length(msg.len())
        } else {
            fragmented_length(msg.len(), self.log.max_payload)
        };
        let r = self.reserve(msg.len(), self.log.max_offer(), framed)?;
        if unfragmented {
            self.log.write_unfragmented(r.index, r.offset, r.term_id, msg, reserved);
        } else {
            self.log.write_fragmented(r.index, r.offset, r.term_id, msg, reserved);
        }
        Ok(r.position as u64)
    }

    /// Claims `len` bytes in the log for zero-copy writing. Fill
    /// [`Claim::buffer_mut`] and [`commit`](Claim::commit); dropping the claim aborts it.
    /// `len` may be at most [`max_payload_length`](Self::max_payload_length) (one MTU).
    ///
    /// # Errors
    /// An [`OfferError`]; retry when [`OfferError::is_retryable`] says so.
    #[inline]
    pub fn try_claim(&mut self, len: usize) -> Result<Claim<'_>, OfferError> {
        let r = self.reserve(len, self.log.max_payload, Self::frame_length(len))?;
        let frame = self.log.claim_frame(r.index, r.offset, r.term_id, len);
        // SAFETY: the atomic add reserved this frame inside the term for us alone until the
        // claim publishes its length; the claim borrows the publisher, which keeps the mapping.
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
    /// The log is found as the file the driver names `<aeron dir>/publications/<original
    /// registration id>.logbuffer` (Aeron's C and Java drivers both do).
    ///
    /// # Errors
    /// [`PrefaultError::NotMapped`] / [`PrefaultError::Inspect`] when the log file or its
    /// mapping cannot be found, [`PrefaultError::Populate`] when the kernel cannot fault a page
    /// in (no memory, `/dev/shm` full).
    pub fn prefault(&self) -> Result<PrefaultStats, PrefaultError> {
        self.log.prefault()
    }

    log_accessors!();

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
        unsafe { (&raw mut (*self.frame.cast::<DataHeader>()).reserved_value).write(value) }
    }

    /// The frame length field, published with a release store.
    #[inline]
    fn frame_length(&self) -> &AtomicI32 {
        // SAFETY: a frame start in the mapped log, 32-byte aligned, mapped while the claim lives.
        unsafe { length_of(self.frame) }
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
        unsafe { (&raw mut (*self.frame.cast::<DataHeader>()).frame_type).write(HDR_TYPE_PAD) };
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
}

/// Forwards every [`Publication`] method to the type's inherent one.
macro_rules! forward_publication {
    ($t:ty) => {
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
        }
    };
}
pub(crate) use forward_publication;

forward_publication!(Publisher);
