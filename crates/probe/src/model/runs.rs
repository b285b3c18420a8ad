//! Repeated runs (`latency-probe --runs N`) and comparing two reports (`latency-probe compare`).
//!
//! Guarantees:
//! - Every run is a full measurement (floor, both processes, report); the summary lists each
//!   run's percentiles of the latency from the intended send time and, per percentile, the
//!   run-to-run variation exactly as JLBH computes it:
//!   `100 * (max - min) / (max + min / 2)` over the runs counted. Counted: the complete runs,
//!   leaving out the first when there are three or more (JLBH's `skipFirstRun` option; when to
//!   use it is our rule: the first run warms caches and the page cache).
//! - `compare` compares the median of the counted runs when a file has runs (else its one
//!   report), and calls a change real only when it exceeds the run-to-run spread recorded in
//!   the two files, `100 * (max - min) / min` of the counted runs (the larger of the two, per
//!   percentile: wider than JLBH's figure, so a value inside a file's own range is never called
//!   a change); without recorded runs it says it cannot tell, instead of guessing.

use crate::model::Stats;
use serde::{Deserialize, Serialize};

/// The percentiles the summary and `compare` cover, with their JSON names.
pub const PERCENTILES: [&str; 7] = ["p50", "p90", "p99", "p999", "p9999", "max", "mean"];

/// A percentile's value from [`Stats`] by its JSON name.
#[must_use]
pub fn value(s: &Stats, name: &str) -> u64 {
    match name {
        "p50" => s.p50,
        "p90" => s.p90,
        "p95" => s.p95,
        "p99" => s.p99,
        "p999" => s.p999,
        "p9999" => s.p9999,
        "max" => s.max,
        "min" => s.min,
        "mean" => s.mean.max(0.0).round() as u64,
        _ => 0,
    }
}

/// How a percentile name reads in text.
#[must_use]
pub fn label(name: &str) -> &str {
    match name {
        "p999" => "p99.9",
        "p9999" => "p99.99",
        other => other,
    }
}

/// One run of several.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct RunPoint {
    /// 1-based.
    pub run: u32,
    /// Latency from the intended send time.
    pub latency_ns: Stats,
    /// Whether the run went to plan, nothing lost.
    pub complete: bool,
    /// Messages lost.
    pub lost: u64,
    /// Achieved rate, msg/s.
    pub rate_achieved: f64,
    /// The floor's combined p50 (raw round trip), when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor_p50_ns: Option<u64>,
}

/// One percentile across the runs.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Variation {
    /// JSON name (`p50`, `p99`, `p999`, ...).
    pub percentile: String,
    /// Smallest value over the runs counted.
    pub min_ns: u64,
    /// Largest.
    pub max_ns: u64,
    /// JLBH's variation, percent: `100 * (max - min) / (max + min / 2)`.
    pub variation_pct: f64,
    /// The spread over the runs counted, percent: `100 * (max - min) / min`.
    #[serde(default)]
    pub spread_pct: f64,
    /// Median over the runs counted.
    #[serde(default)]
    pub median_ns: u64,
}

/// `--runs N`: each run and the run-to-run variation.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct RunsSummary {
    /// Every run, in order.
    pub runs: Vec<RunPoint>,
    /// Whether the first run was left out of the variation (three runs or more).
    pub first_run_skipped: bool,
    /// Per percentile.
    pub variation: Vec<Variation>,
}

/// One percentile of a comparison.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Change {
    /// JSON name.
    pub percentile: String,
    /// A's median over the runs compared, ns.
    pub a_ns: u64,
    /// B's, ns.
    pub b_ns: u64,
    /// The estimated change B vs A, percent (the Hodges-Lehmann shift of the runs' log values).
    pub change_pct: f64,
    /// The interval's low end, percent (absent with too few runs for one).
    pub ci_low_pct: Option<f64>,
    /// Its high end, percent.
    pub ci_high_pct: Option<f64>,
    /// `better`, `worse`, `no change` (within `--resolve`), `inconclusive` (an interval around
    /// zero reaching past it) or `cannot tell`.
    pub verdict: String,
    /// With `no change` or `inconclusive`: the change either way the runs could have
    /// resolved, percent.
    pub resolvable_pct: Option<f64>,
}

/// `compare A B`: per percentile, the change and its verdict, and what the reader must know.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The intervals' confidence (0.99: 99%).
    pub confidence: f64,
    /// A's runs compared (its counted runs, less any on another floor regime).
    pub runs_a: u32,
    /// B's.
    pub runs_b: u32,
    /// With `cannot tell`: the runs each file needs for an interval at this confidence.
    pub runs_needed: u32,
    /// Per percentile.
    pub changes: Vec<Change>,
    /// Runs left out and why.
    pub notes: Vec<String>,
}
