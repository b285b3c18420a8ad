//! `latency-pub`'s command line: its flags, their checks, and the run.

use super::args::{pub_config, DiagnosticsArgs, ModeArgs, OutputArgs, RunArgs, StreamArgs};
use super::validate::{check_core, dir_or_default, parse_idle, seconds};
use super::Failure;
use crate::model::{Env, PubReport, DRIVER_EXTERNAL, UNKNOWN};
use crate::render::text::render_text;
use crate::run::publisher;
use crate::units::format_ns;
use clap::Parser;

/// The program's name in its messages.
pub const PROGRAM: &str = "latency-pub";

/// Publish Cap'n Proto timestamped messages over Aeron at a fixed rate, busy-spinning on
/// CLOCK_MONOTONIC; every message carries its intended and actual send time. Ends with an
/// end-of-run marker carrying the number sent. With --mode rtt it is ping: after each message it
/// waits for latency-sub's echo on --pong-stream and reports the round trips. Ctrl-C ends the
/// run with the end marker sent and the report written, marked incomplete.
#[allow(
    rustdoc::broken_intra_doc_links,
    rustdoc::invalid_html_tags,
    reason = "the doc comments are the --help texts: `sleep-ns[:N]`, `<pid>`"
)]
#[derive(Debug, Parser)]
#[command(name = "latency-pub", version)]
pub struct Args {
    /// Where the driver is and which stream to use.
    #[command(flatten)]
    pub stream: StreamArgs,
    /// Duration, rate, message size, warm-up.
    #[command(flatten)]
    pub run: RunArgs,
    /// One-way or round trip.
    #[command(flatten)]
    pub mode: ModeArgs,
    /// Seconds to wait for a subscriber before giving up
    #[arg(long, default_value_t = 10.0, allow_negative_numbers = true)]
    pub wait: f64,
    /// Pin the sending thread to this core
    #[arg(long, allow_negative_numbers = true)]
    pub core: Option<usize>,
    /// Idle strategy while an offer is retried: spin, noop, yield, sleep-ns[:N], backoff
    #[arg(long, default_value = "spin", value_parser = parse_idle)]
    pub idle: aeron_latency::messaging::IdleStrategy,
    /// Jitter diagnostics.
    #[command(flatten)]
    pub diagnostics: DiagnosticsArgs,
    /// `--json`, `--quiet`.
    #[command(flatten)]
    pub out: OutputArgs,
    /// Write each measured message's send lag (actual send time less intended, ns) to this
    /// file: one little-endian u32 per message (4294967295: 4.29 s or later), in send order;
    /// held in memory during the run, 4 bytes per message (`latency-probe stages` times the
    /// archive stages from the actual send time with it)
    #[arg(long = "send-lags", value_name = "FILE")]
    pub send_lags: Option<std::path::PathBuf>,
    /// A planted delay.
    #[command(flatten)]
    pub plant: crate::cli::args::PlantArgs,
}

/// The publisher's summary (one-way mode): what it sent, at what rate, and what publishing
/// cost.
#[must_use]
pub fn summary(r: &PubReport) -> String {
    let offers: Vec<String> = r
        .offer
        .iter()
        .filter(|(_, v)| **v > 0)
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let mut s = format!(
        "latency-pub: sent {} ({} warm-up + {} measured of {} planned), end marker {}; {} sent before a subscriber \
         connected (it waits up to --wait for one)\n\
         rate: target {:.0} msg/s, achieved {:.1} msg/s over {:.2} s\n\
         offer outcomes: {}\n\
         largest lag behind schedule: {}\n\
         publish-only cost (claim+encode+commit): p50 {} p99 {} p99.9 {} max {}\n",
        r.sent,
        r.warmup_sent,
        r.measured_sent,
        r.planned,
        if r.end_marker_sent { "sent" } else { "NOT sent" },
        r.sent_before_connected,
        r.rate_target,
        r.rate_achieved,
        r.duration_s,
        if offers.is_empty() {
            "none recorded".to_owned()
        } else {
            offers.join(", ")
        },
        format_ns(r.max_lag_ns),
        format_ns(r.publish_cost_ns.p50),
        format_ns(r.publish_cost_ns.p99),
        format_ns(r.publish_cost_ns.p999),
        format_ns(r.publish_cost_ns.max),
    );
    for n in &r.notes {
        s.push_str(&format!("warning: {n}\n"));
    }
    if let Some(j) = &r.jitter {
        s.push_str(&crate::render::jitter::render(j, &[]));
    }
    s
}

/// latency-pub: checks every flag before anything starts, publishes, prints and writes the
/// report (ping's round-trip report in rtt mode).
///
/// # Errors
/// Bad input or an unusable setup ([`EXIT_SETUP`](super::EXIT_SETUP)); the run stopped early
/// or lost echoes, or the JSON could not be written ([`EXIT_INCOMPLETE`](super::EXIT_INCOMPLETE)).
pub fn publish(a: &Args) -> Result<(), Failure> {
    a.run.validate()?;
    a.plant.validate()?;
    let wait = seconds("--wait", a.wait)?;
    check_core("--core", a.core)?;
    a.stream.validate()?;
    let pong = a.mode.pong(&a.stream)?;
    a.out.validate()?;
    if let Some(p) = &a.send_lags {
        super::validate::output_file("--send-lags", p)?;
    }
    a.stream.check_driver()?;
    // Ctrl-C or SIGTERM ends the run with its end marker sent and its report written.
    super::exit::catch_interrupts()?;
    let dir = dir_or_default(a.stream.dir.clone());
    let mut cfg = pub_config(&a.stream, &a.run, dir, wait, a.core, a.idle.clone());
    cfg.diagnostics = a.diagnostics.diagnostics;
    cfg.prefault = !a.mode.no_prefault;
    cfg.explain = a.diagnostics.explain;
    cfg.pong = pong;
    cfg.publication = a.mode.publication;
    cfg.keep_lags = a.send_lags.is_some();
    cfg.plant_delay_ns = a.plant.plant_delay_ns;
    let run = publisher::run(&cfg).map_err(Failure::setup)?;
    let r = &run.report;
    // Written before the report, which is still emitted when this fails (then exit 1).
    let lags_written = match &a.send_lags {
        Some(p) => {
            let bytes: Vec<u8> = run.lags.iter().flat_map(|l| l.to_le_bytes()).collect();
            crate::render::files::write_atomically(p, |out| out.write_all(&bytes))
                .map_err(|e| Failure::incomplete(format!("could not write --send-lags {}: {e}", p.display())))
        }
        None => Ok(()),
    };
    a.diagnostics.write_raw(PROGRAM, r.raw_jitter.as_ref());
    if let Some(report) = publisher::rtt_report(&run, Env::detect().with_driver(DRIVER_EXTERNAL, UNKNOWN)) {
        a.out.emit(&render_text(&report, a.out.view()), &report)?;
        lags_written?;
        if !report.complete || report.lost > 0 {
            return Err(Failure::incomplete(format!(
                "incomplete: {}",
                report.incomplete_reason.as_deref().unwrap_or("echoes lost")
            )));
        }
        return Ok(());
    }
    a.out.emit(&summary(r), r)?;
    lags_written?;
    if !r.complete {
        return Err(Failure::incomplete(format!(
            "incomplete: {}",
            r.incomplete_reason.as_deref().unwrap_or("stopped early")
        )));
    }
    Ok(())
}
