//! What a source records in one interval, on the recording thread: HdrHistogram's counts array
//! (3 significant digits, from 1 ns up) incremented by index, without the histogram's own
//! bookkeeping (its total, minimum and maximum, each updated per value), which the tap's writer
//! rebuilds when it turns the interval into a [`Histogram`](hdrhistogram::Histogram) ([`Tally::drain_into`]). A record
//! is a clamp, a `leading_zeros`, two increments and a 128-bit add (an add and a carry).
//!
//! The layout is HdrHistogram's for `lowest = 1`, 3 significant digits: 2048 sub-buckets,
//! the first bucket holding 0..2047 exactly, each next one twice as wide at half the
//! resolution. The writer records each non-zero count at the lowest value of its index, which
//! HdrHistogram files under the same index: the histogram it rebuilds equals the one that
//! recording each value would have given (the tests check it, extremes included).

use super::record::Counts;
use super::slowest::Slowest;

/// 2^10: half the sub-buckets of 3 significant digits (2048 sub-buckets).
const HALF_COUNT_MAGNITUDE: u32 = 10;
/// The sub-bucket mask (the unit magnitude is 0: the lowest value is 1).
const SUB_BUCKET_MASK: u64 = (1 << (HALF_COUNT_MAGNITUDE + 1)) - 1;
/// 64 minus the sub-bucket count's magnitude (11).
const LEADING_ZERO_COUNT_BASE: u32 = 64 - (HALF_COUNT_MAGNITUDE + 1);

/// HdrHistogram's counts index of `v`.
#[inline]
fn index(v: u64) -> usize {
    let bucket = LEADING_ZERO_COUNT_BASE - (v | SUB_BUCKET_MASK).leading_zeros();
    let sub = (v >> bucket) as usize;
    ((bucket as usize + 1) << HALF_COUNT_MAGNITUDE) + sub - (1 << HALF_COUNT_MAGNITUDE)
}

/// The lowest value HdrHistogram files under index `i`.
fn value_at(i: usize) -> u64 {
    let half = 1 << HALF_COUNT_MAGNITUDE;
    match i >> HALF_COUNT_MAGNITUDE {
        // The first bucket: the index is the value (0..2047).
        0 | 1 => i as u64,
        // Bucket b >= 1 sits at index (b + 1) * 1024 + sub - 1024, sub in 1024..2048.
        b => (((i & (half - 1)) + half) as u64) << (b - 1),
    }
}

/// The length of HdrHistogram's counts array for values up to `high` (its
/// `buckets_needed_to_cover_value`, then `(buckets + 1) * half the sub-buckets`), without
/// allocating a histogram to ask.
fn len_for(high: u64) -> usize {
    let mut smallest_untrackable = SUB_BUCKET_MASK + 1;
    let mut buckets = 1;
    while smallest_untrackable <= high {
        if smallest_untrackable > u64::MAX / 2 {
            buckets += 1;
            break;
        }
        smallest_untrackable <<= 1;
        buckets += 1;
    }
    (buckets + 1) << HALF_COUNT_MAGNITUDE
}

/// One interval of one source, as the recording thread fills it.
#[derive(Debug, Clone)]
pub(crate) struct Tally {
    /// HdrHistogram's counts array for `[1, high]` at 3 digits.
    counts: Box<[u64]>,
    /// The highest trackable value: higher ones are recorded as it and counted as saturated.
    high: u64,
    /// Values recorded (into `counts`).
    recorded: u64,
    /// Latencies below zero, counted, not recorded.
    pub(crate) negative: u64,
    /// Latencies above `high`, plus forwarded stamps whose age saturated.
    pub(crate) saturated: u64,
    /// Messages without a stamp.
    pub(crate) unstamped: u64,
    /// The sum of the recorded values (clamped), ns: 128 bits, so that adding one is an add
    /// and a carry, with no overflow to check (the drain saturates it to 64 bits).
    sum_ns: u128,
    /// The slowest values of the interval, with their times.
    slowest: Slowest,
}

