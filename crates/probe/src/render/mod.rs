//! Every output format of a report: text, JSON, `.hgrm`, `.hlog`, CSV, SVG, and the `--out`
//! directory that holds them.
//!
//! - [`text`], [`jitter`], [`counters`], [`runs`]: the text people read.
//! - [`hgrm`]: the percentile distribution, as Java HdrHistogram prints it.
//! - [`hlog`]: the interval log of the groups.
//! - [`csv`]: the group table, from [`points`] (the groups as plain rows).
//! - [`svg`]: the percentile spectrum, groups and rate sweep plots.
//! - [`files`]: the one place that writes files (atomically); [`out_dir`]: the `--out` directory.
//!
//! Names only the model and units (numbers are formatted in [`crate::units`]).

pub mod ab;
pub mod ab_out;
pub mod attach;
pub mod counters;
pub mod csv;
pub mod files;
pub mod hgrm;
pub mod hlog;
pub mod jitter;
pub mod out_dir;
pub mod points;
pub mod runs;
pub mod svg;
pub mod tap;
pub mod text;
pub mod tuning;

/// Fixtures shared by the format tests (histograms, groups, a sweep, a scratch directory), and
/// a test that writes an example of every file.
#[cfg(test)]
mod tests {
    use crate::render::csv::write_groups_csv;
    use crate::render::files::write_atomically;
    use crate::render::hgrm::{write_hgrm, NS_PER_US};
    use crate::render::hlog::{write_hlog, Interval, TaggedIntervals};
    use crate::render::points::GroupPoint;
    use crate::render::svg::{groups_svg, spectrum_svg, sweep_svg, SweepPoint};
    use hdrhistogram::Histogram;
    use std::path::PathBuf;

    const HOUR_NS: u64 = 3_600_000_000_000;

    pub(super) fn histogram() -> Histogram<u64> {
        Histogram::new_with_bounds(1, HOUR_NS, 3).expect("valid bounds")
    }

    /// splitmix64: deterministic test data.
    use crate::test_support::test_rng::SplitMix as Rng;

    /// A latency, ns: a body around 1 µs, 1% at 2-10 µs, 0.1% at 10-100 µs, 0.001% at
    /// 0.1-1 ms. `tail_scale` shrinks the tail (actual-time latency hides part of it).
    fn latency(rng: &mut Rng, tail_scale: f64) -> u64 {
        let u = rng.unit_from_zero();
        let body = 700.0 - 300.0 * (1.0 - rng.unit_from_zero()).ln();
        let tail = if u < 1e-5 {
            100_000.0 + 900_000.0 * rng.unit_from_zero()
        } else if u < 1e-3 {
            10_000.0 * (1.0 + 9.0 * rng.unit_from_zero())
        } else if u < 1e-2 {
            2_000.0 + 8_000.0 * rng.unit_from_zero()
        } else {
            0.0
        };
        (body + tail * tail_scale) as u64
    }

    pub(super) fn realistic(n: usize, seed: u64, tail_scale: f64) -> Histogram<u64> {
        let mut rng = Rng(seed);
        let mut h = histogram();
        for _ in 0..n {
            h.record(latency(&mut rng, tail_scale)).expect("in range");
        }
        h
    }

