//! What every case family shares: the run plan, pinning, spinning and waiting helpers, retry
//! counting, the message format, criterion's batches and the fixed-count percentiles, the
//! throughput plumbing, and the harness that runs each case with the floor measured around it.

use std::hint::spin_loop;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use aeron_latency::messaging::{available_cores, Client, PinnedThread, ThreadBuilder};
use criterion::{Criterion, Throughput};
use hdrhistogram::Histogram;
use latency_probe::measure::floor;
use latency_probe::measure::histogram::new_latency_histogram;
use latency_probe::measure::histogram::record_saturating;
use latency_probe::model::Stats;
use latency_probe::sys::clock::now_ns;

/// Message size of every messaging case (Aeron's Ping sample's).
pub(crate) const MSG_LEN: usize = 32;
/// The smallest message `latency-probe` sends (its Cap'n Proto sample): the
/// `messaging_exclusive_64` round trip uses it, to compare with `latency-probe --mode rtt
/// --msg-size 64`.
pub(crate) const PROBE_MSG_LEN: usize = 64;
pub(crate) const CHANNEL: &str = "aeron:ipc";
/// The driver's IPC term, used by the round trips. A publisher may run half a term ahead of the
/// subscriber position the driver last saw, and the driver (backing off, sharing two cores with
/// two spinning threads) only moves that limit when it gets to run: with 1 MiB (7,168 round trips
/// of runway, 1.4 ms at 190 ns) the C client's faster round trip hit back pressure millions of
/// times per run here; 16 MiB gives 20+ ms of runway.
pub(crate) const ROUND_TRIP_TERM: usize = 16 << 20;
/// The term of `offer_poll` and the throughput streams (set per channel: `term-length=`). Half
/// a term, 32 MiB = 524,288 frames, is how far a publisher may run ahead of the position the
/// driver last saw its subscriber at; with the driver backing off up to 1 ms between duty cycles
/// a 1 MiB term (8,192 frames) caps throughput (see the `1 MiB term` variant).
pub(crate) const BIG_TERM: usize = 64 << 20;
/// Fragments per poll in the round-trip loops (one message is ever in flight).
pub(crate) const RT_FRAGMENT_LIMIT: usize = 16;
/// Fragments per poll for the throughput subscriber.
pub(crate) const TP_FRAGMENT_LIMIT: usize = 256;
/// A spin loop that has made no progress for this long panics instead of hanging the run.
pub(crate) const STUCK: Duration = Duration::from_secs(10);

/// Criterion settings: the whole run stays well under two minutes.
pub(crate) const SAMPLE_SIZE: usize = 10;
pub(crate) const WARM_UP: Duration = Duration::from_millis(300);
pub(crate) const MEASUREMENT: Duration = Duration::from_millis(1200);

// ---------------------------------------------------------------------------------------------
// Run plan.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `cargo bench`: full criterion runs and the full summary.
    Bench,
    /// `cargo test --benches`: criterion runs each case once; the summary is tiny.
    Test,
    /// `--list`: criterion only prints names; nothing starts.
    List,
}

