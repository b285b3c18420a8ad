//! From counters and episodes to a verdict in plain words.
//!
//! Order of the findings: futex-driven jitter first (the product's reason to exist), then the
//! other OS causes by the share of the tail they explain. Every finding names the thread, the
//! cause, the evidence (counts, and the share of samples above p99.9 whose latency window
//! overlaps an episode of that cause) and the usual fix. With perf (every off-CPU episode on
//! record) the headline answers for the band `--explain` picks ([`crate::analysis::bands`]):
//! the cause of most of that band's excess over p50, whose it is, and its fix.
//!
//! A sample's latency window is `[intended send time, receive time]` on CLOCK_MONOTONIC; an
//! episode (off CPU, stall, probe read, meter gap) explains it when the two overlap.

use crate::model::process_name;
use crate::model::Finding;
use crate::model::HiccupLog;
use crate::model::JitterSide;
use crate::model::OffCpuKind;
use crate::model::Outlier;
use crate::model::Role;
use crate::model::SlowSample;
use crate::model::ThreadJitter;
use crate::model::Verdict;
use crate::units::format_ns;
use crate::units::thousands;
use crate::units::times;
use aeron_latency::messaging::IdleStrategy;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::analysis::lineup::lock_kind;
use crate::analysis::lineup::sleeping_idle;
pub use crate::analysis::lineup::Context;
use crate::analysis::lineup::Hit;
use crate::analysis::lineup::Lineup;
pub use crate::analysis::lineup::MATERIAL;

/// The analysis of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// Samples at or above this form the tail.
    pub tail_threshold_ns: u64,
    /// Tail samples looked at (the slowest kept, at or above the threshold).
    pub tail_samples: u64,
    /// Tail samples by their first cause (`none`: nothing on the hot threads lined up).
    pub tail_by_cause: BTreeMap<String, u64>,
    /// The slowest samples, slowest first, with their causes.
    pub outliers: Vec<Outlier>,
    /// The verdict.
    pub verdict: Verdict,
    /// Every band by cause (empty without band edges or a stratified sample).
    pub bands: Vec<crate::model::Band>,
}

/// How many outliers the report lists.
pub const OUTLIERS_LISTED: usize = 20;

fn label(t: &ThreadJitter) -> String {
    format!("{} ({}, tid {})", t.name, t.role.describe(), t.tid)
}

/// An idle strategy as a report names it (`backoff`, `sleep-ns:1000`; empty when unknown).
fn idle_name(idle: Option<&IdleStrategy>) -> String {
    idle.map(ToString::to_string).unwrap_or_default()
}

/// With `/proc` alone, a spinning hot thread that blocked fewer times than this is not called
/// futex-driven (a stray wait on a page or the mm lock happens); the count is still reported.
pub const PROC_BLOCKS_MIN: u64 = 20;

