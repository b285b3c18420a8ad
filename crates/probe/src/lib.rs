//! `latency-probe`: latency probes over Aeron that report percentiles overall and in 20
//! time-ordered groups.
//!
//! # Guarantees
//! - Every report states its timing model ([`clock::TIMING_MODEL`]): one CLOCK_MONOTONIC for
//!   every process on the host; latency from the intended send time (coordinated-omission
//!   corrected) and from the actual send time, side by side.
//! - The hot loops ([`publisher`], [`subscriber`]) do not allocate, lock or make a syscall per
//!   message; histograms are HdrHistograms allocated up front.
//! - Sent, received, lost, duplicated, reordered and undecodable messages always add up
//!   ([`recorder::Accounting::adds_up`]); a run that stops early still reports what it
//!   measured, marked incomplete.
//! - Every report explains its tail ([`jitter`]): per-thread futex calls, context switches,
//!   migrations, page faults and run-queue delay at the 20 group boundaries (perf, or `/proc`
//!   with the reason), the slowest samples lined up with the off-CPU episodes and stalls of the
//!   hot threads, and a verdict in plain words, futex-driven jitter first.
//!
//! The binaries `latency-pub`, `latency-sub` and `latency-probe` are thin wrappers over
//! [`publisher::run`], [`subscriber::run`] and [`probe`].
#![deny(unsafe_code)]

pub mod cli;
pub mod clock;
pub mod counters;
pub mod floor;
pub mod hiccup;
pub mod jitter;
pub mod live;
pub mod output;
pub mod pacing;
pub mod plant;
pub mod probe;
pub mod publisher;
pub mod recorder;
pub mod report;
pub mod results;
pub mod runs;
pub mod stats;
pub mod subscriber;

/// Why a run could not start (bad driver dir, channel, size, core…); the message says how to
/// fix it. Nothing was measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupError(pub String);

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SetupError {}

/// The client both run sides use: connected to the driver at `dir`, its mapped files pre-touched.
///
/// # Errors
/// The driver is missing, dead or unreadable (the message names the directory and the fix).
pub fn connect(dir: &std::path::Path) -> Result<aeron_latency::messaging::Client, SetupError> {
    aeron_latency::messaging::Client::builder()
        .dir(dir)
        .pre_touch_mapped_memory(true)
        .build()
        .map_err(|e| SetupError(e.to_string()))
}
