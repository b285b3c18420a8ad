//! The subscribing side of a run (`latency-sub`).
//!
//! Timing model: the hot thread polls the subscription (busy-spin by default); for every
//! message it reads CLOCK_MONOTONIC once, right after decoding, and records
//! `now - intended_ns` (coordinated-omission corrected) and `now - sent_ns` (what the
//! transport adds) into pre-allocated HdrHistograms, overall and in 20 groups by sequence
//! number. No allocation (after the first message sizes the sequence bitset), lock or syscall
//! per message.

use crate::analysis::jitter::Hiccup;
use crate::measure::monitor::{Monitor, STALL_TICK_EVERY};
use crate::model::Mode;
use crate::model::Role;
use crate::run::publication::Add;
use crate::run::receive::EchoStats;
use crate::run::receive::State;
use crate::run::receive::SubOutcome;
use crate::run::receive::POLL_ERRORS_KEPT;
use crate::run::Delivery;
use crate::run::SetupError;
use crate::sys::clock::now_ns;
use aeron_latency::messaging::{
    driver_pid, AddError, Client, Concurrent, DriverLiveness, Exclusive, HandoffEnd, HandoffOptions, IdleStrategy,
    MessageHeader, OfferError, PollError, PrefaultError, PrefaultStats, Publication, PublicationKind, Subscriber,
    ThreadBuilder,
};
use aeron_latency::wire;
use crossbeam_channel::RecvTimeoutError;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What a subscribing run needs.
#[derive(Debug, Clone)]
pub struct SubConfig {
    /// Aeron directory of the driver.
    pub dir: PathBuf,
    /// Channel URI.
    pub channel: String,
    /// Stream id.
    pub stream: i32,
    /// Stop after this many messages (warm-up included) even without an end marker.
    pub total: Option<u64>,
    /// Give up this long after starting.
    pub timeout: Duration,
    /// Core for the hot thread.
    pub core: Option<usize>,
    /// Idle strategy between empty polls.
    pub idle: IdleStrategy,
    /// Inline or through a channel.
    pub delivery: Delivery,
    /// Share a mutex between the hot loop and a helper thread (planted futex jitter).
    pub hot_path_lock: bool,
    /// Jitter diagnostics source.
    pub diagnostics: Mode,
    /// Round-trip mode (pong): echo every message, unchanged, on this channel and stream before
    /// measuring it.
    pub echo: Option<crate::run::PongPath>,
    /// Print the live line on stderr once a second ([`crate::run::live`]).
    pub live: bool,
    /// The publication pong's echoes are written with.
    pub publication: crate::model::PublicationKind,
    /// A planted helper thread waking on the hot core (`--plant-helper`).
    pub plant_helper: bool,
    /// Map in the log buffers before measuring (off: `--no-prefault`, a cold start).
    pub prefault: bool,
    /// The band the verdict explains (`--explain`).
    pub explain: crate::model::Explain,
}

/// Pong's echo publication, of the kind `--publication` picked (one branch per echo).
enum EchoPublication {
    Exclusive(Publication<Exclusive>),
    Concurrent(Publication<Concurrent>),
}

impl EchoPublication {
    fn add(client: &Client, kind: crate::model::PublicationKind, channel: &str, stream: i32) -> Result<Self, AddError> {
        Ok(match kind {
            crate::model::PublicationKind::Exclusive => Self::Exclusive(Exclusive::add(client, channel, stream)?),
            crate::model::PublicationKind::Concurrent => Self::Concurrent(Concurrent::add(client, channel, stream)?),
        })
    }

    fn prefault(&self) -> Result<PrefaultStats, PrefaultError> {
        match self {
            Self::Exclusive(p) => p.prefault(),
            Self::Concurrent(p) => p.prefault(),
        }
    }

    /// One attempt to copy `bytes` and the frame's `reserved` value (a compact sample's send
    /// stamp) in with a claim.
    #[inline]
    fn try_echo(&mut self, bytes: &[u8], reserved: i64) -> Result<(), OfferError> {
        #[inline]
        fn on<K: PublicationKind>(p: &mut Publication<K>, bytes: &[u8], reserved: i64) -> Result<(), OfferError> {
            let mut claim = p.try_claim(bytes.len())?;
            claim.buffer_mut().copy_from_slice(bytes);
            claim.set_reserved_value(reserved);
            claim.commit();
            Ok(())
        }
        match self {
            Self::Exclusive(p) => on(p, bytes, reserved),
            Self::Concurrent(p) => on(p, bytes, reserved),
        }
    }
}

