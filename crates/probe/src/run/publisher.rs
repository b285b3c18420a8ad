//! The publishing side of a run (`latency-pub`).
//!
//! Timing model: message `i` has the intended send time `start + i / rate` on
//! CLOCK_MONOTONIC; the hot thread busy-spins until then, claims space in the term buffer,
//! reads the clock once more only if the claim had to be retried, stamps that reading as the
//! actual send time, encodes the Cap'n Proto sample straight into the claimed range and
//! commits. The clock reading taken right after the commit measures the publish-only cost
//! (claim + encode + commit) and serves as the first reading of the next pacing wait, so an
//! on-schedule message costs two clock reads and no syscall, lock or allocation.
//! A retry never re-stamps the intended time: back-pressure shows up as latency from the
//! intended time (coordinated omission is not hidden) and in the offer outcome counts.

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use aeron_latency::messaging::{
    Client, Concurrent, DriverLiveness, Exclusive, IdleStrategy, Publication, Subscriber, ThreadBuilder,
};

use crate::run::frames::COMPACT_RUN_FULL_LEN;
use crate::run::publication::Add;
use aeron_latency::wire;

use crate::measure::monitor::Monitor;
use crate::model::{Env, OfferTally, PubReport, RawJitter, Role, Stats, SubscriberLost, Tool};
use crate::run::receive::{State, SubOutcome};
use crate::run::send::{hot_loop, Off, On, Plan, Sent};
use crate::run::SetupError;
use crate::sys::clock::TIMING_MODEL;
use crate::sys::pacing::Pacer;
use crate::units::utc_timestamp;

/// What a publishing run needs.
#[derive(Debug, Clone)]
pub struct PubConfig {
    /// Aeron directory of the driver.
    pub dir: PathBuf,
    /// Channel URI.
    pub channel: String,
    /// Stream id.
    pub stream: i32,
    /// Measured duration, seconds.
    pub duration_s: f64,
    /// Messages per second.
    pub rate: u64,
    /// Warm-up messages sent first at the same rate, excluded from the statistics.
    pub warmup: u64,
    /// Encoded message size in bytes.
    pub msg_size: usize,
    /// How long to wait for a subscriber before giving up, and how long a lost subscriber
    /// may stay away before the run stops.
    pub wait: Duration,
    /// Core for the hot thread.
    pub core: Option<usize>,
    /// Idle strategy while retrying a failed offer.
    pub idle: IdleStrategy,
    /// Id written into every message.
    pub publisher_id: u32,
    /// Jitter diagnostics source.
    pub diagnostics: crate::model::Mode,
    /// Round-trip mode (ping): after each message, poll this stream of the same channel until
    /// pong's echo of it arrives, and time the round trip.
    pub pong: Option<crate::run::PongPath>,
    /// Which publication to write with.
    pub publication: crate::model::PublicationKind,
    /// Map in the log buffers before measuring (off: `--no-prefault`, a cold start).
    pub prefault: bool,
    /// The band the verdict explains (`--explain`).
    pub explain: crate::model::Explain,
    /// Keep each measured message's send lag ([`PubRun::lags`], `--send-lags`).
    pub keep_lags: bool,
    /// Planted delay per message, ns (`--plant-delay-ns`; 0: none).
    pub plant_delay_ns: u64,
}

/// The subscribers' progress as the publisher's main thread samples it during the run.
#[derive(Debug, Default)]
struct ReaderWatch {
    /// Highest subscriber position seen, and when it last moved.
    last: Option<(i64, Instant)>,
}

impl ReaderWatch {
    fn sample(&mut self, positions: &[i64], now: Instant) {
        let Some(&max) = positions.iter().max() else {
            return; // nobody reads (any more): keep the last position seen
        };
        match &mut self.last {
            Some((p, at)) if max > *p => {
                *p = max;
                *at = now;
            }
            Some(_) => {}
            None => self.last = Some((max, now)),
        }
    }
}

