//! `latency-probe`: the whole latency experiment in one command. See `latency-probe --help`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Parser;
use latency_probe::cli;
use latency_probe::cli::DeliveryArgs;
use latency_probe::cli::DiagnosticsArgs;
use latency_probe::cli::ModeArgs;
use latency_probe::cli::OutDirArgs;
use latency_probe::cli::OutputArgs;
use latency_probe::cli::RunArgs;
use latency_probe::cli::StreamArgs;
use latency_probe::cli::EXIT_INCOMPLETE;
use latency_probe::cli::EXIT_SETUP;
use latency_probe::measure::floor::FloorRun;
use latency_probe::measure::floor::DEFAULT_FLOOR_SECONDS;
use latency_probe::measure::hiccup;
use latency_probe::measure::hiccup::HiccupConfig;
use latency_probe::measure::hiccup::HiccupMeter;
use latency_probe::measure::hiccup::HiccupRequest;
use latency_probe::model::PubReport;
use latency_probe::model::RawJitter;
use latency_probe::model::Report;
use latency_probe::model::RunMode;
use latency_probe::model::DRIVER_EMBEDDED;
use latency_probe::model::DRIVER_EXTERNAL;
use latency_probe::render::text::render_text;
use latency_probe::report::build::combine;
use latency_probe::run::experiment::default_cores;
use latency_probe::run::experiment::sibling;
use latency_probe::run::experiment::wait_bounded;
use latency_probe::units::format_ns;

/// Measure latency over Aeron IPC in one command: starts an embedded Aeron C media driver (or
/// uses --dir), runs latency-sub and latency-pub as separate processes with their hot threads
/// pinned to different cores, and prints the combined report: one-way by default, round trips
/// with --mode rtt. Right before and after, it measures the raw cache-line round trip between
/// the same two cores (the floor) and prints every percentile as a ratio to it. Exits non-zero
/// when a message was lost or a process failed. `latency-probe compare A.json B.json` compares
/// two reports; `latency-probe sweep --rates 10k,50k,100k` runs it at each rate.
#[derive(Debug, Parser)]
#[command(name = "latency-probe", version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
    #[command(flatten)]
    args: Args,
}

#[derive(Debug, clap::Subcommand)]
enum Cmd {
    /// Compare two JSON reports per percentile, and say whether each change exceeds the
    /// run-to-run variation recorded in them (measure both with --runs N)
    Compare(CompareArgs),
    /// Run the probe at each rate and draw latency (p50, p99, p99.9) against offered load, with
    /// the single-queue 1/(1-rho) curve for comparison
    Sweep(SweepArgs),
}

#[derive(Debug, clap::Args)]
struct CompareArgs {
    /// The report before (latency-probe --json or --out DIR/report.json)
    a: PathBuf,
    /// The report after
    b: PathBuf,
}

#[derive(Debug, clap::Args)]
struct SweepArgs {
    /// Offered rates, msg/s, comma-separated (k and M suffixes: 10k,50k,1M)
    #[arg(long, value_delimiter = ',', required = true, value_parser = parse_rate)]
    rates: Vec<u64>,
    /// Measured seconds per rate
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// A rate meets its target when it achieves 99% of the offered rate and, with this flag,
    /// its p99 from the intended send time is at or below this many microseconds
    #[arg(long = "p99-target-us")]
    p99_target_us: Option<f64>,
    /// Directory for sweep.json, sweep.csv, sweep.svg and each rate's report
    #[arg(long, default_value = "results/sweep")]
    out: PathBuf,
    /// More latency-probe flags for every rate, after --, e.g. -- --msg-size 64 --mode rtt
    #[arg(last = true)]
    probe_args: Vec<String>,
}

fn parse_rate(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let (num, mult) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1_000.0),
        Some('m') => (&t[..t.len() - 1], 1_000_000.0),
        _ => (t.as_str(), 1.0),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a rate: use messages per second, e.g. 10000, 10k or 1M"))?;
    let r = (v * mult).round();
    if !(1.0..=100_000_000.0).contains(&r) {
        return Err(format!("{s}: a rate is 1 to 100,000,000 messages per second"));
    }
    Ok(r as u64)
}

