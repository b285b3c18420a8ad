//! The `jitter` section as text: per-group counters, threads, slowest samples, the verdict.

use crate::model::GroupJitter;
use crate::model::JitterReport;
use crate::model::Role;
use crate::model::Source;
use crate::model::ThreadSummary;
use crate::units::count_or_dash;
use crate::units::format_ns;
use std::fmt::Write as _;

/// What the samples of a jitter section are, for the slowest samples' heading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Samples {
    /// The probe's: numbered, latency from the intended send time.
    Probe,
    /// A service's tap's slowest messages (`attach`): no sequence number, latency from the
    /// send stamp.
    Tap,
}

/// The text form: per-group counters, threads, slowest samples, the verdict last.
#[must_use]
pub fn render(j: &JitterReport, rows: &[Option<GroupJitter>]) -> String {
    render_of(j, rows, Samples::Probe)
}

/// [`render`], its slowest samples headed as `samples` says.
#[must_use]
pub fn render_of(j: &JitterReport, rows: &[Option<GroupJitter>], samples: Samples) -> String {
    let mut out = String::new();
    let o = &mut out;
    let source = match &j.source.reason {
        Some(r) if j.source.name != Source::Perf => format!("{} (not perf: {r})", j.source.name),
        _ => j.source.name.to_string(),
    };
    let _ = writeln!(o, "\njitter diagnosis (counters: {source})");
    if rows.iter().any(Option::is_some) {
        group_table(o, j, rows);
    }
    let _ = writeln!(o, "threads over the measured period:");
    for t in &j.threads {
        let _ = writeln!(o, "{}", thread_line(t));
    }
    outliers(o, j, samples);
    bands(o, j);
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
    verdict_head(o, j);
    let _ = writeln!(o, "  futex: {}", j.verdict.futex);
    for f in &j.verdict.findings {
        let _ = writeln!(o, "  - [{}] {}", f.cause, f.evidence);
        let _ = writeln!(o, "    fix: {}", f.fix);
    }
    out
}

/// The verdict for the summary: the headline, one line per other band, and the futex status
/// with the other findings named in one line (their evidence and fixes are in the detail view).
#[must_use]
pub fn render_verdict(j: &JitterReport) -> String {
    let mut out = String::new();
    verdict_head(&mut out, j);
    let others: Vec<String> = j
        .verdict
        .findings
        .iter()
        .map(|f| {
            let thread = f.thread.split(" (").next().unwrap_or(&f.thread);
            match f.tail_share {
                Some(s) if s > 0.0 => format!("{} ({thread}, {:.0}% of the tail)", f.cause, s * 100.0),
                _ => format!("{} ({thread})", f.cause),
            }
        })
        .collect();
    let findings = if others.is_empty() {
        "no finding".to_owned()
    } else {
        format!("findings: {}", others.join(", "))
    };
    let _ = writeln!(out, "  futex: {}; {findings}", j.verdict.futex);
    out
}

/// `VERDICT: headline`, then each band the headline does not explain in one line.
fn verdict_head(o: &mut String, j: &JitterReport) {
    let _ = writeln!(o, "\nVERDICT: {}", j.verdict.headline);
    for b in &j.bands {
        if !j.verdict.headline.contains(&format!(" in {} (", b.band)) {
            let _ = writeln!(o, "  {}: {}", b.band, band_causes(b, 2));
        }
    }
}

