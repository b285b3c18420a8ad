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
use std::fs::OpenOptions;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use aeron_rs::cnc_file_descriptor;
use aeron_rs::concurrent::counters::{CountersReader, COUNTER_LENGTH};
use aeron_rs::exclusive_publication::ExclusivePublication;
use memmap2::{MmapMut, MmapOptions};

use crate::conductor::{Inner, ACTIVE};
use crate::error::{AddError, OfferError, PrefaultError};
use crate::logbuffer::{
    LOG_ACTIVE_TERM_COUNT_OFFSET as ACTIVE_TERM_COUNT, LOG_IS_CONNECTED_OFFSET as IS_CONNECTED, LOG_META_DATA_LENGTH,
    LOG_TERM_LENGTH_OFFSET as TERM_LENGTH, PARTITION_COUNT, TERM_TAIL_COUNTERS_OFFSET,
};
use crate::prefault::{self, PrefaultStats};
use crate::publication::{log_path, Claim, DATA_HEADER_LEN, FRAME_ALIGNMENT};

/// Aeron's data frame: flags of a whole message, and of its first and last fragments.
const BEGIN_FLAG: u8 = 0x80;
const END_FLAG: u8 = 0x40;
/// `HDR_TYPE_DATA`.
const HDR_TYPE_DATA: u16 = 0x01;
/// `AERON_FRAME_HEADER_VERSION`.
const FRAME_VERSION: u8 = 0;

/// Aeron's limit on one message: an eighth of the term, at most 16 MiB.
fn max_message_length(term_length: usize) -> usize {
    (term_length / 8).min(16 * 1024 * 1024)
}

/// `aeron_logbuffer_compute_fragmented_length`: the log bytes a message of `length` takes when
/// cut into frames of at most `max_payload` bytes.
pub(crate) fn fragmented_length(length: usize, max_payload: usize) -> usize {
    let whole = length / max_payload;
    let rest = length % max_payload;
    let last = if rest > 0 {
        (rest + DATA_HEADER_LEN).next_multiple_of(FRAME_ALIGNMENT)
    } else {
        0
    };
    whole * (max_payload + DATA_HEADER_LEN) + last
}

/// A publication one thread owns, writing the log buffer directly ([`Client::exclusive_publication`](crate::Client::exclusive_publication)).
pub struct ExclusivePublisher {
    // The appender's state, as Aeron's `aeron_exclusive_publication_t` keeps it.
    term_offset: i32,
    term_id: i32,
    active_index: usize,
    term_begin_position: i64,
    /// The log file mapped shared and writable: three terms, then the metadata.
    log: *mut u8,
    /// The publication-limit counter in the client's mapping of cnc.dat.
    limit: *const AtomicI64,
    term_length: i32,
    position_bits_to_shift: u32,
    initial_term_id: i32,
    session_id: i32,
    stream_id: i32,
    max_payload: usize,
    max_message: usize,
    max_possible_position: i64,
    /// The client's liveness state (one load per call).
    live: Arc<AtomicU8>,
    channel: String,
    original_registration_id: i64,
    _map: MmapMut,
    /// Keeps the publication registered with the driver; dropping it removes it. Never locked
    /// after construction.
    _publication: Arc<Mutex<ExclusivePublication>>,
    /// Keeps the client (and its mapping of cnc.dat, where `limit` points) alive.
    client: Arc<Inner>,
    /// Send, not Sync: one thread owns the appender's state.
    _one_thread: PhantomData<Cell<()>>,
}

// SAFETY: the raw pointers point into `_map` (owned) and into the client's mapping of cnc.dat
// (kept alive by `client`); moving the publisher to another thread moves that ownership with
// it. It stays !Sync (`_one_thread`): only one thread at a time appends.
unsafe impl Send for ExclusivePublisher {}

