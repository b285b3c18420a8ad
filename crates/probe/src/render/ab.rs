//! `latency-probe ab` as text: one line per round as it runs, then the table of paired changes.

use std::fmt::Write as _;

use crate::model::{AbOrder, AbPercentile, AbReport, AbRound};
use crate::units::format_ns;

/// A round as it finishes: both arms' p50 and p99, their floors, and whether it counts.
#[must_use]
pub fn round_line(r: &AbRound) -> String {
    let floor = |f: Option<u64>| f.map_or_else(|| "-".to_owned(), format_ns);
    format!(
        "ab: round {} ({}): A p50 {} p99 {} (floor {}), B p50 {} p99 {} (floor {}){}",
        r.round,
        r.order,
        format_ns(r.a.p50),
        format_ns(r.a.p99),
        floor(r.a_floor_ns),
        format_ns(r.b.p50),
        format_ns(r.b.p99),
        floor(r.b_floor_ns),
        r.set_aside
            .as_ref()
            .map(|why| format!("; set aside: {why}"))
            .unwrap_or_default()
    )
}

/// 99, 99.9, 99.1: as many decimals as the figure needs.
#[must_use]
pub fn format_confidence(c: f64) -> String {
    let s = format!("{:.3}", 100.0 * c);
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// A change as a signed percentage, `+4.2%`; from 11 times on (+1000%), as the ratio, `12.3x`
/// or `918x`: a percentage that long is hard to read and breaks a table's columns. A fall to
/// an eleventh or less reads the same way, `1/12.3x` or `1/918x`: as a percentage every gain
/// past a hundredfold is `-99.x%`, and a thousandfold one reads as small as `-99.9%`.
pub(crate) fn pct(f: f64) -> String {
    let ratio = |r: f64| {
        if r >= 99.5 {
            format!("{r:.0}x")
        } else {
            format!("{r:.1}x")
        }
    };
    match 1.0 + f {
        r if r >= 11.0 => ratio(r),
        // (1e-9: 1 - 10/11 is a hair above 1/11 in floating point)
        r if r > 0.0 && 1.0 / r >= 11.0 - 1e-9 => format!("1/{}", ratio(1.0 / r)),
        _ => format!("{:+.1}%", 100.0 * f),
    }
}

/// A change's interval, `[-1.0%, +3.2%]`, or `-` without one.
pub(crate) fn interval_text(ci: Option<(f64, f64)>) -> String {
    ci.map_or_else(|| "-".to_owned(), |(lo, hi)| format!("[{}, {}]", pct(lo), pct(hi)))
}

/// A verdict as the reports print it: `no change` and `inconclusive` with the change their
/// interval would have seen.
pub(crate) fn verdict_text(verdict: &str, resolvable: Option<f64>) -> String {
    match resolvable {
        Some(r) => format!("{verdict} (would see {})", pct(r.abs()).trim_start_matches('+')),
        None => verdict.to_owned(),
    }
}

fn row(p: &AbPercentile) -> String {
    let interval = interval_text(p.ci_low.zip(p.ci_high));
    let verdict = verdict_text(&p.verdict, p.resolvable);
    format!(
        "{:<6} {:>10} {:>10} {:>8} {:>18} {:>7} {}",
        crate::model::label(&p.percentile),
        format_ns(p.a_ns.round() as u64),
        format_ns(p.b_ns.round() as u64),
        pct(p.change),
        interval,
        format!("{}/{}", p.b_better_rounds, p.rounds),
        verdict
    )
}

/// How the rounds' order was chosen, in words: `order random, seed 42` or `ABBA`.
#[must_use]
pub fn order_words(order: AbOrder, seed: Option<u64>) -> String {
    match (order, seed) {
        (AbOrder::Random, Some(seed)) => format!("order random, seed {seed}"),
        (AbOrder::Random, None) => "order random".to_owned(),
        (AbOrder::Abba, _) => "ABBA".to_owned(),
    }
}

/// The comparison: the arms, the column judged, the table, the notes.
#[must_use]
pub fn render(r: &AbReport) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "A: {}", r.a);
    let _ = writeln!(o, "B: {}", r.b);
    let counted = r.rounds.iter().filter(|x| x.set_aside.is_none()).count();
    let _ = writeln!(
        o,
        "{} rounds run ({}), {} counted of {} planned; latency from the {} send time; B vs A, Hodges-Lehmann \
         change with its {}% signed-rank interval over the per-round ratios",
        r.rounds.len(),
        order_words(r.order, r.seed),
        counted,
        r.rounds_planned,
        r.column.as_str(),
        // A report without the field (read back from an early version): the confidence asked.
        format_confidence(if r.interval_confidence > 0.0 {
            r.interval_confidence
        } else {
            r.confidence
        })
    );
    if counted == 0 {
        // A table of zeros would read as "no change".
        let _ = writeln!(o, "no round counts: nothing to compare");
    } else {
        let _ = writeln!(
            o,
            "{:<6} {:>10} {:>10} {:>8} {:>18} {:>7} verdict",
            "", "A", "B", "change", "interval", "B<A"
        );
        for p in &r.percentiles {
            let _ = writeln!(o, "{}", row(p));
        }
    }
    for n in &r.notes {
        let _ = writeln!(o, "note: {n}");
    }
    if let Some(why) = &r.incomplete_reason {
        let _ = writeln!(o, "INCOMPLETE: {why}");
    }
    o
}