/// Pong's echo publication; [`Echo::send`] copies a message into it, retrying.
struct Echo {
    publisher: EchoPublication,
    stats: EchoStats,
    /// Failed claims by outcome (no allocation while measuring).
    retries: crate::model::OfferTally,
    wait: Duration,
}

impl Echo {
    fn into_stats(mut self) -> EchoStats {
        for (outcome, n) in self.retries.iter() {
            if n > 0 {
                self.stats.retries.insert(outcome.name().to_owned(), n);
            }
        }
        self.stats
    }
}

impl Echo {
    /// Echoes `bytes` with its frame's reserved value; gives up (and stops echoing) after
    /// `wait` of retryable failures.
    #[inline]
    fn send(&mut self, bytes: &[u8], reserved: i64) {
        if self.stats.failure.is_some() {
            return;
        }
        let mut since: Option<Instant> = None;
        loop {
            match self.publisher.try_echo(bytes, reserved) {
                Ok(()) => {
                    self.stats.echoed += 1;
                    return;
                }
                Err(e) => {
                    self.retries.count(crate::run::send::outcome_of(&e));
                    let t = *since.get_or_insert_with(Instant::now);
                    if !e.is_retryable() || t.elapsed() > self.wait || ping_gone_at_the_end(&e, bytes) {
                        self.stats.failure = Some(format!(
                            "echoing stopped after {} messages: {e} on stream {}",
                            self.stats.echoed, self.stats.stream
                        ));
                        return;
                    }
                    std::hint::spin_loop();
                }
            }
        }
    }
}

/// Whether an echo failed because ping went away after sending its end marker (`bytes`): ping
/// does not wait for that echo, so retrying it for `--wait` would only hold pong's exit. Read
/// only when an echo fails (it decodes the message).
#[cold]
fn ping_gone_at_the_end(e: &OfferError, bytes: &[u8]) -> bool {
    matches!(e, OfferError::NotConnected)
        && matches!(wire::decode_message(bytes), Ok(wire::Message::Full(s)) if s.kind == wire::Kind::End)
}

/// Receives until the end marker, `total` messages, or the timeout; never loses what it
/// measured (an early stop is reported in [`SubOutcome::stopped_early`]).
///
/// # Errors
/// [`SetupError`] when the driver, subscription, core or the diagnostics source is unusable.
pub fn run(cfg: &SubConfig) -> Result<SubOutcome, SetupError> {
    let started = std::time::SystemTime::now();
    let monitor = Monitor::new(cfg.diagnostics).map_err(|e| SetupError(e.to_string()))?;
    let client = crate::run::connect(&cfg.dir, cfg.prefault)?;
    let plant = if cfg.hot_path_lock {
        Some(crate::sys::plant::LockPlant::spawn().map_err(|e| SetupError(format!("--hot-path-lock: {e}")))?)
    } else {
        None
    };
    let helper = if cfg.plant_helper {
        Some(crate::sys::plant::HelperPlant::spawn(cfg.core).map_err(|e| SetupError(format!("--plant-helper: {e}")))?)
    } else {
        None
    };
    let line = cfg.live.then(|| Arc::new(crate::run::live::Live::new()));
    let printer = match &line {
        Some(l) => Some(
            crate::run::live::Printer::spawn(l.clone(), "latency-sub", Duration::from_secs(1))
                .map_err(|e| SetupError(format!("--live: could not start its thread: {e}; run with --live off")))?,
        ),
        None => None,
    };
    if cfg.echo.is_some() && cfg.delivery == Delivery::Channel {
        return Err(SetupError(
            "--mode rtt echoes from the poll loop: use --delivery inline (the default)".into(),
        ));
    }
    let side = Side {
        monitor,
        lock: plant.as_ref().map(crate::sys::plant::LockPlant::lock),
        line,
        live: client.liveness(),
        driver: driver_pid(&cfg.dir),
    };
    let mut prefaulted = Vec::new();
    let mut out = match cfg.delivery {
        Delivery::Inline => receive_inline(&client, cfg, side, &mut prefaulted)?,
        Delivery::Channel => receive_via_channel(&client, cfg, side)?,
    };
    drop(printer);
    drop(plant);
    drop(helper);
    drop(client);
    out.idle = cfg.idle.to_string();
    out.delivery = cfg.delivery;
    out.hot_path_lock = cfg.hot_path_lock;
    out.driver_on_path = crate::run::driver_on_path(&cfg.channel, cfg.echo.as_ref());
    out.explain = cfg.explain;
    if cfg.prefault {
        prefaulted.push(crate::run::stack_prefaulted("sub"));
    }
    out.prefaulted = prefaulted;
    out.started_at = Some(started);
    out.setup_notes
        .extend(aeron_latency::messaging::world_writable_warning(&cfg.dir));
    Ok(out)
}

