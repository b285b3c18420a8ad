//! What a service's own figure costs (`FigureRecorder`, messaging's feature `tap`): the time
//! per value of `record_at` and `record` against a loop that reads the same values and records
//! nothing, in interleaved rounds on one thread.
//!
//! Four variants, each over k values a round, the order rotating from round to round:
//! - `loop`: reads each value and sums it (what every variant does around its call);
//! - `record_at, steady`: values spread over 200-2,200 ns in a fixed pseudo-random order, so
//!   once an interval's 128 slowest are in, few values enter them (a service whose latency does
//!   not drift);
//! - `record_at, rising`: each value above the one before (a service falling behind, a queue
//!   growing), so every value enters the interval's slowest: a store each, and a selection over
//!   the buffer once every 384 that enter (`messaging/src/tap/slowest.rs`);
//! - `record, rising`: the same values through `record`, which reads the clock for each value
//!   that enters (`record_at` takes the caller's time instead).
//!
//! A variant's cost is the median over the rounds of its per-round difference to `loop` (to
//! `record_at, rising` for `record`), so a drift of the machine's speed between rounds cancels
//! out.

use std::time::Instant;

use aeron_latency::messaging::tap::{FigureRecorder, Tap};

use crate::figures;
use crate::tap::median_min_max;

/// What the rounds found: ns per value, each as the median [min, max] of its per-round
/// differences.
pub(crate) struct FigureCost {
    /// Values a round.
    pub(crate) k: u64,
    /// Rounds, each running every variant once.
    pub(crate) rounds: usize,
    /// The loop alone, ns per value, median over the rounds.
    pub(crate) loop_ns: f64,
    /// `record_at` of steady values beyond the loop.
    pub(crate) steady: (f64, f64, f64),
    /// `record_at` of rising values beyond the loop.
    pub(crate) rising: (f64, f64, f64),
    /// `record` of rising values beyond `record_at` of the same values (the clock reads).
    pub(crate) clock_of_entering: (f64, f64, f64),
}

/// The steady values, `k` of them: 200-2,200 ns in the order of a linear congruential
/// generator; and the rising ones, 22 ns a value with a wobble of the steady values' last digits
/// (rising all the same). Both read as one load and one add a value (the rising ones with an
/// offset that keeps them rising from round to round).
fn values(k: u64) -> (Vec<i64>, Vec<i64>) {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let steady: Vec<i64> = (0..k)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            200 + ((x >> 33) % 2001) as i64
        })
        .collect();
    let rising = steady.iter().enumerate().map(|(i, v)| 22 * i as i64 + v % 7).collect();
    (steady, rising)
}

/// One round of one variant over `values` (each plus `from`): ns per value.
#[inline(never)]
fn one_round(variant: usize, rec: &mut FigureRecorder, values: &[i64], from: i64) -> f64 {
    let mut sum = 0_i64;
    let t0 = Instant::now();
    for (i, &v) in values.iter().enumerate() {
        let v = v + from;
        match variant {
            0 => sum = sum.wrapping_add(std::hint::black_box(v)),
            1 | 2 => rec.record_at(v, i as i64),
            _ => rec.record(v),
        }
    }
    std::hint::black_box(sum);
    t0.elapsed().as_nanos() as f64 / values.len() as f64
}

/// Runs the rounds, each variant recording into a figure of its own on `tap` (so one
/// variant's values do not set the threshold of another's slowest).
pub(crate) fn figure_cost(tap: &Tap, k: u64, rounds: usize) -> FigureCost {
    let mut recs: Vec<FigureRecorder> = ["loop", "steady", "rising", "record-rising"]
        .iter()
        .map(|v| tap.figure(&format!("bench-figure-{v}")).expect("the bench's figure"))
        .collect();
    let (steady, rising) = values(k);
    let mut costs = [const { Vec::new() }; 4];
    let mut rising_from = 1_000_i64;
    for r in 0..rounds {
        for j in 0..4 {
            let variant = (r + j) % 4;
            let cost = if variant < 2 {
                one_round(variant, &mut recs[variant], &steady, 0)
            } else {
                let c = one_round(variant, &mut recs[variant], &rising, rising_from);
                rising_from += 22 * k as i64 + 22;
                c
            };
            costs[variant].push(cost);
        }
    }
    let diff = |a: usize, b: usize| median_min_max(costs[a].iter().zip(&costs[b]).map(|(x, y)| x - y).collect());
    FigureCost {
        k,
        rounds,
        loop_ns: median_min_max(costs[0].clone()).0,
        steady: diff(1, 0),
        rising: diff(2, 0),
        clock_of_entering: diff(3, 2),
    }
}

/// Prints the rounds' findings.
pub(crate) fn print(c: &FigureCost) {
    println!();
    println!(
        "a service's own figure (FigureRecorder, one thread, k = {} values a round, {} rounds interleaved; \
         a change as the median [min, max] of its per-round differences):",
        c.k, c.rounds
    );
    println!(
        "the loop alone (reads a value, records nothing): {:.1} ns/value",
        c.loop_ns
    );
    figures::ns("figure", "the loop alone", c.loop_ns);
    let change = |text: &str, figure: &str, (m, lo, hi): (f64, f64, f64)| {
        println!("{text}: {m:+.1} ns/value [{lo:+.1}, {hi:+.1}]");
        figures::ns("figure", figure, m);
    };
    change(
        "record_at, steady values (few enter the slowest; - loop)",
        "record_at, steady",
        c.steady,
    );
    change(
        "record_at, rising values (each enters the slowest; - loop)",
        "record_at, rising",
        c.rising,
    );
    change(
        "  record of the same (a clock read for each that enters; - record_at, rising)",
        "record's clock read, rising",
        c.clock_of_entering,
    );
}
