//! The paired rounds: the peers (the raw floor, messaging exclusive and concurrent, the C client)
//! measured in short interleaved rounds, so a change of the machine's regime lands on every case
//! of a round instead of on whichever case ran then; each client judged against the C client and
//! against the floor of the same rounds, with intervals. Round trips, then throughput the same
//! way.
//!
//! Timing model: round trips are the summary's fixed-count runs (each operation timed alone with
//! two `now_ns` readings), `Plan::paired_ops` per case and round after `Plan::paired_warmup`
//! operations; throughput is one batch of `Plan::paired_batch` messages published back to back,
//! timed until the subscriber has counted the last (ns per message), after a warm-up of a tenth
//! of that, on a 64 MiB term as the summary's throughput rows. Each round starts every case
//! fresh (its own clients and streams; only two threads may spin on this machine, so cases
//! cannot idle side by side), in an order that rotates from round to round.
//!
//! Floors: the floor's p50 is measured (`Plan::paired_floor` long) right before each case run's
//! warm-up and right after its last measured operation, with the case already started and its
//! responder standing still (parked, off its core: [`Pausable`]), so the window between the two
//! floors is the case's own operations, not its start-up and teardown. A case run whose
//! two floors differ by over `MOVED_FACTOR` saw the regime change under it: its round is run
//! again, at most [`MAX_RERUNS`] times in all, and after that the case run is left out of every
//! comparison (counted in the summary). A comparison of two cases uses the rounds in which both
//! ran on one floor (within `REGIME_FACTOR` of each other), and says how many rounds it used.
//! Where the counted rounds fall in two regimes (this VM's near and far cores, ~130 and ~430
//! ns), the summary also prints each regime's p50 ratios on their own: the ratio of two clients
//! is not the same on near cores as on far ones, and a run that saw mostly one would otherwise
//! read as a different answer.
//!
//! Statistics: per percentile, the Hodges-Lehmann change of the per-round ratios with its 99%
//! signed-rank interval ([`latency_probe::analysis::paired`]), printed as a ratio.

use std::path::Path;
use std::time::{Duration, Instant};

use aeron_latency::messaging::{Concurrent, Exclusive};
use latency_probe::analysis::ab::{apart, regimes};
use latency_probe::analysis::paired::{paired_change, PairedChange, DEFAULT_RESOLVE};
use latency_probe::measure::floor;
use latency_probe::model::{regime_moved, Stats};

use crate::c_client::{CFlow, CPing, C_THROUGHPUT_STREAM};
use crate::common::{percentiles_of, Flowing, Op, Pausable, Placement, Plan, BIG_TERM, MSG_LEN, TP_FRAGMENT_LIMIT};
use crate::messaging::{Flow, Ping, Variant};
use crate::raw::Raw;

/// Rounds whose floor moved are run again at most this many times per bench run (round trips
/// and throughput each).
pub(crate) const MAX_RERUNS: usize = 3;

/// The round-trip cases, in the summary's order; the C client is the reference.
const CASES: [&str; 4] = ["raw", "messaging_exclusive", "messaging", "c_client"];
const REFERENCE: usize = 3;
const FIGURES: [(&str, f64); 3] = [("p50", 0.5), ("p99", 0.99), ("p99.9", 0.999)];

/// The throughput cases; each messaging case is judged against its C peer.
const TP_CASES: [&str; 4] = ["messaging_exclusive", "messaging", "c_client_exclusive", "c_client"];
const TP_PEER: [usize; 2] = [2, 3];

/// A started round-trip case: its operation, standing its responder still, and stopping it.
trait Started: Op + Pausable {
    fn finish(&mut self);
}

struct Case<C: Op + Pausable>(C, fn(&mut C) -> String);

impl<C: Op + Pausable> Op for Case<C> {
    fn op(&mut self) {
        self.0.op();
    }
}

impl<C: Op + Pausable> Pausable for Case<C> {
    fn pause(&mut self) {
        self.0.pause();
    }
    fn resume(&mut self) {
        self.0.resume();
    }
}

impl<C: Op + Pausable> Started for Case<C> {
    fn finish(&mut self) {
        let _ = (self.1)(&mut self.0);
    }
}

