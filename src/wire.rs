//! The wire format: one [`Sample`] per Aeron message, as a Cap'n Proto message
//! (`schema/latency.capnp`), written into and read from caller-owned buffers.
//!
//! # Guarantees
//!
//! - **Zero allocation.** [`encode_into`] and [`decode`] never touch the heap, for valid
//!   messages and for every rejection alike; `tests/wire_alloc.rs` counts allocations to prove
//!   it. Put them on the hot path, inside the Aeron claim and the fragment handler.
//! - **Decode never panics.** Any byte string yields either a [`Sample`] or a [`DecodeError`]
//!   saying what is wrong: empty, truncated, trailing bytes, more than one segment, a root that
//!   is not a `Sample`, an unknown [`Kind`], or malformed Cap'n Proto. `tests/wire.rs` feeds it
//!   thousands of random and truncated inputs.
//! - **Stable layout.** An encoded message is the standard Cap'n Proto stream framing of a
//!   single-segment message: the 8-byte segment table, the root pointer, the `Sample` struct
//!   (5 data words, 1 pointer), then the padding bytes. Any Cap'n Proto reader of
//!   `schema/latency.capnp` can read it (e.g. `capnp::serialize::read_message_from_flat_slice`),
//!   and the size of a message is exactly [`encoded_len`]`(padding_len)`. Fields are only ever
//!   appended (`schema/README.md`): this reader ignores fields added later and accepts every
//!   single-segment message any writer of this schema produces. (Other writers split a message
//!   into segments only when it outgrows their first one, 8 KiB by default in C++; this
//!   encoder never does.)
//! - **Compact samples.** A [`Compact`] sample is the same struct with only `seq` and
//!   `intendedNs` (2 data words): 32 bytes ([`COMPACT_LEN`]), so that with Aeron's 32-byte
//!   header a message is one 64-byte cache line. [`encode_compact_into`] writes it and
//!   [`decode_message`] reads full and compact samples alike; [`decode`] reads full ones only
//!   and refuses a compact one ([`DecodeError::Compact`]), whose kind depends on the run
//!   ([`Compact::kind`]); [`Compact`] says what travels where instead.
//!
//! # Example
//!
//! ```
//! use aeron_latency::wire::{self, Kind, Sample};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Aeron payloads are 8-byte aligned; a plain byte array might not be.
//! #[repr(align(8))]
//! struct Aligned([u8; 256]);
//! let mut buf = Aligned([0; 256]);
//!
//! let sample = Sample {
//!     seq: 42,
//!     intended_ns: 1_000_000,
//!     sent_ns: 1_000_250,
//!     publisher_id: 7,
//!     kind: Kind::Measured,
//!     warmup: 10_000,
//!     planned: 1_000_000,
//! };
//! let padding = wire::padding_for_size(128)?; // a 128-byte message
//! let len = wire::encode_into(&mut buf.0, &sample, padding)?;
//! assert_eq!(len, 128);
//! assert_eq!(wire::decode(&buf.0[..len])?, sample);
//! # Ok(())
//! # }
//! ```
//!
//! # Encoding without `capnp::message::Builder`
//!
//! `capnp` 0.23's `message::Builder` keeps its segments in a `Vec`, so it allocates once per
//! message even over a `ScratchSpaceHeapAllocator`. [`encode_into`] therefore writes the
//! 64-byte head itself (the layout `capnp compile` assigns to `Sample`, recorded in the
//! constants below) and zeroes the padding. The generated code still guards it: a compile-time
//! check fails if the schema's struct size changes, and `tests/wire.rs` compares the bytes with
//! what `message::Builder` writes, for every [`Kind`] and many paddings.
//!
//! # Decoding in place
//!
//! For the layouts this module's encoders write (the full sample with its padding pointer, the
//! compact one with or without), capnp's reader's checks come down to comparing the root and
//! padding pointers with what they must be, so [`decode`] and [`decode_message`] read such
//! messages in place and hand every other layout to capnp's reader; 3-6x less time a message
//! (docs/results/2026-11-26-wire-decode-in-place.md). A test checks the two agree on 20,000 of
//! our encodings with words overwritten at random.
//!
//! # Alignment
//!
//! [`decode`] needs `bytes` to start at an 8-byte aligned address, because Cap'n Proto reads
//! words in place ([`DecodeError::Misaligned`] otherwise). Aeron frames are 32-byte aligned and
//! their headers 32 bytes long, so payloads handed to a fragment handler are aligned.
//! [`encode_into`] writes at any alignment.

