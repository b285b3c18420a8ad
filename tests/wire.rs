//! The wire format end to end: round trips, byte-for-byte agreement with `capnp`'s own
//! builder and with the C++ `capnp` tool, hostile input, sizes, and schema evolution.
//! (Allocation counting lives in `tests/wire_alloc.rs`, which installs a global allocator.)

use std::error::Error as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use aeron_latency::wire::{
    compact_encoded_len, compact_padding_for_size, decode, decode_message, encode_compact_into, encode_into,
    encoded_len, padding_for_size, Compact, DecodeError, EncodeError, Kind, Message, Sample, SizeError, COMPACT_LEN,
    MAX_ENCODED_LEN, MAX_PADDING_LEN, MIN_ENCODED_LEN,
};
use capnp::message::{Builder, HeapAllocator, ReaderOptions};

// The generated code names itself `crate::wire::latency_capnp`, so it needs this module path.
#[allow(
    dead_code,
    unreachable_pub,
    missing_docs,
    missing_debug_implementations,
    clippy::all,
    clippy::pedantic
)]
mod wire {
    pub(crate) mod latency_capnp {
        include!(concat!(env!("OUT_DIR"), "/latency_capnp.rs"));
    }
}
use wire::latency_capnp as generated;

const KINDS: [Kind; 3] = [Kind::Measured, Kind::Warmup, Kind::End];
const PADDINGS: [usize; 11] = [0, 1, 7, 8, 9, 15, 16, 100, 1000, 4096, 64 * 1024];

/// A byte buffer that starts at an 8-byte aligned address, as Aeron payloads do.
struct Aligned {
    storage: Vec<u8>,
    start: usize,
    len: usize,
}

impl Aligned {
    fn filled(len: usize, byte: u8) -> Self {
        let storage = vec![byte; len + 8];
        let start = storage.as_ptr().align_offset(8);
        Self { storage, start, len }
    }

    fn from_bytes(bytes: &[u8]) -> Self {
        let mut buf = Self::filled(bytes.len(), 0);
        buf.bytes_mut().copy_from_slice(bytes);
        buf
    }

    fn bytes(&self) -> &[u8] {
        &self.storage[self.start..self.start + self.len]
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.start + self.len]
    }
}

fn sample(kind: Kind, seed: u64) -> Sample {
    Sample {
        seq: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15),
        intended_ns: 1_700_000_000_000_000_000 + seed as i64,
        sent_ns: -(seed as i64) - 1,
        publisher_id: (seed as u32).wrapping_mul(2_654_435_761),
        kind,
        warmup: 10_000 + seed as u32,
        planned: (seed as u32) << 7,
    }
}

fn extreme_samples() -> Vec<Sample> {
    let mut all: Vec<Sample> = KINDS.iter().flat_map(|&k| (0..4).map(move |s| sample(k, s))).collect();
    all.push(Sample {
        seq: u64::MAX,
        intended_ns: i64::MIN,
        sent_ns: i64::MAX,
        publisher_id: u32::MAX,
        kind: Kind::End,
        warmup: u32::MAX,
        planned: u32::MAX,
    });
    all.push(Sample {
        seq: 0,
        intended_ns: 0,
        sent_ns: 0,
        publisher_id: 0,
        kind: Kind::Measured,
        warmup: 0,
        planned: 0,
    });
    all
}

/// Like `assert_eq!` on byte slices, but reports the first difference instead of both slices.
#[track_caller]
fn assert_same_bytes(ours: &[u8], reference: &[u8], context: &str) {
    if let Some(at) = ours.iter().zip(reference).position(|(a, b)| a != b) {
        let word = at / 8 * 8;
        panic!(
            "{context}: first difference at byte {at}: ours {:02x?}, reference {:02x?} (word {word})",
            &ours[word..(word + 8).min(ours.len())],
            &reference[word..(word + 8).min(reference.len())]
        );
    }
    assert_eq!(ours.len(), reference.len(), "{context}: lengths differ");
}

fn encode(sample: &Sample, padding_len: usize) -> Aligned {
    let mut buf = Aligned::filled(encoded_len(padding_len), 0);
    let len = encode_into(buf.bytes_mut(), sample, padding_len).expect("encode");
    assert_eq!(len, buf.len);
    buf
}

/// What `capnp`'s own builder writes for the same sample (given one segment big enough).
fn encode_with_capnp_builder(sample: &Sample, padding_len: usize) -> Vec<u8> {
    let words = u32::try_from(encoded_len(padding_len) / 8).unwrap();
    let mut message = Builder::new(HeapAllocator::new().first_segment_words(words));
    {
        let mut root = message.init_root::<generated::sample::Builder<'_>>();
        root.set_seq(sample.seq);
        root.set_intended_ns(sample.intended_ns);
        root.set_sent_ns(sample.sent_ns);
        root.set_publisher_id(sample.publisher_id);
        root.set_kind(match sample.kind {
            Kind::Measured => generated::Kind::Measured,
            Kind::Warmup => generated::Kind::Warmup,
            Kind::End => generated::Kind::End,
        });
        root.set_warmup(sample.warmup);
        root.set_planned(sample.planned);
        root.init_padding(u32::try_from(padding_len).unwrap());
    }
    capnp::serialize::write_message_to_words(&message)
}

