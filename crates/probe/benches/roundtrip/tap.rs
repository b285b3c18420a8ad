//! What the tap (messaging's feature `tap`) costs a service: the send stamp on the publishing
//! thread, the latency recording on the polling thread, each against the same path without it,
//! measured in interleaved rounds on one thread (no cross-core transfer to blur a few ns).
//!
//! Five streams, one exclusive publication and one subscription each, `try_claim` of 32 bytes:
//! - `plain`: no stamp, no recording (the feature built, both options off);
//! - `stamped`: the publication stamps (one `CLOCK_MONOTONIC` read per message, right before
//!   the claim); the subscription does not record;
//! - `recorded`: stamped, and the subscription records each message's latency into a `Tap`
//!   (one clock read per poll), polling 256 fragments a time;
//! - `stamped, 1 per poll` and `recorded, 1 per poll`: the same two polling one fragment a
//!   time, so every message pays the per-poll part (a clock read, the handover check);
//! - `clocked, 1 per poll`: stamped, one fragment a poll, and the handler reads the clock
//!   once per message: the clock read where recording reads it (after the frame is read, so
//!   it waits for that read as the recording's does), for "recording beyond its clock read";
//! - `clocked, keeping up` and `recorded, keeping up`: the same two, but each message is
//!   polled right after it is published (publish one, poll one), so the latencies stay a few
//!   tens of ns and do not rise: a subscriber that keeps up. In the rows above the whole
//!   round is published before it is polled, so when a poll costs more than a publish each
//!   message is older than the one before (a subscriber falling behind), and each one enters
//!   the interval's slowest.
//!
//! A round publishes k messages on each stream in turn (the order rotating from round to round)
//! and then polls them all; the costs per message are each round's time over k. The change a
//! variant makes is the median over rounds of its per-round difference to the variant it adds
//! to (stamped - plain on the publishing side; recorded - stamped when polling), so a drift of
//! the machine's speed between rounds cancels out.

use std::path::Path;
use std::time::{Duration, Instant};

use aeron_latency::messaging::tap::{RecordLatency, Tap};
use aeron_latency::messaging::{Exclusive, MessageHeader, Publication, StampClock, Subscriber};

use crate::common::{connect, message, spin_until, wait_for, Placement, Plan, BIG_TERM, CHANNEL, TP_FRAGMENT_LIMIT};
use crate::figures;
use crate::messaging::publish;

/// One variant's stream.
struct Variant {
    name: &'static str,
    publ: Publication<Exclusive>,
    sub: Subscriber,
    fragment_limit: usize,
    /// The handler reads the clock once per message.
    clocked: bool,
    /// Each message is polled right after it is published (its round's time is all in the
    /// poll column).
    keeping_up: bool,
    /// Per round: publish ns/msg, poll ns/msg.
    costs: Vec<(f64, f64)>,
}

