//! Writing a publication's log buffer ourselves, as Aeron's C client does
//! (`aeron_publication.c`, `aeron_exclusive_publication.c`): the mapping, the metadata and
//! counter reads, and the frame writes both publications share. Only the tail differs: the
//! exclusive publication keeps it in its own state, the concurrent one claims space with one
//! atomic add on the shared tail counter.
//!
//! A frame is published by a release store of its length after every other byte is written;
//! until then its length is negative and readers skip it. Nothing here takes a lock, allocates
//! or makes a syscall.

use std::fs::OpenOptions;
use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};
use std::sync::Arc;

use aeron_rs::cnc_file_descriptor;
use aeron_rs::concurrent::counters::{CountersReader, COUNTER_LENGTH};
use memmap2::{MmapMut, MmapOptions};

use crate::conductor::Inner;
use crate::error::{AddError, OfferError, PrefaultError};
use crate::frame::{
    framed_length, DataHeader, BEGIN_FLAG, DATA_HEADER_LEN, END_FLAG, FRAME_VERSION, HDR_TYPE_DATA, HDR_TYPE_PAD,
    UNFRAGMENTED,
};
use crate::logbuffer::{
    check_log_length, LOG_ACTIVE_TERM_COUNT_OFFSET, LOG_IS_CONNECTED_OFFSET, LOG_META_DATA_LENGTH,
    LOG_PAGE_SIZE_OFFSET, LOG_TERM_LENGTH_OFFSET, PARTITION_COUNT, TERM_TAIL_COUNTERS_OFFSET,
};
use crate::prefault::{self, PrefaultStats};

/// Aeron's limit on one message: an eighth of the term, at most 16 MiB.
pub(crate) fn max_message_length(term_length: usize) -> usize {
    (term_length / 8).min(16 * 1024 * 1024)
}

/// The [`LogSpec`] of aeron-rs publication `$p` (a `Publication` or an `ExclusivePublication`:
/// the same accessors on two types), locked once, when the publisher is built.
macro_rules! log_spec {
    ($p:expr, $client:expr, $stream_id:expr) => {{
        let p = $p.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        $crate::appender::LogSpec {
            path: $crate::publication::log_path($client, p.original_registration_id()),
            term_length: p.term_buffer_length(),
            initial_term_id: p.initial_term_id(),
            session_id: p.session_id(),
            stream_id: $stream_id,
            max_payload: p.max_payload_length().max(0) as usize,
            limit_id: p.publication_limit_id(),
        }
    }};
}
pub(crate) use log_spec;

/// What a publication is, as the client learnt it when the driver created it.
pub(crate) struct LogSpec {
    pub(crate) path: std::path::PathBuf,
    pub(crate) term_length: i32,
    pub(crate) initial_term_id: i32,
    pub(crate) session_id: i32,
    pub(crate) stream_id: i32,
    pub(crate) max_payload: usize,
    /// The publication-limit counter id.
    pub(crate) limit_id: i32,
}

/// A publication's log file mapped shared and writable, with what appending to it needs.
pub(crate) struct Log {
    /// Three terms from the start of the mapping.
    base: *mut u8,
    /// The metadata: the file's last [`LOG_META_DATA_LENGTH`] bytes (the file is
    /// `3 x term + 4096` rounded up to the driver's page size, so not always right after the
    /// terms).
    meta: *mut u8,
    /// The publication-limit counter in the client's mapping of cnc.dat.
    limit: *const AtomicI64,
    pub(crate) term_length: i32,
    pub(crate) position_bits_to_shift: u32,
    pub(crate) initial_term_id: i32,
    pub(crate) session_id: i32,
    pub(crate) stream_id: i32,
    pub(crate) max_payload: usize,
    pub(crate) max_message: usize,
    pub(crate) max_possible_position: i64,
    pub(crate) path: std::path::PathBuf,
    map: MmapMut,
    /// Keeps the client's mapping of cnc.dat, where `limit` points, alive.
    _client: Arc<Inner>,
}

// SAFETY: the raw pointers point into `map` (owned) and the client's mapping of cnc.dat (kept
// alive by `_client`); every access to memory others share goes through atomics, and the
// frames a publisher writes are its own until it publishes their length. Whether more than
// one thread may append is the owning publication's business (the exclusive one is !Sync and
// takes `&mut self`; the concurrent one claims space atomically).
unsafe impl Send for Log {}
// SAFETY: as above: `&Log` only reads constants and does atomic operations on shared memory.
unsafe impl Sync for Log {}

