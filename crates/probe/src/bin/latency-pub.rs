//! `latency-pub`: publishes timestamped messages on a schedule. See `latency-pub --help`.

use clap::Parser;
use latency_probe::cli;
use latency_probe::cli::DiagnosticsArgs;
use latency_probe::cli::ModeArgs;
use latency_probe::cli::OutputArgs;
use latency_probe::cli::RunArgs;
use latency_probe::cli::StreamArgs;
use latency_probe::cli::EXIT_INCOMPLETE;
use latency_probe::cli::EXIT_SETUP;
use latency_probe::model::Env;
use latency_probe::model::PubReport;
use latency_probe::model::DRIVER_EXTERNAL;
use latency_probe::model::UNKNOWN;
use latency_probe::render::text::render_text;
use latency_probe::run::publisher;
use latency_probe::units::format_ns;

/// Publish Cap'n Proto timestamped messages over Aeron at a fixed rate, busy-spinning on
/// CLOCK_MONOTONIC; every message carries its intended and actual send time. Ends with an
/// end-of-run marker carrying the number sent. With --mode rtt it is ping: after each message it
/// waits for latency-sub's echo on --pong-stream and reports the round trips.
#[derive(Debug, Parser)]
#[command(name = "latency-pub", version)]
struct Args {
    #[command(flatten)]
    stream: StreamArgs,
    #[command(flatten)]
    run: RunArgs,
    #[command(flatten)]
    mode: ModeArgs,
    /// Seconds to wait for a subscriber before giving up
    #[arg(long, default_value_t = 10.0, allow_negative_numbers = true)]
    wait: f64,
    /// Pin the sending thread to this core
    #[arg(long, allow_negative_numbers = true)]
    core: Option<usize>,
    /// Idle strategy while an offer is retried: spin, noop, yield, sleep-ns[:N], backoff
    #[arg(long, default_value = "spin", value_parser = cli::parse_idle)]
    idle: aeron_latency::messaging::IdleStrategy,
    #[command(flatten)]
    diagnostics: DiagnosticsArgs,
    #[command(flatten)]
    out: OutputArgs,
}

fn summary(r: &PubReport) -> String {
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
        offers.join(", "),
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
        s.push_str(&latency_probe::render::jitter::render(j, &[]));
    }
    s
}

fn main() {
    const ME: &str = "latency-pub";
    // Every flag is checked before anything starts; each failure is one line, exit 2.
    let a: Args = cli::parse_args(ME);
    let setup = |r: Result<(), String>| r.unwrap_or_else(|e| cli::fail(ME, e, EXIT_SETUP));
    setup(a.run.validate());
    let wait = cli::seconds("--wait", a.wait).unwrap_or_else(|e| cli::fail(ME, e, EXIT_SETUP));
    setup(cli::check_core("--core", a.core));
    setup(a.stream.validate());
    let pong = a.mode.pong(&a.stream).unwrap_or_else(|e| cli::fail(ME, e, EXIT_SETUP));
    setup(a.out.validate());
    setup(a.stream.check_driver());
    let dir = cli::dir_or_default(a.stream.dir.clone());
    let mut cfg = cli::pub_config(&a.stream, &a.run, dir, wait, a.core, a.idle.clone());
    cfg.diagnostics = a.diagnostics.diagnostics;
    cfg.pong = pong;
    let run = publisher::run(&cfg).unwrap_or_else(|e| cli::fail(ME, e, EXIT_SETUP));
    let r = &run.report;
    a.diagnostics.write_raw(ME, r.raw_jitter.as_ref());
    if let Some(report) = publisher::rtt_report(&run, Env::detect().with_driver(DRIVER_EXTERNAL, UNKNOWN)) {
        a.out.emit(ME, &render_text(&report), &report);
        if !report.complete || report.lost > 0 {
            eprintln!(
                "{ME}: incomplete: {}",
                report.incomplete_reason.as_deref().unwrap_or("echoes lost")
            );
            std::process::exit(EXIT_INCOMPLETE);
        }
        return;
    }
    a.out.emit(ME, &summary(r), r);
    if !r.complete {
        eprintln!(
            "{ME}: incomplete: {}",
            r.incomplete_reason.as_deref().unwrap_or("stopped early")
        );
        std::process::exit(EXIT_INCOMPLETE);
    }
}