use std::error::Error;
use std::fmt;

use capnp::message::ReaderOptions;
use capnp::traits::HasStructSize;

// The code `build.rs` generates from schema/latency.capnp. Private: the public API is `Sample`.
// It is not ours to document or lint.
#[allow(
    dead_code,
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    unused_qualifications,
    rust_2018_idioms,
    clippy::all,
    clippy::pedantic,
    clippy::nursery
)]
mod latency_capnp {
    include!(concat!(env!("OUT_DIR"), "/latency_capnp.rs"));
}

use latency_capnp::sample;

mod compact;
mod in_place;

pub use compact::{
    compact_encoded_len, compact_padding_for_size, decode_message, encode_compact_into, Compact, Message, COMPACT_LEN,
};

/// What a message is for (`Kind` in `schema/latency.capnp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A message recorded in the latency histogram.
    Measured,
    /// A message sent before the measured ones to warm the path up; never recorded.
    Warmup,
    /// The last message of a run: no latency; [`Sample::seq`] carries the count sent.
    End,
}

impl Kind {
    const fn to_wire(self) -> u16 {
        match self {
            Self::Measured => 0,
            Self::Warmup => 1,
            Self::End => 2,
        }
    }
}

impl From<latency_capnp::Kind> for Kind {
    fn from(kind: latency_capnp::Kind) -> Self {
        match kind {
            latency_capnp::Kind::Measured => Self::Measured,
            latency_capnp::Kind::Warmup => Self::Warmup,
            latency_capnp::Kind::End => Self::End,
        }
    }
}

/// One timestamped message: the fields of `Sample` in `schema/latency.capnp`, without the
/// padding (its length is an argument of [`encode_into`]; [`decode`] checks and skips it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// The sequence number. One sequence space per run: warm-up messages first
    /// (`0..warmup`), then the measured ones. For [`Kind::End`], the number of messages sent
    /// before it (the next sequence), i.e. the count sent.
    pub seq: u64,
    /// When the message should have been sent, from the schedule: `start + i * interval`
    /// (`CLOCK_MONOTONIC`, ns).
    pub intended_ns: i64,
    /// `CLOCK_MONOTONIC` (ns) read just before the message was written.
    pub sent_ns: i64,
    /// Which publisher sent it.
    pub publisher_id: u32,
    /// What the message is for.
    pub kind: Kind,
    /// The number of warm-up messages in this run.
    pub warmup: u32,
    /// The number of measured messages planned after the warm-up (they set the 20 groups);
    /// 0 means open-ended.
    pub planned: u32,
}

// The layout `capnp compile -ocapnp schema/latency.capnp` reports for `Sample`, as byte offsets
// into the encoded message. Frozen: new fields go after these (schema/README.md).
const WORD: usize = 8;
/// Segment table: (segment count - 1) as u32, then the segment's length in words as u32.
const SEGMENT_TABLE: usize = 0;
const ROOT_POINTER: usize = 8;
/// `Sample`'s data section: seq, intendedNs, sentNs, then publisherId (u32) and kind (u16),
/// a 16-bit hole (bytes 46..48), then warmup and planned (u32 each).
const DATA_WORDS: u16 = 5;
const POINTERS: u16 = 1;
const SEQ: usize = 16;
const INTENDED_NS: usize = 24;
const SENT_NS: usize = 32;
const PUBLISHER_ID: usize = 40;
const KIND: usize = 44;
const WARMUP: usize = 48;
const PLANNED: usize = 52;
/// Pointer section: `padding`, a byte list that starts right after it.
const PADDING_POINTER: usize = 56;
/// The data words of v1's `Sample`, the first version: a root struct with at least this many
/// is a full sample. Frozen: never raise it when `Sample` grows, or v1 messages would be read
/// as compact ones.
const V1_DATA_WORDS: u16 = 5;
/// The data words of a compact sample (`seq`, `intendedNs`), the fewest any writer of this
/// schema writes: a root struct with fewer is another schema's (schema/README.md, rule 6).
const COMPACT_DATA_WORDS: u16 = 2;

// The generated code must agree with the layout above; this fails to compile if the schema's
// `Sample` grows (then extend `encode_into` and the constants, see schema/README.md).
const _: () = {
    let size = <sample::Builder<'static> as HasStructSize>::STRUCT_SIZE;
    assert!(
        size.data == DATA_WORDS && size.pointers == POINTERS,
        "Sample's size in schema/latency.capnp changed: update the layout in src/wire.rs (schema/README.md)"
    );
    assert!(PADDING_POINTER == ROOT_POINTER + WORD * (1 + DATA_WORDS as usize));
};

