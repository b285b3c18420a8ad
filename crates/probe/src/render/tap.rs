//! `latency-probe tap`'s text: a tap's figures overall, in time-ordered groups or per interval,
//! and the change between two figures per percentile; and the groups as plot points.
//!
//! Every page states its timing model: a tap's latency is a receive time (the receiving poll's
//! clock read) minus the stamp the sender wrote, on the clock the logs name.

use std::fmt::Write as _;
use std::time::{Duration, UNIX_EPOCH};

use hdrhistogram::Histogram;

use crate::model::{Stats, TapComparison, TapFigure, TapGroup};
use crate::render::ab::{format_confidence, interval_text, pct, verdict_text};
use crate::render::points::GroupPoint;
use crate::units::{format_ns, thousands, utc_timestamp};

/// What `tap` prints below the overall table for each figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TapView {
    /// The intervals merged into time-ordered groups.
    Groups,
    /// Every interval.
    Intervals,
    /// The overall table only.
    Overall,
}

fn utc(unix_s: f64) -> String {
    utc_timestamp(UNIX_EPOCH + Duration::from_secs_f64(unix_s.max(0.0)))
}

/// The line that says what the figures are and on which clock.
fn timing_model(figures: &[TapFigure]) -> String {
    let mut clocks: Vec<&str> = figures.iter().filter_map(|f| f.clock.as_deref()).collect();
    clocks.dedup();
    let clock = match clocks.as_slice() {
        [] => "the clock the logs were written on (they do not name it)".to_owned(),
        [one] => format!("CLOCK_{}", one.to_uppercase()),
        many => format!("the clocks {} (the figures differ)", many.join(", ")),
    };
    format!(
        "Timing model: each latency is a receive time (the receiving poll's clock read) minus the \
         sender's stamp, on {clock}; the logs hold nanoseconds."
    )
}

fn stats_header() -> String {
    format!(
        "{:<22} {:>11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "figure", "messages", "p50", "p90", "p99", "p99.9", "p99.99", "max"
    )
}

fn stats_row(name: &str, h: &Histogram<u64>) -> String {
    let s = Stats::from_histogram(h);
    let v = |ns: u64| if s.count == 0 { "-".to_owned() } else { format_ns(ns) };
    format!(
        "{:<22} {:>11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        name,
        thousands(s.count),
        v(s.p50),
        v(s.p90),
        v(s.p99),
        v(s.p999),
        v(s.p9999),
        v(s.max)
    )
}

/// The report of a tap's figures: a header with their time span, the overall table, then per
/// figure its `groups` (or intervals) as `view` asks.
#[must_use]
pub fn tap_text(figures: &[TapFigure], groups: &[Vec<TapGroup>], view: TapView) -> String {
    let mut out = String::new();
    let start = figures.iter().map(|f| f.span_s().0).fold(f64::INFINITY, f64::min);
    let end = figures.iter().map(|f| f.span_s().1).fold(f64::NEG_INFINITY, f64::max);
    let intervals: usize = figures.iter().map(|f| f.intervals.len()).sum();
    let _ = writeln!(
        out,
        "tap: {} figure{}, {} interval{} in all, {} + {:.2} s",
        figures.len(),
        if figures.len() == 1 { "" } else { "s" },
        thousands(intervals as u64),
        if intervals == 1 { "" } else { "s" },
        utc(start),
        end - start
    );
    let _ = writeln!(out, "{}\n", timing_model(figures));
    let _ = writeln!(out, "{}", stats_header());
    for f in figures {
        let _ = writeln!(out, "{}", stats_row(&f.name, &f.total()));
    }
    if view == TapView::Overall {
        return out;
    }
    for (f, g) in figures.iter().zip(groups) {
        out.push('\n');
        out.push_str(&figure_detail(f, g, view));
    }
    out
}

