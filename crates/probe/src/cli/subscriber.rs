//! `latency-sub`'s command line: its flags, their checks, and the run.

use super::args::{sub_config, DeliveryArgs, DiagnosticsArgs, ModeArgs, OutDirArgs, OutputArgs, StreamArgs};
use super::validate::{check_core, dir_or_default, parse_idle, seconds};
use super::{Failure, UsageError};
use crate::model::{Env, DRIVER_EXTERNAL, UNKNOWN};
use crate::render::text::render_text;
use crate::run::subscriber;
use clap::Parser;

/// The program's name in its messages.
pub const PROGRAM: &str = "latency-sub";

/// Receive latency-pub's messages over Aeron and report the latency distribution
/// (CLOCK_MONOTONIC, from the intended and from the actual send time) overall and in 20
/// time-ordered groups, with lost / duplicated / reordered / undecodable counts. With --mode rtt
/// it is pong: it echoes every message on --pong-stream first, then measures it. Ctrl-C ends the
/// run with the report written (what arrived until then), marked incomplete.
#[allow(
    rustdoc::broken_intra_doc_links,
    rustdoc::invalid_html_tags,
    reason = "the doc comments are the --help texts: `sleep-ns[:N]`, `<pid>`"
)]
#[derive(Debug, Parser)]
#[command(name = "latency-sub", version)]
pub struct Args {
    /// Where the driver is and which stream to use.
    #[command(flatten)]
    pub stream: StreamArgs,
    /// One-way or round trip.
    #[command(flatten)]
    pub mode: ModeArgs,
    /// Stop after this many messages (warm-up included); the publisher's end marker suffices
    #[arg(long, allow_negative_numbers = true)]
    pub total: Option<u64>,
    /// Give up after this many seconds (the report is still written, marked incomplete)
    #[arg(long, default_value_t = 60.0, allow_negative_numbers = true)]
    pub timeout: f64,
    /// Pin the receiving thread to this core
    #[arg(long, allow_negative_numbers = true)]
    pub core: Option<usize>,
    /// Idle strategy between empty polls: spin, noop, yield, sleep-ns[:N], backoff
    #[arg(long, default_value = "spin", value_parser = parse_idle)]
    pub idle: aeron_latency::messaging::IdleStrategy,
    /// Delivery and planted jitter.
    #[command(flatten)]
    pub delivery: DeliveryArgs,
    /// Jitter diagnostics.
    #[command(flatten)]
    pub diagnostics: DiagnosticsArgs,
    /// A line on stderr once a second while receiving: messages so far, the highest sequence,
    /// the p99 of the last 4,096: auto (when stdout is a terminal), on, off
    #[arg(long, default_value = "auto")]
    pub live: crate::run::live::LiveMode,
    /// `--json`, `--quiet`.
    #[command(flatten)]
    pub out: OutputArgs,
    /// `--out DIR`.
    #[command(flatten)]
    pub out_dir: OutDirArgs,
}

/// latency-sub: checks every flag before anything starts, receives, prints and writes the
/// report.
///
/// # Errors
/// Bad input or an unusable setup ([`EXIT_SETUP`](super::EXIT_SETUP)); messages were lost, the
/// run stopped early, or the report could not be written
/// ([`EXIT_INCOMPLETE`](super::EXIT_INCOMPLETE)).
pub fn subscribe(a: &Args) -> Result<(), Failure> {
    let timeout = seconds("--timeout", a.timeout)?;
    // Ctrl-C or SIGTERM ends the run with its report written, marked incomplete.
    super::exit::catch_interrupts()?;
    if timeout.is_zero() {
        return Err(UsageError::new(
            "--timeout 0 gives up before anything arrives; give the seconds to wait, e.g. --timeout 60",
        )
        .into());
    }
    if a.total == Some(0) {
        return Err(UsageError::new(
            "--total 0 stops before the first message; give at least 1, or leave it out (the publisher's end \
             marker ends the run)",
        )
        .into());
    }
    check_core("--core", a.core)?;
    a.stream.validate()?;
    let echo = a.mode.pong(&a.stream)?;
    a.out.validate()?;
    a.out_dir.validate()?;
    a.stream.check_driver()?;
    let dir = dir_or_default(a.stream.dir.clone());
    let mut cfg = sub_config(&a.stream, dir, a.total, timeout, a.core, a.idle.clone());
    cfg.delivery = a.delivery.delivery;
    cfg.live = a.live.enabled();
    cfg.hot_path_lock = a.delivery.hot_path_lock;
    cfg.plant_helper = a.delivery.plant_helper;
    cfg.prefault = !a.mode.no_prefault;
    cfg.explain = a.diagnostics.explain;
    cfg.diagnostics = a.diagnostics.diagnostics;
    cfg.echo = echo;
    cfg.publication = a.mode.publication;
    let out = subscriber::run(&cfg).map_err(Failure::setup)?;
    a.diagnostics.write_raw(PROGRAM, out.raw_jitter().as_ref());
    let report = subscriber::to_report(&out, Env::detect().with_driver(DRIVER_EXTERNAL, UNKNOWN), out.msg_size);
    a.out.emit(&render_text(&report, a.out.view()), &report)?;
    let out_ok = a.out_dir.write(PROGRAM, &report);
    if !report.complete || report.lost > 0 {
        if let Some(why) = &report.incomplete_reason {
            eprintln!("{PROGRAM}: incomplete: {why}");
        }
        if report.lost > 0 {
            eprintln!("{PROGRAM}: {} messages lost", report.lost);
        }
        return Err(Failure::incomplete_already_said());
    }
    if !out_ok {
        return Err(Failure::incomplete_already_said());
    }
    Ok(())
}
