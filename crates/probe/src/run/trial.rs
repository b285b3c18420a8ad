//! One measurement of latency-probe: the floor, latency-sub and latency-pub as child processes,
//! the floor again, and their reports combined into one.

use super::process::{exit_words, spawn, wait_forwarding_interrupts, SpawnError, EXIT_REFUSED};
use super::{Delivery, PongPath};
use crate::measure::counter_window::CounterWindow;
use crate::measure::floor::FloorRun;
use crate::measure::hiccup::{self, HiccupConfig, HiccupMeter, HiccupRequest, HiccupSkipped};
use crate::model::{Mode, PubReport, RawJitter, Report, DRIVER_EMBEDDED, DRIVER_EXTERNAL};
use crate::report::build::combine;
use crate::units::format_ns;
use aeron_latency::messaging::IdleStrategy;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

const ME: &str = "latency-probe";

/// What one measurement runs, as plain values (the flags, checked).
#[derive(Debug, Clone)]
pub struct Trial {
    /// Channel URI of the messages.
    pub channel: String,
    /// Stream id of the messages.
    pub stream: i32,
    /// The echo path: round trips when set, one-way otherwise.
    pub pong: Option<PongPath>,
    /// The publication both children write with.
    pub publication: crate::model::PublicationKind,
    /// Measured seconds (after the warm-up).
    pub duration_s: f64,
    /// Messages per second.
    pub rate: u64,
    /// Encoded message size in bytes.
    pub msg_size: usize,
    /// Warm-up messages.
    pub warmup: u64,
    /// Seconds the publisher waits for the subscriber.
    pub wait_s: f64,
    /// Idle strategy of both hot threads.
    pub idle: IdleStrategy,
    /// How latency-sub hands messages to the code that measures them.
    pub delivery: Delivery,
    /// Planted futex jitter in latency-sub's hot loop.
    pub hot_path_lock: bool,
    /// A planted helper thread on latency-sub's hot core.
    pub plant_helper: bool,
    /// Pre-fault the log buffers before measuring.
    pub prefault: bool,
    /// The band the verdict explains.
    pub explain: crate::model::Explain,
    /// Jitter diagnostics of both children.
    pub diagnostics: Mode,
    /// latency-sub's live line on stderr.
    pub live: bool,
    /// Core of the subscriber's hot thread (none: not pinned).
    pub sub_core: Option<usize>,
    /// Core of the publisher's hot thread (none: not pinned).
    pub pub_core: Option<usize>,
    /// The hiccup meter.
    pub hiccup: HiccupRequest,
    /// The cores this process may use.
    pub available: Vec<usize>,
    /// Seconds of raw round trips between the hot cores before and after (zero: skip).
    pub floor: Duration,
    /// The directory holding the `latency-sub` and `latency-pub` binaries.
    pub bin_dir: PathBuf,
    /// Have latency-pub log each measured message's send lag ([`Measured::send_lags`]).
    pub send_lags: bool,
    /// latency-pub's planted delay per message, ns (`--plant-delay-ns`; 0: none).
    pub plant_delay_ns: u64,
}

impl Trial {
    /// Seconds from the first warm-up message to the last measured one, on schedule.
    #[must_use]
    pub fn run_seconds(&self) -> f64 {
        (self.warmup as f64 + self.duration_s * self.rate as f64) / self.rate as f64
    }

    /// The `--timeout` latency-sub gets: the whole run and both waits, and half a minute.
    #[must_use]
    pub fn sub_timeout_s(&self) -> f64 {
        self.run_seconds() + 2.0 * self.wait_s + 30.0
    }
}

/// Where one measurement runs: the driver and, with several, the run's number.
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    /// The driver's Aeron directory.
    pub dir: &'a Path,
    /// Whether the driver is latency-probe's embedded one.
    pub embedded: bool,
    /// The driver's version.
    pub driver_version: &'a str,
    /// (this run, of how many), 1-based, when there are several.
    pub run: Option<(u32, u32)>,
}

/// One measurement's outcome.
#[derive(Debug)]
pub struct Measured {
    /// The combined report.
    pub report: Report,
    /// latency-pub's exit (none: it could not be waited for).
    pub pub_status: Option<ExitStatus>,
    /// latency-sub's exit (none: it could not be waited for).
    pub sub_status: Option<ExitStatus>,
    /// With [`Trial::send_lags`]: each measured message's actual send time less its intended
    /// one, ns, in send order (none: latency-pub wrote no log).
    pub send_lags: Option<Vec<u32>>,
    /// Round trips: pong's own report (its one-way view of the messages it echoed).
    pub pong: Option<Report>,
}

