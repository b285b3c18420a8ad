//! Run-to-run variation of repeated runs (JLBH's figure) and the comparison of two reports.

use crate::model::label;
use crate::model::value;
use crate::model::Change;
use crate::model::Report;
use crate::model::RunPoint;
use crate::model::RunsSummary;
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
                    median_ns: vals.get(vals.len() / 2).copied().unwrap_or(0),
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

/// `compare A B`: per percentile, the change from A to B and whether it beats the noise.
#[must_use]
pub fn compare(a: &Report, b: &Report) -> Vec<Change> {
    let runs = |r: &Report, p: &str| -> Option<Variation> {
        r.runs
            .as_ref()
            .and_then(|s| s.variation.iter().find(|v| v.percentile == p))
            .cloned()
    };
    let noise = |r: &Report, p: &str| runs(r, p).map(|v| v.spread_pct);
    // The median of the counted runs when there are runs, else the report's own value.
    let typical = |r: &Report, p: &str| runs(r, p).map_or_else(|| value(&r.latency_ns, p), |v| v.median_ns);
    PERCENTILES
        .iter()
        .map(|p| {
            let (av, bv) = (typical(a, p), typical(b, p));
            let change_pct = if av > 0 {
                100.0 * (bv as f64 - av as f64) / av as f64
            } else {
                0.0
            };
            let noise_pct = match (noise(a, p), noise(b, p)) {
                (Some(x), Some(y)) => Some(x.max(y)),
                (x, y) => x.or(y),
            };
            Change {
                percentile: (*p).to_owned(),
                a_ns: av,
                b_ns: bv,
                change_pct,
                noise_pct,
                beyond_noise: noise_pct.map(|n| change_pct.abs() > n),
            }
        })
        .collect()
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
    }

    #[test]
    fn compare_calls_a_change_real_only_beyond_the_recorded_noise() {
        let mk = |p50, p99, runs: Option<Vec<(u64, u64)>>| {
            let mut r: Report = serde_json::from_str(include_str!("../../tests/data/report-minimal.json")).unwrap();
            r.latency_ns = stats(p50, p99);
            r.runs = runs.map(|rs| {
                let reps: Vec<Report> = rs
                    .iter()
                    .map(|(a, b)| {
                        let mut x = r.clone();
                        x.latency_ns = stats(*a, *b);
                        x
                    })
                    .collect();
                RunsSummary::from_reports(&reps)
            });
            r
        };
        // Counted runs (the first of three is left out): A p50 1000, 1100 (spread 10%), p99
        // 2000, 2100 (5%); B p50 1050, 1060, p99 3000, 3050. Medians (the upper of two): A p50
        // 1100, p99 2100; B p50 1060, p99 3050.
        let a = mk(1000, 2000, Some(vec![(9999, 9999), (1000, 2000), (1100, 2100)]));
        let b = mk(1050, 3000, Some(vec![(9999, 9999), (1050, 3000), (1060, 3050)]));
        let c = compare(&a, &b);
        let p50 = c.iter().find(|x| x.percentile == "p50").unwrap();
        assert_eq!((p50.a_ns, p50.b_ns), (1100, 1060), "medians of the counted runs");
        assert_eq!(p50.beyond_noise, Some(false), "-3.6% inside A's 10% spread: {p50:?}");
        let p99 = c.iter().find(|x| x.percentile == "p99").unwrap();
        assert_eq!(p99.beyond_noise, Some(true), "{p99:?}");
        assert!((p99.change_pct - 100.0 * 950.0 / 2100.0).abs() < 1e-9);
        assert!((p99.noise_pct.unwrap() - 5.0).abs() < 1e-9);
        // A value inside A's own range is never a change (JLBH's 6.25% would call +8% one).
        let inside = mk(1080, 2000, Some(vec![(9999, 9999), (1080, 2000), (1080, 2000)]));
        let lo = mk(1000, 2000, Some(vec![(9999, 9999), (1000, 2000), (1100, 2000)]));
        let p50 = compare(&lo, &inside)
            .into_iter()
            .find(|x| x.percentile == "p50")
            .unwrap();
        assert_eq!(p50.beyond_noise, Some(false), "{p50:?}");
        let t = render_compare("a.json", "b.json", &a, &b, &c);
        assert!(
            t.contains("WORSE, beyond the noise") && t.contains("within the noise"),
            "{t}"
        );

        let bare = compare(&mk(1000, 2000, None), &mk(900, 2000, None));
        assert!(bare.iter().all(|x| x.beyond_noise.is_none()));
        let t = render_compare("a", "b", &mk(1000, 2000, None), &mk(900, 2000, None), &bare);
        assert!(t.contains("--runs 5"), "{t}");
    }
}
