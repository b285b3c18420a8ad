//! Plumbing shared by the examples: argument parsing, the clock, thread placement, the
//! histogram summary, and the pong loop that `ping --embedded` and `pong` both run.
//!
//! The hot paths worth reading are in the examples themselves (`capnp_latency.rs`,
//! `ping.rs`) and in [`pong`] here.
#![allow(dead_code, reason = "each example uses only some of these helpers")]

use std::str::FromStr;
use std::time::{Duration, Instant};

use aeron_latency::messaging::{
    available_cores, ConcurrentPublication, ConnectError, DriverLaunchError, IdleStrategy, MessageHeader, OfferError,
    PinnedThread, PollError, SpawnError, Subscriber, ThreadBuilder,
};
use hdrhistogram::Histogram;

/// The channel every example uses: shared memory through the media driver's log buffers.
pub(crate) const CHANNEL: &str = "aeron:ipc";
/// Ping -> pong stream (Aeron's samples use the same ids).
pub(crate) const PING_STREAM: i32 = 1002;
/// Pong -> ping stream.
pub(crate) const PONG_STREAM: i32 = 1003;
/// Fragments per poll.
pub(crate) const FRAGMENT_LIMIT: usize = 16;

/// A connect error with the fix in these commands' words: the library's names its own API
/// (`ClientBuilder::dir`), an example's is `--dir`.
pub(crate) fn connect_words(e: &ConnectError) -> String {
    match e {
        ConnectError::NoDriver { dir } => format!(
            "no media driver at {}: {} is missing; start one (aeronmd, the Java MediaDriver, or `cargo run \
             --release --example media_driver`) or point --dir / AERON_DIR at the driver's directory",
            dir.display(),
            dir.join("cnc.dat").display()
        ),
        ConnectError::PermissionDenied { dir, detail } => format!(
            "no access to the media driver at {}: {detail}; run as the driver's user (or a member of its \
             group, the driver started under umask 007), or point --dir / AERON_DIR at a driver of your own",
            dir.display()
        ),
        e => e.to_string(),
    }
}

