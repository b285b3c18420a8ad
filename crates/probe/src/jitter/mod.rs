//! Jitter diagnosis: per-thread OS counters at the 20 group boundaries, off-CPU episodes of the
//! hot threads, stalls the hot loops saw themselves, the slowest samples, and a verdict.
//!
//! # Guarantees
//! - Counters are read at group boundaries only (21 times a run), by the hot thread itself,
//!   never per message: one `read` of a perf group plus one or two `pread`s of `/proc` per
//!   watched thread, into stack buffers. The time this takes is measured and reported
//!   ([`JitterSide::read_cost`]) and the verdict says when a slow sample lines up with it.
//! - Per message, a hot loop only compares a clock reading with the previous one
//!   ([`StallLog::tick`]) and offers the latency to a fixed-size heap ([`SlowSamples`]).
//!   Neither allocates (both are sized before the run).
//! - Source: perf events where permitted (futex syscalls per thread from the
//!   `syscalls:sys_enter_futex` tracepoints, migrations and faults from software counters, and
//!   `sched:sched_switch` samples with switch-in records that give every off-CPU episode of a
//!   hot thread with its cause and who took the CPU); else `/proc` alone (context switches,
//!   faults, run-queue delay, but no futex count and no per-episode cause). The report names
//!   the source and, for `/proc`, why perf was not used.
//! - Timing model: every timestamp here is `CLOCK_MONOTONIC` ([`crate::clock::now_ns`]; perf
//!   records are opened with `clockid = CLOCK_MONOTONIC`), the clock the latencies use, so an
//!   episode and a slow sample line up across processes on one host.
//!
//! # Example
//! ```
//! use latency_probe::jitter::{Mode, Monitor, Role};
//!
//! let mut m = Monitor::new(Mode::Proc).unwrap();
//! m.watch(std::process::id(), latency_probe::jitter::current_tid(), Role::Subscriber);
//! m.snapshot(0);
//! std::thread::sleep(std::time::Duration::from_millis(2));
//! m.snapshot(latency_probe::recorder::GROUPS);
//! let side = m.finish();
//! assert!(side.threads[0].total.voluntary.unwrap() >= 1);
//! ```

pub mod report;
mod sys;
pub mod verdict;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

use crate::clock::now_ns;
use crate::recorder::GROUPS;

/// Page faults (minor + major) of the calling thread so far, if the kernel tells.
#[must_use]
pub fn thread_faults() -> Option<u64> {
    sys::thread_faults()
}

pub use report::{build as build_report, GroupJitter, Hiccup, JitterReport};
pub use verdict::{analyse, Analysis, Context, Finding, Verdict};

/// Linux thread id of the calling thread.
#[must_use]
pub fn current_tid() -> i32 {
    aeron_latency::messaging::current_tid()
}

/// Runs of polls or claims that found aeron-rs's lock held are logged from this long.
pub const LOCK_WAIT_THRESHOLD_NS: u64 = 1_000;

/// Gaps of a hot loop at least this long are logged as stalls (5 µs: a page fault is ~4 µs, a
/// preemption on this class of machine 15–65 µs).
pub const STALL_THRESHOLD_NS: u64 = 5_000;

/// Which counter source to use (`--diagnostics`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// perf where permitted, else `/proc`.
    Auto,
    /// perf or fail.
    Perf,
    /// `/proc` only.
    Proc,
    /// No diagnostics (to measure their cost).
    Off,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Mode::Auto),
            "perf" => Ok(Mode::Perf),
            "proc" => Ok(Mode::Proc),
            "off" => Ok(Mode::Off),
            _ => Err(format!("'{s}' is not a diagnostics mode; use auto, perf, proc or off")),
        }
    }
}

impl Mode {
    /// The flag value.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Auto => "auto",
            Mode::Perf => "perf",
            Mode::Proc => "proc",
            Mode::Off => "off",
        }
    }
}

/// What a watched thread is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// The publisher's send loop (hot).
    Publisher,
    /// The subscriber's poll loop (hot).
    Subscriber,
    /// The thread that consumes the channel hand-off (hot: it measures).
    Consumer,
    /// The messaging crate's hand-off thread that polls and sends into the channel (hot).
    Handoff,
    /// The helper that shares a mutex with the hot loop (`--hot-path-lock`).
    LockHelper,
    /// Our aeron-rs conductor thread.
    Conductor,
    /// A media driver thread.
    Driver,
    /// A process's main thread.
    Main,
    /// The hiccup meter.
    Meter,
    /// Anything else.
    Other,
}

impl Role {
    /// Threads whose every stall shows up in the latency.
    #[must_use]
    pub fn is_hot(self) -> bool {
        matches!(
            self,
            Role::Publisher | Role::Subscriber | Role::Consumer | Role::Handoff
        )
    }

