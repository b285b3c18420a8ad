//! `latency-probe attach`: a running process's threads watched for a while the way the probe
//! watches its own hot threads, into the same jitter model.
//!
//! # Guarantees
//! - Read-only: nothing is injected into the process and it is never paused. Its threads are
//!   read at 21 group boundaries (perf counters and `/proc`, as [`Monitor`] does for the
//!   probe's threads) and, with perf, every off-CPU episode of a watched thread is recorded
//!   with its cause and who took the CPU.
//! - A process that ends while watched ends the watch (seen within a second, or at the next
//!   group boundary if sooner): the groups seen so far are reported, marked incomplete.
//! - Its own cost on the service: one wake-up a second and one per group boundary, each a read
//!   of the watched threads' counters (the report's "probe cost"); on a host with no spare
//!   core such a wake-up can preempt a watched thread, and is then named among who took its
//!   CPU. What attach used itself, CPU time and peak memory, is in the report (`own_cost`).
//! - Timing model: group boundaries are `CLOCK_MONOTONIC` readings of this process, a
//!   twentieth of `--duration` apart; perf records use the same clock.

use std::fmt;
use std::time::{Duration, Instant, SystemTime};

use crate::analysis::jitter::{build, Hiccup};
use crate::analysis::verdict::Context;
use crate::measure::monitor::{Monitor, MonitorError, STALL_THRESHOLD_NS};
use crate::model::{
    AttachCost, AttachReport, AttachedThread, Explain, Mode, Role, SlowSample, StallLog, GROUPS, SCHEMA_VERSION,
};
use crate::run::service_tap::{in_band, read_window, Period, ServiceTap, StatusFigure};
use crate::sys::clock::now_ns;
use crate::units::utc_timestamp;

/// The bytes of a thread's name Linux keeps (`TASK_COMM_LEN` is 16 with the NUL).
pub const COMM_LEN: usize = 15;

/// How often a watch looks whether the process is still there while it waits for a boundary
/// (each look is a wake-up that may take a watched thread's core for a few µs).
const ALIVE_EVERY: Duration = Duration::from_secs(1);

/// The process and the threads to watch as its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The process id.
    pub pid: u32,
    /// Its main thread's name.
    pub process: String,
    /// The threads watched as the service's.
    pub threads: Vec<AttachedThread>,
}

/// Why `attach` could not watch.
#[derive(Debug)]
pub enum AttachError {
    /// No such process.
    NoProcess {
        /// The pid asked for.
        pid: u32,
    },
    /// Its threads cannot be listed (another user's process without the rights to read it).
    NotReadable {
        /// The pid asked for.
        pid: u32,
        /// What the system said.
        why: String,
    },
    /// No thread has one of the names asked for.
    NoThreadNamed {
        /// The names not found (as Linux keeps them: at most 15 bytes).
        missing: Vec<String>,
        /// The names the process's threads have.
        present: Vec<String>,
    },
    /// The process ended between finding its threads and watching them: nothing was watched.
    Ended {
        /// The pid asked for.
        pid: u32,
    },
    /// None of the threads to watch could be opened (each one gone or not readable).
    NoneWatchable {
        /// The pid asked for.
        pid: u32,
        /// Why, thread by thread.
        why: String,
    },
    /// The counter source asked for cannot be used.
    Monitor(MonitorError),
}

impl fmt::Display for AttachError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttachError::NoProcess { pid } => write!(
                f,
                "no process {pid} on this host (in a container, give the pid as this host sees it: \
                 its NSpid line in /proc/PID/status)"
            ),
            AttachError::NotReadable { pid, why } => write!(
                f,
                "cannot read the threads of process {pid} ({why}): run as its user or as root"
            ),
            AttachError::NoThreadNamed { missing, present } => write!(
                f,
                "--threads: no thread named {}; its threads are named {} (Linux keeps 15 bytes of a name)",
                missing.join(", "),
                present.join(", ")
            ),
            AttachError::Ended { pid } => write!(
                f,
                "process {pid} ended as attach started watching it: nothing was watched; attach to a process \
                 that runs for --duration"
            ),
            AttachError::NoneWatchable { pid, why } => write!(
                f,
                "cannot watch any of the threads asked for in process {pid} ({why}): run as its user or as \
                 root, and name threads that still run"
            ),
            AttachError::Monitor(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for AttachError {}

/// `name` as Linux keeps a thread's name: its first [`COMM_LEN`] bytes (on a character
/// boundary).
#[must_use]
pub fn comm(name: &str) -> &str {
    let mut end = name.len().min(COMM_LEN);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// The threads of `pid` with their names, by id.
fn threads_of(pid: u32) -> Result<Vec<AttachedThread>, AttachError> {
    let threads = crate::sys::thread::threads_of(pid).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => AttachError::NoProcess { pid },
        _ => AttachError::NotReadable {
            pid,
            why: e.to_string(),
        },
    })?;
    Ok(threads
        .into_iter()
        .map(|(tid, name)| AttachedThread { tid, name })
        .collect())
}

