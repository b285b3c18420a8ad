//! Appending to a log as Aeron's C client does (`aeron_term_appender.h`,
//! `aeron_exclusive_term_appender.h`, `aeron_publication.c`, `aeron_exclusive_publication.c`),
//! over any [`LogMemory`]: the frame writes both publications share ([`TermLog`]), the
//! exclusive publication's tail kept in its own state ([`ExclusiveTail`]), the concurrent one's
//! claimed with one atomic add on the shared tail counter ([`reserve_concurrent`]), padding at
//! the end of a term and the rotation to the next.
//!
//! A frame is published by a release store of its length after every other byte is written;
//! until then its length is negative and readers skip it. Nothing here takes a lock, allocates
//! or makes a syscall.

use std::sync::atomic::Ordering;

use super::descriptor::PARTITION_COUNT;
use super::frame::{
    align, framed_length, DataHeader, BEGIN_FLAG, DATA_HEADER_LEN, END_FLAG, FRAME_VERSION, HDR_TYPE_DATA,
    HDR_TYPE_PAD, UNFRAGMENTED,
};
use super::memory::LogMemory;
use crate::error::OfferError;

/// Aeron's limit on one fragmented message: an eighth of the term, at most 16 MiB.
pub(crate) fn max_message_length(term_length: usize) -> usize {
    (term_length / 8).min(16 * 1024 * 1024)
}

/// A log's memory with the publication's constants: what appending needs.
#[derive(Debug)]
pub(crate) struct TermLog<M> {
    pub(crate) mem: M,
    pub(crate) term_length: i32,
    pub(crate) position_bits_to_shift: u32,
    pub(crate) initial_term_id: i32,
    pub(crate) session_id: i32,
    pub(crate) stream_id: i32,
    /// The largest payload of one frame (MTU less the header).
    pub(crate) max_payload: usize,
    /// Aeron's maximum message length (fragmented).
    pub(crate) max_message: usize,
    pub(crate) max_possible_position: i64,
}

/// Where a message goes: the partition, the offset and term id it starts at, and the stream
/// position after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reserved {
    pub(crate) index: usize,
    pub(crate) offset: i32,
    pub(crate) term_id: i32,
    pub(crate) position: i64,
}

impl<M: LogMemory> TermLog<M> {
    /// The constants of a publication on `mem` (whose term length is a power of two).
    pub(crate) fn new(mem: M, initial_term_id: i32, session_id: i32, stream_id: i32, max_payload: usize) -> Self {
        let term_length = mem.term_length();
        TermLog {
            mem,
            term_length,
            position_bits_to_shift: term_length.trailing_zeros(),
            initial_term_id,
            session_id,
            stream_id,
            max_payload,
            max_message: max_message_length(term_length as usize),
            max_possible_position: i64::from(term_length) << 31,
        }
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

    /// The longest message `offer` takes: one frame up to the MTU, fragmented up to Aeron's
    /// maximum message length. Aeron checks the latter only on the fragmented path, so with an
    /// MTU above an eighth of the term an unfragmented message may be longer.
    #[inline]
    pub(crate) fn max_offer(&self) -> usize {
        self.max_message.max(self.max_payload)
    }

    /// The log bytes `length` takes: one frame, or its fragments.
    #[inline]
    pub(crate) fn framed(&self, length: usize) -> usize {
        if length <= self.max_payload {
            framed_length(length)
        } else {
            super::frame::fragmented_length(length, self.max_payload)
        }
    }

    /// Why an offer at `position` of `length` bytes is refused (`back_pressure_status`).
    #[cold]
    pub(crate) fn refused(&self, position: i64, length: usize) -> OfferError {
        if position + framed_length(length) as i64 >= self.max_possible_position {
            OfferError::MaxPositionExceeded
        } else if self.mem.is_connected() {
            OfferError::BackPressured
        } else {
            OfferError::NotConnected
        }
    }

    /// Writes a frame header (`aeron_header_write`): the negative length first, so a reader
    /// skips the frame until its length is published, then the other fields (the reserved value
    /// is left as it is).
    #[inline]
    fn write_header(&self, index: usize, offset: i32, term_id: i32, frame_length: usize, flags: u8) {
        self.mem
            .frame_length_store(index, offset, -(frame_length as i32), Ordering::Release);
        self.mem.release_fence();
        let header = DataHeader {
            frame_length: 0,
            version: FRAME_VERSION,
            flags,
            frame_type: HDR_TYPE_DATA,
            term_offset: offset,
            session_id: self.session_id,
            stream_id: self.stream_id,
            term_id,
            reserved_value: 0,
        };
        // SAFETY: the caller reserved the frame inside the term; it is ours until published.
        unsafe { self.mem.write_header(index, offset, &header) };
    }

    /// Fills the rest of the term from `offset` with a padding frame, if anything is left
    /// (`handle_end_of_log_condition`).
    #[cold]
    pub(crate) fn pad(&self, index: usize, offset: i32, term_id: i32) {
        if offset < self.term_length {
            let padding = self.term_length - offset;
            self.write_header(index, offset, term_id, padding as usize, UNFRAGMENTED);
            // SAFETY: as `write_header`: the padding frame is ours until published.
            unsafe { self.mem.write_frame_type(index, offset, HDR_TYPE_PAD) };
            self.mem.frame_length_store(index, offset, padding, Ordering::Release);
        }
    }

    /// Writes `msg` as one frame at `offset` (reserved by the caller: it fits the term) and
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
        self.write_header(index, offset, term_id, frame_length, UNFRAGMENTED);
        // SAFETY: the reserved frame lies inside the term and is ours until published below.
        unsafe {
            self.mem.write_payload(index, offset, msg);
            if let Some(v) = reserved {
                self.mem.write_reserved_value(index, offset, v);
            }
        }
        self.mem
            .frame_length_store(index, offset, frame_length as i32, Ordering::Release);
    }

