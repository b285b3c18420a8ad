//! Jitter diagnosis: per-thread OS counters at the 20 group boundaries, off-CPU episodes of the
//! hot threads, stalls the hot loops saw themselves, the slowest samples, and a verdict.
//!
//! # Guarantees
//! - Counters are read at group boundaries only (21 times a run), by the hot thread itself,
//!   never per message: one `read` of a perf group plus one or two `pread`s of `/proc` per
//!   watched thread, into stack buffers. The time this takes is measured and reported
//!   ([`JitterSide::read_cost`](crate::model::JitterSide::read_cost)) and the verdict says when a slow sample lines up with it.
//! - Per message, a hot loop only compares a clock reading with the previous one
//!   ([`StallLog::tick`](crate::model::StallLog::tick)) and offers the latency to a fixed-size heap ([`SlowSamples`](crate::measure::slow::SlowSamples))
//!   and to the stratified sample of the bands ([`BandSampler`](crate::measure::bands::BandSampler)).
//!   None of them allocates (all are sized before the run; `crates/probe/tests/alloc.rs`).
//! - Source: perf events where permitted (futex syscalls per thread from the
//!   `syscalls:sys_enter_futex` tracepoints, migrations and faults from software counters, and
//!   `sched:sched_switch` samples with switch-in records that give every off-CPU episode of a
//!   hot thread with its cause and who took the CPU, and a page-fault sample per fault of a hot
//!   thread, with its time); else `/proc` alone (context switches,
//!   faults, run-queue delay, but no futex count and no per-episode cause). The report names
//!   the source and, for `/proc`, why perf was not used.
//! - Timing model: every timestamp here is `CLOCK_MONOTONIC` ([`crate::sys::clock::now_ns`]; perf
//!   records are opened with `clockid = CLOCK_MONOTONIC`), the clock the latencies use, so an
//!   episode and a slow sample line up across processes on one host.
//!
//! # Example
//! ```
//! use latency_probe::measure::monitor::Monitor;
//! use latency_probe::model::{Mode, Role};
//!
//! let mut m = Monitor::new(Mode::Proc).unwrap();
//! m.watch(std::process::id(), latency_probe::sys::thread::current_tid(), Role::Subscriber);
//! m.snapshot(0);
//! std::thread::sleep(std::time::Duration::from_millis(2));
//! m.snapshot(latency_probe::model::GROUPS);
//! let side = m.finish();
//! assert!(side.threads[0].total.voluntary.unwrap() >= 1);
//! ```

use crate::model::JitterSide;

use crate::model::ReadCost;

use crate::model::GROUPS;

use crate::model::StallLog;

use crate::model::Role;

use crate::model::Source;
use crate::model::SourceInfo;

use crate::model::Counts;

use crate::sys::clock::now_ns;

use crate::model::ThreadJitter;

use crate::model::Mode;
use crate::sys::perf::PerfUnavailable;

/// Gaps of a hot loop at least this long are logged as stalls (5 µs: a page fault is ~4 µs, a
/// preemption on this class of machine 15–65 µs).
pub const STALL_THRESHOLD_NS: u64 = 5_000;

/// A spinning hot loop hands its stall log a clock reading every this many empty polls (and
/// after every poll that read something; with any other idle strategy, every poll): 16 empty
/// polls take well under 1 µs here (a poll ~10-15 ns plus a spin-loop hint, up to ~40 ns on
/// CPUs with a slow `pause`), far under the threshold, so no stall of 5 µs goes unseen, while
/// an echo that lands during a clock read (~20 ns of a ~40 ns iteration when every poll read
/// the clock) is held up by it on one poll in 16. A logged stall's length includes up to that
/// much of normal polling.
pub const STALL_TICK_EVERY: u32 = 16;

#[derive(Debug)]
struct Watched {
    pid: u32,
    tid: i32,
    name: String,
    role: Role,
    reader: crate::sys::perf::ThreadReader,
}

/// Why a monitor could not be made.
#[derive(Debug)]
pub enum MonitorError {
    /// Perf was asked for (`--diagnostics perf`) and cannot be used.
    PerfRefused(PerfUnavailable),
}

impl std::fmt::Display for MonitorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MonitorError::PerfRefused(why) => write!(f, "--diagnostics perf: {why}"),
        }
    }
}

impl std::error::Error for MonitorError {}

