//! Reading images ourselves, as Aeron's C client does (`aeron_image.c`, its term reader, and
//! `aeron_fragment_assembler.c`): the subscription's images are found and retired by aeron-rs's
//! conductor (its image handlers hand each one over, through a queue, to the thread that polls),
//! and `poll` reads their logs, reassembles fragmented messages per image and advances their
//! subscriber positions with no lock.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use aeron_rs::image::Image;
use aeron_rs::utils::log_buffers::LogBuffers;
use crossbeam_channel::{Receiver, Sender};

use crate::frame::{align, fragmented_length, DataHeader, BEGIN_FLAG, DATA_HEADER_LEN, END_FLAG, HDR_TYPE_PAD};
use crate::logbuffer::PARTITION_COUNT;

/// What a poll's handler says after a message (see `ControlledAction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    Abort,
    Break,
    Commit,
    Continue,
}

/// Why an image's read stopped short of its limit with an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Malformed {
    pub(crate) position: i64,
    pub(crate) frame_length: i32,
}

/// One publisher's image, as the polling thread reads it.
pub(crate) struct ReaderImage {
    correlation_id: i64,
    session_id: i32,
    /// Term 0 of the image's log (the three terms are contiguous).
    base: *const u8,
    term_length: i32,
    shift: u32,
    initial_term_id: i32,
    /// The subscriber position: our copy, and the counter in cnc.dat the driver reads.
    position: i64,
    counter: *const AtomicI64,
    /// Set by the conductor thread when the image goes unavailable: from then on the counter
    /// may be freed by the driver (and, after its linger, reused), so it is no longer written.
    closed: Arc<AtomicBool>,
    /// A frame no Aeron publisher writes was found: the image is read no further.
    broken: bool,
    /// The fragmented message being reassembled.
    assembly: Assembly,
    /// aeron-rs's mapping of the log: keeps `base` valid while we read.
    _log: Arc<LogBuffers>,
}

// SAFETY: `base` points into the mapping `_log` keeps alive, `counter` into the client's mapping
// of cnc.dat (kept alive by the subscriber that owns this image, which holds the client). The
// image is handed from the conductor thread to the polling thread once and then used by that
// thread alone; `closed` is an atomic flag shared with the conductor thread.
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

/// The handler side: turns aeron-rs's image notifications into [`Change`]s.
#[derive(Clone)]
pub(crate) struct Feed {
    tx: Sender<Change>,
    counters: Counters,
    /// The closed flags of the images handed over, by correlation id (conductor thread only).
    open: OpenImages,
}

impl Feed {
    /// A feed and the receiving end the subscriber polls.
    pub(crate) fn new(counters: Counters) -> (Feed, Receiver<Change>) {
        let (tx, rx) = crossbeam_channel::unbounded();
        let open = Arc::default();
        (Feed { tx, counters, open }, rx)
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
        let closed = Arc::new(AtomicBool::new(false));
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((image.correlation_id(), closed.clone()));
        let r = ReaderImage {
            correlation_id: image.correlation_id(),
            session_id: image.session_id(),
            base: log.atomic_buffer(0).buffer().cast_const(),
            term_length,
            shift: term_length.trailing_zeros(),
            initial_term_id: image.initial_term_id(),
            position,
            counter,
            closed,
            broken: false,
            assembly: Assembly::default(),
            _log: log,
        };
        let _ = self.tx.send(Change::Add(r));
    }

    pub(crate) fn unavailable(&self, image: &Image) {
        let id = image.correlation_id();
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = open.iter().position(|(c, _)| *c == id) {
            open.swap_remove(i).1.store(true, Ordering::Release);
        }
        drop(open);
        let _ = self.tx.send(Change::Remove(id));
    }
}

/// Aeron's counter record length in the values buffer.
const COUNTER_LENGTH: usize = 128;

