//! The `jitter` section of a report (JSON and text).

use crate::model::Counts;
use crate::model::HiccupWindow;
use crate::model::ReadCost;
use crate::model::Role;
use crate::model::SourceInfo;
use crate::model::Stats;
use serde::{Deserialize, Serialize};

/// One cause found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// `futex`, `blocked`, `preempted-own`, `preempted-foreign`, `preempted`, `page-faults`,
    /// `migrations`, `stall`, `platform`, `probe-reads`.
    pub cause: String,
    /// The thread it is about (`name (role)`).
    pub thread: String,
    /// The numbers.
    pub evidence: String,
    /// The usual fix.
    pub fix: String,
    /// Share of tail samples whose window overlaps an episode of this cause, 0..=1 (`None`:
    /// this source cannot line episodes up with samples).
    pub tail_share: Option<f64>,
}

/// The verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// `clean`, `futex-driven`, or `unknown` (the source cannot tell).
    pub futex: String,
    /// One sentence.
    pub headline: String,
    /// All causes found, futex first.
    pub findings: Vec<Finding>,
}

/// One of the slowest samples with what lined up with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outlier {
    /// Sequence number.
    pub seq: u64,
    /// Latency from the intended send time, ns.
    pub latency_ns: u64,
    /// Intended send time, ms after the measured period started.
    pub at_ms: f64,
    /// What overlapped its window, in words.
    pub causes: Vec<String>,
}

/// Stalls of a hot loop, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StallSummary {
    /// Gaps at least this long count.
    pub threshold_ns: u64,
    /// How many.
    pub count: u64,
    /// Their total, ns.
    pub total_ns: u64,
    /// The longest, ns.
    pub max_ns: u64,
}

/// Off-CPU episodes of a hot thread, summed (perf only).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffCpuSummary {
    /// Preempted while runnable.
    pub preempted: u64,
    /// Blocked (futex, sleep, I/O).
    pub blocked: u64,
    /// Total time off CPU, ns.
    pub total_ns: u64,
    /// Records the kernel dropped.
    pub lost_records: u64,
}

/// One watched thread over the measured period.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadSummary {
    /// The process it belongs to (`latency-sub`, `latency-pub`, or the driver's process name).
    pub process: String,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: i32,
    /// Name.
    pub name: String,
    /// What it is.
    pub role: Role,
    /// Counters over the measured period.
    pub total: Counts,
    /// Stalls its loop saw (hot loops).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stalls: Option<StallSummary>,
    /// Its off-CPU episodes (hot threads, perf).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off_cpu: Option<OffCpuSummary>,
}

/// The hiccup meter's part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HiccupSection {
    /// `ran on core N` or `skipped: why`.
    pub status: String,
    /// Iterations (gaps measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u64>,
    /// All gaps between its iterations, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gaps: Option<Stats>,
    /// Gaps at least this long were logged with their time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold_ns: Option<u64>,
}

/// Counters of one thread in one group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupThread {
    /// Thread name.
    pub name: String,
    /// Thread id.
    pub tid: i32,
    /// What it is.
    pub role: Role,
    /// Counters in this group.
    pub counts: Counts,
}

/// What the counters did during one group (attached to the group's row).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupJitter {
    /// Every watched thread with data for this group.
    pub threads: Vec<GroupThread>,
    /// Stalls of the hot loops that started in this group.
    pub stalls: u64,
    /// Hypervisor steal time in this group, all CPUs, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_ns: Option<u64>,
    /// The hiccup meter in this group's time window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hiccup: Option<HiccupWindow>,
}

/// Samples above p99.9, by what lined up with them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TailSummary {
    /// p99.9 of the latency from the intended send time.
    pub threshold_ns: u64,
    /// Samples at or above it that were kept.
    pub samples: u64,
    /// By first cause.
    pub by_cause: std::collections::BTreeMap<String, u64>,
}

/// The `jitter` section of a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JitterReport {
    /// The counter source, and why not perf when it is not.
    pub source: SourceInfo,
    /// The verdict in plain words.
    pub verdict: Verdict,
    /// Tail samples by cause.
    pub tail: TailSummary,
    /// The slowest samples with what lined up with them.
    pub outliers: Vec<Outlier>,
    /// Every watched thread.
    pub threads: Vec<ThreadSummary>,
    /// The hiccup meter.
    pub hiccup: HiccupSection,
    /// The probe's own counter reads.
    pub probe_cost: ReadCost,
    /// Threads that could not be watched, and other remarks.
    pub notes: Vec<String>,
}
