//! One way after a wait: what `latency-probe`'s one-way mode measures, for the transport alone.
//!
//! The bench thread sends a message after spinning on the clock for a gap (10 µs and 100 µs:
//! the probe's pacing at 100,000 and 10,000 msg/s), stamping it with `now_ns` right before it
//! stores or claims; the pinned receiver reads `now_ns` right after it sees the message and
//! records the difference. Two transports: the raw cache line of the floor (one store, one
//! spinning load) and `messaging`'s exclusive publication (32 B, `try_claim` + commit; `poll`),
//! the latter also carrying `latency-probe`'s own compact sample (encoded in the claim, the stamp
//! in the reserved value, decoded before the receiver's clock reading, as the probe does).
//! In the same round, the same transport's back-to-back round trip (the floor; the
//! `messaging_exclusive` ping-pong), so each one-way p50 is set against half a round trip
//! taken seconds apart: users compare a one-way figure with half of Aeron's Ping/Pong, and on
//! this VM a message sent after a wait costs more than half a back-to-back round trip even on
//! the raw line.
//!
//! Timing model: one `CLOCK_MONOTONIC` reading on each core (the sender's before, the
//! receiver's after), so a one-way figure holds one clock reading's cost and any offset between
//! the two cores' clocks (the printed reverse direction, receiver and sender swapped, bounds
//! it); half a round trip holds half of its two readings on one core. Rounds alternate the
//! cases; each ratio is within one round.

use std::collections::BTreeMap;
use std::hint::spin_loop;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use aeron_latency::messaging::tap::Stamp;
use aeron_latency::messaging::{Client, Exclusive, MessageHeader, PinnedThread, Publication, Subscriber};
use aeron_latency::wire;
use crossbeam_channel::{Receiver, Sender};
use hdrhistogram::Histogram;
use latency_probe::measure::floor;
use latency_probe::measure::histogram::{new_latency_histogram, record_saturating};
use latency_probe::sys::clock::now_ns;

use crate::common::{
    connect, percentiles_of, spawn_pinned, spin_until, wait_for, Control, Pausable, Placement, Plan, CHANNEL, MSG_LEN,
    RT_FRAGMENT_LIMIT, STUCK,
};
use crate::figures::{self, Better};
use crate::messaging::{publish, Ping, Pub};

/// The gaps before each message, ns: the probe's pacing at 100,000 and 10,000 msg/s.
const GAPS_NS: [i64; 2] = [10_000, 100_000];
/// The one-way streams, plus [`Format`] (the round trip uses 1602 / 1603).
const ONE_WAY_STREAM: i32 = 1610;
const RTT_OFFSET: i32 = 600;

/// A one-way message's kind, in its second 8 bytes.
const WARM_UP: u64 = 0;
const MEASURED: u64 = 1;
const END: u64 = 2;

/// How many of each, per round.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Counts {
    /// Tiny counts (`cargo test --benches`): the figures mean nothing.
    pub(crate) tiny: bool,
    pub(crate) rounds: usize,
    /// Warm-up and measured messages at each gap, in the order of [`GAPS_NS`].
    pub(crate) one_way: [(u64, u64); 2],
    /// Warm-up and measured back-to-back round trips.
    pub(crate) round_trips: (u64, u64),
    pub(crate) floor: std::time::Duration,
}

impl Counts {
    pub(crate) fn for_plan(plan: &Plan) -> Self {
        if plan.measured_ops >= 100_000 {
            Counts {
                tiny: false,
                rounds: 8,
                one_way: [(2_000, 20_000), (500, 5_000)],
                round_trips: (2_000, 20_000),
                floor: std::time::Duration::from_millis(100),
            }
        } else {
            Counts {
                tiny: true,
                rounds: 1,
                one_way: [(10, 100), (10, 50)],
                round_trips: (10, 100),
                floor: std::time::Duration::from_millis(10),
            }
        }
    }
}