/// A message's header as the handler sees it (see [`MessageHeader`](crate::MessageHeader)): the
/// frame's header fields, copied right after its length was seen, and where it sits.
#[derive(Clone, Copy)]
pub(crate) struct Frame<'a> {
    header: DataHeader,
    /// The frame's offset in its term, as the reader found it.
    offset: i32,
    initial_term_id: i32,
    shift: u32,
    /// For a reassembled message, the log bytes all its fragments take
    /// (`fragmented_frame_length`); 0 otherwise.
    fragmented_length: i32,
    _log: PhantomData<&'a [u8]>,
}

impl Frame<'_> {
    pub(crate) fn session_id(&self) -> i32 {
        self.header.session_id
    }

    pub(crate) fn stream_id(&self) -> i32 {
        self.header.stream_id
    }

    pub(crate) fn term_id(&self) -> i32 {
        self.header.term_id
    }

    pub(crate) fn term_offset(&self) -> i32 {
        self.offset
    }

    pub(crate) fn reserved_value(&self) -> i64 {
        self.header.reserved_value
    }

    pub(crate) fn flags(&self) -> u8 {
        self.header.flags
    }

    /// The frame length field: for a reassembled message, the header plus the whole message
    /// (`aeron_buffer_builder_complete_header`).
    pub(crate) fn frame_length(&self) -> i32 {
        self.header.frame_length
    }

    /// Where the next frame starts (`aeron_header_next_term_offset`).
    pub(crate) fn next_term_offset(&self) -> i32 {
        align(self.offset + self.header.frame_length.max(self.fragmented_length))
    }

    /// The stream position just after this message (`aeron_header_position`).
    pub(crate) fn position(&self) -> i64 {
        (i64::from(self.term_id().wrapping_sub(self.initial_term_id)) << self.shift)
            + i64::from(self.next_term_offset())
    }
}

/// A fragmented message being put together (Aeron's `aeron_buffer_builder_t` in its image
/// fragment assembler): the first fragment's header, the bytes so far and where the next
/// fragment must start. A fragment that does not start there (a loss on an unreliable stream
/// filled with padding, a subscriber that joined mid-message) drops what was gathered.
#[derive(Default)]
pub(crate) struct Assembly {
    bytes: Vec<u8>,
    /// -1 when nothing is being gathered.
    next_term_offset: i32,
    first: DataHeader,
    first_offset: i32,
}

impl Assembly {
    fn reset(&mut self) {
        self.bytes.clear();
        self.next_term_offset = -1;
    }

    /// Takes one fragment of a fragmented message (its flags are not both begin and end) and,
    /// with the last one, hands the whole message and its completed header to `deliver`.
    /// Returns what `deliver` said (`Continue` while gathering or after a discontinuity); on
    /// `Abort` the last fragment is taken out again, to come back with the next poll.
    #[inline]
    pub(crate) fn fragment(
        &mut self,
        bytes: &[u8],
        frame: &Frame<'_>,
        deliver: &mut impl FnMut(&[u8], &Frame<'_>) -> Step,
    ) -> Step {
        let flags = frame.flags();
        if flags & BEGIN_FLAG != 0 {
            self.reset();
            self.first = frame.header;
            self.first_offset = frame.offset;
            self.bytes.extend_from_slice(bytes);
            self.next_term_offset = frame.next_term_offset();
            return Step::Continue;
        }
        if self.next_term_offset != frame.offset || self.next_term_offset < 0 {
            self.reset();
            return Step::Continue;
        }
        let before = self.bytes.len();
        self.bytes.extend_from_slice(bytes);
        if flags & END_FLAG == 0 {
            self.next_term_offset = frame.next_term_offset();
            return Step::Continue;
        }
        let whole = self.complete(frame);
        let step = deliver(&self.bytes, &whole);
        if step == Step::Abort {
            self.bytes.truncate(before);
        } else {
            self.reset();
        }
        step
    }

    /// `aeron_buffer_builder_complete_header`: the first fragment's header with the whole
    /// message's frame length and the last fragment's flags added to the first's.
    fn complete<'a>(&self, last: &Frame<'a>) -> Frame<'a> {
        let max_payload = usize::try_from(self.first.frame_length)
            .unwrap_or(0)
            .saturating_sub(DATA_HEADER_LEN);
        let mut header = self.first;
        header.frame_length = (DATA_HEADER_LEN + self.bytes.len()) as i32;
        header.flags |= last.header.flags;
        Frame {
            header,
            offset: self.first_offset,
            initial_term_id: last.initial_term_id,
            shift: last.shift,
            fragmented_length: fragmented_length(self.bytes.len(), max_payload.max(1)) as i32,
            _log: PhantomData,
        }
    }
}

