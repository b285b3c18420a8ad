//! The report model and its two renderings: JSON for scripts, a text table for people.
//!
//! Guarantees:
//! - The JSON field names of [`Report`] (and of its `groups`, `env`, `tool` and stats entries)
//!   are a contract: scripts rely on them, and tests pin them. Add fields, never rename.
//! - Every report carries the timing model ([`crate::sys::clock::TIMING_MODEL`]) and says which
//!   latency is which: `latency_ns` is measured from the intended (scheduled) send time,
//!   `latency_actual_ns` from the actual send time.
//! - The numbers always add up or the report says they do not: the text accounting line checks
//!   `received + before_join + lost == sent`, and [`Report::from_recorder`] adds a note for every anomaly
//!   (publisher vanished, negative or clamped latencies, sequence numbers beyond the plan, ...).
//! - [`write_json`] never leaves a half-written file at the target path: it writes a temporary
//!   file in the same directory, syncs it, then renames it over the target.
//! - Nothing here is on the hot path; it allocates freely.

use crate::model::Env;
use crate::model::GroupRow;
use crate::model::Stats;
use crate::model::Tool;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One of the [`GROUPS`](crate::model::GROUPS) time-ordered groups: its planned sequence range, the intended-time
/// latency flattened into the entry, and the actual-time latency nested under `actual`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct GroupReport {
    /// Group index, in send order.
    pub index: usize,
    /// First planned sequence number of the group (global seq space, warm-up included).
    pub first_seq: u64,
    /// Last planned sequence number of the group (inclusive).
    pub last_seq: u64,
    /// Latency from the intended send time (its fields appear directly in the entry).
    #[serde(flatten)]
    pub latency: Stats,
    /// Latency from the actual send time.
    pub actual: Stats,
    /// What the OS counters did during this group (when diagnostics ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<crate::model::GroupJitter>,
}

impl From<&GroupRow> for GroupReport {
    fn from(g: &GroupRow) -> Self {
        GroupReport {
            index: g.index,
            first_seq: g.first_seq,
            last_seq: g.last_seq,
            latency: g.intended,
            actual: g.actual,
            jitter: None,
        }
    }
}

/// The version of the JSON format this build writes (`schema_version` in [`Report`],
/// [`crate::model::AbReport`] and [`crate::model::PubReport`], also where a report holds the
/// publisher's). It rises when a field changes meaning or goes away (adding a field does not:
/// readers ignore what they do not know); CHANGELOG.md says what each version changed and how
/// to migrate. Reports written before the field existed read as version 1.
pub const SCHEMA_VERSION: u32 = 3;

/// `schema_version` of a report written before the field existed.
#[must_use]
pub fn schema_version_1() -> u32 {
    1
}