/// One round's p50s, ns.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Round {
    /// The floor's round trip (raw line, back to back).
    pub(crate) raw_rtt: u64,
    /// The raw line one way at each gap, sender on the bench core; then the reverse direction.
    pub(crate) raw: [u64; 2],
    pub(crate) raw_reverse: [u64; 2],
    /// `messaging_exclusive`'s 32 B round trip, back to back.
    pub(crate) messaging_rtt: u64,
    /// `messaging` one way at each gap.
    pub(crate) messaging: [u64; 2],
    /// The same with latency-probe's compact sample (encoded, stamp in the reserved value, decoded).
    pub(crate) probe_path: [u64; 2],
}

/// Every round, and for each raw case the stores its receiver saw of those sent, over all rounds
/// (it misses a store made while it is off its core; `messaging`'s log keeps every message).
#[derive(Debug, Default)]
pub(crate) struct OneWay {
    pub(crate) rounds: Vec<Round>,
    pub(crate) counts: Option<Counts>,
    pub(crate) seen: BTreeMap<String, (u64, u64)>,
}

/// The rounds: in each, the floor, the raw line one way (both directions), `messaging`'s round
/// trip, then `messaging` one way, then with the probe's sample, at each gap.
pub(crate) fn run(at: &Placement, dir: &Path, plan: &Plan) -> OneWay {
    let counts = Counts::for_plan(plan);
    let mut out = OneWay {
        counts: Some(counts),
        ..OneWay::default()
    };
    let mut rtt = at.unpinned(|| Ping::<Exclusive>::start(dir, at.responder, RTT_OFFSET, MSG_LEN));
    let mut stamped = at.unpinned(|| OneWayStream::start(dir, at.responder, Format::Stamp));
    let mut probe_path = at.unpinned(|| OneWayStream::start(dir, at.responder, Format::ProbeSample));
    rtt.pause();
    stamped.pause();
    probe_path.pause();
    at.hot();
    for _ in 0..counts.rounds {
        let mut r = Round {
            raw_rtt: at
                .unpinned(|| floor::measure(at.initiator, at.responder, counts.floor))
                .expect("measuring the floor")
                .value_at_quantile(0.5),
            ..Round::default()
        };
        for (g, &gap) in GAPS_NS.iter().enumerate() {
            r.raw[g] = raw_one_way(at, gap, counts.one_way[g], false, &mut out.seen);
            r.raw_reverse[g] = raw_one_way(at, gap, counts.one_way[g], true, &mut out.seen);
        }
        rtt.resume();
        let (w, m) = counts.round_trips;
        r.messaging_rtt = percentiles_of(&mut rtt, w, m).value_at_quantile(0.5);
        rtt.pause();
        stamped.resume();
        for (g, &gap) in GAPS_NS.iter().enumerate() {
            r.messaging[g] = stamped.one_way(gap, counts.one_way[g]).value_at_quantile(0.5);
        }
        stamped.pause();
        probe_path.resume();
        for (g, &gap) in GAPS_NS.iter().enumerate() {
            r.probe_path[g] = probe_path.one_way(gap, counts.one_way[g]).value_at_quantile(0.5);
        }
        probe_path.pause();
        out.rounds.push(r);
    }
    rtt.resume();
    rtt.finish();
    stamped.finish();
    probe_path.finish();
    out
}

/// Spins on the clock until `*next`, then sets it `gap` after now: every message follows a wait
/// of at least `gap`, also after the sender was preempted (no burst to catch up).
#[inline]
fn pace(next: &mut i64, gap: i64) {
    let mut now = now_ns();
    while now < *next {
        spin_loop();
        now = now_ns();
    }
    *next = now + gap;
}

