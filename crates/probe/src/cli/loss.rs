//! `latency-probe loss`: seed 000's A/B over real UDP on this host, its flags and their checks.

use super::output::{check_json, emit};
use super::parse::parse_duration;
use super::validate::{check_msg_size, check_receivers};
use super::{Failure, UsageError};
use crate::units::format_ns;
use std::path::PathBuf;

/// `latency-probe loss`'s name in its messages.
pub const LOSS: &str = "latency-probe loss";

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
    #[arg(long, default_value_t = 20456)]
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

/// `latency-probe loss`. Exit 0 when every arm completed with nothing lost, else 1.
///
/// # Errors
/// Bad input (exit 2), an arm incomplete or a file not written (exit 1).
pub fn loss(a: &LossArgs) -> Result<(), Failure> {
    check_json(a.json.as_ref())?;
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
    if !(a.duration.is_finite() && a.duration > 0.0) {
        return Err(UsageError::new(format!(
            "--duration {} must be a positive number of seconds per arm, e.g. --duration 5",
            a.duration
        ))
        .into());
    }
    if a.duration * (a.rate as f64) < 1.0 {
        return Err(UsageError::new(format!(
            "--duration {} x --rate {} plans no message; lengthen the arms or raise the rate",
            a.duration, a.rate
        ))
        .into());
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
    // Ctrl-C or SIGTERM: the arm running then stops with what its receivers measured, and no
    // more arms run.
    super::exit::catch_interrupts()?;
    let report = crate::run::loss::run(&x).map_err(Failure::setup)?;
    emit(a.json.as_ref(), &crate::render::tuning::loss_text(&report), &report)?;
    if crate::sys::signals::interrupted() {
        return Err(Failure::incomplete(format!(
            "interrupted (SIGINT or SIGTERM): {} of {} arms ran",
            report.arms.len(),
            x.arms.len()
        )));
    }
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