/// What the rounds found.
pub(crate) struct TapCost {
    pub(crate) k: u64,
    pub(crate) rounds: usize,
    /// Per variant: its name, its median publish and poll ns/msg.
    pub(crate) variants: Vec<(&'static str, f64, f64)>,
    /// One `StampClock::Monotonic.now_ns()`, ns, median over the rounds.
    pub(crate) clock_ns: f64,
    /// Stamping on the publishing side: median, min, max of the per-round difference, ns/msg.
    pub(crate) stamp: (f64, f64, f64),
    /// Recording at 256 fragments a poll, the same.
    pub(crate) record: (f64, f64, f64),
    /// Recording at one fragment a poll (every message a poll), the same.
    pub(crate) record_each: (f64, f64, f64),
    /// A clock read in the handler at one fragment a poll (clocked - stamped), the same.
    pub(crate) clock_in_poll: (f64, f64, f64),
    /// Recording at one fragment a poll beyond a clock read in place (recorded - clocked).
    pub(crate) record_each_beyond_clock: (f64, f64, f64),
    /// The same, each message polled right after it was published (recorded - clocked,
    /// keeping up).
    pub(crate) record_kept_up_beyond_clock: (f64, f64, f64),
    /// A service's own figure on the same tap (`figure.rs`).
    pub(crate) figure: crate::figure::FigureCost,
}

pub(crate) fn median_min_max(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (
        latency_probe::analysis::paired::median(&v).unwrap_or(f64::NAN),
        v.first().copied().unwrap_or(f64::NAN),
        v.last().copied().unwrap_or(f64::NAN),
    )
}

fn one_clock_read(n: u32) -> f64 {
    let t0 = Instant::now();
    let mut sum = 0_i64;
    for _ in 0..n {
        sum = sum.wrapping_add(StampClock::Monotonic.now_ns());
    }
    std::hint::black_box(sum);
    t0.elapsed().as_nanos() as f64 / f64::from(n)
}

/// What each variant does: name, stamp, record, a clock read in the handler, fragment limit
/// (0: keeping up, one message published then polled), stream.
const SPECS: [(&str, bool, bool, bool, usize, i32); 8] = [
    ("plain", false, false, false, TP_FRAGMENT_LIMIT, 1030),
    ("stamped", true, false, false, TP_FRAGMENT_LIMIT, 1031),
    ("recorded", true, true, false, TP_FRAGMENT_LIMIT, 1032),
    ("stamped, 1 per poll", true, false, false, 1, 1033),
    ("recorded, 1 per poll", true, true, false, 1, 1034),
    ("clocked, 1 per poll", true, false, true, 1, 1035),
    ("clocked, keeping up", true, false, true, 0, 1036),
    ("recorded, keeping up", true, true, false, 0, 1037),
];

/// Each of [`SPECS`]: its exclusive publication and subscription on `channel`, connected,
/// stamping and recording into `tap` as it says.
fn start_variants(at: &Placement, client: &aeron_latency::messaging::Client, tap: &Tap, channel: &str) -> Vec<Variant> {
    SPECS
        .iter()
        .map(|&(name, stamp, record, clocked, fragment_limit, stream)| {
            let (publ, sub) = at.unpinned(|| {
                let mut sub = client.subscription(channel, stream).expect("tap cost subscription");
                let mut publ = client
                    .exclusive_publication(channel, stream)
                    .expect("tap cost publication");
                wait_for("tap cost stream", || publ.is_connected() && sub.is_connected());
                if stamp {
                    publ.stamp_send_time(Some(StampClock::Monotonic));
                }
                if record {
                    sub.record_latency(tap, RecordLatency::hop(format!("bench-{stream}")))
                        .expect("records");
                }
                (publ, sub)
            });
            Variant {
                name,
                publ,
                sub,
                fragment_limit: fragment_limit.max(1),
                clocked,
                keeping_up: fragment_limit == 0,
                costs: Vec::new(),
            }
        })
        .collect()
}

/// Runs the rounds; `tap_dir` receives the tap's logs (removed afterwards).
pub(crate) fn tap_cost(at: &Placement, dir: &Path, plan: &Plan) -> TapCost {
    let tap_dir = std::env::temp_dir().join(format!("roundtrip-tap-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tap_dir);
    let tap = Tap::builder(&tap_dir).start().expect("the bench's tap starts");
    let channel = format!("{CHANNEL}?term-length={BIG_TERM}");
    let client = at.unpinned(|| connect(dir));
    let mut variants = start_variants(at, &client, &tap, &channel);
    // 3/4 of the publication window (half a 64 MiB term) at most, as the split rows.
    let frame = Publication::<Exclusive>::frame_length(crate::common::MSG_LEN);
    let k = plan.split_messages.min((BIG_TERM / 2 / frame * 3 / 4) as u64);
    let rounds = plan.split_rounds * 2 + 1;
    let mut clock = Vec::new();
    let only = only_variants();
    for r in 0..rounds {
        for j in 0..variants.len() {
            let i = (r + j) % SPECS.len();
            let v = &mut variants[i];
            if !only.as_ref().is_none_or(|o| o.contains(&i)) {
                v.costs.push((0.0, 0.0)); // not run (BENCH_TAP_VARIANT)
                continue;
            }
            let cost = one_variant(v, k);
            v.costs.push(cost);
            std::thread::sleep(Duration::from_millis(5)); // the driver sees the positions
        }
        clock.push(one_clock_read(100_000));
    }
    let diff = |a: usize, b: usize, side: fn(&(f64, f64)) -> f64| {
        median_min_max(
            variants[a]
                .costs
                .iter()
                .zip(&variants[b].costs)
                .map(|(x, y)| side(x) - side(y))
                .collect(),
        )
    };
    let cost = TapCost {
        k,
        rounds,
        variants: variants
            .iter()
            .map(|v| {
                let (p, _, _) = median_min_max(v.costs.iter().map(|c| c.0).collect());
                let (q, _, _) = median_min_max(v.costs.iter().map(|c| c.1).collect());
                (v.name, p, q)
            })
            .collect(),
        clock_ns: median_min_max(clock).0,
        stamp: diff(1, 0, |c| c.0),
        record: diff(2, 1, |c| c.1),
        record_each: diff(4, 3, |c| c.1),
        clock_in_poll: diff(5, 3, |c| c.1),
        record_each_beyond_clock: diff(4, 5, |c| c.1),
        record_kept_up_beyond_clock: diff(7, 6, |c| c.1),
        figure: crate::figure::figure_cost(&tap, k, rounds),
    };
    drop(variants); // their recorders retire: the tap takes all they hold
    let summary = tap.stop().expect("the bench's tap wrote its logs");
    for f in &summary.figures {
        assert_eq!(
            f.negative, 0,
            "{}: no negative latency on one thread's monotonic clock",
            f.name
        );
    }
    let _ = std::fs::remove_dir_all(&tap_dir);
    cost
}

/// `BENCH_TAP_VARIANT=I[,J...]`: only these variants run (indices into [`SPECS`]; the others
/// print zeros), for `scripts/poll-instructions.sh`, which counts each one's instructions alone.
fn only_variants() -> Option<Vec<usize>> {
    let v = std::env::var("BENCH_TAP_VARIANT").ok()?;
    let only: Vec<usize> = v
        .split(',')
        .map(|i| {
            i.trim()
                .parse()
                .ok()
                .filter(|i| *i < SPECS.len())
                .unwrap_or_else(|| panic!("BENCH_TAP_VARIANT: {i:?} is not a variant index 0..{}", SPECS.len()))
        })
        .collect();
    Some(only)
}

/// One variant's round: publish k, then poll them all; ns per message each. Keeping up, each
/// message is polled once published: (0, publish and poll ns per message).
fn one_variant(v: &mut Variant, k: u64) -> (f64, f64) {
    if v.keeping_up {
        return (0.0, keeping_up(v, k));
    }
    let base = v.costs.len() as u64 * k;
    let t0 = Instant::now();
    for seq in 1..=k {
        let _ = publish(&mut v.publ, &message(base + seq), false);
    }
    let t1 = Instant::now();
    let mut got = 0;
    let limit = v.fragment_limit;
    let clocked = v.clocked;
    let mut clock_sum = 0_i64;
    spin_until("tap cost: polling back", || {
        got += poll_once(&mut v.sub, limit, clocked, &mut clock_sum);
        got >= k
    });
    std::hint::black_box(clock_sum);
    let t2 = Instant::now();
    (
        (t1 - t0).as_nanos() as f64 / k as f64,
        (t2 - t1).as_nanos() as f64 / k as f64,
    )
}

/// One poll of up to `limit` fragments; with `clocked`, the handler reads the clock once per
/// message into `clock_sum`. The fragments read.
#[inline(always)]
fn poll_once(sub: &mut Subscriber, limit: usize, clocked: bool, clock_sum: &mut i64) -> u64 {
    let mut handler = |_: &[u8], _: &MessageHeader<'_>| {
        if clocked {
            *clock_sum = clock_sum.wrapping_add(StampClock::Monotonic.now_ns());
        }
    };
    sub.poll(&mut handler, limit).unwrap_or(0) as u64
}

/// A round of a variant that keeps up: publish one, poll it, k times; ns per message.
fn keeping_up(v: &mut Variant, k: u64) -> f64 {
    let base = v.costs.len() as u64 * k;
    let clocked = v.clocked;
    let mut clock_sum = 0_i64;
    let t0 = Instant::now();
    for seq in 1..=k {
        let _ = publish(&mut v.publ, &message(base + seq), false);
        let mut got = 0;
        spin_until("tap cost: polling back", || {
            got += poll_once(&mut v.sub, 1, clocked, &mut clock_sum);
            got >= 1
        });
    }
    std::hint::black_box(clock_sum);
    t0.elapsed().as_nanos() as f64 / k as f64
}

/// Prints the rounds' findings.
pub(crate) fn print(c: &TapCost) {
    println!();
    println!(
        "the tap's cost (one thread, exclusive try_claim of 32 B, k = {} messages a round, {} rounds interleaved; \
         medians, a change as the median [min, max] of its per-round differences):",
        c.k, c.rounds
    );
    println!("{:<24} {:>11} {:>9}", "", "publish ns", "poll ns");
    for (name, p, q) in &c.variants {
        if name.ends_with("keeping up") {
            println!("{name:<24} {:>21}", format!("{q:.1} (both)"));
            figures::ns("tap", &format!("{name}: publish and poll"), *q);
        } else {
            println!("{name:<24} {p:>11.1} {q:>9.1}");
            figures::ns("tap", &format!("{name}: publish"), *p);
            figures::ns("tap", &format!("{name}: poll"), *q);
        }
    }
    println!("one clock read (StampClock::Monotonic.now_ns): {:.1} ns", c.clock_ns);
    figures::ns("tap", "one clock read", c.clock_ns);
    // A change: printed as the median [min, max] of its per-round differences, noted as its median.
    let change = |text: String, figure: &str, (m, lo, hi): (f64, f64, f64)| {
        println!("{text}: {m:+.1} ns/msg [{lo:+.1}, {hi:+.1}]");
        figures::ns("tap", figure, m);
    };
    change("stamping (stamped - plain, publishing)".into(), "stamping", c.stamp);
    change(
        format!("recording, {TP_FRAGMENT_LIMIT} fragments a poll (recorded - stamped, polling)"),
        &format!("recording, {TP_FRAGMENT_LIMIT} a poll"),
        c.record,
    );
    change(
        "recording, 1 fragment a poll (recorded - stamped, every message a poll and a clock read)".into(),
        "recording, 1 a poll",
        c.record_each,
    );
    change(
        "  a clock read in the handler, 1 fragment a poll (clocked - stamped)".into(),
        "a clock read in the handler",
        c.clock_in_poll,
    );
    change(
        "  recording beyond that clock read (recorded - clocked, 1 fragment a poll)".into(),
        "recording beyond the clock read",
        c.record_each_beyond_clock,
    );
    change(
        "  the same, keeping up (each message polled once published, latencies not rising)".into(),
        "recording beyond the clock read, keeping up",
        c.record_kept_up_beyond_clock,
    );
    crate::figure::print(&c.figure);
}
