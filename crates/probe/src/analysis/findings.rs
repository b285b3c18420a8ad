//! The findings of the tail analysis, one function per kind of finding: each names the
//! thread, the cause, the evidence (counts, and the share of samples above p99.9 whose window
//! an episode of that cause covers) and the usual fix. [`crate::analysis::verdict`] orders
//! them and writes the headline.

use crate::analysis::lineup::sleeping_idle;
use crate::analysis::lineup::Lineup;
use crate::analysis::tail::Tail;
use crate::model::process_name;
use crate::model::Cause;
use crate::model::Finding;
use crate::model::OffCpuKind;
use crate::model::Role;
use crate::model::ThreadJitter;
use crate::units::format_ns;
use crate::units::thousands;
use crate::units::times;
use aeron_latency::messaging::IdleStrategy;
use std::collections::BTreeMap;

/// With `/proc` alone, a spinning hot thread that blocked fewer times than this is not called
/// futex-driven (a stray wait on a page or the mm lock happens); the count is still reported.
pub const PROC_BLOCKS_MIN: u64 = 20;

fn label(t: &ThreadJitter) -> String {
    format!("{} ({}, tid {})", t.name, t.role.describe(), t.tid)
}

/// An idle strategy as a report names it (`backoff`, `sleep-ns:1000`; empty when unknown).
fn idle_name(idle: Option<&IdleStrategy>) -> String {
    idle.map(ToString::to_string).unwrap_or_default()
}

/// 1. Futex-driven jitter: a hot thread that made futex calls (perf), or with `/proc` blocked
///    at least [`PROC_BLOCKS_MIN`] times although its loop never sleeps by itself.
pub(crate) fn futex_findings(lineup: &Lineup<'_>, perf: bool, tail: &Tail) -> Vec<Finding> {
    let mut findings = Vec::new();
    for t in &lineup.hot {
        let vol = t.total.voluntary.unwrap_or(0);
        let idle = lineup.idle_of(t);
        let detected = match t.total.futex {
            Some(f) => f > 0,
            None => vol >= PROC_BLOCKS_MIN && (t.role == Role::Consumer || !sleeping_idle(idle)),
        };
        if !detected {
            continue;
        }
        let share = if perf {
            tail.share(Cause::Futex, Some(t.tid))
        } else {
            None
        };
        let counts = match t.total.futex {
            Some(f) => format!(
                "made {} futex calls and {} voluntary context switches",
                thousands(f),
                thousands(vol)
            ),
            None => format!(
                "blocked {} (voluntary context switches; /proc cannot count futex calls, but with --idle {} \
                 this loop never sleeps by itself, so these are blocking calls such as futex)",
                times(vol),
                idle_name(idle)
            ),
        };
        findings.push(Finding {
            cause: Cause::Futex,
            thread: label(t),
            evidence: format!("{} {}{}", t.name, counts, tail.words(share)),
            fix: futex_fix(t, lineup.ctx.hot_path_lock),
            tail_share: share,
        });
    }
    findings
}

/// The fix for a futex finding, by who blocks.
fn futex_fix(t: &ThreadJitter, hot_path_lock: bool) -> String {
    match t.role {
        Role::Consumer => "the channel hand-off parks the consumer in recv_timeout (a futex wait) and the sender \
                           wakes it (a futex wake) for each message: poll the subscription on the consuming thread \
                           (--delivery inline), or hand off through a lock-free queue the consumer busy-polls"
            .to_owned(),
        Role::Handoff => "the hand-off thread wakes the parked consumer with a futex call per message: drop the \
                          blocking channel from the hot path (--delivery inline)"
            .to_owned(),
        _ if hot_path_lock => "the hot loop takes a std::sync::Mutex that lock-helper also takes; while the \
                               helper holds it the hot thread parks on a futex, and unlocking wakes the other \
                               side: keep locks off the hot path (single writer, lock-free queue, or try_lock \
                               and carry on)"
            .to_owned(),
        _ => format!(
            "something on the hot path blocks: a contended lock, a channel or a condvar; find the call with \
             `perf trace -s -t {}` or `strace -f -e trace=futex -p {}`, then take it off the hot path and \
             busy-spin",
            t.tid, t.pid
        ),
    }
}

