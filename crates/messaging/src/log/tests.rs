//! The appenders and the term reader over a log on the heap ([`HeapLog`]): the code
//! publications and subscriptions run over their mapped logs, checked without a driver, and
//! under Miri (`make miri`). A small test bench plays the driver's part: it sets the
//! publication limit a window ahead of the reader and cleans each term the reader has left.

use std::sync::atomic::Ordering;

use super::appender::{concurrent_position, reserve_concurrent, ExclusiveTail, Reserved, TermLog};
use super::frame::{DataHeader, UNFRAGMENTED};
use super::memory::{HeapLog, LogMemory, RawLog};
use super::term_reader::{Frame, Malformed, Step, TermReader};
use crate::error::OfferError;

/// Short terms, so that a test goes through many rotations quickly (Miri included).
const TERM: i32 = 4096;
/// An MTU of 128 bytes: a message above 96 bytes is fragmented; the longest is TERM / 8.
const MAX_PAYLOAD: usize = 96;
const INITIAL_TERM_ID: i32 = -7;

/// What a reader got: each message's bytes with its header fields.
type Got = Vec<(Vec<u8>, DataHeader, i64)>;

/// A log on the heap, its appender constants, a reader, and the driver's two jobs.
struct Bench {
    heap: HeapLog,
    log: TermLog<RawLog>,
    reader: TermReader<RawLog>,
    /// Terms before this position are zeroed (cleaned behind the reader).
    cleaned_to: i64,
}

impl Bench {
    fn new(initial_term_id: i32) -> Bench {
        let heap = HeapLog::new(TERM, initial_term_id);
        let raw = heap.raw();
        Bench {
            log: TermLog::new(raw, initial_term_id, 42, 1001, MAX_PAYLOAD),
            reader: TermReader::new(raw, initial_term_id, 0),
            heap,
            cleaned_to: 0,
        }
    }

    /// The publication limit: half a term ahead of the reader, as the driver's window is.
    fn limit(&self) -> i64 {
        self.reader.position + i64::from(TERM / 2)
    }

    /// Writes `msg` where `r` says (what a publication does after its appender reserved).
    fn write(&self, r: Reserved, msg: &[u8], reserved: i64) {
        if msg.len() <= MAX_PAYLOAD {
            self.log
                .write_unfragmented(r.index, r.offset, r.term_id, msg, Some(reserved));
        } else {
            self.log
                .write_fragmented(r.index, r.offset, r.term_id, msg, Some(reserved));
        }
    }

    /// Reads everything published, reassembling as `Subscriber::poll` does, then cleans the
    /// terms the reader has left.
    fn drain(&mut self, got: &mut Got) {
        loop {
            let before = self.reader.position;
            let mut deliver = |bytes: &[u8], f: &Frame<'_>| {
                got.push((bytes.to_vec(), header_of(f), f.position()));
                Step::Continue
            };
            let n = self
                .reader
                .read(
                    64,
                    &mut |assembly, bytes, frame| {
                        if frame.flags() & UNFRAGMENTED == UNFRAGMENTED {
                            deliver(bytes, frame)
                        } else {
                            assembly.fragment(bytes, frame, &mut deliver)
                        }
                    },
                    &mut |_| {},
                )
                .expect("no malformed frame");
            if n == 0 && self.reader.position == before {
                break;
            }
        }
        while self.cleaned_to + i64::from(TERM) <= self.reader.position {
            let index = ((self.cleaned_to >> TERM.trailing_zeros()) % 3) as usize;
            self.heap.clean(index);
            self.cleaned_to += i64::from(TERM);
        }
    }
}

fn header_of(f: &Frame<'_>) -> DataHeader {
    DataHeader {
        frame_length: f.frame_length(),
        version: 0,
        flags: f.flags(),
        frame_type: 1,
        term_offset: f.term_offset(),
        session_id: f.session_id(),
        stream_id: f.stream_id(),
        term_id: f.term_id(),
        reserved_value: f.reserved_value(),
    }
}

/// Message `seq` of `len` bytes: bytes that depend on both.
fn message(seq: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| (seq as usize * 31 + i * 7) as u8).collect()
}

/// The sizes a test sends: around one frame, fragmented, the longest.
fn sizes(n: usize) -> Vec<usize> {
    let max = (TERM / 8) as usize;
    (0..n)
        .map(|i| [0, 5, MAX_PAYLOAD, MAX_PAYLOAD + 1, 300, max][i % 6] + i % 3)
        .map(|s| s.min(max))
        .collect()
}

/// How many messages a test sends: fewer under Miri, which is slow.
fn count() -> usize {
    if cfg!(miri) {
        300
    } else {
        6_000
    }
}

