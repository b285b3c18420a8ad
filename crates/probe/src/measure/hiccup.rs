//! Hiccup meter (in the style of jHiccup): a thread that measures the platform jitter it sees
//! itself, so the probe can tell "the platform stalled everyone" from causes on its own threads.
//!
//! Guarantees:
//! - What it measures: the meter thread reads [`crate::sys::clock::now_ns`] in a tight loop and
//!   records the gap between consecutive readings. A loop iteration costs tens of nanoseconds,
//!   so a long gap means the thread did not run: preemption, interrupts, SMIs, hypervisor steal,
//!   frequency transitions. Every gap goes into a histogram ([`HiccupLog::all_gaps`]); gaps of at
//!   least [`HiccupConfig::threshold_ns`] are also logged with their start time
//!   ([`HiccupLog::gaps`]), up to [`HiccupConfig::max_logged`] of them, the rest counted in
//!   [`HiccupLog::gaps_not_logged`]. Nothing is dropped silently.
//! - It spins: it takes a whole core for as long as it runs. It must never share a core with a
//!   hot thread (it would add exactly the jitter it is meant to measure); [`choose_core`] picks a
//!   spare core or says why the meter is skipped.
//! - Its loop does not allocate, lock or make a syscall: the histogram and the gap log are
//!   allocated before the thread starts, the clock is read through the vDSO, and the stop signal
//!   is a relaxed atomic load per iteration.
//! - Timing model: every time is `CLOCK_MONOTONIC` in nanoseconds, the clock every process on
//!   this host shares (see [`crate::sys::clock`]), so the meter's gaps line up with the probe's
//!   samples and groups ([`HiccupLog::windows`], [`HiccupLog::overlapping`]).
//! - Exact bookkeeping: [`HiccupLog::iterations`] is the number of gaps measured (clock readings
//!   minus one), `all_gaps.count == iterations`, and the gaps tile the run without holes or
//!   overlaps: they add up to `stopped_ns - started_ns`.
//!
//! ```
//! use latency_probe::measure::hiccup::{HiccupConfig, HiccupMeter};
//!
//! let meter = HiccupMeter::spawn(HiccupConfig::default())?; // unpinned
//! std::thread::sleep(std::time::Duration::from_millis(50));
//! let log = meter.stop();
//! println!("{} iterations, worst gap {} ns", log.iterations, log.all_gaps.max);
//! assert_eq!(log.all_gaps.count, log.iterations);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::measure::histogram::new_latency_histogram;
use crate::measure::histogram::record_saturating;
use crate::model::HiccupLog;
use crate::model::Stats;
use crate::sys::clock::now_ns;
use aeron_latency::messaging::{PinnedThread, SpawnError, ThreadBuilder};
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// How the user asked for the meter: `--hiccup auto|off|<core>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HiccupRequest {
    /// Run it on the lowest spare core (one no hot thread uses); skip it if there is none.
    Auto,
    /// Do not run it.
    Off,
    /// Run it on this core, even one a hot thread uses (the caller warns).
    Core(usize),
}

impl std::str::FromStr for HiccupRequest {
    type Err = String;

    /// Accepts `auto`, `off` (any case, surrounding spaces ignored) or a core number.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("auto") {
            Ok(Self::Auto)
        } else if t.eq_ignore_ascii_case("off") {
            Ok(Self::Off)
        } else if let Ok(core) = t.parse::<usize>() {
            Ok(Self::Core(core))
        } else {
            Err(format!(
                "invalid --hiccup value {s:?}: expected auto, off or a core number (e.g. --hiccup 2)"
            ))
        }
    }
}

/// "core 3", "cores 0 and 1", "cores 0, 1 and 2".
fn cores_phrase(cores: &[usize]) -> String {
    match cores {
        [] => "no cores".to_owned(),
        [only] => format!("core {only}"),
        [init @ .., last] => {
            let init: Vec<String> = init.iter().map(usize::to_string).collect();
            format!("cores {} and {last}", init.join(", "))
        }
    }
}

