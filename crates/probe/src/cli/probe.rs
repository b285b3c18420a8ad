//! `latency-probe`'s command line: its flags, their checks, and its three commands (the
//! experiment, `compare`, `sweep`), each returning the [`Failure`] its binary exits with.

use super::args::{DeliveryArgs, DiagnosticsArgs, ModeArgs, OutDirArgs, OutputArgs, RunArgs, StreamArgs, TermLength};
use super::validate::{check_core, check_embedded, parse_idle, parse_rate, seconds, MAX_SECONDS};
use super::{Failure, UsageError};
use crate::measure::floor::DEFAULT_FLOOR_SECONDS;
use crate::measure::hiccup::HiccupRequest;
use crate::model::RunMode;
use crate::run::driver::DriverChoice;
use crate::run::experiment::{self, Experiment};
use crate::run::process::{bin_dir, default_cores};
use crate::run::sweep::Sweep;
use crate::run::trial::Trial;
use crate::run::Delivery;
use clap::Parser;
use std::path::PathBuf;
use std::time::Duration;

/// The program's name in its messages.
pub const PROGRAM: &str = "latency-probe";
/// `latency-probe compare`'s name in its messages.
pub const COMPARE: &str = "latency-probe compare";
/// `latency-probe sweep`'s name in its messages.
pub const SWEEP: &str = "latency-probe sweep";

/// Parses an experiment's command line alone (`argv[0]` then latency-probe's flags, no
/// subcommand): how `ab` builds the runs it makes from flags.
///
/// # Errors
/// clap's error for a flag that does not parse.
pub fn parse_experiment<I, T>(argv: I) -> Result<Args, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    /// latency-probe's experiment flags with nothing around them.
    #[derive(Debug, Parser)]
    #[command(name = "latency-probe")]
    struct ExperimentOnly {
        #[command(flatten)]
        args: Args,
    }
    ExperimentOnly::try_parse_from(argv).map(|e| e.args)
}

/// `latency-probe compare A B`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The report before (latency-probe --json or --out DIR/report.json)
    pub a: PathBuf,
    /// The report after
    pub b: PathBuf,
    /// Confidence of the intervals, 0.5 to 0.9999 (each file then needs more runs for one)
    #[arg(long, default_value_t = 0.99)]
    pub confidence: f64,
    /// A verdict of no change must rule out a change this large either way (a fraction: 0.05
    /// is 5%); an interval around zero that reaches farther is inconclusive
    #[arg(long, default_value_t = crate::analysis::paired::DEFAULT_RESOLVE)]
    pub resolve: f64,
}

/// `latency-probe sweep`.
#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// Offered rates, msg/s, comma-separated (k and M suffixes: 10k,50k,1M)
    #[arg(long, value_delimiter = ',', required = true, value_parser = parse_rate)]
    pub rates: Vec<u64>,
    /// Measured seconds per rate
    #[arg(long, default_value_t = 5.0)]
    pub duration: f64,
    /// A rate meets its target when it achieves 99% of the offered rate and, with this flag,
    /// its p99 from the intended send time is at or below this many microseconds
    #[arg(long = "p99-target-us")]
    pub p99_target_us: Option<f64>,
    /// Directory for sweep.json, sweep.csv, sweep.svg and each rate's report
    #[arg(long, default_value = "results/sweep")]
    pub out: PathBuf,
    /// More latency-probe flags for every rate, after --, e.g. -- --msg-size 64 --mode rtt
    #[arg(last = true)]
    pub probe_args: Vec<String>,
}

