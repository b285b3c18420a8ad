//! The paired rounds: the peers' round trips (the raw floor, messaging exclusive and concurrent,
//! the C client) measured in short interleaved rounds, so a change of the machine's regime
//! lands on every case of a round instead of on whichever case ran then; each client judged
//! against the C client and against the floor of the same rounds, with intervals.
//!
//! Timing model: the summary's fixed-count runs (each operation timed alone with two
//! `now_ns` readings), `Plan::paired_ops` per case and round after `Plan::paired_warmup`
//! operations. Each round starts every case fresh (its own clients and streams; only two
//! threads may spin on this machine, so cases cannot idle side by side), in an order that
//! rotates from round to round. The floor is measured right before and right after each
//! round; a round whose floor moved (over `MOVED_FACTOR` apart) is run again, at most
//! [`MAX_RERUNS`] times in all, and the summary says how many were.
//!
//! Statistics: per percentile, the Hodges-Lehmann change of the per-round ratios with its 99%
//! signed-rank interval ([`latency_probe::analysis::paired`]), printed as a ratio.

use std::path::Path;

use aeron_latency::messaging::{Concurrent, Exclusive};
use latency_probe::analysis::paired::{paired_change, PairedChange};
use latency_probe::measure::floor;
use latency_probe::model::{regime_moved, Stats};

use crate::c_client::CPing;
use crate::common::{percentiles_of, Op, Placement, Plan, MSG_LEN};
use crate::messaging::Ping;
use crate::raw::Raw;

/// Rounds whose floor moved are run again at most this many times per bench run.
pub(crate) const MAX_RERUNS: usize = 3;

/// The cases, in the summary's order; the C client is the reference.
const CASES: [&str; 4] = ["raw", "messaging_exclusive", "messaging", "c_client"];
const REFERENCE: usize = 3;
const FIGURES: [(&str, f64); 3] = [("p50", 0.5), ("p99", 0.99), ("p99.9", 0.999)];

/// A started case: its operation, and how to stop it.
trait Started {
    fn op(&mut self);
    fn finish(&mut self);
}

struct Case<C: Op>(C, fn(&mut C) -> String);

impl<C: Op> Started for Case<C> {
    fn op(&mut self) {
        self.0.op();
    }
    fn finish(&mut self) {
        let _ = (self.1)(&mut self.0);
    }
}

impl Op for Box<dyn Started> {
    fn op(&mut self) {
        Started::op(self.as_mut());
    }
}

/// Case `i` of [`CASES`], started on streams no earlier round or other case used (`run` is
/// the round's number among all rounds run, re-runs included; under 1,000).
fn start(i: usize, dir: &Path, at: &Placement, run: usize) -> Box<dyn Started> {
    // messaging: 1002/1003 + offset, the C client: 2002/2003 + offset; ranges 10,000 apart.
    let offset = 10_000 * (1 + i as i32) + 10 * run as i32;
    let r = at.responder;
    match i {
        0 => Box::new(Case(Raw::start(r), |_| String::new())),
        1 => Box::new(Case(Ping::<Exclusive>::start(dir, r, offset, MSG_LEN), Ping::finish)),
        2 => Box::new(Case(Ping::<Concurrent>::start(dir, r, offset, MSG_LEN), Ping::finish)),
        _ => Box::new(Case(CPing::start(dir, r, offset, MSG_LEN), CPing::finish)),
    }
}

/// One round: every case once, in an order rotated by `rotation` (the counted rounds so far,
/// so re-runs keep the order balanced); each case's figures.
fn round(dir: &Path, at: &Placement, plan: &Plan, rotation: usize, run: usize) -> [Stats; 4] {
    let mut out = [Stats::default(); 4];
    for k in 0..CASES.len() {
        let i = (k + rotation) % CASES.len();
        let mut case = at.unpinned(|| start(i, dir, at, run));
        at.hot();
        let h = percentiles_of(&mut case, plan.paired_warmup, plan.paired_ops);
        case.finish();
        drop(case);
        out[i] = Stats::from_histogram(&h);
    }
    out
}