    /// Plain words for reports.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            Role::Publisher => "publisher send loop",
            Role::Subscriber => "subscriber poll loop",
            Role::Consumer => "consumer of the channel hand-off",
            Role::Handoff => "hand-off polling thread",
            Role::LockHelper => "helper sharing the hot-path lock",
            Role::Conductor => "aeron-rs conductor (ours, wakes every 4 ms)",
            Role::Driver => "media driver",
            Role::Main => "main thread",
            Role::Meter => "hiccup meter",
            Role::Other => "other thread",
        }
    }

    /// Guesses the role of a thread of ours from its name.
    #[must_use]
    pub fn from_thread_name(name: &str) -> Role {
        match name {
            "aeron-conductor" => Role::Conductor,
            "aeron-driver" => Role::Driver,
            "aeron-handoff" => Role::Handoff,
            "lock-helper" => Role::LockHelper,
            "hiccup-meter" => Role::Meter,
            _ => Role::Other,
        }
    }
}

/// OS counters of one thread (cumulative at a snapshot; a difference in reports).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// futex syscalls (perf only).
    pub futex: Option<u64>,
    /// Voluntary context switches: the thread blocked (hot threads only).
    pub voluntary: Option<u64>,
    /// Involuntary context switches: the thread was preempted (hot threads only).
    pub involuntary: Option<u64>,
    /// Times the thread got a CPU (schedstat timeslices): its wake-ups.
    pub wakeups: u64,
    /// CPU migrations (perf only).
    pub migrations: Option<u64>,
    /// Minor page faults.
    pub minor_faults: u64,
    /// Major page faults.
    pub major_faults: u64,
    /// Time on a CPU, ns.
    pub run_ns: u64,
    /// Time runnable but waiting on a run queue, ns.
    pub runqueue_wait_ns: u64,
}

impl Counts {
    /// `self - earlier`, field by field (saturating).
    #[must_use]
    pub fn since(&self, earlier: &Counts) -> Counts {
        let o = |a: Option<u64>, b: Option<u64>| Some(a?.saturating_sub(b.unwrap_or(0)));
        Counts {
            futex: o(self.futex, earlier.futex),
            voluntary: o(self.voluntary, earlier.voluntary),
            involuntary: o(self.involuntary, earlier.involuntary),
            wakeups: self.wakeups.saturating_sub(earlier.wakeups),
            migrations: o(self.migrations, earlier.migrations),
            minor_faults: self.minor_faults.saturating_sub(earlier.minor_faults),
            major_faults: self.major_faults.saturating_sub(earlier.major_faults),
            run_ns: self.run_ns.saturating_sub(earlier.run_ns),
            runqueue_wait_ns: self.runqueue_wait_ns.saturating_sub(earlier.runqueue_wait_ns),
        }
    }

    /// Field-by-field sum.
    #[must_use]
    pub fn plus(&self, o: &Counts) -> Counts {
        let s = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        Counts {
            futex: s(self.futex, o.futex),
            voluntary: s(self.voluntary, o.voluntary),
            involuntary: s(self.involuntary, o.involuntary),
            wakeups: self.wakeups + o.wakeups,
            migrations: s(self.migrations, o.migrations),
            minor_faults: self.minor_faults + o.minor_faults,
            major_faults: self.major_faults + o.major_faults,
            run_ns: self.run_ns + o.run_ns,
            runqueue_wait_ns: self.runqueue_wait_ns + o.runqueue_wait_ns,
        }
    }

    /// Page faults of both kinds.
    #[must_use]
    pub fn faults(&self) -> u64 {
        self.minor_faults + self.major_faults
    }
}

/// Why a hot thread left its CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OffCpuKind {
    /// Switched out while runnable: preempted (another task took the CPU) or, with
    /// `--idle yield`, gave it away in `sched_yield`.
    Preempted,
    /// Blocked: sleeping in the kernel (futex, nanosleep, I/O).
    Blocked,
}

/// One off-CPU episode of a hot thread, from perf's sched_switch sample and switch-in record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffCpu {
    /// Switch-out time, CLOCK_MONOTONIC ns.
    pub out_ns: i64,
    /// Switch-in time, if it came before the end of the run.
    pub in_ns: Option<i64>,
    /// CPU it left.
    pub cpu: u32,
    /// Why.
    pub kind: OffCpuKind,
    /// Who got the CPU (0: the idle task).
    pub next_pid: i32,
    /// Their command name (NUL padded).
    #[serde(with = "comm_serde")]
    pub next_comm: [u8; 16],
}

impl OffCpu {
    /// The command name of who got the CPU.
    #[must_use]
    pub fn next_name(&self) -> String {
        comm_str(&self.next_comm)
    }

    /// `[out, in]`, with an open end at `run_end` when the switch-in was not seen.
    #[must_use]
    pub fn span(&self, run_end: i64) -> (i64, i64) {
        (self.out_ns, self.in_ns.unwrap_or(run_end))
    }
}

