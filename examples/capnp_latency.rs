//! Seed 002's single-process, two-thread Cap'n Proto latency test, on this workspace's crates.
//!
//! An embedded Aeron media driver, one publisher thread and one receiver thread (pinned to two
//! different cores when the process may use two), `--count` Cap'n Proto samples over
//! `aeron:ipc`, paced at `--rate` per second (`--rate 0`: one burst, as in seed 002). The
//! publisher encodes each sample straight into a `try_claim`ed range of the term buffer (no
//! `Vec`, no copy); the receiver polls, decodes in place and records the latency in an
//! HdrHistogram. Nothing on either hot loop allocates or waits for a lock (seed 002's version
//! locked aeron-rs's publication and subscription mutexes once per message and showed 42k
//! futex calls under `strace -c`).
//!
//! ```text
//! cargo run --release --example capnp_latency                  # 100,000 samples at 100,000/s, idle "yield"
//! cargo run --release --example capnp_latency -- --count 20000 --spin
//! cargo run --release --example capnp_latency -- --rate 0      # seed 002's burst
//! ```
//!
//! Timing model: `TIMING_MODEL` below; every run prints it.

#[path = "common/mod.rs"]
mod common;

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aeron_latency::messaging::{self, ConcurrentPublication, EmbeddedDriver, IdleStrategy, MessageHeader, Subscriber};
use aeron_latency::wire::{self, Kind, Sample};
use hdrhistogram::Histogram;

use common::{
    latency_histogram, placement, print_summary, record, spawn_hot, two_cores, Args, Clock, Retries, CHANNEL,
};

const STREAM: i32 = 1001;
const DEFAULT_COUNT: u32 = 100_000;
/// Samples per second; 100,000 samples take one second.
const DEFAULT_RATE: u64 = 100_000;
/// 1 MiB: the log is three terms; the publisher may run half a term ahead of the receiver.
const DEFAULT_TERM_LENGTH: usize = 1 << 20;
/// No padding: the smallest sample, 64 bytes.
const PADDING: usize = 0;
/// How long the receiver keeps polling after the publisher finished before it calls the rest lost.
const DRAIN_GRACE: Duration = Duration::from_secs(1);

const TIMING_MODEL: &str = "latency = the receiver's clock read in the fragment handler (before decode) \
minus the sample's intended send time: start + seq / rate from the schedule (with --rate 0, the publisher's \
clock read before its first try_claim of the sample), never re-stamped when a claim is retried. 'actual' \
measures instead from when the publisher really wrote the sample: its clock read before the first \
try_claim, or right after the claim succeeded if it had to be retried. One clock (Instant = \
CLOCK_MONOTONIC) for both threads. Between the two reads: pacing lateness and claim retries (intended \
only), claim + encode + commit, waiting in the log behind earlier samples, the receiver's idle step and \
poll.";

const USAGE: &str = "capnp_latency: Cap'n Proto samples over aeron:ipc from a publisher thread to a receiver thread

usage: cargo run --release --example capnp_latency -- [--count N] [--rate N] [--spin | --idle NAME]
                                                        [--term-length BYTES]

  --count N            samples to send (default 100000)
  --rate N             samples per second (default 100000); 0 sends one burst, as seed 002 did
  --spin               busy-spin instead of yielding while idle (both threads); wants 2 free cores
  --idle NAME          any Aeron idle strategy: spin, noop, yield, backoff, sleep-ns[:N] (default yield)
  --term-length BYTES  IPC term length, a power of two from 65536 to 1048576 (default 1048576)";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("capnp_latency: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What the publisher thread reports.
struct PubReport {
    sent: u32,
    /// From the first sample's intended time to the last commit.
    elapsed: Duration,
    /// The largest delay of a claim's first attempt behind the sample's intended time, ns.
    max_lag_ns: i64,
    /// Failed `try_claim` attempts that were retried.
    retries: Retries,
    error: Option<String>,
}

/// What the receiver thread reports.
struct RecvReport {
    from_intended: Histogram<u64>,
    from_actual: Histogram<u64>,
    received: u64,
    duplicates: u64,
    out_of_order: u64,
    decode_errors: u64,
}

/// The command line.
struct Options {
    count: u32,
    rate: u64,
    idle: IdleStrategy,
    term_length: usize,
}

impl Options {
    fn parse() -> Result<Options, String> {
        let mut args = Args::from_env(USAGE);
        let count: u32 = args.value("--count")?.unwrap_or(DEFAULT_COUNT);
        let rate: u64 = args.value("--rate")?.unwrap_or(DEFAULT_RATE);
        let idle = args.idle("yield")?;
        let term_length: usize = args.value("--term-length")?.unwrap_or(DEFAULT_TERM_LENGTH);
        args.finish()?;
        if count == 0 {
            return Err("--count must be at least 1".into());
        }
        if rate > 1_000_000_000 {
            return Err("--rate: at most 1000000000 per second (or 0 for a burst)".into());
        }
        if !(64 << 10..=1 << 20).contains(&term_length) {
            return Err(format!(
                "--term-length {term_length}: use 65536 (64 KiB) to 1048576 (1 MiB)"
            ));
        }
        messaging::check_term_length(term_length).map_err(|e| format!("--term-length: {e}"))?;
        Ok(Options {
            count,
            rate,
            idle,
            term_length,
        })
    }
}

