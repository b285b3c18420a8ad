//! Proves the hot path allocates nothing in steady state: `Publication::offer`,
//! `Publication::try_claim` + `Claim::commit` and `Subscriber::poll` (with fragment reassembly),
//! through an embedded media driver over aeron:ipc, on one thread and on two.
//!
//! It lives alone in this test binary so its counting global allocator affects no other test.
//! Counting is per thread (a `const` thread-local, so reading it never allocates): the test
//! harness, the client conductor and the media driver allocate on their own threads while the
//! measured loops run, and must not count.
//!
//! The IPC term is 64 KiB, so every measured run crosses hundreds of term rotations (and the
//! back-pressure they cause); the warm-up before it may allocate (image attach, the reassembly
//! buffer, the first term rotation) and is not counted.
#![cfg(feature = "embedded-driver")]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::{Duration, Instant};

use common::driver;
use messaging::{
    Client, Concurrent, EmbeddedDriver, Exclusive, IdleStrategy, MessageHeader, OfferError, Publication,
    PublicationKind, Subscriber,
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

/// Allocations and bytes requested on this thread so far.
fn allocated() -> (u64, u64) {
    (ALLOCATIONS.with(Cell::get), BYTES.with(Cell::get))
}

/// Allocations and bytes requested on this thread since `before` (from [`allocated`]).
fn allocated_since(before: (u64, u64)) -> (u64, u64) {
    let now = allocated();
    (now.0 - before.0, now.1 - before.1)
}

/// Messages sent and received before counting starts.
const WARMUP: u64 = 2_000;
/// Messages counted.
const MEASURED: u64 = 100_000;
/// Every run must finish well within this (they take a few seconds in a debug build).
const DEADLINE: Duration = Duration::from_secs(120);
/// An unfragmented message: the probe's size.
const SMALL: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Send {
    /// `Publication::offer` (copies; fragments messages longer than one frame).
    Offer,
    /// `Publication::try_claim` + `Claim::commit` (zero-copy; one frame at most).
    Claim,
}

/// Adds a publication of this kind.
trait Add: PublicationKind {
    fn add(client: &Client, stream_id: i32) -> Publication<Self>;
}

impl Add for Exclusive {
    fn add(client: &Client, stream_id: i32) -> Publication<Self> {
        client
            .exclusive_publication("aeron:ipc", stream_id)
            .expect("publication")
    }
}

impl Add for Concurrent {
    fn add(client: &Client, stream_id: i32) -> Publication<Self> {
        client.publication("aeron:ipc", stream_id).expect("publication")
    }
}

/// One publisher, one subscriber on their own stream of a driver with 64 KiB IPC terms.
struct Stream<K: PublicationKind> {
    _client: Client,
    publisher: Publication<K>,
    subscriber: Subscriber,
}

fn stream<K: Add>(driver: &EmbeddedDriver, stream_id: i32) -> Stream<K> {
    let client = Client::connect(driver.dir()).expect("client connects");
    let subscriber = client.subscription("aeron:ipc", stream_id).expect("subscription");
    let publisher = K::add(&client, stream_id);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !publisher.is_connected() || subscriber.image_count() == 0 {
        assert!(Instant::now() < deadline, "the subscriber never connected");
        std::thread::sleep(Duration::from_millis(1));
    }
    Stream {
        _client: client,
        publisher,
        subscriber,
    }
}

/// A message longer than one frame, so `offer` fragments it and `poll` reassembles it.
fn fragmented_len<K: PublicationKind>(publisher: &Publication<K>) -> usize {
    let len = publisher.max_payload_length() * 2 + 100;
    assert!(len <= publisher.max_message_length(), "{len} does not fit one message");
    len
}

/// Writes `seq` into the first and the last 8 bytes of `msg`.
#[inline]
fn stamp(msg: &mut [u8], seq: u64) {
    let n = msg.len();
    msg[..8].copy_from_slice(&seq.to_le_bytes());
    msg[n - 8..].copy_from_slice(&seq.to_le_bytes());
}

/// One attempt to publish message `seq` of `scratch.len()` bytes.
#[inline]
fn try_send<K: PublicationKind>(
    publisher: &mut Publication<K>,
    how: Send,
    seq: u64,
    scratch: &mut [u8],
) -> Result<(), OfferError> {
    match how {
        Send::Offer => {
            stamp(scratch, seq);
            publisher.offer(scratch).map(drop)
        }
        Send::Claim => {
            let mut claim = publisher.try_claim(scratch.len())?;
            stamp(claim.buffer_mut(), seq);
            claim.commit();
            Ok(())
        }
    }
}

/// Checks every message: its length, and that it is the next one, whole.
struct Checker {
    len: usize,
    next: u64,
}

impl Checker {
    #[inline]
    fn on_message(&mut self, msg: &[u8], _header: &MessageHeader<'_>) {
        assert_eq!(msg.len(), self.len, "message {} has the wrong length", self.next);
        let first = u64::from_le_bytes(msg[..8].try_into().unwrap());
        let last = u64::from_le_bytes(msg[msg.len() - 8..].try_into().unwrap());
        assert_eq!(
            (first, last),
            (self.next, self.next),
            "a message was lost, repeated or torn"
        );
        self.next += 1;
    }
}

/// What one measured run counted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Counted {
    /// (allocations, bytes) on the publishing thread while it sent `MEASURED` messages.
    publisher: (u64, u64),
    /// (allocations, bytes) on the polling thread while it received them.
    subscriber: (u64, u64),
    /// Messages sent, warm-up included.
    sent: u64,
    /// Messages received in order, warm-up included.
    received: u64,
    /// Retryable refusals (back-pressure, term rotation, ...) while counting: those paths are
    /// measured too.
    refused: u64,
}