/// The raw line one way: a pinned thread spins on a line the bench thread stores stamps into,
/// `gap` apart. `reverse`: the bench thread receives and the pinned thread sends.
fn raw_one_way(
    at: &Placement,
    gap: i64,
    (warm_up, measured): (u64, u64),
    reverse: bool,
    seen_of: &mut BTreeMap<String, (u64, u64)>,
) -> u64 {
    let line = Arc::new(floor::Line::default());
    let ready = Arc::new(AtomicBool::new(false));
    let total = warm_up + measured;
    let (l2, r2) = (line.clone(), ready.clone());
    let (h, seen) = if reverse {
        let sender = at.unpinned(|| {
            spawn_pinned("oneway-raw-send", at.responder, move || {
                spin_until("oneway: the receiver starting", || r2.load(Ordering::Acquire));
                send_stamps(&l2, gap, total);
            })
        });
        let got = receive_stamps(&line, &ready, warm_up);
        sender.join().expect("the raw one-way sender panicked");
        got
    } else {
        let receiver = at.unpinned(|| {
            spawn_pinned("oneway-raw-recv", at.responder, move || {
                receive_stamps(&l2, &r2, warm_up)
            })
        });
        spin_until("oneway: the receiver starting", || ready.load(Ordering::Acquire));
        send_stamps(&line, gap, total);
        receiver.join().expect("the raw one-way receiver panicked")
    };
    let name = format!("{} µs{}", gap / 1_000, if reverse { " reversed" } else { "" });
    let e = seen_of.entry(name).or_default();
    (e.0, e.1) = (e.0 + seen, e.1 + total);
    h.value_at_quantile(0.5)
}

/// Stores `total` stamps `gap` apart, then [`floor::STOP`].
fn send_stamps(line: &floor::Line, gap: i64, total: u64) {
    let mut next = now_ns() + gap;
    for _ in 0..total {
        pace(&mut next, gap);
        line.0.store(now_ns() as u64, Ordering::Release);
    }
    // A gap before the stop too, so the receiver sees the last stamp.
    pace(&mut next, gap);
    line.0.store(floor::STOP, Ordering::Release);
}

/// Spins on the line until [`floor::STOP`], timing each new stamp after the first `warm_up`;
/// returns them and how many stamps it saw.
fn receive_stamps(line: &floor::Line, ready: &AtomicBool, warm_up: u64) -> (Histogram<u64>, u64) {
    let mut h = new_latency_histogram();
    let (mut last, mut seen) = (0_u64, 0_u64);
    ready.store(true, Ordering::Release);
    loop {
        let v = line.0.load(Ordering::Acquire);
        if v == last {
            spin_loop();
            continue;
        }
        let now = now_ns();
        if v == floor::STOP {
            return (h, seen);
        }
        seen += 1;
        if seen > warm_up {
            record_saturating(&mut h, (now - v as i64).max(0) as u64);
        }
        last = v;
    }
}

/// `messaging` one way: an exclusive publication the bench thread sends on, and a pinned thread
/// polling its subscription that records each message's latency from its stamp and hands the
/// histogram over at the end marker.
struct OneWayStream {
    publ: Publication<Exclusive>,
    format: Format,
    ctl: Arc<Control>,
    done: Receiver<Histogram<u64>>,
    thread: Option<PinnedThread<()>>,
    _client: Client,
}

impl OneWayStream {
    fn start(dir: &Path, core: Option<usize>, format: Format) -> Self {
        let client = connect(dir);
        let receiving = connect(dir);
        let stream = ONE_WAY_STREAM + format as i32;
        let publ = Exclusive::add(&client, CHANNEL, stream);
        let sub = receiving.subscription(CHANNEL, stream).expect("one-way subscription");
        wait_for("the one-way stream", || publ.is_connected() && sub.is_connected());
        let ctl = Arc::new(Control::default());
        let (tx, done) = crossbeam_channel::bounded(1);
        let c2 = ctl.clone();
        let thread = spawn_pinned("oneway-recv", core, move || {
            poll_stamps(sub, format, &c2, &tx);
            drop(receiving);
        });
        OneWayStream {
            publ,
            format,
            ctl,
            done,
            thread: Some(thread),
            _client: client,
        }
    }

    /// Sends `warm_up` then `measured` stamped messages `gap` apart, then the end marker; returns
    /// the receiver's histogram of the measured ones.
    fn one_way(&mut self, gap: i64, (warm_up, measured): (u64, u64)) -> Histogram<u64> {
        let mut next = now_ns() + gap;
        for i in 0..warm_up + measured {
            pace(&mut next, gap);
            self.send(if i < warm_up { WARM_UP } else { MEASURED });
        }
        self.send(END);
        let h = self
            .done
            .recv_timeout(STUCK)
            .unwrap_or_else(|e| panic!("oneway: no histogram from the receiver in {} s: {e}", STUCK.as_secs()));
        assert_eq!(h.len(), measured, "oneway: messages lost on the way");
        h
    }