impl Tally {
    /// An empty tally for latencies up to `highest_ns`, sized as HdrHistogram sizes its array,
    /// keeping the `slowest` slowest values of each interval.
    pub(crate) fn new(highest_ns: u64, slowest: usize) -> Tally {
        let high = highest_ns.max(2);
        let len = len_for(high);
        debug_assert!(index(high) < len, "the array holds the highest value");
        let mut counts = vec![0; len].into_boxed_slice();
        // Mapped now, not at the first value in each page (a fault on the recording thread).
        super::fault_in(&mut counts, 0);
        Tally {
            counts,
            high,
            recorded: 0,
            negative: 0,
            saturated: 0,
            unstamped: 0,
            sum_ns: 0,
            slowest: Slowest::new(slowest),
        }
    }

    /// Records one latency, ns: no allocation; beyond the sign and the clamp, one compare with
    /// the threshold of the interval's slowest (`at`, the time the value is tied to, is asked
    /// only when it enters them).
    #[inline(always)]
    pub(crate) fn record(&mut self, ns: i64, at: impl FnOnce() -> i64) {
        if ns < 0 {
            self.negative += 1;
            return;
        }
        let mut v = ns as u64;
        if v > self.high {
            v = self.high;
            self.saturated += 1;
        }
        self.counts[index(v)] += 1;
        self.recorded += 1;
        self.sum_ns += u128::from(v);
        self.slowest.offer(v, at);
    }

    /// Nothing counted since the last drain.
    pub(crate) fn is_empty(&self) -> bool {
        self.recorded + self.negative + self.unstamped + self.saturated == 0
    }

