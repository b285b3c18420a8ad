//! The exclusive publication: one thread's publication that writes the log buffer itself, as
//! Aeron's C and Java clients do, with no lock on the way.
//!
//! Guarantees:
//! - `offer`, `offer_with_reserved_value`, `try_claim`, `Claim::commit`/`abort` take no lock,
//!   allocate nothing, make no syscall and issue no fence beyond Aeron's protocol (release
//!   stores of the tail and of the frame length, an acquire load of the publication limit:
//!   plain moves on x86-64); one relaxed load checks the client still has its driver;
//! - the log is written byte for byte as Aeron's exclusive term appender writes it (frame
//!   header, fragmentation at the MTU, padding at the end of a term, term rotation with an
//!   `AdminAction`), so any Aeron subscriber reads it: the C client's, Java's, aeron-rs's;
//! - [`ExclusivePublisher`] is `Send` but not `Sync`: one thread owns it, as Aeron requires of
//!   an exclusive publication. The publication is still added, tracked, kept alive and
//!   removed through aeron-rs's conductor (registration, liveness, `CLIENT_CLOSE`).
//!
//! ```
//! # #[cfg(feature = "embedded-driver")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use messaging::{Client, IdleStrategy};
//! # let driver = messaging::EmbeddedDriver::builder().private_dir().ipc_term_length(64 * 1024).spawn()?;
//! let client = Client::connect(driver.dir())?;
//! let mut publisher = client.exclusive_publication("aeron:ipc", 1003)?;
//! # let _subscriber = client.subscription("aeron:ipc", 1003)?;
//! let mut idle: IdleStrategy = "yield".parse()?;
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

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use aeron_rs::exclusive_publication::ExclusivePublication;

use crate::appender::Log;
use crate::conductor::{Inner, ACTIVE};
use crate::error::{AddError, OfferError, PrefaultError};
use crate::frame::{fragmented_length, framed_length};
use crate::prefault::PrefaultStats;
use crate::publication::Claim;

/// A publication one thread owns, writing the log buffer directly ([`Client::exclusive_publication`](crate::Client::exclusive_publication)).
pub struct ExclusivePublisher {
    // The appender's state, as Aeron's `aeron_exclusive_publication_t` keeps it.
    term_offset: i32,
    term_id: i32,
    active_index: usize,
    term_begin_position: i64,
    log: Log,
    /// The client's liveness state (one load per call).
    live: Arc<AtomicU8>,
    channel: String,
    /// Keeps the publication registered with the driver; dropping it removes it. Never locked
    /// after construction.
    _publication: Arc<Mutex<ExclusivePublication>>,
    /// Send, not Sync: one thread owns the appender's state.
    _one_thread: PhantomData<Cell<()>>,
}

// SAFETY: `Log` is Send; aeron-rs's `ExclusivePublication` is only held (never locked or used
// after construction) and dropped wherever the publisher is: aeron-rs itself shares it with its
// conductor thread behind its Mutex. The publisher stays !Sync (`_one_thread`): one thread at a
// time appends.
unsafe impl Send for ExclusivePublisher {}

impl fmt::Debug for ExclusivePublisher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExclusivePublisher")
            .field("channel", &self.channel)
            .field("stream_id", &self.log.stream_id)
            .field("session_id", &self.log.session_id)
            .field("term_length", &self.log.term_length)
            .field("position", &self.position())
            .field("connected", &self.is_connected())
            .finish()
    }
}

impl ExclusivePublisher {
    pub(crate) fn new(
        publication: Arc<Mutex<ExclusivePublication>>,
        client: Arc<Inner>,
        channel: &str,
        stream_id: i32,
    ) -> Result<Self, AddError> {
        let spec = crate::appender::log_spec!(publication, &client, stream_id);
        let live = client.shared.lost.state.clone();
        let log = Log::open(spec, client)?;
        // Where the log's tail is now (aeron_exclusive_publication_create).
        let term_count = log.active_term_count().load(Ordering::Acquire);
        let index = (term_count as u32 % 3) as usize;
        let raw_tail = log.tail(index).load(Ordering::Acquire);
        let term_id = (raw_tail >> 32) as i32;
        Ok(Self {
            term_offset: (raw_tail & 0xFFFF_FFFF) as i32,
            term_id,
            active_index: index,
            term_begin_position: log.position(term_id, 0),
            log,
            live,
            channel: channel.to_owned(),
            _publication: publication,
            _one_thread: PhantomData,
        })
    }

    #[inline]
    fn put_raw_tail(&self, resulting_offset: i32) {
        let raw = (i64::from(self.term_id) << 32) | i64::from(resulting_offset as u32);
        self.log.tail(self.active_index).store(raw, Ordering::Release);
    }

    /// Reserves `framed` bytes at the tail (`aeron_append_*`'s first half): the offset to
    /// write at, or `None` when the term is full (then padded to its end).
    #[inline]
    fn reserve(&mut self, framed: usize) -> Option<i32> {
        let offset = self.term_offset;
        let resulting = offset + framed as i32;
        self.put_raw_tail(resulting);
        if resulting > self.log.term_length {
            self.log.pad(self.active_index, offset, self.term_id);
            return None;
        }
        self.term_offset = resulting;
        Some(offset)
    }

