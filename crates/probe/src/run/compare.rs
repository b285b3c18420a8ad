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
        }
    }
}

impl std::error::Error for CompareError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CompareError::Read { source, .. } => Some(source),
            CompareError::Parse { source, .. } => Some(source),
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
/// A file cannot be read or is no report.
pub fn compare(a: &Path, b: &Path, confidence: f64) -> Result<String, CompareError> {
    let (ra, rb) = (read_report(a)?, read_report(b)?);
    let changes = crate::analysis::runs::compare(&ra, &rb, confidence);
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
        let text = compare(Path::new(KEPT), Path::new(KEPT), 0.99).unwrap();
        assert!(text.contains("report-full.json"), "{text}");
    }

    #[test]
    fn a_missing_or_foreign_file_is_one_line_naming_it_and_the_fix() {
        let e = compare(Path::new("/nonexistent/a.json"), Path::new(KEPT), 0.99).unwrap_err();
        let line = e.to_string();
        assert!(
            line.starts_with("could not read /nonexistent/a.json: ")
                && line.ends_with("; give the report --json or --out DIR/report.json wrote"),
            "{line}"
        );
        let not_json = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
        let line = compare(Path::new(KEPT), Path::new(not_json), 0.99)
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
