//! Reading images ourselves, as Aeron's C client does (`aeron_image.c`, its term reader): the
//! subscription's images are found and retired by aeron-rs's conductor (its image handlers hand
//! each one over, through a queue, to the thread that polls), and `poll` reads their logs and
//! advances their subscriber positions with no lock.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};
use std::sync::Arc;

use aeron_rs::image::Image;
use aeron_rs::utils::log_buffers::LogBuffers;
use crossbeam_channel::{Receiver, Sender};

use crate::frame::{DataHeader, DATA_HEADER_LEN, FRAME_ALIGNMENT, HDR_TYPE_PAD};
use crate::logbuffer::PARTITION_COUNT;

/// What a poll's handler says after a message (see `ControlledAction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    Abort,
    Break,
    Commit,
    Continue,
}

/// One publisher's image, as the polling thread reads it.
pub(crate) struct ReaderImage {
    correlation_id: i64,
    /// Term 0 of the image's log (the three terms are contiguous).
    base: *const u8,
    term_length: i32,
    shift: u32,
    initial_term_id: i32,
    /// The subscriber position: our copy, and the counter in cnc.dat the driver reads.
    position: i64,
    counter: *const AtomicI64,
    /// aeron-rs's mapping of the log: keeps `base` valid while we read.
    _log: Arc<LogBuffers>,
}

// SAFETY: `base` points into the mapping `_log` keeps alive, `counter` into the client's mapping
// of cnc.dat (kept alive by the subscriber that owns this image, which holds the client). The
// image is handed from the conductor thread to the polling thread once and then used by that
// thread alone.
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

/// The handler side: turns aeron-rs's image notifications into [`Change`]s.
#[derive(Clone)]
pub(crate) struct Feed {
    tx: Sender<Change>,
    counters: Counters,
}

impl Feed {
    /// A feed and the receiving end the subscriber polls.
    pub(crate) fn new(counters: Counters) -> (Feed, Receiver<Change>) {
        let (tx, rx) = crossbeam_channel::unbounded();
        (Feed { tx, counters }, rx)
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
        let r = ReaderImage {
            correlation_id: image.correlation_id(),
            base: log.atomic_buffer(0).buffer().cast_const(),
            term_length,
            shift: term_length.trailing_zeros(),
            initial_term_id: image.initial_term_id(),
            position,
            counter,
            _log: log,
        };
        let _ = self.tx.send(Change::Add(r));
    }

    pub(crate) fn unavailable(&self, image: &Image) {
        let _ = self.tx.send(Change::Remove(image.correlation_id()));
    }
}

/// `n` rounded up to Aeron's frame alignment.
#[inline]
fn align(n: i32) -> i32 {
    (n + (FRAME_ALIGNMENT as i32 - 1)) & !(FRAME_ALIGNMENT as i32 - 1)
}

/// Aeron's counter record length in the values buffer.
const COUNTER_LENGTH: usize = 128;

/// A frame's header, read on demand (see [`MessageHeader`](crate::MessageHeader)).
#[derive(Clone, Copy)]
pub(crate) struct Frame<'a> {
    frame: *const u8,
    offset: i32,
    initial_term_id: i32,
    shift: u32,
    _log: PhantomData<&'a [u8]>,
}

impl Frame<'_> {
    #[inline]
    fn i32_at(&self, at: usize) -> i32 {
        // SAFETY: `at` + 4 lies inside the 32-byte header of a published frame (its length
        // was loaded with acquire before this view was made), 4-byte aligned.
        i32::from_le(unsafe { self.frame.add(at).cast::<i32>().read() })
    }

    pub(crate) fn session_id(&self) -> i32 {
        self.i32_at(12)
    }

    pub(crate) fn stream_id(&self) -> i32 {
        self.i32_at(16)
    }

    pub(crate) fn term_id(&self) -> i32 {
        self.i32_at(20)
    }

    pub(crate) fn term_offset(&self) -> i32 {
        self.offset
    }

    pub(crate) fn reserved_value(&self) -> i64 {
        // SAFETY: as `i32_at`; the field is 8-byte aligned.
        i64::from_le(unsafe {
            self.frame
                .add(std::mem::offset_of!(DataHeader, reserved_value))
                .cast::<i64>()
                .read()
        })
    }

    pub(crate) fn flags(&self) -> u8 {
        // SAFETY: as `i32_at`.
        unsafe { self.frame.add(5).read() }
    }

    /// The stream position just after this frame.
    pub(crate) fn position(&self) -> i64 {
        let end = align(self.offset + self.i32_at(0));
        (i64::from(self.term_id().wrapping_sub(self.initial_term_id)) << self.shift) + i64::from(end)
    }
}

impl ReaderImage {
    pub(crate) fn correlation_id(&self) -> i64 {
        self.correlation_id
    }

    fn set_position(&mut self, position: i64) {
        self.position = position;
        // SAFETY: see `Feed::available`; only this image's poller writes this counter.
        unsafe { (*self.counter).store(position, Ordering::Release) };
    }

    /// Aeron's controlled poll of one image (`aeron_image_controlled_poll`): up to `limit`
    /// fragments of the current term, each handed to `on` with its payload and header; the
    /// subscriber position follows what `on` consumed. Returns the fragments consumed.
    #[inline]
    pub(crate) fn read(&mut self, limit: usize, on: &mut impl FnMut(&[u8], Frame<'_>) -> Step) -> usize {
        let term_length = self.term_length;
        let mut position = self.position;
        let mut committed = (position & i64::from(term_length - 1)) as i32;
        let mut offset = committed;
        let index = ((position >> self.shift) as u64 % PARTITION_COUNT) as usize;
        // SAFETY: index < 3: the term lies inside the mapping.
        let term = unsafe { self.base.add(index * term_length as usize) };
        let mut fragments = 0;
        while fragments < limit && offset < term_length {
            // SAFETY: `offset` is a frame boundary inside the term.
            let frame = unsafe { term.add(offset as usize) };
            // SAFETY: the frame's length field, 4-byte aligned, written atomically by every
            // Aeron publisher.
            let length = unsafe { (*frame.cast::<AtomicI32>()).load(Ordering::Acquire) };
            if length <= 0 {
                break;
            }
            let frame_offset = offset;
            let aligned = align(length);
            offset += aligned;
            // SAFETY: a published frame's header is complete (acquire above).
            if u16::from_le(unsafe { frame.add(6).cast::<u16>().read() }) == HDR_TYPE_PAD {
                continue;
            }
            fragments += 1;
            // SAFETY: the payload follows the header inside the published frame.
            let payload =
                unsafe { std::slice::from_raw_parts(frame.add(DATA_HEADER_LEN), length as usize - DATA_HEADER_LEN) };
            let header = Frame {
                frame,
                offset: frame_offset,
                initial_term_id: self.initial_term_id,
                shift: self.shift,
                _log: PhantomData,
            };
            match on(payload, header) {
                Step::Continue => {}
                Step::Abort => {
                    fragments -= 1;
                    offset -= aligned;
                    break;
                }
                Step::Break => break,
                Step::Commit => {
                    position += i64::from(offset - committed);
                    committed = offset;
                    self.set_position(position);
                }
            }
        }
        let resulting = position + i64::from(offset - committed);
        if resulting > position {
            self.set_position(resulting);
        }
        fragments
    }
}
