//! A run's histograms in its report, and its result directory (`--out DIR`).
//!
//! Guarantees:
//! - A JSON report carries the full distributions, not only percentiles: the overall and the
//!   20 per-group HdrHistograms of the latency from the intended and from the actual send
//!   time, each in HdrHistogram's V2 + DEFLATE encoding, base64 (the encoding of HdrHistogram
//!   interval logs), so the files below can be written from any report later, and `compare`
//!   has more than a few percentiles to go on.
//! - `--out DIR` writes, beside `report.json`: `latency.hgrm` and `latency-actual.hgrm` (the
//!   percentile distribution as HdrHistogram prints it, values in µs, the layout wrk2 and
//!   HdrHistogram's plotter accept), `latency.hlog` (an interval log, one interval per group,
//!   intended latency untagged and actual latency tagged `actual`, values in ns: read it with
//!   `HistogramLogProcessor -i latency.hlog -outputValueUnitRatio 1000`), `groups.csv`, and
//!   the plots `spectrum.svg` (percentile spectrum) and `groups.svg` (groups over time, with
//!   the jitter counters when diagnostics ran).
//!
//! Timing model: the report's ([`crate::clock::TIMING_MODEL`]); a group's interval is the time
//! its messages were scheduled to be sent: message `i`'s intended send time is
//! `start + i / rate`, so the intervals tile the run exactly.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::output::{self, GroupPoint, Interval, TaggedIntervals};
use crate::recorder::{Recorder, GROUPS};
use crate::report::Report;

/// One group's histograms and its interval.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct GroupHistograms {
    /// Start of the group's scheduled sends, seconds from the first measured intended send.
    pub start_s: f64,
    /// End of the group's scheduled sends (the next group's start), seconds.
    pub end_s: f64,
    /// Latency from the intended send time (encoded, see the module docs).
    pub intended: String,
    /// Latency from the actual send time (encoded).
    pub actual: String,
}

/// The run's histograms (see the module docs).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Histograms {
    /// Unix time, seconds, of the first measured message's intended send.
    pub start_epoch_s: f64,
    /// Encoding of every histogram here.
    pub encoding: String,
    /// Latency from the intended send time, all measured messages.
    pub intended: String,
    /// Latency from the actual send time, all measured messages.
    pub actual: String,
    /// The [`GROUPS`] groups, in send order.
    pub groups: Vec<GroupHistograms>,
}

/// The value of [`Histograms::encoding`].
pub const ENCODING: &str = "HdrHistogram V2+DEFLATE, base64";

/// One histogram, encoded.
///
/// # Panics
/// Never for a valid histogram (serializing into memory cannot fail for one).
#[must_use]
pub fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("serializing a histogram into memory");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// One histogram, decoded.
///
/// # Errors
/// Not base64, or not an HdrHistogram V2 (deflate) histogram.
pub fn decode(s: &str) -> Result<Histogram<u64>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .map_err(|e| format!("a histogram in the report is not base64: {e}"))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("a histogram in the report does not decode: {e:?}"))
}

impl Histograms {
    /// From a recorder: `start_epoch_s` is the Unix time of the first measured intended send,
    /// `rate` the schedule (messages per second) that places each group in time.
    #[must_use]
    pub fn from_recorder(rec: &Recorder, start_epoch_s: f64, rate: f64) -> Histograms {
        let warmup = rec.plan().map_or(0, |(w, _)| u64::from(w));
        let at = |seq: u64| {
            if rate > 0.0 && rate.is_finite() {
                seq.saturating_sub(warmup) as f64 / rate
            } else {
                0.0
            }
        };
        let groups = rec
            .groups()
            .iter()
            .map(|g| GroupHistograms {
                start_s: at(g.first_seq),
                end_s: at(if g.planned == 0 { g.first_seq } else { g.last_seq + 1 }),
                intended: encode(rec.group_intended(g.index)),
                actual: encode(rec.group_actual(g.index)),
            })
            .collect();
        Histograms {
            start_epoch_s,
            encoding: ENCODING.to_owned(),
            intended: encode(rec.overall_intended()),
            actual: encode(rec.overall_actual()),
            groups,
        }
    }
}

