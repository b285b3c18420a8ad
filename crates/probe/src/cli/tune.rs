//! `latency-probe nak` and `latency-probe buffers`: the tuning calculators' flags, their
//! checks (one line, exit 2, nothing computed), and their output (text, or `--json`).

use super::{Failure, UsageError};
use crate::analysis::tuning::{buffer_plan, nak_plan};
use crate::model::{aeron_default, BufferInputs, CheckStatus, NakInputs};
use crate::render::tuning::{buffers_text, nak_text};
use crate::sys::env::read_number;
use crate::units::format_ns;
use std::path::PathBuf;

/// `latency-probe nak`'s name in its messages.
pub const NAK: &str = "latency-probe nak";
/// `latency-probe buffers`' name in its messages.
pub const BUFFERS: &str = "latency-probe buffers";
/// `latency-probe doctor`'s name in its messages.
pub const DOCTOR: &str = "latency-probe doctor";

/// `latency-probe driver`'s name in its messages.
pub const DRIVER: &str = "latency-probe driver";
/// `latency-probe loss`'s name in its messages.
pub const LOSS: &str = "latency-probe loss";

/// `latency-probe driver`: the embedded media driver on its own, as `aeronmd` (the loss
/// experiment runs one per receiver).
#[derive(Debug, clap::Args)]
pub struct DriverArgs {
    /// Its Aeron directory (refused when a live driver is there)
    #[arg(long)]
    pub dir: PathBuf,
    /// One setting, as latency-probe --driver-opt (repeat it); AERON_* in the environment apply
    #[arg(long = "driver-opt", value_name = "KEY=VALUE", value_parser = parse_driver_opt)]
    pub driver_opt: Vec<aeron_latency::messaging::DriverOption>,
    /// Stop after this many seconds (default: when stdin closes)
    #[arg(long)]
    pub seconds: Option<f64>,
}

/// `latency-probe loss`: seed 000's A/B over real UDP on this host.
#[derive(Debug, clap::Args)]
pub struct LossArgs {
    /// Receivers, each with its own media driver (MDC, dynamic control)
    #[arg(long, default_value_t = 3)]
    pub receivers: u32,
    /// Messages per second (k and M suffixes)
    #[arg(long, default_value = "20000", value_parser = super::parse_rate)]
    pub rate: u64,
    /// Message size in bytes
    #[arg(long = "msg-size", default_value_t = 224)]
    pub msg_size: u64,
    /// Measured seconds per arm
    #[arg(long, default_value_t = 5.0)]
    pub duration: f64,
    /// Warm-up messages per arm (not measured)
    #[arg(long, default_value_t = 5000)]
    pub warmup: u64,
    /// Fraction of data frames each receiver's driver drops in the lossy arms, 0 to 1
    #[arg(long, default_value_t = 0.0001)]
    pub loss: f64,
    /// The loss generator's seed (receiver i uses seed + i)
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
    /// RTT for the calculator's timers (derived arm) and buffers (controls)
    #[arg(long, default_value = "100us", value_parser = parse_duration)]
    pub rtt: u64,
    /// Per-loss budget for the calculator's timers
    #[arg(long, default_value = "1ms", value_parser = parse_duration)]
    pub budget: u64,
    /// Arms to run, comma-separated: default, derived, min-buffers, big-buffers
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "default,derived,min-buffers,big-buffers"
    )]
    pub arms: Vec<String>,
    /// UDP control port on 127.0.0.1; the receivers use the ports after it
    #[arg(long, default_value_t = 40456)]
    pub port: u16,
    /// Unicast to one receiver (endpoint=127.0.0.1:PORT) instead of MDC; needs --receivers 1
    #[arg(long)]
    pub unicast: bool,
    /// Where the arms' drivers and reports go while they run
    #[arg(long = "work-dir", default_value = "/dev/shm")]
    pub work_dir: PathBuf,
    /// Also write every arm as JSON to this file ('-': JSON on stdout instead of text)
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// `latency-probe driver`: runs until stdin closes or `--seconds` pass.
///
/// # Errors
/// The driver does not start (exit 2).
pub fn driver(a: &DriverArgs) -> Result<(), Failure> {
    #[cfg(not(feature = "embedded-driver"))]
    return Err(Failure::setup(format!(
        "--dir {}: built without the embedded driver; run aeronmd there, or rebuild with the embedded-driver \
         feature",
        a.dir.display()
    )));
    #[cfg(feature = "embedded-driver")]
    serve(a)
}

