//! `latency-probe stages` (seed 004): one run timed at each durability stage, per archive sync
//! level: the offer returned (one-way), latency-sub received the message, latency-pub got its
//! echo back (`--mode rtt`), Aeron Archive A recorded it, and (with `--replicate`) archive B
//! replicated it.
//!
//! # Guarantees
//! - Each sync level runs with fresh archives ([`crate::run::archive`]): archive A records the
//!   probe's stream from its own media driver, which latency-pub and latency-sub use (`--dir`);
//!   archive B, with its own driver, replicates A's recording live. Both are stopped and their
//!   directories removed after the run, on every path ([`ArchiveProcess`]'s drop).
//! - A watcher thread in this process reads each archive's recording position counter from its
//!   driver's `cnc.dat`, sleeping between reads (it never spins: on a machine whose cores the
//!   hot threads take, a spinning watcher would be the jitter). It logs each position change
//!   with its time into memory allocated before the run. Its resolution (the gaps between its
//!   reads) and its CPU time are measured and reported.
//! - Every measured message is timed at every stage from its intended send time (latency-pub
//!   reports its schedule) and from its actual send time (latency-pub logs each message's lag
//!   behind the schedule, `--send-lags`); a stage that did not time every measured message on
//!   both bases makes the run incomplete, and says how many it missed.

use crate::measure::histogram::{new_latency_histogram, record_saturating};
use crate::model::{Stage, StageTiming, StagesReport, Stats, SyncRun, Watcher, STAGES_TIMING_MODEL};
use crate::run::archive::{ArchiveError, ArchiveProcess, ArchiveSpec, Java, AERON_JAR_VERSION};
use crate::run::frames::Frames;
use crate::run::trial::{Place, Trial};
use crate::sys::clock::now_ns;
use aeron_latency::messaging::CncCounters;
use hdrhistogram::Histogram;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Aeron Archive's counter type for a recording's position (`RecordingPos`).
pub const RECORDING_POSITION_TYPE_ID: i32 = 100;

/// Position changes the watcher can log per archive (16 bytes each).
pub const WATCH_LOG: usize = 4_000_000;

/// How long the watcher keeps reading after the run for the archives to catch up.
pub const CATCH_UP: Duration = Duration::from_secs(10);

/// What `stages` runs.
#[derive(Debug, Clone)]
pub struct StagesPlan {
    /// The run (its driver is replaced by archive A's).
    pub trial: Trial,
    /// Sync levels, one run each, in order.
    pub syncs: Vec<u8>,
    /// Add archive B, replicating A's recording live.
    pub replicate: bool,
    /// The Java pieces.
    pub java: Java,
    /// Archive A's control port; A's replication port is the next, B's two follow.
    pub control_port: u16,
    /// Where the archives' directories go (`--archive-dir`).
    pub archive_dir: PathBuf,
    /// What the watcher sleeps between reads.
    pub watch_sleep: Duration,
    /// The archives' drivers' IPC term length.
    pub term_length: usize,
}

/// One archive's position log.
#[derive(Debug, Default)]
struct PositionLog {
    points: Vec<(i64, i64)>,
    overflow: u64,
}

/// What the watcher hands back.
#[derive(Debug)]
struct Watched {
    logs: Vec<PositionLog>,
    gaps: Histogram<u64>,
    reads: u64,
    cpu_ns: u64,
}