/// Finds process `pid` and the threads named `names` (every thread when `names` is empty).
///
/// # Errors
/// No such process, its threads not readable, or a name no thread has.
pub fn find(pid: u32, names: &[String]) -> Result<Target, AttachError> {
    let all = threads_of(pid)?;
    let process = all
        .iter()
        .find(|t| t.tid == pid as i32)
        .map_or_else(|| format!("pid {pid}"), |t| t.name.clone());
    if names.is_empty() {
        return Ok(Target {
            pid,
            process,
            threads: all,
        });
    }
    let missing: Vec<String> = names
        .iter()
        .map(|n| comm(n).to_owned())
        .filter(|n| !all.iter().any(|t| t.name == *n))
        .collect();
    if !missing.is_empty() {
        let mut present: Vec<String> = all.iter().map(|t| t.name.clone()).collect();
        present.sort();
        present.dedup();
        return Err(AttachError::NoThreadNamed { missing, present });
    }
    let threads = all
        .into_iter()
        .filter(|t| names.iter().any(|n| comm(n) == t.name))
        .collect();
    Ok(Target { pid, process, threads })
}

/// Whether `pid` still runs (a zombie has ended).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with('Z')))
        .is_some_and(|zombie| !zombie)
}

/// Why a watch stopped before its window ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// The process ended.
    Ended,
    /// SIGINT or SIGTERM reached attach (Ctrl-C).
    Interrupted,
}

/// Sleeps until `at`, looking every [`ALIVE_EVERY`] whether `pid` still runs and whether
/// attach was interrupted; why it stopped before `at`, if it did.
fn wait_until(at: Instant, pid: u32) -> Result<(), Cut> {
    loop {
        if !alive(pid) {
            return Err(Cut::Ended);
        }
        if crate::sys::signals::interrupted() {
            return Err(Cut::Interrupted);
        }
        let now = Instant::now();
        if now >= at {
            return Ok(());
        }
        std::thread::sleep((at - now).min(ALIVE_EVERY));
    }
}

/// The service's tap and the figure whose bands the verdict explains.
#[derive(Debug, Clone)]
pub struct TapChoice {
    /// The tap.
    pub tap: ServiceTap,
    /// The figure.
    pub figure: StatusFigure,
}

/// What to watch, for how long, and how.
#[derive(Debug, Clone, Copy)]
pub struct Watch<'a> {
    /// The period (20 groups of a twentieth each).
    pub duration: Duration,
    /// The counter source.
    pub mode: Mode,
    /// The service's tap, when it runs one.
    pub tap: Option<&'a TapChoice>,
    /// The band the headline explains (with a tap).
    pub explain: Explain,
}