#[cfg(feature = "embedded-driver")]
fn serve(a: &DriverArgs) -> Result<(), Failure> {
    // Room for one run's logs, as the run's own embedded driver checks.
    let mut b = aeron_latency::messaging::EmbeddedDriver::builder()
        .dir(&a.dir)
        .expected_logs(crate::run::driver::LOGS_PER_RUN);
    for o in &a.driver_opt {
        b = b.option(o.clone());
    }
    let d = b.spawn().map_err(|e| Failure::setup(crate::run::launch_error(&e)))?;
    eprintln!("{DRIVER}: running in {}", d.dir().display());
    match a.seconds {
        Some(s) => std::thread::sleep(super::seconds("--seconds", s)?),
        None => {
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        }
    }
    drop(d);
    Ok(())
}

/// `latency-probe loss`. Exit 0 when every arm completed with nothing lost, else 1.
///
/// # Errors
/// Bad input (exit 2), an arm incomplete or a file not written (exit 1).
pub fn loss(a: &LossArgs) -> Result<(), Failure> {
    check_receivers(a.receivers)?;
    if a.receivers > 64 {
        return Err(UsageError::new(format!("--receivers {}: give 1 to 64 (one driver each)", a.receivers)).into());
    }
    if !(a.loss.is_finite() && (0.0..=1.0).contains(&a.loss)) {
        return Err(UsageError::new(format!("--loss {}: a loss rate is a fraction from 0 to 1", a.loss)).into());
    }
    if a.budget < 2 * a.rtt || a.rtt == 0 {
        return Err(UsageError::new(format!(
            "--budget {} is below 2 x --rtt ({}): give at least {}",
            format_ns(a.budget),
            format_ns(2 * a.rtt),
            format_ns(2 * a.rtt)
        ))
        .into());
    }
    check_msg_size(a.msg_size)?;
    if a.unicast && a.receivers != 1 {
        return Err(UsageError::new(format!(
            "--unicast sends to one endpoint: give --receivers 1 (not {}), or drop --unicast for MDC",
            a.receivers
        ))
        .into());
    }
    for arm in &a.arms {
        if !crate::run::loss::ARMS.contains(&arm.as_str()) {
            return Err(UsageError::new(format!(
                "--arms {arm}: not an arm; use any of {}",
                crate::run::loss::ARMS.join(", ")
            ))
            .into());
        }
    }
    let duration = super::seconds("--duration", a.duration)?;
    let x = crate::run::loss::LossExperiment {
        receivers: a.receivers,
        rate: a.rate,
        msg_size: a.msg_size,
        duration,
        warmup: a.warmup,
        loss: a.loss,
        seed: a.seed,
        rtt_ns: a.rtt,
        budget_ns: a.budget,
        arms: a.arms.clone(),
        port: a.port,
        unicast: a.unicast,
        work_dir: a.work_dir.clone(),
    };
    let report = crate::run::loss::run(&x).map_err(Failure::setup)?;
    emit(a.json.as_ref(), &crate::render::tuning::loss_text(&report), &report)?;
    let bad: Vec<&str> = report
        .arms
        .iter()
        .filter(|r| !r.complete || r.lost > 0)
        .map(|r| r.arm.as_str())
        .collect();
    if bad.is_empty() {
        Ok(())
    } else {
        Err(Failure::incomplete(format!(
            "arm {} incomplete or lost messages: see its problems above",
            bad.join(", ")
        )))
    }
}