/// Reads the recording position counter of each archive's driver until `stop` and every
/// position reached `until` (or [`CATCH_UP`] after `stop`, or an archive reported a failure:
/// `failed`, then nothing more will be recorded).
fn watch(
    dirs: Vec<PathBuf>,
    sleep: Duration,
    stop: Arc<AtomicBool>,
    until: Arc<AtomicI64>,
    failed: impl Fn() -> bool,
) -> Watched {
    let mut logs: Vec<PositionLog> = dirs
        .iter()
        .map(|_| PositionLog {
            points: Vec::with_capacity(WATCH_LOG),
            overflow: 0,
        })
        .collect();
    for l in &mut logs {
        crate::measure::histogram::pretouch(&mut l.points);
    }
    let counters: Vec<Option<CncCounters>> = dirs.iter().map(|d| CncCounters::open(d)).collect();
    let mut ids: Vec<Option<i32>> = vec![None; dirs.len()];
    let mut last: Vec<i64> = vec![i64::MIN; dirs.len()];
    let mut gaps = new_latency_histogram();
    let (mut reads, mut prev) = (0_u64, now_ns());
    let mut stopped_at: Option<i64> = None;
    let mut values: Vec<Option<i64>> = vec![None; dirs.len()];
    loop {
        // The replica first, then the archive it copies: a replica is never ahead of its source,
        // so read in this order the logs can never show B holding a message before A. The clock
        // is read after both: a position is never logged before it was reached.
        for (i, c) in counters.iter().enumerate().rev() {
            let Some(c) = c else { continue };
            if ids[i].is_none() {
                ids[i] = c.find(RECORDING_POSITION_TYPE_ID);
            }
            values[i] = ids[i].map(|id| c.value(id));
        }
        let now = now_ns();
        record_saturating(&mut gaps, (now - prev).max(0) as u64);
        prev = now;
        reads += 1;
        for (i, v) in values.iter().enumerate() {
            let Some(v) = *v else { continue };
            if v != last[i] {
                last[i] = v;
                let log = &mut logs[i];
                if log.points.len() < log.points.capacity() {
                    log.points.push((now, v));
                } else {
                    log.overflow += 1;
                }
            }
        }
        if stop.load(Ordering::Acquire) {
            let at = *stopped_at.get_or_insert(now);
            let target = until.load(Ordering::Acquire);
            let done = last.iter().all(|p| *p >= target);
            if done || now - at > CATCH_UP.as_nanos() as i64 || crate::sys::signals::interrupted() || failed() {
                break;
            }
        }
        std::thread::sleep(sleep);
    }
    Watched {
        logs,
        gaps,
        reads,
        cpu_ns: thread_cpu_ns(),
    }
}

/// CPU time of the calling thread so far, ns (`/proc/thread-self/schedstat`).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// When each of the measured messages `first..first + count` was recorded, from a position log:
/// message `k` is recorded at the first logged time whose position covers its whole frame
/// (`None`: never, within the log, or it lies before `start`, where the recording began).
fn recorded_times(
    log: &PositionLog,
    start: i64,
    first: u64,
    count: u64,
    term: i64,
    frames: Frames,
) -> Vec<Option<i64>> {
    let mut out = Vec::with_capacity(count as usize);
    let mut p = 0;
    for k in first..first + count {
        if frames.end_position(k + 1, term) - frames.of(k) < start {
            out.push(None);
            continue;
        }
        while p < log.points.len() && frames.messages_between(0, log.points[p].1, term) < k + 1 {
            p += 1;
        }
        out.push(log.points.get(p).map(|(t, _)| *t));
    }
    out
}

/// The histogram of `times` from each message's send time (`sent(k)`: intended or actual), and
/// how many were timed.
fn recorded_stage(times: &[Option<i64>], first: u64, sent: impl Fn(u64) -> i64) -> (Histogram<u64>, u64) {
    let mut h = new_latency_histogram();
    let mut timed = 0;
    for (i, t) in times.iter().enumerate() {
        if let Some(t) = t {
            record_saturating(&mut h, (t - sent(first + i as u64)).max(0) as u64);
            timed += 1;
        }
    }
    (h, timed)
}

/// One stage's histograms: from the intended send time, and from the actual one.
struct Timing {
    name: &'static str,
    intended: Histogram<u64>,
    actual: Option<Histogram<u64>>,
}

/// The stages in order, each with its added p50 over the stage it follows
/// ([`stage_follows`](crate::model::stage_follows); on the same basis; none when that stage is
/// not in the run or timed no message) and its Little's-law concurrency.
fn stages_of(timings: &[Timing], rate: f64) -> Vec<Stage> {
    let timed = |h: &Histogram<u64>, before: Option<&StageTiming>| {
        let stats = Stats::from_histogram(h);
        StageTiming {
            count: h.len(),
            latency_ns: stats,
            added_p50_ns: before
                .filter(|b| b.count > 0 && !h.is_empty())
                .map(|b| stats.p50 as i64 - b.latency_ns.p50 as i64),
            in_flight: rate * stats.mean / 1e9,
            histogram: crate::model::encode(h),
        }
    };
    let mut out: Vec<Stage> = Vec::new();
    for t in timings {
        let before = crate::model::stage_follows(t.name).and_then(|f| out.iter().find(|s| s.stage == f));
        let intended = timed(&t.intended, before.map(|p| &p.intended));
        let actual = t
            .actual
            .as_ref()
            .map(|h| timed(h, before.and_then(|p| p.actual.as_ref())));
        out.push(Stage {
            stage: t.name.to_owned(),
            guarantees: crate::model::stage_guarantees(t.name).to_owned(),
            intended,
            actual,
        });
    }
    out
}