/// Reads the counters of a set of threads at group boundaries. Owned by the hot thread.
#[derive(Debug)]
pub struct Monitor {
    source: SourceInfo,
    perf: Option<crate::sys::perf::PerfSetup>,
    check: Option<crate::sys::perf::PerfCheck>,
    threads: Vec<Watched>,
    /// `snaps[slot * threads + i]`; slots `0..=GROUPS`.
    snaps: Vec<Option<Counts>>,
    times: [Option<i64>; GROUPS + 1],
    steal: [Option<u64>; GROUPS + 1],
    stat: Option<std::fs::File>,
    cost: ReadCost,
    reads: Vec<(i64, u64)>,
    stalls: Vec<(i32, StallLog)>,
    notes: Vec<String>,
}

impl Monitor {
    /// Chooses the source. `Mode::Perf` fails with the reason perf is unusable; `Auto` falls back
    /// to `/proc` and keeps the reason.
    ///
    /// # Errors
    /// Only for `Mode::Perf`, with the reason and the fix.
    pub fn new(mode: Mode) -> Result<Monitor, MonitorError> {
        let (perf, source) = match mode {
            Mode::Off => (
                None,
                SourceInfo {
                    name: Source::Off,
                    reason: Some("--diagnostics off".into()),
                },
            ),
            Mode::Proc => (
                None,
                SourceInfo {
                    name: Source::Proc,
                    reason: Some("--diagnostics proc".into()),
                },
            ),
            Mode::Auto | Mode::Perf => match crate::sys::perf::PerfSetup::probe() {
                Ok(p) => (
                    Some(p),
                    SourceInfo {
                        name: Source::Perf,
                        reason: None,
                    },
                ),
                Err(why) if mode == Mode::Perf => return Err(MonitorError::PerfRefused(why)),
                Err(why) => (
                    None,
                    SourceInfo {
                        name: Source::Proc,
                        reason: Some(why.to_string()),
                    },
                ),
            },
        };
        let (perf, check) = perf.unzip();
        let mut notes = Vec::new();
        if perf.is_some() && !crate::sys::perf::yields_known() {
            notes.push(
                "a yield (sched_yield) cannot be told from a preemption here: the kernel hides its symbols' \
                 addresses from this process (kernel.kptr_restrict; run as root), so yields count as preemptions"
                    .to_owned(),
            );
        }
        Ok(Monitor {
            source,
            perf,
            check,
            threads: Vec::new(),
            snaps: Vec::new(),
            times: [None; GROUPS + 1],
            steal: [None; GROUPS + 1],
            stat: std::fs::File::open("/proc/stat").ok(),
            cost: ReadCost::default(),
            reads: Vec::with_capacity(GROUPS + 1),
            stalls: Vec::new(),
            notes,
        })
    }

    /// Whether thread `tid` is watched (its counters could be opened).
    #[must_use]
    pub fn watches(&self, tid: i32) -> bool {
        self.threads.iter().any(|w| w.tid == tid)
    }

    /// What could not be watched so far, and why.
    #[must_use]
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Whether the monitor reads anything.
    #[must_use]
    pub fn is_on(&self) -> bool {
        self.source.name != Source::Off
    }

    /// Watches one thread. A thread that cannot be watched (gone, not permitted) is noted, not
    /// an error.
    pub fn watch(&mut self, pid: u32, tid: i32, role: Role) {
        if !self.is_on() || self.threads.iter().any(|w| w.tid == tid) {
            return;
        }
        let name = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
            .map(|s| s.trim_end().to_owned())
            .unwrap_or_else(|_| format!("tid {tid}"));
        match crate::sys::perf::ThreadReader::open(pid, tid, role.is_hot(), self.perf.as_ref()) {
            Ok(reader) => {
                self.threads.push(Watched {
                    pid,
                    tid,
                    name,
                    role,
                    reader,
                });
                self.snaps.resize(self.threads.len() * (GROUPS + 1), None);
                // Re-layout: snapshots are taken only after all watches, so resizing is enough
                // as long as none were taken yet.
                debug_assert!(
                    self.times.iter().all(Option::is_none),
                    "watch before the first snapshot"
                );
            }
            Err(e) => self
                .notes
                .push(format!("could not watch {name} ({}, tid {tid}): {e}", role.describe())),
        }
    }