/// Analyses the sides of a run (subscriber side first). `slow` are the slowest samples,
/// slowest first.
#[must_use]
pub fn analyse(
    sides: &[&JitterSide],
    slow: &[SlowSample],
    sampled: &[crate::model::Octave],
    hiccup: Option<&HiccupLog>,
    ctx: &Context,
) -> Analysis {
    let lineup = Lineup::new(sides, hiccup, ctx);
    let known: Vec<&ThreadJitter> = lineup.known.clone();
    let perf = sides.iter().all(|s| s.source.name == crate::model::Source::Perf);
    let resolvable_all = perf
        && known
            .iter()
            .filter(|t| t.role.is_hot())
            .all(|t| t.episodes && t.off_cpu_lost == 0);
    let run_end = lineup.run_end;
    let run_start = sides.iter().filter_map(|s| s.span()).map(|s| s.0).min().unwrap_or(0);
    let hot: Vec<&ThreadJitter> = lineup.hot.clone();
    let idle_of = |t: &ThreadJitter| lineup.idle_of(t);
    let name_of = |pid: i32, comm: &str| lineup.name_of(pid, comm);

    // Tail samples and their causes: every episode overlapping a sample's window, weighted by
    // how much of the window it covers; only episodes covering at least 1/MATERIAL of the
    // latency count as a cause (on a busy 2-core machine every window of a few ms holds some
    // preemption; a 12 µs one does not explain a 4 ms sample).
    let tail: Vec<&SlowSample> = slow.iter().filter(|s| s.latency_ns >= ctx.tail_threshold_ns).collect();
    let mut by_cause: BTreeMap<String, u64> = BTreeMap::new();
    let mut share: BTreeMap<(String, i32), u64> = BTreeMap::new();
    let mut outliers = Vec::new();
    for (rank, s) in slow.iter().enumerate() {
        // Words are written only for the listed outliers, and an overlap too small to be a
        // cause is skipped for the others: a sample delayed by a long lag behind schedule
        // overlaps thousands of episodes and stalls, and 4,096 such samples must stay cheap.
        let detail = rank < OUTLIERS_LISTED;
        let counts = |overlap: u64| detail || overlap.saturating_mul(MATERIAL) >= s.latency_ns;
        let mut hits = lineup.hits(s, detail, &counts);
        hits.sort_by_key(|h| std::cmp::Reverse(h.overlap));
        let material: Vec<&Hit> = hits
            .iter()
            .filter(|h| h.overlap.saturating_mul(MATERIAL) >= s.latency_ns)
            .collect();
        if s.latency_ns >= ctx.tail_threshold_ns {
            let first = material.first().map_or("none", |h| h.key);
            *by_cause.entry(first.to_owned()).or_default() += 1;
            let mut seen: Vec<(&str, i32)> = Vec::new();
            for h in &material {
                if !seen.contains(&(h.key, h.tid)) {
                    seen.push((h.key, h.tid));
                    *share.entry((h.key.to_owned(), h.tid)).or_default() += 1;
                }
            }
        }
        if rank < OUTLIERS_LISTED {
            let mut words: Vec<String> = material.iter().take(3).map(|h| h.words.clone()).collect();
            if words.is_empty() {
                if let Some(h) = hits.first() {
                    words.push(format!("only small overlaps, largest: {}", h.words));
                }
            }
            outliers.push(Outlier {
                seq: s.seq,
                latency_ns: s.latency_ns,
                at_ms: (s.intended_ns - run_start) as f64 / 1e6,
                causes: words,
            });
        }
    }
    let n_tail = tail.len() as u64;
    let tail_share = |key: &str, tid: Option<i32>| -> Option<f64> {
        if n_tail == 0 {
            return Some(0.0);
        }
        let hits: u64 = share
            .iter()
            .filter(|((k, t), _)| k == key && tid.is_none_or(|x| x == *t))
            .map(|(_, v)| *v)
            .sum();
        Some(hits as f64 / n_tail as f64)
    };
    // Only the slowest SLOW_SAMPLES_KEPT samples are kept: past ~4 M messages the tail above
    // p99.9 is larger than that, and the words say so.
    let capped = !slow.is_empty() && n_tail as usize == slow.len() && slow.len() >= crate::model::SLOW_SAMPLES_KEPT;
    let tail_words = |share: Option<f64>| -> String {
        let which = if capped {
            format!(
                "the slowest {n_tail} samples (all above p99.9, {}; more were not kept)",
                format_ns(ctx.tail_threshold_ns)
            )
        } else {
            format!(
                "the {n_tail} samples above p99.9 ({})",
                format_ns(ctx.tail_threshold_ns)
            )
        };
        match share {
            Some(s) if n_tail > 0 => format!(
                "; {:.0}% of {which} overlap such an episode covering at least a tenth of their latency",
                s * 100.0
            ),
            _ => String::new(),
        }
    };

    let mut findings = Vec::new();
    // /proc cannot count futex calls: "clean" only when no hot thread blocked at all and none
    // sleeps by design (a loop that never sleeps and never blocks made no futex wait).
    let never_blocked = hot.iter().all(|t| {
        t.total.voluntary.unwrap_or(0) < PROC_BLOCKS_MIN && t.role != Role::Consumer && !sleeping_idle(idle_of(t))
    });
    let mut futex_status = if !hot.is_empty() && (perf || never_blocked) {
        "clean"
    } else {
        "unknown"
    }
    .to_owned();

    // 1. Futex-driven jitter.
    for t in &hot {
        let vol = t.total.voluntary.unwrap_or(0);
        let idle = idle_of(t);
        let futex_calls = t.total.futex;
        let detected = match futex_calls {
            Some(f) => f > 0,
            None => vol >= PROC_BLOCKS_MIN && (t.role == Role::Consumer || !sleeping_idle(idle)),
        };
        if !detected {
            continue;
        }
        futex_status = "futex-driven".into();
        let share = if perf { tail_share("futex", Some(t.tid)) } else { None };
        let counts = match futex_calls {
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
        let fix = match t.role {
            Role::Consumer => "the channel hand-off parks the consumer in recv_timeout (a futex wait) and the sender \
                               wakes it (a futex wake) for each message: poll the subscription on the consuming thread \
                               (--delivery inline), or hand off through a lock-free queue the consumer busy-polls"
                .to_owned(),
            Role::Handoff => "the hand-off thread wakes the parked consumer with a futex call per message: drop the \
                              blocking channel from the hot path (--delivery inline)"
                .to_owned(),
            _ if ctx.hot_path_lock => "the hot loop takes a std::sync::Mutex that lock-helper also takes; while the \
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
        };
        findings.push(Finding {
            cause: "futex".into(),
            thread: label(t),
            evidence: format!("{} {}{}", t.name, counts, tail_words(share)),
            fix,
            tail_share: share,
        });
    }

    // 2. Blocked by design (sleeping idle) or in other syscalls (perf tells futex apart).
    for t in &hot {
        let vol = t.total.voluntary.unwrap_or(0);
        let perf_no_futex = t.total.futex == Some(0);
        let proc_few = t.total.futex.is_none() && vol < PROC_BLOCKS_MIN && !sleeping_idle(idle_of(t));
        if vol == 0 || !(perf_no_futex || proc_few) || t.role == Role::Consumer {
            continue;
        }
        let idle = idle_of(t);
        let share = tail_share("blocked", Some(t.tid));
        let (evidence, fix) = if sleeping_idle(idle) {
            (
                format!(
                    "{} slept {} in its idle strategy ({}), no futex call{}",
                    t.name,
                    times(vol),
                    idle_name(idle),
                    tail_words(share)
                ),
                "each sleep costs a scheduler wake-up when the next message comes: use --idle spin (or yield) on a \
                 pinned, isolated core"
                    .to_owned(),
            )
        } else {
            (
                format!(
                    "{} blocked {} in syscalls {}{}",
                    t.name,
                    times(vol),
                    if perf_no_futex {
                        "other than futex"
                    } else {
                        "(too few to call futex-driven)"
                    },
                    tail_words(share)
                ),
                format!(
                    "find the blocking call with `perf trace -s -t {}`; the hot path must not block",
                    t.tid
                ),
            )
        };
        findings.push(Finding {
            cause: "blocked".into(),
            thread: label(t),
            evidence,
            fix,
            tail_share: share,
        });
    }

    // 3. Preemption.
    let helpers: Vec<&ThreadJitter> = known.iter().copied().filter(|t| !t.role.is_hot()).collect();
    for t in &hot {
        let inv = t.total.involuntary.unwrap_or(0);
        if inv == 0 {
            continue;
        }
        let wait = format_ns(t.total.runqueue_wait_ns);
        if perf && !t.off_cpu.is_empty() {
            let mut by: BTreeMap<(bool, String), (u64, u64)> = BTreeMap::new();
            for o in t.off_cpu.iter().filter(|o| o.kind == OffCpuKind::Preempted) {
                let (who, ours) = name_of(o.next_pid, &o.next_name());
                let (a, b) = o.span(run_end);
                let e = by.entry((ours, who)).or_default();
                e.0 += 1;
                e.1 += (b - a).max(0) as u64;
            }
            for ours in [true, false] {
                let mut list: Vec<(&String, &(u64, u64))> = by
                    .iter()
                    .filter(|((o, _), _)| *o == ours)
                    .map(|((_, w), v)| (w, v))
                    .collect();
                if list.is_empty() {
                    continue;
                }
                list.sort_by_key(|x| std::cmp::Reverse(x.1 .0));
                let n: u64 = list.iter().map(|(_, v)| v.0).sum();
                let total: u64 = list.iter().map(|(_, v)| v.1).sum();
                let who = list
                    .iter()
                    .take(4)
                    .map(|(w, v)| format!("{w} {}x", thousands(v.0)))
                    .collect::<Vec<_>>()
                    .join(", ");
                let key = if ours { "preempted-own" } else { "preempted-foreign" };
                let share = tail_share(key, Some(t.tid));
                let fix = if ours {
                    format!(
                        "our own helpers have no core of their own ({} cores, both hot threads spin): give the media \
                         driver and the aeron-rs conductors a spare core (taskset), or isolate the hot cores \
                         (isolcpus/nohz_full) and keep the helpers off them",
                        ctx.cores
                    )
                } else {
                    "another process runs on the hot core: isolate it (isolcpus=, cset shield, systemd CPUAffinity= \
                     for everything else) or move that process away"
                        .to_owned()
                };
                findings.push(Finding {
                    cause: key.into(),
                    thread: label(t),
                    evidence: format!(
                        "{} was preempted {} ({} off CPU) by {who}; {wait} runnable on a run queue{}",
                        t.name,
                        times(n),
                        format_ns(total),
                        tail_words(share)
                    ),
                    fix,
                    tail_share: share,
                });
            }
        } else {
            let woke: Vec<String> = helpers
                .iter()
                .filter(|h| h.total.wakeups > 0 && h.role != Role::Main)
                .map(|h| {
                    format!(
                        "{}/{} ({}) {}x",
                        process_name(&known, h.pid),
                        h.name,
                        h.role.describe(),
                        thousands(h.total.wakeups)
                    )
                })
                .collect();
            let helper_wakeups: u64 = helpers
                .iter()
                .filter(|h| h.role != Role::Main)
                .map(|h| h.total.wakeups)
                .sum();
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
            findings.push(Finding {
                cause: "preempted".into(),
                thread: label(t),
                evidence: format!(
                    "{} was preempted {} (involuntary context switches), {wait} runnable on a run queue; in the \
                     same period our helpers woke: {}; {likely}",
                    t.name,
                    times(inv),
                    if woke.is_empty() {
                        "none watched".into()
                    } else {
                        woke.join(", ")
                    }
                ),
                fix: "give the media driver and conductors a core of their own or isolate the hot cores; run as root \
                      (perf) to see who took the CPU each time"
                    .into(),
                tail_share: None,
            });
        }
    }
    // Who woke up, by name, even when they did not preempt (context for the helpers).
    // 3b. aeron-rs's shared locks.
    for t in &hot {
        let Some(log) = t.lock_waits.as_ref().filter(|l| l.count > 0) else {
            continue;
        };
        let share = tail_share("aeron-lock", Some(t.tid));
        findings.push(Finding {
            cause: "aeron-lock".into(),
            thread: label(t),
            evidence: format!(
                "{} found aeron-rs's {} lock held by the aeron-rs conductor {} ({} in all, longest {}){}",
                t.name,
                lock_kind(t.role),
                times(log.count),
                format_ns(log.total_ns),
                format_ns(log.max_ns),
                tail_words(share)
            ),
            fix: "aeron-rs 0.1.8 guards each publication and subscription with a std Mutex that its conductor also \
                  takes on every duty cycle; when the conductor is preempted while holding it (no spare core) the hot \
                  loop cannot poll or claim: give the conductor a core of its own, or use a client without shared \
                  locks (the Aeron C or Java client)"
                .into(),
            tail_share: share,
        });
    }
    // 4. Page faults.
    for t in known.iter().copied() {
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
        // Timed faults (perf, hot threads) line up with samples; counted ones do not.
        let share = t
            .fault_times
            .as_ref()
            .and_then(|_| tail_share("page-faults", Some(t.tid)));
        findings.push(Finding {
            cause: "page-faults".into(),
            thread: label(t),
            evidence: format!(
                "{} took {} minor and {} major page faults while measuring{}",
                t.name,
                thousands(t.total.minor_faults),
                thousands(t.total.major_faults),
                if share.is_some() {
                    tail_words(share)
                } else {
                    String::new()
                }
            ),
            fix: fix.into(),
            tail_share: share,
        });
    }
    // 5. Migrations.
    for t in &hot {
        if let Some(m) = t.total.migrations.filter(|m| *m > 0) {
            findings.push(Finding {
                cause: "migrations".into(),
                thread: label(t),
                evidence: format!("{} moved between CPUs {}", t.name, times(m)),
                fix: "pin the hot threads (--pub-core/--sub-core; do not pass --no-pin)".into(),
                tail_share: None,
            });
        }
    }
    // 6. Stalls without a switch, platform, and the probe's own reads.
    for (key, what, fix) in [
        (
            "stall",
            "stalled without a context switch the counters can name",
            "look for page faults, interrupts on the hot cores (/proc/interrupts; irqbalance, IRQ affinity) and \
             hypervisor steal (the st column of vmstat)",
        ),
        (
            "steal",
            "stalled in a group where the hypervisor took CPU time from this VM (steal in /proc/stat, 10 ms ticks: co-occurrence, not proof)",
            "the host runs other guests or its own work on these vCPUs: ask for dedicated (pinned) vCPUs, or measure \
             on bare metal",
        ),
        (
            "platform",
            "stalled while the hiccup meter also saw a gap: the platform (hypervisor, SMI, interrupts)",
            "nothing in the process will fix this: isolate cores, move IRQs, or use a quieter host",
        ),
        (
            "probe-reads",
            "overlapped the probe's own counter reads at group boundaries",
            "a known cost of diagnostics (21 reads a run, see probe_cost); compare with --diagnostics off",
        ),
    ] {
        let hits = by_cause.get(key).copied().unwrap_or(0);
        if hits == 0 {
            continue;
        }
        let (what, fix) = if key == "stall" && !resolvable_all {
            (
                "stalled for reasons /proc cannot resolve (off CPU or on CPU)",
                "run with perf (as root or with CAP_PERFMON) to see each context switch and who took the CPU",
            )
        } else {
            (what, fix)
        };
        let share = Some(hits as f64 / n_tail.max(1) as f64);
        findings.push(Finding {
            cause: key.into(),
            thread: "hot threads".into(),
            evidence: format!("{} of the {} samples above p99.9 {what}", thousands(hits), n_tail),
            fix: fix.into(),
            tail_share: share,
        });
    }

    // Futex first, then by tail share.
    findings.sort_by(|a, b| {
        let fa = a.cause == "futex";
        let fb = b.cause == "futex";
        fb.cmp(&fa).then(
            b.tail_share
                .unwrap_or(-1.0)
                .partial_cmp(&a.tail_share.unwrap_or(-1.0))
                .unwrap_or(std::cmp::Ordering::Equal),
        )
    });

    let quiet = hot.iter().all(|t| {
        t.total.futex.unwrap_or(0) == 0
            && t.total.voluntary.unwrap_or(0) == 0
            && t.total.involuntary.unwrap_or(0) == 0
            && t.total.faults() == 0
    });
    let headline = if let Some(f) = findings.iter().find(|f| f.cause == "futex") {
        // Futex first; but say so when the slowest samples line up with something else.
        let elsewhere = findings
            .iter()
            .filter(|o| o.cause != "futex")
            .filter(|o| o.tail_share.unwrap_or(0.0) > f.tail_share.unwrap_or(0.0))
            .max_by(|a, b| {
                a.tail_share
                    .partial_cmp(&b.tail_share)
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
        match elsewhere {
            Some(o) => format!(
                "futex-driven jitter: {}. The samples above p99.9 line up more with {} ({:.0}%): see below",
                f.evidence,
                o.cause,
                o.tail_share.unwrap_or(0.0) * 100.0
            ),
            None => format!("futex-driven jitter: {}", f.evidence),
        }
    } else if hot.is_empty() {
        "unknown: no hot thread could be watched (see notes)".into()
    } else if quiet && findings.is_empty() {
        format!(
            "clean: no futex call, no context switch and no page fault on the hot threads ({}) while measuring",
            hot.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ")
        )
    } else if let Some(f) = findings.first() {
        let lead = match f.cause.as_str() {
            "preempted-own" => "preempted by our own helpers",
            "preempted-foreign" => "preempted by another process",
            "preempted" => "preempted",
            "blocked" => "blocking (no futex)",
            "page-faults" => "page faults",
            "migrations" => "migrations",
            "stall" => "stalls without a context switch",
            "aeron-lock" => "aeron-rs lock held by its conductor",
            "platform" => "platform jitter",
            "steal" => "hypervisor steal",
            "probe-reads" => "the probe's own counter reads",
            other => other,
        };
        let futex_words = match (futex_status.as_str(), perf) {
            ("clean", true) => "no futex call on the hot threads; ",
            ("clean", false) => "no hot thread blocked (no voluntary context switch); ",
            _ => "",
        };
        format!("{futex_words}{lead}: {}", f.evidence)
    } else {
        "no cause found on the watched threads".into()
    };
    let bands = match ctx.edges {
        Some(edges) if !sampled.is_empty() => crate::analysis::bands::bands(&lineup, sampled, edges),
        _ => Vec::new(),
    };
    // With every off-CPU episode of the hot threads on record, the headline answers for the
    // band the user asked about; without (the /proc source) it stays with the counters.
    let headline = match bands.get(ctx.explain.index()) {
        Some(b) if resolvable_all && b.samples > 0 => band_headline(b, ctx.explain, &findings, &futex_status),
        _ => headline,
    };
    Analysis {
        tail_threshold_ns: ctx.tail_threshold_ns,
        tail_samples: n_tail,
        tail_by_cause: by_cause,
        outliers,
        verdict: Verdict {
            futex: futex_status,
            headline,
            findings,
        },
        bands,
    }
}

/// The usual fix for a band's cause when no finding carries one (the findings are about the
/// tail; a band's largest cause may not appear there).
fn usual_fix(cause: &str) -> Option<&'static str> {
    Some(match cause {
        "stall" => {
            "look for interrupts on the hot cores (/proc/interrupts; irqbalance, IRQ affinity) and hypervisor steal \
             (the st column of vmstat); on a VM, ask for dedicated (pinned) vCPUs"
        }
        "steal" => "the host runs other guests on these vCPUs: ask for dedicated (pinned) vCPUs, or use bare metal",
        "platform" => "isolate cores, move IRQs, or use a quieter host",
        "probe-reads" => "a known cost of diagnostics (21 reads a run); compare with --diagnostics off",
        "preempted-foreign" => {
            "another process runs on the hot core: isolate it (isolcpus=, cset shield, systemd CPUAffinity= for \
             everything else) or move that process away"
        }
        "preempted-own" => "give our helper threads a core of their own, or isolate the hot cores and keep them off",
        "page-faults" => "pre-fault and mlock what the hot loop uses before measuring",
        "futex" => "take the blocking call (lock, channel, condvar) off the hot path",
        "blocked" => "--idle spin on a pinned, isolated core; find the blocking call with perf trace",
        _ => return None,
    })
}

/// A cause must cover at least this share of a band's excess to be named as its cause.
pub const BAND_CAUSE_MIN_SHARE: f64 = 0.2;

/// The headline for band `b`: its largest cause with the evidence and the fix, or that nothing
/// watched explains it, and whether it is ours or the platform's.
fn band_headline(b: &crate::model::Band, explain: crate::model::Explain, findings: &[Finding], futex: &str) -> String {
    let what = format!(
        "{} = {}: of the {} messages in {} ({} to {}), whose latency is on average {} above p50,",
        explain,
        format_ns(b.to_ns),
        thousands(b.samples),
        b.band,
        format_ns(b.from_ns),
        format_ns(b.to_ns),
        format_ns(b.mean_excess_ns)
    );
    let mut line = match b.causes.first() {
        Some(c) if c.share >= BAND_CAUSE_MIN_SHARE => {
            let whose = if c.owner == "platform" {
                "the platform's (another process, the hypervisor or interrupts), not the probe's or Aeron's"
            } else {
                "ours (the process, its threads or where they run)"
            };
            let fix = findings
                .iter()
                .find(|f| {
                    f.cause == c.cause
                        && (c.thread.is_empty() || f.thread == "hot threads" || f.thread.starts_with(&c.thread))
                })
                .map(|f| f.fix.clone())
                .or_else(|| usual_fix(&c.cause).map(str::to_owned))
                .map(|f| format!(". Fix: {f}"))
                .unwrap_or_default();
            format!(
                "{what} {:.0}% of that excess lines up with {} ({} messages): {whose}{fix}",
                c.share * 100.0,
                c.words,
                thousands(c.messages)
            )
        }
        Some(c) => format!(
            "{what} no single cause covers a fifth of that excess: the largest is {} ({:.0}%), and {:.0}% lines up \
             with nothing watched",
            c.words,
            c.share * 100.0,
            b.unexplained * 100.0
        ),
        None => format!("{what} nothing on the watched threads lines up with the excess"),
    };
    if futex == "futex-driven" && b.causes.first().is_none_or(|c| c.cause != "futex") {
        if let Some(f) = findings.iter().find(|f| f.cause == "futex") {
            line.push_str(&format!("; futex-driven jitter as well: {}", f.evidence));
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Counts;
    use crate::model::OffCpu;
    use crate::model::Source;
    use crate::model::SourceInfo;
    use crate::model::StallLog;

    fn thread(name: &str, tid: i32, role: Role, total: Counts) -> ThreadJitter {
        ThreadJitter {
            pid: 100,
            tid,
            name: name.into(),
            role,
            total,
            groups: vec![],
            off_cpu: vec![],
            off_cpu_lost: 0,
            episodes: true,
            fault_times: None,
            fault_times_lost: 0,
            stalls: None,
            lock_waits: None,
        }
    }

    fn episode(out_ns: i64, in_ns: Option<i64>, kind: OffCpuKind, next_pid: i32, next_comm: [u8; 16]) -> OffCpu {
        OffCpu {
            out_ns,
            in_ns,
            cpu: 1,
            kind,
            next_pid,
            next_comm,
        }
    }

    fn side(source: Source, threads: Vec<ThreadJitter>) -> JitterSide {
        JitterSide {
            source: SourceInfo {
                name: source,
                reason: None,
            },
            threads,
            boundaries: vec![Some(0), Some(1_000_000)],
            steal_ns: vec![],
            read_cost: Default::default(),
            reads: vec![],
            notes: vec![],
            fault_cost_ns: None,
        }
    }

    fn ctx(idle: &str) -> Context {
        Context {
            sub_idle: Some(idle.parse().unwrap()),
            pub_idle: Some(idle.parse().unwrap()),
            tail_threshold_ns: 10_000,
            cores: 2,
            ..Context::default()
        }
    }

    fn sample(latency: u64, at: i64) -> SlowSample {
        SlowSample {
            latency_ns: latency,
            seq: at as u64,
            intended_ns: at,
            sent_ns: at,
            received_ns: at + latency as i64,
        }
    }

    fn quiet() -> Counts {
        Counts {
            futex: Some(0),
            voluntary: Some(0),
            involuntary: Some(0),
            migrations: Some(0),
            ..Counts::default()
        }
    }

    #[test]
    fn a_quiet_run_is_clean() {
        let s = side(Source::Perf, vec![thread("latency-sub", 1, Role::Subscriber, quiet())]);
        let a = analyse(&[&s], &[sample(20_000, 100)], &[], None, &ctx("spin"));
        assert_eq!(a.verdict.futex, "clean");
        assert!(a.verdict.headline.starts_with("clean"), "{}", a.verdict.headline);
        assert_eq!(a.tail_by_cause.get("none"), Some(&1));
    }

    #[test]
    fn futex_calls_on_the_consumer_are_named_with_the_tail_share() {
        let mut c = thread(
            "latency-sub",
            7,
            Role::Consumer,
            Counts {
                futex: Some(1234),
                voluntary: Some(900),
                ..quiet()
            },
        );
        c.off_cpu
            .push(episode(50, Some(20_000), OffCpuKind::Blocked, 0, [0; 16]));
        let s = side(Source::Perf, vec![c]);
        let a = analyse(
            &[&s],
            &[sample(20_000, 100), sample(15_000, 500_000)],
            &[],
            None,
            &ctx("spin"),
        );
        assert_eq!(a.verdict.futex, "futex-driven");
        let f = &a.verdict.findings[0];
        assert_eq!(f.cause, "futex");
        assert!(
            f.evidence.contains("1,234 futex calls") && f.evidence.contains("900 voluntary"),
            "{}",
            f.evidence
        );
        assert!(
            f.evidence.contains("50% of the 2 samples above p99.9"),
            "{}",
            f.evidence
        );
        assert_eq!(a.tail_by_cause.get("futex"), Some(&1));
        assert_eq!(a.tail_by_cause.get("none"), Some(&1));
        assert!(f.fix.contains("--delivery inline"), "{}", f.fix);
        assert!(a
            .verdict
            .headline
            .starts_with("futex-driven jitter: latency-sub made 1,234"));
    }

    #[test]
    fn preemption_by_our_helpers_and_by_strangers_is_told_apart() {
        let mut sub = thread(
            "latency-sub",
            1,
            Role::Subscriber,
            Counts {
                involuntary: Some(3),
                ..quiet()
            },
        );
        let conductor = thread("aeron-conductor", 2, Role::Conductor, Counts::default());
        let mut comm = [0_u8; 16];
        comm[..7].copy_from_slice(b"kworker");
        for (t, pid, c) in [(100, 2, [0_u8; 16]), (300, 2, [0; 16]), (700_000, 999, comm)] {
            sub.off_cpu
                .push(episode(t, Some(t + 5_000), OffCpuKind::Preempted, pid, c));
        }
        let s = side(Source::Perf, vec![sub, conductor]);
        let a = analyse(&[&s], &[sample(20_000, 90)], &[], None, &ctx("spin"));
        assert_eq!(a.verdict.futex, "clean");
        let own = a.verdict.findings.iter().find(|f| f.cause == "preempted-own").unwrap();
        assert!(
            own.evidence.contains("aeron-conductor") && own.evidence.contains("2x"),
            "{}",
            own.evidence
        );
        assert_eq!(own.tail_share, Some(1.0));
        let foreign = a
            .verdict
            .findings
            .iter()
            .find(|f| f.cause == "preempted-foreign")
            .unwrap();
        assert!(
            foreign.evidence.contains("kworker (pid 999, not ours) 1x"),
            "{}",
            foreign.evidence
        );
        assert!(
            a.verdict.headline.contains("preempted by our own helpers"),
            "{}",
            a.verdict.headline
        );
        assert_eq!(a.outliers[0].causes[0], "latency-sub preempted for 5000 ns (latency-sub/aeron-conductor (aeron-rs conductor (ours, wakes every 4 ms)) took the CPU)");
    }

    #[test]
    fn the_proc_fallback_calls_blocking_with_a_spinning_idle_futex_driven() {
        let mut sub = thread(
            "latency-sub",
            1,
            Role::Subscriber,
            Counts {
                voluntary: Some(40),
                involuntary: Some(0),
                ..Counts::default()
            },
        );
        sub.stalls = Some(StallLog::new(5_000, 8));
        let s = side(Source::Proc, vec![sub]);
        let mut c = ctx("yield");
        c.hot_path_lock = true;
        let a = analyse(&[&s], &[], &[], None, &c);
        assert_eq!(a.verdict.futex, "futex-driven");
        let f = &a.verdict.findings[0];
        assert!(f.evidence.contains("/proc cannot count futex calls"), "{}", f.evidence);
        assert!(f.fix.contains("lock-helper"), "{}", f.fix);
        assert_eq!(f.tail_share, None);
    }

    #[test]
    fn the_proc_fallback_with_a_sleeping_idle_cannot_tell() {
        let sub = thread(
            "latency-sub",
            1,
            Role::Subscriber,
            Counts {
                voluntary: Some(40),
                involuntary: Some(0),
                ..Counts::default()
            },
        );
        let s = side(Source::Proc, vec![sub]);
        let a = analyse(&[&s], &[], &[], None, &ctx("backoff"));
        assert_eq!(a.verdict.futex, "unknown");
        assert!(a.verdict.findings.iter().all(|f| f.cause != "futex"));
    }

    #[test]
    fn a_short_episode_does_not_explain_a_long_sample() {
        let mut sub = thread(
            "latency-sub",
            1,
            Role::Subscriber,
            Counts {
                involuntary: Some(1),
                ..quiet()
            },
        );
        sub.off_cpu
            .push(episode(1_000, Some(13_000), OffCpuKind::Preempted, 0, [0; 16]));
        let s = side(Source::Perf, vec![sub]);
        // 12 µs inside a 4 ms window: less than a tenth.
        let a = analyse(&[&s], &[sample(4_000_000, 0)], &[], None, &ctx("spin"));
        assert_eq!(a.tail_by_cause.get("none"), Some(&1));
        assert!(
            a.outliers[0].causes[0].starts_with("only small overlaps"),
            "{:?}",
            a.outliers[0]
        );
    }

    /// 1,000 messages 10 µs apart: 900 take 1 µs; 90 (the p90-p99 band) are each delayed 50 µs
    /// by a preemption of latency-sub by `hogz`; 10 (above p99) by 400 µs on-CPU stalls.
    fn planted_run() -> (JitterSide, Vec<crate::model::Octave>, [u64; 5]) {
        let mut sub = thread(
            "latency-sub",
            1,
            Role::Subscriber,
            Counts {
                involuntary: Some(90),
                ..quiet()
            },
        );
        let mut comm = [0_u8; 16];
        comm[..4].copy_from_slice(b"hogz");
        let mut stalls = StallLog::new(5_000, 100);
        let mut samples = Vec::new();
        for i in 0..1_000_i64 {
            let at = i * 10_000;
            let latency = match i % 100 {
                50 => {
                    stalls.stalls.push((at + 100, 400_000));
                    401_000
                }
                1..=9 => {
                    sub.off_cpu
                        .push(episode(at + 200, Some(at + 50_200), OffCpuKind::Preempted, 4242, comm));
                    51_000
                }
                _ => 1_000,
            };
            samples.push(sample(latency, at));
        }
        stalls.count = stalls.stalls.len() as u64;
        sub.stalls = Some(stalls);
        let mut s = side(Source::Perf, vec![sub]);
        s.boundaries = vec![Some(0), Some(20_000_000)];
        let octaves = vec![crate::model::Octave {
            octave: 0,
            seen: samples.len() as u64,
            samples,
        }];
        (s, octaves, [1_000, 1_000, 51_000, 401_000, 401_000])
    }

    #[test]
    fn each_band_is_attributed_and_the_headline_follows_explain() {
        let (s, octaves, edges) = planted_run();
        let mut c = ctx("spin");
        c.edges = Some(edges);
        let a = analyse(&[&s], &[], &octaves, None, &c);
        assert_eq!(a.bands.len(), 4);
        let p99 = &a.bands[1];
        assert_eq!((p99.band.as_str(), p99.samples, p99.analysed), ("p90-p99", 90, 90));
        assert_eq!(p99.mean_excess_ns, 50_000);
        let top = &p99.causes[0];
        assert_eq!(
            (top.cause.as_str(), top.thread.as_str(), top.owner.as_str()),
            ("preempted-foreign", "latency-sub", "platform")
        );
        assert!(top.by.as_deref().unwrap().starts_with("hogz (pid 4242"), "{top:?}");
        assert!((top.share - 1.0).abs() < 1e-9, "{top:?}");
        assert_eq!(top.messages, 90);
        assert!(
            a.verdict
                .headline
                .starts_with("p99 = 51.00 µs: of the 90 messages in p90-p99"),
            "{}",
            a.verdict.headline
        );
        assert!(a
            .verdict
            .headline
            .contains("100% of that excess lines up with latency-sub preempted by hogz"));
        // The stalls own the slowest band, the p50-p90 band is empty (p50 = p90).
        let max = &a.bands[2];
        assert_eq!((max.samples, max.causes[0].cause.as_str()), (10, "stall"));
        assert_eq!(a.bands[0].samples, 0);
        c.explain = crate::model::Explain::P999;
        let a = analyse(&[&s], &[], &octaves, None, &c);
        assert!(
            a.verdict
                .headline
                .starts_with("p99.9 = 401.0 µs: of the 10 messages in p99-p99.9"),
            "{}",
            a.verdict.headline
        );
        assert!(
            a.verdict.headline.contains("stalled on its CPU"),
            "{}",
            a.verdict.headline
        );
    }

    /// The headline of a p90-p99 band (900 messages, 1-40 µs) with these causes and no finding.
    fn p99_headline(causes: Vec<crate::model::BandCause>, unexplained: f64) -> String {
        let band = crate::model::Band {
            band: "p90-p99".into(),
            from_ns: 1_000,
            to_ns: 40_000,
            samples: 900,
            analysed: 900,
            mean_excess_ns: 9_000,
            causes,
            unexplained,
        };
        band_headline(&band, crate::model::Explain::P99, &[], "clean")
    }

    #[test]
    fn a_band_no_single_cause_explains_says_so_with_what_is_left() {
        let cause = |share: f64| crate::model::BandCause {
            cause: "preempted-own".into(),
            owner: "ours".into(),
            thread: "latency-sub".into(),
            by: Some("latency-probe/aeron-driver (media driver)".into()),
            share,
            messages: 10,
            words: "latency-sub preempted by latency-probe/aeron-driver (media driver)".into(),
        };
        let h = p99_headline(vec![cause(0.17), cause(0.15)], 0.05);
        assert!(h.starts_with("p99 = 40.00 µs: of the 900 messages in p90-p99"), "{h}");
        assert!(
            h.ends_with(
                "no single cause covers a fifth of that excess: the largest is latency-sub preempted by \
                 latency-probe/aeron-driver (media driver) (17%), and 5% lines up with nothing watched"
            ),
            "{h}"
        );
    }

    #[test]
    fn a_band_cause_without_a_finding_still_gets_its_fix() {
        let stall = crate::model::BandCause {
            cause: "stall".into(),
            owner: "platform".into(),
            thread: "latency-sub".into(),
            by: None,
            share: 0.5,
            messages: 400,
            words: "latency-sub stalled on its CPU without a context switch".into(),
        };
        let h = p99_headline(vec![stall], 0.1);
        assert!(
            h.contains("50% of that excess lines up with latency-sub stalled"),
            "{h}"
        );
        assert!(
            h.contains("the platform's") && h.contains(". Fix: look for interrupts on the hot cores"),
            "{h}"
        );
    }

    #[test]
    fn a_kept_sample_stands_for_its_octaves_messages() {
        let (s, mut octaves, edges) = planted_run();
        // Keep every other sample of the octave: each now stands for two messages.
        let kept: Vec<SlowSample> = octaves[0].samples.iter().step_by(2).copied().collect();
        octaves[0].samples = kept;
        let mut c = ctx("spin");
        c.edges = Some(edges);
        let a = analyse(&[&s], &[], &octaves, None, &c);
        let b = &a.bands[1];
        assert_eq!(b.analysed * 2, b.samples);
        assert!((b.causes.iter().map(|c| c.share).sum::<f64>() + b.unexplained - 1.0).abs() < 1e-9);
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1234), "1,234");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