/// The groups of `report` as plot and CSV rows: times from its histograms (else 0), counters
/// summed over the hot threads from its jitter section when present.
#[must_use]
pub fn group_points(report: &Report) -> Vec<GroupPoint> {
    let times = report.histograms.as_ref().map(|h| &h.groups);
    report
        .groups
        .iter()
        .map(|g| {
            let (start_s, end_s) = times
                .and_then(|t| t.get(g.index))
                .map_or((0.0, 0.0), |t| (t.start_s, t.end_s));
            let mut counters = Vec::new();
            if let Some(j) = &g.jitter {
                let hot = j.threads.iter().filter(|t| {
                    use crate::jitter::Role;
                    matches!(
                        t.role,
                        Role::Publisher | Role::Subscriber | Role::Consumer | Role::Handoff
                    )
                });
                let sum = |f: &dyn Fn(&crate::jitter::Counts) -> Option<u64>| -> Option<u64> {
                    hot.clone().filter_map(|t| f(&t.counts)).reduce(|a, b| a + b)
                };
                for (name, v) in [
                    ("futex calls (hot threads)", sum(&|c| c.futex)),
                    ("involuntary switches (hot threads)", sum(&|c| c.involuntary)),
                    ("voluntary switches (hot threads)", sum(&|c| c.voluntary)),
                    (
                        "page faults (hot threads)",
                        sum(&|c| Some(c.minor_faults + c.major_faults)),
                    ),
                    ("stalls >= 5 us (hot loops)", Some(j.stalls)),
                ] {
                    if let Some(v) = v {
                        counters.push((name.to_owned(), v));
                    }
                }
            }
            GroupPoint {
                index: g.index,
                start_s,
                end_s,
                count: g.latency.count,
                p50_ns: g.latency.p50,
                p99_ns: g.latency.p99,
                p999_ns: g.latency.p999,
                max_ns: g.latency.max,
                actual_p50_ns: g.actual.p50,
                actual_p99_ns: g.actual.p99,
                actual_p999_ns: g.actual.p999,
                actual_max_ns: g.actual.max,
                counters,
            }
        })
        .collect()
}

/// Writes `report` and its files into `dir` (created if missing); returns the paths written.
/// A report without histograms (an older report, or a run that measured nothing) gets
/// `report.json` and `groups.csv` only.
///
/// # Errors
/// One line naming the file that could not be written and why.
pub fn write_dir(report: &Report, dir: &Path) -> Result<Vec<PathBuf>, String> {
    let io = |p: &Path, e: &dyn std::fmt::Display| format!("--out: could not write {}: {e}", p.display());
    std::fs::create_dir_all(dir).map_err(|e| io(dir, &e))?;
    let mut written = Vec::new();
    let json = dir.join("report.json");
    crate::report::write_json(report, &json).map_err(|e| io(&json, &e))?;
    written.push(json);

    let rows = group_points(report);
    let csv = dir.join("groups.csv");
    let f = std::fs::File::create(&csv).map_err(|e| io(&csv, &e))?;
    output::write_groups_csv(&rows, std::io::BufWriter::new(f)).map_err(|e| io(&csv, &e))?;
    written.push(csv);

    let Some(h) = &report.histograms else {
        return Ok(written);
    };
    let intended = decode(&h.intended).map_err(|e| io(&dir.join("latency.hgrm"), &e))?;
    let actual = decode(&h.actual).map_err(|e| io(&dir.join("latency-actual.hgrm"), &e))?;
    for (name, hist) in [("latency.hgrm", &intended), ("latency-actual.hgrm", &actual)] {
        let p = dir.join(name);
        let f = std::fs::File::create(&p).map_err(|e| io(&p, &e))?;
        output::write_hgrm(hist, std::io::BufWriter::new(f), output::NS_PER_US).map_err(|e| io(&p, &e))?;
        written.push(p);
    }

    let hlog = dir.join("latency.hlog");
    let mut decoded = Vec::with_capacity(GROUPS);
    for g in &h.groups {
        decoded.push((
            g.start_s,
            (g.end_s - g.start_s).max(0.0),
            decode(&g.intended).map_err(|e| io(&hlog, &e))?,
            decode(&g.actual).map_err(|e| io(&hlog, &e))?,
        ));
    }
    let iv = |actual: bool| -> Vec<Interval<'_>> {
        decoded
            .iter()
            .map(|(start_s, duration_s, i, a)| Interval {
                start_s: *start_s,
                duration_s: *duration_s,
                histogram: if actual { a } else { i },
            })
            .collect()
    };
    let (iv_intended, iv_actual) = (iv(false), iv(true));
    let sets = [
        TaggedIntervals {
            tag: None,
            intervals: &iv_intended,
        },
        TaggedIntervals {
            tag: Some("actual"),
            intervals: &iv_actual,
        },
    ];
    let f = std::fs::File::create(&hlog).map_err(|e| io(&hlog, &e))?;
    output::write_hlog(&sets, h.start_epoch_s.max(0.0), std::io::BufWriter::new(f)).map_err(|e| io(&hlog, &e))?;
    written.push(hlog);

    let what = format!(
        "{} {} at {:.0} msg/s, {} B, {}",
        crate::report::RunMode::as_str(report.mode),
        report.tool.name,
        report.rate_target,
        report.msg_size,
        report.started_at
    );
    if !intended.is_empty() {
        let p = dir.join("spectrum.svg");
        output::spectrum_svg(
            &[
                ("from the intended send time", &intended),
                ("from the actual send time", &actual),
            ],
            &format!("latency by percentile: {what}"),
            &p,
        )
        .map_err(|e| io(&p, &e))?;
        written.push(p);
        let p = dir.join("groups.svg");
        output::groups_svg(&rows, &format!("latency over the run, 20 groups: {what}"), &p).map_err(|e| io(&p, &e))?;
        written.push(p);
    }
    Ok(written)
}
