//! The images a subscription reads, as the polling thread holds them: aeron-rs's conductor
//! finds and retires them (its image handlers hand each one over, through a queue, to the
//! thread that polls, and set its closed flag when it goes), and `poll` reads their logs with
//! [`TermReader`] over their mappings and advances their subscriber positions, with no lock.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use aeron_rs::concurrent::logbuffer::log_buffer_descriptor::LOG_META_DATA_SECTION_INDEX;
use aeron_rs::image::Image;
use aeron_rs::utils::log_buffers::LogBuffers;
use crossbeam_channel::{Receiver, Sender};

use crate::log::memory::RawLog;
use crate::log::term_reader::{Assembly, Frame, Malformed, Step, TermReader};

/// One publisher's image, as the polling thread reads it.
pub(crate) struct ReaderImage {
    correlation_id: i64,
    session_id: i32,
    reader: TermReader<RawLog>,
    /// The subscriber position counter in cnc.dat, which the driver reads.
    counter: *const AtomicI64,
    /// Set by the conductor thread when the image goes unavailable: from then on the counter
    /// may be freed by the driver (and, after its linger, reused), so it is no longer written.
    closed: Arc<AtomicBool>,
    /// A frame no Aeron publisher writes was found: the image is read no further.
    broken: bool,
    /// aeron-rs's mapping of the log: keeps the reader's memory valid (`None` only in unit
    /// tests, whose logs are on the heap).
    _log: Option<Arc<LogBuffers>>,
}

// SAFETY: the reader's memory is in the mapping `_log` keeps alive, `counter` in the client's
// mapping of cnc.dat (kept alive by the subscriber that owns this image, which holds the
// client). The image is handed from the conductor thread to the polling thread once and then
// used by that thread alone; `closed` is an atomic flag shared with the conductor thread.
unsafe impl Send for ReaderImage {}

/// What the image handlers tell the polling thread.
pub(crate) enum Change {
    Add(ReaderImage),
    Remove(i64),
}

/// Where the driver's counters are in this client's mapping of cnc.dat.
#[derive(Clone, Copy)]
pub(crate) struct Counters {
    pub(crate) base: usize,
    pub(crate) capacity: usize,
}

/// The closed flags of the images a feed handed over, by correlation id.
type OpenImages = Arc<Mutex<Vec<(i64, Arc<AtomicBool>)>>>;

/// The polling side of a feed: the queued [`Change`]s, and a flag that says there are some,
/// so that a poll checks one word that only changes with the images (not the queue's own
/// indices, whose check is a call with a branch per queue flavour).
pub(crate) struct Changes {
    rx: Receiver<Change>,
    pending: Arc<AtomicBool>,
}

impl Changes {
    /// Whether changes may be queued (one relaxed load). A change queued before the flag was
    /// set is seen at the latest by the first poll that sees the flag.
    #[inline(always)]
    pub(crate) fn pending(&self) -> bool {
        self.pending.load(Ordering::Relaxed)
    }

    /// Clears the flag, then takes what is queued. A change queued after the clear sets it again
    /// (for the next poll); one whose flag the clear read is in the queue by then (the clear's
    /// Acquire reads the feed's Release store, which follows the send).
    pub(crate) fn take(&self) -> impl Iterator<Item = Change> + '_ {
        self.pending.swap(false, Ordering::Acquire);
        self.rx.try_iter()
    }
}

/// The handler side: turns aeron-rs's image notifications into [`Change`]s.
#[derive(Clone)]
pub(crate) struct Feed {
    tx: Sender<Change>,
    pending: Arc<AtomicBool>,
    counters: Counters,
    /// The closed flags of the images handed over, by correlation id (conductor thread only).
    open: OpenImages,
}

impl Feed {
    /// A feed and the receiving end the subscriber polls.
    pub(crate) fn new(counters: Counters) -> (Feed, Changes) {
        let (tx, rx) = crossbeam_channel::unbounded();
        let open = Arc::default();
        let pending = Arc::new(AtomicBool::new(false));
        let changes = Changes {
            rx,
            pending: pending.clone(),
        };
        (
            Feed {
                tx,
                pending,
                counters,
                open,
            },
            changes,
        )
    }

    /// Queues `change` and tells the polling thread ([`Changes::pending`]).
    fn send(&self, change: Change) {
        if self.tx.send(change).is_ok() {
            self.pending.store(true, Ordering::Release);
        }
    }

    pub(crate) fn available(&self, image: &Image) {
        let log = image.log_buffers();
        let id = image.subscriber_position_id();
        let offset = usize::try_from(id).unwrap_or(usize::MAX).saturating_mul(COUNTER_LENGTH);
        if id < 0 || offset + 8 > self.counters.capacity {
            return; // not a counter of this driver: leave the image unread rather than corrupt one
        }
        let counter = (self.counters.base + offset) as *const AtomicI64;
        // SAFETY: in bounds (checked above), 8-byte aligned (counters are 128 bytes apart in a
        // page-aligned buffer), in the client's mapping; the driver set it to the join position.
        let position = unsafe { (*counter).load(Ordering::Acquire) };
        let term_length = image.term_buffer_length();
        let meta = log.atomic_buffer(LOG_META_DATA_SECTION_INDEX);
        // SAFETY: aeron-rs mapped the image's log: three terms of `term_length` from term 0's
        // start, the metadata in its own buffer; `_log` keeps the mapping while we read.
        let mem = unsafe { RawLog::new(log.atomic_buffer(0).buffer(), meta.buffer(), term_length) };
        let closed = Arc::new(AtomicBool::new(false));
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((image.correlation_id(), closed.clone()));
        let r = ReaderImage {
            correlation_id: image.correlation_id(),
            session_id: image.session_id(),
            reader: TermReader::new(mem, image.initial_term_id(), position),
            counter,
            closed,
            broken: false,
            _log: Some(log),
        };
        self.send(Change::Add(r));
    }

