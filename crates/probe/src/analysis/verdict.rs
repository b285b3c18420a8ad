//! From counters and episodes to a verdict in plain words.
//!
//! Order of the findings: futex-driven jitter first (the product's reason to exist), then the
//! other OS causes by the share of the tail they explain. Every finding names the thread, the
//! cause ([`Cause`]), the evidence (counts, and the share of samples above p99.9 whose latency
//! window overlaps an episode of that cause) and the usual fix. With perf (every off-CPU
//! episode on record) the headline answers for the band `--explain` picks
//! ([`crate::analysis::bands`]): the cause of most of that band's excess over p50, whose it is,
//! and its fix.
//!
//! A sample's latency window is `[intended send time, receive time]` on CLOCK_MONOTONIC; an
//! episode (off CPU, stall, probe read, meter gap) explains it when the two overlap.
//!
//! One function per kind of finding, in `analysis/findings.rs`; the tail lined up with
//! episodes in `analysis/tail.rs`.

use crate::model::Cause;
use crate::model::Finding;
use crate::model::HiccupLog;
use crate::model::JitterSide;
use crate::model::Outlier;
use crate::model::Owner;
use crate::model::Role;
use crate::model::SlowSample;
use crate::model::ThreadJitter;
use crate::model::Verdict;
use crate::units::format_ns;
use crate::units::thousands;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::analysis::lineup::sleeping_idle;
pub use crate::analysis::lineup::Context;
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

pub use crate::analysis::findings::DRIVER_WAIT_MIN_SHARE;
pub use crate::analysis::findings::PROC_BLOCKS_MIN;
use crate::analysis::tail::Tail;
pub use crate::analysis::tail::OUTLIERS_LISTED;
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
    let perf = sides.iter().all(|s| s.source.name == crate::model::Source::Perf);
    let resolvable_all = perf
        && lineup
            .known
            .iter()
            .filter(|t| t.role.is_hot())
            .all(|t| t.episodes && t.off_cpu_lost == 0);
    let run_start = sides.iter().filter_map(|s| s.span()).map(|s| s.0).min().unwrap_or(0);
    let tail = Tail::line_up(&lineup, slow, run_start);

    use crate::analysis::findings::*;
    let mut findings = futex_findings(&lineup, perf, &tail);
    findings.extend(blocked_findings(&lineup, &tail));
    findings.extend(preemption_findings(&lineup, perf, &tail));
    findings.extend(fault_findings(&lineup, &tail));
    findings.extend(migration_findings(&lineup));
    findings.extend(driver_wait_findings(&lineup));
    findings.extend(tail_only_findings(&tail, resolvable_all));
    // Futex first, then a media driver that waited (every message waited for it), then by
    // tail share.
    let rank = |c: Cause| match c {
        Cause::Futex => 0,
        Cause::DriverWait => 1,
        _ => 2,
    };
    findings.sort_by(|a, b| {
        rank(a.cause).cmp(&rank(b.cause)).then(
            b.tail_share
                .unwrap_or(-1.0)
                .partial_cmp(&a.tail_share.unwrap_or(-1.0))
                .unwrap_or(std::cmp::Ordering::Equal),
        )
    });
    let futex_status = futex_status(&lineup, perf, &findings);
    let bands = match ctx.edges {
        Some(edges) if !sampled.is_empty() => crate::analysis::bands::bands(&lineup, sampled, edges),
        _ => Vec::new(),
    };
    // The tail's headline, from the tail's findings (the driver's wait is the whole run's).
    let of_tail: Vec<Finding> = findings
        .iter()
        .filter(|f| f.cause != Cause::DriverWait)
        .cloned()
        .collect();
    // With every off-CPU episode of the hot threads on record, the headline answers for the
    // band the user asked about; without (the /proc source) it stays with the counters.
    let headline = match bands.get(ctx.explain.index()) {
        Some(b) if resolvable_all && b.samples > 0 => band_headline(b, ctx.explain, &of_tail, futex_status),
        _ => tail_headline(&lineup.hot, &of_tail, futex_status, perf),
    };
    let headline = match findings.iter().find(|f| f.cause == Cause::DriverWait) {
        Some(f) => format!(
            "{}: {}; fix that first (its finding below). The tail: {headline}",
            Cause::DriverWait.lead(),
            f.evidence
        ),
        None => headline,
    };
    Analysis {
        tail_threshold_ns: ctx.tail_threshold_ns,
        tail_samples: tail.n,
        tail_by_cause: tail.by_cause,
        outliers: tail.outliers,
        verdict: Verdict {
            futex: futex_status.to_owned(),
            headline,
            findings,
        },
        bands,
    }
}

