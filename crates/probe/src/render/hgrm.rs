//! The percentile distribution (`.hgrm`) of a histogram, for people and for HdrHistogram's tools.
//!
//! # Guarantees
//! - [`write_hgrm`] prints exactly what Java HdrHistogram's
//!   `outputPercentileDistribution(out, 5, 1000.0)` prints for the same histogram: the same rows
//!   (Java's percentile iterator, re-implemented here because the Rust crate's `iter_quantiles`
//!   steps in 0..1 rather than Java's 0..100 and so picks other rows near exact fractions), the
//!   same footer, the same rounding (Java's `Formatter` rounds half-up on the shortest decimal
//!   form of a double, [`java_fixed`]). wrk2 and HdrHistogram's online plotter read it.
//! - Nothing here touches a hot thread: it runs after the measurement, on a plain histogram.
//!
//! ```
//! use hdrhistogram::Histogram;
//! use latency_probe::render::hgrm::{write_hgrm, NS_PER_US};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3)?;
//! h.record(1_000)?; // 1 µs
//! let mut text = Vec::new();
//! write_hgrm(&h, &mut text, NS_PER_US)?;
//! assert!(String::from_utf8(text)?.starts_with("       Value     Percentile TotalCount 1/(1-Percentile)\n\n"));
//! # Ok(())
//! # }
//! ```

use crate::render::files::io_context;
use crate::units::java_fixed;
use hdrhistogram::Histogram;
use std::io::{self, Write};

/// Nanoseconds per microsecond: the `value_unit_ratio` that prints ns histograms in µs, as
/// Aeron's and HdrHistogram's tools do.
pub const NS_PER_US: f64 = 1000.0;

/// Percentile ticks per half distance to 100% in the `.hgrm` (Java's default, and wrk2's).
pub const HGRM_TICKS_PER_HALF_DISTANCE: u32 = 5;

/// Writes `h`'s percentile distribution in HdrHistogram's `.hgrm` layout, exactly as Java
/// HdrHistogram's `outputPercentileDistribution(out, 5, value_unit_ratio)` prints it: the header,
/// a blank line, one row per percentile tick (`Value Percentile TotalCount 1/(1-Percentile)`,
/// values divided by `value_unit_ratio`: [`NS_PER_US`] for ns recorded, µs printed), the 100%
/// row without the last column, then the `#[Mean ..]`, `#[Max ..]`, `#[Buckets ..]` footer.
/// An empty histogram prints the header and the footer only, as Java does.
///
/// # Errors
/// `value_unit_ratio` is not positive and finite (`InvalidInput`), or `out` failed; the message
/// says which.
pub fn write_hgrm<W: Write>(h: &Histogram<u64>, mut out: W, value_unit_ratio: f64) -> io::Result<()> {
    if !(value_unit_ratio.is_finite() && value_unit_ratio > 0.0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "cannot write the .hgrm: value_unit_ratio {value_unit_ratio} must be positive \
                 and finite (1000 prints ns as µs)"
            ),
        ));
    }
    let text = hgrm_text(h, HGRM_TICKS_PER_HALF_DISTANCE, value_unit_ratio);
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| io_context(e, "writing the .hgrm percentile distribution"))
}

/// One row of Java's percentile iteration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PercentileRow {
    /// Highest value equivalent to the bucket the row stopped at.
    pub(crate) value: u64,
    /// The percentile level iterated to, 0..=100.
    pub(crate) percent: f64,
    /// Count of values up to and including the bucket.
    pub(crate) total: u64,
}

/// Java `PercentileIterator.incrementIterationLevel`, in percent, with Java's operations.
fn next_percent_level(level: f64, ticks_per_half_distance: u32) -> f64 {
    // (long) (Math.log(100.0 / (100.0 - level)) / Math.log(2)); `as` truncates like (long).
    let halvings = ((100.0 / (100.0 - level)).ln() / 2.0_f64.ln()) as i64;
    // (long) Math.pow(2, halvings + 1)
    let slices = 2.0_f64.powf((halvings + 1) as f64) as i64;
    let reporting_ticks = i64::from(ticks_per_half_distance).saturating_mul(slices);
    level + 100.0 / reporting_ticks as f64
}

/// The rows Java's `PercentileIterator` yields, including the final 100% row.
pub(crate) fn percentile_rows(h: &Histogram<u64>, ticks_per_half_distance: u32) -> Vec<PercentileRow> {
    let n = h.len();
    let mut rows = Vec::new();
    if n == 0 {
        return rows;
    }
    let mut level = 0.0_f64;
    let mut total = 0_u64;
    for v in h.iter_recorded() {
        total = total.saturating_add(v.count_at_value());
        let value = v.value_iterated_to();
        if total < n {
            // Java calls next() again at the same index while the level is reached.
            while 100.0 * total as f64 / n as f64 >= level {
                rows.push(PercentileRow {
                    value,
                    percent: level,
                    total,
                });
                let next = next_percent_level(level, ticks_per_half_distance);
                if next <= level {
                    break; // the tick no longer moves a double: cannot happen below 2^53 counts
                }
                level = next;
            }
        } else {
            // The last bucket: one row at the current tick (hasNext() was true before it was
            // entered), then Java's extra step to exactly 100%.
            if level <= 100.0 {
                rows.push(PercentileRow {
                    value,
                    percent: level,
                    total,
                });
            }
            rows.push(PercentileRow {
                value,
                percent: 100.0,
                total,
            });
            break;
        }
    }
    rows
}

