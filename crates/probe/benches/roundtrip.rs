//! Round trips and throughput of the messaging stack next to honest baselines, in one run, so
//! every ratio compares figures taken seconds apart on the same two cores.
//!
//! | criterion id | one operation |
//! |---|---|
//! | `roundtrip/raw` | one cache-line ping-pong: the bench thread stores a counter, a pinned responder spins until it sees it and stores it + 1, the bench thread spins until it sees that (the floor: `latency_probe::measure::floor`) |
//! | `roundtrip/crossbeam` | one 8-byte value through a `crossbeam_channel::bounded(1)` pair and back, `try_send` / `try_recv` spinning on both sides |
//! | `roundtrip/messaging` | ping: `try_claim` + write + commit of a 32-byte message on `aeron:ipc` stream 1002; a pinned pong thread polls it and echoes it with `try_claim` on stream 1003; the bench thread polls until the echo arrives |
//! | `roundtrip/offer_poll` | `offer` of 32 bytes, then `poll` until it comes back, one publication and one subscription on one stream, one thread: the stack's own cost, no cross-core transfer |
//! | `roundtrip/c_client` | the `messaging` round trip through the same driver with the Aeron C client (rusteron-client 0.2.16 = Aeron 1.54.0) on both sides, streams 2002 / 2003: what the protocol costs without aeron-rs and this crate |
//! | `throughput/try_claim`, `throughput/offer`, `throughput/c_try_claim` | one 32-byte message from the bench thread (publisher) to a pinned subscriber thread that polls 256 fragments at a time, 64 MiB term; criterion's elements/s is messages/s |
//!
//! After the criterion cases the binary prints a summary:
//! - each round-trip case's p50 / p99 / p99.9 / max / mean from a fixed-count run of
//!   individually timed operations, each percentile as a ratio to the raw floor at the same
//!   percentile, next to criterion's batch median and its ratio to `raw`'s. The floor
//!   (`latency_probe::measure::floor::measure`) is measured right before and right after each case
//!   (its ratios use the two merged) and before and after everything else; a case whose own
//!   floor moved by more than `latency_probe::model::MOVED_FACTOR` (1.5x) is marked `!` and a warning is printed,
//!   as it is when the global floor moved: this VM's inter-core round trip changes regime
//!   (between ~130 ns and ~500 ns) for seconds at a time, so a ratio is only worth something
//!   when the floor held still around it;
//! - messages/s of nine throughput variants, median / min / max of fixed batches of 1M:
//!   messaging try_claim / offer, fragment limit 256 / 16, term 64 / 8 / 1 MiB; the C client's
//!   concurrent / exclusive publication; and two diagnostic "lagging subscriber" variants whose
//!   subscriber waits 10 µs after a poll that read fewer than 128 fragments, so the publisher
//!   runs ahead instead of writing the very cache line the subscriber is polling;
//! - each side's cost alone (publish ns/msg, then poll ns/msg, on one thread, no cross-core
//!   transfer), for messaging and the C client, the cost of an uncontended `std::sync::Mutex`
//!   `try_lock` + unlock, and of the timing itself (two clock readings).
//!
//! # Timing model
//!
//! - **What is timed:** round-trip cases: from just before the bench thread starts an
//!   operation until it has seen the answer, one operation in flight. The bench thread (the
//!   initiator, or the publisher) is pinned to the second-to-last core this process may use, the
//!   responder / subscriber thread to the last one (`messaging::available_cores`); both
//!   busy-spin with the CPU's spin-loop hint (Aeron's `spin` idle strategy). Throughput: from the
//!   first publish of a batch until the subscriber thread has counted its last message. Retries
//!   of retryable `try_claim` / `offer` failures (back pressure, admin action, aeron-rs's
//!   per-call lock held by its conductor) are inside the timed region.
//! - **Clock:** `std::time::Instant` / `latency_probe::sys::clock::now_ns`, both `CLOCK_MONOTONIC`
//!   through the vDSO (no syscall). Criterion (`iter_custom`) reads it once before and once
//!   after a batch of `iters` operations: its figure is the mean per operation within a batch
//!   (the clock's cost amortised away), the summary's "batch median" is the median of those
//!   per-batch means. The percentiles come from a separate fixed-count run that reads
//!   `now_ns` right before and right after every single operation and records the difference in
//!   an HdrHistogram: the same clock and the same two readings per round trip as
//!   `latency_probe::measure::floor::measure` and the probe's round trips, so a ratio to the floor divides
//!   out the machine's inter-core distance. Both sides of that ratio include the timing itself
//!   (two readings, printed as "timing itself"; ~30-40 ns here), so it is
//!   (operation + timing) / (floor + timing): it understates the operation's own ratio a little.
//! - **Excluded:** starting the embedded media driver (its idle strategy stays `backoff`, it is
//!   never spun), connecting clients, adding publications and subscriptions and waiting for them
//!   to connect, starting and pinning threads, criterion's warm-up and analysis, and the
//!   fixed-count run's warm-up operations (page-in, caches, branch predictors).
//!
//! Run: `cargo bench -p latency-probe --bench roundtrip` (about 40 s once built);
//! `cargo test --benches -p latency-probe` runs every case once plus a tiny summary, as a test.

use std::hint::spin_loop;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aeron_latency::messaging::{
    self, available_cores, Client, EmbeddedDriver, MessageHeader, OfferError, PinnedThread, Publisher, Subscriber,
    ThreadBuilder,
};
use criterion::{Criterion, Throughput};
use crossbeam_channel::{Receiver, Sender, TryRecvError, TrySendError};
use hdrhistogram::Histogram;
use latency_probe::measure::floor;
use latency_probe::measure::histogram::new_latency_histogram;
use latency_probe::measure::histogram::record_saturating;
use latency_probe::model::Stats;
use latency_probe::sys::clock::now_ns;

/// Message size of every messaging case (Aeron's Ping sample's).
const MSG_LEN: usize = 32;
const CHANNEL: &str = "aeron:ipc";
const PING_STREAM: i32 = 1002;
const PONG_STREAM: i32 = 1003;
const OFFER_POLL_STREAM: i32 = 1004;
/// Throughput variants use this stream id plus their index (a fresh log each).
const THROUGHPUT_STREAM: i32 = 1010;
/// The driver's IPC term, used by the round trips. A publisher may run half a term ahead of the
/// subscriber position the driver last saw, and the driver (backing off, sharing two cores with
/// two spinning threads) only moves that limit when it gets to run: with 1 MiB (7,168 round trips
/// of runway, 1.4 ms at 190 ns) the C client's faster round trip hit back pressure millions of
/// times per run here; 16 MiB gives 20+ ms of runway.
const ROUND_TRIP_TERM: usize = 16 << 20;
/// The term of `offer_poll` and the throughput streams (set per channel: `term-length=`). Half
/// a term, 32 MiB = 524,288 frames, is how far a publisher may run ahead of the position the
/// driver last saw its subscriber at; with the driver backing off up to 1 ms between duty cycles
/// a 1 MiB term (8,192 frames) caps throughput (see the `1 MiB term` variant).
const BIG_TERM: usize = 64 << 20;
/// Fragments per poll in the round-trip loops (one message is ever in flight).
const RT_FRAGMENT_LIMIT: usize = 16;
/// Fragments per poll for the throughput subscriber.
const TP_FRAGMENT_LIMIT: usize = 256;
/// A spin loop that has made no progress for this long panics instead of hanging the run.
const STUCK: Duration = Duration::from_secs(10);

/// Criterion settings: the whole run stays well under two minutes.
const SAMPLE_SIZE: usize = 10;
const WARM_UP: Duration = Duration::from_millis(300);
const MEASUREMENT: Duration = Duration::from_millis(1200);

// ---------------------------------------------------------------------------------------------
// Run plan.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `cargo bench`: full criterion runs and the full summary.
    Bench,
    /// `cargo test --benches`: criterion runs each case once; the summary is tiny.
    Test,
    /// `--list`: criterion only prints names; nothing starts.
    List,
}

