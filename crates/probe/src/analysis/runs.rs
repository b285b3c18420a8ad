//! Run-to-run variation of repeated runs (JLBH's figure) and the comparison of two reports.

use crate::analysis::ab::REGIME_FACTOR;
use crate::analysis::unpaired::{min_runs_each, shift_change};
use crate::model::label;
use crate::model::value;
use crate::model::Change;
use crate::model::Comparison;
use crate::model::Report;
use crate::model::RunPoint;
use crate::model::RunsSummary;
use crate::model::Stats;
use crate::model::Variation;
use crate::model::PERCENTILES;
use crate::units::format_ns;

/// JLBH's run-to-run variation, percent (operator precedence as in JLBH).
#[must_use]
pub fn jlbh_variation(min: f64, max: f64) -> f64 {
    let d = max + min / 2.0;
    if d > 0.0 {
        100.0 * (max - min) / d
    } else {
        0.0
    }
}

impl RunsSummary {
    /// From the runs' reports, in order.
    #[must_use]
    pub fn from_reports(reports: &[Report]) -> RunsSummary {
        let runs: Vec<RunPoint> = reports
            .iter()
            .enumerate()
            .map(|(i, r)| RunPoint {
                run: i as u32 + 1,
                latency_ns: r.latency_ns,
                complete: r.complete && r.lost == 0,
                lost: r.lost,
                rate_achieved: r.rate_achieved,
                floor_p50_ns: r.floor.as_ref().map(|f| f.combined_ns.p50),
            })
            .collect();
        let skip = runs.len() >= 3;
        let mut counted: Vec<&RunPoint> = runs[usize::from(skip)..].iter().filter(|r| r.complete).collect();
        if counted.is_empty() {
            // Nothing complete: say what there is rather than nothing.
            counted = runs[usize::from(skip)..].iter().collect();
        }
        let variation = PERCENTILES
            .iter()
            .map(|p| {
                let mut vals: Vec<u64> = counted.iter().map(|r| value(&r.latency_ns, p)).collect();
                vals.sort_unstable();
                let (min, max) = (vals.first().copied().unwrap_or(0), vals.last().copied().unwrap_or(0));
                Variation {
                    percentile: (*p).to_owned(),
                    min_ns: min,
                    max_ns: max,
                    variation_pct: jlbh_variation(min as f64, max as f64),
                    spread_pct: if min > 0 {
                        100.0 * (max - min) as f64 / min as f64
                    } else {
                        0.0
                    },
                    median_ns: median_ns(&vals.iter().map(|&v| v as f64).collect::<Vec<_>>()),
                }
            })
            .collect();
        RunsSummary {
            runs,
            first_run_skipped: skip,
            variation,
        }
    }

    /// The table JLBH prints: percentiles down, runs across, variation last.
    #[must_use]
    pub fn render(&self) -> String {
        let mut s = format!(
            "run-to-run ({} runs, latency from the intended send time; variation = 100 x (max - min) / (max + min/2) \
             as JLBH computes it{}):\n{:>8}",
            self.runs.len(),
            if self.first_run_skipped {
                ", first run left out"
            } else {
                ""
            },
            "",
        );
        for r in &self.runs {
            s.push_str(&format!("{:>11}", format!("run {}", r.run)));
        }
        s.push_str(&format!("{:>12}\n", "variation"));
        for v in &self.variation {
            s.push_str(&format!("{:>8}", label(&v.percentile)));
            for r in &self.runs {
                s.push_str(&format!("{:>11}", format_ns(value(&r.latency_ns, &v.percentile))));
            }
            s.push_str(&format!("{:>11.1}%\n", v.variation_pct));
        }
        if self.runs.iter().any(|r| r.floor_p50_ns.is_some()) {
            s.push_str(&format!("{:>8}", "floor"));
            for r in &self.runs {
                s.push_str(&format!(
                    "{:>11}",
                    r.floor_p50_ns.map_or_else(|| "-".to_owned(), format_ns)
                ));
            }
            s.push_str("   (raw round trip p50 between the hot cores)\n");
        }
        s
    }

    /// The runs as CSV: one row per run, one column per percentile (ns).
    #[must_use]
    pub fn csv(&self) -> String {
        let mut s = format!(
            "run,complete,lost,rate_achieved,floor_p50_ns,{}\n",
            PERCENTILES.join(",")
        );
        for r in &self.runs {
            s.push_str(&format!(
                "{},{},{},{:.1},{}",
                r.run,
                r.complete,
                r.lost,
                r.rate_achieved,
                r.floor_p50_ns.map_or_else(String::new, |v| v.to_string())
            ));
            for p in PERCENTILES {
                s.push_str(&format!(",{}", value(&r.latency_ns, p)));
            }
            s.push('\n');
        }
        s
    }
}