/// What both ways of receiving hand their hot thread.
struct Side {
    monitor: Monitor,
    lock: Option<Arc<Mutex<u64>>>,
    line: Option<Arc<crate::run::live::Live>>,
    live: DriverLiveness,
    driver: Option<u32>,
}

/// `--delivery inline`: the hot thread polls the subscription and handles each message in the
/// poll callback (and in round-trip mode echoes it).
fn receive_inline(
    client: &aeron_latency::messaging::Client,
    cfg: &SubConfig,
    side: Side,
    prefaulted: &mut Vec<String>,
) -> Result<SubOutcome, SetupError> {
    let Side {
        mut monitor,
        lock,
        line,
        live,
        driver,
    } = side;
    let subscriber = client
        .subscription(&cfg.channel, cfg.stream)
        .map_err(|e| SetupError(e.to_string()))?;
    // Map in every page of the publisher's log before the first message is handled (page
    // tables are per process, so this thread's work serves the hot one). The image attaches
    // only once a publisher connected: wait for it. Messages sent meanwhile wait in the log:
    // the warm-up absorbs that when it lasts longer than the pre-faulting (its time is in the
    // report's `faults.prefaulted`).
    let waited = Instant::now();
    while subscriber.image_count() == 0
        && waited.elapsed() < cfg.timeout
        && live.is_active()
        && !crate::sys::signals::interrupted()
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    // One --timeout for the whole run, the wait included.
    let timeout = cfg.timeout.saturating_sub(waited.elapsed());
    if cfg.prefault {
        match subscriber.prefault() {
            Ok(st) => prefaulted.push(format!("sub stream {} image: {st}", cfg.stream)),
            Err(e) => prefaulted.push(format!("sub stream {}: not pre-faulted: {e}", cfg.stream)),
        }
    }
    let mut echo = add_echo(client, cfg, timeout, prefaulted)?;
    let (total, flag, mut idle, prefault) = (cfg.total, cfg.timeout, cfg.idle.clone(), cfg.prefault);
    let (ready_tx, ready_rx) = crossbeam_channel::bounded::<Monitor>(1);
    let hot = ThreadBuilder::new()
        .name("latency-sub")
        .affinity_opt(cfg.core)
        .spawn(move || {
            if prefault {
                crate::sys::thread::prefault_stack();
            }
            let mut subscriber = subscriber;
            let mut st = State::new(ready_rx.recv().ok(), lock, true);
            st.live = line;
            let ends = Ends::new(total, (timeout, flag), live);
            let sleeps = idle.sleeps();
            let mut out = hot_loop(&mut subscriber, st, &ends, &mut idle, sleeps, echo.as_mut());
            out.echo = echo.map(Echo::into_stats);
            (out, subscriber)
        })
        .map_err(|e| SetupError(format!("--core: {e}")))?;
    monitor.watch_run(hot.tid(), Role::Subscriber, driver);
    let _ = ready_tx.send(monitor);
    let (core, hot_tid) = (hot.core(), hot.tid());
    let (mut out, subscriber) = hot
        .join()
        .map_err(|_| SetupError("the receiving thread panicked".into()))?;
    drop(subscriber);
    out.core = core;
    out.hot_tid = hot_tid;
    Ok(out)
}

/// Pong's echo publication (round-trip mode; `None` one-way), pre-faulted when asked; gives up
/// an echo after `timeout` (at most 10 s) of retries.
fn add_echo(
    client: &aeron_latency::messaging::Client,
    cfg: &SubConfig,
    timeout: Duration,
    prefaulted: &mut Vec<String>,
) -> Result<Option<Echo>, SetupError> {
    let Some(path) = &cfg.echo else {
        return Ok(None);
    };
    let echo = Echo {
        publisher: EchoPublication::add(client, cfg.publication, &path.channel, path.stream)
            .map_err(|e| SetupError(format!("--pong-channel/--pong-stream: {e}")))?,
        stats: EchoStats {
            stream: path.stream,
            ..EchoStats::default()
        },
        retries: crate::model::OfferTally::default(),
        wait: timeout.min(Duration::from_secs(10)),
    };
    if cfg.prefault {
        match echo.publisher.prefault() {
            Ok(st) => prefaulted.push(format!("pong stream {} publication: {st}", path.stream)),
            Err(err) => prefaulted.push(format!("pong stream {}: not pre-faulted: {err}", path.stream)),
        }
    }
    Ok(Some(echo))
}