impl Op for Box<dyn Started> {
    fn op(&mut self) {
        Op::op(self.as_mut());
    }
}

/// Round-trip case `i` of [`CASES`], started on streams no earlier round or other case used
/// (`run` is the round's number among all rounds run, re-runs included; under 1,000).
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

/// Throughput case `i` of [`TP_CASES`], on streams no earlier round used (messaging: 1010 +
/// 50,000 + ..., the C client: 2010 + 60,000 + ...).
fn start_flow(i: usize, dir: &Path, at: &Placement, run: usize) -> Box<dyn Flowing> {
    let r = at.responder;
    let v = Variant {
        use_offer: false,
        fragment_limit: TP_FRAGMENT_LIMIT,
        term: Some(BIG_TERM),
        lagging: false,
    };
    let index = 50_000 + 10 * run + i;
    let c_stream = C_THROUGHPUT_STREAM + 60_000 + 10 * run as i32 + i as i32;
    match i {
        0 => Box::new(Flow::<Exclusive>::start(dir, r, index, v)),
        1 => Box::new(Flow::<Concurrent>::start(dir, r, index, v)),
        2 => Box::new(CFlow::start(dir, r, c_stream, false, |c, ch, st| {
            c.exclusive_publication(ch, st)
        })),
        _ => Box::new(CFlow::start(dir, r, c_stream, false, |c, ch, st| c.publication(ch, st))),
    }
}

/// One case's run in a round: its figures and the floor's p50 right before and after it, ns.
#[derive(Debug, Clone, Copy, Default)]
struct CaseRun<T> {
    figures: T,
    floor: (u64, u64),
}

impl<T> CaseRun<T> {
    /// Whether the regime held still around it.
    fn usable(&self) -> bool {
        !regime_moved(self.floor.0, self.floor.1)
    }

    /// Its floor: before and after averaged, ns.
    fn floor_ns(&self) -> u64 {
        (self.floor.0 + self.floor.1) / 2
    }
}

/// One round: each case run once (`measure(i)`, its floors included), in an order rotated by
/// `rotation` (the counted rounds so far, so re-runs keep the order balanced).
fn round<T: Default + Copy, const N: usize>(
    rotation: usize,
    mut measure: impl FnMut(usize) -> CaseRun<T>,
) -> [CaseRun<T>; N] {
    let mut out = [CaseRun::<T>::default(); N];
    for k in 0..N {
        let i = (k + rotation) % N;
        out[i] = measure(i);
    }
    out
}

/// The rounds of one kind (round trips or throughput), counted and re-run.
pub(crate) struct Rounds<T, const N: usize> {
    /// Every counted round's case runs.
    rounds: Vec<[CaseRun<T>; N]>,
    /// Rounds run again because a case's floor moved: that case's (before, after) p50, ns.
    reruns: Vec<(u64, u64)>,
}

impl<T: Copy, const N: usize> Rounds<T, N> {
    /// Case runs left out because their floor moved after the re-runs were spent.
    fn moved(&self) -> usize {
        self.rounds.iter().flatten().filter(|c| !c.usable()).count()
    }

    /// The rounds in which cases `i` and `j` both ran on one floor: their figures by `f`.
    fn pairs(&self, i: usize, j: usize, f: impl Fn(&T) -> f64) -> (Vec<f64>, Vec<f64>) {
        self.rounds
            .iter()
            .filter(|r| same_floor(&r[i], &r[j]))
            .map(|r| (f(&r[i].figures), f(&r[j].figures)))
            .unzip()
    }
}

fn same_floor<T>(x: &CaseRun<T>, y: &CaseRun<T>) -> bool {
    x.usable() && y.usable() && !apart(x.floor_ns(), y.floor_ns())
}

