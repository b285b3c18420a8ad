//! What the hiccup meter saw: its gaps, and their share per group window.

use crate::model::Stats;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// What the meter saw, serialisable. The full histogram is kept in memory only
/// ([`HiccupLog::histogram`]); the serialised form carries its summary ([`HiccupLog::all_gaps`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HiccupLog {
    /// Core the meter was pinned to; `None` when it ran unpinned.
    pub core: Option<usize>,
    /// Linux thread id of the meter thread.
    pub tid: i32,
    /// First clock reading of the loop (`CLOCK_MONOTONIC` ns).
    pub started_ns: i64,
    /// Last clock reading of the loop (`CLOCK_MONOTONIC` ns). All gaps add up to
    /// `stopped_ns - started_ns`.
    pub stopped_ns: i64,
    /// Number of gaps measured: clock readings minus one. Equals `all_gaps.count`.
    pub iterations: u64,
    /// Gaps of at least this many nanoseconds are logged in `gaps`.
    pub threshold_ns: u64,
    /// Gaps >= threshold: (start_ns of the gap on CLOCK_MONOTONIC, gap length ns), in time order.
    /// Gaps never overlap: each starts at or after the end of the previous one.
    pub gaps: Vec<(i64, u64)>,
    /// Gaps over threshold that did not fit in `max_logged` (still counted in the histogram).
    /// They are the latest ones: the log keeps the first `max_logged`.
    pub gaps_not_logged: u64,
    /// Summary of ALL iteration gaps (`all_gaps.count == iterations`).
    pub all_gaps: Stats,
    /// The histogram `all_gaps` summarises; `None` after deserialising (HdrHistogram is not
    /// serde) or for a hand-built log.
    #[serde(skip)]
    pub histogram: Option<Histogram<u64>>,
}

/// End of a gap, saturating.
fn gap_end(start: i64, len: u64) -> i64 {
    start.saturating_add(i64::try_from(len).unwrap_or(i64::MAX))
}

impl HiccupLog {
    /// Per-window summary aligned with the probe's groups: `bounds` are CLOCK_MONOTONIC times
    /// (non-decreasing), window i = `[bounds[i], bounds[i+1])`. A logged gap belongs to the window
    /// its start falls in (a gap crossing a bound is not split). Only logged gaps
    /// (`>= threshold_ns`, the first `max_logged`) are counted.
    ///
    /// Returns bounds.len()-1 entries (empty if < 2 bounds).
    #[must_use]
    pub fn windows(&self, bounds: &[i64]) -> Vec<HiccupWindow> {
        bounds
            .windows(2)
            .map(|w| {
                let (lo, hi) = (w[0], w[1]);
                if hi <= lo {
                    return HiccupWindow::default();
                }
                let a = self.gaps.partition_point(|&(s, _)| s < lo);
                let b = self.gaps.partition_point(|&(s, _)| s < hi);
                self.gaps[a..b.max(a)]
                    .iter()
                    .fold(HiccupWindow::default(), |acc, &(_, len)| HiccupWindow {
                        gaps: acc.gaps + 1,
                        max_ns: acc.max_ns.max(len),
                        total_ns: acc.total_ns.saturating_add(len),
                    })
            })
            .collect()
    }

    /// Logged gaps that overlap [from_ns, to_ns] (for lining up a slow sample with the meter):
    /// `(count, longest gap ns)`, `(0, 0)` if none. A gap `(start, len)` overlaps if
    /// `start <= to_ns && start + len >= from_ns`.
    #[must_use]
    pub fn overlapping(&self, from_ns: i64, to_ns: i64) -> (u64, u64) {
        // Gaps do not overlap each other, so both their starts and their ends are sorted.
        let a = self.gaps.partition_point(|&(s, len)| gap_end(s, len) < from_ns);
        let b = self.gaps.partition_point(|&(s, _)| s <= to_ns);
        self.gaps[a..b.max(a)]
            .iter()
            .filter(|&&(s, len)| s <= to_ns && gap_end(s, len) >= from_ns)
            .fold((0, 0), |(n, max), &(_, len)| (n + 1, max.max(len)))
    }
}

/// The logged gaps in one window of [`HiccupLog::windows`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct HiccupWindow {
    /// Number of logged gaps that started in the window.
    pub gaps: u64,
    /// Longest of them (ns), 0 if none.
    pub max_ns: u64,
    /// Their total length (ns).
    pub total_ns: u64,
}
