//! A tap's interval logs as data (`latency-probe tap`): the intervals of one figure read from
//! the `.hlog` files `messaging`'s tap (or any HdrHistogram interval log) writes.
//!
//! Guarantees:
//! - [`parse_hlog`] reads HdrHistogram's interval log format as its Java `HistogramLogReader`
//!   does: `#[StartTime: ..]` and `#[BaseTime: ..]` (an interval's start is relative to the
//!   base time when there is one, else to the start time when its timestamps are small, else
//!   absolute), one V2 histogram per line, optional `Tag=` prefixes; comments are skipped, and
//!   the tap's own header comment gives the figure's clock.
//! - Values are read as nanoseconds (the tap's unit, and the probe's).
//! - A malformed line is an error naming the line, never a silently shorter log.

use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::Histogram;

use super::histograms::{decode, DecodeError};

/// One interval of a figure.
#[derive(Debug, Clone)]
pub struct TapInterval {
    /// Its start, seconds since the Unix epoch (or since the log's origin when the log gives
    /// neither a start time nor a base time).
    pub start_s: f64,
    /// Its length, seconds.
    pub length_s: f64,
    /// Its latencies, ns.
    pub histogram: Histogram<u64>,
}

impl TapInterval {
    /// Its end, seconds.
    #[must_use]
    pub fn end_s(&self) -> f64 {
        self.start_s + self.length_s
    }
}

/// One figure of a tap: its intervals from every file that holds it, in time order.
#[derive(Debug, Clone)]
pub struct TapFigure {
    /// Its name (the files' name without `.hlog` and a rotation index).
    pub name: String,
    /// The files it was read from, in the order given.
    pub files: Vec<String>,
    /// The clock its logs name, when they do.
    pub clock: Option<String>,
    /// Its intervals, ordered by start.
    pub intervals: Vec<TapInterval>,
}

impl TapFigure {
    /// Every interval's latencies in one histogram.
    #[must_use]
    pub fn total(&self) -> Histogram<u64> {
        let mut total = Histogram::new(3).expect("3 digits"); // resizes as it adds
        for i in &self.intervals {
            total.add(&i.histogram).expect("auto-resizing");
        }
        total
    }

    /// The first interval's start and the last one's end, seconds.
    #[must_use]
    pub fn span_s(&self) -> (f64, f64) {
        let start = self.intervals.first().map_or(0.0, |i| i.start_s);
        let end = self.intervals.iter().map(TapInterval::end_s).fold(start, f64::max);
        (start, end)
    }
}

/// One time-ordered group of intervals.
#[derive(Debug, Clone)]
pub struct TapGroup {
    /// Its start, seconds from the figure's first interval.
    pub start_s: f64,
    /// Its end, seconds from the figure's first interval.
    pub end_s: f64,
    /// Intervals merged into it.
    pub intervals: usize,
    /// Their latencies, ns.
    pub histogram: Histogram<u64>,
}

/// The change of one percentile, B vs A.
#[derive(Debug, Clone, PartialEq)]
pub struct TapChange {
    /// Its label (`p50`, ..., `max`).
    pub label: &'static str,
    /// A's median of the intervals' own figures the change is estimated from (paired: over
    /// the pairs; zeros left out, as the change leaves them), ns; 0 when no interval has
    /// enough messages for this percentile. Not the figure over all of A's intervals: one
    /// interval's spike moves that, not the change. The change is a Hodges-Lehmann estimate
    /// over those figures' ratios, so it can differ from the ratio of the two medians.
    pub a_ns: u64,
    /// See [`a_ns`](Self::a_ns).
    pub b_ns: u64,
    /// Samples counted: intervals on each side (paired: pairs, twice).
    pub samples: (usize, usize),
    /// The estimated change, a fraction (0.05: B 5% higher).
    pub change: f64,
    /// Its interval, fractions (`None` with too few samples for one).
    pub ci: Option<(f64, f64)>,
    /// What it says: `better`, `worse`, `no change` (within `--resolve`), `inconclusive` (an
    /// interval around zero reaching past it), `cannot tell (...)`.
    pub verdict: String,
    /// For `no change` and `inconclusive`: the interval's end farther from zero, the change it
    /// would have seen.
    pub resolvable: Option<f64>,
}

/// How two figures were compared.
#[derive(Debug, Clone, PartialEq)]
pub struct TapComparison {
    /// Whether the intervals were paired by time.
    pub paired: bool,
    /// The intervals on each side, and the pairs found (0 when unpaired).
    pub intervals: (usize, usize, usize),
    /// One change per percentile compared (p50, p90, p99, p99.9, max).
    pub changes: Vec<TapChange>,
}

/// One log's lines of one tag, in the order written.
#[derive(Debug, Clone, Default)]
pub struct ParsedLog {
    /// The clock the tap's header comment names (`monotonic`, `realtime`), if it has one.
    pub clock: Option<String>,
    /// The intervals of the tag asked for.
    pub intervals: Vec<TapInterval>,
    /// Every tag seen (untagged lines are not a tag), for an error that lists them.
    pub tags: Vec<String>,
    /// The number of the last line when it was left out: unfinished (no newline yet, and not
    /// in the format), as the last line of a log its writer is appending to.
    pub unfinished_line: Option<usize>,
}

