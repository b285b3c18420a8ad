//! `messaging`'s term reader and fragment assembly over three terms of arbitrary bytes, as a
//! process sharing the log could write them (arbitrary frame lengths, types, flags and offsets):
//! no panic, no read outside the log (AddressSanitizer watches), no endless loop (every read
//! returns, the position never goes back). The first bytes pick the fragment limit and the
//! controlled-poll actions; the rest are the terms. Seeds are real logs written by the shipped
//! appender (`seed_corpus`). Run with `make fuzz` or `cargo +nightly fuzz run term_reader`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use messaging::fuzzing::{read_log, TERM_LENGTH};

fuzz_target!(|data: &[u8]| {
    let (head, terms) = data.split_at(data.len().min(9));
    let fragment_limit = usize::from(head.first().copied().unwrap_or(10) % 17);
    let actions = head.get(1..).unwrap_or(&[]);
    let read = read_log(terms, fragment_limit, actions);
    assert!(read.position <= 3 * TERM_LENGTH as i64 + TERM_LENGTH as i64, "{read:?}");
    assert!(read.bytes <= 3 * TERM_LENGTH * 4, "more bytes handed over than the log holds: {read:?}");
});