impl Log {
    /// Maps the log of `spec` (with `pre_touch`, faults every page in now).
    pub(crate) fn open(spec: LogSpec, client: Arc<Inner>) -> Result<Self, AddError> {
        let unreadable = |detail: String| AddError::LogUnreadable {
            path: spec.path.clone(),
            detail,
        };
        let invalid = |detail: String| AddError::LogInvalid {
            path: spec.path.clone(),
            detail,
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&spec.path)
            .map_err(|e| unreadable(e.to_string()))?;
        // SAFETY: a shared mapping of the publication's log file, which the driver keeps while
        // the publication lives (its owner holds it). The driver, subscribers and aeron-rs's own
        // mapping use it concurrently: see the type's SAFETY note.
        let map = unsafe { MmapOptions::new().map_mut(&file) }.map_err(|e| unreadable(e.to_string()))?;
        if map.len() < LOG_META_DATA_LENGTH || map.len() % 64 != 0 {
            return Err(invalid(format!(
                "the file is {} bytes long: not the length of an Aeron log",
                map.len()
            )));
        }
        // Where Aeron's C client (`aeron_raw_log_map_existing`) and Java's `LogBuffers` find it.
        let meta_offset = map.len() - LOG_META_DATA_LENGTH;
        let base = map.as_ptr().cast_mut();
        // SAFETY: `meta_offset` + 4096 is the mapping's length; the fields read are 4-byte
        // aligned (the mapping is page-aligned, its length a multiple of 64).
        let (in_meta, page_size) = unsafe {
            let meta = base.add(meta_offset);
            (
                (*meta.add(LOG_TERM_LENGTH_OFFSET).cast::<AtomicI32>()).load(Ordering::Acquire),
                (*meta.add(LOG_PAGE_SIZE_OFFSET).cast::<AtomicI32>()).load(Ordering::Acquire),
            )
        };
        if in_meta != spec.term_length {
            return Err(invalid(format!(
                "its metadata gives a term length of {in_meta}, the client {}",
                spec.term_length
            )));
        }
        check_log_length(spec.term_length, page_size, map.len()).map_err(invalid)?;
        let term = spec.term_length as usize;
        let values = cnc_file_descriptor::create_counter_values_buffer(&client.shared.cnc);
        let limit_offset = CountersReader::counter_offset(spec.limit_id);
        if spec.limit_id < 0 || limit_offset + COUNTER_LENGTH > values.capacity() {
            return Err(invalid(format!(
                "its publication-limit counter id {} is out of range",
                spec.limit_id
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
        let log = Log {
            base,
            // SAFETY: inside the mapping (checked above).
            meta: unsafe { base.add(meta_offset) },
            limit,
            term_length: spec.term_length,
            position_bits_to_shift: term.trailing_zeros(),
            initial_term_id: spec.initial_term_id,
            session_id: spec.session_id,
            stream_id: spec.stream_id,
            max_payload: spec.max_payload,
            max_message: max_message_length(term),
            max_possible_position: i64::from(spec.term_length) << 31,
            path: spec.path,
            map,
            _client: client,
        };
        if log._client.pre_touch {
            // As aeron-rs does for its own mappings with `pre_touch_mapped_memory`: no page
            // fault on this mapping in the hot path later.
            let ours = log.range();
            prefault::populate_all(std::slice::from_ref(&ours), &|| {
                format!("the log {}", log.path.display())
            })
            .map_err(|e| AddError::LogUnreadable {
                path: log.path.clone(),
                detail: e.to_string(),
            })?;
        }
        Ok(log)
    }

    /// This mapping's address range.
    fn range(&self) -> std::ops::Range<usize> {
        let start = self.map.as_ptr() as usize;
        start..start + self.map.len()
    }

    /// A 4-byte metadata field.
    pub(crate) fn meta_i32(&self, offset: usize) -> &AtomicI32 {
        // SAFETY: the metadata is the mapping's last 4 KiB (checked in `open`); `offset` is one
        // of Aeron's 4-byte aligned field offsets; shared fields are atomic.
        unsafe { &*self.meta.add(offset).cast::<AtomicI32>() }
    }

    /// The raw tail counter of partition `index` (term id << 32 | term offset).
    #[inline]
    pub(crate) fn tail(&self, index: usize) -> &AtomicI64 {
        debug_assert!(index < PARTITION_COUNT as usize);
        // SAFETY: the three tail counters open the metadata, 8-byte aligned (it starts 4 KiB
        // before the end of a page-aligned mapping whose length is a multiple of 64).
        unsafe { &*self.meta.add(TERM_TAIL_COUNTERS_OFFSET + index * 8).cast::<AtomicI64>() }
    }

    /// The active term count (which partition is being written).
    #[inline]
    pub(crate) fn active_term_count(&self) -> &AtomicI32 {
        self.meta_i32(LOG_ACTIVE_TERM_COUNT_OFFSET)
    }

    /// The publication limit the driver last set.
    #[inline]
    pub(crate) fn limit(&self) -> i64 {
        // SAFETY: see `open`: in bounds, aligned, kept mapped by `_client`.
        unsafe { (*self.limit).load(Ordering::Acquire) }
    }

    /// Whether the driver says a subscriber is connected.
    #[inline]
    pub(crate) fn is_connected(&self) -> bool {
        self.meta_i32(LOG_IS_CONNECTED_OFFSET).load(Ordering::Acquire) == 1
    }

    /// The stream position of `term_offset` in term `term_id`.
    #[inline]
    pub(crate) fn position(&self, term_id: i32, term_offset: i32) -> i64 {
        (i64::from(term_id.wrapping_sub(self.initial_term_id)) << self.position_bits_to_shift) + i64::from(term_offset)
    }

    /// The partition term `term_id` is written in.
    #[inline]
    pub(crate) fn index_of(&self, term_id: i32) -> usize {
        (term_id.wrapping_sub(self.initial_term_id) as u32 % PARTITION_COUNT as u32) as usize
    }

    /// The start of frame `offset` of partition `index`.
    #[inline]
    fn frame(&self, index: usize, offset: i32) -> *mut u8 {
        debug_assert!(index < PARTITION_COUNT as usize && (0..self.term_length).contains(&offset));
        // SAFETY: callers pass a partition index < 3 and an offset inside the term.
        unsafe { self.base.add(index * self.term_length as usize + offset as usize) }
    }

    /// Why an offer at `position` of `length` bytes is refused (`back_pressure_status`).
    #[cold]
    pub(crate) fn refused(&self, position: i64, length: usize) -> OfferError {
        let framed = framed_length(length) as i64;
        if position + framed >= self.max_possible_position {
            OfferError::MaxPositionExceeded
        } else if self.is_connected() {
            OfferError::BackPressured
        } else {
            OfferError::NotConnected
        }
    }

    /// The longest message `offer` takes: one frame up to the MTU, fragmented up to Aeron's
    /// maximum message length. Aeron checks the latter only on the fragmented path, so with an
    /// MTU above an eighth of the term an unfragmented message may be longer.
    #[inline]
    pub(crate) fn max_offer(&self) -> usize {
        self.max_message.max(self.max_payload)
    }

    /// Writes a frame header (`aeron_header_write`): the negative length first, so a reader
    /// skips the frame until its length is published, then the other fields of [`DataHeader`]
    /// (the reserved value is left as it is).
    #[inline]
    fn write_header(&self, index: usize, offset: i32, term_id: i32, frame_length: usize, flags: u8) -> *mut u8 {
        let frame = self.frame(index, offset);
        let h = frame.cast::<DataHeader>();
        // SAFETY: the frame lies inside the term (the caller checked offset + length against
        // the term length) and is ours alone until its length is published; it is 32-byte
        // aligned, so every field of the header is aligned.
        unsafe {
            length_of(frame).store(-(frame_length as i32), Ordering::Release);
            std::sync::atomic::fence(Ordering::Release);
            (&raw mut (*h).version).write(FRAME_VERSION);
            (&raw mut (*h).flags).write(flags);
            (&raw mut (*h).frame_type).write(HDR_TYPE_DATA);
            (&raw mut (*h).term_offset).write(offset);
            (&raw mut (*h).session_id).write(self.session_id);
            (&raw mut (*h).stream_id).write(self.stream_id);
            (&raw mut (*h).term_id).write(term_id);
        }
        frame
    }

    /// Fills the rest of the term from `offset` with a padding frame, if anything is left
    /// (`handle_end_of_log_condition`).
    #[cold]
    pub(crate) fn pad(&self, index: usize, offset: i32, term_id: i32) {
        if offset < self.term_length {
            let padding = (self.term_length - offset) as usize;
            let frame = self.write_header(index, offset, term_id, padding, UNFRAGMENTED);
            // SAFETY: as `write_header`: the padding frame is ours until published.
            unsafe {
                (&raw mut (*frame.cast::<DataHeader>()).frame_type).write(HDR_TYPE_PAD);
                length_of(frame).store(padding as i32, Ordering::Release);
            }
        }
    }

    /// Writes `msg` as one frame at `offset` (which the caller reserved: it fits the term) and
    /// publishes it.
    #[inline]
    pub(crate) fn write_unfragmented(
        &self,
        index: usize,
        offset: i32,
        term_id: i32,
        msg: &[u8],
        reserved: Option<i64>,
    ) {
        let frame_length = msg.len() + DATA_HEADER_LEN;
        let frame = self.write_header(index, offset, term_id, frame_length, UNFRAGMENTED);
        // SAFETY: the reserved frame lies inside the term and is ours until its length is
        // published below.
        unsafe {
            std::ptr::copy_nonoverlapping(msg.as_ptr(), frame.add(DATA_HEADER_LEN), msg.len());
            if let Some(v) = reserved {
                (&raw mut (*frame.cast::<DataHeader>()).reserved_value).write(v);
            }
            length_of(frame).store(frame_length as i32, Ordering::Release);
        }
    }

    /// Writes `msg` cut into frames of at most `max_payload` bytes from `offset` (reserved by
    /// the caller: [`fragmented_length`](crate::frame::fragmented_length) bytes fit the term), publishing each.
    #[cold]
    pub(crate) fn write_fragmented(&self, index: usize, offset: i32, term_id: i32, msg: &[u8], reserved: Option<i64>) {
        let mut flags = BEGIN_FLAG;
        let mut frame_offset = offset;
        let mut rest = msg;
        loop {
            let take = rest.len().min(self.max_payload);
            let frame_length = take + DATA_HEADER_LEN;
            if take == rest.len() {
                flags |= END_FLAG;
            }
            let frame = self.write_header(index, frame_offset, term_id, frame_length, flags);
            // SAFETY: every fragment lies inside the reserved range, inside the term.
            unsafe {
                std::ptr::copy_nonoverlapping(rest.as_ptr(), frame.add(DATA_HEADER_LEN), take);
                if let Some(v) = reserved {
                    (&raw mut (*frame.cast::<DataHeader>()).reserved_value).write(v);
                }
                length_of(frame).store(frame_length as i32, Ordering::Release);
            }
            rest = &rest[take..];
            if rest.is_empty() {
                return;
            }
            flags = 0;
            frame_offset += crate::frame::align(frame_length as i32);
        }
    }

    /// Writes the header of a claim of `len` bytes at `offset` (reserved by the caller) and
    /// hands out the frame, unpublished.
    #[inline]
    pub(crate) fn claim_frame(&self, index: usize, offset: i32, term_id: i32, len: usize) -> *mut u8 {
        self.write_header(index, offset, term_id, len + DATA_HEADER_LEN, UNFRAGMENTED)
    }

    /// Every mapping of this log in this process into the page tables (see
    /// [`Publisher::prefault`](crate::Publisher::prefault)).
    pub(crate) fn prefault(&self) -> Result<PrefaultStats, PrefaultError> {
        let ranges = prefault::mappings_of(&self.path)?;
        if ranges.is_empty() {
            return Err(PrefaultError::NotMapped {
                path: self.path.clone(),
            });
        }
        prefault::populate_all(&ranges, &|| format!("the log {}", self.path.display()))
    }
}

/// The length field of the frame at `frame`, which every Aeron writer and reader accesses
/// atomically.
///
/// # Safety
/// `frame` is a 4-byte aligned frame start inside a mapped log that outlives `'a`.
#[inline]
pub(crate) unsafe fn length_of<'a>(frame: *mut u8) -> &'a AtomicI32 {
    // SAFETY: the caller's promise; `frame_length` is the header's first field.
    unsafe { &*(&raw mut (*frame.cast::<DataHeader>()).frame_length).cast::<AtomicI32>() }
}

/// `aeron_logbuffer_rotate_log`: moves the log on from term `term_id` (term count
/// `term_count`) to the next, once, whoever of the concurrent publishers gets there first.
pub(crate) fn rotate_log(log: &Log, term_count: i32, term_id: i32) {
    let next_term_id = term_id.wrapping_add(1);
    let next_term_count = term_count.wrapping_add(1);
    let next_index = (next_term_count as u32 % PARTITION_COUNT as u32) as usize;
    let expected = next_term_id.wrapping_sub(PARTITION_COUNT as i32);
    let tail = log.tail(next_index);
    let mut raw = tail.load(Ordering::Acquire);
    while (raw >> 32) as i32 == expected {
        match tail.compare_exchange(raw, i64::from(next_term_id) << 32, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => break,
            Err(now) => raw = now,
        }
    }
    let _ = log
        .active_term_count()
        .compare_exchange(term_count, next_term_count, Ordering::AcqRel, Ordering::Acquire);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_message_is_an_eighth_of_the_term_up_to_16_mib() {
        assert_eq!(max_message_length(64 * 1024), 8 * 1024);
        assert_eq!(max_message_length(1 << 30), 16 << 20);
    }
}
