//! Proves `wire::encode_into` and `wire::decode` allocate nothing, with a counting global
//! allocator. It lives alone in this test binary so the allocator affects no other test.
//!
//! Counting is per thread (a `const` thread-local, so reading it never allocates): the test
//! harness's own threads may allocate while the measured loop runs, and must not count.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use aeron_latency::wire::{
    decode, decode_message, encode_compact_into, encode_into, encoded_len, Compact, DecodeError, EncodeError, Kind,
    Message, Sample,
};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    static BYTES: Cell<u64> = const { Cell::new(0) };
}

fn count(bytes: usize) {
    // `try_with`: the thread-local may already be gone while a thread shuts down.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
    let _ = BYTES.try_with(|n| n.set(n.get() + bytes as u64));
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; the
// counting touches only `const` thread-locals, which neither allocate nor panic.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: forwarded unchanged; the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: as in `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: forwarded unchanged; `ptr` came from this allocator, i.e. from `System`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged; `ptr` came from this allocator, i.e. from `System`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations and bytes requested on this thread while `f` runs.
fn allocations_during(f: impl FnOnce()) -> (u64, u64) {
    let before = (ALLOCATIONS.with(Cell::get), BYTES.with(Cell::get));
    f();
    (ALLOCATIONS.with(Cell::get) - before.0, BYTES.with(Cell::get) - before.1)
}

#[test]
fn the_counter_counts() {
    let (allocations, bytes) = allocations_during(|| drop(std::hint::black_box(vec![0_u8; 100])));
    assert_eq!((allocations, bytes), (1, 100));
}

#[test]
fn encode_into_and_decode_allocate_nothing() {
    const PADDINGS: [usize; 5] = [0, 1, 64, 192, 64 * 1024];
    const ROUNDS: u64 = 10_000;

    // Every buffer is allocated up front; u64 storage keeps the byte view 8-byte aligned.
    let mut words = vec![0_u64; encoded_len(64 * 1024) / 8 + 1];
    let buf = bytes_of(&mut words);
    let kinds = [Kind::Measured, Kind::Warmup, Kind::End];
    let mut sample = Sample {
        seq: 0,
        intended_ns: 1_000,
        sent_ns: 1_250,
        publisher_id: 3,
        kind: Kind::Warmup,
        warmup: 100,
        planned: 1_000,
    };

    // Warm-up: any lazy one-time initialisation happens here, outside the count.
    let len = encode_into(buf, &sample, 0).unwrap();
    assert_eq!(decode(&buf[..len]).unwrap(), sample);

    let mut checksum = 0_u64;
    let (allocations, bytes) = allocations_during(|| {
        for round in 0..ROUNDS {
            sample.seq = round;
            sample.kind = kinds[(round % 3) as usize];
            let padding = PADDINGS[(round % PADDINGS.len() as u64) as usize];
            let len = encode_into(buf, &sample, padding).unwrap();
            let decoded = decode(&buf[..len]).unwrap();
            checksum = checksum.wrapping_add(decoded.seq);
        }
    });
    assert_eq!(
        checksum,
        ROUNDS * (ROUNDS - 1) / 2,
        "every round decoded its own sample"
    );
    assert_eq!((allocations, bytes), (0, 0), "encode_into + decode allocated");
}

#[test]
fn compact_samples_allocate_nothing() {
    const PADDINGS: [Option<usize>; 4] = [None, Some(0), Some(24), Some(64 * 1024)];
    const ROUNDS: u64 = 10_000;
    let mut words = vec![0_u64; encoded_len(64 * 1024) / 8 + 1];
    let buf = bytes_of(&mut words);
    let mut c = Compact {
        seq: 0,
        intended_ns: 1_000,
    };
    let len = encode_compact_into(buf, &c, None).unwrap();
    assert_eq!(decode_message(&buf[..len]).unwrap(), Message::Compact(c));

    let mut checksum = 0_u64;
    let (allocations, bytes) = allocations_during(|| {
        for round in 0..ROUNDS {
            c.seq = round;
            let len = encode_compact_into(buf, &c, PADDINGS[(round % 4) as usize]).unwrap();
            if let Ok(Message::Compact(read)) = decode_message(&buf[..len]) {
                checksum = checksum.wrapping_add(read.seq);
            }
            // The full decoder refuses it without allocating too.
            assert!(matches!(decode(&buf[..len]), Err(DecodeError::Compact { .. })));
        }
    });
    assert_eq!(
        checksum,
        ROUNDS * (ROUNDS - 1) / 2,
        "every round decoded its own sample"
    );
    assert_eq!(
        (allocations, bytes),
        (0, 0),
        "encode_compact_into + decode_message allocated"
    );
}

#[test]
fn rejections_allocate_nothing() {
    let mut words = vec![0_u64; 64];
    let buf = bytes_of(&mut words);
    let sample = Sample {
        seq: 1,
        intended_ns: 2,
        sent_ns: 3,
        publisher_id: 4,
        kind: Kind::Measured,
        warmup: 5,
        planned: 6,
    };
    let len = encode_into(buf, &sample, 16).unwrap();
    let mut shifted_words = vec![0_u64; 64];
    let shifted = &mut bytes_of(&mut shifted_words)[1..];
    encode_into(shifted, &sample, 16).unwrap();
    let _ = decode(&[]); // warm-up

    let (allocations, bytes) = allocations_during(|| {
        let valid = &mut buf[..len];
        assert!(matches!(decode(&valid[..0]), Err(DecodeError::Empty)));
        assert!(matches!(decode(&valid[..len - 8]), Err(DecodeError::Truncated { .. })));
        assert!(matches!(decode(&shifted[..len]), Err(DecodeError::Misaligned)));
        valid[44] = 9;
        assert!(matches!(decode(valid), Err(DecodeError::UnknownKind(9))));
        valid[44] = 0;
        valid[56 + 4] = 5; // the padding becomes a list of 8-byte elements: capnp's own error
        assert!(matches!(decode(valid), Err(DecodeError::Malformed(_))));
        valid[56 + 4] = 2;
        valid[8] |= 1; // the root becomes a list pointer
        assert!(matches!(decode(valid), Err(DecodeError::RootNotStruct)));
        valid[8] &= !3;
        valid[0] = 1;
        assert!(matches!(decode(valid), Err(DecodeError::SegmentCount(2))));
        valid[0] = 0;
        assert!(matches!(
            encode_into(&mut valid[..63], &sample, 0),
            Err(EncodeError::BufferTooSmall { .. })
        ));
        assert!(matches!(
            decode(&buf[..len + 8]),
            Err(DecodeError::TrailingBytes { .. })
        ));
        assert_eq!(decode(&buf[..len]).unwrap(), sample, "every corruption was undone");
    });
    assert_eq!((allocations, bytes), (0, 0), "a rejection allocated");
}

/// The bytes of `words`, safely: 8-byte aligned by construction.
fn bytes_of(words: &mut [u64]) -> &mut [u8] {
    let len = words.len() * 8;
    // SAFETY: `u8` has no alignment or validity requirements, the length covers exactly the
    // same memory, and the returned borrow keeps `words` exclusively borrowed.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), len) }
}