/// Runs `count` rounds of `measure`, re-running those in which a case's floor moved (at most
/// [`MAX_RERUNS`]); `measure(i, run)` measures case `i`, with its floors, in the `run`th round
/// run (1-based).
fn rounds<T: Default + Copy, const N: usize>(
    count: usize,
    mut measure: impl FnMut(usize, usize) -> CaseRun<T>,
) -> Rounds<T, N> {
    let mut out = Rounds {
        rounds: Vec::new(),
        reruns: Vec::new(),
    };
    let mut run = 0;
    while out.rounds.len() < count {
        run += 1;
        let r: [CaseRun<T>; N] = round(out.rounds.len(), |i| measure(i, run));
        if let Some(moved) = r.iter().find(|c| !c.usable()) {
            if out.reruns.len() < MAX_RERUNS {
                out.reruns.push(moved.floor);
                continue;
            }
        }
        out.rounds.push(r);
    }
    out
}

/// What the paired rounds measured.
pub(crate) struct Paired {
    round_trips: Rounds<Stats, 4>,
    /// Throughput: ns per message.
    throughput: Rounds<f64, 4>,
}

/// Runs `plan.paired_rounds` rounds of round trips, then `plan.paired_tp_rounds` of throughput.
pub(crate) fn run(dir: &Path, at: &Placement, plan: &Plan) -> Paired {
    let floor_p50 = || {
        at.unpinned(|| floor::measure(at.initiator, at.responder, plan.paired_floor).expect("measuring the floor"))
            .value_at_quantile(0.5)
    };
    let round_trips = rounds(plan.paired_rounds, |i, run| {
        let mut case = at.unpinned(|| start(i, dir, at, run));
        case.pause();
        let before = floor_p50();
        at.unpinned(|| case.resume());
        let h = percentiles_of(&mut case, plan.paired_warmup, plan.paired_ops);
        case.pause();
        let after = floor_p50();
        case.finish();
        CaseRun {
            figures: Stats::from_histogram(&h),
            floor: (before, after),
        }
    });
    let throughput = rounds(plan.paired_tp_rounds, |i, run| {
        let mut flow = at.unpinned(|| start_flow(i, dir, at, run));
        flow.control().pause();
        let before = floor_p50();
        flow.control().resume();
        flow.send(plan.paired_batch / 10);
        let t0 = Instant::now();
        flow.send(plan.paired_batch);
        let ns = ns_per(t0.elapsed(), plan.paired_batch);
        flow.control().pause();
        let after = floor_p50();
        let _ = flow.finish();
        CaseRun {
            figures: ns,
            floor: (before, after),
        }
    });
    Paired {
        round_trips,
        throughput,
    }
}

fn ns_per(d: Duration, n: u64) -> f64 {
    d.as_nanos() as f64 / n.max(1) as f64
}

fn value(s: &Stats, q: f64) -> f64 {
    match q {
        0.5 => s.p50 as f64,
        0.99 => s.p99 as f64,
        _ => s.p999 as f64,
    }
}

fn median(v: &[f64]) -> f64 {
    latency_probe::analysis::paired::median(v).unwrap_or(0.0)
}

/// `x` as a ratio with its interval and the rounds it used: `0.94 [0.91, 0.97] (16)`.
fn ratio(c: &PairedChange) -> String {
    if c.ci_low.is_finite() && c.ci_high.is_finite() {
        format!(
            "{:.2} [{:.2}, {:.2}] ({})",
            1.0 + c.change,
            1.0 + c.ci_low,
            1.0 + c.ci_high,
            c.rounds
        )
    } else {
        format!("{:.2} [-] ({})", 1.0 + c.change, c.rounds)
    }
}