/// Watches `target` as `watch` says and analyses what the threads did; with the service's tap,
/// lines its figure's slowest messages up with the episodes (bands and verdict for the
/// service's own latency). The process's other threads are watched too, as its other threads
/// (they are who may take a watched thread's CPU).
///
/// # Errors
/// Only when `mode` asks for perf and perf cannot be used.
pub fn attach(target: &Target, watch: Watch<'_>) -> Result<AttachReport, AttachError> {
    let pid = target.pid;
    let mut monitor = Monitor::new(watch.mode).map_err(AttachError::Monitor)?;
    for t in &target.threads {
        monitor.watch(pid, t.tid, Role::Service);
    }
    if !target.threads.iter().any(|t| monitor.watches(t.tid)) {
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            return Err(AttachError::Ended { pid });
        }
        return Err(AttachError::NoneWatchable {
            pid,
            why: monitor.notes().join("; "),
        });
    }
    monitor.watch_process(pid, |tid, _| if tid == pid as i32 { Role::Main } else { Role::Other });
    let started_at = utc_timestamp(SystemTime::now());
    let (period, watched, cut) = watch_groups(&mut monitor, pid, watch.duration);
    let mut side = monitor.finish();
    let mut notes = Vec::new();
    let window = watch.tap.and_then(|c| {
        read_window(&c.tap, &c.figure, period)
            .map_err(|e| notes.push(format!("the tap could not be read: {e}; the counters alone are above")))
            .ok()
    });
    if let (Some(w), Some(c)) = (&window, watch.tap) {
        for t in side
            .threads
            .iter_mut()
            .filter(|t| c.figure.recording_tids.contains(&t.tid))
        {
            t.stalls = Some(stalls_of(&w.slow, w.summary.edges_ns[0]));
        }
    }
    let ctx = Context {
        sub_idle: None,
        pub_idle: None,
        delivery_channel: false,
        hot_path_lock: false,
        driver_on_path: false,
        // Without the tap's samples there is no tail to line up, and no bands.
        tail_threshold_ns: window.as_ref().map_or(u64::MAX, |w| w.summary.edges_ns[3]),
        cores: aeron_latency::messaging::available_cores().len(),
        fault_cost_ns: 0,
        explain: watch.explain,
        edges: window.as_ref().map(|w| w.summary.edges_ns),
    };
    let hiccup = Hiccup::Skipped("attach runs no meter".into());
    let (slow, octaves) = window
        .as_ref()
        .map_or((&[][..], &[][..]), |w| (&w.slow[..], &w.octaves[..]));
    let (mut jitter, groups) = build(&[&side], slow, octaves, &hiccup, &ctx);
    jitter.notes.extend(notes);
    if let Some(w) = &window {
        // A band none of whose messages is among the slowest kept still has its messages.
        for b in jitter.bands.iter_mut().filter(|b| b.analysed == 0) {
            b.samples = in_band(&w.histogram, b.from_ns, b.to_ns);
        }
    }
    Ok(AttachReport {
        schema_version: SCHEMA_VERSION,
        pid,
        process: target.process.clone(),
        threads: target.threads.clone(),
        duration_s: watch.duration.as_secs_f64(),
        watched_s: watched.as_secs_f64(),
        started_at,
        complete: cut.is_none(),
        incomplete_reason: cut.map(|(why, t)| match why {
            Cut::Ended => format!("process {pid} ended after {:.1} s", t.as_secs_f64()),
            Cut::Interrupted => format!(
                "interrupted (SIGINT or SIGTERM) after {:.1} s of the {:.1} s window",
                t.as_secs_f64(),
                watch.duration.as_secs_f64()
            ),
        }),
        jitter,
        groups,
        tap: window.map(|w| w.summary),
        own_cost: own_cost(),
    })
}

/// Snapshots the counters at each of the 21 group boundaries of `duration` until the window
/// ends, the process ends or attach is interrupted: the period watched, how long, and why it
/// was cut short (with when), if it was.
fn watch_groups(monitor: &mut Monitor, pid: u32, duration: Duration) -> (Period, Duration, Option<(Cut, Duration)>) {
    let (unix_start, mono_start) = (unix_s(SystemTime::now()), now_ns());
    let start = Instant::now();
    let mut cut = None;
    for g in 0..=GROUPS {
        let at = start + duration.mul_f64(g as f64 / GROUPS as f64);
        if let Err(why) = wait_until(at, pid) {
            cut = Some((why, start.elapsed()));
            break;
        }
        monitor.snapshot(g);
    }
    let period = Period {
        unix_s: (unix_start, unix_s(SystemTime::now())),
        mono_ns: (mono_start, now_ns()),
    };
    (period, cut.map_or_else(|| start.elapsed(), |(_, t)| t), cut)
}

