//! Reading a log as Aeron's C client does (`aeron_image.c`'s term reader and
//! `aeron_fragment_assembler.c`), over any [`LogMemory`]: frames are found by their length
//! (loaded with acquire, published last by every writer), padding is skipped, fragmented
//! messages are reassembled per image, and a frame no Aeron publisher writes stops the image
//! instead of being read out of bounds.

use std::marker::PhantomData;
use std::sync::atomic::Ordering;

use super::descriptor::PARTITION_COUNT;
use super::frame::{align, fragmented_length, DataHeader, BEGIN_FLAG, DATA_HEADER_LEN, END_FLAG, HDR_TYPE_PAD};
use super::memory::LogMemory;

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
/// fragment must start. A fragment that does not start there, in the same term (a loss on an
/// unreliable stream filled with padding, a subscriber that joined mid-message) drops what was
/// gathered. The buffer grows to the longest message seen and is then reused: a message is at
/// most a term long, so a hostile log cannot make it grow further.
pub(crate) struct Assembly {
    bytes: Vec<u8>,
    /// -1 when nothing is being gathered.
    next_term_offset: i32,
    first: DataHeader,
    first_offset: i32,
}

impl Default for Assembly {
    fn default() -> Self {
        Assembly {
            bytes: Vec::new(),
            next_term_offset: -1,
            first: DataHeader::default(),
            first_offset: 0,
        }
    }
}

/// What a read hands each complete message to: a closure, or a type whose `deliver` must be
/// inlined where a closure's body may not be (a recording poll's, see `tap::poll`).
pub(crate) trait Deliver {
    /// One complete message: its payload and (completed) header.
    fn deliver(&mut self, bytes: &[u8], frame: &Frame<'_>) -> Step;
}

impl<F: FnMut(&[u8], &Frame<'_>) -> Step> Deliver for F {
    #[inline(always)]
    fn deliver(&mut self, bytes: &[u8], frame: &Frame<'_>) -> Step {
        self(bytes, frame)
    }
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
    pub(crate) fn fragment(&mut self, bytes: &[u8], frame: &Frame<'_>, deliver: &mut impl Deliver) -> Step {
        let flags = frame.flags();
        if flags & BEGIN_FLAG != 0 {
            self.reset();
            self.first = frame.header;
            self.first_offset = frame.offset;
            self.bytes.extend_from_slice(bytes);
            self.next_term_offset = frame.next_term_offset();
            return Step::Continue;
        }
        // Aeron compares the offset only; the term id too costs nothing and also refuses a
        // fragment at the right offset of the next term.
        if self.next_term_offset != frame.offset || self.next_term_offset < 0 || frame.term_id() != self.first.term_id {
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
        let step = deliver.deliver(&self.bytes, &whole);
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

/// One image's reading state over its log: where the subscriber is and the message being
/// reassembled.
pub(crate) struct TermReader<M> {
    pub(crate) mem: M,
    term_length: i32,
    shift: u32,
    initial_term_id: i32,
    /// The subscriber position this reader has reached.
    pub(crate) position: i64,
    assembly: Assembly,
}

impl<M: LogMemory> TermReader<M> {
    /// A reader of `mem` (a log whose term ids start at `initial_term_id`) from `position`.
    pub(crate) fn new(mem: M, initial_term_id: i32, position: i64) -> Self {
        let term_length = mem.term_length();
        TermReader {
            mem,
            term_length,
            shift: term_length.trailing_zeros(),
            initial_term_id,
            position,
            assembly: Assembly::default(),
        }
    }

    /// Aeron's controlled poll of one image (`aeron_image_controlled_poll`): up to `limit`
    /// fragments of the current term, each handed to `on` with this image's assembly, its
    /// payload and header; `publish` is told each new subscriber position as `on` consumes (at
    /// a `Commit` and at the end). Returns the fragments consumed, or where a frame no Aeron
    /// publisher writes (shorter than a header, or past the term's end) stopped the read.
    #[inline]
    pub(crate) fn read(
        &mut self,
        limit: usize,
        on: &mut impl FnMut(&mut Assembly, &[u8], &Frame<'_>) -> Step,
        publish: &mut impl FnMut(i64),
    ) -> Result<usize, Malformed> {
        let term_length = self.term_length;
        let start = self.position;
        let mut position = start;
        let mut committed = (position & i64::from(term_length - 1)) as i32;
        let mut offset = committed;
        let index = ((position >> self.shift) as u64 % PARTITION_COUNT) as usize;
        let mut fragments = 0;
        let mut malformed = None;
        while fragments < limit && offset < term_length {
            let length = self.mem.frame_length_load(index, offset, Ordering::Acquire);
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
            // SAFETY: a published frame (its length was loaded with acquire) lying inside the
            // term (checked above).
            let mut header = unsafe { self.mem.read_header(index, offset) };
            header.frame_length = length;
            let frame_offset = offset;
            let aligned = align(length);
            offset += aligned;
            if header.frame_type == HDR_TYPE_PAD {
                continue;
            }
            fragments += 1;
            // SAFETY: the payload follows the header inside the published frame, in the term.
            let payload = unsafe { self.mem.payload(index, frame_offset, length as usize - DATA_HEADER_LEN) };
            let frame = Frame {
                header,
                offset: frame_offset,
                initial_term_id: self.initial_term_id,
                shift: self.shift,
                fragmented_length: 0,
                _log: PhantomData,
            };
            match on(&mut self.assembly, &payload, &frame) {
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
                    self.position = position;
                    publish(position);
                }
            }
        }
        let resulting = position + i64::from(offset - committed);
        if resulting > position {
            self.position = resulting;
            publish(resulting);
        }
        match malformed {
            Some(m) => Err(m),
            None => Ok(fragments),
        }
    }
}