/// A struct pointer (kind 0) with offset 0: the struct starts right after the root pointer.
const ROOT_POINTER_WORD: u64 = ((DATA_WORDS as u64) << 32) | ((POINTERS as u64) << 48);
/// A list pointer (kind 1) with offset 0 and element size 2 (one byte); the count goes in
/// bits 35..64.
const PADDING_POINTER_WORD: u64 = 1 | (2 << 32);

/// The encoded length of a [`Sample`] with no padding: 8 bytes of segment table, the root
/// pointer, 5 data words and 1 pointer. The smallest full sample; a [`Compact`] one can be
/// [`COMPACT_LEN`].
pub const MIN_ENCODED_LEN: usize = PADDING_POINTER + WORD;

/// The largest encoded length [`encode_into`] will write: 16 MiB, the largest message Aeron
/// carries in any configuration (its limit is `min(term length / 8, 16 MiB)`).
pub const MAX_ENCODED_LEN: usize = 16 * 1024 * 1024;

/// The largest `padding_len` [`encode_into`] accepts: [`MAX_ENCODED_LEN`] − [`MIN_ENCODED_LEN`].
pub const MAX_PADDING_LEN: usize = MAX_ENCODED_LEN - MIN_ENCODED_LEN;

/// The exact encoded length of a [`Sample`] with `padding_len` bytes of padding:
/// [`MIN_ENCODED_LEN`] plus the padding rounded up to whole 8-byte words.
///
/// Saturates at `usize::MAX` for absurd lengths (which [`encode_into`] rejects anyway).
#[must_use]
pub const fn encoded_len(padding_len: usize) -> usize {
    MIN_ENCODED_LEN.saturating_add(padding_len.div_ceil(WORD).saturating_mul(WORD))
}

/// The padding that makes the encoded message exactly `total` bytes long:
/// `encoded_len(padding_for_size(total)?) == total`.
///
/// # Errors
///
/// [`SizeError`] if no message is `total` bytes long: it is below [`MIN_ENCODED_LEN`], above
/// [`MAX_ENCODED_LEN`], or not a multiple of 8. The error names the nearest valid sizes.
pub const fn padding_for_size(total: usize) -> Result<usize, SizeError> {
    match check_size(total, MIN_ENCODED_LEN) {
        Ok(()) => Ok(total - MIN_ENCODED_LEN),
        Err(e) => Err(e),
    }
}

/// Whether a message of `total` bytes can be made, when the smallest is `min`.
const fn check_size(total: usize, min: usize) -> Result<(), SizeError> {
    if total < min {
        Err(SizeError::TooSmall { total })
    } else if total > MAX_ENCODED_LEN {
        Err(SizeError::TooLarge { total })
    } else if !total.is_multiple_of(WORD) {
        Err(SizeError::NotWordMultiple { total })
    } else {
        Ok(())
    }
}

/// Writes `sample` with `padding_len` zero bytes of padding into the front of `buf` and returns
/// the number of bytes written, [`encoded_len`]`(padding_len)`.
///
/// Every byte written is set, so `buf` need not be zeroed (an Aeron claim usually is not);
/// bytes after the returned length are left alone. The output is the standard Cap'n Proto
/// single-segment stream framing, at any alignment of `buf`. Allocates nothing.
///
/// # Errors
///
/// - [`EncodeError::PaddingTooLarge`] if `padding_len` > [`MAX_PADDING_LEN`].
/// - [`EncodeError::BufferTooSmall`] if `buf` is shorter than [`encoded_len`]`(padding_len)`;
///   `buf` is then untouched.
pub fn encode_into(buf: &mut [u8], sample: &Sample, padding_len: usize) -> Result<usize, EncodeError> {
    if padding_len > MAX_PADDING_LEN {
        return Err(EncodeError::PaddingTooLarge { padding_len });
    }
    let len = encoded_len(padding_len);
    let given = buf.len();
    let Some(out) = buf.get_mut(..len) else {
        return Err(EncodeError::BufferTooSmall { needed: len, given });
    };
    // Both casts are lossless: len <= MAX_ENCODED_LEN, so the word count and the padding
    // length fit in 21 and 24 bits.
    let segment_words = ((len - ROOT_POINTER) / WORD) as u32;
    let padding_count = padding_len as u64;

    let mut head = [0_u8; MIN_ENCODED_LEN];
    put(&mut head, SEGMENT_TABLE, &0_u32.to_le_bytes());
    put(&mut head, SEGMENT_TABLE + 4, &segment_words.to_le_bytes());
    put(&mut head, ROOT_POINTER, &ROOT_POINTER_WORD.to_le_bytes());
    put(&mut head, SEQ, &sample.seq.to_le_bytes());
    put(&mut head, INTENDED_NS, &sample.intended_ns.to_le_bytes());
    put(&mut head, SENT_NS, &sample.sent_ns.to_le_bytes());
    put(&mut head, PUBLISHER_ID, &sample.publisher_id.to_le_bytes());
    put(&mut head, KIND, &sample.kind.to_wire().to_le_bytes());
    put(&mut head, WARMUP, &sample.warmup.to_le_bytes());
    put(&mut head, PLANNED, &sample.planned.to_le_bytes());
    put(
        &mut head,
        PADDING_POINTER,
        &(PADDING_POINTER_WORD | (padding_count << 35)).to_le_bytes(),
    );

    let (out_head, out_padding) = out.split_at_mut(MIN_ENCODED_LEN);
    out_head.copy_from_slice(&head);
    out_padding.fill(0);
    Ok(len)
}