/// `latency-probe doctor`: this host and driver checked for a run.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// The two cores the hot threads will use, publisher first (default: the last two usable,
    /// as the probe picks them)
    #[arg(long, value_delimiter = ',', num_args = 2)]
    pub cores: Option<Vec<usize>>,
    /// The run's channel: aeron:ipc, or aeron:udp?... (socket buffers and NAK timers matter)
    #[arg(long, default_value = "aeron:ipc")]
    pub channel: String,
    /// Messages per second of the run (k and M suffixes)
    #[arg(long, default_value = "10000", value_parser = super::parse_rate)]
    pub rate: u64,
    /// Message size of the run, bytes
    #[arg(long = "msg-size", default_value_t = 128)]
    pub msg_size: u64,
    /// The embedded driver's IPC term length (bytes; as latency-probe --term-length)
    #[arg(long = "term-length")]
    pub term_length: Option<usize>,
    /// A running media driver's directory (its settings cannot be read; the host's are)
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// One setting of the embedded driver, as latency-probe --driver-opt (repeat it)
    #[arg(long = "driver-opt", value_name = "KEY=VALUE", value_parser = parse_driver_opt)]
    pub driver_opt: Vec<aeron_latency::messaging::DriverOption>,
    /// Seconds to sample hypervisor steal for
    #[arg(long, default_value_t = 0.5)]
    pub steal: f64,
    /// Also write the checks, what was read and what was asked as JSON to this file ('-': JSON
    /// on stdout instead of text)
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// `latency-probe nak`: seed 000's NAK-timer calculator.
#[derive(Debug, Clone, clap::Args)]
pub struct NakArgs {
    /// Round-trip time between the publisher and its receivers (e.g. 35us, 1ms); without it,
    /// --channel is measured
    #[arg(long, value_parser = parse_duration, required_unless_present = "channel")]
    pub rtt: Option<u64>,
    /// Measure the RTT on this channel with a 1 s round-trip run (latency-probe --mode rtt,
    /// embedded driver): the p50 of the round trips
    #[arg(long, conflicts_with = "rtt")]
    pub channel: Option<String>,
    /// The most one lost packet may add to a message's latency (e.g. 1ms); at least 2 x RTT
    #[arg(long, value_parser = parse_duration)]
    pub budget: u64,
    /// Receivers of the stream (MDC destinations, multicast members, cluster followers)
    #[arg(long, default_value_t = 1)]
    pub receivers: u32,
    /// Messages per second (k and M suffixes)
    #[arg(long, default_value = "10000", value_parser = super::parse_rate)]
    pub rate: u64,
    /// Fraction of packets lost, 0 to 1 (0.0001 = 0.01%)
    #[arg(long, default_value_t = 0.0001)]
    pub loss: f64,
    /// The publication's term length (bytes; k, m, g suffixes: 16m)
    #[arg(long = "term-length", default_value = "16m", value_parser = parse_bytes)]
    pub term_length: u64,
    /// How far the slowest receiver runs behind the publisher (e.g. 0, 5ms)
    #[arg(long, default_value = "0", value_parser = parse_duration)]
    pub lag: u64,
    /// Message size in bytes
    #[arg(long = "msg-size", default_value_t = 128)]
    pub msg_size: u64,
    /// Also write every input and output as JSON to this file ('-': JSON on stdout instead of text)
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// `latency-probe buffers`: socket buffers, receiver window and term from the stream.
#[derive(Debug, clap::Args)]
pub struct BuffersArgs {
    /// Messages per second (k and M suffixes)
    #[arg(long, value_parser = super::parse_rate)]
    pub rate: u64,
    /// Message size in bytes
    #[arg(long = "msg-size", default_value_t = 128)]
    pub msg_size: u64,
    /// Round-trip time (e.g. 35us)
    #[arg(long, value_parser = parse_duration)]
    pub rtt: u64,
    /// Receivers (the sender sends one copy to each MDC destination)
    #[arg(long, default_value_t = 1)]
    pub receivers: u32,
    /// The longest a receiver may stop reading without loss (preemption, GC, page faults)
    #[arg(long, default_value = "1ms", value_parser = parse_duration)]
    pub pause: u64,
    /// How long recovering a loss takes; default: a double loss with the timers
    /// `latency-probe nak --budget` derives, or with Aeron's default timers without --budget
    #[arg(long, value_parser = parse_duration)]
    pub recovery: Option<u64>,
    /// Per-loss budget, to derive --recovery from the NAK calculator
    #[arg(long, value_parser = parse_duration)]
    pub budget: Option<u64>,
    /// How far the slowest receiver runs behind
    #[arg(long, default_value = "0", value_parser = parse_duration)]
    pub lag: u64,
    /// `net.core.rmem_max` to check against (default: this host's)
    #[arg(long = "rmem-max", value_parser = parse_bytes)]
    pub rmem_max: Option<u64>,
    /// `net.core.wmem_max` to check against (default: this host's)
    #[arg(long = "wmem-max", value_parser = parse_bytes)]
    pub wmem_max: Option<u64>,
    /// The driver's SO_RCVBUF (default: AERON_SOCKET_SO_RCVBUF, else Aeron's 128k)
    #[arg(long = "so-rcvbuf", value_parser = parse_bytes)]
    pub so_rcvbuf: Option<u64>,
    /// The driver's receiver window (default: AERON_RCV_INITIAL_WINDOW_LENGTH, else Aeron's 128k)
    #[arg(long = "rcv-window", value_parser = parse_bytes)]
    pub rcv_window: Option<u64>,
    /// Also write every input and output as JSON to this file ('-': JSON on stdout instead of text)
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// `KEY=VALUE` for `--driver-opt`: an embedded driver setting by name.
///
/// # Errors
/// No `=`, an unknown setting (listing those it takes), or a value that does not parse.
pub fn parse_driver_opt(s: &str) -> Result<aeron_latency::messaging::DriverOption, UsageError> {
    let (k, v) = s.split_once('=').ok_or_else(|| {
        UsageError::new(format!(
            "{s:?}: give KEY=VALUE, e.g. aeron.nak.multicast.max.backoff=500us"
        ))
    })?;
    aeron_latency::messaging::DriverOption::parse(k, v).map_err(UsageError::new)
}

/// A duration with a unit, as Aeron writes them: `500ns`, `35us` (or `µs`), `2ms`, `1s`; `0`.
///
/// # Errors
/// No unit, not a number, negative, or over an hour.
pub fn parse_duration(s: &str) -> Result<u64, UsageError> {
    let t = s.trim();
    if t == "0" {
        return Ok(0);
    }
    let units: [(&str, f64); 5] = [("ns", 1.0), ("us", 1e3), ("µs", 1e3), ("ms", 1e6), ("s", 1e9)];
    let bad = || {
        UsageError::new(format!(
            "{s:?} is not a duration: give a number and a unit, e.g. 35us, 2ms, 500ns"
        ))
    };
    let (num, mult) = units
        .iter()
        .find_map(|(u, m)| t.strip_suffix(u).map(|n| (n, *m)))
        .ok_or_else(bad)?;
    let v: f64 = num.trim().parse().map_err(|_| bad())?;
    let ns = v * mult;
    if !(ns.is_finite() && (0.0..=3.6e12).contains(&ns)) {
        return Err(UsageError::new(format!("{s}: give a duration from 0 to 1 hour")));
    }
    Ok(ns.round() as u64)
}

/// Bytes, with binary `k`, `m`, `g` suffixes as Aeron reads them (`64k` = 65,536).
///
/// # Errors
/// Not a number, or over 1 TiB.
pub fn parse_bytes(s: &str) -> Result<u64, UsageError> {
    let t = s.trim().to_ascii_lowercase();
    let (num, shift) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 10),
        Some('m') => (&t[..t.len() - 1], 20),
        Some('g') => (&t[..t.len() - 1], 30),
        _ => (t.as_str(), 0),
    };
    let v: u64 = num
        .parse()
        .map_err(|_| UsageError::new(format!("{s:?} is not a size: give bytes, e.g. 131072, 128k or 16m")))?;
    v.checked_shl(shift)
        .filter(|b| *b >> shift == v && *b <= 1 << 40)
        .ok_or_else(|| UsageError::new(format!("{s}: give a size up to 1 TiB")))
}

