//! How the log's code touches the log's memory: one trait, [`LogMemory`], with every access the
//! appenders and the term reader make, named by what it is (a tail counter, a frame's length,
//! a header's plain fields, payload bytes) and with its memory ordering.
//!
//! [`RawLog`] is the implementation that ships: raw pointers into a mapped log file (or, in
//! tests, Miri and the fuzz target, a heap buffer laid out the same way), std atomics for what
//! Aeron shares atomically, plain reads and writes for the rest. The model checker runs the
//! same appender and reader code over its own implementation (`log::model`, under
//! `--cfg messaging_loom`), so the checked code is the shipped code.

use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};

#[cfg(any(test, feature = "fuzzing"))]
use super::descriptor::LOG_META_DATA_LENGTH;
use super::descriptor::{
    LOG_ACTIVE_TERM_COUNT_OFFSET, LOG_IS_CONNECTED_OFFSET, PARTITION_COUNT, TERM_TAIL_COUNTERS_OFFSET,
};
use super::frame::{DataHeader, DATA_HEADER_LEN};

/// The three terms and the metadata of one log. Offsets are byte offsets of a frame's start in
/// term `index` (0, 1 or 2), 32-byte aligned; the caller keeps every access inside the term.
///
/// The atomic accesses are Aeron's: the tail counters and the active term count (the
/// publishers' protocol), each frame's length (published last, with release; read first, with
/// acquire). The rest of a frame is plain memory that its writer owns until the length is
/// published, hence the `unsafe` methods.
pub(crate) trait LogMemory {
    /// Payload bytes read from a published frame.
    type Bytes<'a>: std::ops::Deref<Target = [u8]>
    where
        Self: 'a;

    /// The length of each term.
    fn term_length(&self) -> i32;
    /// Tail counter `index` (term id << 32 | term offset).
    fn tail_load(&self, index: usize, order: Ordering) -> i64;
    /// See [`tail_load`](Self::tail_load).
    fn tail_store(&self, index: usize, value: i64, order: Ordering);
    /// See [`tail_load`](Self::tail_load): the concurrent publication's claim.
    fn tail_fetch_add(&self, index: usize, delta: i64, order: Ordering) -> i64;
    /// See [`tail_load`](Self::tail_load): acquire-release on success, acquire on failure.
    fn tail_compare_exchange(&self, index: usize, current: i64, new: i64) -> Result<i64, i64>;
    /// The active term count: how many terms were completed since the initial one.
    fn active_term_count_load(&self, order: Ordering) -> i32;
    /// See [`active_term_count_load`](Self::active_term_count_load).
    fn active_term_count_store(&self, value: i32, order: Ordering);
    /// See [`active_term_count_load`](Self::active_term_count_load): acquire-release on success.
    fn active_term_count_compare_exchange(&self, current: i32, new: i32) -> Result<i32, i32>;
    /// Whether the driver says a subscriber is connected (`is_connected` in the metadata).
    fn is_connected(&self) -> bool;
    /// A release fence (`aeron_release`), as the header write has after its negative length.
    fn release_fence(&self);
    /// The length field of the frame at `offset` of term `index`.
    fn frame_length_load(&self, index: usize, offset: i32, order: Ordering) -> i32;
    /// See [`frame_length_load`](Self::frame_length_load).
    fn frame_length_store(&self, index: usize, offset: i32, value: i32, order: Ordering);

    /// Writes every field of `header` but its length (Aeron's header write after the negative
    /// length).
    ///
    /// # Safety
    /// The frame is reserved by the caller and not published: no one else writes it, readers
    /// skip it.
    unsafe fn write_header(&self, index: usize, offset: i32, header: &DataHeader);
    /// Writes the frame type field.
    ///
    /// # Safety
    /// As [`write_header`](Self::write_header).
    unsafe fn write_frame_type(&self, index: usize, offset: i32, frame_type: u16);
    /// Writes the reserved value field.
    ///
    /// # Safety
    /// As [`write_header`](Self::write_header).
    unsafe fn write_reserved_value(&self, index: usize, offset: i32, value: i64);
    /// Copies `bytes` into the frame's payload (after its header).
    ///
    /// # Safety
    /// As [`write_header`](Self::write_header); the payload fits the reserved frame.
    unsafe fn write_payload(&self, index: usize, offset: i32, bytes: &[u8]);
    /// The frame's header, read after its length was loaded with acquire and found positive
    /// (the length field of the copy is whatever the memory holds: use the loaded one).
    ///
    /// # Safety
    /// The frame's header lies inside the term.
    unsafe fn read_header(&self, index: usize, offset: i32) -> DataHeader;
    /// The frame's `len` payload bytes.
    ///
    /// # Safety
    /// As [`read_header`](Self::read_header); the payload lies inside the term.
    unsafe fn payload(&self, index: usize, offset: i32, len: usize) -> Self::Bytes<'_>;
}

