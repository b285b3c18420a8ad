//! Where a throughput ceiling comes from: each side's own cost on one thread (messaging and
//! the C client), an uncontended mutex, and the timing itself.

use std::path::Path;
use std::time::{Duration, Instant};

use aeron_latency::messaging::tap::Stamp;
use aeron_latency::messaging::{Client, Concurrent, Exclusive, MessageHeader, Publication, Subscriber};
use aeron_latency::wire;
use latency_probe::measure::histogram::new_latency_histogram;
use latency_probe::measure::histogram::record_saturating;
use latency_probe::sys::clock::now_ns;

use crate::c_client::{CClient, CPublish};
use crate::common::Retry;
use crate::common::{
    connect, message, seq_of, spin_until, wait_for, Placement, Plan, Retries, BIG_TERM, CHANNEL, MSG_LEN,
    TP_FRAGMENT_LIMIT,
};
use crate::messaging::{publish, Pub};

/// Per-message cost of each side alone: `publish` `k` messages back to back on this thread
/// (the subscriber is not polling, and `k` frames fit in half a 64 MiB term, so nothing waits
/// for it), then `poll_once` until all `k` are read. Median over `rounds` rounds of
/// (publish ns/msg, poll ns/msg).
pub(crate) fn split_costs(
    k: u64,
    rounds: usize,
    mut publish: impl FnMut(u64),
    mut poll_once: impl FnMut() -> u64,
) -> (f64, f64) {
    let mut seq = 0;
    let mut publish_ns = Vec::new();
    let mut poll_ns = Vec::new();
    for _ in 0..rounds {
        let t0 = Instant::now();
        for _ in 0..k {
            seq += 1;
            publish(seq);
        }
        let t1 = Instant::now();
        let mut got = 0;
        spin_until("split: polling back", || {
            got += poll_once();
            got >= k
        });
        let t2 = Instant::now();
        publish_ns.push((t1 - t0).as_nanos() as f64 / k as f64);
        poll_ns.push((t2 - t1).as_nanos() as f64 / k as f64);
        // Let the (backing-off) driver see the subscriber's position before the next round.
        std::thread::sleep(Duration::from_millis(20));
    }
    let median = |v: Vec<f64>| latency_probe::analysis::paired::median(&v).unwrap_or(f64::NAN);
    (median(publish_ns), median(poll_ns))
}

/// A counting poll handler shared by the split measurements: checks the sequence like the
/// throughput subscribers do.
#[derive(Debug, Default)]
struct SeqCheck {
    expected: u64,
    gaps: u64,
}

impl SeqCheck {
    #[inline]
    fn see(&mut self, msg: &[u8]) {
        let seq = seq_of(msg);
        if seq != self.expected + 1 {
            self.gaps += 1;
        }
        self.expected = seq;
    }
}

/// One row of the split table: publish and poll cost per message, ns.
pub(crate) struct SplitRow {
    pub(crate) name: &'static str,
    /// Messages per round.
    pub(crate) k: u64,
    pub(crate) publish_ns: f64,
    pub(crate) poll_ns: f64,
    pub(crate) retries: Retries,
}