/// Why one measurement produced no report.
#[derive(Debug)]
pub enum TrialError {
    /// The directory for the children's reports could not be made.
    TempDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// latency-sub or latency-pub did not start.
    Spawn(SpawnError),
    /// latency-pub refused the setup before sending anything (its error is on stderr).
    PubRefused,
    /// ping (latency-pub in rtt mode) wrote no round-trip report.
    NoPingReport {
        /// Why it stopped, when it wrote its publisher report.
        reason: Option<String>,
        /// Its exit.
        status: Option<ExitStatus>,
    },
    /// latency-sub wrote no report.
    NoSubReport {
        /// Its exit.
        status: Option<ExitStatus>,
    },
}

impl TrialError {
    /// Whether the setup was refused: nothing ran (else something ran, but left no report).
    #[must_use]
    pub fn is_setup(&self) -> bool {
        matches!(
            self,
            TrialError::TempDir { .. } | TrialError::Spawn(_) | TrialError::PubRefused
        )
    }
}

impl fmt::Display for TrialError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrialError::TempDir { path, source } => write!(f, "{}: {source}", path.display()),
            TrialError::Spawn(e) => write!(f, "{e}"),
            TrialError::PubRefused => {
                f.write_str("latency-pub refused the setup (its error is above); nothing was measured")
            }
            TrialError::NoPingReport {
                reason: Some(reason), ..
            } => write!(f, "latency-pub (ping) stopped before any round trip: {reason}"),
            TrialError::NoPingReport { reason: None, status } => write!(
                f,
                "latency-pub (ping) wrote no report ({}); see its error above",
                exit_words(*status)
            ),
            TrialError::NoSubReport { status } => {
                write!(
                    f,
                    "latency-sub wrote no report ({}); see its error above",
                    exit_words(*status)
                )
            }
        }
    }
}

impl std::error::Error for TrialError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TrialError::TempDir { source, .. } => Some(source),
            TrialError::Spawn(e) => Some(e),
            _ => None,
        }
    }
}

/// The two children's command lines, and the files they write.
struct Children {
    sub_args: Vec<String>,
    pub_args: Vec<String>,
    sub_json: PathBuf,
    pub_json: PathBuf,
    sub_raw: PathBuf,
    pub_raw: PathBuf,
    pub_lags: PathBuf,
}

/// Both children's command lines (shared flags first), and where their files go in `tmp`.
fn children(t: &Trial, dir: &Path, tmp: &Path) -> Children {
    let (sub_json, pub_json) = (tmp.join("sub.json"), tmp.join("pub.json"));
    let (sub_raw, pub_raw) = (tmp.join("sub-jitter.json"), tmp.join("pub-jitter.json"));
    let pub_lags = tmp.join("pub.lags");
    let common = common_args(t, dir);
    let mut sub = common.clone();
    sub.extend(sub_args(t, (&sub_json, &sub_raw)));
    let mut publ = common;
    publ.extend(pub_args(t, (&pub_json, &pub_raw, &pub_lags)));
    Children {
        sub_args: sub,
        pub_args: publ,
        sub_json,
        pub_json,
        sub_raw,
        pub_raw,
        pub_lags,
    }
}

/// What latency-sub and latency-pub are both given: the driver, the stream, idling,
/// diagnostics, the publication, round-trip mode.
fn common_args(t: &Trial, dir: &Path) -> Vec<String> {
    let s = |v: &dyn ToString| v.to_string();
    let mut common = vec![
        "--dir".into(),
        s(&dir.display()),
        "--channel".into(),
        t.channel.clone(),
        "--stream".into(),
        s(&t.stream),
        "--idle".into(),
        s(&t.idle),
        "--diagnostics".into(),
        t.diagnostics.as_str().into(),
        "--publication".into(),
        t.publication.as_str().into(),
        "--explain".into(),
        t.explain.as_str().into(),
        "--quiet".into(),
    ];
    if !t.prefault {
        common.push("--no-prefault".into());
    }
    if let Some(p) = &t.pong {
        common.extend([
            "--mode".into(),
            "rtt".into(),
            "--pong-channel".into(),
            p.channel.clone(),
            "--pong-stream".into(),
            s(&p.stream),
        ]);
    }
    common
}