/// `futex-driven` when a futex finding was made; `clean` when perf counted no futex call or,
/// with `/proc` (which cannot count futex calls), no hot thread blocked at all and none sleeps
/// by design; else `unknown`.
fn futex_status(lineup: &Lineup<'_>, perf: bool, findings: &[Finding]) -> &'static str {
    let hot = &lineup.hot;
    let never_blocked = hot.iter().all(|t| {
        t.total.voluntary.unwrap_or(0) < PROC_BLOCKS_MIN
            && t.role != Role::Consumer
            && !sleeping_idle(lineup.idle_of(t))
    });
    if findings.iter().any(|f| f.cause == Cause::Futex) {
        "futex-driven"
    } else if !hot.is_empty() && (perf || never_blocked) {
        "clean"
    } else {
        "unknown"
    }
}

/// The headline from the counters and the tail: futex first (saying so when the slowest
/// samples line up more with something else), else clean, else the leading finding.
fn tail_headline(hot: &[&ThreadJitter], findings: &[Finding], futex: &str, perf: bool) -> String {
    let quiet = hot.iter().all(|t| {
        t.total.futex.unwrap_or(0) == 0
            && t.total.voluntary.unwrap_or(0) == 0
            && t.total.involuntary.unwrap_or(0) == 0
            && t.total.faults() == 0
    });
    if let Some(f) = findings.iter().find(|f| f.cause == Cause::Futex) {
        let elsewhere = findings
            .iter()
            .filter(|o| o.cause != Cause::Futex)
            .filter(|o| o.tail_share.unwrap_or(0.0) > f.tail_share.unwrap_or(0.0))
            .max_by(|a, b| {
                a.tail_share
                    .partial_cmp(&b.tail_share)
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
        match elsewhere {
            Some(o) => format!(
                "{}: {}. The samples above p99.9 line up more with {} ({:.0}%): see below",
                Cause::Futex.lead(),
                f.evidence,
                o.cause,
                o.tail_share.unwrap_or(0.0) * 100.0
            ),
            None => format!("{}: {}", Cause::Futex.lead(), f.evidence),
        }
    } else if hot.is_empty() {
        "unknown: no hot thread could be watched (see notes)".into()
    } else if quiet && findings.is_empty() {
        format!(
            "clean: no futex call, no context switch and no page fault on the hot threads ({}) while measuring",
            hot.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ")
        )
    } else if let Some(f) = findings.first() {
        let futex_words = match (futex, perf) {
            ("clean", true) => "no futex call on the hot threads; ",
            ("clean", false) => "no hot thread blocked (no voluntary context switch); ",
            _ => "",
        };
        format!("{futex_words}{}: {}", f.cause.lead(), f.evidence)
    } else {
        "no cause found on the watched threads".into()
    }
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
            let whose = match c.owner {
                Owner::Platform => {
                    "the platform's (another process, the hypervisor or interrupts), not the measured process's or Aeron's"
                }
                Owner::Ours => "ours (the process, its threads or where they run)",
            };
            // The findings are about the tail; a band's largest cause may not appear there.
            let fix = findings
                .iter()
                .find(|f| {
                    f.cause == c.cause
                        && (c.thread.is_empty() || f.thread == "hot threads" || f.thread.starts_with(&c.thread))
                })
                .map(|f| f.fix.clone())
                .or_else(|| c.cause.usual_fix().map(str::to_owned))
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
    if futex == "futex-driven" && b.causes.first().is_none_or(|c| c.cause != Cause::Futex) {
        if let Some(f) = findings.iter().find(|f| f.cause == Cause::Futex) {
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
    use crate::model::OffCpuKind;
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
        }
    }

    /// The analysis's finding of `cause` (there must be one).
    fn finding(a: &Analysis, cause: Cause) -> &Finding {
        a.verdict
            .findings
            .iter()
            .find(|f| f.cause == cause)
            .unwrap_or_else(|| panic!("no {cause} finding: {:?}", a.verdict.findings))
    }

    /// latency-sub, switched out `involuntary` times.
    fn switched_subscriber(involuntary: u64) -> ThreadJitter {
        thread(
            "latency-sub",
            1,
            Role::Subscriber,
            Counts {
                involuntary: Some(involuntary),
                ..quiet()
            },
        )
    }

    /// A command name as sched_switch gives it.
    fn comm_of(name: &[u8]) -> [u8; 16] {
        let mut comm = [0_u8; 16];
        comm[..name.len()].copy_from_slice(name);
        comm
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
        assert_eq!(f.cause, Cause::Futex);
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
    fn a_media_driver_that_waited_for_a_core_leads_a_udp_run_s_verdict_and_not_an_ipc_one() {
        let driver = |wait| {
            let c = Counts {
                runqueue_wait_ns: wait,
                run_ns: 20_000,
                ..Counts::default()
            };
            thread("aeron-driver", 9, Role::Driver, c)
        };
        let sub = thread("latency-sub", 1, Role::Subscriber, quiet());
        let starved = side(Source::Perf, vec![sub.clone(), driver(900_000)]);
        let udp = Context {
            driver_on_path: true,
            ..ctx("spin")
        };
        let a = analyse(&[&starved], &[sample(20_000, 90)], &[], None, &udp);
        let f = finding(&a, Cause::DriverWait);
        assert!(
            f.evidence
                .contains("aeron-driver (media driver, tid 9) waited 900.0 µs on a run queue (90%)"),
            "{}",
            f.evidence
        );
        assert!(
            f.fix.contains("a core to spare for the driver"),
            "spinning on 2 cores: {}",
            f.fix
        );
        assert_eq!(a.verdict.findings[0].cause, Cause::DriverWait);
        let h = &a.verdict.headline;
        assert!(h.starts_with("the media driver waited for a core: in the "), "{h}");
        assert!(
            h.contains("fix that first (its finding below). The tail: clean: no futex call"),
            "{h}"
        );
        // Over aeron:ipc the driver is not on the messages' path; and a short wait is not named.
        let a = analyse(&[&starved], &[sample(20_000, 90)], &[], None, &ctx("spin"));
        assert!(a.verdict.findings.iter().all(|f| f.cause != Cause::DriverWait));
        let fed = side(Source::Perf, vec![sub, driver(50_000)]);
        let a = analyse(&[&fed], &[sample(20_000, 90)], &[], None, &udp);
        assert!(a.verdict.findings.iter().all(|f| f.cause != Cause::DriverWait));
        assert!(a.verdict.headline.starts_with("clean:"), "{}", a.verdict.headline);
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
        let own = finding(&a, Cause::PreemptedOwn);
        assert!(
            own.evidence.contains("aeron-conductor") && own.evidence.contains("2x"),
            "{}",
            own.evidence
        );
        assert_eq!(own.tail_share, Some(1.0));
        let foreign = finding(&a, Cause::PreemptedForeign);
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
    fn preemptors_are_listed_by_the_time_they_took_not_by_how_often() {
        let mut sub = switched_subscriber(7);
        // A kworker's five short turns, a runtime's two long ones; this process's own one.
        for t in 0..5 {
            let at = 100 + t * 10_000;
            sub.off_cpu.push(episode(
                at,
                Some(at + 2_000),
                OffCpuKind::Preempted,
                998,
                comm_of(b"kworker"),
            ));
        }
        for at in [200_000, 400_000] {
            sub.off_cpu.push(episode(
                at,
                Some(at + 90_000),
                OffCpuKind::Preempted,
                997,
                comm_of(b"tokio-rt-worker"),
            ));
        }
        let me = std::process::id() as i32;
        sub.off_cpu.push(episode(
            600_000,
            Some(601_000),
            OffCpuKind::Preempted,
            me,
            comm_of(b"latency-probe"),
        ));
        let s = side(Source::Perf, vec![sub]);
        let a = analyse(&[&s], &[sample(20_000, 90)], &[], None, &ctx("spin"));
        let e = &finding(&a, Cause::PreemptedForeign).evidence;
        let at = |who: &str| e.find(who).unwrap_or_else(|| panic!("no {who} in {e}"));
        assert!(
            e.contains("by tokio-rt-worker (pid 997, not ours) 2x for 180.0 µs, kworker"),
            "{e}"
        );
        assert!(e.contains("kworker (pid 998, not ours) 5x for 10.00 µs"), "{e}");
        assert!(at("tokio-rt-worker") < at("kworker"), "the longest first: {e}");
        assert!(
            e.contains(&format!("latency-probe (pid {me}, this watcher) 1x for 1000 ns")),
            "{e}"
        );
    }

    #[test]
    fn a_yield_is_the_cause_of_whoever_ran_and_is_worded_as_a_yield() {
        let mut sub = switched_subscriber(3);
        let comm = comm_of(b"hogz");
        // Two yields to the hog, one preemption by it.
        for (t, kind) in [
            (100, OffCpuKind::Yielded),
            (10_000, OffCpuKind::Yielded),
            (700_000, OffCpuKind::Preempted),
        ] {
            sub.off_cpu.push(episode(t, Some(t + 5_000), kind, 999, comm));
        }
        let s = side(Source::Perf, vec![sub]);
        let a = analyse(&[&s], &[sample(20_000, 90)], &[], None, &ctx("backoff"));
        let foreign = finding(&a, Cause::PreemptedForeign);
        assert!(
            foreign.evidence.contains("hogz (pid 999, not ours) 3x")
                && foreign.evidence.contains("latency-sub lost its CPU 3 times")
                && foreign.evidence.contains("2 of them yielding it in sched_yield"),
            "{}",
            foreign.evidence
        );
        assert!(
            a.outliers[0]
                .causes
                .iter()
                .any(|c| c == "latency-sub gave its CPU to hogz (pid 999, not ours) in sched_yield for 5000 ns"),
            "{:?}",
            a.outliers[0].causes
        );
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
        assert!(a.verdict.findings.iter().all(|f| f.cause != Cause::Futex));
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

    /// A perf side of `sub` with these stalls, over 200 ms, and `samples` as one octave.
    fn stalled_side(
        mut sub: ThreadJitter,
        mut stalls: StallLog,
        samples: Vec<SlowSample>,
    ) -> (JitterSide, Vec<crate::model::Octave>) {
        stalls.count = stalls.stalls.len() as u64;
        sub.stalls = Some(stalls);
        let mut s = side(Source::Perf, vec![sub]);
        s.boundaries = vec![Some(0), Some(200_000_000)];
        let octaves = vec![crate::model::Octave {
            octave: 0,
            seen: samples.len() as u64,
            samples,
        }];
        (s, octaves)
    }

    /// 1,000 messages 10 µs apart: 900 take 1 µs; 90 (the p90-p99 band) are each delayed 50 µs
    /// by a preemption of latency-sub by `hogz`; 10 (above p99) by 400 µs on-CPU stalls.
    fn planted_run() -> (JitterSide, Vec<crate::model::Octave>, [u64; 5]) {
        let mut sub = switched_subscriber(90);
        let comm = comm_of(b"hogz");
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
        let (s, octaves) = stalled_side(sub, stalls, samples);
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
            cause: Cause::PreemptedOwn,
            owner: Owner::Ours,
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
            cause: Cause::Stall,
            owner: Owner::Platform,
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

    /// 1,000 messages 100 µs apart; 90 (the p90-p99 band) each meet a 30 µs on-CPU stall of
    /// latency-sub with one timed page fault in it, which costs `fault_cost_ns` measured here.
    fn faulting_run(fault_cost_ns: u64) -> Analysis {
        let mut sub = thread("latency-sub", 1, Role::Subscriber, quiet());
        let mut stalls = StallLog::new(5_000, 100);
        let mut faults = Vec::new();
        let mut samples = Vec::new();
        for i in 0..1_000_i64 {
            let at = i * 100_000;
            let latency = if (1..=9).contains(&(i % 100)) {
                stalls.stalls.push((at + 100, 30_000));
                faults.push(at + 200);
                31_000
            } else {
                1_000
            };
            samples.push(sample(latency, at));
        }
        sub.fault_times = Some(faults);
        let (s, octaves) = stalled_side(sub, stalls, samples);
        let mut c = ctx("spin");
        c.edges = Some([1_000, 1_000, 31_000, 31_000, 31_000]);
        c.fault_cost_ns = fault_cost_ns;
        analyse(&[&s], &[], &octaves, None, &c)
    }

    #[test]
    fn a_stall_around_a_slow_fault_is_the_fault_and_a_long_one_is_not() {
        // Measured at 10 µs, the fault took 30 µs (3x): still the fault. Measured at 5 µs, a
        // 30 µs stall (6x) is something else that met a fault.
        for (cost, named) in [(10_000, Cause::PageFaults), (5_000, Cause::Stall)] {
            let a = faulting_run(cost);
            let top = &a.bands[1].causes[0];
            assert_eq!(
                (top.cause, top.thread.as_str()),
                (named, "latency-sub"),
                "{:?}",
                a.bands[1]
            );
        }
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1234), "1,234");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