    /// One message of `kind`, stamped right before its claim.
    #[inline]
    fn send(&mut self, kind: u64) {
        let t = now_ns();
        match self.format {
            Format::Stamp => {
                let mut msg = [0_u8; MSG_LEN];
                msg[..8].copy_from_slice(&t.to_le_bytes());
                msg[8..16].copy_from_slice(&kind.to_le_bytes());
                publish(&mut self.publ, &msg, false);
            }
            Format::ProbeSample => {
                // As latency-probe's publisher: the stamp into the reserved value, a compact
                // sample encoded in place (the kind where the probe has the sequence number).
                let publ = &mut self.publ;
                spin_until("oneway: claiming", || match publ.try_claim(wire::COMPACT_LEN) {
                    Ok(mut claim) => {
                        claim.set_reserved_value(Stamp::Sent(t).to_reserved());
                        let c = wire::Compact {
                            seq: kind,
                            intended_ns: t,
                        };
                        let encoded = wire::encode_compact_into(claim.buffer_mut(), &c, None);
                        assert_eq!(encoded, Ok(wire::COMPACT_LEN), "oneway: encoding");
                        claim.commit();
                        true
                    }
                    Err(e) if e.is_retryable() => false,
                    Err(e) => panic!("oneway: try_claim: {e}"),
                });
            }
        }
    }

    fn finish(mut self) {
        self.ctl.stop();
        if let Some(t) = self.thread.take() {
            t.join().expect("the one-way receiver panicked");
        }
    }
}

impl Pausable for OneWayStream {
    fn pause(&mut self) {
        self.ctl.pause();
    }
    fn resume(&mut self) {
        self.ctl.resume();
    }
}

/// What the one-way messages carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// The stamp and the kind in the first 16 of 32 bytes; the receiver reads the clock first
    /// in its handler.
    Stamp = 0,
    /// latency-probe's own: a compact sample (`wire::encode_compact_into`, 32 B) with the stamp
    /// in the frame's reserved value; the receiver decodes it (`wire::decode_message`) and
    /// takes the stamp before it reads the clock, as `latency-probe`'s subscriber does.
    ProbeSample = 1,
}

/// The receiver's loop: each measured message's latency from its stamp, the histogram handed
/// over at the end marker.
fn poll_stamps(mut sub: Subscriber, format: Format, ctl: &Control, tx: &Sender<Histogram<u64>>) {
    let mut h = new_latency_histogram();
    while ctl.running() {
        let n = sub
            .poll(
                &mut |msg: &[u8], header: &MessageHeader<'_>| {
                    let (stamp, kind, now) = match format {
                        Format::Stamp => {
                            let now = now_ns();
                            let word = |at: usize| msg[at..at + 8].try_into().map(u64::from_le_bytes);
                            (word(0).expect("8 bytes") as i64, word(8).expect("8 bytes"), now)
                        }
                        Format::ProbeSample => {
                            let Ok(wire::Message::Compact(c)) = wire::decode_message(msg) else {
                                panic!("oneway: not a compact sample");
                            };
                            let Stamp::Sent(stamp) = Stamp::from_reserved(header.reserved_value()) else {
                                panic!("oneway: no send stamp");
                            };
                            (stamp, c.seq, now_ns())
                        }
                    };
                    match kind {
                        MEASURED => {
                            record_saturating(&mut h, (now - stamp).max(0) as u64);
                        }
                        END => {
                            // Once per case: the only allocation, after its last measured message.
                            let _ = tx.send(std::mem::replace(&mut h, new_latency_histogram()));
                        }
                        _ => {}
                    }
                },
                RT_FRAGMENT_LIMIT,
            )
            .unwrap_or(0);
        if n == 0 {
            spin_loop();
        }
    }
}