    /// Watches every thread of `pid` not watched yet; `role` names them (the main thread of a
    /// process is [`Role::Main`] unless `role` says otherwise by name).
    pub fn watch_process(&mut self, pid: u32, role: impl Fn(i32, &str) -> Role) {
        let Ok(threads) = crate::sys::thread::threads_of(pid) else {
            self.notes.push(format!("could not list the threads of process {pid}"));
            return;
        };
        let me = std::process::id();
        for (tid, name) in threads {
            if pid == me && name == crate::sys::perf::CLOSING_THREAD {
                continue; // an earlier monitor's events being closed
            }
            let r = role(tid, &name);
            self.watch(pid, tid, r);
        }
    }

    /// Watches what a run side needs: the hot thread `hot_tid` as `role`, every other thread of
    /// this process (by name: conductor, hand-off, lock helper; the main thread), and, when
    /// the media driver runs in another process (`driver`, from `cnc.dat`), its threads.
    pub fn watch_run(&mut self, hot_tid: i32, role: Role, driver: Option<u32>) {
        let me = std::process::id();
        self.watch(me, hot_tid, role);
        self.watch_process(me, |tid, name| {
            if tid == me as i32 {
                Role::Main
            } else {
                Role::from_thread_name(name)
            }
        });
        if let Some(d) = driver.filter(|d| *d != me) {
            self.watch_process(d, |tid, name| match Role::from_thread_name(name) {
                Role::Meter => Role::Meter,
                _ if tid == d as i32 && name.starts_with("latency-") => Role::Main,
                _ => Role::Driver,
            });
        }
    }

    /// Adds a stall log for the hot thread `tid` (the loop ticks it; handed back in
    /// [`Monitor::finish`] through [`Monitor::set_stalls`]).
    pub fn set_stalls(&mut self, tid: i32, log: StallLog) {
        self.stalls.retain(|(t, _)| *t != tid);
        self.stalls.push((tid, log));
    }

    /// Reads every watched thread into boundary `slot` (`g` = group `g` starts; [`GROUPS`] =
    /// the measured period ends). The first call for a slot wins. Slots skipped since the last
    /// one taken (one poll crossed two boundaries) get the same reading: their groups are empty
    /// at this resolution rather than folded into a neighbour. No allocation.
    pub fn snapshot(&mut self, slot: usize) {
        if !self.is_on() || slot > GROUPS || self.times[slot].is_some() {
            return;
        }
        let start = now_ns();
        let n = self.threads.len();
        let first = match self.times[..slot].iter().rposition(Option::is_some) {
            Some(last) => last + 1,
            None => slot,
        };
        for (i, w) in self.threads.iter_mut().enumerate() {
            let c = w.reader.read();
            for s in first..=slot {
                self.snaps[s * n + i] = Some(c);
            }
        }
        let steal = self.stat.as_ref().and_then(crate::sys::perf::total_steal_ns);
        for s in first..=slot {
            self.steal[s] = steal;
        }
        if slot == GROUPS {
            // The measured period is over: stop recording episodes so the drain in `finish`
            // ends even while the thread keeps being switched.
            for w in &mut self.threads {
                w.reader.stop_sampling();
            }
        }
        let end = now_ns();
        for s in first..=slot {
            self.times[s] = Some(start);
        }
        let len = (end - start).max(0) as u64;
        self.cost.reads += 1;
        self.cost.total_ns += len;
        self.cost.max_ns = self.cost.max_ns.max(len);
        if self.reads.len() < self.reads.capacity() {
            self.reads.push((start, len));
        }
    }

    /// The hypervisor's steal in each group (from the group's boundary to the next one read).
    fn steal_per_group(&self) -> Vec<Option<u64>> {
        (0..GROUPS)
            .map(|g| {
                let a = self.steal[g]?;
                let b = ((g + 1)..=GROUPS).find_map(|s| self.steal[s])?;
                Some(b.saturating_sub(a))
            })
            .collect()
    }

