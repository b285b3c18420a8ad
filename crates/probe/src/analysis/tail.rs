//! The tail lined up: which episodes cover the samples above p99.9, and the slowest samples
//! in words, for the findings (`analysis/findings.rs`) and the verdict
//! ([`crate::analysis::verdict`]).

use crate::analysis::lineup::Hit;
use crate::analysis::lineup::Lineup;
use crate::analysis::lineup::MATERIAL;
use crate::model::Cause;
use crate::model::Outlier;
use crate::model::SlowSample;
use crate::units::format_ns;
use std::collections::BTreeMap;

/// How many outliers the report lists.
pub const OUTLIERS_LISTED: usize = 20;

/// The tail lined up: each tail sample's first cause, which (cause, thread) pairs cover at
/// least 1/[`MATERIAL`] of how many tail samples, and the listed outliers in words.
pub(crate) struct Tail {
    pub(crate) threshold_ns: u64,
    /// Tail samples.
    pub(crate) n: u64,
    /// Only the slowest [`crate::model::SLOW_SAMPLES_KEPT`] samples were kept, all in the tail.
    capped: bool,
    pub(crate) by_cause: BTreeMap<String, u64>,
    share: BTreeMap<(Cause, i32), u64>,
    pub(crate) outliers: Vec<Outlier>,
}

impl Tail {
    /// Every episode overlapping a sample's window, weighted by how much of the window it
    /// covers; only episodes covering at least 1/MATERIAL of the latency count as a cause (on a
    /// busy 2-core machine every window of a few ms holds some preemption; a 12 µs one does not
    /// explain a 4 ms sample).
    pub(crate) fn line_up(lineup: &Lineup<'_>, slow: &[SlowSample], run_start: i64) -> Tail {
        let threshold_ns = lineup.ctx.tail_threshold_ns;
        let mut by_cause: BTreeMap<String, u64> = BTreeMap::new();
        let mut share: BTreeMap<(Cause, i32), u64> = BTreeMap::new();
        let mut outliers = Vec::new();
        for (rank, s) in slow.iter().enumerate() {
            // Words are written only for the listed outliers, and an overlap too small to be a
            // cause is skipped for the others: a sample delayed by a long lag behind schedule
            // overlaps thousands of episodes and stalls, and 4,096 such samples must stay cheap.
            let detail = rank < OUTLIERS_LISTED;
            let counts = |overlap: u64| detail || overlap.saturating_mul(MATERIAL) >= s.latency_ns;
            let mut hits = lineup.hits(s, detail, &counts);
            hits.sort_by_key(|h| std::cmp::Reverse(h.overlap));
            let material: Vec<&Hit> = hits
                .iter()
                .filter(|h| h.overlap.saturating_mul(MATERIAL) >= s.latency_ns)
                .collect();
            if s.latency_ns >= threshold_ns {
                let first = material.first().map_or("none", |h| h.key.as_str());
                *by_cause.entry(first.to_owned()).or_default() += 1;
                let mut seen: Vec<(Cause, i32)> = Vec::new();
                for h in &material {
                    if !seen.contains(&(h.key, h.tid)) {
                        seen.push((h.key, h.tid));
                        *share.entry((h.key, h.tid)).or_default() += 1;
                    }
                }
            }
            if detail {
                outliers.push(outlier(s, &hits, &material, run_start));
            }
        }
        let n = slow.iter().filter(|s| s.latency_ns >= threshold_ns).count() as u64;
        Tail {
            threshold_ns,
            n,
            // Past ~4 M messages the tail above p99.9 is larger than what is kept; words say so.
            capped: !slow.is_empty() && n as usize == slow.len() && slow.len() >= crate::model::SLOW_SAMPLES_KEPT,
            by_cause,
            share,
            outliers,
        }
    }

    /// Share of the tail samples an episode of `cause` (on thread `tid`, or any) covers.
    pub(crate) fn share(&self, cause: Cause, tid: Option<i32>) -> Option<f64> {
        if self.n == 0 {
            return Some(0.0);
        }
        let hits: u64 = self
            .share
            .iter()
            .filter(|((k, t), _)| *k == cause && tid.is_none_or(|x| x == *t))
            .map(|(_, v)| *v)
            .sum();
        Some(hits as f64 / self.n as f64)
    }

    /// Tail samples whose first cause is `cause`.
    pub(crate) fn first_cause(&self, cause: Cause) -> u64 {
        self.by_cause.get(cause.as_str()).copied().unwrap_or(0)
    }

    /// `; 40% of the 60 samples above p99.9 (…) overlap such an episode …` (empty without a share).
    pub(crate) fn words(&self, share: Option<f64>) -> String {
        let (n, at) = (self.n, format_ns(self.threshold_ns));
        let which = if self.capped {
            format!("the slowest {n} samples (all above p99.9, {at}; more were not kept)")
        } else {
            format!("the {n} samples above p99.9 ({at})")
        };
        match share {
            Some(s) if n > 0 => format!(
                "; {:.0}% of {which} overlap such an episode covering at least a tenth of their latency",
                s * 100.0
            ),
            _ => String::new(),
        }
    }
}

/// A listed outlier: its three largest material causes in words, or its largest small overlap.
fn outlier(s: &SlowSample, hits: &[Hit], material: &[&Hit], run_start: i64) -> Outlier {
    let mut words: Vec<String> = material.iter().take(3).map(|h| h.words.clone()).collect();
    if words.is_empty() {
        if let Some(h) = hits.first() {
            words.push(format!("only small overlaps, largest: {}", h.words));
        }
    }
    Outlier {
        seq: s.seq,
        latency_ns: s.latency_ns,
        at_ms: (s.intended_ns - run_start) as f64 / 1e6,
        causes: words,
    }
}