/// Everything a run reports. Field names are the JSON contract.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Report {
    /// The version of this report's JSON format ([`SCHEMA_VERSION`] when written by this
    /// build; 1 for reports from before the field existed).
    #[serde(default = "schema_version_1")]
    pub schema_version: u32,
    /// Messages the publisher sent (warm-up included), from its end marker; `null` if none came.
    pub sent: Option<u64>,
    /// Unique messages received (warm-up included).
    pub received: u64,
    /// Messages never received (after the subscriber joined: not `before_join`).
    pub lost: u64,
    /// Messages sent before the subscriber's image joined the stream (below the first
    /// sequence number it received): never owed to it, not lost. Absent when zero (and in
    /// reports written before version 3).
    #[serde(default, skip_serializing_if = "crate::model::is_zero")]
    pub before_join: u64,
    /// Messages received more than once (extra copies).
    pub duplicates: u64,
    /// Messages that arrived after a higher sequence number.
    pub reordered: u64,
    /// Payloads that were not our schema.
    pub decode_errors: u64,
    /// Target send rate, messages per second.
    pub rate_target: f64,
    /// Achieved send rate, messages per second.
    pub rate_achieved: f64,
    /// Latency from the intended send time (coordinated-omission corrected), nanoseconds.
    pub latency_ns: Stats,
    /// Latency from the actual send time (what the transport adds), nanoseconds.
    pub latency_actual_ns: Stats,
    /// The [`GROUPS`](crate::model::GROUPS) time-ordered groups.
    pub groups: Vec<GroupReport>,
    /// Offer/try_claim outcome name -> count (see [`crate::model::OFFER_OUTCOMES`]).
    pub offer: BTreeMap<String, u64>,
    /// Machine and software.
    pub env: Env,
    /// [`TIMING_MODEL`](crate::sys::clock::TIMING_MODEL).
    pub timing_model: String,
    /// `false` if the run did not finish as planned (see `incomplete_reason`).
    pub complete: bool,
    /// Why the run is incomplete, in plain words.
    pub incomplete_reason: Option<String>,
    /// `true` if the publisher's end marker never arrived.
    pub publisher_vanished: bool,
    /// Messages with a sequence number beyond the plan (counted in `received`).
    pub out_of_range: u64,
    /// Unique warm-up messages received (counted in `received`, not in the latencies).
    pub warmup_received: u64,
    /// Message size in bytes.
    pub msg_size: u64,
    /// Measured duration, seconds.
    pub duration_s: f64,
    /// The program that wrote this report.
    pub tool: Tool,
    /// When the run started, UTC, `YYYY-MM-DDTHH:MM:SSZ`.
    pub started_at: String,
    /// Warnings, in plain words.
    pub notes: Vec<String>,
    /// Why this report's one-way figures are not latencies: the send times came from another
    /// clock than the receiver's (another host's CLOCK_MONOTONIC): a latency below zero, or
    /// none under a second. Absent when nothing says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_one_clock: Option<String>,
    /// The publisher's own report, when the run was driven by `latency-probe`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publisher: Option<crate::model::PubReport>,
    /// Jitter diagnosis: counters, slowest samples and the verdict (absent with
    /// `--diagnostics off`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<crate::model::JitterReport>,
    /// What the latencies are: one-way (publisher to subscriber) or round trips (ping to pong
    /// and back, timed on ping's thread).
    #[serde(default)]
    pub mode: RunMode,
    /// Page faults of the hot threads while measuring, and the log buffers pre-faulted before.
    #[serde(default)]
    pub faults: Faults,
    /// The raw cache-line round trip between the two hot cores right before and after the run,
    /// and every percentile as a ratio to it (`latency-probe` only; absent with `--floor 0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<crate::model::Floor>,
    /// The full HdrHistograms, overall and per group (see [`crate::model`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histograms: Option<crate::model::Histograms>,
    /// `latency-probe --runs N`: every run and the run-to-run variation (this report is the
    /// last run's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<crate::model::RunsSummary>,
    /// Little's law (seed 004): achieved rate x mean latency from the intended send time, the
    /// number of messages in flight on average (one-way: published, not yet handled; rtt: up
    /// to 1, the fraction of time the one outstanding message is out, and above 1 those that
    /// waited to be sent while ping was behind its schedule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<f64>,
    /// The media driver's counters over the run (`latency-probe`, read from `cnc.dat` as
    /// AeronStat does): errors, back-pressure and what else moved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_counters: Option<crate::model::DriverCounters>,
}

impl Report {
    /// Little's law: `rate_achieved x mean latency` (see [`Report::in_flight`]).
    #[must_use]
    pub fn littles_law(&self) -> Option<f64> {
        let v = self.rate_achieved * self.latency_ns.mean / 1e9;
        (self.latency_ns.count > 0 && v.is_finite() && v >= 0.0).then_some(v)
    }
}

/// Page faults the hot threads took during the measured phase (`getrusage(RUSAGE_THREAD)` at
/// its start and end), and what was pre-faulted before it so they take none.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub struct Faults {
    /// The publisher's (ping's) hot thread.
    pub publisher: Option<u64>,
    /// The subscriber's (pong's) hot thread.
    pub subscriber: Option<u64>,
    /// What was pre-faulted, one entry per log buffer (`"<side> <what>: <pages, method, time>"`).
    pub prefaulted: Vec<String>,
}

/// What a run measures.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum RunMode {
    /// Publisher to subscriber, timestamps from one host clock (the default).
    #[default]
    OneWay,
    /// Ping to pong and back on two streams, both timestamps on ping's thread: the honest mode
    /// across hosts.
    Rtt,
}

impl RunMode {
    /// The flag value.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            RunMode::OneWay => "one-way",
            RunMode::Rtt => "rtt",
        }
    }
}

impl std::fmt::Display for RunMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for RunMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "one-way" | "oneway" => Ok(RunMode::OneWay),
            "rtt" | "round-trip" => Ok(RunMode::Rtt),
            _ => Err(format!("'{s}' is not a mode; use one-way or rtt")),
        }
    }
}

impl Report {
    /// Attaches the jitter section and its per-group rows (replacing earlier ones).
    pub fn attach_jitter(&mut self, j: crate::model::JitterReport, rows: Vec<Option<crate::model::GroupJitter>>) {
        for (g, r) in self.groups.iter_mut().zip(rows) {
            g.jitter = r;
        }
        self.jitter = Some(j);
    }
}

/// Run parameters [`Report::from_recorder`] cannot know from the recorder.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInfo {
    /// Target send rate, messages per second.
    pub rate_target: f64,
    /// Achieved send rate, messages per second.
    pub rate_achieved: f64,
    /// Message size in bytes.
    pub msg_size: u64,
    /// Measured duration, seconds.
    pub duration_s: f64,
    /// Start time, from [`utc_timestamp`](crate::units::utc_timestamp).
    pub started_at: String,
}