/// Per group: hot threads as futex/voluntary/involuntary/faults, helpers as wake-ups, stalls,
/// steal and the meter's gaps.
fn group_table(o: &mut String, j: &JitterReport, rows: &[Option<GroupJitter>]) {
    let cols: Vec<&ThreadSummary> = j
        .threads
        .iter()
        .filter(|t| {
            t.role.is_hot()
                || matches!(
                    t.role,
                    Role::Conductor | Role::Driver | Role::LockHelper | Role::PlantHelper
                )
        })
        .collect();
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
                    count_or_dash(x.counts.futex),
                    count_or_dash(x.counts.voluntary),
                    count_or_dash(x.counts.involuntary),
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

/// One watched thread's counters over the measured period.
fn thread_line(t: &ThreadSummary) -> String {
    let c = &t.total;
    let mut line = format!(
        "  {}: {} ({}, tid {}): futex {}, voluntary {}, involuntary {}, migrations {}, page faults {}/{} \
         (minor/major), wake-ups {}, on CPU {}, run-queue wait {}",
        t.process,
        t.name,
        t.role.describe(),
        t.tid,
        count_or_dash(c.futex),
        count_or_dash(c.voluntary),
        count_or_dash(c.involuntary),
        count_or_dash(c.migrations),
        c.minor_faults,
        c.major_faults,
        c.wakeups,
        format_ns(c.run_ns),
        format_ns(c.runqueue_wait_ns)
    );
    if let Some(s) = t.off_cpu {
        let _ = write!(
            line,
            "; off CPU {} times ({} preempted, {}{} blocked), {} in all",
            s.preempted + s.yielded + s.blocked,
            s.preempted,
            if s.yielded > 0 {
                format!("{} yielded, ", s.yielded)
            } else {
                String::new()
            },
            s.blocked,
            format_ns(s.total_ns)
        );
    }
    match t.stalls {
        // An attached service's gaps are its tap's slow messages, not gaps of a loop.
        Some(s) if t.role == Role::Service => {
            let _ = write!(
                line,
                "; {} of its slowest messages waited >= {} over p50 (longest {})",
                s.count,
                format_ns(s.threshold_ns),
                format_ns(s.max_ns)
            );
        }
        Some(s) => {
            let _ = write!(
                line,
                "; {} stalls >= {} (max {})",
                s.count,
                format_ns(s.threshold_ns),
                format_ns(s.max_ns)
            );
        }
        None => {}
    }
    line
}

/// The ten slowest samples with what overlapped them, then the tail by first cause.
fn outliers(o: &mut String, j: &JitterReport, samples: Samples) {
    if !j.outliers.is_empty() {
        let _ = writeln!(
            o,
            "{}",
            match samples {
                Samples::Probe => "slowest samples (latency from intended send; what overlapped them):",
                Samples::Tap =>
                    "slowest messages (the tap's latency, from the send stamp; at: into the watch; what overlapped them):",
            }
        );
        for s in j.outliers.iter().take(10) {
            let causes = if s.causes.is_empty() {
                "nothing on the watched threads".to_owned()
            } else {
                s.causes.join("; ")
            };
            let seq = match samples {
                Samples::Probe => format!("seq {:>10} ", s.seq),
                Samples::Tap => String::new(),
            };
            let (at, latency) = (s.at_ms, format_ns(s.latency_ns));
            let _ = writeln!(o, "  {seq}at {at:>9.1} ms {latency:>10}  {causes}");
        }
    }
    if j.tail.threshold_ns == u64::MAX {
        // No latency samples (attach without a tap): no tail to line up.
        return;
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
}

/// Every band by cause, as a table.
fn bands(o: &mut String, j: &JitterReport) {
    if j.bands.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "bands: what each message's excess over p50 (latency - p50) lines up with, share of the band's excess"
    );
    let _ = writeln!(
        o,
        "  {:<10} {:>23} {:>9} {:>11}  causes",
        "band", "range", "messages", "mean excess"
    );
    for b in &j.bands {
        let _ = writeln!(
            o,
            "  {:<10} {:>23} {:>9} {:>11}  {}",
            b.band,
            format!("{} - {}", format_ns(b.from_ns), format_ns(b.to_ns)),
            crate::units::thousands(b.samples),
            format_ns(b.mean_excess_ns),
            band_causes(b, 3)
        );
    }
}

/// A band's largest causes and what is left, in one line.
fn band_causes(b: &crate::model::Band, n: usize) -> String {
    if b.samples == 0 {
        return "no message".into();
    }
    if b.analysed == 0 {
        return "none lined up (no sample in this band: faster than the slowest kept)".into();
    }
    let mut parts: Vec<String> = b
        .causes
        .iter()
        .filter(|c| c.share >= 0.005)
        .take(n)
        .map(|c| format!("{} {:.0}% ({})", c.words, c.share * 100.0, c.owner))
        .collect();
    parts.push(format!("unexplained {:.0}%", b.unexplained * 100.0));
    parts.join("; ")
}

fn truncate(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}