/// 2. Blocked by design (a sleeping idle strategy) or in syscalls other than futex (perf tells
///    them apart), or too few times to call futex-driven (`/proc`).
pub(crate) fn blocked_findings(lineup: &Lineup<'_>, tail: &Tail) -> Vec<Finding> {
    let mut findings = Vec::new();
    for t in &lineup.hot {
        let vol = t.total.voluntary.unwrap_or(0);
        let idle = lineup.idle_of(t);
        let perf_no_futex = t.total.futex == Some(0);
        let proc_few = t.total.futex.is_none() && vol < PROC_BLOCKS_MIN && !sleeping_idle(idle);
        if vol == 0 || !(perf_no_futex || proc_few) || t.role == Role::Consumer {
            continue;
        }
        let share = tail.share(Cause::Blocked, Some(t.tid));
        let (evidence, fix) = if sleeping_idle(idle) {
            (
                format!(
                    "{} slept {} in its idle strategy ({}), no futex call{}",
                    t.name,
                    times(vol),
                    idle_name(idle),
                    tail.words(share)
                ),
                "each sleep costs a scheduler wake-up when the next message comes: use --idle spin (or yield) on a \
                 pinned, isolated core"
                    .to_owned(),
            )
        } else {
            let which = if perf_no_futex {
                "other than futex"
            } else {
                "(too few to call futex-driven)"
            };
            (
                format!(
                    "{} blocked {} in syscalls {which}{}",
                    t.name,
                    times(vol),
                    tail.words(share)
                ),
                format!(
                    "find the blocking call with `perf trace -s -t {}`; the hot path must not block",
                    t.tid
                ),
            )
        };
        findings.push(Finding {
            cause: Cause::Blocked,
            thread: label(t),
            evidence,
            fix,
            tail_share: share,
        });
    }
    findings
}

/// 3. Preemption: with perf's episodes, by who took the CPU (ours or another process'); with
///    `/proc` counts only, beside how often our helpers woke.
pub(crate) fn preemption_findings(lineup: &Lineup<'_>, perf: bool, tail: &Tail) -> Vec<Finding> {
    let mut findings = Vec::new();
    for t in &lineup.hot {
        let inv = t.total.involuntary.unwrap_or(0);
        if inv == 0 {
            continue;
        }
        if perf && !t.off_cpu.is_empty() {
            findings.extend(preempted_by_whom(lineup, t, tail));
        } else {
            findings.push(preempted_counted(lineup, t, inv));
        }
    }
    findings
}

