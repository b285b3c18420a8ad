//! Lining episodes up with samples: every off-CPU episode, stall, timed page fault, probe read
//! and hiccup that overlaps a sample's window `[intended send time, receive time]` on
//! CLOCK_MONOTONIC, with how much of it it covers. Shared by the tail analysis
//! ([`crate::analysis::verdict`]) and the band analysis ([`crate::analysis::bands`]).

use crate::model::process_name;
use crate::model::run_end;
use crate::model::Cause;
use crate::model::HiccupLog;
use crate::model::JitterSide;
use crate::model::OffCpuKind;
use crate::model::Role;
use crate::model::SlowSample;
use crate::model::ThreadJitter;
use crate::units::format_ns;
use crate::units::thousands;
use aeron_latency::messaging::{Backoff, IdleStrategy};

/// What the analysis needs to know about the run.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// Idle strategy of the subscriber side (`None`: not known).
    pub sub_idle: Option<IdleStrategy>,
    /// Idle strategy of the publisher side, if it ran.
    pub pub_idle: Option<IdleStrategy>,
    /// `--delivery channel` was used.
    pub delivery_channel: bool,
    /// `--hot-path-lock` was used.
    pub hot_path_lock: bool,
    /// The run's messages pass through the media driver's sender and receiver (a network
    /// channel, not `aeron:ipc`): its waits are theirs.
    pub driver_on_path: bool,
    /// Samples at or above this latency form the tail (the run's p99.9 from the intended time).
    pub tail_threshold_ns: u64,
    /// Cores this run could use.
    pub cores: usize,
    /// What one minor page fault costs on this machine, ns (0: not measured; faults are then
    /// not lined up with samples). See [`crate::sys::thread::fault_cost_ns`].
    pub fault_cost_ns: u64,
    /// The band the headline explains (`--explain`).
    pub explain: crate::model::Explain,
    /// p50, p90, p99, p99.9 and max of the latency from the intended send time: the band edges
    /// (`None`: no bands, e.g. latency-pub alone).
    pub edges: Option<[u64; 5]>,
}

pub(crate) fn sleeping_idle(idle: Option<&IdleStrategy>) -> bool {
    idle.is_some_and(IdleStrategy::sleeps)
}

/// An episode is a cause of a sample when it covers at least 1/MATERIAL of its latency.
pub const MATERIAL: u64 = 10;

/// One episode overlapping a sample's window.
pub(crate) struct Hit {
    /// The cause.
    pub(crate) key: Cause,
    /// In words (only when asked for).
    pub(crate) words: String,
    /// The hot thread it delayed (0: the process as a whole).
    pub(crate) tid: i32,
    /// How much of the window it covers, ns.
    pub(crate) overlap: u64,
    /// For a preemption: who took the CPU (pid and command name).
    pub(crate) who: Option<(i32, [u8; 16])>,
    /// The thread gave its CPU away in `sched_yield` rather than being preempted (keyed, like
    /// a preemption, by who ran: that task on the hot core is the cause either way).
    pub(crate) yielded: bool,
}

impl Hit {
    /// A hit that is not a preemption; its words are written only when `detail` (the listed
    /// outliers), so the thousands of samples that are only counted stay cheap.
    fn new(key: Cause, tid: i32, overlap: u64, detail: bool, words: impl FnOnce() -> String) -> Hit {
        Hit {
            key,
            words: if detail { words() } else { String::new() },
            tid,
            overlap,
            who: None,
            yielded: false,
        }
    }
}

/// Hypervisor steal (all CPUs) in the group that contains `t`, ns.
pub(crate) fn steal_near(sides: &[&JitterSide], t: i64) -> u64 {
    let Some(side) = sides.first() else { return 0 };
    let b = &side.boundaries;
    let g = (0..b.len().saturating_sub(1)).find(|g| {
        let end = b[g + 1..].iter().flatten().next();
        b[*g].is_some_and(|a| a <= t) && end.is_some_and(|e| t < *e)
    });
    g.and_then(|g| side.steal_ns.get(g).copied().flatten()).unwrap_or(0)
}

