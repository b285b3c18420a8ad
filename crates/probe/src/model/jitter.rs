//! The raw material of the jitter diagnosis as plain data: per-thread counters, off-CPU
//! episodes, stall logs and the slowest samples of each side (what `latency-sub --jitter-raw`
//! writes for `latency-probe`).

use serde::{Deserialize, Serialize};

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
    /// The planted helper that wakes on the subscriber's hot core (`--plant-helper`).
    PlantHelper,
    /// Our aeron-rs conductor thread.
    Conductor,
    /// A media driver thread.
    Driver,
    /// A process's main thread.
    Main,
    /// The hiccup meter.
    Meter,
    /// A thread of a service `latency-probe attach` watches (hot: its off-CPU episodes are
    /// recorded).
    Service,
    /// Anything else.
    Other,
}

impl Role {
    /// Threads whose every stall shows up in the latency.
    #[must_use]
    pub fn is_hot(self) -> bool {
        matches!(
            self,
            Role::Publisher | Role::Subscriber | Role::Consumer | Role::Handoff | Role::Service
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
            Role::PlantHelper => "planted helper on the hot core",
            Role::Conductor => "aeron-rs conductor (ours, wakes every 4 ms)",
            Role::Driver => "media driver",
            Role::Main => "main thread",
            Role::Meter => "hiccup meter",
            Role::Service => "watched thread of the attached service",
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
            "plant-helper" => Role::PlantHelper,
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
    /// Switched out while runnable: preempted (another task took the CPU). Where the kernel
    /// hides its symbols' addresses (not root, `kernel.kptr_restrict`), yields count here too.
    Preempted,
    /// Gave the CPU away in `sched_yield` while another task was runnable (a yielding idle
    /// strategy, a channel's receive that yields before it parks).
    Yielded,
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
    /// The loop's previous clock reading (not serialised).
    #[serde(skip)]
    pub last: i64,
}

impl StallLog {
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

/// One octave of latency (`[2^octave, 2^(octave+1))` ns) of a run's stratified sample: how many
/// measured messages fell in it and a uniform random sample of them (all of them when few).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Octave {
    /// `k` of `[2^k, 2^(k+1))` ns.
    pub octave: u32,
    /// Measured messages in it.
    pub seen: u64,
    /// The kept ones.
    pub samples: Vec<SlowSample>,
}

/// The most off-CPU episodes kept per watched thread (about 48 MiB of them): a watch of hours
/// on a thread that switches often stays bounded; the switches beyond are counted as lost
/// ([`ThreadJitter::off_cpu_lost`]).
pub const MAX_EPISODES: usize = 1 << 20;

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
    /// Switch records the kernel dropped (ring buffer full), and those past the episodes kept
    /// per thread (`MAX_EPISODES`).
    pub off_cpu_lost: u64,
    /// Whether off-CPU episodes were recorded for this thread (perf switch sampler).
    #[serde(default)]
    pub episodes: bool,
    /// When each page fault of this thread happened during the measured period,
    /// CLOCK_MONOTONIC ns in order (hot threads, perf only; `None`: not timed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault_times: Option<Vec<i64>>,
    /// Fault samples the kernel dropped (ring buffer full).
    #[serde(default)]
    pub fault_times_lost: u64,
    /// Stalls its loop saw (hot threads that measure or pace).
    pub stalls: Option<StallLog>,
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

    /// How many of its timed page faults fell in `[from, to]` (0 when faults are not timed).
    #[must_use]
    pub fn faults_in(&self, from: i64, to: i64) -> usize {
        self.fault_times.as_ref().map_or(0, |f| {
            let a = f.partition_point(|t| *t < from);
            a + f[a..].partition_point(|t| *t <= to) - a
        })
    }
}

/// Where the per-thread counters come from (JSON: `perf`, `proc`, `off`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// perf events: futex tracepoints, software counters, switch records.
    Perf,
    /// `/proc` alone: context switches, faults, run-queue delay; no futex count.
    Proc,
    /// No diagnostics.
    Off,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Source::Perf => "perf",
            Source::Proc => "proc",
            Source::Off => "off",
        })
    }
}

/// The source the counters came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceInfo {
    /// `perf`, `proc` or `off`.
    pub name: Source,
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
    /// What one first-touch page fault cost on this side's hot thread, measured right after the
    /// run with its perf events still on (perf writes a sample per fault, which the run's own
    /// faults paid too), ns; absent without perf's fault sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault_cost_ns: Option<u64>,
}

/// The name of process `pid` among the watched threads: its hot thread's name (`latency-sub`,
/// `latency-pub`), else (an attached service too) its main thread's, else `pid N`.
#[must_use]
pub fn process_name(all: &[&ThreadJitter], pid: u32) -> String {
    if let Some(h) = all
        .iter()
        .find(|t| t.pid == pid && t.role.is_hot() && !matches!(t.role, Role::Handoff | Role::Service))
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
    /// A latency-stratified sample of every measured message (subscriber only), for the bands.
    #[serde(default)]
    pub sampled: Vec<Octave>,
    /// Idle strategy of the side.
    pub idle: String,
    /// Delivery (subscriber only).
    pub delivery_channel: bool,
    /// Lock plant on.
    pub hot_path_lock: bool,
    /// The side's channels pass through the media driver (not `aeron:ipc`).
    #[serde(default)]
    pub driver_on_path: bool,
}

/// How many of the slowest samples are kept for the jitter analysis.
pub const SLOW_SAMPLES_KEPT: usize = 4096;

/// Stalls logged per hot thread.
pub const STALLS_LOGGED: usize = 100_000;