/// Why `stages` stopped.
#[derive(Debug)]
pub enum StagesError {
    /// An archive could not start, or died.
    Archive(ArchiveError),
    /// The run itself failed.
    Run(String),
    /// SIGINT or SIGTERM arrived.
    Interrupted,
}

impl std::fmt::Display for StagesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StagesError::Archive(e) => e.fmt(f),
            StagesError::Run(why) => f.write_str(why),
            StagesError::Interrupted => {
                f.write_str("interrupted (SIGINT or SIGTERM): the archives were stopped and their directories removed")
            }
        }
    }
}

impl std::error::Error for StagesError {}

/// Runs every sync level. The report holds every run that finished (a failure stops the rest
/// and comes back with what was measured so far).
pub fn run(plan: &StagesPlan) -> (StagesReport, Option<StagesError>) {
    let mut report = StagesReport {
        runs: Vec::new(),
        timing_model: STAGES_TIMING_MODEL.to_owned(),
        msg_size: plan.trial.msg_size as u64,
        rate: plan.trial.rate,
        archive: format!("Aeron Java ArchivingMediaDriver {AERON_JAR_VERSION}"),
        complete: false,
    };
    let mut failure = None;
    for &sync in &plan.syncs {
        if crate::sys::signals::interrupted() {
            failure = Some(StagesError::Interrupted);
            break;
        }
        match run_one(plan, sync) {
            // What was measured before the signal is kept, marked incomplete.
            Ok((mut r, _)) if crate::sys::signals::interrupted() => {
                r.complete = false;
                r.notes.push("interrupted (SIGINT or SIGTERM) during this run".into());
                report.runs.push(r);
                failure = Some(StagesError::Interrupted);
                break;
            }
            Err(_) if crate::sys::signals::interrupted() => {
                failure = Some(StagesError::Interrupted);
                break;
            }
            Ok((r, None)) => report.runs.push(r),
            Ok((r, Some(e))) => {
                report.runs.push(r);
                failure = Some(e);
                break;
            }
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    // The helper's source and the archives' stderr logs (their last lines are in any error).
    let _ = std::fs::remove_dir_all(work_dir());
    let _ = std::fs::remove_dir_all(archive_root(plan));
    report.complete = failure.is_none() && report.runs.iter().all(|r| r.complete);
    (report, failure)
}

/// Where the archives' directories go while they run.
fn archive_root(plan: &StagesPlan) -> PathBuf {
    plan.archive_dir.join(format!("latency-stages-{}", std::process::id()))
}

/// Where the helper's source and the archives' stderr logs go while they run.
fn work_dir() -> PathBuf {
    std::env::temp_dir().join(format!("latency-stages-{}", std::process::id()))
}

/// Sync level `sync`'s archive A, and archive B replicating from it when the plan replicates,
/// each with its own driver directory and archive directory.
fn spawn_archives(plan: &StagesPlan, sync: u8) -> Result<(ArchiveProcess, Option<ArchiveProcess>), StagesError> {
    let pid = std::process::id();
    let work = work_dir();
    let spec = |name: &str, id: i64, port: u16, from: Option<u16>| ArchiveSpec {
        name: name.to_owned(),
        aeron_dir: PathBuf::from(format!("/dev/shm/latency-stages-{pid}-{sync}-{id}")),
        archive_dir: archive_root(plan).join(format!("sync-{sync}-archive-{id}")),
        control_port: port,
        replication_port: port + 1,
        sync,
        channel: plan.trial.channel.clone(),
        stream: plan.trial.stream,
        term_length: plan.term_length,
        archive_id: id,
        replicate_from: from,
    };
    let a_spec = spec("archive A", 1, plan.control_port, None);
    let a = ArchiveProcess::spawn(&plan.java, &a_spec, &work).map_err(StagesError::Archive)?;
    let b = if plan.replicate {
        let b_spec = spec("archive B", 2, plan.control_port + 2, Some(plan.control_port));
        Some(ArchiveProcess::spawn(&plan.java, &b_spec, &work).map_err(StagesError::Archive)?)
    } else {
        None
    };
    Ok((a, b))
}

/// One sync level: the archives, the run, the watcher. A run that measured something comes
/// back even when an archive failed meanwhile (with that failure).
fn run_one(plan: &StagesPlan, sync: u8) -> Result<(SyncRun, Option<StagesError>), StagesError> {
    let (mut a, mut b) = spawn_archives(plan, sync)?;
    let frames = Frames::for_msg_size(plan.trial.msg_size);
    let term = plan.term_length as i64;
    let total = plan.trial.warmup + (plan.trial.duration_s * plan.trial.rate as f64).round() as u64;
    let stop = Arc::new(AtomicBool::new(false));
    let until = Arc::new(AtomicI64::new(i64::MAX));
    let mut dirs = vec![a.aeron_dir().to_path_buf()];
    dirs.extend(b.as_ref().map(|b| b.aeron_dir().to_path_buf()));
    let watcher = {
        let (stop, until, sleep) = (stop.clone(), until.clone(), plan.watch_sleep);
        let failed: Vec<_> = std::iter::once(&a)
            .chain(b.as_ref())
            .map(ArchiveProcess::failed)
            .collect();
        std::thread::Builder::new()
            .name("stage-watcher".into())
            .spawn(move || watch(dirs, sleep, stop, until, || failed.iter().any(|f| f())))
            .map_err(|e| StagesError::Run(format!("could not start the watcher thread: {e}")))?
    };
    let place = Place {
        dir: a.aeron_dir(),
        embedded: false,
        driver_version: AERON_JAR_VERSION,
        run: None,
    };
    let measured = crate::run::trial::measure(&plan.trial, &place);
    // The end of the last message sent: what the archives must reach.
    let sent = measured
        .as_ref()
        .ok()
        .and_then(|m| m.report.publisher.as_ref().map(|p| p.sent))
        .unwrap_or(0)
        .min(total);
    until.store(frames.end_position(sent, term), Ordering::Release);
    stop.store(true, Ordering::Release);
    let watched = watcher
        .join()
        .map_err(|_| StagesError::Run("the watcher thread panicked".into()))?;
    let died: Vec<ArchiveError> = std::iter::once(&mut a)
        .chain(b.iter_mut())
        .filter_map(ArchiveProcess::check)
        .collect();
    // An archive that died, or said it failed (a full disk), explains a failed run: say that
    // first. What was measured is kept: the run comes back with it, marked incomplete. Read
    // before they are stopped: what stopping makes them say is not the run's.
    let trouble = died
        .into_iter()
        .next()
        .or_else(|| a.failure())
        .or_else(|| b.as_ref().and_then(ArchiveProcess::failure));
    // Where each recording starts (said once it started; long since, by now).
    let starts: Vec<Option<i64>> = std::iter::once(&mut a)
        .chain(b.iter_mut())
        .map(|x| x.start_position(Duration::from_secs(2)).ok())
        .collect();
    a.stop();
    if let Some(b) = &mut b {
        b.stop();
    }
    let measured = match measured {
        Ok(m) => m,
        Err(e) => return Err(trouble.map_or_else(|| StagesError::Run(e.to_string()), StagesError::Archive)),
    };
    match (assemble(plan, sync, measured, &watched, &starts, term, frames), trouble) {
        (Ok(mut run), Some(t)) => {
            run.complete = false;
            run.notes.insert(0, t.to_string());
            Ok((run, Some(StagesError::Archive(t))))
        }
        (Ok(run), None) => Ok((run, None)),
        (Err(_), Some(t)) => Err(StagesError::Archive(t)),
        (Err(e), None) => Err(e),
    }
}

/// The archives' stages, in the watcher's order (A, then B).
const ARCHIVE_STAGES: [&str; 2] = ["recorded by archive A", "replicated to archive B"];

/// One sync level's stages from what was measured and watched.
fn assemble(
    plan: &StagesPlan,
    sync: u8,
    measured: crate::run::trial::Measured,
    watched: &Watched,
    starts: &[Option<i64>],
    term: i64,
    frames: Frames,
) -> Result<SyncRun, StagesError> {
    let report = &measured.report;
    let Some(publ) = report.publisher.as_ref() else {
        return Err(StagesError::Run("latency-pub wrote no report".into()));
    };
    let Some(start) = publ.schedule_start_ns else {
        return Err(StagesError::Run(
            "latency-pub's report has no schedule (an older latency-pub?)".into(),
        ));
    };
    let pacer = crate::sys::pacing::Pacer::new(start, plan.trial.rate)
        .map_err(|e| StagesError::Run(format!("the schedule: {e}")))?;
    let mut notes = Vec::new();
    let (first, count) = (publ.warmup_sent, publ.measured_sent);
    let sends = Sends {
        first,
        count,
        pacer,
        lags: full_lags(measured.send_lags.as_deref(), count, &mut notes),
    };
    let rtt = plan.trial.pong.is_some();
    let mut timings = client_timings(publ, &measured, rtt, sends.lags.is_some(), &mut notes);
    let times: Vec<Vec<Option<i64>>> = watched
        .logs
        .iter()
        .zip(starts)
        .map(|(log, start)| recorded_times(log, start.unwrap_or(i64::MAX), first, count, term, frames))
        .collect();
    recording_start_notes(starts, frames.end_position(first, term), &mut notes);
    let out_of_order = out_of_order(&times, &mut notes);
    archive_timings(watched, &times, &sends, &mut timings, &mut notes);
    let rate = report.rate_achieved;
    let stages = stages_of(&timings, rate);
    let complete = report.complete
        && stages
            .iter()
            .all(|s| s.intended.count == count && s.actual.as_ref().is_some_and(|a| a.count == count))
        && report.lost == 0
        && out_of_order == 0;
    notes.extend(report.notes.iter().cloned());
    Ok(SyncRun {
        sync,
        replicated: plan.replicate,
        rtt,
        measured: count,
        rate_achieved: rate,
        stages,
        watcher: Watcher {
            sleep_ns: plan.watch_sleep.as_nanos() as u64,
            reads: watched.reads,
            gap_ns: Stats::from_histogram(&watched.gaps),
            cpu_ns: watched.cpu_ns,
            overflow: watched.logs.iter().map(|l| l.overflow).sum(),
        },
        complete,
        notes,
    })
}

/// The measured messages on their schedule: the first one's index, how many, and (when
/// latency-pub logged every one) each one's lag behind its intended send time.
struct Sends<'a> {
    first: u64,
    count: u64,
    pacer: crate::sys::pacing::Pacer,
    lags: Option<&'a [u32]>,
}

impl Sends<'_> {
    /// Message `k`'s actual send time: its intended one plus its logged lag.
    fn actual_ns(&self, k: u64) -> Option<i64> {
        self.lags
            .map(|l| self.pacer.intended_ns(k) + i64::from(l[(k - self.first) as usize]))
    }
}