/// Prints the rounds: each case's p50 (median over rounds, range) and its ratio to half the same
/// transport's round trip in the same round.
pub(crate) fn print(o: &OneWay) {
    let Some(counts) = o.counts else { return };
    println!();
    println!(
        "== one way after a wait ({} round{}; p50 ns, median [min-max] over rounds; ratio to half the same transport's \
         back-to-back round trip in the same round){} ==",
        o.rounds.len(),
        if o.rounds.len() == 1 { "" } else { "s" },
        if counts.tiny {
            " (test mode: tiny counts, figures meaningless)"
        } else {
            ""
        }
    );
    println!(
        "sender stamps now_ns right before its store / try_claim; the receiver reads now_ns right after it sees the \
         message (one reading on each core); per round at each gap: {:?} (warm-up, measured) messages; {:?} round trips",
        counts.one_way, counts.round_trips
    );
    let col = |f: &dyn Fn(&Round) -> u64| -> Vec<f64> { o.rounds.iter().map(|r| f(r) as f64).collect() };
    let ratio = |a: &dyn Fn(&Round) -> u64, b: &dyn Fn(&Round) -> u64| -> Vec<f64> {
        o.rounds
            .iter()
            .map(|r| a(r) as f64 / (b(r) as f64 / 2.0).max(1.0))
            .collect()
    };
    println!("{:<44} {:>18} {:>22}", "case", "p50", "p50 / (rtt / 2)");
    let row = |name: &str, v: Vec<f64>, r: Option<Vec<f64>>| {
        let figure = name.trim();
        figures::ns("one way", &format!("{figure}: p50"), median(&v));
        if let Some(r) = &r {
            figures::note(
                "one way",
                &format!("{figure}: p50 / (rtt / 2)"),
                "x",
                Better::Lower,
                median(r),
            );
        }
        let ratio = r.map_or_else(|| "-".to_owned(), |r| spread(&r, 2));
        println!("{name:<44} {:>18} {ratio:>22}", spread(&v, 0));
    };
    row("raw line, round trip back to back", col(&|r| r.raw_rtt), None);
    row("messaging_exclusive 32 B, round trip", col(&|r| r.messaging_rtt), None);
    // A one-way row: its p50s and their ratio to half the round trip `rtt` of the same round.
    let one_way = |name: &str, p50: &dyn Fn(&Round) -> u64, rtt: &dyn Fn(&Round) -> u64| {
        row(name, col(p50), Some(ratio(p50, rtt)));
    };
    for (g, gap) in GAPS_NS.iter().enumerate() {
        let us = gap / 1_000;
        let (raw, messaging) = (|r: &Round| r.raw_rtt, |r: &Round| r.messaging_rtt);
        one_way(&format!("raw line, one way after {us} µs"), &|r| r.raw[g], &raw);
        one_way(
            &format!("raw line, one way after {us} µs, reversed"),
            &|r| r.raw_reverse[g],
            &raw,
        );
        one_way(
            &format!("messaging_exclusive 32 B, one way after {us} µs"),
            &|r| r.messaging[g],
            &messaging,
        );
        one_way(
            &format!("  the probe's 32 B sample, after {us} µs"),
            &|r| r.probe_path[g],
            &messaging,
        );
    }
    let seen: Vec<String> = o
        .seen
        .iter()
        .filter(|(_, (seen, total))| seen < total)
        .map(|(name, (seen, total))| format!("{name} {seen} of {total}"))
        .collect();
    if !seen.is_empty() {
        println!(
            "raw line stores seen (a store made while the receiver is off its core is overwritten): {}",
            seen.join(", ")
        );
    }
}

/// The median of `v` (NaN when empty).
fn median(v: &[f64]) -> f64 {
    latency_probe::analysis::paired::median(v).unwrap_or(f64::NAN)
}

/// "median [min-max]" of `v` with `decimals`.
fn spread(v: &[f64], decimals: usize) -> String {
    if v.is_empty() {
        return "-".to_owned();
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let median = median(&s);
    format!(
        "{median:.decimals$} [{:.decimals$}-{:.decimals$}]",
        s[0],
        s[s.len() - 1]
    )
}