impl Mode {
    /// The same rule criterion applies to its arguments.
    fn from_args() -> Self {
        let args: Vec<String> = std::env::args().collect();
        let has = |a: &str| args.iter().any(|x| x == a);
        if has("--list") {
            Mode::List
        } else if has("--bench") && !has("--test") {
            Mode::Bench
        } else {
            Mode::Test
        }
    }
}

/// Sizes of the summary's own (non-criterion) measurements.
#[derive(Debug, Clone, Copy)]
struct Plan {
    floor_each: Duration,
    /// The floor measured right before and right after each round-trip case.
    local_floor: Duration,
    warmup_ops: u64,
    measured_ops: u64,
    batch: u64,
    batches: usize,
    split_messages: u64,
    split_rounds: usize,
}

impl Plan {
    fn for_mode(mode: Mode) -> Self {
        match mode {
            Mode::Bench => Plan {
                floor_each: Duration::from_millis(500),
                local_floor: Duration::from_millis(200),
                warmup_ops: 20_000,
                measured_ops: 200_000,
                batch: 1_000_000,
                batches: 5,
                split_messages: 200_000,
                split_rounds: 5,
            },
            Mode::Test | Mode::List => Plan {
                floor_each: Duration::from_millis(20),
                local_floor: Duration::from_millis(10),
                warmup_ops: 100,
                measured_ops: 1_000,
                batch: 10_000,
                batches: 1,
                split_messages: 1_000,
                split_rounds: 1,
            },
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers.

/// Spins until `done()` holds; panics naming `what` after [`STUCK`] without progress, so a dead
/// partner thread fails the run instead of hanging it. The clock is read only every 65,536
/// spins.
#[inline]
fn spin_until(what: &str, mut done: impl FnMut() -> bool) {
    let mut spins: u32 = 0;
    let mut since: Option<Instant> = None;
    while !done() {
        spin_loop();
        spins = spins.wrapping_add(1);
        if spins & 0xFFFF == 0 && since.get_or_insert_with(Instant::now).elapsed() > STUCK {
            panic!("{what}: no progress for {} s", STUCK.as_secs());
        }
    }
}

/// Retried publish failures, by kind.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Retries {
    back_pressured: u64,
    admin_action: u64,
    not_connected: u64,
}

impl Retries {
    #[inline]
    fn add(&mut self, o: Retries) {
        self.back_pressured += o.back_pressured;
        self.admin_action += o.admin_action;
        self.not_connected += o.not_connected;
    }
}

impl std::fmt::Display for Retries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "back_pressured {} admin_action {} not_connected {}",
            self.back_pressured, self.admin_action, self.not_connected
        )
    }
}

/// Publishes one message, retrying retryable failures; returns the retries it took.
#[inline]
fn publish(publ: &mut Publisher, msg: &[u8; MSG_LEN], use_offer: bool) -> Retries {
    let mut retries = Retries::default();
    let stream = publ.stream_id();
    let mut outcome = |r: Result<(), OfferError>| match r {
        Ok(()) => true,
        Err(OfferError::BackPressured) => {
            retries.back_pressured += 1;
            false
        }
        Err(OfferError::AdminAction) => {
            retries.admin_action += 1;
            false
        }
        Err(OfferError::NotConnected) => {
            retries.not_connected += 1;
            false
        }
        Err(e) => panic!("publishing on stream {stream}: {e}"),
    };
    if use_offer {
        spin_until("offer", || outcome(publ.offer(msg).map(drop)));
    } else {
        spin_until("try_claim", || {
            outcome(publ.try_claim(MSG_LEN).map(|mut c| {
                c.buffer_mut().copy_from_slice(msg);
                c.commit();
            }))
        });
    }
    retries
}

/// A 32-byte message carrying `seq` in its first 8 bytes.
#[inline]
fn message(seq: u64) -> [u8; MSG_LEN] {
    let mut m = [0u8; MSG_LEN];
    m[..8].copy_from_slice(&seq.to_le_bytes());
    m
}

#[inline]
fn seq_of(msg: &[u8]) -> u64 {
    msg.get(..8)
        .and_then(|b| b.try_into().ok())
        .map_or(u64::MAX, u64::from_le_bytes)
}

/// Waits (sleeping) until `ready` holds, or panics naming `what` after [`STUCK`].
fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let started = Instant::now();
    while !ready() {
        assert!(
            started.elapsed() < STUCK,
            "{what}: not ready after {} s",
            STUCK.as_secs()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn spawn_pinned<T: Send + 'static>(
    name: &str,
    core: Option<usize>,
    f: impl FnOnce() -> T + Send + 'static,
) -> PinnedThread<T> {
    ThreadBuilder::new()
        .name(name)
        .affinity_opt(core)
        .spawn(f)
        .unwrap_or_else(|e| panic!("starting thread {name}: {e}"))
}

/// Where the bench thread runs. It is pinned to the initiator core only while it measures:
/// threads inherit their creator's affinity, so the driver, the aeron-rs conductors and the
/// responders are all started while it may run anywhere (else they would all land on, and
/// `ThreadBuilder` would refuse any core but, the initiator's).
#[derive(Debug, Clone)]
struct Placement {
    initiator: Option<usize>,
    responder: Option<usize>,
    all: Vec<usize>,
}

impl Placement {
    /// The last two cores this process may use (core 0 usually takes most interrupts).
    fn new() -> Self {
        let all = available_cores();
        let (initiator, responder) = match all.as_slice() {
            [.., a, b] => (Some(*a), Some(*b)),
            _ => (None, None),
        };
        Placement {
            initiator,
            responder,
            all,
        }
    }

    /// Pins the calling (bench) thread to the initiator core; false when that failed or there
    /// is none.
    fn hot(&self) -> bool {
        self.initiator
            .is_some_and(|id| core_affinity::set_for_current(core_affinity::CoreId { id }))
    }

    /// Runs `f` with the calling thread allowed on every core, then pins it again.
    fn unpinned<T>(&self, f: impl FnOnce() -> T) -> T {
        set_affinity(&self.all);
        let r = f();
        self.hot();
        r
    }
}

/// Sets the calling thread's CPU affinity to `cores`.
fn set_affinity(cores: &[usize]) -> bool {
    if cores.is_empty() {
        return false;
    }
    // SAFETY: `cpu_set_t` is a plain bit array for which all zeroes is the valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cores.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
        // SAFETY: `c` is below CPU_SETSIZE, so the bit is inside `set`, which we own.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: pid 0 is the calling thread; `set` is a valid, initialised `cpu_set_t` of the size
    // passed, borrowed for the duration of the call; the kernel only reads it.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0 }
}

fn connect(dir: &Path) -> Client {
    latency_probe::run::connect(dir).unwrap_or_else(|e| panic!("connecting to the driver in {}: {e}", dir.display()))
}

fn big_term_channel() -> String {
    format!("{CHANNEL}?term-length={BIG_TERM}")
}

/// Criterion's per-batch timings as handed back by `iter_custom`, to report the median per
/// operation next to the percentiles (criterion keeps its own estimates on disk only).
#[derive(Debug, Default)]
struct Batches(Vec<(u64, Duration)>);

impl Batches {
    /// Median over the last [`SAMPLE_SIZE`] batches (criterion's measured samples; earlier
    /// ones are its warm-up) of nanoseconds per operation.
    fn median_ns(&self) -> Option<f64> {
        let tail = &self.0[self.0.len().saturating_sub(SAMPLE_SIZE)..];
        let mut per_op: Vec<f64> = tail
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, d)| d.as_nanos() as f64 / *n as f64)
            .collect();
        if per_op.is_empty() {
            return None;
        }
        per_op.sort_by(f64::total_cmp);
        Some(per_op[per_op.len() / 2])
    }
}

/// One operation the bench thread starts and waits for.
trait Op {
    fn op(&mut self);
}

/// Criterion: `iters` operations timed as one batch.
fn time_batch(case: &mut impl Op, iters: u64, batches: &mut Batches) -> Duration {
    let t0 = Instant::now();
    for _ in 0..iters {
        case.op();
    }
    let d = t0.elapsed();
    batches.0.push((iters, d));
    d
}