/// `--delivery channel` (seed 002's shape): messaging's hand-off thread polls and sends each
/// message over a channel; the hot thread receives from it.
fn receive_via_channel(
    client: &aeron_latency::messaging::Client,
    cfg: &SubConfig,
    side: Side,
) -> Result<SubOutcome, SetupError> {
    let Side {
        mut monitor,
        lock,
        line,
        live,
        driver,
    } = side;
    let (total, timeout, driver_live, prefault) = (cfg.total, cfg.timeout, live.clone(), cfg.prefault);
    let (ready_tx, ready_rx) = crossbeam_channel::bounded::<Monitor>(1);
    let (tx, rx) = crossbeam_channel::unbounded::<Vec<u8>>();
    let stop = Arc::new(AtomicBool::new(false));
    let mut handoff = client
        .subscribe(&cfg.channel, cfg.stream, tx, stop, HandoffOptions::default())
        .map_err(|e| SetupError(e.to_string()))?;
    let consumer = ThreadBuilder::new()
        .name("latency-sub")
        .affinity_opt(cfg.core)
        .spawn(move || {
            if prefault {
                crate::sys::thread::prefault_stack();
            }
            let mut st = State::new(ready_rx.recv().ok(), lock, false);
            st.live = line;
            consume_loop(&rx, st, &Ends::new(total, (timeout, timeout), live))
        })
        .map_err(|e| SetupError(format!("--core: {e}")))?;
    monitor.watch_run(consumer.tid(), Role::Consumer, driver);
    let _ = ready_tx.send(monitor);
    let (core, hot_tid) = (consumer.core(), consumer.tid());
    let mut out = consumer
        .join()
        .map_err(|_| SetupError("the consuming thread panicked".into()))?;
    // Closed before its errors are taken, so that none comes in between.
    let end = handoff.close();
    out.poll_errors.extend(
        handoff
            .take_poll_errors()
            .iter()
            .take(POLL_ERRORS_KEPT)
            .map(ToString::to_string),
    );
    if let Some(why) = out.stopped_early.as_mut().filter(|w| *w == HANDOFF_STOPPED) {
        // The driver's loss in the words every other path of the probe uses, when known.
        let lost = crate::run::driver_lost(&driver_live);
        *why = match end {
            HandoffEnd::ClientClosed if !lost.is_empty() => lost,
            other => format!("{HANDOFF_STOPPED}: {other}"),
        };
    }
    out.core = core;
    out.hot_tid = hot_tid;
    Ok(out)
}

fn timeout_reason(timeout: Duration) -> String {
    format!(
        "--timeout {:.1} s reached before the publisher's end marker",
        timeout.as_secs_f64()
    )
}

/// How long a subscriber reads on after SIGINT or SIGTERM for the end marker (an interrupted
/// publisher sends it at once), so that its totals add up.
const INTERRUPT_GRACE: Duration = Duration::from_secs(1);

/// When a receiving loop stops besides the end marker.
struct Ends {
    /// After this many fragments.
    total: Option<u64>,
    /// After this long.
    timeout: Duration,
    /// The `--timeout` given (the run's whole budget, of which `timeout` may be what was left
    /// after waiting for a publisher): what the reason names.
    flag: Duration,
    /// When the driver stops responding.
    live: DriverLiveness,
    /// When this process was seen interrupted (it stops [`INTERRUPT_GRACE`] later).
    interrupted_at: std::cell::Cell<Option<Instant>>,
}

impl Ends {
    fn new(total: Option<u64>, (timeout, flag): (Duration, Duration), live: DriverLiveness) -> Ends {
        Ends {
            total,
            timeout,
            flag,
            live,
            interrupted_at: std::cell::Cell::new(None),
        }
    }

    /// Why the loop must stop now, if it must (the caller decides how often to ask).
    fn reached(&self, started: Instant) -> Option<String> {
        if !self.live.is_active() {
            return Some(crate::run::driver_lost(&self.live));
        }
        if crate::sys::signals::interrupted() {
            let at = self.interrupted_at.get().unwrap_or_else(Instant::now);
            self.interrupted_at.set(Some(at));
            if at.elapsed() > INTERRUPT_GRACE {
                return Some(crate::sys::signals::INTERRUPTED_REASON.to_owned());
            }
        }
        (started.elapsed() > self.timeout).then(|| timeout_reason(self.flag))
    }