/// Sends `sizes` through `reserve` (retrying back-pressure after reading, and admin actions),
/// reads them all; every message arrives once, in order, intact, with its reserved value and a
/// header the C client would give, at the position the appender returned.
fn round_trip(
    bench: &mut Bench,
    sizes: &[usize],
    reserve: &mut dyn FnMut(&Bench, usize) -> Result<Reserved, OfferError>,
) {
    let mut got = Got::new();
    let mut positions = Vec::new();
    for (seq, &len) in sizes.iter().enumerate() {
        let msg = message(seq as u64, len);
        loop {
            match reserve(bench, len) {
                Ok(r) => {
                    bench.write(r, &msg, seq as i64);
                    positions.push(r.position);
                    break;
                }
                Err(OfferError::AdminAction) => {}
                Err(OfferError::BackPressured | OfferError::NotConnected) => bench.drain(&mut got),
                Err(e) => panic!("message {seq}: {e}"),
            }
        }
    }
    bench.drain(&mut got);
    assert_eq!(got.len(), sizes.len());
    for (seq, ((bytes, h, position), &len)) in got.iter().zip(sizes).enumerate() {
        assert_eq!(*bytes, message(seq as u64, len), "message {seq}");
        assert_eq!(h.reserved_value, seq as i64, "message {seq}'s reserved value");
        assert_eq!(
            (h.flags, h.frame_length),
            (UNFRAGMENTED, 32 + len as i32),
            "message {seq}"
        );
        assert_eq!((h.session_id, h.stream_id), (42, 1001));
        assert_eq!(*position, positions[seq], "message {seq}'s position");
    }
    let rotations = bench.reader.position / i64::from(TERM);
    assert!(rotations >= 10, "only {rotations} rotations");
}

#[test]
fn the_exclusive_appender_and_the_reader_agree_through_rotations() {
    let mut bench = Bench::new(INITIAL_TERM_ID);
    let mut tail = ExclusiveTail::new(&bench.log);
    round_trip(&mut bench, &sizes(count()), &mut |b, len| {
        tail.reserve(&b.log, b.limit(), len, b.log.framed(len))
    });
    assert_eq!(tail.position(), bench.reader.position);
}

#[test]
fn the_concurrent_appender_and_the_reader_agree_through_rotations() {
    let mut bench = Bench::new(INITIAL_TERM_ID);
    round_trip(&mut bench, &sizes(count()), &mut |b, len| {
        reserve_concurrent(&b.log, b.limit(), len, b.log.framed(len))
    });
    assert_eq!(concurrent_position(&bench.log), bench.reader.position);
}

/// Claims: committed ones are read with their reserved value, aborted ones are skipped as
/// padding.
#[test]
fn claims_commit_and_abort() {
    let mut bench = Bench::new(INITIAL_TERM_ID);
    let mut tail = ExclusiveTail::new(&bench.log);
    let mut got = Got::new();
    for i in 0..(count() as u64) {
        let r = loop {
            match tail.reserve(&bench.log, bench.limit(), 8, 64) {
                Ok(r) => break r,
                Err(OfferError::AdminAction) => {}
                Err(_) => bench.drain(&mut got),
            }
        };
        bench.log.claim(r.index, r.offset, r.term_id, 8);
        // SAFETY: the claimed frame is ours until committed or aborted.
        unsafe {
            bench.log.mem.write_payload(r.index, r.offset, &i.to_le_bytes());
            bench.log.mem.write_reserved_value(r.index, r.offset, -(i as i64));
        }
        if i % 2 == 0 {
            bench.log.commit(r.index, r.offset, 8);
        } else {
            bench.log.abort(r.index, r.offset, 8);
        }
    }
    bench.drain(&mut got);
    let expected: Vec<(Vec<u8>, i64)> = (0..count() as u64)
        .filter(|i| i % 2 == 0)
        .map(|i| (i.to_le_bytes().to_vec(), -(i as i64)))
        .collect();
    let seen: Vec<(Vec<u8>, i64)> = got.into_iter().map(|(b, h, _)| (b, h.reserved_value)).collect();
    assert_eq!(seen, expected);
}

