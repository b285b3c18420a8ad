//! `wire::encode_into` then `wire::decode` on arbitrary samples and paddings: the fields come
//! back unchanged, the length is `encoded_len`, sizes agree with `padding_for_size`, and the
//! encoder neither writes past the message nor touches a buffer it rejects. Run with
//! `make fuzz` (all targets) or `cargo +nightly fuzz run wire_round_trip`.
#![no_main]

use aeron_latency::wire::{self, EncodeError, Kind, Sample, MAX_PADDING_LEN, MIN_ENCODED_LEN};
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

/// `wire::Kind` has no `Arbitrary` (the library does not depend on `arbitrary`).
#[derive(Debug, Clone, Copy, Arbitrary)]
enum FuzzKind {
    Measured,
    Warmup,
    End,
}

impl From<FuzzKind> for Kind {
    fn from(kind: FuzzKind) -> Self {
        match kind {
            FuzzKind::Measured => Self::Measured,
            FuzzKind::Warmup => Self::Warmup,
            FuzzKind::End => Self::End,
        }
    }
}

#[derive(Debug, Arbitrary)]
struct Input {
    seq: u64,
    intended_ns: i64,
    sent_ns: i64,
    publisher_id: u32,
    kind: FuzzKind,
    warmup: u32,
    planned: u32,
    /// Up to 64 KiB of padding (the 16 MiB limit is checked without a buffer, below).
    padding_len: u16,
    /// Where in the buffer the message starts: `encode_into` writes at any alignment.
    offset: u8,
    /// What the buffer holds before encoding (an Aeron claim is not zeroed).
    dirt: u8,
    /// How far past `MAX_PADDING_LEN` the rejected padding is.
    excess: u32,
}

fuzz_target!(|input: Input| {
    let sample = Sample {
        seq: input.seq,
        intended_ns: input.intended_ns,
        sent_ns: input.sent_ns,
        publisher_id: input.publisher_id,
        kind: input.kind.into(),
        warmup: input.warmup,
        planned: input.planned,
    };
    let padding = usize::from(input.padding_len);
    let len = wire::encoded_len(padding);
    assert_eq!(len, MIN_ENCODED_LEN + padding.div_ceil(8) * 8);
    assert_eq!(wire::padding_for_size(len), Ok(padding.div_ceil(8) * 8));

    let offset = usize::from(input.offset % 8);
    let mut buf = vec![input.dirt; len + offset + 2 * 8];
    let start = buf.as_ptr().align_offset(8) + offset;

    // One byte short: rejected, and the buffer is untouched.
    let short = &mut buf[start..start + len - 1];
    assert_eq!(
        wire::encode_into(short, &sample, padding),
        Err(EncodeError::BufferTooSmall {
            needed: len,
            given: len - 1
        })
    );
    assert!(
        buf.iter().all(|&b| b == input.dirt),
        "a rejected encode wrote to the buffer"
    );

    // Beyond Aeron's limit: rejected before the buffer is looked at.
    let too_much = MAX_PADDING_LEN.saturating_add(1).saturating_add(input.excess as usize);
    assert_eq!(
        wire::encode_into(&mut buf[start..], &sample, too_much),
        Err(EncodeError::PaddingTooLarge { padding_len: too_much })
    );

    assert_eq!(wire::encode_into(&mut buf[start..], &sample, padding), Ok(len));
    assert!(
        buf[start + len..].iter().all(|&b| b == input.dirt),
        "encode wrote past the message"
    );
    assert!(
        buf[start + MIN_ENCODED_LEN..start + len].iter().all(|&b| b == 0),
        "padding not zeroed"
    );

    // Decode needs an aligned start: move the message there when it was written off alignment.
    let aligned = start - offset;
    buf.copy_within(start..start + len, aligned);
    let message = &buf[aligned..aligned + len];
    assert_eq!(wire::decode(message).expect("decode what encode_into wrote"), sample);

    // Cut short or followed by a stray word, it is no sample.
    assert!(
        wire::decode(&message[..len - 8]).is_err(),
        "decoded a truncated message"
    );
    let mut longer = buf[aligned..aligned + len].to_vec();
    longer.extend_from_slice(&[0; 8]);
    let mut storage = vec![0_u8; longer.len() + 8];
    let at = storage.as_ptr().align_offset(8);
    storage[at..at + longer.len()].copy_from_slice(&longer);
    assert!(
        wire::decode(&storage[at..at + longer.len()]).is_err(),
        "decoded trailing bytes"
    );
});
