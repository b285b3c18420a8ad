//! `latency-probe ab --out DIR`: each arm's distribution over the rounds that count, in
//! HdrHistogram's formats, and both spectra in one plot.
//!
//! Guarantees:
//! - `A.hgrm` and `B.hgrm`: each arm's histograms of the counted rounds added together (the
//!   judged column), as HdrHistogram prints a percentile distribution (values in µs).
//! - `A.hlog` and `B.hlog`: interval logs, one interval per counted round (the arm's whole
//!   run), starting at the experiment's first measured send, values in ns (read with
//!   `HistogramLogProcessor -i A.hlog -outputValueUnitRatio 1000`).
//! - `spectrum.svg`: both merged spectra; the legend carries the paired change of p50, p99 and
//!   p99.9 with its interval (the spectra are pooled, the verdicts are paired: the legend, not
//!   the gap between the lines, is the answer).
//! - `ab.json`: the comparison, as `--json` writes it.

use std::path::{Path, PathBuf};

use hdrhistogram::Histogram;

use crate::model::{decode, AbColumn, AbFile, AbReport, Histograms, RoundHistograms};
use crate::render::ab::pct;
use crate::render::files::{write_atomically, write_json};
use crate::render::hgrm::{write_hgrm, NS_PER_US};
use crate::render::hlog::{write_hlog, Interval, TaggedIntervals};
use crate::render::out_dir::OutDirError;
use crate::render::svg::spectrum_svg;

/// One arm's counted rounds: (start, seconds from the first; length, seconds; histogram).
type ArmRounds = Vec<(f64, f64, Histogram<u64>)>;

/// The judged column's histogram of one arm run, with its start (Unix seconds) and length.
fn column(h: &Histograms, c: AbColumn) -> Result<(f64, f64, Histogram<u64>), String> {
    let encoded = match c {
        AbColumn::Intended => &h.intended,
        AbColumn::Actual => &h.actual,
    };
    let hist = decode(encoded).map_err(|e| e.to_string())?;
    let len = h.groups.last().map_or(0.0, |g| g.end_s).max(0.0);
    Ok((h.start_epoch_s, len, hist))
}

/// Writes the files above into `dir` (created if missing); returns the paths written.
///
/// # Errors
/// One line naming the file that could not be written and why.
pub fn write_ab_dir(report: &AbReport, rounds: &[RoundHistograms], dir: &Path) -> Result<Vec<PathBuf>, OutDirError> {
    let io = |p: &Path, e: &dyn std::fmt::Display| OutDirError {
        path: p.to_owned(),
        cause: e.to_string(),
    };
    std::fs::create_dir_all(dir).map_err(|e| io(dir, &e))?;
    let json = dir.join("ab.json");
    write_json(&AbFile { ab: report.clone() }, &json).map_err(|e| io(&json, &e))?;
    let mut written = vec![json];
    let counted = |n: u32| report.rounds.iter().any(|r| r.round == n && r.set_aside.is_none());
    let (mut a, mut b): (ArmRounds, ArmRounds) = (Vec::new(), Vec::new());
    for r in rounds.iter().filter(|r| counted(r.round)) {
        for (side, arm, file) in [(&r.a, &mut a, "A.hlog"), (&r.b, &mut b, "B.hlog")] {
            if let Some(h) = side {
                arm.push(column(h, report.column).map_err(|e| io(&dir.join(file), &e))?);
            }
        }
    }
    // The experiment's first measured send (none counted: the logs are empty, based at 0).
    let base = a.iter().chain(&b).map(|x| x.0).reduce(f64::min).unwrap_or(0.0);
    let mut merged = Vec::new();
    for (name, arm) in [("A", &a), ("B", &b)] {
        // Auto-resizing: it takes each run's range as it comes.
        let mut all = Histogram::<u64>::new(3).map_err(|e| io(&dir.join(format!("{name}.hgrm")), &e))?;
        for (_, _, h) in arm {
            all.add(h).map_err(|e| io(&dir.join(format!("{name}.hgrm")), &e))?;
        }
        let p = dir.join(format!("{name}.hgrm"));
        write_atomically(&p, |out| write_hgrm(&all, out, NS_PER_US)).map_err(|e| io(&p, &e))?;
        written.push(p);
        let intervals: Vec<Interval<'_>> = arm
            .iter()
            .map(|(start, len, h)| Interval {
                start_s: (start - base).max(0.0),
                duration_s: *len,
                histogram: h,
            })
            .collect();
        let p = dir.join(format!("{name}.hlog"));
        let sets = [TaggedIntervals {
            tag: None,
            intervals: &intervals,
        }];
        write_atomically(&p, |out| {
            write_hlog(&sets, base.max(0.0), out).map_err(std::io::Error::other)
        })
        .map_err(|e| io(&p, &e))?;
        written.push(p);
        merged.push(all);
    }
    if merged.iter().any(|h| !h.is_empty()) {
        let p = dir.join("spectrum.svg");
        let (la, lb) = legends(report);
        spectrum_svg(
            &[(la.as_str(), &merged[0]), (lb.as_str(), &merged[1])],
            &format!(
                "A vs B, {} rounds pooled per arm, latency from the {} send time",
                a.len().min(b.len()),
                report.column.as_str()
            ),
            &p,
        )
        .map_err(|e| io(&p, &e))?;
        written.push(p);
    }
    Ok(written)
}

/// The legend's two entries: A's flags; B's flags with the paired changes at p50, p99, p99.9.
fn legends(r: &AbReport) -> (String, String) {
    let changes: Vec<String> = ["p50", "p99", "p999"]
        .iter()
        .filter_map(|name| r.percentiles.iter().find(|p| p.percentile == *name))
        .map(|p| {
            let interval = match (p.ci_low, p.ci_high) {
                (Some(lo), Some(hi)) => format!(" [{}, {}]", pct(lo), pct(hi)),
                _ => String::new(),
            };
            format!("{} {}{} {}", p.percentile, pct(p.change), interval, p.verdict)
        })
        .collect();
    (
        format!("A: {}", r.a),
        format!("B: {}; B vs A {}", r.b, changes.join(", ")),
    )
}