/// The experiment's flags.
#[allow(
    rustdoc::broken_intra_doc_links,
    rustdoc::invalid_html_tags,
    reason = "the doc comments are the --help texts: `sleep-ns[:N]`, `<pid>`"
)]
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A line on stderr once a second during the run (from latency-sub: messages so far, the
    /// highest sequence, the p99 of the last 4,096): auto (when stdout is a terminal), on, off
    #[arg(long, default_value = "auto")]
    pub live: crate::run::live::LiveMode,
    /// Repeat the measurement this many times (each with its own floor) and report every run
    /// and the run-to-run variation per percentile, as JLBH does; the JSON is the last run's
    /// report with `runs`
    #[arg(long, default_value_t = 1)]
    pub runs: u32,
    /// Where the driver is and which stream to use.
    #[command(flatten)]
    pub stream: StreamArgs,
    /// Duration, rate, message size, warm-up.
    #[command(flatten)]
    pub run: RunArgs,
    /// One-way or round trip.
    #[command(flatten)]
    pub mode: ModeArgs,
    /// Seconds of raw cache-line round trips between the two hot cores, measured right before
    /// and right after the run (0: skip)
    #[arg(long, default_value_t = DEFAULT_FLOOR_SECONDS, allow_negative_numbers = true)]
    pub floor: f64,
    /// Core for the publisher's hot thread [default: the second-to-last usable core]
    #[arg(long = "pub-core", allow_negative_numbers = true)]
    pub pub_core: Option<usize>,
    /// Core for the subscriber's hot thread [default: the last usable core]
    #[arg(long = "sub-core", allow_negative_numbers = true)]
    pub sub_core: Option<usize>,
    /// Do not pin the hot threads
    #[arg(long = "no-pin")]
    pub no_pin: bool,
    /// Idle strategy of both hot threads: spin, noop, yield, sleep-ns[:N], backoff
    #[arg(long, default_value = "spin", value_parser = parse_idle)]
    pub idle: aeron_latency::messaging::IdleStrategy,
    /// IPC term length of the embedded driver: bytes (power of two, 64 KiB..512 MiB; 1m = 1 MiB), or
    /// fit: the smallest that holds the run's messages twice over, at most 64 MiB (what ab uses:
    /// a short run then spends far less time allocating and freeing its logs) [default:
    /// $AERON_IPC_TERM_BUFFER_LENGTH, else 64 MiB]
    #[arg(long = "term-length", allow_negative_numbers = true, value_parser = TermLength::parse)]
    pub term_length: Option<TermLength>,
    /// Directory the embedded driver puts its files in: a fresh aeron-$USER-<pid>-0 inside it,
    /// removed on exit; it needs room for 2 streams x 3 terms + 16 MiB (Docker's /dev/shm has
    /// 64 MiB) [default: beside $AERON_DIR, else /dev/shm]. Not with --dir
    #[arg(long = "driver-dir")]
    pub driver_dir: Option<PathBuf>,
    /// One setting of the embedded driver, by Aeron property or AERON_* name (repeat it):
    /// e.g. --driver-opt aeron.nak.multicast.max.backoff=500us; applied after AERON_* from the
    /// environment, recorded in the report (env.driver_settings). Not with --dir
    #[arg(long = "driver-opt", value_name = "KEY=VALUE", value_parser = super::parse::parse_driver_opt)]
    pub driver_opt: Vec<aeron_latency::messaging::DriverOption>,
    /// Seconds the publisher waits for the subscriber
    #[arg(long, default_value_t = 10.0, allow_negative_numbers = true)]
    pub wait: f64,
    /// latency-sub's delivery and planted jitter.
    #[command(flatten)]
    pub delivery: DeliveryArgs,
    /// latency-pub's planted delay.
    #[command(flatten)]
    pub plant: crate::cli::args::PlantArgs,
    /// Jitter diagnostics.
    #[command(flatten)]
    pub diagnostics: DiagnosticsArgs,
    /// Hiccup meter (a thread spinning on a spare core that records its own gaps: platform
    /// jitter): auto (only when a core is free of hot threads), off, or a core number to force
    #[arg(long, default_value = "auto", allow_negative_numbers = true)]
    pub hiccup: HiccupRequest,
    /// `--json`, `--quiet`.
    #[command(flatten)]
    pub out: OutputArgs,
    /// `--out DIR`.
    #[command(flatten)]
    pub out_dir: OutDirArgs,
}

/// The experiment: checks every flag before anything starts, runs it, prints and writes the
/// report.
///
/// # Errors
/// Bad input or an unusable setup ([`EXIT_SETUP`](super::EXIT_SETUP)); a run lost messages,
/// stopped early, or its report could not be written ([`EXIT_INCOMPLETE`](super::EXIT_INCOMPLETE)).
pub fn probe(a: &Args) -> Result<(), Failure> {
    let x = check(a)?;
    // Ctrl-C or SIGTERM: the children stop and write their reports (handed SIGINT when only
    // this process got it), and the partial report is printed and written, marked incomplete.
    super::exit::catch_interrupts()?;
    let o = experiment::run(&x).map_err(|e| {
        if e.is_setup() {
            Failure::setup(e)
        } else {
            Failure::incomplete(e)
        }
    })?;
    a.out.emit(&o.text(a.out.view()), &o.report)?;
    let mut out_ok = a.out_dir.write(PROGRAM, &o.report);
    out_ok &= a.out_dir.write_runs(PROGRAM, o.report.runs.as_ref(), &o.runs);
    if !o.ok {
        return Err(Failure::incomplete(format!(
            "{} (latency-pub {}, latency-sub {})",
            if o.report.lost > 0 {
                format!("{} messages lost", o.report.lost)
            } else if a.runs > 1 {
                "a run was incomplete or lost messages".into()
            } else {
                "run incomplete".into()
            },
            crate::run::process::exit_words(o.pub_status),
            crate::run::process::exit_words(o.sub_status),
        )));
    }
    if !out_ok {
        return Err(Failure::incomplete_already_said());
    }
    Ok(())
}