/// A hot thread's preemptions from perf's episodes: one finding for our own threads, one for
/// other processes, each naming the four that took the CPU most often.
fn preempted_by_whom(lineup: &Lineup<'_>, t: &ThreadJitter, tail: &Tail) -> Vec<Finding> {
    // Per (ours, who): switches, time off CPU, and how many of the switches were the thread
    // yielding (sched_yield) to that task rather than being preempted by it.
    let mut by: BTreeMap<(bool, String), (u64, u64, u64)> = BTreeMap::new();
    for o in t.off_cpu.iter().filter(|o| o.kind != OffCpuKind::Blocked) {
        let (who, ours) = lineup.name_of(o.next_pid, &o.next_name());
        let (a, b) = o.span(lineup.run_end);
        let e = by.entry((ours, who)).or_default();
        e.0 += 1;
        e.1 += (b - a).max(0) as u64;
        e.2 += u64::from(o.kind == OffCpuKind::Yielded);
    }
    // The side that took more CPU time first: where the tail cannot rank them (no latency
    // samples, as with attach), the verdict's order keeps this one.
    let off_cpu = |ours: bool| -> u64 { by.iter().filter(|((o, _), _)| *o == ours).map(|(_, v)| v.1).sum() };
    let order = if off_cpu(false) > off_cpu(true) {
        [false, true]
    } else {
        [true, false]
    };
    let mut findings = Vec::new();
    for ours in order {
        let mut list: Vec<(&String, &(u64, u64, u64))> = by
            .iter()
            .filter(|((o, _), _)| *o == ours)
            .map(|((_, w), v)| (w, v))
            .collect();
        if list.is_empty() {
            continue;
        }
        // Longest off CPU first: what the tail waited for, rather than the most frequent
        // (a kworker's many short turns before a runtime's few long ones).
        list.sort_by_key(|x| (std::cmp::Reverse(x.1 .1), std::cmp::Reverse(x.1 .0)));
        let n: u64 = list.iter().map(|(_, v)| v.0).sum();
        let total: u64 = list.iter().map(|(_, v)| v.1).sum();
        let yields: u64 = list.iter().map(|(_, v)| v.2).sum();
        // A thread that yielded was not preempted: it lost its CPU, by its own call.
        let (lost, to, yielding) = if yields > 0 {
            let why = "a yielding wait: a channel's receive, a backoff idle strategy";
            let yielding = format!(", {} of them yielding it in sched_yield ({why})", thousands(yields));
            ("lost its CPU", "to", yielding)
        } else {
            ("was preempted", "by", String::new())
        };
        let who = list
            .iter()
            .take(4)
            .map(|(w, v)| format!("{w} {}x for {}", thousands(v.0), format_ns(v.1)))
            .collect::<Vec<_>>()
            .join(", ");
        let cause = if ours {
            Cause::PreemptedOwn
        } else {
            Cause::PreemptedForeign
        };
        let share = tail.share(cause, Some(t.tid));
        let fix = preemption_fix(ours, t.role, lineup.ctx.cores);
        findings.push(Finding {
            cause,
            thread: label(t),
            evidence: format!(
                "{} {lost} {} ({} off CPU) {to} {who}{yielding}; {} runnable on a run queue{}",
                t.name,
                times(n),
                format_ns(total),
                format_ns(t.total.runqueue_wait_ns),
                tail.words(share)
            ),
            fix,
            tail_share: share,
        });
    }
    findings
}

/// The fix for preemption of a hot thread: by its own process's threads (a service's, or the
/// probe's helpers) or by another process.
fn preemption_fix(ours: bool, role: crate::model::Role, cores: usize) -> String {
    if ours && role == crate::model::Role::Service {
        format!(
            "the service's own threads take this thread's core ({} cores here): give the thread a core of \
             its own and its helpers others (taskset -pc CORE TID), or isolate its core (isolcpus/nohz_full)",
            cores
        )
    } else if ours {
        format!(
            "our own helpers have no core of their own ({} cores, both hot threads spin): give the media \
             driver and the aeron-rs conductors a spare core (taskset), or isolate the hot cores \
             (isolcpus/nohz_full) and keep the helpers off them",
            cores
        )
    } else {
        "another process runs on the hot core: isolate it (isolcpus=, cset shield, systemd CPUAffinity= \
         for everything else) or move that process away"
            .to_owned()
    }
}

/// A hot thread's preemptions from `/proc`'s counts: who woke in the same period, and whether
/// our helpers' wake-ups account for them.
fn preempted_counted(lineup: &Lineup<'_>, t: &ThreadJitter, inv: u64) -> Finding {
    let helpers: Vec<&ThreadJitter> = lineup
        .known
        .iter()
        .copied()
        .filter(|h| !h.role.is_hot() && h.role != Role::Main)
        .collect();
    let woke: Vec<String> = helpers
        .iter()
        .filter(|h| h.total.wakeups > 0)
        .map(|h| {
            format!(
                "{}/{} ({}) {}x",
                process_name(&lineup.known, h.pid),
                h.name,
                h.role.describe(),
                thousands(h.total.wakeups)
            )
        })
        .collect();
    let helper_wakeups: u64 = helpers.iter().map(|h| h.total.wakeups).sum();
    let likely = if helper_wakeups >= inv {
        "with every core taken by a spinning hot thread each helper wake-up preempts one, so these are most \
         likely our own helpers"
            .to_owned()
    } else {
        format!(
            "our helpers woke only {} times, so at least {} preemptions came from another process",
            thousands(helper_wakeups),
            thousands(inv - helper_wakeups)
        )
    };
    let woke = if woke.is_empty() {
        "none watched".to_owned()
    } else {
        woke.join(", ")
    };
    Finding {
        cause: Cause::Preempted,
        thread: label(t),
        evidence: format!(
            "{} was preempted {} (involuntary context switches), {} runnable on a run queue; in the \
             same period our helpers woke: {woke}; {likely}",
            t.name,
            times(inv),
            format_ns(t.total.runqueue_wait_ns),
        ),
        fix: "give the media driver and conductors a core of their own or isolate the hot cores; run as root \
              (perf) to see who took the CPU each time"
            .into(),
        tail_share: None,
    }
}

