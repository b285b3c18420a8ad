//! `latency-probe sweep`: the probe once per rate, then the table, sweep.json, sweep.csv and
//! the plot of latency against offered load.

use crate::model::Report;
use crate::render::svg::{sweep_svg, SweepPoint};
use crate::units::format_ns;
use std::fmt;
use std::path::PathBuf;

use super::process::{exit_words, wait_for_run, EXIT_REFUSED, INTERRUPTED_PROBE_GRACE};

const ME: &str = "latency-probe sweep";

/// A sweep, as plain values (the flags, checked).
#[derive(Debug, Clone)]
pub struct Sweep {
    /// The latency-probe binary to run at each rate.
    pub probe: PathBuf,
    /// Offered rates, msg/s (sorted and deduplicated before the sweep).
    pub rates: Vec<u64>,
    /// Measured seconds per rate (positive).
    pub duration_s: f64,
    /// A rate meets its target only with its p99 at or below this many microseconds.
    pub p99_target_us: Option<f64>,
    /// Directory for sweep.json, sweep.csv, sweep.svg and each rate's report.
    pub out: PathBuf,
    /// More latency-probe flags for every rate.
    pub probe_args: Vec<String>,
}

/// What a sweep measured.
#[derive(Debug, Clone)]
pub struct SweepOutcome {
    /// One point per rate that produced a report.
    pub points: Vec<SweepPoint>,
    /// The highest rate that met its target.
    pub highest_met_rate: Option<f64>,
    /// Every rate produced a complete report without loss, and every file was written.
    pub complete: bool,
}

/// Why a sweep has nothing to show.
#[derive(Debug)]
pub enum SweepError {
    /// The output directory could not be made.
    OutDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The probe binary could not be run.
    Start {
        /// The binary.
        probe: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The probe refused its settings at this rate (its error is on stderr).
    Refused {
        /// The rate, msg/s.
        rate: u64,
    },
    /// No rate produced a report.
    NoReport,
}

impl SweepError {
    /// Whether the setup was refused (else rates ran, but none left a report).
    #[must_use]
    pub fn is_setup(&self) -> bool {
        !matches!(self, SweepError::NoReport)
    }
}

impl fmt::Display for SweepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SweepError::OutDir { path, source } => write!(f, "--out {}: {source}", path.display()),
            SweepError::Start { probe, source } => write!(
                f,
                "could not run {}: {source}; run sweep from the latency-probe binary itself",
                probe.display()
            ),
            SweepError::Refused { rate } => {
                write!(f, "the probe refused the settings at {rate} msg/s (see above)")
            }
            SweepError::NoReport => f.write_str(
                "no rate produced a report (see the errors above); try lower --rates or a longer --duration",
            ),
        }
    }
}

