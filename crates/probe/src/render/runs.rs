//! `--runs` and `compare` as text.

use crate::model::label;
use crate::model::Comparison;
use crate::model::Report;
use crate::units::format_ns;

/// "1 run compared", "6 runs compared".
fn runs_compared(n: u32) -> String {
    format!("{n} run{} compared", if n == 1 { "" } else { "s" })
}

/// The comparison as text: the files, the table, what its verdicts can and cannot say.
#[must_use]
pub fn render_compare(a_name: &str, b_name: &str, a: &Report, b: &Report, c: &Comparison) -> String {
    let conf = crate::render::ab::format_confidence(c.confidence);
    let mut s = format!(
        "compare (latency from the intended send time; B vs A over each file's runs: Hodges-Lehmann change with \
         its {conf}% rank-sum interval)\n  A: {a_name} ({} {}, {:.0} msg/s, {} B, {}, {})\n  B: \
         {b_name} ({} {}, {:.0} msg/s, {} B, {}, {})\n",
        a.mode.as_str(),
        a.tool.name,
        a.rate_target,
        a.msg_size,
        a.started_at,
        runs_compared(c.runs_a),
        b.mode.as_str(),
        b.tool.name,
        b.rate_target,
        b.msg_size,
        b.started_at,
        runs_compared(c.runs_b),
    );
    s.push_str(&format!(
        "{:>8}{:>12}{:>12}{:>10}{:>20}  verdict\n",
        "", "A", "B", "change", "interval"
    ));
    let pct = |x: f64| crate::render::ab::pct(x / 100.0);
    for x in &c.changes {
        let interval = match (x.ci_low_pct, x.ci_high_pct) {
            (Some(lo), Some(hi)) => format!("[{}, {}]", pct(lo), pct(hi)),
            _ => "-".to_owned(),
        };
        let verdict = crate::render::ab::verdict_text(&x.verdict, x.resolvable_pct.map(|r| r / 100.0));
        s.push_str(&format!(
            "{:>8}{:>12}{:>12}{:>10}{:>20}  {verdict}\n",
            label(&x.percentile),
            format_ns(x.a_ns),
            format_ns(x.b_ns),
            pct(x.change_pct),
            interval,
        ));
    }
    for n in &c.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    if c.changes.iter().any(|x| x.verdict == "cannot tell") {
        s.push_str(&format!(
            "cannot tell: {} and {} runs give no {conf}% interval; it needs {} counted runs in each file \
             (--runs {} with the first left out), and for a decision latency-probe ab, which interleaves A and B\n",
            c.runs_a,
            c.runs_b,
            c.runs_needed,
            c.runs_needed + 1
        ));
    }
    let alpha = crate::render::ab::format_confidence(1.0 - c.confidence);
    let any = crate::render::ab::format_confidence(((1.0 - c.confidence) * c.changes.len() as f64).min(1.0));
    s.push_str(&format!(
        "false alarms: if nothing changed, a figure is called better or worse in at most {alpha}% of \
         comparisons, and some one of the {} figures in at most {any}%, provided each file's runs are independent \
         draws of the same machine; runs measured at different times are not (the floor's regime, other load), so \
         act on a verdict from latency-probe ab, not from two files measured apart\n",
        c.changes.len(),
    ));
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