fn comm_str(c: &[u8; 16]) -> String {
    let end = c.iter().position(|b| *b == 0).unwrap_or(c.len());
    String::from_utf8_lossy(&c[..end]).into_owned()
}

mod comm_serde {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(c: &[u8; 16], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::comm_str(c))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 16], D::Error> {
        let s = String::deserialize(d)?;
        let mut c = [0_u8; 16];
        let b = s.as_bytes();
        c[..b.len().min(16)].copy_from_slice(&b[..b.len().min(16)]);
        Ok(c)
    }
}

/// Gaps a hot loop saw between two of its own clock readings: time it was not running its loop
/// (off CPU, page fault, the probe's own counter reads, SMI, hypervisor). Fixed capacity.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StallLog {
    /// Gaps at least this long are logged.
    pub threshold_ns: u64,
    /// `(start ns, length ns)`, in time order.
    pub stalls: Vec<(i64, u64)>,
    /// Stalls that did not fit.
    pub not_logged: u64,
    /// Every stall, logged or not.
    pub count: u64,
    /// Their total length, ns.
    pub total_ns: u64,
    /// The longest, ns.
    pub max_ns: u64,
    #[serde(skip)]
    last: i64,
}

impl StallLog {
    /// A log for up to `capacity` stalls of at least `threshold_ns`.
    #[must_use]
    pub fn new(threshold_ns: u64, capacity: usize) -> StallLog {
        let mut stalls = Vec::with_capacity(capacity);
        crate::stats::pretouch(&mut stalls);
        StallLog {
            threshold_ns,
            stalls,
            not_logged: 0,
            count: 0,
            total_ns: 0,
            max_ns: 0,
            last: 0,
        }
    }

    /// Called with each clock reading of the loop. No allocation: stalls beyond the capacity
    /// are counted, not logged.
    #[inline]
    pub fn tick(&mut self, now: i64) {
        let gap = now - self.last;
        if self.last != 0 && gap >= self.threshold_ns as i64 {
            self.note(self.last, gap as u64);
        }
        self.last = now;
    }

    #[cold]
    fn note(&mut self, start: i64, len: u64) {
        self.count += 1;
        self.total_ns += len;
        self.max_ns = self.max_ns.max(len);
        if self.stalls.len() < self.stalls.capacity() {
            self.stalls.push((start, len));
        } else {
            self.not_logged += 1;
        }
    }

    /// Logs an interval measured elsewhere (e.g. a run of polls that found a lock held), if it
    /// is at least the threshold.
    #[inline]
    pub fn interval(&mut self, start: i64, len: i64) {
        if len >= self.threshold_ns as i64 {
            self.note(start, len as u64);
        }
    }

    /// Forget the gap up to now (after the loop paused on purpose, e.g. to read counters).
    #[inline]
    pub fn restart(&mut self, now: i64) {
        self.last = now;
    }

    /// Logged stalls overlapping `[from, to]`.
    pub fn overlapping(&self, from: i64, to: i64) -> impl Iterator<Item = (i64, u64)> + '_ {
        let first = self.stalls.partition_point(|(s, l)| (s + *l as i64) < from);
        self.stalls[first..].iter().copied().take_while(move |(s, _)| *s <= to)
    }
}

/// One slow sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SlowSample {
    /// Latency from the intended send time, ns (ordering key).
    pub latency_ns: u64,
    /// Sequence number.
    pub seq: u64,
    /// Intended send time, CLOCK_MONOTONIC ns.
    pub intended_ns: i64,
    /// Actual send time.
    pub sent_ns: i64,
    /// Receive time.
    pub received_ns: i64,
}

/// The slowest `capacity` samples, kept in a fixed-size min-heap (no allocation per sample).
#[derive(Debug, Clone)]
pub struct SlowSamples {
    heap: BinaryHeap<Reverse<SlowSample>>,
    cap: usize,
}

impl SlowSamples {
    /// Keeps the slowest `capacity` samples.
    #[must_use]
    pub fn new(capacity: usize) -> SlowSamples {
        let mut v = Vec::with_capacity(capacity.max(1));
        crate::stats::pretouch(&mut v);
        SlowSamples {
            heap: BinaryHeap::from(v),
            cap: capacity.max(1),
        }
    }

    /// Offers one sample; O(1) unless it is slower than the fastest kept one.
    #[inline]
    pub fn offer(&mut self, s: SlowSample) {
        if self.heap.len() < self.cap {
            self.heap.push(Reverse(s));
        } else if let Some(mut min) = self.heap.peek_mut() {
            if s.latency_ns > min.0.latency_ns {
                *min = Reverse(s);
            }
        }
    }