fn check_nak(a: &NakArgs) -> Result<NakInputs, UsageError> {
    let rtt = a.rtt.unwrap_or(0);
    if rtt == 0 {
        return Err(UsageError::new(
            "--rtt 0: give the measured round trip, e.g. --rtt 35us",
        ));
    }
    if a.budget < 2 * rtt {
        return Err(UsageError::new(format!(
            "--budget {} is below 2 x RTT ({}): a NAK and its retransmit take a round trip each; give at least {}",
            format_ns(a.budget),
            format_ns(2 * rtt),
            format_ns(2 * rtt)
        )));
    }
    check_receivers(a.receivers)?;
    if !(a.loss.is_finite() && (0.0..=1.0).contains(&a.loss)) {
        return Err(UsageError::new(format!(
            "--loss {}: a loss rate is a fraction from 0 to 1 (0.0001 = 0.01%)",
            a.loss
        )));
    }
    check_msg_size(a.msg_size)?;
    check_term(a.term_length)?;
    Ok(NakInputs {
        rtt_ns: rtt,
        budget_ns: a.budget,
        receivers: a.receivers,
        rate: a.rate,
        loss: a.loss,
        term_length: a.term_length,
        lag_ns: a.lag,
        msg_size: a.msg_size,
    })
}

/// The most receivers the calculators take (far beyond any Aeron group measured).
pub const MAX_RECEIVERS: u32 = 100_000;

