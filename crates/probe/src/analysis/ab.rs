//! `ab`'s conclusions from its rounds: which rounds count (both arms' floors in one regime,
//! neither moving during its run), and per figure the paired change with its interval and
//! verdict ([`super::paired`]).

use crate::analysis::paired::{median, paired_change};
use crate::model::{value, AbPercentile, AbRound, Floor, Stats, AB_PERCENTILES};
use crate::units::format_ns;

/// Floors further apart than this are in different regimes. On the 2-core VM this was built
/// on the two regimes sit about 3x apart (~130 ns and ~450 ns, the vCPUs on near or far
/// cores), while short floor measurements within one regime spread up to ~1.6x.
pub const REGIME_FACTOR: f64 = 2.0;

/// Why a round's pair cannot be compared, if it cannot: the two arms ran on floors in
/// different regimes (the hypervisor moved the vCPUs between near and far cores, and B would be
/// called slower for A's luck). A floor that moved during one arm's run while the pair's
/// floors still agree is kept (and counted in a note): on this kind of machine that happens
/// in most rounds, and the other arm's run saw the same mix.
#[must_use]
pub fn set_aside(a: Option<&Floor>, b: Option<&Floor>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) if apart(a.combined_ns.p50, b.combined_ns.p50) => Some(format!(
            "the arms ran on different floors (A {}, B {}: over 2x apart)",
            format_ns(a.combined_ns.p50),
            format_ns(b.combined_ns.p50)
        )),
        _ => None,
    }
}

/// Floors (p50s, ns) grouped into regimes: sorted, and split wherever the next floor is over
/// [`REGIME_FACTOR`] above the last; each regime's lowest and highest floor.
#[must_use]
pub fn regimes(floors: &[u64]) -> Vec<(u64, u64)> {
    let mut f = floors.to_vec();
    f.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::new();
    for x in f {
        match out.last_mut() {
            Some((_, hi)) if x as f64 <= REGIME_FACTOR * (*hi).max(1) as f64 => *hi = x,
            _ => out.push((x, x)),
        }
    }
    out
}

/// Whether two floor p50s (ns) are in different regimes: over [`REGIME_FACTOR`] apart.
#[must_use]
pub fn apart(a: u64, b: u64) -> bool {
    let (lo, hi) = (a.min(b).max(1) as f64, a.max(b) as f64);
    hi / lo > REGIME_FACTOR
}

/// A figure of a run's latency, ns (the mean as it is, percentiles as recorded).
fn figure(s: &Stats, name: &str) -> f64 {
    if name == "mean" {
        s.mean
    } else {
        value(s, name) as f64
    }
}

/// Per figure of [`AB_PERCENTILES`]: the medians, the paired change over the rounds counted
/// (those not set aside) and its verdict at `confidence`, a no change ruling out `resolve`
/// either way (else inconclusive).
#[must_use]
pub fn judge(rounds: &[AbRound], confidence: f64, resolve: f64) -> Vec<AbPercentile> {
    let counted: Vec<&AbRound> = rounds.iter().filter(|r| r.set_aside.is_none()).collect();
    AB_PERCENTILES
        .iter()
        .map(|&p| {
            let a: Vec<f64> = counted.iter().map(|r| figure(&r.a, p)).collect();
            let b: Vec<f64> = counted.iter().map(|r| figure(&r.b, p)).collect();
            let c = paired_change(&a, &b, confidence, resolve);
            let bounded = c.ci_low.is_finite() && c.ci_high.is_finite();
            AbPercentile {
                percentile: p.to_owned(),
                a_ns: median(&a).unwrap_or(0.0),
                b_ns: median(&b).unwrap_or(0.0),
                change: c.change,
                ci_low: bounded.then_some(c.ci_low),
                ci_high: bounded.then_some(c.ci_high),
                b_better_rounds: c.b_better_rounds as u32,
                rounds: c.rounds as u32,
                verdict: c.verdict.name().to_owned(),
                resolvable: c.verdict.resolvable(),
            }
        })
        .collect()
}

/// Whether every figure is decided (better, worse, or no change: [`judge`] with the run's
/// `--resolve`): `ab` may stop early.
#[must_use]
pub fn decided(percentiles: &[AbPercentile]) -> bool {
    percentiles
        .iter()
        .all(|p| matches!(p.verdict.as_str(), "better" | "worse" | "no change"))
}

/// The share of the false-alarm budget (1 - confidence) spent at the interim look; the rest
/// is the final look's. Small, as O'Brien and Fleming's boundaries are: the final look keeps
/// nearly all its power, and only a large change stops a run early.
pub const INTERIM_ALPHA_SHARE: f64 = 0.1;

/// When `ab` looks at its rounds, and at what confidence, so that stopping early costs no
/// false alarms: with an interim look the false-alarm budget `alpha = 1 - confidence` is split
/// ([`INTERIM_ALPHA_SHARE`] at the interim look, the rest at the last), and by the union bound
/// the chance of any false verdict over both looks stays within `alpha`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Looks {
    /// The interim look: after this many counted rounds, at this confidence.
    pub interim: Option<(u32, f64)>,
    /// The confidence of the last look's intervals.
    pub last: f64,
}

impl Looks {
    /// The looks for `rounds` rounds at `confidence`: an interim look at half the rounds (or
    /// later, where fewer rounds cannot give an interval at its confidence), when `early_stop`
    /// and there is room for one before the last round.
    #[must_use]
    pub fn new(rounds: u32, confidence: f64, early_stop: bool) -> Self {
        let alpha = 1.0 - confidence;
        let interim_alpha = INTERIM_ALPHA_SHARE * alpha;
        let at = (rounds / 2).max(crate::analysis::paired::min_rounds(interim_alpha) as u32);
        if early_stop && at < rounds {
            Looks {
                interim: Some((at, 1.0 - interim_alpha)),
                last: 1.0 - (alpha - interim_alpha),
            }
        } else {
            Looks {
                interim: None,
                last: confidence,
            }
        }
    }