#[cfg(test)]
mod tests {
    use super::render;
    use crate::model::{AbColumn, AbOrder, AbReport, AbRound, Stats};

    fn report(rounds: Vec<AbRound>) -> AbReport {
        AbReport {
            schema_version: crate::model::SCHEMA_VERSION,
            a: "A".into(),
            b: "B".into(),
            column: AbColumn::Intended,
            order: AbOrder::Random,
            seed: Some(1),
            confidence: 0.99,
            interval_confidence: 0.99,
            stopped_early: false,
            rounds_planned: 6,
            percentiles: crate::analysis::ab::judge(&rounds, 0.99, 0.05),
            complete: false,
            incomplete_reason: Some("interrupted".into()),
            notes: Vec::new(),
            rounds,
        }
    }

    #[test]
    fn a_change_of_eleven_times_or_more_reads_as_a_ratio() {
        use super::{pct, verdict_text};
        assert_eq!(
            [pct(0.042), pct(-0.5), pct(9.99), pct(10.0), pct(917.3)],
            ["+4.2%", "-50.0%", "+999.0%", "11.0x", "918x"]
        );
        // Falls: a percentage down to an eleventh, then the ratio; -100% (B zero) stays.
        assert_eq!(
            [
                pct(-0.9),
                pct(-10.0 / 11.0),
                pct(-0.99),
                pct(1.0 / 918.0 - 1.0),
                pct(-1.0)
            ],
            ["-90.0%", "1/11.0x", "1/100x", "1/918x", "-100.0%"]
        );
        assert_eq!(
            verdict_text("inconclusive", Some(0.665)),
            "inconclusive (would see 66.5%)"
        );
        assert_eq!(
            verdict_text("inconclusive", Some(-19.0)),
            "inconclusive (would see 20.0x)"
        );
    }

    #[test]
    fn a_comparison_with_no_round_says_so_instead_of_a_table_of_zeros() {
        let text = render(&report(Vec::new()));
        assert!(text.contains("no round counts: nothing to compare"), "{text}");
        assert!(!text.contains("+0.0%") && !text.contains("verdict"), "{text}");
        assert!(text.ends_with("INCOMPLETE: interrupted\n"), "{text}");
        let stats = Stats {
            p50: 200,
            p99: 400,
            ..Stats::default()
        };
        let one = AbRound {
            round: 1,
            order: "AB".into(),
            a: stats,
            b: stats,
            a_floor_ns: None,
            b_floor_ns: None,
            set_aside: None,
        };
        let text = render(&report(vec![one]));
        assert!(text.contains("verdict") && text.contains("p50"), "{text}");
        assert!(
            text.contains("\np99.9 ") && !text.contains("p999"),
            "p99.9, as elsewhere: {text}"
        );
    }
}