fn check_receivers(n: u32) -> Result<(), UsageError> {
    if n == 0 {
        return Err(UsageError::new("--receivers 0: a stream has at least one receiver"));
    }
    if n > MAX_RECEIVERS {
        return Err(UsageError::new(format!("--receivers {n}: give 1 to {MAX_RECEIVERS}")));
    }
    Ok(())
}

fn check_msg_size(n: u64) -> Result<(), UsageError> {
    if n == 0 || n > 16 << 20 {
        return Err(UsageError::new(format!(
            "--msg-size {n}: give 1 to 16777216 bytes (Aeron's largest message is 16 MiB)"
        )));
    }
    Ok(())
}

fn check_term(n: u64) -> Result<(), UsageError> {
    if !n.is_power_of_two() || !(64 << 10..=1 << 30).contains(&n) {
        return Err(UsageError::new(format!(
            "--term-length {n}: Aeron's terms are a power of two from 64k to 1g"
        )));
    }
    Ok(())
}

/// A driver setting from the environment as aeronmd reads it, if set and valid.
fn env_bytes(var: &str) -> Result<Option<u64>, UsageError> {
    match std::env::var(var) {
        Ok(v) => parse_bytes(&v)
            .map(Some)
            .map_err(|e| UsageError::new(format!("{var}={v}: {e}"))),
        Err(_) => Ok(None),
    }
}

fn check_buffers(a: &BuffersArgs) -> Result<BufferInputs, UsageError> {
    if a.rtt == 0 {
        return Err(UsageError::new(
            "--rtt 0: give the measured round trip, e.g. --rtt 35us",
        ));
    }
    check_receivers(a.receivers)?;
    check_msg_size(a.msg_size)?;
    let (recovery_ns, recovery_from) = match (a.recovery, a.budget) {
        (Some(r), _) => (r, "--recovery".to_string()),
        (None, budget) => {
            let derived = budget.is_some();
            // Without --budget only Aeron's default timers are used, which need no budget: any
            // valid one will do.
            let budget = budget.unwrap_or(2 * a.rtt);
            let inputs = check_nak(&NakArgs {
                rtt: Some(a.rtt),
                channel: None,
                budget,
                receivers: a.receivers,
                rate: a.rate,
                loss: 0.0,
                term_length: aeron_default::TERM_BUFFER_LENGTH,
                lag: a.lag,
                msg_size: a.msg_size,
                json: None,
            })?;
            let p = nak_plan(&inputs);
            if derived {
                (
                    p.double_loss_ns,
                    "a double loss with the timers latency-probe nak derives".to_string(),
                )
            } else {
                (
                    p.default_double_loss_ns,
                    "a double loss with Aeron's default timers".to_string(),
                )
            }
        }
    };
    Ok(BufferInputs {
        rate: a.rate,
        msg_size: a.msg_size,
        rtt_ns: a.rtt,
        receivers: a.receivers,
        pause_ns: a.pause,
        recovery_ns,
        recovery_from,
        lag_ns: a.lag,
        rmem_max: a.rmem_max.or_else(|| read_number("/proc/sys/net/core/rmem_max")),
        wmem_max: a.wmem_max.or_else(|| read_number("/proc/sys/net/core/wmem_max")),
        so_rcvbuf: match a.so_rcvbuf {
            Some(b) => b,
            None => env_bytes("AERON_SOCKET_SO_RCVBUF")?.unwrap_or(aeron_default::SOCKET_SO_RCVBUF),
        },
        rcv_window: match a.rcv_window {
            Some(b) => b,
            None => env_bytes("AERON_RCV_INITIAL_WINDOW_LENGTH")?.unwrap_or(aeron_default::RCV_INITIAL_WINDOW_LENGTH),
        },
    })
}