impl std::error::Error for SweepError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SweepError::OutDir { source, .. } | SweepError::Start { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Runs the probe at each rate (printing the table as it goes), then writes sweep.json,
/// sweep.csv and sweep.svg into the output directory.
///
/// # Errors
/// The directory or the probe could not be used, the probe refused the settings, or no rate
/// produced a report.
pub fn sweep(s: &Sweep) -> Result<SweepOutcome, SweepError> {
    let mut rates = s.rates.clone();
    rates.sort_unstable();
    rates.dedup();
    std::fs::create_dir_all(&s.out).map_err(|source| SweepError::OutDir {
        path: s.out.clone(),
        source,
    })?;
    let mut points = Vec::new();
    let mut reports = Vec::new();
    println!(
        "sweep: {} rates, {} s each, latency from the intended send time{}",
        rates.len(),
        s.duration_s,
        s.p99_target_us
            .map_or_else(String::new, |t| format!(", target p99 <= {t} us"))
    );
    println!(
        "{:>12} {:>12} {:>10} {:>10} {:>10} {:>6}  met",
        "offered", "achieved", "p50", "p99", "p99.9", "lost"
    );
    let mut attempted = 0;
    for &rate in &rates {
        if crate::sys::signals::interrupted() {
            // Ctrl-C: the rates done (the last one's report is marked interrupted) are kept.
            break;
        }
        attempted += 1;
        let Some(r) = one_rate(s, rate)? else { continue };
        points.push(row(s, rate, &r));
        reports.push(r);
    }
    if points.is_empty() {
        return Err(SweepError::NoReport);
    }
    let best = points
        .iter()
        .filter(|p| p.met_target)
        .map(|p| p.rate_target)
        .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))));
    let target = match s.p99_target_us {
        Some(t) => format!("achieved >= 99% of offered, nothing lost, p99 <= {t} us"),
        None => "achieved >= 99% of offered, nothing lost".to_owned(),
    };
    // Cut short, the rates above the last one done were never tried: the figure is a floor.
    let cut_short = crate::sys::signals::interrupted().then_some(attempted);
    let of_those = if let Some(n) = cut_short {
        format!(" of the {n} rates run")
    } else {
        String::new()
    };
    match best {
        Some(b) => println!("highest rate{of_those} that met its target ({target}): {b:.0} msg/s"),
        None => println!("no rate{of_those} met its target ({target})"),
    }
    if let Some(n) = cut_short {
        eprintln!(
            "{ME}: interrupted (SIGINT or SIGTERM): {n} of {} rates ran; the files hold those",
            rates.len()
        );
    }
    let ok = write_files(s, (rates.len(), cut_short), (&points, &reports), best, &target);
    let incomplete = reports.iter().filter(|r| !r.complete || r.lost > 0).count();
    if incomplete > 0 {
        eprintln!(
            "{ME}: {incomplete} of {} rates were incomplete or lost messages (see their reports)",
            reports.len()
        );
    }
    let complete = ok && incomplete == 0 && points.len() == rates.len();
    Ok(SweepOutcome {
        points,
        highest_met_rate: best,
        complete,
    })
}

/// One rate's line of the table, printed, and its point: whether it met the target (achieved
/// at least 99% of the offered rate, complete, nothing lost, p99 within `--p99-target`).
fn row(s: &Sweep, rate: u64, r: &Report) -> SweepPoint {
    let l = r.latency_ns;
    let met = r.lost == 0
        && r.complete
        && r.rate_achieved >= 0.99 * rate as f64
        && s.p99_target_us.is_none_or(|t| l.p99 as f64 <= t * 1000.0);
    println!(
        "{:>12} {:>12.0} {:>10} {:>10} {:>10} {:>6}  {}",
        rate,
        r.rate_achieved,
        format_ns(l.p50),
        format_ns(l.p99),
        format_ns(l.p999),
        r.lost,
        if met { "yes" } else { "no" }
    );
    SweepPoint {
        rate_target: rate as f64,
        rate_achieved: r.rate_achieved,
        p50_ns: l.p50,
        p99_ns: l.p99,
        p999_ns: l.p999,
        met_target: met,
    }
}

/// The probe at one rate: its report, or none (said on stderr) when it left none.
fn one_rate(s: &Sweep, rate: u64) -> Result<Option<Report>, SweepError> {
    let json = s.out.join(format!("rate-{rate}.json"));
    let _ = std::fs::remove_file(&json);
    let mut child = std::process::Command::new(&s.probe)
        .args([
            "--rate",
            &rate.to_string(),
            "--duration",
            &s.duration_s.to_string(),
            "--quiet",
            "--json",
        ])
        .arg(&json)
        .args(&s.probe_args)
        .spawn()
        .map_err(|source| SweepError::Start {
            probe: s.probe.clone(),
            source,
        })?;
    // Ctrl-C: the run stops with its partial report (handed SIGINT when only sweep got one).
    let status = wait_for_run(&mut child, INTERRUPTED_PROBE_GRACE);
    let report: Option<Report> = std::fs::read(&json).ok().and_then(|b| serde_json::from_slice(&b).ok());
    if report.is_none() {
        if status.and_then(|s| s.code()) == Some(EXIT_REFUSED) {
            return Err(SweepError::Refused { rate });
        }
        let exit = exit_words(status);
        eprintln!("{ME}: no report at {rate} msg/s ({exit}); skipped");
    }
    Ok(report)
}