/// Reads `bytes` with `capnp`'s standard (allocating) reader; returns the padding.
fn read_padding_with_capnp(bytes: &[u8]) -> Vec<u8> {
    let mut slice = bytes;
    let message = capnp::serialize::read_message_from_flat_slice(&mut slice, ReaderOptions::new()).unwrap();
    assert!(slice.is_empty(), "capnp left {} bytes unread", slice.len());
    let root = message.get_root::<generated::sample::Reader<'_>>().unwrap();
    root.get_padding().unwrap().to_vec()
}

#[test]
fn layout_constants() {
    assert_eq!(MIN_ENCODED_LEN, 64);
    assert_eq!(encoded_len(0), 64);
    assert_eq!(encoded_len(1), 72);
    assert_eq!(encoded_len(8), 72);
    assert_eq!(encoded_len(9), 80);
    assert_eq!(MAX_ENCODED_LEN, 16 * 1024 * 1024);
    assert_eq!(MAX_PADDING_LEN, MAX_ENCODED_LEN - MIN_ENCODED_LEN);
    assert_eq!(encoded_len(usize::MAX), usize::MAX, "saturates");
}

#[test]
fn round_trip_all_kinds_and_paddings() {
    for sample in extreme_samples() {
        for padding_len in PADDINGS {
            let buf = encode(&sample, padding_len);
            assert_eq!(buf.len, encoded_len(padding_len));
            assert_eq!(decode(buf.bytes()).unwrap(), sample, "padding {padding_len}");
        }
    }
}

#[test]
fn bytes_match_capnp_builder() {
    for sample in extreme_samples() {
        for padding_len in PADDINGS {
            let ours = encode(&sample, padding_len);
            let reference = encode_with_capnp_builder(&sample, padding_len);
            assert_same_bytes(ours.bytes(), &reference, &format!("{sample:?} padding {padding_len}"));
        }
    }
}

#[test]
fn capnp_reader_reads_encoded_bytes() {
    for padding_len in PADDINGS {
        let s = sample(Kind::Warmup, padding_len as u64);
        let buf = encode(&s, padding_len);
        let mut slice = buf.bytes();
        let message = capnp::serialize::read_message_from_flat_slice(&mut slice, ReaderOptions::new()).unwrap();
        let root = message.get_root::<generated::sample::Reader<'_>>().unwrap();
        assert_eq!(root.get_seq(), s.seq);
        assert_eq!(root.get_intended_ns(), s.intended_ns);
        assert_eq!(root.get_sent_ns(), s.sent_ns);
        assert_eq!(root.get_publisher_id(), s.publisher_id);
        assert_eq!(root.get_kind().unwrap(), generated::Kind::Warmup);
        assert_eq!(root.get_warmup(), s.warmup);
        assert_eq!(root.get_planned(), s.planned);
        assert_eq!(root.get_padding().unwrap().len(), padding_len);
    }
}

#[test]
fn encode_into_dirty_buffer_zeroes_what_it_uses() {
    for padding_len in PADDINGS {
        let s = sample(Kind::Measured, 3);
        let len = encoded_len(padding_len);
        let mut buf = Aligned::filled(len + 24, 0xAA);
        assert_eq!(encode_into(buf.bytes_mut(), &s, padding_len).unwrap(), len);

        let message = &buf.bytes()[..len];
        assert_eq!(decode(message).unwrap(), s);
        let padding = read_padding_with_capnp(message);
        assert_eq!(padding.len(), padding_len);
        assert!(padding.iter().all(|&b| b == 0), "padding must read back as zeros");
        assert!(
            message[MIN_ENCODED_LEN..].iter().all(|&b| b == 0),
            "word-rounding bytes too"
        );
        assert!(
            buf.bytes()[len..].iter().all(|&b| b == 0xAA),
            "bytes past the message untouched"
        );
        assert_same_bytes(message, &encode_with_capnp_builder(&s, padding_len), "dirty buffer");
    }
}

#[test]
fn encode_at_any_alignment() {
    let s = sample(Kind::End, 9);
    let mut storage = [0xAA_u8; 200];
    for offset in 0..8 {
        let len = encode_into(&mut storage[offset..], &s, 20).unwrap();
        let copy = Aligned::from_bytes(&storage[offset..offset + len]);
        assert_eq!(decode(copy.bytes()).unwrap(), s);
    }
}

