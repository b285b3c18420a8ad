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

use crate::measure::histogram::new_latency_histogram;
use crate::measure::histogram::record_saturating;
use crate::measure::monitor::Monitor;
use crate::model::Env;
use crate::model::JitterSide;
use crate::model::PubReport;
use crate::model::RawJitter;
use crate::model::Role;
use crate::model::StallLog;
use crate::model::Stats;
use crate::model::SubscriberLost;
use crate::model::Tool;
use crate::model::GROUPS;
use crate::model::OFFER_OUTCOMES;
use crate::run::receive::State;
use crate::run::receive::SubOutcome;
use crate::run::SetupError;
use crate::sys::clock::now_ns;
use crate::sys::clock::TIMING_MODEL;
use crate::sys::pacing::Pacer;
use crate::units::utc_timestamp;
use aeron_latency::messaging::{
    DriverLiveness, IdleStrategy, MessageHeader, OfferError, Publisher, Subscriber, ThreadBuilder,
};
use aeron_latency::wire::{self, Kind, Sample};
use hdrhistogram::Histogram;
use std::path::PathBuf;
use std::time::{Duration, Instant};

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
}

/// How many whole messages of `frame` bytes fit between stream positions `start` and `pos`
/// in terms of `term` bytes (a message that does not fit in the rest of a term is preceded
/// by a padding frame that fills it).
#[must_use]
pub fn messages_between(start: i64, pos: i64, term: i64, frame: i64) -> u64 {
    if frame <= 0 || term <= 0 || pos <= start {
        return 0;
    }
    let (mut cur, mut n) = (start, 0u64);
    while cur < pos {
        let offset = cur.rem_euclid(term);
        let term_end = cur - offset + term;
        if pos >= term_end {
            n += ((term - offset) / frame) as u64;
            cur = term_end;
        } else {
            n += ((pos - cur) / frame) as u64;
            break;
        }
    }
    n
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

struct HotResult {
    sent: u64,
    end_marker_sent: bool,
    outcomes: [u64; OFFER_OUTCOMES.len()],
    max_lag_ns: u64,
    cost: Histogram<u64>,
    first_measured_ns: i64,
    last_measured_ns: i64,
    abort: Option<String>,
    jitter: Option<JitterSide>,
    rtt: Option<SubOutcome>,
    faults_at_start: Option<u64>,
    faults_measured: Option<u64>,
    /// The run stopped because the subscriber went away (not connected, or back-pressure
    /// that never cleared).
    subscriber_lost: bool,
    /// The run stopped because the driver stopped responding.
    driver_lost: bool,
}

fn outcome_index(e: &OfferError) -> usize {
    OFFER_OUTCOMES
        .iter()
        .position(|n| *n == e.name())
        .unwrap_or(OFFER_OUTCOMES.len() - 1)
}

/// Runs the publisher: waits for a subscriber, sends warm-up + measured messages on schedule,
/// then the end marker. Returns its report even when the run stopped early (marked incomplete).
///
/// # Errors
/// [`SetupError`] when the driver, publication, message size or core is unusable.
pub fn run(cfg: &PubConfig) -> Result<PubRun, SetupError> {
    let started_at = utc_timestamp(std::time::SystemTime::now());
    let padding = wire::padding_for_size(cfg.msg_size).map_err(|e| SetupError(format!("--msg-size: {e}")))?;
    let measured = (cfg.duration_s * cfg.rate as f64).round() as u64;
    let planned_total = cfg.warmup + measured;
    if measured > u64::from(u32::MAX) || cfg.warmup > u64::from(u32::MAX) {
        return Err(SetupError(
            "--duration x --rate plans more than 4,294,967,295 messages; shorten the run".into(),
        ));
    }
    Pacer::new(0, cfg.rate).map_err(|e| SetupError(format!("--rate: {e}")))?;
    let mut monitor = Monitor::new(cfg.diagnostics).map_err(SetupError)?;

    let client = crate::run::connect(&cfg.dir)?;
    let mut publisher = client
        .publication(&cfg.channel, cfg.stream)
        .map_err(|e| SetupError(e.to_string()))?;
    if cfg.msg_size > publisher.max_payload_length() {
        return Err(SetupError(format!(
            "--msg-size {} is larger than one frame ({} bytes, the most try_claim accepts); use a smaller size \
             or a larger MTU",
            cfg.msg_size,
            publisher.max_payload_length()
        )));
    }

    let mut pong = match &cfg.pong {
        Some(p) => Some(
            client
                .subscription(&p.channel, p.stream)
                .map_err(|e| SetupError(format!("--pong-channel/--pong-stream: {e}")))?,
        ),
        None => None,
    };

    // Wait for a subscriber (the hot thread starts only once one is connected), and in
    // round-trip mode for pong's echo publication too.
    let live = client.liveness();
    let waited = Instant::now();
    while !publisher.is_connected() || pong.as_ref().is_some_and(|p| !p.is_connected()) {
        if !live.is_active() {
            let mut r = failed_report(cfg, planned_total, started_at, live.describe());
            r.driver_lost = true;
            return Ok(PubRun::from(r));
        }
        if waited.elapsed() > cfg.wait {
            return Ok(PubRun::from(failed_report(
                cfg,
                planned_total,
                started_at,
                if publisher.is_connected() {
                    format!(
                        "no echo publication on {} within --wait {:.1} s: the subscriber does not echo; start it with \
                         --mode rtt (same --pong-channel and --pong-stream) or raise --wait",
                        cfg.pong.as_ref().map(ToString::to_string).unwrap_or_default(),
                        cfg.wait.as_secs_f64()
                    )
                } else {
                    format!(
                        "no subscriber connected to {} stream {} within --wait {:.1} s; start latency-sub first (same \
                         --dir, --channel, --stream) or raise --wait",
                        cfg.channel,
                        cfg.stream,
                        cfg.wait.as_secs_f64()
                    )
                },
            )));
        }
        std::thread::sleep(Duration::from_millis(1));
    }

    // Map in every page of the logs before measuring (page tables are per process: this thread's
    // work serves the hot one).
    let mut prefaulted = Vec::new();
    match publisher.prefault() {
        Ok(st) => prefaulted.push(format!("pub stream {} publication: {st}", cfg.stream)),
        Err(e) => prefaulted.push(format!("pub stream {}: not pre-faulted: {e}", cfg.stream)),
    }
    if let (Some(p), Some(path)) = (&pong, &cfg.pong) {
        match p.prefault() {
            Ok(st) => prefaulted.push(format!("ping stream {} echo image: {st}", path.stream)),
            Err(e) => prefaulted.push(format!("ping stream {}: not pre-faulted: {e}", path.stream)),
        }
    }
    let (warmup, rate, wait, publisher_id, mut idle) =
        (cfg.warmup, cfg.rate, cfg.wait, cfg.publisher_id, cfg.idle.clone());
    // Where our messages start in the stream, to tell how many a subscriber that went away
    // had read.
    let start_position = publisher.position().ok();
    let (session, term, frame) = (
        publisher.session_id(),
        publisher.term_length() as i64,
        Publisher::frame_length(wire::encoded_len(padding)) as i64,
    );
    let live_hot = live.clone();
    let (ready_tx, ready_rx) = crossbeam_channel::bounded::<Monitor>(1);
    // Dropped by the hot thread when it ends (also on a panic): wakes the sampling loop below.
    let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(0);
    let hot = ThreadBuilder::new()
        .name("latency-pub")
        .affinity_opt(cfg.core)
        .spawn(move || {
            let _done = done_tx;
            let monitor = ready_rx.recv().ok();
            let echo = pong.as_mut().map(|sub| {
                let mut st = State::new(None, None, false);
                st.count_faults = false; // this thread's faults are counted by the send loop
                (sub, st)
            });
            let r = hot_loop(
                &mut publisher,
                Plan {
                    warmup,
                    measured,
                    rate,
                    padding,
                    wait,
                    publisher_id,
                    live: live_hot,
                },
                monitor,
                &mut idle,
                echo,
            );
            (r, publisher, pong)
        })
        .map_err(|e| SetupError(format!("--core: {e}")))?;
    monitor.watch_run(hot.tid(), Role::Publisher, None);
    let _ = ready_tx.send(monitor);
    let (core, hot_tid) = (hot.core(), hot.tid());
    // While the hot thread runs: the subscribers' positions every 250 ms (one counters scan;
    // off the hot threads).
    // One wake-up per sample: the hot thread's end disconnects the channel.
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
    let (mut r, publisher, pong) = hot
        .join()
        .map_err(|_| SetupError("the publishing thread panicked".into()))?;
    drop(publisher);
    drop(pong);
    drop(client);

    let subscriber_lost = match (r.subscriber_lost, start_position, readers.last) {
        (true, Some(start), Some((pos, at))) => {
            let read_before = messages_between(start, pos, term, frame).min(r.sent);
            Some(SubscriberLost {
                read_before,
                sent_after: r.sent - read_before,
                silent_s: ended.duration_since(at).as_secs_f64(),
            })
        }
        _ => None,
    };
    if r.driver_lost {
        r.abort = Some(match r.abort.take() {
            Some(at) => format!("{}; {at}", live.describe()),
            None => live.describe(),
        });
    }
    if let (Some(l), Some(why)) = (&subscriber_lost, &mut r.abort) {
        why.push_str(&format!(
            "; it had read {} of the {} messages sent when its position last moved ({:.1} s before the end): {} \
             were sent after that and never read",
            l.read_before, r.sent, l.silent_s, l.sent_after
        ));
    } else if let (true, Some(why)) = (r.subscriber_lost, &mut r.abort) {
        why.push_str(&format!(
            "; {} messages sent, no subscriber position was seen to tell how many it read",
            r.sent
        ));
    }
    let measured_sent = r.sent.saturating_sub(warmup);
    let span_ns = (r.last_measured_ns - r.first_measured_ns).max(0) as f64;
    let rate_achieved = if measured_sent > 1 && span_ns > 0.0 {
        (measured_sent - 1) as f64 * 1e9 / span_ns
    } else {
        0.0
    };
    let mut notes: Vec<String> = aeron_latency::messaging::world_writable_warning(&cfg.dir)
        .into_iter()
        .collect();
    if r.abort.is_none() && rate_achieved < 0.95 * cfg.rate as f64 && measured_sent > 1 {
        notes.push(format!(
            "target rate not achieved: {rate_achieved:.0} msg/s of {} (largest lag behind schedule {} us); the \
             latency from the intended time includes that delay",
            cfg.rate,
            r.max_lag_ns / 1000
        ));
    }
    let offer = OFFER_OUTCOMES
        .iter()
        .zip(r.outcomes)
        .map(|(k, v)| ((*k).to_owned(), v))
        .collect();
    let rtt = r.rtt.take();
    let raw_jitter = r.jitter.map(|side| RawJitter {
        side,
        // Ping's slowest round trips (one-way: the subscriber keeps the slowest samples).
        slow: rtt.as_ref().map(|o| o.slow.clone()).unwrap_or_default(),
        idle: cfg.idle.to_string(),
        delivery_channel: false,
        hot_path_lock: false,
    });
    let jitter = raw_jitter.as_ref().map(|raw| {
        let ctx = crate::analysis::verdict::Context {
            sub_idle: String::new(),
            pub_idle: Some(raw.idle.clone()),
            tail_threshold_ns: u64::MAX,
            cores: aeron_latency::messaging::available_cores().len(),
            ..Default::default()
        };
        let skipped = crate::analysis::jitter::Hiccup::Skipped("skipped: latency-pub alone does not run it".into());
        crate::analysis::jitter::build(&[&raw.side], &[], &skipped, &ctx).0
    });
    Ok(PubRun {
        rtt,
        report: PubReport {
            sent: r.sent,
            warmup_sent: r.sent.min(warmup),
            measured_sent,
            planned: planned_total,
            end_marker_sent: r.end_marker_sent,
            rate_target: cfg.rate as f64,
            rate_achieved,
            offer,
            sent_before_connected: 0,
            subscriber_lost,
            driver_lost: r.driver_lost,
            max_lag_ns: r.max_lag_ns,
            publish_cost_ns: Stats::from_histogram(&r.cost),
            msg_size: cfg.msg_size as u64,
            duration_s: span_ns / 1e9,
            complete: r.abort.is_none() && r.end_marker_sent,
            incomplete_reason: r.abort,
            notes,
            core,
            hot_tid,
            env: Env::detect(),
            timing_model: TIMING_MODEL.to_owned(),
            tool: Tool::this(),
            started_at,
            jitter,
            raw_jitter,
            faults_measured: r.faults_measured,
            prefaulted,
        },
    })
}

/// What a publisher run produced: its report and, in round-trip mode, the echoes ping timed
/// (made into a report by [`rtt_report`]).
#[derive(Debug)]
pub struct PubRun {
    /// The publisher's report (what `latency-pub --json` writes).
    pub report: PubReport,
    /// Round-trip mode: the echoes ping received and timed.
    pub rtt: Option<SubOutcome>,
}

impl From<PubReport> for PubRun {
    fn from(report: PubReport) -> PubRun {
        PubRun { report, rtt: None }
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
        crate::report::build::attach(&mut report, raw, None, &skipped);
    }
    Some(report)
}

fn failed_report(cfg: &PubConfig, planned: u64, started_at: String, reason: String) -> PubReport {
    PubReport {
        sent: 0,
        warmup_sent: 0,
        measured_sent: 0,
        planned,
        end_marker_sent: false,
        rate_target: cfg.rate as f64,
        rate_achieved: 0.0,
        offer: OFFER_OUTCOMES.iter().map(|k| ((*k).to_owned(), 0)).collect(),
        sent_before_connected: 0,
        subscriber_lost: None,
        driver_lost: false,
        max_lag_ns: 0,
        publish_cost_ns: Stats::default(),
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

/// What the hot loop sends.
struct Plan {
    warmup: u64,
    measured: u64,
    rate: u64,
    padding: usize,
    wait: Duration,
    publisher_id: u32,
    live: DriverLiveness,
}

impl Plan {
    /// First measured message of group `g` (the recorder's formula: m belongs to g iff
    /// g * measured <= m * GROUPS < (g + 1) * measured).
    fn group_start(&self, g: usize) -> u64 {
        self.warmup + (g as u128 * u128::from(self.measured)).div_ceil(GROUPS as u128) as u64
    }
}

fn hot_loop(
    publisher: &mut Publisher,
    plan: Plan,
    mut monitor: Option<Monitor>,
    idle: &mut IdleStrategy,
    mut echo: Option<(&mut Subscriber, State)>,
) -> HotResult {
    let Plan {
        warmup,
        measured,
        rate,
        padding,
        wait,
        publisher_id,
        ref live,
    } = plan;
    let total = warmup + measured;
    let diag = monitor.as_ref().is_some_and(Monitor::is_on);
    let mut stalls =
        diag.then(|| StallLog::new(crate::measure::monitor::STALL_THRESHOLD_NS, crate::model::STALLS_LOGGED));
    let sleeps = matches!(idle.alias(), "backoff" | "sleep-ns");
    let mut last_busy = publisher.busy_count();
    let mut lock_waits = diag.then(|| {
        StallLog::new(
            crate::measure::monitor::LOCK_WAIT_THRESHOLD_NS,
            crate::model::STALLS_LOGGED,
        )
    });
    // With diagnostics off there is no boundary to watch for.
    let mut next_group = 0;
    let mut next_boundary = if diag { plan.group_start(0) } else { u64::MAX };
    let len = wire::encoded_len(padding);
    let mut r = HotResult {
        sent: 0,
        end_marker_sent: false,
        outcomes: [0; OFFER_OUTCOMES.len()],
        max_lag_ns: 0,
        cost: new_latency_histogram(),
        first_measured_ns: 0,
        last_measured_ns: 0,
        abort: None,
        jitter: None,
        rtt: None,
        faults_at_start: None,
        faults_measured: None,
        subscriber_lost: false,
        driver_lost: false,
    };
    let ok = OFFER_OUTCOMES.iter().position(|n| *n == "ok").unwrap_or(0);
    // Start a little ahead so the first intended time is in the future.
    let pacer = Pacer::new(now_ns() + 1_000_000, rate).expect("rate validated before");
    let mut sample = Sample {
        seq: 0,
        intended_ns: 0,
        sent_ns: 0,
        publisher_id,
        kind: Kind::Warmup,
        warmup: warmup as u32,
        planned: measured as u32,
    };
    let mut after_commit: Option<i64> = None;
    'messages: for i in 0..total {
        let intended = pacer.intended_ns(i);
        let mut now = pacer.wait_until(i, || {
            let t = after_commit.take().unwrap_or_else(now_ns);
            if let Some(s) = &mut stalls {
                s.tick(t);
            }
            t
        });
        let mut failing_since: Option<i64> = None;
        let mut busy_since: Option<i64> = None;
        loop {
            if failing_since.is_some() && lock_waits.is_some() && publisher.busy_count() != last_busy {
                // The last failure was aeron-rs's conductor holding the publication lock (not
                // one of Aeron's own admin actions).
                last_busy = publisher.busy_count();
                busy_since.get_or_insert(now);
            }
            match publisher.try_claim(len) {
                Ok(mut claim) => {
                    sample.seq = i;
                    sample.intended_ns = intended;
                    sample.sent_ns = now;
                    sample.kind = if i < warmup { Kind::Warmup } else { Kind::Measured };
                    match wire::encode_into(claim.buffer_mut(), &sample, padding) {
                        Ok(_) => claim.commit(),
                        Err(e) => {
                            claim.abort();
                            r.abort = Some(format!("could not encode message {i}: {e}"));
                            break 'messages;
                        }
                    }
                    if echo.is_some() {
                        if let (Some(log), Some(start)) = (&mut lock_waits, busy_since.take()) {
                            // Ping: the lock wait ends with the claim, not with the echo.
                            log.interval(start, now_ns() - start);
                        }
                    }
                    let t = match &mut echo {
                        // Ping: no extra clock read inside the round trip; the echo's receive
                        // reading ends it and starts the next pacing wait.
                        Some((sub, st)) => match await_echo(sub, st, i, now, wait, idle, sleeps, &mut stalls, live) {
                            Ok(at) => at,
                            Err(why) => {
                                r.driver_lost = !live.is_active();
                                r.abort = Some(why);
                                r.outcomes[ok] += 1;
                                r.sent = i + 1;
                                break 'messages;
                            }
                        },
                        None => {
                            let t = now_ns();
                            record_saturating(&mut r.cost, (t - now).max(0) as u64);
                            t
                        }
                    };
                    if let (Some(log), Some(start)) = (&mut lock_waits, busy_since) {
                        log.interval(start, t - start);
                    }
                    after_commit = Some(t);
                    r.outcomes[ok] += 1;
                    r.sent = i + 1;
                    r.max_lag_ns = r.max_lag_ns.max((now - intended).max(0) as u64);
                    if i == warmup {
                        r.first_measured_ns = now;
                        // Once per run: one getrusage syscall (the next pacing wait reads the
                        // clock afresh, so it does not delay the next message's stamp).
                        r.faults_at_start = crate::sys::thread::thread_faults();
                        after_commit = None;
                    }
                    r.last_measured_ns = now;
                    if !live.is_active() {
                        // One atomic load per message, after its readings.
                        r.driver_lost = true;
                        r.abort = Some(format!("stopped at message {i} ({} sent)", i + 1));
                        break 'messages;
                    }
                    if i >= next_boundary {
                        // Group boundary: read the counters (never per message).
                        if let Some(m) = &mut monitor {
                            while next_group < GROUPS && i >= plan.group_start(next_group) {
                                next_group += 1;
                            }
                            m.snapshot(next_group - 1);
                        }
                        next_boundary = if next_group < GROUPS {
                            plan.group_start(next_group)
                        } else {
                            u64::MAX
                        };
                        if let Some(s) = &mut stalls {
                            s.restart(now_ns());
                        }
                        after_commit = None;
                    }
                    break;
                }
                Err(e) => {
                    r.outcomes[outcome_index(&e)] += 1;
                    if !live.is_active() {
                        r.driver_lost = true;
                        r.abort = Some(format!("stopped at message {i} ({i} sent)"));
                        break 'messages;
                    }
                    if !e.is_retryable() {
                        r.abort = Some(format!("publishing stopped at message {i}: {e}"));
                        break 'messages;
                    }
                    now = now_ns();
                    if let Some(s) = &mut stalls {
                        // Retrying is the loop running, not a stall (back-pressure and the
                        // other outcomes are counted in `offer`).
                        s.tick(now);
                    }
                    let since = *failing_since.get_or_insert(now);
                    if e == OfferError::NotConnected && now - since > wait.as_nanos() as i64 {
                        r.abort = Some(format!(
                            "the subscriber went away: not connected for {:.1} s at message {i}",
                            wait.as_secs_f64()
                        ));
                        r.subscriber_lost = true;
                        break 'messages;
                    }
                    if now - since > 2 * wait.as_nanos() as i64 {
                        r.abort = Some(format!(
                            "back-pressure never cleared: {:.1} s at message {i}; the subscriber stopped reading",
                            (now - since) as f64 / 1e9
                        ));
                        r.subscriber_lost = true;
                        break 'messages;
                    }
                    idle.idle_once();
                    if sleeps {
                        if let Some(s) = &mut stalls {
                            s.restart(now_ns());
                        }
                    }
                }
            }
        }
    }
    if r.first_measured_ns == 0 {
        r.first_measured_ns = r.last_measured_ns;
    }
    // The measured period ends here; the end marker goes out before the (slower) drain of the
    // switch records, so the subscriber's period ends with the last message too.
    r.faults_measured = r
        .faults_at_start
        .and_then(|a| Some(crate::sys::thread::thread_faults()?.saturating_sub(a)));
    if let Some(m) = &mut monitor {
        m.snapshot(GROUPS);
    }
    // End marker: seq = number sent. Retry for up to `wait`.
    let end = Sample {
        seq: r.sent,
        intended_ns: now_ns(),
        sent_ns: now_ns(),
        publisher_id,
        kind: Kind::End,
        warmup: warmup as u32,
        planned: measured as u32,
    };
    let deadline = Instant::now() + wait;
    // Not when the driver or the subscriber is gone: nobody would read it.
    while !r.driver_lost && !r.subscriber_lost && Instant::now() < deadline {
        match publisher.try_claim(len) {
            Ok(mut claim) => {
                if wire::encode_into(claim.buffer_mut(), &end, padding).is_ok() {
                    claim.commit();
                    r.end_marker_sent = true;
                }
                break;
            }
            Err(e) if e.is_retryable() => std::thread::sleep(Duration::from_micros(50)),
            Err(_) => break,
        }
    }
    r.jitter = monitor
        .map(|mut m| {
            if let Some(s) = stalls.take() {
                m.set_stalls(crate::sys::thread::current_tid(), s);
            }
            if let Some(l) = lock_waits.take() {
                m.set_lock_waits(crate::sys::thread::current_tid(), l);
            }
            m.finish()
        })
        .filter(|j| j.source.name != "off");
    r.rtt = echo.map(|(_, mut st)| {
        // Ping knows its own count; the echo of the end marker is not awaited.
        st.set_end(r.sent);
        st.finish(r.abort.clone())
    });
    r
}

/// Ping: polls the pong stream until the echo of message `seq` arrives; returns the receive
/// reading the [`State`] took for it. Every echo that arrives is recorded (a late echo of an
/// earlier message too: it counts as reordered). Gives up after `wait` without it.
#[allow(
    clippy::too_many_arguments,
    reason = "the hot loop's state, passed by reference to stay inline"
)]
#[inline]
fn await_echo(
    sub: &mut Subscriber,
    st: &mut State,
    seq: u64,
    sent: i64,
    wait: Duration,
    idle: &mut IdleStrategy,
    sleeps: bool,
    stalls: &mut Option<StallLog>,
    live: &DriverLiveness,
) -> Result<i64, String> {
    let mut polls: u32 = 0;
    loop {
        polls = polls.wrapping_add(1);
        let n = sub.poll(&mut |bytes: &[u8], _h: &MessageHeader| st.on_message(bytes), 16);
        if let Some((last, at)) = st.last {
            if last == seq {
                if let Some(s) = stalls {
                    s.tick(at);
                }
                idle.reset();
                return Ok(at);
            }
        }
        // The clock every 4,096 polls (every poll when the idle strategy sleeps anyway).
        if (sleeps || polls.is_multiple_of(4096)) && !live.is_active() {
            return Err(format!("stopped waiting for the echo of message {seq}"));
        }
        if (sleeps || polls.is_multiple_of(4096)) && now_ns() - sent > wait.as_nanos() as i64 {
            return Err(format!(
                "no echo of message {seq} within --wait {:.1} s: pong (latency-sub --mode rtt) stopped echoing or \
                 uses another --pong-channel/--pong-stream",
                wait.as_secs_f64()
            ));
        }
        if n > 0 {
            continue;
        }
        if let Some(s) = stalls {
            // Waiting for the echo is the loop running, not a stall.
            s.tick(now_ns());
        }
        idle.idle(0);
        if sleeps {
            if let Some(s) = stalls {
                s.restart(now_ns());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::messages_between;

    #[test]
    fn messages_between_counts_whole_frames_and_skips_the_padding_at_each_term_end() {
        // 1,000-byte terms, 160-byte frames: 6 per term (960 B), 40 B of padding.
        let (t, f) = (1_000, 160);
        assert_eq!(messages_between(0, 0, t, f), 0);
        assert_eq!(messages_between(0, 159, t, f), 0, "a frame not yet whole");
        assert_eq!(messages_between(0, 160, t, f), 1);
        assert_eq!(messages_between(0, 960, t, f), 6);
        assert_eq!(messages_between(0, 1_000, t, f), 6, "the padding holds no message");
        assert_eq!(messages_between(0, 1_160, t, f), 7, "the next term starts with a frame");
        assert_eq!(messages_between(0, 3_000, t, f), 18, "three whole terms");
        // Starting mid-term (a publication joined at 480): 3 more fit in the first term.
        assert_eq!(messages_between(480, 1_000, t, f), 3);
        assert_eq!(messages_between(480, 1_320, t, f), 5);
        // Nothing for a position at or before the start, or a nonsense geometry.
        assert_eq!(messages_between(500, 400, t, f), 0);
        assert_eq!(messages_between(0, 1_000, 0, f), 0);
        assert_eq!(messages_between(0, 1_000, t, 0), 0);
        // A frame that divides the term: no padding.
        assert_eq!(messages_between(0, 4_096, 1_024, 32), 128);
    }
}
