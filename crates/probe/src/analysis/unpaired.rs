//! The change between two independent sets of runs (`latency-probe compare`, each file's
//! `--runs`): the two-sample counterpart of [`super::paired`], with the same verdicts.
//!
//! Method: the log ratios `ln(b_j / a_i)` of every pair of runs; their median is the
//! Hodges-Lehmann shift (the change); the interval is the one the Wilcoxon rank-sum
//! (Mann-Whitney) test inverts to, at the exact critical value of `U` (its null distribution
//! counted, not approximated). Valid when each file's runs are independent draws of one
//! machine state; runs measured at different times share their time's state, which no interval
//! over them removes (`latency-probe ab` interleaves the arms for that reason).

use super::paired::Verdict;

/// The change of one figure between two sets of runs.
#[derive(Debug, Clone, PartialEq)]
pub struct ShiftChange {
    /// A's runs counted.
    pub runs_a: usize,
    /// B's runs counted.
    pub runs_b: usize,
    /// The estimated change B vs A, a fraction (0.05: B 5% higher).
    pub change: f64,
    /// The interval's low end, a fraction (`-inf` with no interval).
    pub ci_low: f64,
    /// Its high end (`+inf` with no interval).
    pub ci_high: f64,
    /// What it says; [`Verdict::CannotTell`] gives the runs each file needs.
    pub verdict: Verdict,
}

/// The change B vs A from A's and B's run figures (positive; zeros are left out), at
/// `confidence` (e.g. 0.99), a no change ruling out `resolve` (a fraction) either way
/// ([`Verdict::of_interval`]).
#[must_use]
pub fn shift_change(a: &[f64], b: &[f64], confidence: f64, resolve: f64) -> ShiftChange {
    let la: Vec<f64> = a.iter().filter(|x| **x > 0.0).map(|x| x.ln()).collect();
    let lb: Vec<f64> = b.iter().filter(|x| **x > 0.0).map(|x| x.ln()).collect();
    let (m, n) = (la.len(), lb.len());
    let mut d: Vec<f64> = la.iter().flat_map(|x| lb.iter().map(move |y| y - x)).collect();
    d.sort_by(f64::total_cmp);
    let change = match d.len() {
        0 => 0.0,
        k if k % 2 == 1 => d[k / 2],
        k => (d[k / 2 - 1] + d[k / 2]) / 2.0,
    }
    .exp_m1();
    let alpha = 1.0 - confidence;
    let (ci_low, ci_high, verdict) = match critical_u(m, n, alpha) {
        Some(c) => {
            let (lo, hi) = (d[c - 1].exp_m1(), d[d.len() - c].exp_m1());
            (lo, hi, Verdict::of_interval(lo, hi, resolve))
        }
        None => (
            f64::NEG_INFINITY,
            f64::INFINITY,
            Verdict::CannotTell {
                rounds_needed: min_runs_each(alpha),
            },
        ),
    };
    ShiftChange {
        runs_a: m,
        runs_b: n,
        change,
        ci_low,
        ci_high,
        verdict,
    }
}

/// How many of the `C(m+n, m)` arrangements of two samples give each value of the rank-sum
/// statistic `U` = 0 ..= m n: the coefficients of the Gaussian binomial `[m+n choose m]_q`,
/// built as the product of `(1 - q^(n+k)) / (1 - q^k)` for k = 1 ..= m.
fn u_counts(m: usize, n: usize) -> Vec<f64> {
    let top = m * n;
    let mut p = vec![0.0f64; top + 1];
    p[0] = 1.0;
    for k in 1..=m {
        // Multiply by (1 - q^(n+k)), highest degree first.
        let s = n + k;
        for u in (s..=top).rev() {
            p[u] -= p[u - s];
        }
        // Divide by (1 - q^k): exact, a running sum with lag k.
        for u in k..=top {
            p[u] += p[u - k];
        }
    }
    p
}

/// The interval's critical rank `C`: the largest with `P(U <= C - 1) <= alpha / 2`; `None`
/// when even the extremes are not rare enough (or a side has no runs).
fn critical_u(m: usize, n: usize, alpha: f64) -> Option<usize> {
    if m == 0 || n == 0 {
        return None;
    }
    let c = super::paired::critical_from_counts(&u_counts(m, n), alpha);
    (c >= 1).then_some(c)
}

/// The fewest runs in each file that give an interval at `alpha`: `2 / C(2k, k) <= alpha`.
#[must_use]
pub fn min_runs_each(alpha: f64) -> usize {
    (1..40)
        .find(|&k| {
            let c: f64 = (0..k).map(|i| (2 * k - i) as f64 / (i + 1) as f64).product();
            2.0 / c <= alpha
        })
        .unwrap_or(40)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rank_sum_distribution_is_exact() {
        // m = 2, n = 2: U in 0..=4 arises 1, 1, 2, 1, 1 times of C(4, 2) = 6.
        assert_eq!(u_counts(2, 2), vec![1.0, 1.0, 2.0, 1.0, 1.0]);
        let c = u_counts(5, 7);
        assert_eq!(c.iter().sum::<f64>(), 792.0, "C(12, 5)");
        assert!(c.iter().zip(c.iter().rev()).all(|(x, y)| x == y), "symmetric");
        assert_eq!(min_runs_each(0.01), 5, "2 / C(10, 5) = 0.0079");
        assert_eq!(min_runs_each(0.05), 4, "2 / C(8, 4) = 0.029");
    }

    #[test]
    fn a_clear_shift_is_worse_and_overlapping_runs_are_no_change() {
        let a = [1000.0, 1010.0, 990.0, 1005.0, 995.0, 1002.0];
        let b: Vec<f64> = a.iter().map(|x| x * 1.2).collect();
        let c = shift_change(&a, &b, 0.99, 0.05);
        assert_eq!(c.verdict, Verdict::Worse, "{c:?}");
        assert!((c.change - 0.2).abs() < 0.01 && c.ci_low > 0.1, "{c:?}");
        let same = shift_change(&a, &[1001.0, 996.0, 1008.0, 993.0, 1003.0, 999.0], 0.99, 0.05);
        assert!(matches!(same.verdict, Verdict::NoChange { .. }), "{same:?}");
        assert!(same.ci_low < 0.0 && same.ci_high > 0.0);
    }

    #[test]
    fn two_runs_each_cannot_tell_and_say_how_many_would() {
        let c = shift_change(&[1000.0, 1100.0], &[3000.0, 3100.0], 0.99, 0.05);
        assert_eq!(c.verdict, Verdict::CannotTell { rounds_needed: 5 });
        assert!(c.change > 1.5, "the estimate is still given: {c:?}");
    }
}