/// Every flag of the experiment, checked before anything starts (no driver, no child, no
/// floor), as the experiment to run.
///
/// # Errors
/// The first bad flag or unusable setting, in one line naming it and the fix.
pub fn check(a: &Args) -> Result<Experiment, UsageError> {
    if !(1..=1000).contains(&a.runs) {
        return Err(UsageError::new(format!("--runs {}: give 1 to 1000 runs", a.runs)));
    }
    a.run.validate()?;
    a.plant.validate()?;
    let floor = check_times(a)?;
    a.stream.validate()?;
    let pong = a.mode.pong(&a.stream)?;
    check_delivery(a)?;
    let Cores {
        sub_core,
        pub_core,
        available,
    } = check_cores(a)?;
    let driver = check_driver(a, pong.as_ref())?;
    a.out.validate()?;
    a.out_dir.validate()?;
    if a.diagnostics.diagnostics == crate::model::Mode::Perf {
        // Fail before starting anything, with the reason (the children would fail the same way).
        if let Err(why) = crate::measure::monitor::Monitor::new(crate::model::Mode::Perf) {
            return Err(UsageError::new(why.to_string()));
        }
    }
    Ok(Experiment {
        runs: a.runs,
        driver,
        trial: Trial {
            channel: a.stream.channel.clone(),
            stream: a.stream.stream,
            pong,
            publication: a.mode.publication,
            duration_s: a.run.duration,
            rate: a.run.rate,
            msg_size: a.run.msg_size,
            warmup: a.run.warmup,
            wait_s: a.wait,
            idle: a.idle.clone(),
            delivery: a.delivery.delivery,
            hot_path_lock: a.delivery.hot_path_lock,
            plant_helper: a.delivery.plant_helper,
            prefault: !a.mode.no_prefault,
            explain: a.diagnostics.explain,
            diagnostics: a.diagnostics.diagnostics,
            live: a.live.enabled(),
            sub_core,
            pub_core,
            hiccup: a.hiccup,
            available,
            floor,
            bin_dir: bin_dir(),
            send_lags: false,
            plant_delay_ns: a.plant.plant_delay_ns,
        },
    })
}

/// `--wait`, the run's length with both waits, and `--floor`; returns the floor's length.
fn check_times(a: &Args) -> Result<Duration, UsageError> {
    seconds("--wait", a.wait)?;
    // latency-sub gets a --timeout covering the whole run and both waits: keep it in range.
    if a.run.seconds() + 2.0 * a.wait + 30.0 > MAX_SECONDS {
        return Err(UsageError::new(format!(
            "--duration {} (plus --warmup {} at --rate {}) and --wait {} add up to more than 10000000 seconds \
             (about 116 days), the longest latency-sub waits; shorten the run or the wait",
            a.run.duration, a.run.warmup, a.run.rate, a.wait
        )));
    }
    let floor = seconds("--floor", a.floor)?;
    if floor > Duration::from_secs(10) {
        return Err(UsageError::new(format!(
            "--floor {}: at most 10 seconds (0.25 is plenty)",
            a.floor
        )));
    }
    Ok(floor)
}

/// `--delivery channel` hands payloads over without the reserved value and is not for rtt.
fn check_delivery(a: &Args) -> Result<(), UsageError> {
    if a.delivery.delivery != Delivery::Inline && a.run.msg_size < aeron_latency::wire::MIN_ENCODED_LEN {
        return Err(UsageError::new(format!(
            "--msg-size {} sends compact samples, whose send time is in the frame's reserved value, which \
             --delivery channel does not hand over (it copies payloads only): use --delivery inline or \
             --msg-size 64 or more",
            a.run.msg_size
        )));
    }
    if a.mode.mode == RunMode::Rtt && a.delivery.delivery != Delivery::Inline {
        return Err(UsageError::new(
            "--mode rtt echoes from latency-sub's poll loop: use --delivery inline (the default)",
        ));
    }
    Ok(())
}

/// The hot threads' cores and those this process may use.
struct Cores {
    sub_core: Option<usize>,
    pub_core: Option<usize>,
    available: Vec<usize>,
}