    /// Why a loop that ended at the end marker still did not run as planned: it was
    /// interrupted meanwhile.
    fn interrupted(&self) -> Option<String> {
        crate::sys::signals::interrupted().then(|| crate::sys::signals::INTERRUPTED_REASON.to_owned())
    }
}

fn hot_loop(
    sub: &mut Subscriber,
    mut st: State,
    ends: &Ends,
    idle: &mut IdleStrategy,
    sleeps: bool,
    mut echo: Option<&mut Echo>,
) -> SubOutcome {
    let started = Instant::now();
    let spins = idle.spins();
    let mut stopped_early = None;
    let mut polls: u32 = 0;
    loop {
        let polled = sub.poll(
            &mut |bytes: &[u8], h: &MessageHeader<'_>| {
                if let Some(e) = echo.as_deref_mut() {
                    // Pong: echo first, measure after (the echo is what ping waits for).
                    e.send(bytes, h.reserved_value());
                }
                st.on_message(bytes, h.reserved_value());
            },
            64,
        );
        let n = match polled {
            Ok(n) => n,
            // The driver is gone: the liveness check below ends the run and says so.
            Err(PollError::ClientClosed) => 0,
            // One publisher's log unreadable: the report says so; the others are still read.
            Err(e) => {
                st.poll_failed(&e);
                0
            }
        };
        st.after_poll();
        if st.done(ends.total) {
            break;
        }
        polls = polls.wrapping_add(1);
        match &mut st.stalls {
            // One vDSO clock read after each poll that read something and, while spinning,
            // every STALL_TICK_EVERY empty ones (every one with any other idle strategy: a
            // yield or a sleep may take long itself): gaps >= 5 µs are logged as stalls.
            Some(s) if n > 0 || !spins || polls.is_multiple_of(STALL_TICK_EVERY) => {
                s.tick(now_ns());
                idle.idle(n);
                if sleeps {
                    // Sleeping is the idle strategy's choice, not a stall.
                    s.restart(now_ns());
                }
            }
            _ => idle.idle(n),
        }
        // Look at the clock and the driver every 4,096 polls only (every poll when the idle
        // strategy sleeps anyway): cheap (vDSO, one atomic load), but not free.
        if (sleeps && n == 0) || polls.is_multiple_of(4096) {
            if let Some(why) = ends.reached(started) {
                stopped_early = Some(why);
                break;
            }
        }
    }
    st.finish(stopped_early.or_else(|| ends.interrupted()))
}

/// Why a `--delivery channel` run ended early when the channel ended (the hand-off thread's
/// [`HandoffEnd`](aeron_latency::messaging::HandoffEnd) is added after it).
const HANDOFF_STOPPED: &str = "the hand-off thread stopped delivering";

fn consume_loop(rx: &crossbeam_channel::Receiver<Vec<u8>>, mut st: State, ends: &Ends) -> SubOutcome {
    let started = Instant::now();
    let mut stopped_early = None;
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(bytes) => {
                // The hand-off carries payloads only: no reserved value (compact samples are
                // refused with it, see `Args::validate`).
                st.on_message(&bytes, 0);
                st.after_poll();
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                stopped_early = Some(HANDOFF_STOPPED.into());
                break;
            }
        }
        if st.done(ends.total) {
            break;
        }
        if let Some(why) = ends.reached(started) {
            stopped_early = Some(why);
            break;
        }
    }
    st.finish(stopped_early.or_else(|| ends.interrupted()))
}

/// Pong's echoing in its report: what it echoed, and a failure to echo (incomplete, unless
/// only the end marker's echo failed).
fn pong_notes(r: &mut crate::model::Report, e: &EchoStats) {
    let retries: Vec<String> = e.retries.iter().map(|(k, v)| format!("{k} {v}")).collect();
    r.notes.push(format!(
        "pong: echoed {} messages on stream {} (claims retried: {}); the latencies above are one-way, ping to \
         pong, ping's send times against this host's clock: latencies when ping runs on this host",
        e.echoed,
        e.stream,
        if retries.is_empty() {
            "none".into()
        } else {
            retries.join(", ")
        }
    ));
    match &e.failure {
        // Every message arrived and was echoed: only the end marker's echo failed. Ping
        // does not wait for that one and may have gone already; not a failure.
        Some(f) if r.sent == Some(r.received) && e.echoed >= r.received => r.notes.push(format!(
            "pong: the end marker was not echoed (ping does not wait for it, and had gone): {f}"
        )),
        Some(f) => {
            r.complete = false;
            r.incomplete_reason = Some(f.clone());
        }
        None => {}
    }
}

