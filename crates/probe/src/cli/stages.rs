//! `latency-probe stages`: seed 004's comparison on Aeron, one command.

use super::{Failure, UsageError};
use crate::model::{StagesReport, SyncRun};
use crate::run::archive::Java;
use crate::run::stages::StagesPlan;
use crate::run::trial::Trial;
use crate::units::format_ns;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

/// Aeron Archive's default low-storage threshold (one 128 MiB segment): it refuses to start a
/// recording with less free space than that.
pub const LOW_STORAGE_THRESHOLD: u64 = 128 << 20;

/// Program name in messages.
pub const STAGES: &str = "latency-probe stages";

/// `latency-probe stages`.
#[allow(
    rustdoc::broken_intra_doc_links,
    reason = "the doc comments are the --help texts: `sleep-ns[:N]`"
)]
#[derive(Debug, Clone, clap::Args)]
pub struct StagesArgs {
    /// Archive file sync levels to run, one run each, in order: 0 (page cache), 1 (fsync the
    /// data), 2 (fsync data and metadata)
    #[arg(long, value_delimiter = ',', default_value = "0,1")]
    pub sync: Vec<u8>,
    /// Add archive B (its own driver and directories) replicating archive A's recording live
    #[arg(long)]
    pub replicate: bool,
    /// one-way; or rtt: latency-sub echoes every message on stream 1002 and latency-pub waits
    /// for each echo (one message in flight), adding the stage "echoed back"
    #[arg(long, default_value = "one-way")]
    pub mode: crate::model::RunMode,
    /// Measured seconds per sync level (after the warm-up)
    #[arg(long, default_value_t = 3.0)]
    pub duration: f64,
    /// Messages per second
    #[arg(long, default_value_t = 10_000)]
    pub rate: u64,
    /// Encoded message size in bytes (a multiple of 8, at least 32; below 64, compact samples)
    #[arg(long = "msg-size", default_value_t = 64)]
    pub msg_size: usize,
    /// Warm-up messages sent first and left out (they also give the archives time to start
    /// recording)
    #[arg(long, default_value_t = 5_000)]
    pub warmup: u64,
    /// Idle strategy of the hot threads: the JVM of each archive needs CPU time too, so the
    /// default does not spin (spin, noop, yield, sleep-ns[:N], backoff)
    #[arg(long, default_value = "backoff")]
    pub idle: aeron_latency::messaging::IdleStrategy,
    /// UDP port of archive A's control channel on 127.0.0.1; the next three ports are A's
    /// replication channel and archive B's two
    #[arg(long = "control-port", default_value_t = 18_010)]
    pub control_port: u16,
    /// Directory the archives record into (each run makes its own directory inside and removes
    /// it): put it on the disk whose fsync you mean to measure [default: the temp directory]
    #[arg(long = "archive-dir", value_name = "DIR")]
    pub archive_dir: Option<PathBuf>,
    /// What the stage watcher sleeps between its reads of the recording positions, µs
    #[arg(long = "watch-sleep-us", default_value_t = 20)]
    pub watch_sleep_us: u64,
    /// IPC term length of the archives' media drivers
    #[arg(long = "term-length", default_value_t = 4 << 20)]
    pub term_length: usize,
    /// Write the report as JSON to this file
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write report.json, one .hgrm per stage and sync level, and one SVG per sync level (one
    /// percentile curve per stage) into this directory
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `--archive-dir` (default: the temp dir), checked to be a directory with room for what one
/// sync level records.
///
/// # Errors
/// Not a directory, or too little free space, in one line with the fix.
fn check_archive_dir(a: &StagesArgs, run: &super::args::RunArgs) -> Result<PathBuf, Failure> {
    let archive_dir = a.archive_dir.clone().unwrap_or_else(std::env::temp_dir);
    if !archive_dir.is_dir() {
        return Err(UsageError::new(format!(
            "--archive-dir {}: not a directory; create it (mkdir -p {}) or pick another",
            archive_dir.display(),
            archive_dir.display()
        ))
        .into());
    }
    // What one sync level records per archive (its fresh archives are removed before the
    // next), plus the free space Aeron Archive insists on before it starts a recording.
    let archives: u64 = if a.replicate { 2 } else { 1 };
    let frame = crate::analysis::tuning::frame_bytes(a.msg_size as u64);
    let need = archives
        .saturating_mul(run.total_messages())
        .saturating_mul(frame)
        .saturating_add(LOW_STORAGE_THRESHOLD);
    if let Some(free) = crate::sys::doctor::free_bytes(&archive_dir) {
        if free < need {
            return Err(Failure::setup(crate::run::archive::ArchiveError::NoSpace {
                dir: archive_dir,
                need,
                free,
            }));
        }
    }
    Ok(archive_dir)
}

/// Checks the flags and finds Java.
///
/// # Errors
/// The first bad flag or missing piece, in one line.
pub fn check(a: &StagesArgs) -> Result<StagesPlan, Failure> {
    if a.sync.is_empty() || a.sync.iter().any(|s| *s > 2) {
        return Err(UsageError::new(format!("--sync {:?}: give levels 0, 1 or 2, e.g. --sync 0,1", a.sync)).into());
    }
    if a.control_port > u16::MAX - 3 || a.control_port < 1024 {
        return Err(UsageError::new(format!(
            "--control-port {}: give a port from 1024 to 65532 (the next three are used too)",
            a.control_port
        ))
        .into());
    }
    // The probe's own client maps the stream's logs: messaging's limit, as --term-length of a run.
    if let Err(e) = aeron_latency::messaging::check_term_length(a.term_length) {
        return Err(UsageError::new(format!("--term-length {}: {e}", a.term_length)).into());
    }
    let run = super::args::RunArgs {
        duration: a.duration,
        rate: a.rate,
        msg_size: a.msg_size,
        warmup: a.warmup,
    };
    run.validate()?;
    let archive_dir = check_archive_dir(a, &run)?;
    let java = Java::find().map_err(Failure::setup)?;
    let (sub_core, pub_core) = crate::run::process::default_cores();
    Ok(StagesPlan {
        trial: Trial {
            channel: "aeron:ipc".into(),
            stream: 1001,
            pong: (a.mode == crate::model::RunMode::Rtt).then(|| crate::run::PongPath {
                channel: "aeron:ipc".into(),
                stream: 1002,
            }),
            publication: crate::model::PublicationKind::Exclusive,
            duration_s: a.duration,
            rate: a.rate,
            msg_size: a.msg_size,
            warmup: a.warmup,
            wait_s: 30.0,
            idle: a.idle.clone(),
            delivery: crate::run::Delivery::Inline,
            hot_path_lock: false,
            plant_helper: false,
            prefault: true,
            explain: crate::model::Explain::default(),
            diagnostics: crate::model::Mode::Off,
            live: false,
            sub_core,
            pub_core,
            hiccup: crate::measure::hiccup::HiccupRequest::Off,
            available: aeron_latency::messaging::available_cores(),
            floor: Duration::ZERO,
            bin_dir: crate::run::process::bin_dir(),
            send_lags: true,
            plant_delay_ns: 0,
        },
        syncs: a.sync.clone(),
        replicate: a.replicate,
        java,
        control_port: a.control_port,
        archive_dir,
        watch_sleep: Duration::from_micros(a.watch_sleep_us),
        term_length: a.term_length,
    })
}

/// `latency-probe stages`: runs, prints the table, writes the files. Exit 0 when every run is
/// complete.
///
/// # Errors
/// Bad input or no Java (exit 2); an archive that failed, a run incomplete or a file not
/// written (exit 1, after printing what was measured).
pub fn stages(a: &StagesArgs) -> Result<(), Failure> {
    let plan = check(a)?;
    // Ctrl-C or SIGTERM must not leave archives or their directories behind: note it, stop,
    // clean up, report what was measured.
    super::exit::catch_interrupts()?;
    let (report, failure) = crate::run::stages::run(&plan);
    print!("{}", text(&report));
    let written = write(a, &report);
    if let Some(e) = failure {
        let partial = if report.runs.is_empty() {
            String::new()
        } else {
            " (what was measured is reported above)".to_owned()
        };
        return match e {
            crate::run::stages::StagesError::Archive(
                crate::run::archive::ArchiveError::NoJava
                | crate::run::archive::ArchiveError::NoJar { .. }
                | crate::run::archive::ArchiveError::PortBusy { .. }
                | crate::run::archive::ArchiveError::Start { .. }
                | crate::run::archive::ArchiveError::NotReady { .. },
            ) if report.runs.is_empty() => Err(Failure::setup(e)),
            _ => Err(Failure::incomplete(format!("{e}{partial}"))),
        };
    }
    written?;
    if !report.complete {
        return Err(Failure::incomplete(
            "a stage did not time every measured message (see the notes above)",
        ));
    }
    Ok(())
}

fn write(a: &StagesArgs, r: &StagesReport) -> Result<(), Failure> {
    let fail = |what: &std::path::Path, e: std::io::Error| {
        Failure::incomplete(format!("could not write {}: {e}", what.display()))
    };
    if let Some(p) = &a.json {
        crate::render::files::write_json(r, p).map_err(|e| fail(p, e))?;
    }
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir).map_err(|e| fail(dir, e))?;
        let p = dir.join("report.json");
        crate::render::files::write_json(r, &p).map_err(|e| fail(&p, e))?;
        for run in &r.runs {
            for actual in [false, true] {
                let suffix = if actual { "-actual" } else { "" };
                let mut series = Vec::new();
                for s in &run.stages {
                    let encoded = if actual {
                        match &s.actual {
                            Some(a) => &a.histogram,
                            None => continue,
                        }
                    } else {
                        &s.intended.histogram
                    };
                    let Ok(h) = crate::model::decode(encoded) else {
                        continue;
                    };
                    let p = dir.join(format!("sync-{}-{}{suffix}.hgrm", run.sync, s.stage.replace(' ', "-")));
                    crate::render::files::write_atomically(&p, |out| crate::render::hgrm::write_hgrm(&h, out, 1000.0))
                        .map_err(|e| fail(&p, e))?;
                    series.push((s.stage.clone(), h));
                }
                if series.is_empty() {
                    continue;
                }
                let p = dir.join(format!("stages-sync-{}{suffix}.svg", run.sync));
                let refs: Vec<(&str, &hdrhistogram::Histogram<u64>)> =
                    series.iter().map(|(n, h)| (n.as_str(), h)).collect();
                let from = if actual { "actual" } else { "intended" };
                crate::render::svg::spectrum_svg(
                    &refs,
                    &format!(
                        "latency at each durability stage from the {from} send time, archive sync level {}",
                        run.sync
                    ),
                    &p,
                )
                .map_err(|e| Failure::incomplete(format!("could not draw {}: {e}", p.display())))?;
            }
        }
    }
    Ok(())
}

