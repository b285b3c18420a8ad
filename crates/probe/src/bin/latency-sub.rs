//! `latency-sub`: receives the probe's messages and reports latency overall and in 20
//! time-ordered groups. See `latency-sub --help`.

use clap::Parser;
use latency_probe::cli;
use latency_probe::cli::DeliveryArgs;
use latency_probe::cli::DiagnosticsArgs;
use latency_probe::cli::ModeArgs;
use latency_probe::cli::OutDirArgs;
use latency_probe::cli::OutputArgs;
use latency_probe::cli::StreamArgs;
use latency_probe::cli::EXIT_INCOMPLETE;
use latency_probe::cli::EXIT_SETUP;
use latency_probe::model::Env;
use latency_probe::model::DRIVER_EXTERNAL;
use latency_probe::model::UNKNOWN;
use latency_probe::render::text::render_text;
use latency_probe::run::subscriber;

/// Receive latency-pub's messages over Aeron and report the latency distribution
/// (CLOCK_MONOTONIC, from the intended and from the actual send time) overall and in 20
/// time-ordered groups, with lost / duplicated / reordered / undecodable counts. With --mode rtt
/// it is pong: it echoes every message on --pong-stream first, then measures it.
#[derive(Debug, Parser)]
#[command(name = "latency-sub", version)]
struct Args {
    #[command(flatten)]
    stream: StreamArgs,
    #[command(flatten)]
    mode: ModeArgs,
    /// Stop after this many messages (warm-up included); the publisher's end marker suffices
    #[arg(long, allow_negative_numbers = true)]
    total: Option<u64>,
    /// Give up after this many seconds (the report is still written, marked incomplete)
    #[arg(long, default_value_t = 60.0, allow_negative_numbers = true)]
    timeout: f64,
    /// Pin the receiving thread to this core
    #[arg(long, allow_negative_numbers = true)]
    core: Option<usize>,
    /// Idle strategy between empty polls: spin, noop, yield, sleep-ns[:N], backoff
    #[arg(long, default_value = "spin", value_parser = cli::parse_idle)]
    idle: aeron_latency::messaging::IdleStrategy,
    #[command(flatten)]
    delivery: DeliveryArgs,
    #[command(flatten)]
    diagnostics: DiagnosticsArgs,
    /// A line on stderr once a second while receiving: messages so far, the highest sequence,
    /// the p99 of the last 4,096: auto (when stdout is a terminal), on, off
    #[arg(long, default_value = "auto")]
    live: latency_probe::run::live::LiveMode,
    #[command(flatten)]
    out: OutputArgs,
    #[command(flatten)]
    out_dir: OutDirArgs,
}

fn main() {
    const ME: &str = "latency-sub";
    // Every flag is checked before anything starts; each failure is one line, exit 2.
    let a: Args = cli::parse_args(ME);
    let setup = |r: Result<(), String>| r.unwrap_or_else(|e| cli::fail(ME, e, EXIT_SETUP));
    let timeout = cli::seconds("--timeout", a.timeout).unwrap_or_else(|e| cli::fail(ME, e, EXIT_SETUP));
    if timeout.is_zero() {
        cli::fail(
            ME,
            "--timeout 0 gives up before anything arrives; give the seconds to wait, e.g. --timeout 60",
            EXIT_SETUP,
        );
    }
    if a.total == Some(0) {
        cli::fail(
            ME,
            "--total 0 stops before the first message; give at least 1, or leave it out (the publisher's end \
             marker ends the run)",
            EXIT_SETUP,
        );
    }
    setup(cli::check_core("--core", a.core));
    setup(a.stream.validate());
    let echo = a.mode.pong(&a.stream).unwrap_or_else(|e| cli::fail(ME, e, EXIT_SETUP));
    setup(a.out.validate());
    setup(a.out_dir.validate());
    setup(a.stream.check_driver());
    let dir = cli::dir_or_default(a.stream.dir.clone());
    let mut cfg = cli::sub_config(&a.stream, dir, a.total, timeout, a.core, a.idle.clone());
    cfg.delivery = a.delivery.delivery;
    cfg.live = a.live.enabled();
    cfg.hot_path_lock = a.delivery.hot_path_lock;
    cfg.diagnostics = a.diagnostics.diagnostics;
    cfg.echo = echo;
    let out = subscriber::run(&cfg).unwrap_or_else(|e| cli::fail(ME, e, EXIT_SETUP));
    a.diagnostics.write_raw(ME, out.raw_jitter().as_ref());
    let report = subscriber::to_report(&out, Env::detect().with_driver(DRIVER_EXTERNAL, UNKNOWN), 0);
    a.out.emit(ME, &render_text(&report), &report);
    let out_ok = a.out_dir.write(ME, &report);
    if !report.complete || report.lost > 0 {
        if let Some(why) = &report.incomplete_reason {
            eprintln!("{ME}: incomplete: {why}");
        }
        if report.lost > 0 {
            eprintln!("{ME}: {} messages lost", report.lost);
        }
        std::process::exit(EXIT_INCOMPLETE);
    }
    if !out_ok {
        std::process::exit(EXIT_INCOMPLETE);
    }
}
