//! Entry points for the fuzz targets (`fuzz/`, feature `fuzzing`; not part of the API): the
//! shipped term reader and fragment assembly over a log whose bytes are arbitrary, as a process
//! sharing the log could write them, and the shipped appender to write real logs as seeds.

use crate::log::appender::{ExclusiveTail, TermLog};
use crate::log::frame::UNFRAGMENTED;
use crate::log::memory::HeapLog;
use crate::log::term_reader::{Step, TermReader};
use crate::OfferError;

/// The fuzzed logs' term length: three terms of it are the input.
pub const TERM_LENGTH: usize = 1024;
/// The frame payload the seed logs are cut at (an MTU of 128 bytes).
pub const MAX_PAYLOAD: usize = 96;

/// What [`read_log`] saw.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Read {
    /// Messages handed over, whole (a reassembled one counts once).
    pub messages: usize,
    /// Their bytes, in all.
    pub bytes: usize,
    /// Reads that ended at a malformed frame.
    pub malformed: usize,
    /// Where the reader stopped.
    pub position: i64,
}

/// Reads `terms` (up to three terms of [`TERM_LENGTH`] bytes, zero-filled to that) as a
/// subscription reads an image from position 0: up to `fragment_limit` fragments a read,
/// each message handed to a handler that answers with the controlled-poll action `actions`
/// cycles through (0 continue, 1 break, 2 commit, 3 abort), until the reader stops moving,
/// meets a malformed frame, or has gone through three terms. Panics only on a broken
/// invariant: a position that goes back, or a read that never ends.
#[must_use]
pub fn read_log(terms: &[u8], fragment_limit: usize, actions: &[u8]) -> Read {
    let mut heap = HeapLog::new(TERM_LENGTH as i32, 0);
    for (i, chunk) in terms.chunks(TERM_LENGTH).take(3).enumerate() {
        heap.term_mut(i)[..chunk.len()].copy_from_slice(chunk);
    }
    let mut reader = TermReader::new(heap.raw(), 0, 0);
    let mut out = Read::default();
    let mut turn = 0usize;
    let end = 3 * TERM_LENGTH as i64;
    for _ in 0..4 * TERM_LENGTH {
        let before = reader.position;
        let mut deliver = |bytes: &[u8], _: &crate::log::term_reader::Frame<'_>| {
            let action = actions.get(turn % actions.len().max(1)).copied().unwrap_or(0) % 4;
            turn += 1;
            if action != 3 {
                out.messages += 1;
                out.bytes += bytes.len();
            }
            [Step::Continue, Step::Break, Step::Commit, Step::Abort][usize::from(action)]
        };
        let result = reader.read(
            fragment_limit.max(1),
            &mut |assembly, bytes, frame| {
                if frame.flags() & UNFRAGMENTED == UNFRAGMENTED {
                    deliver(bytes, frame)
                } else {
                    assembly.fragment(bytes, frame, &mut deliver)
                }
            },
            &mut |p| assert!(p >= before, "the position went back"),
        );
        assert!(reader.position >= before, "the position went back");
        out.position = reader.position;
        if result.is_err() {
            out.malformed += 1;
            break;
        }
        if reader.position == before || reader.position >= end {
            break;
        }
    }
    drop(heap);
    out
}

/// A log as the exclusive publication writes it (the shipped appender): `messages` appended
/// from position 0, fragmented above [`MAX_PAYLOAD`], padding and rotating as they go, until
/// one does not fit the three terms. Returns the three terms' bytes: a seed for the fuzzer.
#[must_use]
pub fn write_log(messages: &[Vec<u8>]) -> Vec<u8> {
    let mut heap = HeapLog::new(TERM_LENGTH as i32, 0);
    {
        let log = TermLog::new(heap.raw(), 0, 7, 1001, MAX_PAYLOAD);
        let mut tail = ExclusiveTail::new(&log);
        let limit = 3 * TERM_LENGTH as i64 - 64;
        'messages: for (i, m) in messages.iter().enumerate() {
            let len = m.len().min(log.max_offer());
            loop {
                match tail.reserve(&log, limit, len, log.framed(len)) {
                    Ok(r) if len <= MAX_PAYLOAD => {
                        log.write_unfragmented(r.index, r.offset, r.term_id, &m[..len], Some(i as i64));
                        break;
                    }
                    Ok(r) => {
                        log.write_fragmented(r.index, r.offset, r.term_id, &m[..len], Some(i as i64));
                        break;
                    }
                    Err(OfferError::AdminAction) => {}
                    Err(_) => break 'messages,
                }
            }
        }
    }
    let mut out = Vec::with_capacity(3 * TERM_LENGTH);
    for i in 0..3 {
        out.extend_from_slice(heap.term_mut(i));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A seed log reads back as written: every message whole, and the reader stops at the end.
    #[test]
    fn a_written_log_reads_back_whole() {
        let messages: Vec<Vec<u8>> = (0..16).map(|i| vec![i as u8; (i * 37) % 129]).collect();
        let log = write_log(&messages);
        assert_eq!(log.len(), 3 * TERM_LENGTH);
        let read = read_log(&log, 10, &[0]);
        assert_eq!(read.malformed, 0);
        assert_eq!(read.messages, messages.len());
        assert_eq!(read.bytes, messages.iter().map(Vec::len).sum::<usize>());
        // Abort on every message: the reader makes no progress, and says so by stopping.
        assert_eq!(read_log(&log, 10, &[3]).position, 0);
    }

    /// Garbage is read without a panic: a malformed frame stops the reader.
    #[test]
    fn garbage_stops_the_reader_without_a_panic() {
        let garbage: Vec<u8> = (0..3 * TERM_LENGTH).map(|i| (i * 151 % 251) as u8).collect();
        let read = read_log(&garbage, 16, &[0, 1, 2, 3]);
        assert!(read.position <= 3 * TERM_LENGTH as i64);
    }
}
