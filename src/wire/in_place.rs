//! The layouts this crate's encoders write, read in place: for them, what capnp's reader checks
//! (the root and padding pointers in bounds, the padding a byte list) comes down to comparing
//! two words, and reading the fields is a load each. capnp's reader costs 35-50 ns a message
//! (benches/wire.rs); a sample that takes this path costs a few. Any other layout (a newer
//! writer's longer struct, a pointer with an offset, another schema's struct) is left to capnp.

use super::{
    read_u64, Compact, DecodeError, Kind, Message, Sample, COMPACT_LEN, INTENDED_NS, KIND, MIN_ENCODED_LEN,
    PADDING_POINTER, PADDING_POINTER_WORD, PLANNED, PUBLISHER_ID, ROOT_POINTER, ROOT_POINTER_WORD, SENT_NS, SEQ,
    WARMUP, WORD,
};

/// The root pointer of a compact sample without padding: 2 data words, no pointer, offset 0.
const COMPACT_ROOT: u64 = super::compact::compact_root(0);
/// ... and with padding: 2 data words, 1 pointer.
const COMPACT_PADDED_ROOT: u64 = super::compact::compact_root(1);
/// The bits of a padding pointer besides its count: a list pointer, offset 0, byte elements.
const LIST_BITS: u64 = (1 << 35) - 1;

/// The message `bytes` holds if it has one of the layouts [`encode_into`](super::encode_into)
/// and [`encode_compact_into`](super::encode_compact_into) write; `None` for any other layout.
/// `bytes` passed [`read`](super::read)'s framing, alignment and root checks.
pub(super) fn read(bytes: &[u8]) -> Option<Result<Message, DecodeError>> {
    let word = |at: usize| read_u64(bytes, at);
    match word(ROOT_POINTER)? {
        COMPACT_ROOT => Some(Ok(Message::Compact(compact(bytes)?))),
        COMPACT_PADDED_ROOT if padding_fits(bytes, COMPACT_LEN)? => Some(Ok(Message::Compact(compact(bytes)?))),
        ROOT_POINTER_WORD if padding_fits(bytes, PADDING_POINTER)? => Some(full(bytes)),
        _ => None,
    }
}

/// Whether the padding pointer at `at` is null or a byte list right after it, inside the
/// message (`None`: the message ends before the pointer).
fn padding_fits(bytes: &[u8], at: usize) -> Option<bool> {
    let pointer = read_u64(bytes, at)?;
    let list_words = (pointer >> 35).div_ceil(WORD as u64);
    let room = ((bytes.len() - at) / WORD - 1) as u64;
    Some(pointer == 0 || (pointer & LIST_BITS == PADDING_POINTER_WORD && list_words <= room))
}

fn compact(bytes: &[u8]) -> Option<Compact> {
    Some(Compact {
        seq: read_u64(bytes, SEQ)?,
        intended_ns: read_u64(bytes, INTENDED_NS)? as i64,
    })
}

/// A full sample of v1's layout (its length is at least [`MIN_ENCODED_LEN`]: the padding
/// pointer, its last word, was read).
fn full(bytes: &[u8]) -> Result<Message, DecodeError> {
    debug_assert!(bytes.len() >= MIN_ENCODED_LEN);
    let u64_at = |at: usize| read_u64(bytes, at).unwrap_or(0);
    let u32_at = |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let kind = match u16::from_le_bytes([bytes[KIND], bytes[KIND + 1]]) {
        0 => Kind::Measured,
        1 => Kind::Warmup,
        2 => Kind::End,
        value => return Err(DecodeError::UnknownKind(value)),
    };
    Ok(Message::Full(Sample {
        seq: u64_at(SEQ),
        intended_ns: u64_at(INTENDED_NS) as i64,
        sent_ns: u64_at(SENT_NS) as i64,
        publisher_id: u32_at(PUBLISHER_ID),
        kind,
        warmup: u32_at(WARMUP),
        planned: u32_at(PLANNED),
    }))
}

#[cfg(test)]
mod tests {
    use super::super::{check_framing, check_root, encode_compact_into, encode_into, read_with_capnp};
    use super::*;

    /// Aeron hands payloads over 8-byte aligned; so does this buffer.
    #[repr(align(8))]
    struct Aligned([u8; 128]);

    /// A tiny xorshift generator: the test needs variety, not quality.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    /// Our encodings, then with random words written over the root, the padding pointer, the
    /// kind or anywhere: wherever the in-place read answers, capnp's reader gives the same
    /// answer.
    #[test]
    fn the_in_place_read_agrees_with_capnp() {
        let mut rng = Rng(0x0DDB_A11C_0FFE_E123);
        let (mut answered, mut declined) = (0, 0);
        for case in 0..20_000_u64 {
            let mut storage = Aligned([0; 128]);
            let buf = &mut storage.0[..];
            let padding = (case % 9) as usize * 5;
            let sample = Sample {
                seq: rng.next(),
                intended_ns: rng.next() as i64,
                sent_ns: rng.next() as i64,
                publisher_id: rng.next() as u32,
                kind: [Kind::Measured, Kind::Warmup, Kind::End][(case % 3) as usize],
                warmup: rng.next() as u32,
                planned: rng.next() as u32,
            };
            let len = match case % 3 {
                0 => encode_into(buf, &sample, padding).unwrap(),
                1 => encode_compact_into(
                    buf,
                    &Compact {
                        seq: sample.seq,
                        intended_ns: 7,
                    },
                    None,
                )
                .unwrap(),
                _ => encode_compact_into(buf, &Compact { seq: 1, intended_ns: 2 }, Some(padding)).unwrap(),
            };
            if case % 4 != 0 {
                let r = rng.next();
                let at = [
                    ROOT_POINTER,
                    PADDING_POINTER,
                    COMPACT_LEN,
                    KIND / WORD * WORD,
                    (r as usize % (len / WORD)) * WORD,
                ][(r >> 40) as usize % 5];
                if at + WORD <= len {
                    let value = match r % 4 {
                        0 => rng.next(),
                        1 => rng.next() & 0xFFFF_FFFF_0000_0003, // offset 0, any sizes
                        2 => (rng.next() % 80) << 35 | PADDING_POINTER_WORD, // a byte list of any count
                        _ => u64::from_le_bytes(buf[at..at + 8].try_into().unwrap()) ^ (1 << (r >> 58)),
                    };
                    buf[at..at + 8].copy_from_slice(&value.to_le_bytes());
                }
            }
            let bytes = &buf[..len];
            if check_framing(bytes).is_err() {
                continue;
            }
            let Ok(data_words) = check_root(bytes) else { continue };
            match read(bytes) {
                None => declined += 1,
                Some(fast) => {
                    answered += 1;
                    let slow = read_with_capnp(bytes, data_words);
                    assert_eq!(format!("{fast:?}"), format!("{slow:?}"), "case {case}: {bytes:02x?}");
                }
            }
        }
        assert!(
            answered > 10_000 && declined > 500,
            "answered {answered}, declined {declined}"
        );
    }
}