/// ConcurrentPublication and subscriber on the calling thread: send a burst until the log pushes back,
/// then poll what is there. Counts everything the thread does once the warm-up is through.
fn one_thread<K: PublicationKind>(s: &mut Stream<K>, how: Send, len: usize) -> Counted {
    let mut scratch = vec![0_u8; len];
    let mut checker = Checker { len, next: 0 };
    let mut idle: IdleStrategy = "yield".parse().unwrap();
    let total = WARMUP + MEASURED;
    let started = Instant::now();
    let mut sent = 0_u64;
    let mut refused = 0_u64;
    let mut before = None;
    while checker.next < total {
        if before.is_none() && checker.next >= WARMUP {
            before = Some(allocated());
            refused = 0;
        }
        let mut work = 0;
        while sent < total && work < 64 {
            match try_send(&mut s.publisher, how, sent, &mut scratch) {
                Ok(()) => {
                    sent += 1;
                    work += 1;
                }
                Err(e) if e.is_retryable() => {
                    refused += 1;
                    break;
                }
                Err(e) => panic!("{how:?} failed: {e}"),
            }
        }
        work += s
            .subscriber
            .poll(&mut |msg: &[u8], h: &MessageHeader<'_>| checker.on_message(msg, h), 64)
            .expect("the client has its driver");
        if work == 0 {
            assert!(started.elapsed() < DEADLINE, "stalled at {} of {total}", checker.next);
        }
        idle.idle(work);
    }
    let counted = allocated_since(before.expect("the warm-up ended"));
    Counted {
        publisher: counted,
        subscriber: counted,
        sent,
        received: checker.next,
        refused,
    }
}

/// The publisher on one thread, the subscriber on another, each idling with `backoff` when it
/// cannot make progress; each counts its own thread once its warm-up is through.
fn two_threads<K: PublicationKind>(s: &mut Stream<K>, how: Send, len: usize) -> Counted {
    let total = WARMUP + MEASURED;
    let Stream {
        publisher, subscriber, ..
    } = s;
    std::thread::scope(|scope| {
        let publishing = scope.spawn(move || {
            let mut scratch = vec![0_u8; len];
            let mut idle: IdleStrategy = "backoff".parse().unwrap();
            let started = Instant::now();
            let mut sent = 0_u64;
            let mut refused = 0_u64;
            let mut before = None;
            while sent < total {
                if before.is_none() && sent >= WARMUP {
                    before = Some(allocated());
                    refused = 0;
                }
                match try_send(publisher, how, sent, &mut scratch) {
                    Ok(()) => {
                        sent += 1;
                        idle.reset();
                    }
                    Err(e) if e.is_retryable() => {
                        refused += 1;
                        assert!(started.elapsed() < DEADLINE, "publisher stalled at {sent} of {total}");
                        idle.idle_once();
                    }
                    Err(e) => panic!("{how:?} failed: {e}"),
                }
            }
            (allocated_since(before.expect("the warm-up ended")), sent, refused)
        });
        let polling = scope.spawn(move || {
            let mut checker = Checker { len, next: 0 };
            let mut idle: IdleStrategy = "backoff".parse().unwrap();
            let started = Instant::now();
            let mut before = None;
            while checker.next < total {
                if before.is_none() && checker.next >= WARMUP {
                    before = Some(allocated());
                }
                let n = subscriber
                    .poll(&mut |msg: &[u8], h: &MessageHeader<'_>| checker.on_message(msg, h), 64)
                    .expect("the client has its driver");
                if n == 0 {
                    assert!(
                        started.elapsed() < DEADLINE,
                        "subscriber stalled at {} of {total}",
                        checker.next
                    );
                }
                idle.idle(n);
            }
            (allocated_since(before.expect("the warm-up ended")), checker.next)
        });
        let (publisher, sent, refused) = publishing.join().expect("the publishing thread");
        let (subscriber, received) = polling.join().expect("the polling thread");
        Counted {
            publisher,
            subscriber,
            sent,
            received,
            refused,
        }
    })
}

/// Runs `how` with 32 B messages and (for `offer`, which fragments) with messages of three
/// frames, each on a fresh stream, and asserts nothing was allocated and nothing lost.
fn assert_allocation_free<K: Add>(threads: &str, how: Send, run: fn(&mut Stream<K>, Send, usize) -> Counted) {
    let d = driver();
    let mut stream_id = 10;
    let mut sizes = vec![SMALL];
    if how == Send::Offer {
        sizes.push(0); // fragmented: the length depends on the publication's MTU
    }
    for size in sizes {
        stream_id += 1;
        let mut s = stream::<K>(&d, stream_id);
        let len = if size == 0 { fragmented_len(&s.publisher) } else { size };
        let started = Instant::now();
        let counted = run(&mut s, how, len);
        println!(
            "{threads}, {how:?} ({}), {len} B: {counted:?} in {:.2} s",
            K::NAME,
            started.elapsed().as_secs_f64()
        );
        let total = WARMUP + MEASURED;
        assert_eq!(
            (counted.sent, counted.received),
            (total, total),
            "every message is received once, in order"
        );
        assert!(counted.refused > 0, "the log never pushed back: use a smaller term");
        assert_eq!(
            (counted.publisher, counted.subscriber),
            ((0, 0), (0, 0)),
            "{threads}, {how:?} of {len} B allocated (allocations, bytes) on (publishing, polling) thread"
        );
    }
}

#[test]
fn the_counter_counts_this_thread_only() {
    let before = allocated();
    drop(std::hint::black_box(vec![0_u8; 100]));
    assert_eq!(allocated_since(before), (1, 100));
    let before = allocated();
    std::thread::spawn(|| drop(std::hint::black_box(vec![0_u8; 1 << 20])))
        .join()
        .unwrap();
    let (_, bytes) = allocated_since(before);
    assert!(bytes < 1 << 20, "another thread's 1 MiB counted here ({bytes} bytes)");
}

#[test]
fn offer_and_poll_on_one_thread_allocate_nothing() {
    assert_allocation_free::<Concurrent>("one thread", Send::Offer, one_thread);
}

#[test]
fn exclusive_offer_and_poll_on_one_thread_allocate_nothing() {
    assert_allocation_free::<Exclusive>("one thread", Send::Offer, one_thread);
}

#[test]
fn try_claim_commit_and_poll_on_one_thread_allocate_nothing() {
    assert_allocation_free::<Concurrent>("one thread", Send::Claim, one_thread);
}

#[test]
fn exclusive_try_claim_commit_and_poll_on_one_thread_allocate_nothing() {
    assert_allocation_free::<Exclusive>("one thread", Send::Claim, one_thread);
}

#[test]
fn offer_and_poll_on_two_threads_allocate_nothing() {
    assert_allocation_free::<Concurrent>("two threads", Send::Offer, two_threads);
}

#[test]
fn exclusive_offer_and_poll_on_two_threads_allocate_nothing() {
    assert_allocation_free::<Exclusive>("two threads", Send::Offer, two_threads);
}

#[test]
fn try_claim_commit_and_poll_on_two_threads_allocate_nothing() {
    assert_allocation_free::<Concurrent>("two threads", Send::Claim, two_threads);
}

#[test]
fn exclusive_try_claim_commit_and_poll_on_two_threads_allocate_nothing() {
    assert_allocation_free::<Exclusive>("two threads", Send::Claim, two_threads);
}

/// The send stamp (feature `tap`): a stamping publication's offer and claim allocate nothing
/// either (the clock read is the vDSO's `clock_gettime`).
#[cfg(feature = "tap")]
#[test]
fn stamped_offer_and_try_claim_allocate_nothing() {
    let d = driver();
    for (stream_id, how) in [(31, Send::Offer), (32, Send::Claim)] {
        let mut s = stream::<Exclusive>(&d, stream_id);
        s.publisher.stamp_send_time(Some(messaging::StampClock::Monotonic));
        let counted = one_thread(&mut s, how, SMALL);
        let total = WARMUP + MEASURED;
        assert_eq!((counted.sent, counted.received), (total, total), "stamped {how:?}");
        assert_eq!(
            counted.publisher,
            (0, 0),
            "stamped {how:?} allocated (allocations, bytes)"
        );
    }
}

/// The tap's recording (feature `tap`): a subscription that records every stamped message's
/// latency allocates nothing once its session's histograms exist (made at its first message,
/// in the warm-up), on one thread and on two, keeping its slowest messages included; the writer
/// thread asking for and taking the intervals meanwhile does not change that.
#[cfg(feature = "tap")]
#[test]
fn recording_polls_allocate_nothing() {
    let d = driver();
    // The default number of slowest kept, and two (a buffer of 8): the selection that keeps
    // them then runs many times an interval, so it is among what is counted.
    for (keep, first_stream) in [(messaging::tap::SLOWEST_DEFAULT, 41), (2, 43)] {
        recording_allocates_nothing(&d, keep, first_stream);
    }
}

#[cfg(feature = "tap")]
fn recording_allocates_nothing(d: &EmbeddedDriver, keep: usize, first_stream: i32) {
    let dir = std::env::temp_dir().join(format!("tap-alloc-{}-{keep}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let tap = messaging::tap::Tap::builder(&dir)
        .interval(Duration::from_millis(2))
        .slowest(keep)
        .start()
        .expect("tap starts");
    type Run = fn(&mut Stream<Exclusive>, Send, usize) -> Counted;
    let runs: [(&str, Run); 2] = [("one thread", one_thread), ("two threads", two_threads)];
    for (stream_id, (threads, run)) in (first_stream..).zip(runs) {
        let threads = format!("{threads}, {keep} slowest kept");
        let mut s = stream::<Exclusive>(d, stream_id);
        s.publisher.stamp_send_time(Some(messaging::StampClock::Monotonic));
        let figure = messaging::tap::RecordLatency::hop(format!("s{stream_id}"));
        s.subscriber.record_latency(&tap, figure).expect("records");
        let counted = run(&mut s, Send::Offer, SMALL);
        let total = WARMUP + MEASURED;
        assert_eq!((counted.sent, counted.received), (total, total), "{threads}");
        assert_eq!(
            (counted.publisher, counted.subscriber),
            ((0, 0), (0, 0)),
            "{threads}: stamping and recording allocated (allocations, bytes) on (publishing, polling) thread"
        );
    }
    let summary = tap.stop().expect("the tap wrote every interval");
    for f in &summary.figures {
        assert_eq!(
            (f.recorded, f.negative),
            (WARMUP + MEASURED, 0),
            "{}: every message recorded once, none negative on one host's monotonic clock",
            f.name
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A service's own figure (feature `tap`): `FigureRecorder::record` and `record_at` allocate
/// nothing once the recorder exists, values entering its slowest (rising, so each may) and the
/// writer taking its intervals meanwhile (an interval of 2 ms) included.
#[cfg(feature = "tap")]
#[test]
fn a_figure_recorder_allocates_nothing() {
    let dir = std::env::temp_dir().join(format!("tap-alloc-figure-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let tap = messaging::tap::Tap::builder(&dir)
        .interval(Duration::from_millis(2))
        .start()
        .expect("tap starts");
    // Its intervals are allocated, and mapped, here.
    let mut own = tap.figure("own").expect("a figure");
    let clock = tap.clock();
    let (mut values, start) = (0_i64, std::time::Instant::now());
    let before = allocated();
    // 20 ms: ten of the writer's intervals.
    while start.elapsed() < Duration::from_millis(20) {
        for _ in 0..1_000 {
            values += 1;
            if values % 2 == 0 {
                own.record(values);
            } else {
                own.record_at(values, clock.now_ns());
            }
        }
    }
    let counted = allocated_since(before);
    assert_eq!(counted, (0, 0), "recording allocated (allocations, bytes)");
    drop(own);
    let summary = tap.stop().expect("the tap wrote every interval");
    assert_eq!(summary.figures[0].recorded, values as u64, "every value recorded once");
    // The writer took intervals while the values were counted: the log has more than one.
    let intervals: usize = (summary.figures[0].files.iter())
        .map(|f| std::fs::read_to_string(f).expect("the figure's log"))
        .map(|text| {
            text.lines()
                .filter(|l| l.starts_with(|c: char| c.is_ascii_digit() || c == 'T'))
                .count()
        })
        .sum();
    assert!(intervals >= 3, "{intervals} interval lines in the log");
    std::fs::remove_dir_all(&dir).unwrap();
}