/// sweep.csv, sweep.json and sweep.svg (of `planned` rates; `cut_short`: how many ran before
/// an interrupt); false (after a one-line cause each) when one failed.
fn write_files(
    s: &Sweep,
    (planned, cut_short): (usize, Option<usize>),
    (points, reports): (&[SweepPoint], &[Report]),
    best: Option<f64>,
    target: &str,
) -> bool {
    let mut csv = String::from("rate_target,rate_achieved,p50_ns,p99_ns,p999_ns,lost,met_target\n");
    for (p, r) in points.iter().zip(reports) {
        csv.push_str(&format!(
            "{:.0},{:.1},{},{},{},{},{}\n",
            p.rate_target, p.rate_achieved, p.p50_ns, p.p99_ns, p.p999_ns, r.lost, p.met_target
        ));
    }
    let csv_path = s.out.join("sweep.csv");
    let svg = s.out.join("sweep.svg");
    let json = s.out.join("sweep.json");
    let summary = serde_json::json!({
        "target": target,
        "highest_met_rate": best,
        "timing_model": crate::sys::clock::TIMING_MODEL,
        "rates_planned": planned,
        "points": points.iter().zip(reports).map(|(p, r)| serde_json::json!({
            "rate_target": p.rate_target, "rate_achieved": p.rate_achieved, "p50_ns": p.p50_ns,
            "p99_ns": p.p99_ns, "p999_ns": p.p999_ns, "lost": r.lost, "met_target": p.met_target,
            "complete": r.complete,
        })).collect::<Vec<_>>(),
    });
    let mut ok = true;
    if let Err(e) = crate::render::files::write_atomically(&csv_path, |out| out.write_all(csv.as_bytes())) {
        eprintln!("{ME}: could not write {}: {e}", csv_path.display());
        ok = false;
    }
    if let Err(e) = crate::render::files::write_json(&summary, &json) {
        eprintln!("{ME}: could not write {}: {e}", json.display());
        ok = false;
    }
    let mut title = format!(
        "latency against offered load: {} {} B",
        reports[0].mode.as_str(),
        reports[0].msg_size
    );
    if let Some(n) = cut_short {
        title.push_str(&format!(" (cut short: {n} of {planned} rates ran)"));
    }
    if let Err(e) = sweep_svg(points, Some(target), &title, &svg) {
        eprintln!("{ME}: could not draw {}: {e}", svg.display());
        ok = false;
    }
    eprintln!(
        "{ME}: wrote {}/: sweep.json sweep.csv sweep.svg rate-*.json",
        s.out.display()
    );
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sweep_with(probe: &str, out: PathBuf) -> Sweep {
        Sweep {
            probe: PathBuf::from(probe),
            rates: vec![20_000, 10_000, 20_000],
            duration_s: 0.1,
            p99_target_us: None,
            out,
            probe_args: Vec::new(),
        }
    }

    #[test]
    fn a_probe_that_cannot_run_is_a_setup_error_naming_it() {
        let out = std::env::temp_dir().join(format!("latency-probe-sweep-test-{}", std::process::id()));
        let e = sweep(&sweep_with("/nonexistent/latency-probe", out.clone())).unwrap_err();
        let _ = std::fs::remove_dir_all(&out);
        assert!(e.is_setup());
        let line = e.to_string();
        assert!(
            line.starts_with("could not run /nonexistent/latency-probe: ")
                && line.ends_with("; run sweep from the latency-probe binary itself"),
            "{line}"
        );
    }

    #[test]
    fn rates_that_leave_no_report_are_skipped_and_then_nothing_is_left() {
        let out = std::env::temp_dir().join(format!("latency-probe-sweep-none-{}", std::process::id()));
        // `false` runs, writes no report and exits 1: each rate is skipped.
        let e = sweep(&sweep_with("false", out.clone())).unwrap_err();
        let _ = std::fs::remove_dir_all(&out);
        assert!(!e.is_setup());
        assert_eq!(
            e.to_string(),
            "no rate produced a report (see the errors above); try lower --rates or a longer --duration"
        );
    }
}