/// The runs a report carries for a comparison: its counted runs (complete, the first of three
/// or more left out), or the report itself when it has no runs (`--runs 1`, older versions).
fn runs_of(r: &Report) -> Vec<(Stats, Option<u64>)> {
    match &r.runs {
        Some(s) => s
            .runs
            .iter()
            .skip(usize::from(s.first_run_skipped))
            .filter(|p| p.complete)
            .map(|p| (p.latency_ns, p.floor_p50_ns))
            .collect(),
        None => vec![(r.latency_ns, r.floor.as_ref().map(|f| f.combined_ns.p50))],
    }
}

/// `compare A B`: per percentile, the change B vs A over the two files' runs, with its
/// interval at `confidence` and a verdict ([`shift_change`]). Runs on a floor more than
/// [`REGIME_FACTOR`] above the lowest floor of either file are left out (the machine was in
/// another regime), and said so. A no change rules out `resolve` either way (else
/// inconclusive).
#[must_use]
pub fn compare(a: &Report, b: &Report, confidence: f64, resolve: f64) -> Comparison {
    let (all_a, all_b) = (runs_of(a), runs_of(b));
    let lowest = all_a.iter().chain(&all_b).filter_map(|r| r.1).min();
    let near = |r: &&(Stats, Option<u64>)| match (r.1, lowest) {
        (Some(f), Some(lo)) => f as f64 <= REGIME_FACTOR * lo.max(1) as f64,
        _ => true,
    };
    let (ra, rb): (Vec<_>, Vec<_>) = (all_a.iter().filter(near).collect(), all_b.iter().filter(near).collect());
    let mut notes = Vec::new();
    for (name, all, kept) in [("A", &all_a, &ra), ("B", &all_b, &rb)] {
        if kept.len() < all.len() {
            notes.push(format!(
                "{} of {name}'s {} runs left out: their floor was over {REGIME_FACTOR}x the lowest of either file \
                 ({}), most likely another regime of the machine{}",
                all.len() - kept.len(),
                all.len(),
                format_ns(lowest.unwrap_or(0)),
                if kept.is_empty() {
                    "; none of its runs is left, so nothing can be told: measure both again, or with ab, which \
                     pairs runs on one floor (unless the change itself moves the floor: then compare the floors)"
                } else {
                    ""
                }
            ));
        }
    }
    let changes = PERCENTILES
        .iter()
        .map(|p| {
            let va: Vec<f64> = ra.iter().map(|r| value(&r.0, p) as f64).collect();
            let vb: Vec<f64> = rb.iter().map(|r| value(&r.0, p) as f64).collect();
            let c = shift_change(&va, &vb, confidence, resolve);
            let bounded = c.ci_low.is_finite() && c.ci_high.is_finite();
            Change {
                percentile: (*p).to_owned(),
                a_ns: median_ns(&va),
                b_ns: median_ns(&vb),
                change_pct: 100.0 * c.change,
                ci_low_pct: bounded.then_some(100.0 * c.ci_low),
                ci_high_pct: bounded.then_some(100.0 * c.ci_high),
                verdict: c.verdict.name().to_owned(),
                resolvable_pct: c.verdict.resolvable().map(|r| 100.0 * r),
            }
        })
        .collect();
    Comparison {
        confidence,
        runs_a: ra.len() as u32,
        runs_b: rb.len() as u32,
        runs_needed: min_runs_each(1.0 - confidence) as u32,
        changes,
        notes,
    }
}

