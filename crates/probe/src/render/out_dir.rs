//! The `--out DIR` result directory: `report.json` and the files made from it, each written
//! atomically through [`write_atomically`].

use crate::model::decode;
use crate::model::Report;
use crate::model::GROUPS;
use crate::render::csv::write_groups_csv;
use crate::render::files::{write_atomically, write_json};
use crate::render::hgrm::{write_hgrm, NS_PER_US};
use crate::render::hlog::{write_hlog, Interval, TaggedIntervals};
use crate::render::points::GroupPoint;
use crate::render::svg::{groups_svg, spectrum_svg};
use std::path::{Path, PathBuf};

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
                    use crate::model::Role;
                    matches!(
                        t.role,
                        Role::Publisher | Role::Subscriber | Role::Consumer | Role::Handoff
                    )
                });
                let sum = |f: &dyn Fn(&crate::model::Counts) -> Option<u64>| -> Option<u64> {
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

/// A file of the `--out` directory that could not be written; `Display` names it and says why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutDirError {
    /// The file (or the directory) that could not be written.
    pub path: PathBuf,
    /// Why: the I/O error, or the report's histogram that does not decode.
    pub cause: String,
}

impl std::fmt::Display for OutDirError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "--out: could not write {}: {}", self.path.display(), self.cause)
    }
}

impl std::error::Error for OutDirError {}

/// The file `p` could not be made or written, for `e`.
fn io_error(p: &Path, e: &dyn std::fmt::Display) -> OutDirError {
    OutDirError {
        path: p.to_owned(),
        cause: e.to_string(),
    }
}

/// The 20 groups' histograms, both columns (the actual one tagged `actual`), as one
/// HdrHistogram interval log.
fn write_groups_hlog(h: &crate::model::Histograms, hlog: &Path) -> Result<(), OutDirError> {
    let mut decoded = Vec::with_capacity(GROUPS);
    for g in &h.groups {
        decoded.push((
            g.start_s,
            (g.end_s - g.start_s).max(0.0),
            decode(&g.intended).map_err(|e| io_error(hlog, &e))?,
            decode(&g.actual).map_err(|e| io_error(hlog, &e))?,
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
    // The log's own error, whole: its message is what `--out` prints.
    write_atomically(hlog, |out| {
        write_hlog(&sets, h.start_epoch_s.max(0.0), out).map_err(std::io::Error::other)
    })
    .map_err(|e| io_error(hlog, &e))
}

/// Writes `report` and its files into `dir` (created if missing); returns the paths written.
/// A report without histograms (an older report, or a run that measured nothing) gets
/// `report.json` and `groups.csv` only.
///
/// # Errors
/// One line naming the file that could not be written and why.
pub fn write_dir(report: &Report, dir: &Path) -> Result<Vec<PathBuf>, OutDirError> {
    std::fs::create_dir_all(dir).map_err(|e| io_error(dir, &e))?;
    let mut written = Vec::new();
    let json = dir.join("report.json");
    write_json(report, &json).map_err(|e| io_error(&json, &e))?;
    written.push(json);

    let rows = group_points(report);
    let csv = dir.join("groups.csv");
    write_atomically(&csv, |out| write_groups_csv(&rows, out)).map_err(|e| io_error(&csv, &e))?;
    written.push(csv);

    let Some(h) = &report.histograms else {
        return Ok(written);
    };
    let intended = decode(&h.intended).map_err(|e| io_error(&dir.join("latency.hgrm"), &e))?;
    let actual = decode(&h.actual).map_err(|e| io_error(&dir.join("latency-actual.hgrm"), &e))?;
    for (name, hist) in [("latency.hgrm", &intended), ("latency-actual.hgrm", &actual)] {
        let p = dir.join(name);
        write_atomically(&p, |out| write_hgrm(hist, out, NS_PER_US)).map_err(|e| io_error(&p, &e))?;
        written.push(p);
    }

    let hlog = dir.join("latency.hlog");
    write_groups_hlog(h, &hlog)?;
    written.push(hlog);

    let what = format!(
        "{} {} at {:.0} msg/s, {} B, {}",
        crate::model::RunMode::as_str(report.mode),
        report.tool.name,
        report.rate_target,
        report.msg_size,
        report.started_at
    );
    if !intended.is_empty() {
        let p = dir.join("spectrum.svg");
        spectrum_svg(
            &[
                ("from the intended send time", &intended),
                ("from the actual send time", &actual),
            ],
            &format!("latency by percentile: {what}"),
            &p,
        )
        .map_err(|e| io_error(&p, &e))?;
        written.push(p);
        let p = dir.join("groups.svg");
        groups_svg(&rows, &format!("latency over the run, 20 groups: {what}"), &p).map_err(|e| io_error(&p, &e))?;
        written.push(p);
    }
    Ok(written)
}