/// The paired summary: round trips (per client and percentile, the ratio to the C client and to
/// the floor of the same rounds, by regime where there were two), then throughput.
pub(crate) fn print(p: &Paired) {
    println!();
    header("round trips", &p.round_trips);
    println!(
        "{:<22}{:>7}{:>10}{:>28}{:>28}  vs c_client",
        "case", "", "median", "ratio to c_client (rounds)", "ratio to the floor"
    );
    let rt = &p.round_trips;
    for (i, name) in CASES.iter().enumerate() {
        for (label, q) in FIGURES {
            let mine: Vec<f64> = rt.rounds.iter().map(|r| value(&r[i].figures, q)).collect();
            let (c, m) = rt.pairs(REFERENCE, i, |s| value(s, q));
            let vs_c = paired_change(&c, &m, 0.99, DEFAULT_RESOLVE);
            let (f, m) = rt.pairs(0, i, |s| value(s, q));
            let vs_floor = paired_change(&f, &m, 0.99, DEFAULT_RESOLVE);
            let (c_ratio, verdict) = if i == REFERENCE {
                ("-".to_owned(), "(reference)")
            } else {
                (ratio(&vs_c), vs_c.verdict.name())
            };
            println!(
                "{:<22}{label:>7}{:>8.0}ns{c_ratio:>28}{:>28}  {verdict}",
                if label == "p50" { name } else { "" },
                median(&mine),
                if i == 0 { "1.00".to_owned() } else { ratio(&vs_floor) },
            );
        }
    }
    by_regime(rt);
    println!();
    header("throughput", &p.throughput);
    println!(
        "{:<22}{:>12}{:>12}  {:<48}vs its C peer",
        "case", "median", "msgs/s", "ns/msg ratio to its C peer (rounds)"
    );
    let tp = &p.throughput;
    for (i, name) in TP_CASES.iter().enumerate() {
        let ns: Vec<f64> = tp.rounds.iter().map(|r| r[i].figures).collect();
        let m = median(&ns);
        let (peer_ratio, verdict) = match TP_PEER.get(i) {
            Some(&peer) => {
                let (c, mine) = tp.pairs(peer, i, |x| *x);
                let vs = paired_change(&c, &mine, 0.99, DEFAULT_RESOLVE);
                (format!("{} vs {}", ratio(&vs), TP_CASES[peer]), vs.verdict.name())
            }
            None => ("-".to_owned(), "(reference)"),
        };
        println!(
            "{name:<22}{m:>6.1} ns/msg{:>11.1}M  {peer_ratio:<48}{verdict}",
            1e3 / m.max(f64::MIN_POSITIVE)
        );
    }
}

/// The header of one kind of paired rounds: how many, the re-runs, the case runs left out.
fn header<T: Copy, const N: usize>(what: &str, r: &Rounds<T, N>) {
    let moved = r.moved();
    println!(
        "paired {what}: {} rounds, each case fresh per round in rotating order with the floor before and after \
         it; {} re-run because a case's floor moved (at most {MAX_RERUNS}){}; a ratio uses the rounds in which \
         both cases ran on one floor: Hodges-Lehmann estimate over the per-round ratios, 99% signed-rank \
         interval",
        r.rounds.len(),
        r.reruns.len(),
        if moved > 0 {
            format!(", {moved} case runs left out (their floor moved after the re-runs were spent)")
        } else {
            String::new()
        }
    );
    for (before, after) in &r.reruns {
        println!("  re-run: a case's floor p50 {before} ns before it, {after} ns after");
    }
}

/// Where the C client's usable runs fall in more than one regime: each regime's p50 ratios to
/// the C client on their own.
fn by_regime(rt: &Rounds<Stats, 4>) {
    let floors: Vec<u64> = rt
        .rounds
        .iter()
        .map(|r| &r[REFERENCE])
        .filter(|c| c.usable())
        .map(CaseRun::floor_ns)
        .collect();
    let regimes = regimes(&floors);
    if regimes.len() < 2 {
        return;
    }
    println!("by the floor's regime (the C client's floor), p50 ratio to c_client:");
    for (lo, hi) in regimes {
        let only = Rounds::<Stats, 4> {
            rounds: rt
                .rounds
                .iter()
                .filter(|r| (lo..=hi).contains(&r[REFERENCE].floor_ns()))
                .copied()
                .collect(),
            reruns: Vec::new(),
        };
        let line: Vec<String> = (1..REFERENCE)
            .map(|i| {
                let (c, m) = only.pairs(REFERENCE, i, |s| s.p50 as f64);
                let vs = paired_change(&c, &m, 0.99, DEFAULT_RESOLVE);
                format!("{} {} {}", CASES[i], ratio(&vs), vs.verdict.name())
            })
            .collect();
        println!("  floor {lo}-{hi} ns: {}", line.join("; "));
    }
}