/// A driver launch error in these commands' words (see [`connect_words`]).
pub(crate) fn launch_words(e: &DriverLaunchError) -> String {
    match e {
        DriverLaunchError::ActiveDriver { dir, pid, .. } => format!(
            "a media driver{} is already running at {}; use it, or pick another --dir",
            pid.map(|p| format!(" (pid {p})")).unwrap_or_default(),
            dir.display()
        ),
        e => e.to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// Arguments: `--name value` pairs and `--flag`s, no dependencies.

/// The command line minus the program name; options are taken out one by one, and
/// [`Args::finish`] rejects whatever is left.
pub(crate) struct Args {
    rest: Vec<String>,
}

impl Args {
    /// Reads `std::env::args`; prints `usage` and exits on `-h` / `--help`.
    pub(crate) fn from_env(usage: &str) -> Self {
        let rest: Vec<String> = std::env::args().skip(1).collect();
        if rest.iter().any(|a| a == "-h" || a == "--help") {
            println!("{usage}");
            std::process::exit(0);
        }
        Self { rest }
    }

    /// Whether `--name` was given (and removes it).
    pub(crate) fn flag(&mut self, name: &str) -> bool {
        let before = self.rest.len();
        self.rest.retain(|a| a != name);
        self.rest.len() != before
    }

    /// The value after `--name` (also accepts `--name=value`), parsed.
    pub(crate) fn value<T: FromStr>(&mut self, name: &str) -> Result<Option<T>, String>
    where
        T::Err: std::fmt::Display,
    {
        let prefix = format!("{name}=");
        let Some(i) = self.rest.iter().position(|a| a == name || a.starts_with(&prefix)) else {
            return Ok(None);
        };
        let arg = self.rest.remove(i);
        let raw = match arg.strip_prefix(&prefix) {
            Some(v) => v.to_owned(),
            None if i < self.rest.len() => self.rest.remove(i),
            None => return Err(format!("{name} needs a value")),
        };
        match raw.parse() {
            Ok(v) => Ok(Some(v)),
            // Accept 100_000 as well as 100000.
            Err(e) => raw
                .replace('_', "")
                .parse()
                .map(Some)
                .map_err(|_| format!("{name} {raw:?}: {e}")),
        }
    }

    /// Fails if anything was not taken.
    pub(crate) fn finish(self) -> Result<(), String> {
        match self.rest.first() {
            None => Ok(()),
            Some(a) => Err(format!("unknown argument {a:?} (try --help)")),
        }
    }

    /// `--idle NAME` (any Aeron alias), `--spin` as a shortcut; `default` otherwise.
    pub(crate) fn idle(&mut self, default: &str) -> Result<IdleStrategy, String> {
        let spin = self.flag("--spin");
        let named: Option<String> = self.value("--idle")?;
        let name = match (spin, named) {
            (true, Some(n)) if n != "spin" => return Err(format!("--spin and --idle {n} contradict each other")),
            (true, _) => "spin".to_owned(),
            (false, Some(n)) => n,
            (false, None) => default.to_owned(),
        };
        name.parse().map_err(|e| format!("--idle: {e}"))
    }
}

// ---------------------------------------------------------------------------------------------
// Clock.

/// Nanoseconds since a start `Instant`. `Instant` is `CLOCK_MONOTONIC` on Linux, read through
/// the vDSO (no syscall), and one clock for every thread and process on the host.
#[derive(Clone, Copy)]
pub(crate) struct Clock(Instant);

impl Clock {
    pub(crate) fn start() -> Self {
        Self(Instant::now())
    }

    #[inline]
    pub(crate) fn now_ns(self) -> i64 {
        // Fits in an i64 for 292 years.
        self.0.elapsed().as_nanos() as i64
    }
}

// ---------------------------------------------------------------------------------------------
// Threads.

/// Two cores for two hot threads, when this process may use at least two: the last two it
/// may run on (core 0 usually takes most interrupts). `None` when there is only one.
pub(crate) fn two_cores() -> Option<(usize, usize)> {
    let cores = available_cores();
    match cores.as_slice() {
        [.., a, b] => Some((*a, *b)),
        _ => None,
    }
}

/// Starts a named thread, pinned to `core` if given. A failed pin is not an error: the thread
/// runs unpinned and [`placement`] says so.
pub(crate) fn spawn_hot<T, F>(name: &str, core: Option<usize>, f: F) -> Result<PinnedThread<T>, SpawnError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    ThreadBuilder::new()
        .name(name)
        .affinity_opt(core)
        .require_pin(false)
        .spawn(f)
}

/// Where a thread started by [`spawn_hot`] runs, in words.
pub(crate) fn placement<T>(thread: &PinnedThread<T>, asked: Option<usize>) -> String {
    match (asked, thread.core()) {
        (Some(_), Some(core)) => format!("pinned to core {core}"),
        (Some(core), None) => format!("UNPINNED (pinning to core {core} failed: cpuset or permissions)"),
        (None, _) => "unpinned".to_owned(),
    }
}

// ---------------------------------------------------------------------------------------------
// Histograms.

/// 1 ns to 60 s at 3 significant digits; allocated once, never resized on the hot path.
pub(crate) fn latency_histogram() -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("constant bounds are valid");
    h.auto(false);
    h
}

/// Records a latency in ns, clamped into the histogram's range (never fails, never allocates).
#[inline]
pub(crate) fn record(h: &mut Histogram<u64>, ns: i64) {
    h.saturating_record(ns.max(1) as u64);
}

/// One line per statistic, values in ns, right-aligned.
pub(crate) fn print_summary(h: &Histogram<u64>) {
    let rows = [
        ("count", h.len()),
        ("p50", h.value_at_quantile(0.50)),
        ("p90", h.value_at_quantile(0.90)),
        ("p99", h.value_at_quantile(0.99)),
        ("p99.9", h.value_at_quantile(0.999)),
        ("max", h.max()),
    ];
    for (name, v) in rows {
        let unit = if name == "count" { "" } else { " ns" };
        println!("  {name:<6} {v:>12}{unit}");
    }
    println!("  {:<6} {:>12.0} ns", "mean", h.mean());
}

// ---------------------------------------------------------------------------------------------
// Offer outcomes.

/// Failed `try_claim` attempts that were retried, by kind.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Retries {
    back_pressured: u64,
    not_connected: u64,
    admin_action: u64,
}

impl Retries {
    /// Counts one retryable failure (others are not counted here: they end the run).
    #[inline]
    pub(crate) fn count(&mut self, e: &OfferError) {
        match e {
            OfferError::BackPressured => self.back_pressured += 1,
            OfferError::NotConnected => self.not_connected += 1,
            OfferError::AdminAction => self.admin_action += 1,
            _ => {}
        }
    }
}