#[derive(Debug, clap::Args)]
struct Args {
    /// A line on stderr once a second during the run (from latency-sub: messages so far, the
    /// highest sequence, the p99 of the last 4,096): auto (when stdout is a terminal), on, off
    #[arg(long, default_value = "auto")]
    live: latency_probe::run::live::LiveMode,
    /// Repeat the measurement this many times (each with its own floor) and report every run
    /// and the run-to-run variation per percentile, as JLBH does; the JSON is the last run's
    /// report with `runs`
    #[arg(long, default_value_t = 1)]
    runs: u32,
    #[command(flatten)]
    stream: StreamArgs,
    #[command(flatten)]
    run: RunArgs,
    #[command(flatten)]
    mode: ModeArgs,
    /// Seconds of raw cache-line round trips between the two hot cores, measured right before
    /// and right after the run (0: skip)
    #[arg(long, default_value_t = DEFAULT_FLOOR_SECONDS, allow_negative_numbers = true)]
    floor: f64,
    /// Core for the publisher's hot thread [default: the second-to-last usable core]
    #[arg(long = "pub-core", allow_negative_numbers = true)]
    pub_core: Option<usize>,
    /// Core for the subscriber's hot thread [default: the last usable core]
    #[arg(long = "sub-core", allow_negative_numbers = true)]
    sub_core: Option<usize>,
    /// Do not pin the hot threads
    #[arg(long = "no-pin")]
    no_pin: bool,
    /// Idle strategy of both hot threads: spin, noop, yield, sleep-ns[:N], backoff
    #[arg(long, default_value = "spin", value_parser = cli::parse_idle)]
    idle: aeron_latency::messaging::IdleStrategy,
    /// IPC term length of the embedded driver in bytes (power of two, 64 KiB..1 GiB) [default: $AERON_IPC_TERM_BUFFER_LENGTH, else 64 MiB]
    #[arg(long = "term-length", allow_negative_numbers = true)]
    term_length: Option<usize>,
    /// Directory the embedded driver puts its files in: a fresh aeron-latency-<pid>-0 inside it,
    /// removed on exit; it needs room for 2 streams x 3 terms + 16 MiB (Docker's /dev/shm has
    /// 64 MiB) [default: /dev/shm]. Not with --dir
    #[arg(long = "driver-dir")]
    driver_dir: Option<PathBuf>,
    /// Seconds the publisher waits for the subscriber
    #[arg(long, default_value_t = 10.0, allow_negative_numbers = true)]
    wait: f64,
    #[command(flatten)]
    delivery: DeliveryArgs,
    #[command(flatten)]
    diagnostics: DiagnosticsArgs,
    /// Hiccup meter (a thread spinning on a spare core that records its own gaps: platform
    /// jitter): auto (only when a core is free of hot threads), off, or a core number to force
    #[arg(long, default_value = "auto", allow_negative_numbers = true)]
    hiccup: HiccupRequest,
    #[command(flatten)]
    out: OutputArgs,
    #[command(flatten)]
    out_dir: OutDirArgs,
}