/// A log's memory at two addresses: the terms (contiguous, `3 x term_length` bytes) and the
/// metadata (4096 bytes, 8-byte aligned). Borrowed: whoever made it keeps the memory alive and
/// mapped for as long as it is used.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawLog {
    terms: *mut u8,
    meta: *mut u8,
    term_length: i32,
}

// SAFETY: a RawLog is two addresses and a length; every access through it is either atomic or
// to a frame its caller owns (the trait's safety rules), as in Aeron's own clients, whose logs
// are shared between threads and processes.
unsafe impl Send for RawLog {}
// SAFETY: as above.
unsafe impl Sync for RawLog {}

impl RawLog {
    /// # Safety
    /// `terms` points to three terms of `term_length` bytes (a power of two, at least 64
    /// bytes, 32-byte aligned), `meta` to [`LOG_META_DATA_LENGTH`](super::descriptor::LOG_META_DATA_LENGTH) bytes, 8-byte aligned; both
    /// stay valid while this value or a copy of it is used.
    pub(crate) unsafe fn new(terms: *mut u8, meta: *mut u8, term_length: i32) -> RawLog {
        debug_assert!(term_length > 0 && (term_length as u32).is_power_of_two());
        debug_assert!((terms as usize).is_multiple_of(32) && (meta as usize).is_multiple_of(8));
        RawLog {
            terms,
            meta,
            term_length,
        }
    }

    /// The address of the frame at `offset` of term `index`.
    #[inline]
    pub(crate) fn frame(&self, index: usize, offset: i32) -> *mut u8 {
        debug_assert!(index < PARTITION_COUNT as usize && (0..self.term_length).contains(&offset));
        // SAFETY: inside the terms (callers pass a partition and an offset inside a term).
        unsafe { self.terms.add(index * self.term_length as usize + offset as usize) }
    }

    #[inline]
    fn header(&self, index: usize, offset: i32) -> *mut DataHeader {
        self.frame(index, offset).cast()
    }

    #[inline]
    fn meta_i64(&self, at: usize) -> &AtomicI64 {
        // SAFETY: `at` is one of Aeron's 8-byte aligned metadata fields, inside the metadata.
        unsafe { &*self.meta.add(at).cast::<AtomicI64>() }
    }

    #[inline]
    fn meta_i32(&self, at: usize) -> &AtomicI32 {
        // SAFETY: `at` is one of Aeron's 4-byte aligned metadata fields, inside the metadata.
        unsafe { &*self.meta.add(at).cast::<AtomicI32>() }
    }

    #[inline]
    fn tail(&self, index: usize) -> &AtomicI64 {
        debug_assert!(index < PARTITION_COUNT as usize);
        self.meta_i64(TERM_TAIL_COUNTERS_OFFSET + index * 8)
    }

    /// Zeroes term `index`, as the driver cleans a term behind its subscribers.
    ///
    /// # Safety
    /// No one reads or writes the term meanwhile (the publication limit keeps writers out).
    #[cfg(test)]
    pub(crate) unsafe fn clean(&self, index: usize) {
        // SAFETY: the term lies inside the log; the caller's promise covers the rest.
        unsafe { std::ptr::write_bytes(self.frame(index, 0), 0, self.term_length as usize) }
    }