    pub(crate) fn unavailable(&self, image: &Image) {
        let id = image.correlation_id();
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = open.iter().position(|(c, _)| *c == id) {
            open.swap_remove(i).1.store(true, Ordering::Release);
        }
        drop(open);
        self.send(Change::Remove(id));
    }
}

/// Aeron's counter record length in the values buffer.
const COUNTER_LENGTH: usize = 128;

impl ReaderImage {
    pub(crate) fn correlation_id(&self) -> i64 {
        self.correlation_id
    }

    pub(crate) fn session_id(&self) -> i32 {
        self.session_id
    }

    /// Whether polls still read this image (not closed by the driver, no malformed frame).
    pub(crate) fn readable(&self) -> bool {
        !self.broken && !self.closed.load(Ordering::Acquire)
    }

    /// Up to `limit` fragments through [`TermReader::read`]; the subscriber position counter
    /// follows, unless the image has closed meanwhile (the driver may have freed, and after its
    /// linger reused, the counter: Aeron's C client leaves it alone too). A malformed frame
    /// breaks the image.
    #[inline]
    pub(crate) fn read(
        &mut self,
        limit: usize,
        on: &mut impl FnMut(&mut Assembly, &[u8], &Frame<'_>) -> Step,
    ) -> Result<usize, Malformed> {
        let (counter, closed) = (self.counter, &self.closed);
        let result = self.reader.read(limit, on, &mut |position| {
            if !closed.load(Ordering::Acquire) {
                // SAFETY: see `Feed::available`; only this image's poller writes this counter.
                unsafe { (*counter).store(position, Ordering::Release) };
            }
        });
        self.broken |= result.is_err();
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::appender::{ExclusiveTail, TermLog};
    use crate::log::memory::HeapLog;

    /// Every change a feed queues reaches a poller that takes changes only when the flag says
    /// so, while the feed keeps queueing (a change whose flag the poller cleared early would
    /// wait here forever).
    #[test]
    fn a_poller_that_looks_at_the_flag_gets_every_change() {
        let n: i64 = if cfg!(miri) { 200 } else { 20_000 };
        let (feed, changes) = Feed::new(Counters { base: 0, capacity: 0 });
        let sender = std::thread::spawn(move || {
            for id in 0..n {
                feed.send(Change::Remove(id));
            }
        });
        let (mut next, deadline) = (0, std::time::Instant::now() + std::time::Duration::from_secs(60));
        while next < n {
            assert!(std::time::Instant::now() < deadline, "stuck at {next} of {n}");
            if changes.pending() {
                for c in changes.take() {
                    let Change::Remove(id) = c else {
                        unreachable!("only removals sent")
                    };
                    assert_eq!(id, next, "in order, once each");
                    next += 1;
                }
            }
            std::thread::yield_now();
        }
        sender.join().unwrap();
        // The flag may still be set (for a change taken before the poller cleared it), but
        // the queue holds nothing more.
        assert!(changes.take().next().is_none(), "nothing more");
    }

    /// Once the conductor marked the image closed, a poll reads it no more and never writes
    /// its subscriber position counter (the driver may have freed it, and may reuse it).
    #[test]
    fn a_closed_image_leaves_its_counter_alone() {
        let heap = HeapLog::new(4096, 0);
        let raw = heap.raw();
        let log = TermLog::new(raw, 0, 1, 2, 96);
        let mut tail = ExclusiveTail::new(&log);
        let mut send = |msg: &[u8]| {
            let r = tail.reserve(&log, i64::MAX, msg.len(), log.framed(msg.len())).unwrap();
            log.write_unfragmented(r.index, r.offset, r.term_id, msg, None);
            r.position
        };
        let counter = AtomicI64::new(0);
        let closed = Arc::new(AtomicBool::new(false));
        let mut image = ReaderImage {
            correlation_id: 1,
            session_id: 1,
            reader: TermReader::new(raw, 0, 0),
            counter: &raw const counter,
            closed: closed.clone(),
            broken: false,
            _log: None,
        };
        let first = send(b"first");
        let read = |image: &mut ReaderImage| image.read(10, &mut |_, _, _| Step::Continue).unwrap();
        assert_eq!(read(&mut image), 1);
        assert_eq!(counter.load(Ordering::Acquire), first);
        send(b"second");
        closed.store(true, Ordering::Release);
        assert!(!image.readable());
        read(&mut image);
        assert_eq!(counter.load(Ordering::Acquire), first, "written after the image closed");
        drop(heap);
    }
}
