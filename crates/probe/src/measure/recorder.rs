//! The subscriber's accounting: latency histograms (overall and in [`GROUPS`] time-ordered
//! groups) and sequence bookkeeping (received, lost, duplicated, reordered, rejected).
//!
//! Guarantees:
//! - [`Recorder::new`] allocates every histogram up front (overall intended and actual, and
//!   intended and actual for each group). After that, [`Recorder::record`] and
//!   [`Recorder::record_decode_error`] never lock, log or make a syscall, and allocate exactly
//!   once: the sequence bitset (`warmup + planned` bits, one `Vec<u64>`), on the first message,
//!   because only the first message tells the plan. Call [`Recorder::with_plan`] instead of
//!   [`Recorder::new`] when the plan is known up front and the hot path must never allocate.
//! - Nothing is silently dropped. Every fragment handed in is exactly one of: a unique message
//!   (`received`), a duplicate (`duplicates`) or a payload that was not ours (`decode_errors`).
//!   When the end marker arrived, `received + before_join + lost == sent` (see
//!   [`Accounting::adds_up`] for the one corrupt-input case where it cannot hold and is
//!   reported as such).
//! - A message below the first sequence number received was sent before this subscriber's
//!   image joined the stream (`before_join`), not lost: Aeron delivers from where an image
//!   joins and recovers every gap after it.
//! - Warm-up messages are counted but never enter the latency histograms; duplicates are
//!   counted and never recorded twice; negative latencies (a clock anomaly) are counted and
//!   recorded as 0; latencies above the histogram range are counted and clamped.
//! - Sequence numbers form one space, warm-up first: `0..warmup` are warm-up, and
//!   `warmup..warmup + planned` are the measured messages. Measured message `m = seq - warmup`
//!   belongs to group `m * GROUPS / planned` (clamped to the last group), so groups are
//!   contiguous, time-ordered and differ in planned size by at most one.

use crate::measure::histogram::new_latency_histogram;
use crate::measure::histogram::record_saturating;
use crate::model::Accounting;
use crate::model::GroupRow;
use crate::model::Stats;
use crate::model::GROUPS;
use hdrhistogram::Histogram;

/// Whether a message is part of the warm-up (counted, not measured) or measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleKind {
    /// Recorded in the latency histograms.
    Measured,
    /// Counted only.
    Warmup,
}

/// The plan both sides agree on: how many warm-up and measured messages are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Plan {
    warmup: u32,
    planned: u32,
}

impl Plan {
    /// Size of the tracked sequence range.
    fn capacity(self) -> u64 {
        u64::from(self.warmup) + u64::from(self.planned)
    }

    /// Group of a measured sequence number.
    #[inline]
    fn group_of(self, seq: u64) -> usize {
        if self.planned == 0 {
            return 0;
        }
        let m = u128::from(seq.saturating_sub(u64::from(self.warmup)));
        let g = m * GROUPS as u128 / u128::from(self.planned);
        (g.min(GROUPS as u128 - 1)) as usize
    }

    /// Planned measured range of group `g` as global sequence numbers `[first, end)`.
    fn group_range(self, g: usize) -> (u64, u64) {
        let p = u128::from(self.planned);
        let g = g as u128;
        let n = GROUPS as u128;
        // m belongs to g iff g*p <= m*n < (g+1)*p, i.e. ceil(g*p/n) <= m < ceil((g+1)*p/n).
        let lo = (g * p).div_ceil(n) as u64;
        let hi = ((g + 1) * p).div_ceil(n) as u64;
        let w = u64::from(self.warmup);
        (w + lo, w + hi)
    }
}