/// The hot threads' cores (given, else the defaults unless `--no-pin`), and `--hiccup`'s.
fn check_cores(a: &Args) -> Result<Cores, UsageError> {
    let (def_sub, def_pub) = if a.no_pin { (None, None) } else { default_cores() };
    let (sub_core, pub_core) = (a.sub_core.or(def_sub), a.pub_core.or(def_pub));
    check_core("--sub-core", sub_core)?;
    check_core("--pub-core", pub_core)?;
    if sub_core.is_some() && sub_core == pub_core && a.idle.spins() {
        return Err(UsageError::new(
            "--sub-core and --pub-core are the same core and --idle spins: the two hot threads would starve each \
             other; pick two cores or --idle yield",
        ));
    }
    let available = aeron_latency::messaging::available_cores();
    if let HiccupRequest::Core(c) = a.hiccup {
        if !available.contains(&c) {
            return Err(UsageError::new(format!(
                "--hiccup {c}: no such core; this machine lets us use {available:?} (or pass auto or off)"
            )));
        }
    }
    Ok(Cores {
        sub_core,
        pub_core,
        available,
    })
}

/// The driver: a running one (`--dir`), or the embedded one's settings, checked.
fn check_driver(a: &Args, pong: Option<&crate::run::PongPath>) -> Result<DriverChoice, UsageError> {
    let Some(dir) = &a.stream.dir else {
        let term_length = a.term_length.map(|t| t.bytes(&a.run));
        check_embedded(
            term_length,
            a.driver_dir.as_deref(),
            &a.stream.channel,
            pong,
            a.run.msg_size,
        )?;
        return Ok(DriverChoice::Embedded {
            term_length,
            parent_dir: a.driver_dir.clone(),
            options: a.driver_opt.clone(),
        });
    };
    if let Some(o) = a.driver_opt.first() {
        return Err(UsageError::new(format!(
            "--driver-opt {o} sets the embedded driver, but --dir uses the driver already running there: set \
             {} where that driver starts, or drop --dir",
            aeron_latency::messaging::driver_env_name(o.property())
        )));
    }
    if a.driver_dir.is_some() {
        return Err(UsageError::new(
            "--driver-dir is where the embedded driver puts its files, but --dir uses the driver already \
             running there: pass one of the two",
        ));
    }
    if a.term_length.is_some() {
        return Err(UsageError::new(
            "--term-length sets the embedded driver's IPC term, but with --dir the running driver's own \
             configuration decides (AERON_IPC_TERM_BUFFER_LENGTH where it starts, or term-length= in --channel): \
             drop one of the two",
        ));
    }
    a.stream.check_driver()?;
    Ok(DriverChoice::External(dir.clone()))
}

/// `latency-probe compare A B`: prints the comparison.
///
/// # Errors
/// A file cannot be read or is no report ([`EXIT_SETUP`](super::EXIT_SETUP)).
pub fn compare(c: &CompareArgs) -> Result<(), Failure> {
    super::validate::confidence(c.confidence).map_err(Failure::setup)?;
    super::validate::resolve(c.resolve).map_err(Failure::setup)?;
    let text = crate::run::compare::compare(&c.a, &c.b, (c.confidence, c.resolve)).map_err(Failure::setup)?;
    print!("{text}");
    Ok(())
}

/// `latency-probe sweep`: this program once per rate, then the table and the plot.
///
/// # Errors
/// Bad input or an unusable setup ([`EXIT_SETUP`](super::EXIT_SETUP)); no rate produced a
/// report, a rate was incomplete, or a file could not be written
/// ([`EXIT_INCOMPLETE`](super::EXIT_INCOMPLETE)).
pub fn sweep(s: &SweepArgs) -> Result<(), Failure> {
    let cfg = check_sweep(s)?;
    // Ctrl-C or SIGTERM: the rate running then stops with its partial report, and the table
    // and files hold the rates done.
    super::exit::catch_interrupts()?;
    let outcome = crate::run::sweep::sweep(&cfg).map_err(|e| {
        if e.is_setup() {
            Failure::setup(e)
        } else {
            Failure::incomplete(e)
        }
    })?;
    if !outcome.complete {
        return Err(Failure::incomplete_already_said());
    }
    Ok(())
}

/// The sweep's flags, checked, as the sweep to run (the probe is this executable).
///
/// # Errors
/// The first bad flag, in one line; or this executable cannot be found.
pub fn check_sweep(s: &SweepArgs) -> Result<Sweep, UsageError> {
    if !(s.duration.is_finite() && s.duration > 0.0) {
        return Err(UsageError::new(format!(
            "--duration {} must be a positive number of seconds",
            s.duration
        )));
    }
    if let Some(t) = s.p99_target_us {
        if !(t.is_finite() && t > 0.0) {
            return Err(UsageError::new(format!(
                "--p99-target-us {t} must be a positive number of microseconds"
            )));
        }
    }
    let probe = std::env::current_exe().map_err(|e| UsageError::new(e.to_string()))?;
    Ok(Sweep {
        probe,
        rates: s.rates.clone(),
        duration_s: s.duration,
        p99_target_us: s.p99_target_us,
        out: s.out.clone(),
        probe_args: s.probe_args.clone(),
    })
}
