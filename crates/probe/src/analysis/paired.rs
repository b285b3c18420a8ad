//! The paired change between two arms measured in alternating rounds (`latency-probe ab`):
//! each round gives A and B one figure each (a percentile, in ns); the change B vs A is judged
//! on the per-round ratios, never on two runs measured one after the other.
//!
//! Method: the per-round log ratios `d = ln(B / A)`; their Hodges-Lehmann estimate (the median
//! of the Walsh averages `(d_i + d_j) / 2`, `i <= j`) is the change; the confidence interval is
//! the one the Wilcoxon signed-rank test inverts to (the Walsh averages at the exact critical
//! ranks of the signed-rank distribution), so no normality is assumed, only that each round's
//! ratio is symmetric about the true change. A coin per round choosing which arm runs first
//! (`ab`'s default order) is what makes that hold on a machine whose speed drifts or has
//! periodic hiccups: under no change each round's sign is then a fair coin, whatever the
//! machine did. Reported as percentages: `exp(d) - 1`.

/// The change a `no change` must rule out either way unless asked otherwise (`--resolve`), a
/// fraction: 5%.
pub const DEFAULT_RESOLVE: f64 = 0.05;

/// What a paired comparison concludes for one figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// B is lower than A: the whole interval is below zero.
    Better,
    /// B is higher than A: the whole interval is above zero.
    Worse,
    /// The interval holds zero; a change as large as `resolvable` (a fraction: 0.05 is 5%)
    /// either way would have been seen, and that is within the change asked to rule out.
    NoChange {
        /// The interval's end farther from zero.
        resolvable: f64,
    },
    /// The interval holds zero but reaches past the change asked to rule out: it shows neither
    /// a change nor its absence (more rounds, or longer ones, narrow it).
    Inconclusive {
        /// The interval's end farther from zero.
        resolvable: f64,
    },
    /// Too few rounds for an interval at this confidence.
    CannotTell {
        /// Rounds the interval needs at least.
        rounds_needed: usize,
    },
}

impl Verdict {
    /// What an interval of the change (fractions, `lo <= hi`) says when a no change must rule
    /// out `resolve` (a fraction) either way: worse when it lies wholly above zero, better
    /// wholly below, else no change when its farther end is within `resolve`, inconclusive
    /// when it is not.
    #[must_use]
    pub fn of_interval(lo: f64, hi: f64, resolve: f64) -> Verdict {
        let resolvable = (-lo).max(hi);
        if lo > 0.0 {
            Verdict::Worse
        } else if hi < 0.0 {
            Verdict::Better
        } else if resolvable <= resolve {
            Verdict::NoChange { resolvable }
        } else {
            Verdict::Inconclusive { resolvable }
        }
    }

    /// With `no change` or `inconclusive`: the change either way the interval could resolve.
    #[must_use]
    pub fn resolvable(&self) -> Option<f64> {
        match *self {
            Verdict::NoChange { resolvable } | Verdict::Inconclusive { resolvable } => Some(resolvable),
            _ => None,
        }
    }

    /// The verdict's name in reports: `better`, `worse`, `no change`, `inconclusive`,
    /// `cannot tell`.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NoChange { .. } => "no change",
            Verdict::Inconclusive { .. } => "inconclusive",
            Verdict::CannotTell { .. } => "cannot tell",
        }
    }
}

/// The paired change of one figure over the rounds.
#[derive(Debug, Clone, PartialEq)]
pub struct PairedChange {
    /// Rounds counted.
    pub rounds: usize,
    /// Rounds in which B's figure was below A's.
    pub b_better_rounds: usize,
    /// The estimated change B vs A, a fraction (0.05: B is 5% higher).
    pub change: f64,
    /// The confidence interval of the change, fractions.
    pub ci_low: f64,
    /// See [`ci_low`](Self::ci_low).
    pub ci_high: f64,
    /// The interval's confidence (0.99: 99%).
    pub confidence: f64,
    /// What it says.
    pub verdict: Verdict,
}