    /// The length field of the frame at `frame` as an atomic.
    ///
    /// # Safety
    /// `frame` is a frame start inside a log that outlives `'a`.
    #[inline]
    pub(crate) unsafe fn length_of<'a>(frame: *mut u8) -> &'a AtomicI32 {
        // SAFETY: the caller's promise; the length is the header's first field, 4-byte aligned.
        unsafe { &*(&raw mut (*frame.cast::<DataHeader>()).frame_length).cast::<AtomicI32>() }
    }
}

impl LogMemory for RawLog {
    type Bytes<'a> = &'a [u8];

    #[inline]
    fn term_length(&self) -> i32 {
        self.term_length
    }

    #[inline]
    fn tail_load(&self, index: usize, order: Ordering) -> i64 {
        self.tail(index).load(order)
    }

    #[inline]
    fn tail_store(&self, index: usize, value: i64, order: Ordering) {
        self.tail(index).store(value, order);
    }

    #[inline]
    fn tail_fetch_add(&self, index: usize, delta: i64, order: Ordering) -> i64 {
        self.tail(index).fetch_add(delta, order)
    }

    fn tail_compare_exchange(&self, index: usize, current: i64, new: i64) -> Result<i64, i64> {
        self.tail(index)
            .compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire)
    }

    #[inline]
    fn active_term_count_load(&self, order: Ordering) -> i32 {
        self.meta_i32(LOG_ACTIVE_TERM_COUNT_OFFSET).load(order)
    }

    fn active_term_count_store(&self, value: i32, order: Ordering) {
        self.meta_i32(LOG_ACTIVE_TERM_COUNT_OFFSET).store(value, order);
    }

    fn active_term_count_compare_exchange(&self, current: i32, new: i32) -> Result<i32, i32> {
        self.meta_i32(LOG_ACTIVE_TERM_COUNT_OFFSET)
            .compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire)
    }

    #[inline]
    fn is_connected(&self) -> bool {
        self.meta_i32(LOG_IS_CONNECTED_OFFSET).load(Ordering::Acquire) == 1
    }

    #[inline]
    fn release_fence(&self) {
        std::sync::atomic::fence(Ordering::Release);
    }

    #[inline]
    fn frame_length_load(&self, index: usize, offset: i32, order: Ordering) -> i32 {
        // SAFETY: a frame start inside the log, which outlives `self`.
        unsafe { Self::length_of(self.frame(index, offset)) }.load(order)
    }

    #[inline]
    fn frame_length_store(&self, index: usize, offset: i32, value: i32, order: Ordering) {
        // SAFETY: as `frame_length_load`.
        unsafe { Self::length_of(self.frame(index, offset)) }.store(value, order);
    }

    #[inline]
    unsafe fn write_header(&self, index: usize, offset: i32, header: &DataHeader) {
        let h = self.header(index, offset);
        // SAFETY: the caller owns the unpublished frame; frames are 32-byte aligned, so every
        // field is aligned. The length (first field) is not touched: it is atomic.
        unsafe {
            (&raw mut (*h).version).write(header.version);
            (&raw mut (*h).flags).write(header.flags);
            (&raw mut (*h).frame_type).write(header.frame_type);
            (&raw mut (*h).term_offset).write(header.term_offset);
            (&raw mut (*h).session_id).write(header.session_id);
            (&raw mut (*h).stream_id).write(header.stream_id);
            (&raw mut (*h).term_id).write(header.term_id);
        }
    }

    #[inline]
    unsafe fn write_frame_type(&self, index: usize, offset: i32, frame_type: u16) {
        // SAFETY: as `write_header`.
        unsafe { (&raw mut (*self.header(index, offset)).frame_type).write(frame_type) }
    }

    #[inline]
    unsafe fn write_reserved_value(&self, index: usize, offset: i32, value: i64) {
        // SAFETY: as `write_header`.
        unsafe { (&raw mut (*self.header(index, offset)).reserved_value).write(value) }
    }

    #[inline]
    unsafe fn write_payload(&self, index: usize, offset: i32, bytes: &[u8]) {
        // SAFETY: the caller owns the unpublished frame, which holds the payload.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                self.frame(index, offset).add(DATA_HEADER_LEN),
                bytes.len(),
            );
        }
    }

    #[inline]
    unsafe fn read_header(&self, index: usize, offset: i32) -> DataHeader {
        let h = self.header(index, offset);
        // SAFETY: the caller's promise: a published header inside the term, aligned. The
        // length, which writers store atomically, is not read here (the caller loaded it).
        unsafe {
            DataHeader {
                frame_length: 0,
                version: (&raw const (*h).version).read(),
                flags: (&raw const (*h).flags).read(),
                frame_type: (&raw const (*h).frame_type).read(),
                term_offset: (&raw const (*h).term_offset).read(),
                session_id: (&raw const (*h).session_id).read(),
                stream_id: (&raw const (*h).stream_id).read(),
                term_id: (&raw const (*h).term_id).read(),
                reserved_value: (&raw const (*h).reserved_value).read(),
            }
        }
    }

    #[inline]
    unsafe fn payload(&self, index: usize, offset: i32, len: usize) -> &[u8] {
        // SAFETY: the caller's promise: the payload lies inside the term, published.
        unsafe { std::slice::from_raw_parts(self.frame(index, offset).add(DATA_HEADER_LEN), len) }
    }
}

