//! Our own read-only view of a log buffer's metadata (Aeron's `LogBufferDescriptor`), so
//! that status reads are plain atomic loads, as in Aeron's own clients, instead of going
//! through the lock aeron-rs keeps each publication behind.

use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};

use memmap2::{Mmap, MmapOptions};

/// Aeron's three term partitions.
pub(crate) const PARTITION_COUNT: u64 = 3;
/// The metadata section's length (`LOG_META_DATA_LENGTH`); it follows the three terms.
pub(crate) const LOG_META_DATA_LENGTH: usize = 4096;
/// `TERM_TAIL_COUNTERS_OFFSET`: three `i64` raw tails (term id << 32 | term offset).
pub(crate) const TERM_TAIL_COUNTERS_OFFSET: usize = 0;
/// `LOG_ACTIVE_TERM_COUNT_OFFSET`.
pub(crate) const LOG_ACTIVE_TERM_COUNT_OFFSET: usize = 24;
/// `LOG_IS_CONNECTED_OFFSET`: 1 while a subscriber is connected (the driver sets it).
pub(crate) const LOG_IS_CONNECTED_OFFSET: usize = 136;
/// `LOG_TERM_LENGTH_OFFSET`.
pub(crate) const LOG_TERM_LENGTH_OFFSET: usize = 276;

/// The metadata page of one log buffer file, mapped read-only.
pub(crate) struct LogMetadata {
    map: Mmap,
}

impl LogMetadata {
    /// Maps the metadata of the log file `path` whose terms are `term_length` bytes long.
    pub(crate) fn open(path: &Path, term_length: usize) -> io::Result<Self> {
        let file = File::open(path)?;
        // SAFETY: a shared, read-only mapping of a file the driver keeps for as long as the
        // publication lives (and the mapping keeps it alive after that). The driver and the
        // publishers write it concurrently; we only ever read it through atomics below, never
        // as plain bytes.
        let map = unsafe {
            MmapOptions::new()
                .offset(term_length as u64 * PARTITION_COUNT)
                .len(LOG_META_DATA_LENGTH)
                .map(&file)?
        };
        Ok(Self { map })
    }

    fn i32_at(&self, offset: usize) -> &AtomicI32 {
        debug_assert!(offset.is_multiple_of(4) && offset + 4 <= self.map.len());
        // SAFETY: in bounds and 4-byte aligned (the mapping is page aligned, `offset` a field
        // offset of Aeron's layout); the field is only ever accessed atomically, by every
        // Aeron client and driver. Read-only: we only load.
        unsafe { &*self.map.as_ptr().add(offset).cast::<AtomicI32>() }
    }

    fn i64_at(&self, offset: usize) -> &AtomicI64 {
        debug_assert!(offset.is_multiple_of(8) && offset + 8 <= self.map.len());
        // SAFETY: as `i32_at`, 8-byte aligned.
        unsafe { &*self.map.as_ptr().add(offset).cast::<AtomicI64>() }
    }

    /// Where this view is mapped (one page, already touched: prefaulting skips it).
    pub(crate) fn range(&self) -> std::ops::Range<usize> {
        let start = self.map.as_ptr() as usize;
        start..start + self.map.len()
    }

    /// Whether the driver says a subscriber is connected.
    pub(crate) fn is_connected(&self) -> bool {
        self.i32_at(LOG_IS_CONNECTED_OFFSET).load(Ordering::Acquire) == 1
    }

    /// The raw tail of the active term (`rawTailVolatile`).
    pub(crate) fn raw_tail(&self) -> i64 {
        let count = self.i32_at(LOG_ACTIVE_TERM_COUNT_OFFSET).load(Ordering::Acquire);
        let index = (count as u32 % PARTITION_COUNT as u32) as usize;
        self.i64_at(TERM_TAIL_COUNTERS_OFFSET + index * 8)
            .load(Ordering::Acquire)
    }
}

/// Aeron's `computePosition` from a raw tail: `(term id - initial term id) << shift` plus the
/// term offset, capped at the term length.
pub(crate) fn position_of_raw_tail(raw_tail: i64, term_length: usize, initial_term_id: i32) -> i64 {
    let term_offset = (raw_tail & 0xFFFF_FFFF).min(term_length as i64);
    let term_id = (raw_tail >> 32) as i32;
    let shift = term_length.trailing_zeros();
    (i64::from(term_id.wrapping_sub(initial_term_id)) << shift) + term_offset
}

#[cfg(test)]
mod tests {
    use super::*;
    use aeron_rs::concurrent::logbuffer::log_buffer_descriptor as d;

    #[test]
    fn offsets_are_aeron_s() {
        assert_eq!(*d::TERM_TAIL_COUNTER_OFFSET as usize, TERM_TAIL_COUNTERS_OFFSET);
        assert_eq!(*d::LOG_ACTIVE_TERM_COUNT_OFFSET as usize, LOG_ACTIVE_TERM_COUNT_OFFSET);
        assert_eq!(*d::LOG_IS_CONNECTED_OFFSET as usize, LOG_IS_CONNECTED_OFFSET);
        assert_eq!(*d::LOG_TERM_LENGTH_OFFSET as usize, LOG_TERM_LENGTH_OFFSET);
        assert_eq!(d::LOG_META_DATA_LENGTH as usize, LOG_META_DATA_LENGTH);
    }

    #[test]
    fn positions_follow_aeron_s_compute_position() {
        let term = 64 * 1024;
        // Term id 7 with initial 5: two terms in, 96 bytes into the third.
        let raw = (7i64 << 32) | 96;
        assert_eq!(position_of_raw_tail(raw, term, 5), 2 * term as i64 + 96);
        // A tail past the term end (a claim that tripped the rotation) counts as the term end.
        let raw = (5i64 << 32) | (term as i64 + 64);
        assert_eq!(position_of_raw_tail(raw, term, 5), term as i64);
        // Term ids wrap.
        let raw = (i64::from(i32::MIN) << 32) | 32;
        assert_eq!(position_of_raw_tail(raw, term, i32::MAX), term as i64 + 32);
        for (raw, init) in [((9i64 << 32) | 4096, 3), ((3i64 << 32), 3)] {
            assert_eq!(
                position_of_raw_tail(raw, term, init),
                d::compute_position(d::term_id(raw), d::term_offset(raw, term as i64) as i32, 16, init)
            );
        }
    }
}