    /// The kept samples, slowest first.
    #[must_use]
    pub fn into_sorted(self) -> Vec<SlowSample> {
        let mut v: Vec<SlowSample> = self.heap.into_iter().map(|r| r.0).collect();
        v.sort_by(|a, b| b.cmp(a));
        v
    }
}

/// One watched thread and what its counters did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ThreadJitter {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: i32,
    /// Thread name (`comm`).
    pub name: String,
    /// What it is.
    pub role: Role,
    /// Counters over the measured period (first to last boundary).
    pub total: Counts,
    /// Counters per group (`None` where a boundary was not seen, e.g. a lost group).
    pub groups: Vec<Option<Counts>>,
    /// Off-CPU episodes during the measured period (hot threads, perf only).
    pub off_cpu: Vec<OffCpu>,
    /// Switch records the kernel dropped (ring buffer full).
    pub off_cpu_lost: u64,
    /// Whether off-CPU episodes were recorded for this thread (perf switch sampler).
    #[serde(default)]
    pub episodes: bool,
    /// Stalls its loop saw (hot threads that measure or pace).
    pub stalls: Option<StallLog>,
    /// Runs of polls/claims that found aeron-rs's subscription/publication lock held by its
    /// conductor.
    #[serde(default)]
    pub lock_waits: Option<StallLog>,
}

impl ThreadJitter {
    /// The off-CPU episodes overlapping `[from, to]` (episodes are in time order and do not
    /// overlap each other, so this is two binary searches). An episode whose switch-in was not
    /// seen ends at `run_end`.
    #[must_use]
    pub fn off_cpu_in(&self, from: i64, to: i64, run_end: i64) -> &[OffCpu] {
        let first = self.off_cpu.partition_point(|o| o.in_ns.unwrap_or(run_end) < from);
        let end = first + self.off_cpu[first..].partition_point(|o| o.out_ns <= to);
        &self.off_cpu[first..end]
    }
}

/// The source the counters came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceInfo {
    /// `perf`, `proc` or `off`.
    pub name: String,
    /// Why not perf, when it is not.
    pub reason: Option<String>,
}

/// Cost of the probe's own counter reads at the boundaries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadCost {
    /// Snapshots taken.
    pub reads: u64,
    /// Longest, ns.
    pub max_ns: u64,
    /// Total, ns.
    pub total_ns: u64,
}

/// Everything one process's monitor collected.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JitterSide {
    /// Counter source.
    pub source: SourceInfo,
    /// Watched threads.
    pub threads: Vec<ThreadJitter>,
    /// Boundary times: `boundaries[g]` is when group `g` started (`None`: not seen);
    /// `boundaries[GROUPS]` is the end of the measured period.
    pub boundaries: Vec<Option<i64>>,
    /// Hypervisor steal time per group, all CPUs, ns (`None`: not available).
    #[serde(default)]
    pub steal_ns: Vec<Option<u64>>,
    /// The probe's own cost.
    pub read_cost: ReadCost,
    /// Probe reads: `(start ns, length ns)` of each boundary snapshot.
    pub reads: Vec<(i64, u64)>,
    /// Threads that could not be watched, and why.
    pub notes: Vec<String>,
}

/// The name of process `pid` among the watched threads: its hot thread's name (`latency-sub`,
/// `latency-pub`), else its main thread's, else `pid N`.
#[must_use]
pub fn process_name(all: &[&ThreadJitter], pid: u32) -> String {
    if let Some(h) = all
        .iter()
        .find(|t| t.pid == pid && t.role.is_hot() && t.role != Role::Handoff)
    {
        return h.name.clone();
    }
    match all.iter().find(|t| t.pid == pid && t.tid == pid as i32) {
        Some(main) => main.name.clone(),
        None => format!("pid {pid}"),
    }
}

/// The end of the measured period over all sides (`i64::MAX` if none saw it): where an
/// off-CPU episode with no switch-in ends.
#[must_use]
pub fn run_end(sides: &[&JitterSide]) -> i64 {
    sides
        .iter()
        .filter_map(|s| s.span())
        .map(|s| s.1)
        .max()
        .unwrap_or(i64::MAX)
}

impl JitterSide {
    /// Start and end of the measured period, if both boundaries were seen.
    #[must_use]
    pub fn span(&self) -> Option<(i64, i64)> {
        let start = self.boundaries.iter().flatten().next()?;
        let end = self.boundaries.last().copied().flatten()?;
        Some((*start, end))
    }
}

/// What `latency-sub --jitter-raw` writes for `latency-probe`: the raw material of the analysis.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RawJitter {
    /// Counters, episodes and stalls.
    pub side: JitterSide,
    /// The slowest samples (subscriber only).
    pub slow: Vec<SlowSample>,
    /// Idle strategy of the side.
    pub idle: String,
    /// Delivery (subscriber only).
    pub delivery_channel: bool,
    /// Lock plant on.
    pub hot_path_lock: bool,
}

