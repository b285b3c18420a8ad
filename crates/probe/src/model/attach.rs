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
}
