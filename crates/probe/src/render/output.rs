//! Files a run leaves behind for people and for HdrHistogram's tools: the percentile
//! distribution (`.hgrm`), the interval log (`.hlog`), the group table (CSV) and three SVG plots
//! (percentile spectrum, groups over time, rate sweep).
//!
//! # Guarantees
//! - [`write_hgrm`] prints exactly what Java HdrHistogram's
//!   `outputPercentileDistribution(out, 5, 1000.0)` prints for the same histogram: the same rows
//!   (Java's percentile iterator, re-implemented here because the Rust crate's `iter_quantiles`
//!   steps in 0..1 rather than Java's 0..100 and so picks other rows near exact fractions), the
//!   same footer, the same rounding (Java's `Formatter` rounds half-up on the shortest decimal
//!   form of a double). wrk2 and HdrHistogram's online plotter read it.
//! - [`write_hlog`] writes an interval log that Java's `HistogramLogProcessor` and
//!   `HistogramLogReader` and the Rust crate's `IntervalLogIterator` read: V2 compressed
//!   histograms in base64, `#[StartTime: ..]`, `#[BaseTime: ..]`, the legend, one line per
//!   interval, several tags in one file.
//! - The plots are plain SVG with `<text>` elements: no font is needed to write them, and
//!   nothing in them is `NaN` or infinite (bad inputs are refused with a [`PlotError`]).
//! - Nothing here touches a hot thread: these run after the measurement, on plain inputs
//!   ([`GroupPoint`], [`SweepPoint`], histograms), so the module stands alone.
//!
//! ```
//! use hdrhistogram::Histogram;
//! use latency_probe::render::output::{write_hgrm, NS_PER_US};
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

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::fmt;
use std::io::{self, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

/// Nanoseconds per microsecond: the `value_unit_ratio` that prints ns histograms in µs, as
/// Aeron's and HdrHistogram's tools do.
pub const NS_PER_US: f64 = 1000.0;

/// Percentile ticks per half distance to 100% in the `.hgrm` (Java's default, and wrk2's).
pub const HGRM_TICKS_PER_HALF_DISTANCE: u32 = 5;

/// What [`write_hlog`] divides each interval's max by for the log's `Interval_Max` column
/// (ns → µs). Java's writer defaults to 1,000,000 (ns → ms); µs keeps the digits that matter
/// here. The column is for humans only: readers take the max from the histogram.
pub const HLOG_MAX_VALUE_DIVISOR: f64 = 1000.0;

// ---------------------------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------------------------

/// One of the 20 time-ordered groups of a run, as the CSV and the groups plot show it.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupPoint {
    /// Position of the group in the run, from 0.
    pub index: usize,
    /// Group start, seconds from the run's first intended send time.
    pub start_s: f64,
    /// Group end, seconds from the run's first intended send time.
    pub end_s: f64,
    /// Messages measured in the group.
    pub count: u64,
    /// Median latency from the intended send time, ns.
    pub p50_ns: u64,
    /// 99th percentile latency from the intended send time, ns.
    pub p99_ns: u64,
    /// 99.9th percentile latency from the intended send time, ns.
    pub p999_ns: u64,
    /// Largest latency from the intended send time, ns.
    pub max_ns: u64,
    /// Median latency from the actual send time, ns.
    pub actual_p50_ns: u64,
    /// 99th percentile latency from the actual send time, ns.
    pub actual_p99_ns: u64,
    /// 99.9th percentile latency from the actual send time, ns.
    pub actual_p999_ns: u64,
    /// Largest latency from the actual send time, ns.
    pub actual_max_ns: u64,
    /// Jitter counters of this group when present, e.g. `("futex waits", 3)`,
    /// `("involuntary switches", 12)`; may be empty. A name listed twice is summed.
    pub counters: Vec<(String, u64)>,
}

/// One rate of a sweep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SweepPoint {
    /// Offered load, messages per second (the `--rate` of that run).
    pub rate_target: f64,
    /// Rate the run achieved, messages per second.
    pub rate_achieved: f64,
    /// Median latency from the intended send time, ns.
    pub p50_ns: u64,
    /// 99th percentile latency from the intended send time, ns.
    pub p99_ns: u64,
    /// 99.9th percentile latency from the intended send time, ns.
    pub p999_ns: u64,
    /// Whether the run met its target (the caller decides what the target is).
    pub met_target: bool,
}

/// One interval of an interval log: a histogram and the time it covers.
#[derive(Debug, Clone, Copy)]
pub struct Interval<'a> {
    /// Interval start, seconds from the log's base time (the run's first intended send time).
    pub start_s: f64,
    /// Interval length, seconds.
    pub duration_s: f64,
    /// What was recorded in the interval.
    pub histogram: &'a Histogram<u64>,
}

/// A set of intervals sharing one tag in an interval log, e.g. intended latency untagged and
/// actual latency tagged `actual`.
#[derive(Debug, Clone, Copy)]
pub struct TaggedIntervals<'a> {
    /// The tag (`Tag=...` on each line), or `None` for untagged lines. HistogramLogProcessor
    /// reads untagged lines by default and a tag with `-tag NAME`. No `,`, space, `\r` or `\n`.
    pub tag: Option<&'a str>,
    /// The intervals, in any order (the log is written ordered by start time).
    pub intervals: &'a [Interval<'a>],
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// Why an interval log could not be written.
#[derive(Debug)]
pub enum HlogError {
    /// A tag holds a character the log format cannot carry; pick a tag without `,`, spaces,
    /// `\r` or `\n`.
    BadTag {
        /// The tag as given.
        tag: String,
    },
    /// The log's start time is negative, NaN or infinite; pass seconds since the epoch.
    BadStartTime {
        /// The value given.
        start_time_s: f64,
    },
    /// An interval's start or length is negative, NaN or infinite.
    BadInterval {
        /// The tag of the interval's set.
        tag: Option<String>,
        /// Position of the interval in its set.
        index: usize,
        /// The start given, seconds.
        start_s: f64,
        /// The length given, seconds.
        duration_s: f64,
    },
    /// A histogram could not be encoded (V2 + deflate).
    Serialize {
        /// The tag of the interval's set.
        tag: Option<String>,
        /// Position of the interval in its set.
        index: usize,
        /// The encoder's message.
        message: String,
    },
    /// Writing the log failed.
    Io(io::Error),
}

impl fmt::Display for HlogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tag_name = |t: &Option<String>| match t {
            Some(t) => format!("tag {t}"),
            None => "the untagged set".to_owned(),
        };
        match self {
            Self::BadTag { tag } => write!(
                f,
                "cannot write the interval log: tag {tag:?} holds a ',', space, '\\r' or '\\n', \
                 which the .hlog format cannot carry; use a tag without them"
            ),
            Self::BadStartTime { start_time_s } => write!(
                f,
                "cannot write the interval log: start time {start_time_s} is not a time; pass \
                 seconds since the Unix epoch (0 or more, finite)"
            ),
            Self::BadInterval {
                tag,
                index,
                start_s,
                duration_s,
            } => write!(
                f,
                "cannot write the interval log: interval {index} of {} starts at {start_s} s and \
                 lasts {duration_s} s; both must be finite and not negative",
                tag_name(tag)
            ),
            Self::Serialize { tag, index, message } => write!(
                f,
                "cannot write the interval log: encoding the histogram of interval {index} of {} \
                 failed: {message}",
                tag_name(tag)
            ),
            Self::Io(e) => write!(f, "writing the interval log failed: {e}"),
        }
    }
}

