//! The floor in a report: the raw cache-line round trip measured before and after a run, and
//! every latency percentile as a ratio to it.

use crate::model::Stats;
use crate::model::QUANTILES;
use serde::{Deserialize, Serialize};

/// How each floor round trip is timed; the report carries it verbatim.
pub const FLOOR_TIMING_MODEL: &str = "floor = raw cache-line round trip between the two hot cores: one \
thread stores a counter, the other spins until it sees it and stores it + 1, the first spins until it sees \
that; timed by two CLOCK_MONOTONIC readings on the first thread (the same clock and the same number of \
readings as a probe round trip); no Aeron, no allocation, no syscall";

/// Before/after p50s further apart than this factor mean the machine's inter-core latency
/// changed regime during the run.
pub const MOVED_FACTOR: f64 = 1.5;

/// One floor measurement, summarised.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FloorSample {
    /// Round-trip percentiles, ns.
    pub round_trip_ns: Stats,
    /// When it started, CLOCK_MONOTONIC ns.
    pub at_ns: i64,
}

/// The floor around one measured phase, and every reported percentile as a ratio to it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Floor {
    /// Initiator and responder cores (the run's publisher and subscriber cores).
    pub cores: (Option<usize>, Option<usize>),
    /// Length of each measurement, seconds.
    pub seconds_each: f64,
    /// Right before the measured phase.
    pub before: FloorSample,
    /// Right after it (absent when the run ended too badly to measure again).
    pub after: Option<FloorSample>,
    /// Before and after merged: the reference the ratios divide by.
    pub combined_ns: Stats,
    /// Whether before and after p50 differ by more than [`MOVED_FACTOR`].
    pub moved: bool,
    /// Percentile name -> the run's latency (from the intended time) at it divided by the
    /// floor's at the same percentile.
    pub ratios: Vec<(String, f64)>,
    /// [`FLOOR_TIMING_MODEL`].
    pub timing_model: String,
}

/// Whether two floor p50s are in different regimes (more than [`MOVED_FACTOR`] apart).
#[must_use]
pub fn regime_moved(a: u64, b: u64) -> bool {
    let (lo, hi) = (a.min(b).max(1) as f64, a.max(b) as f64);
    hi / lo > MOVED_FACTOR
}

/// Each of [`QUANTILES`] of `latency` divided by the same quantile of `floor`.
#[must_use]
pub fn ratios(latency: &Stats, floor: &Stats) -> Vec<(String, f64)> {
    latency
        .percentiles()
        .iter()
        .zip(floor.percentiles())
        .zip(QUANTILES)
        .map(|(((_, l), (_, f)), (name, _))| (name.to_owned(), *l as f64 / f.max(1) as f64))
        .collect()
}