    /// Writes `msg` cut into frames of at most `max_payload` bytes from `offset` (reserved by
    /// the caller: [`framed`](Self::framed) bytes fit the term), publishing each.
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
            self.write_header(index, frame_offset, term_id, frame_length, flags);
            // SAFETY: every fragment lies inside the reserved range, inside the term.
            unsafe {
                self.mem.write_payload(index, frame_offset, &rest[..take]);
                if let Some(v) = reserved {
                    self.mem.write_reserved_value(index, frame_offset, v);
                }
            }
            self.mem
                .frame_length_store(index, frame_offset, frame_length as i32, Ordering::Release);
            rest = &rest[take..];
            if rest.is_empty() {
                return;
            }
            flags = 0;
            frame_offset += align(frame_length as i32);
        }
    }

    /// Writes the header of a claim of `len` bytes at `offset` (reserved by the caller); the
    /// frame stays unpublished until [`commit`](Self::commit) or [`abort`](Self::abort).
    #[inline]
    pub(crate) fn claim(&self, index: usize, offset: i32, term_id: i32, len: usize) {
        self.write_header(index, offset, term_id, len + DATA_HEADER_LEN, UNFRAGMENTED);
    }

    /// Publishes a claimed frame of `len` payload bytes (`BufferClaim.commit`).
    #[inline]
    pub(crate) fn commit(&self, index: usize, offset: i32, len: usize) {
        self.mem
            .frame_length_store(index, offset, (len + DATA_HEADER_LEN) as i32, Ordering::Release);
    }

    /// Gives a claimed frame up: it becomes padding readers skip (`BufferClaim.abort`).
    #[inline]
    pub(crate) fn abort(&self, index: usize, offset: i32, len: usize) {
        // SAFETY: the claimed frame is ours until published.
        unsafe { self.mem.write_frame_type(index, offset, HDR_TYPE_PAD) };
        self.commit(index, offset, len);
    }
}

/// The exclusive publication's appender state, as `aeron_exclusive_publication_t` keeps it:
/// the tail lives here and is only published to the log's tail counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ExclusiveTail {
    term_offset: i32,
    term_id: i32,
    active_index: usize,
    term_begin_position: i64,
}

impl ExclusiveTail {
    /// Where the log's tail is now (`aeron_exclusive_publication_create`).
    pub(crate) fn new<M: LogMemory>(log: &TermLog<M>) -> Self {
        let term_count = log.mem.active_term_count_load(Ordering::Acquire);
        let index = (term_count as u32 % PARTITION_COUNT as u32) as usize;
        let raw = log.mem.tail_load(index, Ordering::Acquire);
        let term_id = (raw >> 32) as i32;
        ExclusiveTail {
            term_offset: (raw & 0xFFFF_FFFF).min(i64::from(log.term_length)) as i32,
            term_id,
            active_index: index,
            term_begin_position: log.position(term_id, 0),
        }
    }

    /// The stream position after the last message appended.
    #[inline]
    pub(crate) fn position(&self) -> i64 {
        self.term_begin_position + i64::from(self.term_offset)
    }

    /// Checks the publication limit, then reserves `framed` bytes at the tail
    /// (`aeron_exclusive_publication_offer` and its appender's first half). A full term is
    /// padded and the publication moves to the next (`AdminAction`) or ends
    /// (`MaxPositionExceeded`).
    #[inline]
    pub(crate) fn reserve<M: LogMemory>(
        &mut self,
        log: &TermLog<M>,
        limit: i64,
        length: usize,
        framed: usize,
    ) -> Result<Reserved, OfferError> {
        let position = self.position();
        if position >= limit {
            return Err(log.refused(position, length));
        }
        let offset = self.term_offset;
        let resulting = offset + framed as i32;
        let raw = (i64::from(self.term_id) << 32) | i64::from(resulting as u32);
        log.mem.tail_store(self.active_index, raw, Ordering::Release);
        if resulting > log.term_length {
            log.pad(self.active_index, offset, self.term_id);
            return Err(self.term_full(log));
        }
        self.term_offset = resulting;
        Ok(Reserved {
            index: self.active_index,
            offset,
            term_id: self.term_id,
            position: self.position(),
        })
    }