/// A log whose term ids are near the end of their space (`term-id` close to
/// `init-term-id + 2^31`): both appenders fill the last term and then say
/// `MaxPositionExceeded`, every time, instead of rotating into a wrapped term id.
#[test]
fn the_end_of_the_term_id_space_is_max_position_exceeded() {
    for concurrent in [false, true] {
        let bench = Bench::new(0);
        // Move the log to its last term, as a publication started with `term-id` there would be.
        let last = i32::MAX;
        let count = last; // term count of the last term: 2^31 - 1
        let index = (count as u32 % 3) as usize;
        bench
            .log
            .mem
            .tail_store(index, i64::from(last) << 32, Ordering::Relaxed);
        bench.log.mem.active_term_count_store(count, Ordering::Release);
        let start = bench.log.position(last, 0);
        assert_eq!(start, bench.log.max_possible_position - i64::from(TERM));
        let mut tail = ExclusiveTail::new(&bench.log);
        let limit = i64::MAX;
        let mut accepted = 0;
        let outcome = loop {
            let r = if concurrent {
                reserve_concurrent(&bench.log, limit, 100, bench.log.framed(100))
            } else {
                tail.reserve(&bench.log, limit, 100, bench.log.framed(100))
            };
            match r {
                Ok(r) => {
                    bench.write(r, &[1; 100], 0);
                    accepted += 1;
                }
                Err(e) => break e,
            }
            assert!(accepted < 100, "never refused");
        };
        assert_eq!(outcome, OfferError::MaxPositionExceeded, "concurrent: {concurrent}");
        // 100 bytes: two fragments (128 + 64 log bytes).
        assert_eq!(
            accepted,
            TERM as usize / bench.log.framed(100),
            "the last term filled: concurrent {concurrent}"
        );
        // Shorter ones too: none may land in the padding that ends the stream.
        for len in [100, 8, 0] {
            let again = if concurrent {
                reserve_concurrent(&bench.log, limit, len, bench.log.framed(len))
            } else {
                tail.reserve(&bench.log, limit, len, bench.log.framed(len))
            };
            assert_eq!(
                again.err(),
                Some(OfferError::MaxPositionExceeded),
                "concurrent: {concurrent}, {len} bytes"
            );
        }
    }
}

/// Frames no Aeron publisher writes stop the reader with the position and the length found,
/// never a panic or a read out of the term; what came before is read.
#[test]
fn the_reader_stops_at_a_malformed_frame() {
    for (planted, at_end) in [(7, false), (TERM, false), (i32::MAX, false), (64, true)] {
        let mut bench = Bench::new(INITIAL_TERM_ID);
        let mut tail = ExclusiveTail::new(&bench.log);
        let r = tail.reserve(&bench.log, i64::MAX, 10, 64).unwrap();
        bench.write(r, &[9; 10], 0);
        // A frame at 64, or one 32 bytes before the term's end claiming 64.
        let offset = if at_end { TERM - 32 } else { 64 };
        let term = bench.heap.term_mut(0);
        term[offset as usize..offset as usize + 4].copy_from_slice(&planted.to_le_bytes());
        if at_end {
            // Padding from 64 to the frame before the end, so the reader gets there.
            let pad = TERM - 32 - 64;
            term[64..68].copy_from_slice(&pad.to_le_bytes());
        }
        let mut got = 0;
        let r = bench.reader.read(
            64,
            &mut |_, bytes, _| {
                assert_eq!(bytes, [9; 10]);
                got += 1;
                Step::Continue
            },
            &mut |_| {},
        );
        assert_eq!(
            r,
            Err(Malformed {
                position: i64::from(offset),
                frame_length: planted
            }),
            "planted {planted}"
        );
        assert_eq!(got, 1);
        assert_eq!(bench.reader.position, i64::from(offset), "read up to the planted frame");
    }
}

/// The reader hands a reassembled message over only when its fragments are contiguous: a
/// continuation after a gap (here: padding where the middle fragment was) drops the partial
/// message; the next whole message is read.
#[test]
fn a_gap_inside_a_fragmented_message_drops_it() {
    let mut bench = Bench::new(INITIAL_TERM_ID);
    let mut tail = ExclusiveTail::new(&bench.log);
    let long = message(1, 3 * MAX_PAYLOAD);
    let r = tail
        .reserve(&bench.log, i64::MAX, long.len(), bench.log.framed(long.len()))
        .unwrap();
    bench.write(r, &long, 0);
    let r2 = tail.reserve(&bench.log, i64::MAX, 10, bench.log.framed(10)).unwrap();
    bench.write(r2, &message(2, 10), 0);
    // Turn the middle fragment (at 128) into padding, as a receiver fills a loss.
    // SAFETY: the test owns the log; no one else writes it.
    unsafe { bench.log.mem.write_frame_type(0, 128, super::frame::HDR_TYPE_PAD) };
    let mut got = Got::new();
    bench.drain(&mut got);
    let bytes: Vec<Vec<u8>> = got.into_iter().map(|(b, _, _)| b).collect();
    assert_eq!(bytes, [message(2, 10)]);
}