#[test]
fn encode_rejects_small_buffers_without_touching_them() {
    let s = sample(Kind::Measured, 1);
    for padding_len in [0, 5, 100] {
        let needed = encoded_len(padding_len);
        for given in [0, 1, 8, needed - 8, needed - 1] {
            let mut buf = vec![0xAA_u8; given];
            let err = encode_into(&mut buf, &s, padding_len).unwrap_err();
            assert_eq!(err, EncodeError::BufferTooSmall { needed, given });
            assert!(buf.iter().all(|&b| b == 0xAA));
            let text = err.to_string();
            assert!(
                text.contains(&format!("needs {needed} bytes")) && text.contains(&format!("has {given}")),
                "{text}"
            );
        }
    }
}

#[test]
fn encode_rejects_padding_over_aerons_limit() {
    let s = sample(Kind::Measured, 1);
    let mut buf = vec![0_u8; 64];
    let err = encode_into(&mut buf, &s, MAX_PADDING_LEN + 1).unwrap_err();
    assert_eq!(
        err,
        EncodeError::PaddingTooLarge {
            padding_len: MAX_PADDING_LEN + 1
        }
    );
    assert!(err.to_string().contains(&MAX_PADDING_LEN.to_string()), "{err}");
    assert!(err.source().is_none());
    assert!(matches!(
        encode_into(&mut buf, &s, usize::MAX),
        Err(EncodeError::PaddingTooLarge {
            padding_len: usize::MAX
        })
    ));

    let mut big = Aligned::filled(MAX_ENCODED_LEN, 0xAA);
    assert_eq!(encode_into(big.bytes_mut(), &s, MAX_PADDING_LEN), Ok(MAX_ENCODED_LEN));
    assert_eq!(decode(big.bytes()).unwrap(), s);
}

#[test]
fn decode_empty() {
    let err = decode(&[]).unwrap_err();
    assert!(matches!(err, DecodeError::Empty));
    assert_eq!(err.to_string(), "not an aeron-latency sample: the message is empty");
}

#[test]
fn decode_truncated_at_every_length() {
    let full = encode(&sample(Kind::Measured, 5), 100);
    for len in 0..full.len {
        let cut = Aligned::from_bytes(&full.bytes()[..len]);
        match decode(cut.bytes()) {
            Err(DecodeError::Empty) => assert_eq!(len, 0),
            Err(DecodeError::Truncated { needed, given }) => {
                assert_eq!(given, len);
                let expected = if len < 8 { 8 } else { full.len as u64 };
                assert_eq!(needed, expected, "at {len}");
            }
            other => panic!("length {len}: {other:?}"),
        }
    }
}

#[test]
fn decode_rejects_trailing_bytes() {
    let s = sample(Kind::Warmup, 2);
    for extra in [1, 7, 8, 64] {
        let mut bytes = encode(&s, 0).bytes().to_vec();
        bytes.extend(std::iter::repeat_n(0, extra));
        let buf = Aligned::from_bytes(&bytes);
        let err = decode(buf.bytes()).unwrap_err();
        assert!(
            matches!(err, DecodeError::TrailingBytes { message_len: 64, given } if given == 64 + extra),
            "{err:?}"
        );
        assert!(
            err.to_string()
                .contains(&format!("{extra} bytes follow the end of the 64-byte message")),
            "{err}"
        );
    }
}