/// Runs the publisher: waits for a subscriber, sends warm-up + measured messages on schedule,
/// then the end marker. Returns its report even when the run stopped early (marked incomplete).
///
/// # Errors
/// [`SetupError`] when the driver, publication, message size or core is unusable.
pub fn run(cfg: &PubConfig) -> Result<PubRun, SetupError> {
    match cfg.publication {
        crate::model::PublicationKind::Exclusive => run_with::<Exclusive>(cfg),
        crate::model::PublicationKind::Concurrent => run_with::<Concurrent>(cfg),
    }
}

/// [`run`] with publication kind `K`: the hot loop is compiled for it.
fn run_with<K: Add>(cfg: &PubConfig) -> Result<PubRun, SetupError> {
    let started_at = utc_timestamp(SystemTime::now());
    let (padding, compact, measured) = check(cfg)?;
    let planned = cfg.warmup + measured;
    let monitor = Monitor::new(cfg.diagnostics).map_err(|e| SetupError(e.to_string()))?;
    let client = crate::run::connect(&cfg.dir, cfg.prefault)?;
    let (publisher, pong) = open::<K>(&client, cfg)?;
    let live = client.liveness();
    if let Err(why) = await_subscriber(&publisher, pong.as_ref(), cfg, &live) {
        let mut r = failed_report(cfg, planned, started_at, why.to_string());
        r.driver_lost = matches!(why, NotReady::DriverLost(_));
        return Ok(PubRun::from(r));
    }
    let prefaulted = prefault(&publisher, pong.as_ref(), cfg);
    let plan = Plan {
        warmup: cfg.warmup,
        measured,
        rate: cfg.rate,
        padding,
        compact,
        wait: cfg.wait,
        publisher_id: cfg.publisher_id,
        live: live.clone(),
        keep_lags: cfg.keep_lags,
        plant_delay_ns: cfg.plant_delay_ns,
    };
    let driven = drive(client, publisher, pong, monitor, plan, cfg)?;
    Ok(assemble(cfg, driven, &live, planned, started_at, prefaulted))
}

/// Checks the plan before anything starts: the padding for `--msg-size` (a full sample's, and
/// a compact one's below 64 bytes) and the measured count.
fn check(cfg: &PubConfig) -> Result<(usize, Option<Option<usize>>, u64), SetupError> {
    let size_error = |e: wire::SizeError| SetupError(format!("--msg-size: {e}"));
    let (padding, compact) = if cfg.msg_size < wire::MIN_ENCODED_LEN {
        (
            wire::padding_for_size(COMPACT_RUN_FULL_LEN).map_err(size_error)?,
            Some(wire::compact_padding_for_size(cfg.msg_size).map_err(size_error)?),
        )
    } else {
        (wire::padding_for_size(cfg.msg_size).map_err(size_error)?, None)
    };
    let measured = (cfg.duration_s * cfg.rate as f64).round() as u64;
    if measured > u64::from(u32::MAX) || cfg.warmup > u64::from(u32::MAX) {
        return Err(SetupError(
            "--duration x --rate plans more than 4,294,967,295 messages; shorten the run".into(),
        ));
    }
    Pacer::new(0, cfg.rate).map_err(|e| SetupError(format!("--rate: {e}")))?;
    Ok((padding, compact, measured))
}

/// The publication, and in round-trip mode the subscription to pong's echoes.
fn open<K: Add>(client: &Client, cfg: &PubConfig) -> Result<(Publication<K>, Option<Subscriber>), SetupError> {
    let publisher = K::add(client, &cfg.channel, cfg.stream).map_err(|e| SetupError(e.to_string()))?;
    if cfg.msg_size > publisher.max_payload_length() {
        return Err(SetupError(format!(
            "--msg-size {} is larger than one frame ({} bytes, the most try_claim accepts); use a smaller size \
             or a larger MTU",
            cfg.msg_size,
            publisher.max_payload_length()
        )));
    }
    let pong = match &cfg.pong {
        Some(p) => Some(
            client
                .subscription(&p.channel, p.stream)
                .map_err(|e| SetupError(format!("--pong-channel/--pong-stream: {e}")))?,
        ),
        None => None,
    };
    Ok((publisher, pong))
}