/// What this process used from its start (attach runs one watch a process).
fn own_cost() -> Option<AttachCost> {
    let (cpu_s, system_s, max_rss_kib) = crate::sys::thread::process_usage()?;
    let wall_s = crate::sys::thread::process_age()?.as_secs_f64();
    Some(AttachCost {
        cpu_s,
        system_s,
        wall_s,
        max_rss_kib,
    })
}

/// The gaps a recording thread went without handing a message over, from the tap's slowest
/// messages: each one's excess over p50 (`[sent + p50, received]`) of at least
/// [`STALL_THRESHOLD_NS`], as the probe logs the gaps of its own loop. The analysis keeps those
/// that being off CPU does not explain: on CPU without a context switch (the thread's own work,
/// an interrupt, an SMI, steal; or the sender's delay between its stamp and its commit).
fn stalls_of(slow: &[SlowSample], p50: u64) -> StallLog {
    let mut gaps: Vec<(i64, u64)> = slow
        .iter()
        .filter(|s| s.latency_ns.saturating_sub(p50) >= STALL_THRESHOLD_NS)
        .map(|s| (s.sent_ns + p50 as i64, s.latency_ns - p50))
        .collect();
    gaps.sort_unstable();
    StallLog {
        threshold_ns: STALL_THRESHOLD_NS,
        count: gaps.len() as u64,
        total_ns: gaps.iter().map(|g| g.1).sum(),
        max_ns: gaps.iter().map(|g| g.1).max().unwrap_or(0),
        stalls: gaps,
        not_logged: 0,
        last: 0,
    }
}

fn unix_s(t: SystemTime) -> f64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_matched_as_linux_keeps_it() {
        assert_eq!(comm("aeron-conductor-thread"), "aeron-conductor");
        assert_eq!(comm("short"), "short");
        // 14 ASCII bytes and a 2-byte character: cut before it, not inside.
        assert_eq!(comm("abcdefghijklmné"), "abcdefghijklmn");
    }

    #[test]
    fn this_process_and_its_threads_are_found_by_name() {
        let me = std::process::id();
        let t = find(me, &[]).unwrap();
        assert!(t.threads.iter().any(|t| t.tid == me as i32));
        let name = t.process.clone();
        let named = find(me, std::slice::from_ref(&name)).unwrap();
        assert!(named.threads.iter().all(|t| t.name == name));
        let e = find(me, &["no-such-thread".into()]).unwrap_err().to_string();
        assert!(e.contains("no thread named no-such-thread") && e.contains(&name), "{e}");
        assert!(!e.contains('\n'));
    }

    /// Why attaching to thread `tid` of process `pid` for 100 ms (from /proc) failed.
    fn attach_for_a_moment(pid: u32, process: &str, tid: i32, name: &str) -> String {
        let target = Target {
            pid,
            process: process.into(),
            threads: vec![AttachedThread { tid, name: name.into() }],
        };
        let watch = Watch {
            duration: Duration::from_millis(100),
            mode: Mode::Proc,
            tap: None,
            explain: Explain::default(),
        };
        attach(&target, watch).unwrap_err().to_string()
    }

    #[test]
    fn a_target_none_of_whose_threads_can_be_watched_is_refused_in_one_line() {
        let me = std::process::id();
        // A thread id no thread of this process has (an ended thread's).
        let e = attach_for_a_moment(me, "p", i32::MAX, "gone");
        assert!(
            e.starts_with(&format!(
                "cannot watch any of the threads asked for in process {me} (could not watch"
            )) && e.ends_with("name threads that still run")
                && !e.contains('\n'),
            "{e}"
        );
    }

    #[test]
    fn a_process_that_ended_before_watching_began_says_so() {
        let mut child = std::process::Command::new("true").spawn().expect("true runs");
        let pid = child.id();
        child.wait().expect("true ends");
        let e = attach_for_a_moment(pid, "true", pid as i32, "true");
        assert_eq!(
            e,
            format!(
                "process {pid} ended as attach started watching it: nothing was watched; attach to a process \
                 that runs for --duration"
            )
        );
    }

    #[test]
    fn a_missing_process_says_so_in_one_line() {
        let e = find(u32::MAX - 1, &[]).unwrap_err().to_string();
        assert!(e.starts_with("no process") && !e.contains('\n'), "{e}");
    }
}