fn put(head: &mut [u8], at: usize, bytes: &[u8]) {
    head[at..at + bytes.len()].copy_from_slice(bytes);
}

/// Reads one full [`Sample`] from `bytes`, which must hold exactly one encoded message (as
/// [`encode_into`] or any Cap'n Proto writer of `schema/latency.capnp` makes it) and start at
/// an 8-byte aligned address. A [`Compact`] sample is refused
/// ([`DecodeError::Compact`]): its kind depends on the run ([`decode_message`] reads both).
///
/// Checks the framing, the root struct, the kind and the padding pointer; ignores fields a
/// newer schema appended. Allocates nothing and never panics.
///
/// # Errors
///
/// A [`DecodeError`] saying what is wrong: [`Empty`](DecodeError::Empty),
/// [`Truncated`](DecodeError::Truncated), [`TrailingBytes`](DecodeError::TrailingBytes),
/// [`SegmentCount`](DecodeError::SegmentCount), [`Misaligned`](DecodeError::Misaligned),
/// [`RootNotStruct`](DecodeError::RootNotStruct),
/// [`StructTooSmall`](DecodeError::StructTooSmall), [`Compact`](DecodeError::Compact),
/// [`UnknownKind`](DecodeError::UnknownKind) or [`Malformed`](DecodeError::Malformed).
pub fn decode(bytes: &[u8]) -> Result<Sample, DecodeError> {
    match read(bytes)? {
        Message::Full(sample) => Ok(sample),
        Message::Compact(c) => Err(DecodeError::Compact { seq: c.seq }),
    }
}

/// One message, full or compact: what [`decode`] and [`decode_message`] share.
fn read(bytes: &[u8]) -> Result<Message, DecodeError> {
    check_framing(bytes)?;
    if !bytes.as_ptr().addr().is_multiple_of(WORD) {
        return Err(DecodeError::Misaligned);
    }
    let data_words = check_root(bytes)?;
    match in_place::read(bytes) {
        Some(message) => message,
        None => read_with_capnp(bytes, data_words),
    }
}

/// [`read`] of a message past its framing, alignment and root checks, by capnp's reader: any
/// layout a writer of this schema may use.
fn read_with_capnp(bytes: &[u8], data_words: u16) -> Result<Message, DecodeError> {
    let mut rest = bytes;
    let message = capnp::serialize::read_message_from_flat_slice_no_alloc(&mut rest, ReaderOptions::new())
        .map_err(DecodeError::Malformed)?;
    let root: sample::Reader<'_> = message.get_root().map_err(DecodeError::Malformed)?;
    // The contents are ignored, but a padding pointer must be a byte list inside the message
    // (a null one, as in a struct without pointers, reads as empty).
    root.get_padding().map_err(DecodeError::Malformed)?;
    if data_words < V1_DATA_WORDS {
        // Whatever a compact struct carries beyond seq and intendedNs is not read.
        return Ok(Message::Compact(Compact {
            seq: root.get_seq(),
            intended_ns: root.get_intended_ns(),
        }));
    }
    let kind = root
        .get_kind()
        .map_err(|capnp::NotInSchema(value)| DecodeError::UnknownKind(value))?;
    Ok(Message::Full(Sample {
        seq: root.get_seq(),
        intended_ns: root.get_intended_ns(),
        sent_ns: root.get_sent_ns(),
        publisher_id: root.get_publisher_id(),
        kind: kind.into(),
        warmup: root.get_warmup(),
        planned: root.get_planned(),
    }))
}