/// Why the run did not start sending.
#[derive(Debug)]
enum NotReady<'a> {
    /// The driver stopped responding (its description).
    DriverLost(String),
    /// Pong's echo publication did not appear within `--wait`.
    NoEcho(&'a PubConfig),
    /// No subscriber within `--wait`.
    NoSubscriber(&'a PubConfig),
    /// SIGINT or SIGTERM arrived while waiting.
    Interrupted,
}

impl std::fmt::Display for NotReady<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotReady::DriverLost(why) => f.write_str(why),
            NotReady::Interrupted => f.write_str("interrupted (SIGINT or SIGTERM) before the run started"),
            NotReady::NoEcho(cfg) => write!(
                f,
                "no echo publication on {} within --wait {:.1} s: the subscriber does not echo; start it with \
                 --mode rtt (same --pong-channel and --pong-stream) or raise --wait",
                cfg.pong.as_ref().map(ToString::to_string).unwrap_or_default(),
                cfg.wait.as_secs_f64()
            ),
            NotReady::NoSubscriber(cfg) => write!(
                f,
                "no subscriber connected to {} stream {} within --wait {:.1} s; start latency-sub first (same \
                 --dir, --channel, --stream) or raise --wait",
                cfg.channel,
                cfg.stream,
                cfg.wait.as_secs_f64()
            ),
        }
    }
}

