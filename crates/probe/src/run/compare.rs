//! `latency-probe compare A B`: two kept JSON reports, per percentile, the change over the runs
//! recorded in them with its interval ([`crate::analysis::runs::compare`]).

use crate::model::Report;
use std::fmt;
use std::path::{Path, PathBuf};

/// A report that could not be read.
#[derive(Debug)]
pub enum CompareError {
    /// The file could not be read.
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a report.
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// The report holds no measured message: nothing to compare.
    Empty {
        /// The file.
        path: PathBuf,
        /// Why its run ended without one, when it says.
        reason: Option<String>,
    },
    /// One report is of round trips, the other one-way: not the same figure.
    Modes {
        /// A's mode.
        a: &'static str,
        /// B's mode.
        b: &'static str,
    },
}

impl fmt::Display for CompareError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompareError::Read { path, source } => write!(
                f,
                "could not read {}: {source}; give the report --json or --out DIR/report.json wrote",
                path.display()
            ),
            CompareError::Parse { path, source } => write!(
                f,
                "{} is not a latency-probe or latency-sub JSON report ({source}); give the files --json or --out wrote",
                path.display()
            ),
            CompareError::Empty { path, reason } => write!(
                f,
                "{} holds no measured message{}: nothing to compare; run it again",
                path.display(),
                reason.as_ref().map_or_else(String::new, |r| format!(" (its run: {r})"))
            ),
            CompareError::Modes { a, b } => write!(
                f,
                "A is {a} and B is {b}: a round trip and a one-way latency are not the same figure; compare two \
                 runs of one --mode"
            ),
        }
    }
}

impl std::error::Error for CompareError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CompareError::Read { source, .. } => Some(source),
            CompareError::Parse { source, .. } => Some(source),
            CompareError::Empty { .. } | CompareError::Modes { .. } => None,
        }
    }
}

/// Reads a report latency-probe or latency-sub wrote (`--json`, `--out DIR/report.json`).
///
/// # Errors
/// The file cannot be read or is no report.
pub fn read_report(path: &Path) -> Result<Report, CompareError> {
    let bytes = std::fs::read(path).map_err(|source| CompareError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|source| CompareError::Parse {
        path: path.to_path_buf(),
        source,
    })
}

/// The comparison of the report in `a` (before) with the one in `b` (after), as text.
///
/// # Errors
/// A file cannot be read or is no report, a report measured nothing, or the two are of
/// different modes.
pub fn compare(a: &Path, b: &Path, (confidence, resolve): (f64, f64)) -> Result<String, CompareError> {
    let (ra, rb) = (read_report(a)?, read_report(b)?);
    for (path, r) in [(a, &ra), (b, &rb)] {
        if r.latency_ns.count == 0 {
            return Err(CompareError::Empty {
                path: path.to_path_buf(),
                reason: r.incomplete_reason.clone(),
            });
        }
    }
    if ra.mode != rb.mode {
        return Err(CompareError::Modes {
            a: ra.mode.as_str(),
            b: rb.mode.as_str(),
        });
    }
    let changes = crate::analysis::runs::compare(&ra, &rb, confidence, resolve);
    Ok(crate::render::runs::render_compare(
        &a.display().to_string(),
        &b.display().to_string(),
        &ra,
        &rb,
        &changes,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/report-full.json");

    #[test]
    fn a_kept_report_compares_with_itself() {
        let text = compare(Path::new(KEPT), Path::new(KEPT), (0.99, 0.05)).unwrap();
        assert!(text.contains("report-full.json"), "{text}");
    }

    /// The kept report with `edit` applied, written to a file of its own.
    fn edited(tag: &str, edit: impl FnOnce(&mut serde_json::Value)) -> PathBuf {
        let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(KEPT).unwrap()).unwrap();
        edit(&mut v);
        let p = std::env::temp_dir().join(format!("latency-probe-compare-{}-{tag}.json", std::process::id()));
        std::fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
        p
    }

    /// A report that measured nothing, or one of the other mode, is refused in one line
    /// instead of a table of 0 ns and +0.0% (or of round trips against one-way latencies).
    #[test]
    fn an_empty_report_or_another_mode_is_nothing_to_compare() {
        let empty = edited("empty", |v| {
            v["latency_ns"]["count"] = 0.into();
            v["incomplete_reason"] = "the driver went".into();
        });
        let line = compare(Path::new(KEPT), &empty, (0.99, 0.05)).unwrap_err().to_string();
        assert_eq!(
            line,
            format!(
                "{} holds no measured message (its run: the driver went): nothing to compare; run it again",
                empty.display()
            )
        );
        let rtt = edited("rtt", |v| v["mode"] = "rtt".into());
        let line = compare(Path::new(KEPT), &rtt, (0.99, 0.05)).unwrap_err().to_string();
        assert!(line.starts_with("A is one-way and B is rtt: "), "{line}");
        for p in [empty, rtt] {
            let _ = std::fs::remove_file(p);
        }
    }

    #[test]
    fn a_missing_or_foreign_file_is_one_line_naming_it_and_the_fix() {
        let e = compare(Path::new("/nonexistent/a.json"), Path::new(KEPT), (0.99, 0.05)).unwrap_err();
        let line = e.to_string();
        assert!(
            line.starts_with("could not read /nonexistent/a.json: ")
                && line.ends_with("; give the report --json or --out DIR/report.json wrote"),
            "{line}"
        );
        let not_json = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
        let line = compare(Path::new(KEPT), Path::new(not_json), (0.99, 0.05))
            .unwrap_err()
            .to_string();
        assert!(
            line.starts_with(&format!(
                "{not_json} is not a latency-probe or latency-sub JSON report ("
            )) && line.ends_with("); give the files --json or --out wrote"),
            "{line}"
        );
    }
}
