//! A tap's figures analysed (`latency-probe tap`): its intervals merged into time-ordered
//! groups, a period picked out, and the change between two figures (two files or two periods)
//! per percentile, with the A/B statistics over intervals.
//!
//! Each interval is one sample of a percentile (its own p50, p99, ...), so a comparison has as
//! many samples per side as intervals that hold enough messages for that percentile (at least
//! one message beyond it: 2 for p50, 100 for p99, 1,000 for p99.9; 1 for the max). Intervals
//! that cover the same time on both sides (two figures of one tap, two services' taps on one
//! clock) are **paired**: the paired change ([`super::paired`], Wilcoxon signed-rank over the
//! per-interval ratios), which a machine's drift cancels out of. Otherwise (two periods, two
//! runs at different times) the change is **unpaired** ([`super::unpaired`], Mann-Whitney over
//! every pair of intervals), and the report says so: what changed between the times may be the
//! machine, not the service.

use hdrhistogram::Histogram;

use super::paired::{median, paired_change, Verdict};
use super::unpaired::shift_change;
use crate::model::{TapChange, TapComparison, TapFigure, TapGroup, TapInterval};

/// The percentiles a comparison judges, with their labels (1.0 is the max).
pub const COMPARED: [(&str, f64); 5] = [
    ("p50", 0.5),
    ("p90", 0.9),
    ("p99", 0.99),
    ("p99.9", 0.999),
    ("max", 1.0),
];

/// The intervals merged into `n` groups of equal time (by each interval's middle); with fewer
/// than `n` intervals, one group per interval. Groups no interval falls in are left out.
#[must_use]
pub fn groups(figure: &TapFigure, n: usize) -> Vec<TapGroup> {
    let (t0, t1) = figure.span_s();
    if figure.intervals.len() <= n {
        return figure
            .intervals
            .iter()
            .map(|i| TapGroup {
                start_s: i.start_s - t0,
                end_s: i.end_s() - t0,
                intervals: 1,
                histogram: i.histogram.clone(),
            })
            .collect();
    }
    let width = (t1 - t0) / n as f64;
    let mut out: Vec<Option<TapGroup>> = vec![None; n];
    for i in &figure.intervals {
        let middle = (i.start_s + i.length_s / 2.0 - t0).max(0.0);
        let k = ((middle / width) as usize).min(n - 1);
        let g = out[k].get_or_insert_with(|| TapGroup {
            start_s: k as f64 * width,
            end_s: (k + 1) as f64 * width,
            intervals: 0,
            histogram: Histogram::new(3).expect("3 digits"), // resizes as it adds
        });
        g.intervals += 1;
        g.histogram.add(&i.histogram).expect("auto-resizing");
    }
    out.into_iter().flatten().collect()
}

/// The figure's intervals whose middle lies in `[from_s, to_s)` seconds from its first
/// interval's start.
#[must_use]
pub fn period(figure: &TapFigure, from_s: f64, to_s: f64) -> TapFigure {
    let (t0, _) = figure.span_s();
    TapFigure {
        intervals: figure
            .intervals
            .iter()
            .filter(|i| {
                let middle = i.start_s + i.length_s / 2.0 - t0;
                (from_s..to_s).contains(&middle)
            })
            .cloned()
            .collect(),
        ..figure.clone()
    }
}

/// The interval's value at quantile `q` (1.0: its max), when it holds enough messages for it.
fn value(i: &TapInterval, q: f64) -> Option<f64> {
    let n = i.histogram.len();
    let enough = if q >= 1.0 {
        n >= 1
    } else {
        n as f64 * (1.0 - q) >= 1.0 - 1e-9
    };
    enough.then(|| {
        if q >= 1.0 {
            i.histogram.max() as f64
        } else {
            i.histogram.value_at_quantile(q) as f64
        }
    })
}