pub(crate) fn split_rows(at: &Placement, dir: &Path, plan: &Plan) -> Vec<SplitRow> {
    // Messages per round: at most 3/4 of the publication window (half a term of frames).
    let frame = Publication::<Concurrent>::frame_length(MSG_LEN);
    let k_for = |term: usize| plan.split_messages.min((term / 2 / frame * 3 / 4) as u64);
    let small = 4 << 20;
    let mut rows = Vec::new();

    for (name, use_offer, term, stream, exclusive) in [
        ("messaging try_claim", false, BIG_TERM, 1020, false),
        ("messaging offer", true, BIG_TERM, 1021, false),
        ("messaging try_claim, 4 MiB term", false, small, 1022, false),
        ("messaging exclusive offer", true, BIG_TERM, 1024, true),
        ("messaging exclusive try_claim", false, BIG_TERM, 1023, true),
        ("messaging exclusive, 4 MiB term", false, small, 1025, true),
    ] {
        let k = k_for(term);
        let row = if exclusive {
            split_messaging::<Exclusive>(at, dir, plan, name, use_offer, term, stream, k)
        } else {
            split_messaging::<Concurrent>(at, dir, plan, name, use_offer, term, stream, k)
        };
        rows.push(row);
    }

    for compact in [true, false] {
        rows.push(split_probe_path(at, dir, plan, compact, k_for(BIG_TERM)));
    }
    #[cfg(feature = "iceoryx2")]
    rows.push(crate::iceoryx::split_row(at, plan));

    let client = at.unpinned(|| CClient::connect(dir));
    for (name, exclusive, term, stream) in [
        ("C client try_claim", false, BIG_TERM, 2020),
        ("C client exclusive try_claim", true, BIG_TERM, 2021),
        ("C client exclusive, 4 MiB term", true, small, 2022),
    ] {
        let channel = format!("{CHANNEL}?term-length={term}");
        let publ: Box<dyn CPublish> = if exclusive {
            Box::new(client.exclusive_publication(&channel, stream))
        } else {
            Box::new(client.publication(&channel, stream))
        };
        let sub = client.subscription(&channel, stream);
        wait_for("C split stream", || publ.is_up() && sub.is_connected());
        let mut check = SeqCheck::default();
        let mut retries = Retries::default();
        let k = k_for(term);
        let (publish_ns, poll_ns) = split_costs(
            k,
            plan.split_rounds,
            |seq| retries.add(publ.send(&message(seq), false)),
            || {
                sub.poll_fn(|m: &[u8], _| check.see(m), TP_FRAGMENT_LIMIT)
                    .expect("C split poll")
                    .max(0) as u64
            },
        );
        assert_eq!(check.gaps, 0, "{name}: messages lost or reordered");
        rows.push(SplitRow {
            name,
            k,
            publish_ns,
            poll_ns,
            retries,
        });
    }
    rows
}

/// A messaging client with a publication of type `P` and a subscription on `stream` (an IPC
/// log of `term` bytes), both connected.
fn open_stream<P: Pub>(at: &Placement, dir: &Path, term: usize, stream: i32) -> (Client, Publication<P>, Subscriber) {
    let channel = format!("{CHANNEL}?term-length={term}");
    at.unpinned(|| {
        let client = connect(dir);
        let sub = client.subscription(&channel, stream).expect("split subscription");
        let publ = P::add(&client, &channel, stream);
        wait_for("split stream", || publ.is_connected() && sub.is_connected());
        (client, publ, sub)
    })
}