/// The subscriber's per-message accounting. See the module docs for its guarantees.
#[derive(Debug)]
pub struct Recorder {
    overall_intended: Histogram<u64>,
    overall_actual: Histogram<u64>,
    group_intended: Vec<Histogram<u64>>,
    group_actual: Vec<Histogram<u64>>,
    plan: Option<Plan>,
    /// One bit per sequence number in `0..plan.capacity()`; allocated with the plan.
    seen: Vec<u64>,
    /// Highest sequence number seen, over all messages.
    highest_seq: Option<u64>,
    /// Highest group a measured sample has entered.
    highest_group: Option<usize>,
    fragments: u64,
    received: u64,
    received_warmup: u64,
    received_measured: u64,
    duplicates: u64,
    reordered: u64,
    decode_errors: u64,
    out_of_range: u64,
    negative_latency: u64,
    clamped: u64,
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

impl Recorder {
    /// Allocates all histograms (2 + 2 × [`GROUPS`], about 11 MiB: 264 KiB each). The sequence bitset is
    /// allocated on the first message, sized from the plan it carries.
    pub fn new() -> Recorder {
        Recorder {
            overall_intended: new_latency_histogram(),
            overall_actual: new_latency_histogram(),
            group_intended: (0..GROUPS).map(|_| new_latency_histogram()).collect(),
            group_actual: (0..GROUPS).map(|_| new_latency_histogram()).collect(),
            plan: None,
            seen: Vec::new(),
            highest_seq: None,
            highest_group: None,
            fragments: 0,
            received: 0,
            received_warmup: 0,
            received_measured: 0,
            duplicates: 0,
            reordered: 0,
            decode_errors: 0,
            out_of_range: 0,
            negative_latency: 0,
            clamped: 0,
        }
    }

    /// Like [`Recorder::new`], but also allocates the sequence bitset now for a known plan, so
    /// that [`Recorder::record`] never allocates. Messages carrying another plan are still
    /// accounted against this one.
    pub fn with_plan(warmup: u32, planned: u32) -> Recorder {
        let mut r = Recorder::new();
        r.set_plan(Plan { warmup, planned });
        r
    }

    fn set_plan(&mut self, plan: Plan) {
        // At most 2 * u32::MAX bits = 1 GiB; 1e9 messages take 125 MB.
        let words = plan.capacity().div_ceil(64) as usize;
        self.seen = vec![0_u64; words];
        // Written now, not page by page while measuring (the zeroed allocation is mapped lazily).
        std::hint::black_box(&mut self.seen).fill(0);
        self.plan = Some(plan);
    }

    /// Accounts one message and, if it is a measured first arrival, records its latencies.
    ///
    /// `warmup` and `planned` are the plan carried by the message; the first message's plan is
    /// kept (and the bitset allocated from it). Returns `Some(group)` when a measured sample
    /// enters a group index higher than any seen before (including the first measured sample,
    /// `Some(0)` normally), so the caller can read its jitter counters at group boundaries.
    #[inline]
    pub fn record(
        &mut self,
        seq: u64,
        kind: SampleKind,
        warmup: u32,
        planned: u32,
        latency_intended_ns: i64,
        latency_actual_ns: i64,
    ) -> Option<usize> {
        self.fragments += 1;
        let plan = match self.plan {
            Some(p) => p,
            None => {
                self.set_plan(Plan { warmup, planned });
                Plan { warmup, planned }
            }
        };

        let highest = self.highest_seq;
        if seq < plan.capacity() {
            let (word, bit) = ((seq / 64) as usize, 1_u64 << (seq % 64));
            let w = &mut self.seen[word];
            if *w & bit != 0 {
                self.duplicates += 1;
                return None;
            }
            *w |= bit;
            if highest.is_some_and(|h| seq < h) {
                self.reordered += 1;
            }
        } else {
            self.out_of_range += 1;
        }
        if highest.is_none_or(|h| seq > h) {
            self.highest_seq = Some(seq);
        }
        self.received += 1;

        match kind {
            SampleKind::Warmup => {
                self.received_warmup += 1;
                None
            }
            SampleKind::Measured => {
                self.received_measured += 1;
                if latency_intended_ns < 0 || latency_actual_ns < 0 {
                    self.negative_latency += 1;
                }
                let intended = latency_intended_ns.max(0) as u64;
                let actual = latency_actual_ns.max(0) as u64;
                let g = plan.group_of(seq);
                let mut clamped = record_saturating(&mut self.overall_intended, intended);
                clamped |= record_saturating(&mut self.overall_actual, actual);
                record_saturating(&mut self.group_intended[g], intended);
                record_saturating(&mut self.group_actual[g], actual);
                if clamped {
                    self.clamped += 1;
                }
                if self.highest_group.is_none_or(|h| g > h) {
                    self.highest_group = Some(g);
                    Some(g)
                } else {
                    None
                }
            }
        }
    }

    /// Counts a fragment whose payload was not our schema.
    #[inline]
    pub fn record_decode_error(&mut self) {
        self.fragments += 1;
        self.decode_errors += 1;
    }