/// Analyses a run and attaches the `jitter` section and per-group rows to `report`: the
/// subscriber's side first, the publisher's when there is one. The tail is everything at or above
/// the report's p99.9 from the intended send time.
pub fn attach(report: &mut crate::report::Report, sub: &RawJitter, publ: Option<&RawJitter>, hiccup: &Hiccup<'_>) {
    let ctx = Context {
        sub_idle: sub.idle.clone(),
        pub_idle: publ.map(|p| p.idle.clone()),
        delivery_channel: sub.delivery_channel,
        hot_path_lock: sub.hot_path_lock,
        tail_threshold_ns: report.latency_ns.p999.max(1),
        cores: aeron_latency::messaging::available_cores().len(),
    };
    let mut sides = vec![&sub.side];
    sides.extend(publ.map(|p| &p.side));
    let (j, rows) = build_report(&sides, &sub.slow, hiccup, &ctx);
    report.attach_jitter(j, rows);
}

#[derive(Debug)]
struct Watched {
    pid: u32,
    tid: i32,
    name: String,
    role: Role,
    reader: sys::ThreadReader,
}

/// Reads the counters of a set of threads at group boundaries. Owned by the hot thread.
#[derive(Debug)]
pub struct Monitor {
    source: SourceInfo,
    perf: Option<sys::PerfSetup>,
    threads: Vec<Watched>,
    /// `snaps[slot * threads + i]`; slots `0..=GROUPS`.
    snaps: Vec<Option<Counts>>,
    times: [Option<i64>; GROUPS + 1],
    steal: [Option<u64>; GROUPS + 1],
    stat: Option<std::fs::File>,
    cost: ReadCost,
    reads: Vec<(i64, u64)>,
    stalls: Vec<(i32, StallLog)>,
    lock_waits: Vec<(i32, StallLog)>,
    notes: Vec<String>,
}

impl Monitor {
    /// Chooses the source. `Mode::Perf` fails with the reason perf is unusable; `Auto` falls back
    /// to `/proc` and keeps the reason.
    ///
    /// # Errors
    /// Only for `Mode::Perf`, with the reason and the fix.
    pub fn new(mode: Mode) -> Result<Monitor, String> {
        let (perf, source) = match mode {
            Mode::Off => (
                None,
                SourceInfo {
                    name: "off".into(),
                    reason: Some("--diagnostics off".into()),
                },
            ),
            Mode::Proc => (
                None,
                SourceInfo {
                    name: "proc".into(),
                    reason: Some("--diagnostics proc".into()),
                },
            ),
            Mode::Auto | Mode::Perf => match sys::PerfSetup::probe() {
                Ok(p) => (
                    Some(p),
                    SourceInfo {
                        name: "perf".into(),
                        reason: None,
                    },
                ),
                Err(why) if mode == Mode::Perf => return Err(format!("--diagnostics perf: {why}")),
                Err(why) => (
                    None,
                    SourceInfo {
                        name: "proc".into(),
                        reason: Some(why),
                    },
                ),
            },
        };
        Ok(Monitor {
            source,
            perf,
            threads: Vec::new(),
            snaps: Vec::new(),
            times: [None; GROUPS + 1],
            steal: [None; GROUPS + 1],
            stat: std::fs::File::open("/proc/stat").ok(),
            cost: ReadCost::default(),
            reads: Vec::with_capacity(GROUPS + 1),
            stalls: Vec::new(),
            lock_waits: Vec::new(),
            notes: Vec::new(),
        })
    }

    /// Whether the monitor reads anything.
    #[must_use]
    pub fn is_on(&self) -> bool {
        self.source.name != "off"
    }

    /// Watches one thread. A thread that cannot be watched (gone, not permitted) is noted, not
    /// an error.
    pub fn watch(&mut self, pid: u32, tid: i32, role: Role) {
        if !self.is_on() || self.threads.iter().any(|w| w.tid == tid) {
            return;
        }
        let name = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
            .map(|s| s.trim_end().to_owned())
            .unwrap_or_else(|_| format!("tid {tid}"));
        match sys::ThreadReader::open(pid, tid, role.is_hot(), self.perf.as_ref()) {
            Ok(reader) => {
                self.threads.push(Watched {
                    pid,
                    tid,
                    name,
                    role,
                    reader,
                });
                self.snaps.resize(self.threads.len() * (GROUPS + 1), None);
                // Re-layout: snapshots are taken only after all watches, so resizing is enough
                // as long as none were taken yet.
                debug_assert!(
                    self.times.iter().all(Option::is_none),
                    "watch before the first snapshot"
                );
            }
            Err(e) => self
                .notes
                .push(format!("could not watch {name} ({}, tid {tid}): {e}", role.describe())),
        }
    }