pub(crate) fn overlaps(a: (i64, i64), b: (i64, i64)) -> bool {
    a.0 <= b.1 && b.0 <= a.1
}

/// Lines episodes up with samples: what the tail analysis and the band analysis share.
pub(crate) struct Lineup<'a> {
    pub(crate) sides: &'a [&'a JitterSide],
    pub(crate) known: Vec<&'a ThreadJitter>,
    pub(crate) hot: Vec<&'a ThreadJitter>,
    pub(crate) hiccup: Option<&'a HiccupLog>,
    pub(crate) run_end: i64,
    pub(crate) ctx: &'a Context,
    handoff_idle: IdleStrategy,
}

impl<'a> Lineup<'a> {
    pub(crate) fn new(sides: &'a [&'a JitterSide], hiccup: Option<&'a HiccupLog>, ctx: &'a Context) -> Lineup<'a> {
        let known: Vec<&ThreadJitter> = sides.iter().flat_map(|s| s.threads.iter()).collect();
        let hot = known.iter().copied().filter(|t| t.role.is_hot()).collect();
        Lineup {
            sides,
            known,
            hot,
            hiccup,
            run_end: run_end(sides),
            ctx,
            // The messaging crate's hand-off thread idles with its default, backoff.
            handoff_idle: IdleStrategy::Backoff(Backoff::default()),
        }
    }

    pub(crate) fn idle_of(&self, t: &ThreadJitter) -> Option<&IdleStrategy> {
        match t.role {
            Role::Publisher => self.ctx.pub_idle.as_ref(),
            Role::Handoff => Some(&self.handoff_idle),
            _ => self.ctx.sub_idle.as_ref(),
        }
    }

    /// Who `pid` (a task that took a CPU) is, and whether it is one of ours.
    pub(crate) fn name_of(&self, pid: i32, comm: &str) -> (String, bool) {
        if pid == 0 {
            return ("idle".into(), true);
        }
        let known = &self.known;
        match known.iter().find(|k| k.tid == pid) {
            Some(k) if k.role.is_hot() => (format!("{} ({})", k.name, k.role.describe()), true),
            Some(k) if k.role == Role::Main => (format!("{} (main thread)", process_name(known, k.pid)), true),
            Some(k) => (
                format!("{}/{} ({})", process_name(known, k.pid), k.name, k.role.describe()),
                true,
            ),
            // The process analysing (attach, which watches another process): its own reads.
            None if pid == std::process::id() as i32 => (format!("{comm} (pid {pid}, this watcher)"), false),
            None => (format!("{comm} (pid {pid}, not ours)"), false),
        }
    }

    /// Whether `pid` is the idle task or a thread we watch.
    pub(crate) fn is_ours(&self, pid: i32) -> bool {
        pid == 0 || self.known.iter().any(|k| k.tid == pid)
    }

    /// Every episode overlapping the window `[intended, received]` of `s` that `counts` keeps
    /// (given its overlap); words only when `detail`.
    pub(crate) fn hits(&self, s: &SlowSample, detail: bool, counts: &dyn Fn(u64) -> bool) -> Vec<Hit> {
        let w = (s.intended_ns, s.received_ns);
        let mut hits: Vec<Hit> = Vec::new();
        for t in &self.hot {
            self.off_cpu_hits(t, w, detail, counts, &mut hits);
            self.fault_hits(t, s, detail, counts, &mut hits);
            self.stall_hits(t, w, detail, counts, &mut hits);
        }
        self.read_hits(w, detail, &mut hits);
        if let Some(h) = self.hiccup {
            let (n, max) = h.overlapping(w.0, w.1);
            if n > 0 && hits.is_empty() {
                hits.push(Hit {
                    key: Cause::Platform,
                    words: format!("the hiccup meter saw {n} gaps (longest {})", format_ns(max)),
                    tid: 0,
                    overlap: max.min(s.latency_ns),
                    who: None,
                    yielded: false,
                });
            }
        }
        hits
    }

    /// `t`'s off-CPU episodes in the window: blocked (futex when the thread makes futex calls
    /// and does not sleep by design) or preempted (by one of ours or another process).
    fn off_cpu_hits(
        &self,
        t: &ThreadJitter,
        w: (i64, i64),
        detail: bool,
        counts: &dyn Fn(u64) -> bool,
        hits: &mut Vec<Hit>,
    ) {
        for o in t.off_cpu_in(w.0, w.1, self.run_end) {
            let span = o.span(self.run_end);
            let overlap = clip(span, w);
            if !counts(overlap) {
                continue;
            }
            let len = format_ns((span.1 - span.0).max(0) as u64);
            let (key, words) = match o.kind {
                OffCpuKind::Blocked => {
                    let futex = t.total.futex.unwrap_or(0) > 0 && !sleeping_idle(self.idle_of(t));
                    let key = if futex { Cause::Futex } else { Cause::Blocked };
                    let how = if futex {
                        "blocked (this thread makes futex calls)"
                    } else {
                        "blocked"
                    };
                    (key, format!("{} {how} for {len}", t.name))
                }
                OffCpuKind::Preempted | OffCpuKind::Yielded => {
                    let (who, ours) = self.name_of(o.next_pid, &o.next_name());
                    let key = if ours {
                        Cause::PreemptedOwn
                    } else {
                        Cause::PreemptedForeign
                    };
                    let words = if o.kind == OffCpuKind::Yielded {
                        format!("{} gave its CPU to {who} in sched_yield for {len}", t.name)
                    } else {
                        format!("{} preempted for {len} ({who} took the CPU)", t.name)
                    };
                    (key, words)
                }
            };
            hits.push(Hit {
                key,
                words: if detail { words } else { String::new() },
                tid: t.tid,
                overlap,
                who: (o.kind != OffCpuKind::Blocked).then_some((o.next_pid, o.next_comm)),
                yielded: o.kind == OffCpuKind::Yielded,
            });
        }
    }

    /// `t`'s page faults in the window (timed by perf): each costs about what a fault measured
    /// here costs.
    fn fault_hits(
        &self,
        t: &ThreadJitter,
        s: &SlowSample,
        detail: bool,
        counts: &dyn Fn(u64) -> bool,
        hits: &mut Vec<Hit>,
    ) {
        let faults = t.faults_in(s.intended_ns, s.received_ns) as u64;
        if faults == 0 || self.ctx.fault_cost_ns == 0 {
            return;
        }
        let overlap = (faults * self.ctx.fault_cost_ns).min(s.latency_ns);
        if !counts(overlap) {
            return;
        }
        hits.push(Hit::new(Cause::PageFaults, t.tid, overlap, detail, || {
            format!(
                "{} took {} page faults in its window (about {} each, measured here)",
                t.name,
                thousands(faults),
                format_ns(self.ctx.fault_cost_ns)
            )
        }));
    }

    /// `t`'s stalls in the window that being off CPU does not explain, by what else lines up:
    /// its own page faults, steal, the hiccup meter, or nothing (a stall without a switch).
    fn stall_hits(
        &self,
        t: &ThreadJitter,
        w: (i64, i64),
        detail: bool,
        counts: &dyn Fn(u64) -> bool,
        hits: &mut Vec<Hit>,
    ) {
        let Some(log) = &t.stalls else { return };
        for (start, len) in log.overlapping(w.0, w.1) {
            let stall = (start, start + len as i64);
            if !counts(clip(stall, w)) {
                continue;
            }
            let off: u64 = t
                .off_cpu_in(stall.0, stall.1, self.run_end)
                .iter()
                .map(|o| clip(o.span(self.run_end), stall))
                .sum();
            if off * 2 >= len {
                continue; // being off CPU explains most of it
            }
            // The thread's own timed page faults inside the stall are counted once, by their own
            // hits (above, at the measured cost each): the stall is only what they do not explain.
            let faulting = (t.faults_in(stall.0, stall.1) as u64).saturating_mul(self.ctx.fault_cost_ns);
            let overlap = clip(stall, w).saturating_sub(faulting);
            if overlap == 0 || !counts(overlap) {
                continue;
            }
            let (key, what) = self.stall_cause(t, stall, len, faulting, overlap);
            hits.push(Hit::new(key, t.tid, overlap, detail, || {
                format!("{} stalled for {} {what}", t.name, format_ns(len))
            }));
        }
    }

    /// What a stall of `len` ns is, and the words for it.
    fn stall_cause(
        &self,
        t: &ThreadJitter,
        stall: (i64, i64),
        len: u64,
        faulting: u64,
        overlap: u64,
    ) -> (Cause, String) {
        let steal = steal_near(self.sides, stall.0);
        let meter = self.hiccup.is_some_and(|h| h.overlapping(stall.0, stall.1).0 > 0);
        // Without a complete episode record, "no context switch" cannot be claimed.
        let resolvable = t.episodes && t.off_cpu_lost == 0;
        if faulting > 0 && overlap <= faulting.saturating_mul(FAULT_SLOWDOWN_MAX - 1) {
            // A stall within FAULT_SLOWDOWN_MAX times its faults' measured time is those faults
            // running slow, not a second cause beside them.
            (
                Cause::PageFaults,
                format!(
                    "with {} page faults in it (slower than the {} each measured here)",
                    thousands(faulting / self.ctx.fault_cost_ns),
                    format_ns(self.ctx.fault_cost_ns)
                ),
            )
        } else if steal >= len && steal > 0 {
            // Steal comes in 10 ms ticks per group: this is co-occurrence, said so.
            (
                Cause::Steal,
                format!(
                    "in a group where the hypervisor took {} of CPU time from the VM (steal)",
                    format_ns(steal)
                ),
            )
        } else if !resolvable {
            (
                Cause::Stall,
                "(off CPU or on CPU: no complete switch record to tell)".to_owned(),
            )
        } else if meter {
            (
                Cause::Platform,
                "on CPU while the hiccup meter saw a gap too".to_owned(),
            )
        } else if t.role == Role::Service {
            // A service's gap is one its messages waited through (the tap's stamps), not a gap
            // in a loop known to do nothing else: its own work is the likeliest cause.
            (
                Cause::Busy,
                "on CPU without a context switch while the message waited (its own work, an interrupt, an SMI)"
                    .to_owned(),
            )
        } else {
            (Cause::Stall, "on CPU without a context switch".to_owned())
        }
    }

    /// The probe's own counter reads in the window (either side's delays this sample if it
    /// overlaps).
    fn read_hits(&self, w: (i64, i64), detail: bool, hits: &mut Vec<Hit>) {
        for sd in self.sides {
            let owner = sd
                .threads
                .iter()
                .find(|t| t.role.is_hot() && t.role != Role::Handoff)
                .map_or("the probe", |t| t.name.as_str());
            for (a, l) in sd.reads.iter().filter(|(a, l)| overlaps((*a, a + *l as i64), w)) {
                let overlap = clip((*a, a + *l as i64), w);
                hits.push(Hit::new(Cause::ProbeReads, 0, overlap, detail, || {
                    format!("{owner} paused {} for the probe's own counter read", format_ns(*l))
                }));
            }
        }
    }
}

/// How many times its measured cost a page fault may take in a stall and still be named as the
/// cause of that stall. A first touch costs more with cold caches or a busy allocator, and
/// under a hypervisor it can fault twice (the guest's fault, then the host's, which the guest
/// cannot time). With a limit of 2x, one of three `--no-prefault` runs in a clean-clone CI run
/// on the 2-core VM (2026-11-26) named latency-pub stalled on its CPU (38.5% of the p50-p90
/// band) above its page faults (30.8%): its faults took about 2.25x the cost measured after the
/// run. A stall longer than this is something else that met a fault.
const FAULT_SLOWDOWN_MAX: u64 = 4;

/// How much of window `w` the span `e` covers, ns.
fn clip(e: (i64, i64), w: (i64, i64)) -> u64 {
    (e.1.min(w.1) - e.0.max(w.0)).max(0) as u64
}