/// The paired change of B vs A from the rounds' figures (`a[i]` and `b[i]` measured in round
/// `i`; positive), at `confidence` (e.g. 0.99), a no change ruling out `resolve` (a fraction)
/// either way ([`Verdict::of_interval`]). Pairs with a figure of zero are left out.
#[must_use]
pub fn paired_change(a: &[f64], b: &[f64], confidence: f64, resolve: f64) -> PairedChange {
    let d: Vec<f64> = a
        .iter()
        .zip(b)
        .filter(|(x, y)| **x > 0.0 && **y > 0.0)
        .map(|(x, y)| (y / x).ln())
        .collect();
    let n = d.len();
    let b_better_rounds = d.iter().filter(|v| **v < 0.0).count();
    let alpha = 1.0 - confidence;
    let walsh = walsh_averages(&d);
    let change = median_sorted(&walsh).map_or(0.0, f64::exp_m1);
    let c = critical_rank(n, alpha);
    let (ci_low, ci_high, verdict) = match c {
        Some(c) if c >= 1 => {
            let m = walsh.len();
            let (lo, hi) = (walsh[c - 1].exp_m1(), walsh[m - c].exp_m1());
            (lo, hi, Verdict::of_interval(lo, hi, resolve))
        }
        _ => (
            f64::NEG_INFINITY,
            f64::INFINITY,
            Verdict::CannotTell {
                rounds_needed: min_rounds(alpha),
            },
        ),
    };
    PairedChange {
        rounds: n,
        b_better_rounds,
        change,
        ci_low,
        ci_high,
        confidence,
        verdict,
    }
}

/// Every Walsh average `(d_i + d_j) / 2`, `i <= j`, sorted.
fn walsh_averages(d: &[f64]) -> Vec<f64> {
    let mut w = Vec::with_capacity(d.len() * (d.len() + 1) / 2);
    for i in 0..d.len() {
        for j in i..d.len() {
            w.push((d[i] + d[j]) / 2.0);
        }
    }
    w.sort_by(f64::total_cmp);
    w
}

/// The median of `v`: its middle value, or the mean of the middle two for an even count;
/// `None` when `v` is empty. Sorts a copy (NaN after every number).
#[must_use]
pub fn median(v: &[f64]) -> Option<f64> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    median_sorted(&s)
}