/// latency-pub's send lags when it logged one per measured message and none saturated; else
/// none, and a note that the stages are not timed from the actual send time.
fn full_lags<'a>(logged: Option<&'a [u32]>, count: u64, notes: &mut Vec<String>) -> Option<&'a [u32]> {
    let logged = logged.unwrap_or_default();
    // u32::MAX: sent 4.29 s or more behind its schedule, its actual send time unknown.
    let saturated = logged.iter().filter(|l| **l == u32::MAX).count();
    if logged.len() as u64 != count {
        notes.push(format!(
            "latency-pub logged {} send lags for {count} measured messages: the stages are not timed from the actual \
             send time",
            logged.len()
        ));
    } else if saturated > 0 {
        notes.push(format!(
            "{saturated} messages were sent 4.29 s or more behind their schedule (beyond what the send-lag log holds): \
             the stages are not timed from the actual send time"
        ));
    }
    Some(logged).filter(|l| l.len() as u64 == count && saturated == 0)
}

/// A histogram from a report's encoded one.
fn decoded(s: Option<&String>) -> Option<Histogram<u64>> {
    s.and_then(|s| crate::model::decode(s).ok())
}

/// The stages the clients time: the offer returned (one-way), received, and echoed back
/// (round trips); each from the actual send time too when `actual` (the lags are complete).
fn client_timings(
    publ: &crate::model::PubReport,
    measured: &crate::run::trial::Measured,
    rtt: bool,
    actual: bool,
    notes: &mut Vec<String>,
) -> Vec<Timing> {
    let mut timings = Vec::new();
    if rtt {
        notes.push(
            "offer returned is not a stage of a round trip: latency-pub reads no clock between the commit and the \
             echo"
                .into(),
        );
    } else if let Some(h) = decoded(publ.offer_returned_histogram.as_ref()) {
        timings.push(Timing {
            name: "offer returned",
            intended: h,
            actual: decoded(publ.publish_cost_histogram.as_ref()).filter(|_| actual),
        });
    }
    let from = |name: &'static str, h: &crate::model::Histograms| {
        decoded(Some(&h.intended)).map(|intended| Timing {
            name,
            intended,
            actual: decoded(Some(&h.actual)).filter(|_| actual),
        })
    };
    // One-way: latency-sub's report is the run's; round trips: pong's.
    let received = if rtt {
        measured.pong.as_ref().and_then(|p| p.histograms.as_ref())
    } else {
        measured.report.histograms.as_ref()
    };
    match received {
        Some(h) => timings.extend(from("received", h)),
        None => notes.push("latency-sub wrote no histograms: the received stage is missing".into()),
    }
    if rtt {
        if let Some(h) = measured.report.histograms.as_ref() {
            timings.extend(from("echoed back", h));
        }
    }
    timings
}

