//! `latency-probe attach`'s report as text: what was watched, then the jitter section as the
//! probe prints its own (per-group counters, threads, verdict).

use std::fmt::Write as _;

use crate::model::AttachReport;

/// The text form.
#[must_use]
pub fn text(r: &AttachReport) -> String {
    let mut out = String::new();
    let names: Vec<String> = r.threads.iter().map(|t| format!("{} ({})", t.name, t.tid)).collect();
    let _ = writeln!(
        out,
        "latency-probe attach: process {} (pid {}), {:.1} s from {} in 20 groups of {:.2} s; watched as the \
         service's: {}",
        r.process,
        r.pid,
        r.watched_s,
        r.started_at,
        r.duration_s / 20.0,
        names.join(", ")
    );
    let _ = writeln!(
        out,
        "(no latency here: the counters and off-CPU episodes of these threads; the process's other threads are \
         counted as its helpers)"
    );
    out.push_str(&crate::render::jitter::render(&r.jitter, &r.groups));
    if let Some(why) = &r.incomplete_reason {
        let _ = writeln!(out, "INCOMPLETE: {why}; the groups before it are above");
    }
    out
}