/// One figure's groups (or intervals), one line each.
fn figure_detail(f: &TapFigure, groups: &[TapGroup], view: TapView) -> String {
    let mut out = String::new();
    let rows: Vec<(f64, f64, &Histogram<u64>)> = match view {
        TapView::Intervals => {
            let t0 = f.span_s().0;
            f.intervals
                .iter()
                .map(|i| (i.start_s - t0, i.end_s() - t0, &i.histogram))
                .collect()
        }
        _ => groups.iter().map(|g| (g.start_s, g.end_s, &g.histogram)).collect(),
    };
    let what = match view {
        TapView::Intervals => "intervals".to_owned(),
        _ if groups.len() == 1 && f.intervals.len() == 1 => "1 group, its one interval".to_owned(),
        _ if groups.len() == f.intervals.len() => format!("{} groups, one interval each", groups.len()),
        _ => format!(
            "{} groups of {:.2} s",
            groups.len(),
            groups.first().map_or(0.0, |g| g.end_s - g.start_s)
        ),
    };
    let _ = writeln!(out, "{} ({}: {}):", f.name, f.files.join(", "), what);
    let _ = writeln!(
        out,
        "  {:>4} {:>8} {:>8} {:>11} {:>9} {:>9} {:>9} {:>9}",
        "#", "from s", "to s", "messages", "p50", "p99", "p99.9", "max"
    );
    for (k, (from, to, h)) in rows.iter().enumerate() {
        let s = Stats::from_histogram(h);
        let v = |ns: u64| if s.count == 0 { "-".to_owned() } else { format_ns(ns) };
        let _ = writeln!(
            out,
            "  {:>4} {:>8.2} {:>8.2} {:>11} {:>9} {:>9} {:>9} {:>9}",
            k + 1,
            from,
            to,
            thousands(s.count),
            v(s.p50),
            v(s.p99),
            v(s.p999),
            v(s.max)
        );
    }
    out
}

/// The change B vs A of each pair of figures, per percentile, with how it was judged: first
/// B's figures overall (A's are the report's own table), then per figure a table whose A and B
/// are the medians of the intervals' figures the change is estimated from, not the figures
/// overall (a spike in one interval moves a figure overall, not the change).
#[must_use]
pub fn comparison_text(a: &str, b: &str, pairs: &[(&TapFigure, &TapFigure, TapComparison)], confidence: f64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nB vs A: B = {b}, A = {a}\n\nB overall (A's is the table above):\n{}",
        stats_header()
    );
    for (_, fb, _) in pairs {
        let _ = writeln!(out, "{}", stats_row(&fb.name, &fb.total()));
    }
    let _ = writeln!(
        out,
        "\nPer percentile: A and B are the medians of the intervals' own figures;\nthe change is \
         B vs A over those figures, with its {}% interval.",
        format_confidence(confidence)
    );
    for (fa, fb, c) in pairs {
        let how = if c.paired {
            format!("paired by time over {} intervals", c.intervals.2)
        } else {
            format!(
                "UNPAIRED: {} and {} intervals at different times, so a change may be the machine's, not the service's",
                c.intervals.0, c.intervals.1
            )
        };
        let name = if fa.name == fb.name {
            fa.name.clone()
        } else {
            format!("{} vs {}", fb.name, fa.name)
        };
        let _ = writeln!(out, "\n{name} ({how}):");
        let _ = writeln!(
            out,
            "  {:<6} {:>10} {:>10} {:>8} {:>18} {:>9} verdict",
            "", "A", "B", "change", "interval", "samples"
        );
        let ns_or_dash = |ns: u64| if ns == 0 { "-".to_owned() } else { format_ns(ns) };
        for ch in &c.changes {
            let interval = interval_text(ch.ci);
            let verdict = verdict_text(&ch.verdict, ch.resolvable);
            let _ = writeln!(
                out,
                "  {:<6} {:>10} {:>10} {:>8} {:>18} {:>9} {}",
                ch.label,
                ns_or_dash(ch.a_ns),
                ns_or_dash(ch.b_ns),
                pct(ch.change),
                interval,
                format!("{}/{}", ch.samples.0, ch.samples.1),
                verdict
            );
        }
    }
    out
}

/// A figure's groups as the groups plot draws them (one latency per message: the tap has no
/// intended time, so both of the plot's series are the same).
#[must_use]
pub fn group_points(groups: &[TapGroup]) -> Vec<GroupPoint> {
    groups
        .iter()
        .enumerate()
        .map(|(index, g)| {
            let s = Stats::from_histogram(&g.histogram);
            GroupPoint {
                index,
                start_s: g.start_s,
                end_s: g.end_s,
                count: s.count,
                p50_ns: s.p50,
                p99_ns: s.p99,
                p999_ns: s.p999,
                max_ns: s.max,
                actual_p50_ns: s.p50,
                actual_p99_ns: s.p99,
                actual_p999_ns: s.p999,
                actual_max_ns: s.max,
                counters: Vec::new(),
            }
        })
        .collect()
}