/// Picks the meter's core or says in one plain sentence why it is skipped.
///
/// `hot` = cores taken by the hot threads (already pinned), `available` = cores this process
/// may use (from `aeron_latency::messaging::available_cores()`).
///
/// - [`HiccupRequest::Auto`]: the lowest available core not in `hot`; if there is none, an
///   `Err` that says so and lists the cores.
/// - [`HiccupRequest::Off`]: `Err("skipped: --hiccup off")`.
/// - [`HiccupRequest::Core`]`(n)`: `Ok(n)` if `n` is available, even if a hot thread uses it
///   (the user forced it; the caller should warn); otherwise an `Err` naming the available cores.
///
/// # Errors
/// The reason the meter is skipped, one sentence starting with `skipped:`.
pub fn choose_core(req: HiccupRequest, hot: &[usize], available: &[usize]) -> Result<usize, HiccupSkipped> {
    let mut avail = available.to_vec();
    avail.sort_unstable();
    avail.dedup();
    match req {
        HiccupRequest::Off => Err(HiccupSkipped::Off),
        HiccupRequest::Core(n) if avail.contains(&n) => Ok(n),
        HiccupRequest::Core(n) => Err(HiccupSkipped::CoreUnavailable {
            core: n,
            available: avail,
        }),
        HiccupRequest::Auto => match avail.iter().find(|c| !hot.contains(c)) {
            Some(&core) => Ok(core),
            None if avail.is_empty() => Err(HiccupSkipped::NoCores),
            None => Err(HiccupSkipped::NoSpareCore { available: avail }),
        },
    }
}

/// Why the hiccup meter does not run; `Display` is the report's `skipped: …` sentence.
#[derive(Debug, PartialEq, Eq)]
pub enum HiccupSkipped {
    /// `--hiccup off`.
    Off,
    /// `--hiccup N` names a core this process may not use.
    CoreUnavailable {
        /// The core asked for.
        core: usize,
        /// The cores this process may use.
        available: Vec<usize>,
    },
    /// This process's CPU set is empty or could not be read.
    NoCores,
    /// Every core this process may use runs a hot thread.
    NoSpareCore {
        /// The cores this process may use.
        available: Vec<usize>,
    },
    /// The meter's thread could not start.
    Thread(String),
}

impl std::fmt::Display for HiccupSkipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HiccupSkipped::Off => f.write_str("skipped: --hiccup off"),
            HiccupSkipped::CoreUnavailable { core, available } => write!(
                f,
                "skipped: --hiccup {core} names core {core}, which this process may not use (it may use {}); \
                 pass one of those, auto or off",
                cores_phrase(available)
            ),
            HiccupSkipped::NoCores => {
                f.write_str("skipped: no spare core (this process's CPU set is empty or could not be read)")
            }
            HiccupSkipped::NoSpareCore { available } => {
                let taken = match available.len() {
                    1 => "taken",
                    2 => "both taken",
                    _ => "all taken",
                };
                write!(
                    f,
                    "skipped: no spare core (this process may use {}, {taken} by the hot threads); \
                     a spinning meter would take a hot thread's core and add the jitter it is meant to measure",
                    cores_phrase(available)
                )
            }
            HiccupSkipped::Thread(e) => write!(f, "skipped: hiccup meter: {e}"),
        }
    }
}

impl std::error::Error for HiccupSkipped {}

/// Settings.
#[derive(Debug, Clone)]
pub struct HiccupConfig {
    /// Core to pin the meter to; `None` leaves it unpinned (fine for tests, useless for
    /// measurement next to pinned hot threads: it would run wherever the scheduler puts it).
    pub core: Option<usize>,
    /// Gaps of at least this many nanoseconds are logged with their start time. Default 1,000.
    pub threshold_ns: u64,
    /// At most this many gaps are logged (the log is allocated up front at this size, 16 bytes
    /// each); later ones are only counted. Default 100,000.
    pub max_logged: usize,
}

impl Default for HiccupConfig {
    fn default() -> Self {
        Self {
            core: None,
            threshold_ns: 1_000,
            max_logged: 100_000,
        }
    }
}