    /// Adds everything counted into `to` (a histogram of the same range) and empties this
    /// tally. On the writer's thread: a pass over the counts array.
    pub(crate) fn drain_into(&mut self, to: &mut Counts) {
        if self.recorded > 0 {
            for (i, n) in self.counts.iter_mut().enumerate().filter(|(_, n)| **n > 0) {
                to.histogram.saturating_record_n(value_at(i), *n);
                *n = 0;
            }
        }
        to.negative += self.negative;
        to.saturated += self.saturated;
        to.unstamped += self.unstamped;
        to.sum_ns = to.sum_ns.saturating_add(u64::try_from(self.sum_ns).unwrap_or(u64::MAX));
        self.slowest.drain_into(&mut to.slowest);
        (
            self.recorded,
            self.negative,
            self.saturated,
            self.unstamped,
            self.sum_ns,
        ) = (0, 0, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::Histogram;

    /// A tally's pages are mapped when it is made: recording a value into every page of its
    /// array afterwards takes no page fault on the recording thread (without `fault_in`, two
    /// per page, 130 for these 66 pages: the read maps the zero page, the write copies it).
    /// On a thread of its own, so that nothing else it runs faults in between.
    #[test]
    fn recording_into_a_new_tally_takes_no_page_fault() {
        std::thread::spawn(|| {
            let hour_ns = 3_600_000_000_000;
            let mut tally = Tally::new(hour_ns, 128);
            let values: Vec<i64> = (0..tally.counts.len())
                .step_by(4096 / std::mem::size_of::<u64>())
                .map(|i| value_at(i) as i64)
                .collect();
            let before = crate::prefault::thread_minor_faults();
            for &v in &values {
                tally.record(v, || 0);
            }
            let faults = crate::prefault::thread_minor_faults() - before;
            // A stack page first used by a call above may still fault.
            assert!(faults <= 2, "{faults} page faults recording {} values", values.len());
            assert_eq!(tally.recorded, values.len() as u64);
        })
        .join()
        .expect("the recording thread");
    }

    /// The counts array is as long as HdrHistogram's, over the whole range of highest values.
    #[test]
    fn the_array_is_as_long_as_hdrhistograms() {
        for high in (1..64)
            .map(|b| 1_u64 << b)
            .chain([2, 3, 2047, 2048, 2049, 10_000_000_000, u64::MAX])
        {
            let h = Histogram::<u64>::new_with_bounds(1, high.max(2), 3).unwrap();
            assert_eq!(len_for(high.max(2)), h.distinct_values(), "highest {high}");
        }
    }

    /// Every index maps to a value HdrHistogram files under that index, and back.
    #[test]
    fn indices_and_values_are_hdrhistograms() {
        let high = 10_000_000_000;
        let h = Histogram::<u64>::new_with_bounds(1, high, 3).unwrap();
        let len = h.distinct_values();
        for i in 0..len {
            let v = value_at(i);
            assert_eq!(index(v), i, "value {v}");
            assert_eq!(h.lowest_equivalent(v), v, "index {i}: {v} is its bucket's lowest");
            if v <= h.high() {
                assert_eq!(index(h.highest_equivalent(v)), i, "index {i}: the bucket's top");
            }
        }
        assert!(index(high) < len);
    }

    /// The sum is kept in 128 bits and saturates at 64 when drained, as the histogram's
    /// counterpart does.
    #[test]
    fn a_sum_past_64_bits_saturates_when_drained() {
        let mut tally = Tally::new(u64::MAX, 0);
        for _ in 0..3 {
            tally.record(i64::MAX, || 0);
        }
        let mut drained = Counts::new(u64::MAX);
        tally.drain_into(&mut drained);
        assert_eq!((drained.sum_ns, drained.histogram.len()), (u64::MAX, 3));
        let mut small = Tally::new(1_000, 0);
        small.record(7, || 0);
        small.record(5_000, || 0);
        small.drain_into(&mut drained);
        assert_eq!(drained.sum_ns, u64::MAX, "stays saturated");
        let mut fresh = Counts::new(1_000);
        small.record(7, || 0);
        small.record(5_000, || 0);
        small.drain_into(&mut fresh);
        assert_eq!(
            (fresh.sum_ns, fresh.saturated),
            (1_007, 1),
            "clamped to the highest value"
        );
    }

    /// A tally drained into a histogram equals the histogram the same values recorded one by
    /// one give: counts, total, min, max, mean; negatives and saturation counted apart.
    #[test]
    fn a_drained_tally_equals_recording_each_value() {
        let high = 10_000_000_000;
        let mut direct = Counts::new(high);
        let mut tally = Tally::new(high, 16);
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut values: Vec<i64> = vec![
            0,
            1,
            2047,
            2048,
            2049,
            4095,
            4096,
            high as i64,
            high as i64 + 1,
            -5,
            i64::MAX,
        ];
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push((x % (1 << (x % 34))) as i64); // up to 2^34 - 1: a few above `high`
        }
        for &v in &values {
            direct.record(v);
            tally.record(v, || 0);
        }
        let mut drained = Counts::new(high);
        tally.drain_into(&mut drained);
        assert!(tally.is_empty());
        assert_eq!(drained.histogram, direct.histogram);
        assert_eq!(drained.histogram.len(), direct.histogram.len());
        assert_eq!(drained.histogram.max(), direct.histogram.max());
        assert_eq!(drained.histogram.min(), direct.histogram.min());
        assert_eq!(drained.histogram.mean(), direct.histogram.mean());
        let mut top: Vec<u64> = values
            .iter()
            .filter(|v| **v >= 0)
            .map(|v| (*v as u64).min(high))
            .collect();
        top.sort_unstable();
        let mut kept: Vec<u64> = drained.slowest.iter().map(|s| s.latency_ns).collect();
        kept.sort_unstable();
        assert_eq!(kept, top[top.len() - 16..], "the 16 slowest, clamped");
        assert_eq!(
            (drained.negative, drained.saturated, drained.sum_ns),
            (direct.negative, direct.saturated, direct.sum_ns)
        );
        assert!(drained.negative == 1 && drained.saturated >= 2, "{}", drained.saturated);
        // Drained means empty: a second drain adds nothing.
        tally.drain_into(&mut drained);
        assert_eq!(drained.histogram.len(), direct.histogram.len());
    }
}