    /// Ends the run: per-thread totals and per-group differences, off-CPU episodes inside the
    /// measured period.
    #[must_use]
    pub fn finish(mut self) -> JitterSide {
        // Measured first, while this thread's perf events are still on: its faults fall after
        // the last boundary, so the line-up below leaves them out.
        let me = crate::sys::thread::current_tid();
        let fault_cost_ns = self
            .threads
            .iter()
            .any(|w| w.tid == me && w.reader.has_fault_sampler())
            .then(crate::sys::thread::fault_cost_ns)
            .flatten();
        let n = self.threads.len();
        let slots: Vec<usize> = (0..=GROUPS).filter(|s| self.times[*s].is_some()).collect();
        let (first, last) = (slots.first().copied(), slots.last().copied());
        let span = first
            .zip(last)
            .map(|(a, b)| (self.times[a].unwrap_or(0), self.times[b].unwrap_or(0)));
        let mut threads = Vec::with_capacity(n);
        let mut readers = Vec::with_capacity(n);
        for (i, mut w) in self.threads.drain(..).enumerate() {
            let at = |s: usize| self.snaps[s * n + i];
            let total = match (first, last) {
                (Some(a), Some(b)) => at(b).zip(at(a)).map(|(b, a)| b.since(&a)).unwrap_or_default(),
                _ => Counts::default(),
            };
            let groups = (0..GROUPS)
                .map(|g| {
                    let start = at(g)?;
                    let end = ((g + 1)..=GROUPS).find_map(at)?;
                    Some(end.since(&start))
                })
                .collect();
            let mut off_cpu = Vec::new();
            let lost = w.reader.drain_switches(&mut off_cpu);
            let mut fault_times = Vec::new();
            let fault_times_lost = w.reader.drain_faults(&mut fault_times);
            if let Some((a, b)) = span {
                off_cpu.retain(|o| o.in_ns.unwrap_or(i64::MAX) >= a && o.out_ns <= b);
                fault_times.retain(|t| (a..=b).contains(t));
            }
            fault_times.sort_unstable();
            let stalls = self
                .stalls
                .iter()
                .position(|(t, _)| *t == w.tid)
                .map(|p| self.stalls.swap_remove(p).1);
            threads.push(ThreadJitter {
                pid: w.pid,
                tid: w.tid,
                name: w.name,
                role: w.role,
                total,
                groups,
                off_cpu,
                off_cpu_lost: lost,
                episodes: w.reader.has_sampler(),
                fault_times: w.reader.has_fault_sampler().then_some(fault_times),
                fault_times_lost,
                stalls,
            });
            readers.push(w.reader);
        }
        crate::sys::perf::close_later((readers, self.check.take()));
        let steal_ns = self.steal_per_group();
        JitterSide {
            source: self.source,
            threads,
            boundaries: self.times.to_vec(),
            steal_ns,
            read_cost: self.cost,
            reads: self.reads,
            notes: self.notes,
            fault_cost_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::slow::SlowSamples;
    use crate::model::OffCpu;
    use crate::model::OffCpuKind;
    use crate::model::SlowSample;
    use crate::sys::thread::current_tid;
    use crate::sys::thread::thread_faults;

    #[test]
    fn filling_the_slow_samples_and_a_stall_log_takes_no_page_fault() {
        // 4,096 samples are 160 KiB (40 pages): written when allocated, not while measuring.
        let mut slow = SlowSamples::new(4096);
        let mut stalls = StallLog::new(1, 100_000);
        let before = thread_faults().unwrap();
        for i in 0..4096u64 {
            slow.offer(SlowSample {
                latency_ns: i,
                seq: i,
                intended_ns: 0,
                sent_ns: 0,
                received_ns: 0,
            });
        }
        for t in 0..100_000i64 {
            stalls.tick(t * 10);
        }
        let faults = thread_faults().unwrap() - before;
        assert!(faults < 5, "{faults} page faults");
        assert!(stalls.stalls.len() > 99_000, "{} stalls logged", stalls.stalls.len());
    }

    #[test]
    fn stall_log_logs_long_gaps_and_counts_overflow() {
        let mut s = StallLog::new(100, 2);
        for t in [1, 50, 300, 310, 1000, 1001, 5000] {
            s.tick(t);
        }
        assert_eq!(s.count, 3);
        assert_eq!(s.stalls, vec![(50, 250), (310, 690)]);
        assert_eq!(s.not_logged, 1);
        assert_eq!(s.max_ns, 3999);
        assert_eq!(s.overlapping(400, 500).collect::<Vec<_>>(), vec![(310, 690)]);
        assert_eq!(s.overlapping(1001, 2000).count(), 0);
        assert_eq!(s.overlapping(0, 60).count(), 1);
    }

    #[test]
    fn off_cpu_lookup_finds_exactly_the_overlapping_episodes() {
        let ep = |a: i64, b: Option<i64>| OffCpu {
            out_ns: a,
            in_ns: b,
            cpu: 0,
            kind: OffCpuKind::Preempted,
            next_pid: 0,
            next_comm: [0; 16],
        };
        let t = ThreadJitter {
            pid: 1,
            tid: 1,
            name: "t".into(),
            role: Role::Subscriber,
            total: Counts::default(),
            groups: vec![],
            off_cpu: vec![ep(10, Some(20)), ep(30, Some(40)), ep(50, Some(60)), ep(70, None)],
            off_cpu_lost: 0,
            episodes: true,
            fault_times: None,
            fault_times_lost: 0,
            stalls: None,
        };
        let starts = |a, b| t.off_cpu_in(a, b, 100).iter().map(|o| o.out_ns).collect::<Vec<_>>();
        assert_eq!(starts(0, 5), Vec::<i64>::new());
        assert_eq!(starts(15, 35), vec![10, 30]);
        assert_eq!(starts(20, 30), vec![10, 30]);
        assert_eq!(starts(41, 49), Vec::<i64>::new());
        assert_eq!(starts(90, 200), vec![70], "an open episode lasts to the end of the run");
        // Same answer as a linear scan, everywhere.
        for a in 0..110 {
            for b in a..110 {
                let linear: Vec<i64> = t
                    .off_cpu
                    .iter()
                    .filter(|o| o.out_ns <= b && o.in_ns.unwrap_or(100) >= a)
                    .map(|o| o.out_ns)
                    .collect();
                assert_eq!(starts(a, b), linear, "[{a}, {b}]");
            }
        }
    }

    #[test]
    fn slow_samples_keep_the_slowest_sorted() {
        let mut k = SlowSamples::new(3);
        for (i, l) in [5_u64, 1, 9, 7, 3, 8].into_iter().enumerate() {
            k.offer(SlowSample {
                latency_ns: l,
                seq: i as u64,
                intended_ns: 0,
                sent_ns: 0,
                received_ns: 0,
            });
        }
        let v: Vec<u64> = k.into_sorted().iter().map(|s| s.latency_ns).collect();
        assert_eq!(v, vec![9, 8, 7]);
    }

    #[test]
    fn counts_subtract_and_add_field_by_field() {
        let a = Counts {
            futex: Some(10),
            voluntary: Some(3),
            wakeups: 5,
            ..Counts::default()
        };
        let b = Counts {
            futex: Some(15),
            voluntary: Some(4),
            wakeups: 9,
            ..Counts::default()
        };
        let d = b.since(&a);
        assert_eq!(
            (d.futex, d.voluntary, d.wakeups, d.involuntary),
            (Some(5), Some(1), 4, None)
        );
        assert_eq!(d.plus(&d).futex, Some(10));
    }

    #[test]
    fn mode_parses_and_says_what_is_accepted() {
        assert_eq!("proc".parse::<Mode>(), Ok(Mode::Proc));
        let e = "strace".parse::<Mode>().unwrap_err();
        assert!(e.contains("auto, perf, proc or off"), "{e}");
    }

    #[test]
    fn a_boundary_skipped_inside_one_poll_gets_an_empty_group() {
        let mut m = Monitor::new(Mode::Proc).unwrap();
        m.watch(std::process::id(), current_tid(), Role::Subscriber);
        m.snapshot(0);
        std::thread::sleep(std::time::Duration::from_millis(1));
        m.snapshot(3); // groups 1 and 2 started within the same poll as group 3
        std::thread::sleep(std::time::Duration::from_millis(1));
        m.snapshot(GROUPS);
        let side = m.finish();
        let t = &side.threads[0];
        let g = |i: usize| t.groups[i].unwrap();
        assert!(g(0).voluntary.unwrap() >= 1, "group 0 keeps its own counts");
        assert_eq!((g(1).voluntary, g(2).voluntary), (Some(0), Some(0)));
        assert_eq!(side.read_cost.reads, 3);
        assert_eq!(side.boundaries[1], side.boundaries[3]);
        assert!(t.groups[4..]
            .iter()
            .all(|c| c.is_some_and(|c| c.voluntary == Some(0)) || c.is_none()));
    }

    #[test]
    fn a_thread_closing_an_earlier_monitor_s_events_is_not_watched() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let closing = std::thread::Builder::new()
            .name(crate::sys::perf::CLOSING_THREAD.into())
            .spawn(move || rx.recv())
            .unwrap();
        let mut m = Monitor::new(Mode::Proc).unwrap();
        m.watch_process(std::process::id(), |_, _| Role::Other);
        let side = m.finish();
        tx.send(()).unwrap();
        closing.join().unwrap().unwrap();
        assert!(!side.threads.is_empty());
        assert!(
            side.threads.iter().all(|t| t.name != crate::sys::perf::CLOSING_THREAD),
            "{:?}",
            side.threads.iter().map(|t| &t.name).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_monitor_splits_counts_into_groups() {
        let mut m = Monitor::new(Mode::Proc).unwrap();
        m.watch(std::process::id(), current_tid(), Role::Subscriber);
        m.snapshot(0);
        std::thread::sleep(std::time::Duration::from_millis(1));
        m.snapshot(1);
        m.snapshot(1); // ignored: first call wins
        std::thread::sleep(std::time::Duration::from_millis(1));
        m.snapshot(GROUPS);
        let side = m.finish();
        let t = &side.threads[0];
        let g0 = t.groups[0].unwrap();
        let g1 = t.groups[1].unwrap();
        assert!(
            g0.voluntary.unwrap() >= 1 && g1.voluntary.unwrap() >= 1,
            "{g0:?} {g1:?}"
        );
        assert_eq!(g0.plus(&g1).voluntary, t.total.voluntary, "groups add up to the total");
        assert!(
            t.groups[2..].iter().all(|c| c.is_some_and(|c| c.voluntary == Some(0))),
            "groups never started are empty"
        );
        assert_eq!(side.read_cost.reads, 3);
        assert_eq!(side.source.name, Source::Proc);
    }

    #[test]
    fn perf_counts_futex_calls_of_a_blocking_thread_where_permitted() {
        let mut m = match Monitor::new(Mode::Perf) {
            Ok(m) => m,
            Err(why) => {
                eprintln!("skipped: {why}");
                return;
            }
        };
        m.watch(std::process::id(), current_tid(), Role::Consumer);
        m.snapshot(0);
        let (tx, rx) = crossbeam_channel::bounded::<u32>(0);
        let h = std::thread::spawn(move || {
            for i in 0..20 {
                std::thread::sleep(std::time::Duration::from_micros(200));
                tx.send(i).unwrap();
            }
        });
        while rx.recv().is_ok() {}
        h.join().unwrap();
        m.snapshot(GROUPS);
        let side = m.finish();
        let t = &side.threads[0];
        assert!(t.total.futex.unwrap() >= 10, "{:?}", t.total);
        assert!(
            t.off_cpu.iter().filter(|o| o.kind == OffCpuKind::Blocked).count() >= 10,
            "{:?}",
            t.off_cpu
        );
        assert!(t.off_cpu.iter().all(|o| o.in_ns.is_none_or(|i| i >= o.out_ns)));
    }

    #[test]
    fn perf_tells_a_yield_from_a_preemption_where_permitted() {
        let mut m = match Monitor::new(Mode::Perf) {
            Ok(m) => m,
            Err(why) => {
                eprintln!("skipped: {why}");
                return;
            }
        };
        if !crate::sys::perf::yields_known() {
            eprintln!("skipped: the kernel hides its symbols' addresses from this process");
            return;
        }
        // This thread and another on one core, both yielding: each yield of this one runs the
        // other (runnable), so it leaves its CPU in sched_yield, not preempted.
        let core = core_affinity::get_core_ids().and_then(|c| c.last().copied()).unwrap();
        assert!(core_affinity::set_for_current(core));
        m.watch(std::process::id(), current_tid(), Role::Consumer);
        m.snapshot(0);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s2 = stop.clone();
        let other = std::thread::spawn(move || {
            core_affinity::set_for_current(core);
            while !s2.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::yield_now();
            }
        });
        let until = std::time::Instant::now() + std::time::Duration::from_millis(20);
        while std::time::Instant::now() < until {
            std::thread::yield_now();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        m.snapshot(GROUPS);
        other.join().unwrap();
        let side = m.finish();
        let t = &side.threads[0];
        let count = |k: OffCpuKind| t.off_cpu.iter().filter(|o| o.kind == k).count();
        assert!(count(OffCpuKind::Yielded) >= 10, "{:?}", t.off_cpu);
        assert!(
            count(OffCpuKind::Yielded) > 4 * count(OffCpuKind::Preempted),
            "yields told from preemptions: {:?}",
            t.off_cpu
        );
    }
}