/// Rounds of [`writers_and_a_reader_on_one_core`]: `MESSAGING_STRESS_ROUNDS`, else 3 (`make
/// conformance` runs 100).
fn stress_rounds() -> usize {
    std::env::var("MESSAGING_STRESS_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(miri) { 1 } else { 3 })
}

/// Writers and a reader on real threads all pinned to core 0, so the scheduler preempts each at
/// arbitrary points of the protocol; the reader plays the driver too (it cleans each term it
/// has left and moves the publication limit). `exclusive`: one exclusive writer; else three
/// concurrent ones racing for the tail and the rotations. Every message arrives once, whole,
/// each writer's in order, through hundreds of rotations.
fn writers_and_a_reader_on_one_core(exclusive: bool, per_writer: u64) {
    use std::sync::atomic::AtomicI64;
    let writers: u8 = if exclusive { 1 } else { 3 };
    let heap = HeapLog::new(TERM, INITIAL_TERM_ID);
    let raw = heap.raw();
    let reader_position = AtomicI64::new(0);
    let pin = || {
        let _ = core_affinity::set_for_current(core_affinity::CoreId { id: 0 });
    };
    // Writer w's message i: [w, i (8 bytes), filler], 9 to 400 bytes.
    let msg = |w: u8, i: u64| {
        let mut m = vec![w.wrapping_add(i as u8); 9 + (i as usize * 37 + usize::from(w) * 101) % 392];
        m[0] = w;
        m[1..9].copy_from_slice(&i.to_le_bytes());
        m
    };
    std::thread::scope(|s| {
        for w in 0..writers {
            let (reader_position, msg) = (&reader_position, &msg);
            s.spawn(move || {
                pin();
                let log = TermLog::new(raw, INITIAL_TERM_ID, 42, 1001, MAX_PAYLOAD);
                let mut tail = ExclusiveTail::new(&log);
                for i in 0..per_writer {
                    let m = msg(w, i);
                    loop {
                        let limit = reader_position.load(Ordering::Acquire) + i64::from(TERM / 2);
                        let framed = log.framed(m.len());
                        let r = if exclusive {
                            tail.reserve(&log, limit, m.len(), framed)
                        } else {
                            reserve_concurrent(&log, limit, m.len(), framed)
                        };
                        match r {
                            Ok(r) if m.len() <= MAX_PAYLOAD => {
                                log.write_unfragmented(r.index, r.offset, r.term_id, &m, None);
                                break;
                            }
                            Ok(r) => {
                                log.write_fragmented(r.index, r.offset, r.term_id, &m, None);
                                break;
                            }
                            Err(e) if e.is_retryable() => std::thread::yield_now(),
                            Err(e) => panic!("writer {w}, message {i}: {e}"),
                        }
                    }
                }
            });
        }
        pin();
        let mut reader = TermReader::new(raw, INITIAL_TERM_ID, 0);
        let mut next = vec![0u64; usize::from(writers)];
        let mut cleaned_to = 0i64;
        while next.iter().sum::<u64>() < u64::from(writers) * per_writer {
            let mut deliver = |bytes: &[u8], _: &Frame<'_>| {
                let w = usize::from(bytes[0]);
                let i = u64::from_le_bytes(bytes[1..9].try_into().unwrap());
                assert_eq!(i, next[w], "writer {w}: lost, repeated or out of order");
                assert!(
                    bytes == msg(w as u8, i).as_slice(),
                    "writer {w}'s message {i} corrupted"
                );
                next[w] += 1;
                Step::Continue
            };
            let n = reader
                .read(
                    16,
                    &mut |assembly, bytes, frame| {
                        if frame.flags() & UNFRAGMENTED == UNFRAGMENTED {
                            deliver(bytes, frame)
                        } else {
                            assembly.fragment(bytes, frame, &mut deliver)
                        }
                    },
                    &mut |_| {},
                )
                .expect("no malformed frame");
            while cleaned_to + i64::from(TERM) <= reader.position {
                // SAFETY: the reader has left this term and the limit keeps every writer out
                // of it until the reader's position moves on (published below).
                unsafe { raw.clean(((cleaned_to >> TERM.trailing_zeros()) % 3) as usize) };
                cleaned_to += i64::from(TERM);
            }
            reader_position.store(reader.position, Ordering::Release);
            if n == 0 {
                std::thread::yield_now();
            }
        }
        let rotations = reader.position / i64::from(TERM);
        assert!(rotations > 20 || cfg!(miri), "only {rotations} rotations");
    });
    drop(heap);
}

#[test]
fn concurrent_writers_and_a_reader_pinned_to_one_core() {
    for _ in 0..stress_rounds() {
        writers_and_a_reader_on_one_core(false, if cfg!(miri) { 30 } else { 3_000 });
    }
}

#[test]
fn an_exclusive_writer_and_a_reader_pinned_to_one_core() {
    for _ in 0..stress_rounds() {
        writers_and_a_reader_on_one_core(true, if cfg!(miri) { 60 } else { 6_000 });
    }
}