    /// The sequence accounting. `end` is the message count from the publisher's end marker, or
    /// `None` if it never arrived (then `lost` counts only gaps below the highest sequence
    /// number seen, and `publisher_vanished` is set).
    pub fn finish(&self, end: Option<u64>) -> Accounting {
        // Everything below `limit` should have arrived.
        let limit = match end {
            Some(sent) => sent,
            None => self.highest_seq.map_or(0, |h| h + 1),
        };
        let cap = self.plan.map_or(0, Plan::capacity);
        let in_range = limit.min(cap);
        let seen_in_range = self.count_seen_below(in_range);
        // Below the first one received, none was: sent before the image joined.
        let before_join = self.first_seen().map_or(0, |f| f.min(in_range));
        // Beyond the bitset we only have a count, assumed to be unique and below `limit`.
        let beyond = limit.saturating_sub(cap).saturating_sub(self.out_of_range);
        Accounting {
            sent: end,
            fragments: self.fragments,
            received: self.received,
            received_warmup: self.received_warmup,
            received_measured: self.received_measured,
            lost: (in_range - seen_in_range - before_join) + beyond,
            before_join,
            duplicates: self.duplicates,
            reordered: self.reordered,
            decode_errors: self.decode_errors,
            out_of_range: self.out_of_range,
            negative_latency: self.negative_latency,
            clamped: self.clamped,
            publisher_vanished: end.is_none(),
        }
    }

    /// The lowest sequence number seen inside the bitset (a scan: at the end of a run only).
    fn first_seen(&self) -> Option<u64> {
        let (i, w) = self.seen.iter().enumerate().find(|(_, w)| **w != 0)?;
        Some(i as u64 * 64 + u64::from(w.trailing_zeros()))
    }

    /// Number of sequence numbers `< n` (and inside the bitset) that were seen.
    fn count_seen_below(&self, n: u64) -> u64 {
        let full = (n / 64) as usize;
        let mut count: u64 = self.seen[..full].iter().map(|w| u64::from(w.count_ones())).sum();
        let rest = n % 64;
        if rest != 0 {
            count += u64::from((self.seen[full] & ((1_u64 << rest) - 1)).count_ones());
        }
        count
    }

    /// The [`GROUPS`] rows of the per-group table, in send order.
    pub fn groups(&self) -> Vec<GroupRow> {
        let plan = self.plan.unwrap_or(Plan { warmup: 0, planned: 0 });
        (0..GROUPS)
            .map(|g| {
                let (first, end) = plan.group_range(g);
                GroupRow {
                    index: g,
                    first_seq: first,
                    last_seq: if end > first { end - 1 } else { first },
                    planned: end - first,
                    intended: Stats::from_histogram(&self.group_intended[g]),
                    actual: Stats::from_histogram(&self.group_actual[g]),
                }
            })
            .collect()
    }

    /// All measured latencies from the intended send time.
    pub fn overall_intended(&self) -> &Histogram<u64> {
        &self.overall_intended
    }

    /// All measured latencies from the actual send time.
    pub fn overall_actual(&self) -> &Histogram<u64> {
        &self.overall_actual
    }

    /// Group `g`'s latencies from the intended send time. Panics if `g >= GROUPS`.
    pub fn group_intended(&self, g: usize) -> &Histogram<u64> {
        &self.group_intended[g]
    }

    /// Group `g`'s latencies from the actual send time. Panics if `g >= GROUPS`.
    pub fn group_actual(&self, g: usize) -> &Histogram<u64> {
        &self.group_actual[g]
    }

    /// The plan `(warmup, planned)` in use, once known.
    pub fn plan(&self) -> Option<(u32, u32)> {
        self.plan.map(|p| (p.warmup, p.planned))
    }

    /// Highest sequence number seen so far.
    pub fn highest_seq(&self) -> Option<u64> {
        self.highest_seq
    }