/// latency-sub's own arguments: its timeout, reports, delivery, planted causes, core.
fn sub_args(t: &Trial, (sub_json, sub_raw): (&Path, &Path)) -> Vec<String> {
    let s = |v: &dyn ToString| v.to_string();
    let mut args: Vec<String> = vec![
        "--timeout".into(),
        format!("{:.1}", t.sub_timeout_s()),
        "--json".into(),
        s(&sub_json.display()),
        "--jitter-raw".into(),
        s(&sub_raw.display()),
        "--delivery".into(),
        s(&t.delivery),
        "--live".into(),
        if t.live { "on" } else { "off" }.into(),
    ];
    if t.hot_path_lock {
        args.push("--hot-path-lock".into());
    }
    if t.plant_helper {
        args.push("--plant-helper".into());
    }
    if let Some(c) = t.sub_core {
        args.extend(["--core".into(), s(&c)]);
    }
    args
}

/// latency-pub's own arguments: the run's length and rate, reports, core, planted delay.
fn pub_args(t: &Trial, (pub_json, pub_raw, pub_lags): (&Path, &Path, &Path)) -> Vec<String> {
    let s = |v: &dyn ToString| v.to_string();
    let mut args: Vec<String> = vec![
        "--duration".into(),
        s(&t.duration_s),
        "--rate".into(),
        s(&t.rate),
        "--msg-size".into(),
        s(&t.msg_size),
        "--warmup".into(),
        s(&t.warmup),
        "--wait".into(),
        s(&t.wait_s),
        "--json".into(),
        s(&pub_json.display()),
        "--jitter-raw".into(),
        s(&pub_raw.display()),
    ];
    if let Some(c) = t.pub_core {
        args.extend(["--core".into(), s(&c)]);
    }
    if t.send_lags {
        args.extend(["--send-lags".into(), s(&pub_lags.display())]);
    }
    if t.plant_delay_ns > 0 {
        args.extend(["--plant-delay-ns".into(), s(&t.plant_delay_ns)]);
    }
    args
}

/// The hiccup meter: only on a core no hot thread uses, unless forced; or why it does not run.
fn hiccup_meter(t: &Trial, notes: &mut Vec<String>) -> Result<HiccupMeter, HiccupSkipped> {
    let hot_cores: Vec<usize> = [t.sub_core, t.pub_core].into_iter().flatten().collect();
    let core = hiccup::choose_core(t.hiccup, &hot_cores, &t.available)?;
    if hot_cores.contains(&core) {
        notes.push(format!(
            "--hiccup {core}: the meter spins on a hot thread's core, so it adds the jitter it measures"
        ));
    }
    HiccupMeter::spawn(HiccupConfig {
        core: Some(core),
        ..HiccupConfig::default()
    })
    .map_err(|e| HiccupSkipped::Thread(e.to_string()))
}

/// The floor, right before the run, on the two hot cores (nothing else spins there yet).
fn floor_before(t: &Trial, notes: &mut Vec<String>) -> Option<FloorRun> {
    if t.floor.is_zero() {
        None
    } else if t.sub_core.is_some() && t.sub_core == t.pub_core {
        notes.push("floor not measured: both hot threads share one core".into());
        None
    } else {
        match FloorRun::before(t.pub_core, t.sub_core, t.floor) {
            Ok(f) => Some(f),
            Err(e) => {
                notes.push(format!("floor not measured: {e}"));
                None
            }
        }
    }
}