/// Why a log could not be read.
#[derive(Debug)]
pub enum HlogParseError {
    /// A line is not in the interval log format.
    Line {
        /// The line's number, from 1.
        line: usize,
        /// The parser's complaint.
        detail: String,
    },
    /// A histogram does not decode.
    Histogram {
        /// The line's number, from 1.
        line: usize,
        /// Why.
        source: DecodeError,
    },
}

impl std::fmt::Display for HlogParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HlogParseError::Line { line, detail } => {
                write!(f, "line {line} is not an HdrHistogram interval log line ({detail})")
            }
            HlogParseError::Histogram { line, source } => write!(f, "line {line}: {source}"),
        }
    }
}

impl std::error::Error for HlogParseError {}

/// Timestamps below this many seconds are relative to the log's start time (as Java's reader
/// decides: a year's worth of seconds).
const RELATIVE_BELOW_S: f64 = 365.25 * 24.0 * 3600.0;

impl HlogParseError {
    /// The number of the line at fault, from 1.
    #[must_use]
    pub fn line(&self) -> usize {
        match self {
            HlogParseError::Line { line, .. } | HlogParseError::Histogram { line, .. } => *line,
        }
    }
}

/// The interval lines of `tag` (`None`: the untagged lines) of an interval log. A last line
/// without its newline that is not in the format is left out ([`ParsedLog::unfinished_line`]):
/// the tap, like HdrHistogram's writers, writes a line at a time, so a log read while it is
/// written may end in part of one.
///
/// # Errors
/// A line that is not in the format, or a histogram that does not decode.
pub fn parse_hlog(text: &str, tag: Option<&str>) -> Result<ParsedLog, HlogParseError> {
    match parse_lines(text, tag) {
        Err(e) if !text.ends_with('\n') && e.line() == text.lines().count() => {
            let complete = text.rfind('\n').map_or("", |end| &text[..=end]);
            let mut log = parse_lines(complete, tag)?;
            log.unfinished_line = Some(e.line());
            Ok(log)
        }
        parsed => parsed,
    }
}

fn parse_lines(text: &str, tag: Option<&str>) -> Result<ParsedLog, HlogParseError> {
    let mut log = ParsedLog {
        clock: tap_clock(text),
        ..ParsedLog::default()
    };
    let (mut start, mut base) = (None, None);
    let data_lines = data_line_numbers(text);
    for (k, entry) in IntervalLogIterator::new(text.as_bytes()).enumerate() {
        let line = data_lines.get(k).copied().unwrap_or(0);
        let entry = entry.map_err(|e| HlogParseError::Line {
            line,
            detail: line_detail(text, &e),
        })?;
        match entry {
            LogEntry::StartTime(t) => start = Some(t.as_secs_f64()),
            LogEntry::BaseTime(t) => base = Some(t.as_secs_f64()),
            LogEntry::Interval(i) => {
                let this = i.tag().map(|t| t.as_str().to_owned());
                if let Some(t) = &this {
                    if !log.tags.contains(t) {
                        log.tags.push(t.clone());
                    }
                }
                if this.as_deref() != tag {
                    continue;
                }
                let histogram =
                    decode(i.encoded_histogram()).map_err(|source| HlogParseError::Histogram { line, source })?;
                let ts = i.start_timestamp().as_secs_f64();
                let origin = match (base, start) {
                    (Some(b), _) => b,
                    (None, Some(s)) if ts < RELATIVE_BELOW_S => s,
                    _ => 0.0,
                };
                log.intervals.push(TapInterval {
                    start_s: origin + ts,
                    length_s: i.duration().as_secs_f64(),
                    histogram,
                });
            }
        }
    }
    Ok(log)
}

/// What a line the iterator refused holds, beside the shape it expects: its first characters.
fn line_detail(text: &str, e: &hdrhistogram::serialization::interval_log::LogIteratorError) -> String {
    let hdrhistogram::serialization::interval_log::LogIteratorError::ParseError { offset } = e;
    let rest = text.get(*offset..).unwrap_or_default();
    let found: String = rest.lines().next().unwrap_or_default().chars().take(40).collect();
    format!(
        "expected \"[Tag=T,]start,length,max,HISTFAAA...\" or a #[StartTime: ...] / #[BaseTime: ...] comment, \
         found \"{found}\""
    )
}

/// The 1-based line numbers of the lines the iterator yields entries for (everything but
/// comments other than the two headers, the legend and blank lines), in order.
fn data_line_numbers(text: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            let l = l.trim();
            !l.is_empty() && (!l.starts_with('#') || is_time_header(l)) && !l.starts_with("\"StartTimestamp\"")
        })
        .map(|(i, _)| i + 1)
        .collect()
}

