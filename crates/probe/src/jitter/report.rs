//! The `jitter` section of a report (JSON and text).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::verdict::{analyse, Context, Outlier, Verdict};
use super::{Counts, JitterSide, OffCpuKind, ReadCost, Role, SlowSample, SourceInfo};
use crate::hiccup::{HiccupLog, HiccupWindow};
use crate::recorder::GROUPS;
use crate::report::format_ns;
use crate::stats::Stats;

/// Stalls of a hot loop, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StallSummary {
    /// Gaps at least this long count.
    pub threshold_ns: u64,
    /// How many.
    pub count: u64,
    /// Their total, ns.
    pub total_ns: u64,
    /// The longest, ns.
    pub max_ns: u64,
}

/// Off-CPU episodes of a hot thread, summed (perf only).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffCpuSummary {
    /// Preempted while runnable.
    pub preempted: u64,
    /// Blocked (futex, sleep, I/O).
    pub blocked: u64,
    /// Total time off CPU, ns.
    pub total_ns: u64,
    /// Records the kernel dropped.
    pub lost_records: u64,
}

/// One watched thread over the measured period.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadSummary {
    /// The process it belongs to (`latency-sub`, `latency-pub`, or the driver's process name).
    pub process: String,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: i32,
    /// Name.
    pub name: String,
    /// What it is.
    pub role: Role,
    /// Counters over the measured period.
    pub total: Counts,
    /// Stalls its loop saw (hot loops).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stalls: Option<StallSummary>,
    /// Its off-CPU episodes (hot threads, perf).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off_cpu: Option<OffCpuSummary>,
}

/// The hiccup meter's part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HiccupSection {
    /// `ran on core N` or `skipped: why`.
    pub status: String,
    /// Iterations (gaps measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u64>,
    /// All gaps between its iterations, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gaps: Option<Stats>,
    /// Gaps at least this long were logged with their time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold_ns: Option<u64>,
}

/// Counters of one thread in one group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupThread {
    /// Thread name.
    pub name: String,
    /// Thread id.
    pub tid: i32,
    /// What it is.
    pub role: Role,
    /// Counters in this group.
    pub counts: Counts,
}

/// What the counters did during one group (attached to the group's row).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupJitter {
    /// Every watched thread with data for this group.
    pub threads: Vec<GroupThread>,
    /// Stalls of the hot loops that started in this group.
    pub stalls: u64,
    /// Hypervisor steal time in this group, all CPUs, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_ns: Option<u64>,
    /// The hiccup meter in this group's time window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hiccup: Option<HiccupWindow>,
}

/// Samples above p99.9, by what lined up with them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TailSummary {
    /// p99.9 of the latency from the intended send time.
    pub threshold_ns: u64,
    /// Samples at or above it that were kept.
    pub samples: u64,
    /// By first cause.
    pub by_cause: std::collections::BTreeMap<String, u64>,
}