impl std::fmt::Display for Retries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kinds = [
            ("back_pressured", self.back_pressured),
            ("not_connected", self.not_connected),
            ("admin_action", self.admin_action),
        ];
        let mut any = false;
        for (name, n) in kinds.into_iter().filter(|(_, n)| *n > 0) {
            write!(f, "{}{name} {n}", if any { ", " } else { "" })?;
            any = true;
        }
        if !any {
            f.write_str("none")?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Pong.

/// What [`pong`] did.
#[derive(Debug, Default)]
pub(crate) struct PongReport {
    /// Messages echoed.
    pub(crate) echoed: u64,
    /// Failed `try_claim` attempts that were retried.
    pub(crate) retries: Retries,
    /// Messages given up on after retrying for [`ECHO_GIVE_UP`].
    pub(crate) dropped: u64,
    /// Why pong stopped.
    pub(crate) stopped: String,
}

/// How long pong retries one echo before it gives up on it (ping has gone away).
pub(crate) const ECHO_GIVE_UP: Duration = Duration::from_secs(1);

/// Echoes every message from `sub` back on `publ` with `try_claim`, straight from the fragment
/// handler (no copy besides the echo itself), until it has echoed `limit` messages, or no
/// message has come for `idle_timeout` (counting from the start until the first one arrives:
/// `first_wait`).
pub(crate) fn pong(
    sub: &mut Subscriber,
    publ: &mut ConcurrentPublication,
    idle: &mut IdleStrategy,
    limit: Option<u64>,
    first_wait: Duration,
    idle_timeout: Duration,
) -> PongReport {
    let mut report = PongReport::default();
    let mut fatal: Option<OfferError> = None;
    let mut last_message = Instant::now();
    let mut empty_polls: u32 = 0;
    loop {
        if limit.is_some_and(|l| report.echoed >= l) {
            report.stopped = format!("echoed the {} messages asked for", report.echoed);
            break;
        }
        let n = sub.poll(
            &mut |msg: &[u8], _h: &MessageHeader<'_>| {
                if fatal.is_some() || limit.is_some_and(|l| report.echoed >= l) {
                    return;
                }
                match echo(publ, msg, idle, &mut report.retries) {
                    Ok(true) => report.echoed += 1,
                    Ok(false) => report.dropped += 1,
                    Err(e) => fatal = Some(e),
                }
            },
            FRAGMENT_LIMIT,
        );
        let n = match n {
            Ok(n) => n,
            Err(e @ PollError::ClientClosed) => {
                report.stopped = e.to_string();
                break;
            }
            // One publisher's log is unreadable; the others are still read.
            Err(e) => {
                eprintln!("pong: {e}");
                0
            }
        };
        if let Some(e) = fatal {
            report.stopped = format!("the pong publication failed: {e}");
            break;
        }
        if n > 0 {
            empty_polls = 0;
            last_message = Instant::now();
        } else {
            empty_polls = empty_polls.wrapping_add(1);
            // Read the clock only now and then while idle.
            if empty_polls.is_multiple_of(1024) {
                let allowed = if report.echoed == 0 { first_wait } else { idle_timeout };
                if last_message.elapsed() > allowed {
                    report.stopped = format!("no message for {:.0} s", allowed.as_secs_f64());
                    break;
                }
            }
        }
        idle.idle(n);
    }
    report
}

/// One echo: `Ok(true)` sent, `Ok(false)` given up after [`ECHO_GIVE_UP`] of retryable errors.
#[inline]
fn echo(
    publ: &mut ConcurrentPublication,
    msg: &[u8],
    idle: &mut IdleStrategy,
    retries: &mut Retries,
) -> Result<bool, OfferError> {
    let mut first_failure: Option<Instant> = None;
    loop {
        match publ.try_claim(msg.len()) {
            Ok(mut claim) => {
                claim.buffer_mut().copy_from_slice(msg);
                claim.commit();
                return Ok(true);
            }
            Err(e) if e.is_retryable() => {
                retries.count(&e);
                if first_failure.get_or_insert_with(Instant::now).elapsed() > ECHO_GIVE_UP {
                    return Ok(false);
                }
                idle.idle_once();
            }
            Err(e) => return Err(e),
        }
    }
}

/// Waits (sleeping 1 ms at a time) until `ready` holds, for at most `limit`.
pub(crate) fn wait_until(limit: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while !ready() {
        if started.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}