    /// Unique messages received so far (cheap; for progress lines).
    pub fn received(&self) -> u64 {
        self.received
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_support::test_rng::SplitMix;

    fn kind(seq: u64, warmup: u32) -> SampleKind {
        if seq < u64::from(warmup) {
            SampleKind::Warmup
        } else {
            SampleKind::Measured
        }
    }

    /// Feeds `seqs` with latency = f(seq); returns the recorder.
    fn feed(seqs: &[u64], warmup: u32, planned: u32, lat: impl Fn(u64) -> i64) -> Recorder {
        let mut r = Recorder::new();
        for &s in seqs {
            r.record(s, kind(s, warmup), warmup, planned, lat(s), lat(s) / 2);
        }
        r
    }

    fn check_invariants(a: &Accounting) {
        assert!(a.adds_up(), "{a:?}");
        assert_eq!(a.received, a.received_warmup + a.received_measured, "{a:?}");
        assert_eq!(a.fragments, a.received + a.duplicates + a.decode_errors);
        if let Some(sent) = a.sent {
            assert_eq!(a.received + a.before_join + a.lost, sent, "{a:?}");
        }
    }

    #[test]
    fn group_of_matches_spec_formula() {
        for (w, p) in [(0_u32, 1_u32), (5, 7), (100, 1_000), (3, 20), (0, 19), (10, 12_345)] {
            let plan = Plan { warmup: w, planned: p };
            let mut counts = [0_u64; GROUPS];
            for m in 0..u64::from(p) {
                let seq = u64::from(w) + m;
                let g = plan.group_of(seq);
                assert_eq!(g, ((m * GROUPS as u64 / u64::from(p)) as usize).min(GROUPS - 1));
                counts[g] += 1;
                let (first, end) = plan.group_range(g);
                assert!(first <= seq && seq < end, "w{w} p{p} seq {seq} g {g}");
            }
            // Contiguous ranges covering exactly the measured seqs, sizes within one.
            let mut next = u64::from(w);
            for (g, &c) in counts.iter().enumerate() {
                let (first, end) = plan.group_range(g);
                assert_eq!(first, next);
                assert_eq!(end - first, c);
                next = end;
            }
            assert_eq!(next, u64::from(w) + u64::from(p));
            let max = counts.iter().max().unwrap();
            let min = counts.iter().min().unwrap();
            assert!(max - min <= 1);
        }
        let plan = Plan {
            warmup: 10,
            planned: 100,
        };
        assert_eq!(plan.group_of(0), 0, "warm-up seqs clamp to group 0");
        assert_eq!(plan.group_of(10_000), GROUPS - 1, "beyond plan clamps");
        let zero = Plan { warmup: 3, planned: 0 };
        assert_eq!(zero.group_of(1_000), 0);
    }

    #[test]
    fn grouping_against_sorted_oracle() {
        let (warmup, planned) = (50_u32, 10_007_u32);
        let mut rng = SplitMix(11);
        let lat: Vec<i64> = (0..u64::from(warmup + planned))
            .map(|s| {
                // Different level per group so misassignment would show.
                let base = 1_000 * (1 + (s % 97) as i64);
                base + rng.below(5_000) as i64
            })
            .collect();
        let seqs: Vec<u64> = (0..u64::from(warmup + planned)).collect();
        let r = feed(&seqs, warmup, planned, |s| lat[s as usize]);

        let mut per_group: Vec<Vec<u64>> = vec![Vec::new(); GROUPS];
        for s in u64::from(warmup)..u64::from(warmup + planned) {
            let g = ((s - u64::from(warmup)) * GROUPS as u64 / u64::from(planned)) as usize;
            per_group[g].push(lat[s as usize] as u64);
        }
        let rows = r.groups();
        assert_eq!(rows.len(), GROUPS);
        let mut prev_last = u64::from(warmup) - 1;
        for (g, row) in rows.iter().enumerate() {
            let v = &mut per_group[g];
            v.sort_unstable();
            assert_eq!(row.index, g);
            assert_eq!(row.first_seq, prev_last + 1);
            assert_eq!(row.last_seq - row.first_seq + 1, v.len() as u64);
            assert_eq!(row.planned, v.len() as u64);
            prev_last = row.last_seq;
            assert_eq!(row.intended.count, v.len() as u64);
            let h = r.group_intended(g);
            for (q, got) in [
                (0.5, row.intended.p50),
                (0.9, row.intended.p90),
                (0.99, row.intended.p99),
                (0.999, row.intended.p999),
                (1.0, row.intended.max),
            ] {
                let n = v.len() as u64;
                let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
                let exact = v[(rank - 1) as usize];
                assert!(
                    got >= exact && got <= h.highest_equivalent(exact),
                    "group {g} q {q}: {got} vs {exact}"
                );
            }
            assert_eq!(row.actual.count, v.len() as u64);
        }
        assert_eq!(prev_last, u64::from(warmup + planned) - 1);
        assert_eq!(r.overall_intended().len(), u64::from(planned));
        assert_eq!(r.overall_actual().len(), u64::from(planned));
        let a = r.finish(Some(u64::from(warmup + planned)));
        check_invariants(&a);
        assert_eq!(a.lost, 0);
        assert_eq!(a.received_warmup, u64::from(warmup));
        assert_eq!(a.received_measured, u64::from(planned));
    }

    #[test]
    fn group_boundaries_are_reported_once_in_order() {
        let (warmup, planned) = (5_u32, 100_u32);
        let mut r = Recorder::with_plan(warmup, planned);
        let mut boundaries = Vec::new();
        for s in 0..105_u64 {
            if let Some(g) = r.record(s, kind(s, warmup), warmup, planned, 10, 5) {
                boundaries.push((s, g));
            }
        }
        let expect: Vec<(u64, usize)> = (0..GROUPS).map(|g| (5 + 5 * g as u64, g)).collect();
        assert_eq!(boundaries, expect);
        // Late arrival in an earlier group, duplicate, warm-up: no boundary.
        let mut r2 = Recorder::new();
        assert_eq!(r2.record(0, SampleKind::Warmup, 1, 100, 1, 1), None);
        assert_eq!(r2.record(60, SampleKind::Measured, 1, 100, 1, 1), Some(11));
        assert_eq!(r2.record(10, SampleKind::Measured, 1, 100, 1, 1), None);
        assert_eq!(r2.record(60, SampleKind::Measured, 1, 100, 1, 1), None);
        assert_eq!(r2.record(99, SampleKind::Measured, 1, 100, 1, 1), Some(19));
    }

    #[test]
    fn gaps_dups_swaps() {
        // warm-up 2, planned 8: seqs 0..10.
        let seqs = [0, 1, 2, 4, 3, 3, 6, 5, 9, 9, 9];
        let r = feed(&seqs, 2, 8, |_| 100);
        let a = r.finish(Some(10));
        check_invariants(&a);
        assert_eq!(a.fragments, 11);
        assert_eq!(a.received, 8); // 0 1 2 3 4 5 6 9
        assert_eq!(a.duplicates, 3); // 3, 9, 9
        assert_eq!(a.reordered, 2); // 3 after 4, 5 after 6
        assert_eq!(a.lost, 2); // 7, 8
        assert_eq!(a.received_warmup, 2);
        assert_eq!(a.received_measured, 6);
        assert!(!a.publisher_vanished);
        assert_eq!(r.overall_intended().len(), 6, "duplicates not recorded twice");
    }

    #[test]
    fn missing_end_marker_counts_only_gaps_below_highest() {
        let r = feed(&[0, 1, 3, 4, 7], 0, 100, |_| 100);
        let a = r.finish(None);
        check_invariants(&a);
        assert!(a.publisher_vanished);
        assert_eq!(a.sent, None);
        assert_eq!(a.lost, 3); // 2, 5, 6 — not 8..100
        assert_eq!(a.received, 5);
    }

    #[test]
    fn messages_before_the_first_received_were_sent_before_the_join_not_lost() {
        // A late receiver: its image joined at 37 (in the warm-up of 100), then lost 150.
        let seqs: Vec<u64> = (37..1_100).filter(|&s| s != 150).collect();
        let r = feed(&seqs, 100, 1_000, |_| 100);
        let a = r.finish(Some(1_100));
        check_invariants(&a);
        assert_eq!((a.before_join, a.lost, a.received), (37, 1, 1_062), "{a:?}");
        // Joined after measured messages were sent: they count before the join too (the
        // report says the run is incomplete).
        let r = feed(&(250..1_100).collect::<Vec<_>>(), 100, 1_000, |_| 100);
        let a = r.finish(Some(1_100));
        check_invariants(&a);
        assert_eq!((a.before_join, a.lost, a.received_measured), (250, 0, 850), "{a:?}");
        // Without an end marker the same: gaps below the highest only, after the join.
        let a = feed(&[5, 6, 8], 0, 100, |_| 100).finish(None);
        check_invariants(&a);
        assert_eq!((a.before_join, a.lost), (5, 1), "{a:?}");
    }

    #[test]
    fn nothing_received() {
        let r = Recorder::new();
        let a = r.finish(Some(1_000));
        check_invariants(&a);
        assert_eq!(a.lost, 1_000);
        let a = r.finish(None);
        assert_eq!(a.lost, 0);
        assert!(a.publisher_vanished);
        assert!(r.groups().iter().all(|g| g.intended.count == 0));
    }

    #[test]
    fn end_marker_below_plan_publisher_stopped_early() {
        let seqs: Vec<u64> = (0..40).filter(|s| s % 10 != 3).collect();
        let r = feed(&seqs, 10, 1_000, |_| 100);
        let a = r.finish(Some(40));
        check_invariants(&a);
        assert_eq!(a.lost, 4);
    }

    #[test]
    fn seq_beyond_plan_is_out_of_range_not_lost() {
        // plan 2 + 5 = 7, publisher actually sent 10.
        let seqs = [0, 1, 2, 3, 5, 6, 7, 9];
        let r = feed(&seqs, 2, 5, |_| 100);
        let a = r.finish(Some(10));
        assert_eq!(a.out_of_range, 2); // 7, 9
        assert_eq!(a.received, 8);
        // Lost: 4 (in range) and 8 (beyond the plan: 3 sent there, 2 received).
        assert_eq!(a.lost, 2);
        check_invariants(&a);
        // Out-of-range measured samples land in the last group.
        let rows = r.groups();
        assert_eq!(rows[GROUPS - 1].intended.count, 2); // 7, 9
                                                        // Without end marker: highest 9, gaps 4 and 8.
        let a = r.finish(None);
        assert_eq!(a.lost, 2);
        check_invariants(&a);
    }

    #[test]
    fn received_beyond_sent_is_reported_as_not_adding_up() {
        let r = feed(&[0, 1, 2, 3, 4], 0, 10, |_| 1);
        let a = r.finish(Some(3));
        assert_eq!(a.received, 5);
        assert_eq!(a.lost, 0);
        assert!(!a.adds_up());
    }

    #[test]
    fn decode_errors_negative_and_clamped() {
        let mut r = Recorder::new();
        r.record_decode_error();
        r.record(0, SampleKind::Measured, 0, 4, -5, -7);
        r.record(1, SampleKind::Measured, 0, 4, 5, -1);
        r.record(2, SampleKind::Measured, 0, 4, i64::MAX, 3);
        r.record_decode_error();
        r.record(3, SampleKind::Warmup, 0, 4, -5, -5); // mislabelled, not measured
        let a = r.finish(Some(4));
        check_invariants(&a);
        assert_eq!(a.decode_errors, 2);
        assert_eq!(a.fragments, 6);
        assert_eq!(a.negative_latency, 2);
        assert_eq!(a.clamped, 1);
        assert_eq!(r.overall_intended().len(), 3);
        assert_eq!(r.overall_intended().min(), 0);
        assert_eq!(r.overall_actual().count_at(0), 2);
    }

    #[test]
    fn planned_zero_puts_everything_in_group_zero() {
        let seqs: Vec<u64> = (0..10).collect();
        let r = feed(&seqs, 3, 0, |_| 100);
        let rows = r.groups();
        assert_eq!(rows[0].intended.count, 7);
        assert!(rows.iter().all(|g| g.planned == 0));
        let a = r.finish(Some(10));
        assert_eq!(a.out_of_range, 7);
        check_invariants(&a);
    }

    #[test]
    fn fewer_planned_than_groups() {
        let seqs: Vec<u64> = (0..7).collect();
        let r = feed(&seqs, 0, 7, |s| s as i64 + 1);
        let rows = r.groups();
        let nonempty: Vec<_> = rows.iter().filter(|g| g.planned > 0).collect();
        assert_eq!(nonempty.len(), 7);
        for g in &rows {
            assert_eq!(g.intended.count, g.planned);
            if g.planned == 1 {
                assert_eq!(g.first_seq, g.last_seq);
                assert_eq!(g.intended.max, g.first_seq + 1);
            }
        }
    }

    #[test]
    fn plan_of_first_message_is_kept() {
        let mut r = Recorder::new();
        r.record(0, SampleKind::Measured, 0, 10, 1, 1);
        r.record(5, SampleKind::Measured, 99, 99_999, 1, 1);
        assert_eq!(r.plan(), Some((0, 10)));
        assert_eq!(r.highest_seq(), Some(5));
        assert_eq!(r.received(), 2);
    }

    #[test]
    fn bitset_edges() {
        // Capacity exactly a multiple of 64 and one past it.
        for cap in [63_u32, 64, 65, 128, 129] {
            let seqs: Vec<u64> = (0..u64::from(cap)).filter(|s| s % 2 == 0).collect();
            let r = feed(&seqs, 0, cap, |_| 1);
            let a = r.finish(Some(u64::from(cap)));
            check_invariants(&a);
            assert_eq!(a.lost, u64::from(cap) / 2);
        }
    }

    #[test]
    fn property_random_permutations_with_drops_and_dups() {
        let mut rng = SplitMix(42);
        for round in 0..300 {
            let warmup = rng.below(50) as u32;
            let planned = rng.below(3_000) as u32;
            let total = u64::from(warmup) + u64::from(planned);
            // Publisher may stop early or (rarely) send more than planned.
            let sent = match rng.below(10) {
                0 => rng.below(total + 1),
                1 => total + rng.below(100),
                _ => total,
            };
            // A late join now and then: nothing below it arrives.
            let join = if rng.below(4) == 0 { rng.below(sent / 2 + 1) } else { 0 };
            let mut seqs: Vec<u64> = (join..sent).filter(|_| rng.below(100) >= 7).collect();
            let unique = seqs.len() as u64;
            // Local swaps (reordering) and some duplicates of in-range seqs.
            for i in 1..seqs.len() {
                if rng.below(20) == 0 {
                    seqs.swap(i - 1, i);
                }
            }
            let mut dup_in_range = 0;
            for _ in 0..rng.below(20) {
                if seqs.is_empty() {
                    break;
                }
                let s = seqs[rng.below(seqs.len() as u64) as usize];
                if s < total {
                    dup_in_range += 1;
                }
                let at = rng.below(seqs.len() as u64 + 1) as usize;
                seqs.insert(at, s);
            }
            let decode = rng.below(3);

            // Oracle counts.
            let mut seen = std::collections::HashSet::new();
            let mut highest: Option<u64> = None;
            let (mut reordered, mut dups) = (0_u64, 0_u64);
            for &s in &seqs {
                if s < total {
                    if !seen.insert(s) {
                        dups += 1;
                        continue;
                    }
                    if highest.is_some_and(|h| s < h) {
                        reordered += 1;
                    }
                }
                highest = Some(highest.map_or(s, |h| h.max(s)));
            }
            let beyond_dups = (seqs.len() as u64 - unique) - dup_in_range;

            let mut r = Recorder::new();
            for (i, &s) in seqs.iter().enumerate() {
                if (i as u64).is_multiple_of(500) && decode > 0 {
                    r.record_decode_error();
                }
                r.record(s, kind(s, warmup), warmup, planned, 1_000, 500);
            }
            let a = r.finish(Some(sent));
            // None below the first one seen arrived: sent before the join, not lost.
            let first = seen.iter().min().copied().unwrap_or(0);
            assert_eq!(a.before_join, first.min(sent.min(total)), "round {round}");
            assert_eq!(a.duplicates, dups, "round {round}");
            assert_eq!(a.reordered, reordered, "round {round}");
            assert_eq!(a.fragments, a.received + a.duplicates + a.decode_errors);
            assert_eq!(a.received, a.received_warmup + a.received_measured);
            if beyond_dups == 0 {
                // Exact: everything adds up.
                assert_eq!(a.received, unique, "round {round}");
                assert_eq!(a.lost, sent - unique - a.before_join, "round {round}");
                check_invariants(&a);
            } else {
                // Duplicates beyond the plan cannot be detected: counted as received.
                assert_eq!(a.received, unique + beyond_dups, "round {round}");
            }
            // Measured samples recorded = unique measured.
            assert_eq!(r.overall_intended().len(), a.received_measured);
            let group_total: u64 = r.groups().iter().map(|g| g.intended.count).sum();
            assert_eq!(group_total, a.received_measured);

            // Vanished publisher: lost counts only gaps below the highest seq seen.
            let v = r.finish(None);
            assert!(v.publisher_vanished);
            if beyond_dups == 0 {
                let expect = highest.map_or(0, |h| h + 1) - unique - first;
                assert_eq!((v.lost, v.before_join), (expect, first), "round {round}");
            }
        }
    }
}