/// The median of whole-ns figures, rounded to a whole ns (0 for none).
fn median_ns(v: &[f64]) -> u64 {
    crate::analysis::paired::median(v).map_or(0, |m| m.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Stats;
    use crate::render::runs::render_compare;

    fn stats(p50: u64, p99: u64) -> Stats {
        Stats {
            count: 1000,
            min: p50 / 2,
            mean: p50 as f64,
            p50,
            p90: p50 + 10,
            p95: p50 + 20,
            p99,
            p999: p99 * 2,
            p9999: p99 * 3,
            max: p99 * 4,
        }
    }

    #[test]
    fn jlbh_variation_keeps_jlbhs_formula() {
        // 100 * (120 - 100) / (120 + 100 / 2) = 2000 / 170
        assert!((jlbh_variation(100.0, 120.0) - 2000.0 / 170.0).abs() < 1e-9);
        assert_eq!(jlbh_variation(0.0, 0.0), 0.0);
        assert_eq!(jlbh_variation(50.0, 50.0), 0.0);
    }

    #[test]
    fn the_summary_skips_the_first_of_three_runs_and_spans_the_rest() {
        let mk = |p50, p99| {
            let mut r: Report = serde_json::from_str(include_str!("../../tests/data/report-minimal.json")).unwrap();
            r.latency_ns = stats(p50, p99);
            r
        };
        let s = RunsSummary::from_reports(&[mk(5000, 9000), mk(1000, 2000), mk(1100, 2600)]);
        assert!(s.first_run_skipped);
        assert_eq!(s.runs.len(), 3);
        let p50 = s.variation.iter().find(|v| v.percentile == "p50").unwrap();
        assert_eq!(
            (p50.min_ns, p50.max_ns),
            (1000, 1100),
            "the first run (5000) is left out"
        );
        assert!((p50.variation_pct - jlbh_variation(1000.0, 1100.0)).abs() < 1e-9);
        let t = s.render();
        assert!(
            t.contains("run 3") && t.contains("p99.9") && t.contains("first run left out"),
            "{t}"
        );
        let csv = s.csv();
        assert_eq!(csv.lines().count(), 4, "{csv}");
        assert!(csv.lines().nth(2).unwrap().starts_with("2,"), "{csv}");

        let two = RunsSummary::from_reports(&[mk(5000, 9000), mk(1000, 2000)]);
        assert!(!two.first_run_skipped, "two runs: both count");
        assert_eq!(two.variation[0].min_ns, 1000);
        assert_eq!(two.variation[0].max_ns, 5000);
        assert_eq!(two.variation[0].median_ns, 3000, "two runs: the mean of the middle two");
    }

    /// A report whose runs have these p50s (p99 = 2 x p50) and floors.
    fn with_runs(p50s: &[u64], floors: &[u64]) -> Report {
        let mut r: Report = serde_json::from_str(include_str!("../../tests/data/report-minimal.json")).unwrap();
        let reps: Vec<Report> = p50s
            .iter()
            .map(|p50| {
                let mut x = r.clone();
                x.latency_ns = stats(*p50, 2 * p50);
                x
            })
            .collect();
        let mut runs = RunsSummary::from_reports(&reps);
        for (run, floor) in runs.runs.iter_mut().zip(floors) {
            run.floor_p50_ns = Some(*floor);
        }
        r.runs = Some(runs);
        r
    }

    #[test]
    fn compare_judges_the_runs_with_an_interval_and_says_when_it_cannot_tell() {
        // Seven runs each (the first left out: six compared), B 20% slower: worse.
        let a = with_runs(&[9999, 1000, 1010, 990, 1005, 995, 1002], &[130; 7]);
        let b = with_runs(&[9999, 1200, 1212, 1188, 1206, 1194, 1202], &[130; 7]);
        let c = compare(&a, &b, 0.99, 0.05);
        assert_eq!((c.runs_a, c.runs_b), (6, 6));
        let p50 = &c.changes[0];
        assert_eq!(
            (p50.percentile.as_str(), p50.verdict.as_str()),
            ("p50", "worse"),
            "{p50:?}"
        );
        assert!(
            (p50.change_pct - 20.0).abs() < 1.0 && p50.ci_low_pct.unwrap() > 10.0,
            "{p50:?}"
        );
        assert_eq!((p50.a_ns, p50.b_ns), (1001, 1201), "medians of the compared runs");
        let t = render_compare("a.json", "b.json", &a, &b, &c);
        assert!(
            t.contains("worse") && t.contains("false alarms: if nothing changed"),
            "{t}"
        );
        assert!(!t.contains("cannot tell"), "{t}");

        // Same runs on both sides: no change, and the interval holds zero.
        let same = compare(&a, &a, 0.99, 0.05);
        assert!(same.changes.iter().all(|x| x.verdict == "no change"), "{same:?}");

        // The A/A: --runs 3 each (two compared) cannot support a verdict at 99%.
        let a3 = with_runs(&[9999, 1000, 1100], &[130; 3]);
        let b3 = with_runs(&[9999, 2000, 2300], &[130; 3]);
        let c3 = compare(&a3, &b3, 0.99, 0.05);
        assert!(c3
            .changes
            .iter()
            .all(|x| x.verdict == "cannot tell" && x.ci_low_pct.is_none()));
        let t = render_compare("a", "b", &a3, &b3, &c3);
        assert!(
            t.contains("needs 5 counted runs in each file (--runs 6") && t.contains("latency-probe ab"),
            "{t}"
        );

        // Old reports without runs: one run each, cannot tell.
        let bare: Report = serde_json::from_str(include_str!("../../tests/data/report-minimal.json")).unwrap();
        let c1 = compare(&bare, &bare, 0.99, 0.05);
        assert_eq!((c1.runs_a, c1.runs_b), (1, 1));
        assert!(c1.changes.iter().all(|x| x.verdict == "cannot tell"));
    }

    #[test]
    fn compare_leaves_out_runs_on_another_floor_regime() {
        // B's last two runs ran on far cores (floor 440 ns against 130): left out, said so.
        let a = with_runs(&[9999, 1000, 1010, 990, 1005, 995, 1002], &[130; 7]);
        let b = with_runs(
            &[9999, 1000, 1010, 990, 1005, 2400, 2500],
            &[130, 130, 130, 130, 130, 440, 440],
        );
        let c = compare(&a, &b, 0.99, 0.05);
        assert_eq!((c.runs_a, c.runs_b), (6, 4));
        assert!(c.notes[0].starts_with("2 of B's 6 runs left out"), "{:?}", c.notes);
        assert_eq!(c.changes[0].verdict, "no change", "{:?}", c.changes[0]);
    }
}
