//! The interval log (`.hlog`) of a run's groups, for HdrHistogram's tools.
//!
//! # Guarantees
//! - [`write_hlog`] writes an interval log that Java's `HistogramLogProcessor` and
//!   `HistogramLogReader` and the Rust crate's `IntervalLogIterator` read: V2 compressed
//!   histograms in base64, `#[StartTime: ..]`, `#[BaseTime: ..]`, the legend, one line per
//!   interval, several tags in one file.
//! - Nothing here touches a hot thread: it runs after the measurement, on plain inputs
//!   ([`TaggedIntervals`] of histograms).

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;
use std::fmt;
use std::io::{self, Write};
use std::time::{Duration, UNIX_EPOCH};

/// What [`write_hlog`] divides each interval's max by for the log's `Interval_Max` column
/// (ns → µs). Java's writer defaults to 1,000,000 (ns → ms); µs keeps the digits that matter
/// here. The column is for humans only: readers take the max from the histogram.
pub const HLOG_MAX_VALUE_DIVISOR: f64 = 1000.0;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::tests::realistic;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;

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
}