/// 4. Page faults: any on a hot thread; on a helper, 50 or more or any major one (it shares a
///    core with a hot thread). Timed faults (perf, hot threads) line up with samples.
pub(crate) fn fault_findings(lineup: &Lineup<'_>, tail: &Tail) -> Vec<Finding> {
    let mut findings = Vec::new();
    for t in lineup.known.iter().copied() {
        let f = t.total.faults();
        let worth = if t.role.is_hot() {
            f > 0
        } else {
            f >= 50 || t.total.major_faults > 0
        };
        if !worth || t.role == Role::Main || t.role == Role::Meter {
            continue;
        }
        let fix = if t.role.is_hot() {
            "touch (pre-fault) and mlock what the hot loop uses before measuring; run the warm-up long enough"
        } else {
            "it shares a core with a hot thread, so its fault handling is time that thread waits: pre-fault the \
             mapped files (Aeron's pre-touch, MAP_POPULATE) and mlockall before measuring"
        };
        let share = t
            .fault_times
            .as_ref()
            .and_then(|_| tail.share(Cause::PageFaults, Some(t.tid)));
        let words = if share.is_some() {
            tail.words(share)
        } else {
            String::new()
        };
        findings.push(Finding {
            cause: Cause::PageFaults,
            thread: label(t),
            evidence: format!(
                "{} took {} minor and {} major page faults while measuring{words}",
                t.name,
                thousands(t.total.minor_faults),
                thousands(t.total.major_faults),
            ),
            fix: fix.into(),
            tail_share: share,
        });
    }
    findings
}

/// 5. Migrations of a hot thread between CPUs.
pub(crate) fn migration_findings(lineup: &Lineup<'_>) -> Vec<Finding> {
    lineup
        .hot
        .iter()
        .filter_map(|t| {
            let m = t.total.migrations.filter(|m| *m > 0)?;
            Some(Finding {
                cause: Cause::Migrations,
                thread: label(t),
                evidence: format!("{} moved between CPUs {}", t.name, times(m)),
                fix: Cause::Migrations.usual_fix().unwrap_or_default().into(),
                tail_share: None,
            })
        })
        .collect()
}

/// A media driver thread that waited on a run queue for at least this share of the measured
/// period is named, when the run's messages pass through it.
pub const DRIVER_WAIT_MIN_SHARE: f64 = 0.1;