/// Waits for a subscriber (the hot thread starts only once one is connected), and in round-trip
/// mode for pong's echo publication too.
fn await_subscriber<'a, K: Add>(
    publisher: &Publication<K>,
    pong: Option<&Subscriber>,
    cfg: &'a PubConfig,
    live: &DriverLiveness,
) -> Result<(), NotReady<'a>> {
    let waited = Instant::now();
    while !publisher.is_connected() || pong.is_some_and(|p| !p.is_connected()) {
        if !live.is_active() {
            return Err(NotReady::DriverLost(crate::run::driver_lost(live)));
        }
        if crate::sys::signals::interrupted() {
            return Err(NotReady::Interrupted);
        }
        if waited.elapsed() > cfg.wait {
            return Err(if publisher.is_connected() {
                NotReady::NoEcho(cfg)
            } else {
                NotReady::NoSubscriber(cfg)
            });
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

/// Maps in every page of the logs before measuring (page tables are per process: this thread's
/// work serves the hot one). Returns what it did, for the report.
fn prefault<K: Add>(publisher: &Publication<K>, pong: Option<&Subscriber>, cfg: &PubConfig) -> Vec<String> {
    let mut prefaulted = Vec::new();
    if !cfg.prefault {
        return prefaulted;
    }
    match publisher.prefault() {
        Ok(st) => prefaulted.push(format!("pub stream {} publication: {st}", cfg.stream)),
        Err(e) => prefaulted.push(format!("pub stream {}: not pre-faulted: {e}", cfg.stream)),
    }
    if let (Some(p), Some(path)) = (pong, &cfg.pong) {
        match p.prefault() {
            Ok(st) => prefaulted.push(format!("ping stream {} echo image: {st}", path.stream)),
            Err(e) => prefaulted.push(format!("ping stream {}: not pre-faulted: {e}", path.stream)),
        }
    }
    // The hot thread touches its own (`drive`).
    prefaulted.push(crate::run::stack_prefaulted("pub"));
    prefaulted
}

/// What [`drive`] returns: the hot loop's result, where it ran, and what the subscribers read.
struct Driven {
    sent: Sent,
    core: Option<usize>,
    hot_tid: i32,
    subscriber_lost: Option<SubscriberLost>,
}

/// Runs the hot loop on its pinned thread, samples the subscribers' positions meanwhile, and
/// tells how many a subscriber that went away had read.
fn drive<K: Add>(
    client: Client,
    mut publisher: Publication<K>,
    mut pong: Option<Subscriber>,
    mut monitor: Monitor,
    plan: Plan,
    cfg: &PubConfig,
) -> Result<Driven, SetupError> {
    // Where our messages start in the stream, to tell how many a subscriber that went away
    // had read.
    let start_position = publisher.position().ok();
    let (session, term, frames) = (
        publisher.session_id(),
        publisher.term_length() as i64,
        // A compact run's first message is a full sample.
        crate::run::frames::Frames {
            first: Publication::<K>::frame_length(plan.message_len(0)) as i64,
            rest: Publication::<K>::frame_length(plan.message_len(1)) as i64,
        },
    );
    let (mut idle, prefault) = (cfg.idle.clone(), cfg.prefault);
    let (ready_tx, ready_rx) = crossbeam_channel::bounded::<Monitor>(1);
    // Dropped by the hot thread when it ends (also on a panic): wakes the sampling loop below.
    let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(0);
    let hot = ThreadBuilder::new()
        .name("latency-pub")
        .affinity_opt(cfg.core)
        .spawn(move || {
            let _done = done_tx;
            if prefault {
                crate::sys::thread::prefault_stack();
            }
            let echo = pong.as_mut().map(|sub| {
                let mut st = State::new(None, None, false);
                st.count_faults = false; // this thread's faults are counted by the send loop
                (sub, st)
            });
            let sent = match ready_rx.recv() {
                Ok(m) if m.is_on() => {
                    let on = On::new(m, &plan);
                    hot_loop(&mut publisher, &plan, on, &mut idle, echo)
                }
                _ => hot_loop(&mut publisher, &plan, Off, &mut idle, echo),
            };
            (sent, publisher, pong)
        })
        .map_err(|e| SetupError(format!("--core: {e}")))?;
    monitor.watch_run(hot.tid(), Role::Publisher, None);
    let _ = ready_tx.send(monitor);
    let (core, hot_tid) = (hot.core(), hot.tid());
    // While the hot thread runs: the subscribers' positions every 250 ms (one counters scan;
    // off the hot threads), one wake-up per sample: the hot thread's end disconnects the channel.
    let mut readers = ReaderWatch::default();
    loop {
        readers.sample(&client.subscriber_positions(session, cfg.stream), Instant::now());
        if !matches!(
            done_rx.recv_timeout(Duration::from_millis(250)),
            Err(crossbeam_channel::RecvTimeoutError::Timeout)
        ) {
            break;
        }
    }
    let ended = Instant::now();
    let (sent, publisher, pong) = hot
        .join()
        .map_err(|_| SetupError("the publishing thread panicked".into()))?;
    drop(publisher);
    drop(pong);
    drop(client);
    let subscriber_lost = start_position
        .zip(readers.last)
        .and_then(|(start, last)| subscriber_lost(&sent, (start, last), (frames, term), ended));
    Ok(Driven {
        sent,
        core,
        hot_tid,
        subscriber_lost,
    })
}

/// When the run stopped because its subscriber went away: how many it had read (our stream
/// from `start` to the highest position it reached, `last`, in `frames` on terms of `term`
/// bytes), how many were sent after, and how long it had been silent at `ended`.
fn subscriber_lost(
    sent: &Sent,
    (start, last): (i64, (i64, Instant)),
    (frames, term): (crate::run::frames::Frames, i64),
    ended: Instant,
) -> Option<SubscriberLost> {
    if !sent.stop.as_ref().is_some_and(crate::run::send::Stop::subscriber_lost) {
        return None;
    }
    let (pos, at) = last;
    let read_before = frames.messages_between(start, pos, term).min(sent.sent);
    Some(SubscriberLost {
        read_before,
        sent_after: sent.sent - read_before,
        silent_s: ended.duration_since(at).as_secs_f64(),
    })
}

/// Why the run ended early, in words: the loop's [`Stop`](crate::run::send::Stop), after the
/// driver's description when the driver was lost, with what the subscriber had read when it
/// was the subscriber that went away.
fn incomplete_reason(d: &Driven, live: &DriverLiveness) -> Option<String> {
    let stop = d.sent.stop.as_ref()?;
    let mut why = if stop.driver_lost() {
        format!("{}; {stop}", crate::run::driver_lost(live))
    } else {
        stop.to_string()
    };
    if let Some(l) = &d.subscriber_lost {
        why.push_str(&format!(
            "; it had read {} of the {} messages sent when its position last moved ({:.1} s before the end): {} \
             were sent after that and never read",
            l.read_before, d.sent.sent, l.silent_s, l.sent_after
        ));
    } else if stop.subscriber_lost() {
        why.push_str(&format!(
            "; {} messages sent, no subscriber position was seen to tell how many it read",
            d.sent.sent
        ));
    }
    Some(why)
}

/// The publisher's report (and the round-trip outcome) from what the run did.
fn assemble(
    cfg: &PubConfig,
    mut d: Driven,
    live: &DriverLiveness,
    planned: u64,
    started_at: String,
    prefaulted: Vec<String>,
) -> PubRun {
    let reason = incomplete_reason(&d, live);
    let r = &mut d.sent;
    let measured_sent = r.sent.saturating_sub(cfg.warmup);
    let span_ns = (r.last_measured_ns - r.first_measured_ns).max(0) as f64;
    let rate_achieved = if measured_sent > 1 && span_ns > 0.0 {
        (measured_sent - 1) as f64 * 1e9 / span_ns
    } else {
        0.0
    };
    let mut notes: Vec<String> = aeron_latency::messaging::world_writable_warning(&cfg.dir)
        .into_iter()
        .collect();
    if reason.is_none() && rate_achieved < 0.95 * cfg.rate as f64 && measured_sent > 1 {
        notes.push(format!(
            "target rate not achieved: {rate_achieved:.0} msg/s of {} (largest lag behind schedule {} us); the \
             latency from the intended time includes that delay",
            cfg.rate,
            r.max_lag_ns / 1000
        ));
    }
    let mut rtt = r.rtt.take();
    if let Some(o) = &mut rtt {
        o.explain = cfg.explain;
    }
    let (raw_jitter, jitter) = pub_jitter(cfg, r.jitter.take(), rtt.as_ref());
    let lags = std::mem::take(&mut r.lags);
    PubRun {
        rtt,
        lags,
        report: PubReport {
            schema_version: crate::model::SCHEMA_VERSION,
            sent: r.sent,
            warmup_sent: r.sent.min(cfg.warmup),
            measured_sent,
            planned,
            end_marker_sent: r.end_marker_sent,
            rate_target: cfg.rate as f64,
            rate_achieved,
            offer: r.outcomes.to_map(),
            sent_before_connected: 0,
            subscriber_lost: d.subscriber_lost,
            driver_lost: r.stop.as_ref().is_some_and(crate::run::send::Stop::driver_lost),
            publication: cfg.publication,
            max_lag_ns: r.max_lag_ns,
            plant_delay_ns: cfg.plant_delay_ns,
            publish_cost_ns: Stats::from_histogram(&r.cost),
            publish_cost_histogram: (!r.cost.is_empty()).then(|| crate::model::encode(&r.cost)),
            offer_returned_ns: Stats::from_histogram(&r.returned),
            offer_returned_histogram: (!r.returned.is_empty()).then(|| crate::model::encode(&r.returned)),
            schedule_start_ns: (r.schedule_start_ns != 0).then_some(r.schedule_start_ns),
            msg_size: cfg.msg_size as u64,
            duration_s: span_ns / 1e9,
            complete: reason.is_none() && r.end_marker_sent,
            incomplete_reason: reason,
            notes,
            core: d.core,
            hot_tid: d.hot_tid,
            env: Env::detect(),
            timing_model: TIMING_MODEL.to_owned(),
            tool: Tool::this(),
            started_at,
            jitter,
            raw_jitter,
            faults_measured: r.faults_measured,
            prefaulted,
        },
    }
}

/// The publisher's jitter section from its hot thread's counters (`side`), and the raw
/// material latency-probe combines with the subscriber's: ping's slowest round trips, in
/// round-trip mode.
fn pub_jitter(
    cfg: &PubConfig,
    side: Option<crate::model::JitterSide>,
    rtt: Option<&SubOutcome>,
) -> (Option<RawJitter>, Option<crate::model::JitterReport>) {
    let raw_jitter = side.map(|side| RawJitter {
        side,
        // Ping's slowest round trips (one-way: the subscriber keeps the slowest samples).
        slow: rtt.map(|o| o.slow.clone()).unwrap_or_default(),
        sampled: rtt.map(|o| o.sampled.clone()).unwrap_or_default(),
        idle: cfg.idle.to_string(),
        delivery_channel: false,
        hot_path_lock: false,
        driver_on_path: crate::run::driver_on_path(&cfg.channel, cfg.pong.as_ref()),
    });
    let jitter = raw_jitter.as_ref().map(|raw| {
        let ctx = crate::analysis::verdict::Context {
            sub_idle: None,
            pub_idle: Some(cfg.idle.clone()),
            tail_threshold_ns: u64::MAX,
            cores: aeron_latency::messaging::available_cores().len(),
            driver_on_path: raw.driver_on_path,
            ..Default::default()
        };
        let skipped = crate::analysis::jitter::Hiccup::Skipped("skipped: latency-pub alone does not run it".into());
        crate::analysis::jitter::build(&[&raw.side], &[], &[], &skipped, &ctx).0
    });
    (raw_jitter, jitter)
}

/// What a publisher run produced: its report and, in round-trip mode, the echoes ping timed
/// (made into a report by [`rtt_report`]).
#[derive(Debug)]
pub struct PubRun {
    /// The publisher's report (what `latency-pub --json` writes).
    pub report: PubReport,
    /// Round-trip mode: the echoes ping received and timed.
    pub rtt: Option<SubOutcome>,
    /// With [`PubConfig::keep_lags`]: each measured message's actual send time less its
    /// intended one, ns, in send order (empty otherwise).
    pub lags: Vec<u32>,
}

impl From<PubReport> for PubRun {
    fn from(report: PubReport) -> PubRun {
        PubRun {
            report,
            rtt: None,
            lags: Vec::new(),
        }
    }
}

/// Round-trip mode: the report of ping's round trips (percentiles, groups, accounting of the
/// echoes) with ping's publishing side merged in and its jitter analysed, or `None` when `r`
/// is not from a round-trip run.
#[must_use]
pub fn rtt_report(run: &PubRun, env: crate::model::Env) -> Option<crate::model::Report> {
    let out = run.rtt.as_ref()?;
    let r = &run.report;
    let mut report = crate::run::subscriber::to_report(out, env, r.msg_size);
    report.mode = crate::model::RunMode::Rtt;
    // Ping's receiving is its sending thread: its faults are the publisher's (pong's come
    // from latency-sub).
    report.faults.subscriber = None;
    report.timing_model = crate::sys::clock::RTT_TIMING_MODEL.to_owned();
    report.tool = Tool::this();
    report.started_at.clone_from(&r.started_at);
    let kind = report.env.driver_kind.clone();
    let version = report.env.driver_version.clone();
    let mut publ = r.clone();
    publ.jitter = None;
    let mut report = crate::report::build::combine(report, Some(publ), kind == crate::model::DRIVER_EMBEDDED, &version);
    if let Some(raw) = &r.raw_jitter {
        let skipped = crate::analysis::jitter::Hiccup::Skipped("skipped: latency-pub alone does not run it".into());
        crate::report::build::attach(&mut report, raw, None, &skipped, out.explain);
    }
    Some(report)
}

fn failed_report(cfg: &PubConfig, planned: u64, started_at: String, reason: String) -> PubReport {
    PubReport {
        schema_version: crate::model::SCHEMA_VERSION,
        sent: 0,
        warmup_sent: 0,
        measured_sent: 0,
        planned,
        end_marker_sent: false,
        rate_target: cfg.rate as f64,
        rate_achieved: 0.0,
        offer: OfferTally::default().to_map(),
        sent_before_connected: 0,
        subscriber_lost: None,
        driver_lost: false,
        publication: cfg.publication,
        max_lag_ns: 0,
        plant_delay_ns: cfg.plant_delay_ns,
        publish_cost_ns: Stats::default(),
        publish_cost_histogram: None,
        offer_returned_ns: Stats::default(),
        offer_returned_histogram: None,
        schedule_start_ns: None,
        msg_size: cfg.msg_size as u64,
        duration_s: 0.0,
        complete: false,
        incomplete_reason: Some(reason),
        notes: Vec::new(),
        core: None,
        hot_tid: 0,
        env: Env::detect(),
        timing_model: TIMING_MODEL.to_owned(),
        tool: Tool::this(),
        started_at,
        jitter: None,
        raw_jitter: None,
        faults_measured: None,
        prefaulted: Vec::new(),
    }
}