fn median_sorted(v: &[f64]) -> Option<f64> {
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// The number of ways each signed-rank sum `T+` = 0 ..= n(n+1)/2 arises among the 2^n sign
/// patterns of `n` ranks (the exact null distribution, by counting subsets of {1..n} by sum).
fn signed_rank_counts(n: usize) -> Vec<f64> {
    let max = n * (n + 1) / 2;
    let mut ways = vec![0.0f64; max + 1];
    ways[0] = 1.0;
    for rank in 1..=n {
        for sum in (rank..=max).rev() {
            ways[sum] += ways[sum - rank];
        }
    }
    ways
}

/// The signed-rank interval's critical rank `C` for `n` pairs: the largest `C` with
/// `P(T+ <= C - 1) <= alpha / 2`; the interval is the `C`-th smallest and the `C`-th largest
/// Walsh averages. `None` (or 0) when even the extremes are not rare enough.
fn critical_rank(n: usize, alpha: f64) -> Option<usize> {
    if n == 0 {
        return None;
    }
    Some(critical_from_counts(&signed_rank_counts(n), alpha))
}

/// For a statistic whose null distribution is `counts` (ways per value 0, 1, ...), the
/// largest `C` with `P(statistic <= C - 1) <= alpha / 2` (0 when even the smallest value is
/// not rare enough): the critical rank both the signed-rank and the rank-sum intervals use.
pub(crate) fn critical_from_counts(counts: &[f64], alpha: f64) -> usize {
    let total: f64 = counts.iter().sum();
    let mut cumulative = 0.0;
    counts
        .iter()
        .take_while(|w| {
            cumulative += *w / total;
            cumulative <= alpha / 2.0
        })
        .count()
}

/// The fewest rounds that give an interval at all at `alpha`: `2 / 2^n <= alpha`.
#[must_use]
pub fn min_rounds(alpha: f64) -> usize {
    (1..64i32)
        .find(|&n| 2.0 / 2f64.powi(n) <= alpha)
        .map_or(64, |n| n as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_is_the_middle_or_the_mean_of_the_middle_two() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0]), Some(3.0));
        assert_eq!(median(&[9.0, 1.0, 5.0]), Some(5.0));
        assert_eq!(median(&[9.0, 1.0, 5.0, 2.0]), Some(3.5));
        // NaN sorts after every number: one NaN of three leaves the lower two's upper.
        assert_eq!(median(&[f64::NAN, 1.0, 2.0]), Some(2.0));
    }

    /// A small, seeded generator (xorshift64*) and a standard normal from it (Box-Muller).
    struct Rng(u64);

    impl Rng {
        fn uniform(&mut self) -> f64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
        }

        fn normal(&mut self) -> f64 {
            let (u, v) = (self.uniform().max(1e-300), self.uniform());
            (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        }
    }

    #[test]
    fn the_signed_rank_distribution_is_exact() {
        // n = 5: 32 patterns; T+ = 0 once, 1 once, 2 once, 3 twice.
        let w = signed_rank_counts(5);
        assert_eq!(&w[..4], &[1.0, 1.0, 1.0, 2.0]);
        assert_eq!(w.iter().sum::<f64>(), 32.0);
        // Tables: n = 10, two-sided 5%: the critical value 8 (P(T+ <= 8) = 0.0244).
        assert_eq!(critical_rank(10, 0.05), Some(9));
        // n = 5 at 5%: 2/32 = 0.0625 > 0.05, no interval.
        assert_eq!(critical_rank(5, 0.05), Some(0));
        assert_eq!(min_rounds(0.05), 6);
        assert_eq!(min_rounds(0.01), 8);
    }

    #[test]
    fn hodges_lehmann_finds_a_constant_change() {
        let a = [100.0, 200.0, 150.0, 120.0, 180.0, 90.0, 110.0, 130.0, 170.0, 160.0];
        let b: Vec<f64> = a.iter().map(|x| x * 1.2).collect();
        let c = paired_change(&a, &b, 0.95, DEFAULT_RESOLVE);
        assert!((c.change - 0.2).abs() < 1e-12, "{c:?}");
        assert_eq!(c.verdict, Verdict::Worse);
        assert_eq!(c.b_better_rounds, 0);
        let c = paired_change(&b, &a, 0.95, DEFAULT_RESOLVE);
        assert_eq!(c.verdict, Verdict::Better);
        assert_eq!(c.b_better_rounds, 10);
    }

    /// An interval around zero is a no change only within the change to rule out.
    #[test]
    fn a_no_change_rules_out_the_change_asked() {
        assert_eq!(Verdict::of_interval(0.01, 0.2, 0.05), Verdict::Worse);
        assert_eq!(Verdict::of_interval(-0.2, -0.01, 0.05), Verdict::Better);
        assert_eq!(
            Verdict::of_interval(-0.02, 0.05, 0.05),
            Verdict::NoChange { resolvable: 0.05 }
        );
        let wide = Verdict::of_interval(-0.5, 27.0, 0.05);
        assert_eq!(wide, Verdict::Inconclusive { resolvable: 27.0 });
        assert_eq!((wide.name(), wide.resolvable()), ("inconclusive", Some(27.0)));
        assert_eq!(Verdict::Worse.resolvable(), None);
    }

    #[test]
    fn too_few_rounds_cannot_tell() {
        let c = paired_change(&[1.0, 2.0, 3.0], &[2.0, 3.0, 4.0], 0.99, DEFAULT_RESOLVE);
        assert_eq!(c.verdict, Verdict::CannotTell { rounds_needed: 8 });
        assert_eq!(c.verdict.name(), "cannot tell");
    }

    /// Simulated experiments: each round's figures share the round's machine speed (a slow
    /// drift and jumps between two regimes, as this VM's floor does), with 5% noise of each
    /// arm's own. A/A: the interval holds zero in at least 99% of experiments at 99%
    /// confidence; a planted +10% is found worse in nearly all.
    #[test]
    fn the_interval_holds_its_confidence_on_drifting_rounds() {
        let mut rng = Rng(0x5EED);
        let experiment = |rng: &mut Rng, shift: f64| {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let mut speed = 1.0;
            for round in 0..20 {
                if rng.uniform() < 0.2 {
                    speed = if speed > 2.0 { 1.0 } else { 3.2 };
                }
                let drift = 1.0 + 0.01 * f64::from(round);
                a.push(300.0 * speed * drift * (0.05 * rng.normal()).exp());
                b.push(300.0 * speed * drift * shift * (0.05 * rng.normal()).exp());
            }
            paired_change(&a, &b, 0.99, DEFAULT_RESOLVE).verdict
        };
        let false_alarms = (0..1_000)
            .filter(|_| matches!(experiment(&mut rng, 1.0), Verdict::Better | Verdict::Worse))
            .count();
        assert!(
            false_alarms <= 20,
            "{false_alarms} of 1000 A/A experiments called a change"
        );
        let found = (0..1_000)
            .filter(|_| experiment(&mut rng, 1.10) == Verdict::Worse)
            .count();
        eprintln!("A/A false alarms {false_alarms} of 1000; planted +10% found in {found} of 1000");
        assert!(found >= 950, "a planted +10% found in {found} of 1000");
    }
}
