//! `latency-sub`: receives the probe's messages and reports latency overall and in 20
//! time-ordered groups. See `latency-sub --help`.

use clap::Parser;
use latency_probe::cli::{
    self, DeliveryArgs, DiagnosticsArgs, ModeArgs, OutputArgs, StreamArgs, EXIT_INCOMPLETE, EXIT_SETUP,
};
use latency_probe::report::{render_text, Env, DRIVER_EXTERNAL, UNKNOWN};
use latency_probe::subscriber;

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
    #[arg(long)]
    total: Option<u64>,
    /// Give up after this many seconds (the report is still written, marked incomplete)
    #[arg(long, default_value_t = 60.0)]
    timeout: f64,
    /// Pin the receiving thread to this core
    #[arg(long)]
    core: Option<usize>,
    /// Idle strategy between empty polls: spin, noop, yield, sleep-ns[:N], backoff
    #[arg(long, default_value = "spin", value_parser = cli::parse_idle)]
    idle: aeron_latency::messaging::IdleStrategy,
    #[command(flatten)]
    delivery: DeliveryArgs,
    #[command(flatten)]
    diagnostics: DiagnosticsArgs,
    #[command(flatten)]
    out: OutputArgs,
}

fn main() {
    const ME: &str = "latency-sub";
    let a = Args::parse();
    let timeout = cli::seconds("--timeout", a.timeout).unwrap_or_else(|e| cli::fail(ME, e, EXIT_SETUP));
    cli::check_core("--core", a.core).unwrap_or_else(|e| cli::fail(ME, e, EXIT_SETUP));
    let dir = cli::dir_or_default(a.stream.dir.clone());
    let mut cfg = cli::sub_config(&a.stream, dir, a.total, timeout, a.core, a.idle.clone());
    cfg.delivery = a.delivery.delivery;
    cfg.hot_path_lock = a.delivery.hot_path_lock;
    cfg.diagnostics = a.diagnostics.diagnostics;
    cfg.echo = a.mode.pong(&a.stream).unwrap_or_else(|e| cli::fail(ME, e, EXIT_SETUP));
    let out = subscriber::run(&cfg).unwrap_or_else(|e| cli::fail(ME, e, EXIT_SETUP));
    a.diagnostics.write_raw(ME, out.raw_jitter().as_ref());
    let report = subscriber::to_report(&out, Env::detect().with_driver(DRIVER_EXTERNAL, UNKNOWN), 0);
    a.out.emit(ME, &render_text(&report), &report);
    if !report.complete || report.lost > 0 {
        if let Some(why) = &report.incomplete_reason {
            eprintln!("{ME}: incomplete: {why}");
        }
        if report.lost > 0 {
            eprintln!("{ME}: {} messages lost", report.lost);
        }
        std::process::exit(EXIT_INCOMPLETE);
    }
}
