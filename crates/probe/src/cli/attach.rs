//! `latency-probe attach`: a running service's threads watched for `--duration`, its flags
//! and their checks.

use std::path::PathBuf;
use std::time::Duration;

use super::Failure;
use crate::model::Mode;
use crate::run::attach::{attach as watch, find, TapChoice, Watch};
use crate::run::service_tap::{find_dir, Pick, ServiceTap};

/// `latency-probe attach`'s name in its messages.
pub const ATTACH: &str = "latency-probe attach";

/// The longest watch, seconds (a day).
const MAX_DURATION_S: f64 = 86_400.0;

/// `latency-probe attach`.
#[derive(Debug, Clone, clap::Args)]
pub struct AttachArgs {
    /// The process to watch (its pid as this host sees it)
    #[arg(long)]
    pub pid: u32,
    /// Watch these threads as the service's, by name, comma-separated (Linux keeps the first 15
    /// bytes of a name; a longer one matches those); default: with a tap, the figure's
    /// recording threads, else every thread
    #[arg(long, value_delimiter = ',')]
    pub threads: Vec<String>,
    /// How long to watch, seconds (20 time-ordered groups of a twentieth each); Ctrl-C ends it
    /// early with the report so far
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Counters: auto (perf where permitted, else /proc), perf (or fail), proc
    #[arg(long, default_value = "auto")]
    pub diagnostics: Mode,
    /// The service's tap directory (its tap.json); default: the directory of the tap logs the
    /// process holds open, if any. With a tap, the verdict explains the service's own latency
    #[arg(long)]
    pub tap: Option<PathBuf>,
    /// The tap's figure to explain; default: the first one a watched thread records (without
    /// --threads: the figure's recording threads are the ones watched)
    #[arg(long, conflicts_with = "stream")]
    pub hop: Option<String>,
    /// The tap's figure to explain by the stream its subscriptions read (a hop), instead of
    /// --hop
    #[arg(long)]
    pub stream: Option<i32>,
    /// The band of the figure the headline explains: p90, p99, p99.9 or max (p99: p90-p99)
    #[arg(long, default_value = "p99")]
    pub explain: crate::model::Explain,
    /// Also write the report as JSON to this file
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// `latency-probe attach`: finds the process and its threads, watches them, prints the
/// report (and writes `--json`).
///
/// # Errors
/// A bad flag, no such process or thread, perf refused with `--diagnostics perf`: one line,
/// exit 2. The process ended while watched, attach was interrupted (Ctrl-C, SIGTERM), or the
/// JSON could not be written: the report so far, then one line, exit 1.
pub fn attach(a: &AttachArgs) -> Result<(), Failure> {
    if !(a.duration > 0.0 && a.duration <= MAX_DURATION_S) {
        return Err(Failure::setup(format!(
            "--duration {}: give seconds above 0, at most {MAX_DURATION_S} (a day)",
            a.duration
        )));
    }
    if a.diagnostics == Mode::Off {
        return Err(Failure::setup(
            "--diagnostics off: attach has nothing to report without counters; use auto, perf or proc",
        ));
    }
    let tap = match a.tap.clone().or_else(|| find_dir(a.pid)) {
        Some(dir) => Some(ServiceTap::open(&dir, a.pid).map_err(Failure::setup)?),
        None if a.hop.is_some() || a.stream.is_some() => {
            return Err(Failure::setup(format!(
                "--{}: process {} holds no tap logs open; give its tap's directory with --tap",
                if a.hop.is_some() { "hop" } else { "stream" },
                a.pid
            )))
        }
        None => None,
    };
    let mut target = find(a.pid, &a.threads).map_err(Failure::setup)?;
    let choice = match &tap {
        Some(t) => {
            let tids: Vec<i32> = if a.threads.is_empty() {
                Vec::new()
            } else {
                target.threads.iter().map(|t| t.tid).collect()
            };
            let pick = match (&a.hop, a.stream) {
                (Some(name), _) => Pick::Named(name),
                (None, Some(stream)) => Pick::Stream(stream),
                (None, None) => Pick::RecordedBy(&tids),
            };
            let figure = t.figure(pick).map_err(Failure::setup)?.clone();
            if a.threads.is_empty() {
                // The threads that handled the figure's messages are the ones to watch.
                target.threads.retain(|t| figure.recording_tids.contains(&t.tid));
            }
            Some(TapChoice { tap: t.clone(), figure })
        }
        None => None,
    };
    if let (true, Some(c)) = (target.threads.is_empty(), &choice) {
        return Err(Failure::setup(format!(
            "figure {}: no thread of process {} records it now; name the threads with --threads",
            c.figure.name, a.pid
        )));
    }
    let how = Watch {
        duration: Duration::from_secs_f64(a.duration),
        mode: a.diagnostics,
        tap: choice.as_ref(),
        explain: a.explain,
    };
    // Ctrl-C or SIGTERM ends the window early: the report covers what was watched until then.
    super::exit::catch_interrupts()?;
    let report = watch(&target, how).map_err(Failure::setup)?;
    print!("{}", crate::render::attach::text(&report));
    if let Some(path) = &a.json {
        let json = serde_json::to_string_pretty(&report).map_err(|e| Failure::incomplete(e.to_string()))?;
        std::fs::write(path, json + "\n").map_err(|e| {
            Failure::incomplete(format!(
                "--json {}: {e}; give a path in a writable directory (the report is printed above)",
                path.display()
            ))
        })?;
    }
    match &report.incomplete_reason {
        Some(why) => Err(Failure::incomplete(format!("{why}; the report so far is above"))),
        None => Ok(()),
    }
}