impl Mode {
    /// The same rule criterion applies to its arguments.
    pub(crate) fn from_args() -> Self {
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
pub(crate) struct Plan {
    pub(crate) floor_each: Duration,
    /// The floor measured right before and right after each round-trip case.
    pub(crate) local_floor: Duration,
    pub(crate) warmup_ops: u64,
    pub(crate) measured_ops: u64,
    pub(crate) batch: u64,
    pub(crate) batches: usize,
    pub(crate) split_messages: u64,
    pub(crate) split_rounds: usize,
    /// The paired rounds (`paired.rs`): how many count, and each case's operations per round;
    /// the floor measured before and after each case; throughput's rounds and batch.
    pub(crate) paired_rounds: usize,
    pub(crate) paired_warmup: u64,
    pub(crate) paired_ops: u64,
    pub(crate) paired_floor: Duration,
    pub(crate) paired_tp_rounds: usize,
    pub(crate) paired_batch: u64,
}

impl Plan {
    pub(crate) fn for_mode(mode: Mode) -> Self {
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
                paired_rounds: 40,
                paired_warmup: 5_000,
                paired_ops: 30_000,
                paired_floor: Duration::from_millis(20),
                paired_tp_rounds: 16,
                paired_batch: 1_000_000,
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
                paired_rounds: 2,
                paired_warmup: 50,
                paired_ops: 200,
                paired_floor: Duration::from_millis(5),
                paired_tp_rounds: 2,
                paired_batch: 10_000,
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
pub(crate) fn spin_until(what: &str, mut done: impl FnMut() -> bool) {
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
pub(crate) struct Retries {
    back_pressured: u64,
    admin_action: u64,
    not_connected: u64,
}

/// A retryable publish failure, whichever client reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    BackPressured,
    AdminAction,
    NotConnected,
}

impl Retries {
    #[inline]
    pub(crate) fn add(&mut self, o: Retries) {
        self.back_pressured += o.back_pressured;
        self.admin_action += o.admin_action;
        self.not_connected += o.not_connected;
    }

    /// Counts one retried failure of `kind`.
    #[inline]
    pub(crate) fn count(&mut self, kind: Retry) {
        match kind {
            Retry::BackPressured => self.back_pressured += 1,
            Retry::AdminAction => self.admin_action += 1,
            Retry::NotConnected => self.not_connected += 1,
        }
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

/// A 32-byte message carrying `seq` in its first 8 bytes.
#[inline]
pub(crate) fn message(seq: u64) -> [u8; MSG_LEN] {
    let mut m = [0u8; MSG_LEN];
    m[..8].copy_from_slice(&seq.to_le_bytes());
    m
}

#[inline]
pub(crate) fn seq_of(msg: &[u8]) -> u64 {
    msg.get(..8)
        .and_then(|b| b.try_into().ok())
        .map_or(u64::MAX, u64::from_le_bytes)
}

/// Waits (sleeping) until `ready` holds, or panics naming `what` after [`STUCK`].
pub(crate) fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
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

pub(crate) fn spawn_pinned<T: Send + 'static>(
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

/// What a responder thread (a pong, a throughput subscriber) is told to do: run, stand still
/// (parked, off its core, so the floor can be measured on that core right before and after the
/// case's measured operations), or stop. One atomic load per look, as the stop flag it replaces.
#[derive(Debug, Default)]
pub(crate) struct Control {
    state: AtomicU8,
    /// The responder, once it has parked (to unpark it).
    thread: OnceLock<std::thread::Thread>,
}

const RUN: u8 = 0;
const PAUSE_ASKED: u8 = 1;
const PAUSED: u8 = 2;
const STOP: u8 = 3;

impl Control {
    /// For the responder, at each look: true to go on (after standing still while paused),
    /// false to stop.
    #[inline]
    pub(crate) fn running(&self) -> bool {
        self.state.load(Ordering::Acquire) == RUN || self.stand_still()
    }

    #[cold]
    fn stand_still(&self) -> bool {
        let _ = self.thread.set(std::thread::current());
        let _ = self
            .state
            .compare_exchange(PAUSE_ASKED, PAUSED, Ordering::SeqCst, Ordering::SeqCst);
        loop {
            match self.state.load(Ordering::SeqCst) {
                RUN => return true,
                STOP => return false,
                _ => std::thread::park(),
            }
        }
    }

    /// Asks the responder to stand still and waits until it does (its last operation answered:
    /// call it between operations).
    pub(crate) fn pause(&self) {
        self.state.store(PAUSE_ASKED, Ordering::SeqCst);
        spin_until("pausing the responder", || self.state.load(Ordering::SeqCst) == PAUSED);
    }

    /// Lets a paused responder run again.
    pub(crate) fn resume(&self) {
        self.set(RUN);
    }

    /// Tells the responder to stop (paused or not).
    pub(crate) fn stop(&self) {
        self.set(STOP);
    }

    fn set(&self, state: u8) {
        self.state.store(state, Ordering::SeqCst);
        if let Some(t) = self.thread.get() {
            t.unpark();
        }
    }
}

/// Where the bench thread runs. It is pinned to the initiator core only while it measures:
/// threads inherit their creator's affinity, so the driver, the aeron-rs conductors and the
/// responders are all started while it may run anywhere (else they would all land on, and
/// `ThreadBuilder` would refuse any core but, the initiator's).
#[derive(Debug, Clone)]
pub(crate) struct Placement {
    pub(crate) initiator: Option<usize>,
    pub(crate) responder: Option<usize>,
    all: Vec<usize>,
}

impl Placement {
    /// The last two cores this process may use (core 0 usually takes most interrupts).
    pub(crate) fn new() -> Self {
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
    pub(crate) fn hot(&self) -> bool {
        self.initiator
            .is_some_and(|id| core_affinity::set_for_current(core_affinity::CoreId { id }))
    }

    /// Runs `f` with the calling thread allowed on every core, then pins it again.
    pub(crate) fn unpinned<T>(&self, f: impl FnOnce() -> T) -> T {
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

pub(crate) fn connect(dir: &Path) -> Client {
    latency_probe::run::connect(dir, true)
        .unwrap_or_else(|e| panic!("connecting to the driver in {}: {e}", dir.display()))
}

pub(crate) fn big_term_channel() -> String {
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
        let per_op: Vec<f64> = tail
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, d)| d.as_nanos() as f64 / *n as f64)
            .collect();
        latency_probe::analysis::paired::median(&per_op)
    }
}

/// One operation the bench thread starts and waits for.
pub(crate) trait Op {
    fn op(&mut self);
    /// Untimed, before each timed operation: a paced case waits here (by default nothing).
    fn before(&mut self) {}
    /// Whether [`before`](Self::before) waits: criterion's batches then time each operation
    /// on its own and add them up, leaving the waits out.
    fn paced(&self) -> bool {
        false
    }
}

/// The gap a paced case leaves before each operation: about what `latency-probe` leaves
/// between round trips at 100,000 msg/s.
pub(crate) const PACED_GAP: Duration = Duration::from_micros(10);

/// `C`'s operation after [`PACED_GAP`] spent spinning on the clock (the core stays busy, as
/// the probe's pacing keeps it): what a round trip costs when it does not follow another
/// back to back.
pub(crate) struct Paced<C>(pub(crate) C);

impl<C: Op> Op for Paced<C> {
    #[inline]
    fn op(&mut self) {
        self.0.op();
    }

    fn before(&mut self) {
        let t = Instant::now();
        while t.elapsed() < PACED_GAP {
            spin_loop();
        }
    }

    fn paced(&self) -> bool {
        true
    }
}

/// A case whose responder can stand still between its operations, so the paired rounds measure
/// the floor on its core right before and after the measured ones (`paired`).
pub(crate) trait Pausable {
    /// Stands the responder still (off its core) and returns once it does.
    fn pause(&mut self);
    /// Lets it run again.
    fn resume(&mut self);
}

/// Criterion: `iters` operations timed as one batch.
fn time_batch(case: &mut impl Op, iters: u64, batches: &mut Batches) -> Duration {
    let d = if case.paced() {
        let mut d = Duration::ZERO;
        for _ in 0..iters {
            case.before();
            let t0 = Instant::now();
            case.op();
            d += t0.elapsed();
        }
        d
    } else {
        let t0 = Instant::now();
        for _ in 0..iters {
            case.op();
        }
        t0.elapsed()
    };
    batches.0.push((iters, d));
    d
}

/// The summary's fixed-count run: every operation timed on its own, like the floor's.
fn percentiles(case: &mut impl Op, plan: &Plan) -> Histogram<u64> {
    percentiles_of(case, plan.warmup_ops, plan.measured_ops)
}

/// `warmup` operations, then `measured` ones each timed on its own.
pub(crate) fn percentiles_of(case: &mut impl Op, warmup: u64, measured: u64) -> Histogram<u64> {
    for _ in 0..warmup {
        case.before();
        case.op();
    }
    let mut h = new_latency_histogram();
    for _ in 0..measured {
        case.before();
        let t0 = now_ns();
        case.op();
        let t1 = now_ns();
        record_saturating(&mut h, (t1 - t0).max(0) as u64);
    }
    h
}

// ---------------------------------------------------------------------------------------------
// throughput plumbing shared by `messaging` and `c_client`: the bench thread publishes, a pinned
// thread subscribes and counts.

#[repr(align(128))]
pub(crate) struct Counter(pub(crate) AtomicU64);

impl Counter {
    /// Spins until the subscriber has counted `sent` messages (`what` names the flow if it
    /// stops making progress).
    #[inline]
    pub(crate) fn wait_for(&self, sent: u64, what: &str) {
        spin_until(what, || self.0.load(Ordering::Acquire) >= sent);
    }
}

/// What the subscriber thread saw.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SubReport {
    pub(crate) received: u64,
    /// Messages whose sequence number was not the one expected (lost or reordered).
    pub(crate) gaps: u64,
    pub(crate) polls: u64,
    pub(crate) empty_polls: u64,
}

impl SubReport {
    /// Stops a flow's subscriber thread (`ctl`) and takes its report (a default one if it was
    /// taken before).
    pub(crate) fn of_stopped(ctl: &Control, thread: &mut Option<PinnedThread<SubReport>>, what: &str) -> SubReport {
        ctl.stop();
        thread.take().map_or_else(SubReport::default, |t| {
            t.join()
                .unwrap_or_else(|_| panic!("{what}: the subscriber thread panicked"))
        })
    }

    /// The flow's note: what both sides saw, with the publisher's `retries`.
    pub(crate) fn summary(&self, sent: u64, retries: &dyn std::fmt::Display) -> String {
        let per_poll = self.received as f64 / (self.polls - self.empty_polls).max(1) as f64;
        format!(
            "sent {sent} received {} gaps {}; retried: {retries}; {per_poll:.1} msgs per non-empty poll, {} of {} polls \
             empty",
            self.received, self.gaps, self.empty_polls, self.polls
        )
    }
}

/// A lagging subscriber waits this long after a poll that read fewer than [`LAG_BELOW`]
/// fragments, so the publisher runs ahead and the subscriber reads lines the publisher has
/// left, instead of the line it is writing next (the throughput diagnosis).
const LAG: Duration = Duration::from_micros(10);
const LAG_BELOW: usize = TP_FRAGMENT_LIMIT / 2;

/// The lagging subscriber's wait (a spin on the clock: no syscall, the core stays busy).
#[inline]
pub(crate) fn lag(read: usize) {
    if read < LAG_BELOW {
        let t = Instant::now();
        while t.elapsed() < LAG {
            spin_loop();
        }
    }
}

/// A publisher (the bench thread) and a pinned subscriber thread.
pub(crate) trait Flowing {
    /// Publishes `n` messages back to back and waits until the subscriber has counted them all.
    fn send(&mut self, n: u64);
    /// Stops the subscriber; what both sides saw, in words.
    fn finish(&mut self) -> String;
    /// Its subscriber's [`Control`], to pause it between batches.
    fn control(&self) -> &Control;
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

// ---------------------------------------------------------------------------------------------
// The harness: each case under criterion, then its fixed-count run, the floor around it.

/// One row of the summary.
pub(crate) struct Row {
    pub(crate) name: String,
    pub(crate) batch_median_ns: Option<f64>,
    pub(crate) stats: Stats,
    /// The floor right before the case started and right after it stopped.
    pub(crate) local_floor: (Histogram<u64>, Histogram<u64>),
    pub(crate) notes: String,
}

pub(crate) struct ThroughputRow {
    pub(crate) name: &'static str,
    pub(crate) batch_median_ns: Option<f64>,
    pub(crate) rates: Vec<f64>,
    pub(crate) notes: String,
}

/// Runs one round-trip case under criterion, then its fixed-count percentiles, then stops it.
pub(crate) fn round_trip_case<C: Op>(
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
pub(crate) struct TpCase<'a> {
    /// Summary name; with `criterion`, also the criterion id (`throughput/<id>`).
    pub(crate) name: &'static str,
    pub(crate) criterion: Option<&'static str>,
    pub(crate) start: Box<dyn Fn() -> Box<dyn Flowing> + 'a>,
}

/// Runs each case under criterion (if it has an id), then its fixed batches, then stops it.
pub(crate) fn throughput_cases(
    c: &mut Criterion,
    at: &Placement,
    plan: &Plan,
    cases: Vec<TpCase<'_>>,
) -> Vec<ThroughputRow> {
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