/// The summary's fixed-count run: every operation timed on its own, like the floor's.
fn percentiles(case: &mut impl Op, plan: &Plan) -> Histogram<u64> {
    for _ in 0..plan.warmup_ops {
        case.op();
    }
    let mut h = new_latency_histogram();
    for _ in 0..plan.measured_ops {
        let t0 = now_ns();
        case.op();
        let t1 = now_ns();
        record_saturating(&mut h, (t1 - t0).max(0) as u64);
    }
    h
}

// ---------------------------------------------------------------------------------------------
// raw: the cache-line ping-pong of `latency_probe::measure::floor`, as an `Op`.

struct Raw {
    line: Arc<floor::Line>,
    next: u64,
    responder: Option<PinnedThread<()>>,
}

impl Raw {
    fn start(core: Option<usize>) -> Self {
        let line = Arc::new(floor::Line::default());
        let l2 = line.clone();
        let responder = spawn_pinned("raw-pong", core, move || floor::respond(&l2));
        Raw {
            line,
            next: 1,
            responder: Some(responder),
        }
    }
}

impl Op for Raw {
    #[inline]
    fn op(&mut self) {
        let next = self.next;
        self.line.0.store(next, Ordering::Release);
        spin_until("raw", || self.line.0.load(Ordering::Acquire) == next + 1);
        self.next += 2;
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        self.line.0.store(floor::STOP, Ordering::Release);
        if let Some(t) = self.responder.take() {
            let _ = t.join();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// crossbeam: bounded(1) channel pair.

struct Crossbeam {
    tx: Option<Sender<u64>>,
    rx: Receiver<u64>,
    seq: u64,
    responder: Option<PinnedThread<()>>,
}

impl Crossbeam {
    fn start(core: Option<usize>) -> Self {
        let (tx, rx_there) = crossbeam_channel::bounded::<u64>(1);
        let (tx_back, rx) = crossbeam_channel::bounded::<u64>(1);
        let responder = spawn_pinned("crossbeam-pong", core, move || loop {
            match rx_there.try_recv() {
                Ok(mut v) => loop {
                    match tx_back.try_send(v) {
                        Ok(()) => break,
                        Err(TrySendError::Full(x)) => {
                            v = x;
                            spin_loop();
                        }
                        Err(TrySendError::Disconnected(_)) => return,
                    }
                },
                Err(TryRecvError::Empty) => spin_loop(),
                Err(TryRecvError::Disconnected) => return,
            }
        });
        Crossbeam {
            tx: Some(tx),
            rx,
            seq: 0,
            responder: Some(responder),
        }
    }
}

impl Op for Crossbeam {
    #[inline]
    fn op(&mut self) {
        self.seq += 1;
        let Some(tx) = &self.tx else { return };
        let mut v = self.seq;
        spin_until("crossbeam send", || match tx.try_send(v) {
            Ok(()) => true,
            Err(TrySendError::Full(x)) => {
                v = x;
                false
            }
            Err(TrySendError::Disconnected(_)) => panic!("crossbeam: the responder is gone"),
        });
        let want = self.seq;
        spin_until("crossbeam echo", || match self.rx.try_recv() {
            Ok(got) => {
                assert_eq!(got, want, "crossbeam: echo out of order");
                true
            }
            Err(TryRecvError::Empty) => false,
            Err(TryRecvError::Disconnected) => panic!("crossbeam: the responder is gone"),
        });
    }
}

impl Drop for Crossbeam {
    fn drop(&mut self) {
        // Disconnecting the forward channel ends the responder.
        self.tx = None;
        if let Some(t) = self.responder.take() {
            let _ = t.join();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// messaging: ping / pong over the embedded driver.

/// What the pong thread did.
#[derive(Debug, Default, Clone, Copy)]
struct PongReport {
    echoed: u64,
    claim_retries: Retries,
    pub_lock_busy: u64,
    sub_lock_busy: u64,
}

struct Ping {
    publ: Publisher,
    sub: Subscriber,
    seq: u64,
    claim_retries: Retries,
    stop: Arc<AtomicBool>,
    pong: Option<PinnedThread<PongReport>>,
    report: Option<PongReport>,
    _client: Client,
}

impl Ping {
    fn start(dir: &Path, core: Option<usize>) -> Self {
        // Two clients, as ping and pong would be two processes.
        let client = connect(dir);
        let pong_client = connect(dir);
        let publ = client.publication(CHANNEL, PING_STREAM).expect("ping publication");
        let sub = client.subscription(CHANNEL, PONG_STREAM).expect("pong subscription");
        let mut pong_sub = pong_client
            .subscription(CHANNEL, PING_STREAM)
            .expect("ping subscription");
        let mut pong_publ = pong_client.publication(CHANNEL, PONG_STREAM).expect("pong publication");
        wait_for("messaging streams", || {
            publ.is_connected() && sub.is_connected() && pong_sub.is_connected() && pong_publ.is_connected()
        });
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let pong = spawn_pinned("messaging-pong", core, move || {
            let mut r = PongReport::default();
            while !stop2.load(Ordering::Relaxed) {
                let n = pong_sub.poll(
                    &mut |msg: &[u8], _: &MessageHeader| {
                        let m: &[u8; MSG_LEN] = msg.try_into().expect("a 32-byte ping");
                        r.claim_retries.add(publish(&mut pong_publ, m, false));
                        r.echoed += 1;
                    },
                    RT_FRAGMENT_LIMIT,
                );
                if n == 0 {
                    spin_loop();
                }
            }
            r.pub_lock_busy = pong_publ.busy_count();
            r.sub_lock_busy = pong_sub.busy_count();
            drop((pong_sub, pong_publ, pong_client));
            r
        });
        Ping {
            publ,
            sub,
            seq: 0,
            claim_retries: Retries::default(),
            stop,
            pong: Some(pong),
            report: None,
            _client: client,
        }
    }

    /// Stops and joins pong; returns what both sides saw.
    fn finish(&mut self) -> String {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.pong.take() {
            self.report = Some(t.join().expect("the pong thread panicked"));
        }
        let r = self.report.unwrap_or_default();
        format!(
            "echoed {}; retried claims: ping {}, pong {}; aeron-rs lock busy: ping pub {} sub {}, pong pub {} sub {}",
            r.echoed,
            self.claim_retries,
            r.claim_retries,
            self.publ.busy_count(),
            self.sub.busy_count(),
            r.pub_lock_busy,
            r.sub_lock_busy
        )
    }
}

impl Op for Ping {
    #[inline]
    fn op(&mut self) {
        self.seq += 1;
        let seq = self.seq;
        self.claim_retries.add(publish(&mut self.publ, &message(seq), false));
        let mut got = false;
        let sub = &mut self.sub;
        spin_until("messaging: waiting for the echo", || {
            sub.poll(
                &mut |msg: &[u8], _: &MessageHeader| {
                    if seq_of(msg) == seq {
                        got = true;
                    }
                },
                RT_FRAGMENT_LIMIT,
            );
            got
        });
    }
}

impl Drop for Ping {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

// ---------------------------------------------------------------------------------------------
// offer_poll: one thread offers and polls its own stream.

struct OfferPoll {
    publ: Publisher,
    sub: Subscriber,
    seq: u64,
    retries: Retries,
    _client: Client,
}

impl OfferPoll {
    fn start(dir: &Path) -> Self {
        let client = connect(dir);
        let channel = big_term_channel();
        let sub = client
            .subscription(&channel, OFFER_POLL_STREAM)
            .expect("offer_poll subscription");
        let publ = client
            .publication(&channel, OFFER_POLL_STREAM)
            .expect("offer_poll publication");
        wait_for("offer_poll stream", || publ.is_connected() && sub.is_connected());
        OfferPoll {
            publ,
            sub,
            seq: 0,
            retries: Retries::default(),
            _client: client,
        }
    }

    fn notes(&self) -> String {
        format!(
            "retried offers: {}; aeron-rs lock busy: pub {} sub {}",
            self.retries,
            self.publ.busy_count(),
            self.sub.busy_count()
        )
    }
}

impl Op for OfferPoll {
    #[inline]
    fn op(&mut self) {
        self.seq += 1;
        let seq = self.seq;
        self.retries.add(publish(&mut self.publ, &message(seq), true));
        let mut got = false;
        let sub = &mut self.sub;
        spin_until("offer_poll: polling back", || {
            sub.poll(
                &mut |msg: &[u8], _: &MessageHeader| {
                    if seq_of(msg) == seq {
                        got = true;
                    }
                },
                RT_FRAGMENT_LIMIT,
            );
            got
        });
    }
}

// ---------------------------------------------------------------------------------------------
// throughput: the bench thread publishes, a pinned thread subscribes and counts.

#[repr(align(128))]
struct Counter(AtomicU64);

/// What the subscriber thread saw.
#[derive(Debug, Default, Clone, Copy)]
struct SubReport {
    received: u64,
    /// Messages whose sequence number was not the one expected (lost or reordered).
    gaps: u64,
    polls: u64,
    empty_polls: u64,
    lock_busy: u64,
}

/// One throughput configuration.
#[derive(Debug, Clone, Copy)]
struct Variant {
    use_offer: bool,
    fragment_limit: usize,
    term: Option<usize>,
    /// The subscriber lets the publisher run ahead ([`lag`]).
    lagging: bool,
}

/// A lagging subscriber waits this long after a poll that read fewer than [`LAG_BELOW`]
/// fragments, so the publisher runs ahead and the subscriber reads lines the publisher has
/// left, instead of the line it is writing next (the throughput diagnosis).
const LAG: Duration = Duration::from_micros(10);
const LAG_BELOW: usize = TP_FRAGMENT_LIMIT / 2;

/// The lagging subscriber's wait (a spin on the clock: no syscall, the core stays busy).
#[inline]
fn lag(read: usize) {
    if read < LAG_BELOW {
        let t = Instant::now();
        while t.elapsed() < LAG {
            spin_loop();
        }
    }
}

/// A publisher (the bench thread) and a pinned subscriber thread.
trait Flowing {
    /// Publishes `n` messages back to back and waits until the subscriber has counted them all.
    fn send(&mut self, n: u64);
    /// Stops the subscriber; what both sides saw, in words.
    fn finish(&mut self) -> String;
}

/// `batches` batches of `batch` messages: messages/s of each.
fn rates(flow: &mut dyn Flowing, batch: u64, batches: usize) -> Vec<f64> {
    (0..batches)
        .map(|_| {
            let t0 = Instant::now();
            flow.send(batch);
            batch as f64 / t0.elapsed().as_secs_f64()
        })
        .collect()
}

struct Flow {
    publ: Publisher,
    use_offer: bool,
    sent: u64,
    retries: Retries,
    received: Arc<Counter>,
    stop: Arc<AtomicBool>,
    subscriber: Option<PinnedThread<SubReport>>,
    report: Option<SubReport>,
    _client: Client,
}

impl Flow {
    fn start(dir: &Path, core: Option<usize>, index: usize, v: Variant) -> Self {
        let client = connect(dir);
        let sub_client = connect(dir);
        let channel = v
            .term
            .map_or_else(|| CHANNEL.to_owned(), |t| format!("{CHANNEL}?term-length={t}"));
        let stream = THROUGHPUT_STREAM + index as i32;
        let mut sub = sub_client
            .subscription(&channel, stream)
            .expect("throughput subscription");
        let publ = client.publication(&channel, stream).expect("throughput publication");
        wait_for("throughput stream", || publ.is_connected() && sub.is_connected());
        let received = Arc::new(Counter(AtomicU64::new(0)));
        let stop = Arc::new(AtomicBool::new(false));
        let (received2, stop2) = (received.clone(), stop.clone());
        let (limit, lagging) = (v.fragment_limit, v.lagging);
        let subscriber = spawn_pinned("tp-sub", core, move || {
            let mut r = SubReport::default();
            let mut expected = 1u64;
            loop {
                let n = sub.poll(
                    &mut |msg: &[u8], _: &MessageHeader| {
                        let seq = seq_of(msg);
                        if seq != expected {
                            r.gaps += 1;
                        }
                        expected = seq.wrapping_add(1);
                        r.received += 1;
                    },
                    limit,
                );
                r.polls += 1;
                if n > 0 {
                    received2.0.store(r.received, Ordering::Release);
                } else {
                    r.empty_polls += 1;
                    if stop2.load(Ordering::Relaxed) {
                        break;
                    }
                    spin_loop();
                }
                if lagging {
                    lag(n);
                }
            }
            r.lock_busy = sub.busy_count();
            drop((sub, sub_client));
            r
        });
        Flow {
            publ,
            use_offer: v.use_offer,
            sent: 0,
            retries: Retries::default(),
            received,
            stop,
            subscriber: Some(subscriber),
            report: None,
            _client: client,
        }
    }
}

impl Flowing for Flow {
    #[inline]
    fn send(&mut self, n: u64) {
        for _ in 0..n {
            self.sent += 1;
            self.retries
                .add(publish(&mut self.publ, &message(self.sent), self.use_offer));
        }
        let (sent, received) = (self.sent, &self.received);
        spin_until("throughput: waiting for the subscriber", || {
            received.0.load(Ordering::Acquire) >= sent
        });
    }

    fn finish(&mut self) -> String {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.subscriber.take() {
            self.report = Some(t.join().expect("the subscriber thread panicked"));
        }
        let r = self.report.unwrap_or_default();
        let per_poll = r.received as f64 / (r.polls - r.empty_polls).max(1) as f64;
        format!(
            "sent {} received {} gaps {}; retried: {}; {:.1} msgs per non-empty poll, {} of {} polls empty; \
             aeron-rs lock busy: pub {} sub {}",
            self.sent,
            r.received,
            r.gaps,
            self.retries,
            per_poll,
            r.empty_polls,
            r.polls,
            self.publ.busy_count(),
            r.lock_busy
        )
    }
}

impl Drop for Flow {
    fn drop(&mut self) {
        let _ = Flowing::finish(self);
    }
}

// ---------------------------------------------------------------------------------------------
// The Aeron C client (rusteron-client 0.2.16, Aeron 1.54.0, statically linked beside the
// embedded driver), the same round trip and throughput through the same driver: what the
// protocol costs without aeron-rs and without our layer.

/// Ping -> pong and pong -> ping streams of the C-client round trip.
const C_PING_STREAM: i32 = 2002;
const C_PONG_STREAM: i32 = 2003;
/// C-client throughput streams: this plus the variant's index.
const C_THROUGHPUT_STREAM: i32 = 2010;

/// A C client: its context must outlive it (fields drop in order).
struct CClient {
    aeron: rusteron_client::Aeron,
    _context: rusteron_client::AeronContext,
}

impl CClient {
    fn connect(dir: &Path) -> Self {
        let dir = std::ffi::CString::new(dir.to_string_lossy().into_owned()).expect("a path without NUL");
        let context = rusteron_client::AeronContext::new().expect("C client context");
        context.set_dir(&dir).expect("C client dir");
        context.set_pre_touch_mapped_memory(true).expect("C client pre-touch");
        let aeron = rusteron_client::Aeron::new(&context).expect("C client");
        aeron.start().expect("starting the C client");
        CClient {
            aeron,
            _context: context,
        }
    }

    fn publication(&self, channel: &str, stream: i32) -> rusteron_client::AeronPublication {
        let c = std::ffi::CString::new(channel).expect("a channel without NUL");
        self.aeron
            .async_add_publication(&c, stream)
            .and_then(|a| a.poll_blocking(STUCK))
            .unwrap_or_else(|e| panic!("C publication {channel} {stream}: {e:?}"))
    }

    fn exclusive_publication(&self, channel: &str, stream: i32) -> rusteron_client::AeronExclusivePublication {
        let c = std::ffi::CString::new(channel).expect("a channel without NUL");
        self.aeron
            .async_add_exclusive_publication(&c, stream)
            .and_then(|a| a.poll_blocking(STUCK))
            .unwrap_or_else(|e| panic!("C exclusive publication {channel} {stream}: {e:?}"))
    }

    fn subscription(&self, channel: &str, stream: i32) -> rusteron_client::AeronSubscription {
        let c = std::ffi::CString::new(channel).expect("a channel without NUL");
        self.aeron
            .async_add_subscription(
                &c,
                stream,
                rusteron_client::Handlers::NONE,
                rusteron_client::Handlers::NONE,
            )
            .and_then(|a| a.poll_blocking(STUCK))
            .unwrap_or_else(|e| panic!("C subscription {channel} {stream}: {e:?}"))
    }
}

/// A C publication of either kind, publishing like [`publish`].
trait CPublish {
    fn is_up(&self) -> bool;
    /// One message, retried while retryable; returns the retries.
    fn send(&self, msg: &[u8; MSG_LEN], use_offer: bool) -> Retries;
}

macro_rules! c_publish {
    ($t:ty) => {
        impl CPublish for $t {
            fn is_up(&self) -> bool {
                self.is_connected()
            }

            #[inline]
            fn send(&self, msg: &[u8; MSG_LEN], use_offer: bool) -> Retries {
                use rusteron_client::AeronOfferError as E;
                let mut retries = Retries::default();
                let mut outcome = |r: Result<(), E>| match r {
                    Ok(()) => true,
                    Err(E::BackPressured) => {
                        retries.back_pressured += 1;
                        false
                    }
                    Err(E::AdminAction) => {
                        retries.admin_action += 1;
                        false
                    }
                    Err(E::NotConnected) => {
                        retries.not_connected += 1;
                        false
                    }
                    Err(e) => panic!("C publish: {e:?}"),
                };
                if use_offer {
                    spin_until("C offer", || outcome(self.offer(msg).map(drop)));
                } else {
                    spin_until("C try_claim", || {
                        outcome(self.try_claim_owned(MSG_LEN).map(|mut c| {
                            c.data().copy_from_slice(msg);
                            c.commit().expect("C commit");
                        }))
                    });
                }
                retries
            }
        }
    };
}
c_publish!(rusteron_client::AeronPublication);
c_publish!(rusteron_client::AeronExclusivePublication);

/// Starts a thread that builds its own C client (the C types are not `Send`) while it may run
/// anywhere, so the client's conductor thread is not pinned with it, then pins itself to
/// `core` and runs `body`. Returns once the thread's streams are added.
fn spawn_c_thread<T: Send + 'static, S: 'static>(
    name: &str,
    dir: &Path,
    core: Option<usize>,
    setup: impl FnOnce(&CClient) -> S + Send + 'static,
    body: impl FnOnce(S) -> T + Send + 'static,
) -> PinnedThread<T> {
    let dir = dir.to_owned();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let t = spawn_pinned(name, None, move || {
        let client = CClient::connect(&dir);
        let state = setup(&client);
        if let Some(id) = core {
            assert!(
                core_affinity::set_for_current(core_affinity::CoreId { id }),
                "pinning to core {id}"
            );
        }
        let _ = ready_tx.send(());
        let r = body(state);
        drop(client);
        r
    });
    ready_rx.recv_timeout(STUCK).expect("the C thread did not get ready");
    t
}

struct CPing {
    publ: rusteron_client::AeronPublication,
    sub: rusteron_client::AeronSubscription,
    seq: u64,
    retries: Retries,
    stop: Arc<AtomicBool>,
    pong: Option<PinnedThread<(u64, Retries)>>,
    _client: CClient,
}

impl CPing {
    fn start(dir: &Path, core: Option<usize>) -> Self {
        let client = CClient::connect(dir);
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let pong = spawn_c_thread(
            "c-pong",
            dir,
            core,
            |c| {
                (
                    c.subscription(CHANNEL, C_PING_STREAM),
                    c.publication(CHANNEL, C_PONG_STREAM),
                )
            },
            move |(sub, publ)| {
                let (mut echoed, mut retries) = (0u64, Retries::default());
                while !stop2.load(Ordering::Relaxed) {
                    let n = sub
                        .poll_fn(
                            |msg: &[u8], _| {
                                let m: &[u8; MSG_LEN] = msg.try_into().expect("a 32-byte ping");
                                retries.add(publ.send(m, false));
                                echoed += 1;
                            },
                            RT_FRAGMENT_LIMIT,
                        )
                        .expect("C pong poll");
                    if n == 0 {
                        spin_loop();
                    }
                }
                (echoed, retries)
            },
        );
        let publ = client.publication(CHANNEL, C_PING_STREAM);
        let sub = client.subscription(CHANNEL, C_PONG_STREAM);
        wait_for("C round-trip streams", || publ.is_connected() && sub.is_connected());
        CPing {
            publ,
            sub,
            seq: 0,
            retries: Retries::default(),
            stop,
            pong: Some(pong),
            _client: client,
        }
    }

    fn finish(&mut self) -> String {
        self.stop.store(true, Ordering::Relaxed);
        let (echoed, retries) = self
            .pong
            .take()
            .map_or((0, Retries::default()), |t| t.join().expect("C pong panicked"));
        format!("echoed {echoed}; retried claims: ping {}, pong {retries}", self.retries)
    }
}

impl Op for CPing {
    #[inline]
    fn op(&mut self) {
        self.seq += 1;
        let seq = self.seq;
        self.retries.add(self.publ.send(&message(seq), false));
        let mut got = false;
        let sub = &self.sub;
        spin_until("C ping: waiting for the echo", || {
            sub.poll_fn(
                |msg: &[u8], _| {
                    if seq_of(msg) == seq {
                        got = true;
                    }
                },
                RT_FRAGMENT_LIMIT,
            )
            .expect("C ping poll");
            got
        });
    }
}

impl Drop for CPing {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// C-client throughput: the bench thread publishes, a pinned C subscriber counts.
struct CFlow<P: CPublish> {
    publ: P,
    sent: u64,
    retries: Retries,
    received: Arc<Counter>,
    stop: Arc<AtomicBool>,
    subscriber: Option<PinnedThread<SubReport>>,
    _client: CClient,
}

impl<P: CPublish> CFlow<P> {
    fn start(
        dir: &Path,
        core: Option<usize>,
        stream: i32,
        lagging: bool,
        add: impl FnOnce(&CClient, &str, i32) -> P,
    ) -> Self {
        let client = CClient::connect(dir);
        let channel = big_term_channel();
        let received = Arc::new(Counter(AtomicU64::new(0)));
        let stop = Arc::new(AtomicBool::new(false));
        let (received2, stop2) = (received.clone(), stop.clone());
        let ch = channel.clone();
        let subscriber = spawn_c_thread(
            "c-tp-sub",
            dir,
            core,
            move |c| c.subscription(&ch, stream),
            move |sub| {
                let mut r = SubReport::default();
                let mut expected = 1u64;
                loop {
                    let n = sub
                        .poll_fn(
                            |msg: &[u8], _| {
                                let seq = seq_of(msg);
                                if seq != expected {
                                    r.gaps += 1;
                                }
                                expected = seq.wrapping_add(1);
                                r.received += 1;
                            },
                            TP_FRAGMENT_LIMIT,
                        )
                        .expect("C subscriber poll");
                    r.polls += 1;
                    if n > 0 {
                        received2.0.store(r.received, Ordering::Release);
                    } else {
                        r.empty_polls += 1;
                        if stop2.load(Ordering::Relaxed) {
                            break;
                        }
                        spin_loop();
                    }
                    if lagging {
                        lag(n.max(0) as usize);
                    }
                }
                r
            },
        );
        let publ = add(&client, &channel, stream);
        wait_for("C throughput stream", || publ.is_up());
        CFlow {
            publ,
            sent: 0,
            retries: Retries::default(),
            received,
            stop,
            subscriber: Some(subscriber),
            _client: client,
        }
    }
}

impl<P: CPublish> Flowing for CFlow<P> {
    #[inline]
    fn send(&mut self, n: u64) {
        for _ in 0..n {
            self.sent += 1;
            self.retries.add(self.publ.send(&message(self.sent), false));
        }
        let (sent, received) = (self.sent, &self.received);
        spin_until("C throughput: waiting for the subscriber", || {
            received.0.load(Ordering::Acquire) >= sent
        });
    }

    fn finish(&mut self) -> String {
        self.stop.store(true, Ordering::Relaxed);
        let r = self
            .subscriber
            .take()
            .map_or_else(SubReport::default, |t| t.join().expect("C subscriber panicked"));
        format!(
            "sent {} received {} gaps {}; retried: {}; {:.1} msgs per non-empty poll, {} of {} polls empty",
            self.sent,
            r.received,
            r.gaps,
            self.retries,
            r.received as f64 / (r.polls - r.empty_polls).max(1) as f64,
            r.empty_polls,
            r.polls
        )
    }
}

impl<P: CPublish> Drop for CFlow<P> {
    fn drop(&mut self) {
        let _ = Flowing::finish(self);
    }
}

// ---------------------------------------------------------------------------------------------
// Where a throughput ceiling comes from: each side's own cost, one thread, no transfer.

/// Per-message cost of each side alone: `publish` `k` messages back to back on this thread
/// (the subscriber is not polling, and `k` frames fit in half a 64 MiB term, so nothing waits
/// for it), then `poll_once` until all `k` are read. Median over `rounds` rounds of
/// (publish ns/msg, poll ns/msg).
fn split_costs(k: u64, rounds: usize, mut publish: impl FnMut(u64), mut poll_once: impl FnMut() -> u64) -> (f64, f64) {
    let mut seq = 0;
    let mut publish_ns = Vec::new();
    let mut poll_ns = Vec::new();
    for _ in 0..rounds {
        let t0 = Instant::now();
        for _ in 0..k {
            seq += 1;
            publish(seq);
        }
        let t1 = Instant::now();
        let mut got = 0;
        spin_until("split: polling back", || {
            got += poll_once();
            got >= k
        });
        let t2 = Instant::now();
        publish_ns.push((t1 - t0).as_nanos() as f64 / k as f64);
        poll_ns.push((t2 - t1).as_nanos() as f64 / k as f64);
        // Let the (backing-off) driver see the subscriber's position before the next round.
        std::thread::sleep(Duration::from_millis(20));
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    (median(publish_ns), median(poll_ns))
}

/// A counting poll handler shared by the split measurements: checks the sequence like the
/// throughput subscribers do.
#[derive(Debug, Default)]
struct SeqCheck {
    expected: u64,
    gaps: u64,
}

impl SeqCheck {
    #[inline]
    fn see(&mut self, msg: &[u8]) {
        let seq = seq_of(msg);
        if seq != self.expected + 1 {
            self.gaps += 1;
        }
        self.expected = seq;
    }
}

/// One row of the split table: publish and poll cost per message, ns.
struct SplitRow {
    name: &'static str,
    /// Messages per round.
    k: u64,
    publish_ns: f64,
    poll_ns: f64,
    retries: Retries,
}

fn split_rows(at: &Placement, dir: &Path, plan: &Plan) -> Vec<SplitRow> {
    // Messages per round: at most 3/4 of the publication window (half a term of 64-byte frames).
    let k_for = |term: usize| plan.split_messages.min((term / 2 / 64 * 3 / 4) as u64);
    let small = 4 << 20;
    let mut rows = Vec::new();

    for (name, use_offer, term, stream) in [
        ("messaging try_claim", false, BIG_TERM, 1020),
        ("messaging offer", true, BIG_TERM, 1021),
        ("messaging try_claim, 4 MiB term", false, small, 1022),
    ] {
        let channel = format!("{CHANNEL}?term-length={term}");
        let (client, mut publ, mut sub) = at.unpinned(|| {
            let client = connect(dir);
            let sub = client.subscription(&channel, stream).expect("split subscription");
            let publ = client.publication(&channel, stream).expect("split publication");
            wait_for("split stream", || publ.is_connected() && sub.is_connected());
            (client, publ, sub)
        });
        let mut check = SeqCheck::default();
        let mut retries = Retries::default();
        let k = k_for(term);
        let (publish_ns, poll_ns) = split_costs(
            k,
            plan.split_rounds,
            |seq| retries.add(publish(&mut publ, &message(seq), use_offer)),
            || sub.poll(&mut |m: &[u8], _: &MessageHeader| check.see(m), TP_FRAGMENT_LIMIT) as u64,
        );
        assert_eq!(check.gaps, 0, "{name}: messages lost or reordered");
        drop((publ, sub, client));
        rows.push(SplitRow {
            name,
            k,
            publish_ns,
            poll_ns,
            retries,
        });
    }

    let client = at.unpinned(|| CClient::connect(dir));
    for (name, exclusive, term, stream) in [
        ("C client try_claim", false, BIG_TERM, 2020),
        ("C client exclusive try_claim", true, BIG_TERM, 2021),
        ("C client exclusive, 4 MiB term", true, small, 2022),
    ] {
        let channel = format!("{CHANNEL}?term-length={term}");
        let publ: Box<dyn CPublish> = if exclusive {
            Box::new(client.exclusive_publication(&channel, stream))
        } else {
            Box::new(client.publication(&channel, stream))
        };
        let sub = client.subscription(&channel, stream);
        wait_for("C split stream", || publ.is_up() && sub.is_connected());
        let mut check = SeqCheck::default();
        let mut retries = Retries::default();
        let k = k_for(term);
        let (publish_ns, poll_ns) = split_costs(
            k,
            plan.split_rounds,
            |seq| retries.add(publ.send(&message(seq), false)),
            || {
                sub.poll_fn(|m: &[u8], _| check.see(m), TP_FRAGMENT_LIMIT)
                    .expect("C split poll")
                    .max(0) as u64
            },
        );
        assert_eq!(check.gaps, 0, "{name}: messages lost or reordered");
        rows.push(SplitRow {
            name,
            k,
            publish_ns,
            poll_ns,
            retries,
        });
    }
    rows
}

/// The median cost of the fixed-count run's timing itself: two `now_ns` readings back to back
/// and recording their difference, ns. It is inside every percentile (the floor's too), so
/// a ratio to the floor is (operation + this) / (floor + this), not operation / floor.
fn clock_pair_cost(n: u64) -> u64 {
    let mut h = new_latency_histogram();
    for _ in 0..n {
        let t0 = now_ns();
        let t1 = now_ns();
        record_saturating(&mut h, (t1 - t0).max(0) as u64);
    }
    h.value_at_quantile(0.5)
}

/// What an uncontended `std::sync::Mutex` `try_lock` + unlock costs on this thread, ns: aeron-rs
/// keeps every publication and subscription behind one, so `messaging` pays it once per
/// offer / try_claim and once per poll.
fn mutex_cost(n: u64) -> f64 {
    let m = std::sync::Mutex::new(0u64);
    let t0 = Instant::now();
    for _ in 0..n {
        if let Ok(mut g) = std::hint::black_box(&m).try_lock() {
            *g += 1;
        }
    }
    t0.elapsed().as_nanos() as f64 / n as f64
}

// ---------------------------------------------------------------------------------------------
// The run.

/// One row of the summary.
struct Row {
    name: String,
    batch_median_ns: Option<f64>,
    stats: Stats,
    /// The floor right before the case started and right after it stopped.
    local_floor: (Histogram<u64>, Histogram<u64>),
    notes: String,
}

struct ThroughputRow {
    name: &'static str,
    batch_median_ns: Option<f64>,
    rates: Vec<f64>,
    notes: String,
}

/// Runs one round-trip case under criterion, then its fixed-count percentiles, then stops it.
fn round_trip_case<C: Op>(
    c: &mut Criterion,
    at: &Placement,
    id: &str,
    plan: &Plan,
    rows: &mut Vec<Row>,
    start: impl FnOnce() -> C,
    finish: impl FnOnce(&mut C) -> String,
) {
    let mut start = Some(start);
    let mut case: Option<C> = None;
    let mut batches = Batches::default();
    let measure_floor =
        || at.unpinned(|| floor::measure(at.initiator, at.responder, plan.local_floor).expect("measuring the floor"));
    let floor_before = measure_floor();
    {
        let mut group = c.benchmark_group("roundtrip");
        group.bench_function(id, |b| {
            let case = case.get_or_insert_with(|| at.unpinned(start.take().expect("started once")));
            at.hot();
            b.iter_custom(|iters| time_batch(case, iters, &mut batches));
        });
        group.finish();
    }
    // Only what criterion ran (filters, --list) is summarised.
    if let Some(mut case) = case {
        at.hot();
        let h = percentiles(&mut case, plan);
        let notes = finish(&mut case);
        drop(case);
        let floor_after = measure_floor();
        rows.push(Row {
            name: id.to_owned(),
            batch_median_ns: batches.median_ns(),
            stats: Stats::from_histogram(&h),
            local_floor: (floor_before, floor_after),
            notes,
        });
    }
}

/// One throughput configuration.
struct TpCase<'a> {
    /// Summary name; with `criterion`, also the criterion id (`throughput/<id>`).
    name: &'static str,
    criterion: Option<&'static str>,
    start: Box<dyn Fn() -> Box<dyn Flowing> + 'a>,
}

/// Runs each case under criterion (if it has an id), then its fixed batches, then stops it.
fn throughput_cases(c: &mut Criterion, at: &Placement, plan: &Plan, cases: Vec<TpCase<'_>>) -> Vec<ThroughputRow> {
    let mut rows = Vec::new();
    for case in cases {
        let start = || at.unpinned(|| (case.start)());
        let mut flow: Option<Box<dyn Flowing>> = None;
        let mut batches = Batches::default();
        if let Some(id) = case.criterion {
            let mut group = c.benchmark_group("throughput");
            group.throughput(Throughput::Elements(1));
            group.bench_function(id, |b| {
                let flow = flow.get_or_insert_with(start);
                at.hot();
                // One batch = `iters` messages published back to back, timed until the
                // subscriber has counted the last one.
                b.iter_custom(|iters| {
                    let t0 = Instant::now();
                    flow.send(iters);
                    let d = t0.elapsed();
                    batches.0.push((iters, d));
                    d
                });
            });
            group.finish();
            if flow.is_none() {
                continue; // filtered out
            }
        }
        let mut flow = flow.unwrap_or_else(start);
        at.hot();
        flow.send(plan.batch / 10); // warm-up
        let rates = rates(flow.as_mut(), plan.batch, plan.batches);
        let notes = flow.finish();
        drop(flow);
        rows.push(ThroughputRow {
            name: case.name,
            batch_median_ns: batches.median_ns(),
            rates,
            notes,
        });
    }
    rows
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").map_or_else(|e| format!("unreadable: {e}"), |s| s.trim().to_owned())
}

fn main() {
    let mode = Mode::from_args();
    let plan = Plan::for_mode(mode);
    let mut c = Criterion::default()
        .sample_size(SAMPLE_SIZE)
        .warm_up_time(WARM_UP)
        .measurement_time(MEASUREMENT)
        .configure_from_args();

    // The bench thread is the initiator / publisher, on the second-to-last core; responders on
    // the last one.
    let at = Placement::new();
    let (initiator, responder) = (at.initiator, at.responder);
    let pinned = at.hot();

    if mode == Mode::List {
        // Register the ids without starting anything.
        let mut group = c.benchmark_group("roundtrip");
        for id in ["raw", "crossbeam", "messaging", "offer_poll", "c_client"] {
            group.bench_function(id, |_| unreachable!("--list runs nothing"));
        }
        group.finish();
        let mut group = c.benchmark_group("throughput");
        for id in ["try_claim", "offer", "c_try_claim"] {
            group.bench_function(id, |_| unreachable!("--list runs nothing"));
        }
        group.finish();
        c.final_summary();
        return;
    }

    let load_before = load_average();
    let measure_floor =
        || at.unpinned(|| floor::measure(initiator, responder, plan.floor_each).expect("measuring the floor"));
    let floor_before = measure_floor();

    let driver = at.unpinned(|| {
        EmbeddedDriver::builder()
            .ipc_term_length(ROUND_TRIP_TERM)
            .spawn()
            .expect("starting the embedded media driver")
    });
    let dir: PathBuf = driver.dir().to_owned();
    let dir = dir.as_path();

    let mut rows = Vec::new();
    round_trip_case(
        &mut c,
        &at,
        "raw",
        &plan,
        &mut rows,
        || Raw::start(responder),
        |_| String::new(),
    );
    round_trip_case(
        &mut c,
        &at,
        "crossbeam",
        &plan,
        &mut rows,
        || Crossbeam::start(responder),
        |_| String::new(),
    );
    round_trip_case(
        &mut c,
        &at,
        "messaging",
        &plan,
        &mut rows,
        || Ping::start(dir, responder),
        Ping::finish,
    );
    round_trip_case(
        &mut c,
        &at,
        "offer_poll",
        &plan,
        &mut rows,
        || OfferPoll::start(dir),
        |o| o.notes(),
    );
    round_trip_case(
        &mut c,
        &at,
        "c_client",
        &plan,
        &mut rows,
        || CPing::start(dir, responder),
        CPing::finish,
    );

    let rs = |index: usize, use_offer: bool, fragment_limit: usize, term: Option<usize>, lagging: bool| {
        let v = Variant {
            use_offer,
            fragment_limit,
            term,
            lagging,
        };
        Box::new(move || Box::new(Flow::start(dir, responder, index, v)) as Box<dyn Flowing>)
            as Box<dyn Fn() -> Box<dyn Flowing>>
    };
    let tp_rows = throughput_cases(
        &mut c,
        &at,
        &plan,
        vec![
            TpCase {
                name: "messaging try_claim",
                criterion: Some("try_claim"),
                start: rs(0, false, TP_FRAGMENT_LIMIT, Some(BIG_TERM), false),
            },
            TpCase {
                name: "messaging offer",
                criterion: Some("offer"),
                start: rs(1, true, TP_FRAGMENT_LIMIT, Some(BIG_TERM), false),
            },
            TpCase {
                name: "messaging try_claim, limit 16",
                criterion: None,
                start: rs(2, false, 16, Some(BIG_TERM), false),
            },
            TpCase {
                name: "messaging try_claim, 8 MiB term",
                criterion: None,
                start: rs(3, false, TP_FRAGMENT_LIMIT, Some(8 << 20), false),
            },
            TpCase {
                name: "messaging try_claim, 1 MiB term",
                criterion: None,
                start: rs(4, false, TP_FRAGMENT_LIMIT, Some(1 << 20), false),
            },
            TpCase {
                name: "C client try_claim",
                criterion: Some("c_try_claim"),
                start: Box::new(move || {
                    Box::new(CFlow::start(dir, responder, C_THROUGHPUT_STREAM, false, |c, ch, st| {
                        c.publication(ch, st)
                    })) as Box<dyn Flowing>
                }),
            },
            TpCase {
                name: "C client exclusive try_claim",
                criterion: None,
                start: Box::new(move || {
                    Box::new(CFlow::start(
                        dir,
                        responder,
                        C_THROUGHPUT_STREAM + 1,
                        false,
                        |c, ch, st| c.exclusive_publication(ch, st),
                    )) as Box<dyn Flowing>
                }),
            },
            TpCase {
                name: "messaging try_claim, lagging sub",
                criterion: None,
                start: rs(5, false, TP_FRAGMENT_LIMIT, Some(BIG_TERM), true),
            },
            TpCase {
                name: "C exclusive, lagging sub",
                criterion: None,
                start: Box::new(move || {
                    Box::new(CFlow::start(
                        dir,
                        responder,
                        C_THROUGHPUT_STREAM + 2,
                        true,
                        |c, ch, st| c.exclusive_publication(ch, st),
                    )) as Box<dyn Flowing>
                }),
            },
        ],
    );

    at.hot();
    let split = split_rows(&at, dir, &plan);
    let mutex_ns = mutex_cost(plan.split_messages * 50);
    let clock_ns = clock_pair_cost(plan.split_messages * 5);

    let floor_after = measure_floor();
    let load_after = load_average();
    c.final_summary();
    let version = messaging::driver_version();
    drop(driver);

    print_summary(&Summary {
        mode,
        plan,
        cores: (initiator, responder),
        pinned,
        load: (load_before, load_after),
        version,
        floor: (floor_before, floor_after),
        rows,
        tp_rows,
        split,
        mutex_ns,
        clock_ns,
    });
}

struct Summary {
    mode: Mode,
    plan: Plan,
    cores: (Option<usize>, Option<usize>),
    pinned: bool,
    load: (String, String),
    version: String,
    floor: (Histogram<u64>, Histogram<u64>),
    rows: Vec<Row>,
    tp_rows: Vec<ThroughputRow>,
    split: Vec<SplitRow>,
    mutex_ns: f64,
    clock_ns: u64,
}

fn print_summary(s: &Summary) {
    let core = |c: Option<usize>| c.map_or_else(|| "any".to_owned(), |c| c.to_string());
    let before = Stats::from_histogram(&s.floor.0);
    let after = Stats::from_histogram(&s.floor.1);
    let mut both = s.floor.0.clone();
    let _ = both.add(&s.floor.1);
    let combined = Stats::from_histogram(&both);
    let raw_batch = s.rows.iter().find(|r| r.name == "raw").and_then(|r| r.batch_median_ns);

    println!();
    println!(
        "== roundtrip summary{} ==",
        if s.mode == Mode::Test {
            " (test mode: tiny counts, figures meaningless)"
        } else {
            ""
        }
    );
    println!(
        "cores: bench thread {} ({}), responder {}; {}; load average before: {}, after: {}",
        core(s.cores.0),
        if s.pinned { "pinned" } else { "NOT pinned" },
        core(s.cores.1),
        s.version,
        s.load.0,
        s.load.1
    );
    println!(
        "messages {MSG_LEN} B; round-trip term {} KiB (driver default), offer_poll / throughput term {} MiB; idle: spin \
         (hot threads), backoff (driver)",
        ROUND_TRIP_TERM >> 10,
        BIG_TERM >> 20
    );
    println!(
        "percentiles: {} individually timed operations per case after {} warm-up. Floor = raw cache-line round trip \
         (latency_probe::measure::floor::measure), {:.2} s right before and right after each case; each case's percentiles \
         are divided by its own floor (before + after merged) at the same percentile. The global floor, {:.2} s \
         before and after everything, is in the first two rows (ratios to the two merged).",
        s.plan.measured_ops,
        s.plan.warmup_ops,
        s.plan.local_floor.as_secs_f64(),
        s.plan.floor_each.as_secs_f64()
    );
    println!();
    println!(
        "{:<14} {:>9} {:>9} {:>7} {:>7} {:>7} {:>9} {:>7} {:>15} {:>7} {:>7} {:>8}",
        "case",
        "batch med",
        "batch/raw",
        "p50",
        "p99",
        "p99.9",
        "max",
        "mean",
        "floor p50 b/a",
        "p50/fl",
        "p99/fl",
        "p99.9/fl"
    );
    let line = |name: &str, batch: Option<f64>, st: &Stats, fl: &Stats, fl_pair: (u64, u64)| {
        let r = latency_probe::model::ratios(st, fl);
        let at = |label: &str| r.iter().find(|(n, _)| n == label).map_or(f64::NAN, |(_, x)| *x);
        let moved = if latency_probe::model::regime_moved(fl_pair.0, fl_pair.1) {
            "!"
        } else {
            " "
        };
        println!(
            "{:<14} {:>9} {:>9} {:>7} {:>7} {:>7} {:>9} {:>7.0} {:>14}{} {:>6.1}x {:>6.1}x {:>7.1}x",
            name,
            batch.map_or_else(|| "-".to_owned(), |b| format!("{b:.0}")),
            match (batch, raw_batch) {
                (Some(b), Some(r)) if r > 0.0 => format!("{:.1}x", b / r),
                _ => "-".to_owned(),
            },
            st.p50,
            st.p99,
            st.p999,
            st.max,
            st.mean,
            format!("{}/{}", fl_pair.0, fl_pair.1),
            moved,
            at("p50"),
            at("p99"),
            at("p99.9"),
        );
    };
    let global = (before.p50, after.p50);
    line("floor before", None, &before, &combined, global);
    line("floor after", None, &after, &combined, global);
    let mut any_moved = false;
    for r in &s.rows {
        let (b, a) = (&r.local_floor.0, &r.local_floor.1);
        let mut merged = b.clone();
        let _ = merged.add(a);
        let pair = (b.value_at_quantile(0.5), a.value_at_quantile(0.5));
        any_moved |= latency_probe::model::regime_moved(pair.0, pair.1);
        line(
            &r.name,
            r.batch_median_ns,
            &r.stats,
            &Stats::from_histogram(&merged),
            pair,
        );
    }
    println!(
        "(ns; batch med = median of criterion's per-batch means, ns per operation; floor p50 b/a = the case's floor \
         before / after it, '!' = moved more than {}x: that row's ratios are not trustworthy)",
        latency_probe::model::MOVED_FACTOR
    );
    println!(
        "(every percentile, the floor's included, contains the timing itself: two now_ns readings, median {} ns \
         back to back; criterion's batch figures do not)",
        s.clock_ns
    );
    if any_moved {
        println!("WARNING: the floor moved across at least one case (marked '!'); run again for trustworthy ratios");
    }
    for r in s.rows.iter().filter(|r| !r.notes.is_empty()) {
        println!("  {}: {}", r.name, r.notes);
    }
    if latency_probe::model::regime_moved(before.p50, after.p50) {
        println!(
            "WARNING: the floor moved during the run (p50 {} ns before, {} ns after, more than {}x apart): this \
             machine's inter-core latency changed regime, so no ratio from this run is trustworthy; run again",
            before.p50,
            after.p50,
            latency_probe::model::MOVED_FACTOR
        );
    }

    println!();
    println!(
        "throughput ({MSG_LEN} B messages, bench thread publishes, pinned subscriber polls; {} batches of {} after \
         a warm-up batch; M msg/s)",
        s.plan.batches, s.plan.batch
    );
    println!(
        "{:<30} {:>10} {:>8} {:>8} {:>8}",
        "variant", "criterion", "median", "min", "max"
    );
    for r in &s.tp_rows {
        let mut v = r.rates.clone();
        v.sort_by(f64::total_cmp);
        let m = |x: f64| format!("{:.2}", x / 1e6);
        println!(
            "{:<30} {:>10} {:>8} {:>8} {:>8}",
            r.name,
            r.batch_median_ns.map_or_else(|| "-".to_owned(), |ns| m(1e9 / ns)),
            v.get(v.len() / 2).map_or_else(|| "-".to_owned(), |x| m(*x)),
            v.first().map_or_else(|| "-".to_owned(), |x| m(*x)),
            v.last().map_or_else(|| "-".to_owned(), |x| m(*x)),
        );
    }
    for r in &s.tp_rows {
        println!("  {}: {}", r.name, r.notes);
    }
    println!();
    println!(
        "each side alone (one thread: publish k messages back to back, then poll them all, {} fragments per poll; \
         median of {} rounds): the ceiling a pub/sub pair could reach if moving the data between cores were free",
        TP_FRAGMENT_LIMIT, s.plan.split_rounds
    );
    println!(
        "{:<32} {:>8} {:>11} {:>8} {:>12}  retried publishes",
        "", "k", "publish ns", "poll ns", "ceiling M/s"
    );
    for r in &s.split {
        println!(
            "{:<32} {:>8} {:>11.1} {:>8.1} {:>12.1}  {}",
            r.name,
            r.k,
            r.publish_ns,
            r.poll_ns,
            1e3 / r.publish_ns.max(r.poll_ns),
            r.retries
        );
    }
    println!(
        "uncontended std Mutex try_lock + unlock (aeron-rs takes one per offer / try_claim and per poll): {:.1} ns",
        s.mutex_ns
    );
}