/// What the meter thread hands back when it stops.
#[derive(Debug)]
struct Recorded {
    started_ns: i64,
    stopped_ns: i64,
    iterations: u64,
    gaps: Vec<(i64, u64)>,
    gaps_not_logged: u64,
    histogram: Histogram<u64>,
}

/// The meter loop. `gaps` has capacity for `max_logged` entries and `histogram` has auto-resize
/// off, so nothing here allocates; the only shared state is the relaxed `stop` flag.
fn run_meter(
    stop: &AtomicBool,
    threshold_ns: u64,
    max_logged: usize,
    mut gaps: Vec<(i64, u64)>,
    mut histogram: Histogram<u64>,
) -> Recorded {
    debug_assert!(gaps.capacity() >= max_logged);
    let mut iterations = 0u64;
    let mut gaps_not_logged = 0u64;
    let started_ns = now_ns();
    let mut prev = started_ns;
    while !stop.load(Ordering::Relaxed) {
        let now = now_ns();
        // CLOCK_MONOTONIC never goes backwards; treat a negative difference as 0 anyway.
        let gap = u64::try_from(now.saturating_sub(prev)).unwrap_or(0);
        record_saturating(&mut histogram, gap);
        if gap >= threshold_ns {
            if gaps.len() < max_logged {
                gaps.push((prev, gap));
            } else {
                gaps_not_logged += 1;
            }
        }
        iterations += 1;
        prev = now;
    }
    Recorded {
        started_ns,
        stopped_ns: prev,
        iterations,
        gaps,
        gaps_not_logged,
        histogram,
    }
}

/// The running meter; [`HiccupMeter::stop`] ends it and returns what it saw. Dropping it also
/// stops the thread and waits for it (no leak, no hang).
pub struct HiccupMeter {
    stop: Arc<AtomicBool>,
    thread: Option<PinnedThread<Recorded>>,
    tid: i32,
    core: Option<usize>,
    threshold_ns: u64,
}

impl std::fmt::Debug for HiccupMeter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HiccupMeter")
            .field("tid", &self.tid)
            .field("core", &self.core)
            .field("threshold_ns", &self.threshold_ns)
            .field("stopping", &self.stop.load(Ordering::Relaxed))
            .finish()
    }
}

impl HiccupMeter {
    /// Spawns the spinning thread, named `hiccup-meter` and pinned to `cfg.core` if given.
    /// The histogram and the gap log are allocated here, before the thread starts; when this
    /// returns the thread has pinned itself and is (about to be) spinning.
    ///
    /// # Errors
    /// The thread could not be created or pinned (the message says why, e.g. which cores exist).
    pub fn spawn(cfg: HiccupConfig) -> Result<HiccupMeter, SpawnError> {
        let stop = Arc::new(AtomicBool::new(false));
        let gaps: Vec<(i64, u64)> = Vec::with_capacity(cfg.max_logged);
        let histogram = new_latency_histogram();
        let (threshold_ns, max_logged) = (cfg.threshold_ns, cfg.max_logged);
        let flag = Arc::clone(&stop);
        let thread = ThreadBuilder::new()
            .name("hiccup-meter")
            .affinity_opt(cfg.core)
            .spawn(move || run_meter(&flag, threshold_ns, max_logged, gaps, histogram))?;
        Ok(HiccupMeter {
            stop,
            tid: thread.tid(),
            core: thread.core(),
            thread: Some(thread),
            threshold_ns,
        })
    }

    /// Linux thread id of the meter thread.
    #[must_use]
    pub fn tid(&self) -> i32 {
        self.tid
    }