    /// What the report says of the looks.
    #[must_use]
    pub fn note(&self, stopped_early: bool, counted: usize, resolve: f64) -> Option<String> {
        let (at, c) = self.interim?;
        let pct = |c: f64| format!("{:.2}%", 100.0 * c);
        Some(if counted < at as usize {
            format!(
                "the run ended before its interim look after {at} rounds; the intervals are at {} all the same \
                 (the budget was split when the run began)",
                pct(self.last)
            )
        } else if stopped_early {
            format!(
                "stopped early after {counted} rounds: at the interim look ({}) every figure was better, worse, \
                 or no change within {:.0}%",
                pct(c),
                100.0 * resolve
            )
        } else {
            format!(
                "an interim look after {at} rounds ({}) did not decide every figure; the intervals are at {} so \
                 that both looks together keep the false-alarm rate within the --confidence asked",
                pct(c),
                pct(self.last)
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(p50: u64) -> Stats {
        Stats {
            count: 1000,
            min: p50 / 2,
            mean: p50 as f64 * 1.1,
            p50,
            p90: p50 * 2,
            p95: p50 * 3,
            p99: p50 * 4,
            p999: p50 * 8,
            p9999: p50 * 16,
            max: p50 * 32,
        }
    }

    fn round(i: u32, a: u64, b: u64, set_aside: Option<&str>) -> AbRound {
        AbRound {
            round: i,
            order: if i % 2 == 1 { "AB" } else { "BA" }.into(),
            a: stats(a),
            b: stats(b),
            a_floor_ns: Some(120),
            b_floor_ns: Some(125),
            set_aside: set_aside.map(str::to_owned),
        }
    }

    #[test]
    fn rounds_set_aside_are_not_counted_and_a_constant_slowdown_is_worse() {
        let mut rounds: Vec<AbRound> = (1..=10)
            .map(|i| round(i, 1000 + u64::from(i) * 10, 1200 + u64::from(i) * 12, None))
            .collect();
        // A round whose B ran on far cores: set aside, so it cannot make B look slower.
        rounds.push(round(11, 1000, 5000, Some("different floors")));
        let p = judge(&rounds, 0.99, 0.05);
        let p50 = &p[0];
        assert_eq!(
            (p50.percentile.as_str(), p50.verdict.as_str(), p50.rounds),
            ("p50", "worse", 10)
        );
        assert!((p50.change - 0.2).abs() < 1e-9, "{p50:?}");
        assert_eq!(p50.b_better_rounds, 0);
        assert!(decided(&p));
    }

    #[test]
    fn the_looks_spend_the_false_alarm_budget_once() {
        let l = Looks::new(20, 0.99, true);
        let (at, interim) = l.interim.unwrap();
        // Half of 20 rounds cannot give a 99.9% interval (11 rounds at least).
        assert_eq!(at, 11);
        assert!(
            (interim - 0.999).abs() < 1e-12 && (l.last - 0.991).abs() < 1e-12,
            "{l:?}"
        );
        assert!(((1.0 - interim) + (1.0 - l.last) - 0.01).abs() < 1e-12);
        assert_eq!(Looks::new(40, 0.99, true).interim.unwrap().0, 20);
        // No room for a look, or none asked: the last look has the whole budget.
        for l in [Looks::new(10, 0.99, true), Looks::new(20, 0.99, false)] {
            assert_eq!((l.interim, l.last), (None, 0.99));
        }
    }

    #[test]
    fn floors_split_into_regimes_at_gaps_over_the_factor() {
        assert_eq!(regimes(&[420, 130, 140, 455, 150]), [(130, 150), (420, 455)]);
        assert_eq!(regimes(&[130, 200, 250]), [(130, 250)]);
        assert!(regimes(&[]).is_empty());
    }

    /// An interval around zero is a no change only when it rules out the change asked
    /// (`--resolve`); wider, it is inconclusive, undecided, and says how far it reaches.
    #[test]
    fn a_no_change_must_rule_out_the_change_asked() {
        let swing = |pct: u64| -> Vec<AbRound> {
            (1..=12)
                .map(|i| {
                    let b = if i % 2 == 0 { 1000 + 10 * pct } else { 1000 - 10 * pct };
                    round(i, 1000, b, None)
                })
                .collect()
        };
        let narrow = judge(&swing(1), 0.99, 0.05);
        assert_eq!(narrow[0].verdict, "no change", "{:?}", narrow[0]);
        assert!(narrow[0].resolvable.unwrap() <= 0.05 && decided(&narrow));
        let wide = judge(&swing(30), 0.99, 0.05);
        let r = wide[0].resolvable.unwrap();
        assert_eq!(wide[0].verdict, "inconclusive", "{:?}", wide[0]);
        assert!(r > 0.05 && !decided(&wide), "{r}");
        // Asked to rule out less, the same rounds are a no change.
        assert_eq!(judge(&swing(30), 0.99, 1.0)[0].verdict, "no change");
    }

    #[test]
    fn too_few_rounds_are_undecided() {
        let rounds: Vec<AbRound> = (1..=4).map(|i| round(i, 1000, 1000, None)).collect();
        let p = judge(&rounds, 0.99, 0.05);
        assert!(p.iter().all(|p| p.verdict == "cannot tell" && p.ci_low.is_none()));
        assert!(!decided(&p));
    }
}
