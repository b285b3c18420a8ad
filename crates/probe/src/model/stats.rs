//! Latency histograms and the summary statistics every report shows.
//!
//! Guarantees:
//! - [`new_latency_histogram`] tracks 1 ns .. 3,600 s with 3 significant digits and auto-resize
//!   off: all memory is allocated when it is built, so recording never allocates.
//! - [`record_saturating`] never panics and never allocates: values above the highest trackable
//!   value are recorded as that value, and it tells the caller it clamped so the report can say so.
//! - [`Stats::from_histogram`] reads percentiles with HdrHistogram's `value_at_quantile`
//!   (nearest rank, reported as the highest value equivalent to the sample at that rank), so
//!   each percentile is within the histogram's resolution (0.1% relative, exact below 2,048 ns)
//!   of the exact nearest-rank percentile of the recorded values. An empty histogram gives all
//!   zeros.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Lowest discernible latency: 1 ns.
pub const LOWEST_DISCERNIBLE_NS: u64 = 1;

/// Highest trackable latency: 3,600 s in nanoseconds. Larger values are clamped to it.
pub const HIGHEST_TRACKABLE_NS: u64 = 3_600 * 1_000_000_000;

/// Significant decimal digits kept by every latency histogram.
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// The quantiles in [`Stats`], in order, with the labels reports use for them.
pub const QUANTILES: [(&str, f64); 6] = [
    ("p50", 0.5),
    ("p90", 0.9),
    ("p95", 0.95),
    ("p99", 0.99),
    ("p99.9", 0.999),
    ("p99.99", 0.9999),
];

/// Summary of one latency histogram, in nanoseconds (`count` in samples).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Stats {
    /// Number of samples.
    pub count: u64,
    /// Smallest sample (lowest equivalent value).
    pub min: u64,
    /// Mean of the samples (each taken at the middle of its histogram bucket).
    pub mean: f64,
    /// 50th percentile.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 95th percentile.
    pub p95: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// 99.99th percentile.
    pub p9999: u64,
    /// Largest sample (highest equivalent value).
    pub max: u64,
}

impl Stats {
    /// Summarises `h`; an empty histogram gives all zeros.
    pub fn from_histogram(h: &Histogram<u64>) -> Stats {
        if h.is_empty() {
            return Stats::default();
        }
        let q = |q: f64| h.value_at_quantile(q);
        Stats {
            count: h.len(),
            min: h.min(),
            mean: h.mean(),
            p50: q(0.5),
            p90: q(0.9),
            p95: q(0.95),
            p99: q(0.99),
            p999: q(0.999),
            p9999: q(0.9999),
            max: h.max(),
        }
    }