/// Java `getMean()`: medians of the recorded buckets, summed, then divided once.
fn java_mean(h: &Histogram<u64>) -> f64 {
    if h.is_empty() {
        return 0.0;
    }
    let total: f64 = h
        .iter_recorded()
        .map(|v| h.median_equivalent(v.value_iterated_to()) as f64 * v.count_at_value() as f64)
        .fold(0.0, |a, b| a + b);
    total / h.len() as f64
}

/// Java `getStdDeviation()`.
fn java_std_deviation(h: &Histogram<u64>) -> f64 {
    if h.is_empty() {
        return 0.0;
    }
    let mean = java_mean(h);
    let total = h.iter_recorded().fold(0.0_f64, |acc, v| {
        let deviation = h.median_equivalent(v.value_iterated_to()) as f64 - mean;
        acc + (deviation * deviation) * v.count_at_value() as f64
    });
    (total / h.len() as f64).sqrt()
}

/// Java's `subBucketCount`: the counts array holds `(buckets + 1) * subBucketCount / 2` slots.
fn sub_bucket_count(h: &Histogram<u64>) -> usize {
    2 * h.distinct_values() / (usize::from(h.buckets()) + 1)
}

fn hgrm_text(h: &Histogram<u64>, ticks_per_half_distance: u32, ratio: f64) -> String {
    use std::fmt::Write as _;
    let sig = usize::from(h.sigfig());
    let mut s = String::new();
    // printStream.format("%12s %14s %10s %14s\n\n", ...): the last header is wider than 14.
    s.push_str("       Value     Percentile TotalCount 1/(1-Percentile)\n\n");
    for row in percentile_rows(h, ticks_per_half_distance) {
        let value = java_fixed(row.value as f64 / ratio, sig);
        let fraction = row.percent / 100.0;
        let percentile = java_fixed(fraction, 12);
        if row.percent == 100.0 {
            // "%12.{sig}f %2.12f %10d\n"
            let _ = writeln!(s, "{value:>12} {percentile:>2} {:>10}", row.total);
        } else {
            // "%12.{sig}f %2.12f %10d %14.2f\n"
            let inverse = java_fixed(1.0 / (1.0 - fraction), 2);
            let _ = writeln!(s, "{value:>12} {percentile:>2} {:>10} {inverse:>14}", row.total);
        }
    }
    let mean = java_fixed(java_mean(h) / ratio, sig);
    let std_deviation = java_fixed(java_std_deviation(h) / ratio, sig);
    let max = java_fixed(h.max() as f64 / ratio, sig);
    let _ = writeln!(s, "#[Mean    = {mean:>12}, StdDeviation   = {std_deviation:>12}]");
    let _ = writeln!(s, "#[Max     = {max:>12}, Total count    = {:>12}]", h.len());
    let _ = writeln!(
        s,
        "#[Buckets = {:>12}, SubBuckets     = {:>12}]",
        h.buckets(),
        sub_bucket_count(h)
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::tests::{histogram, realistic};

    fn hgrm_string(h: &Histogram<u64>) -> String {
        let mut out = Vec::new();
        write_hgrm(h, &mut out, NS_PER_US).expect("writes to a Vec");
        String::from_utf8(out).expect("ASCII")
    }

    #[test]
    fn hgrm_of_a_small_histogram_is_the_text_java_prints() {
        // 4 × 1 µs, 3 × 2 µs, 2 × 3 µs, 1 × 50 µs. Java's percentile iterator, 5 ticks per half
        // distance: ticks of 10% up to 50%, 5% up to 75%, 2.5% up to 87.5%, then 1.25%; a row
        // each time the cumulative percentage of the current bucket reaches the tick, one more
        // row at the last bucket, then 100%. Values are each bucket's highest equivalent value
        // (3000 → 3001, 50000 → 50015 at 3 significant digits). Mean and std-dev use bucket
        // medians (3000 → 3000, 50000 → 50000 + 16 → 6.6 µs... as Java's getMean()). This is
        // byte for byte what Java HdrHistogram (commit de84b0a) prints with
        // `outputPercentileDistribution(System.out, 5, 1000.0)` for `new Histogram(1, 3600e9, 3)`.
        let mut h = histogram();
        h.record_n(1_000, 4).expect("in range");
        h.record_n(2_000, 3).expect("in range");
        h.record_n(3_000, 2).expect("in range");
        h.record(50_000).expect("in range");
        let expected = "       Value     Percentile TotalCount 1/(1-Percentile)

       1.000 0.000000000000          4           1.00
       1.000 0.100000000000          4           1.11
       1.000 0.200000000000          4           1.25
       1.000 0.300000000000          4           1.43
       1.000 0.400000000000          4           1.67
       2.000 0.500000000000          7           2.00
       2.000 0.550000000000          7           2.22
       2.000 0.600000000000          7           2.50
       2.000 0.650000000000          7           2.86
       2.000 0.700000000000          7           3.33
       3.001 0.750000000000          9           4.00
       3.001 0.775000000000          9           4.44
       3.001 0.800000000000          9           5.00
       3.001 0.825000000000          9           5.71
       3.001 0.850000000000          9           6.67
       3.001 0.875000000000          9           8.00
       3.001 0.887500000000          9           8.89
       3.001 0.900000000000          9          10.00
      50.015 0.912500000000         10          11.43
      50.015 1.000000000000         10
#[Mean    =        6.600, StdDeviation   =       14.486]
#[Max     =       50.015, Total count    =           10]
#[Buckets =           32, SubBuckets     =         2048]
";

        assert_eq!(hgrm_string(&h), expected);
    }

    #[test]
    fn hgrm_of_an_empty_histogram_is_the_header_and_a_zero_footer() {
        let expected = "       Value     Percentile TotalCount 1/(1-Percentile)

#[Mean    =        0.000, StdDeviation   =        0.000]
#[Max     =        0.000, Total count    =            0]
#[Buckets =           32, SubBuckets     =         2048]
";

        assert_eq!(hgrm_string(&histogram()), expected);
    }

    #[test]
    fn hgrm_rows_read_back_as_the_histogram_value_at_each_percentile() {
        let h = realistic(1_000_000, 7, 1.0);
        let text = hgrm_string(&h);
        let mut lines = text.lines();
        assert_eq!(
            lines.next(),
            Some("       Value     Percentile TotalCount 1/(1-Percentile)")
        );
        assert_eq!(lines.next(), Some(""));
        let mut rows = 0;
        let mut last_total = 0_u64;
        let mut last_percentile = -1.0_f64;
        let mut footer = Vec::new();
        for line in lines {
            if line.starts_with("#[") {
                footer.push(line);
                continue;
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            assert!(fields.len() == 4 || fields.len() == 3, "row {line:?}");
            // Values print with 3 decimals of µs: exact ns.
            let value = (fields[0].parse::<f64>().expect("value") * NS_PER_US).round() as u64;
            let percentile: f64 = fields[1].parse().expect("percentile");
            let total: u64 = fields[2].parse().expect("total count");
            assert!(percentile > last_percentile, "percentiles increase: {line}");
            assert!(total >= last_total, "counts never decrease: {line}");
            let expected = h.value_at_quantile(percentile);
            assert!(
                h.equivalent(value, expected),
                "row {line:?}: {value} ns is not equivalent to value_at_quantile({percentile}) = {expected}"
            );
            if fields.len() == 4 {
                let inverse: f64 = fields[3].parse().expect("1/(1-p)");
                // The percentile printed with 12 decimals moves 1/(1-p) by up to 5e-13/(1-p)^2.
                let slack = 0.005 + 5.1e-13 / ((1.0 - percentile) * (1.0 - percentile));
                assert!((inverse - 1.0 / (1.0 - percentile)).abs() <= slack, "{line}");
            } else {
                assert_eq!(percentile, 1.0, "only the 100% row lacks 1/(1-p)");
                assert_eq!(value, h.max());
                assert_eq!(total, h.len());
            }
            last_total = total;
            last_percentile = percentile;
            rows += 1;
        }
        assert!(rows > 100, "a 1e6-value histogram has many rows, got {rows}");
        assert_eq!(footer.len(), 3);
        let max_us: f64 = footer[1]["#[Max     = ".len()..]
            .split(',')
            .next()
            .expect("max")
            .trim()
            .parse()
            .expect("max");
        assert_eq!((max_us * NS_PER_US).round() as u64, h.max());
        assert!(
            footer[1].ends_with(&format!("Total count    = {:>12}]", 1_000_000)),
            "{}",
            footer[1]
        );
        let mean_us: f64 = footer[0]["#[Mean    = ".len()..]
            .split(',')
            .next()
            .expect("mean")
            .trim()
            .parse()
            .expect("mean");
        assert!(
            (mean_us * NS_PER_US - h.mean()).abs() < 1.0,
            "mean {mean_us} µs vs {}",
            h.mean()
        );
    }

    #[test]
    fn hgrm_refuses_a_unit_ratio_that_is_not_a_positive_number() {
        for ratio in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let err = write_hgrm(&histogram(), Vec::new(), ratio).expect_err("bad ratio");
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
            assert!(err.to_string().contains("value_unit_ratio"), "{err}");
        }
    }
}