/// One messaging split row over publication type `P`.
#[allow(clippy::too_many_arguments)]
fn split_messaging<P: Pub>(
    at: &Placement,
    dir: &Path,
    plan: &Plan,
    name: &'static str,
    use_offer: bool,
    term: usize,
    stream: i32,
    k: u64,
) -> SplitRow {
    let (client, mut publ, mut sub) = open_stream::<P>(at, dir, term, stream);
    let mut check = SeqCheck::default();
    let mut retries = Retries::default();
    let (publish_ns, poll_ns) = split_costs(
        k,
        plan.split_rounds,
        |seq| retries.add(publish(&mut publ, &message(seq), use_offer)),
        || {
            sub.poll(&mut |m: &[u8], _: &MessageHeader<'_>| check.see(m), TP_FRAGMENT_LIMIT)
                .unwrap_or(0) as u64
        },
    );
    assert_eq!(check.gaps, 0, "{name}: messages lost or reordered");
    drop((publ, sub, client));
    SplitRow {
        name,
        k,
        publish_ns,
        poll_ns,
        retries,
    }
}

/// The probe's own per-message path on an exclusive publication (`latency-probe`'s hot loops
/// without their clock reads, which the "timing itself" row prices): `try_claim`, the send
/// stamp into the reserved value, the sample encoded into the claim, `commit`; then `poll`,
/// the sample decoded and its sequence checked. `compact`: 32-byte compact samples (what
/// `--msg-size 32` sends after its first message), else 64-byte full ones (`--msg-size 64`).
fn split_probe_path(at: &Placement, dir: &Path, plan: &Plan, compact: bool, k: u64) -> SplitRow {
    let (name, stream) = if compact {
        ("probe path, 32 B compact", 1026)
    } else {
        ("probe path, 64 B full", 1027)
    };
    let (client, publ, mut sub) = open_stream::<Exclusive>(at, dir, BIG_TERM, stream);
    let len = if compact {
        wire::COMPACT_LEN
    } else {
        wire::MIN_ENCODED_LEN
    };
    let mut sample = wire::Sample {
        seq: 0,
        intended_ns: 0,
        sent_ns: 0,
        publisher_id: 1,
        kind: wire::Kind::Measured,
        warmup: 0,
        planned: 0,
    };
    let mut retries = Retries::default();
    let mut publish_one = |seq: u64| {
        let stamp = seq as i64;
        spin_until("split: claiming", || match publ.try_claim(len) {
            Ok(mut claim) => {
                let encoded = if compact {
                    claim.set_reserved_value(Stamp::Sent(stamp).to_reserved());
                    let c = wire::Compact {
                        seq,
                        intended_ns: stamp,
                    };
                    wire::encode_compact_into(claim.buffer_mut(), &c, None)
                } else {
                    (sample.seq, sample.intended_ns, sample.sent_ns) = (seq, stamp, stamp);
                    wire::encode_into(claim.buffer_mut(), &sample, 0)
                };
                assert_eq!(encoded, Ok(len), "{name}: encoding");
                claim.commit();
                true
            }
            Err(e) if e.is_retryable() => {
                retries.count(Retry::BackPressured);
                false
            }
            Err(e) => panic!("{name}: try_claim: {e}"),
        });
    };
    let mut expected = 0u64;
    let mut bad = 0u64;
    let mut see = |bytes: &[u8], header: &MessageHeader<'_>| {
        let seq = match wire::decode_message(bytes) {
            Ok(wire::Message::Compact(c)) if Stamp::from_reserved(header.reserved_value()) != Stamp::Absent => c.seq,
            Ok(wire::Message::Full(s)) => s.seq,
            _ => u64::MAX,
        };
        if seq != expected + 1 {
            bad += 1;
        }
        expected = seq;
    };
    let (publish_ns, poll_ns) = split_costs(k, plan.split_rounds, &mut publish_one, || {
        sub.poll(&mut see, TP_FRAGMENT_LIMIT).unwrap_or(0) as u64
    });
    assert_eq!(bad, 0, "{name}: messages lost, reordered or not decoded");
    drop((publ, sub, client));
    SplitRow {
        name,
        k,
        publish_ns,
        poll_ns,
        retries,
    }
}

/// The median cost of the fixed-count run's timing itself: two `now_ns` readings back to back
/// and recording their difference, ns. It is inside every percentile (the floor's too), so
/// a ratio to the floor is (operation + this) / (floor + this), not operation / floor.
pub(crate) fn clock_pair_cost(n: u64) -> u64 {
    let mut h = new_latency_histogram();
    for _ in 0..n {
        let t0 = now_ns();
        let t1 = now_ns();
        record_saturating(&mut h, (t1 - t0).max(0) as u64);
    }
    h.value_at_quantile(0.5)
}

/// What an uncontended `std::sync::Mutex` `try_lock` + unlock costs on this thread, ns: aeron-rs
/// keeps every publication and subscription behind one, so `messaging` pays it once per
/// offer / try_claim and once per poll.
pub(crate) fn mutex_cost(n: u64) -> f64 {
    let m = std::sync::Mutex::new(0u64);
    let t0 = Instant::now();
    for _ in 0..n {
        if let Ok(mut g) = std::hint::black_box(&m).try_lock() {
            *g += 1;
        }
    }
    t0.elapsed().as_nanos() as f64 / n as f64
}