    /// The percentiles in the order and with the labels of [`QUANTILES`].
    pub fn percentiles(&self) -> [(&'static str, u64); 6] {
        [
            (QUANTILES[0].0, self.p50),
            (QUANTILES[1].0, self.p90),
            (QUANTILES[2].0, self.p95),
            (QUANTILES[3].0, self.p99),
            (QUANTILES[4].0, self.p999),
            (QUANTILES[5].0, self.p9999),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::histogram::new_latency_histogram;
    use crate::measure::histogram::record_saturating;

    use crate::test_support::test_rng::SplitMix;

    /// Nearest-rank percentile on sorted values, with the same rank rule as HdrHistogram.
    fn oracle(sorted: &[u64], q: f64) -> u64 {
        let n = sorted.len() as u64;
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
        sorted[(rank - 1) as usize]
    }

    fn assert_within_resolution(h: &Histogram<u64>, what: &str, got: u64, exact: u64) {
        // HdrHistogram reports the highest value equivalent to the sample at that rank: the
        // answer is in the same bucket as the exact one, i.e. at most equivalent_range - 1
        // above it, which is < 0.1% of it for 3 significant digits.
        let bucket_lo = h.lowest_equivalent(exact);
        let bucket_hi = h.highest_equivalent(exact);
        assert!(
            (bucket_lo..=bucket_hi).contains(&got),
            "{what}: got {got}, exact {exact}, bucket {bucket_lo}..={bucket_hi}"
        );
        let err = got.abs_diff(exact);
        assert!(err < h.equivalent_range(exact), "{what}: err {err}");
        assert!(
            err as f64 <= exact as f64 * 0.001,
            "{what}: relative error {} > 0.1% (got {got}, exact {exact})",
            err as f64 / exact as f64
        );
    }

    fn check(name: &str, values: &[u64]) {
        let mut h = new_latency_histogram();
        for &v in values {
            assert!(!record_saturating(&mut h, v), "{name}: {v} clamped");
        }
        let mut sorted = values.to_vec();
        sorted.sort_unstable();
        let s = Stats::from_histogram(&h);
        assert_eq!(s.count, values.len() as u64, "{name}");
        for ((label, q), (label2, got)) in QUANTILES.iter().zip(s.percentiles()) {
            assert_eq!(*label, label2);
            let exact = oracle(&sorted, *q);
            assert_within_resolution(&h, &format!("{name} {label}"), got, exact);
        }
        // min is the lowest equivalent of the smallest sample, max the highest of the largest.
        let (lo, hi) = (sorted[0], *sorted.last().unwrap());
        assert_eq!(s.min, if lo == 0 { 0 } else { h.lowest_equivalent(lo) }, "{name} min");
        assert_eq!(s.max, h.highest_equivalent(hi), "{name} max");
        assert!(s.min <= s.p50 && s.p50 <= s.p90 && s.p90 <= s.p95 && s.p95 <= s.p99);
        assert!(s.p99 <= s.p999 && s.p999 <= s.p9999 && s.p9999 <= s.max);
        let exact_mean = values.iter().map(|&v| v as f64).sum::<f64>() / values.len() as f64;
        assert!(
            (s.mean - exact_mean).abs() <= exact_mean * 0.001 + 1.0,
            "{name} mean {} vs {exact_mean}",
            s.mean
        );
    }

    #[test]
    fn histogram_configuration() {
        let h = new_latency_histogram();
        assert_eq!(h.low(), 1);
        assert_eq!(h.high(), 3_600_000_000_000);
        assert_eq!(h.sigfig(), 3);
        assert!(!h.is_auto_resize());
    }

    #[test]
    fn empty_is_all_zero() {
        let h = new_latency_histogram();
        assert_eq!(Stats::from_histogram(&h), Stats::default());
        let s = Stats::default();
        assert_eq!(s.count, 0);
        assert_eq!(s.mean, 0.0);
    }

    #[test]
    fn uniform() {
        let mut r = SplitMix(1);
        let v: Vec<u64> = (0..100_000).map(|_| 1 + r.next() % 1_000_000).collect();
        check("uniform", &v);
    }

    #[test]
    fn exponential_ish() {
        let mut r = SplitMix(2);
        let v: Vec<u64> = (0..100_000).map(|_| (-r.unit().ln() * 20_000.0) as u64 + 500).collect();
        check("exponential", &v);
    }

    #[test]
    fn heavy_tail() {
        // Pareto-like: most samples a few µs, a tail out to seconds.
        let mut r = SplitMix(3);
        let v: Vec<u64> = (0..50_000)
            .map(|_| ((1_000.0 / r.unit().powf(1.2)) as u64).min(HIGHEST_TRACKABLE_NS))
            .collect();
        check("heavy tail", &v);
    }

    #[test]
    fn bimodal() {
        let mut r = SplitMix(4);
        let v: Vec<u64> = (0..100_000)
            .map(|_| {
                if r.next() % 100 < 97 {
                    800 + r.next() % 400
                } else {
                    2_000_000 + r.next() % 500_000
                }
            })
            .collect();
        check("bimodal", &v);
    }

    #[test]
    fn constant() {
        check("constant small", &[777; 10_000]);
        check("constant large", &[123_456_789; 10_000]);
    }

    #[test]
    fn single_value() {
        check("single", &[42]);
        check("single large", &[9_876_543_210]);
        check("single zero", &[0]);
    }

    #[test]
    fn small_counts() {
        for n in 1..=25_u64 {
            let v: Vec<u64> = (1..=n).map(|i| i * 1_001).collect();
            check(&format!("n={n}"), &v);
        }
    }

    #[test]
    fn near_one() {
        let mut r = SplitMix(5);
        let v: Vec<u64> = (0..10_000).map(|_| r.next() % 4).collect();
        check("near one", &v);
    }

    #[test]
    fn near_the_top() {
        let mut r = SplitMix(6);
        let v: Vec<u64> = (0..10_000)
            .map(|_| HIGHEST_TRACKABLE_NS - r.next() % 1_000_000_000)
            .collect();
        check("near top", &v);
        check("at top", &[HIGHEST_TRACKABLE_NS; 3]);
    }

    #[test]
    fn record_saturating_clamps_and_reports() {
        let mut h = new_latency_histogram();
        assert!(!record_saturating(&mut h, 0));
        assert!(!record_saturating(&mut h, HIGHEST_TRACKABLE_NS));
        assert!(record_saturating(&mut h, HIGHEST_TRACKABLE_NS + 1));
        assert!(record_saturating(&mut h, u64::MAX));
        assert_eq!(h.len(), 4);
        assert_eq!(h.count_at(HIGHEST_TRACKABLE_NS), 3);
        assert_eq!(h.high(), HIGHEST_TRACKABLE_NS, "histogram must not have resized");
        let s = Stats::from_histogram(&h);
        assert_eq!(s.min, 0);
        assert_eq!(s.max, h.highest_equivalent(HIGHEST_TRACKABLE_NS));
    }

    #[test]
    fn recording_does_not_grow_the_histogram() {
        let mut h = new_latency_histogram();
        let buckets = h.distinct_values();
        let mut r = SplitMix(7);
        for _ in 0..10_000 {
            record_saturating(&mut h, r.next());
        }
        assert_eq!(h.distinct_values(), buckets);
    }

    #[test]
    fn serde_round_trip() {
        let mut h = new_latency_histogram();
        for v in 1..=1_000 {
            record_saturating(&mut h, v * 1_000);
        }
        let s = Stats::from_histogram(&h);
        let json = serde_json::to_string(&s).unwrap();
        let back: Stats = serde_json::from_str(&json).unwrap();
        assert_eq!(s, back);
    }
}
