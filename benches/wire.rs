//! `wire::encode_into` and `wire::decode` for 64-byte and 256-byte messages, and
//! `wire::encode_compact_into` and `wire::decode_message` for a 32-byte compact one.
//!
//! # Timing model
//!
//! - **What is timed:** one call, on one thread. `encode_into`: writing the 64-byte head and
//!   zeroing the padding into a caller-owned buffer. `decode`: the framing, alignment and root
//!   checks, the padding pointer's check, and reading the seven fields in place (our own
//!   layouts skip capnp's reader; others take it). The compact pair: the same for the 32-byte
//!   message and its two fields.
//! - **Clock:** criterion's `Bencher::iter`, which reads `std::time::Instant`
//!   (`CLOCK_MONOTONIC` on Linux) once before and once after a batch of iterations and divides
//!   by the batch size; the per-iteration figure includes the loop and `black_box` overhead
//!   (a few instructions).
//! - **Excluded:** allocating and aligning the buffer (done once, before timing), Aeron
//!   (claim, commit, poll), and any cross-thread or cross-core transfer. The same buffer is
//!   reused, so caches and the branch predictor are warm: this is the floor the codec adds to
//!   a message's latency, not what a cold message pays. The end-to-end path is the probe's job.
//!
//! Run: `cargo bench -p aeron-latency --bench wire`; CI runs it once as a test with
//! `cargo test --benches`.

#![allow(missing_docs, reason = "criterion_group! generates an undocumented pub fn")]

use std::hint::black_box;

use aeron_latency::wire::{self, Kind, Sample};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

/// Message sizes in bytes (the whole encoded message, segment table included).
const SIZES: [usize; 2] = [64, 256];

/// Aeron hands payloads over 8-byte aligned; so does this buffer.
#[repr(align(8))]
struct Aligned([u8; 256]);

fn sample() -> Sample {
    Sample {
        seq: 123_456,
        intended_ns: 1_700_000_000_000_000_000,
        sent_ns: 1_700_000_000_000_000_250,
        publisher_id: 1,
        kind: Kind::Measured,
        warmup: 10_000,
        planned: 1_000_000,
    }
}

fn encode_into(c: &mut Criterion) {
    let mut group = c.benchmark_group("encode_into");
    let mut buf = Aligned([0xAA; 256]);
    let sample = sample();
    for size in SIZES {
        let padding = wire::padding_for_size(size).expect("a valid size");
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_with_input(BenchmarkId::from_parameter(size), &padding, |b, &padding| {
            b.iter(|| wire::encode_into(black_box(&mut buf.0), black_box(&sample), padding));
        });
    }
    group.finish();
}

fn decode(c: &mut Criterion) {
    let mut group = c.benchmark_group("decode");
    let mut buf = Aligned([0; 256]);
    for size in SIZES {
        let padding = wire::padding_for_size(size).expect("a valid size");
        let len = wire::encode_into(&mut buf.0, &sample(), padding).expect("fits");
        assert_eq!(wire::decode(&buf.0[..len]).expect("decodes"), sample());
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_with_input(BenchmarkId::from_parameter(size), &buf.0[..len], |b, message| {
            b.iter(|| wire::decode(black_box(message)));
        });
    }
    group.finish();
}

fn compact(c: &mut Criterion) {
    let mut group = c.benchmark_group("compact");
    let mut buf = Aligned([0xAA; 256]);
    let s = sample();
    let compact = wire::Compact {
        seq: s.seq,
        intended_ns: s.intended_ns,
    };
    group.throughput(Throughput::Bytes(wire::COMPACT_LEN as u64));
    group.bench_function("encode_compact_into/32", |b| {
        b.iter(|| wire::encode_compact_into(black_box(&mut buf.0), black_box(&compact), None));
    });
    let len = wire::encode_compact_into(&mut buf.0, &compact, None).expect("fits");
    let message = &buf.0[..len];
    assert_eq!(
        wire::decode_message(message).expect("decodes"),
        wire::Message::Compact(compact)
    );
    group.bench_function("decode_message/32", |b| {
        b.iter(|| wire::decode_message(black_box(message)));
    });
    group.finish();
}

criterion_group!(benches, encode_into, decode, compact);
criterion_main!(benches);