/// Prints `text` or the JSON of `value` (to `--json`, or stdout for `-`).
fn emit<T: serde::Serialize>(json: Option<&PathBuf>, text: &str, value: &T) -> Result<(), Failure> {
    let encoded = serde_json::to_string_pretty(value).map_err(|e| Failure::setup(format!("encoding JSON: {e}")))?;
    match json {
        Some(p) if p.as_os_str() == "-" => println!("{encoded}"),
        Some(p) => {
            print!("{text}");
            std::fs::write(p, encoded + "\n")
                .map_err(|e| Failure::setup(format!("--json {}: {e}: pick a writable path", p.display())))?;
        }
        None => print!("{text}"),
    }
    Ok(())
}

/// `latency-probe doctor`: starts the embedded driver (unless --dir) to read its settings,
/// reads the host, prints every check. Exit 0 unless a check FAILs (exit 1).
///
/// # Errors
/// Bad input or no driver (exit 2), a failed check (exit 1), or the JSON file could not be
/// written.
pub fn doctor(a: &DoctorArgs) -> Result<(), Failure> {
    use crate::run::driver::{start, DriverChoice};
    let hot = match &a.cores {
        Some(c) => {
            for &core in c {
                super::check_core("--cores", Some(core))?;
            }
            c.clone()
        }
        None => {
            let (p, s) = crate::run::process::default_cores();
            [p, s].into_iter().flatten().collect()
        }
    };
    super::check_channel("--channel", &a.channel)?;
    check_msg_size(a.msg_size)?;
    let steal = super::seconds("--steal", a.steal)?;
    if a.dir.is_none() {
        super::check_embedded(a.term_length, None, &a.channel, None, a.msg_size as usize)?;
    }
    let choice = match &a.dir {
        Some(d) => DriverChoice::External(d.clone()),
        None => DriverChoice::Embedded {
            term_length: a.term_length,
            parent_dir: None,
            options: a.driver_opt.clone(),
        },
    };
    let driver = start(&choice).map_err(Failure::setup)?;
    let settings = driver.settings();
    let d = crate::run::doctor::doctor(&crate::run::doctor::RunShape {
        hot_cores: hot,
        channel: &a.channel,
        rate: a.rate,
        msg_size: a.msg_size,
        ipc_term: driver.ipc_term_length(),
        driver_dir: driver.dir(),
        driver: settings,
        steal_sample: steal,
    });
    drop(driver);
    emit(a.json.as_ref(), &crate::render::tuning::doctor_text(&d), &d)?;
    failed(&d.checks)
}

/// `latency-probe nak`. Exit 0 unless a validity check FAILs (exit 1: the timers will not help).
///
/// # Errors
/// Bad input (exit 2), a failed check (exit 1), or the JSON file could not be written.
pub fn nak(a: &NakArgs) -> Result<(), Failure> {
    let mut a = a.clone();
    if a.rtt.is_none() {
        let ch = a.channel.clone().unwrap_or_default();
        super::check_channel("--channel", &ch)?;
        // Every other flag is checked before the measurement starts.
        check_nak(&NakArgs {
            rtt: Some(1),
            ..a.clone()
        })?;
        let rtt = measure_rtt(&ch)?;
        eprintln!(
            "{NAK}: RTT measured on {ch}: p50 {} (1 s of round trips)",
            format_ns(rtt)
        );
        a.rtt = Some(rtt);
    }
    let plan = nak_plan(&check_nak(&a)?);
    emit(a.json.as_ref(), &nak_text(&plan), &plan)?;
    failed(&plan.checks)
}