/// What the paired rounds measured.
pub(crate) struct Paired {
    /// Every counted round's figures, per case.
    rounds: Vec<[Stats; 4]>,
    /// Rounds run again because their floor moved: (before, after) p50 of each, ns.
    reruns: Vec<(u64, u64)>,
    /// Rounds kept although their floor moved (the re-runs were spent).
    kept_moved: usize,
}

/// Runs `plan.paired_rounds` rounds, re-running those whose floor moved (at most
/// [`MAX_RERUNS`]).
pub(crate) fn run(dir: &Path, at: &Placement, plan: &Plan) -> Paired {
    let floor_p50 = || {
        at.unpinned(|| floor::measure(at.initiator, at.responder, plan.local_floor).expect("measuring the floor"))
            .value_at_quantile(0.5)
    };
    let mut p = Paired {
        rounds: Vec::new(),
        reruns: Vec::new(),
        kept_moved: 0,
    };
    let mut n = 0;
    while p.rounds.len() < plan.paired_rounds {
        n += 1;
        let before = floor_p50();
        let figures = round(dir, at, plan, p.rounds.len(), n);
        let after = floor_p50();
        if regime_moved(before, after) {
            if p.reruns.len() < MAX_RERUNS {
                p.reruns.push((before, after));
                continue;
            }
            p.kept_moved += 1;
        }
        p.rounds.push(figures);
    }
    p
}

fn value(s: &Stats, q: f64) -> f64 {
    match q {
        0.5 => s.p50 as f64,
        0.99 => s.p99 as f64,
        _ => s.p999 as f64,
    }
}

/// `x` as a ratio with its interval: `0.94 [0.91, 0.97]`.
fn ratio(c: &PairedChange) -> String {
    if c.ci_low.is_finite() && c.ci_high.is_finite() {
        format!("{:.2} [{:.2}, {:.2}]", 1.0 + c.change, 1.0 + c.ci_low, 1.0 + c.ci_high)
    } else {
        format!("{:.2} [-]", 1.0 + c.change)
    }
}

/// The paired summary: per client and percentile, its ratio to the C client and to the floor of
/// the same rounds, with 99% intervals, and the verdict against the C client.
pub(crate) fn print(p: &Paired) {
    println!();
    println!(
        "paired rounds: {} rounds, each case fresh per round in rotating order; {} re-run because the floor moved \
         (at most {MAX_RERUNS}){}; ratios are Hodges-Lehmann estimates over the per-round ratios with 99% \
         signed-rank intervals",
        p.rounds.len(),
        p.reruns.len(),
        if p.kept_moved > 0 {
            format!(", {} kept with a moving floor (re-runs spent)", p.kept_moved)
        } else {
            String::new()
        }
    );
    for (before, after) in &p.reruns {
        println!("  re-run: floor p50 {before} ns before, {after} ns after");
    }
    println!(
        "{:<22}{:>7}{:>10}{:>26}{:>26}  vs c_client",
        "case", "", "median", "ratio to c_client", "ratio to the floor"
    );
    let col = |i: usize, q: f64| -> Vec<f64> { p.rounds.iter().map(|r| value(&r[i], q)).collect() };
    for (i, name) in CASES.iter().enumerate() {
        for (label, q) in FIGURES {
            let mine = col(i, q);
            let mut sorted = mine.clone();
            sorted.sort_by(f64::total_cmp);
            let median = sorted.get(sorted.len() / 2).copied().unwrap_or(0.0);
            let vs_c = paired_change(&col(REFERENCE, q), &mine, 0.99);
            let vs_floor = paired_change(&col(0, q), &mine, 0.99);
            let (c_ratio, verdict) = if i == REFERENCE {
                ("-".to_owned(), "(reference)")
            } else {
                (ratio(&vs_c), vs_c.verdict.name())
            };
            println!(
                "{:<22}{label:>7}{:>8.0}ns{c_ratio:>26}{:>26}  {verdict}",
                if label == "p50" { name } else { "" },
                median,
                if i == 0 { "1.00".to_owned() } else { ratio(&vs_floor) },
            );
        }
    }
}
