//! `wire::decode` and `wire::decode_message` on arbitrary bytes: they must never panic, agree
//! on full samples, and what they accept must survive a re-encode. Run with `make fuzz` (all targets) or `cargo +nightly fuzz run wire_decode`.
#![no_main]

use std::error::Error as _;

use aeron_latency::wire::{self, DecodeError, MIN_ENCODED_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // `decode` reads words in place and needs an 8-byte aligned start, as Aeron payloads have.
    // libFuzzer's buffer is a fresh heap allocation, but that is not a promise: copy it.
    let mut storage = vec![0_u8; data.len() + 2 * 8];
    let start = storage.as_ptr().align_offset(8);
    storage[start..start + data.len()].copy_from_slice(data);
    let bytes = &storage[start..start + data.len()];

    match wire::decode(bytes) {
        Ok(sample) => {
            // Whatever decode accepts (a newer writer's longer struct, padding anywhere in the
            // segment, ...) holds a sample that our encoder writes back and decode reads again.
            let padding = bytes.len().saturating_sub(MIN_ENCODED_LEN);
            let mut again = vec![0_u8; wire::encoded_len(padding) + 8];
            let at = again.as_ptr().align_offset(8);
            let len = wire::encode_into(&mut again[at..], &sample, padding).expect("re-encode an accepted sample");
            let back = wire::decode(&again[at..at + len]).expect("decode a re-encoded sample");
            assert_eq!(back, sample, "re-encoded sample differs");
        }
        Err(error) => {
            // The messages must not panic either (they do arithmetic on the lengths).
            let _ = error.to_string();
            let _ = error.source();
        }
    }

    // decode_message reads what decode reads, and a compact sample where decode refuses one.
    match (wire::decode(bytes), wire::decode_message(bytes)) {
        (Ok(sample), message) => assert_eq!(message.expect("a full sample"), wire::Message::Full(sample)),
        (Err(DecodeError::Compact { seq }), Ok(wire::Message::Compact(c))) => {
            assert_eq!(c.seq, seq);
            let mut again = vec![0_u8; wire::COMPACT_LEN + 8];
            let at = again.as_ptr().align_offset(8);
            let len = wire::encode_compact_into(&mut again[at..], &c, None).expect("re-encode a compact sample");
            let back = wire::decode_message(&again[at..at + len]).expect("decode a re-encoded compact sample");
            assert_eq!(back, wire::Message::Compact(c), "re-encoded compact sample differs");
        }
        (Err(_), message) => assert!(!matches!(message, Ok(wire::Message::Full(_))), "{message:?}"),
    }

    // The same bytes one byte off alignment: never a sample, never a panic.
    let misaligned = &storage[start + 1..start + 1 + data.len()];
    match wire::decode(misaligned) {
        Ok(sample) => panic!("decoded {sample:?} from a misaligned slice"),
        Err(error @ DecodeError::Misaligned) => assert!(!error.to_string().is_empty()),
        Err(error) => {
            let _ = error.to_string();
        }
    }
});