/// A log on the heap, laid out as a mapped one (three terms, then the metadata), for tests,
/// Miri and the fuzz target. Every access goes through one base pointer, so the [`RawLog`]s it
/// hands out stay valid (under Stacked Borrows too) while it lives.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) struct HeapLog {
    base: *mut u64,
    words: usize,
    term_length: i32,
}

#[cfg(any(test, feature = "fuzzing"))]
impl HeapLog {
    /// Zeroed terms of `term_length` bytes (a power of two, at least 64) and metadata whose
    /// tails start the stream at `initial_term_id`, as a driver initialises a new log (term
    /// `initial_term_id` in partition 0, the other partitions a full cycle behind).
    pub(crate) fn new(term_length: i32, initial_term_id: i32) -> HeapLog {
        let bytes = term_length as usize * PARTITION_COUNT as usize + LOG_META_DATA_LENGTH;
        let words = bytes / 8;
        let base = Box::into_raw(vec![0u64; words].into_boxed_slice()).cast::<u64>();
        let log = HeapLog {
            base,
            words,
            term_length,
        };
        let raw = log.raw();
        for i in 0..PARTITION_COUNT as i32 {
            let term_id = if i == 0 {
                initial_term_id
            } else {
                initial_term_id.wrapping_add(i - PARTITION_COUNT as i32)
            };
            raw.tail_store(i as usize, i64::from(term_id) << 32, Ordering::Relaxed);
        }
        log
    }

    /// A [`RawLog`] over it, valid while `self` lives.
    pub(crate) fn raw(&self) -> RawLog {
        let terms = self.base.cast::<u8>();
        // SAFETY: the allocation holds the three terms then the metadata. Its u64 words make
        // both 8-byte aligned (term lengths are multiples of 8), the most any field needs.
        let meta = unsafe { terms.add(self.term_length as usize * PARTITION_COUNT as usize) };
        RawLog {
            terms,
            meta,
            term_length: self.term_length,
        }
    }

    /// Term `index` as bytes, to plant what a hostile writer would.
    pub(crate) fn term_mut(&mut self, index: usize) -> &mut [u8] {
        let t = self.term_length as usize;
        assert!(index < PARTITION_COUNT as usize);
        // SAFETY: inside the allocation; u8 needs no alignment; `&mut self` keeps the slice
        // the only access for its lifetime (RawLogs are not used meanwhile: single-threaded).
        unsafe { std::slice::from_raw_parts_mut(self.base.cast::<u8>().add(index * t), t) }
    }

    /// Zeroes term `index`, as the driver cleans a term behind its subscribers before the
    /// publication writes it again.
    #[cfg(test)]
    pub(crate) fn clean(&mut self, index: usize) {
        self.term_mut(index).fill(0);
    }
}

#[cfg(any(test, feature = "fuzzing"))]
impl Drop for HeapLog {
    fn drop(&mut self) {
        // SAFETY: `base` came from `Box::into_raw` of a boxed slice of `words` u64s.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.base, self.words)) });
    }
}