fn main() {
    const ME: &str = "latency-probe";
    // Every flag is checked before anything starts (no driver, no child, no floor); each
    // failure is one line, exit 2.
    let cli: Cli = cli::parse_args(ME);
    match cli.cmd {
        Some(Cmd::Compare(c)) => return compare_main(&c),
        Some(Cmd::Sweep(s)) => return sweep_main(&s),
        None => {}
    }
    let a = cli.args;
    if !(1..=1000).contains(&a.runs) {
        cli::fail(ME, format!("--runs {}: give 1 to 1000 runs", a.runs), EXIT_SETUP);
    }
    let setup = |r: Result<(), String>| r.unwrap_or_else(|e| cli::fail(ME, e, EXIT_SETUP));
    setup(a.run.validate());
    cli::seconds("--wait", a.wait).unwrap_or_else(|e| cli::fail(ME, e, EXIT_SETUP));
    // latency-sub gets a --timeout covering the whole run and both waits: keep it in range.
    let run_s = (a.run.warmup as f64 + a.run.duration * a.run.rate as f64) / a.run.rate as f64;
    if run_s + 2.0 * a.wait + 30.0 > cli::MAX_SECONDS {
        cli::fail(
            ME,
            format!(
                "--duration {} (plus --warmup {} at --rate {}) and --wait {} add up to more than 10000000 seconds \
                 (about 116 days), the longest latency-sub waits; shorten the run or the wait",
                a.run.duration, a.run.warmup, a.run.rate, a.wait
            ),
            EXIT_SETUP,
        );
    }
    let floor_len = cli::seconds("--floor", a.floor).unwrap_or_else(|e| cli::fail(ME, e, EXIT_SETUP));
    if floor_len > Duration::from_secs(10) {
        cli::fail(
            ME,
            format!("--floor {}: at most 10 seconds (0.25 is plenty)", a.floor),
            EXIT_SETUP,
        );
    }
    setup(a.stream.validate());
    let rtt = a.mode.mode == RunMode::Rtt;
    let pong = a.mode.pong(&a.stream).unwrap_or_else(|e| cli::fail(ME, e, EXIT_SETUP));
    if rtt && a.delivery.delivery != latency_probe::run::Delivery::Inline {
        cli::fail(
            ME,
            "--mode rtt echoes from latency-sub's poll loop: use --delivery inline (the default)",
            EXIT_SETUP,
        );
    }
    let (def_sub, def_pub) = if a.no_pin { (None, None) } else { default_cores() };
    let (sub_core, pub_core) = (a.sub_core.or(def_sub), a.pub_core.or(def_pub));
    cli::check_core("--sub-core", sub_core).unwrap_or_else(|e| cli::fail(ME, e, EXIT_SETUP));
    cli::check_core("--pub-core", pub_core).unwrap_or_else(|e| cli::fail(ME, e, EXIT_SETUP));
    if sub_core.is_some() && sub_core == pub_core && a.idle.spins() {
        cli::fail(
            ME,
            "--sub-core and --pub-core are the same core and --idle spins: the two hot threads would starve each \
             other; pick two cores or --idle yield",
            EXIT_SETUP,
        );
    }
    let available = aeron_latency::messaging::available_cores();
    if let HiccupRequest::Core(c) = a.hiccup {
        if !available.contains(&c) {
            cli::fail(
                ME,
                format!("--hiccup {c}: no such core; this machine lets us use {available:?} (or pass auto or off)"),
                EXIT_SETUP,
            );
        }
    }
    // The driver: a running one (--dir), or the embedded one's settings.
    if a.stream.dir.is_some() {
        if a.driver_dir.is_some() {
            cli::fail(
                ME,
                "--driver-dir is where the embedded driver puts its files, but --dir uses the driver already \
                 running there: pass one of the two",
                EXIT_SETUP,
            );
        }
        if a.term_length.is_some() {
            cli::fail(
                ME,
                "--term-length sets the embedded driver's IPC term, but with --dir the running driver's own \
                 configuration decides (AERON_IPC_TERM_BUFFER_LENGTH where it starts, or term-length= in --channel): \
                 drop one of the two",
                EXIT_SETUP,
            );
        }
        setup(a.stream.check_driver());
    } else {
        setup(check_embedded(&a, pong.as_ref()));
    }
    setup(a.out.validate());
    setup(a.out_dir.validate());

    if a.diagnostics.diagnostics == latency_probe::model::Mode::Perf {
        // Fail before starting anything, with the reason (the children would fail the same way).
        if let Err(why) = latency_probe::measure::monitor::Monitor::new(latency_probe::model::Mode::Perf) {
            cli::fail(ME, why, EXIT_SETUP);
        }
    }

    // The driver: embedded unless --dir points at a running one.
    let (embedded, dir, driver_version) = match &a.stream.dir {
        Some(dir) => {
            if let Err(e) = aeron_latency::messaging::Client::connect(dir) {
                cli::fail(ME, e, EXIT_SETUP);
            }
            (None, dir.clone(), "unknown (external)".to_owned())
        }
        None => embedded_driver(&a),
    };

    let is_embedded = embedded.is_some();
    let x = Setup {
        dir: &dir,
        is_embedded,
        driver_version: &driver_version,
        sub_core,
        pub_core,
        pong: pong.as_ref(),
        available: &available,
        floor_len,
        run_s,
        run: None,
    };
    let mut reports = Vec::new();
    let mut all_ok = true;
    let mut statuses = (None, None);
    for run in 1..=a.runs {
        let x = Setup {
            run: (a.runs > 1).then_some(run),
            ..x
        };
        let m = match measure(&a, &x) {
            Ok(m) => m,
            Err((why, code)) if reports.is_empty() => {
                drop(embedded);
                cli::fail(ME, why, code);
            }
            Err((why, _)) => {
                // Keep what the earlier runs measured: report them, marked incomplete.
                eprintln!(
                    "{ME}: run {run}/{} failed, reporting the {} before it: {why}",
                    a.runs,
                    reports.len()
                );
                all_ok = false;
                break;
            }
        };
        let children_ok = m.pub_status.is_some_and(|s| s.success()) && m.sub_status.is_some_and(|s| s.success());
        all_ok &= children_ok && m.report.complete && m.report.lost == 0;
        if a.runs > 1 {
            let l = &m.report.latency_ns;
            eprintln!(
                "{ME}: run {run}/{}: p50 {} p99 {} p99.9 {} max {}{}",
                a.runs,
                format_ns(l.p50),
                format_ns(l.p99),
                format_ns(l.p999),
                format_ns(l.max),
                if m.report.complete && m.report.lost == 0 {
                    ""
                } else {
                    " (incomplete)"
                }
            );
        }
        statuses = (m.pub_status, m.sub_status);
        reports.push(m.report);
    }
    drop(embedded);
    let mut report = reports.pop().expect("at least one run");
    if reports.len() + 1 < a.runs as usize {
        report.complete = false;
        report.notes.push(format!(
            "only {} of the {} runs finished (see the error above)",
            reports.len() + 1,
            a.runs
        ));
    }
    let mut text = render_text(&report);
    if a.runs > 1 {
        reports.push(report.clone());
        let summary = latency_probe::model::RunsSummary::from_reports(&reports);
        text.push_str(&summary.render());
        report.runs = Some(summary);
    }
    a.out.emit(ME, &text, &report);
    let mut out_ok = a.out_dir.write(ME, &report);
    if let (Some(dir), Some(summary)) = (&a.out_dir.out, &report.runs) {
        let csv = dir.join("runs.csv");
        if let Err(e) = std::fs::write(&csv, summary.csv()) {
            eprintln!("{ME}: --out: could not write {}: {e}", csv.display());
            out_ok = false;
        }
        for (i, r) in reports.iter().enumerate() {
            let p = dir.join(format!("run-{}.json", i + 1));
            if let Err(e) = latency_probe::render::files::write_json(r, &p) {
                eprintln!("{ME}: --out: could not write {}: {e}", p.display());
                out_ok = false;
            }
        }
    }
    let (pub_status, sub_status) = statuses;
    if !all_ok {
        eprintln!(
            "{ME}: {} (latency-pub {}, latency-sub {})",
            if report.lost > 0 {
                format!("{} messages lost", report.lost)
            } else if a.runs > 1 {
                "a run was incomplete or lost messages".into()
            } else {
                "run incomplete".into()
            },
            pub_status.map_or("killed".into(), |s| s.to_string()),
            sub_status.map_or("killed".into(), |s| s.to_string()),
        );
        std::process::exit(EXIT_INCOMPLETE);
    }
    if !out_ok {
        std::process::exit(EXIT_INCOMPLETE);
    }
}

