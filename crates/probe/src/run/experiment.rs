//! `latency-probe`: the whole experiment in one command.
//!
//! Starts the embedded media driver (or uses `--dir`), runs `latency-sub` and `latency-pub`
//! as separate processes with their hot threads pinned to different cores ([`super::trial`]),
//! once or `--runs` times, and combines their JSON reports into one. The child binaries are
//! looked up next to this executable ([`sibling`]).

use super::driver::{self, DriverChoice, DriverError};
use super::trial::{self, Place, Trial, TrialError};
use crate::model::{Report, RunsSummary};
use crate::render::text::{render_text, View};
use crate::units::format_ns;
use std::fmt;
use std::process::ExitStatus;

pub use super::process::{default_cores, sibling, spawn, wait_bounded, SpawnError};

const ME: &str = "latency-probe";

/// The experiment, as plain values (the flags, checked).
#[derive(Debug, Clone)]
pub struct Experiment {
    /// How many times to measure (1 to 1000), each with its own floor.
    pub runs: u32,
    /// What each measurement runs.
    pub trial: Trial,
    /// The media driver.
    pub driver: DriverChoice,
}

/// What the experiment measured.
#[derive(Debug)]
pub struct Outcome {
    /// The report: the last run's, with [`Report::runs`] when there were several.
    pub report: Report,
    /// Each run's own report when there were several (else empty).
    pub runs: Vec<Report>,
    /// The last run's latency-pub exit (none: killed).
    pub pub_status: Option<ExitStatus>,
    /// The last run's latency-sub exit (none: killed).
    pub sub_status: Option<ExitStatus>,
    /// Every run finished, lost nothing, and both children exited 0.
    pub ok: bool,
}

/// Why the experiment measured nothing.
#[derive(Debug)]
pub enum ExperimentError {
    /// The media driver could not be reached or started.
    Driver(DriverError),
    /// The first run produced no report.
    Trial(TrialError),
}

impl ExperimentError {
    /// Whether the setup was refused before anything ran (else a run ran and left no report).
    #[must_use]
    pub fn is_setup(&self) -> bool {
        match self {
            ExperimentError::Driver(_) => true,
            ExperimentError::Trial(e) => e.is_setup(),
        }
    }
}

impl fmt::Display for ExperimentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExperimentError::Driver(e) => write!(f, "{e}"),
            ExperimentError::Trial(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ExperimentError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ExperimentError::Driver(e) => Some(e),
            ExperimentError::Trial(e) => Some(e),
        }
    }
}

/// Runs the experiment: starts the driver, measures `runs` times (a run that fails after the
/// first ends the series, and the runs before it are reported, marked incomplete), stops the
/// driver, and combines the runs.
///
/// # Errors
/// The driver is not there, or the first run produced no report.
pub fn run(x: &Experiment) -> Result<Outcome, ExperimentError> {
    let driver = driver::start(&x.driver).map_err(ExperimentError::Driver)?;
    // Once, before measuring: the host and the driver checked for this run (report env.doctor).
    let settings = driver.settings();
    let driver_settings = settings.clone().unwrap_or_default();
    let checks = crate::run::doctor::doctor(&crate::run::doctor::RunShape {
        hot_cores: [x.trial.pub_core, x.trial.sub_core].into_iter().flatten().collect(),
        channel: &x.trial.channel,
        rate: x.trial.rate,
        msg_size: x.trial.msg_size as u64,
        ipc_term: driver.ipc_term_length(),
        driver_dir: driver.dir(),
        driver: settings,
        steal_sample: std::time::Duration::ZERO,
    })
    .checks;
    let mut reports = Vec::new();
    let mut ok = true;
    let mut statuses = (None, None);
    for run in 1..=x.runs {
        let at = Place {
            dir: driver.dir(),
            embedded: driver.is_embedded(),
            driver_version: driver.version(),
            run: (x.runs > 1).then_some((run, x.runs)),
        };
        let m = match trial::measure(&x.trial, &at) {
            Ok(m) => m,
            // The driver stops (and removes its directory) on the way out.
            Err(e) if reports.is_empty() => return Err(ExperimentError::Trial(e)),
            Err(why) => {
                // Keep what the earlier runs measured: report them, marked incomplete.
                eprintln!(
                    "{ME}: run {run}/{} failed, reporting the {} before it: {why}",
                    x.runs,
                    reports.len()
                );
                ok = false;
                break;
            }
        };
        let children_ok = m.pub_status.is_some_and(|s| s.success()) && m.sub_status.is_some_and(|s| s.success());
        ok &= children_ok && m.report.complete && m.report.lost == 0;
        if x.runs > 1 {
            say_run(&m.report, run, x.runs);
        }
        statuses = (m.pub_status, m.sub_status);
        let mut report = m.report;
        report.env.doctor.clone_from(&checks);
        report.env.driver_settings.clone_from(&driver_settings);
        reports.push(report);
        if crate::sys::signals::interrupted() {
            // Ctrl-C: no more runs; what was measured is reported.
            ok = false;
            break;
        }
    }
    drop(driver);
    let (pub_status, sub_status) = statuses;
    let (report, runs) = combine_runs(reports, x.runs);
    Ok(Outcome {
        report,
        runs,
        pub_status,
        sub_status,
        ok,
    })
}

/// One run of several, in a line on stderr as it ends: its percentiles.
fn say_run(r: &Report, run: u32, runs: u32) {
    let l = &r.latency_ns;
    eprintln!(
        "{ME}: run {run}/{runs}: p50 {} p99 {} p99.9 {} max {}{}",
        format_ns(l.p50),
        format_ns(l.p99),
        format_ns(l.p999),
        format_ns(l.max),
        if r.complete && r.lost == 0 { "" } else { " (incomplete)" }
    );
}

impl Outcome {
    /// The report as text in `view`, with the variation between runs when there were several.
    #[must_use]
    pub fn text(&self, view: View) -> String {
        let mut text = render_text(&self.report, view);
        if let Some(summary) = &self.report.runs {
            text.push_str(&summary.render());
        }
        text
    }
}

/// The runs as one report (the last run's, with the variation between them when there were
/// several), and each run's own report when there were several.
///
/// # Panics
/// `reports` is empty.
#[must_use]
pub fn combine_runs(mut reports: Vec<Report>, planned: u32) -> (Report, Vec<Report>) {
    let mut report = reports.pop().expect("at least one run");
    if reports.len() + 1 < planned as usize {
        report.complete = false;
        report.notes.push(format!(
            "only {} of the {} runs finished (see the error above)",
            reports.len() + 1,
            planned
        ));
    }
    if planned > 1 {
        reports.push(report.clone());
        report.runs = Some(RunsSummary::from_reports(&reports));
    }
    (report, reports)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept() -> Report {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/report-full.json");
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    }

    #[test]
    fn one_run_is_its_own_report() {
        let (report, runs) = combine_runs(vec![kept()], 1);
        assert!(report.runs.is_none() && runs.is_empty());
        assert_eq!(
            serde_json::to_value(&report).unwrap(),
            serde_json::to_value(kept()).unwrap()
        );
    }

    #[test]
    fn runs_that_stopped_early_are_reported_with_their_variation_marked_incomplete() {
        let (report, runs) = combine_runs(vec![kept(), kept()], 3);
        assert!(!report.complete);
        assert!(
            report
                .notes
                .contains(&"only 2 of the 3 runs finished (see the error above)".to_owned()),
            "{:?}",
            report.notes
        );
        assert_eq!(runs.len(), 2);
        let summary = report.runs.as_ref().expect("the variation between runs");
        assert_eq!(summary.runs.len(), 2);
    }
}