/// A note per archive that never said where its recording starts, or that started after the
/// warm-up (which ends at stream position `warmup_end`).
fn recording_start_notes(starts: &[Option<i64>], warmup_end: i64, notes: &mut Vec<String>) {
    for (i, start) in starts.iter().enumerate() {
        match start {
            None => notes.push(format!(
                "{}: the archive never said where its recording starts, so no message is counted as recorded",
                ARCHIVE_STAGES[i]
            )),
            Some(s) if *s > warmup_end => notes.push(format!(
                "{}: the recording began at stream position {s}, after the warm-up: the measured messages before \
                 it were never recorded (use a longer --warmup)",
                ARCHIVE_STAGES[i]
            )),
            Some(_) => {}
        }
    }
}

/// A replica cannot hold a message before the archive it copies: counts any that seem to
/// (with a note when there are some).
fn out_of_order(times: &[Vec<Option<i64>>], notes: &mut Vec<String>) -> u64 {
    let [a, b] = times else { return 0 };
    let n = a
        .iter()
        .zip(b)
        .filter(|(a, b)| matches!((a, b), (Some(a), Some(b)) if b < a))
        .count() as u64;
    if n > 0 {
        notes.push(format!(
            "{n} messages were seen replicated to archive B before recorded by archive A (the watcher \
             reads B before A in each round, so this means a miscount: the run is marked incomplete)"
        ));
    }
    n
}

