//! The measuring half of the ping/pong round-trip pair (Aeron's Ping/Pong samples, on this
//! workspace's crates): sends one 32-byte message on `aeron:ipc` stream 1002, waits for pong's
//! echo on stream 1003, records the round-trip time in an HdrHistogram, and repeats.
//!
//! ```text
//! # one command: an embedded driver, pong on a thread of its own
//! cargo run --release --example ping -- --embedded
//!
//! # or three terminals against an external driver (aeronmd, or the media_driver example)
//! cargo run --release --example media_driver     # Terminal 1
//! cargo run --release --example pong             # Terminal 2
//! cargo run --release --example ping             # Terminal 3
//! ```
//!
//! Timing model: `TIMING_MODEL` below; every run prints it. Round trips need no clock shared between processes.

mod common;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use aeron_latency::messaging::{
    self, Client, ConcurrentPublication, EmbeddedDriver, IdleStrategy, MessageHeader, PinnedThread, Subscriber,
};
use hdrhistogram::Histogram;

use common::{
    latency_histogram, placement, print_summary, record, spawn_hot, two_cores, Args, Clock, PongReport, Retries,
    CHANNEL, PING_STREAM, PONG_STREAM,
};

/// Aeron's Ping sample sends 32-byte messages: here the sequence number, ping's clock reading,
/// this run's id (so echoes left over from an earlier run are recognised) and 8 zero bytes.
const PING_LEN: usize = 32;
/// How long ping waits for one echo (or keeps retrying one claim) before it gives up.
const ECHO_TIMEOUT: Duration = Duration::from_secs(5);
/// The embedded driver's IPC term: the publisher may run half a term (512 KiB, 8,192 pings)
/// ahead of the last position the driver saw its subscriber at, so ping is never held back
/// waiting for the (backing-off) driver to move that limit on.
const IPC_TERM_LENGTH: usize = 1 << 20;
/// How long ping waits for pong to appear.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

const TIMING_MODEL: &str = "RTT = ping's clock read in its fragment handler when the echo arrives minus \
ping's clock read just before it claimed the ping (carried in the message and echoed back; never re-stamped \
when a claim is retried). Both reads are on ping's thread (Instant = CLOCK_MONOTONIC), so no clock is \
shared between processes. Between them: ping's claim + write + commit, pong's idle step + poll + claim + \
copy + commit, ping's idle step + poll. One message in flight; warm-up round trips are not recorded.";

const USAGE: &str = "ping: round trips through pong over aeron:ipc (stream 1002 out, 1003 back)

usage: cargo run --release --example ping -- [--embedded | --dir DIR] [--count N] [--warmup N]
                                             [--spin | --idle NAME] [--core N]

  --embedded    start an embedded media driver and run pong on a thread of this process
  --dir DIR     the media driver's directory (default $AERON_DIR, else /dev/shm/aeron-$USER);
                start `cargo run --release --example pong` on it first
  --count N     measured round trips (default 100000)
  --warmup N    round trips before those, not recorded (default 10000)
  --spin        busy-spin instead of yielding while idle (ping and, with --embedded, pong)
  --idle NAME   any Aeron idle strategy: spin, noop, yield, backoff, sleep-ns[:N] (default yield)
  --core N      pin ping's thread to core N (with --embedded and 2+ cores, ping and pong are
                pinned to the last two cores unless --core is given)";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ping: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What the ping loop measured.
struct PingReport {
    rtt: Histogram<u64>,
    /// Round trips completed, warm-up included.
    completed: u64,
    /// Failed `try_claim` attempts that were retried.
    retries: Retries,
    /// Messages on the pong stream that were not the echo being waited for (e.g. the last
    /// echoes of an earlier ping run, which a new IPC subscriber may still see).
    unexpected: u64,
    elapsed: Duration,
    error: Option<String>,
}

