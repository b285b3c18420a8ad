//! `latency-probe attach`'s report: a running service's threads watched for a while, in the
//! probe's jitter model (per-group counters, per-thread off-CPU picture, findings).

use serde::{Deserialize, Serialize};

use crate::model::{GroupJitter, JitterReport};

/// One watched thread of the service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachedThread {
    /// Linux thread id.
    pub tid: i32,
    /// Its name (`/proc/PID/task/TID/comm`, at most 15 bytes).
    pub name: String,
}

/// What `latency-probe attach` measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttachReport {
    /// The JSON format's version ([`crate::model::SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The attached process.
    pub pid: u32,
    /// Its name (its main thread's).
    pub process: String,
    /// The threads watched as the service's (`--threads`, or all of them), by id.
    pub threads: Vec<AttachedThread>,
    /// The period asked for, seconds.
    pub duration_s: f64,
    /// The period watched, seconds (shorter when the process ended).
    pub watched_s: f64,
    /// UTC, ISO 8601, when watching started.
    pub started_at: String,
    /// Whether the whole period was watched.
    pub complete: bool,
    /// Why not, when not.
    pub incomplete_reason: Option<String>,
    /// The counters and off-CPU findings of the watched threads.
    pub jitter: JitterReport,
    /// Per time-ordered group of the period: what the counters did (`None`: not reached).
    pub groups: Vec<Option<GroupJitter>>,
    /// The service's own latency from its tap, when it runs one (`None`: no tap found).
    #[serde(default)]
    pub tap: Option<AttachTap>,
    /// What attach itself used, start to report (`None`: not measured).
    #[serde(default)]
    pub own_cost: Option<AttachCost>,
}

/// What `latency-probe attach` used itself (`getrusage(RUSAGE_SELF)` at the end, every thread
/// of it from its start: finding the process, watching, reading the tap, the analysis).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AttachCost {
    /// CPU time, user and system, seconds.
    pub cpu_s: f64,
    /// Of it, in the kernel (perf's records read, `/proc` files), seconds.
    pub system_s: f64,
    /// Wall time from its start, seconds.
    pub wall_s: f64,
    /// The most memory it held at once (its peak resident set), KiB.
    pub max_rss_kib: u64,
}

/// One figure of the service's tap over the watched period: the distribution whose bands the
/// verdict explains, and the samples it lined up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachTap {
    /// The tap's directory.
    pub dir: String,
    /// The figure explained (`--hop`).
    pub figure: String,
    /// Every figure of the tap.
    pub figures: Vec<String>,
    /// The threads that record it (its samples were handled there).
    pub recording_tids: Vec<i32>,
    /// The tap's clock.
    pub clock: String,
    /// Its intervals wholly inside the watched period.
    pub intervals: usize,
    /// Their messages.
    pub messages: u64,
    /// p50, p90, p99, p99.9 and max over them, ns: the bands' edges.
    pub edges_ns: [u64; 5],
    /// How many of each interval's slowest messages the tap keeps.
    pub slowest_per_interval: usize,
    /// Of them, received inside the period: the samples lined up.
    pub slowest_kept: usize,
    /// Every message above this latency is among the samples (the highest N-th slowest of an
    /// interval that kept N), ns; a band below it is covered by its slowest part only.
    pub complete_above_ns: u64,
}