    pub(super) fn scratch_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("latency-probe-output-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    /// 20 groups of 0.5 s; group 10 is bad (a futex storm: p99 150 µs, max 2 ms).
    pub(super) fn groups() -> Vec<GroupPoint> {
        (0..20)
            .map(|i| {
                let bad = i == 10;
                let wobble = (i % 3) as u64;
                GroupPoint {
                    index: i,
                    start_s: 0.5 * i as f64,
                    end_s: 0.5 * (i + 1) as f64,
                    count: 50_000,
                    p50_ns: 1_000 + 20 * wobble + if bad { 300 } else { 0 },
                    p99_ns: if bad { 150_000 } else { 3_000 + 200 * wobble },
                    p999_ns: if bad { 900_000 } else { 18_000 + 1_500 * wobble },
                    max_ns: if bad { 2_100_000 } else { 60_000 + 9_000 * wobble },
                    actual_p50_ns: 950,
                    actual_p99_ns: if bad { 40_000 } else { 2_800 },
                    actual_p999_ns: if bad { 200_000 } else { 15_000 },
                    actual_max_ns: if bad { 800_000 } else { 50_000 },
                    counters: if i == 3 {
                        // A group that lacks one counter.
                        vec![("involuntary switches".to_owned(), 4)]
                    } else {
                        vec![
                            ("futex waits".to_owned(), if bad { 41 } else { wobble / 2 }),
                            ("involuntary switches".to_owned(), if bad { 118 } else { 3 + wobble }),
                        ]
                    },
                }
            })
            .collect()
    }

    /// A sweep of 6 rates whose p99 rises near the top; the top rate misses its target.
    pub(super) fn sweep() -> Vec<SweepPoint> {
        let rows = [
            (100_000.0, 100_000.0, 1_000, 3_000, 15_000, true),
            (200_000.0, 199_990.0, 1_050, 3_200, 16_000, true),
            (400_000.0, 399_950.0, 1_120, 4_000, 20_000, true),
            (600_000.0, 599_800.0, 1_300, 8_000, 40_000, true),
            (800_000.0, 797_000.0, 1_800, 25_000, 150_000, true),
            (1_000_000.0, 930_000.0, 6_000, 400_000, 2_000_000, false),
        ];
        rows.iter()
            .map(
                |&(rate_target, rate_achieved, p50_ns, p99_ns, p999_ns, met_target)| SweepPoint {
                    rate_target,
                    rate_achieved,
                    p50_ns,
                    p99_ns,
                    p999_ns,
                    met_target,
                },
            )
            .collect()
    }

    /// Writes the example files for a person to look at:
    /// `LATENCY_PROBE_PLOT_DIR=/tmp/output-plots cargo test -p latency-probe --lib render::tests -- --ignored`.
    #[test]
    #[ignore = "writes example plots for a person to look at"]
    fn write_example_files() {
        let dir = std::env::var_os("LATENCY_PROBE_PLOT_DIR").map_or_else(|| scratch_dir("examples"), PathBuf::from);
        std::fs::create_dir_all(&dir).expect("plot dir");
        let intended = realistic(1_000_000, 42, 1.0);
        let actual = realistic(1_000_000, 42, 0.2);
        spectrum_svg(
            &[("intended", &intended), ("actual", &actual)],
            "Latency by percentile (example data)",
            &dir.join("spectrum.svg"),
        )
        .expect("spectrum");
        groups_svg(
            &groups(),
            "Latency per group over the run (example data)",
            &dir.join("groups.svg"),
        )
        .expect("groups");
        sweep_svg(
            &sweep(),
            Some("achieved ≥ 99% of offered"),
            "Latency against offered load (example data)",
            &dir.join("sweep.svg"),
        )
        .expect("sweep");
        let mut narrow = histogram();
        let mut rng = Rng(5);
        for _ in 0..100_000 {
            narrow
                .record(900 + (600.0 * rng.unit_from_zero() * rng.unit_from_zero()) as u64)
                .expect("in range");
        }
        spectrum_svg(
            &[("intended", &narrow)],
            "A narrow distribution: linear y (example data)",
            &dir.join("spectrum-linear.svg"),
        )
        .expect("linear spectrum");
        write_atomically(dir.join("latency.hgrm"), |out| write_hgrm(&intended, out, NS_PER_US)).expect("hgrm");
        write_atomically(dir.join("groups.csv"), |out| write_groups_csv(&groups(), out)).expect("csv");
        // The first interval is the histogram of latency.hgrm, for a cross-check against Java.
        let halves = [intended.clone(), realistic(500_000, 2, 3.0)];
        let actual_halves = [realistic(500_000, 1, 0.2), realistic(500_000, 2, 0.2)];
        let a: Vec<Interval<'_>> = halves
            .iter()
            .enumerate()
            .map(|(i, h)| Interval {
                start_s: i as f64,
                duration_s: 1.0,
                histogram: h,
            })
            .collect();
        let b: Vec<Interval<'_>> = actual_halves
            .iter()
            .enumerate()
            .map(|(i, h)| Interval {
                start_s: i as f64,
                duration_s: 1.0,
                histogram: h,
            })
            .collect();
        let sets = [
            TaggedIntervals {
                tag: None,
                intervals: &a,
            },
            TaggedIntervals {
                tag: Some("actual"),
                intervals: &b,
            },
        ];
        write_atomically(dir.join("latency.hlog"), |out| {
            write_hlog(&sets, 1_750_000_000.0, out).map_err(std::io::Error::other)
        })
        .expect("hlog");
        eprintln!("example files in {}", dir.display());
    }
}