/// A `#[StartTime: S.F ...]` or `#[BaseTime: S.F ...]` line as HdrHistogram's parser takes it
/// (seconds, a point, digits, then a space); in another shape it is a comment it skips.
fn is_time_header(line: &str) -> bool {
    let Some(rest) = line
        .strip_prefix("#[StartTime: ")
        .or_else(|| line.strip_prefix("#[BaseTime: "))
    else {
        return false;
    };
    let Some((secs, rest)) = rest.split_once('.') else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    !secs.is_empty() && secs.bytes().all(|b| b.is_ascii_digit()) && digits > 0 && rest[digits..].starts_with(' ')
}

/// The clock named by the tap's header comment (`#aeron-latency tap: figure F, clock C, ...`).
fn tap_clock(text: &str) -> Option<String> {
    let header = text.lines().take(5).find(|l| l.starts_with("#aeron-latency tap:"))?;
    let clock = header.split(", ").find_map(|p| p.strip_prefix("clock "))?;
    Some(clock.to_owned())
}

/// The figure a log file holds: its name without `.hlog` and without a rotation index
/// (`feed.hlog`, `feed.1.hlog` and `feed.12.hlog` are all `feed`).
#[must_use]
pub fn figure_of(file_name: &str) -> &str {
    let stem = file_name.strip_suffix(".hlog").unwrap_or(file_name);
    match stem.rsplit_once('.') {
        Some((name, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => stem,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::encode;

    fn hist(values: &[u64]) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, 10_000_000_000, 3).unwrap();
        for v in values {
            h.record(*v).unwrap();
        }
        h
    }

    #[test]
    fn intervals_read_relative_to_the_base_time_with_tags_apart() {
        let (a, b, s) = (hist(&[100, 200]), hist(&[300]), hist(&[5]));
        let text = format!(
            "#aeron-latency tap: figure f, clock realtime, nanoseconds\n\
             #[StartTime: 1000.000 (seconds since epoch)]\n#[BaseTime: 990.000 (seconds since epoch)]\n\
             \"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n\
             Tag=session-7,10.000,1.000,5.000,{}\n10.000,1.000,200.000,{}\n11.000,0.500,300.000,{}\n",
            encode(&s),
            encode(&a),
            encode(&b)
        );
        let log = parse_hlog(&text, None).unwrap();
        assert_eq!(log.clock.as_deref(), Some("realtime"));
        assert_eq!(log.tags, ["session-7"]);
        assert_eq!(log.intervals.len(), 2);
        assert_eq!((log.intervals[0].start_s, log.intervals[0].length_s), (1000.0, 1.0));
        assert_eq!(log.intervals[1].end_s(), 1001.5);
        assert_eq!(log.intervals[1].histogram.len(), 1);
        let tagged = parse_hlog(&text, Some("session-7")).unwrap();
        assert_eq!(tagged.intervals.len(), 1);
        assert_eq!(tagged.intervals[0].histogram.max(), 5);
    }

    #[test]
    fn a_bad_line_is_named() {
        let text = "#[StartTime: 1.000 (seconds since epoch)]\n0.000,1.000,2.000,not-base64!\n";
        let e = parse_hlog(text, None).unwrap_err();
        assert!(e.to_string().starts_with("line 2:"), "{e}");
        let e = parse_hlog("#[StartTime: 1.000 (seconds since epoch)]\nnonsense\n", None).unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        // A start time HdrHistogram's parser does not take (no space after the seconds) is a
        // comment to it: the lines are still counted right.
        let e = parse_hlog(
            "#[StartTime: 1.0]\n#[BaseTime: x]\n0.000,1.000,2.000,not-base64!\n",
            None,
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("line 3:"), "{e}");
    }

    /// A log read while the tap appends to it may end in part of a line: the lines before it
    /// are read, and the report says which line was left out. A bad line with its newline is
    /// still an error.
    #[test]
    fn an_unfinished_last_line_is_left_out_and_named() {
        let (a, b) = (hist(&[100, 200]), hist(&[300]));
        let text = format!(
            "#[StartTime: 1000.000 (seconds since epoch)]\n\
             \"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n\
             0.000,1.000,200.000,{}\n1.000,1.000,300.000,{}\n",
            encode(&a),
            encode(&b)
        );
        let whole = parse_hlog(&text, None).unwrap();
        assert_eq!((whole.intervals.len(), whole.unfinished_line), (2, None));
        for cut in [text.len() - 10, text.len() - 60, text.rfind(',').unwrap()] {
            let log = parse_hlog(&text[..cut], None).unwrap();
            assert_eq!(log.intervals.len(), 1, "cut at {cut}");
            assert_eq!(log.intervals[0].histogram.len(), 2);
            assert_eq!(log.unfinished_line, Some(4));
        }
        let bad_with_newline = format!("{}\n", &text[..text.len() - 10]);
        let e = parse_hlog(&bad_with_newline, None).unwrap_err();
        assert_eq!(e.line(), 4, "{e}");
    }

    #[test]
    fn rotated_logs_belong_to_one_figure() {
        assert_eq!(figure_of("feed-to-gateway.hlog"), "feed-to-gateway");
        assert_eq!(figure_of("feed-to-gateway.3.hlog"), "feed-to-gateway");
        assert_eq!(figure_of("v1.2-x.hlog"), "v1.2-x");
        assert_eq!(figure_of("latency.hlog"), "latency");
    }
}
