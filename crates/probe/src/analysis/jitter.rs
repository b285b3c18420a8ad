//! The `jitter` section of a report, built from both sides' raw material: per-thread and
//! per-group summaries, the tail, and the verdict.

use crate::analysis::verdict::analyse;
use crate::analysis::verdict::Context;
use crate::model::process_name;
use crate::model::run_end;
use crate::model::GroupJitter;
use crate::model::GroupThread;
use crate::model::HiccupLog;
use crate::model::HiccupSection;
use crate::model::JitterReport;
use crate::model::JitterSide;
use crate::model::OffCpuKind;
use crate::model::OffCpuSummary;
use crate::model::ReadCost;
use crate::model::SlowSample;
use crate::model::Source;
use crate::model::SourceInfo;
use crate::model::StallSummary;
use crate::model::TailSummary;
use crate::model::ThreadJitter;
use crate::model::ThreadSummary;
use crate::model::GROUPS;
use crate::units::thousands;

/// The meter's outcome for a run.
#[derive(Debug, Clone)]
pub enum Hiccup<'a> {
    /// It ran.
    Ran(&'a HiccupLog),
    /// It did not, and why.
    Skipped(String),
}

/// Builds the section and the per-group rows from the sides of a run (subscriber first).
#[must_use]
pub fn build(
    sides: &[&JitterSide],
    slow: &[SlowSample],
    sampled: &[crate::model::Octave],
    hiccup: &Hiccup<'_>,
    ctx: &Context,
) -> (JitterReport, Vec<Option<GroupJitter>>) {
    let log = match hiccup {
        Hiccup::Ran(l) => Some(*l),
        Hiccup::Skipped(_) => None,
    };
    let a = analyse(sides, slow, sampled, log, ctx);
    let report = JitterReport {
        source: source(sides),
        verdict: a.verdict,
        tail: TailSummary {
            threshold_ns: a.tail_threshold_ns,
            samples: a.tail_samples,
            by_cause: a.tail_by_cause,
        },
        bands: a.bands,
        outliers: a.outliers,
        threads: thread_summaries(sides),
        hiccup: hiccup_section(hiccup),
        probe_cost: probe_cost(sides),
        notes: notes(sides),
    };
    (report, group_rows(sides, log))
}

/// Where the material came from: the first side's source, with a reason when the sides differ.
fn source(sides: &[&JitterSide]) -> SourceInfo {
    let mut source = sides.first().map(|s| s.source.clone()).unwrap_or(SourceInfo {
        name: Source::Off,
        reason: None,
    });
    for s in sides.iter().skip(1) {
        if s.source != source {
            source.reason = Some(format!(
                "sides differ: {} ({}) and {} ({})",
                source.name,
                source.reason.clone().unwrap_or_default(),
                s.source.name,
                s.source.reason.clone().unwrap_or_default()
            ));
        }
    }
    source
}

/// Each thread of both sides: its totals, stalls, and (with perf on every side, hot threads
/// only) its time off the CPU.
fn thread_summaries(sides: &[&JitterSide]) -> Vec<ThreadSummary> {
    let run_end = run_end(sides);
    let all: Vec<&ThreadJitter> = sides.iter().flat_map(|s| s.threads.iter()).collect();
    let perf = sides.iter().all(|s| s.source.name == Source::Perf);
    all.iter()
        .map(|t| ThreadSummary {
            process: process_name(&all, t.pid),
            pid: t.pid,
            tid: t.tid,
            name: t.name.clone(),
            role: t.role,
            total: t.total,
            stalls: t.stalls.as_ref().map(|l| StallSummary {
                threshold_ns: l.threshold_ns,
                count: l.count,
                total_ns: l.total_ns,
                max_ns: l.max_ns,
            }),
            off_cpu: (t.role.is_hot() && perf).then(|| off_cpu(t, run_end)),
        })
        .collect()
}

/// A thread's episodes off the CPU, counted by kind and summed (an open one up to `run_end`).
fn off_cpu(t: &ThreadJitter, run_end: i64) -> OffCpuSummary {
    let mut o = OffCpuSummary {
        lost_records: t.off_cpu_lost,
        ..OffCpuSummary::default()
    };
    for e in &t.off_cpu {
        match e.kind {
            OffCpuKind::Preempted => o.preempted += 1,
            OffCpuKind::Yielded => o.yielded += 1,
            OffCpuKind::Blocked => o.blocked += 1,
        }
        let (x, y) = e.span(run_end);
        o.total_ns += (y - x).max(0) as u64;
    }
    o
}

