//! What `latency-pub` reports: its sends, offer outcomes, publish-only cost and how it ended.

use crate::model::Env;
use crate::model::Stats;
use crate::model::Tool;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The publisher's own report (`latency-pub --json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PubReport {
    /// The version of this report's JSON format ([`SCHEMA_VERSION`](crate::model::SCHEMA_VERSION)
    /// when written by this build; 1 for reports from before the field existed).
    #[serde(default = "crate::model::schema_version_1")]
    pub schema_version: u32,
    /// Messages sent, warm-up included (the count the end marker carries).
    pub sent: u64,
    /// Warm-up messages sent.
    pub warmup_sent: u64,
    /// Measured messages sent.
    pub measured_sent: u64,
    /// Messages planned (warm-up + measured).
    pub planned: u64,
    /// Whether the end marker was published.
    pub end_marker_sent: bool,
    /// Target rate, msg/s.
    pub rate_target: f64,
    /// Achieved rate over the measured messages, msg/s.
    pub rate_achieved: f64,
    /// Offer/try_claim outcome -> count (`ok` counts successes; the others count failed attempts).
    pub offer: BTreeMap<String, u64>,
    /// Messages sent before any subscriber was connected (always 0: we wait for one).
    pub sent_before_connected: u64,
    /// When the run stopped because the subscriber went away: how many of the sent messages
    /// it had read when its position stopped moving (Aeron's `sub-pos` counter, sampled
    /// every 250 ms), and how many were sent after that and never read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscriber_lost: Option<SubscriberLost>,
    /// Whether the run stopped because the media driver stopped responding.
    #[serde(default)]
    pub driver_lost: bool,
    /// The publication it wrote with (`--publication`).
    #[serde(default = "PublicationKind::legacy")]
    pub publication: PublicationKind,
    /// Largest delay of an actual send behind its intended time, ns.
    pub max_lag_ns: u64,
    /// A planted delay (`--plant-delay-ns`): the publisher busy-waited this long per message
    /// between its actual-send stamp and the commit, so both latency columns carry it. Zero
    /// (and absent from the JSON): nothing planted.
    #[serde(default, skip_serializing_if = "crate::model::is_zero")]
    pub plant_delay_ns: u64,
    /// Publish-only cost (claim + encode + commit) of the measured messages, ns: when the
    /// offer returned, from the actual send time (one-way mode; empty in round trips).
    pub publish_cost_ns: Stats,
    /// The same as an HdrHistogram (V2 + DEFLATE, base64), for `stages`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publish_cost_histogram: Option<String>,
    /// When the offer of each measured message returned, from its intended send time
    /// (one-way mode; empty in round trips).
    #[serde(default)]
    pub offer_returned_ns: Stats,
    /// The same as an HdrHistogram (V2 + DEFLATE, base64), for `stages`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offer_returned_histogram: Option<String>,
    /// When message 0 was due, CLOCK_MONOTONIC ns: with the rate, every intended send time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_start_ns: Option<i64>,
    /// Message size, bytes.
    pub msg_size: u64,
    /// Measured duration, seconds.
    pub duration_s: f64,
    /// Whether the run went to plan.
    pub complete: bool,
    /// Why not.
    pub incomplete_reason: Option<String>,
    /// Warnings.
    pub notes: Vec<String>,
    /// Core of the hot thread, if pinned.
    pub core: Option<usize>,
    /// Linux thread id of the hot thread.
    pub hot_tid: i32,
    /// The machine.
    pub env: Env,
    /// [`TIMING_MODEL`](crate::sys::clock::TIMING_MODEL).
    pub timing_model: String,
    /// This program.
    pub tool: Tool,
    /// Start, UTC.
    pub started_at: String,
    /// Jitter diagnosis of the publisher's process alone (latency-probe analyses both sides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<crate::model::JitterReport>,
    /// The raw jitter material (for `--jitter-raw`); not part of the JSON report.
    #[serde(skip)]
    pub raw_jitter: Option<crate::model::RawJitter>,
    /// Page faults of the hot thread during the measured phase.
    #[serde(default)]
    pub faults_measured: Option<u64>,
    /// What was pre-faulted before measuring.
    #[serde(default)]
    pub prefaulted: Vec<String>,
}

/// What the publisher knows about a subscriber that went away mid-run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SubscriberLost {
    /// Messages (warm-up included) the subscriber had read when its position last moved.
    pub read_before: u64,
    /// Messages sent after that, never read.
    pub sent_after: u64,
    /// Seconds between the subscriber's last progress and the end of the run.
    pub silent_s: f64,
}

/// Which of messaging's publications the publisher (and pong's echo) wrote with.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum PublicationKind {
    /// `Client::exclusive_publication`: the log written directly, no lock (the default).
    #[default]
    Exclusive,
    /// `Client::publication`: Aeron's concurrent publication (any number of writers, one
    /// atomic add on the tail per message). Reports written before it had Aeron's name say
    /// `shared`, which still reads.
    #[serde(alias = "shared")]
    Concurrent,
}

impl PublicationKind {
    /// The flag value.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            PublicationKind::Exclusive => "exclusive",
            PublicationKind::Concurrent => "concurrent",
        }
    }

    /// What reports written before the choice existed used.
    #[must_use]
    pub fn legacy() -> Self {
        PublicationKind::Concurrent
    }
}

impl std::fmt::Display for PublicationKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for PublicationKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "exclusive" => Ok(PublicationKind::Exclusive),
            // `shared`: this flag's value before it took Aeron's name.
            "concurrent" | "shared" => Ok(PublicationKind::Concurrent),
            _ => Err(format!("'{s}' is not a publication; use exclusive or concurrent")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::PublicationKind;

    #[test]
    fn the_concurrent_publication_takes_aeron_s_name_and_old_reports_still_read() {
        assert_eq!("concurrent".parse(), Ok(PublicationKind::Concurrent));
        assert_eq!("shared".parse(), Ok(PublicationKind::Concurrent));
        assert_eq!(PublicationKind::Concurrent.to_string(), "concurrent");
        let old: PublicationKind = serde_json::from_str("\"shared\"").unwrap();
        assert_eq!(old, PublicationKind::Concurrent);
        assert_eq!(serde_json::to_string(&old).unwrap(), "\"concurrent\"");
        assert!("bogus"
            .parse::<PublicationKind>()
            .unwrap_err()
            .contains("exclusive or concurrent"));
    }
}
