//! Proves what the probe's receiving hot loop does per message allocates nothing: the
//! recorder, the slowest-samples heap, the stall log and the band sampler (the stratified
//! sample the band diagnosis reads), each fed a million messages after being built.
//!
//! It lives alone in this test binary so its counting global allocator affects no other test;
//! counting is per thread (a `const` thread-local, so reading it never allocates).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use latency_probe::measure::bands::BandSampler;
use latency_probe::measure::recorder::{Recorder, SampleKind};
use latency_probe::measure::slow::SlowSamples;
use latency_probe::model::{SlowSample, StallLog};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; the
// counting touches only a `const` thread-local, which neither allocates nor panics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: forwarded unchanged; the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
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

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

#[test]
fn a_million_messages_through_the_receiving_side_allocate_nothing() {
    const N: u64 = 1_000_000;
    let mut rec = Recorder::new();
    let mut slow = SlowSamples::new(latency_probe::model::SLOW_SAMPLES_KEPT);
    let mut bands = BandSampler::new();
    let mut stalls = StallLog::new(5_000, 1_000);
    // The first message sets the plan (and allocates the sequence bitset): not per message.
    rec.record(0, SampleKind::Warmup, 1, N as u32, 1_000, 900);
    let before = allocations();
    let mut t = 0_i64;
    for seq in 1..N {
        // Latencies over many octaves, a few very slow ones, so every reservoir fills and
        // then replaces, and the heap keeps replacing its fastest.
        let latency = 300 + (seq * 7_919) % 50_000 + if seq % 997 == 0 { 3_000_000 } else { 0 };
        t += 10_000 + (seq % 13) as i64 * 1_000;
        stalls.tick(t);
        rec.record(
            seq,
            SampleKind::Measured,
            1,
            N as u32,
            latency as i64,
            latency as i64 - 50,
        );
        let s = SlowSample {
            latency_ns: latency,
            seq,
            intended_ns: t,
            sent_ns: t + 10,
            received_ns: t + latency as i64,
        };
        slow.offer(s);
        bands.offer(s);
    }
    let during = allocations() - before;
    assert_eq!(during, 0, "allocations while recording {N} messages");
    let octaves = bands.into_octaves();
    assert_eq!(
        octaves.iter().map(|o| o.seen).sum::<u64>(),
        N - 1,
        "every message counted"
    );
    assert!(stalls.count > 0, "the stall log saw the gaps");
}