/// The segment table: exactly one segment, whose length accounts for every byte.
fn check_framing(bytes: &[u8]) -> Result<(), DecodeError> {
    let given = bytes.len();
    if given == 0 {
        return Err(DecodeError::Empty);
    }
    let Some(count_minus_one) = read_u32(bytes, SEGMENT_TABLE) else {
        return Err(DecodeError::Truncated {
            needed: ROOT_POINTER as u64,
            given,
        });
    };
    if count_minus_one != 0 {
        return Err(DecodeError::SegmentCount(u64::from(count_minus_one) + 1));
    }
    let Some(segment_words) = read_u32(bytes, SEGMENT_TABLE + 4) else {
        return Err(DecodeError::Truncated {
            needed: ROOT_POINTER as u64,
            given,
        });
    };
    let needed = ROOT_POINTER as u64 + u64::from(segment_words) * WORD as u64;
    match (given as u64).cmp(&needed) {
        std::cmp::Ordering::Less => Err(DecodeError::Truncated { needed, given }),
        std::cmp::Ordering::Greater => Err(DecodeError::TrailingBytes {
            message_len: needed,
            given,
        }),
        std::cmp::Ordering::Equal => Ok(()),
    }
}

/// The root pointer: a struct pointer to at least a compact sample's fields. Returns its data
/// words.
fn check_root(bytes: &[u8]) -> Result<u16, DecodeError> {
    let Some(root) = read_u64(bytes, ROOT_POINTER) else {
        return Err(DecodeError::RootNotStruct); // an empty segment
    };
    if root == 0 || root & 3 != 0 {
        return Err(DecodeError::RootNotStruct); // null, list, far or capability pointer
    }
    let (data_words, pointers) = ((root >> 32) as u16, (root >> 48) as u16);
    if data_words < COMPACT_DATA_WORDS {
        return Err(DecodeError::StructTooSmall { data_words, pointers });
    }
    Ok(data_words)
}

fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn read_u64(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

/// Why [`padding_for_size`] found no message of the requested size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SizeError {
    /// Below [`MIN_ENCODED_LEN`] (a full sample) or [`COMPACT_LEN`] (a compact one); ask for
    /// at least that.
    TooSmall {
        /// The requested size in bytes.
        total: usize,
    },
    /// Above [`MAX_ENCODED_LEN`]; ask for at most that.
    TooLarge {
        /// The requested size in bytes.
        total: usize,
    },
    /// Not a multiple of 8: Cap'n Proto messages are whole 8-byte words. Round to a
    /// neighbour (the message names both).
    NotWordMultiple {
        /// The requested size in bytes.
        total: usize,
    },
}

impl fmt::Display for SizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::TooSmall { total } if total < COMPACT_LEN => write!(
                f,
                "a {total}-byte message is too small: the smallest aeron-latency sample (a \
                 compact one) is {COMPACT_LEN} bytes"
            ),
            Self::TooSmall { total } => write!(
                f,
                "a {total}-byte message is too small for a full aeron-latency sample, which is \
                 {MIN_ENCODED_LEN} bytes at least (a compact sample, seq and intended time \
                 only, can be {COMPACT_LEN})"
            ),
            Self::TooLarge { total } => write!(
                f,
                "a {total}-byte message is too large: the largest is {MAX_ENCODED_LEN} bytes, \
                 Aeron's message limit"
            ),
            Self::NotWordMultiple { total } => {
                let below = total / WORD * WORD;
                write!(
                    f,
                    "a {total}-byte message is impossible: sizes are multiples of 8 bytes; the \
                     nearest valid sizes are {below} and {}",
                    below + WORD
                )
            }
        }
    }
}

impl Error for SizeError {}