/// One measurement: the floor, latency-sub and latency-pub, the floor again, the combined
/// report.
///
/// # Errors
/// It could not run, or produced no report ([`TrialError::is_setup`] tells which).
pub fn measure(t: &Trial, at: &Place<'_>) -> Result<Measured, TrialError> {
    let mut notes = Vec::new();
    let meter = hiccup_meter(t, &mut notes);
    let tmp = std::env::temp_dir().join(format!("latency-probe-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|source| TrialError::TempDir {
        path: tmp.clone(),
        source,
    })?;
    let c = children(t, at.dir, &tmp);
    let mut floor = floor_before(t, &mut notes);
    announce(t, at);
    // The driver's counters from both ends' connect to the run's end, straight from cnc.dat
    // (no client joins).
    let streams = std::iter::once(t.stream)
        .chain(t.pong.as_ref().map(|p| p.stream))
        .collect();
    let window = CounterWindow::start(at.dir.to_path_buf(), streams);
    let (pub_status, sub_status) = run_children(t, &c, &tmp)?;
    let counters_after = aeron_latency::messaging::read_driver_counters(at.dir).unwrap_or_default();
    let driver_counters = window.finish(&counters_after);
    // The floor again, right after the run and under the same conditions (driver and meter up).
    if let Some(f) = &mut floor {
        f.after();
    }
    let meter = meter.map(HiccupMeter::stop);
    let mut written = Written::read(&c);
    let _ = std::fs::remove_dir_all(&tmp);
    let h = match &meter {
        Ok(log) => crate::analysis::jitter::Hiccup::Ran(log),
        Err(why) => crate::analysis::jitter::Hiccup::Skipped(why.to_string()),
    };
    let (mut report, pong) = if t.pong.is_some() {
        rtt_report(t, at, &mut written, notes, &h, pub_status)?
    } else {
        (one_way_report(t, at, &mut written, notes, &h, sub_status)?, None)
    };
    if let Some(f) = floor {
        add_floor(&mut report, f);
    }
    report.driver_counters = Some(driver_counters);
    Ok(Measured {
        report,
        pub_status,
        sub_status,
        send_lags: written.send_lags,
        pong,
    })
}

/// The run's line on stderr: what is measured, where, on which cores.
fn announce(t: &Trial, at: &Place<'_>) {
    eprintln!(
        "{ME}: {}{} {:.1} s at {} msg/s, {} B messages, {} warm-up; driver {} at {}; subscriber on core {}, publisher on \
         core {}",
        at.run.map_or_else(String::new, |(r, of)| format!("run {r}/{of}: ")),
        if t.pong.is_some() { "round trips," } else { "one-way," },
        t.duration_s,
        t.rate,
        t.msg_size,
        t.warmup,
        if at.embedded { "embedded" } else { "external" },
        at.dir.display(),
        t.sub_core.map_or("any".into(), |c| c.to_string()),
        t.pub_core.map_or("any".into(), |c| c.to_string()),
    );
}

/// Starts latency-sub, then latency-pub, and waits for both: their exits.
///
/// # Errors
/// A child did not start, or latency-pub refused the setup (then latency-sub is stopped at
/// once and `tmp` removed).
fn run_children(t: &Trial, c: &Children, tmp: &Path) -> Result<(Option<ExitStatus>, Option<ExitStatus>), TrialError> {
    let mut sub = spawn(&t.bin_dir.join("latency-sub"), &c.sub_args).map_err(TrialError::Spawn)?;
    let mut publ = match spawn(&t.bin_dir.join("latency-pub"), &c.pub_args) {
        Ok(p) => p,
        Err(e) => {
            let _ = sub.kill();
            return Err(TrialError::Spawn(e));
        }
    };
    let run_s = t.run_seconds();
    let pub_status = wait_child(
        &mut publ,
        "latency-pub",
        Duration::from_secs_f64(run_s + 3.0 * t.wait_s + 30.0),
    );
    if pub_status.and_then(|s| s.code()) == Some(EXIT_REFUSED) {
        // latency-pub refused the setup (e.g. --msg-size above an external driver's MTU) before
        // sending anything: do not wait for latency-sub's timeout.
        let _ = sub.kill();
        let _ = sub.wait();
        let _ = std::fs::remove_dir_all(tmp);
        return Err(TrialError::PubRefused);
    }
    let sub_status = wait_child(
        &mut sub,
        "latency-sub",
        Duration::from_secs_f64(t.sub_timeout_s() + 10.0),
    );
    Ok((pub_status, sub_status))
}

/// Waits for the child `name` up to `limit` (handing an interrupt on); when it still ran then,
/// it is handed SIGINT (it stops and writes what it measured) and killed only if it does not
/// exit within the grace. Says so on stderr, so that its "interrupted" (or "killed by signal:
/// 9") is not taken for someone else's doing.
fn wait_child(child: &mut std::process::Child, name: &str, limit: Duration) -> Option<ExitStatus> {
    let started = std::time::Instant::now();
    let status = wait_forwarding_interrupts(child, limit);
    if started.elapsed() >= limit && !crate::sys::signals::interrupted() {
        let what = match status.and_then(|s| s.code()) {
            Some(_) => "stopped it (SIGINT): its report holds what it measured until then".to_owned(),
            None => format!(
                "stopped it (SIGINT), and killed it when it had not exited {} s later",
                super::process::INTERRUPTED_CHILD_GRACE.as_secs()
            ),
        };
        eprintln!(
            "{ME}: {name} was still running after a wait of {:.0} s for it (its run and a margin): {what}",
            limit.as_secs_f64()
        );
    }
    status
}