/// Pairs of intervals (A's index, B's index) that cover the same time: starts within a
/// quarter of the shorter length, lengths within a quarter of each other.
fn pairs(a: &[TapInterval], b: &[TapInterval]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut j = 0;
    for (k, x) in a.iter().enumerate() {
        // B's interval whose start is nearest A's (both are in time order).
        while j + 1 < b.len() && (b[j + 1].start_s - x.start_s).abs() <= (b[j].start_s - x.start_s).abs() {
            j += 1;
        }
        let Some(y) = b.get(j) else { break };
        let shorter = x.length_s.min(y.length_s);
        let close = (x.start_s - y.start_s).abs() <= shorter / 4.0 && (x.length_s - y.length_s).abs() <= shorter / 4.0;
        if close && out.last().is_none_or(|&(_, last)| last != j) {
            out.push((k, j));
        }
    }
    out
}

/// B vs A per percentile of [`COMPARED`], at `confidence`, a no change ruling out `resolve`
/// either way (else inconclusive): paired over the intervals that cover the same time when at
/// least half of each side's do, else unpaired.
#[must_use]
pub fn compare(a: &TapFigure, b: &TapFigure, judged: (f64, f64)) -> TapComparison {
    compare_as(a, b, judged, true)
}

/// [`compare`], never paired when `may_pair` is false (two periods of one log: different
/// times by definition).
#[must_use]
pub fn compare_as(a: &TapFigure, b: &TapFigure, (confidence, resolve): (f64, f64), may_pair: bool) -> TapComparison {
    let p = if may_pair {
        pairs(&a.intervals, &b.intervals)
    } else {
        Vec::new()
    };
    let paired = p.len() >= 2 && 2 * p.len() >= a.intervals.len().max(b.intervals.len());
    // Over the figures the change counts: it leaves out zeros (no ratio).
    let median_ns = |v: &[f64]| {
        let counted: Vec<f64> = v.iter().copied().filter(|x| *x > 0.0).collect();
        median(&counted).map_or(0, |m| m.round() as u64)
    };
    let changes = COMPARED
        .iter()
        .map(|&(label, q)| {
            let (xa, xb): (Vec<f64>, Vec<f64>) = if paired {
                p.iter()
                    .filter_map(|&(i, j)| Some((value(&a.intervals[i], q)?, value(&b.intervals[j], q)?)))
                    .unzip()
            } else {
                (
                    a.intervals.iter().filter_map(|i| value(i, q)).collect(),
                    b.intervals.iter().filter_map(|i| value(i, q)).collect(),
                )
            };
            let (change, ci, verdict, samples) = if paired {
                let c = paired_change(&xa, &xb, confidence, resolve);
                (c.change, (c.ci_low, c.ci_high), c.verdict, (c.rounds, c.rounds))
            } else {
                let c = shift_change(&xa, &xb, confidence, resolve);
                (c.change, (c.ci_low, c.ci_high), c.verdict, (c.runs_a, c.runs_b))
            };
            TapChange {
                label,
                a_ns: median_ns(&xa),
                b_ns: median_ns(&xb),
                samples,
                change,
                ci: (ci.0.is_finite() && ci.1.is_finite()).then_some(ci),
                verdict: match verdict {
                    Verdict::CannotTell { rounds_needed } => {
                        format!("cannot tell (needs {rounds_needed} intervals a side)")
                    }
                    v => v.name().to_owned(),
                },
                resolvable: verdict.resolvable(),
            }
        })
        .collect();
    TapComparison {
        paired,
        intervals: (a.intervals.len(), b.intervals.len(), if paired { p.len() } else { 0 }),
        changes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(start_s: f64, values: impl IntoIterator<Item = u64>) -> TapInterval {
        let mut h = Histogram::new_with_bounds(1, 10_000_000_000, 3).unwrap();
        for v in values {
            h.record(v).unwrap();
        }
        TapInterval {
            start_s,
            length_s: 1.0,
            histogram: h,
        }
    }

    fn figure(start: f64, n: usize, base: u64) -> TapFigure {
        TapFigure {
            name: "f".into(),
            files: vec![],
            clock: None,
            intervals: (0..n)
                .map(|k| interval(start + k as f64, (0..1000).map(|v| base + v + 7 * k as u64)))
                .collect(),
        }
    }

    #[test]
    fn intervals_fall_into_twenty_groups_of_equal_time_and_nothing_is_lost() {
        let f = figure(100.0, 50, 1000);
        let g = groups(&f, 20);
        assert_eq!(g.len(), 20);
        assert_eq!(g.iter().map(|g| g.histogram.len()).sum::<u64>(), 50_000);
        assert_eq!(g.iter().map(|g| g.intervals).sum::<usize>(), 50);
        assert!(
            (g[0].start_s, g[19].end_s) == (0.0, 50.0),
            "{:?}",
            (g[0].start_s, g[19].end_s)
        );
        let few = groups(&figure(0.0, 7, 10), 20);
        assert_eq!(few.len(), 7, "one group per interval");
    }

    #[test]
    fn a_period_keeps_the_intervals_whose_middle_is_in_it() {
        let f = figure(100.0, 10, 1000);
        assert_eq!(period(&f, 2.0, 5.0).intervals.len(), 3);
        assert_eq!(period(&f, 0.0, f64::INFINITY).intervals.len(), 10);
    }

    #[test]
    fn same_time_is_paired_and_a_real_change_is_found() {
        let (a, b) = (figure(100.0, 12, 1000), figure(100.0, 12, 2000));
        let c = compare(&a, &b, (0.99, 0.05));
        assert!(c.paired);
        assert_eq!(c.intervals, (12, 12, 12));
        let p50 = &c.changes[0];
        assert_eq!(p50.verdict, "worse", "{p50:?}");
        assert!(p50.change > 0.5 && p50.change < 0.8, "{p50:?}");
        assert_eq!(p50.samples, (12, 12));
        let p999 = &c.changes[3];
        assert_eq!(
            p999.samples,
            (12, 12),
            "1,000 messages an interval are enough for p99.9"
        );
    }

    #[test]
    fn a_stray_interval_on_one_side_does_not_stop_the_pairing() {
        let a = figure(100.0, 12, 1000);
        let mut b = figure(100.0, 12, 2000);
        b.intervals.insert(1, interval(100.5, [5, 6, 7]));
        b.intervals[1].length_s = 0.001;
        let c = compare(&a, &b, (0.99, 0.05));
        assert!(c.paired);
        assert_eq!(c.intervals.2, 12, "every A interval found its B: {:?}", c.intervals);
    }

    #[test]
    fn different_times_are_unpaired_and_no_change_is_no_change() {
        let (a, b) = (figure(100.0, 12, 1000), figure(500.0, 12, 1000));
        let c = compare(&a, &b, (0.99, 0.05));
        assert!(!c.paired);
        assert_eq!(c.intervals, (12, 12, 0));
        assert_eq!(c.changes[0].verdict, "no change", "{:?}", c.changes[0]);
        assert!(c.changes[0].resolvable.is_some());
    }

    #[test]
    fn a_and_b_are_the_intervals_medians_the_change_is_over_not_the_figures_overall() {
        let a = figure(100.0, 12, 1000);
        let mut b = figure(100.0, 12, 1000);
        b.intervals[5].histogram.record(5_000_000).unwrap(); // one interval's spike
        let c = compare(&a, &b, (0.99, 0.05));
        let max = &c.changes[4];
        assert_eq!((max.label, b.total().max() >= 5_000_000), ("max", true));
        // The intervals' maxima are 2,000-2,077 ns on both sides but B's fifth: the medians
        // agree, as the change does, where the figures overall are 2,077 and 5,000,000 ns.
        assert!(
            max.a_ns.abs_diff(max.b_ns) <= 10 && (2_000..2_100).contains(&max.a_ns),
            "{max:?}"
        );
        assert!(max.change.abs() < 0.01, "{max:?}");
        let p50 = &c.changes[0];
        assert!(
            (1_490..1_560).contains(&p50.a_ns),
            "A's median of the intervals' p50: {p50:?}"
        );
    }
}