/// Builds the report from what the subscriber collected. The subscriber does not see the
/// publisher's offer outcomes: `offer` stays empty (latency-probe fills it from latency-pub).
#[must_use]
pub fn to_report(out: &SubOutcome, env: crate::model::Env, msg_size: u64) -> crate::model::Report {
    let acc = out.recorder.finish(out.end);
    let measured = acc.received_measured;
    let rate = |span: (i64, i64)| {
        let d = (span.1 - span.0) as f64;
        if measured > 1 && d > 0.0 {
            (measured - 1) as f64 * 1e9 / d
        } else {
            0.0
        }
    };
    let run = crate::model::RunInfo {
        rate_target: rate(out.intended_span),
        rate_achieved: rate(out.receive_span),
        msg_size,
        duration_s: (out.receive_span.1 - out.receive_span.0).max(0) as f64 / 1e9,
        started_at: crate::units::utc_timestamp(out.started_at.unwrap_or_else(std::time::SystemTime::now)),
    };
    let mut r = crate::model::Report::from_recorder(&out.recorder, &acc, run, Default::default(), env);
    r.in_flight = r.littles_law();
    if measured > 0 {
        // The schedule from the sequence numbers and intended times of the first and last
        // measured message (lost messages do not stretch it), and the intended time of the
        // first planned measured message (seq = warm-up) as Unix time: the histograms' base.
        let (t0, t1) = out.intended_span;
        let (s0, s1) = out.seq_span;
        let rate = if t1 > t0 && s1 > s0 {
            (s1 - s0) as f64 * 1e9 / (t1 - t0) as f64
        } else {
            r.rate_target
        };
        let warmup = out.recorder.plan().map_or(0, |(w, _)| u64::from(w));
        let ahead_s = if rate > 0.0 {
            s0.saturating_sub(warmup) as f64 / rate
        } else {
            0.0
        };
        let age_s = (now_ns() - t0) as f64 / 1e9;
        let now_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        r.histograms = Some(crate::model::Histograms::from_recorder(
            &out.recorder,
            (now_s - age_s - ahead_s).max(0.0),
            rate,
        ));
    }
    r.faults.subscriber = out.faults_measured;
    r.faults.prefaulted.clone_from(&out.prefaulted);
    r.notes.extend(out.setup_notes.iter().cloned());
    r.notes
        .extend(out.poll_errors.iter().map(|e| format!("a poll failed: {e}")));
    if let Some(e) = &out.echo {
        pong_notes(&mut r, e);
    }
    r.not_one_clock = crate::report::build::not_one_clock(&acc, r.latency_actual_ns.min, out.echo.is_some());
    if let (Some(why), None) = (&r.not_one_clock, &out.echo) {
        r.complete = false;
        r.incomplete_reason = Some(match r.incomplete_reason.take() {
            Some(other) => format!("{why}; {other}"),
            None => why.clone(),
        });
    }
    if let Some(why) = out.stopped_early.clone().or_else(|| publisher_stopped_early(out)) {
        r.complete = false;
        r.incomplete_reason = Some(match r.incomplete_reason.take() {
            Some(other) => format!("{why}; {other}"),
            None => why,
        });
    }
    if let Some(raw) = out.raw_jitter() {
        let skipped = Hiccup::Skipped("skipped: latency-sub alone does not run it (latency-probe does)".into());
        crate::report::build::attach(&mut r, &raw, None, &skipped, out.explain);
    }
    r
}

/// Why a run that ended at the end marker, not stopped here, still ran short: the marker's
/// count is below the plan its messages carried (warm-up plus measured; an open-ended plan,
/// 0 measured, has no such check). The publisher was interrupted or failed: a Ctrl-C that
/// reached the publisher before this side saw it, or a publisher elsewhere.
fn publisher_stopped_early(out: &SubOutcome) -> Option<String> {
    let sent = out.end?;
    let (warmup, measured) = out.recorder.plan()?;
    let planned = u64::from(warmup) + u64::from(measured);
    (measured > 0 && sent < planned).then(|| {
        format!(
            "{}: its end marker says it sent {sent} of the {planned} messages it planned \
             (warm-up included), so this run measured only those (the publisher's report says why it stopped)",
            crate::report::build::PUBLISHER_STOPPED_EARLY
        )
    })
}