/// `latency-probe compare A B`.
fn compare_main(c: &CompareArgs) {
    const ME: &str = "latency-probe compare";
    let read = |p: &PathBuf| -> Report {
        let bytes = std::fs::read(p).unwrap_or_else(|e| {
            cli::fail(
                ME,
                format!(
                    "could not read {}: {e}; give the report --json or --out DIR/report.json wrote",
                    p.display()
                ),
                EXIT_SETUP,
            )
        });
        serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            cli::fail(
                ME,
                format!(
                    "{} is not a latency-probe or latency-sub JSON report ({e}); give the files --json or --out wrote",
                    p.display()
                ),
                EXIT_SETUP,
            )
        })
    };
    let (a, b) = (read(&c.a), read(&c.b));
    let changes = latency_probe::analysis::runs::compare(&a, &b);
    print!(
        "{}",
        latency_probe::render::runs::render_compare(
            &c.a.display().to_string(),
            &c.b.display().to_string(),
            &a,
            &b,
            &changes
        )
    );
}

/// `latency-probe sweep`: this program once per rate, then the table and the plot.
fn sweep_main(s: &SweepArgs) {
    use latency_probe::render::svg::{sweep_svg, SweepPoint};
    const ME: &str = "latency-probe sweep";
    if !(s.duration.is_finite() && s.duration > 0.0) {
        cli::fail(
            ME,
            format!("--duration {} must be a positive number of seconds", s.duration),
            EXIT_SETUP,
        );
    }
    if let Some(t) = s.p99_target_us {
        if !(t.is_finite() && t > 0.0) {
            cli::fail(
                ME,
                format!("--p99-target-us {t} must be a positive number of microseconds"),
                EXIT_SETUP,
            );
        }
    }
    let mut rates = s.rates.clone();
    rates.sort_unstable();
    rates.dedup();
    std::fs::create_dir_all(&s.out)
        .unwrap_or_else(|e| cli::fail(ME, format!("--out {}: {e}", s.out.display()), EXIT_SETUP));
    let exe = std::env::current_exe().unwrap_or_else(|e| cli::fail(ME, e, EXIT_SETUP));
    let mut points = Vec::new();
    let mut reports = Vec::new();
    println!(
        "sweep: {} rates, {} s each, latency from the intended send time{}",
        rates.len(),
        s.duration,
        s.p99_target_us
            .map_or_else(String::new, |t| format!(", target p99 <= {t} us"))
    );
    println!(
        "{:>12} {:>12} {:>10} {:>10} {:>10} {:>6}  met",
        "offered", "achieved", "p50", "p99", "p99.9", "lost"
    );
    for &rate in &rates {
        let json = s.out.join(format!("rate-{rate}.json"));
        let _ = std::fs::remove_file(&json);
        let status = std::process::Command::new(&exe)
            .args([
                "--rate",
                &rate.to_string(),
                "--duration",
                &s.duration.to_string(),
                "--quiet",
                "--json",
            ])
            .arg(&json)
            .args(&s.probe_args)
            .status()
            .unwrap_or_else(|e| {
                cli::fail(
                    ME,
                    format!(
                        "could not run {}: {e}; run sweep from the latency-probe binary itself",
                        exe.display()
                    ),
                    EXIT_SETUP,
                )
            });
        let report: Option<Report> = std::fs::read(&json).ok().and_then(|b| serde_json::from_slice(&b).ok());
        let Some(r) = report else {
            if status.code() == Some(EXIT_SETUP) {
                cli::fail(
                    ME,
                    format!("the probe refused the settings at {rate} msg/s (see above)"),
                    EXIT_SETUP,
                );
            }
            eprintln!("{ME}: no report at {rate} msg/s (exit {status}); skipped");
            continue;
        };
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
        points.push(SweepPoint {
            rate_target: rate as f64,
            rate_achieved: r.rate_achieved,
            p50_ns: l.p50,
            p99_ns: l.p99,
            p999_ns: l.p999,
            met_target: met,
        });
        reports.push(r);
    }
    if points.is_empty() {
        cli::fail(
            ME,
            "no rate produced a report (see the errors above); try lower --rates or a longer --duration",
            EXIT_INCOMPLETE,
        );
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
    match best {
        Some(b) => println!("highest rate that met its target ({target}): {b:.0} msg/s"),
        None => println!("no rate met its target ({target})"),
    }
    let mut csv = String::from("rate_target,rate_achieved,p50_ns,p99_ns,p999_ns,lost,met_target\n");
    for (p, r) in points.iter().zip(&reports) {
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
        "timing_model": latency_probe::sys::clock::TIMING_MODEL,
        "points": points.iter().zip(&reports).map(|(p, r)| serde_json::json!({
            "rate_target": p.rate_target, "rate_achieved": p.rate_achieved, "p50_ns": p.p50_ns,
            "p99_ns": p.p99_ns, "p999_ns": p.p999_ns, "lost": r.lost, "met_target": p.met_target,
        })).collect::<Vec<_>>(),
    });
    let mut ok = true;
    if let Err(e) = std::fs::write(&csv_path, csv) {
        eprintln!("{ME}: could not write {}: {e}", csv_path.display());
        ok = false;
    }
    if let Err(e) = latency_probe::render::files::write_json(&summary, &json) {
        eprintln!("{ME}: could not write {}: {e}", json.display());
        ok = false;
    }
    let title = format!(
        "latency against offered load: {} {} B",
        reports[0].mode.as_str(),
        reports[0].msg_size
    );
    if let Err(e) = sweep_svg(&points, Some(&target), &title, &svg) {
        eprintln!("{ME}: could not draw {}: {e}", svg.display());
        ok = false;
    }
    eprintln!(
        "{ME}: wrote {}/: sweep.json sweep.csv sweep.svg rate-*.json",
        s.out.display()
    );
    let incomplete = reports.iter().filter(|r| !r.complete || r.lost > 0).count();
    if incomplete > 0 {
        eprintln!(
            "{ME}: {incomplete} of {} rates were incomplete or lost messages (see their reports)",
            reports.len()
        );
    }
    if !ok || incomplete > 0 || points.len() < rates.len() {
        std::process::exit(EXIT_INCOMPLETE);
    }
}