/// Where the two hot threads ran, in words.
struct Placement {
    publisher: String,
    receiver: String,
    pinned: bool,
}

fn run() -> Result<(), String> {
    let o = Options::parse()?;
    let driver = EmbeddedDriver::builder()
        .private_dir()
        .ipc_term_length(o.term_length)
        .spawn()
        .map_err(|e| e.to_string())?;
    let client = messaging::Client::connect(driver.dir()).map_err(|e| e.to_string())?;
    let sub = client.subscription(CHANNEL, STREAM).map_err(|e| e.to_string())?;
    let publ = client.publication(CHANNEL, STREAM).map_err(|e| e.to_string())?;
    // Start only once each side sees the other: the publication its subscriber, the
    // subscription the publication's image (attached by the client conductor within ~4 ms).
    if !common::wait_until(Duration::from_secs(10), || publ.is_connected() && sub.is_connected()) {
        return Err("the publication and subscription did not connect within 10 s".into());
    }
    let started = Instant::now();
    let (p, r, placed) = measure(&o, publ, sub)?;
    let elapsed = started.elapsed();
    drop(client);
    print_report(&o, &p, &r, &placed, elapsed);
    drop(driver);

    if let Some(e) = p.error {
        return Err(format!("the publisher stopped early: {e}"));
    }
    let lost = u64::from(p.sent) - r.received.min(u64::from(p.sent));
    if lost > 0 || r.duplicates > 0 || r.decode_errors > 0 {
        return Err(format!(
            "{lost} lost, {} duplicate, {} undecodable samples",
            r.duplicates, r.decode_errors
        ));
    }
    Ok(())
}

/// Runs the publisher and the receiver on their hot threads until both are done.
fn measure(
    o: &Options,
    publ: ConcurrentPublication,
    sub: Subscriber,
) -> Result<(PubReport, RecvReport, Placement), String> {
    let (pub_core, recv_core) = match two_cores() {
        Some((a, b)) => (Some(a), Some(b)),
        None => (None, None),
    };
    let clock = Clock::start();
    let publisher_done = Arc::new(AtomicBool::new(false));
    let (count, rate) = (o.count, o.rate);
    let receiver = {
        let (done, idle) = (publisher_done.clone(), o.idle.clone());
        spawn_hot("capnp-receiver", recv_core, move || {
            receive(sub, count, clock, idle, &done)
        })
        .map_err(|e| format!("could not start the receiver thread: {e}"))?
    };
    let publisher = {
        let (done, idle) = (publisher_done.clone(), o.idle.clone());
        spawn_hot("capnp-publisher", pub_core, move || {
            let report = publish(publ, count, rate, clock, idle);
            done.store(true, Ordering::Release);
            report
        })
        .map_err(|e| format!("could not start the publisher thread: {e}"))?
    };
    let placed = Placement {
        publisher: placement(&publisher, pub_core),
        receiver: placement(&receiver, recv_core),
        pinned: pub_core.is_some(),
    };
    let p = publisher.join().map_err(|_| "the publisher thread panicked")?;
    let r = receiver.join().map_err(|_| "the receiver thread panicked")?;
    Ok((p, r, placed))
}

fn print_report(o: &Options, p: &PubReport, r: &RecvReport, placed: &Placement, elapsed: Duration) {
    let (count, rate) = (o.count, o.rate);
    let len = wire::encoded_len(PADDING);
    println!("capnp_latency: {count} Cap'n Proto samples of {len} bytes over {CHANNEL} stream {STREAM}");
    println!(
        "driver: embedded {}, IPC term {} KiB; client {}",
        messaging::driver_version(),
        o.term_length >> 10,
        messaging::CLIENT_VERSION
    );
    let cores = messaging::available_cores();
    if placed.pinned {
        println!(
            "threads: publisher {}, receiver {} (cores available: {cores:?})",
            placed.publisher, placed.receiver
        );
    } else {
        println!(
            "threads: UNPINNED: this process may use {} core(s) ({cores:?}); pinning needs 2",
            cores.len()
        );
    }
    if rate == 0 {
        println!("rate: one burst (as fast as the publisher can claim)");
    } else {
        println!(
            "rate: {rate}/s scheduled, {:.0}/s achieved; publisher at most {} ns behind its schedule",
            f64::from(p.sent) / p.elapsed.as_secs_f64(),
            p.max_lag_ns
        );
    }
    println!(
        "idle strategy: {} (receiver polls, publisher waits for its schedule and retries claims)",
        o.idle
    );
    println!("timing model: {TIMING_MODEL}");
    println!("latency from the intended send time:");
    print_summary(&r.from_intended);
    println!(
        "latency from the actual send time: p50 {} ns, p99 {} ns, max {} ns",
        r.from_actual.value_at_quantile(0.50),
        r.from_actual.value_at_quantile(0.99),
        r.from_actual.max()
    );
    // Lost: sent and never received (a publisher that stopped early did not send the rest).
    let lost = u64::from(p.sent) - r.received.min(u64::from(p.sent));
    println!(
        "sent {}, received {}, lost {lost}, duplicates {}, out of order {}, decode errors {}",
        p.sent, r.received, r.duplicates, r.out_of_order, r.decode_errors
    );
    println!("try_claim retries: {}", p.retries);
    println!(
        "wall time {:.3} s ({:.2} M samples/s)",
        elapsed.as_secs_f64(),
        f64::from(count) / elapsed.as_secs_f64() / 1e6
    );
}