    /// Watches every thread of `pid` not watched yet; `role` names them (the main thread of a
    /// process is [`Role::Main`] unless `role` says otherwise by name).
    pub fn watch_process(&mut self, pid: u32, role: impl Fn(i32, &str) -> Role) {
        let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            self.notes.push(format!("could not list the threads of process {pid}"));
            return;
        };
        let mut tids: Vec<i32> = dir
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect();
        tids.sort_unstable();
        for tid in tids {
            let name = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")).unwrap_or_default();
            let r = role(tid, name.trim_end());
            self.watch(pid, tid, r);
        }
    }

    /// Watches what a run side needs: the hot thread `hot_tid` as `role`, every other thread of
    /// this process (by name: conductor, hand-off, lock helper; the main thread), and, when
    /// the media driver runs in another process (`driver`, from `cnc.dat`), its threads.
    pub fn watch_run(&mut self, hot_tid: i32, role: Role, driver: Option<u32>) {
        let me = std::process::id();
        self.watch(me, hot_tid, role);
        self.watch_process(me, |tid, name| {
            if tid == me as i32 {
                Role::Main
            } else {
                Role::from_thread_name(name)
            }
        });
        if let Some(d) = driver.filter(|d| *d != me) {
            self.watch_process(d, |tid, name| match Role::from_thread_name(name) {
                Role::Meter => Role::Meter,
                _ if tid == d as i32 && name.starts_with("latency-") => Role::Main,
                _ => Role::Driver,
            });
        }
    }

    /// Adds a stall log for the hot thread `tid` (the loop ticks it; handed back in
    /// [`Monitor::finish`] through [`Monitor::set_stalls`]).
    pub fn set_stalls(&mut self, tid: i32, log: StallLog) {
        self.stalls.retain(|(t, _)| *t != tid);
        self.stalls.push((tid, log));
    }

    /// Adds the log of aeron-rs lock waits of the hot thread `tid`.
    pub fn set_lock_waits(&mut self, tid: i32, log: StallLog) {
        self.lock_waits.retain(|(t, _)| *t != tid);
        self.lock_waits.push((tid, log));
    }

    /// Reads every watched thread into boundary `slot` (`g` = group `g` starts; [`GROUPS`] =
    /// the measured period ends). The first call for a slot wins. Slots skipped since the last
    /// one taken (one poll crossed two boundaries) get the same reading: their groups are empty
    /// at this resolution rather than folded into a neighbour. No allocation.
    pub fn snapshot(&mut self, slot: usize) {
        if !self.is_on() || slot > GROUPS || self.times[slot].is_some() {
            return;
        }
        let start = now_ns();
        let n = self.threads.len();
        let first = match self.times[..slot].iter().rposition(Option::is_some) {
            Some(last) => last + 1,
            None => slot,
        };
        for (i, w) in self.threads.iter_mut().enumerate() {
            let c = w.reader.read();
            for s in first..=slot {
                self.snaps[s * n + i] = Some(c);
            }
        }
        let steal = self.stat.as_ref().and_then(sys::total_steal_ns);
        for s in first..=slot {
            self.steal[s] = steal;
        }
        if slot == GROUPS {
            // The measured period is over: stop recording episodes so the drain in `finish`
            // ends even while the thread keeps being switched.
            for w in &mut self.threads {
                w.reader.stop_sampling();
            }
        }
        let end = now_ns();
        for s in first..=slot {
            self.times[s] = Some(start);
        }
        let len = (end - start).max(0) as u64;
        self.cost.reads += 1;
        self.cost.total_ns += len;
        self.cost.max_ns = self.cost.max_ns.max(len);
        if self.reads.len() < self.reads.capacity() {
            self.reads.push((start, len));
        }
    }

    /// Ends the run: per-thread totals and per-group differences, off-CPU episodes inside the
    /// measured period.
    #[must_use]
    pub fn finish(mut self) -> JitterSide {
        let n = self.threads.len();
        let slots: Vec<usize> = (0..=GROUPS).filter(|s| self.times[*s].is_some()).collect();
        let (first, last) = (slots.first().copied(), slots.last().copied());
        let span = first
            .zip(last)
            .map(|(a, b)| (self.times[a].unwrap_or(0), self.times[b].unwrap_or(0)));
        let mut threads = Vec::with_capacity(n);
        for (i, mut w) in self.threads.drain(..).enumerate() {
            let at = |s: usize| self.snaps[s * n + i];
            let total = match (first, last) {
                (Some(a), Some(b)) => at(b).zip(at(a)).map(|(b, a)| b.since(&a)).unwrap_or_default(),
                _ => Counts::default(),
            };
            let groups = (0..GROUPS)
                .map(|g| {
                    let start = at(g)?;
                    let end = ((g + 1)..=GROUPS).find_map(at)?;
                    Some(end.since(&start))
                })
                .collect();
            let mut off_cpu = Vec::new();
            let lost = w.reader.drain_switches(&mut off_cpu);
            if let Some((a, b)) = span {
                off_cpu.retain(|o| o.in_ns.unwrap_or(i64::MAX) >= a && o.out_ns <= b);
            }
            let stalls = self
                .stalls
                .iter()
                .position(|(t, _)| *t == w.tid)
                .map(|p| self.stalls.swap_remove(p).1);
            let lock_waits = self
                .lock_waits
                .iter()
                .position(|(t, _)| *t == w.tid)
                .map(|p| self.lock_waits.swap_remove(p).1);
            threads.push(ThreadJitter {
                pid: w.pid,
                tid: w.tid,
                name: w.name,
                role: w.role,
                total,
                groups,
                off_cpu,
                off_cpu_lost: lost,
                episodes: w.reader.has_sampler(),
                stalls,
                lock_waits,
            });
        }
        let steal_ns = (0..GROUPS)
            .map(|g| {
                let a = self.steal[g]?;
                let b = ((g + 1)..=GROUPS).find_map(|s| self.steal[s])?;
                Some(b.saturating_sub(a))
            })
            .collect();
        JitterSide {
            source: self.source,
            threads,
            boundaries: self.times.to_vec(),
            steal_ns,
            read_cost: self.cost,
            reads: self.reads,
            notes: self.notes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filling_the_slow_samples_and_a_stall_log_takes_no_page_fault() {
        // 4,096 samples are 160 KiB (40 pages): written when allocated, not while measuring.
        let mut slow = SlowSamples::new(4096);
        let mut stalls = StallLog::new(1, 100_000);
        let before = thread_faults().unwrap();
        for i in 0..4096u64 {
            slow.offer(SlowSample {
                latency_ns: i,
                seq: i,
                intended_ns: 0,
                sent_ns: 0,
                received_ns: 0,
            });
        }
        for t in 0..100_000i64 {
            stalls.tick(t * 10);
        }
        let faults = thread_faults().unwrap() - before;
        assert!(faults < 5, "{faults} page faults");
        assert!(stalls.stalls.len() > 99_000, "{} stalls logged", stalls.stalls.len());
    }

    #[test]
    fn stall_log_logs_long_gaps_and_counts_overflow() {
        let mut s = StallLog::new(100, 2);
        for t in [1, 50, 300, 310, 1000, 1001, 5000] {
            s.tick(t);
        }
        assert_eq!(s.count, 3);
        assert_eq!(s.stalls, vec![(50, 250), (310, 690)]);
        assert_eq!(s.not_logged, 1);
        assert_eq!(s.max_ns, 3999);
        assert_eq!(s.overlapping(400, 500).collect::<Vec<_>>(), vec![(310, 690)]);
        assert_eq!(s.overlapping(1001, 2000).count(), 0);
        assert_eq!(s.overlapping(0, 60).count(), 1);
    }

    #[test]
    fn off_cpu_lookup_finds_exactly_the_overlapping_episodes() {
        let ep = |a: i64, b: Option<i64>| OffCpu {
            out_ns: a,
            in_ns: b,
            cpu: 0,
            kind: OffCpuKind::Preempted,
            next_pid: 0,
            next_comm: [0; 16],
        };
        let t = ThreadJitter {
            pid: 1,
            tid: 1,
            name: "t".into(),
            role: Role::Subscriber,
            total: Counts::default(),
            groups: vec![],
            off_cpu: vec![ep(10, Some(20)), ep(30, Some(40)), ep(50, Some(60)), ep(70, None)],
            off_cpu_lost: 0,
            episodes: true,
            stalls: None,
            lock_waits: None,
        };
        let starts = |a, b| t.off_cpu_in(a, b, 100).iter().map(|o| o.out_ns).collect::<Vec<_>>();
        assert_eq!(starts(0, 5), Vec::<i64>::new());
        assert_eq!(starts(15, 35), vec![10, 30]);
        assert_eq!(starts(20, 30), vec![10, 30]);
        assert_eq!(starts(41, 49), Vec::<i64>::new());
        assert_eq!(starts(90, 200), vec![70], "an open episode lasts to the end of the run");
        // Same answer as a linear scan, everywhere.
        for a in 0..110 {
            for b in a..110 {
                let linear: Vec<i64> = t
                    .off_cpu
                    .iter()
                    .filter(|o| o.out_ns <= b && o.in_ns.unwrap_or(100) >= a)
                    .map(|o| o.out_ns)
                    .collect();
                assert_eq!(starts(a, b), linear, "[{a}, {b}]");
            }
        }
    }

    #[test]
    fn slow_samples_keep_the_slowest_sorted() {
        let mut k = SlowSamples::new(3);
        for (i, l) in [5_u64, 1, 9, 7, 3, 8].into_iter().enumerate() {
            k.offer(SlowSample {
                latency_ns: l,
                seq: i as u64,
                intended_ns: 0,
                sent_ns: 0,
                received_ns: 0,
            });
        }
        let v: Vec<u64> = k.into_sorted().iter().map(|s| s.latency_ns).collect();
        assert_eq!(v, vec![9, 8, 7]);
    }

    #[test]
    fn counts_subtract_and_add_field_by_field() {
        let a = Counts {
            futex: Some(10),
            voluntary: Some(3),
            wakeups: 5,
            ..Counts::default()
        };
        let b = Counts {
            futex: Some(15),
            voluntary: Some(4),
            wakeups: 9,
            ..Counts::default()
        };
        let d = b.since(&a);
        assert_eq!(
            (d.futex, d.voluntary, d.wakeups, d.involuntary),
            (Some(5), Some(1), 4, None)
        );
        assert_eq!(d.plus(&d).futex, Some(10));
    }

    #[test]
    fn mode_parses_and_says_what_is_accepted() {
        assert_eq!("proc".parse::<Mode>(), Ok(Mode::Proc));
        let e = "strace".parse::<Mode>().unwrap_err();
        assert!(e.contains("auto, perf, proc or off"), "{e}");
    }

    #[test]
    fn a_boundary_skipped_inside_one_poll_gets_an_empty_group() {
        let mut m = Monitor::new(Mode::Proc).unwrap();
        m.watch(std::process::id(), current_tid(), Role::Subscriber);
        m.snapshot(0);
        std::thread::sleep(std::time::Duration::from_millis(1));
        m.snapshot(3); // groups 1 and 2 started within the same poll as group 3
        std::thread::sleep(std::time::Duration::from_millis(1));
        m.snapshot(GROUPS);
        let side = m.finish();
        let t = &side.threads[0];
        let g = |i: usize| t.groups[i].unwrap();
        assert!(g(0).voluntary.unwrap() >= 1, "group 0 keeps its own counts");
        assert_eq!((g(1).voluntary, g(2).voluntary), (Some(0), Some(0)));
        assert_eq!(side.read_cost.reads, 3);
        assert_eq!(side.boundaries[1], side.boundaries[3]);
        assert!(t.groups[4..]
            .iter()
            .all(|c| c.is_some_and(|c| c.voluntary == Some(0)) || c.is_none()));
    }

    #[test]
    fn a_monitor_splits_counts_into_groups() {
        let mut m = Monitor::new(Mode::Proc).unwrap();
        m.watch(std::process::id(), current_tid(), Role::Subscriber);
        m.snapshot(0);
        std::thread::sleep(std::time::Duration::from_millis(1));
        m.snapshot(1);
        m.snapshot(1); // ignored: first call wins
        std::thread::sleep(std::time::Duration::from_millis(1));
        m.snapshot(GROUPS);
        let side = m.finish();
        let t = &side.threads[0];
        let g0 = t.groups[0].unwrap();
        let g1 = t.groups[1].unwrap();
        assert!(
            g0.voluntary.unwrap() >= 1 && g1.voluntary.unwrap() >= 1,
            "{g0:?} {g1:?}"
        );
        assert_eq!(g0.plus(&g1).voluntary, t.total.voluntary, "groups add up to the total");
        assert!(
            t.groups[2..].iter().all(|c| c.is_some_and(|c| c.voluntary == Some(0))),
            "groups never started are empty"
        );
        assert_eq!(side.read_cost.reads, 3);
        assert_eq!(side.source.name, "proc");
    }

    #[test]
    fn perf_counts_futex_calls_of_a_blocking_thread_where_permitted() {
        let mut m = match Monitor::new(Mode::Perf) {
            Ok(m) => m,
            Err(why) => {
                eprintln!("skipped: {why}");
                return;
            }
        };
        m.watch(std::process::id(), current_tid(), Role::Consumer);
        m.snapshot(0);
        let (tx, rx) = crossbeam_channel::bounded::<u32>(0);
        let h = std::thread::spawn(move || {
            for i in 0..20 {
                std::thread::sleep(std::time::Duration::from_micros(200));
                tx.send(i).unwrap();
            }
        });
        while rx.recv().is_ok() {}
        h.join().unwrap();
        m.snapshot(GROUPS);
        let side = m.finish();
        let t = &side.threads[0];
        assert!(t.total.futex.unwrap() >= 10, "{:?}", t.total);
        assert!(
            t.off_cpu.iter().filter(|o| o.kind == OffCpuKind::Blocked).count() >= 10,
            "{:?}",
            t.off_cpu
        );
        assert!(t.off_cpu.iter().all(|o| o.in_ns.is_none_or(|i| i >= o.out_ns)));
    }
}