/// What reading the counters cost, over both sides.
fn probe_cost(sides: &[&JitterSide]) -> ReadCost {
    sides.iter().fold(ReadCost::default(), |acc, s| ReadCost {
        reads: acc.reads + s.read_cost.reads,
        max_ns: acc.max_ns.max(s.read_cost.max_ns),
        total_ns: acc.total_ns + s.read_cost.total_ns,
    })
}

/// The hiccup meter's line: where it ran and what it saw, or why it did not run.
fn hiccup_section(hiccup: &Hiccup<'_>) -> HiccupSection {
    match hiccup {
        Hiccup::Ran(l) => HiccupSection {
            status: match l.core {
                Some(c) => format!("ran on core {c}"),
                None => "ran unpinned".into(),
            },
            iterations: Some(l.iterations),
            gaps: Some(l.all_gaps),
            threshold_ns: Some(l.threshold_ns),
        },
        Hiccup::Skipped(why) => HiccupSection {
            status: why.clone(),
            iterations: None,
            gaps: None,
            threshold_ns: None,
        },
    }
}

/// Both sides' notes, then one per thread whose perf records were dropped.
fn notes(sides: &[&JitterSide]) -> Vec<String> {
    let mut notes: Vec<String> = sides.iter().flat_map(|s| s.notes.iter().cloned()).collect();
    for t in sides
        .iter()
        .flat_map(|s| s.threads.iter())
        .filter(|t| t.off_cpu_lost > 0)
    {
        notes.push(format!(
            "perf dropped {} switch records of {} (its ring buffer full, or past the {} episodes kept per \
             thread): counts are exact, per-sample causes partial",
            t.off_cpu_lost,
            t.name,
            thousands(crate::model::MAX_EPISODES as u64)
        ));
    }
    for t in sides
        .iter()
        .flat_map(|s| s.threads.iter())
        .filter(|t| t.fault_times_lost > 0)
    {
        notes.push(format!(
            "perf dropped {} page-fault samples of {} (ring buffer full): fault counts are exact, the faults lined \
             up with samples partial (a sample with a dropped fault shows none)",
            t.fault_times_lost, t.name
        ));
    }
    notes
}

/// Per-group rows: the subscriber's boundaries define the windows.
fn group_rows(sides: &[&JitterSide], log: Option<&HiccupLog>) -> Vec<Option<GroupJitter>> {
    let bounds: Vec<Option<i64>> = sides.first().map(|s| s.boundaries.clone()).unwrap_or_default();
    (0..GROUPS)
        .map(|g| {
            let a = (*bounds.get(g)?)?;
            let b = bounds.get(g + 1..)?.iter().flatten().next().copied()?;
            Some((a, b))
        })
        .enumerate()
        .map(|(g, window)| group_row(sides, g, window, log))
        .collect()
}

/// Group `g`'s row (none when no thread has counts for it); `window` is its span on the
/// subscriber's clock, when both its ends are known.
fn group_row(
    sides: &[&JitterSide],
    g: usize,
    window: Option<(i64, i64)>,
    log: Option<&HiccupLog>,
) -> Option<GroupJitter> {
    let threads: Vec<GroupThread> = sides
        .iter()
        .flat_map(|s| s.threads.iter())
        .filter_map(|t| {
            Some(GroupThread {
                name: t.name.clone(),
                tid: t.tid,
                role: t.role,
                counts: (*t.groups.get(g)?)?,
            })
        })
        .collect();
    if threads.is_empty() {
        return None;
    }
    let stalls = window.map_or(0, |(a, b)| {
        sides
            .iter()
            .flat_map(|s| s.threads.iter())
            .filter_map(|t| t.stalls.as_ref())
            .map(|l| l.stalls.iter().filter(|(s, _)| *s >= a && *s < b).count() as u64)
            .sum()
    });
    let hiccup = log
        .zip(window)
        .and_then(|(l, (a, b))| l.windows(&[a, b]).first().copied());
    let steal_ns = sides.first().and_then(|s| s.steal_ns.get(g).copied().flatten());
    Some(GroupJitter {
        threads,
        stalls,
        steal_ns,
        hiccup,
    })
}