/// The report as text: per sync level, a row per stage.
#[must_use]
pub fn text(r: &StagesReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "latency-probe stages: {} B messages at {} msg/s, {}",
        r.msg_size, r.rate, r.archive
    );
    let _ = writeln!(o, "timing model: {}", r.timing_model);
    for run in &r.runs {
        table(&mut o, run);
    }
    o
}

fn table(o: &mut String, run: &SyncRun) {
    let _ = writeln!(
        o,
        "\nsync level {} ({}){}{}: {} measured messages at {:.0} msg/s{}",
        run.sync,
        match run.sync {
            0 => "page cache",
            1 => "fsync data",
            _ => "fsync data and metadata",
        },
        if run.replicated { ", archive B replicating" } else { "" },
        if run.rtt { ", round trips" } else { "" },
        run.measured,
        run.rate_achieved,
        if run.complete { "" } else { ", INCOMPLETE" }
    );
    let rows: Vec<Row<'_>> = run
        .stages
        .iter()
        .map(|s| {
            (
                s.stage.as_str(),
                s.intended.count,
                &s.intended.latency_ns,
                s.intended.added_p50_ns,
                s.intended.in_flight,
            )
        })
        .collect();
    rows_table(
        o,
        "from the intended send time (the schedule: the publisher's own lateness included)",
        &rows,
    );
    let actual: Vec<Row<'_>> = run
        .stages
        .iter()
        .filter_map(|s| {
            let a = s.actual.as_ref()?;
            Some((s.stage.as_str(), a.count, &a.latency_ns, a.added_p50_ns, a.in_flight))
        })
        .collect();
    if !actual.is_empty() {
        rows_table(
            o,
            "from the actual send time (the publisher's lateness left out)",
            &actual,
        );
    }
    let w = &run.watcher;
    let _ = writeln!(
        o,
        "  watcher: {} reads, sleeping {} between them; gap between reads p50 {} p99 {} max {} (the recorded \
         stages' resolution); its CPU time {}",
        w.reads,
        format_ns(w.sleep_ns),
        format_ns(w.gap_ns.p50),
        format_ns(w.gap_ns.p99),
        format_ns(w.gap_ns.max),
        format_ns(w.cpu_ns)
    );
    let _ = writeln!(
        o,
        "  +p50 = the p50 added over the stage it follows: received and recorded by A each follow offer returned \
         (two readers of one log, not ordered between them), echoed back follows received, B follows A"
    );
    let _ = writeln!(
        o,
        "  in flight = achieved rate x mean latency at the stage (Little's law): the messages a service that waits \
         for that stage holds at once"
    );
    for n in &run.notes {
        let _ = writeln!(o, "  note: {n}");
    }
}