    /// The term is full (and padded): the stream's end, or a rotation to the next term
    /// (`aeron_exclusive_publication_new_position` / `rotate_term`).
    #[cold]
    fn term_full(&mut self) -> OfferError {
        if self.term_begin_position + i64::from(self.log.term_length) >= self.log.max_possible_position {
            return OfferError::MaxPositionExceeded;
        }
        let next_term_id = self.term_id.wrapping_add(1);
        let next_count = next_term_id.wrapping_sub(self.log.initial_term_id);
        let next_index = self.log.index_of(next_term_id);
        self.active_index = next_index;
        self.term_offset = 0;
        self.term_id = next_term_id;
        self.term_begin_position += i64::from(self.log.term_length);
        self.log
            .tail(next_index)
            .store(i64::from(next_term_id) << 32, Ordering::Relaxed);
        self.log.active_term_count().store(next_count, Ordering::Release);
        OfferError::AdminAction
    }

    /// The checks every append starts with: the client has its driver, the message fits, the
    /// publication limit allows it.
    #[inline]
    fn admit(&self, length: usize, max: usize) -> Result<(), OfferError> {
        if self.live.load(Ordering::Relaxed) != ACTIVE {
            return Err(OfferError::ClientClosed);
        }
        if length > max {
            return Err(OfferError::MessageTooLong { length, max });
        }
        let position = self.term_begin_position + i64::from(self.term_offset);
        if position >= self.log.limit() {
            return Err(self.log.refused(position, length));
        }
        Ok(())
    }

    /// Copies `msg` into the log (fragmented above [`max_payload_length`](Self::max_payload_length)).
    /// Returns the new stream position.
    ///
    /// # Errors
    /// An [`OfferError`]; retry when [`OfferError::is_retryable`] says so (`AdminAction` after
    /// a term rotation: straight away).
    #[inline]
    pub fn offer(&mut self, msg: &[u8]) -> Result<u64, OfferError> {
        self.append(msg, None)
    }

    /// [`offer`](Self::offer) with every frame's reserved value set to `reserved_value`.
    ///
    /// # Errors
    /// As [`offer`](Self::offer).
    #[inline]
    pub fn offer_with_reserved_value(&mut self, msg: &[u8], reserved_value: i64) -> Result<u64, OfferError> {
        self.append(msg, Some(reserved_value))
    }

    #[inline]
    fn append(&mut self, msg: &[u8], reserved: Option<i64>) -> Result<u64, OfferError> {
        self.admit(msg.len(), self.log.max_offer())?;
        let unfragmented = msg.len() <= self.log.max_payload;
        let framed = if unfragmented {
            framed_length(msg.len())
        } else {
            fragmented_length(msg.len(), self.log.max_payload)
        };
        let Some(offset) = self.reserve(framed) else {
            return Err(self.term_full());
        };
        if unfragmented {
            self.log
                .write_unfragmented(self.active_index, offset, self.term_id, msg, reserved);
        } else {
            self.log
                .write_fragmented(self.active_index, offset, self.term_id, msg, reserved);
        }
        Ok((self.term_begin_position + i64::from(self.term_offset)) as u64)
    }

    /// Claims `len` bytes in the log for zero-copy writing (`aeron_claim`); fill
    /// [`Claim::buffer_mut`] and [`commit`](Claim::commit). At most
    /// [`max_payload_length`](Self::max_payload_length) bytes.
    ///
    /// # Errors
    /// An [`OfferError`]; retry when [`OfferError::is_retryable`] says so.
    #[inline]
    pub fn try_claim(&mut self, len: usize) -> Result<Claim<'_>, OfferError> {
        self.admit(len, self.log.max_payload)?;
        let Some(offset) = self.reserve(framed_length(len)) else {
            return Err(self.term_full());
        };
        let frame = self.log.claim_frame(self.active_index, offset, self.term_id, len);
        // SAFETY: the frame lies inside the active term and is ours alone until the claim
        // publishes its length; the claim borrows `self` mutably, so nothing else appends
        // meanwhile, and the mapping outlives it.
        Ok(unsafe { Claim::from_frame(frame, len) })
    }

    /// The stream position after the last message appended (`termBeginPosition + termOffset`):
    /// plain reads of this publisher's own state.
    ///
    /// # Errors
    /// [`OfferError::ClientClosed`] once the client lost its driver.
    pub fn position(&self) -> Result<i64, OfferError> {
        if self.live.load(Ordering::Relaxed) != ACTIVE {
            return Err(OfferError::ClientClosed);
        }
        Ok(self.term_begin_position + i64::from(self.term_offset))
    }

    crate::publication::log_accessors!();

    /// As [`Publisher::prefault`](crate::Publisher::prefault): every mapping of this
    /// publication's log in this process (this publisher's own included) is in the page tables,
    /// writable, before the measured phase. Not for the hot path.
    ///
    /// # Errors
    /// As [`Publisher::prefault`](crate::Publisher::prefault).
    pub fn prefault(&self) -> Result<PrefaultStats, PrefaultError> {
        self.log.prefault()
    }

    /// Closes the publication: the driver is told at once.
    pub fn close(self) {}
}

crate::publication::forward_publication!(ExclusivePublisher);