impl ReaderImage {
    pub(crate) fn correlation_id(&self) -> i64 {
        self.correlation_id
    }

    /// Whether polls still read this image (not closed by the driver, no malformed frame).
    pub(crate) fn readable(&self) -> bool {
        !self.broken && !self.closed.load(Ordering::Acquire)
    }

    fn set_position(&mut self, position: i64) {
        self.position = position;
        // Once closed, the driver may free (and later reuse) the counter: leave it alone, as
        // Aeron's C client does.
        if !self.closed.load(Ordering::Acquire) {
            // SAFETY: see `Feed::available`; only this image's poller writes this counter.
            unsafe { (*self.counter).store(position, Ordering::Release) };
        }
    }

    /// Aeron's controlled poll of one image (`aeron_image_controlled_poll`): up to `limit`
    /// fragments of the current term, each handed to `on` with this image's assembly, its
    /// payload and header; the subscriber position follows what `on` consumed. Returns the
    /// fragments consumed, or where a malformed frame stopped it (the image is then broken).
    #[inline]
    pub(crate) fn read(
        &mut self,
        limit: usize,
        on: &mut impl FnMut(&mut Assembly, &[u8], &Frame<'_>) -> Step,
    ) -> Result<usize, Malformed> {
        let term_length = self.term_length;
        let mut position = self.position;
        let mut committed = (position & i64::from(term_length - 1)) as i32;
        let mut offset = committed;
        let index = ((position >> self.shift) as u64 % PARTITION_COUNT) as usize;
        // SAFETY: index < 3: the term lies inside the mapping.
        let term = unsafe { self.base.add(index * term_length as usize) };
        let mut fragments = 0;
        let mut malformed = None;
        while fragments < limit && offset < term_length {
            // SAFETY: `offset` is a frame boundary inside the term, 32-byte aligned.
            let frame = unsafe { term.add(offset as usize) };
            // SAFETY: the frame's length field, 4-byte aligned, written atomically by every
            // Aeron publisher.
            let length = unsafe { (*frame.cast::<AtomicI32>()).load(Ordering::Acquire) };
            if length <= 0 {
                break;
            }
            if length < DATA_HEADER_LEN as i32 || length > term_length - offset {
                malformed = Some(Malformed {
                    position: position + i64::from(offset - committed),
                    frame_length: length,
                });
                break;
            }
            // SAFETY: a published frame's header is complete (acquire above) and lies inside
            // the term (checked above); 8-byte aligned.
            let header = unsafe { frame.cast::<DataHeader>().read() };
            let frame_offset = offset;
            let aligned = align(length);
            offset += aligned;
            if header.frame_type == HDR_TYPE_PAD {
                continue;
            }
            fragments += 1;
            // SAFETY: the payload follows the header inside the published frame, inside the term.
            let payload =
                unsafe { std::slice::from_raw_parts(frame.add(DATA_HEADER_LEN), length as usize - DATA_HEADER_LEN) };
            let header = Frame {
                header,
                offset: frame_offset,
                initial_term_id: self.initial_term_id,
                shift: self.shift,
                fragmented_length: 0,
                _log: PhantomData,
            };
            match on(&mut self.assembly, payload, &header) {
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
        match malformed {
            Some(m) => {
                self.broken = true;
                Err(m)
            }
            None => Ok(fragments),
        }
    }

    pub(crate) fn session_id(&self) -> i32 {
        self.session_id
    }
}
