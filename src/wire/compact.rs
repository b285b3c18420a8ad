//! Compact samples: `seq` and `intendedNs` only (see [`Compact`]).

use super::{
    check_size, put, read, DecodeError, EncodeError, Kind, SizeError, INTENDED_NS, MAX_ENCODED_LEN,
    PADDING_POINTER_WORD, ROOT_POINTER, SEGMENT_TABLE, SEQ, WORD,
};

/// A compact sample: the sequence number and the intended send time (`CLOCK_MONOTONIC`, ns),
/// as [`Sample`](super::Sample) has them, and nothing else, so that a message with Aeron's
/// 32-byte header fills one 64-byte cache line.
///
/// It is a `Sample` of `schema/latency.capnp` written with its first two data words only
/// (Cap'n Proto lets a writer send a struct with fewer data words than the schema has; its
/// readers see the missing fields as their defaults), so it is still a valid message of the
/// schema: the C++ `capnp` tool and the generated readers read it. What it leaves out travels
/// elsewhere:
///
/// - the actual send time, in the frame's reserved value (the tap's send stamp: the one
///   meaning of that field, the send time on the stated clock);
/// - the run's constants (publisher, warm-up and planned counts), in the run's full-size
///   messages: a reader keeps them from those;
/// - the kind: [`Compact::kind`] tells it from `seq` and the run's warm-up count (warm-up
///   messages are numbered first). A run's end marker is always a full sample.
///
/// Sizes: [`COMPACT_LEN`] (32 bytes: the segment table, the root pointer and the two words),
/// or 40 bytes and up in steps of 8 with a `padding` pointer after the two words, so every
/// multiple of 8 from 32 up ([`compact_padding_for_size`]). A reader older than compact
/// samples refuses them as `StructTooSmall` (it counts them as decode errors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compact {
    /// The sequence number: warm-up messages first (`0..warmup`), then the measured ones.
    pub seq: u64,
    /// When the message should have been sent, from the schedule.
    pub intended_ns: i64,
}

impl Compact {
    /// What this message is for in a run of `warmup` warm-up messages: a warm-up when its
    /// `seq` is below that count, else a measured one (never an end marker: that one is full).
    #[must_use]
    pub const fn kind(&self, warmup: u32) -> Kind {
        if self.seq < warmup as u64 {
            Kind::Warmup
        } else {
            Kind::Measured
        }
    }
}

/// One message as [`decode_message`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message {
    /// A full sample: every field of v1 (5 data words or more).
    Full(super::Sample),
    /// A compact sample (2 to 4 data words): `seq` and `intendedNs`.
    Compact(Compact),
}

/// The smallest compact message, and the smallest message of this schema: 8 bytes of segment
/// table, the root pointer and two data words. With Aeron's 32-byte frame header, one 64-byte
/// cache line.
pub const COMPACT_LEN: usize = SEQ + 2 * WORD;

/// The root pointer of a compact sample: a struct of 2 data words and, with padding, 1 pointer.
pub(super) const fn compact_root(pointers: u64) -> u64 {
    (2 << 32) | (pointers << 48)
}

/// The exact encoded length of a compact sample: [`COMPACT_LEN`] without a padding pointer
/// (`None`), else 40 bytes plus the padding rounded up to whole 8-byte words. Saturates for
/// absurd lengths (which [`encode_compact_into`] rejects).
#[must_use]
pub const fn compact_encoded_len(padding: Option<usize>) -> usize {
    match padding {
        None => COMPACT_LEN,
        Some(n) => (COMPACT_LEN + WORD).saturating_add(n.div_ceil(WORD).saturating_mul(WORD)),
    }
}

/// The padding that makes a compact message exactly `total` bytes long:
/// `compact_encoded_len(compact_padding_for_size(total)?) == total`. `None` for
/// [`COMPACT_LEN`] (no padding pointer), else `Some(total - 40)`.
///
/// # Errors
///
/// [`SizeError`] if no compact message is `total` bytes long: below [`COMPACT_LEN`], above
/// [`MAX_ENCODED_LEN`], or not a multiple of 8.
pub const fn compact_padding_for_size(total: usize) -> Result<Option<usize>, SizeError> {
    match check_size(total, COMPACT_LEN) {
        Err(e) => Err(e),
        Ok(()) if total == COMPACT_LEN => Ok(None),
        Ok(()) => Ok(Some(total - COMPACT_LEN - WORD)),
    }
}

/// Writes `sample` compact into the front of `buf` with `padding` (see
/// [`compact_encoded_len`]) and returns the number of bytes written. Every byte written is
/// set (the padding is zeros); bytes after it are left alone. At any alignment of `buf`;
/// allocates nothing.
///
/// # Errors
///
/// - [`EncodeError::PaddingTooLarge`] if the message would exceed [`MAX_ENCODED_LEN`].
/// - [`EncodeError::BufferTooSmall`] if `buf` is shorter than the message; `buf` is then
///   untouched.
pub fn encode_compact_into(buf: &mut [u8], sample: &Compact, padding: Option<usize>) -> Result<usize, EncodeError> {
    let len = compact_encoded_len(padding);
    if len > MAX_ENCODED_LEN {
        return Err(EncodeError::PaddingTooLarge {
            padding_len: padding.unwrap_or(0),
        });
    }
    let given = buf.len();
    let Some(out) = buf.get_mut(..len) else {
        return Err(EncodeError::BufferTooSmall { needed: len, given });
    };
    // Lossless: len <= MAX_ENCODED_LEN, so the word count fits in 21 bits.
    let segment_words = ((len - ROOT_POINTER) / WORD) as u32;
    let mut head = [0_u8; COMPACT_LEN + WORD];
    put(&mut head, SEGMENT_TABLE, &0_u32.to_le_bytes());
    put(&mut head, SEGMENT_TABLE + 4, &segment_words.to_le_bytes());
    put(
        &mut head,
        ROOT_POINTER,
        &compact_root(padding.is_some() as u64).to_le_bytes(),
    );
    put(&mut head, SEQ, &sample.seq.to_le_bytes());
    put(&mut head, INTENDED_NS, &sample.intended_ns.to_le_bytes());
    match padding {
        None => out.copy_from_slice(&head[..COMPACT_LEN]),
        Some(n) => {
            // Lossless: n < MAX_ENCODED_LEN.
            let pointer = PADDING_POINTER_WORD | ((n as u64) << 35);
            put(&mut head, COMPACT_LEN, &pointer.to_le_bytes());
            let (out_head, out_padding) = out.split_at_mut(COMPACT_LEN + WORD);
            out_head.copy_from_slice(&head);
            out_padding.fill(0);
        }
    }
    Ok(len)
}

/// Reads one message, full or compact, from `bytes` (exactly one encoded message, at an
/// 8-byte aligned address), with the checks of [`decode`](super::decode): a full sample as
/// [`Message::Full`], a root struct of 2 to 4 data words as [`Message::Compact`] (what else it
/// carries is not read). Allocates nothing and never panics.
///
/// # Errors
///
/// Those of [`decode`](super::decode) but [`DecodeError::Compact`].
pub fn decode_message(bytes: &[u8]) -> Result<Message, DecodeError> {
    read(bytes)
}