    /// Stops the thread, waits for it and returns what it saw. If the meter thread panicked
    /// (a bug: nothing in its loop can panic) the log is empty, with `iterations == 0`.
    #[must_use]
    pub fn stop(mut self) -> HiccupLog {
        self.stop.store(true, Ordering::Relaxed);
        let joined = self.thread.take().map(PinnedThread::join);
        let now = now_ns();
        let rec = match joined {
            Some(Ok(rec)) => rec,
            _ => Recorded {
                started_ns: now,
                stopped_ns: now,
                iterations: 0,
                gaps: Vec::new(),
                gaps_not_logged: 0,
                histogram: new_latency_histogram(),
            },
        };
        HiccupLog {
            core: self.core,
            tid: self.tid,
            started_ns: rec.started_ns,
            stopped_ns: rec.stopped_ns,
            iterations: rec.iterations,
            threshold_ns: self.threshold_ns,
            gaps: rec.gaps,
            gaps_not_logged: rec.gaps_not_logged,
            all_gaps: Stats::from_histogram(&rec.histogram),
            histogram: Some(rec.histogram),
        }
    }
}

impl Drop for HiccupMeter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::HiccupWindow;
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    /// The meter spins on a core: run at most one at a time so tests do not hog a small VM.
    static SPINNING: Mutex<()> = Mutex::new(());

    fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
        SPINNING.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn run_for(cfg: HiccupConfig, ms: u64) -> HiccupLog {
        let _guard = one_at_a_time();
        let meter = HiccupMeter::spawn(cfg).unwrap();
        assert!(meter.tid() > 0);
        let tid = meter.tid();
        std::thread::sleep(Duration::from_millis(ms));
        let log = meter.stop();
        assert_eq!(log.tid, tid);
        log
    }

    fn check_consistent(log: &HiccupLog) {
        assert!(log.iterations > 0, "{log:?}");
        assert_eq!(log.all_gaps.count, log.iterations);
        assert!(log.started_ns <= log.stopped_ns);
        let mut end = log.started_ns;
        for &(start, len) in &log.gaps {
            assert!(
                len >= log.threshold_ns,
                "logged gap {len} < threshold {}",
                log.threshold_ns
            );
            assert!(start >= end, "gaps out of order or overlapping: {:?}", log.gaps);
            end = start + i64::try_from(len).unwrap();
        }
        assert!(end <= log.stopped_ns);
        let h = log.histogram.as_ref().expect("a live log keeps its histogram");
        assert_eq!(h.len(), log.iterations);
        // Below 2,048 ns every value has its own bucket, so counts at or above a small threshold
        // are exact.
        assert!(log.threshold_ns < 2_048);
        let at_or_over = log.iterations - (0..log.threshold_ns).map(|v| h.count_at(v)).sum::<u64>();
        assert_eq!(log.gaps.len() as u64 + log.gaps_not_logged, at_or_over);
    }

    #[test]
    fn parses_auto_off_and_core_numbers() {
        assert_eq!("auto".parse::<HiccupRequest>(), Ok(HiccupRequest::Auto));
        assert_eq!(" AUTO ".parse::<HiccupRequest>(), Ok(HiccupRequest::Auto));
        assert_eq!("off".parse::<HiccupRequest>(), Ok(HiccupRequest::Off));
        assert_eq!("Off".parse::<HiccupRequest>(), Ok(HiccupRequest::Off));
        assert_eq!("0".parse::<HiccupRequest>(), Ok(HiccupRequest::Core(0)));
        assert_eq!("17".parse::<HiccupRequest>(), Ok(HiccupRequest::Core(17)));
    }

    #[test]
    fn rejects_other_values_and_says_what_is_accepted() {
        for bad in ["", "on", "-1", "1.5", "core2", "autoo"] {
            let e = bad.parse::<HiccupRequest>().unwrap_err();
            assert!(
                e.contains("auto") && e.contains("off") && e.contains("core number"),
                "{e}"
            );
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
    }

    #[test]
    fn auto_takes_the_lowest_spare_core() {
        assert_eq!(choose_core(HiccupRequest::Auto, &[0, 1], &[0, 1, 2, 3]), Ok(2));
        assert_eq!(choose_core(HiccupRequest::Auto, &[2, 3], &[3, 2, 1, 0]), Ok(0));
        assert_eq!(choose_core(HiccupRequest::Auto, &[], &[5, 4]), Ok(4));
    }

    #[test]
    fn auto_without_a_spare_core_says_why() {
        let e = choose_core(HiccupRequest::Auto, &[0, 1], &[0, 1])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("skipped: no spare core"), "{e}");
        assert!(e.contains("cores 0 and 1"), "{e}");
        assert!(e.contains("hot thread"), "{e}");
        let e = choose_core(HiccupRequest::Auto, &[2, 0, 1], &[0, 1, 2])
            .unwrap_err()
            .to_string();
        assert!(e.contains("cores 0, 1 and 2, all taken"), "{e}");
        let e = choose_core(HiccupRequest::Auto, &[0], &[0]).unwrap_err().to_string();
        assert!(e.contains("core 0, taken"), "{e}");
        let e = choose_core(HiccupRequest::Auto, &[], &[]).unwrap_err().to_string();
        assert!(e.starts_with("skipped: no spare core"), "{e}");
    }

    #[test]
    fn off_is_skipped() {
        assert_eq!(
            choose_core(HiccupRequest::Off, &[0], &[0, 1, 2]).map_err(|e| e.to_string()),
            Err("skipped: --hiccup off".to_owned())
        );
    }

    #[test]
    fn a_forced_core_is_used_even_if_hot() {
        assert_eq!(choose_core(HiccupRequest::Core(3), &[0, 1], &[0, 1, 2, 3]), Ok(3));
        assert_eq!(choose_core(HiccupRequest::Core(1), &[0, 1], &[0, 1, 2, 3]), Ok(1));
    }

    #[test]
    fn an_unavailable_core_names_the_available_ones() {
        let e = choose_core(HiccupRequest::Core(7), &[0], &[0, 1])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("skipped:"), "{e}");
        assert!(e.contains("core 7"), "{e}");
        assert!(e.contains("cores 0 and 1"), "{e}");
    }

    #[test]
    fn default_config() {
        let c = HiccupConfig::default();
        assert_eq!((c.core, c.threshold_ns, c.max_logged), (None, 1_000, 100_000));
    }

    #[test]
    fn a_short_run_counts_every_gap_and_logs_them_in_order() {
        let log = run_for(HiccupConfig::default(), 100);
        check_consistent(&log);
        assert_eq!(log.threshold_ns, 1_000);
        assert_eq!(log.core, None);
        assert!(log.gaps.len() <= 100_000);
    }

    #[test]
    fn the_gap_log_is_capped_and_the_rest_counted() {
        let cfg = HiccupConfig {
            threshold_ns: 1,
            max_logged: 10,
            ..HiccupConfig::default()
        };
        let log = run_for(cfg, 30);
        check_consistent(&log);
        // Tens of thousands of iterations at least; almost all gaps are >= 1 ns.
        assert_eq!(log.gaps.len(), 10, "{log:?}");
        assert!(log.gaps_not_logged > 0, "{log:?}");
    }

    #[test]
    fn runs_pinned_on_an_available_core() {
        let core = *aeron_latency::messaging::available_cores().last().unwrap();
        let log = run_for(
            HiccupConfig {
                core: Some(core),
                ..HiccupConfig::default()
            },
            20,
        );
        assert_eq!(log.core, Some(core));
        check_consistent(&log);
    }

    #[test]
    fn spawning_on_a_missing_core_is_an_error() {
        let e = HiccupMeter::spawn(HiccupConfig {
            core: Some(100_000),
            ..HiccupConfig::default()
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("core 100000"), "{e}");
    }

    #[test]
    fn dropping_a_running_meter_stops_it() {
        let _guard = one_at_a_time();
        let meter = HiccupMeter::spawn(HiccupConfig::default()).unwrap();
        assert!(format!("{meter:?}").contains("HiccupMeter"));
        std::thread::sleep(Duration::from_millis(20));
        let t = Instant::now();
        drop(meter);
        // Generous: the join only waits for one loop iteration.
        assert!(t.elapsed() < Duration::from_secs(10));
    }

    fn hand_built() -> HiccupLog {
        HiccupLog {
            core: Some(2),
            tid: 1234,
            started_ns: 0,
            stopped_ns: 2_000,
            iterations: 50,
            threshold_ns: 5,
            gaps: vec![(100, 10), (200, 50), (250, 5), (1_000, 300)],
            gaps_not_logged: 0,
            all_gaps: Stats::default(),
            histogram: None,
        }
    }

    #[test]
    fn windows_group_logged_gaps_by_start_time() {
        let log = hand_built();
        let w = log.windows(&[0, 200, 260, 1_000, 2_000]);
        assert_eq!(
            w,
            vec![
                HiccupWindow {
                    gaps: 1,
                    max_ns: 10,
                    total_ns: 10
                },
                HiccupWindow {
                    gaps: 2,
                    max_ns: 50,
                    total_ns: 55
                },
                HiccupWindow::default(),
                HiccupWindow {
                    gaps: 1,
                    max_ns: 300,
                    total_ns: 300
                },
            ]
        );
        // A gap exactly at a bound belongs to the window it starts.
        let w = log.windows(&[100, 101, 250, 251]);
        assert_eq!(w[0].gaps, 1);
        assert_eq!(
            w[1],
            HiccupWindow {
                gaps: 1,
                max_ns: 50,
                total_ns: 50
            }
        );
        assert_eq!(
            w[2],
            HiccupWindow {
                gaps: 1,
                max_ns: 5,
                total_ns: 5
            }
        );
        assert!(log.windows(&[]).is_empty());
        assert!(log.windows(&[5]).is_empty());
        assert_eq!(log.windows(&[500, 100]), vec![HiccupWindow::default()]);
    }

    #[test]
    fn overlapping_counts_gaps_touching_the_interval() {
        let log = hand_built();
        assert_eq!(log.overlapping(105, 105), (1, 10));
        assert_eq!(log.overlapping(110, 199), (1, 10)); // touches the end of (100, 10)
        assert_eq!(log.overlapping(111, 199), (0, 0));
        assert_eq!(log.overlapping(240, 252), (2, 50));
        assert_eq!(log.overlapping(0, 2_000), (4, 300));
        assert_eq!(log.overlapping(1_300, 1_400), (1, 300));
        assert_eq!(log.overlapping(1_301, 5_000), (0, 0));
        assert_eq!(log.overlapping(-50, 99), (0, 0));
        assert_eq!(log.overlapping(-50, 100), (1, 10));
        let empty = HiccupLog {
            gaps: Vec::new(),
            ..hand_built()
        };
        assert_eq!(empty.overlapping(0, i64::MAX), (0, 0));
        assert!(empty.windows(&[0, 10]).iter().all(|w| *w == HiccupWindow::default()));
    }

    #[test]
    fn serialises_the_summary_not_the_histogram() {
        let log = run_for(HiccupConfig::default(), 20);
        let json = serde_json::to_string(&log).unwrap();
        assert!(json.contains("\"all_gaps\""), "{json}");
        assert!(!json.contains("histogram"), "{json}");
        let back: HiccupLog = serde_json::from_str(&json).unwrap();
        assert!(back.histogram.is_none());
        // JSON may move the mean's last binary digit; everything else round-trips exactly.
        let (a, b) = (back.all_gaps, log.all_gaps);
        assert!((a.mean - b.mean).abs() <= b.mean.abs() * 1e-12, "{a:?} vs {b:?}");
        assert_eq!(Stats { mean: 0.0, ..a }, Stats { mean: 0.0, ..b });
        assert_eq!(back.gaps, log.gaps);
        assert_eq!(
            (back.iterations, back.tid, back.started_ns, back.stopped_ns),
            (log.iterations, log.tid, log.started_ns, log.stopped_ns)
        );
        let w = HiccupWindow {
            gaps: 1,
            max_ns: 2,
            total_ns: 3,
        };
        assert_eq!(
            serde_json::from_str::<HiccupWindow>(&serde_json::to_string(&w).unwrap()).unwrap(),
            w
        );
    }
}