/// What one measurement needs besides the flags.
struct Setup<'a> {
    dir: &'a Path,
    is_embedded: bool,
    driver_version: &'a str,
    sub_core: Option<usize>,
    pub_core: Option<usize>,
    pong: Option<&'a latency_probe::run::PongPath>,
    available: &'a [usize],
    floor_len: Duration,
    run_s: f64,
    /// The run's number (1-based) when there are several.
    run: Option<u32>,
}

/// One run's outcome.
struct Measured {
    report: Report,
    pub_status: Option<std::process::ExitStatus>,
    sub_status: Option<std::process::ExitStatus>,
}

/// One measurement: the floor, latency-sub and latency-pub, the floor again, the combined
/// report. `Err` is (one line, exit code) when it could not run or produced no report.
#[allow(clippy::too_many_lines, reason = "one run, in the order it happens")]
fn measure(a: &Args, x: &Setup<'_>) -> Result<Measured, (String, i32)> {
    const ME: &str = "latency-probe";
    let Setup {
        dir,
        is_embedded,
        driver_version,
        sub_core,
        pub_core,
        pong,
        available,
        floor_len,
        run_s,
        run,
    } = *x;
    let rtt = pong.is_some();
    // The hiccup meter: only on a core no hot thread uses, unless forced (checked above).
    let hot_cores: Vec<usize> = [sub_core, pub_core].into_iter().flatten().collect();
    let mut notes = Vec::new();
    let meter = match hiccup::choose_core(a.hiccup, &hot_cores, available) {
        Ok(core) => {
            if hot_cores.contains(&core) {
                notes.push(format!(
                    "--hiccup {core}: the meter spins on a hot thread's core, so it adds the jitter it measures"
                ));
            }
            match HiccupMeter::spawn(HiccupConfig {
                core: Some(core),
                ..HiccupConfig::default()
            }) {
                Ok(m) => Ok(m),
                Err(e) => Err(format!("skipped: {e}")),
            }
        }
        Err(why) => Err(why),
    };
    let diag_on = a.diagnostics.diagnostics != latency_probe::model::Mode::Off;

    let tmp = std::env::temp_dir().join(format!("latency-probe-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| (format!("{}: {e}", tmp.display()), EXIT_SETUP))?;
    let (sub_json, pub_json) = (tmp.join("sub.json"), tmp.join("pub.json"));
    let s = |v: &dyn ToString| v.to_string();
    let mut common = vec![
        "--dir".into(),
        s(&dir.display()),
        "--channel".into(),
        a.stream.channel.clone(),
        "--stream".into(),
        s(&a.stream.stream),
        "--idle".into(),
        s(&a.idle),
        "--diagnostics".into(),
        a.diagnostics.diagnostics.as_str().into(),
        "--quiet".into(),
    ];
    if let Some(p) = &pong {
        common.extend([
            "--mode".into(),
            "rtt".into(),
            "--pong-channel".into(),
            p.channel.clone(),
            "--pong-stream".into(),
            s(&p.stream),
        ]);
    }
    let (sub_raw, pub_raw) = (tmp.join("sub-jitter.json"), tmp.join("pub-jitter.json"));
    let sub_timeout = run_s + 2.0 * a.wait + 30.0;
    let mut sub_args = common.clone();
    sub_args.extend([
        "--timeout".into(),
        format!("{sub_timeout:.1}"),
        "--json".into(),
        s(&sub_json.display()),
        "--jitter-raw".into(),
        s(&sub_raw.display()),
        "--delivery".into(),
        s(&a.delivery.delivery),
        "--live".into(),
        if a.live.enabled() { "on" } else { "off" }.into(),
    ]);
    if a.delivery.hot_path_lock {
        sub_args.push("--hot-path-lock".into());
    }
    if let Some(c) = sub_core {
        sub_args.extend(["--core".into(), s(&c)]);
    }
    common.extend([
        "--duration".into(),
        s(&a.run.duration),
        "--rate".into(),
        s(&a.run.rate),
        "--msg-size".into(),
        s(&a.run.msg_size),
        "--warmup".into(),
        s(&a.run.warmup),
        "--wait".into(),
        s(&a.wait),
        "--json".into(),
        s(&pub_json.display()),
        "--jitter-raw".into(),
        s(&pub_raw.display()),
    ]);
    if let Some(c) = pub_core {
        common.extend(["--core".into(), s(&c)]);
    }

    // The floor, right before the run, on the two hot cores (nothing else spins there yet).
    let floor_cores_ok = !(sub_core.is_some() && sub_core == pub_core);
    let floor = if floor_len.is_zero() {
        None
    } else if !floor_cores_ok {
        notes.push("floor not measured: both hot threads share one core".into());
        None
    } else {
        match FloorRun::before(pub_core, sub_core, floor_len) {
            Ok(f) => Some(f),
            Err(e) => {
                notes.push(format!("floor not measured: {e}"));
                None
            }
        }
    };

    eprintln!(
        "{ME}: {}{} {:.1} s at {} msg/s, {} B messages, {} warm-up; driver {} at {}; subscriber on core {}, publisher on \
         core {}",
        run.map_or_else(String::new, |r| format!("run {r}/{}: ", a.runs)),
        if rtt { "round trips," } else { "one-way," },
        a.run.duration,
        a.run.rate,
        a.run.msg_size,
        a.run.warmup,
        if is_embedded { "embedded" } else { "external" },
        dir.display(),
        sub_core.map_or("any".into(), |c| c.to_string()),
        pub_core.map_or("any".into(), |c| c.to_string()),
    );
    // The driver's counters around the run, straight from cnc.dat (no client joins).
    let counters_before = aeron_latency::messaging::read_driver_counters(dir).unwrap_or_default();
    let mut sub =
        latency_probe::run::experiment::spawn(&sibling("latency-sub"), &sub_args).map_err(|e| (e, EXIT_SETUP))?;
    let mut publ = match latency_probe::run::experiment::spawn(&sibling("latency-pub"), &common) {
        Ok(p) => p,
        Err(e) => {
            let _ = sub.kill();
            return Err((e, EXIT_SETUP));
        }
    };
    let pub_status = wait_bounded(&mut publ, Duration::from_secs_f64(run_s + 3.0 * a.wait + 30.0));
    if pub_status.and_then(|s| s.code()) == Some(EXIT_SETUP) {
        // latency-pub refused the setup (e.g. --msg-size above an external driver's MTU) before
        // sending anything: do not wait for latency-sub's timeout.
        let _ = sub.kill();
        let _ = sub.wait();
        let _ = std::fs::remove_dir_all(&tmp);
        return Err((
            "latency-pub refused the setup (its error is above); nothing was measured".into(),
            EXIT_SETUP,
        ));
    }
    let sub_status = wait_bounded(&mut sub, Duration::from_secs_f64(sub_timeout + 10.0));
    let counters_after = aeron_latency::messaging::read_driver_counters(dir).unwrap_or_default();
    // The floor again, right after the run and under the same conditions (driver and meter up).
    let mut floor = floor;
    if let Some(f) = &mut floor {
        f.after();
    }
    let meter = meter.map(HiccupMeter::stop);

    let read = |p: &PathBuf| -> Option<Vec<u8>> { std::fs::read(p).ok() };
    let sub_report: Option<Report> = read(&sub_json).and_then(|b| serde_json::from_slice(&b).ok());
    let read_raw = |p: &PathBuf| -> Option<RawJitter> { serde_json::from_slice(&read(p)?).ok() };
    let (sub_jitter, pub_jitter) = (read_raw(&sub_raw), read_raw(&pub_raw));
    let h = match &meter {
        Ok(log) => latency_probe::analysis::jitter::Hiccup::Ran(log),
        Err(why) => latency_probe::analysis::jitter::Hiccup::Skipped(why.clone()),
    };
    let mut report = if rtt {
        // Ping's report is the result; pong's is its one-way view of the same messages.
        let bytes = read(&pub_json);
        let ping: Option<Report> = bytes.as_ref().and_then(|b| serde_json::from_slice(b).ok());
        // A ping that stopped before its first round trip writes its publisher report only.
        let stopped: Option<PubReport> = bytes.as_ref().and_then(|b| serde_json::from_slice(b).ok());
        let _ = std::fs::remove_dir_all(&tmp);
        let Some(mut report) = ping else {
            let why = match stopped.and_then(|p| p.incomplete_reason) {
                Some(reason) => format!("latency-pub (ping) stopped before any round trip: {reason}"),
                None => format!("latency-pub (ping) wrote no report (exit {pub_status:?}); see its error above"),
            };
            return Err((why, EXIT_INCOMPLETE));
        };
        report.env.driver_kind = if is_embedded { DRIVER_EMBEDDED } else { DRIVER_EXTERNAL }.to_owned();
        report.env.driver_version = driver_version.to_owned();
        match &sub_report {
            Some(pong) => {
                report.faults.subscriber = pong.faults.subscriber;
                report.faults.prefaulted.extend(pong.faults.prefaulted.iter().cloned());
                let l = &pong.latency_actual_ns;
                report.notes.push(format!(
                    "pong's one-way view (ping to pong, this host's clock, from the actual send, read after pong \
                     echoed the message): p50 {} p99 {} p99.9 {} over {} messages",
                    format_ns(l.p50),
                    format_ns(l.p99),
                    format_ns(l.p999),
                    l.count
                ));
                if !pong.complete {
                    report.complete = false;
                    report.incomplete_reason = Some(format!(
                        "pong: {}",
                        pong.incomplete_reason.as_deref().unwrap_or("stopped early")
                    ));
                }
            }
            None => {
                report.complete = false;
                report
                    .notes
                    .push("latency-sub (pong) wrote no report; see its error above".into());
            }
        }
        report.notes.extend(notes);
        match (&pub_jitter, diag_on) {
            (Some(pj), _) => latency_probe::report::build::attach(&mut report, pj, sub_jitter.as_ref(), &h),
            (None, true) => report
                .notes
                .push("latency-pub wrote no jitter material; the jitter section covers nothing".into()),
            (None, false) => {}
        }
        report
    } else {
        let pub_report: Option<PubReport> = read(&pub_json).and_then(|b| serde_json::from_slice(&b).ok());
        let _ = std::fs::remove_dir_all(&tmp);
        let Some(sub_report) = sub_report else {
            return Err((
                format!("latency-sub wrote no report (exit {sub_status:?}); see its error above"),
                EXIT_INCOMPLETE,
            ));
        };
        let mut report = combine(sub_report, pub_report, is_embedded, driver_version);
        report.notes.extend(notes);
        if let Some(p) = &mut report.publisher {
            p.jitter = None; // analysed together with the subscriber's side below
        }
        match (&sub_jitter, diag_on) {
            (Some(sj), _) => latency_probe::report::build::attach(&mut report, sj, pub_jitter.as_ref(), &h),
            (None, true) => report
                .notes
                .push("latency-sub wrote no jitter material; the jitter section covers nothing".into()),
            (None, false) => {}
        }
        report
    };
    if let Some(f) = floor {
        let f = f.finish(&report.latency_ns);
        if f.moved {
            report.notes.push(format!(
                "the floor moved during the run (raw round trip p50 {} before, {} after): this machine's inter-core \
                 latency changed regime; compare nothing from this run and run again",
                format_ns(f.before.round_trip_ns.p50),
                format_ns(f.after.as_ref().map_or(0, |a| a.round_trip_ns.p50))
            ));
        }
        report.floor = Some(f);
    }
    report.driver_counters = Some(latency_probe::measure::counters::diff(
        &counters_before,
        &counters_after,
    ));
    Ok(Measured {
        report,
        pub_status,
        sub_status,
    })
}

/// The embedded driver's flags, checked before it starts: `--term-length`, `--driver-dir`, and
/// `--msg-size` against what its publications take (one frame through try_claim).
#[cfg(feature = "embedded-driver")]
fn check_embedded(a: &Args, pong: Option<&latency_probe::run::PongPath>) -> Result<(), String> {
    if let Some(t) = a.term_length {
        aeron_latency::messaging::check_term_length(t).map_err(|e| format!("--term-length {t}: {e}"))?;
    }
    if let Some(d) = &a.driver_dir {
        if !d.exists() {
            return Err(format!(
                "--driver-dir {}: no such directory; create it (mkdir -p {}) or pick an existing one (a tmpfs such \
                 as /dev/shm keeps the driver off the disk)",
                d.display(),
                d.display()
            ));
        }
        if !d.is_dir() {
            return Err(format!(
                "--driver-dir {} is a file, not a directory; pick a directory (the driver makes its own inside it)",
                d.display()
            ));
        }
    }
    let mut b = aeron_latency::messaging::EmbeddedDriver::builder();
    if let Some(t) = a.term_length {
        b = b.ipc_term_length(t);
    }
    let ipc_term = b.effective_ipc_term_length();
    let pong = pong.map(|p| ("--pong-channel", p.channel.as_str()));
    for (flag, channel) in std::iter::once(("--channel", a.stream.channel.as_str())).chain(pong) {
        let (max, why) = cli::embedded_max_message(channel, ipc_term);
        if a.run.msg_size > max {
            return Err(format!(
                "--msg-size {} does not fit {flag} {channel}: {why}",
                a.run.msg_size
            ));
        }
    }
    Ok(())
}

#[cfg(not(feature = "embedded-driver"))]
fn check_embedded(_: &Args, _: Option<&latency_probe::run::PongPath>) -> Result<(), String> {
    Ok(())
}

#[cfg(feature = "embedded-driver")]
fn embedded_driver(a: &Args) -> (Option<aeron_latency::messaging::EmbeddedDriver>, PathBuf, String) {
    // Non-sparse log files: the driver maps in every page when it creates a log, so its own
    // thread takes no page fault while the run measures (each client pre-faults its mapping).
    // --term-length and --driver-dir were checked before anything started (check_embedded).
    let mut b = aeron_latency::messaging::EmbeddedDriver::builder()
        .term_buffer_sparse_file(false)
        .remove_stale_dirs(true);
    if let Some(t) = a.term_length {
        b = b.ipc_term_length(t);
    }
    if let Some(d) = &a.driver_dir {
        b = b.dir(d.join(format!("aeron-latency-{}-0", std::process::id())));
    }
    match b.spawn() {
        Ok(d) => {
            let stale = d.stale_dirs_removed();
            if !stale.is_empty() {
                eprintln!(
                    "latency-probe: removed {} directories that killed runs' embedded drivers left (e.g. {})",
                    stale.len(),
                    stale[0].display()
                );
            }
            let dir = d.dir().to_path_buf();
            (Some(d), dir, aeron_latency::messaging::driver_version())
        }
        Err(e) => cli::fail("latency-probe", e, EXIT_SETUP),
    }
}

#[cfg(not(feature = "embedded-driver"))]
fn embedded_driver(_: &Args) -> (Option<()>, PathBuf, String) {
    cli::fail(
        "latency-probe",
        "built without the embedded driver: pass --dir for a running media driver, or rebuild with the \
         embedded-driver feature",
        EXIT_SETUP,
    )
}