/// What the children wrote (each none when missing or unreadable).
struct Written {
    /// latency-sub's report (pong's, in round trips).
    sub_report: Option<Report>,
    /// latency-pub's JSON: its report, or ping's round-trip report.
    pub_json: Option<Vec<u8>>,
    sub_jitter: Option<RawJitter>,
    pub_jitter: Option<RawJitter>,
    send_lags: Option<Vec<u32>>,
}

impl Written {
    fn read(c: &Children) -> Written {
        let read = |p: &PathBuf| -> Option<Vec<u8>> { std::fs::read(p).ok() };
        let read_raw = |p: &PathBuf| -> Option<RawJitter> { serde_json::from_slice(&read(p)?).ok() };
        Written {
            sub_report: read(&c.sub_json).and_then(|b| serde_json::from_slice(&b).ok()),
            sub_jitter: read_raw(&c.sub_raw),
            pub_jitter: read_raw(&c.pub_raw),
            send_lags: read(&c.pub_lags).map(|b| {
                b.chunks_exact(4)
                    .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
                    .collect()
            }),
            pub_json: read(&c.pub_json),
        }
    }
}

/// Round trips: ping's report is the result, with pong's side added; pong's own report is its
/// one-way view of the same messages.
fn rtt_report(
    t: &Trial,
    at: &Place<'_>,
    w: &mut Written,
    notes: Vec<String>,
    h: &crate::analysis::jitter::Hiccup<'_>,
    pub_status: Option<ExitStatus>,
) -> Result<(Report, Option<Report>), TrialError> {
    let bytes = w.pub_json.as_ref();
    let ping: Option<Report> = bytes.and_then(|b| serde_json::from_slice(b).ok());
    // A ping that stopped before its first round trip writes its publisher report only.
    let stopped: Option<PubReport> = bytes.and_then(|b| serde_json::from_slice(b).ok());
    let Some(mut report) = ping else {
        return Err(TrialError::NoPingReport {
            reason: stopped.and_then(|p| p.incomplete_reason),
            status: pub_status,
        });
    };
    report.env.driver_kind = if at.embedded { DRIVER_EMBEDDED } else { DRIVER_EXTERNAL }.to_owned();
    report.env.driver_version = at.driver_version.to_owned();
    let pong = w.sub_report.take();
    add_pong(&mut report, pong.as_ref());
    report.notes.extend(notes);
    let (main, other) = (w.pub_jitter.as_ref(), w.sub_jitter.as_ref());
    attach_jitter(&mut report, t, "latency-pub", (main, other), h);
    Ok((report, pong))
}

/// One way: latency-sub's report with latency-pub's folded in.
fn one_way_report(
    t: &Trial,
    at: &Place<'_>,
    w: &mut Written,
    notes: Vec<String>,
    h: &crate::analysis::jitter::Hiccup<'_>,
    sub_status: Option<ExitStatus>,
) -> Result<Report, TrialError> {
    let pub_report: Option<PubReport> = w.pub_json.as_ref().and_then(|b| serde_json::from_slice(b).ok());
    let Some(sub_report) = w.sub_report.take() else {
        return Err(TrialError::NoSubReport { status: sub_status });
    };
    let mut report = combine(sub_report, pub_report, at.embedded, at.driver_version);
    report.notes.extend(notes);
    if let Some(p) = &mut report.publisher {
        p.jitter = None; // analysed together with the subscriber's side below
    }
    let (main, other) = (w.sub_jitter.as_ref(), w.pub_jitter.as_ref());
    attach_jitter(&mut report, t, "latency-sub", (main, other), h);
    Ok(report)
}