impl std::error::Error for HlogError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// Why a plot could not be drawn or saved.
#[derive(Debug)]
pub enum PlotError {
    /// There was nothing to draw (no series, empty histograms, no groups, no sweep points).
    NoData {
        /// Which plot.
        plot: &'static str,
    },
    /// An input value cannot be placed on the plot (NaN, infinite, negative rate...).
    BadInput {
        /// Which plot.
        plot: &'static str,
        /// What is wrong, naming the input.
        what: String,
    },
    /// The plotting library failed while drawing.
    Draw {
        /// Which plot.
        plot: &'static str,
        /// The library's message.
        message: String,
    },
    /// Saving the SVG failed.
    Io {
        /// Where it was being saved.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
}

impl fmt::Display for PlotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoData { plot } => {
                write!(f, "nothing to plot in the {plot}: every input is empty")
            }
            Self::BadInput { plot, what } => write!(f, "cannot draw the {plot}: {what}"),
            Self::Draw { plot, message } => write!(f, "drawing the {plot} failed: {message}"),
            Self::Io { path, source } => {
                write!(f, "cannot save the plot to {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for PlotError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

fn io_context(e: io::Error, what: &str) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

// ---------------------------------------------------------------------------------------------
// .hgrm
// ---------------------------------------------------------------------------------------------

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
struct PercentileRow {
    /// Highest value equivalent to the bucket the row stopped at.
    value: u64,
    /// The percentile level iterated to, 0..=100.
    percent: f64,
    /// Count of values up to and including the bucket.
    total: u64,
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
fn percentile_rows(h: &Histogram<u64>, ticks_per_half_distance: u32) -> Vec<PercentileRow> {
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

/// Java `Formatter` `%.{precision}f` (Locale.US) of a double: rounds half-up on the shortest
/// decimal form of `x` (so 0.35 → "0.4" at one digit, where Rust's `{:.1}` says "0.3").
fn java_fixed(x: f64, precision: usize) -> String {
    if x.is_nan() {
        return "NaN".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    let negative = x.is_sign_negative() && x != 0.0;
    // Shortest round-trip digits: "d.ddd e exp".
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).map(|b| b - b'0').collect();
    // value = 0.d1d2d3... × 10^(exp + 1); keep the digits down to 10^-precision.
    let keep = exp + 1 + precision as i64;
    let mut kept: Vec<u8> = if keep <= 0 {
        Vec::new()
    } else {
        let keep = keep as usize;
        let mut k: Vec<u8> = digits.iter().copied().take(keep).collect();
        k.resize(keep, 0);
        k
    };
    let first_dropped = if keep < 0 {
        0
    } else {
        digits.get(keep as usize).copied().unwrap_or(0)
    };
    if first_dropped >= 5 {
        // Half-up: carry through the kept digits.
        let mut i = kept.len();
        loop {
            if i == 0 {
                kept.insert(0, 1);
                break;
            }
            i -= 1;
            if kept[i] == 9 {
                kept[i] = 0;
            } else {
                kept[i] += 1;
                break;
            }
        }
    }
    // `kept` is round(x × 10^precision) in decimal digits; place the point.
    while kept.len() < precision + 1 {
        kept.insert(0, 0);
    }
    let split = kept.len() - precision;
    let mut s = String::with_capacity(kept.len() + 2);
    if negative && kept.iter().any(|&d| d != 0) {
        s.push('-');
    }
    let int_part: String = kept[..split].iter().map(|d| char::from(b'0' + d)).collect();
    let int_part = int_part.trim_start_matches('0');
    s.push_str(if int_part.is_empty() { "0" } else { int_part });
    if precision > 0 {
        s.push('.');
        s.extend(kept[split..].iter().map(|d| char::from(b'0' + d)));
    }
    s
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

// ---------------------------------------------------------------------------------------------
// .hlog
// ---------------------------------------------------------------------------------------------

/// Writes an HdrHistogram interval log: `#[Histogram log format version 1.3]`, a comment naming
/// the units, `#[StartTime: ..]` and `#[BaseTime: ..]` (both `start_time_s`, seconds since the
/// epoch of the run's first intended send, so each interval's start is seconds into the run),
/// the legend, `#[MaxValueDivisor: 1000.000]` ([`HLOG_MAX_VALUE_DIVISOR`]), then one line per
/// interval of every set (`[Tag=..,]start,length,max,base64 V2-deflate histogram`), ordered by
/// start time (sets interleave; at equal starts, in the order of `sets`).
///
/// Read it with Java's `HistogramLogProcessor -i FILE -outputValueUnitRatio 1000` (untagged set;
/// add `-tag NAME` for a tagged one), or `hdrhistogram::serialization::interval_log`.
///
/// # Errors
/// A tag the format cannot carry, a start time or interval that is not a finite non-negative
/// number of seconds (nothing is written then), a histogram that cannot be encoded, or `out`
/// failing; each [`HlogError`] names the set and interval.
pub fn write_hlog<W: Write>(sets: &[TaggedIntervals<'_>], start_time_s: f64, mut out: W) -> Result<(), HlogError> {
    if !(start_time_s.is_finite() && start_time_s >= 0.0) {
        return Err(HlogError::BadStartTime { start_time_s });
    }
    let mut order: Vec<(f64, usize, usize)> = Vec::new();
    for (set_index, set) in sets.iter().enumerate() {
        if let Some(tag) = set.tag {
            if Tag::new(tag).is_none() {
                return Err(HlogError::BadTag { tag: tag.to_owned() });
            }
        }
        for (index, interval) in set.intervals.iter().enumerate() {
            let good = |x: f64| x.is_finite() && x >= 0.0;
            if !(good(interval.start_s) && good(interval.duration_s)) {
                return Err(HlogError::BadInterval {
                    tag: set.tag.map(str::to_owned),
                    index,
                    start_s: interval.start_s,
                    duration_s: interval.duration_s,
                });
            }
            order.push((interval.start_s, set_index, index));
        }
    }
    // Stable: equal starts keep the order of `sets`.
    order.sort_by(|a, b| a.0.total_cmp(&b.0));

    let start = UNIX_EPOCH + Duration::from_secs_f64(start_time_s);
    let mut serializer = V2DeflateSerializer::new();
    {
        let mut header = IntervalLogWriterBuilder::new();
        header
            .add_comment("[Histogram log format version 1.3]")
            .add_comment(
                "[latency-probe: values in ns; Interval_Max in us; interval starts in seconds \
                 from BaseTime, the run's first intended send]",
            )
            .with_start_time(start)
            .with_base_time(start);
        header
            .begin_log_with(&mut out, &mut serializer)
            .map_err(HlogError::Io)?;
    }
    // The legend Java's HistogramLogWriter.outputLegend() prints; readers skip it.
    out.write_all(b"\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n")
        .map_err(HlogError::Io)?;
    let mut writer = IntervalLogWriterBuilder::new()
        .with_max_value_divisor(HLOG_MAX_VALUE_DIVISOR)
        .begin_log_with(&mut out, &mut serializer)
        .map_err(HlogError::Io)?;
    for (_, set_index, index) in order {
        let set = &sets[set_index];
        let interval = &set.intervals[index];
        writer
            .write_histogram(
                interval.histogram,
                Duration::from_secs_f64(interval.start_s),
                Duration::from_secs_f64(interval.duration_s),
                set.tag.and_then(Tag::new),
            )
            .map_err(|e| match e {
                hdrhistogram::serialization::interval_log::IntervalLogWriterError::IoError(e) => HlogError::Io(e),
                hdrhistogram::serialization::interval_log::IntervalLogWriterError::SerializeError(e) => {
                    HlogError::Serialize {
                        tag: set.tag.map(str::to_owned),
                        index,
                        message: e.to_string(),
                    }
                }
            })?;
    }
    drop(writer);
    out.flush().map_err(HlogError::Io)
}

// ---------------------------------------------------------------------------------------------
// CSV
// ---------------------------------------------------------------------------------------------

/// The fixed columns of [`write_groups_csv`], before the counters.
pub const GROUPS_CSV_COLUMNS: [&str; 12] = [
    "index",
    "start_s",
    "end_s",
    "count",
    "p50_ns",
    "p99_ns",
    "p999_ns",
    "max_ns",
    "actual_p50_ns",
    "actual_p99_ns",
    "actual_p999_ns",
    "actual_max_ns",
];

/// Counter names across `rows`, in order of first appearance.
fn counter_names(rows: &[GroupPoint]) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for (name, _) in rows.iter().flat_map(|r| r.counters.iter()) {
        if !names.contains(&name.as_str()) {
            names.push(name);
        }
    }
    names
}

fn counter_value(row: &GroupPoint, name: &str) -> u64 {
    row.counters
        .iter()
        .filter(|(n, _)| n == name)
        .fold(0_u64, |acc, (_, v)| acc.saturating_add(*v))
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// Writes the group table as CSV (RFC 4180, `\n` line ends): a header of
/// [`GROUPS_CSV_COLUMNS`] then one column per counter name found in any group (in order of
/// first appearance, quoted when needed), and one row per group, times in seconds with 6
/// decimals, latencies in ns, 0 where a group lacks a counter.
///
/// # Errors
/// `out` failed; the message says so.
pub fn write_groups_csv<W: Write>(rows: &[GroupPoint], mut out: W) -> io::Result<()> {
    use std::fmt::Write as _;
    let names = counter_names(rows);
    let mut s = GROUPS_CSV_COLUMNS.join(",");
    for name in &names {
        s.push(',');
        s.push_str(&csv_field(name));
    }
    s.push('\n');
    for r in rows {
        let _ = write!(
            s,
            "{},{:.6},{:.6},{},{},{},{},{},{},{},{},{}",
            r.index,
            r.start_s,
            r.end_s,
            r.count,
            r.p50_ns,
            r.p99_ns,
            r.p999_ns,
            r.max_ns,
            r.actual_p50_ns,
            r.actual_p99_ns,
            r.actual_p999_ns,
            r.actual_max_ns
        );
        for name in &names {
            let _ = write!(s, ",{}", counter_value(r, name));
        }
        s.push('\n');
    }
    out.write_all(s.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| io_context(e, "writing the group table CSV"))
}

// ---------------------------------------------------------------------------------------------
// Plots: shared pieces
// ---------------------------------------------------------------------------------------------

const FONT: &str = "sans-serif";

const BLUE: RGBColor = RGBColor(31, 119, 180);

const ORANGE: RGBColor = RGBColor(255, 127, 14);

const GREEN: RGBColor = RGBColor(44, 160, 44);

const RED: RGBColor = RGBColor(214, 39, 40);

const PURPLE: RGBColor = RGBColor(148, 103, 189);

const GREY: RGBColor = RGBColor(70, 70, 70);

const SERIES_COLORS: [RGBColor; 5] = [BLUE, ORANGE, GREEN, PURPLE, RED];

/// p50, p99, p99.9, max.
const PERCENTILE_COLORS: [RGBColor; 4] = [BLUE, ORANGE, RED, GREY];

const GRID_BOLD: RGBColor = RGBColor(205, 205, 205);

const GRID_LIGHT: RGBColor = RGBColor(238, 238, 238);

/// A named percentile of a plotted row: ("p99", |r| r.p99_ns).
type Metric<T> = (&'static str, fn(&T) -> u64);

/// Smallest latency a log axis shows, ns (a 0 ns reading is drawn there).
const FLOOR_NS: f64 = 1.0;

/// A linear f64 axis over `lo..hi` with chosen ticks: `bold` are labelled and drawn as bold
/// grid lines, `light` as light ones. (plotters' `with_key_points` on f64 ranges loses the
/// label formatter.)
#[derive(Debug, Clone)]
struct TickedAxis {
    lo: f64,
    hi: f64,
    bold: Vec<f64>,
    light: Vec<f64>,
}

impl TickedAxis {
    fn new(lo: f64, hi: f64, bold: Vec<f64>, light: Vec<f64>) -> Self {
        Self { lo, hi, bold, light }
    }
}

impl Ranged for TickedAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        RangedCoordf64::from(self.lo..self.hi).map(value, limit)
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.light.clone()
        } else {
            self.bold.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

fn draw_err<E: std::error::Error + Send + Sync>(plot: &'static str) -> impl Fn(DrawingAreaErrorKind<E>) -> PlotError {
    move |e| PlotError::Draw {
        plot,
        message: e.to_string(),
    }
}

/// Renders into an SVG string, then saves it.
fn save_svg(
    plot: &'static str,
    path: &Path,
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), PlotError>,
) -> Result<(), PlotError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err(plot))?;
        draw(&root)?;
        root.present().map_err(draw_err(plot))?;
    }
    std::fs::write(path, svg).map_err(|source| PlotError::Io {
        path: path.to_owned(),
        source,
    })
}

/// A latency axis in log10(µs): bold ticks (labelled) and light ticks (grid only).
#[derive(Debug, Clone)]
struct LogAxis {
    lo: f64,
    hi: f64,
    bold: Vec<f64>,
    light: Vec<f64>,
}

/// Log axis over `[min_us, max_us]`, padded a little, with decade ticks (or 1-2-5 ticks when
/// fewer than two decades fall inside).
fn log_axis(min_us: f64, max_us: f64) -> LogAxis {
    let min_us = min_us.max(FLOOR_NS / NS_PER_US);
    let max_us = max_us.max(min_us * 1.5);
    let lo = min_us.log10() - 0.12;
    let hi = max_us.log10() + 0.12;
    let first = lo.floor() as i32;
    let last = hi.ceil() as i32;
    let inside = |v: f64| v >= lo && v <= hi;
    let decades: Vec<f64> = (first..=last).map(f64::from).filter(|&d| inside(d)).collect();
    let multiples = |ms: &[f64]| -> Vec<f64> {
        (first..=last)
            .flat_map(|d| ms.iter().map(move |m| f64::from(d) + m.log10()))
            .filter(|&v| inside(v))
            .collect()
    };
    if decades.len() >= 2 {
        LogAxis {
            lo,
            hi,
            bold: decades,
            light: multiples(&[2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]),
        }
    } else {
        LogAxis {
            lo,
            hi,
            bold: multiples(&[1.0, 2.0, 5.0]),
            light: multiples(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]),
        }
    }
}

/// "1,250", "12", "1.5", "0.05": a tick value in µs.
fn format_us(us: f64) -> String {
    if us >= 1.0 && (us - us.round()).abs() < 1e-6 * us {
        crate::units::thousands(us.round() as u64)
    } else {
        let s = format!("{us:.3}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_owned()
    }
}

/// "1.2 µs", "350 ns", "4.1 ms": a latency for a legend.
fn format_latency(ns: u64) -> String {
    let ns = ns as f64;
    let (v, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$} {unit}")
}

/// "250k", "1.5M", "800": a rate for an axis tick or a legend.
fn format_rate(rate: f64) -> String {
    let (v, suffix) = if rate >= 1e6 {
        (rate / 1e6, "M")
    } else if rate >= 1e3 {
        (rate / 1e3, "k")
    } else {
        (rate, "")
    };
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}{suffix}")
}

fn log_us(ns: u64) -> f64 {
    (ns as f64).max(FLOOR_NS).log10() - NS_PER_US.log10()
}

/// How a legend entry is drawn.
#[derive(Debug, Clone, Copy)]
enum Mark {
    Line(RGBColor),
    Dashed(RGBColor),
    OpenCircle(RGBColor),
    VerticalDashes(RGBColor),
}

/// Draws legend entries in rows below (or above) a chart, so a legend never hides data: each
/// row is laid out left to right, `(mark, label)` per entry.
fn draw_legend_rows(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    rows: &[Vec<(Mark, String)>],
    left: i32,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    let style = TextStyle::from((FONT, 14).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    for (r, row) in rows.iter().enumerate() {
        let y = 14 + 22 * r as i32;
        let mut x = left;
        for (mark, label) in row {
            match *mark {
                Mark::Line(c) => area.draw(&PathElement::new(vec![(x, y), (x + 24, y)], c.stroke_width(3)))?,
                Mark::Dashed(c) => {
                    area.draw(&PathElement::new(vec![(x, y), (x + 9, y)], c.stroke_width(3)))?;
                    area.draw(&PathElement::new(vec![(x + 15, y), (x + 24, y)], c.stroke_width(3)))?;
                }
                Mark::OpenCircle(c) => {
                    area.draw(&Circle::new((x + 12, y), 5, WHITE.filled()))?;
                    area.draw(&Circle::new((x + 12, y), 5, c.stroke_width(2)))?;
                }
                Mark::VerticalDashes(c) => {
                    area.draw(&PathElement::new(
                        vec![(x + 12, y - 9), (x + 12, y - 3)],
                        c.stroke_width(2),
                    ))?;
                    area.draw(&PathElement::new(
                        vec![(x + 12, y + 2), (x + 12, y + 8)],
                        c.stroke_width(2),
                    ))?;
                }
            }
            area.draw(&Text::new(label.clone(), (x + 32, y), style.clone()))?;
            // The SVG holds text, not glyphs: allow ~8 px a character at 14 px.
            x += 32 + 8 * label.chars().count() as i32 + 28;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Spectrum
// ---------------------------------------------------------------------------------------------

/// "0%", "90%", "99%", "99.9%"...: the percentile at x = log10(1/(1-p)) = `decades`.
fn spectrum_label(decades: f64) -> String {
    let k = decades.round() as i32;
    if (decades - f64::from(k)).abs() > 1e-9 {
        let p = 100.0 * (1.0 - 10f64.powf(-decades));
        return format!("{p:.1}%");
    }
    match k {
        i32::MIN..=0 => "0%".to_owned(),
        1 => "90%".to_owned(),
        2 => "99%".to_owned(),
        k => format!("99.{}%", "9".repeat((k - 2) as usize)),
    }
}

/// Draws the percentile spectrum of each histogram, as HdrHistogram's plotter does: x is the
/// percentile on a log scale of 1/(1-p) (ticks at 0%, 90%, 99%, 99.9%...), y the latency in µs
/// (log scale when the series span more than two decades, linear from 0 otherwise; the axis
/// says which), one line per series through the rows of its `.hgrm` (the 100% row has no
/// 1/(1-p); the max is in the legend). Series are named by their `&str` (e.g. "intended",
/// "actual"); histograms hold ns.
///
/// # Errors
/// [`PlotError::NoData`] when every histogram is empty, [`PlotError::Draw`] or
/// [`PlotError::Io`] naming `path`.
pub fn spectrum_svg(series: &[(&str, &Histogram<u64>)], title: &str, path: &Path) -> Result<(), PlotError> {
    const PLOT: &str = "percentile spectrum";
    // (name, (log10(1/(1-p)), value ns) per .hgrm row, max ns)
    type Line<'a> = (&'a str, Vec<(f64, u64)>, u64);
    let lines: Vec<Line<'_>> = series
        .iter()
        .filter(|(_, h)| !h.is_empty())
        .map(|(name, h)| {
            let points = percentile_rows(h, HGRM_TICKS_PER_HALF_DISTANCE)
                .into_iter()
                .filter(|r| r.percent < 100.0)
                .map(|r| ((1.0 / (1.0 - r.percent / 100.0)).log10(), r.value))
                .filter(|(x, _)| x.is_finite())
                .collect();
            (*name, points, h.max())
        })
        .collect();
    if lines.is_empty() {
        return Err(PlotError::NoData { plot: PLOT });
    }
    let x_last = lines
        .iter()
        .flat_map(|(_, p, _)| p.iter().map(|(x, _)| *x))
        .fold(0.0_f64, f64::max);
    // End just past the last row (HdrHistogram's plotter ends at the data too).
    let x_hi = (x_last + 0.12).max(2.0);
    let min_ns = lines
        .iter()
        .flat_map(|(_, p, _)| p.iter().map(|(_, v)| *v))
        .min()
        .unwrap_or(1);
    let max_ns = lines.iter().map(|(_, _, m)| *m).max().unwrap_or(1);
    let log_y = max_ns as f64 > 100.0 * (min_ns.max(1) as f64);

    save_svg(PLOT, path, (1000, 620), |root| {
        let x_bold: Vec<f64> = (0..=x_hi.floor() as i32).map(f64::from).collect();
        let x_light: Vec<f64> = (0..=x_hi.floor() as i32)
            .flat_map(|d| [2.0_f64, 5.0].map(|m| f64::from(d) + m.log10()))
            .filter(|x| *x < x_hi)
            .collect();
        let x_range = TickedAxis::new(0.0, x_hi, x_bold, x_light);
        let (y_range, y_desc, to_y): (_, &str, Box<dyn Fn(u64) -> f64>) = if log_y {
            let axis = log_axis(min_ns as f64 / NS_PER_US, max_ns as f64 / NS_PER_US);
            (
                TickedAxis::new(axis.lo, axis.hi, axis.bold, axis.light),
                "latency (µs, log scale)",
                Box::new(log_us),
            )
        } else {
            let hi = max_ns as f64 / NS_PER_US * 1.08;
            let ticks = linear_ticks(0.0, hi, 8);
            (
                TickedAxis::new(0.0, hi, ticks.clone(), ticks),
                "latency (µs)",
                Box::new(|ns| ns as f64 / NS_PER_US),
            )
        };
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, 22))
            .margin(14)
            .x_label_area_size(52)
            .y_label_area_size(78)
            .build_cartesian_2d(x_range, y_range)
            .map_err(draw_err(PLOT))?;
        chart
            .configure_mesh()
            .x_desc("percentile (log scale of 1/(1-p))")
            .y_desc(y_desc)
            .x_label_formatter(&|x| spectrum_label(*x))
            .y_label_formatter(&|y| {
                if log_y {
                    format_us(10f64.powf(*y))
                } else {
                    format_us(*y)
                }
            })
            .bold_line_style(GRID_BOLD)
            .light_line_style(GRID_LIGHT)
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .draw()
            .map_err(draw_err(PLOT))?;
        for (i, (name, points, max)) in lines.iter().enumerate() {
            let color = SERIES_COLORS[i % SERIES_COLORS.len()];
            chart
                .draw_series(LineSeries::new(
                    points.iter().map(|(x, v)| (*x, to_y(*v))),
                    color.stroke_width(2),
                ))
                .map_err(draw_err(PLOT))?
                .label(format!("{name} (max {})", format_latency(*max)))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], color.stroke_width(3)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font((FONT, 15))
            .background_style(WHITE.mix(0.9))
            .border_style(GRID_BOLD)
            .draw()
            .map_err(draw_err(PLOT))
    })
}

/// About `count` round ticks from `lo` to `hi` (1, 2, 2.5 or 5 × 10^k apart).
fn linear_ticks(lo: f64, hi: f64, count: usize) -> Vec<f64> {
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    let raw = span / count.max(1) as f64;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude);
    let mut ticks = Vec::new();
    let mut t = (lo / step).ceil() * step;
    while t <= hi + step * 1e-9 {
        ticks.push(t);
        t += step;
    }
    ticks
}

// ---------------------------------------------------------------------------------------------
// Groups over time
// ---------------------------------------------------------------------------------------------

/// Draws the groups over time: x is time since the run's first intended send (one point per
/// group, at its middle; group numbers if the times are missing), y the intended-time latency
/// in µs on a log scale, with p50, p99, p99.9 and max lines. When any group has counters, a
/// panel below shows each counter per group as bars, one strip per counter with its own scale.
/// Empty groups (`count == 0`) leave a gap.
///
/// # Errors
/// [`PlotError::NoData`] when no group has a message, [`PlotError::Draw`] or
/// [`PlotError::Io`] naming `path`.
pub fn groups_svg(rows: &[GroupPoint], title: &str, path: &Path) -> Result<(), PlotError> {
    const PLOT: &str = "groups plot";
    let measured: Vec<&GroupPoint> = rows.iter().filter(|r| r.count > 0).collect();
    if measured.is_empty() {
        return Err(PlotError::NoData { plot: PLOT });
    }
    // x: time when every group has a finite, increasing span; else the group number.
    let use_time = rows
        .iter()
        .all(|r| r.start_s.is_finite() && r.end_s.is_finite() && r.end_s > r.start_s);
    let span = |r: &GroupPoint| -> (f64, f64) {
        if use_time {
            (r.start_s, r.end_s)
        } else {
            (r.index as f64 - 0.5, r.index as f64 + 0.5)
        }
    };
    let x_lo = rows.iter().map(|r| span(r).0).fold(f64::INFINITY, f64::min);
    let x_hi = rows.iter().map(|r| span(r).1).fold(f64::NEG_INFINITY, f64::max);
    let (x_lo, x_hi) = if x_hi > x_lo {
        (x_lo, x_hi)
    } else {
        (x_lo - 0.5, x_lo + 0.5)
    };
    let x_desc = if use_time {
        "time since the first intended send (s), one point per group"
    } else {
        "group"
    };
    let min_ns = measured.iter().map(|r| r.p50_ns).min().unwrap_or(1);
    let max_ns = measured.iter().map(|r| r.max_ns).max().unwrap_or(1);
    let names = counter_names(rows);
    let strip_height = 120_u32;
    let top_height = 560_u32;
    let legend_height = 34_u32;
    let height = top_height + legend_height + strip_height * names.len() as u32;

    save_svg(PLOT, path, (1000, height), |root| {
        let (top, rest) = root.split_vertically(top_height);
        let (legend, bottom) = rest.split_vertically(legend_height);
        let axis = log_axis(min_ns as f64 / NS_PER_US, max_ns as f64 / NS_PER_US);
        let x_ticks = linear_ticks(x_lo, x_hi, 10);
        let mut chart = ChartBuilder::on(&top)
            .caption(title, (FONT, 22))
            .margin(14)
            .x_label_area_size(48)
            .y_label_area_size(78)
            .build_cartesian_2d(
                TickedAxis::new(x_lo, x_hi, x_ticks.clone(), Vec::new()),
                TickedAxis::new(axis.lo, axis.hi, axis.bold, axis.light),
            )
            .map_err(draw_err(PLOT))?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc("latency from the intended send time (µs, log scale)")
            .x_label_formatter(&|x| format_tick(*x))
            .y_label_formatter(&|y| format_us(10f64.powf(*y)))
            .bold_line_style(GRID_BOLD)
            .light_line_style(GRID_LIGHT)
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .draw()
            .map_err(draw_err(PLOT))?;
        let metrics: [Metric<GroupPoint>; 4] = [
            ("p50", |r| r.p50_ns),
            ("p99", |r| r.p99_ns),
            ("p99.9", |r| r.p999_ns),
            ("max", |r| r.max_ns),
        ];
        let mut entries = Vec::new();
        for ((name, get), color) in metrics.into_iter().zip(PERCENTILE_COLORS) {
            entries.push((Mark::Line(color), name.to_owned()));
            // One polyline per run of measured groups (an empty group breaks the line).
            let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
            for r in rows {
                if r.count == 0 {
                    runs.push(Vec::new());
                    continue;
                }
                let (a, b) = span(r);
                if let Some(run) = runs.last_mut() {
                    run.push(((a + b) / 2.0, log_us(get(r))));
                }
            }
            runs.retain(|r| !r.is_empty());
            let points: Vec<(f64, f64)> = runs.iter().flatten().copied().collect();
            chart
                .draw_series(runs.into_iter().map(|run| PathElement::new(run, color.stroke_width(2))))
                .map_err(draw_err(PLOT))?;
            chart
                .draw_series(points.into_iter().map(|p| Circle::new(p, 3, color.filled())))
                .map_err(draw_err(PLOT))?;
        }
        draw_legend_rows(&legend, &[entries], 92).map_err(draw_err(PLOT))?;

        if names.is_empty() {
            return Ok(());
        }
        let strips = bottom.split_evenly((names.len(), 1));
        for (i, (strip, name)) in strips.iter().zip(&names).enumerate() {
            let last = i + 1 == names.len();
            let values: Vec<u64> = rows.iter().map(|r| counter_value(r, name)).collect();
            let top_value = values.iter().copied().max().unwrap_or(0).max(1) as f64 * 1.15;
            let y_ticks = linear_ticks(0.0, top_value, 3)
                .into_iter()
                .filter(|t| t.fract() == 0.0)
                .collect::<Vec<_>>();
            let mut c = ChartBuilder::on(strip)
                .margin_left(14)
                .margin_right(14)
                .margin_top(4)
                .x_label_area_size(if last { 40 } else { 6 })
                .y_label_area_size(78)
                .caption(format!("{name} per group"), (FONT, 14))
                .build_cartesian_2d(
                    TickedAxis::new(x_lo, x_hi, x_ticks.clone(), Vec::new()),
                    TickedAxis::new(0.0, top_value, y_ticks, Vec::new()),
                )
                .map_err(draw_err(PLOT))?;
            let x_label = |x: &f64| if last { format_tick(*x) } else { String::new() };
            c.configure_mesh()
                .y_label_formatter(&|y| format_tick(*y))
                .x_label_formatter(&x_label)
                .bold_line_style(GRID_BOLD)
                .light_line_style(GRID_LIGHT)
                .label_style((FONT, 12))
                .axis_desc_style((FONT, 13))
                .draw()
                .map_err(draw_err(PLOT))?;
            c.draw_series(rows.iter().zip(&values).map(|(r, v)| {
                let (a, b) = span(r);
                let mut bar = Rectangle::new([(a, 0.0), (b, *v as f64)], PURPLE.mix(0.75).filled());
                bar.set_margin(0, 0, 2, 2);
                bar
            }))
            .map_err(draw_err(PLOT))?;
        }
        Ok(())
    })
}

/// A plain tick: "12", "2.5", "1,000".
fn format_tick(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        if v < 0.0 {
            format!("-{}", crate::units::thousands((-v).round() as u64))
        } else {
            crate::units::thousands(v.round() as u64)
        }
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

// ---------------------------------------------------------------------------------------------
// Rate sweep
// ---------------------------------------------------------------------------------------------

/// The utilisation [`sweep_svg`] draws the single-queue curve up to.
pub const QUEUE_CURVE_MAX_RHO: f64 = 0.95;

/// Where [`sweep_svg`] marks the knee of the single-queue curve (seed 001: ≈70%).
pub const QUEUE_KNEE_RHO: f64 = 0.7;

/// Draws a rate sweep: latency from the intended send time (p50, p99, p99.9; µs, log scale)
/// against offered load (the target rate, linear from 0); filled markers for rates that met
/// their target, open ones for rates that did not; a vertical marker at the highest rate that
/// met its target (`target` describes the target in the legend, e.g. "achieved ≥ 99% of
/// offered"); and seed 001's single-queue response time R = S/(1-ρ) as a dashed line up to
/// ρ = [`QUEUE_CURVE_MAX_RHO`], with ρ = rate / capacity, capacity = the highest achieved rate
/// of the sweep, and S scaled so the curve passes through the lowest rate's p50 (the legend
/// says both), so the knee near ρ ≈ 0.7 shows against the measurements.
///
/// # Errors
/// [`PlotError::NoData`] for no points, [`PlotError::BadInput`] for a rate that is not
/// positive and finite, [`PlotError::Draw`] or [`PlotError::Io`] naming `path`.
pub fn sweep_svg(points: &[SweepPoint], target: Option<&str>, title: &str, path: &Path) -> Result<(), PlotError> {
    const PLOT: &str = "rate sweep plot";
    if points.is_empty() {
        return Err(PlotError::NoData { plot: PLOT });
    }
    for (i, p) in points.iter().enumerate() {
        let good = |r: f64| r.is_finite() && r > 0.0;
        if !(good(p.rate_target) && p.rate_achieved.is_finite() && p.rate_achieved >= 0.0) {
            return Err(PlotError::BadInput {
                plot: PLOT,
                what: format!(
                    "sweep point {i} has target rate {} and achieved rate {}; the target must be \
                     positive and finite, the achieved rate finite and not negative",
                    p.rate_target, p.rate_achieved
                ),
            });
        }
    }
    let mut sorted: Vec<SweepPoint> = points.to_vec();
    sorted.sort_by(|a, b| a.rate_target.total_cmp(&b.rate_target));
    let lowest = sorted[0];
    let max_rate = sorted.iter().map(|p| p.rate_target).fold(0.0, f64::max);
    let capacity = sorted.iter().map(|p| p.rate_achieved).fold(0.0, f64::max);
    let best = sorted
        .iter()
        .filter(|p| p.met_target)
        .map(|p| p.rate_target)
        .fold(None, |a: Option<f64>, r| Some(a.map_or(r, |a| a.max(r))));

    // The single-queue curve, in (rate, ns).
    let rho_low = lowest.rate_target / capacity;
    let service_ns = (lowest.p50_ns.max(1) as f64) * (1.0 - rho_low);
    let curve: Vec<(f64, f64)> = if capacity > 0.0 && rho_low < QUEUE_CURVE_MAX_RHO {
        let end = QUEUE_CURVE_MAX_RHO * capacity;
        (0..=200)
            .map(|i| end * f64::from(i) / 200.0)
            .map(|rate| (rate, service_ns / (1.0 - rate / capacity)))
            .collect()
    } else {
        Vec::new()
    };

    let mut min_ns = sorted
        .iter()
        .map(|p| p.p50_ns.min(p.p99_ns).min(p.p999_ns))
        .min()
        .unwrap_or(1) as f64;
    let mut max_ns = sorted
        .iter()
        .map(|p| p.p50_ns.max(p.p99_ns).max(p.p999_ns))
        .max()
        .unwrap_or(1) as f64;
    for (_, ns) in &curve {
        min_ns = min_ns.min(*ns);
        max_ns = max_ns.max(*ns);
    }
    let x_hi = max_rate.max(QUEUE_CURVE_MAX_RHO * capacity) * 1.06;

    save_svg(PLOT, path, (1000, 680), |root| {
        let (top, legend) = root.split_vertically(590);
        let axis = log_axis(min_ns / NS_PER_US, max_ns / NS_PER_US);
        let x_ticks = linear_ticks(0.0, x_hi, 10);
        let mut legend_rows: Vec<Vec<(Mark, String)>> = vec![Vec::new()];
        let mut chart = ChartBuilder::on(&top)
            .caption(title, (FONT, 22))
            .margin(14)
            .x_label_area_size(52)
            .y_label_area_size(78)
            .build_cartesian_2d(
                TickedAxis::new(0.0, x_hi, x_ticks, Vec::new()),
                TickedAxis::new(axis.lo, axis.hi, axis.bold, axis.light),
            )
            .map_err(draw_err(PLOT))?;
        chart
            .configure_mesh()
            .x_desc("offered load (target rate, messages/s)")
            .y_desc("latency from the intended send time (µs, log scale)")
            .x_label_formatter(&|x| format_rate(*x))
            .y_label_formatter(&|y| format_us(10f64.powf(*y)))
            .bold_line_style(GRID_BOLD)
            .light_line_style(GRID_LIGHT)
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .draw()
            .map_err(draw_err(PLOT))?;

        let metrics: [Metric<SweepPoint>; 3] = [("p50", |p| p.p50_ns), ("p99", |p| p.p99_ns), ("p99.9", |p| p.p999_ns)];
        for ((name, get), color) in metrics.into_iter().zip(PERCENTILE_COLORS) {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    sorted
                        .iter()
                        .map(|p| (p.rate_target, log_us(get(p))))
                        .collect::<Vec<_>>(),
                    color.stroke_width(2),
                )))
                .map_err(draw_err(PLOT))?;
            chart
                .draw_series(sorted.iter().map(|p| {
                    let style = if p.met_target { color.filled() } else { WHITE.filled() };
                    EmptyElement::at((p.rate_target, log_us(get(p))))
                        + Circle::new((0, 0), 5, style)
                        + Circle::new((0, 0), 5, color.stroke_width(2))
                }))
                .map_err(draw_err(PLOT))?;
            legend_rows[0].push((Mark::Line(color), name.to_owned()));
        }
        if sorted.iter().any(|p| !p.met_target) {
            legend_rows[0].push((
                Mark::OpenCircle(GREY),
                "open marker: that rate missed its target".to_owned(),
            ));
        }

        if !curve.is_empty() {
            chart
                .draw_series(DashedLineSeries::new(
                    curve.iter().map(|(r, ns)| (*r, log_us(ns.round() as u64))),
                    9,
                    6,
                    GREEN.stroke_width(2),
                ))
                .map_err(draw_err(PLOT))?;
            // Mark the knee of the curve.
            let knee_rate = QUEUE_KNEE_RHO * capacity;
            if knee_rate > lowest.rate_target {
                let knee = (knee_rate, log_us((service_ns / (1.0 - QUEUE_KNEE_RHO)).round() as u64));
                use plotters::style::text_anchor::{HPos, Pos, VPos};
                let style = TextStyle::from((FONT, 13).into_font())
                    .color(&GREEN)
                    .pos(Pos::new(HPos::Right, VPos::Bottom));
                chart
                    .draw_series([EmptyElement::at(knee)
                        + Circle::new((0, 0), 4, GREEN.filled())
                        + Text::new(format!("knee, ρ = {QUEUE_KNEE_RHO}"), (-6, -4), style)])
                    .map_err(draw_err(PLOT))?;
            }
            legend_rows.push(vec![(
                Mark::Dashed(GREEN),
                format!(
                    "1/(1-ρ) single queue (seed 001), to ρ = {QUEUE_CURVE_MAX_RHO}: ρ = rate / {} msg/s, \
                     the highest achieved; scaled to the p50 at {}",
                    format_rate(capacity),
                    format_rate(lowest.rate_target)
                ),
            )]);
        }
        if let Some(best) = best {
            chart
                .draw_series(DashedLineSeries::new(
                    [(best, axis.lo), (best, axis.hi)],
                    4,
                    4,
                    PURPLE.stroke_width(2),
                ))
                .map_err(draw_err(PLOT))?;
            legend_rows.push(vec![(
                Mark::VerticalDashes(PURPLE),
                match target {
                    Some(t) => format!("highest rate that met its target ({t}): {} msg/s", format_rate(best)),
                    None => format!("highest rate that met its target: {} msg/s", format_rate(best)),
                },
            )]);
        }
        draw_legend_rows(&legend, &legend_rows, 92).map_err(draw_err(PLOT))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;

    const HOUR_NS: u64 = 3_600_000_000_000;

    fn histogram() -> Histogram<u64> {
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

    fn realistic(n: usize, seed: u64, tail_scale: f64) -> Histogram<u64> {
        let mut rng = Rng(seed);
        let mut h = histogram();
        for _ in 0..n {
            h.record(latency(&mut rng, tail_scale)).expect("in range");
        }
        h
    }

    fn hgrm_string(h: &Histogram<u64>) -> String {
        let mut out = Vec::new();
        write_hgrm(h, &mut out, NS_PER_US).expect("writes to a Vec");
        String::from_utf8(out).expect("ASCII")
    }

    fn scratch_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("latency-probe-output-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    #[test]
    fn java_fixed_rounds_half_up_on_the_shortest_decimal_like_java_formatter() {
        // (x, "%.2f|%.1f|%.0f|%.3f|%.12f") as printed by OpenJDK 17's String.format(Locale.US).
        let java = [
            (0.125, "0.13|0.1|0|0.125|0.125000000000"),
            (0.35, "0.35|0.4|0|0.350|0.350000000000"),
            (2.5, "2.50|2.5|3|2.500|2.500000000000"),
            (0.0005, "0.00|0.0|0|0.001|0.000500000000"),
            (1.0005, "1.00|1.0|1|1.001|1.000500000000"),
            (999.9995, "1000.00|1000.0|1000|1000.000|999.999500000000"),
            (1e-7, "0.00|0.0|0|0.000|0.000000100000"),
            (
                123_456_789.012_5,
                "123456789.01|123456789.0|123456789|123456789.013|123456789.012500000000",
            ),
            (1.111_111_111_111_111_2, "1.11|1.1|1|1.111|1.111111111111"),
            (0.999_999_046_325_683_6, "1.00|1.0|1|1.000|0.999999046326"),
            (
                1_048_576.0,
                "1048576.00|1048576.0|1048576|1048576.000|1048576.000000000000",
            ),
            (0.15, "0.15|0.2|0|0.150|0.150000000000"),
        ];
        for (x, expected) in java {
            let ours = [2, 1, 0, 3, 12].map(|p| java_fixed(x, p)).join("|");
            assert_eq!(ours, expected, "formatting {x}");
        }
        assert_eq!(java_fixed(0.0, 3), "0.000");
        assert_eq!(java_fixed(-1.5, 0), "-2");
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

    struct ReadBack {
        tag: Option<String>,
        start_s: f64,
        duration_s: f64,
        histogram: Histogram<u64>,
    }

    fn read_hlog(bytes: &[u8]) -> (Option<f64>, Option<f64>, Vec<ReadBack>) {
        use base64::Engine as _;
        let (mut start, mut base, mut intervals) = (None, None, Vec::new());
        let mut deserializer = Deserializer::new();
        for entry in IntervalLogIterator::new(bytes) {
            match entry.expect("the log parses") {
                LogEntry::StartTime(t) => start = Some(t.as_secs_f64()),
                LogEntry::BaseTime(t) => base = Some(t.as_secs_f64()),
                LogEntry::Interval(i) => {
                    let raw = base64::engine::general_purpose::STANDARD
                        .decode(i.encoded_histogram())
                        .expect("base64");
                    let histogram: Histogram<u64> = deserializer
                        .deserialize(&mut io::Cursor::new(raw))
                        .expect("V2 histogram");
                    intervals.push(ReadBack {
                        tag: i.tag().map(|t| t.as_str().to_owned()),
                        start_s: i.start_timestamp().as_secs_f64(),
                        duration_s: i.duration().as_secs_f64(),
                        histogram,
                    });
                }
            }
        }
        (start, base, intervals)
    }

    #[test]
    fn hlog_reads_back_with_the_same_intervals_tags_and_percentiles() {
        let intended: Vec<Histogram<u64>> = (0..20)
            .map(|i| realistic(2_000 + 100 * i, 100 + i as u64, 1.0 + i as f64))
            .collect();
        let actual: Vec<Histogram<u64>> = (0..20)
            .map(|i| realistic(2_000 + 100 * i, 100 + i as u64, 0.2))
            .collect();
        fn intervals(hs: &[Histogram<u64>]) -> Vec<Interval<'_>> {
            hs.iter()
                .enumerate()
                .map(|(i, h)| Interval {
                    start_s: 0.25 * i as f64,
                    duration_s: 0.25,
                    histogram: h,
                })
                .collect()
        }
        let (a, b) = (intervals(&intended), intervals(&actual));
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
        let start_time_s = 1_750_000_000.125;
        let mut out = Vec::new();
        write_hlog(&sets, start_time_s, &mut out).expect("writes to a Vec");
        let text = String::from_utf8(out.clone()).expect("ASCII");
        assert!(text.starts_with("#[Histogram log format version 1.3]\n"), "{text:.200}");
        assert!(text
            .contains("\n\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n"));
        assert!(
            text.contains("#[StartTime: 1750000000.125 (seconds since epoch)]\n"),
            "{text:.400}"
        );

        let (start, base, read) = read_hlog(&out);
        assert_eq!(start, Some(start_time_s));
        assert_eq!(base, Some(start_time_s));
        assert_eq!(read.len(), 40);
        // Ordered by start; at equal starts the untagged set first.
        for (k, r) in read.iter().enumerate() {
            let i = k / 2;
            let (tag, original) = if k % 2 == 0 {
                (None, &intended[i])
            } else {
                (Some("actual"), &actual[i])
            };
            assert_eq!(r.tag.as_deref(), tag, "interval {k}");
            assert!(
                (r.start_s - 0.25 * i as f64).abs() < 1e-9,
                "start of {k}: {}",
                r.start_s
            );
            assert!((r.duration_s - 0.25).abs() < 1e-9);
            assert_eq!(r.histogram.len(), original.len(), "count of {k}");
            for q in [0.5, 0.99] {
                assert_eq!(
                    r.histogram.value_at_quantile(q),
                    original.value_at_quantile(q),
                    "q{q} of {k}"
                );
            }
            assert_eq!(r.histogram.max(), original.max(), "max of {k}");
        }
        // Different histograms really went in: the tails grow with i.
        assert!(read[38].histogram.max() > read[0].histogram.max());
    }

    #[test]
    fn hlog_refuses_bad_tags_and_times_before_writing_anything() {
        let h = realistic(100, 1, 1.0);
        let one = [Interval {
            start_s: 0.0,
            duration_s: 1.0,
            histogram: &h,
        }];
        let mut out = Vec::new();
        let err = write_hlog(
            &[TaggedIntervals {
                tag: Some("a,b"),
                intervals: &one,
            }],
            0.0,
            &mut out,
        )
        .expect_err("comma in tag");
        assert!(matches!(err, HlogError::BadTag { .. }), "{err}");
        assert!(err.to_string().contains("\"a,b\""), "{err}");
        let bad = [Interval {
            start_s: f64::NAN,
            duration_s: 1.0,
            histogram: &h,
        }];
        let err = write_hlog(
            &[TaggedIntervals {
                tag: Some("x"),
                intervals: &bad,
            }],
            0.0,
            &mut out,
        )
        .expect_err("NaN start");
        assert!(err.to_string().contains("interval 0 of tag x"), "{err}");
        let err = write_hlog(&[], -1.0, &mut out).expect_err("negative start time");
        assert!(matches!(err, HlogError::BadStartTime { .. }), "{err}");
        assert!(out.is_empty(), "nothing written on refusal");
    }

    /// 20 groups of 0.5 s; group 10 is bad (a futex storm: p99 150 µs, max 2 ms).
    fn groups() -> Vec<GroupPoint> {
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

    #[test]
    fn groups_csv_has_a_header_and_one_row_per_group_with_counters_as_columns() {
        let rows = groups();
        let mut out = Vec::new();
        write_groups_csv(&rows, &mut out).expect("writes to a Vec");
        let text = String::from_utf8(out).expect("UTF-8");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 21);
        assert_eq!(
            lines[0],
            "index,start_s,end_s,count,p50_ns,p99_ns,p999_ns,max_ns,actual_p50_ns,actual_p99_ns,\
             actual_p999_ns,actual_max_ns,futex waits,involuntary switches"
        );
        for (line, r) in lines[1..].iter().zip(&rows) {
            let f: Vec<&str> = line.split(',').collect();
            assert_eq!(f.len(), 14, "{line}");
            assert_eq!(f[0].parse::<usize>().ok(), Some(r.index));
            assert!((f[1].parse::<f64>().expect("start") - r.start_s).abs() < 1e-6);
            assert!((f[2].parse::<f64>().expect("end") - r.end_s).abs() < 1e-6);
            let numbers: Vec<u64> = f[3..].iter().map(|x| x.parse().expect("integer")).collect();
            let futex = counter_value(r, "futex waits");
            let involuntary = counter_value(r, "involuntary switches");
            assert_eq!(
                numbers,
                [
                    r.count,
                    r.p50_ns,
                    r.p99_ns,
                    r.p999_ns,
                    r.max_ns,
                    r.actual_p50_ns,
                    r.actual_p99_ns,
                    r.actual_p999_ns,
                    r.actual_max_ns,
                    futex,
                    involuntary
                ]
            );
        }
        assert!(lines[4].ends_with(",0,4"), "group 3 lacks futex waits: {}", lines[4]);
        assert!(lines[11].ends_with(",41,118"), "the bad group: {}", lines[11]);
    }

    #[test]
    fn groups_csv_quotes_counter_names_that_need_it() {
        let mut rows = groups();
        rows.truncate(1);
        rows[0].counters = vec![("waits, \"odd\"".to_owned(), 2)];
        let mut out = Vec::new();
        write_groups_csv(&rows, &mut out).expect("writes to a Vec");
        let text = String::from_utf8(out).expect("UTF-8");
        assert!(
            text.lines()
                .next()
                .expect("header")
                .ends_with(",\"waits, \"\"odd\"\"\""),
            "{text}"
        );
    }

    /// A sweep of 6 rates whose p99 rises near the top; the top rate misses its target.
    fn sweep() -> Vec<SweepPoint> {
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

    struct Svg {
        texts: Vec<String>,
        /// (stroke colour, number of points) of every polyline / path.
        lines: Vec<(String, usize)>,
        rects: usize,
        circles: usize,
    }

    /// Parses an SVG, checks that no attribute holds NaN or infinity, and collects what it drew.
    fn parse_svg(path: &Path) -> Svg {
        let text = std::fs::read_to_string(path).expect("the SVG was written");
        let doc = roxmltree::Document::parse(&text).expect("the SVG is well-formed XML");
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        let mut svg = Svg {
            texts: Vec::new(),
            lines: Vec::new(),
            rects: 0,
            circles: 0,
        };
        for node in doc.descendants().filter(roxmltree::Node::is_element) {
            for a in node.attributes() {
                let v = a.value().to_ascii_lowercase();
                assert!(
                    !v.contains("nan") && !v.contains("inf"),
                    "{}={:?} in {}",
                    a.name(),
                    a.value(),
                    path.display()
                );
            }
            match node.tag_name().name() {
                "text" => svg.texts.push(node.text().unwrap_or_default().trim().to_owned()),
                "polyline" => svg.lines.push((
                    node.attribute("stroke").unwrap_or_default().to_owned(),
                    node.attribute("points").unwrap_or_default().split_whitespace().count(),
                )),
                "path" => svg.lines.push((
                    node.attribute("stroke").unwrap_or_default().to_owned(),
                    node.attribute("d").unwrap_or_default().matches(['L', 'M']).count(),
                )),
                "rect" => svg.rects += 1,
                "circle" => svg.circles += 1,
                _ => {}
            }
        }
        svg
    }

    fn hex(c: RGBColor) -> String {
        format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
    }

    fn has_text(svg: &Svg, wanted: &str) -> bool {
        svg.texts.iter().any(|t| t == wanted)
    }

    #[test]
    fn spectrum_svg_holds_one_line_per_series_and_percentile_ticks() {
        let dir = scratch_dir("spectrum");
        let path = dir.join("spectrum.svg");
        let intended = realistic(200_000, 3, 1.0);
        let actual = realistic(200_000, 3, 0.2);
        spectrum_svg(&[("intended", &intended), ("actual", &actual)], "spectrum", &path).expect("drawn");
        let svg = parse_svg(&path);
        for (color, name) in [(BLUE, "intended"), (ORANGE, "actual")] {
            let longest = svg
                .lines
                .iter()
                .filter(|(s, _)| *s == hex(color))
                .map(|(_, n)| *n)
                .max();
            assert!(
                longest.unwrap_or(0) > 50,
                "{name}: a line through its .hgrm rows, got {longest:?}"
            );
            assert!(
                svg.texts.iter().any(|t| t.starts_with(&format!("{name} (max "))),
                "legend {name}"
            );
        }
        for tick in ["0%", "90%", "99%", "99.9%", "99.99%"] {
            assert!(has_text(&svg, tick), "x tick {tick}: {:?}", svg.texts);
        }
        assert!(has_text(&svg, "latency (µs, log scale)"), "{:?}", svg.texts);
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn spectrum_svg_uses_a_linear_axis_for_a_narrow_range() {
        let dir = scratch_dir("spectrum-linear");
        let path = dir.join("spectrum.svg");
        let mut h = histogram();
        for v in 1_000..3_000 {
            h.record(v).expect("in range");
        }
        spectrum_svg(&[("intended", &h)], "narrow", &path).expect("drawn");
        let svg = parse_svg(&path);
        assert!(has_text(&svg, "latency (µs)"), "{:?}", svg.texts);
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn groups_svg_holds_the_percentile_lines_and_one_counter_strip_each() {
        let dir = scratch_dir("groups");
        let path = dir.join("groups.svg");
        let rows = groups();
        groups_svg(&rows, "groups", &path).expect("drawn");
        let svg = parse_svg(&path);
        for (color, name) in PERCENTILE_COLORS.iter().zip(["p50", "p99", "p99.9", "max"]) {
            assert!(has_text(&svg, name), "legend {name}");
            let longest = svg
                .lines
                .iter()
                .filter(|(s, _)| *s == hex(*color))
                .map(|(_, n)| *n)
                .max();
            assert_eq!(longest, Some(20), "{name}: a point per group");
        }
        assert!(has_text(&svg, "futex waits per group") && has_text(&svg, "involuntary switches per group"));
        // Background + legend box + 2 × 20 bars (plotters draws a 0 bar too).
        assert!(svg.rects >= 40, "{} rects", svg.rects);
        assert!(svg.circles >= 80, "markers: {}", svg.circles);

        // No counters: no strips.
        let plain: Vec<GroupPoint> = rows
            .into_iter()
            .map(|r| GroupPoint {
                counters: Vec::new(),
                ..r
            })
            .collect();
        groups_svg(&plain, "groups", &path).expect("drawn");
        let svg = parse_svg(&path);
        assert!(!has_text(&svg, "futex waits per group") && !has_text(&svg, "involuntary switches per group"));
        assert!(
            svg.rects <= 3,
            "backgrounds and the legend box only, got {} rects",
            svg.rects
        );
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn sweep_svg_holds_the_percentiles_the_queue_curve_and_the_best_rate() {
        let dir = scratch_dir("sweep");
        let path = dir.join("sweep.svg");
        sweep_svg(&sweep(), Some("achieved ≥ 99% of offered"), "sweep", &path).expect("drawn");
        let svg = parse_svg(&path);
        for (color, name) in PERCENTILE_COLORS.iter().zip(["p50", "p99", "p99.9"]) {
            assert!(has_text(&svg, name), "legend {name}");
            assert!(
                svg.lines.iter().any(|(s, n)| *s == hex(*color) && *n == 6),
                "{name}: a line through 6 rates"
            );
        }
        let curve = svg
            .texts
            .iter()
            .find(|t| t.starts_with("1/(1-ρ) single queue"))
            .expect("curve legend");
        assert!(
            curve.contains("930k msg/s, the highest achieved") && curve.contains("p50 at 100k"),
            "{curve}"
        );
        assert!(
            svg.lines.iter().filter(|(s, _)| *s == hex(GREEN)).count() > 10,
            "the curve is dashed"
        );
        assert!(
            has_text(
                &svg,
                "highest rate that met its target (achieved ≥ 99% of offered): 800k msg/s"
            ),
            "{:?}",
            svg.texts
        );
        assert!(has_text(&svg, "open marker: that rate missed its target"));
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn plots_refuse_empty_and_impossible_inputs_with_the_plot_named() {
        let dir = scratch_dir("refuse");
        let path = dir.join("x.svg");
        let empty = histogram();
        let err = spectrum_svg(&[("intended", &empty)], "t", &path).expect_err("empty");
        assert!(
            matches!(err, PlotError::NoData { .. }) && err.to_string().contains("percentile spectrum"),
            "{err}"
        );
        let err = groups_svg(&[], "t", &path).expect_err("no groups");
        assert!(err.to_string().contains("groups plot"), "{err}");
        let err = sweep_svg(&[], None, "t", &path).expect_err("no points");
        assert!(matches!(err, PlotError::NoData { .. }), "{err}");
        let mut bad = sweep();
        bad[2].rate_target = f64::NAN;
        let err = sweep_svg(&bad, None, "t", &path).expect_err("NaN rate");
        assert!(err.to_string().contains("sweep point 2"), "{err}");
        let err = sweep_svg(&sweep(), None, "t", &dir.join("missing/x.svg")).expect_err("no dir");
        assert!(
            matches!(err, PlotError::Io { .. }) && err.to_string().contains("missing/x.svg"),
            "{err}"
        );
        assert!(!path.exists(), "nothing saved on refusal");
        std::fs::remove_dir_all(dir).ok();
    }

    /// Writes the example files for a person to look at:
    /// `LATENCY_PROBE_PLOT_DIR=/tmp/output-plots cargo test -p latency-probe --lib output -- --ignored`.
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
        write_hgrm(
            &intended,
            std::fs::File::create(dir.join("latency.hgrm")).expect("file"),
            NS_PER_US,
        )
        .expect("hgrm");
        let mut csv = std::fs::File::create(dir.join("groups.csv")).expect("file");
        write_groups_csv(&groups(), &mut csv).expect("csv");
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
        write_hlog(
            &[
                TaggedIntervals {
                    tag: None,
                    intervals: &a,
                },
                TaggedIntervals {
                    tag: Some("actual"),
                    intervals: &b,
                },
            ],
            1_750_000_000.0,
            std::fs::File::create(dir.join("latency.hlog")).expect("file"),
        )
        .expect("hlog");
        eprintln!("example files in {}", dir.display());
    }
}