fn run() -> Result<(), String> {
    let o = Options::from_args()?;
    // The driver: our own, or the one at --dir / $AERON_DIR.
    let driver = if o.embedded {
        Some(
            EmbeddedDriver::builder()
                .private_dir()
                .ipc_term_length(IPC_TERM_LENGTH)
                .spawn()
                .map_err(|e| e.to_string())?,
        )
    } else {
        None
    };
    let dir = match &driver {
        Some(d) => d.dir().to_owned(),
        None => o.dir.clone().unwrap_or_else(messaging::default_aeron_dir),
    };

    // Thread placement: with --embedded, ping and pong on two cores of their own if we may.
    let (ping_core, pong_core) = match (o.embedded, o.core, two_cores()) {
        (true, None, Some((a, b))) => (Some(a), Some(b)),
        (true, Some(c), _) => (Some(c), None),
        (_, c, _) => (c, None),
    };
    let pong_thread = if o.embedded {
        Some(start_pong(&dir, &o, pong_core)?)
    } else {
        None
    };

    let client = Client::connect(&dir).map_err(|e| {
        format!(
            "{}\n(or run `cargo run --release --example ping -- --embedded` for a driver and pong in one process)",
            common::connect_words(&e)
        )
    })?;
    let publ = client.publication(CHANNEL, PING_STREAM).map_err(|e| e.to_string())?;
    let sub = client.subscription(CHANNEL, PONG_STREAM).map_err(|e| e.to_string())?;
    if !common::wait_until(CONNECT_TIMEOUT, || publ.is_connected() && sub.is_connected()) {
        return Err(format!(
            "no pong on {CHANNEL} streams {PING_STREAM}/{PONG_STREAM} of the driver at {} within {} s; start \
             `cargo run --release --example pong` (same --dir / AERON_DIR) first, or run ping with --embedded",
            dir.display(),
            CONNECT_TIMEOUT.as_secs()
        ));
    }

    let ping_thread = {
        let (idle, warmup, count) = (o.idle.clone(), o.warmup, o.count);
        spawn_hot("ping", ping_core, move || ping(publ, sub, warmup, count, idle))
            .map_err(|e| format!("could not start the ping thread: {e}"))?
    };
    let ping_place = placement(&ping_thread, ping_core);
    let pong_place = pong_thread.as_ref().map(|t| placement(t, pong_core));
    let r = ping_thread.join().map_err(|_| "the ping thread panicked")?;
    let pong_report = match pong_thread {
        Some(t) => Some(t.join().map_err(|_| "the pong thread panicked")?),
        None => None,
    };

    print_setup(&o, driver.as_ref(), &dir, &ping_place, pong_place.as_deref());
    print_results(&r, pong_report.as_ref());
    drop(client);
    drop(driver);
    match r.error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The command line, checked.
struct Options {
    embedded: bool,
    dir: Option<PathBuf>,
    count: u64,
    warmup: u64,
    idle: IdleStrategy,
    core: Option<usize>,
}

impl Options {
    fn from_args() -> Result<Options, String> {
        let mut args = Args::from_env(USAGE);
        let embedded = args.flag("--embedded");
        let dir: Option<PathBuf> = args.value("--dir")?;
        let count: u64 = args.value("--count")?.unwrap_or(100_000);
        let warmup: u64 = args.value("--warmup")?.unwrap_or(10_000);
        let idle = args.idle("yield")?;
        let core: Option<usize> = args.value("--core")?;
        args.finish()?;
        if embedded && dir.is_some() {
            return Err(
                "--embedded starts its own driver; drop --dir (or drop --embedded to use the driver at DIR)".into(),
            );
        }
        if count == 0 {
            return Err("--count must be at least 1".into());
        }
        Ok(Options {
            embedded,
            dir,
            count,
            warmup,
            idle,
            core,
        })
    }
}

/// With --embedded, pong on a thread of its own with its own client, as if it were another
/// process; it stops after the warm-up and the measured round trips.
fn start_pong(dir: &Path, o: &Options, core: Option<usize>) -> Result<PinnedThread<PongReport>, String> {
    let pong_client = Client::connect(dir).map_err(|e| e.to_string())?;
    let mut sub = pong_client
        .subscription(CHANNEL, PING_STREAM)
        .map_err(|e| e.to_string())?;
    let mut publ = pong_client
        .publication(CHANNEL, PONG_STREAM)
        .map_err(|e| e.to_string())?;
    let mut idle = o.idle.clone();
    let limit = o.warmup + o.count;
    spawn_hot("pong", core, move || {
        let timeout = Duration::from_secs(10);
        let report = common::pong(&mut sub, &mut publ, &mut idle, Some(limit), timeout, timeout);
        drop((sub, publ, pong_client));
        report
    })
    .map_err(|e| format!("could not start the pong thread: {e}"))
}

/// What ran: the messages, the driver, the threads, the idle strategy and the timing model.
fn print_setup(o: &Options, driver: Option<&EmbeddedDriver>, dir: &Path, ping_place: &str, pong_place: Option<&str>) {
    let (count, warmup) = (o.count, o.warmup);
    println!(
        "ping: {count} round trips (after {warmup} warm-up) of {PING_LEN}-byte messages, {CHANNEL} stream \
         {PING_STREAM} -> pong -> stream {PONG_STREAM}"
    );
    match driver {
        Some(d) => println!(
            "driver: embedded {}, IPC term {} KiB, in {}",
            messaging::driver_version(),
            d.ipc_term_length() >> 10,
            d.dir().display()
        ),
        None => println!("driver: external, at {}", dir.display()),
    }
    match pong_place {
        Some(pong) => println!("threads: ping {ping_place}, pong {pong} (same process)"),
        None => println!("threads: ping {ping_place}; pong runs in its own process"),
    }
    println!("idle strategy: {}", o.idle);
    println!("timing model: {TIMING_MODEL}");
}

/// The round trips measured, and what pong (on a thread of ours) did.
fn print_results(r: &PingReport, pong: Option<&PongReport>) {
    println!("round-trip time:");
    print_summary(&r.rtt);
    println!(
        "{} round trips in {:.3} s; claim retries: {}; unexpected messages {}",
        r.completed,
        r.elapsed.as_secs_f64(),
        r.retries,
        r.unexpected
    );
    if let Some(p) = pong {
        println!(
            "pong: echoed {} messages (claim retries: {}; dropped {}); stopped: {}",
            p.echoed, p.retries, p.dropped, p.stopped
        );
    }
}

/// The ping loop: stamp, claim (retrying), write, commit; poll until the echo comes; record.
fn ping(
    mut publ: ConcurrentPublication,
    mut sub: Subscriber,
    warmup: u64,
    count: u64,
    mut idle: IdleStrategy,
) -> PingReport {
    let mut r = PingReport {
        rtt: latency_histogram(),
        completed: 0,
        retries: Retries::default(),
        unexpected: 0,
        elapsed: Duration::ZERO,
        error: None,
    };
    let clock = Clock::start();
    let started = Instant::now();
    let run_id = run_id();
    for seq in 0..warmup + count {
        // The stamp is taken once, before the first claim attempt.
        let sent_ns = clock.now_ns();
        let sent = send_ping(&mut publ, [seq, sent_ns as u64, run_id], &mut idle, &mut r.retries);
        match sent.and_then(|()| await_echo(&mut sub, &clock, (seq, run_id), &mut idle, &mut r.unexpected)) {
            Ok(rtt) if seq >= warmup => record(&mut r.rtt, rtt),
            Ok(_) => {}
            Err(e) => {
                r.error = Some(e);
                return finish(r, started);
            }
        }
        r.completed += 1;
    }
    finish(r, started)
}

/// Claims, writes and commits one ping (`[seq, sent_ns, run_id]`), retrying a claim refused
/// for back-pressure or no subscriber for up to [`ECHO_TIMEOUT`].
fn send_ping(
    publ: &mut ConcurrentPublication,
    [seq, sent_ns, run_id]: [u64; 3],
    idle: &mut IdleStrategy,
    retries: &mut Retries,
) -> Result<(), String> {
    let mut first_failure: Option<Instant> = None;
    loop {
        match publ.try_claim(PING_LEN) {
            Ok(mut claim) => {
                let buf = claim.buffer_mut();
                buf[..8].copy_from_slice(&seq.to_le_bytes());
                buf[8..16].copy_from_slice(&sent_ns.to_le_bytes());
                buf[16..24].copy_from_slice(&run_id.to_le_bytes());
                buf[24..].fill(0);
                claim.commit();
                return Ok(());
            }
            Err(e) if e.is_retryable() => {
                retries.count(&e);
                if first_failure.get_or_insert_with(Instant::now).elapsed() > ECHO_TIMEOUT {
                    return Err(format!(
                        "could not send ping {seq} for {} s: {e}",
                        ECHO_TIMEOUT.as_secs()
                    ));
                }
                idle.idle_once();
            }
            Err(e) => return Err(format!("could not send ping {seq}: {e}")),
        }
    }
}

/// Polls until the echo of ping `seq` of this run comes (others are counted in `unexpected`),
/// for up to [`ECHO_TIMEOUT`]; its round trip, ns.
fn await_echo(
    sub: &mut Subscriber,
    clock: &Clock,
    (seq, run_id): (u64, u64),
    idle: &mut IdleStrategy,
    unexpected: &mut u64,
) -> Result<i64, String> {
    let mut rtt: Option<i64> = None;
    let mut empty_polls = 0_u32;
    let mut waiting_since: Option<Instant> = None;
    loop {
        let n = sub
            .poll(
                &mut |msg: &[u8], _h: &MessageHeader<'_>| {
                    let now = clock.now_ns();
                    match parse(msg) {
                        Some((echo_seq, echo_sent, echo_run)) if echo_seq == seq && echo_run == run_id => {
                            rtt = Some(now - echo_sent);
                        }
                        _ => *unexpected += 1,
                    }
                },
                1,
            )
            .map_err(|e| format!("waiting for the echo of ping {seq}: {e}"))?;
        if let Some(ns) = rtt {
            return Ok(ns);
        }
        if n == 0 {
            empty_polls = empty_polls.wrapping_add(1);
            if empty_polls.is_multiple_of(4096)
                && waiting_since.get_or_insert_with(Instant::now).elapsed() > ECHO_TIMEOUT
            {
                return Err(format!(
                    "no echo of ping {seq} within {} s: is pong still running?",
                    ECHO_TIMEOUT.as_secs()
                ));
            }
        }
        idle.idle(n);
    }
}

fn finish(mut r: PingReport, started: Instant) -> PingReport {
    r.elapsed = started.elapsed();
    r
}

/// The sequence number, the send stamp and the run id of a ping (or of its echo).
fn parse(msg: &[u8]) -> Option<(u64, i64, u64)> {
    if msg.len() != PING_LEN {
        return None;
    }
    let seq = u64::from_le_bytes(msg[..8].try_into().ok()?);
    let sent = i64::from_le_bytes(msg[8..16].try_into().ok()?);
    let run = u64::from_le_bytes(msg[16..24].try_into().ok()?);
    Some((seq, sent, run))
}

/// Different for every run: the process id and the wall clock's nanoseconds.
fn run_id() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    (u64::from(std::process::id()) << 32) | u64::from(nanos)
}