/// The `jitter` section of a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JitterReport {
    /// The counter source, and why not perf when it is not.
    pub source: SourceInfo,
    /// The verdict in plain words.
    pub verdict: Verdict,
    /// Tail samples by cause.
    pub tail: TailSummary,
    /// The slowest samples with what lined up with them.
    pub outliers: Vec<Outlier>,
    /// Every watched thread.
    pub threads: Vec<ThreadSummary>,
    /// The hiccup meter.
    pub hiccup: HiccupSection,
    /// The probe's own counter reads.
    pub probe_cost: ReadCost,
    /// Threads that could not be watched, and other remarks.
    pub notes: Vec<String>,
}

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
    hiccup: &Hiccup<'_>,
    ctx: &Context,
) -> (JitterReport, Vec<Option<GroupJitter>>) {
    let log = match hiccup {
        Hiccup::Ran(l) => Some(*l),
        Hiccup::Skipped(_) => None,
    };
    let a = analyse(sides, slow, log, ctx);
    let mut source = sides.first().map(|s| s.source.clone()).unwrap_or(SourceInfo {
        name: "off".into(),
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
    let run_end = super::run_end(sides);
    let all: Vec<&super::ThreadJitter> = sides.iter().flat_map(|s| s.threads.iter()).collect();
    let process_of = |pid: u32| super::process_name(&all, pid);
    let threads = all
        .iter()
        .map(|t| ThreadSummary {
            process: process_of(t.pid),
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
            off_cpu: (t.role.is_hot() && sides.iter().all(|s| s.source.name == "perf")).then(|| {
                let mut o = OffCpuSummary {
                    lost_records: t.off_cpu_lost,
                    ..OffCpuSummary::default()
                };
                for e in &t.off_cpu {
                    match e.kind {
                        OffCpuKind::Preempted => o.preempted += 1,
                        OffCpuKind::Blocked => o.blocked += 1,
                    }
                    let (x, y) = e.span(run_end);
                    o.total_ns += (y - x).max(0) as u64;
                }
                o
            }),
        })
        .collect();
    let probe_cost = sides.iter().fold(ReadCost::default(), |acc, s| ReadCost {
        reads: acc.reads + s.read_cost.reads,
        max_ns: acc.max_ns.max(s.read_cost.max_ns),
        total_ns: acc.total_ns + s.read_cost.total_ns,
    });
    let hiccup_section = match hiccup {
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
    };
    let mut notes: Vec<String> = sides.iter().flat_map(|s| s.notes.iter().cloned()).collect();
    for t in sides
        .iter()
        .flat_map(|s| s.threads.iter())
        .filter(|t| t.off_cpu_lost > 0)
    {
        notes.push(format!(
            "perf dropped {} switch records of {} (ring buffer full): counts are exact, per-sample causes partial",
            t.off_cpu_lost, t.name
        ));
    }

    // Per-group rows: the subscriber's boundaries define the windows.
    let bounds: Vec<Option<i64>> = sides.first().map(|s| s.boundaries.clone()).unwrap_or_default();
    let windows: Vec<Option<(i64, i64)>> = (0..GROUPS)
        .map(|g| {
            let a = (*bounds.get(g)?)?;
            let b = bounds.get(g + 1..)?.iter().flatten().next().copied()?;
            Some((a, b))
        })
        .collect();
    let rows = (0..GROUPS)
        .map(|g| {
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
            let stalls = windows[g].map_or(0, |(a, b)| {
                sides
                    .iter()
                    .flat_map(|s| s.threads.iter())
                    .filter_map(|t| t.stalls.as_ref())
                    .map(|l| l.stalls.iter().filter(|(s, _)| *s >= a && *s < b).count() as u64)
                    .sum()
            });
            let hiccup = log
                .zip(windows[g])
                .and_then(|(l, (a, b))| l.windows(&[a, b]).first().copied());
            let steal_ns = sides.first().and_then(|s| s.steal_ns.get(g).copied().flatten());
            Some(GroupJitter {
                threads,
                stalls,
                steal_ns,
                hiccup,
            })
        })
        .collect();
    (
        JitterReport {
            source,
            verdict: a.verdict,
            tail: TailSummary {
                threshold_ns: a.tail_threshold_ns,
                samples: a.tail_samples,
                by_cause: a.tail_by_cause,
            },
            outliers: a.outliers,
            threads,
            hiccup: hiccup_section,
            probe_cost,
            notes,
        },
        rows,
    )
}

fn opt(v: Option<u64>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

/// The text form: per-group counters, threads, slowest samples, the verdict last.
#[must_use]
pub fn render(j: &JitterReport, rows: &[Option<GroupJitter>]) -> String {
    let mut out = String::new();
    let o = &mut out;
    let source = match &j.source.reason {
        Some(r) if j.source.name != "perf" => format!("{} (not perf: {r})", j.source.name),
        _ => j.source.name.clone(),
    };
    let _ = writeln!(o, "\njitter diagnosis (counters: {source})");
    // Columns: hot threads as futex/voluntary/involuntary/faults, helpers as wake-ups.
    let cols: Vec<&ThreadSummary> = j
        .threads
        .iter()
        .filter(|t| t.role.is_hot() || matches!(t.role, Role::Conductor | Role::Driver | Role::LockHelper))
        .collect();
    if rows.iter().any(Option::is_some) {
        let _ = writeln!(
            o,
            "per group: hot threads futex/voluntary/involuntary switches/page faults; helpers wake-ups"
        );
        let mut head = format!("{:>5}", "group");
        for t in &cols {
            let name = if t.role.is_hot() {
                t.name.clone()
            } else {
                format!("{}/{}", t.process.trim_start_matches("latency-"), t.name)
            };
            let _ = write!(head, " {:>20}", truncate(&name, 20));
        }
        let _ = write!(head, " {:>7} {:>9}", "stalls", "steal");
        if rows.iter().flatten().any(|r| r.hiccup.is_some()) {
            let _ = write!(head, " {:>12}", "meter gaps");
        }
        let _ = writeln!(o, "{head}");
        for (g, row) in rows.iter().enumerate() {
            let Some(r) = row else { continue };
            let mut line = format!("{g:>5}");
            for t in &cols {
                let cell = match r.threads.iter().find(|x| x.tid == t.tid) {
                    Some(x) if x.role.is_hot() => format!(
                        "{}/{}/{}/{}",
                        opt(x.counts.futex),
                        opt(x.counts.voluntary),
                        opt(x.counts.involuntary),
                        x.counts.faults()
                    ),
                    Some(x) => x.counts.wakeups.to_string(),
                    None => "-".into(),
                };
                let _ = write!(line, " {cell:>20}");
            }
            let _ = write!(line, " {:>7} {:>9}", r.stalls, r.steal_ns.map_or("-".into(), format_ns));
            if let Some(h) = r.hiccup {
                let _ = write!(line, " {:>12}", format!("{} (max {})", h.gaps, format_ns(h.max_ns)));
            }
            let _ = writeln!(o, "{line}");
        }
    }
    let _ = writeln!(o, "threads over the measured period:");
    for t in &j.threads {
        let c = &t.total;
        let mut line = format!(
            "  {}: {} ({}, tid {}): futex {}, voluntary {}, involuntary {}, migrations {}, page faults {}/{} \
             (minor/major), wake-ups {}, on CPU {}, run-queue wait {}",
            t.process,
            t.name,
            t.role.describe(),
            t.tid,
            opt(c.futex),
            opt(c.voluntary),
            opt(c.involuntary),
            opt(c.migrations),
            c.minor_faults,
            c.major_faults,
            c.wakeups,
            format_ns(c.run_ns),
            format_ns(c.runqueue_wait_ns)
        );
        if let Some(s) = t.off_cpu {
            let _ = write!(
                line,
                "; off CPU {} times ({} preempted, {} blocked), {} in all",
                s.preempted + s.blocked,
                s.preempted,
                s.blocked,
                format_ns(s.total_ns)
            );
        }
        if let Some(s) = t.stalls {
            let _ = write!(
                line,
                "; {} stalls >= {} (max {})",
                s.count,
                format_ns(s.threshold_ns),
                format_ns(s.max_ns)
            );
        }
        let _ = writeln!(o, "{line}");
    }
    if !j.outliers.is_empty() {
        let _ = writeln!(o, "slowest samples (latency from intended send; what overlapped them):");
        for s in j.outliers.iter().take(10) {
            let causes = if s.causes.is_empty() {
                "nothing on the watched threads".to_owned()
            } else {
                s.causes.join("; ")
            };
            let _ = writeln!(
                o,
                "  seq {:>10} at {:>9.1} ms {:>10}  {causes}",
                s.seq,
                s.at_ms,
                format_ns(s.latency_ns)
            );
        }
    }
    let causes: Vec<String> = j.tail.by_cause.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let _ = writeln!(
        o,
        "tail: {} samples >= p99.9 ({}): {}",
        j.tail.samples,
        format_ns(j.tail.threshold_ns),
        if causes.is_empty() {
            "-".into()
        } else {
            causes.join(", ")
        }
    );
    let _ = writeln!(o, "hiccup meter: {}", j.hiccup.status);
    if let (Some(n), Some(g)) = (j.hiccup.iterations, j.hiccup.gaps) {
        let _ = writeln!(
            o,
            "  {n} iterations, gap p50 {} p99.9 {} max {}",
            format_ns(g.p50),
            format_ns(g.p999),
            format_ns(g.max)
        );
    }
    let _ = writeln!(
        o,
        "probe cost: {} counter reads at group boundaries, longest {}, {} in all",
        j.probe_cost.reads,
        format_ns(j.probe_cost.max_ns),
        format_ns(j.probe_cost.total_ns)
    );
    for n in &j.notes {
        let _ = writeln!(o, "note: {n}");
    }
    let _ = writeln!(o, "\nVERDICT: {}", j.verdict.headline);
    let _ = writeln!(o, "  futex: {}", j.verdict.futex);
    for f in &j.verdict.findings {
        let _ = writeln!(o, "  - [{}] {}", f.cause, f.evidence);
        let _ = writeln!(o, "    fix: {}", f.fix);
    }
    out
}

fn truncate(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}