    /// The term is full (and padded): the stream's end, or a rotation to the next term
    /// (`aeron_exclusive_publication_new_position` / `rotate_term`).
    #[cold]
    fn term_full<M: LogMemory>(&mut self, log: &TermLog<M>) -> OfferError {
        if self.term_begin_position + i64::from(log.term_length) >= log.max_possible_position {
            // The stream's end. Aeron's C and Java clients leave their offset where it was, so
            // a shorter message would still fit into the padding just published (and be lost
            // to a reader already past it); stay at the end instead: every later offer is
            // refused the same way.
            self.term_offset = log.term_length;
            return OfferError::MaxPositionExceeded;
        }
        let next_term_id = self.term_id.wrapping_add(1);
        let next_count = next_term_id.wrapping_sub(log.initial_term_id);
        let next_index = log.index_of(next_term_id);
        self.active_index = next_index;
        self.term_offset = 0;
        self.term_id = next_term_id;
        self.term_begin_position += i64::from(log.term_length);
        log.mem
            .tail_store(next_index, i64::from(next_term_id) << 32, Ordering::Relaxed);
        log.mem.active_term_count_store(next_count, Ordering::Release);
        OfferError::AdminAction
    }
}

/// The concurrent publication's stream position: after the last message any of its writers
/// appended (two atomic loads, Aeron's `Publication.position`).
#[inline]
pub(crate) fn concurrent_position<M: LogMemory>(log: &TermLog<M>) -> i64 {
    let count = log.mem.active_term_count_load(Ordering::Acquire);
    let raw = log.mem.tail_load((count as u32 % 3) as usize, Ordering::Acquire);
    let offset = (raw & 0xFFFF_FFFF).min(i64::from(log.term_length)) as i32;
    log.position((raw >> 32) as i32, offset)
}

/// `aeron_publication_offer`'s checks, then one atomic add on the tail for `framed` bytes
/// (`get_and_add_raw_tail`): where to write, or why not (a full term is padded and the log
/// rotated: `AdminAction`).
#[inline]
pub(crate) fn reserve_concurrent<M: LogMemory>(
    log: &TermLog<M>,
    limit: i64,
    length: usize,
    framed: usize,
) -> Result<Reserved, OfferError> {
    let term_count = log.mem.active_term_count_load(Ordering::Acquire);
    let index = (term_count as u32 % 3) as usize;
    let raw = log.mem.tail_load(index, Ordering::Acquire);
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
    let raw = log.mem.tail_fetch_add(index, framed as i64, Ordering::AcqRel);
    let term_id = (raw >> 32) as i32;
    let offset = (raw & 0xFFFF_FFFF).min(i64::from(term_length)) as i32;
    let resulting = offset + framed as i32;
    let position = log.position(term_id, resulting);
    if resulting > term_length {
        return Err(concurrent_term_full(log, index, offset, term_id, position));
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
fn concurrent_term_full<M: LogMemory>(
    log: &TermLog<M>,
    index: usize,
    offset: i32,
    term_id: i32,
    position: i64,
) -> OfferError {
    log.pad(index, offset, term_id);
    if position >= log.max_possible_position {
        return OfferError::MaxPositionExceeded;
    }
    rotate_log(log, term_id.wrapping_sub(log.initial_term_id), term_id);
    OfferError::AdminAction
}

/// `aeron_logbuffer_rotate_log`: moves the log on from term `term_id` (term count
/// `term_count`) to the next, once, whoever of the concurrent publishers gets there first.
pub(crate) fn rotate_log<M: LogMemory>(log: &TermLog<M>, term_count: i32, term_id: i32) {
    let next_term_id = term_id.wrapping_add(1);
    let next_term_count = term_count.wrapping_add(1);
    let next_index = (next_term_count as u32 % PARTITION_COUNT as u32) as usize;
    let expected = next_term_id.wrapping_sub(PARTITION_COUNT as i32);
    let mut raw = log.mem.tail_load(next_index, Ordering::Acquire);
    while (raw >> 32) as i32 == expected {
        match log
            .mem
            .tail_compare_exchange(next_index, raw, i64::from(next_term_id) << 32)
        {
            Ok(_) => break,
            Err(now) => raw = now,
        }
    }
    let _ = log.mem.active_term_count_compare_exchange(term_count, next_term_count);
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