/// The jitter section from the report's own side (`sides.0`, written by `who`) and the other
/// one; a note when diagnostics were on and that side wrote nothing.
fn attach_jitter(
    report: &mut Report,
    t: &Trial,
    who: &str,
    sides: (Option<&RawJitter>, Option<&RawJitter>),
    h: &crate::analysis::jitter::Hiccup<'_>,
) {
    match (sides.0, t.diagnostics != Mode::Off) {
        (Some(j), _) => crate::report::build::attach(report, j, sides.1, h, t.explain),
        (None, true) => report.notes.push(format!(
            "{who} wrote no jitter material; the jitter section covers nothing"
        )),
        (None, false) => {}
    }
}

/// The floor around the run, with a note when it moved.
fn add_floor(report: &mut Report, f: FloorRun) {
    let f = f.finish(&report.latency_ns);
    if f.moved {
        report.notes.push(format!(
            "the floor moved during the run (raw round trip p50 {} before, {} after): this machine's inter-core \
             latency changed regime; compare nothing from this run and run again",
            format_ns(f.before.round_trip_ns.p50),
            format_ns(f.after.as_ref().map_or(0, |a| a.round_trip_ns.p50))
        ));
    }
    report.floor = Some(f);
}

/// Pong's side of a round-trip report: its faults, its one-way view, and whether it finished.
fn add_pong(report: &mut Report, pong: Option<&Report>) {
    match pong {
        Some(pong) => {
            report.faults.subscriber = pong.faults.subscriber;
            report.faults.prefaulted.extend(pong.faults.prefaulted.iter().cloned());
            let l = &pong.latency_actual_ns;
            report.notes.push(format!(
                "pong's one-way view (ping to pong, this host's clock, from the actual send, read after pong \
                 echoed the message): p50 {} p99 {} p99.9 {} over {} messages",
                format_ns(l.p50),
                format_ns(l.p99),
                format_ns(l.p999),
                l.count
            ));
            if !pong.complete {
                report.complete = false;
                report.incomplete_reason = Some(format!(
                    "pong: {}",
                    pong.incomplete_reason.as_deref().unwrap_or("stopped early")
                ));
            }
        }
        None => {
            report.complete = false;
            report
                .notes
                .push("latency-sub (pong) wrote no report; see its error above".into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial() -> Trial {
        Trial {
            channel: "aeron:ipc".into(),
            stream: 1001,
            pong: None,
            publication: crate::model::PublicationKind::Exclusive,
            duration_s: 2.5,
            rate: 1000,
            msg_size: 64,
            warmup: 500,
            wait_s: 10.0,
            idle: "spin".parse().unwrap(),
            delivery: Delivery::Inline,
            hot_path_lock: false,
            plant_helper: true,
            prefault: false,
            explain: crate::model::Explain::P999,
            diagnostics: Mode::Off,
            live: false,
            sub_core: Some(3),
            pub_core: None,
            hiccup: HiccupRequest::Off,
            available: vec![0, 1, 2, 3],
            floor: Duration::ZERO,
            bin_dir: PathBuf::from("/nonexistent"),
            send_lags: false,
            plant_delay_ns: 0,
        }
    }

    #[test]
    fn the_children_get_the_run_the_driver_and_their_files() {
        let c = children(&trial(), Path::new("/dev/shm/d"), Path::new("/tmp/t"));
        let sub = c.sub_args.join(" ");
        assert!(
            sub.starts_with("--dir /dev/shm/d --channel aeron:ipc --stream 1001 --idle ")
                && sub.contains(
                    " --diagnostics off --publication exclusive --explain p99.9 --quiet --no-prefault --timeout 53.0 \
                     --json /tmp/t/sub.json"
                )
                && sub.ends_with("--delivery inline --live off --plant-helper --core 3"),
            "{sub}"
        );
        let publ = c.pub_args.join(" ");
        assert!(
            publ.ends_with(
                "--duration 2.5 --rate 1000 --msg-size 64 --warmup 500 --wait 10 --json /tmp/t/pub.json \
                 --jitter-raw /tmp/t/pub-jitter.json"
            ),
            "{publ}"
        );
    }

    #[test]
    fn missing_children_are_a_setup_error_and_nothing_is_measured() {
        let dir = std::env::temp_dir();
        let at = Place {
            dir: &dir,
            embedded: false,
            driver_version: "test",
            run: None,
        };
        let e = measure(&trial(), &at).unwrap_err();
        let _ = std::fs::remove_dir_all(dir.join(format!("latency-probe-{}", std::process::id())));
        assert!(e.is_setup());
        assert!(
            e.to_string().starts_with("could not start /nonexistent/latency-sub: "),
            "{e}"
        );
    }
}