#[test]
fn decode_rejects_multi_segment_messages() {
    // capnp's own builder, forced to spill the struct into a second segment.
    let mut message = Builder::new(HeapAllocator::new().first_segment_words(1));
    {
        let mut root = message.init_root::<generated::sample::Builder<'_>>();
        root.set_seq(1);
        root.init_padding(16);
    }
    assert!(message.get_segments_for_output().len() > 1);
    let bytes = capnp::serialize::write_message_to_words(&message);
    let buf = Aligned::from_bytes(&bytes);
    let err = decode(buf.bytes()).unwrap_err();
    assert!(matches!(err, DecodeError::SegmentCount(n) if n > 1), "{err:?}");

    // A forged segment table announcing 2^32 segments.
    let mut forged = encode(&sample(Kind::Measured, 0), 0);
    forged.bytes_mut()[..4].copy_from_slice(&u32::MAX.to_le_bytes());
    let err = decode(forged.bytes()).unwrap_err();
    assert!(matches!(err, DecodeError::SegmentCount(4_294_967_296)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "not an aeron-latency sample: the message has 4294967296 segments, samples have exactly 1"
    );
}

#[test]
fn decode_rejects_other_roots() {
    // A struct of another schema, smaller than any Sample: `Node.Parameter` (0 data words,
    // 1 pointer) from capnp's schema.capnp.
    let mut message = Builder::new_default();
    message
        .init_root::<capnp::schema_capnp::node::parameter::Builder<'_>>()
        .set_name("x");
    let buf = Aligned::from_bytes(&capnp::serialize::write_message_to_words(&message));
    let err = decode(buf.bytes()).unwrap_err();
    assert!(
        matches!(
            err,
            DecodeError::StructTooSmall {
                data_words: 0,
                pointers: 1
            }
        ),
        "{err:?}"
    );
    assert!(err
        .to_string()
        .starts_with("not an aeron-latency sample: the root struct has 0 data words"));

    // A message whose root was never set: one segment holding a null root pointer.
    let buf = Aligned::from_bytes(&[0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert!(matches!(decode(buf.bytes()), Err(DecodeError::RootNotStruct)));

    // A segment with no words at all.
    let buf = Aligned::from_bytes(&[0, 0, 0, 0, 0, 0, 0, 0]);
    assert!(matches!(decode(buf.bytes()), Err(DecodeError::RootNotStruct)));

    // A list, far and capability pointer at the root.
    for kind_bits in 1..4_u8 {
        let mut buf = encode(&sample(Kind::Measured, 0), 0);
        buf.bytes_mut()[8] |= kind_bits;
        assert!(
            matches!(decode(buf.bytes()), Err(DecodeError::RootNotStruct)),
            "kind {kind_bits}"
        );
    }
}

#[test]
fn decode_rejects_unknown_kind() {
    for value in [3_u16, 4, 0x7FFF, u16::MAX] {
        let mut buf = encode(&sample(Kind::Measured, 0), 8);
        buf.bytes_mut()[44..46].copy_from_slice(&value.to_le_bytes());
        let err = decode(buf.bytes()).unwrap_err();
        assert!(matches!(err, DecodeError::UnknownKind(v) if v == value), "{err:?}");
        assert!(err.to_string().starts_with(&format!("unknown sample kind {value}:")));
    }
}

#[test]
fn decode_rejects_malformed_pointers() {
    let base = encode(&sample(Kind::Measured, 0), 16);
    let word = |b: &Aligned, at: usize| u64::from_le_bytes(b.bytes()[at..at + 8].try_into().unwrap());
    let cases: [(&str, usize, u64); 4] = [
        // The root struct starts 100 words past the root pointer: out of bounds.
        ("root offset", 8, word(&base, 8) | (100 << 2)),
        // The padding claims more bytes than the segment has.
        ("padding count", 56, word(&base, 56) + (1000 << 35)),
        // The padding is a list of 8-byte elements, not of bytes.
        ("padding element size", 56, (word(&base, 56) & !(7 << 32)) | (5 << 32)),
        // The padding pointer is a struct pointer.
        ("padding kind", 56, word(&base, 56) & !3),
    ];
    for (what, at, value) in cases {
        let mut buf = Aligned::from_bytes(base.bytes());
        buf.bytes_mut()[at..at + 8].copy_from_slice(&value.to_le_bytes());
        let err = decode(buf.bytes()).unwrap_err();
        assert!(matches!(err, DecodeError::Malformed(_)), "{what}: {err:?}");
        assert!(err.source().is_some(), "{what}: Malformed carries the capnp error");
        assert_eq!(
            err.to_string(),
            "not an aeron-latency sample: malformed Cap'n Proto message"
        );
    }
}

#[test]
fn decode_rejects_misaligned_input() {
    let message = encode(&sample(Kind::Measured, 4), 0);
    let mut storage = Aligned::filled(message.len + 8, 0);
    for offset in 1..8 {
        let dst = &mut storage.bytes_mut()[offset..offset + message.len];
        dst.copy_from_slice(message.bytes());
        let err = decode(&storage.bytes()[offset..offset + message.len]).unwrap_err();
        assert!(matches!(err, DecodeError::Misaligned), "offset {offset}: {err:?}");
    }
    assert!(DecodeError::Misaligned.to_string().contains("8-byte aligned"));
}

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

#[test]
fn decode_never_panics_on_random_bytes() {
    let mut rng = Rng(0x5EED_1234_ABCD_0001);
    let mut accepted = 0;
    for case in 0..6000 {
        let len = (rng.next() % 400) as usize;
        let mut buf = Aligned::filled(len, 0);
        for b in buf.bytes_mut() {
            *b = rng.next() as u8;
        }
        // Two in three cases get a valid segment table, so capnp's pointer checks are reached.
        if case % 3 != 0 && len >= 16 {
            let words = ((len - 8) / 8) as u32;
            buf.len = 8 + words as usize * 8;
            buf.bytes_mut()[..4].copy_from_slice(&0_u32.to_le_bytes());
            buf.bytes_mut()[4..8].copy_from_slice(&words.to_le_bytes());
            // Half of those also get a plausible root struct pointer.
            if case % 2 == 0 {
                let root: u64 = ((1 + rng.next() % 7) << 32) | ((rng.next() % 4) << 48);
                buf.bytes_mut()[8..16].copy_from_slice(&root.to_le_bytes());
            }
        }
        if decode(buf.bytes()).is_ok() {
            accepted += 1;
        }
        // A full sample reads the same through both; anything else is compact or an error.
        match (decode(buf.bytes()), decode_message(buf.bytes())) {
            (Ok(s), m) => assert_eq!(m.unwrap(), Message::Full(s)),
            (Err(DecodeError::Compact { seq }), Ok(Message::Compact(c))) => assert_eq!(c.seq, seq),
            (Err(_), m) => assert!(!matches!(m, Ok(Message::Full(_))), "{m:?}"),
        }
        // Flip one byte of a valid message too.
        let mut valid = encode(&sample(KINDS[case % 3], case as u64), case % 40);
        let at = (rng.next() as usize) % valid.len;
        valid.bytes_mut()[at] ^= 1 << (rng.next() % 8);
        let _ = decode(valid.bytes());
    }
    // Random data words with a valid root and in-bounds padding can be a valid sample.
    assert!(accepted < 6000);
}

#[test]
fn sizes_are_consistent() {
    for total in 0..=4096 {
        match padding_for_size(total) {
            Ok(padding_len) => {
                assert!(total >= MIN_ENCODED_LEN && total.is_multiple_of(8));
                assert_eq!(encoded_len(padding_len), total);
                assert_eq!(encode(&sample(Kind::Measured, 0), padding_len).len, total);
            }
            Err(SizeError::TooSmall { total: t }) => assert!(t == total && total < MIN_ENCODED_LEN),
            Err(SizeError::NotWordMultiple { total: t }) => {
                assert!(t == total && total >= MIN_ENCODED_LEN && !total.is_multiple_of(8));
            }
            Err(other) => panic!("{total}: {other:?}"),
        }
    }
    for padding_len in 0..=4096 {
        let len = encoded_len(padding_len);
        assert!(len.is_multiple_of(8));
        assert!(len >= MIN_ENCODED_LEN + padding_len && len < MIN_ENCODED_LEN + padding_len + 8);
        assert_eq!(padding_for_size(len), Ok(padding_len.div_ceil(8) * 8));
    }
    assert_eq!(padding_for_size(MAX_ENCODED_LEN), Ok(MAX_PADDING_LEN));
    assert_eq!(
        padding_for_size(MAX_ENCODED_LEN + 8),
        Err(SizeError::TooLarge {
            total: MAX_ENCODED_LEN + 8
        })
    );
    assert_eq!(
        padding_for_size(usize::MAX),
        Err(SizeError::TooLarge { total: usize::MAX })
    );
}

#[test]
fn size_errors_name_the_nearest_valid_sizes() {
    let text = padding_for_size(100).unwrap_err().to_string();
    assert!(text.contains("nearest valid sizes are 96 and 104"), "{text}");
    let text = padding_for_size(10).unwrap_err().to_string();
    assert!(
        text.contains("too small: the smallest aeron-latency sample (a compact one) is 32 bytes"),
        "{text}"
    );
    let text = padding_for_size(32).unwrap_err().to_string();
    assert!(
        text.contains("too small for a full aeron-latency sample, which is 64 bytes at least"),
        "{text}"
    );
    let text = padding_for_size(MAX_ENCODED_LEN + 1).unwrap_err().to_string();
    assert!(
        text.contains(&format!("the largest is {MAX_ENCODED_LEN} bytes")),
        "{text}"
    );
}

// ---- Schema evolution (schema/README.md) ----

/// Builds a `Sample` struct by hand as a writer of a *newer* schema would: `data_words` >= 5
/// and `pointers` >= 1, the v1 fields in place, every extra data byte 0xEE, and every extra
/// pointer a 3-byte Data list stored after the padding.
fn newer_writer_bytes(s: &Sample, padding_len: usize, data_words: usize, pointers: usize) -> Vec<u8> {
    let v1 = encode(s, padding_len);
    let v1 = v1.bytes();
    let padding_words = padding_len.div_ceil(8);
    let extra_list_words = pointers - 1; // one word each for the extra 3-byte lists
    let segment_words = 1 + data_words + pointers + padding_words + extra_list_words;

    let mut seg = vec![0_u8; segment_words * 8];
    let root = ((data_words as u64) << 32) | ((pointers as u64) << 48);
    seg[..8].copy_from_slice(&root.to_le_bytes());
    seg[8..48].copy_from_slice(&v1[16..56]); // the five v1 data words
    seg[48..8 + data_words * 8].fill(0xEE); // fields appended later
    let pointer_section = 8 + data_words * 8;
    let after_pointers = pointer_section + pointers * 8;
    // Pointer i: offset (in words) from the end of the pointer to its target.
    let list_pointer = |at: usize, target: usize, count: u64| -> u64 {
        let offset = ((target - (at + 8)) / 8) as u64;
        1 | (offset << 2) | (2 << 32) | (count << 35)
    };
    let padding = list_pointer(pointer_section, after_pointers, padding_len as u64);
    seg[pointer_section..pointer_section + 8].copy_from_slice(&padding.to_le_bytes());
    for i in 1..pointers {
        let at = pointer_section + i * 8;
        let target = after_pointers + padding_words * 8 + (i - 1) * 8;
        seg[at..at + 8].copy_from_slice(&list_pointer(at, target, 3).to_le_bytes());
        seg[target..target + 3].copy_from_slice(b"v2!");
    }

    let mut bytes = Vec::with_capacity(8 + seg.len());
    bytes.extend_from_slice(&0_u32.to_le_bytes());
    bytes.extend_from_slice(&(segment_words as u32).to_le_bytes());
    bytes.extend_from_slice(&seg);
    bytes
}

#[test]
fn evolution_newer_writer_fields_are_ignored() {
    for (data_words, pointers) in [(5, 1), (6, 1), (5, 2), (7, 3), (20, 4)] {
        for padding_len in [0, 3, 16] {
            let s = sample(Kind::Warmup, (data_words * pointers) as u64);
            let bytes = newer_writer_bytes(&s, padding_len, data_words, pointers);
            let buf = Aligned::from_bytes(&bytes);
            assert_eq!(
                decode(buf.bytes()).unwrap(),
                s,
                "{data_words} data words, {pointers} pointers"
            );
            assert_eq!(read_padding_with_capnp(buf.bytes()), vec![0; padding_len]);
        }
    }
    // The same builder with v1 sizes reproduces our encoding exactly, so it is faithful.
    let s = sample(Kind::End, 1);
    assert_same_bytes(&newer_writer_bytes(&s, 24, 5, 1), encode(&s, 24).bytes(), "v1-sized");
}

/// Rule 6 of schema/README.md: a root struct of 5 data words or more is a full sample (with or
/// without its padding pointer), one of 2 to 4 a compact one (seq and intendedNs: what else it
/// carries is not read), and one of fewer than 2 another schema's struct, rejected rather than
/// read with defaults.
#[test]
fn evolution_struct_sizes_tell_full_compact_and_foreign() {
    let s = sample(Kind::Warmup, 1);
    let mut buf = encode(&s, 0);
    let compact = Compact {
        seq: s.seq,
        intended_ns: s.intended_ns,
    };
    for (data_words, pointers) in [(0_u16, 1_u16), (1, 1), (1, 0), (0, 2)] {
        let root = (u64::from(data_words) << 32) | (u64::from(pointers) << 48);
        buf.bytes_mut()[8..16].copy_from_slice(&root.to_le_bytes());
        let err = decode_message(buf.bytes()).unwrap_err();
        assert!(
            matches!(err, DecodeError::StructTooSmall { data_words: d, pointers: p } if d == data_words && p == pointers),
            "{err:?}"
        );
        assert!(err.to_string().contains("a sample has at least 2 data words"), "{err}");
    }
    // The struct shrinks in place: the words after it are left over but inside the segment.
    for (data_words, pointers) in [(2_u16, 0_u16), (3, 0), (4, 1), (2, 1)] {
        let root = (u64::from(data_words) << 32) | (u64::from(pointers) << 48);
        let mut shrunk = encode(&s, 0);
        shrunk.bytes_mut()[8..16].copy_from_slice(&root.to_le_bytes());
        if pointers == 1 {
            // The padding pointer moves to the end of the smaller data section.
            let at = 16 + usize::from(data_words) * 8;
            shrunk.bytes_mut()[at..at + 8].copy_from_slice(&(1_u64 | (2 << 32)).to_le_bytes());
        }
        assert_eq!(
            decode_message(shrunk.bytes()).unwrap(),
            Message::Compact(compact),
            "{data_words}"
        );
        assert!(matches!(decode(shrunk.bytes()), Err(DecodeError::Compact { seq }) if seq == s.seq));
    }
    // A full sample without its padding pointer (null padding reads as empty).
    let root = 5_u64 << 32;
    buf = encode(&s, 0);
    buf.bytes_mut()[8..16].copy_from_slice(&root.to_le_bytes());
    assert_eq!(decode(buf.bytes()).unwrap(), s);
}

// ---- Compact samples ----

fn encode_compact(c: &Compact, padding: Option<usize>) -> Aligned {
    let mut buf = Aligned::filled(compact_encoded_len(padding), 0xAB);
    let len = encode_compact_into(buf.bytes_mut(), c, padding).expect("encode");
    assert_eq!(len, buf.len);
    buf
}

#[test]
fn compact_samples_round_trip_at_every_size_and_read_with_capnp() {
    let mut sizes: Vec<usize> = (0..=2048).step_by(8).collect();
    sizes.extend([4096 + 8, 64 * 1024, MAX_ENCODED_LEN]);
    for total in sizes {
        let padding = match compact_padding_for_size(total) {
            Ok(p) => p,
            Err(SizeError::TooSmall { total: t }) if t == total && total < COMPACT_LEN => continue,
            Err(e) => panic!("{total}: {e:?}"),
        };
        assert_eq!(compact_encoded_len(padding), total);
        let c = Compact {
            seq: total as u64 * 7919,
            intended_ns: -(total as i64) * 31,
        };
        let buf = encode_compact(&c, padding);
        assert_eq!(decode_message(buf.bytes()).unwrap(), Message::Compact(c), "{total}");
        let err = decode(buf.bytes()).unwrap_err();
        assert!(matches!(err, DecodeError::Compact { seq } if seq == c.seq), "{err:?}");
        assert!(err.to_string().contains("read it with wire::decode_message"), "{err}");
        // capnp's own reader: the two fields, the others at their defaults, zero padding.
        let mut slice = buf.bytes();
        let message = capnp::serialize::read_message_from_flat_slice(&mut slice, ReaderOptions::new()).unwrap();
        assert!(slice.is_empty(), "{total}: capnp left {} bytes", slice.len());
        let root = message.get_root::<generated::sample::Reader<'_>>().unwrap();
        assert_eq!((root.get_seq(), root.get_intended_ns()), (c.seq, c.intended_ns));
        assert_eq!(
            (root.get_sent_ns(), root.get_publisher_id(), root.get_warmup()),
            (0, 0, 0)
        );
        assert_eq!(root.get_kind().unwrap(), generated::Kind::Measured);
        let padding_bytes = root.get_padding().unwrap();
        assert_eq!(padding_bytes.len(), padding.unwrap_or(0));
        assert!(padding_bytes.iter().all(|&b| b == 0));
    }
    assert_eq!(COMPACT_LEN, 32, "with Aeron's 32-byte header, one 64-byte cache line");
}

#[test]
fn compact_sizes_and_their_errors() {
    assert_eq!(compact_padding_for_size(32), Ok(None));
    assert_eq!(compact_padding_for_size(40), Ok(Some(0)));
    assert_eq!(compact_padding_for_size(64), Ok(Some(24)));
    assert_eq!(compact_encoded_len(Some(1)), 48, "padding rounds up to a word");
    let text = compact_padding_for_size(24).unwrap_err().to_string();
    assert!(
        text.contains("the smallest aeron-latency sample (a compact one) is 32"),
        "{text}"
    );
    let text = compact_padding_for_size(44).unwrap_err().to_string();
    assert!(text.contains("nearest valid sizes are 40 and 48"), "{text}");
    assert_eq!(
        compact_padding_for_size(MAX_ENCODED_LEN + 8),
        Err(SizeError::TooLarge {
            total: MAX_ENCODED_LEN + 8
        })
    );
    let c = Compact { seq: 1, intended_ns: 2 };
    let mut small = [7_u8; 39];
    assert_eq!(
        encode_compact_into(&mut small, &c, Some(0)),
        Err(EncodeError::BufferTooSmall { needed: 40, given: 39 })
    );
    assert!(small.iter().all(|&b| b == 7), "untouched");
    assert!(matches!(
        encode_compact_into(&mut small, &c, Some(MAX_ENCODED_LEN)),
        Err(EncodeError::PaddingTooLarge { .. })
    ));
    // At any alignment, and only its own bytes.
    let mut raw = [0xCD_u8; 64];
    assert_eq!(encode_compact_into(&mut raw[1..], &c, None), Ok(32));
    assert_eq!((raw[0], raw[33]), (0xCD, 0xCD));
    assert_eq!(
        decode_message(Aligned::from_bytes(&raw[1..33]).bytes()).unwrap(),
        Message::Compact(c)
    );
}

#[test]
fn a_compact_samples_kind_follows_the_runs_warmup_count() {
    let at = |seq| Compact { seq, intended_ns: 0 };
    assert_eq!(at(0).kind(0), Kind::Measured);
    assert_eq!(at(0).kind(1), Kind::Warmup);
    assert_eq!(at(999).kind(1000), Kind::Warmup);
    assert_eq!(at(1000).kind(1000), Kind::Measured);
    assert_eq!(at(u64::MAX).kind(u32::MAX), Kind::Measured);
}

// ---- The C++ reference implementation (the `capnp` tool the build already needs) ----

fn capnp_tool() -> PathBuf {
    std::env::var_os("CAPNP").map_or_else(|| PathBuf::from("capnp"), PathBuf::from)
}

fn schema_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/latency.capnp")
}

/// Runs `capnp <args>` with `stdin`, returning stdout; panics with capnp's stderr on failure.
fn run_capnp(args: &[&str], stdin: &[u8]) -> Vec<u8> {
    let mut child = Command::new(capnp_tool())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the capnp tool (the build needs it too)");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "capnp {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn cxx_capnp_decodes_our_bytes() {
    let s = Sample {
        seq: 12,
        intended_ns: -5,
        sent_ns: 99,
        publisher_id: 3,
        kind: Kind::End,
        warmup: 7,
        planned: 0,
    };
    let buf = encode(&s, 5);
    let schema = schema_path();
    let text = run_capnp(&["decode", "--short", schema.to_str().unwrap(), "Sample"], buf.bytes());
    // Older tools escape NUL in octal (`\000`), newer ones in hex (`\x00`).
    let text = String::from_utf8(text).unwrap().replace(r"\x00", r"\000");
    assert_eq!(
        text.trim(),
        r#"(seq = 12, intendedNs = -5, sentNs = 99, publisherId = 3, kind = end, warmup = 7, planned = 0, padding = "\000\000\000\000\000")"#
    );
}

#[test]
fn cxx_capnp_decodes_compact_bytes() {
    let schema = schema_path();
    let c = Compact {
        seq: 12,
        intended_ns: -5,
    };
    for (padding, shown) in [(None, ""), (Some(3), r#", padding = "\000\000\000""#)] {
        let buf = encode_compact(&c, padding);
        let text = run_capnp(&["decode", "--short", schema.to_str().unwrap(), "Sample"], buf.bytes());
        let text = String::from_utf8(text).unwrap().replace(r"\x00", r"\000");
        assert_eq!(
            text.trim(),
            format!(
                "(seq = 12, intendedNs = -5, sentNs = 0, publisherId = 0, kind = measured, warmup = 0, planned = 0{shown})"
            )
        );
    }
}

#[test]
fn cxx_capnp_encoded_messages_decode() {
    let schema = schema_path();
    let text = b"(seq = 5, intendedNs = 100, sentNs = 101, publisherId = 9, kind = warmup, warmup = 2, planned = 20, padding = \"abc\")";
    let bytes = run_capnp(&["encode", schema.to_str().unwrap(), "Sample"], text);
    let buf = Aligned::from_bytes(&bytes);
    let expected = Sample {
        seq: 5,
        intended_ns: 100,
        sent_ns: 101,
        publisher_id: 9,
        kind: Kind::Warmup,
        warmup: 2,
        planned: 20,
    };
    assert_eq!(decode(buf.bytes()).unwrap(), expected);

    // Enough padding to spill into a second segment: a valid message, but not a sample.
    let padding = "x".repeat(20_000);
    let text = format!("(seq = 1, padding = \"{padding}\")");
    let bytes = run_capnp(&["encode", schema.to_str().unwrap(), "Sample"], text.as_bytes());
    let buf = Aligned::from_bytes(&bytes);
    assert!(matches!(decode(buf.bytes()), Err(DecodeError::SegmentCount(n)) if n > 1));
}

/// A v2 of the schema that follows the rules in schema/README.md: v1 unchanged, new fields
/// appended (one in the 16-bit hole, one new data word, one new pointer).
const SCHEMA_V2: &str = r#"@0xb4201b8876981bed;
enum Kind { measured @0; warmup @1; end @2; }
struct Sample {
  seq @0 :UInt64;
  intendedNs @1 :Int64;
  sentNs @2 :Int64;
  publisherId @3 :UInt32;
  kind @4 :Kind;
  warmup @5 :UInt32;
  planned @6 :UInt32;
  padding @7 :Data;
  flags @8 :UInt16;
  receivedNs @9 :Int64 = -1;
  host @10 :Text;
}
"#;

#[test]
fn evolution_both_directions_with_cxx_capnp() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("wire-evolution");
    std::fs::create_dir_all(&dir).unwrap();
    let v2 = dir.join("latency_v2.capnp");
    std::fs::write(&v2, SCHEMA_V2).unwrap();
    let v2 = v2.to_str().unwrap();

    // New writer, old reader: v2's fields are ignored.
    let text = b"(seq = 77, intendedNs = 1, sentNs = 2, publisherId = 4, kind = measured, warmup = 5, planned = 6, padding = \"\", flags = 65535, receivedNs = 3, host = \"box\")";
    let bytes = run_capnp(&["encode", v2, "Sample"], text);
    let buf = Aligned::from_bytes(&bytes);
    let expected = Sample {
        seq: 77,
        intended_ns: 1,
        sent_ns: 2,
        publisher_id: 4,
        kind: Kind::Measured,
        warmup: 5,
        planned: 6,
    };
    assert_eq!(decode(buf.bytes()).unwrap(), expected);
    assert!(buf.len > encode(&expected, 0).len, "the v2 struct is larger");

    // Old writer, new reader: the fields v1 lacks read as their defaults.
    let ours = encode(&expected, 0);
    let text = String::from_utf8(run_capnp(&["decode", "--short", v2, "Sample"], ours.bytes())).unwrap();
    assert_eq!(
        text.trim(),
        r#"(seq = 77, intendedNs = 1, sentNs = 2, publisherId = 4, kind = measured, warmup = 5, planned = 6, padding = "", flags = 0, receivedNs = -1)"#
    );
}