/// Why [`encode_into`] wrote nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeError {
    /// `buf` is shorter than the message; claim or allocate [`encoded_len`]`(padding_len)`
    /// bytes.
    BufferTooSmall {
        /// The encoded length, in bytes.
        needed: usize,
        /// The length of the buffer, in bytes.
        given: usize,
    },
    /// The message would exceed [`MAX_ENCODED_LEN`]; use at most [`MAX_PADDING_LEN`] bytes of
    /// padding.
    PaddingTooLarge {
        /// The requested padding, in bytes.
        padding_len: usize,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::BufferTooSmall { needed, given } => write!(
                f,
                "buffer too small for an aeron-latency sample: the message needs {needed} bytes \
                 but the buffer has {given}"
            ),
            Self::PaddingTooLarge { padding_len } => write!(
                f,
                "{padding_len} bytes of padding is too much: the message would exceed \
                 {MAX_ENCODED_LEN} bytes, Aeron's message limit; use at most {MAX_PADDING_LEN}"
            ),
        }
    }
}

impl Error for EncodeError {}

/// Why [`decode`] or [`decode_message`] found no sample in a message. Every variant but
/// [`Misaligned`](Self::Misaligned) and [`Compact`](Self::Compact) means the bytes are not (a
/// whole) sample: count and drop them.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum DecodeError {
    /// The message has no bytes at all.
    Empty,
    /// The message ends before its segment table says it does (or inside the table).
    Truncated {
        /// Bytes the framing calls for (8 while the segment table itself is incomplete).
        needed: u64,
        /// Bytes given.
        given: usize,
    },
    /// Bytes follow the end of the message: a sample message is exactly one Cap'n Proto
    /// message.
    TrailingBytes {
        /// The length of the message per its segment table, in bytes.
        message_len: u64,
        /// Bytes given.
        given: usize,
    },
    /// The segment table announces this many segments; samples are single-segment.
    SegmentCount(u64),
    /// `bytes` does not start at an 8-byte aligned address. Cap'n Proto reads words in place;
    /// copy the message into an aligned buffer (Aeron's own payloads are aligned).
    Misaligned,
    /// The root pointer is null or not a struct pointer.
    RootNotStruct,
    /// The root struct is smaller than any `Sample` ever written (a compact one's 2 data
    /// words): another schema's struct.
    StructTooSmall {
        /// Data words in the root struct.
        data_words: u16,
        /// Pointers in the root struct.
        pointers: u16,
    },
    /// A [`Compact`] sample, which [`decode`] does not read: its kind depends on the run's
    /// warm-up count. Read it with [`decode_message`].
    Compact {
        /// Its sequence number.
        seq: u64,
    },
    /// The `kind` field holds a value this reader does not know: a newer publisher, or not a
    /// sample.
    UnknownKind(u16),
    /// Cap'n Proto rejected the message (a pointer out of bounds, padding that is not a byte
    /// list, ...); [`source`](Error::source) holds its error.
    Malformed(capnp::Error),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const NOT_A_SAMPLE: &str = "not an aeron-latency sample:";
        match self {
            Self::Empty => write!(f, "{NOT_A_SAMPLE} the message is empty"),
            Self::Truncated { needed, given } => write!(
                f,
                "{NOT_A_SAMPLE} the message is truncated: its framing needs {needed} bytes but \
                 only {given} were given"
            ),
            Self::TrailingBytes { message_len, given } => write!(
                f,
                "{NOT_A_SAMPLE} {} bytes follow the end of the {message_len}-byte message",
                given.saturating_sub(usize::try_from(*message_len).unwrap_or(usize::MAX))
            ),
            Self::SegmentCount(count) => write!(
                f,
                "{NOT_A_SAMPLE} the message has {count} segments, samples have exactly 1"
            ),
            Self::Misaligned => write!(
                f,
                "cannot decode a message that does not start at an 8-byte aligned address: copy \
                 it into an aligned buffer first"
            ),
            Self::RootNotStruct => write!(f, "{NOT_A_SAMPLE} the root pointer is not a struct"),
            Self::StructTooSmall { data_words, pointers } => write!(
                f,
                "{NOT_A_SAMPLE} the root struct has {data_words} data words and {pointers} \
                 pointers, a sample has at least {COMPACT_DATA_WORDS} data words"
            ),
            Self::Compact { seq } => write!(
                f,
                "message {seq} is a compact sample (seq and intended time only), which \
                 wire::decode does not read: read it with wire::decode_message and tell its kind \
                 from the run's warm-up count"
            ),
            Self::UnknownKind(value) => write!(
                f,
                "unknown sample kind {value}: this reader knows measured (0), warmup (1) and \
                 end (2); is the publisher built from a newer schema?"
            ),
            Self::Malformed(_) => write!(f, "{NOT_A_SAMPLE} malformed Cap'n Proto message"),
        }
    }
}

impl Error for DecodeError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            Self::Malformed(error) => Some(error),
            _ => None,
        }
    }
}
