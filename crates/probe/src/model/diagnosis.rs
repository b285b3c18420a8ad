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
    /// What it is.
    pub cause: crate::model::Cause,
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
    /// Gave the CPU away in `sched_yield`. Written only when not zero: reports from before
    /// yields were told apart, and runs where the kernel hides its symbols, count them as
    /// preempted.
    #[serde(default, skip_serializing_if = "crate::model::is_zero")]
    pub yielded: u64,
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

/// Which band the verdict's headline explains (`--explain`): the band whose upper edge is that
/// percentile, i.e. the messages that were pushed up to it from the band below.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Explain {
    /// p50–p90.
    #[serde(rename = "p90")]
    P90,
    /// p90–p99.
    #[default]
    #[serde(rename = "p99")]
    P99,
    /// p99–p99.9.
    #[serde(rename = "p99.9")]
    P999,
    /// p99.9–max.
    #[serde(rename = "max")]
    Max,
}

impl Explain {
    /// All of them, in band order.
    pub const ALL: [Explain; 4] = [Explain::P90, Explain::P99, Explain::P999, Explain::Max];

    /// The flag value (`p90`, `p99`, `p99.9`, `max`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Explain::P90 => "p90",
            Explain::P99 => "p99",
            Explain::P999 => "p99.9",
            Explain::Max => "max",
        }
    }

    /// The band it explains (`p90-p99` for p99).
    #[must_use]
    pub fn band(self) -> &'static str {
        match self {
            Explain::P90 => "p50-p90",
            Explain::P99 => "p90-p99",
            Explain::P999 => "p99-p99.9",
            Explain::Max => "p99.9-max",
        }
    }

    /// Its position in [`Explain::ALL`] (and in `jitter.bands`).
    #[must_use]
    pub fn index(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for Explain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Explain {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "p90" => Ok(Explain::P90),
            "p99" => Ok(Explain::P99),
            "p99.9" | "p999" => Ok(Explain::P999),
            "max" | "p100" => Ok(Explain::Max),
            _ => Err(format!(
                "'{s}' is not a percentile to explain; use p90, p99, p99.9 or max"
            )),
        }
    }
}

/// One cause's part of a band.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BandCause {
    /// What it is.
    pub cause: crate::model::Cause,
    /// Whose: `ours` (the process, its threads and their placement) or `platform` (other
    /// processes, the hypervisor, interrupts).
    pub owner: crate::model::Owner,
    /// The hot thread it delayed (empty: the process as a whole).
    pub thread: String,
    /// For a preemption: who took the CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// Its share of the band's excess over p50 (0..=1): the part of each message's latency
    /// above p50 that an episode of this cause covered, summed over the band.
    pub share: f64,
    /// Messages of the band it covered at least a tenth of the excess of (estimated).
    pub messages: u64,
    /// The cause in words.
    pub words: String,
}

/// One band of the distribution and what its excess over p50 lines up with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Band {
    /// `p50-p90`, `p90-p99`, `p99-p99.9` or `p99.9-max`.
    pub band: String,
    /// Latencies above this (the lower percentile), ns.
    pub from_ns: u64,
    /// Up to and including this (the upper percentile), ns.
    pub to_ns: u64,
    /// Measured messages in the band (estimated from the stratified sample).
    pub samples: u64,
    /// Of them, attributed one by one (the kept samples).
    pub analysed: u64,
    /// Mean excess over p50 of its messages, ns.
    pub mean_excess_ns: u64,
    /// Causes by share, largest first.
    pub causes: Vec<BandCause>,
    /// Share of the excess no episode covered.
    pub unexplained: f64,
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
    /// Each band of the distribution (p50–p90, p90–p99, p99–p99.9, p99.9–max) by cause.
    #[serde(default)]
    pub bands: Vec<Band>,
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
