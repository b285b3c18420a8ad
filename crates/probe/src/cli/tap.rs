//! `latency-probe tap`: the report of a service's own traffic from its tap's interval logs
//! (`messaging`'s feature `tap`), its flags and their checks.

use std::path::PathBuf;

use super::Failure;
use crate::render::tap::TapView;
use crate::run::tap::{read_figures, tap_report, Against, TapRequest};

/// `latency-probe tap`'s name in its messages.
pub const TAP: &str = "latency-probe tap";

/// What to print per figure below the overall table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum By {
    /// The intervals merged into time-ordered groups (--groups of them)
    Groups,
    /// Every interval as the log holds it
    Intervals,
    /// The overall table only
    None,
}

/// `latency-probe tap`.
#[derive(Debug, Clone, clap::Args)]
pub struct TapArgs {
    /// The tap's interval logs: .hlog files or directories of them (a figure's rotated logs,
    /// NAME.hlog, NAME.1.hlog, ..., are read as one figure)
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Compare with these logs (B; the paths before are A): per figure of the same name, or
    /// one figure against one
    #[arg(long, num_args = 1.., conflicts_with = "vs_period")]
    pub vs: Vec<PathBuf>,
    /// Only the intervals whose middle lies in FROM:TO, seconds from each figure's first
    /// interval (e.g. 0:60; an empty end is the log's end: 60:)
    #[arg(long, value_parser = parse_period)]
    pub period: Option<(f64, f64)>,
    /// Compare with the same logs over this period (B), FROM:TO as --period
    #[arg(long = "vs-period", value_parser = parse_period)]
    pub vs_period: Option<(f64, f64)>,
    /// Below the overall table, per figure: time-ordered groups, every interval, or nothing
    #[arg(long, value_enum, default_value_t = By::Groups)]
    pub by: By,
    /// Groups per figure (fewer intervals than this: one group each)
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub groups: u16,
    /// Read the lines of this tag (a session: session-ID) instead of the untagged sums
    #[arg(long)]
    pub tag: Option<String>,
    /// Confidence of the comparison's intervals, 0.5 to 0.9999
    #[arg(long, default_value_t = 0.99)]
    pub confidence: f64,
    /// In the comparison, a verdict of no change must rule out a change this large either way
    /// (a fraction: 0.05 is 5%); an interval around zero that reaches farther is inconclusive
    #[arg(long, default_value_t = crate::analysis::paired::DEFAULT_RESOLVE)]
    pub resolve: f64,
    /// Draw spectrum.svg and groups-FIGURE.svg into this directory
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `FROM:TO` in seconds, `TO` optional.
fn parse_period(s: &str) -> Result<(f64, f64), String> {
    let (from, to) = s
        .split_once(':')
        .ok_or_else(|| format!("{s:?}: give FROM:TO in seconds, e.g. 0:60 or 60:"))?;
    let from: f64 = from
        .trim()
        .parse()
        .map_err(|_| format!("{s:?}: FROM is not a number of seconds"))?;
    let to: f64 = if to.trim().is_empty() {
        f64::INFINITY
    } else {
        to.trim()
            .parse()
            .map_err(|_| format!("{s:?}: TO is not a number of seconds"))?
    };
    if !(from >= 0.0 && to > from) {
        return Err(format!("{s:?}: give 0 <= FROM < TO"));
    }
    Ok((from, to))
}

/// `latency-probe tap`: reads the logs, prints the report (and the comparison), draws the
/// plots with `--out`.
///
/// # Errors
/// A bad flag, a path that cannot be read, a log that does not parse: one line, exit 2.
pub fn tap(a: &TapArgs) -> Result<(), Failure> {
    super::validate::confidence(a.confidence).map_err(Failure::setup)?;
    super::validate::resolve(a.resolve).map_err(Failure::setup)?;
    if a.vs_period.is_some() && a.vs.is_empty() && a.period.is_none() {
        // Comparing a period with the whole log would count its intervals twice.
        return Err(Failure::setup(
            "--vs-period needs --period for A (e.g. --period 0:60 --vs-period 60:120)",
        ));
    }
    if let (Some((f0, t0)), Some((f1, t1))) = (a.period, a.vs_period) {
        if f0 < t1 && f1 < t0 {
            return Err(Failure::setup(format!(
                "--period {f0}:{t0} and --vs-period {f1}:{t1} overlap; give two periods apart (e.g. 0:60 and 60:120)"
            )));
        }
    }
    let tag = a.tag.as_deref();
    let figures = read_figures(&a.paths, tag).map_err(Failure::setup)?;
    let against = match (&a.vs_period, a.vs.is_empty()) {
        (Some((from, to)), _) => Against::Period(*from, *to),
        (None, false) => Against::Files(read_figures(&a.vs, tag).map_err(Failure::setup)?),
        (None, true) => Against::None,
    };
    let req = TapRequest {
        period: a.period.unwrap_or((0.0, f64::INFINITY)),
        view: match a.by {
            By::Groups => TapView::Groups,
            By::Intervals => TapView::Intervals,
            By::None => TapView::Overall,
        },
        groups: usize::from(a.groups),
        against,
        confidence: a.confidence,
        resolve: a.resolve,
        out: a.out.clone(),
    };
    let text = tap_report(&figures, &req).map_err(Failure::setup)?;
    print!("{text}");
    Ok(())
}