impl fmt::Debug for ExclusivePublisher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExclusivePublisher")
            .field("channel", &self.channel)
            .field("stream_id", &self.stream_id)
            .field("session_id", &self.session_id)
            .field("term_length", &self.term_length)
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
        let (session_id, original_registration_id, limit_id, term_length, initial_term_id, max_payload) = {
            let p = publication.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            (
                p.session_id(),
                p.original_registration_id(),
                p.publication_limit_id(),
                p.term_buffer_length(),
                p.initial_term_id(),
                p.max_payload_length().max(0) as usize,
            )
        };
        let path = log_path(&client, original_registration_id);
        let unreadable = |detail: String| AddError::LogUnreadable {
            path: path.clone(),
            detail,
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| unreadable(e.to_string()))?;
        // SAFETY: a shared mapping of the publication's log file, which the driver keeps while
        // the publication (held below) lives. The driver, subscribers and aeron-rs's own
        // mapping use it concurrently: every shared field is accessed atomically below, and
        // the frames we write are ours alone until their length is published (Aeron's rule).
        let map = unsafe { MmapOptions::new().map_mut(&file) }.map_err(|e| unreadable(e.to_string()))?;
        let log = map.as_ptr().cast_mut();
        if client.pre_touch {
            // As aeron-rs does for its own mappings with `pre_touch_mapped_memory`: no page
            // fault on this mapping in the hot path later.
            let start = map.as_ptr() as usize;
            let ours = start..start + map.len();
            prefault::populate_all(std::slice::from_ref(&ours), &|| format!("the log {}", path.display()))
                .map_err(|e| unreadable(e.to_string()))?;
        }
        let log_term_length = usize::try_from(term_length).unwrap_or(0);
        if !log_term_length.is_power_of_two()
            || log_term_length < 64 * 1024
            || log_term_length * PARTITION_COUNT as usize + LOG_META_DATA_LENGTH > map.len()
        {
            return Err(unreadable(format!(
                "a term length of {term_length} does not fit a log file of {} bytes",
                map.len()
            )));
        }
        let values = cnc_file_descriptor::create_counter_values_buffer(&client.shared.cnc);
        let limit_offset = CountersReader::counter_offset(limit_id);
        if limit_id < 0 || limit_offset + COUNTER_LENGTH > values.capacity() {
            return Err(unreadable(format!(
                "its publication-limit counter id {limit_id} is out of range"
            )));
        }
        // SAFETY: in bounds (checked above) and 8-byte aligned (counters are 128 bytes apart in
        // a page-aligned buffer); Aeron's driver only ever updates it atomically.
        let limit = unsafe {
            values
                .buffer()
                .add(limit_offset as usize)
                .cast::<AtomicI64>()
                .cast_const()
        };

        let mut p = Self {
            term_offset: 0,
            term_id: 0,
            active_index: 0,
            term_begin_position: 0,
            log,
            limit,
            term_length,
            position_bits_to_shift: log_term_length.trailing_zeros(),
            initial_term_id,
            session_id,
            stream_id,
            max_payload,
            max_message: max_message_length(log_term_length),
            max_possible_position: i64::from(term_length) << 31,
            live: client.shared.lost.state.clone(),
            channel: channel.to_owned(),
            original_registration_id,
            _map: map,
            _publication: publication,
            client,
            _one_thread: PhantomData,
        };
        let in_meta = p.meta_i32(TERM_LENGTH).load(Ordering::Acquire);
        if in_meta != term_length {
            return Err(AddError::LogUnreadable {
                path: log_path(&p.client, original_registration_id),
                detail: format!("its metadata gives a term length of {in_meta}, the client {term_length}"),
            });
        }
        // Where the log's tail is now (aeron_exclusive_publication_create).
        let term_count = p.meta_i32(ACTIVE_TERM_COUNT).load(Ordering::Acquire);
        let index = (term_count as u32 % PARTITION_COUNT as u32) as usize;
        let raw_tail = p.tail(index).load(Ordering::Acquire);
        p.active_index = index;
        p.term_id = (raw_tail >> 32) as i32;
        p.term_offset = (raw_tail & 0xFFFF_FFFF) as i32;
        p.term_begin_position = p.term_begin(p.term_id);
        Ok(p)
    }

    fn meta_i32(&self, offset: usize) -> &AtomicI32 {
        // SAFETY: the metadata follows the three terms inside the mapping (checked in `new`);
        // `offset` is one of Aeron's 4-byte aligned field offsets; shared fields are atomic.
        unsafe { &*self.log.add(self.meta_offset() + offset).cast::<AtomicI32>() }
    }

    fn tail(&self, index: usize) -> &AtomicI64 {
        debug_assert!(index < PARTITION_COUNT as usize);
        // SAFETY: the three tail counters open the metadata, 8-byte aligned (page-aligned
        // mapping, term lengths are powers of two >= 64 KiB).
        unsafe {
            &*self
                .log
                .add(self.meta_offset() + TERM_TAIL_COUNTERS_OFFSET + index * 8)
                .cast::<AtomicI64>()
        }
    }

    fn meta_offset(&self) -> usize {
        self.term_length as usize * PARTITION_COUNT as usize
    }

    fn term_begin(&self, term_id: i32) -> i64 {
        i64::from(term_id.wrapping_sub(self.initial_term_id)) << self.position_bits_to_shift
    }

    /// The start of the active term.
    #[inline]
    fn term(&self) -> *mut u8 {
        // SAFETY: `active_index` < 3, so the term lies inside the mapping.
        unsafe { self.log.add(self.active_index * self.term_length as usize) }
    }

    #[inline]
    fn put_raw_tail(&self, resulting_offset: i32) {
        let raw = (i64::from(self.term_id) << 32) | i64::from(resulting_offset as u32);
        self.tail(self.active_index).store(raw, Ordering::Release);
    }

    /// Writes a frame header at `offset` of the active term (`aeron_header_write`): the
    /// negative length first, so a reader skips the frame until its length is published.
    #[inline]
    fn write_header(&self, offset: i32, frame_length: usize, flags: u8) {
        let frame = unsafe_frame(self.term(), offset);
        // SAFETY: `offset` + `frame_length` lies inside the active term (the caller checked it
        // against the term length), the frame is ours alone until its length is published,
        // and the header fields are 4-byte aligned (frames are 32-byte aligned).
        unsafe {
            (*frame.cast::<AtomicI32>()).store(-(frame_length as i32), Ordering::Release);
            std::sync::atomic::fence(Ordering::Release);
            frame.add(4).write(FRAME_VERSION);
            frame.add(5).write(flags);
            frame.add(6).cast::<u16>().write(HDR_TYPE_DATA.to_le());
            frame.add(8).cast::<i32>().write(offset.to_le());
            frame.add(12).cast::<i32>().write(self.session_id.to_le());
            frame.add(16).cast::<i32>().write(self.stream_id.to_le());
            frame.add(20).cast::<i32>().write(self.term_id.to_le());
        }
    }

    /// Fills the rest of the term with a padding frame (`aeron_handle_end_of_log_condition`).
    #[cold]
    fn pad_to_end(&self, offset: i32) {
        if offset < self.term_length {
            let padding = (self.term_length - offset) as usize;
            self.write_header(offset, padding, BEGIN_FLAG | END_FLAG);
            let frame = unsafe_frame(self.term(), offset);
            // SAFETY: as in `write_header`: the padding frame is ours until published.
            unsafe {
                frame.add(6).cast::<u16>().write(0u16.to_le());
                (*frame.cast::<AtomicI32>()).store(padding as i32, Ordering::Release);
            }
        }
    }

    /// `aeron_exclusive_publication_new_position`: the new position, or a rotation to the next
    /// term (Aeron's admin action) when the message did not fit in this one.
    #[inline]
    fn new_position(&mut self, resulting_offset: Option<i32>) -> Result<u64, OfferError> {
        match resulting_offset {
            Some(offset) => {
                self.term_offset = offset;
                Ok((self.term_begin_position + i64::from(offset)) as u64)
            }
            None => Err(self.term_full()),
        }
    }

    /// The term is full (and padded): the stream's end, or a rotation to the next term.
    #[cold]
    fn term_full(&mut self) -> OfferError {
        if self.term_begin_position + i64::from(self.term_length) >= self.max_possible_position {
            return OfferError::MaxPositionExceeded;
        }
        self.rotate_term();
        OfferError::AdminAction
    }

    #[cold]
    fn rotate_term(&mut self) {
        let next_term_id = self.term_id.wrapping_add(1);
        let next_count = next_term_id.wrapping_sub(self.initial_term_id);
        let next_index = (next_count as u32 % PARTITION_COUNT as u32) as usize;
        self.active_index = next_index;
        self.term_offset = 0;
        self.term_id = next_term_id;
        self.term_begin_position += i64::from(self.term_length);
        self.tail(next_index)
            .store(i64::from(next_term_id) << 32, Ordering::Relaxed);
        self.meta_i32(ACTIVE_TERM_COUNT).store(next_count, Ordering::Release);
    }

    /// `aeron_exclusive_publication_back_pressure_status`.
    #[cold]
    fn refused(&self, position: i64, length: usize) -> OfferError {
        let framed = (length + DATA_HEADER_LEN).next_multiple_of(FRAME_ALIGNMENT) as i64;
        if position + framed >= self.max_possible_position {
            OfferError::MaxPositionExceeded
        } else if self.meta_i32(IS_CONNECTED).load(Ordering::Acquire) == 1 {
            OfferError::BackPressured
        } else {
            OfferError::NotConnected
        }
    }

    /// The checks every append starts with: the client has its driver, the message fits, the
    /// publication limit allows it. Returns the position the message would start at.
    #[inline]
    fn admit(&self, length: usize, max: usize) -> Result<(), OfferError> {
        if self.live.load(Ordering::Relaxed) != ACTIVE {
            return Err(OfferError::ClientClosed);
        }
        if length > max {
            return Err(OfferError::MessageTooLong { length, max });
        }
        // SAFETY: `limit` points into the client's mapping of cnc.dat (kept alive by `client`),
        // checked in bounds and aligned in `new`.
        let limit = unsafe { (*self.limit).load(Ordering::Acquire) };
        let position = self.term_begin_position + i64::from(self.term_offset);
        if position >= limit {
            return Err(self.refused(position, length));
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
        self.admit(msg.len(), self.max_message)?;
        let resulting = if msg.len() <= self.max_payload {
            self.append_unfragmented(msg, reserved)
        } else {
            self.append_fragmented(msg, reserved)
        };
        self.new_position(resulting)
    }

    /// Takes the next frame of `frame_length` bytes in the active term and writes its header
    /// (the first half of `aeron_append_unfragmented_message` and `aeron_claim`): the frame and
    /// the resulting term offset, or `None` when the term is full (then padded to its end).
    #[inline]
    fn next_frame(&mut self, frame_length: usize) -> Option<(*mut u8, i32)> {
        let aligned = frame_length.next_multiple_of(FRAME_ALIGNMENT) as i32;
        let offset = self.term_offset;
        let resulting = offset + aligned;
        self.put_raw_tail(resulting);
        if resulting > self.term_length {
            self.pad_to_end(offset);
            return None;
        }
        self.write_header(offset, frame_length, BEGIN_FLAG | END_FLAG);
        Some((unsafe_frame(self.term(), offset), resulting))
    }

    /// `aeron_append_unfragmented_message`; `None` when the term is full (padded).
    #[inline]
    fn append_unfragmented(&mut self, msg: &[u8], reserved: Option<i64>) -> Option<i32> {
        let frame_length = msg.len() + DATA_HEADER_LEN;
        let (frame, resulting) = self.next_frame(frame_length)?;
        // SAFETY: `next_frame` checked the frame lies inside the active term; it is ours alone
        // until its length is published below.
        unsafe {
            std::ptr::copy_nonoverlapping(msg.as_ptr(), frame.add(DATA_HEADER_LEN), msg.len());
            if let Some(v) = reserved {
                frame.add(24).cast::<i64>().write(v.to_le());
            }
            (*frame.cast::<AtomicI32>()).store(frame_length as i32, Ordering::Release);
        }
        Some(resulting)
    }

    /// `aeron_append_fragmented_message`.
    #[cold]
    fn append_fragmented(&mut self, msg: &[u8], reserved: Option<i64>) -> Option<i32> {
        let framed = fragmented_length(msg.len(), self.max_payload) as i32;
        let offset = self.term_offset;
        let resulting = offset + framed;
        self.put_raw_tail(resulting);
        if resulting > self.term_length {
            self.pad_to_end(offset);
            return None;
        }
        let mut flags = BEGIN_FLAG;
        let mut frame_offset = offset;
        let mut rest = msg;
        loop {
            let take = rest.len().min(self.max_payload);
            let frame_length = take + DATA_HEADER_LEN;
            if take == rest.len() {
                flags |= END_FLAG;
            }
            self.write_header(frame_offset, frame_length, flags);
            let frame = unsafe_frame(self.term(), frame_offset);
            // SAFETY: every fragment lies inside [offset, resulting), inside the term.
            unsafe {
                std::ptr::copy_nonoverlapping(rest.as_ptr(), frame.add(DATA_HEADER_LEN), take);
                if let Some(v) = reserved {
                    frame.add(24).cast::<i64>().write(v.to_le());
                }
                (*frame.cast::<AtomicI32>()).store(frame_length as i32, Ordering::Release);
            }
            rest = &rest[take..];
            if rest.is_empty() {
                break;
            }
            flags = 0;
            frame_offset += frame_length.next_multiple_of(FRAME_ALIGNMENT) as i32;
        }
        Some(resulting)
    }

    /// Claims `len` bytes in the log for zero-copy writing (`aeron_claim`); fill
    /// [`Claim::buffer_mut`] and [`commit`](Claim::commit). At most
    /// [`max_payload_length`](Self::max_payload_length) bytes.
    ///
    /// # Errors
    /// An [`OfferError`]; retry when [`OfferError::is_retryable`] says so.
    #[inline]
    pub fn try_claim(&mut self, len: usize) -> Result<Claim<'_>, OfferError> {
        self.admit(len, self.max_payload)?;
        let Some((frame, resulting)) = self.next_frame(len + DATA_HEADER_LEN) else {
            return Err(self.term_full());
        };
        self.term_offset = resulting;
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

    /// Whether a subscriber is connected, as the driver last said (one atomic load); false
    /// once the client lost its driver.
    #[must_use]
    pub fn is_connected(&self) -> bool {
        self.live.load(Ordering::Relaxed) == ACTIVE && self.meta_i32(IS_CONNECTED).load(Ordering::Acquire) == 1
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
        self.term_length as usize
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

    /// As [`Publisher::prefault`](crate::Publisher::prefault): every mapping of this
    /// publication's log in this process (this publisher's own included) is in the page tables,
    /// writable, before the measured phase. Not for the hot path.
    ///
    /// # Errors
    /// As [`Publisher::prefault`](crate::Publisher::prefault).
    pub fn prefault(&self) -> Result<PrefaultStats, PrefaultError> {
        let path = log_path(&self.client, self.original_registration_id);
        let ranges = prefault::mappings_of(&path)?;
        if ranges.is_empty() {
            return Err(PrefaultError::NotMapped { path });
        }
        prefault::populate_all(&ranges, &|| format!("the log {}", path.display()))
    }

    /// Closes the publication: the driver is told at once.
    pub fn close(self) {}
}

crate::publication::forward_publication!(ExclusivePublisher, busy: |_: &ExclusivePublisher| 0);

/// Where the frame at `offset` of `term` starts.
#[inline]
fn unsafe_frame(term: *mut u8, offset: i32) -> *mut u8 {
    // SAFETY: callers pass offsets inside the term (0 <= offset < term length).
    unsafe { term.add(offset as usize) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragmented_lengths_follow_aeron() {
        // MTU 1408: 1376-byte payloads.
        let max = 1376;
        assert_eq!(fragmented_length(1376, max), 1408);
        assert_eq!(fragmented_length(1377, max), 1408 + 64);
        assert_eq!(fragmented_length(3 * 1376, max), 3 * 1408);
        assert_eq!(fragmented_length(3 * 1376 + 1, max), 3 * 1408 + 64);
        assert_eq!(
            fragmented_length(10_000, max),
            7 * 1408 + (10_000_usize - 7 * 1376 + 32).next_multiple_of(32)
        );
    }

    #[test]
    fn max_message_is_an_eighth_of_the_term_up_to_16_mib() {
        assert_eq!(max_message_length(64 * 1024), 8 * 1024);
        assert_eq!(max_message_length(1 << 30), 16 << 20);
    }
}