/// The publisher's hot loop: wait for the schedule, claim (retrying), stamp, encode into the
/// claim, commit.
fn publish(publ: ConcurrentPublication, count: u32, rate: u64, clock: Clock, mut idle: IdleStrategy) -> PubReport {
    let len = wire::encoded_len(PADDING);
    let mut report = PubReport {
        sent: 0,
        elapsed: Duration::ZERO,
        max_lag_ns: 0,
        retries: Retries::default(),
        error: None,
    };

    let start_ns = clock.now_ns();
    'samples: for seq in 0..u64::from(count) {
        // The intended time comes from the schedule (or, for a burst, is now) and is never
        // re-stamped: a late or retried sample shows up as latency, not as a smaller sample.
        let mut now = clock.now_ns();
        let intended_ns = if rate == 0 {
            now
        } else {
            start_ns + (u128::from(seq) * 1_000_000_000 / u128::from(rate)) as i64
        };
        while now < intended_ns {
            idle.idle_once();
            now = clock.now_ns();
        }
        report.max_lag_ns = report.max_lag_ns.max(now - intended_ns);
        let mut retried = false;
        let mut claim = loop {
            match publ.try_claim(len) {
                Ok(claim) => break claim,
                Err(e) if e.is_retryable() => {
                    report.retries.count(&e);
                    retried = true;
                    idle.idle_once();
                }
                Err(e) => {
                    report.error = Some(e.to_string());
                    break 'samples;
                }
            }
        };
        let sent_ns = if retried { clock.now_ns() } else { now };
        let sample = Sample {
            seq,
            intended_ns,
            sent_ns,
            publisher_id: 1,
            kind: Kind::Measured,
            warmup: 0,
            planned: count,
        };
        match wire::encode_into(claim.buffer_mut(), &sample, PADDING) {
            Ok(_) => claim.commit(),
            Err(e) => {
                // Dropping the claim aborts it.
                report.error = Some(e.to_string());
                break;
            }
        }
        report.sent += 1;
    }
    report.elapsed = Duration::from_nanos((clock.now_ns() - start_ns).max(1) as u64);
    report
}

/// The receiver's hot loop: poll, read the clock, decode, record.
fn receive(
    mut sub: Subscriber,
    count: u32,
    clock: Clock,
    mut idle: IdleStrategy,
    publisher_done: &AtomicBool,
) -> RecvReport {
    let mut r = RecvReport {
        from_intended: latency_histogram(),
        from_actual: latency_histogram(),
        received: 0,
        duplicates: 0,
        out_of_order: 0,
        decode_errors: 0,
    };
    // Allocated before the first poll; the hot loop allocates nothing.
    let mut seen = vec![false; count as usize];
    let mut next_seq = 0_u64;
    let mut empty_polls = 0_u32;
    let mut done_since: Option<Instant> = None;

    while r.received < u64::from(count) {
        let n = sub
            .poll(
                &mut |msg: &[u8], _h: &MessageHeader<'_>| {
                    let now = clock.now_ns();
                    let Ok(sample) = wire::decode(msg) else {
                        r.decode_errors += 1;
                        return;
                    };
                    match seen.get_mut(sample.seq as usize) {
                        Some(s) if !*s => *s = true,
                        _ => {
                            r.duplicates += 1;
                            return;
                        }
                    }
                    if sample.seq != next_seq {
                        r.out_of_order += 1;
                    }
                    next_seq = sample.seq + 1;
                    r.received += 1;
                    record(&mut r.from_intended, now - sample.intended_ns);
                    record(&mut r.from_actual, now - sample.sent_ns);
                },
                common::FRAGMENT_LIMIT,
            )
            .unwrap_or(0);
        if n > 0 {
            empty_polls = 0;
            done_since = None;
        } else {
            empty_polls = empty_polls.wrapping_add(1);
            // Give up only once the publisher has finished and nothing came for a while.
            if empty_polls.is_multiple_of(1024)
                && publisher_done.load(Ordering::Acquire)
                && done_since.get_or_insert_with(Instant::now).elapsed() > DRAIN_GRACE
            {
                break;
            }
        }
        idle.idle(n);
    }
    r
}
