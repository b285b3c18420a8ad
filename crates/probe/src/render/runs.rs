//! `--runs` and `compare` as text.

use crate::model::label;
use crate::model::Change;
use crate::model::Report;
use crate::units::format_ns;

/// The comparison as text, with a verdict line.
#[must_use]
pub fn render_compare(a_name: &str, b_name: &str, a: &Report, b: &Report, changes: &[Change]) -> String {
    let mut s = format!(
        "compare (latency from the intended send time, the median of each file's runs when it has runs; B vs A; \
         noise = the larger run-to-run spread, (max - min) / min, recorded in the two files)\n  A: {a_name} ({} {}, {:.0} msg/s, {} B, {}{})\n  B: {b_name} ({} {}, {:.0} msg/s, {} B, {}{})\n",
        a.mode.as_str(),
        a.tool.name,
        a.rate_target,
        a.msg_size,
        a.started_at,
        a.runs.as_ref().map_or_else(String::new, |r| format!(", {} runs", r.runs.len())),
        b.mode.as_str(),
        b.tool.name,
        b.rate_target,
        b.msg_size,
        b.started_at,
        b.runs.as_ref().map_or_else(String::new, |r| format!(", {} runs", r.runs.len())),
    );
    s.push_str(&format!(
        "{:>8}{:>12}{:>12}{:>10}{:>10}  verdict\n",
        "", "A", "B", "change", "noise"
    ));
    for c in changes {
        let verdict = match c.beyond_noise {
            Some(true) if c.change_pct < 0.0 => "better, beyond the noise",
            Some(true) => "WORSE, beyond the noise",
            Some(false) => "within the noise",
            None => "unknown: no run-to-run variation recorded",
        };
        s.push_str(&format!(
            "{:>8}{:>12}{:>12}{:>9.1}%{:>10}  {verdict}\n",
            label(&c.percentile),
            format_ns(c.a_ns),
            format_ns(c.b_ns),
            c.change_pct,
            c.noise_pct.map_or_else(|| "-".to_owned(), |n| format!("{n:.1}%")),
        ));
    }
    if changes.iter().all(|c| c.beyond_noise.is_none()) {
        s.push_str(
            "neither file records run-to-run variation: measure both with latency-probe --runs 5 (or more) to tell a \
             change from noise\n",
        );
    }
    if b.mode != a.mode || b.msg_size != a.msg_size || (b.rate_target - a.rate_target).abs() > 0.01 * a.rate_target {
        s.push_str(
            "warning: A and B were measured differently (mode, rate or message size differ): the change mixes the \
             setup with whatever you tuned\n",
        );
    }
    for (name, r) in [("A", a), ("B", b)] {
        if !r.complete {
            s.push_str(&format!(
                "warning: {name} is incomplete: {}\n",
                r.incomplete_reason.as_deref().unwrap_or("?")
            ));
        }
    }
    s
}
