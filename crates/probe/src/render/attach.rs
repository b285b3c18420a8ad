//! `latency-probe attach`'s report as text: what was watched, then the jitter section as the
//! probe prints its own (per-group counters, threads, verdict).

use std::fmt::Write as _;

use crate::model::AttachReport;
use crate::render::jitter::Samples;
use crate::units::{format_ns, thousands};

/// The text form.
#[must_use]
pub fn text(r: &AttachReport) -> String {
    let mut out = String::new();
    let names: Vec<String> = r.threads.iter().map(|t| format!("{} ({})", t.name, t.tid)).collect();
    // A watch cut short (the process ended, Ctrl-C) covers the groups it reached.
    let (span, groups) = if r.complete {
        (format!("{:.1} s", r.watched_s), "20 groups")
    } else {
        (
            format!("{:.1} s of a {:.1} s window", r.watched_s, r.duration_s),
            "groups",
        )
    };
    let _ = writeln!(
        out,
        "latency-probe attach: process {} (pid {}), {span} from {} in {groups} of {:.2} s; watched as the \
         service's: {}",
        r.process,
        r.pid,
        r.started_at,
        r.duration_s / 20.0,
        names.join(", ")
    );
    match &r.tap {
        Some(t) => {
            let e = t.edges_ns;
            let _ = writeln!(
                out,
                "its tap {}: figure {} (of {}), {} messages in {} intervals inside the watch; p50 {}, p90 {}, p99 {}, \
                 p99.9 {}, max {}",
                t.dir,
                t.figure,
                t.figures.join(", "),
                thousands(t.messages),
                t.intervals,
                format_ns(e[0]),
                format_ns(e[1]),
                format_ns(e[2]),
                format_ns(e[3]),
                format_ns(e[4]),
            );
            let _ = writeln!(
                out,
                "lined up: its {} slowest messages received in the watch (the tap keeps {} an interval), each \
                 [sent, received] against the episodes of the watched threads; every message above {} is among them",
                thousands(t.slowest_kept as u64),
                t.slowest_per_interval,
                format_ns(t.complete_above_ns),
            );
        }
        None => {
            let _ = writeln!(
                out,
                "(no tap found, so no latency here: the counters and off-CPU episodes of these threads; the \
                 process's other threads are counted as its helpers)"
            );
        }
    }
    out.push_str(&crate::render::jitter::render_of(&r.jitter, &r.groups, Samples::Tap));
    if let Some(c) = &r.own_cost {
        let _ = writeln!(
            out,
            "attach's own cost: {} of CPU ({} of it in the kernel) in {:.1} s, {:.2}% of one core; at most {:.1} MiB \
             of memory",
            format_ns((c.cpu_s * 1e9) as u64),
            format_ns((c.system_s * 1e9) as u64),
            c.wall_s,
            100.0 * c.cpu_s / c.wall_s.max(1e-3),
            c.max_rss_kib as f64 / 1024.0,
        );
    }
    if let Some(why) = &r.incomplete_reason {
        let _ = writeln!(out, "INCOMPLETE: {why}; the groups before it are above");
    }
    out
}