/// One row of a stage table: stage, count, latency, added p50, in flight.
type Row<'a> = (&'a str, u64, &'a crate::model::Stats, Option<i64>, f64);

fn rows_table(o: &mut String, title: &str, rows: &[Row<'_>]) {
    let _ = writeln!(o, "  {title}");
    let _ = writeln!(
        o,
        "  {:<24} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>11} {:>10}",
        "stage", "count", "p50", "p90", "p99", "p99.9", "max", "+p50", "in flight"
    );
    for (stage, count, l, added, in_flight) in rows {
        if *count == 0 {
            // An interrupted level, or a recording that never held a measured message.
            let _ = writeln!(
                o,
                "  {:<24} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>11} {:>10}",
                stage, 0, "-", "-", "-", "-", "-", "-", "-"
            );
            continue;
        }
        let _ = writeln!(
            o,
            "  {:<24} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>11} {:>10.2}",
            stage,
            count,
            format_ns(l.p50),
            format_ns(l.p90),
            format_ns(l.p99),
            format_ns(l.p999),
            format_ns(l.max),
            added.map_or("-".to_owned(), |d| if d < 0 {
                format!("-{}", format_ns(d.unsigned_abs()))
            } else {
                format!("+{}", format_ns(d as u64))
            }),
            in_flight
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_that_timed_nothing_prints_dashes_not_zero_latencies() {
        let l = crate::model::Stats {
            p50: 4_000,
            p90: 5_000,
            p99: 6_000,
            p999: 7_000,
            max: 8_000,
            ..Default::default()
        };
        let none = crate::model::Stats::default();
        let rows: Vec<Row<'_>> = vec![
            ("received", 10, &l, Some(3_000), 0.5),
            ("recorded by archive A", 0, &none, None, 0.0),
        ];
        let mut o = String::new();
        rows_table(&mut o, "t", &rows);
        let lines: Vec<Vec<&str>> = o.lines().map(|l| l.split_whitespace().collect()).collect();
        assert_eq!(
            lines[2][1..],
            ["10", "4000", "ns", "5000", "ns", "6000", "ns", "7000", "ns", "8000", "ns", "+3000", "ns", "0.50"]
        );
        assert_eq!(lines[3][4..], ["0", "-", "-", "-", "-", "-", "-", "-"], "{o}");
    }
}