/// 5b. The media driver waited for a core: on a network channel every message passes through
///     its sender and receiver, so its run-queue wait is every message's, p50 included (not a
///     tail cause: it has no episodes to line up). Its fix comes first.
pub(crate) fn driver_wait_findings(lineup: &Lineup<'_>) -> Vec<Finding> {
    let start = lineup.sides.iter().filter_map(|s| s.span()).map(|s| s.0).min();
    let (true, Some(start)) = (lineup.ctx.driver_on_path, start) else {
        return Vec::new();
    };
    let measured = lineup.run_end.saturating_sub(start).max(1) as u64;
    let mut seen = std::collections::BTreeSet::new();
    let waited: Vec<&ThreadJitter> = lineup
        .known
        .iter()
        .copied()
        .filter(|t| t.role == Role::Driver && seen.insert(t.tid))
        .filter(|t| t.total.runqueue_wait_ns as f64 >= DRIVER_WAIT_MIN_SHARE * measured as f64)
        .collect();
    let Some(worst) = waited.iter().max_by_key(|t| t.total.runqueue_wait_ns) else {
        return Vec::new();
    };
    let each = waited
        .iter()
        .map(|t| {
            format!(
                "{} waited {} on a run queue ({:.0}%), on CPU {}",
                label(t),
                format_ns(t.total.runqueue_wait_ns),
                100.0 * t.total.runqueue_wait_ns as f64 / measured as f64,
                format_ns(t.total.run_ns)
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    let p50 = lineup
        .ctx
        .edges
        .map(|e| format!(" (the run's p50 is {})", format_ns(e[0])))
        .unwrap_or_default();
    let spinning = [lineup.ctx.sub_idle.as_ref(), lineup.ctx.pub_idle.as_ref()]
        .into_iter()
        .flatten()
        .any(|i| !i.sleeps());
    let fix = if spinning && lineup.ctx.cores <= 2 {
        format!(
            "the hot threads spin on both of the {} cores, so the driver runs only when the scheduler preempts \
             one: measure a UDP channel on a machine with a core to spare for the driver (pin it there with \
             taskset); here, --idle backoff frees the cores, but its sleeps then add to every message; aeron:ipc \
             does not pass through the driver",
            lineup.ctx.cores
        )
    } else {
        "give the media driver a core the hot threads do not spin on (taskset -pc CORE PID, or `latency-probe \
         driver` started with taskset), and keep other work off it"
            .to_owned()
    };
    vec![Finding {
        cause: Cause::DriverWait,
        thread: label(worst),
        evidence: format!(
            "in the {} measured, {each}: every message on this run's UDP channel passes through the driver, so \
             its waits are the messages' too{p50}",
            format_ns(measured)
        ),
        fix,
        tail_share: None,
    }]
}

/// 6. Causes seen only in the tail's samples: stalls without a context switch, steal, the
///    platform (the hiccup meter saw it too) and the probe's own reads.
pub(crate) fn tail_only_findings(tail: &Tail, resolvable_all: bool) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (cause, what, fix) in [
        (
            Cause::Stall,
            "stalled without a context switch the counters can name",
            "look for page faults, interrupts on the hot cores (/proc/interrupts; irqbalance, IRQ affinity) and \
             hypervisor steal (the st column of vmstat)",
        ),
        (
            Cause::Busy,
            "waited while the service's thread stayed on its CPU without a context switch",
            "see what the thread runs meanwhile (perf record -t TID, or time its handler: a slow message holds back \
             those behind it); if not its own work, interrupts on its core (/proc/interrupts, IRQ affinity)",
        ),
        (
            Cause::Steal,
            "stalled in a group where the hypervisor took CPU time from this VM (steal in /proc/stat, 10 ms ticks: co-occurrence, not proof)",
            "the host runs other guests or its own work on these vCPUs: ask for dedicated (pinned) vCPUs, or measure \
             on bare metal",
        ),
        (
            Cause::Platform,
            "stalled while the hiccup meter also saw a gap: the platform (hypervisor, SMI, interrupts)",
            "nothing in the process will fix this: isolate cores, move IRQs, or use a quieter host",
        ),
        (
            Cause::ProbeReads,
            "overlapped the probe's own counter reads at group boundaries",
            "a known cost of diagnostics (21 reads a run, see probe_cost); compare with --diagnostics off",
        ),
    ] {
        let hits = tail.first_cause(cause);
        if hits == 0 {
            continue;
        }
        let (what, fix) = if cause == Cause::Stall && !resolvable_all {
            (
                "stalled for reasons /proc cannot resolve (off CPU or on CPU)",
                "run with perf (as root or with CAP_PERFMON) to see each context switch and who took the CPU",
            )
        } else {
            (what, fix)
        };
        findings.push(Finding {
            cause,
            thread: "hot threads".into(),
            evidence: format!("{} of the {} samples above p99.9 {what}", thousands(hits), tail.n),
            fix: fix.into(),
            tail_share: Some(hits as f64 / tail.n.max(1) as f64),
        });
    }
    findings
}