/// The p50 round trip of a 1 s `latency-probe --mode rtt` run on `channel` (embedded driver).
fn measure_rtt(channel: &str) -> Result<u64, Failure> {
    let args = super::probe::parse_experiment([
        "latency-probe",
        "--mode",
        "rtt",
        "--channel",
        channel,
        "--duration",
        "1",
        "--rate",
        "2000",
        "--msg-size",
        "64",
        "--warmup",
        "500",
        "--diagnostics",
        "off",
        "--live",
        "off",
        "--floor",
        "0",
        "--idle",
        "backoff",
    ])
    .map_err(|e| Failure::setup(format!("--channel {channel}: {}", e.kind())))?;
    let x = super::probe::check(&args)?;
    let out = crate::run::experiment::run(&x).map_err(Failure::setup)?;
    if !out.ok || out.report.latency_actual_ns.count == 0 {
        return Err(Failure::incomplete(format!(
            "measuring the RTT on {channel}: the round-trip run did not complete; give --rtt"
        )));
    }
    Ok(out.report.latency_actual_ns.p50)
}

/// `latency-probe buffers`. Exit 0 unless a check FAILs (exit 1).
///
/// # Errors
/// Bad input (exit 2), a failed check (exit 1), or the JSON file could not be written.
pub fn buffers(a: &BuffersArgs) -> Result<(), Failure> {
    let plan = buffer_plan(&check_buffers(a)?);
    emit(a.json.as_ref(), &buffers_text(&plan), &plan)?;
    failed(&plan.checks)
}

fn failed(checks: &[crate::model::Check]) -> Result<(), Failure> {
    let n = checks.iter().filter(|c| c.status == CheckStatus::Fail).count();
    if n == 0 {
        return Ok(());
    }
    Err(Failure {
        code: super::EXIT_INCOMPLETE,
        message: Some(format!(
            "{n} check{} FAILed: see fix: above",
            if n == 1 { "" } else { "s" }
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_need_a_unit_and_read_as_aeron_writes_them() {
        assert_eq!(parse_duration("35us").unwrap(), 35_000);
        assert_eq!(parse_duration("35µs").unwrap(), 35_000);
        assert_eq!(parse_duration("2ms").unwrap(), 2_000_000);
        assert_eq!(parse_duration("1.5ms").unwrap(), 1_500_000);
        assert_eq!(parse_duration("500ns").unwrap(), 500);
        assert_eq!(parse_duration("1s").unwrap(), 1_000_000_000);
        assert_eq!(parse_duration("0").unwrap(), 0);
        assert!(parse_duration("35").unwrap_err().message().contains("e.g. 35us"));
        assert!(parse_duration("-1ms").is_err());
        assert!(parse_duration("2h").is_err());
    }

    #[test]
    fn sizes_take_binary_suffixes() {
        assert_eq!(parse_bytes("64k").unwrap(), 65_536);
        assert_eq!(parse_bytes("16m").unwrap(), 16 << 20);
        assert_eq!(parse_bytes("212992").unwrap(), 212_992);
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("99999999g").is_err());
    }

    fn args() -> NakArgs {
        NakArgs {
            rtt: Some(35_000),
            channel: None,
            budget: 1_000_000,
            receivers: 3,
            rate: 50_000,
            loss: 0.0001,
            term_length: 16 << 20,
            lag: 0,
            msg_size: 224,
            json: None,
        }
    }

    #[test]
    fn bad_input_is_one_line_that_says_what_to_give() {
        let mut a = args();
        a.loss = 1.5;
        assert!(check_nak(&a).unwrap_err().message().contains("fraction from 0 to 1"));
        let mut a = args();
        a.receivers = 0;
        assert!(check_nak(&a).unwrap_err().message().contains("at least one receiver"));
        let mut a = args();
        a.budget = 50_000;
        let e = check_nak(&a).unwrap_err();
        assert!(e.message().contains("below 2 x RTT (70.00 µs)"), "{e}");
        let mut a = args();
        a.term_length = 100_000;
        assert!(check_nak(&a).unwrap_err().message().contains("power of two"));
        let e = check_nak(&NakArgs { rtt: Some(0), ..args() }).unwrap_err();
        assert!(e.message().contains("--rtt 0") && !e.message().contains('\n'), "{e}");
    }
}