/// Each archive's stage from the times it recorded the measured messages, with a note for
/// those it did not time and for a full position log.
fn archive_timings(
    watched: &Watched,
    times: &[Vec<Option<i64>>],
    sends: &Sends<'_>,
    timings: &mut Vec<Timing>,
    notes: &mut Vec<String>,
) {
    let (first, count) = (sends.first, sends.count);
    for (i, log) in watched.logs.iter().enumerate() {
        let name = ARCHIVE_STAGES[i];
        let (intended, timed) = recorded_stage(&times[i], first, |k| sends.pacer.intended_ns(k));
        if timed < count {
            notes.push(format!(
                "{name}: timed {timed} of {count} measured messages (the rest were not recorded when the watch ended: \
                 up to {} s after the run, at once when an archive failed)",
                CATCH_UP.as_secs()
            ));
        }
        if log.overflow > 0 {
            notes.push(format!(
                "{name}: {} position changes not logged (log full)",
                log.overflow
            ));
        }
        let actual = sends
            .lags
            .map(|_| recorded_stage(&times[i], first, |k| sends.actual_ns(k).unwrap_or(0)).0);
        timings.push(Timing { name, intended, actual });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stage whose messages all took `ns`, `n` of them (none: a stage that timed nothing).
    fn timing(name: &'static str, ns: u64, n: u64) -> Timing {
        let mut h = new_latency_histogram();
        if n > 0 {
            h.record_n(ns, n).unwrap();
        }
        Timing {
            name,
            intended: h.clone(),
            actual: Some(h),
        }
    }

    #[test]
    fn each_stage_adds_its_p50_over_the_stage_it_follows_not_the_row_above() {
        let timings = [
            timing("offer returned", 1_000, 10),
            timing("received", 5_000, 10),
            timing("recorded by archive A", 3_000, 10),
            timing("replicated to archive B", 9_000, 10),
        ];
        let added = |stages: &[Stage]| -> Vec<(Option<i64>, Option<i64>)> {
            let basis = |t: &StageTiming| t.added_p50_ns.map(|d| (d + 500) / 1_000);
            stages
                .iter()
                .map(|s| (basis(&s.intended), s.actual.as_ref().and_then(basis)))
                .collect()
        };
        // Received and recorded by A over the offer (A is quicker than receipt here: not
        // ordered), B over A; in µs, both views.
        let stages = stages_of(&timings, 1_000.0);
        assert_eq!(
            added(&stages),
            vec![(None, None), (Some(4), Some(4)), (Some(2), Some(2)), (Some(6), Some(6))]
        );
        // A stage that timed nothing (an interrupted level) adds nothing, nor does its follower
        // add over it.
        let timings = [
            timing("offer returned", 1_000, 10),
            timing("received", 5_000, 10),
            timing("recorded by archive A", 0, 0),
            timing("replicated to archive B", 0, 0),
        ];
        let stages = stages_of(&timings, 1_000.0);
        assert_eq!(
            added(&stages),
            vec![(None, None), (Some(4), Some(4)), (None, None), (None, None)]
        );
        // Round trips have no offer stage: received and recorded by A add over nothing.
        let timings = [
            timing("received", 5_000, 10),
            timing("echoed back", 8_000, 10),
            timing("recorded by archive A", 3_000, 10),
        ];
        let stages = stages_of(&timings, 1_000.0);
        assert_eq!(added(&stages), vec![(None, None), (Some(3), Some(3)), (None, None)]);
    }

    #[test]
    fn a_message_counts_as_recorded_at_the_first_read_past_its_end() {
        let (term, frame) = (65_536_i64, Frames::uniform(96));
        let log = PositionLog {
            // Reads at t = 1000 (2 messages recorded), 2000 (5), 3000 (6).
            points: vec![(1_000, 192), (2_000, 480), (3_000, 576)],
            overflow: 0,
        };
        let times = recorded_times(&log, 0, 1, 5, term, frame);
        assert_eq!(
            times,
            vec![Some(1_000), Some(2_000), Some(2_000), Some(2_000), Some(3_000)]
        );
        let (h, timed) = recorded_stage(&times, 1, |k| k as i64 * 100);
        assert_eq!(timed, 5);
        // k = 1: 1000 - 100; k = 2..=4: 2000 - k*100; k = 5: 3000 - 500.
        assert_eq!(h.len(), 5);
        assert_eq!(h.min(), 900);
        assert_eq!(h.value_at_quantile(1.0), h.highest_equivalent(2_500));
        // A message never recorded is not timed.
        let times = recorded_times(&log, 0, 1, 7, term, frame);
        assert_eq!(&times[5..], &[None, None]);
        let (_, timed) = recorded_stage(&times, 1, |k| k as i64 * 100);
        assert_eq!(timed, 5);
        // A recording that began at message 3 (position 288) never held messages 1 and 2.
        let times = recorded_times(&log, 288, 1, 5, term, frame);
        assert_eq!(times, vec![None, None, Some(2_000), Some(2_000), Some(3_000)]);
        let (_, timed) = recorded_stage(&times, 1, |k| k as i64 * 100);
        assert_eq!(timed, 3);
    }
}
